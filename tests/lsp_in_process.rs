//! The language server in process, spoken to in real LSP messages: the server runs on one end of an
//! in-memory duplex pipe (so the real Content-Length codec is exercised) and a small client on the
//! other end frames JSON-RPC, answers the server's own requests (`workspace/configuration`,
//! `client/registerCapability`) and collects notifications.
//!
//! Each test works in its own temporary copy of the TMDB example workspace.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types::Uri;

/// How long any single expected message may take before the test fails.
const TIMEOUT: Duration = Duration::from_secs(10);

const PROGRAM: &str = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
print("é😀", tmdb.search_persn(query="Sofia"))
no_query = tmdb.search_person(page=1)
first_id = found["result"][0]["id"]
"#;

type Writer = Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>;

struct TestClient {
    writer: Writer,
    incoming: mpsc::UnboundedReceiver<Value>,
    /// Messages read while waiting for something else, oldest first.
    backlog: VecDeque<Value>,
    next_id: i64,
    server: Option<tokio::task::JoinHandle<bool>>,
    /// What this client answers to `workspace/configuration`.
    configuration: Arc<Mutex<Value>>,
    workspace: tempfile::TempDir,
}

fn example(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb").join(rel)
}

async fn write_frame(writer: &Writer, message: &Value) {
    let body = serde_json::to_vec(message).unwrap();
    let mut w = writer.lock().await;
    w.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await.unwrap();
    w.write_all(&body).await.unwrap();
    w.flush().await.unwrap();
}

/// Reads one Content-Length framed message; `None` at the end of the stream.
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
            length = Some(value.trim().parse::<usize>().expect("numeric Content-Length"));
        }
    }
    let mut body = vec![0; length.expect("a Content-Length header")];
    reader.read_exact(&mut body).await.ok()?;
    Some(serde_json::from_slice(&body).expect("the server writes JSON bodies"))
}

impl TestClient {
    /// Starts a server on a fresh copy of the TMDB workspace and runs `initialize`.
    async fn start(capabilities: Value, initialization_options: Option<Value>) -> (TestClient, Value) {
        Self::start_with_root(capabilities, initialization_options, true).await
    }

    /// Like `start`; without `announce_root` the client names no workspace folder or root.
    async fn start_with_root(
        capabilities: Value,
        initialization_options: Option<Value>,
        announce_root: bool,
    ) -> (TestClient, Value) {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(workspace.path().join("specs")).unwrap();
        std::fs::copy(example("chainsmith.toml"), workspace.path().join("chainsmith.toml")).unwrap();
        std::fs::copy(example("specs/tmdb_oas.json"), workspace.path().join("specs/tmdb_oas.json")).unwrap();

        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = tokio::spawn(chainsmith::server::serve(server_read, server_write));
        let (client_read, client_write) = tokio::io::split(client_end);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(client_write));
        let configuration = Arc::new(Mutex::new(Value::Null));
        let (tx, incoming) = mpsc::unbounded_channel();
        {
            let writer = writer.clone();
            let configuration = configuration.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(client_read);
                while let Some(message) = read_frame(&mut reader).await {
                    if let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) {
                        let result = match method {
                            "workspace/configuration" => {
                                let items = message["params"]["items"].as_array().map_or(1, Vec::len);
                                let value = configuration.lock().unwrap().clone();
                                Value::Array(vec![value; items])
                            }
                            _ => Value::Null,
                        };
                        write_frame(&writer, &json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
                    }
                    if tx.send(message).is_err() {
                        break;
                    }
                }
            });
        }
        let mut client = TestClient {
            writer,
            incoming,
            backlog: VecDeque::new(),
            next_id: 0,
            server: Some(server),
            configuration,
            workspace,
        };
        let root = client.uri("");
        let mut params = json!({
            "processId": null,
            "rootUri": root,
            "capabilities": capabilities,
            "workspaceFolders": [{"uri": root, "name": "tmdb"}],
        });
        if !announce_root {
            params["rootUri"] = Value::Null;
            params["workspaceFolders"] = Value::Null;
        }
        if let Some(options) = initialization_options {
            params["initializationOptions"] = options;
        }
        let result = client.request("initialize", params).await.expect("initialize succeeds");
        (client, result)
    }

    fn path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() { self.workspace.path().to_path_buf() } else { self.workspace.path().join(rel) }
    }

    /// The URI the server uses for a workspace file.
    fn uri(&self, rel: &str) -> String {
        Uri::from_file_path(self.path(rel)).expect("an absolute path").as_str().to_string()
    }

    async fn notify(&mut self, method: &str, params: Value) {
        write_frame(&self.writer, &json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// Sends a request and waits for its response: `Ok(result)` or `Err(error)`.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        write_frame(&self.writer, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let message = tokio::time::timeout_at(deadline, self.incoming.recv())
                .await
                .unwrap_or_else(|_| panic!("no response to `{method}` within {TIMEOUT:?}"))
                .unwrap_or_else(|| panic!("the server closed the connection before answering `{method}`"));
            if message.get("method").is_none() && message["id"] == json!(id) {
                if let Some(error) = message.get("error") {
                    return Err(error.clone());
                }
                return Ok(message["result"].clone());
            }
            self.backlog.push_back(message);
        }
    }

    /// The first message (oldest first, from the backlog then the wire) that `matches`; messages
    /// before it are dropped.
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
            let next = tokio::time::timeout_at(deadline, self.incoming.recv()).await;
            let message = match next {
                Ok(Some(message)) => message,
                Ok(None) => panic!("the server closed the connection while waiting for {what}; seen: {seen:#?}"),
                Err(_) => panic!("no {what} within {TIMEOUT:?}; seen: {seen:#?}"),
            };
            if matches(&message) {
                return message;
            }
            seen.push(message);
        }
    }

    async fn notification(&mut self, method: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let message = self.wait_for(method, |m| m["method"] == method && matches(&m["params"])).await;
        message["params"].clone()
    }

    /// The next diagnostics published for `uri` that satisfy `matches`.
    async fn diagnostics(&mut self, uri: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let what = format!("publishDiagnostics for {uri}");
        let message = self
            .wait_for(&what, |m| {
                m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri && matches(&m["params"])
            })
            .await;
        message["params"].clone()
    }

    async fn initialized(&mut self) {
        self.notify("initialized", json!({})).await;
    }

    /// Writes the program into the workspace and opens it.
    async fn open(&mut self, rel: &str, text: &str) -> String {
        std::fs::create_dir_all(self.path(rel).parent().unwrap()).unwrap();
        std::fs::write(self.path(rel), text).unwrap();
        let uri = self.uri(rel);
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        )
        .await;
        uri
    }

    async fn shutdown_and_exit(mut self) {
        assert_eq!(self.request("shutdown", Value::Null).await, Ok(Value::Null));
        self.notify("exit", Value::Null).await;
        let server = self.server.take().unwrap();
        let clean = tokio::time::timeout(TIMEOUT, server)
            .await
            .expect("the server stops after `exit`")
            .expect("the server task does not panic");
        assert!(clean, "`exit` after `shutdown` is a clean stop");
    }
}

fn utf16_client() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-16"]},
        "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}},
        "textDocument": {
            "completion": {"completionItem": {"snippetSupport": true}},
            "signatureHelp": {"signatureInformation": {"parameterInformation": {"labelOffsetSupport": true}}},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
        },
    })
}

/// `line:start-line:end severity code (source)` per diagnostic, for compact snapshots.
fn summary(params: &Value) -> Vec<String> {
    params["diagnostics"]
        .as_array()
        .expect("a diagnostics array")
        .iter()
        .map(|d| {
            let r = &d["range"];
            format!(
                "{}:{}-{}:{} severity {} {} ({})",
                r["start"]["line"],
                r["start"]["character"],
                r["end"]["line"],
                r["end"]["character"],
                d["severity"],
                d["code"].as_str().unwrap_or("<no code>"),
                d["source"].as_str().unwrap_or("<no source>"),
            )
        })
        .collect()
}

fn codes(params: &Value) -> Vec<String> {
    params["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap_or("").to_string()).collect()
}

fn has_diagnostics(params: &Value) -> bool {
    params["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
}

fn position(line: u32, character: u32) -> Value {
    json!({"line": line, "character": character})
}

#[tokio::test]
async fn utf16_diagnostics_incremental_edits_and_quick_fixes() {
    let (mut client, init) = TestClient::start(utf16_client(), None).await;
    let caps = &init["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-16");
    assert_eq!(caps["textDocumentSync"]["change"], 2, "incremental sync");
    assert_eq!(caps["completionProvider"]["triggerCharacters"], json!([".", "\"", "'", "(", ",", "[", "/", "="]));
    assert_eq!(caps["completionProvider"]["resolveProvider"], true);
    assert_eq!(caps["signatureHelpProvider"]["triggerCharacters"], json!(["(", ","]));
    assert_eq!(caps["codeActionProvider"]["codeActionKinds"], json!(["quickfix", "refactor.rewrite"]));
    assert_eq!(
        caps["executeCommandProvider"]["commands"],
        json!([
            "chainsmith.run",
            "chainsmith.generate",
            "chainsmith.fix",
            "chainsmith.probe",
            "chainsmith.probeAll",
            "chainsmith.graph",
            "chainsmith.trustWorkspace"
        ])
    );
    assert_eq!(init["serverInfo"]["name"], "chainsmith");

    client.initialized().await;
    let status = client.notification("chainsmith/status", |_| true).await;
    assert_eq!(status, json!({"toolsets": 1, "tools": 54, "unprobed": 0}));
    let registration =
        client.wait_for("client/registerCapability", |m| m["method"] == "client/registerCapability").await;
    let registered = &registration["params"]["registrations"][0];
    assert_eq!(registered["method"], "workspace/didChangeWatchedFiles");
    let globs: Vec<&str> = registered["registerOptions"]["watchers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["globPattern"].as_str().unwrap())
        .collect();
    assert_eq!(globs, ["**/chainsmith.toml", "**/*.json", "**/*.yaml", "**/*.yml"]);

    let uri = client.open("programs/p.py", PROGRAM).await;
    let published = client.diagnostics(&uri, |p| p["version"] == 1).await;
    insta::assert_json_snapshot!(summary(&published), @r#"
    [
      "3:18-3:30 severity 1 unknown-tool (chainsmith)",
      "4:16-4:29 severity 1 missing-argument (chainsmith)",
      "5:17-5:25 severity 2 unknown-key (chainsmith)"
    ]
    "#);
    let unknown_tool = published["diagnostics"][0].clone();
    assert!(unknown_tool["message"].as_str().unwrap().contains("search_persn"), "{unknown_tool}");
    assert!(unknown_tool["message"].as_str().unwrap().contains("search_person"), "{unknown_tool}");

    // The quick fix for the unknown tool, offered for a cursor inside its name.
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": uri},
                "range": {"start": position(3, 20), "end": position(3, 20)},
                "context": {"diagnostics": [unknown_tool]},
            }),
        )
        .await
        .unwrap();
    let actions = actions.as_array().expect("a list of code actions");
    assert_eq!(actions.len(), 1, "{actions:#?}");
    let fix = &actions[0];
    assert_eq!(fix["title"], "Change to `search_person`");
    assert_eq!(fix["kind"], "quickfix");
    assert_eq!(fix["isPreferred"], true);
    assert_eq!(fix["diagnostics"][0]["code"], "unknown-tool");
    let edits = &fix["edit"]["changes"][uri.as_str()];
    assert_eq!(
        *edits,
        json!([{"range": {"start": position(3, 18), "end": position(3, 30)}, "newText": "search_person"}])
    );

    // Apply it as the editor would: a ranged (incremental) change. The unknown tool is gone, the
    // other mistakes stay where they were.
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"range": edits[0]["range"], "text": "search_person"}],
            }),
        )
        .await;
    let published = client.diagnostics(&uri, |p| p["version"] == 2).await;
    insta::assert_json_snapshot!(summary(&published), @r#"
    [
      "4:16-4:29 severity 1 missing-argument (chainsmith)",
      "5:17-5:25 severity 2 unknown-key (chainsmith)"
    ]
    "#);

    // Two ranged changes in one notification (the second relative to the first's result), then a
    // full-text change.
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": 3},
                "contentChanges": [
                    {"range": {"start": position(5, 18), "end": position(5, 24)}, "text": "results"},
                    {"range": {"start": position(4, 30), "end": position(4, 36)}, "text": "query=\"x\""},
                ],
            }),
        )
        .await;
    let published = client.diagnostics(&uri, |p| p["version"] == 3).await;
    assert_eq!(codes(&published), Vec::<String>::new(), "{published:#}");
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": PROGRAM}]}),
        )
        .await;
    let published = client.diagnostics(&uri, |p| p["version"] == 4).await;
    assert_eq!(codes(&published), ["unknown-tool", "missing-argument", "unknown-key"]);

    // Closing clears the program's diagnostics.
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}})).await;
    let cleared = client.diagnostics(&uri, |p| p["version"].is_null()).await;
    assert_eq!(cleared["diagnostics"], json!([]));

    client.shutdown_and_exit().await;
}

#[tokio::test]
async fn utf8_positions_when_the_client_offers_them() {
    let capabilities = json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}});
    let (mut client, init) = TestClient::start(capabilities, None).await;
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    client.initialized().await;
    let uri = client.open("p.py", PROGRAM).await;
    let published = client.diagnostics(&uri, |p| p["version"] == 1).await;
    // `print("é😀", ` is 16 bytes but 13 UTF-16 code units: the unknown tool starts at byte 21.
    assert_eq!(summary(&published)[0], "3:21-3:33 severity 1 unknown-tool (chainsmith)");
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"range": {"start": position(3, 21), "end": position(3, 33)}, "text": "search_person"}],
            }),
        )
        .await;
    let published = client.diagnostics(&uri, |p| p["version"] == 2).await;
    assert_eq!(codes(&published), ["missing-argument", "unknown-key"]);
    client.shutdown_and_exit().await;
}

#[tokio::test]
async fn settings_from_initialization_options_and_workspace_configuration() {
    let capabilities =
        json!({"workspace": {"configuration": true, "didChangeConfiguration": {"dynamicRegistration": false}}});
    let options = json!({"diagnostics": {"severity": {"unknown-key": "off"}}});
    let (mut client, _) = TestClient::start(capabilities, Some(options)).await;
    *client.configuration.lock().unwrap() = json!({"diagnostics": {"severity": {"missing-argument": "hint"}}});
    client.initialized().await;
    client.wait_for("workspace/configuration", |m| m["method"] == "workspace/configuration").await;
    // Both layers apply: unknown-key off (initializationOptions), missing-argument a hint (pulled).
    let uri = client.open("p.py", PROGRAM).await;
    let published =
        client.diagnostics(&uri, |p| p["diagnostics"].as_array().unwrap().iter().any(|d| d["severity"] == 4)).await;
    insta::assert_json_snapshot!(summary(&published), @r#"
    [
      "3:18-3:30 severity 1 unknown-tool (chainsmith)",
      "4:16-4:29 severity 4 missing-argument (chainsmith)"
    ]
    "#);

    // A settings change: the server pulls the section again and re-publishes.
    *client.configuration.lock().unwrap() = json!({"diagnostics": {"severity": {"unknown-tool": "warning"}}});
    client.notify("workspace/didChangeConfiguration", json!({"settings": null})).await;
    client.notification("chainsmith/status", |s| s["tools"] == 54).await;
    let published =
        client.diagnostics(&uri, |p| p["diagnostics"].as_array().unwrap().iter().any(|d| d["severity"] == 2)).await;
    assert_eq!(
        summary(&published),
        ["3:18-3:30 severity 2 unknown-tool (chainsmith)", "4:16-4:29 severity 1 missing-argument (chainsmith)"]
    );
    client.shutdown_and_exit().await;
}

#[tokio::test]
async fn protocol_and_config_changes_on_disk_are_picked_up() {
    let (mut client, _) = TestClient::start(utf16_client(), None).await;
    client.initialized().await;
    client.notification("chainsmith/status", |s| s["tools"] == 54).await;
    let uri = client.open("p.py", PROGRAM).await;
    client.diagnostics(&uri, |p| p["version"] == 1).await;
    let spec = client.path("specs/tmdb_oas.json");
    let spec_uri = client.uri("specs/tmdb_oas.json");
    let original = std::fs::read_to_string(&spec).unwrap();

    // The spec becomes invalid JSON: a diagnostic on the spec, no tools, programs re-checked.
    std::fs::write(&spec, "{\n  \"openapi\": \"3.0.0\",\n  \"paths\": {\n").unwrap();
    client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": spec_uri, "type": 2}]})).await;
    client.notification("chainsmith/status", |s| s["tools"] == 0).await;
    let broken = client.diagnostics(&spec_uri, has_diagnostics).await;
    assert_eq!(codes(&broken), ["invalid-protocol"], "{broken:#}");
    assert_eq!(broken["diagnostics"][0]["source"], "chainsmith");
    assert_eq!(broken["diagnostics"][0]["severity"], 1);
    let reanalysed = client.diagnostics(&uri, |_| true).await;
    assert!(!codes(&reanalysed).contains(&"missing-argument".to_string()), "{reanalysed:#}");

    // Restored: the spec's diagnostics are cleared and the program is checked against it again.
    std::fs::write(&spec, &original).unwrap();
    client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": spec_uri, "type": 2}]})).await;
    client.notification("chainsmith/status", |s| s["tools"] == 54).await;
    let cleared = client.diagnostics(&spec_uri, |p| !has_diagnostics(p)).await;
    assert_eq!(cleared["diagnostics"], json!([]));
    let reanalysed = client.diagnostics(&uri, |_| true).await;
    assert_eq!(codes(&reanalysed), ["unknown-tool", "missing-argument", "unknown-key"]);

    // chainsmith.toml: a syntax error is located on it; saving the fixed file (open in the
    // editor) reloads without a watcher event.
    let toml = client.path("chainsmith.toml");
    let toml_uri = client.uri("chainsmith.toml");
    let good = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, "[[toolsets]]\nname = \"tmdb\nopenapi = 1\n").unwrap();
    client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": toml_uri, "type": 2}]})).await;
    let broken = client.diagnostics(&toml_uri, has_diagnostics).await;
    assert_eq!(codes(&broken), ["invalid-config"], "{broken:#}");
    std::fs::write(&toml, &good).unwrap();
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": toml_uri}})).await;
    client.notification("chainsmith/status", |s| s["tools"] == 54).await;
    client.diagnostics(&toml_uri, |p| !has_diagnostics(p)).await;

    // Files that are not part of the workspace's protocols do not trigger a reload.
    std::fs::write(client.path("notes.json"), "{").unwrap();
    let notes_uri = client.uri("notes.json");
    client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": notes_uri, "type": 1}]})).await;
    let symbols = client.request("workspace/symbol", json!({"query": "zzz_no_such_tool"})).await.unwrap();
    assert_eq!(symbols, json!([]));
    assert!(
        client.backlog.iter().all(|m| m["method"] != "chainsmith/status"),
        "an unrelated file reloaded the workspace: {:#?}",
        client.backlog
    );
    client.shutdown_and_exit().await;
}

#[tokio::test]
async fn editor_requests_answer_well_formed() {
    let (mut client, _) = TestClient::start(utf16_client(), None).await;
    client.initialized().await;
    let uri = client.open("p.py", PROGRAM).await;
    client.diagnostics(&uri, |p| p["version"] == 1).await;
    let at = |line, character| json!({"textDocument": {"uri": uri}, "position": position(line, character)});

    let completion = client.request("textDocument/completion", at(2, 13)).await.unwrap();
    assert!(completion.is_null() || completion["items"].is_array(), "{completion}");
    let hover = client.request("textDocument/hover", at(2, 16)).await.unwrap();
    assert!(hover.is_null() || hover["contents"]["kind"] == "markdown", "{hover}");
    let signature = client.request("textDocument/signatureHelp", at(2, 28)).await.unwrap();
    assert!(signature.is_null() || signature["signatures"].is_array(), "{signature}");
    let definition = client.request("textDocument/definition", at(2, 16)).await.unwrap();
    assert!(definition.is_null() || definition["uri"].is_string(), "{definition}");
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}})).await.unwrap();
    assert!(symbols.is_array(), "{symbols}");
    let workspace = client.request("workspace/symbol", json!({"query": "search"})).await.unwrap();
    assert!(workspace.is_array(), "{workspace}");
    let resolved = client
        .request("completionItem/resolve", json!({"label": "search_person", "data": "tmdb.search_person"}))
        .await
        .unwrap();
    assert_eq!(resolved["label"], "search_person");

    // Positions past the end of a line or of the document are clamped, not failures.
    for (line, character) in [(2, 500), (999, 0), (0, 0)] {
        assert!(client.request("textDocument/hover", at(line, character)).await.is_ok());
        assert!(client.request("textDocument/completion", at(line, character)).await.is_ok());
    }
    // An edit whose range lies past the end is clamped too; the document stays usable.
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"range": {"start": position(40, 3), "end": position(2, 900)}, "text": "\n"}],
            }),
        )
        .await;
    client.diagnostics(&uri, |p| p["version"] == 2).await;
    // Requests on documents that were never opened answer null.
    let other = client.uri("never_opened.py");
    let hover =
        client.request("textDocument/hover", json!({"textDocument": {"uri": other}, "position": position(0, 0)})).await;
    assert_eq!(hover, Ok(Value::Null));
    client.shutdown_and_exit().await;
}

/// The real behaviour of the editor features over LSP (ide.rs computes them; this checks that the
/// server asks at the right offsets and converts the answers).
#[tokio::test]
async fn completion_hover_definition_signature_and_symbols() {
    let (mut client, _) = TestClient::start(utf16_client(), None).await;
    client.initialized().await;
    let text = "from chainsmith.tools import tmdb\n\nfound = tmdb.search_person(query=\"Sofia Coppola\", )\nname = found[\"results\"][0][\"\"]\ntmdb.\n";
    let uri = client.open("p.py", text).await;
    client.diagnostics(&uri, |p| p["version"] == 1).await;
    let at = |line, character| json!({"textDocument": {"uri": uri}, "position": position(line, character)});

    // Completion after `tmdb.`: the toolset's tools, as function items with the tool id as data.
    let completion = client.request("textDocument/completion", at(4, 5)).await.unwrap();
    let items = completion["items"].as_array().expect("a completion list");
    let item = items.iter().find(|i| i["label"] == "search_person").unwrap_or_else(|| panic!("{completion:#}"));
    assert_eq!(item["kind"], 3, "function");
    assert_eq!(item["data"], "tmdb.search_person");
    assert_eq!(item["textEdit"]["range"]["start"]["line"], 4);
    assert_eq!(item["textEdit"]["range"]["end"], position(4, 5));
    let resolved = client.request("completionItem/resolve", item.clone()).await.unwrap();
    let docs = resolved["documentation"]["value"].as_str().unwrap_or_else(|| panic!("{resolved:#}"));
    assert!(docs.contains("query"), "{docs}");

    // Response keys inside a subscript's quotes, replacing nothing yet.
    let completion = client.request("textDocument/completion", at(3, 28)).await.unwrap();
    let labels: Vec<&str> =
        completion["items"].as_array().unwrap().iter().map(|i| i["label"].as_str().unwrap()).collect();
    assert!(labels.contains(&"name") && labels.contains(&"id"), "{completion:#}");
    let name = completion["items"].as_array().unwrap().iter().find(|i| i["label"] == "name").unwrap();
    assert_eq!(name["kind"], 5, "field");
    assert_eq!(name["textEdit"]["range"], json!({"start": position(3, 28), "end": position(3, 28)}));

    // Hover on the tool name mentions its required parameter.
    let hover = client.request("textDocument/hover", at(2, 16)).await.unwrap();
    assert_eq!(hover["contents"]["kind"], "markdown");
    assert!(hover["contents"]["value"].as_str().unwrap().contains("query"), "{hover:#}");
    assert_eq!(hover["range"]["start"]["line"], 2);

    // Definition: the operation in the spec.
    let definition = client.request("textDocument/definition", at(2, 16)).await.unwrap();
    assert_eq!(definition["uri"], client.uri("specs/tmdb_oas.json"));
    let spec = std::fs::read_to_string(client.path("specs/tmdb_oas.json")).unwrap();
    let line = definition["range"]["start"]["line"].as_u64().unwrap() as usize;
    let around: String = spec.lines().skip(line.saturating_sub(3)).take(8).collect::<Vec<_>>().join("\n");
    assert!(around.contains("/search/person") || around.contains("search"), "{around}");

    // Signature help inside the argument list, after the comma.
    let signature = client.request("textDocument/signatureHelp", at(2, 50)).await.unwrap();
    let label = signature["signatures"][0]["label"].as_str().unwrap_or_else(|| panic!("{signature:#}"));
    assert!(label.contains("query"), "{label}");
    for parameter in signature["signatures"][0]["parameters"].as_array().unwrap() {
        let [start, end] = [&parameter["label"][0], &parameter["label"][1]].map(|v| v.as_u64().unwrap() as usize);
        assert!(start <= end && end <= label.encode_utf16().count(), "{parameter}");
    }

    // Document symbols: the call (hierarchical form, as the client asked).
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}})).await.unwrap();
    let names: Vec<&str> = symbols.as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(names.iter().any(|n| n.contains("search_person") || *n == "found"), "{symbols:#}");
    assert!(symbols[0]["selectionRange"].is_object(), "{symbols:#}");

    // Workspace symbols: tools located at their names in the spec.
    let workspace = client.request("workspace/symbol", json!({"query": "search_person"})).await.unwrap();
    let found = workspace
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "tmdb.search_person")
        .unwrap_or_else(|| panic!("{workspace:#}"));
    assert_eq!(found["location"]["uri"], client.uri("specs/tmdb_oas.json"));
    assert_eq!(found["containerName"], "tmdb");
    client.shutdown_and_exit().await;
}

#[tokio::test]
async fn commands_unknown_methods_and_lifecycle() {
    let (mut client, _) = TestClient::start(json!({}), None).await;
    client.initialized().await;
    // chainsmith.graph answers with ToolNet's graph (this workspace has no programs yet).
    let answer = client
        .request(
            "workspace/executeCommand",
            json!({"command": "chainsmith.graph", "arguments": ["tmdb.search_person"]}),
        )
        .await
        .unwrap();
    let text = answer["text"].as_str().unwrap();
    assert!(text.starts_with("ToolNet: 0 edges"), "{text}");
    assert!(text.contains("\ntmdb.search_person → (no successor yet)"), "{text}");
    assert!(answer["dot"].as_str().unwrap().starts_with("digraph toolnet {"), "{answer}");
    let logged = client.notification("window/logMessage", |p| p["message"].as_str().unwrap().contains("ToolNet")).await;
    assert!(logged["message"].as_str().unwrap().contains("tmdb.search_person"), "{logged}");

    let error = client.request("workspace/executeCommand", json!({"command": "other.tool"})).await.unwrap_err();
    assert_eq!(error["code"], -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("other.tool"), "{error}");

    let error = client.request("chainsmith/noSuchMethod", json!({})).await.unwrap_err();
    assert_eq!(error["code"], -32601, "{error}");
    // Malformed parameters are an error answer, not a crash.
    let error = client.request("textDocument/hover", json!({"textDocument": 5})).await.unwrap_err();
    assert_eq!(error["code"], -32602, "{error}");
    // A non-Python document is not analysed.
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": client.uri("notes.md"), "languageId": "markdown", "version": 1, "text": "# x"}}),
        )
        .await;
    client.shutdown_and_exit().await;
}

#[tokio::test]
async fn without_a_workspace_folder_the_programs_workspace_is_found() {
    let (mut client, _) = TestClient::start_with_root(json!({}), None, false).await;
    client.initialized().await;
    let uri = client.open("programs/p.py", PROGRAM).await;
    client.notification("chainsmith/status", |s| s["tools"] == 54).await;
    let published = client.diagnostics(&uri, |p| p["version"] == 1).await;
    assert_eq!(codes(&published), ["unknown-tool", "missing-argument", "unknown-key"]);
    client.shutdown_and_exit().await;
}

#[tokio::test]
async fn exit_without_shutdown_is_not_clean() {
    let (mut client, _) = TestClient::start(json!({}), None).await;
    client.initialized().await;
    client.notify("exit", Value::Null).await;
    let server = client.server.take().unwrap();
    let clean = tokio::time::timeout(TIMEOUT, server).await.expect("the server stops after `exit`").unwrap();
    assert!(!clean);
}
