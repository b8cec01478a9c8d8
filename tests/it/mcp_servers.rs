//! The MCP client and MCP toolsets against real MCP servers: `mcp-server-time` and
//! `mcp-server-git` (PyPI), `@modelcontextprotocol/server-memory` and
//! `@modelcontextprotocol/server-everything` (npm, installed locally in `tests/mcp/`).
//! `scripts/test-deps.sh` installs all four; without one its tests skip, or fail under
//! `CHAINSMITH_REQUIRE_EXTERNAL=1` (see `tests/support/external.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use chainsmith::config::McpConfig;
use chainsmith::mcp::{McpClient, McpError, McpErrorKind};
use chainsmith::text::ByteRange;
use chainsmith::toolset::schema::{self, KeyLookup};
use chainsmith::toolset::{ParamLocation, SourceKind, Transport, mcp};
use serde_json::{Value, json};

use crate::support::external;

const CALL: Duration = Duration::from_secs(20);

/// Whether mcp-server-time is installed (a skip when not).
fn time_installed() -> bool {
    external::python_package("mcp_server_time", "mcp-server-time")
}

/// A PyPI server run as `python3 -m <module>`, so it does not depend on where pip put scripts.
fn python_server(module: &str, args: &[&str]) -> McpConfig {
    let mut all = vec!["-m".to_string(), module.to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    McpConfig { command: "python3".into(), args: all, ..Default::default() }
}

/// An npm server run by `node` from its `entry` ([`external::npm_mcp_server`]).
fn node_server(entry: &str, args: &[&str], env: &[(&str, &str)]) -> McpConfig {
    let mut all = vec![entry.to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    let env: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    McpConfig { command: "node".into(), args: all, env, ..Default::default() }
}

fn start(name: &str, config: &McpConfig, root: &Path) -> McpClient {
    McpClient::start_named(name, config, root).unwrap_or_else(|e| panic!("{e:#}"))
}

fn tool<'a>(listed: &'a [Value], name: &str) -> &'a Value {
    listed.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no tool `{name}` in {listed:?}"))
}

fn mcp_error(e: anyhow::Error) -> McpError {
    e.downcast::<McpError>().expect("an McpError")
}

#[test]
fn time_server_lists_and_calls() {
    if !time_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let client = start("time", &python_server("mcp_server_time", &[]), dir.path());
    assert!(client.protocol_version().starts_with("20"), "{}", client.protocol_version());
    assert_eq!(client.server_info()["name"], "mcp-time");

    let listed = client.tools().unwrap();
    let loaded = mcp::tools_from_list(&listed, "time", Path::new("chainsmith.toml"), ByteRange::new(0, 10));
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["get_current_time", "convert_time"]);
    let now = &loaded.tools[0];
    assert_eq!(now.transport, Transport::Mcp { tool: "get_current_time".into() });
    assert_eq!(now.source.kind, SourceKind::Mcp);
    assert_eq!(now.read_only(), Some(true));
    let params: Vec<(&str, bool)> = now.params.iter().map(|p| (p.name.as_str(), p.required)).collect();
    assert_eq!(params, [("timezone", true)]);
    assert_eq!(now.params[0].location, ParamLocation::Argument);
    let response = now.response.as_ref().expect("get_current_time declares a real output schema");
    assert_eq!(response["properties"]["is_dst"]["type"], "boolean");
    // convert_time's schema refers to `#/$defs/TimeResult`: a reference into the toolset's store,
    // followed where it is read.
    let convert = &loaded.tools[1];
    let source = &convert.response.as_ref().unwrap()["properties"]["source"];
    let KeyLookup::Declared(day) = schema::property(convert, source, "day_of_week") else { panic!("{source}") };
    assert_eq!(schema::types(convert, day), ["string"], "{source}");

    let utc = client.call("get_current_time", json!({"timezone": "UTC"}), CALL).unwrap();
    assert!(!utc.is_error, "{utc:?}");
    assert_eq!(utc.value["timezone"], "UTC", "{:?}", utc.value);
    assert!(utc.value["datetime"].as_str().is_some_and(|d| d.contains('T')), "{:?}", utc.value);
    assert_eq!(utc.value["is_dst"], false);

    let converted = client
        .call("convert_time", json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}), CALL)
        .unwrap();
    assert_eq!(converted.value["target"]["timezone"], "Asia/Tokyo", "{:?}", converted.value);

    let bad = client.call("get_current_time", json!({"timezone": "Nowhere/Atlantis"}), CALL).unwrap();
    assert!(bad.is_error, "{bad:?}");
    assert!(bad.text.as_deref().unwrap_or_default().contains("Nowhere/Atlantis"), "{bad:?}");

    let unknown = mcp_error(client.call("no_such_tool", json!({}), CALL).unwrap_err());
    assert!(matches!(unknown.kind, McpErrorKind::Rpc { .. }), "{unknown:?}");
    assert!(unknown.message.contains("MCP server `time` answered tools/call with error"), "{}", unknown.message);
    assert!(client.is_alive());
}

#[test]
fn git_server_on_a_temporary_repository() {
    if !external::python_package("mcp_server_git", "mcp-server-git") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=chainsmith", "-c", "user.email=chainsmith@example.invalid"])
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("notes.txt"), "first\n").unwrap();
    git(&["add", "notes.txt"]);
    git(&["commit", "-q", "-m", "Add the first note"]);
    std::fs::write(repo.join("notes.txt"), "first\nsecond\n").unwrap();

    let repo_arg = repo.display().to_string();
    let client = start("git", &python_server("mcp_server_git", &["--repository", &repo_arg]), dir.path());
    let listed = client.tools().unwrap();
    let loaded = mcp::tools_from_list(&listed, "git", Path::new("chainsmith.toml"), ByteRange::default());
    let status = loaded.tools.iter().find(|t| t.name == "git_status").expect("git_status");
    assert_eq!(status.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["repo_path"]);
    assert_eq!(status.response, None, "git answers in text: unknown response");
    let log = loaded.tools.iter().find(|t| t.name == "git_log").expect("git_log");
    assert!(log.params.iter().any(|p| p.name == "max_count" && !p.required), "{:?}", log.params);

    let answered = client.call("git_status", json!({"repo_path": repo_arg}), CALL).unwrap();
    assert!(!answered.is_error, "{answered:?}");
    let text = answered.value.as_str().expect("plain text stays text");
    assert!(text.contains("notes.txt"), "{text}");

    let history = client.call("git_log", json!({"repo_path": repo_arg, "max_count": 5}), CALL).unwrap();
    assert!(format!("{}", history.value).contains("Add the first note"), "{history:?}");

    let elsewhere = dir.path().join("not-a-repo");
    std::fs::create_dir(&elsewhere).unwrap();
    let bad = client.call("git_status", json!({"repo_path": elsewhere.display().to_string()}), CALL).unwrap();
    assert!(bad.is_error, "{bad:?}");
    assert!(bad.text.is_some());
}

#[test]
fn memory_server_chain_create_then_read() {
    let Some(memory) = external::npm_mcp_server("server-memory") else { return };
    let dir = tempfile::tempdir().unwrap();
    let memory_file = dir.path().join("memory.jsonl");
    let config = node_server(&memory, &[], &[("MEMORY_FILE_PATH", &memory_file.display().to_string())]);
    let client = start("memory", &config, dir.path());
    let listed = client.tools().unwrap();
    let loaded = mcp::tools_from_list(&listed, "memory", Path::new("chainsmith.toml"), ByteRange::default());
    let delete = loaded.tools.iter().find(|t| t.name == "delete_entities").expect("delete_entities");
    assert_eq!(delete.params[0].name, "entity_names");
    assert_eq!(delete.params[0].wire_name, "entityNames");
    assert_eq!(delete.read_only(), Some(false));
    let read = loaded.tools.iter().find(|t| t.name == "read_graph").expect("read_graph");
    assert!(read.response.is_some(), "read_graph declares its output");
    assert!(read.params.is_empty());

    let created = client
        .call(
            "create_entities",
            json!({"entities": [
                {"name": "Sofia Coppola", "entityType": "person", "observations": ["directed Lost in Translation"]},
                {"name": "Lost in Translation", "entityType": "movie", "observations": ["released 2003"]}
            ]}),
            CALL,
        )
        .unwrap();
    assert!(!created.is_error, "{created:?}");
    let related = client
        .call(
            "create_relations",
            json!({"relations": [{"from": "Sofia Coppola", "to": "Lost in Translation", "relationType": "directed"}]}),
            CALL,
        )
        .unwrap();
    assert!(!related.is_error, "{related:?}");

    let graph = client.call("read_graph", json!({}), CALL).unwrap();
    let names: Vec<&str> =
        graph.value["entities"].as_array().expect("entities").iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(names, ["Sofia Coppola", "Lost in Translation"], "{:?}", graph.value);
    assert_eq!(graph.value["relations"][0]["relationType"], "directed");
    // The chain's next step reads what the first wrote.
    let found = client.call("search_nodes", json!({"query": "Coppola"}), CALL).unwrap();
    assert_eq!(found.value["entities"][0]["observations"][0], "directed Lost in Translation");
    assert!(memory_file.is_file(), "the server kept its graph in the temporary MEMORY_FILE_PATH");
}

#[test]
fn everything_server_list_changed_roots_and_timeouts() {
    let Some(everything) = external::npm_mcp_server("server-everything") else { return };
    let dir = tempfile::tempdir().unwrap();
    let client = start("everything", &node_server(&everything, &["stdio"], &[]), dir.path());
    // The server registers its capability-dependent tools once initialized and says so.
    let deadline = Instant::now() + Duration::from_secs(5);
    while client.list_changed_count() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(client.list_changed_count() >= 1, "no notifications/tools/list_changed arrived");
    // The server may announce its late tools in more than one notification; on a loaded machine
    // the next can arrive a little later. Let them settle before listing.
    let mut seen = client.list_changed_count();
    let settle_until = Instant::now() + Duration::from_secs(3);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = client.list_changed_count();
        if now == seen || Instant::now() > settle_until {
            break;
        }
        seen = now;
    }
    assert!(client.tools_changed());
    let listed = client.tools().unwrap();
    assert!(!client.tools_changed(), "listing again takes the change in");
    // Registered after initialization because chainsmith offers roots: the change was real.
    tool(&listed, "get-roots-list");
    let loaded = mcp::tools_from_list(&listed, "everything", Path::new("chainsmith.toml"), ByteRange::default());
    let sum = loaded.tools.iter().find(|t| t.name == "get_sum").expect("get-sum as get_sum");
    assert_eq!(sum.transport, Transport::Mcp { tool: "get-sum".into() });
    assert_eq!(sum.source.tool.as_deref(), Some("get-sum"));
    let annotated = loaded.tools.iter().find(|t| t.name == "get_annotated_message").unwrap();
    assert_eq!(annotated.params[0].name, "message_type");
    assert!(annotated.params[0].required);

    let summed = client.call("get-sum", json!({"a": 2, "b": 3}), CALL).unwrap();
    assert!(summed.value.as_str().is_some_and(|t| t.contains('5')), "{summed:?}");
    let structured = client.call("get-structured-content", json!({"location": "Chicago"}), CALL).unwrap();
    assert!(structured.value.is_object(), "structuredContent preferred: {structured:?}");

    // roots/list is answered with the workspace root.
    let roots = client.call("get-roots-list", json!({}), CALL).unwrap();
    let root_uri = chainsmith::mcp::file_uri(&dir.path().canonicalize().unwrap());
    assert!(roots.text.as_deref().unwrap_or_default().contains(&root_uri), "{roots:?} lacks {root_uri}");

    // A request that is not answered in time fails clearly; the session stays usable.
    let started = Instant::now();
    let slow = client
        .call("trigger-long-running-operation", json!({"duration": 5, "steps": 5}), Duration::from_millis(300))
        .unwrap_err();
    let slow = mcp_error(slow);
    assert_eq!(slow.kind, McpErrorKind::Timeout);
    assert!(
        slow.message.starts_with("MCP server `everything` did not answer tools/call within 300 ms"),
        "{}",
        slow.message
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    let again = client.call("echo", json!({"message": "still here"}), CALL).unwrap();
    assert!(again.value.as_str().is_some_and(|t| t.contains("still here")), "{again:?}");
}

/// Process ids in a process group (from /proc).
fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // After the `(comm)` field: state, ppid, pgrp.
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() != Some(&"Z") && fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            members.push(pid);
        }
    }
    members
}

#[test]
fn dropping_the_client_leaves_no_process_behind() {
    if !time_installed() {
        return;
    }
    let Some(memory_entry) = external::npm_mcp_server("server-memory") else { return };
    let dir = tempfile::tempdir().unwrap();
    // A wrapper that leaves a helper running next to the server, as launchers do.
    let config = McpConfig {
        command: "sh".into(),
        args: vec!["-c".into(), "sleep 120 & exec python3 -m mcp_server_time".into()],
        ..Default::default()
    };
    let client = start("time", &config, dir.path());
    let pgid = client.pid();
    assert!(group_members(pgid).len() >= 2, "server and helper run: {:?}", group_members(pgid));
    let started = Instant::now();
    drop(client);
    assert!(started.elapsed() < Duration::from_secs(3));
    let deadline = Instant::now() + Duration::from_secs(3);
    while !group_members(pgid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(group_members(pgid), Vec::<u32>::new(), "orphans left in the server's process group");

    let memory =
        node_server(&memory_entry, &[], &[("MEMORY_FILE_PATH", &dir.path().join("m.jsonl").display().to_string())]);
    let client = start("memory", &memory, dir.path());
    let pid = client.pid();
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Path::new(&format!("/proc/{pid}")).exists() && !group_members(pid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(group_members(pid).is_empty());
}

#[test]
fn broken_servers_fail_clearly_and_fast() {
    let dir = tempfile::tempdir().unwrap();
    let sh = |script: &str, timeout_s: u64| McpConfig {
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
        timeout_s,
        ..Default::default()
    };

    let missing = McpConfig { command: "chainsmith-no-such-mcp-server".into(), ..Default::default() };
    let e = mcp_error(McpClient::start_named("ghost", &missing, dir.path()).unwrap_err());
    assert_eq!(e.kind, McpErrorKind::Spawn);
    assert!(e.message.contains("command `chainsmith-no-such-mcp-server` not found"), "{}", e.message);

    let started = Instant::now();
    let e = mcp_error(
        McpClient::start_named("crash", &sh("echo 'Traceback: boom' >&2; exit 3", 10), dir.path()).unwrap_err(),
    );
    assert_eq!(e.kind, McpErrorKind::Closed);
    assert!(e.message.contains("MCP server `crash` exited with status 3 before answering initialize"), "{}", e.message);
    assert!(e.message.contains("Traceback: boom"), "stderr tail in the error: {}", e.message);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());

    let started = Instant::now();
    let e = mcp_error(
        McpClient::start_named("chatty", &sh("echo 'Welcome to my server'; echo '{oops'; sleep 30", 1), dir.path())
            .unwrap_err(),
    );
    assert_eq!(e.kind, McpErrorKind::Timeout);
    assert!(e.message.contains("MCP server `chatty` did not answer initialize within 1 s"), "{}", e.message);
    assert!(e.message.contains("Welcome to my server"), "stdout garbage quoted: {}", e.message);
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());

    // Garbage, then the server goes away: the exit is reported at once, not after the timeout.
    let started = Instant::now();
    let e = mcp_error(
        McpClient::start_named("garbage", &sh("printf 'garbage\\n\\001\\002\\n'", 10), dir.path()).unwrap_err(),
    );
    assert_eq!(e.kind, McpErrorKind::Closed, "{}", e.message);
    assert!(e.message.contains("garbage"), "{}", e.message);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());

    // An answer nested past what chainsmith reads fails the call at once, not after its timeout.
    let started = Instant::now();
    let deep = format!("{}{}", "[".repeat(1_000), "]".repeat(1_000));
    let e = mcp_error(
        McpClient::start_named("deep", &sh(&format!("read line; echo '{deep}'; sleep 30"), 20), dir.path())
            .unwrap_err(),
    );
    assert_eq!(e.kind, McpErrorKind::Closed, "{}", e.message);
    assert!(e.message.contains("nested deeper than chainsmith reads"), "{}", e.message);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    // Not an MCP server at all: `cat` echoes our own request back.
    let cat = McpConfig { command: "cat".into(), timeout_s: 2, ..Default::default() };
    let e = mcp_error(McpClient::start_named("cat", &cat, dir.path()).unwrap_err());
    assert!(e.message.starts_with("MCP server `cat`"), "{}", e.message);
}

fn chainsmith(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chainsmith")).args(args).output().expect("the chainsmith binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

fn workspace(toml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
    let root = dir.path().to_path_buf();
    (dir, root)
}

#[test]
fn mcp_toolsets_in_a_workspace() {
    if !time_installed() {
        return;
    }
    let Some(memory_entry) = external::npm_mcp_server("server-memory") else { return };
    let toml = format!(
        r#"[[toolsets]]
name = "time"
mcp = {{ command = "python3", args = ["-m", "mcp_server_time"] }}

[[toolsets]]
name = "memory"
mcp = {{ command = "node", args = ["{memory_entry}"], env = {{ MEMORY_FILE_PATH = "memory.jsonl" }}, timeout_s = 20 }}
"#
    );
    let (_dir, root) = workspace(&toml);
    let root_arg = root.display().to_string();
    let (code, stdout, stderr) = chainsmith(&["--trust", "tools", "--format", "json", "--root", &root_arg]);
    assert_eq!(code, 0, "{stderr}");
    let tools: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let now = tools.iter().find(|t| t["id"] == "time.get_current_time").expect("time.get_current_time");
    assert_eq!(now["source"]["kind"], "mcp");
    assert_eq!(now["source"]["tool"], "get_current_time");
    assert_eq!(now["required"], json!(["timezone"]));
    assert_eq!(now["response_known"], true);
    let entities = tools.iter().find(|t| t["id"] == "memory.create_entities").expect("memory.create_entities");
    assert_eq!(entities["source"]["kind"], "mcp");

    // MCP tools join the analysis: a good chain is clean, a wrong tool and a wrong key are reported.
    std::fs::write(
        root.join("chain.py"),
        "from chainsmith.tools import time\nnow = time.get_current_time(timezone=\"UTC\")\nprint(now[\"datetime\"])\n",
    )
    .unwrap();
    std::fs::write(
        root.join("wrong.py"),
        "from chainsmith.tools import time\nnow = time.get_current_tim(timezone=\"UTC\")\nlater = time.get_current_time(timezone=\"UTC\")\nprint(later[\"date_time\"])\n",
    )
    .unwrap();
    let good = root.join("chain.py").display().to_string();
    let wrong = root.join("wrong.py").display().to_string();
    let (code, stdout, _) = chainsmith(&["--trust", "check", "--format", "json", "--root", &root_arg, &good, &wrong]);
    assert_eq!(code, 1, "{stdout}");
    let reported: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert!(reported.iter().all(|d| d["file"] == wrong.as_str()), "the good chain is clean: {reported:?}");
    let codes: Vec<(&str, u64)> =
        reported.iter().map(|d| (d["code"].as_str().unwrap(), d["range"]["start"]["line"].as_u64().unwrap())).collect();
    assert_eq!(codes.len(), 2, "{reported:?}");
    assert_eq!(codes[0], ("unknown-tool", 1), "{reported:?}");
    assert_eq!(codes[1], ("unknown-key", 3), "the declared outputSchema types the response: {reported:?}");
}

#[test]
fn an_unavailable_server_is_a_located_diagnostic() {
    let toml = r#"[[toolsets]]
name = "tmdb_like"
protocol = "missing.json"

[[toolsets]]
name = "ghost"
mcp = { command = "chainsmith-no-such-mcp-server", args = ["--flag"] }
"#;
    let (_dir, root) = workspace(toml);
    let root_arg = root.display().to_string();
    let (code, stdout, stderr) = chainsmith(&["--trust", "tools", "--root", &root_arg]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("ghost — 0 tools"), "the toolset stays, without tools: {stdout}");
    let line = stderr.lines().find(|l| l.contains("[mcp-unavailable]")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("chainsmith.toml:5:1: error[mcp-unavailable]"), "{line}");
    assert!(line.contains("cannot start MCP server `ghost`"), "{line}");
    assert!(stderr.contains("command `chainsmith-no-such-mcp-server` not found"), "{stderr}");

    // The module stays importable: a program importing it gets no unknown-toolset error.
    std::fs::write(root.join("uses_ghost.py"), "from chainsmith.tools import ghost\nprint(ghost)\n").unwrap();
    let program = root.join("uses_ghost.py").display().to_string();
    let (_, stdout, _) = chainsmith(&["--trust", "check", "--format", "json", "--root", &root_arg, &program]);
    let reported: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let unavailable = reported.iter().find(|d| d["code"] == "mcp-unavailable").expect("reported by check too");
    assert!(unavailable["file"].as_str().unwrap().ends_with("chainsmith.toml"));
    assert_eq!(unavailable["range"]["start"]["line"], 4);
    assert!(
        reported.iter().all(|d| d["file"].as_str().unwrap().ends_with("chainsmith.toml")),
        "nothing on the program: {reported:?}"
    );
}

/// A scripted server for what the reference servers never do: asking the client things, paging
/// `tools/list`, answering with an older protocol version or an unknown one.
const SCRIPTED: &str = r#"
import json, os, sys
answers = {}
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        answers[m["id"]] = m.get("result", m.get("error"))
        continue
    method, id = m["method"], m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
        send({"jsonrpc": "2.0", "id": 7, "method": "roots/list"})
        send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": os.environ["VERSION"], "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted", "version": "1"}}})
    elif method == "tools/list":
        cursor = (m.get("params") or {}).get("cursor")
        if cursor is None:
            send({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "a-tool", "inputSchema": {"type": "object"}}], "nextCursor": "page2"}})
        else:
            send({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "b-tool", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": json.dumps(answers)}]}})
"#;

#[test]
fn requests_from_the_server_pagination_and_versions() {
    let dir = tempfile::tempdir().unwrap();
    let scripted = |version: &str| McpConfig {
        command: "python3".into(),
        args: vec!["-c".into(), SCRIPTED.into()],
        env: [("VERSION".to_string(), version.to_string())].into(),
        timeout_s: 5,
        ..Default::default()
    };
    let client = start("scripted", &scripted("2025-03-26"), dir.path());
    assert_eq!(client.protocol_version(), "2025-03-26");
    let listed = client.tools().unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["a-tool", "b-tool"], "both pages");
    let answers = client.call("report", json!({}), CALL).unwrap().value;
    assert_eq!(answers["p1"], json!({}), "ping answered: {answers}");
    assert_eq!(answers["s1"]["code"], -32601, "an unknown request is 'method not found': {answers}");
    let root_uri = chainsmith::mcp::file_uri(&dir.path().canonicalize().unwrap());
    assert_eq!(answers["7"]["roots"][0]["uri"], root_uri.as_str(), "{answers}");
    drop(client);

    let e = mcp_error(McpClient::start_named("future", &scripted("2099-01-01"), dir.path()).unwrap_err());
    assert_eq!(e.kind, McpErrorKind::Protocol);
    assert!(e.message.contains("speaks MCP protocol version `2099-01-01`"), "{}", e.message);
}

/// server-everything in its Streamable HTTP mode on a free 127.0.0.1 port; its stdout (a line per
/// POST it receives) is kept, so a test can tell whether chainsmith contacted it.
struct HttpServer {
    child: std::process::Child,
    url: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpServer {
    /// `entry` is server-everything's ([`external::npm_mcp_server`]).
    fn start(entry: &str) -> HttpServer {
        use std::io::BufRead;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new("node")
            .args([entry, "streamableHttp"])
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node starts server-everything");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let stdout = child.stdout.take().unwrap();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                kept.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server-everything did not listen on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpServer { child, url: format!("http://127.0.0.1:{port}/mcp"), log }
    }

    fn posts(&self) -> usize {
        self.log.lock().unwrap().matches("Received MCP POST request").count()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A remote server over Streamable HTTP: the session is opened, tools listed and called (answers
/// arrive as event streams), a slow call times out and the session stays usable; an address
/// nobody listens on fails at once and says so.
#[test]
fn a_remote_server_over_streamable_http() {
    let Some(everything) = external::npm_mcp_server("server-everything") else { return };
    let server = HttpServer::start(&everything);
    let dir = tempfile::tempdir().unwrap();
    let mut headers = BTreeMap::new();
    headers.insert("X-Chainsmith-Test".to_string(), chainsmith::config::HeaderValueConfig::Literal("yes".into()));
    let config = McpConfig { url: Some(server.url.clone()), headers, ..Default::default() };
    let client = start("everything", &config, dir.path());
    assert!(client.protocol_version().starts_with("20"), "{}", client.protocol_version());
    assert_eq!(client.server_info()["name"], "mcp-servers/everything", "{}", client.server_info());
    let listed = client.tools().unwrap();
    tool(&listed, "get-sum");
    let summed = client.call("get-sum", json!({"a": 2, "b": 3}), CALL).unwrap();
    assert!(summed.value.as_str().is_some_and(|t| t.contains('5')), "{summed:?}");
    let structured = client.call("get-structured-content", json!({"location": "Chicago"}), CALL).unwrap();
    assert!(structured.value.is_object(), "{structured:?}");
    let slow = mcp_error(
        client
            .call("trigger-long-running-operation", json!({"duration": 5, "steps": 5}), Duration::from_millis(300))
            .unwrap_err(),
    );
    assert_eq!(slow.kind, McpErrorKind::Timeout, "{slow:?}");
    let again = client.call("echo", json!({"message": "still here"}), CALL).unwrap();
    assert!(again.value.as_str().is_some_and(|t| t.contains("still here")), "{again:?}");
    drop(client);

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let nobody = McpConfig { url: Some(format!("http://127.0.0.1:{closed}/mcp")), ..Default::default() };
    let started = Instant::now();
    let refused = mcp_error(McpClient::start_named("gone", &nobody, dir.path()).unwrap_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(refused.kind, McpErrorKind::Closed, "{refused:?}");
    assert!(refused.message.contains("cannot be reached"), "{}", refused.message);
}

/// A workspace naming a remote server: untrusted, nothing is sent to it (not even its headers'
/// secrets) and the warning shows the request that would be made; trusted, its tools load, are
/// checked and run; a header whose variable is unset is a located error.
#[test]
fn a_remote_mcp_toolset_in_a_workspace() {
    let Some(everything) = external::npm_mcp_server("server-everything") else { return };
    let server = HttpServer::start(&everything);
    let toml = format!(
        "[[toolsets]]\nname = \"everything\"\nmcp = {{ url = \"{}\", headers = {{ Authorization = {{ value_env = \"CHAINSMITH_TEST_MCP_TOKEN\", prefix = \"Bearer \" }} }} }}\n",
        server.url
    );
    let (_dir, root) = workspace(&toml);
    let root_arg = root.display().to_string();
    let with_token = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
            .args(args)
            .env("CHAINSMITH_TEST_MCP_TOKEN", "t0ken-for-the-test")
            .env("XDG_CONFIG_HOME", root.join(".config"))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };

    let (_, stdout, stderr) = with_token(&["tools", "--root", &root_arg]);
    assert!(stdout.contains("everything — 0 tools"), "{stdout}");
    assert!(stderr.contains("workspace-untrusted"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "would send `POST <{}> -H 'Authorization: Bearer $CHAINSMITH_TEST_MCP_TOKEN'`",
            server.url
        )),
        "the warning shows what would be sent: {stderr}"
    );
    assert_eq!(server.posts(), 0, "nothing is sent to an untrusted server");

    let (code, stdout, stderr) = with_token(&["--trust", "tools", "--format", "json", "--root", &root_arg]);
    assert_eq!(code, 0, "{stderr}");
    let tools: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let sum = tools.iter().find(|t| t["id"] == "everything.get_sum").unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(sum["source"]["kind"], "mcp");
    assert!(server.posts() >= 2, "initialize and tools/list were posted");

    std::fs::write(
        root.join("chain.py"),
        "from chainsmith.tools import everything\nprint(everything.get_sum(a=2, b=40))\neverything.get_sm(a=1, b=2)\n",
    )
    .unwrap();
    let program = root.join("chain.py").display().to_string();
    let (code, stdout, _) = with_token(&["--trust", "check", "--root", &root_arg, &program]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("chain.py:3:12: error[unknown-tool]"), "{stdout}");
    std::fs::write(
        root.join("chain.py"),
        "from chainsmith.tools import everything\nprint(everything.get_sum(a=2, b=40))\n",
    )
    .unwrap();
    let (code, stdout, stderr) = with_token(&["--trust", "run", "--root", &root_arg, &program]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("42"), "{stdout}");

    let out = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(["--trust", "tools", "--root", &root_arg])
        .env_remove("CHAINSMITH_TEST_MCP_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let line = stderr.lines().find(|l| l.contains("[mcp-unavailable]")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("chainsmith.toml:1:1: error[mcp-unavailable]"), "{line}");
    assert!(line.contains("header `Authorization` takes $CHAINSMITH_TEST_MCP_TOKEN, which is not set"), "{line}");
}

/// A scripted Streamable-HTTP server on 127.0.0.1: `tools/list` answers one tool until a GET
/// stream has been opened and two after; the GET stream carries `notifications/tools/list_changed`
/// (or, without `offer_stream`, GET is answered 405 as servers without one do). Returns its URL and
/// the number of GETs it has seen.
fn scripted_streamable_http(offer_stream: bool) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", server.server_addr().to_ip().unwrap());
    let gets = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = gets.clone();
    std::thread::spawn(move || {
        let header = |name: &str, value: &str| tiny_http::Header::from_bytes(name, value).unwrap();
        for mut request in server.incoming_requests() {
            if *request.method() == tiny_http::Method::Get {
                seen.fetch_add(1, Ordering::SeqCst);
                let response = if offer_stream {
                    let event = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
                    tiny_http::Response::from_string(event).with_header(header("Content-Type", "text/event-stream"))
                } else {
                    tiny_http::Response::from_string("").with_status_code(405)
                };
                let _ = request.respond(response);
                continue;
            }
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let result = match message["method"].as_str() {
                Some("initialize") => json!({
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "scripted", "version": "1"}
                }),
                Some("tools/list") => {
                    let mut tools = vec![json!({"name": "first", "inputSchema": {"type": "object"}})];
                    if seen.load(Ordering::SeqCst) > 0 {
                        tools.push(json!({"name": "added", "inputSchema": {"type": "object"}}));
                    }
                    json!({"tools": tools})
                }
                _ => {
                    let _ = request.respond(tiny_http::Response::from_string("").with_status_code(202));
                    continue;
                }
            };
            let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": result}).to_string();
            let response = tiny_http::Response::from_string(reply)
                .with_header(header("Content-Type", "application/json"))
                .with_header(header("Mcp-Session-Id", "session-1"));
            let _ = request.respond(response);
        }
    });
    (url, gets)
}

/// What a remote server says outside any request arrives on the GET stream: a `list_changed`
/// there tells the client to list again. A server without a stream (405) is asked once.
#[test]
fn a_remote_servers_get_stream_is_listened_to() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let (url, gets) = scripted_streamable_http(true);
    let client = start("scripted", &McpConfig { url: Some(url), ..Default::default() }, dir.path());
    let listed = client.tools().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.tools_changed() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(client.tools_changed(), "no list_changed from the GET stream ({} GETs)", gets.load(Ordering::SeqCst));
    assert!(listed.len() <= 2);
    let relisted = client.tools().unwrap();
    tool(&relisted, "added");
    drop(client);

    let (url, gets) = scripted_streamable_http(false);
    let client = start("scripted", &McpConfig { url: Some(url), ..Default::default() }, dir.path());
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(gets.load(Ordering::SeqCst), 1, "asked once, then left alone");
    assert!(!client.tools_changed());
    tool(&client.tools().unwrap(), "first");
}
