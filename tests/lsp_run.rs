//! `chainsmith.run` in the language server, in process and over real LSP messages, against the
//! TMDB-like test server: the code lens, a run streaming its output as `window/logMessage` with
//! work-done progress, per-call inlay hints, a failing run's diagnostics (and their clearing), and
//! cancellation through `window/workDoneProgress/cancel`.

mod support;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::runtime::{TmdbServer, workspace};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types::Uri;

const TIMEOUT: Duration = Duration::from_secs(15);

type Writer = Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>;

struct Client {
    writer: Writer,
    incoming: mpsc::UnboundedReceiver<Value>,
    backlog: VecDeque<Value>,
    next_id: i64,
    server: Option<tokio::task::JoinHandle<bool>>,
}

async fn write_frame(writer: &Writer, message: &Value) {
    let body = serde_json::to_vec(message).unwrap();
    let mut w = writer.lock().await;
    w.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await.unwrap();
    w.write_all(&body).await.unwrap();
    w.flush().await.unwrap();
}

async fn read_frame(reader: &mut BufReader<ReadHalf<DuplexStream>>) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length:") {
            length = Some(value.trim().parse::<usize>().unwrap());
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).await.ok()?;
    serde_json::from_slice(&body).ok()
}

fn uri(path: &Path) -> String {
    Uri::from_file_path(path).unwrap().as_str().to_string()
}

impl Client {
    async fn start(root: &Path) -> Client {
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = tokio::spawn(chainsmith::server::serve(server_read, server_write));
        let (client_read, client_write) = tokio::io::split(client_end);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(client_write));
        let (tx, incoming) = mpsc::unbounded_channel();
        {
            let writer = writer.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(client_read);
                while let Some(message) = read_frame(&mut reader).await {
                    // The server's own requests (progress creation, hint refresh) are answered.
                    if message.get("method").is_some()
                        && let Some(id) = message.get("id")
                    {
                        write_frame(&writer, &json!({"jsonrpc": "2.0", "id": id, "result": null})).await;
                    }
                    if tx.send(message).is_err() {
                        break;
                    }
                }
            });
        }
        let mut client = Client { writer, incoming, backlog: VecDeque::new(), next_id: 0, server: Some(server) };
        let capabilities = json!({
            "window": {"workDoneProgress": true},
            "workspace": {"inlayHint": {"refreshSupport": true}},
        });
        let root_uri = uri(root);
        client
            .request(
                "initialize",
                json!({"processId": null, "rootUri": root_uri, "capabilities": capabilities,
                       "workspaceFolders": [{"uri": root_uri, "name": "ws"}]}),
            )
            .await
            .unwrap();
        client.notify("initialized", json!({})).await;
        client
    }

    async fn notify(&mut self, method: &str, params: Value) {
        write_frame(&self.writer, &json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        write_frame(&self.writer, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let message = tokio::time::timeout_at(deadline, self.incoming.recv())
                .await
                .unwrap_or_else(|_| panic!("no response to `{method}`"))
                .expect("the server answers");
            if message.get("method").is_none() && message["id"] == json!(id) {
                return match message.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(message["result"].clone()),
                };
            }
            self.backlog.push_back(message);
        }
    }

    async fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let mut seen = Vec::new();
        while let Some(message) = self.backlog.pop_front() {
            if matches(&message) {
                return message;
            }
            seen.push(message);
        }
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Ok(Some(message)) if matches(&message) => return message,
                Ok(Some(message)) => seen.push(message),
                Ok(None) => panic!("the server went away while waiting for {what}"),
                Err(_) => panic!("no {what} within {TIMEOUT:?}; seen: {seen:#?}"),
            }
        }
    }

    async fn notification(&mut self, method: &str, matches: impl Fn(&Value) -> bool) -> Value {
        self.wait_for(method, |m| m["method"] == method && matches(&m["params"])).await["params"].clone()
    }

    async fn open(&mut self, path: &Path, text: &str) -> String {
        std::fs::write(path, text).unwrap();
        let uri = uri(path);
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        )
        .await;
        uri
    }

    async fn hints(&mut self, uri: &str) -> Vec<(u64, String)> {
        let all = json!({"start": {"line": 0, "character": 0}, "end": {"line": 100, "character": 0}});
        let hints = self.request("textDocument/inlayHint", json!({"textDocument": {"uri": uri}, "range": all})).await;
        hints
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["position"]["line"].as_u64().unwrap(), h["label"].as_str().unwrap().to_string()))
            .collect()
    }

    async fn shutdown(mut self) {
        assert_eq!(self.request("shutdown", Value::Null).await, Ok(Value::Null));
        self.notify("exit", Value::Null).await;
        let server = self.server.take().unwrap();
        assert!(tokio::time::timeout(TIMEOUT, server).await.unwrap().unwrap());
    }
}

fn codes(params: &Value) -> Vec<(u64, String)> {
    params["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["range"]["start"]["line"].as_u64().unwrap(), d["code"].as_str().unwrap_or("").to_string()))
        .collect()
}

const GOOD: &str = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
person = found["results"][0]
credits = tmdb.person_movie_credits(person_id=person["id"])
print(person["name"], len(credits["crew"]))
"#;

const BAD: &str = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
person = found["results"][0]
print(person["nmae"])  # chainsmith: ignore
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_chain_from_the_editor() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    let mut client = Client::start(ws.path()).await;
    let uri = client.open(&ws.path().join("p.py"), GOOD).await;
    client.wait_for("diagnostics", |m| m["method"] == "textDocument/publishDiagnostics").await;

    // The code lens runs the chain.
    let lenses = client.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await.unwrap();
    assert_eq!(lenses.as_array().unwrap().len(), 1, "{lenses:#}");
    assert_eq!(lenses[0]["command"]["command"], "chainsmith.run");
    assert_eq!(lenses[0]["command"]["title"], "▶ Run chain");
    let command = lenses[0]["command"].clone();

    let answer = client
        .request("workspace/executeCommand", json!({"command": command["command"], "arguments": command["arguments"]}))
        .await;
    assert_eq!(answer, Ok(Value::Null));
    let begin = client.notification("$/progress", |p| p["value"]["kind"] == "begin").await;
    assert_eq!(begin["value"]["cancellable"], true);
    let token = begin["token"].clone();
    let report = client.notification("$/progress", |p| p["token"] == token && p["value"]["kind"] == "report").await;
    assert_eq!(report["value"]["message"], "#1 tmdb.search_person ✓ 200");
    let output = client.notification("window/logMessage", |p| p["message"] == "Bradley Cooper 38").await;
    assert_eq!(output["type"], 4, "program output is logged");
    let end = client.notification("$/progress", |p| p["token"] == token && p["value"]["kind"] == "end").await;
    assert_eq!(end["value"]["message"], "✓ 2 calls");
    client.wait_for("an inlay hint refresh", |m| m["method"] == "workspace/inlayHint/refresh").await;

    let hints = client.hints(&uri).await;
    assert_eq!(hints.len(), 2, "{hints:?}");
    assert_eq!(hints[0].0, 2);
    assert_eq!(hints[1].0, 4);
    for (_, label) in &hints {
        assert!(label.starts_with("✓ 200 · ") && label.ends_with(" ms"), "{label}");
    }

    // An edit: the hints go.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": BAD}]}),
        )
        .await;
    client
        .wait_for("diagnostics of version 2", |m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == 2
        })
        .await;
    assert_eq!(client.hints(&uri).await, vec![]);

    // A failing run: the failing line and the call it is attributed to.
    client.request("workspace/executeCommand", json!({"command": "chainsmith.run", "arguments": [uri]})).await.unwrap();
    let published = client
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri.as_str() && p["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
        })
        .await;
    assert_eq!(codes(&published), [(2, "attributed-call".to_string()), (4, "runtime-error".to_string())]);
    let failing = published["diagnostics"].as_array().unwrap().iter().find(|d| d["code"] == "runtime-error").unwrap();
    assert_eq!(failing["range"]["start"], json!({"line": 4, "character": 6}));
    assert!(
        failing["message"].as_str().unwrap().starts_with("KeyError: 'nmae' — on the response of tmdb.search_person")
    );
    let hints = client.hints(&uri).await;
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(hints[0].0 == 2 && hints[0].1.starts_with("✓ 200"), "{hints:?}");

    // Editing the failing line clears its diagnostic; the attribution on the call stays.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
                {"range": {"start": {"line": 4, "character": 14}, "end": {"line": 4, "character": 18}}, "text": "name"}
            ]}),
        )
        .await;
    let published =
        client.notification("textDocument/publishDiagnostics", |p| p["uri"] == uri.as_str() && p["version"] == 3).await;
    assert_eq!(codes(&published), [(2, "attributed-call".to_string())]);

    // The next good run clears the rest.
    client.request("workspace/executeCommand", json!({"command": "chainsmith.run", "arguments": [uri]})).await.unwrap();
    let published = client
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri.as_str() && p["diagnostics"].as_array().is_some_and(Vec::is_empty)
        })
        .await;
    assert_eq!(published["version"], 3);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_cancelled_from_its_progress() {
    let server = TmdbServer::start(&["--slow", "/search/person=30"]);
    let ws = workspace(&server.base_url(), false, "");
    let mut client = Client::start(ws.path()).await;
    let uri = client
        .open(&ws.path().join("slow.py"), "from chainsmith.tools import tmdb\n\ntmdb.search_person(query=\"x\")\n")
        .await;
    let answer = client
        .request(
            "workspace/executeCommand",
            json!({"command": "chainsmith.run", "arguments": [{"uri": uri}], "workDoneToken": "run-1"}),
        )
        .await;
    assert_eq!(answer, Ok(Value::Null));
    client.notification("$/progress", |p| p["token"] == "run-1" && p["value"]["kind"] == "begin").await;
    let started = std::time::Instant::now();
    client.notify("window/workDoneProgress/cancel", json!({"token": "run-1"})).await;
    let end = client.notification("$/progress", |p| p["token"] == "run-1" && p["value"]["kind"] == "end").await;
    assert_eq!(end["value"]["message"], "✗ Cancelled");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    client.shutdown().await;
}
