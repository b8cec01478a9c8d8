//! Fuzzing on stable Rust, as property tests (proptest): inputs are real files of the repository —
//! protocols in each format, `chainsmith.toml`, programs, LSP traffic — cut, spliced and sprinkled
//! with bytes, and each entry point must answer without panicking, whatever it is given:
//! - every protocol loader (chainsmith's format, OpenAPI as JSON and YAML, ToolBench records);
//! - `chainsmith.toml`;
//! - the Python analysis: diagnostics, completion and hover at any offset;
//! - the language server's byte stream: the server answers or ends, never crashes;
//! - what a workspace's `.chainsmith/` folder holds, which a cloned folder may plant: the ToolNet
//!   store, run traces, a probed overlay and evaluation results, read as the CLI and the editor read
//!   them (the workspace's graph, `run --replay`, the catalog, `eval merge`).
//!
//! `cargo test` runs a bounded number of cases per target; `scripts/fuzz.sh [CPU_MINUTES]` runs
//! each for a CPU-time budget (docs/ARCHITECTURE.md, "Fuzzing").

use std::path::Path;

use chainsmith::analysis::{self, ide, parse};
use chainsmith::config::{Config, DiagnosticsConfig};
use chainsmith::toolset::{Catalog, loader};
use proptest::prelude::*;

/// Cases per target: `PROPTEST_CASES` when set, else the bounded default for `cargo test`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn repo_file(rel: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// One edit of a seed: delete, duplicate or overwrite a span, or insert bytes that matter to the
/// formats (brackets, quotes, colons, newlines, indentation, `$ref`, a NUL, invalid UTF-8).
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Duplicate(usize, usize, usize),
    Insert(usize, &'static [u8]),
    Byte(usize, u8),
}

const PIECES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"(",
    b")",
    b"\"",
    b"'",
    b":",
    b",",
    b"\n",
    b"\n    ",
    b"\t",
    b"- ",
    b"#",
    b"\"$ref\": \"#/components/schemas/X\"",
    b"$ref: '#/'",
    b"null",
    b"-1e999",
    b"\\u0000",
    b"\0",
    b"\xff\xfe",
    b"\xe2\x82",
    b"tmdb.",
    b"[\"",
    b"for x in ",
    b"lambda x: ",
    b"f\"{",
    b"\\",
    b"**",
    b"...",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0usize..64).prop_map(|(at, len)| Edit::Delete(at, len)),
        (any::<usize>(), 0usize..64, any::<usize>()).prop_map(|(at, len, to)| Edit::Duplicate(at, len, to)),
        (any::<usize>(), prop::sample::select(PIECES)).prop_map(|(at, piece)| Edit::Insert(at, piece)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Byte(at, b)),
    ]
}

fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for e in edits {
        let n = data.len().max(1);
        match *e {
            Edit::Delete(at, len) => {
                let at = at % n;
                let end = (at + len).min(data.len());
                if at < end {
                    data.drain(at..end);
                }
            }
            Edit::Duplicate(at, len, to) => {
                let at = at % n;
                let end = (at + len).min(data.len());
                if at < end {
                    let span: Vec<u8> = data[at..end].to_vec();
                    let to = to % (data.len() + 1);
                    data.splice(to..to, span);
                }
            }
            Edit::Insert(at, piece) => {
                let at = at % (data.len() + 1);
                data.splice(at..at, piece.iter().copied());
            }
            Edit::Byte(at, b) => {
                if !data.is_empty() {
                    let at = at % data.len();
                    data[at] = b;
                }
            }
        }
    }
    data
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(edit(), 0..12)
}

/// Loads a workspace holding `file` at `rel` (and `toml`, when given).
fn load(rel: &str, file: &[u8], toml: Option<&[u8]>) -> (Config, Catalog) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, file).unwrap();
    if let Some(toml) = toml {
        std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
    }
    let config = Config::load(dir.path(), None);
    let catalog = loader::load(&config);
    (config, catalog)
}

fn hub_catalog() -> Catalog {
    load("protocols/hub.yaml", &repo_file("tests/fixtures/patterns/protocols/hub.yaml"), None).1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(64), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn protocol_loaders_take_any_file(which in 0usize..4, edits in edits()) {
        let (rel, seed) = [
            ("protocols/weather.toolset.json", "protocols/examples/weather.toolset.json"),
            ("protocols/hub.yaml", "tests/fixtures/patterns/protocols/hub.yaml"),
            ("protocols/films.json", "tests/fixtures/datasets/restbench/tmdb_oas.json"),
            ("protocols/rapid.json", "tests/fixtures/datasets/toolbench/data_example/instruction/G1_query.json"),
        ][which];
        let file = mutate(&repo_file(seed), &edits);
        let (_, catalog) = load(rel, &file, None);
        // A broken file is a diagnostic on that file, never a crash.
        for d in &catalog.diagnostics {
            prop_assert!(d.file.ends_with(rel) || d.file.ends_with("chainsmith.toml"), "{:?}", d.file);
        }
    }

    #[test]
    fn chainsmith_toml_takes_any_text(edits in edits()) {
        let toml = mutate(&repo_file("examples/tmdb/chainsmith.toml"), &edits);
        let spec = repo_file("tests/fixtures/datasets/restbench/tmdb_oas.json");
        load("specs/tmdb_oas.json", &spec, Some(&toml));
    }

    #[test]
    fn analysis_completion_and_hover_take_any_program(which in 0usize..4, edits in edits(), at in any::<usize>()) {
        let seed = [
            "tests/fixtures/patterns/planted/module_dialect.py",
            "tests/fixtures/patterns/planted/http_dialect.py",
            "tests/fixtures/patterns/correct/both_dialects.py",
            "examples/tmdb/mistakes/mistakes.py",
        ][which];
        let catalog = hub_catalog();
        let program = String::from_utf8_lossy(&mutate(&repo_file(seed), &edits)).into_owned();
        let tree = parse::parse(&program);
        let config = DiagnosticsConfig::default();
        let file = Path::new("p.py");
        let found = analysis::analyze(file, &program, &tree, &catalog, &config);
        for d in &found.diagnostics {
            prop_assert!(d.range.start <= d.range.end && d.range.end <= program.len(), "{d:?}");
        }
        let offset = at % (program.len() + 1);
        ide::complete(file, &program, &tree, offset, &catalog, &config);
        ide::hover(file, &program, &tree, offset, &catalog, &config);
    }
}

/// The seeds of `.chainsmith/` files, each in the shape chainsmith writes it.
const STORE_SEED: &str = r#"{
  "chainsmith": "toolnet/1",
  "imports": {
    "data/tmdb.json": {
      "kind": "restbench",
      "trajectories": [
        {"query": "q \"one\"", "tools": ["tmdb.search_person", "tmdb.person_movie_credits"]},
        {"tools": ["tmdb.movie_latest"]}
      ]
    }
  },
  "runs": {
    "20250101T000000-a.py.json": {
      "program": "a.py",
      "started": "2025-01-01T00:00:00Z",
      "ok": false,
      "tools": ["tmdb.search_person"],
      "scores": {"tmdb.search_person": 0, "tmdb.person_movie_credits": -2, "tmdb.movie_latest": 0.33}
    }
  }
}
"#;

const TRACE_SEED: &str = r#"{"program": "a.py", "started": "2025-01-01T00:00:00Z", "ok": false, "calls": [
  {"id": 1, "tool": "tmdb.search_person", "arguments": {"query": "Sofia Coppola"}, "ok": true, "status": 200,
   "response": {"results": [{"id": 1769, "name": "Sofia Coppola"}]}, "error": null, "duration_ms": 12, "line": 3},
  {"id": 2, "tool": "tmdb.person_movie_credits", "arguments": {"person_id": 1769}, "ok": false, "status": 404,
   "response": {"status_message": "not found"}, "error": "HTTP 404", "duration_ms": 9, "line": 4}],
 "error": {"type": "KeyError", "message": "'crew'", "line": 5, "attributed_call": 2}}
"#;

const OVERLAY_SEED: &str = r#"{"chainsmith": "probed/1",
 "tools": {"movie_latest": {"response": {"type": "object", "properties": {"id": {"type": "integer"}, "title": {"type": "string"}}},
                            "examples": [{"question": "What is the latest movie?", "program": "print(tmdb.movie_latest())", "arguments": {}, "response": {"id": 1, "title": "x"}}],
                            "probed": {"date": "2026-11-21", "samples": 1}}}}
"#;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(32), failure_persistence: None, ..ProptestConfig::default() })]

    /// A planted `.chainsmith/` file is a located problem or is left unused, never a crash: the
    /// workspace's ToolNet graph (store and runs), a replayed trace, a probed overlay merged into
    /// the catalog, evaluation results merged.
    #[test]
    fn workspace_state_takes_any_file(which in 0usize..4, edits in edits()) {
        let eval_seed = repo_file("docs/eval/restbench-tmdb/full.jsonl");
        let eval_seed: Vec<u8> = eval_seed.split(|&b| b == b'\n').take(2).collect::<Vec<_>>().join(&b'\n');
        let (rel, seed): (&str, &[u8]) = [
            (".chainsmith/toolnet.json", STORE_SEED.as_bytes()),
            (".chainsmith/runs/20250101T000000-a.py.json", TRACE_SEED.as_bytes()),
            (".chainsmith/probed/tmdb.json", OVERLAY_SEED.as_bytes()),
            (".chainsmith/eval/full.jsonl", eval_seed.as_slice()),
        ][which];
        let file = mutate(seed, &edits);
        let spec = repo_file("tests/fixtures/datasets/restbench/tmdb_oas.json");
        let toml = b"[[toolsets]]\nname = \"tmdb\"\nopenapi = \"specs/tmdb_oas.json\"\n";
        let dir = tempfile::tempdir().unwrap();
        for (path, bytes) in [("specs/tmdb_oas.json", spec.as_slice()), ("chainsmith.toml", toml), (rel, file.as_slice())] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
        }
        let config = Config::load(dir.path(), None);
        let catalog = loader::load(&config);
        let graph = chainsmith::graph::workspace::WorkspaceGraph::load(&config, &catalog);
        graph.graph();
        let _ = chainsmith::runtime::trace::load(&dir.path().join(".chainsmith/runs/20250101T000000-a.py.json"));
        let _ = chainsmith::cli::eval::read_records(&dir.path().join(".chainsmith/eval/full.jsonl"));
        // A broken overlay is a diagnostic on it, within its text.
        for d in catalog.diagnostics.iter().filter(|d| d.file.ends_with(rel)) {
            prop_assert!(d.range.start <= d.range.end && d.range.end <= file.len(), "{d:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), failure_persistence: None, ..ProptestConfig::default() })]

    /// Real LSP traffic (initialize, didOpen, completion, shutdown) cut and spliced: the server
    /// reads it to the end and stops, answering what it can.
    #[test]
    fn the_server_takes_any_byte_stream(edits in edits()) {
        let frame = |body: String| format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let traffic = [
            frame(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}"#.into()),
            frame(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#.into()),
            frame(r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///tmp/p.py","languageId":"python","version":1,"text":"import requests\nr = requests.get(\"x\").json()\nr[\""}}}"#.into()),
            frame(r#"{"jsonrpc":"2.0","id":2,"method":"textDocument/completion","params":{"textDocument":{"uri":"file:///tmp/p.py"},"position":{"line":2,"character":3}}}"#.into()),
            frame(r#"{"jsonrpc":"2.0","id":3,"method":"shutdown","params":null}"#.into()),
            frame(r#"{"jsonrpc":"2.0","method":"exit","params":null}"#.into()),
        ]
        .concat();
        let input = mutate(traffic.as_bytes(), &edits);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (output, mut sink) = tokio::io::duplex(1 << 20);
            let drain = tokio::spawn(async move {
                let mut all = Vec::new();
                let _ = tokio::io::AsyncReadExt::read_to_end(&mut sink, &mut all).await;
            });
            let served = tokio::time::timeout(
                std::time::Duration::from_secs(20),
                chainsmith::server::serve(std::io::Cursor::new(input), output),
            )
            .await;
            prop_assert!(served.is_ok(), "the server did not stop at the end of its input");
            drain.abort();
            Ok(())
        })?;
    }
}

/// The seeds are files chainsmith reads as it wrote them: mutations start from the real shapes.
#[test]
fn the_workspace_state_seeds_are_read_as_written() {
    chainsmith::graph::store::Store::parse(STORE_SEED).expect("the store seed");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    std::fs::write(&trace, TRACE_SEED).unwrap();
    let trace = chainsmith::runtime::trace::load(&trace).expect("the trace seed");
    assert_eq!(trace.calls.len(), 2);
    std::fs::create_dir_all(dir.path().join(".chainsmith/probed")).unwrap();
    std::fs::write(dir.path().join(".chainsmith/probed/tmdb.json"), OVERLAY_SEED).unwrap();
    std::fs::create_dir_all(dir.path().join("specs")).unwrap();
    std::fs::write(
        dir.path().join("specs/tmdb_oas.json"),
        repo_file("tests/fixtures/datasets/restbench/tmdb_oas.json"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("chainsmith.toml"),
        "[[toolsets]]\nname = \"tmdb\"\nopenapi = \"specs/tmdb_oas.json\"\n",
    )
    .unwrap();
    let catalog = loader::load(&Config::load(dir.path(), None));
    let on_overlay: Vec<_> = catalog.diagnostics.iter().filter(|d| d.file.ends_with("tmdb.json")).collect();
    assert!(on_overlay.is_empty(), "{on_overlay:?}");
    let latest = catalog.find("tmdb.movie_latest").expect("TMDB's latest movie");
    let examples = format!("{:?}", latest.examples);
    assert!(examples.contains("What is the latest movie?"), "the overlay's example is merged: {examples}");
}
