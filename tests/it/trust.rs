//! Workspace trust: nothing a workspace names runs until the user trusts it — not its MCP servers
//! (not by `check`, `tools` or the language server's `initialize`), not its command tools, not its
//! own interpreter; trust is recorded bound to the exact command lines (`chainsmith trust`), or
//! given for one invocation (`--trust`) or by an editor with its own trust (`"trusted": true`);
//! and what runs never sees chainsmith's environment beyond the basics.
//!
//! Every CLI here runs with its own `XDG_CONFIG_HOME`, so the user's real trust file is never read
//! or written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use tower_lsp_server::lsp_types as lsp;

use crate::support::lsp::TestClient;

const SECRET: &str = "sk-test-must-not-leak";

/// A tiny MCP server: writes its environment to `env.json`, lists one tool `echo`, answers calls
/// with their arguments.
const SERVER: &str = r#"
import json, os, sys
with open("env.json", "w") as f:
    json.dump(dict(os.environ), f)
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m or "method" not in m:
        continue
    method = m["method"]
    if method == "initialize":
        result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "tiny", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": json.dumps(m["params"]["arguments"])}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

const PROGRAM: &str = "from chainsmith.tools import tiny\n\nprint(tiny.echo(text=\"hi\"))\n";

/// The command line chainsmith shows for the server below (and records when trusted).
const LINE: &str = "DECLARED=yes sh -c 'touch PWNED; exec python3 server.py'";

fn toml(extra_arg: &str) -> String {
    format!(
        "[[toolsets]]\nname = \"tiny\"\nmcp = {{ command = \"sh\", args = [\"-c\", \"touch PWNED; exec python3 server.py{extra_arg}\"], env = {{ DECLARED = \"yes\" }} }}\n"
    )
}

/// A workspace whose MCP server would leave `PWNED` behind, and a config folder of its own.
struct Workspace {
    dir: tempfile::TempDir,
    config: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("chainsmith.toml"), toml("")).unwrap();
        std::fs::write(dir.path().join("server.py"), SERVER).unwrap();
        std::fs::write(dir.path().join("p.py"), PROGRAM).unwrap();
        Workspace { dir, config: tempfile::tempdir().unwrap() }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn pwned(&self) -> bool {
        self.root().join("PWNED").exists()
    }

    fn trust_file(&self) -> PathBuf {
        self.config.path().join("chainsmith/trust.json")
    }

    /// The chainsmith binary in the workspace, with this workspace's config folder and an API key in
    /// its environment.
    fn chainsmith(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_chainsmith"))
            .args(args)
            .current_dir(self.root())
            .env("XDG_CONFIG_HOME", self.config.path())
            .env("OPENAI_API_KEY", SECRET)
            .stdin(Stdio::null())
            .output()
            .expect("chainsmith runs")
    }

    /// The environment the server (or a command tool) wrote.
    fn seen_env(&self, file: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.root().join(file)).unwrap()).unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn check_json(ws: &Workspace, args: &[&str]) -> Vec<Value> {
    let out = ws.chainsmith(args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

#[test]
fn an_untrusted_workspace_starts_no_server_and_says_so() {
    let ws = Workspace::new();
    let reported = check_json(&ws, &["check", "--format", "json", "p.py"]);
    assert!(!ws.pwned(), "`check` ran the workspace's MCP command");
    let untrusted: Vec<&Value> = reported.iter().filter(|d| d["code"] == "workspace-untrusted").collect();
    assert_eq!(untrusted.len(), 1, "{reported:#?}");
    assert_eq!(untrusted[0]["severity"], "warning");
    assert!(untrusted[0]["file"].as_str().unwrap().ends_with("chainsmith.toml"));
    let message = untrusted[0]["message"].as_str().unwrap();
    assert!(message.contains(&format!("`{LINE}`")), "names the command line: {message}");
    assert!(message.contains("`chainsmith trust`") && message.contains("Trust this workspace"), "{message}");
    // The module stays importable and its calls are not reported: there is no list to check them against.
    assert!(reported.iter().all(|d| !d["file"].as_str().unwrap().ends_with("p.py")), "{reported:#?}");

    let out = ws.chainsmith(&["tools"]);
    assert!(!ws.pwned(), "`tools` ran the workspace's MCP command");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("tiny — 0 tools"), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("warning[workspace-untrusted]"), "{}", text(&out.stderr));

    // A run refuses to start, saying why.
    let out = ws.chainsmith(&["run", "p.py"]);
    assert!(!ws.pwned(), "`run` ran the workspace's MCP command");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("p.py:1:30: error[workspace-untrusted]: toolset `tiny` (mcp) would run"), "{stderr}");
    assert!(stderr.contains("chainsmith: not running p.py: the workspace is not trusted"), "{stderr}");
    assert!(!ws.trust_file().exists(), "nothing was recorded");
}

#[test]
fn trust_is_recorded_for_the_exact_command_lines() {
    let ws = Workspace::new();
    let out = ws.chainsmith(&["trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains(&format!("toolset `tiny` (mcp): {LINE}")), "{said}");
    assert!(!ws.pwned(), "trusting runs nothing");
    let root = ws.root().canonicalize().unwrap().display().to_string();
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(ws.trust_file()).unwrap()).unwrap();
    assert_eq!(recorded["chainsmith"], "trust/1");
    assert_eq!(recorded["workspaces"][&root]["commands"], json!([{"from": "toolset `tiny` (mcp)", "command": LINE}]));

    let tools = check_json(&ws, &["tools", "--format", "json"]);
    assert!(ws.pwned(), "the trusted server started");
    assert_eq!(tools.iter().map(|t| t["id"].as_str().unwrap()).collect::<Vec<_>>(), ["tiny.echo"]);

    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("{'text': 'hi'}"), "{}", text(&out.stdout));

    let listed = text(&ws.chainsmith(&["trust", "--list"]).stdout);
    assert_eq!(listed, format!("{root}\n  toolset `tiny` (mcp): {LINE}\n"));

    // A changed command line is not trusted.
    std::fs::remove_file(ws.root().join("PWNED")).unwrap();
    std::fs::write(ws.root().join("chainsmith.toml"), toml(" --changed")).unwrap();
    let out = ws.chainsmith(&["tools"]);
    assert!(!ws.pwned(), "a changed command ran on the old trust");
    assert!(text(&out.stdout).contains("tiny — 0 tools"), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("warning[workspace-untrusted]") && stderr.contains("new or changed"), "{stderr}");

    let out = ws.chainsmith(&["trust", "--revoke"]);
    assert_eq!(text(&out.stdout), format!("{root} is no longer trusted\n"));
    assert!(text(&ws.chainsmith(&["trust", "--list"]).stdout).starts_with("no workspace is trusted"));
}

#[test]
fn the_trust_flag_trusts_one_invocation_without_recording() {
    let ws = Workspace::new();
    let tools = check_json(&ws, &["--trust", "tools", "--format", "json"]);
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert!(ws.pwned());
    assert!(!ws.trust_file().exists(), "--trust records nothing");
    std::fs::remove_file(ws.root().join("PWNED")).unwrap();
    assert!(text(&ws.chainsmith(&["tools"]).stdout).contains("tiny — 0 tools"));
    assert!(!ws.pwned(), "the next invocation is untrusted again");
}

#[test]
fn servers_and_command_tools_do_not_inherit_chainsmiths_environment() {
    let ws = Workspace::new();
    let out = ws.chainsmith(&["--trust", "tools"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let env = ws.seen_env("env.json");
    assert_eq!(env["DECLARED"], "yes", "the entry's env is given: {env}");
    assert!(env.get("PATH").is_some() && env.get("HOME").is_some(), "{env}");
    assert!(env.get("OPENAI_API_KEY").is_none(), "the server saw chainsmith's API key: {env}");
    assert!(env.get("XDG_CONFIG_HOME").is_none(), "{env}");

    // A command tool (protocols/, no chainsmith.toml) writes its environment too.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("protocols")).unwrap();
    let toolset = r#"{"chainsmith": "toolset/1", "name": "local", "tools": [
      {"name": "dump", "command": ["python3", "-c", "import json, os; json.dump(dict(os.environ), open('tool-env.json', 'w')); print('{}')"]}
    ]}"#;
    std::fs::write(dir.path().join("protocols/local.toolset.json"), toolset).unwrap();
    std::fs::write(dir.path().join("p.py"), "from chainsmith.tools import local\n\nprint(local.dump())\n").unwrap();
    let ws = Workspace { dir, config: tempfile::tempdir().unwrap() };
    let out = ws.chainsmith(&["--trust", "run", "p.py"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let env = ws.seen_env("tool-env.json");
    assert!(env.get("PATH").is_some(), "{env}");
    assert!(env.get("OPENAI_API_KEY").is_none(), "the command tool saw chainsmith's API key: {env}");
}

#[test]
fn command_tools_and_a_workspace_interpreter_run_only_when_trusted() {
    // A command tool that would leave a file behind.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("protocols")).unwrap();
    let toolset = r#"{"chainsmith": "toolset/1", "name": "local", "tools": [
      {"name": "mark", "command": ["sh", "-c", "touch MARKED; echo '{}'"]}
    ]}"#;
    std::fs::write(dir.path().join("protocols/local.toolset.json"), toolset).unwrap();
    std::fs::write(dir.path().join("p.py"), "from chainsmith.tools import local\n\nprint(local.mark())\n").unwrap();
    let ws = Workspace { dir, config: tempfile::tempdir().unwrap() };
    let reported = check_json(&ws, &["check", "--format", "json"]);
    let untrusted = reported.iter().find(|d| d["code"] == "workspace-untrusted").expect("said on the declaration");
    assert!(untrusted["file"].as_str().unwrap().ends_with("local.toolset.json"), "{untrusted}");
    assert!(
        untrusted["message"]
            .as_str()
            .unwrap()
            .contains("tool `local.mark` (command) would run `sh -c 'touch MARKED; echo '\\''{}'\\'''`"),
        "{untrusted}"
    );
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("p.py:3:13: error[workspace-untrusted]: tool `local.mark` (command)"), "{stderr}");
    assert!(stderr.contains("chainsmith: not running p.py: the workspace is not trusted"), "{stderr}");
    assert!(!ws.root().join("MARKED").exists());
    let trusted = ws.chainsmith(&["trust"]);
    assert!(text(&trusted.stdout).contains("tool `local.mark` (command): sh -c"), "{}", text(&trusted.stdout));
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(ws.root().join("MARKED").exists());

    // An interpreter of the workspace's own.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    let python = dir.path().join("bin/python");
    std::fs::write(&python, "#!/bin/sh\ntouch INTERPRETED\nexec python3 \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), "[runtime]\npython = \"./bin/python\"\nwritable = [\".\"]\n")
        .unwrap();
    std::fs::write(dir.path().join("p.py"), "print('hello')\n").unwrap();
    let ws = Workspace { dir, config: tempfile::tempdir().unwrap() };
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("[runtime] python would run `./bin/python`"), "{}", text(&out.stderr));
    assert!(!ws.root().join("INTERPRETED").exists());
    let out = ws.chainsmith(&["generate", "anything"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not running any program: [runtime] python"), "{}", text(&out.stderr));
    let out = ws.chainsmith(&["--trust", "run", "p.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello\n");
    assert!(ws.root().join("INTERPRETED").exists());
}

#[test]
fn the_language_server_starts_nothing_untrusted_offers_to_trust_and_takes_an_editors_trust() {
    let ws = Workspace::new();
    // The in-process server reads this process's trust file, which never names a fresh folder.
    let mut client = TestClient::in_process().root(ws.root()).start();
    assert!(!ws.pwned(), "`initialize` ran the workspace's MCP command");
    let status = client.await_notification_json("chainsmith/status", |_| true);
    assert_eq!(status["tools"], 0, "{status}");
    let toml_uri = client.uri("chainsmith.toml");
    let published = client.diagnostics(&toml_uri, |_| true);
    let diagnostic = &published.diagnostics[0];
    assert_eq!(diagnostic.code, Some(lsp::NumberOrString::String("workspace-untrusted".into())), "{published:?}");
    assert_eq!(diagnostic.severity, Some(lsp::DiagnosticSeverity::WARNING));

    let program = client.open("p.py", PROGRAM);
    let on_program = client.diagnostics(&program, |_| true);
    assert_eq!(on_program.diagnostics, vec![], "no false errors on calls into the untrusted toolset");

    let actions = client.code_actions(&toml_uri, diagnostic.range, vec![diagnostic.clone()]);
    let trust = actions
        .iter()
        .find_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(a) if a.title == "Trust this workspace" => Some(a),
            _ => None,
        })
        .expect("offered");
    assert_eq!(trust.kind, Some(lsp::CodeActionKind::QUICKFIX));
    assert_eq!(trust.command.as_ref().map(|c| c.command.as_str()), Some("chainsmith.trustWorkspace"));
    assert!(!ws.pwned());
    client.shutdown();

    // An editor with its own workspace trust (VS Code's) says so: the server starts.
    let mut client = TestClient::in_process().root(ws.root()).initialization_options(json!({"trusted": true})).start();
    let status = client.await_notification_json("chainsmith/status", |_| true);
    assert_eq!(status["tools"], 1, "{status}");
    assert!(ws.pwned());
    client.shutdown();
}

/// `chainsmith lsp` as a process (its own XDG_CONFIG_HOME): `chainsmith.trustWorkspace` records
/// trust as `chainsmith trust` does and reloads, so the server's tools load.
#[test]
fn the_trust_command_records_and_reloads() {
    let ws = Workspace::new();
    let mut client = TestClient::stdio(env!("CARGO_BIN_EXE_chainsmith"))
        .root(ws.root())
        .env("XDG_CONFIG_HOME", &ws.config.path().display().to_string())
        .start();
    assert!(!ws.pwned());
    let status = client.await_notification_json("chainsmith/status", |_| true);
    assert_eq!(status["tools"], 0);

    let toml_uri = client.uri("chainsmith.toml");
    let answer = client
        .execute_command("chainsmith.trustWorkspace", vec![json!(toml_uri.as_str())], None)
        .expect("the command succeeds")
        .expect("it answers what it trusted");
    let status = client.await_notification_json("chainsmith/status", |_| true);
    assert_eq!(status["tools"], 1, "{status}");
    assert_eq!(answer["commands"], json!([{"from": "toolset `tiny` (mcp)", "command": LINE}]), "{answer}");
    assert!(ws.pwned());
    let recorded = std::fs::read_to_string(ws.trust_file()).unwrap();
    assert!(recorded.contains(&ws.root().canonicalize().unwrap().display().to_string()), "{recorded}");
    let shown = client.await_notification_json("window/showMessage", |_| true);
    assert_eq!(shown["type"], 3, "information: {shown}");
    assert!(
        shown["message"].as_str().unwrap().ends_with(": toolset `tiny` (mcp)"),
        "what was trusted, by name: {shown}"
    );
    client.shutdown();
}
