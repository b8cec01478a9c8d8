//! The runtime end to end, against real components: the `chainsmith` binary (or the library's
//! `runtime::run`), a real Python interpreter with the embedded package, and the TMDB-like test
//! server (`tests/support/tmdb_server.py`) on 127.0.0.1.

use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use crate::support::external;
use crate::support::runtime::{TmdbServer, chainsmith, processes_with, saved_traces, text, workspace};
use serde_json::{Value, json};

const KEY: &str = "s3cr3t-key-4711";

const SOFIA: &str = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
person = found["results"][0]
credits = tmdb.person_movie_credits(person_id=person["id"])
directed = {c["id"]: c["title"] for c in credits["crew"] if c["job"] == "Director"}
print(f"{person['name']} directed {len(directed)} movies")
"#;

fn write(dir: &Path, name: &str, program: &str) {
    std::fs::write(dir.join(name), program).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn module_dialect_chain_with_auth_trace_and_redaction() {
    let server = TmdbServer::start(&["--api-key", KEY]);
    let ws = workspace(&server.base_url(), true, "");
    let program = format!(
        "{SOFIA}import os\nprint(\"env:\", os.environ.get(\"TMDB_TEST_KEY\"))\nKEY = \"{KEY}\"\ncompanies = tmdb.search_company(query=KEY)\nprint(\"key:\", KEY)\n"
    );
    write(ws.path(), "p.py", &program);
    let out =
        chainsmith(ws.path(), &["--trust", "run", "p.py", "--trace-json", "out/trace.json"], &[("TMDB_TEST_KEY", KEY)]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Bradley Cooper directed 0 movies"), "{stdout}");
    assert!(stdout.contains("key: [redacted]"), "{stdout}");
    assert!(stdout.contains("env: None"), "the program never sees chainsmith's secrets: {stdout}");
    assert!(stderr.contains("#1 tmdb.search_person(query=\"Sofia Coppola\")  ✓ 200"), "{stderr}");
    assert!(stderr.contains("#2 tmdb.person_movie_credits(person_id=51329)  ✓ 200"), "{stderr}");
    assert!(stderr.contains("#3 tmdb.search_company(query=\"[redacted]\")  ✓ 200"), "{stderr}");

    // The trace: saved under .chainsmith/runs and at --trace-json, in the design's shape.
    let saved = saved_traces(ws.path());
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(saved[0].file_name().unwrap().to_str().unwrap().ends_with("-p.json"), "{saved:?}");
    let trace = read_json(&saved[0]);
    assert_eq!(trace, read_json(&ws.path().join("out/trace.json")));
    assert_eq!(trace["program"], "p.py");
    assert_eq!(trace["ok"], true);
    assert!(trace.get("error").is_none());
    assert!(trace["started"].as_str().unwrap().ends_with('Z'));
    let calls = trace["calls"].as_array().unwrap();
    let keys: Vec<&str> = calls[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "tool", "arguments", "ok", "status", "response", "error", "duration_ms", "line"]);
    let summary: Vec<(Value, Value, Value, Value)> =
        calls.iter().map(|c| (c["id"].clone(), c["tool"].clone(), c["status"].clone(), c["line"].clone())).collect();
    assert_eq!(
        summary,
        [
            (json!(1), json!("tmdb.search_person"), json!(200), json!(3)),
            (json!(2), json!("tmdb.person_movie_credits"), json!(200), json!(5)),
            (json!(3), json!("tmdb.search_company"), json!(200), json!(11)),
        ]
    );
    assert_eq!(calls[1]["arguments"], json!({"person_id": 51329}));
    assert_eq!(calls[0]["response"]["results"][0]["name"], "Bradley Cooper");

    // The key went to the server, in the query as the toolset's auth says…
    let requests = server.requests();
    assert_eq!(requests.as_array().unwrap().len(), 3);
    assert_eq!(requests[0]["path"], "/3/search/person");
    assert_eq!(requests[0]["query"], json!({"query": "Sofia Coppola", "api_key": KEY}));
    assert_eq!(requests[1]["path"], "/3/person/51329/movie_credits");
    // …and nowhere else.
    for place in [stdout, stderr, std::fs::read_to_string(&saved[0]).unwrap()] {
        assert!(!place.contains(KEY), "the auth value leaked: {place}");
    }
}

#[test]
fn a_secret_in_any_encoding_or_across_output_pieces_is_never_printed() {
    let key = "K3y+Secr/et=&4711";
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), true, "");
    let program = r#"import base64, os, sys, urllib.parse
k = "K3y+Secr/et=&4711"
print("quoted", urllib.parse.quote(k, safe=""))
print("form", urllib.parse.quote_plus(k))
print("basic", base64.b64encode(k.encode()).decode())
# The key straddles the 64 KiB pieces a long line is forwarded in.
sys.stdout.write("a" * (65536 - 7) + k + "z" * 10 + "\n")
# Keys one after another on a line long enough to be forwarded in several pieces: wherever a
# piece is cut, it cuts through a key.
sys.stdout.write(("|" + k) * 12000 + "\n")
"#;
    write(ws.path(), "leak.py", program);
    let out = chainsmith(ws.path(), &["--trust", "run", "leak.py"], &[("TMDB_TEST_KEY", key)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for leaked in [key, "K3y%2BSecr%2Fet%3D%264711", "K3y%2BSecr%2Fet%3D%264711", "SzN5K1NlY3IvZXQ9JjQ3MTE="] {
        assert!(!stdout.contains(leaked), "{leaked} printed");
    }
    assert!(
        stdout.contains("quoted [redacted]\nform [redacted]\nbasic [redacted]\n"),
        "{}",
        &stdout[..200.min(stdout.len())]
    );
    assert!(stdout.contains(&format!("{}[redacted]zzzzzzzzzz", "a".repeat(20))));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", &stdout[..200.min(stdout.len())]);
    assert_eq!(lines[3].len(), 65536 - 7 + "[redacted]".len() + 10);
    assert_eq!(lines[4], "|[redacted]".repeat(12000), "every key on the long line is redacted whole");
}

#[test]
fn header_auth_with_a_prefix() {
    let server = TmdbServer::start(&["--api-key", KEY]);
    let ws = workspace(&server.base_url(), false, "");
    let toml = std::fs::read_to_string(ws.path().join("chainsmith.toml")).unwrap().replace(
        "base_url",
        "auth = { header = \"Authorization\", prefix = \"Bearer \", value_env = \"TMDB_TEST_KEY\" }\nbase_url",
    );
    std::fs::write(ws.path().join("chainsmith.toml"), toml).unwrap();
    write(ws.path(), "p.py", SOFIA);
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[("TMDB_TEST_KEY", KEY)]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests[0]["headers"]["authorization"], format!("Bearer {KEY}"));
    assert!(requests[0]["query"].get("api_key").is_none());
    let trace = std::fs::read_to_string(&saved_traces(ws.path())[0]).unwrap();
    assert!(!trace.contains(KEY));

    // Without the variable the server refuses, and the message says why.
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("401 Unauthorized: Invalid API key: You must be granted a valid key. (no auth value: the environment variable TMDB_TEST_KEY is not set)"), "{stderr}");
}

#[test]
fn http_dialect_requests_and_httpx_are_routed_through_the_host() {
    if !external::python_package("httpx", "httpx") {
        return;
    }
    let server = TmdbServer::start(&["--api-key", KEY]);
    let ws = workspace(&server.base_url(), true, "");
    let program = format!(
        r#"import os

import httpx
import requests

BASE = "{base}"
KEY = "{key}"

found = requests.get(f"{{BASE}}/search/movie", params={{"api_key": KEY, "query": "The Dark Knight"}}).json()
movie = found["results"][0]
with requests.Session() as s:
    credits = s.get(f"{{BASE}}/movie/{{movie['id']}}/credits", params={{"api_key": KEY}}).json()
lead = min(credits["cast"], key=lambda c: c["order"])
person = httpx.get(f"{{BASE}}/person/{{lead['id']}}").json()
print(movie["title"], "|", lead["name"], "|", person["name"])
try:
    requests.get("http://127.0.0.1:{port}/__requests")
except Exception as e:
    print("not a toolset:", type(e).__name__, "chainsmith sandbox" in str(e))
missing = requests.get(f"{{BASE}}/person/404", params={{"api_key": KEY}})
print("status", missing.status_code, missing.json()["status_code"])
"#,
        base = server.base_url(),
        port = server.port,
        key = KEY
    );
    write(ws.path(), "h.py", &program);
    let out = chainsmith(ws.path(), &["--trust", "run", "h.py"], &[("TMDB_TEST_KEY", KEY)]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("The Avengers | Edward Norton | Brad Pitt"), "{stdout}");
    assert!(
        stdout.contains("not a toolset: ConnectionError True"),
        "a URL that is no toolset's is not reached from the sandbox: {stdout}"
    );
    assert_eq!(server.requests().as_array().unwrap().len(), 4, "the host made the program's four tool requests");
    assert!(stdout.contains("status 404 34"), "{stdout}");
    let trace = read_json(&saved_traces(ws.path())[0]);
    let calls = trace["calls"].as_array().unwrap();
    let tools: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["tmdb.search_movie", "tmdb.movie_credits", "tmdb.person", "tmdb.person"]);
    // Arguments as the tool names them: the auth parameter is not one, path values are typed.
    assert_eq!(calls[0]["arguments"], json!({"query": "The Dark Knight"}));
    assert_eq!(calls[1]["arguments"], json!({"movie_id": 24428}));
    assert_eq!((calls[3]["ok"].clone(), calls[3]["status"].clone()), (json!(false), json!(404)));
    assert_eq!(calls[0]["line"], 9);
    // httpx's request had no key: the host added the toolset's auth.
    let requests = server.requests();
    let httpx_request = &requests[2];
    assert_eq!(httpx_request["path"], "/3/person/819");
    assert_eq!(httpx_request["query"]["api_key"], KEY);
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
}

#[test]
fn tool_errors_404_and_500_fail_the_run_at_their_call() {
    let server = TmdbServer::start(&["--fail", "/person/=404"]);
    let ws = workspace(&server.base_url(), false, "");
    let program = r#"from chainsmith import ToolError
from chainsmith.tools import tmdb

try:
    tmdb.person(person_id=1)
except ToolError as e:
    print("caught", e.tool, e.status, e.message)
movie = tmdb.movie(movie_id=500)
print("not reached")
"#;
    write(ws.path(), "p.py", program);
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("caught tmdb.person 404 404 Not Found: The resource you requested could not be found."),
        "{stdout}"
    );
    assert!(!stdout.contains("not reached"));
    assert!(
        stderr.contains(
            "p.py:8:9: error[tool-error]: tmdb.movie failed (call #2): 500 Internal Server Error: Internal error: Something went wrong, contact TMDb."
        ),
        "{stderr}"
    );
    let trace = read_json(&saved_traces(ws.path())[0]);
    assert_eq!(trace["ok"], false);
    assert_eq!(trace["error"]["type"], "ToolError");
    assert_eq!(trace["error"]["line"], 8);
    assert_eq!(trace["error"]["attributed_call"], 2);
    assert_eq!(trace["calls"][0]["status"], 404);
    assert_eq!(trace["calls"][1]["status"], 500);
    assert_eq!(trace["calls"][1]["response"]["status_code"], 11);
}

#[test]
fn a_slow_tool_and_a_busy_loop_hit_the_wall_time_limit() {
    let server = TmdbServer::start(&["--slow", "/search/person=20"]);
    let ws = workspace(&server.base_url(), false, "[runtime]\ntimeout_s = 1\n");
    write(
        ws.path(),
        "slow.py",
        "from chainsmith.tools import tmdb\nprint(\"before\")\nfound = tmdb.search_person(query=\"x\")\n",
    );
    write(ws.path(), "busy.py", "x = 0\nwhile True:\n    x += 1\n");
    let started = Instant::now();
    let out = chainsmith(ws.path(), &["--trust", "run", "slow.py"], &[]);
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("before"));
    assert!(stderr.contains("slow.py:3:9: error[run-stopped]: the run took longer than 1 s ([runtime] timeout_s) and was stopped while waiting for tmdb.search_person (call #1)"), "{stderr}");
    let trace = read_json(&saved_traces(ws.path())[0]);
    assert_eq!(trace["error"]["type"], "Timeout");
    assert_eq!(trace["error"]["line"], 3);
    assert_eq!(trace["error"]["attributed_call"], 1);
    assert_eq!(trace["calls"][0]["ok"], false);
    assert!(trace["calls"][0]["error"].as_str().unwrap().contains("interrupted"));

    let out = chainsmith(ws.path(), &["--trust", "run", "busy.py"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error[run-stopped]: the run took longer than 1 s"), "{stderr}");
    let busy = saved_traces(ws.path()).into_iter().find(|p| p.to_str().unwrap().ends_with("-busy.json")).unwrap();
    let line = read_json(&busy)["error"]["line"].as_u64();
    assert!(matches!(line, Some(2 | 3)), "the loop's line, from the fault handler: {line:?}");
}

#[test]
fn the_tool_call_limit_stops_the_run() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "[runtime]\nmax_tool_calls = 3\n");
    let program = "from chainsmith.tools import tmdb\n\nfor i in range(10):\n    tmdb.search_person(query=str(i))\n    print(i)\n";
    write(ws.path(), "p.py", program);
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(stdout, "0\n1\n2\n");
    assert!(stderr.contains("p.py:4:5: error[run-stopped]: the run tried more than 3 tool calls ([runtime] max_tool_calls) and was stopped at a call to tmdb.search_person"), "{stderr}");
    let trace = read_json(&saved_traces(ws.path())[0]);
    assert_eq!(trace["calls"].as_array().unwrap().len(), 3);
    assert_eq!(trace["error"]["type"], "ToolCallLimit");
    assert_eq!(trace["error"]["line"], 4);
}

/// A tool's snake-cased `operationId` is an alias: checked, run and traced as the tool itself.
#[test]
fn an_operation_id_alias_runs_and_is_traced_under_the_tool() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    let program = "from chainsmith.tools import tmdb\n\nfound = tmdb.get_search_person(query=\"Sofia Coppola\")\nprint(found[\"results\"][0][\"id\"])\n";
    write(ws.path(), "p.py", program);
    let check = chainsmith(ws.path(), &["--trust", "check", "p.py"], &[]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    // Nothing on the program; the spec's own warning (a property named `""`) is all there is.
    let report = text(&check.stdout);
    assert!(report.lines().all(|l| l.contains("tmdb_oas.json") && l.contains("[empty-property-name]")), "{report}");
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!((out.status.code(), stdout.as_str()), (Some(0), "51329\n"), "{stderr}");
    assert!(stderr.contains("#1 tmdb.search_person(query=\"Sofia Coppola\")  ✓ 200"), "{stderr}");
    assert_eq!(read_json(&saved_traces(ws.path())[0])["calls"][0]["tool"], "tmdb.search_person");

    write(ws.path(), "typo.py", "from chainsmith.tools import tmdb\n\ntmdb.get_search_persn(query=\"x\")\n");
    let typo = chainsmith(ws.path(), &["check", "typo.py"], &[]);
    assert!(text(&typo.stdout).contains("did you mean `get_search_person`?"), "{}", text(&typo.stdout));
}

/// A response that contradicts its declared schema is reported on the protocol, located at the
/// operation, with the path and what was observed; the run itself is unaffected.
#[test]
fn a_response_outside_its_declared_schema_is_schema_drift_on_the_protocol() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    // The protocol now says person ids are strings; the API answers integers.
    let spec_path = ws.path().join("specs/tmdb_oas.json");
    let mut spec: Value = serde_json::from_str(&std::fs::read_to_string(&spec_path).unwrap()).unwrap();
    let schema =
        &mut spec["paths"]["/search/person"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    schema["properties"]["results"]["items"]["properties"]["id"] = json!({"type": "string"});
    std::fs::write(&spec_path, serde_json::to_string_pretty(&spec).unwrap()).unwrap();
    write(ws.path(), "p.py", SOFIA);

    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "drift is a warning, not a failure: {stdout}\n{stderr}");
    let drift: Vec<&str> = stderr.lines().filter(|l| l.contains("schema-drift")).collect();
    let [line] = drift[..] else { panic!("one drift warning: {stderr}") };
    let spec_text = std::fs::read_to_string(&spec_path).unwrap();
    let operation_line = spec_text.lines().position(|l| l.contains("\"/search/person\"")).unwrap() + 2;
    assert!(line.contains(&format!("specs/tmdb_oas.json:{operation_line}:")), "{line}");
    assert!(
        line.ends_with("warning[schema-drift]: `tmdb.search_person` answered outside its declared response schema in a run of p.py (call #1): `results[0].id`: expected string, got integer"),
        "{line}"
    );
}

/// A run through the library, as the editor does it.
fn library_run(
    dir: &Path,
    program: &str,
    limits: impl FnOnce(&mut chainsmith::runtime::Limits),
    observer: Arc<dyn chainsmith::runtime::RunObserver>,
    cancel: &chainsmith::runtime::Cancel,
) -> chainsmith::runtime::RunOutcome {
    let (config, catalog) = chainsmith::cli::load_workspace(dir).unwrap();
    let mut request = chainsmith::runtime::RunRequest::new(dir.join(program), dir, Arc::new(config), Arc::new(catalog));
    limits(&mut request.limits);
    chainsmith::runtime::run(request, observer, cancel)
}

struct Lines(Mutex<Vec<String>>, Mutex<Option<mpsc::Sender<()>>>);

impl chainsmith::runtime::RunObserver for Lines {
    fn output(&self, _: chainsmith::runtime::Stream, line: &str) {
        self.0.lock().unwrap().push(line.to_string());
        if line.contains("started")
            && let Some(tx) = self.1.lock().unwrap().take()
        {
            let _ = tx.send(());
        }
    }
}

#[test]
fn output_is_capped_and_cancelling_leaves_no_process_behind() {
    let ws = workspace("http://127.0.0.1:9/3", false, "");
    write(ws.path(), "loud.py", "while True:\n    print('x' * 100)\n");
    let lines = Arc::new(Lines(Mutex::new(Vec::new()), Mutex::new(None)));
    let outcome =
        library_run(ws.path(), "loud.py", |l| l.max_output_bytes = 10_000, lines.clone(), &Default::default());
    assert_eq!(outcome.stopped, Some(chainsmith::runtime::Stop::OutputLimit { limit: 10_000 }));
    assert!(outcome.output.len() <= 10_000 && outcome.output.len() > 9_000, "{}", outcome.output.len());
    assert_eq!(outcome.trace.error.as_ref().unwrap().kind, "OutputLimit");
    assert_eq!(outcome.exit_status(), 1);

    // A program that starts a child and a grandchild (through a shell), then waits.
    let marker = format!("chainsmith-orphan-test-{}", std::process::id());
    let program = format!(
        "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{marker}-child'])\nsubprocess.Popen(['sh', '-c', 'sleep 300 & wait; echo {marker}-shell'])\nprint('started', flush=True)\ntime.sleep(300)\n"
    );
    write(ws.path(), "spawner.py", &program);
    let (tx, rx) = mpsc::channel();
    let lines = Arc::new(Lines(Mutex::new(Vec::new()), Mutex::new(Some(tx))));
    let cancel = chainsmith::runtime::Cancel::new();
    let started = Instant::now();
    let outcome = std::thread::scope(|scope| {
        let run = scope.spawn(|| library_run(ws.path(), "spawner.py", |_| {}, lines.clone(), &cancel));
        rx.recv_timeout(Duration::from_secs(10)).expect("the program starts its children");
        let deadline = Instant::now() + Duration::from_secs(5);
        while processes_with(&marker).len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // (The shell may show twice for a moment: it forks before `sleep` replaces the copy.)
        let running = processes_with(&marker).len();
        cancel.cancel();
        let outcome = run.join().unwrap();
        assert!(running >= 2, "the child and the shell were running: {running}");
        outcome
    });
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(outcome.stopped, Some(chainsmith::runtime::Stop::Cancelled));
    assert_eq!(outcome.trace.error.as_ref().unwrap().kind, "Cancelled");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !processes_with(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_with(&marker), Vec::<u32>::new(), "orphans outlived the cancelled run");

    // A program that exits at once, leaving a background process: it goes with the run.
    let program = format!(
        "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{marker}-left'])\nprint('bye')\n"
    );
    write(ws.path(), "leaver.py", &program);
    let outcome =
        library_run(ws.path(), "leaver.py", |_| {}, Arc::new(chainsmith::runtime::Quiet), &Default::default());
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.output);
    assert!(outcome.trace.ok);
    let deadline = Instant::now() + Duration::from_secs(3);
    while !processes_with(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_with(&marker), Vec::<u32>::new(), "a background process outlived its run");
}

#[test]
fn replay_answers_recorded_calls_and_runs_only_new_ones() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    write(ws.path(), "p.py", SOFIA);
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py", "--trace-json", "first.json"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    drop(server);

    // The server is gone: every call is answered from the trace.
    let out = chainsmith(
        ws.path(),
        &["--trust", "run", "p.py", "--replay", "first.json", "--trace-json", "second.json"],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Bradley Cooper directed 0 movies"), "{stdout}");
    assert_eq!(stderr.matches("(replayed)").count(), 2, "{stderr}");
    let second = read_json(&ws.path().join("second.json"));
    assert_eq!(second["calls"][1]["response"], read_json(&ws.path().join("first.json"))["calls"][1]["response"]);

    // A new call is executed for real (and fails: nothing listens any more).
    write(ws.path(), "more.py", &format!("{SOFIA}tmdb.person(person_id=person[\"id\"])\n"));
    let out = chainsmith(ws.path(), &["--trust", "run", "more.py", "--replay", "first.json"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("(replayed)").count(), 2, "{stderr}");
    assert!(stderr.contains("#3 tmdb.person(person_id=51329)  ✗ error  "), "{stderr}");
    assert!(stderr.contains(" ms  line 8  the request could not connect"), "{stderr}");
}

#[test]
fn a_key_error_two_lines_after_a_call_is_attributed_to_it() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    let program = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
person = found["results"][0]
print(person["nmae"])
"#;
    write(ws.path(), "p.py", program);
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("KeyError: 'nmae'"), "the traceback is shown: {stderr}");
    assert!(stderr.contains("p.py:5:7: error[runtime-error]: KeyError: 'nmae' — on the response of tmdb.search_person (call #1, line 3, ✓ 200)"), "{stderr}");
    assert!(stderr.contains("p.py:3:9: warning[attributed-call]: the run failed at line 5 with KeyError: 'nmae', on the response of this call"), "{stderr}");
    let trace = read_json(&saved_traces(ws.path())[0]);
    assert_eq!(trace["error"], json!({"type": "KeyError", "message": "'nmae'", "line": 5, "attributed_call": 1}));

    // Another call in between: the data came from the first one, not the latest.
    let program = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
credits = tmdb.person_movie_credits(person_id=found["results"][0]["id"])
jobs = [c["job"] for c in credits["crew"]]
print(found["results"][0]["known_for"][0]["titel"])
"#;
    write(ws.path(), "q.py", program);
    let out = chainsmith(ws.path(), &["--trust", "run", "q.py", "--trace-json", "q.json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let trace = read_json(&ws.path().join("q.json"));
    assert_eq!(trace["error"]["line"], 6);
    assert_eq!(trace["error"]["attributed_call"], 1, "{}", text(&out.stderr));

    // The HTTP dialect: the response flows through `.json()`.
    let program = format!(
        "import requests\n\nr = requests.get(\"{}/movie/top_rated\")\ndata = r.json()\nbest = data[\"results\"][0]\nprint(best[\"rating\"])\n",
        server.base_url()
    );
    write(ws.path(), "h.py", &program);
    let out = chainsmith(ws.path(), &["--trust", "run", "h.py", "--trace-json", "h.json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let trace = read_json(&ws.path().join("h.json"));
    assert_eq!(trace["calls"][0]["tool"], "tmdb.movie_top_rated");
    assert_eq!(trace["error"]["line"], 6);
    assert_eq!(trace["error"]["attributed_call"], 1, "{}", text(&out.stderr));
}

#[test]
fn tools_that_cannot_run_are_refused_before_starting_and_toolbench_runs_with_a_base_url() {
    let ws = tempfile::tempdir().unwrap();
    let records = r#"[{"tool_name": "Cat Facts", "api_name": "Get Fact", "category_name": "Animals", "method": "GET",
      "required_parameters": [{"name": "animal", "type": "STRING", "description": "which"}], "optional_parameters": []}]"#;
    std::fs::write(ws.path().join("rapid.json"), records).unwrap();
    std::fs::write(ws.path().join("chainsmith.toml"), "[[toolsets]]\nname = \"rapid\"\ntoolbench = \"rapid.json\"\n")
        .unwrap();
    let program =
        "from chainsmith.tools import rapid\nprint('ran')\nprint(rapid.get_fact_for_cat_facts(animal='cat'))\n";
    write(ws.path(), "p.py", program);
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stdout.contains("ran"), "the program did not start: {stdout}");
    assert!(stderr.contains("p.py:3:13: error[no-transport]: rapid.get_fact_for_cat_facts cannot run: ToolBench tools carry no URL; give toolset `rapid` a `base_url`"), "{stderr}");
    assert!(saved_traces(ws.path()).is_empty());

    let server = TmdbServer::start(&[]);
    let toml = format!(
        "[[toolsets]]\nname = \"rapid\"\ntoolbench = \"rapid.json\"\nbase_url = \"http://127.0.0.1:{}/virtual\"\n",
        server.port
    );
    std::fs::write(ws.path().join("chainsmith.toml"), toml).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("{'tool': 'Cat Facts', 'api': 'Get Fact', 'input': {'animal': 'cat'}}"), "{stdout}");
}

/// `run --mock`: the calls go to chainsmith's mock of the API, built from its protocol; the API
/// itself is never reached.
#[test]
fn run_against_the_mock_reaches_no_api() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    write(ws.path(), "p.py", SOFIA);
    let out = chainsmith(ws.path(), &["run", "--mock", "p.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(" directed "), "{stdout}");
    assert!(stderr.contains("── trace: 2 calls"), "{stderr}");
    assert_eq!(server.requests().as_array().unwrap().len(), 0, "the mock run reached the API");
}

/// README's quick start: with no key and no network, "Run against the mock" runs every chain of
/// the example — the HTTP-dialect ones too, which once read `$TMDB_KEY` themselves and so failed
/// in a confined run, where the program never sees it (chainsmith adds the key).
/// The example's chains run against the mock as a newcomer runs them: without a key, and with
/// one in the environment but the workspace not trusted to send it (a mock run sends no key).
#[test]
fn every_example_chain_runs_against_the_mock_with_or_without_a_key() {
    let ws = tempfile::tempdir().unwrap();
    crate::support::runtime::copy_example(ws.path());
    let mut chains: Vec<_> = std::fs::read_dir(ws.path().join("chains")).unwrap().flatten().map(|e| e.path()).collect();
    chains.sort();
    assert!(chains.len() >= 12, "{chains:?}");
    let key = "tmdb-key-never-needed-0123456789";
    for chain in chains {
        for with_key in [false, true] {
            let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"));
            command.args(["run", "--mock"]).arg(&chain).current_dir(ws.path()).stdin(std::process::Stdio::null());
            if with_key {
                command.env("TMDB_KEY", key);
            } else {
                command.env_remove("TMDB_KEY");
            }
            let out = command.output().unwrap();
            let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
            let run = format!("{} (TMDB_KEY set: {with_key})", chain.display());
            assert_eq!(out.status.code(), Some(0), "{run}:\n{stdout}\n{stderr}");
            assert!(stderr.contains("── trace:"), "{run}: {stderr}");
        }
    }
}

/// A call a stand-in answers (chainsmith's mock, in a mock run) goes without the toolset's key:
/// the stand-in gets none, and an untrusted workspace needs no trust to make it.
#[test]
fn a_stand_in_gets_no_key() {
    let server = TmdbServer::start(&[]);
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("specs")).unwrap();
    std::fs::copy(crate::support::runtime::spec_path(), ws.path().join("specs/tmdb_oas.json")).unwrap();
    // $HOME stands for a secret: it is set in every test process.
    let home = std::env::var("HOME").expect("HOME is set");
    std::fs::write(
        ws.path().join("chainsmith.toml"),
        "[[toolsets]]\nname = \"tmdb\"\nopenapi = \"specs/tmdb_oas.json\"\nbase_url = \"https://api.themoviedb.example/3\"\nauth = { query = \"api_key\", value_env = \"HOME\" }\n",
    )
    .unwrap();
    write(ws.path(), "p.py", SOFIA);
    let (config, catalog) = chainsmith::cli::load_workspace(ws.path()).unwrap();
    let mut request =
        chainsmith::runtime::RunRequest::new(ws.path().join("p.py"), ws.path(), Arc::new(config), Arc::new(catalog));
    request.upstream = vec![("https://api.themoviedb.example/3".into(), server.base_url())];
    let outcome =
        chainsmith::runtime::run(request, Arc::new(Lines(Mutex::default(), Mutex::default())), &Default::default());
    assert!(outcome.trace.calls.iter().all(|c| c.ok), "{:?}", outcome.trace.calls);
    assert_eq!(outcome.trace.calls.len(), 2);
    let requests = server.requests().to_string();
    assert!(requests.contains("/search/person"), "{requests}");
    assert!(!requests.contains(&home) && !requests.contains("api_key"), "the key went to the stand-in: {requests}");
}

#[test]
fn a_missing_requests_library_is_named_clearly() {
    let server = TmdbServer::start(&[]);
    // An interpreter without site-packages: `requests` is not importable there.
    let ws = workspace(&server.base_url(), false, "[runtime]\npython = \"./bin/python-without-site\"\n");
    std::fs::create_dir_all(ws.path().join("bin")).unwrap();
    let wrapper = ws.path().join("bin/python-without-site");
    std::fs::write(&wrapper, "#!/bin/sh\nexec python3 -S \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        ws.path(),
        "h.py",
        &format!("import requests\n\nprint(requests.get(\"{}/movie/top_rated\").json())\n", server.base_url()),
    );
    let out = chainsmith(ws.path(), &["--trust", "run", "h.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "No module named 'requests': this program uses `requests` (the HTTP dialect), which is not installed"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("h.py:1:1: error[runtime-error]: ModuleNotFoundError"), "{stderr}");
}

#[test]
fn stubs_never_write_through_a_planted_link() {
    let ws = workspace("http://127.0.0.1:9/3", false, "");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("precious.pyi"), "keep").unwrap();
    std::fs::create_dir_all(ws.path().join("typings")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("typings/chainsmith")).unwrap();
    let out = chainsmith(ws.path(), &["stubs"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("refusing to write"), "{}", text(&out.stderr));
    let left: Vec<_> = std::fs::read_dir(outside.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["precious.pyi"], "nothing written outside the workspace");

    // `typings` itself leading out of the workspace: refused too.
    std::fs::remove_file(ws.path().join("typings/chainsmith")).unwrap();
    std::fs::remove_dir(ws.path().join("typings")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("typings")).unwrap();
    let out = chainsmith(ws.path(), &["stubs"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("refusing to write"), "{}", text(&out.stderr));
    let left: Vec<_> = std::fs::read_dir(outside.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["precious.pyi"], "nothing written through a linked typings/");
}

#[test]
fn stubs_make_a_type_checker_agree() {
    if !external::basedpyright() {
        return;
    }
    let ws = workspace("http://127.0.0.1:9/3", false, "");
    let out = chainsmith(ws.path(), &["stubs"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stub = std::fs::read_to_string(ws.path().join("typings/chainsmith/tools/tmdb.pyi")).unwrap();
    assert!(stub.contains("def search_person(*, query: str"), "{}", &stub[..2000.min(stub.len())]);
    assert!(stub.contains("Literal["), "enums become literals");
    write(ws.path(), "good.py", SOFIA);
    write(
        ws.path(),
        "bad.py",
        "from chainsmith.tools import tmdb\n\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nprint(found[\"results\"][0][\"nmae\"])\n",
    );
    std::fs::write(ws.path().join("pyrightconfig.json"), r#"{"typeCheckingMode": "standard"}"#).unwrap();
    let checked = std::process::Command::new("basedpyright")
        .args(["--outputjson", "good.py", "bad.py"])
        .current_dir(ws.path())
        .output()
        .expect("basedpyright runs");
    let report: Value = serde_json::from_slice(&checked.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&checked.stdout), text(&checked.stderr)));
    let errors: Vec<(String, u64, String)> = report["generalDiagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            let file = Path::new(d["file"].as_str().unwrap()).file_name().unwrap().to_string_lossy().into_owned();
            (file, d["range"]["start"]["line"].as_u64().unwrap(), d["message"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!((errors[0].0.as_str(), errors[0].1), ("bad.py", 3), "{errors:#?}");
    assert!(errors[0].2.contains("nmae"), "{errors:#?}");
}

#[test]
fn an_mcp_tool_runs_through_its_server() {
    if !external::python_package("mcp_server_time", "mcp-server-time") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let toml = "[[toolsets]]\nname = \"clock\"\nmcp = { command = \"python3\", args = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"] }\n";
    std::fs::write(ws.path().join("chainsmith.toml"), toml).unwrap();
    let program = r#"from chainsmith import ToolError
from chainsmith.tools import clock

now = clock.get_current_time(timezone="Europe/Paris")
print("tz", now["timezone"])
try:
    clock.convert_time(source_timezone="Nowhere/Bogus", time="12:00", target_timezone="UTC")
except ToolError as e:
    print("error", e.tool, e.status)
"#;
    write(ws.path(), "p.py", program);
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py", "--trace-json", "t.json"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("tz Europe/Paris"), "{stdout}");
    assert!(stdout.contains("error clock.convert_time None"), "{stdout}");
    let trace = read_json(&ws.path().join("t.json"));
    assert_eq!(trace["calls"][0]["tool"], "clock.get_current_time");
    assert_eq!(trace["calls"][0]["arguments"], json!({"timezone": "Europe/Paris"}));
    assert_eq!(trace["calls"][0]["status"], Value::Null);
    assert_eq!(trace["calls"][1]["ok"], false);
}

#[test]
fn a_command_tool_gets_its_arguments_on_stdin() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("protocols")).unwrap();
    let toolset = r#"{"chainsmith": "toolset/1", "name": "local", "tools": [
      {"name": "shout", "command": ["python3", "shout.py"],
       "parameters": {"text": {"type": "string", "required": true}, "times": {"type": "integer"}},
       "response": {"type": "object", "properties": {"loud": {"type": "string"}}}},
      {"name": "fail", "command": ["sh", "-c", "echo broken >&2; exit 4"]}
    ]}"#;
    std::fs::write(ws.path().join("protocols/local.toolset.json"), toolset).unwrap();
    let script = "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'loud': args['text'].upper() * args.get('times', 1)}))\n";
    std::fs::write(ws.path().join("shout.py"), script).unwrap();
    let program = "from chainsmith import ToolError\nfrom chainsmith.tools import local\n\nprint(local.shout(text='hi', times=2)['loud'])\ntry:\n    local.fail()\nexcept ToolError as e:\n    print('failed:', e.message)\n";
    write(ws.path(), "p.py", program);
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("HIHI"), "{stdout}");
    assert!(stdout.contains("failed: exited with status 4: broken"), "{stdout}");
}

/// A timeout too long for any clock (`i64::MAX` seconds) is read as the longest one, said by
/// `check`, and neither `run` nor `generate` panics on it.
#[test]
fn an_endless_timeout_is_bounded_and_flagged() {
    let endless = i64::MAX;
    let extra = format!(
        "[runtime]\ntimeout_s = {endless}\n\n[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\ntimeout_s = {endless}\n"
    );
    // The LLM is asked (and cannot be reached): the toolset gives the task its candidates.
    let dir = workspace("http://127.0.0.1:9/3", false, &extra);
    write(dir.path(), "p.py", "print('still here')\n");
    let out = chainsmith(dir.path(), &["check", "--format", "json"], &[]);
    let reported: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for section in ["[runtime] timeout_s", "[llm] timeout_s"] {
        assert!(
            reported.iter().any(|d| d["code"] == "invalid-config"
                && d["message"].as_str().unwrap().starts_with(&format!("{section} = {endless} is out of range"))),
            "{section}: {reported:?}"
        );
    }
    let out = chainsmith(dir.path(), &["run", "p.py"], &[]);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), "still here\n".into()), "{}", text(&out.stderr));
    let out = chainsmith(dir.path(), &["generate", "search for the person Sofia Coppola"], &[]);
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    assert!(matches!(out.status.code(), Some(1 | 2)), "{:?}: {}", out.status, text(&out.stderr));
}

/// A program in a folder that is no workspace (no chainsmith.toml, no protocols folder above it)
/// runs and is checked with its own folder as the workspace, named from anywhere.
#[test]
fn a_program_outside_any_workspace_runs_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    write(&dir.path().join("sub"), "hello.py", "import os\nprint('hello from', os.path.basename(os.getcwd()))\n");
    for (cwd, program) in [(dir.path().join("sub"), "hello.py"), (dir.path().to_path_buf(), "sub/hello.py")] {
        let out = chainsmith(&cwd, &["run", program], &[]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "run {program}: {stdout}\n{stderr}");
        assert_eq!(stdout, "hello from sub\n", "run {program}: {stderr}");
        let out = chainsmith(&cwd, &["check", program], &[]);
        assert_eq!(out.status.code(), Some(0), "check {program}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("checked 1 program"), "check {program}: {}", text(&out.stderr));
    }
    assert_eq!(saved_traces(&dir.path().join("sub")).len(), 2, "the traces are kept in the program's folder");
    // A folder others may write (as /tmp) is no workspace: its .chainsmith/ would be theirs.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path().join("sub"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = chainsmith(&dir.path().join("sub"), &["run", "hello.py"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("its folder is not yours alone"), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "", "the program did not run");
}
