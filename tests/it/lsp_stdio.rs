//! The built `chainsmith lsp` binary over real pipes: Content-Length framed JSON-RPC on stdin and
//! stdout, diagnostics for a program with planted mistakes, a clean `shutdown` + `exit` (status 0,
//! promptly, even though the client keeps stdin open) and nothing on stdout but LSP frames.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types::Uri;

const TIMEOUT: Duration = Duration::from_secs(10);

fn send(stdin: &mut ChildStdin, message: &Value) {
    let body = serde_json::to_vec(message).unwrap();
    write!(stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
    stdin.write_all(&body).unwrap();
    stdin.flush().unwrap();
}

/// Reads frames until the end of stdout. Anything that is not a well-formed frame (a stray log
/// line, a bad header, a body that is not JSON-RPC) is an error.
fn read_frames(stdout: impl Read, tx: mpsc::Sender<Value>) -> Result<usize, String> {
    let mut reader = BufReader::new(stdout);
    let mut frames = 0;
    loop {
        let mut length = None;
        let mut first = true;
        loop {
            let mut line = String::new();
            let n = reader.read_line(&mut line).map_err(|e| e.to_string())?;
            if n == 0 {
                return if first { Ok(frames) } else { Err(format!("stdout ended inside a header: {line:?}")) };
            }
            first = false;
            if !line.ends_with("\r\n") {
                return Err(format!("not an LSP header line: {line:?}"));
            }
            let line = line.trim_end_matches("\r\n");
            if line.is_empty() {
                break;
            }
            match line.split_once(": ") {
                Some(("Content-Length", n)) => {
                    length = Some(n.parse::<usize>().map_err(|_| format!("bad Content-Length: {line:?}"))?)
                }
                Some(("Content-Type", _)) => {}
                _ => return Err(format!("not an LSP header line: {line:?}")),
            }
        }
        let mut body = vec![0; length.ok_or("a frame without Content-Length")?];
        reader.read_exact(&mut body).map_err(|e| format!("truncated frame: {e}"))?;
        let message: Value =
            serde_json::from_slice(&body).map_err(|e| format!("a frame body that is not JSON ({e}): {body:?}"))?;
        if message["jsonrpc"] != "2.0" {
            return Err(format!("not a JSON-RPC 2.0 message: {message}"));
        }
        frames += 1;
        let _ = tx.send(message);
    }
}

struct Session {
    child: Child,
    stdin: ChildStdin,
    rx: mpsc::Receiver<Value>,
}

type Reader = std::thread::JoinHandle<Result<usize, String>>;

impl Session {
    /// `chainsmith lsp` in `dir`, and the thread reading its stdout frame by frame.
    fn start(dir: &Path) -> (Session, Reader) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
            .arg("lsp")
            .current_dir(dir)
            // Verbose logs must go to stderr, never into the protocol stream.
            .env("CHAINSMITH_LOG", "debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the chainsmith binary starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || read_frames(stdout, tx));
        (Session { child, stdin, rx }, reader)
    }

    /// The next message satisfying `matches`; answers requests from the server on the way.
    fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.rx.recv_timeout(left) {
                Ok(message) => message,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("no {what} within {TIMEOUT:?}"),
                Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the server's stdout closed before {what}"),
            };
            if message.get("method").is_some()
                && let Some(id) = message.get("id")
            {
                send(&mut self.stdin, &json!({"jsonrpc": "2.0", "id": id, "result": null}));
            }
            if matches(&message) {
                return message;
            }
        }
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        send(&mut self.stdin, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self
            .wait_for(&format!("the response to `{method}`"), |m| m.get("method").is_none() && m["id"] == json!(id));
        assert!(response.get("error").is_none(), "`{method}` failed: {response}");
        response["result"].clone()
    }

    fn notify(&mut self, method: &str, params: Value) {
        send(&mut self.stdin, &json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
}

#[test]
fn stdio_server_publishes_diagnostics_and_exits_cleanly() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb");
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("specs")).unwrap();
    std::fs::copy(examples.join("chainsmith.toml"), workspace.path().join("chainsmith.toml")).unwrap();
    std::fs::copy(examples.join("specs/tmdb_oas.json"), workspace.path().join("specs/tmdb_oas.json")).unwrap();
    let program = workspace.path().join("mistakes.py");
    std::fs::copy(examples.join("mistakes/mistakes.py"), &program).unwrap();
    let text = std::fs::read_to_string(&program).unwrap();

    let (mut session, reader) = Session::start(workspace.path());

    let root = Uri::from_file_path(workspace.path()).unwrap().as_str().to_string();
    let init = session.request(1, "initialize", json!({"processId": null, "rootUri": root, "capabilities": {}}));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-16");
    session.notify("initialized", json!({}));
    let uri = Uri::from_file_path(&program).unwrap().as_str().to_string();
    session.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
    let published = session.wait_for("diagnostics for mistakes.py", |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
    });
    let found: Vec<(u64, &str)> = published["params"]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["range"]["start"]["line"].as_u64().unwrap(), d["code"].as_str().unwrap()))
        .collect();
    // Each planted mistake, on its (0-based) line: see examples/tmdb/mistakes/EXPECTED.md.
    let expected: Vec<(u64, &str)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| Some((i as u64, line.split_once("# mistake: ")?.1.trim())))
        .collect();
    assert_eq!(expected.len(), 10);
    assert_eq!(found, expected);

    assert_eq!(session.request(2, "shutdown", Value::Null), Value::Null);
    session.notify("exit", Value::Null);
    // stdin stays open: the server must not wait for it to close.
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = session.child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = session.child.kill();
            panic!("the server did not exit within 5s of `exit`");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "exit after shutdown is a clean exit");
    drop(session.stdin);
    let frames = reader.join().unwrap().unwrap_or_else(|e| panic!("stdout held something other than LSP: {e}"));
    assert!(frames >= 3, "initialize response, diagnostics, shutdown response");
}

/// Malformed client input is answered with a JSON-RPC error and the server goes on serving:
/// invalid JSON, `{}`, a non-integer id, a lower-case header with LF line ends, a frame without
/// Content-Length, `$/setTrace` sent as a request. (The framework alone stopped at the first.)
#[test]
fn malformed_frames_are_answered_and_the_server_keeps_serving() {
    let workspace = tempfile::tempdir().unwrap();
    let (mut session, reader) = Session::start(workspace.path());
    let root = Uri::from_file_path(workspace.path()).unwrap().as_str().to_string();
    session.request(1, "initialize", json!({"processId": null, "rootUri": root, "capabilities": {}}));
    session.notify("initialized", json!({}));

    let raw = |stdin: &mut ChildStdin, bytes: &[u8]| {
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    };
    let set_trace = br#"{"jsonrpc":"2.0","id":7,"method":"$/setTrace","params":{"value":"off"}}"#;
    raw(&mut session.stdin, b"Content-Length: 5\r\n\r\n{oops");
    raw(&mut session.stdin, b"Content-Length: 2\r\n\r\n{}");
    let bad_id = br#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#;
    raw(&mut session.stdin, format!("Content-Length: {}\r\n\r\n", bad_id.len()).as_bytes());
    raw(&mut session.stdin, bad_id);
    raw(&mut session.stdin, b"X-Whatever: 1\r\n\r\n");
    raw(&mut session.stdin, format!("content-length: {}\n\n", set_trace.len()).as_bytes());
    raw(&mut session.stdin, set_trace);
    let mut codes = Vec::new();
    for what in ["a parse error", "an invalid request", "an invalid id", "a frame without length", "$/setTrace"] {
        let error = session.wait_for(what, |m| m.get("error").is_some());
        codes.push((error["id"].clone(), error["error"]["code"].as_i64().unwrap()));
    }
    assert_eq!(
        codes,
        [
            (Value::Null, -32700),
            (Value::Null, -32600),
            (Value::Null, -32600),
            (Value::Null, -32700),
            (json!(7), -32601)
        ]
    );
    // Still serving: a request after all that is answered.
    let symbols = session.request(8, "workspace/symbol", json!({"query": "x"}));
    assert_eq!(symbols, json!([]), "no tools, no symbols");
    assert_eq!(session.request(9, "shutdown", Value::Null), Value::Null);
    session.notify("exit", Value::Null);
    assert_eq!(session.child.wait().unwrap().code(), Some(0));
    drop(session.stdin);
    reader.join().unwrap().unwrap_or_else(|e| panic!("stdout held something other than LSP: {e}"));
}
