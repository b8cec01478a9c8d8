//! Workspace trust: nothing a workspace names runs until the user trusts it — not its MCP servers
//! (not by `check`, `tools` or the language server's `initialize`), not its command tools, not its
//! own interpreter; trust is recorded bound to the exact command lines (`chainsmith trust`), or
//! given for one invocation (`--trust`) or by an editor with its own trust (`"trusted": true`);
//! and what runs never sees chainsmith's environment beyond the basics.
//!
//! Every CLI here runs with its own `XDG_CONFIG_HOME`, so the user's real trust file is never read
//! or written.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::lsp::{Client, uri};

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
    std::fs::write(dir.path().join("chainsmith.toml"), "[runtime]\npython = \"./bin/python\"\n").unwrap();
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

#[tokio::test]
async fn the_language_server_starts_nothing_untrusted_offers_to_trust_and_takes_an_editors_trust() {
    let ws = Workspace::new();
    let toml_path = ws.root().join("chainsmith.toml");
    let toml_uri = uri(&toml_path);
    // The in-process server reads this process's trust file, which never names a fresh folder.
    let mut client = Client::start(ws.root()).await;
    assert!(!ws.pwned(), "`initialize` ran the workspace's MCP command");
    let status = client.notification("chainsmith/status", |_| true).await;
    assert_eq!(status["tools"], 0, "{status}");
    let published = client.notification("textDocument/publishDiagnostics", |p| p["uri"] == toml_uri.as_str()).await;
    let diagnostic = &published["diagnostics"][0];
    assert_eq!(diagnostic["code"], "workspace-untrusted", "{published}");
    assert_eq!(diagnostic["severity"], 2, "a warning");

    let program = client.open(&ws.root().join("p.py"), PROGRAM).await;
    let on_program = client.notification("textDocument/publishDiagnostics", |p| p["uri"] == program.as_str()).await;
    assert_eq!(on_program["diagnostics"], json!([]), "no false errors on calls into the untrusted toolset");

    let actions = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": toml_uri}, "range": diagnostic["range"],
                   "context": {"diagnostics": [diagnostic]}}),
        )
        .await
        .unwrap();
    let trust = actions.as_array().unwrap().iter().find(|a| a["title"] == "Trust this workspace").expect("offered");
    assert_eq!(trust["kind"], "quickfix");
    assert_eq!(trust["command"]["command"], "chainsmith.trustWorkspace");
    assert!(!ws.pwned());
    client.shutdown().await;

    // An editor with its own workspace trust (VS Code's) says so: the server starts.
    let mut client = Client::start_with(ws.root(), json!({"trusted": true})).await;
    let status = client.notification("chainsmith/status", |_| true).await;
    assert_eq!(status["tools"], 1, "{status}");
    assert!(ws.pwned());
    client.shutdown().await;
}

/// `chainsmith lsp` as a process (its own XDG_CONFIG_HOME): `chainsmith.trustWorkspace` records
/// trust as `chainsmith trust` does and reloads, so the server's tools load.
#[test]
fn the_trust_command_records_and_reloads() {
    let ws = Workspace::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .arg("lsp")
        .current_dir(ws.root())
        .env("XDG_CONFIG_HOME", ws.config.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                match line.trim_end().strip_prefix("Content-Length: ") {
                    Some(n) => length = n.parse().unwrap(),
                    None if line.trim_end().is_empty() => break,
                    None => {}
                }
            }
            let mut body = vec![0; length];
            std::io::Read::read_exact(&mut reader, &mut body).unwrap();
            if tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        }
    });
    let mut send = |message: Value| {
        let body = message.to_string();
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        stdin.flush().unwrap();
    };
    let wait_for = |what: &str, matches: &dyn Fn(&Value) -> bool| -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = rx.recv_timeout(left).unwrap_or_else(|_| panic!("no {what}"));
            if matches(&message) {
                return message;
            }
        }
    };
    let root_uri = uri(ws.root());
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"processId": null, "rootUri": root_uri, "capabilities": {}}}));
    wait_for("the initialize answer", &|m| m["id"] == 1);
    assert!(!ws.pwned());
    send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let status = wait_for("a status", &|m| m["method"] == "chainsmith/status");
    assert_eq!(status["params"]["tools"], 0);

    send(json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
                "params": {"command": "chainsmith.trustWorkspace", "arguments": [uri(&ws.root().join("chainsmith.toml"))]}}));
    let status = wait_for("the status after the reload", &|m| m["method"] == "chainsmith/status");
    assert_eq!(status["params"]["tools"], 1, "{status}");
    let answer = wait_for("the command's answer", &|m| m["id"] == 2);
    assert_eq!(answer["result"]["commands"], json!([{"from": "toolset `tiny` (mcp)", "command": LINE}]), "{answer}");
    assert!(ws.pwned());
    let recorded = std::fs::read_to_string(ws.trust_file()).unwrap();
    assert!(recorded.contains(&ws.root().canonicalize().unwrap().display().to_string()), "{recorded}");

    send(json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": null}));
    wait_for("the shutdown answer", &|m| m["id"] == 3);
    send(json!({"jsonrpc": "2.0", "method": "exit", "params": null}));
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}
