//! Fuzzing on stable Rust, as property tests (proptest): inputs are real files of the repository —
//! protocols in each format, `chainsmith.toml`, programs, LSP traffic — cut, spliced and sprinkled
//! with bytes, and each entry point must answer without panicking, whatever it is given:
//! - every protocol loader (chainsmith's format, OpenAPI as JSON and YAML, ToolBench records);
//! - `chainsmith.toml`;
//! - the Python analysis: diagnostics, completion and hover at any offset;
//! - the language server's byte stream: the server answers or ends, never crashes;
//! - what a workspace's `.chainsmith/` folder holds, which a cloned folder may plant: the ToolNet
//!   store, run traces, a probed overlay and evaluation results, read as the CLI and the editor read
//!   them (the workspace's graph, `run --replay`, the catalog, `eval merge`);
//! - the host channel, what a confined program may send the host that executes its tool calls.
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
        let _ = chainsmith::cli::eval::read_records(&dir.path().join(".chainsmith/eval/full.jsonl"), Some(dir.path()));
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

/// The key the API below sends back in every answer (in JSON, text, headers and error messages):
/// the program must never see it.
const ECHOED_KEY: &str = "fz-echoed-key-5c1d9e";

/// What the API adds to the address it redirects to.
const REDIRECT_MARK: &str = "redirected-by-the-api=1";

/// The API of the host-channel target: every answer but a redirect carries [`ECHOED_KEY`], and
/// `/v1/redirect?to=` sends the host to the canary, at the path the program asked.
const HOST_SPEC: &str = r#"{"openapi": "3.0.0", "info": {"title": "api", "version": "1"}, "paths": {
  "/items/{item_id}": {"get": {"operationId": "item", "parameters": [{"name": "item_id", "in": "path", "required": true, "schema": {"type": "integer"}}],
    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "integer"}, "token": {"type": "string"}}}}}}}}},
  "/items": {"post": {"operationId": "create", "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
    "responses": {"200": {"description": "ok"}}}},
  "/search": {"get": {"operationId": "search", "parameters": [{"name": "query", "in": "query", "required": true, "schema": {"type": "string"}}],
    "responses": {"200": {"description": "ok"}}}},
  "/text": {"get": {"operationId": "text", "responses": {"200": {"description": "ok"}}}},
  "/redirect": {"get": {"operationId": "bounce", "parameters": [{"name": "to", "in": "query", "required": true, "schema": {"type": "string"}}],
    "responses": {"307": {"description": "elsewhere"}}}}
}}"#;

/// What a program sends the host, one message a line; `{api}` and `{canary}` become the API's and
/// an address outside every toolset.
const HOST_MESSAGES: &[&str] = &[
    r#"{"op": "hello"}"#,
    r#"{"op": "call", "tool": "api.item", "arguments": {"item_id": 7}, "line": 3}"#,
    r#"{"op": "call", "tool": "api.search", "arguments": {"query": "a b"}, "line": 4}"#,
    r#"{"op": "call", "tool": "api.create", "arguments": {"body": {"name": "n"}}}"#,
    r#"{"op": "call", "tool": "api.bounce", "arguments": {"to": "{canary}/via-redirect"}}"#,
    r#"{"op": "call", "tool": "api.text", "arguments": {}}"#,
    r#"{"op": "http", "method": "GET", "url": "{api}/v1/items/7?x=1&x=2", "headers": [["accept", "*/*"]], "line": 5}"#,
    r#"{"op": "http", "method": "POST", "url": "{api}/v1/items", "headers": [["content-type", "application/json"]], "body": "{\"name\": \"n\"}"}"#,
    r#"{"op": "http", "method": "GET", "url": "{api}/v1/text", "body_latin1": "\u00ff\u0000"}"#,
    r#"{"op": "http", "method": "GET", "url": "{api}/v1/redirect?to={canary}/via-redirect"}"#,
    r#"{"op": "http", "method": "GET", "url": "{api}/v1/missing/%2e%2e/%00"}"#,
    r#"{"op": "http", "method": "DELETE", "url": "{canary}/direct", "body": "{}"}"#,
    r#"{"op": "error", "type": "KeyError", "message": "'x'", "frames": [{"line": 3}], "call": 1}"#,
    r#"not json at all"#,
];

/// One workspace, API and canary for every case of the host-channel target.
struct HostBench {
    _dir: tempfile::TempDir,
    config: std::sync::Arc<Config>,
    catalog: std::sync::Arc<Catalog>,
    api: crate::support::recorder::Recorder,
    canary: crate::support::recorder::Recorder,
}

fn host_bench() -> &'static HostBench {
    use crate::support::recorder::{Recorder, ok_json, redirect};
    static BENCH: std::sync::OnceLock<HostBench> = std::sync::OnceLock::new();
    BENCH.get_or_init(|| {
        let canary = Recorder::start(|_| ok_json("{}"));
        let canary_url = canary.url();
        let api = Recorder::start(move |target| {
            let key = ECHOED_KEY;
            if let Some(to) = target.strip_prefix("/v1/redirect?to=") {
                // A module call sends `to` form-encoded, the HTTP dialect as written.
                let to = percent_encoding::percent_decode_str(&to.replace('+', " ")).decode_utf8_lossy().into_owned();
                // Only to the canary (a mutated address must not leave the machine), and marked,
                // so the canary can tell a request the API sent it from one the host made.
                match to.strip_prefix(&canary_url) {
                    Some(path) if path.starts_with('/') => {
                        // Before a fragment (`to` may hold an encoded `#`), which is never sent.
                        let (path, fragment) = path.split_once('#').map_or((path, ""), |(p, _)| (p, "#"));
                        let mark = if path.contains('?') { "&" } else { "?" };
                        redirect(&format!("{canary_url}{path}{mark}{REDIRECT_MARK}{fragment}"))
                    }
                    _ => "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_string(),
                }
            } else if target.starts_with("/v1/items") {
                ok_json(&format!(r#"{{"id": 7, "token": "{key}"}}"#))
            } else if target.starts_with("/v1/search") {
                ok_json(&format!(r#"{{"results": [{{"id": 1, "name": "{key}"}}]}}"#))
            } else if target.starts_with("/v1/text") {
                let body = format!("\u{ff}key={key}");
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Token: {key}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
            } else {
                let body = format!(r#"{{"status_message": "nothing here for {key}"}}"#);
                format!(
                    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
        });
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("api.json"), HOST_SPEC).unwrap();
        let toml = format!(
            "[[toolsets]]\nname = \"api\"\nopenapi = \"api.json\"\nbase_url = \"{}/v1\"\n\
             auth = {{ header = \"x-api-key\", value_env = \"CHAINSMITH_FUZZ_NEVER_SET\" }}\n",
            api.url()
        );
        std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
        let config = Config::load(dir.path(), None);
        let catalog = loader::load(&config);
        assert!(catalog.find("api.item").is_ok(), "the host target's API: {:?}", catalog.diagnostics);
        HostBench { _dir: dir, config: std::sync::Arc::new(config), catalog: std::sync::Arc::new(catalog), api, canary }
    })
}

/// How a process connects to the host: one byte through the door, with a descriptor or none.
fn send_through_door(door: &std::os::unix::net::UnixStream, fd: Option<std::os::fd::RawFd>) {
    use std::os::fd::AsRawFd;
    let mut byte = 0u8;
    let mut iov = libc::iovec { iov_base: (&raw mut byte).cast(), iov_len: 1 };
    let mut control = [0u64; 4];
    // SAFETY: a zeroed msghdr is a valid empty one; the buffers it points at outlive the call, and
    // `control` is aligned for `cmsghdr` and larger than CMSG_SPACE of one descriptor, so
    // CMSG_FIRSTHDR returns a header inside it.
    unsafe {
        let mut header: libc::msghdr = std::mem::zeroed();
        header.msg_iov = &mut iov;
        header.msg_iovlen = 1;
        if let Some(fd) = fd {
            header.msg_control = control.as_mut_ptr().cast();
            header.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&header);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
            libc::CMSG_DATA(cmsg).cast::<libc::c_int>().write_unaligned(fd);
        }
        assert_eq!(libc::sendmsg(door.as_raw_fd(), &header, 0), 1, "{}", std::io::Error::last_os_error());
    }
}

/// Connects to the host through `door`, sends `input`, and reads every answer until the host
/// closes the connection.
fn talk_to_host(door: &std::os::unix::net::UnixStream, input: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    send_through_door(door, Some(theirs.as_raw_fd()));
    drop(theirs);
    ours.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    // Written from another thread: the host answers as it reads, and both directions have buffers
    // of finite size.
    let mut writer = ours.try_clone().unwrap();
    let input = input.to_vec();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(&input);
        let _ = writer.shutdown(std::net::Shutdown::Write);
    });
    let mut answers = Vec::new();
    let read = (&ours).read_to_end(&mut answers);
    sender.join().unwrap();
    assert!(read.is_ok(), "the host did not finish answering: {read:?}");
    answers
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), failure_persistence: None, ..ProptestConfig::default() })]

    /// What a confined program sends its host, cut and spliced, through the door it holds (with
    /// junk sent through the door first: a byte without a descriptor, a pipe, a datagram socket):
    /// the host answers every line with one JSON object, never hands the program the key the API
    /// echoes, contacts nothing outside the toolsets' base URLs but where the API redirected it,
    /// keeps its call limit, and still serves the next connection (with the stop, once the run hit
    /// that limit).
    #[test]
    fn the_host_takes_any_message(
        // Few edits a message, so most stay JSON and reach the host's handling of each op.
        messages in prop::collection::vec((0..HOST_MESSAGES.len(), prop::collection::vec(edit(), 0..3)), 1..6),
        junk in 0u8..4,
    ) {
        use chainsmith::runtime::host::{Host, HostSetup, McpPool};
        let bench = host_bench();
        let (api, canary) = (bench.api.url(), bench.canary.url());
        let input: Vec<u8> = messages
            .iter()
            .map(|(which, edits)| {
                let seed = HOST_MESSAGES[*which].replace("{api}", &api).replace("{canary}", &canary);
                let mut line = mutate(seed.as_bytes(), edits);
                line.push(b'\n');
                line
            })
            .collect::<Vec<_>>()
            .concat();
        let mut secrets = chainsmith::runtime::trace::Secrets::of(&bench.catalog, &bench.config);
        secrets.add(ECHOED_KEY.to_string());
        let max_calls = 4;
        let host = std::sync::Arc::new(Host::new(HostSetup {
            catalog: bench.catalog.clone(),
            config: bench.config.clone(),
            root: bench._dir.path().to_path_buf(),
            secrets,
            replay: None,
            mcp: std::sync::Arc::new(McpPool::new()),
            upstream: Vec::new(),
            max_calls,
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(20),
            observer: std::sync::Arc::new(chainsmith::runtime::Quiet),
        }));
        let (door, program_end) = std::os::unix::net::UnixStream::pair().unwrap();
        let serving = host.serve(door.try_clone().unwrap());
        match junk {
            1 => send_through_door(&program_end, None),
            2 => {
                let (read, _write) = std::io::pipe().unwrap();
                send_through_door(&program_end, Some(std::os::fd::AsRawFd::as_raw_fd(&read)));
            }
            3 => {
                let (datagram, _other) = std::os::unix::net::UnixDatagram::pair().unwrap();
                send_through_door(&program_end, Some(std::os::fd::AsRawFd::as_raw_fd(&datagram)));
            }
            _ => {}
        }
        // The recorders serve every case: each case looks at the requests made during it.
        let (api_before, canary_before) = (bench.api.received().len(), bench.canary.received().len());
        let answers = talk_to_host(&program_end, &input);
        let asked = input.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).count();
        let lines: Vec<&[u8]> = answers.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        prop_assert_eq!(lines.len(), asked, "one answer per message: {}", String::from_utf8_lossy(&answers));
        for line in &lines {
            let answer: serde_json::Value = serde_json::from_slice(line)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(line)));
            prop_assert!(answer.is_object(), "{answer}");
        }
        let text = String::from_utf8_lossy(&answers);
        prop_assert!(!text.contains(ECHOED_KEY), "the program was handed the API's key: {text}");
        let direct: Vec<String> = bench.canary.received()[canary_before..]
            .iter()
            .filter(|r| !r.lines().next().unwrap_or_default().contains(REDIRECT_MARK))
            .cloned()
            .collect();
        prop_assert!(direct.is_empty(), "the host sent a request outside every toolset: {direct:?}");
        let outside_the_base: Vec<String> = bench.api.received()[api_before..]
            .iter()
            .filter(|r| {
                let target = r.split_whitespace().nth(1).unwrap_or_default();
                !(target == "/v1" || target.starts_with("/v1/") || target.starts_with("/v1?"))
            })
            .cloned()
            .collect();
        prop_assert!(outside_the_base.is_empty(), "the host sent the API a request outside the base URL: {outside_the_base:?}");
        let (calls, _, _, _) = host.finish();
        prop_assert!(calls.len() <= max_calls as usize, "{} calls past the limit of {max_calls}", calls.len());
        // A run stopped at its call limit answers everything after with why it stopped.
        let hello = talk_to_host(&program_end, b"{\"op\": \"hello\"}\n");
        let hello: serde_json::Value = serde_json::from_slice(&hello).unwrap_or_default();
        let stopped_at_the_limit = calls.len() == max_calls as usize
            && hello["stop"].as_str().is_some_and(|why| why.contains("max_tool_calls"));
        prop_assert!(
            hello["toolsets"]["api"]["tools"].is_object() || stopped_at_the_limit,
            "the host stopped serving: {hello}"
        );
        host.close(&door);
        serving.join().unwrap();
    }
}
