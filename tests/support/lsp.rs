//! The one LSP test client: every language-server test and the scale benchmark speak to the server
//! through it, with one frame codec.
//!
//! The server runs in process (`chainsmith::server::serve` over in-memory pipes, on its own tokio
//! runtime) or as the real binary over stdio (`chainsmith lsp`). Either way the client:
//!
//! - sends typed requests and notifications (`lsp_types`, re-exported by tower-lsp-server), or raw
//!   JSON and raw bytes where a test needs malformed input;
//! - answers the server's own requests at once, from a reader thread, with configurable answers
//!   (`workspace/configuration` from [`Builder::configuration`] / [`TestClient::set_configuration`],
//!   scripted answers by method from [`TestClient::answer`]; `null` otherwise — a progress token
//!   accepted, a question dismissed, an edit not applied by the client);
//! - keeps every message from the server and hands them out by typed waits: the first message that
//!   matches is taken; older messages of the same stream (the same method and, for diagnostics, the
//!   same document, for progress the same token) are passed over; other streams stay for later
//!   waits, whatever their interleaving;
//! - checks at the end ([`TestClient::shutdown`], or on drop) that the server stopped cleanly,
//!   wrote nothing but well-formed frames, and that nothing a test should have looked at was left
//!   unread: responses never awaited, `window/showMessage`, error `window/logMessage`,
//!   `workspace/applyEdit` and `window/showMessageRequest` (see [`needs_attention`]).
//!   [`TestClient::assert_no_pending`] checks the same mid-test.
//!
//! ```ignore
//! let mut client = TestClient::in_process().workspace(tempdir).start(); // or ::stdio(binary)
//! let uri = client.open("p.py", "from chainsmith.tools import tmdb\ntmdb.search_persn()\n");
//! let published = client.diagnostics(&uri, |p| p.version == Some(1));
//! let hover: Option<Hover> = client.hover(&uri, pos(1, 8)); // or client.request::<HoverRequest>(…)
//! client.answer::<ApplyWorkspaceEdit>(ApplyWorkspaceEditResponse { applied: true, .. });
//! client.execute_command("chainsmith.fix", vec![json!(uri)], Some("fix-1"))?;
//! let edit = client.await_request::<ApplyWorkspaceEdit>(|_| true).params;
//! let end = client.progress_end(Some(&token("fix-1")));
//! client.shutdown(); // clean exit, only LSP on the wire, nothing needing attention left unread
//! ```

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use tower_lsp_server::UriExt;
use tower_lsp_server::jsonrpc;
use tower_lsp_server::lsp_types::notification::{self, Notification};
use tower_lsp_server::lsp_types::request::{self, Request};
use tower_lsp_server::lsp_types::{self as lsp, Uri};

/// How long a wait for one message, a response or the server's exit may take by default.
pub const TIMEOUT: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------------
// The frame codec
// ---------------------------------------------------------------------------------------------

/// One JSON-RPC message as a Content-Length frame.
pub fn encode(message: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("a JSON value serializes");
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    frame
}

/// Splits the server's byte stream into messages, strictly: header lines end in CRLF, only
/// `Content-Length` (required) and `Content-Type` headers, a body that is a JSON-RPC 2.0 object.
/// Anything else is an error: the server's output must be nothing but LSP frames.
#[derive(Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
}

const MAX_HEADER: usize = 8 * 1024;

impl FrameDecoder {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// Bytes of an unfinished frame are waiting.
    pub fn has_partial_frame(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// The next complete message, `None` until one is complete.
    pub fn next_message(&mut self) -> Option<Result<Value, String>> {
        let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            let bare_lf =
                self.buffer.iter().enumerate().any(|(i, &b)| b == b'\n' && (i == 0 || self.buffer[i - 1] != b'\r'));
            if bare_lf {
                return Some(Err(format!("a header line not ended by CRLF: {:?}", self.show(MAX_HEADER))));
            }
            if self.buffer.len() > MAX_HEADER {
                return Some(Err(format!("a header over {MAX_HEADER} bytes: {:?}", self.show(200))));
            }
            return None;
        };
        let header = match std::str::from_utf8(&self.buffer[..end]) {
            Ok(header) => header,
            Err(_) => return Some(Err(format!("a header that is not UTF-8: {:?}", self.show(end)))),
        };
        let mut length = None;
        for line in header.split("\r\n") {
            match line.split_once(": ") {
                Some(("Content-Length", n)) => match n.parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => return Some(Err(format!("a bad Content-Length: {line:?}"))),
                },
                Some(("Content-Type", _)) => {}
                _ => return Some(Err(format!("not an LSP header line: {line:?}"))),
            }
        }
        let Some(length) = length else { return Some(Err(format!("a frame without Content-Length: {header:?}"))) };
        let start = end + 4;
        if self.buffer.len() < start + length {
            return None;
        }
        let body: Vec<u8> = self.buffer.drain(..start + length).skip(start).collect();
        let message = match serde_json::from_slice::<Value>(&body) {
            Ok(message) => message,
            Err(e) => return Some(Err(format!("a body that is not JSON ({e}): {}", String::from_utf8_lossy(&body)))),
        };
        if message["jsonrpc"] != "2.0" {
            return Some(Err(format!("not a JSON-RPC 2.0 message: {message}")));
        }
        Some(Ok(message))
    }

    fn show(&self, at_most: usize) -> String {
        String::from_utf8_lossy(&self.buffer[..self.buffer.len().min(at_most)]).into_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Messages from the server
// ---------------------------------------------------------------------------------------------

/// A message the server sent.
#[derive(Debug, Clone)]
pub enum Message {
    Notification {
        method: String,
        params: Value,
    },
    /// A request of the server's, with the answer the client sent back.
    Request {
        id: Value,
        method: String,
        params: Value,
        answer: Result<Value, jsonrpc::Error>,
    },
    /// An answer to one of the client's requests (or, with a `null` id, to an unreadable one).
    Response {
        id: Value,
        result: Result<Value, jsonrpc::Error>,
    },
}

impl Message {
    fn classify(message: Value) -> Result<Message, String> {
        let method = message.get("method").and_then(Value::as_str).map(str::to_string);
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (method, message.get("id")) {
            (Some(method), None) => Ok(Message::Notification { method, params }),
            (Some(method), Some(id)) => {
                Ok(Message::Request { id: id.clone(), method, params, answer: Ok(Value::Null) })
            }
            (None, Some(id)) => {
                let result = match (message.get("result"), message.get("error")) {
                    (Some(result), None) => Ok(result.clone()),
                    (None, Some(error)) => Err(serde_json::from_value(error.clone())
                        .map_err(|e| format!("a malformed error object ({e}): {message}"))?),
                    _ => return Err(format!("a response with neither or both of result and error: {message}")),
                };
                Ok(Message::Response { id: id.clone(), result })
            }
            (None, None) => Err(format!("neither a request, a notification nor a response: {message}")),
        }
    }

    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Notification { method, .. } | Message::Request { method, .. } => Some(method),
            Message::Response { .. } => None,
        }
    }

    pub fn params(&self) -> &Value {
        match self {
            Message::Notification { params, .. } | Message::Request { params, .. } => params,
            Message::Response { .. } => &Value::Null,
        }
    }

    /// Whether this is the notification `N` with parameters satisfying `matches`.
    pub fn is<N: Notification>(&self, matches: impl Fn(&N::Params) -> bool) -> bool {
        matches!(self, Message::Notification { method, params } if method == N::METHOD
            && serde_json::from_value::<N::Params>(params.clone()).is_ok_and(|p| matches(&p)))
    }

    /// Whether this is a server request `R`.
    pub fn is_request<R: Request>(&self) -> bool {
        matches!(self, Message::Request { method, .. } if method == R::METHOD)
    }

    /// Messages of one stream replace one another: a wait passes over older ones of its stream.
    fn stream(&self) -> String {
        match self {
            Message::Notification { method, params } if method == notification::PublishDiagnostics::METHOD => {
                format!("{method} {}", params["uri"])
            }
            Message::Notification { method, params } if method == notification::Progress::METHOD => {
                format!("{method} {}", params["token"])
            }
            Message::Notification { method, .. } | Message::Request { method, .. } => method.clone(),
            Message::Response { id, .. } => format!("response {id}"),
        }
    }

    fn summary(&self) -> String {
        let text = match self {
            Message::Notification { method, params } => format!("notification {method} {params}"),
            Message::Request { method, params, answer, .. } => {
                format!("request {method} {params} (answered {})", show_result(answer))
            }
            Message::Response { id, result } => format!("response to {id}: {}", show_result(result)),
        };
        shorten(&text, 400)
    }
}

fn show_result(result: &Result<Value, jsonrpc::Error>) -> String {
    match result {
        Ok(value) => value.to_string(),
        Err(error) => format!("error {} {}", error.code.code(), error.message),
    }
}

fn shorten(text: &str, at_most: usize) -> String {
    match text.char_indices().nth(at_most) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// What a test must have looked at before the end: answers it never awaited, messages shown to
/// the user, errors logged, edits and questions the server asked the editor for.
pub fn needs_attention(message: &Message) -> bool {
    match message {
        Message::Response { .. } => true,
        Message::Request { method, .. } => {
            method == request::ApplyWorkspaceEdit::METHOD || method == request::ShowMessageRequest::METHOD
        }
        Message::Notification { method, params } => {
            method == notification::ShowMessage::METHOD
                || (method == notification::LogMessage::METHOD && params["type"] == json!(lsp::MessageType::ERROR))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The client's side of the wire
// ---------------------------------------------------------------------------------------------

/// Answers to the server's requests.
#[derive(Default)]
struct Answers {
    /// What `workspace/configuration` answers for every item.
    configuration: Value,
    /// Scripted answers by method, each used once, in order.
    once: HashMap<String, VecDeque<Result<Value, jsonrpc::Error>>>,
    /// Answers by method for every request once the scripted ones are used up.
    always: HashMap<String, Result<Value, jsonrpc::Error>>,
}

impl Answers {
    fn answer(&mut self, method: &str, params: &Value) -> Result<Value, jsonrpc::Error> {
        if let Some(answer) = self.once.get_mut(method).and_then(VecDeque::pop_front) {
            return answer;
        }
        if let Some(answer) = self.always.get(method) {
            return answer.clone();
        }
        if method == request::WorkspaceConfiguration::METHOD {
            let items = params["items"].as_array().map_or(1, Vec::len);
            return Ok(Value::Array(vec![self.configuration.clone(); items]));
        }
        Ok(Value::Null)
    }
}

/// Where the client's bytes go: the in-process server's pipe or the binary's stdin.
#[derive(Clone)]
enum Outgoing {
    Pipe(tokio::sync::mpsc::UnboundedSender<Vec<u8>>),
    Stdin(Arc<Mutex<Option<ChildStdin>>>),
}

impl Outgoing {
    fn send(&self, bytes: &[u8]) -> bool {
        match self {
            Outgoing::Pipe(pipe) => pipe.send(bytes.to_vec()).is_ok(),
            Outgoing::Stdin(stdin) => {
                let mut stdin = stdin.lock().unwrap();
                stdin.as_mut().is_some_and(|s| s.write_all(bytes).and_then(|()| s.flush()).is_ok())
            }
        }
    }

    fn close(&self) {
        if let Outgoing::Stdin(stdin) = self {
            stdin.lock().unwrap().take();
        }
    }
}

enum Event {
    Message(Box<Message>),
    /// The server wrote something that is not an LSP frame.
    ProtocolError(String),
    /// The server's output ended.
    Closed,
}

/// The reader side: decodes the server's bytes, answers its requests at once, passes every
/// message on to the test.
struct Inbound {
    decoder: FrameDecoder,
    answers: Arc<Mutex<Answers>>,
    outgoing: Outgoing,
    events: mpsc::Sender<Event>,
}

impl Inbound {
    /// Returns false once reading should stop.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        self.decoder.push(bytes);
        while let Some(next) = self.decoder.next_message() {
            let message = match next.and_then(Message::classify) {
                Ok(message) => message,
                Err(error) => {
                    let _ = self.events.send(Event::ProtocolError(error));
                    return false;
                }
            };
            let message = match message {
                Message::Request { id, method, params, .. } => {
                    let answer = self.answers.lock().unwrap().answer(&method, &params);
                    let reply = match &answer {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    };
                    self.outgoing.send(&encode(&reply));
                    Message::Request { id, method, params, answer }
                }
                other => other,
            };
            if self.events.send(Event::Message(Box::new(message))).is_err() {
                return false;
            }
        }
        true
    }

    fn end(self) {
        if self.decoder.has_partial_frame() {
            let rest = self.decoder.show(200);
            let _ = self.events.send(Event::ProtocolError(format!("the output ended inside a frame: {rest:?}")));
        }
        let _ = self.events.send(Event::Closed);
    }
}

/// The server under test.
enum Server {
    InProcess {
        runtime: Option<tokio::runtime::Runtime>,
        /// `serve`'s result: whether `shutdown` came before the end.
        done: mpsc::Receiver<bool>,
    },
    Stdio {
        child: Child,
        stderr: Arc<Mutex<String>>,
    },
}

impl Server {
    /// Waits for the server to stop: whether it stopped cleanly (in process: `serve` saw
    /// `shutdown`; the binary: exit status 0), or a description of what went wrong.
    fn wait(&mut self, timeout: Duration) -> Result<bool, String> {
        match self {
            Server::InProcess { done, .. } => match done.recv_timeout(timeout) {
                Ok(clean) => Ok(clean),
                Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("the server did not stop within {timeout:?}")),
                Err(mpsc::RecvTimeoutError::Disconnected) => Err("the server task panicked".into()),
            },
            Server::Stdio { child, .. } => {
                let deadline = Instant::now() + timeout;
                loop {
                    if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                        return Ok(status.code() == Some(0));
                    }
                    if Instant::now() > deadline {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(format!("the server did not exit within {timeout:?}"));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    fn kill(&mut self) {
        match self {
            Server::InProcess { runtime, .. } => {
                if let Some(runtime) = runtime.take() {
                    runtime.shutdown_background();
                }
            }
            Server::Stdio { child, .. } => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// The end of the binary's stderr, for failure messages.
    fn stderr_tail(&self) -> String {
        match self {
            Server::InProcess { .. } => String::new(),
            Server::Stdio { stderr, .. } => {
                let stderr = stderr.lock().unwrap();
                if stderr.is_empty() { String::new() } else { format!("\nthe server's stderr ends with:\n{stderr}") }
            }
        }
    }
}

const STDERR_KEPT: usize = 16 * 1024;

// ---------------------------------------------------------------------------------------------
// Starting a client
// ---------------------------------------------------------------------------------------------

enum Transport {
    InProcess,
    Stdio { binary: PathBuf, env: Vec<(String, String)>, current_dir: Option<PathBuf> },
}

/// How to start a [`TestClient`].
pub struct Builder {
    transport: Transport,
    root: Option<PathBuf>,
    workspace: Option<tempfile::TempDir>,
    announce_root: bool,
    capabilities: Value,
    initialization_options: Option<Value>,
    configuration: Value,
    timeout: Duration,
}

impl Builder {
    fn new(transport: Transport) -> Builder {
        Builder {
            transport,
            root: None,
            workspace: None,
            announce_root: true,
            capabilities: json!({
                "window": {"workDoneProgress": true},
                "workspace": {"inlayHint": {"refreshSupport": true}},
            }),
            initialization_options: None,
            configuration: Value::Null,
            timeout: TIMEOUT,
        }
    }

    /// The workspace folder (and the folder relative paths of [`TestClient::path`] start from).
    pub fn root(mut self, root: &Path) -> Builder {
        self.root = Some(root.to_path_buf());
        self
    }

    /// A temporary workspace, the root, kept until the client is gone.
    pub fn workspace(mut self, workspace: tempfile::TempDir) -> Builder {
        self.root = Some(workspace.path().to_path_buf());
        self.workspace = Some(workspace);
        self
    }

    /// `initialize` names no workspace folder and no root (the root still anchors relative paths).
    pub fn no_workspace_folder(mut self) -> Builder {
        self.announce_root = false;
        self
    }

    /// The client capabilities (JSON, checked against `lsp_types::ClientCapabilities`). By default
    /// work-done progress and inlay hint refresh.
    pub fn capabilities(mut self, capabilities: Value) -> Builder {
        serde_json::from_value::<lsp::ClientCapabilities>(capabilities.clone())
            .unwrap_or_else(|e| panic!("not client capabilities ({e}): {capabilities}"));
        self.capabilities = capabilities;
        self
    }

    pub fn initialization_options(mut self, options: Value) -> Builder {
        self.initialization_options = Some(options);
        self
    }

    /// The editor trusts the workspace (the `trusted` setting of an editor with its own workspace
    /// trust), so its toolsets on this machine, such as a test's server, are called.
    pub fn trusted(mut self) -> Builder {
        let options = self.initialization_options.get_or_insert_with(|| json!({}));
        options["trusted"] = json!(true);
        self
    }

    /// What `workspace/configuration` answers (for every item); `null` by default.
    pub fn configuration(mut self, settings: Value) -> Builder {
        self.configuration = settings;
        self
    }

    /// How long each wait may take (default [`TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Builder {
        self.timeout = timeout;
        self
    }

    /// An environment variable for the binary (stdio only).
    pub fn env(mut self, key: &str, value: &str) -> Builder {
        match &mut self.transport {
            Transport::Stdio { env, .. } => env.push((key.to_string(), value.to_string())),
            Transport::InProcess => panic!("an in-process server shares the test's environment"),
        }
        self
    }

    /// The binary's working directory (stdio only; default: the root).
    pub fn current_dir(mut self, dir: &Path) -> Builder {
        match &mut self.transport {
            Transport::Stdio { current_dir, .. } => *current_dir = Some(dir.to_path_buf()),
            Transport::InProcess => panic!("an in-process server shares the test's working directory"),
        }
        self
    }

    /// Starts the server and runs `initialize` and `initialized`.
    pub fn start(self) -> TestClient {
        let answers = Arc::new(Mutex::new(Answers { configuration: self.configuration, ..Answers::default() }));
        let (events_tx, events) = mpsc::channel();
        let (outgoing, server) = match self.transport {
            Transport::InProcess => start_in_process(answers.clone(), events_tx),
            Transport::Stdio { binary, env, current_dir } => {
                let dir = current_dir.or_else(|| self.root.clone());
                start_stdio(&binary, &env, dir.as_deref(), answers.clone(), events_tx)
            }
        };
        let mut client = TestClient {
            root: self.root,
            _workspace: self.workspace,
            outgoing,
            events,
            inbox: VecDeque::new(),
            passed_over: Vec::new(),
            received: 0,
            closed: false,
            next_id: 0,
            timeout: self.timeout,
            answers,
            server,
            initialize_result: Value::Null,
            finished: false,
        };
        let root = client.root.as_ref().map(|r| uri_of(r).as_str().to_string());
        let mut params = json!({"processId": null, "capabilities": self.capabilities, "rootUri": null});
        if self.announce_root
            && let Some(root) = root
        {
            params["rootUri"] = json!(root);
            params["workspaceFolders"] = json!([{"uri": root, "name": "workspace"}]);
        }
        if let Some(options) = self.initialization_options {
            params["initializationOptions"] = options;
        }
        serde_json::from_value::<lsp::InitializeParams>(params.clone())
            .unwrap_or_else(|e| panic!("not initialize parameters ({e}): {params}"));
        let result = client.request_json(request::Initialize::METHOD, params).expect("`initialize` succeeds");
        serde_json::from_value::<lsp::InitializeResult>(result.clone())
            .unwrap_or_else(|e| panic!("`initialize` answered something else than InitializeResult ({e}): {result}"));
        client.initialize_result = result;
        client.notify::<notification::Initialized>(lsp::InitializedParams {});
        client
    }
}

fn start_in_process(answers: Arc<Mutex<Answers>>, events: mpsc::Sender<Event>) -> (Outgoing, Server) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("lsp-under-test")
        .enable_all()
        .build()
        .expect("a tokio runtime for the server");
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_end);
    let (mut client_read, mut client_write) = tokio::io::split(client_end);
    let (done_tx, done) = mpsc::channel();
    runtime.spawn(async move {
        let clean = chainsmith::server::serve(server_read, server_write).await;
        let _ = done_tx.send(clean);
    });
    let (pipe, mut to_server) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    runtime.spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Some(bytes) = to_server.recv().await {
            if client_write.write_all(&bytes).await.is_err() || client_write.flush().await.is_err() {
                break;
            }
        }
    });
    let outgoing = Outgoing::Pipe(pipe);
    let mut inbound = Inbound { decoder: FrameDecoder::default(), answers, outgoing: outgoing.clone(), events };
    runtime.spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut buffer = vec![0; 64 * 1024];
        loop {
            match client_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) if !inbound.feed(&buffer[..n]) => return,
                Ok(_) => {}
            }
        }
        inbound.end();
    });
    (outgoing, Server::InProcess { runtime: Some(runtime), done })
}

fn start_stdio(
    binary: &Path,
    env: &[(String, String)],
    dir: Option<&Path>,
    answers: Arc<Mutex<Answers>>,
    events: mpsc::Sender<Event>,
) -> (Outgoing, Server) {
    let mut command = Command::new(binary);
    command.arg("lsp").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap_or_else(|e| panic!("{} lsp does not start: {e}", binary.display()));
    let outgoing = Outgoing::Stdin(Arc::new(Mutex::new(child.stdin.take())));
    let mut stdout = child.stdout.take().unwrap();
    let mut inbound = Inbound { decoder: FrameDecoder::default(), answers, outgoing: outgoing.clone(), events };
    std::thread::spawn(move || {
        let mut buffer = vec![0; 64 * 1024];
        loop {
            match stdout.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) if !inbound.feed(&buffer[..n]) => return,
                Ok(_) => {}
            }
        }
        inbound.end();
    });
    let stderr: Arc<Mutex<String>> = Arc::default();
    let mut from_stderr = child.stderr.take().unwrap();
    let kept = stderr.clone();
    std::thread::spawn(move || {
        let mut buffer = vec![0; 8 * 1024];
        while let Ok(n) = from_stderr.read(&mut buffer) {
            if n == 0 {
                break;
            }
            let mut kept = kept.lock().unwrap();
            kept.push_str(&String::from_utf8_lossy(&buffer[..n]));
            if kept.len() > STDERR_KEPT {
                let mut cut = kept.len() - STDERR_KEPT;
                while !kept.is_char_boundary(cut) {
                    cut += 1;
                }
                kept.drain(..cut);
            }
        }
    });
    (outgoing, Server::Stdio { child, stderr })
}

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

/// A language client driving one server; see the module documentation.
pub struct TestClient {
    root: Option<PathBuf>,
    _workspace: Option<tempfile::TempDir>,
    outgoing: Outgoing,
    events: mpsc::Receiver<Event>,
    /// Messages received and not taken by a wait, oldest first.
    inbox: VecDeque<Message>,
    /// Messages a wait passed over (older ones of the stream it took from).
    passed_over: Vec<Message>,
    /// How many messages the server sent.
    received: usize,
    closed: bool,
    next_id: i64,
    timeout: Duration,
    answers: Arc<Mutex<Answers>>,
    server: Server,
    initialize_result: Value,
    finished: bool,
}

/// A request the server sent, and what the client answered.
#[derive(Debug)]
pub struct ServerRequest<P> {
    pub params: P,
    pub answer: Result<Value, jsonrpc::Error>,
}

/// How the server stopped.
#[derive(Debug)]
pub struct Exit {
    /// In process: `serve` saw `shutdown` before `exit`; the binary: exit status 0.
    pub clean: bool,
    /// How many messages the server sent in all.
    pub messages: usize,
    /// The messages no wait took (none of them needing attention), for "never sent" checks.
    pub unread: Vec<Message>,
}

impl TestClient {
    /// A server in this process (`chainsmith::server::serve` over in-memory pipes).
    pub fn in_process() -> Builder {
        Builder::new(Transport::InProcess)
    }

    /// The binary's `lsp` command over stdio.
    pub fn stdio(binary: impl Into<PathBuf>) -> Builder {
        Builder::new(Transport::Stdio { binary: binary.into(), env: Vec::new(), current_dir: None })
    }

    /// `initialize`'s result as the server sent it.
    pub fn initialize_result(&self) -> &Value {
        &self.initialize_result
    }

    pub fn root(&self) -> &Path {
        self.root.as_deref().expect("a client started with a root")
    }

    /// A path under the root (`""`: the root itself; an absolute path stays as it is).
    pub fn path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() { self.root().to_path_buf() } else { self.root().join(rel) }
    }

    /// The URI of a path under the root.
    pub fn uri(&self, rel: &str) -> Uri {
        uri_of(&self.path(rel))
    }

    /// The value with the root's URI and path replaced by `[root]`, for snapshots.
    pub fn redacted<T: Serialize>(&self, value: &T) -> Value {
        let text = serde_json::to_string(value).unwrap();
        let root = self.root();
        let uri = uri_of(root).as_str().to_string();
        let text = text.replace(&uri, "[root]").replace(&root.display().to_string(), "[root]");
        serde_json::from_str(&text).unwrap()
    }

    // --- configurable answers -----------------------------------------------------------------

    /// Answers the server's next `R` request with `result` (each scripted answer is used once).
    pub fn answer<R: Request>(&self, result: R::Result) {
        let value = serde_json::to_value(result).unwrap();
        self.answers.lock().unwrap().once.entry(R::METHOD.to_string()).or_default().push_back(Ok(value));
    }

    /// Answers every `R` request with `result` (after the scripted ones).
    pub fn answer_always<R: Request>(&self, result: R::Result) {
        let value = serde_json::to_value(result).unwrap();
        self.answers.lock().unwrap().always.insert(R::METHOD.to_string(), Ok(value));
    }

    /// Answers the server's next `R` request with an error.
    pub fn answer_error<R: Request>(&self, error: jsonrpc::Error) {
        self.answers.lock().unwrap().once.entry(R::METHOD.to_string()).or_default().push_back(Err(error));
    }

    /// What `workspace/configuration` answers from now on (for every item).
    pub fn set_configuration(&self, settings: Value) {
        self.answers.lock().unwrap().configuration = settings;
    }

    // --- sending ------------------------------------------------------------------------------

    fn send(&mut self, message: &Value) {
        self.send_bytes(&encode(message));
    }

    /// Raw bytes to the server (malformed input).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        assert!(self.outgoing.send(bytes), "the server stopped reading{}", self.server.stderr_tail());
    }

    pub fn notify<N: Notification>(&mut self, params: N::Params) {
        self.notify_json(N::METHOD, serde_json::to_value(params).unwrap());
    }

    pub fn notify_json(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request without waiting; [`TestClient::await_response`] takes its answer.
    pub fn send_request_json(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// A request and its answer, untyped (custom methods, malformed parameters).
    pub fn request_json(&mut self, method: &str, params: Value) -> Result<Value, jsonrpc::Error> {
        let id = self.send_request_json(method, params);
        self.await_response(id, method)
    }

    /// A typed request and its answer, or the error the server answered.
    pub fn try_request<R: Request>(&mut self, params: R::Params) -> Result<R::Result, jsonrpc::Error> {
        let result = self.request_json(R::METHOD, serde_json::to_value(params).unwrap())?;
        Ok(serde_json::from_value(result.clone())
            .unwrap_or_else(|e| panic!("`{}` answered something else than its result type ({e}): {result}", R::METHOD)))
    }

    /// A typed request and its result; an error answer fails the test.
    #[track_caller]
    pub fn request<R: Request>(&mut self, params: R::Params) -> R::Result {
        self.try_request::<R>(params).unwrap_or_else(|e| panic!("`{}` failed: {e:?}", R::METHOD))
    }

    /// The answer to request `id` (other messages stay for later waits).
    pub fn await_response(&mut self, id: i64, what: &str) -> Result<Value, jsonrpc::Error> {
        let id = json!(id);
        let taken = self.take(
            &format!("the response to `{what}`"),
            false,
            |m| matches!(m, Message::Response { id: answered, .. } if *answered == id),
        );
        match taken {
            Message::Response { result, .. } => result,
            _ => unreachable!(),
        }
    }

    // --- waiting ------------------------------------------------------------------------------

    /// Reads one event within `deadline`; false on timeout.
    fn receive(&mut self, deadline: Instant) -> bool {
        if self.closed {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(left) {
            Ok(Event::Message(message)) => {
                self.received += 1;
                self.inbox.push_back(*message);
                true
            }
            Ok(Event::ProtocolError(error)) => {
                self.closed = true;
                panic!("the server wrote something that is not LSP: {error}{}", self.server.stderr_tail());
            }
            Ok(Event::Closed) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.closed = true;
                true
            }
            Err(mpsc::RecvTimeoutError::Timeout) => false,
        }
    }

    /// Takes the first message that `matches`, waiting for it; with `pass_over`, older messages
    /// of its stream are passed over.
    fn take(&mut self, what: &str, pass_over: bool, matches: impl Fn(&Message) -> bool) -> Message {
        let deadline = Instant::now() + self.timeout;
        let mut looked = 0;
        loop {
            if let Some(at) = self.inbox.iter().skip(looked).position(&matches).map(|i| i + looked) {
                let message = self.inbox.remove(at).unwrap();
                if pass_over {
                    let stream = message.stream();
                    let mut kept = VecDeque::with_capacity(self.inbox.len());
                    for (i, older) in self.inbox.drain(..).enumerate() {
                        if i < at && older.stream() == stream {
                            self.passed_over.push(older);
                        } else {
                            kept.push_back(older);
                        }
                    }
                    self.inbox = kept;
                }
                return message;
            }
            looked = self.inbox.len();
            if self.closed {
                panic!("the server's output ended while waiting for {what}; unread: {}", self.unread());
            }
            if !self.receive(deadline) {
                panic!("no {what} within {:?}; unread: {}{}", self.timeout, self.unread(), self.server.stderr_tail());
            }
        }
    }

    fn unread(&self) -> String {
        if self.inbox.is_empty() {
            return "nothing".into();
        }
        let mut out = String::new();
        for message in &self.inbox {
            let _ = write!(out, "\n  {}", message.summary());
        }
        out
    }

    /// The first message satisfying `matches` (older ones of its stream are passed over).
    pub fn await_message(&mut self, what: &str, matches: impl Fn(&Message) -> bool) -> Message {
        self.take(what, true, matches)
    }

    /// The first notification `N` whose parameters satisfy `matches`.
    pub fn await_notification<N: Notification>(&mut self, matches: impl Fn(&N::Params) -> bool) -> N::Params {
        let message = self.take(&format!("`{}` notification", N::METHOD), true, |m| m.is::<N>(&matches));
        serde_json::from_value(message.params().clone()).unwrap()
    }

    /// An untyped notification (custom methods).
    pub fn await_notification_json(&mut self, method: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let message = self.take(
            &format!("`{method}` notification"),
            true,
            |m| matches!(m, Message::Notification { method: got, params } if got == method && matches(params)),
        );
        message.params().clone()
    }

    /// The first server request `R` whose parameters satisfy `matches` (it was answered already).
    pub fn await_request<R: Request>(&mut self, matches: impl Fn(&R::Params) -> bool) -> ServerRequest<R::Params> {
        let message = self.take(&format!("`{}` request", R::METHOD), true, |m| {
            m.is_request::<R>() && serde_json::from_value::<R::Params>(m.params().clone()).is_ok_and(|p| matches(&p))
        });
        match message {
            Message::Request { params, answer, .. } => {
                ServerRequest { params: serde_json::from_value(params).unwrap(), answer }
            }
            _ => unreachable!(),
        }
    }

    /// The first diagnostics published for `uri` that satisfy `matches`.
    pub fn diagnostics(
        &mut self,
        uri: &Uri,
        matches: impl Fn(&lsp::PublishDiagnosticsParams) -> bool,
    ) -> lsp::PublishDiagnosticsParams {
        let what = format!("diagnostics for {}", uri.as_str());
        let message = self.take(&what, true, |m| {
            m.is::<notification::PublishDiagnostics>(|p: &lsp::PublishDiagnosticsParams| &p.uri == uri && matches(p))
        });
        serde_json::from_value(message.params().clone()).unwrap()
    }

    /// The first work-done progress notification satisfying `matches`.
    pub fn progress(
        &mut self,
        matches: impl Fn(&lsp::ProgressToken, &lsp::WorkDoneProgress) -> bool,
    ) -> (lsp::ProgressToken, lsp::WorkDoneProgress) {
        let params = self.await_notification::<notification::Progress>(|p| match &p.value {
            lsp::ProgressParamsValue::WorkDone(progress) => matches(&p.token, progress),
        });
        let lsp::ProgressParamsValue::WorkDone(progress) = params.value;
        (params.token, progress)
    }

    /// The beginning of a progress (of `token`, or any).
    pub fn progress_begin(
        &mut self,
        token: Option<&lsp::ProgressToken>,
    ) -> (lsp::ProgressToken, lsp::WorkDoneProgressBegin) {
        let (token, progress) =
            self.progress(|t, p| token.is_none_or(|want| want == t) && matches!(p, lsp::WorkDoneProgress::Begin(_)));
        let lsp::WorkDoneProgress::Begin(begin) = progress else { unreachable!() };
        (token, begin)
    }

    /// The next report of the progress `token`.
    pub fn progress_report(&mut self, token: &lsp::ProgressToken) -> lsp::WorkDoneProgressReport {
        let (_, progress) = self.progress(|t, p| t == token && matches!(p, lsp::WorkDoneProgress::Report(_)));
        let lsp::WorkDoneProgress::Report(report) = progress else { unreachable!() };
        report
    }

    /// The end of a progress (of `token`, or any).
    pub fn progress_end(&mut self, token: Option<&lsp::ProgressToken>) -> lsp::WorkDoneProgressEnd {
        let (_, progress) =
            self.progress(|t, p| token.is_none_or(|want| want == t) && matches!(p, lsp::WorkDoneProgress::End(_)));
        let lsp::WorkDoneProgress::End(end) = progress else { unreachable!() };
        end
    }

    /// Every message received so far stays unread (a look without taking).
    pub fn unread_messages(&mut self) -> Vec<Message> {
        while self.events_pending() {}
        self.inbox.iter().cloned().collect()
    }

    /// Moves what already arrived into the inbox, without waiting; true while there was some.
    fn events_pending(&mut self) -> bool {
        !self.closed && self.receive(Instant::now())
    }

    // --- the end --------------------------------------------------------------------------------

    /// Fails the test if a message that needs attention ([`needs_attention`]) arrived and no wait
    /// took it. Then forgets the unread messages that did not need it.
    #[track_caller]
    pub fn assert_no_pending(&mut self) {
        while self.events_pending() {}
        let pending: Vec<String> = self
            .passed_over
            .iter()
            .chain(self.inbox.iter())
            .filter(|m| needs_attention(m))
            .map(Message::summary)
            .collect();
        self.passed_over.clear();
        self.inbox.clear();
        assert!(pending.is_empty(), "the server sent messages the test never looked at:\n  {}", pending.join("\n  "));
    }

    /// Lets go of the unread messages satisfying `matches` (a test's explicit "whatever").
    pub fn dismiss(&mut self, matches: impl Fn(&Message) -> bool) {
        while self.events_pending() {}
        self.inbox.retain(|m| !matches(m));
    }

    /// `shutdown` then `exit`: the server stops cleanly and promptly (the client keeps its side
    /// open), everything it sent was LSP, and nothing needing attention was left unread.
    #[track_caller]
    pub fn shutdown(mut self) -> Exit {
        let answer = self.request_json(request::Shutdown::METHOD, Value::Null);
        assert_eq!(answer, Ok(Value::Null), "`shutdown` answers null");
        self.notify::<notification::Exit>(());
        let exit = self.finish();
        assert!(exit.clean, "`exit` after `shutdown` is a clean stop{}", self.server.stderr_tail());
        exit
    }

    /// `exit` without `shutdown`: the server stops (not cleanly, the test checks that).
    #[track_caller]
    pub fn exit_without_shutdown(mut self) -> Exit {
        self.notify::<notification::Exit>(());
        self.finish()
    }

    /// Waits for the server to stop, reads what it sent up to the end, checks it.
    #[track_caller]
    fn finish(&mut self) -> Exit {
        self.finished = true;
        let stopped = self.server.wait(Duration::from_secs(5));
        let clean = stopped.unwrap_or_else(|e| panic!("{e}{}", self.server.stderr_tail()));
        self.outgoing.close();
        let deadline = Instant::now() + self.timeout;
        while !self.closed {
            assert!(self.receive(deadline), "the server's output did not end after it stopped");
        }
        let unread = self.passed_over.iter().chain(self.inbox.iter()).cloned().collect();
        self.assert_no_pending();
        self.server.kill();
        Exit { clean, messages: self.received, unread }
    }
}

impl Drop for TestClient {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if std::thread::panicking() {
            self.server.kill();
            return;
        }
        // A test that did not end the session: end it properly and check it all the same.
        self.finished = true;
        let answer = self.request_json(request::Shutdown::METHOD, Value::Null);
        assert_eq!(answer, Ok(Value::Null), "`shutdown` answers null");
        self.notify::<notification::Exit>(());
        let exit = self.finish();
        assert!(exit.clean, "`exit` after `shutdown` is a clean stop");
    }
}

// ---------------------------------------------------------------------------------------------
// Parameters tests build often
// ---------------------------------------------------------------------------------------------

pub fn uri_of(path: &Path) -> Uri {
    Uri::from_file_path(path).unwrap_or_else(|| panic!("no file URI for {}", path.display()))
}

pub fn pos(line: u32, character: u32) -> lsp::Position {
    lsp::Position { line, character }
}

/// Where `needle` first starts in `text` (ASCII positions).
pub fn position_of(text: &str, needle: &str) -> lsp::Position {
    let at = text.find(needle).unwrap_or_else(|| panic!("no {needle:?}"));
    let line = text[..at].matches('\n').count();
    let character = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
    pos(line as u32, character as u32)
}

/// The byte offset of an ASCII-positioned LSP position.
pub fn offset_of(text: &str, position: lsp::Position) -> usize {
    let start: usize = text.split_inclusive('\n').take(position.line as usize).map(str::len).sum();
    start + position.character as usize
}

/// `text` with the (ASCII-positioned) LSP text edits applied, as a client would.
pub fn apply_edits(text: &str, edits: &[lsp::TextEdit]) -> String {
    let mut ranged: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| (offset_of(text, e.range.start), offset_of(text, e.range.end), e.new_text.as_str()))
        .collect();
    ranged.sort_by_key(|(start, _, _)| std::cmp::Reverse(*start));
    let mut out = text.to_string();
    for (start, end, new) in ranged {
        out.replace_range(start..end, new);
    }
    out
}

pub fn range(start: lsp::Position, end: lsp::Position) -> lsp::Range {
    lsp::Range { start, end }
}

pub fn at(uri: &Uri, position: lsp::Position) -> lsp::TextDocumentPositionParams {
    lsp::TextDocumentPositionParams { text_document: document(uri), position }
}

pub fn document(uri: &Uri) -> lsp::TextDocumentIdentifier {
    lsp::TextDocumentIdentifier { uri: uri.clone() }
}

pub fn token(name: &str) -> lsp::ProgressToken {
    lsp::ProgressToken::String(name.to_string())
}

/// A ranged edit for `didChange`.
pub fn edit(range: lsp::Range, text: &str) -> lsp::TextDocumentContentChangeEvent {
    lsp::TextDocumentContentChangeEvent { range: Some(range), range_length: None, text: text.to_string() }
}

/// A whole-document replacement for `didChange`.
pub fn full_text(text: &str) -> lsp::TextDocumentContentChangeEvent {
    lsp::TextDocumentContentChangeEvent { range: None, range_length: None, text: text.to_string() }
}

/// The request/notification helpers the tests share.
impl TestClient {
    /// Writes `text` to the file under the root and opens it as Python, version 1.
    pub fn open(&mut self, rel: &str, text: &str) -> Uri {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        let uri = uri_of(&path);
        self.open_document(&uri, "python", 1, text);
        uri
    }

    pub fn open_document(&mut self, uri: &Uri, language_id: &str, version: i32, text: &str) {
        self.notify::<notification::DidOpenTextDocument>(lsp::DidOpenTextDocumentParams {
            text_document: lsp::TextDocumentItem {
                uri: uri.clone(),
                language_id: language_id.to_string(),
                version,
                text: text.to_string(),
            },
        });
    }

    pub fn change(&mut self, uri: &Uri, version: i32, changes: Vec<lsp::TextDocumentContentChangeEvent>) {
        self.notify::<notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
            text_document: lsp::VersionedTextDocumentIdentifier { uri: uri.clone(), version },
            content_changes: changes,
        });
    }

    pub fn save(&mut self, uri: &Uri) {
        self.notify::<notification::DidSaveTextDocument>(lsp::DidSaveTextDocumentParams {
            text_document: document(uri),
            text: None,
        });
    }

    pub fn close(&mut self, uri: &Uri) {
        self.notify::<notification::DidCloseTextDocument>(lsp::DidCloseTextDocumentParams {
            text_document: document(uri),
        });
    }

    pub fn watched_files_changed(&mut self, changes: &[(Uri, lsp::FileChangeType)]) {
        let changes = changes.iter().map(|(uri, typ)| lsp::FileEvent { uri: uri.clone(), typ: *typ }).collect();
        self.notify::<notification::DidChangeWatchedFiles>(lsp::DidChangeWatchedFilesParams { changes });
    }

    pub fn hover(&mut self, uri: &Uri, position: lsp::Position) -> Option<lsp::Hover> {
        self.request::<request::HoverRequest>(lsp::HoverParams {
            text_document_position_params: at(uri, position),
            work_done_progress_params: Default::default(),
        })
    }

    /// Completion items at a position (an empty list for a `null` answer).
    pub fn completion(&mut self, uri: &Uri, position: lsp::Position) -> Option<lsp::CompletionResponse> {
        self.request::<request::Completion>(lsp::CompletionParams {
            text_document_position: at(uri, position),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
            context: None,
        })
    }

    /// The items of a completion list (the test fails on `null` or a bare array).
    #[track_caller]
    pub fn completion_items(&mut self, uri: &Uri, position: lsp::Position) -> Vec<lsp::CompletionItem> {
        match self.completion(uri, position) {
            Some(lsp::CompletionResponse::List(list)) => list.items,
            other => panic!("not a completion list at {position:?}: {other:?}"),
        }
    }

    pub fn signature_help(&mut self, uri: &Uri, position: lsp::Position) -> Option<lsp::SignatureHelp> {
        self.request::<request::SignatureHelpRequest>(lsp::SignatureHelpParams {
            context: None,
            text_document_position_params: at(uri, position),
            work_done_progress_params: Default::default(),
        })
    }

    pub fn definition(&mut self, uri: &Uri, position: lsp::Position) -> Option<lsp::GotoDefinitionResponse> {
        self.request::<request::GotoDefinition>(lsp::GotoDefinitionParams {
            text_document_position_params: at(uri, position),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        })
    }

    pub fn document_symbols(&mut self, uri: &Uri) -> Option<lsp::DocumentSymbolResponse> {
        self.request::<request::DocumentSymbolRequest>(lsp::DocumentSymbolParams {
            text_document: document(uri),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        })
    }

    pub fn workspace_symbols(&mut self, query: &str) -> Option<lsp::WorkspaceSymbolResponse> {
        self.request::<request::WorkspaceSymbolRequest>(lsp::WorkspaceSymbolParams {
            query: query.to_string(),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        })
    }

    /// The code actions for a range (with the given diagnostics as context).
    pub fn code_actions(
        &mut self,
        uri: &Uri,
        range: lsp::Range,
        diagnostics: Vec<lsp::Diagnostic>,
    ) -> Vec<lsp::CodeActionOrCommand> {
        self.request::<request::CodeActionRequest>(lsp::CodeActionParams {
            text_document: document(uri),
            range,
            context: lsp::CodeActionContext { diagnostics, only: None, trigger_kind: None },
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        })
        .unwrap_or_default()
    }

    pub fn code_lenses(&mut self, uri: &Uri) -> Option<Vec<lsp::CodeLens>> {
        self.request::<request::CodeLensRequest>(lsp::CodeLensParams {
            text_document: document(uri),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        })
    }

    /// `workspace/executeCommand`, with a work-done token when given.
    pub fn execute_command(
        &mut self,
        command: &str,
        arguments: Vec<Value>,
        token: Option<&str>,
    ) -> Result<Option<Value>, jsonrpc::Error> {
        self.try_request::<request::ExecuteCommand>(lsp::ExecuteCommandParams {
            command: command.to_string(),
            arguments,
            work_done_progress_params: lsp::WorkDoneProgressParams { work_done_token: token.map(self::token) },
        })
    }

    pub fn inlay_hints(&mut self, uri: &Uri, range: lsp::Range) -> Option<Vec<lsp::InlayHint>> {
        self.request::<request::InlayHintRequest>(lsp::InlayHintParams {
            text_document: document(uri),
            range,
            work_done_progress_params: Default::default(),
        })
    }

    /// The inlay hints of the first 100 lines as (line, label).
    #[track_caller]
    pub fn hints(&mut self, uri: &Uri) -> Vec<(u32, String)> {
        let hints = self.inlay_hints(uri, range(pos(0, 0), pos(100, 0))).expect("inlay hints for an open program");
        hints
            .into_iter()
            .map(|h| {
                let label = match h.label {
                    lsp::InlayHintLabel::String(label) => label,
                    lsp::InlayHintLabel::LabelParts(parts) => parts.into_iter().map(|p| p.value).collect(),
                };
                (h.position.line, label)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<Result<Value, String>> {
        let mut decoder = FrameDecoder::default();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            while let Some(next) = decoder.next_message() {
                let failed = next.is_err();
                out.push(next);
                if failed {
                    return out;
                }
            }
        }
        assert!(!decoder.has_partial_frame(), "bytes left over");
        out
    }

    #[test]
    fn frames_split_anywhere_are_joined_and_several_in_one_chunk_are_split() {
        let one = encode(&json!({"jsonrpc": "2.0", "method": "a", "params": {"x": "é"}}));
        let two = encode(&json!({"jsonrpc": "2.0", "id": 1, "result": null}));
        let both = [one.clone(), two.clone()].concat();
        for cut in 0..both.len() {
            let decoded = decode_all(&[&both[..cut], &both[cut..]]);
            assert_eq!(decoded.len(), 2, "cut at {cut}");
            assert_eq!(decoded[0].as_ref().unwrap()["params"]["x"], "é");
            assert_eq!(decoded[1].as_ref().unwrap()["id"], 1);
        }
        let with_type = b"Content-Length: 37\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":[]}\n";
        assert_eq!(decode_all(&[with_type])[0].as_ref().unwrap()["id"], 2);
    }

    #[test]
    fn anything_but_a_strict_frame_is_an_error() {
        let cases: [(&[u8], &str); 6] = [
            (b"Content-Length: 2\n\n{}", "not ended by CRLF"),
            (b"2026-01-01 INFO started\n", "not ended by CRLF"),
            (b"X-Other: 1\r\n\r\n", "not an LSP header line"),
            (b"Content-Type: x\r\n\r\n{}", "without Content-Length"),
            (b"Content-Length: 5\r\n\r\n{oops", "not JSON"),
            (b"Content-Length: 2\r\n\r\n[]", "not a JSON-RPC 2.0 message"),
        ];
        for (bytes, error) in cases {
            let decoded = decode_all(&[bytes]);
            let Some(Err(message)) = decoded.last() else { panic!("{bytes:?} decoded: {decoded:?}") };
            assert!(message.contains(error), "{bytes:?}: {message}");
        }
    }

    #[test]
    fn messages_are_told_apart_and_attention_is_needed_where_a_test_must_look() {
        let classify = |v: Value| Message::classify(v).unwrap();
        let note =
            classify(json!({"jsonrpc": "2.0", "method": "window/showMessage", "params": {"type": 3, "message": "m"}}));
        assert!(matches!(note, Message::Notification { .. }) && needs_attention(&note));
        let log =
            classify(json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 4, "message": "m"}}));
        assert!(!needs_attention(&log));
        let error =
            classify(json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 1, "message": "m"}}));
        assert!(needs_attention(&error));
        let edit =
            classify(json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/applyEdit", "params": {"edit": {}}}));
        assert!(matches!(edit, Message::Request { .. }) && needs_attention(&edit));
        let refresh = classify(json!({"jsonrpc": "2.0", "id": 4, "method": "workspace/inlayHint/refresh"}));
        assert!(!needs_attention(&refresh));
        let failed = classify(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse"}}));
        assert!(matches!(&failed, Message::Response { result: Err(e), .. } if e.code.code() == -32700));
        assert!(Message::classify(json!({"jsonrpc": "2.0", "id": 1})).is_err());
        // Diagnostics of one document, and progress of one token, are streams of their own.
        let a = classify(
            json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": "file:///a.py", "diagnostics": []}}),
        );
        let b = classify(
            json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": "file:///b.py", "diagnostics": []}}),
        );
        assert_ne!(a.stream(), b.stream());
    }

    #[test]
    fn configured_answers_are_used_once_in_order_then_the_standing_one_then_null() {
        let mut answers = Answers { configuration: json!({"k": 1}), ..Answers::default() };
        let items = json!({"items": [{"section": "chainsmith"}, {"section": "chainsmith"}]});
        assert_eq!(answers.answer("workspace/configuration", &items), Ok(json!([{"k": 1}, {"k": 1}])));
        assert_eq!(answers.answer("workspace/applyEdit", &Value::Null), Ok(Value::Null));
        answers.once.entry("workspace/applyEdit".into()).or_default().push_back(Ok(json!({"applied": true})));
        answers.always.insert("workspace/applyEdit".into(), Ok(json!({"applied": false})));
        assert_eq!(answers.answer("workspace/applyEdit", &Value::Null), Ok(json!({"applied": true})));
        assert_eq!(answers.answer("workspace/applyEdit", &Value::Null), Ok(json!({"applied": false})));
    }
}
