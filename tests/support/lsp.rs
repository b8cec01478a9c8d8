//! An LSP client for in-process server tests: the real server (`chainsmith::server::serve`) over
//! in-memory pipes, speaking Content-Length framed JSON-RPC. Server-to-client requests are answered
//! with `null` unless `answer` scripted a reply for their method; they are kept, like notifications,
//! for `wait_for`/`notification`.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types::Uri;

pub const TIMEOUT: Duration = Duration::from_secs(15);

type Writer = Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>;

/// Scripted replies to server-to-client requests, by method: each one answers once, in order.
type Answers = Arc<std::sync::Mutex<HashMap<String, VecDeque<Value>>>>;

pub struct Client {
    writer: Writer,
    incoming: mpsc::UnboundedReceiver<Value>,
    backlog: VecDeque<Value>,
    next_id: i64,
    server: Option<tokio::task::JoinHandle<bool>>,
    answers: Answers,
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

pub fn uri(path: &Path) -> String {
    Uri::from_file_path(path).unwrap().as_str().to_string()
}

impl Client {
    pub async fn start(root: &Path) -> Client {
        Self::start_with(root, Value::Null).await
    }

    /// [`Client::start`] with `initializationOptions` (editor settings, `{"trusted": true}`).
    pub async fn start_with(root: &Path, initialization_options: Value) -> Client {
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = tokio::spawn(chainsmith::server::serve(server_read, server_write));
        let (client_read, client_write) = tokio::io::split(client_end);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(client_write));
        let (tx, incoming) = mpsc::unbounded_channel();
        let answers: Answers = Arc::default();
        {
            let writer = writer.clone();
            let answers = answers.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(client_read);
                while let Some(message) = read_frame(&mut reader).await {
                    // The server's own requests (progress creation, hint refresh) are answered.
                    if message.get("method").is_some()
                        && let Some(id) = message.get("id")
                    {
                        let method = message["method"].as_str().unwrap_or_default();
                        let result = answers
                            .lock()
                            .unwrap()
                            .get_mut(method)
                            .and_then(VecDeque::pop_front)
                            .unwrap_or(Value::Null);
                        write_frame(&writer, &json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
                    }
                    if tx.send(message).is_err() {
                        break;
                    }
                }
            });
        }
        let mut client =
            Client { writer, incoming, backlog: VecDeque::new(), next_id: 0, server: Some(server), answers };
        let capabilities = json!({
            "window": {"workDoneProgress": true},
            "workspace": {"inlayHint": {"refreshSupport": true}},
        });
        let root_uri = uri(root);
        client
            .request(
                "initialize",
                json!({"processId": null, "rootUri": root_uri, "capabilities": capabilities,
                       "workspaceFolders": [{"uri": root_uri, "name": "ws"}],
                       "initializationOptions": initialization_options}),
            )
            .await
            .unwrap();
        client.notify("initialized", json!({})).await;
        client
    }

    /// Answers the server's next `method` request (e.g. `workspace/applyEdit`,
    /// `window/showMessageRequest`) with `result` instead of `null`.
    pub fn answer(&self, method: &str, result: Value) {
        self.answers.lock().unwrap().entry(method.to_string()).or_default().push_back(result);
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        write_frame(&self.writer, &json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
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

    pub async fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
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

    pub async fn notification(&mut self, method: &str, matches: impl Fn(&Value) -> bool) -> Value {
        self.wait_for(method, |m| m["method"] == method && matches(&m["params"])).await["params"].clone()
    }

    pub async fn open(&mut self, path: &Path, text: &str) -> String {
        std::fs::write(path, text).unwrap();
        let uri = uri(path);
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        )
        .await;
        uri
    }

    pub async fn hints(&mut self, uri: &str) -> Vec<(u64, String)> {
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

    pub async fn shutdown(mut self) {
        assert_eq!(self.request("shutdown", Value::Null).await, Ok(Value::Null));
        self.notify("exit", Value::Null).await;
        let server = self.server.take().unwrap();
        assert!(tokio::time::timeout(TIMEOUT, server).await.unwrap().unwrap());
    }
}
