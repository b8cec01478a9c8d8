//! A blocking MCP client: JSON-RPC 2.0 over stdio (one JSON message per line) to a server it
//! starts, or over Streamable HTTP to a remote server (`mcp = { url = … }`).
//!
//! [`McpClient::start`] spawns the server in its own process group (the whole group is killed when
//! the client is dropped, so no server or helper it started outlives chainsmith's use of it), with
//! a minimal environment plus the entry's `env` ([`crate::trust::confine`]),
//! performs the `initialize` handshake and sends `notifications/initialized`. Three threads serve
//! one session:
//! - a writer, so a server that stops reading can never block a caller (requests time out instead);
//! - a reader, which dispatches responses to waiting callers by id, answers the server's own requests
//!   (`roots/list` with the workspace root, `ping`, anything else "method not found") and counts
//!   `notifications/tools/list_changed`;
//! - a stderr reader, which keeps the last lines for error messages (and the debug log): the
//!   server's stderr never reaches chainsmith's stdout.
//!
//! Every request has a timeout; a server that exits, closes its output or never answers yields a
//! clear [`McpError`] naming the server and the request, with the tail of its stderr. Lines on the
//! server's stdout that are not JSON-RPC are tolerated (as the reference SDKs do) but kept, and
//! quoted in errors, since they usually explain why nothing sensible came back. JSON nested past
//! the parser's 128 levels is the exception: it may be the answer a caller waits for, so every
//! waiting call fails at once instead of waiting out its timeout.
//!
//! This file holds what both transports share: the client's API, the JSON-RPC bookkeeping (ids,
//! waiting callers, the server's own requests, what it said besides JSON-RPC) and the handshake.
//! The transports are files of their own: [`stdio`] starts the server process, serves its pipes
//! and ends its process group; [`http`] speaks Streamable HTTP (POSTs, event streams, the GET
//! stream) to a remote one.

mod http;
mod stdio;

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::McpConfig;
use http::Remote;

/// The protocol version chainsmith asks for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Versions chainsmith accepts from a server's `initialize` answer.
pub const KNOWN_PROTOCOL_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// How many lines of the server's stderr are kept for error messages.
const STDERR_LINES: usize = 12;
/// How many stdout lines that are not JSON-RPC are kept for error messages.
const NOISE_LINES: usize = 4;
/// One kept line is cut at this many characters.
const KEPT_LINE_CHARS: usize = 400;
/// A single message larger than this ends the session (the stream cannot be trusted after it).
const MAX_MESSAGE_BYTES: u64 = 64 << 20;
/// `tools/list` pages followed at most.
const MAX_PAGES: usize = 1000;
/// The longest one exchange with a remote server may last (a POST and its event stream): past it
/// the exchange is dropped, so a stalled server holds no thread for ever.
const LONGEST_EXCHANGE: Duration = Duration::from_secs(15 * 60);
/// The code of a reply chainsmith makes up when a remote request failed on the way (no JSON-RPC
/// code is this low): the caller reports the transport, not the server, as failing.
const TRANSPORT_FAILURE: i64 = i64::MIN;

/// What went wrong, for callers that react differently (the runtime reports an `Rpc` error of
/// `tools/call` as a tool error, the rest as a transport failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpErrorKind {
    /// The command could not be started.
    Spawn,
    /// The server did not answer in time.
    Timeout,
    /// The server exited or closed its output.
    Closed,
    /// The server answered with a JSON-RPC error.
    Rpc { code: i64 },
    /// The server answered something chainsmith cannot use.
    Protocol,
}

/// An MCP failure with a message meant for the user (server, request, and the server's stderr).
#[derive(Debug, Clone)]
pub struct McpError {
    pub kind: McpErrorKind,
    /// The server's name as chainsmith knows it (the toolset's name).
    pub server: String,
    pub message: String,
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for McpError {}

/// The outcome of `tools/call`, decoded for a program.
#[derive(Debug, Clone, PartialEq)]
pub struct McpCallResult {
    /// `structuredContent` when the server gave it; else the text content decoded as JSON when it
    /// is JSON; else the text (several text items joined by newlines); without any text, the
    /// content items themselves; `null` for an empty result.
    pub value: Value,
    /// The server flagged the result as a tool error (`isError`).
    pub is_error: bool,
    /// The text content items joined by newlines, when there were any.
    pub text: Option<String>,
    /// The result exactly as the server sent it.
    pub raw: Value,
}

impl McpCallResult {
    /// Decodes a `tools/call` result.
    pub fn from_result(raw: Value) -> McpCallResult {
        let is_error = raw.get("isError").and_then(Value::as_bool).unwrap_or(false);
        let content: &[Value] = raw.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        let texts: Vec<&str> = content
            .iter()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect();
        let text = (!texts.is_empty()).then(|| texts.join("\n"));
        let value = match raw.get("structuredContent") {
            Some(structured) if !structured.is_null() => structured.clone(),
            _ => match texts.as_slice() {
                [] if content.is_empty() => Value::Null,
                [] => match content {
                    [single] => single.clone(),
                    many => Value::Array(many.to_vec()),
                },
                [single] => decode_text(single),
                many => {
                    let decoded: Vec<Option<Value>> = many.iter().map(|t| json_text(t)).collect();
                    if decoded.iter().all(Option::is_some) {
                        Value::Array(decoded.into_iter().flatten().collect())
                    } else {
                        decode_text(text.as_deref().unwrap_or_default())
                    }
                }
            },
        };
        McpCallResult { value, is_error, text, raw }
    }
}

/// Text that is a JSON document (object, array, number, …) as that JSON, else the text itself.
fn decode_text(text: &str) -> Value {
    json_text(text).unwrap_or_else(|| Value::String(text.to_string()))
}

fn json_text(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    serde_json::from_str(trimmed).ok()
}

type Reply = Result<Value, RpcError>;

#[derive(Debug, Clone)]
struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

/// Request bookkeeping; one lock so that "the session has ended" and "a caller waits" never race.
#[derive(Default)]
struct State {
    pending: HashMap<u64, Sender<Reply>>,
    /// Why the session ended (set once by the reader).
    closed: Option<String>,
}

/// What the client's threads share.
struct Shared {
    server: String,
    state: Mutex<State>,
    /// Messages for the writer thread; `None` once the client closed the server's stdin.
    outbox: Mutex<Option<Sender<Vec<u8>>>>,
    stderr: Mutex<VecDeque<String>>,
    stderr_done: AtomicBool,
    noise: Mutex<VecDeque<String>>,
    noise_count: AtomicU64,
    list_changed: AtomicU64,
    /// The `roots/list` answer.
    roots: Value,
    /// The endpoint of a remote server (`None` for a server on stdio).
    remote: Option<Remote>,
}

/// Locks a mutex, ignoring poisoning (every critical section leaves the data consistent).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// The state of a new client of server `name`, whose writer takes messages from `outbox`:
    /// a stdio server has a stderr still to read, a remote one (`remote`) none.
    fn new(name: &str, outbox: Sender<Vec<u8>>, root: &Path, remote: Option<Remote>) -> Shared {
        Shared {
            server: name.to_string(),
            state: Mutex::new(State::default()),
            outbox: Mutex::new(Some(outbox)),
            stderr: Mutex::new(VecDeque::new()),
            stderr_done: AtomicBool::new(remote.is_some()),
            noise: Mutex::new(VecDeque::new()),
            noise_count: AtomicU64::new(0),
            list_changed: AtomicU64::new(0),
            roots: json!({"roots": [root_entry(root)]}),
            remote,
        }
    }

    fn send(&self, message: &Value) -> bool {
        let mut bytes = serde_json::to_vec(message).expect("a JSON value serializes");
        bytes.push(b'\n');
        match lock(&self.outbox).as_ref() {
            Some(outbox) => outbox.send(bytes).is_ok(),
            None => false,
        }
    }

    fn keep(deque: &Mutex<VecDeque<String>>, line: &str, max: usize) {
        let mut line: String = line.trim_end().to_string();
        if line.chars().count() > KEPT_LINE_CHARS {
            line = line.chars().take(KEPT_LINE_CHARS).collect::<String>() + "…";
        }
        let mut deque = lock(deque);
        if deque.len() == max {
            deque.pop_front();
        }
        deque.push_back(line);
    }

    /// The reader's handling of one line of the server's stdout.
    fn dispatch_line(&self, line: &[u8]) {
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            return;
        }
        match serde_json::from_slice::<Value>(trimmed) {
            Ok(Value::Array(batch)) => {
                for message in batch {
                    self.dispatch(message, trimmed);
                }
            }
            Ok(message) => self.dispatch(message, trimmed),
            // JSON nested past what the parser follows is no noise to tolerate: it may be the
            // answer a caller waits for, which would then wait out its whole timeout.
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
                self.noise(trimmed);
                self.fail_pending("it sent a message nested deeper than chainsmith reads (128 levels)");
            }
            Err(_) => self.noise(trimmed),
        }
    }

    /// Answers every waiting caller with a transport failure (`why`); the session goes on.
    fn fail_pending(&self, why: &str) {
        let waiting: Vec<Sender<Reply>> = lock(&self.state).pending.drain().map(|(_, waiting)| waiting).collect();
        for waiting in waiting {
            let _ = waiting.send(Err(RpcError { code: TRANSPORT_FAILURE, message: why.to_string(), data: None }));
        }
    }

    fn noise(&self, line: &[u8]) {
        self.noise_count.fetch_add(1, Ordering::Relaxed);
        Self::keep(&self.noise, &String::from_utf8_lossy(line), NOISE_LINES);
        tracing::debug!(server = %self.server, "not JSON-RPC on stdout: {}", String::from_utf8_lossy(line));
    }

    fn dispatch(&self, message: Value, line: &[u8]) {
        let Value::Object(map) = &message else { return self.noise(line) };
        let id = map.get("id").filter(|id| !id.is_null());
        match (map.get("method").and_then(Value::as_str), id) {
            (Some(method), Some(id)) => self.answer(method, id.clone()),
            (Some(method), None) => self.notification(method, map.get("params")),
            (None, Some(id)) if map.contains_key("result") || map.contains_key("error") => {
                let Some(id) = id.as_u64().or_else(|| id.as_str().and_then(|s| s.parse().ok())) else {
                    return self.noise(line);
                };
                let reply = match map.get("error") {
                    Some(error) => Err(RpcError {
                        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: error.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_string(),
                        data: error.get("data").cloned(),
                    }),
                    None => Ok(map.get("result").cloned().unwrap_or(Value::Null)),
                };
                // A caller that gave up (timeout) is gone: its late answer is dropped.
                if let Some(waiting) = lock(&self.state).pending.remove(&id) {
                    let _ = waiting.send(reply);
                }
            }
            _ => self.noise(line),
        }
    }

    /// Answers a request the server sent to the client.
    fn answer(&self, method: &str, id: Value) {
        let response = match method {
            "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": self.roots}),
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            other => json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32601, "message": format!("Method not found: {other} (chainsmith does not offer it)")}
            }),
        };
        self.send(&response);
    }

    fn notification(&self, method: &str, params: Option<&Value>) {
        match method {
            "notifications/tools/list_changed" => {
                self.list_changed.fetch_add(1, Ordering::SeqCst);
            }
            "notifications/message" => {
                tracing::debug!(server = %self.server, "log: {}", params.map(|p| p.to_string()).unwrap_or_default());
            }
            _ => {}
        }
    }

    /// Ends the session: every waiting caller is woken (its channel closes) and no new one waits.
    fn close(&self, reason: String) {
        let mut state = lock(&self.state);
        if state.closed.is_none() {
            state.closed = Some(reason);
        }
        state.pending.clear();
    }

    fn stderr_tail(&self) -> Vec<String> {
        lock(&self.stderr).iter().cloned().collect()
    }

    /// What the server said besides JSON-RPC, for error messages (empty when it said nothing).
    fn details(&self) -> String {
        let mut out = String::new();
        let noise = lock(&self.noise).clone();
        if !noise.is_empty() {
            let count = self.noise_count.load(Ordering::Relaxed);
            out.push_str(&format!("\n  it wrote {count} line(s) to stdout that are not JSON-RPC, last:"));
            for line in noise {
                out.push_str("\n    ");
                out.push_str(&line);
            }
        }
        let tail = self.stderr_tail();
        if !tail.is_empty() {
            out.push_str("\n  its stderr ended with:");
            for line in tail {
                out.push_str("\n    ");
                out.push_str(&line);
            }
        }
        out
    }
}

/// A running MCP server session. Dropping it shuts the server down (its whole process group).
pub struct McpClient {
    shared: Arc<Shared>,
    /// The server process (`None` for a remote server).
    child: Option<Mutex<Child>>,
    /// Its process (and group) id; 0 for a remote server.
    pid: u32,
    next_id: AtomicU64,
    /// `list_changed` count when the last `tools()` started.
    listed_at: AtomicU64,
    /// Timeout of the handshake and of `tools/list`.
    timeout: Duration,
    protocol_version: String,
    server_info: Value,
    capabilities: Value,
    instructions: Option<String>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.shared.server)
            .field("pid", &self.pid)
            .field("protocol_version", &self.protocol_version)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts the server of `config` in `root` (its working directory, and the root it is offered
    /// through `roots/list`) and performs the handshake, naming it after its command in messages.
    pub fn start(config: &McpConfig, root: &Path) -> anyhow::Result<McpClient> {
        let label = Path::new(&config.command)
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| !n.is_empty())
            .unwrap_or(&config.command)
            .to_string();
        Self::start_named(&label, config, root)
    }

    /// [`McpClient::start`], the server called `name` in messages (the toolset's name).
    pub fn start_named(name: &str, config: &McpConfig, root: &Path) -> anyhow::Result<McpClient> {
        if let Some(url) = &config.url {
            return Self::connect(name, url, config, root);
        }
        Self::spawn(name, config, root)
    }

    fn handshake(mut self) -> anyhow::Result<McpClient> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"roots": {"listChanged": false}},
            "clientInfo": {"name": "chainsmith", "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = self.request("initialize", Some(params), self.timeout)?;
        let version = answer.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        if !KNOWN_PROTOCOL_VERSIONS.contains(&version) {
            return Err(self
                .error(
                    McpErrorKind::Protocol,
                    format!(
                        "speaks MCP protocol version `{version}`, which chainsmith does not know (it knows {})",
                        KNOWN_PROTOCOL_VERSIONS.join(", ")
                    ),
                )
                .into());
        }
        self.protocol_version = version.to_string();
        if let Some(remote) = &self.shared.remote {
            *lock(&remote.protocol_version) = Some(version.to_string());
        }
        self.server_info = answer.get("serverInfo").cloned().unwrap_or(Value::Null);
        self.capabilities = answer.get("capabilities").cloned().unwrap_or(Value::Null);
        self.instructions = answer.get("instructions").and_then(Value::as_str).map(str::to_string);
        self.notify("notifications/initialized", None)?;
        Ok(self)
    }

    /// The name used in messages.
    pub fn name(&self) -> &str {
        &self.shared.server
    }

    /// The server process id (also its process group id); 0 for a remote server.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The protocol version the server agreed to.
    pub fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    /// The server's `serverInfo` (`{name, version, …}`).
    pub fn server_info(&self) -> &Value {
        &self.server_info
    }

    /// The server's declared capabilities.
    pub fn capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// The server's `instructions`, when it gave any.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.shared.stderr_tail()
    }

    /// Whether the session still stands (the server has not closed its output).
    pub fn is_alive(&self) -> bool {
        lock(&self.shared.state).closed.is_none()
    }

    /// How many `notifications/tools/list_changed` the server has sent.
    pub fn list_changed_count(&self) -> u64 {
        self.shared.list_changed.load(Ordering::SeqCst)
    }

    /// Whether the server announced a change of its tools since the last [`McpClient::tools`]
    /// started: the caller should list again.
    pub fn tools_changed(&self) -> bool {
        self.list_changed_count() > self.listed_at.load(Ordering::SeqCst)
    }

    /// Every tool the server offers (`tools/list`, following `nextCursor`), as the server
    /// describes them.
    pub fn tools(&self) -> anyhow::Result<Vec<Value>> {
        self.listed_at.store(self.list_changed_count(), Ordering::SeqCst);
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let page = self.request("tools/list", params, self.timeout)?;
            let Some(listed) = page.get("tools").and_then(Value::as_array) else {
                return Err(self.error(McpErrorKind::Protocol, "answered tools/list without a `tools` array").into());
            };
            tools.extend(listed.iter().cloned());
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => {
                    if !seen.insert(next.to_string()) {
                        return Err(self
                            .error(McpErrorKind::Protocol, format!("repeats the tools/list cursor `{next}`"))
                            .into());
                    }
                    cursor = Some(next.to_string());
                }
                _ => return Ok(tools),
            }
        }
        Err(self.error(McpErrorKind::Protocol, format!("lists tools on more than {MAX_PAGES} pages")).into())
    }

    /// Calls a tool by its original (server) name with a JSON object of arguments. A tool that
    /// fails reports `is_error`; a server that answers the request with a JSON-RPC error (unknown
    /// tool, invalid arguments), does not answer within `timeout` or goes away is an `Err`.
    pub fn call(&self, name: &str, arguments: Value, timeout: Duration) -> anyhow::Result<McpCallResult> {
        let arguments = if arguments.is_null() { json!({}) } else { arguments };
        let result = self.request("tools/call", Some(json!({"name": name, "arguments": arguments})), timeout)?;
        if !result.is_object() {
            return Err(self
                .error(
                    McpErrorKind::Protocol,
                    format!("answered tools/call of `{name}` with {result} instead of an object"),
                )
                .into());
        }
        Ok(McpCallResult::from_result(result))
    }

    /// Sends one request and waits for its answer.
    pub fn request(&self, method: &str, params: Option<Value>, timeout: Duration) -> Result<Value, McpError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        {
            let mut state = lock(&self.shared.state);
            if state.closed.is_some() {
                drop(state);
                return Err(self.closed_error(method));
            }
            state.pending.insert(id, tx);
        }
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        if !self.shared.send(&message) {
            lock(&self.shared.state).pending.remove(&id);
            return Err(self.closed_error(method));
        }
        match rx.recv_timeout(timeout) {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) if e.code == TRANSPORT_FAILURE => Err(McpError {
                kind: McpErrorKind::Closed,
                server: self.shared.server.clone(),
                message: format!("MCP server `{}` could not answer {method}: {}", self.shared.server, e.message),
            }),
            Ok(Err(e)) => {
                let data = e.data.map(|d| format!(" ({d})")).unwrap_or_default();
                Err(McpError {
                    kind: McpErrorKind::Rpc { code: e.code },
                    server: self.shared.server.clone(),
                    message: format!(
                        "MCP server `{}` answered {method} with error {}: {}{data}",
                        self.shared.server, e.code, e.message
                    ),
                })
            }
            Err(RecvTimeoutError::Timeout) => {
                lock(&self.shared.state).pending.remove(&id);
                let cancel = json!({"requestId": id, "reason": format!("no answer within {}", human(timeout))});
                let _ = self.notify("notifications/cancelled", Some(cancel));
                Err(McpError {
                    kind: McpErrorKind::Timeout,
                    server: self.shared.server.clone(),
                    message: format!(
                        "MCP server `{}` did not answer {method} within {}{}",
                        self.shared.server,
                        human(timeout),
                        self.shared.details()
                    ),
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.closed_error(method)),
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        if self.shared.send(&message) { Ok(()) } else { Err(self.closed_error(method)) }
    }

    fn error(&self, kind: McpErrorKind, what: impl fmt::Display) -> McpError {
        McpError {
            kind,
            server: self.shared.server.clone(),
            message: format!("MCP server `{}` {what}{}", self.shared.server, self.shared.details()),
        }
    }

    /// The error for a request that cannot be answered because the session ended: how the server
    /// ended (exit status when it exited) and the tail of its stderr.
    fn closed_error(&self, method: &str) -> McpError {
        // The output closes as the process exits: give it a moment to be reaped and to flush stderr.
        let deadline = Instant::now() + Duration::from_millis(1000);
        let mut status = None;
        while Instant::now() < deadline {
            let Some(child) = &self.child else { break };
            if status.is_none() {
                status = lock(child).try_wait().ok().flatten();
            }
            if status.is_some() && self.shared.stderr_done.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let how = match status {
            Some(status) => match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => format!("was ended ({status})"),
            },
            None => lock(&self.shared.state).closed.clone().unwrap_or_else(|| "closed its input".into()),
        };
        self.error(McpErrorKind::Closed, format!("{how} before answering {method}"))
    }

    /// Ends the session: closes the server's stdin (or ends the remote session), then ends the
    /// server's process group, if it has one.
    fn shut_down(&mut self) {
        lock(&self.shared.outbox).take();
        if let Some(remote) = &self.shared.remote {
            remote.end_session();
        }
        self.end_process();
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn spawn_thread(name: String, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name).spawn(f).map(drop)
}

/// The workspace root as an MCP root: an absolute `file://` URI and the folder's name.
fn root_entry(root: &Path) -> Value {
    let absolute: PathBuf =
        root.canonicalize().or_else(|_| std::path::absolute(root)).unwrap_or_else(|_| root.to_path_buf());
    let name = absolute.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "workspace".into());
    json!({"uri": file_uri(&absolute), "name": name})
}

/// `file://` + the absolute path, percent-encoded outside the characters a URI path allows.
pub fn file_uri(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let slash = if text.starts_with('/') { "" } else { "/" };
    format!("file://{slash}{}", percent_encoding::utf8_percent_encode(&text, PATH))
}

/// What a `file:` URI's path keeps as it is: unreserved characters, sub-delimiters, `/`, `:`, `@`.
const PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=')
    .remove(b':')
    .remove(b'@');

/// `30 s`, `1.5 s`, `250 ms`.
fn human(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_content_wins() {
        let r = McpCallResult::from_result(json!({
            "content": [{"type": "text", "text": "{\"a\": 1}"}],
            "structuredContent": {"a": 2},
        }));
        assert_eq!(r.value, json!({"a": 2}));
        assert!(!r.is_error);
        assert_eq!(r.text.as_deref(), Some("{\"a\": 1}"));
    }

    #[test]
    fn json_text_is_decoded_plain_text_is_kept() {
        let r = McpCallResult::from_result(json!({"content": [{"type": "text", "text": " [1, 2] "}]}));
        assert_eq!(r.value, json!([1, 2]));
        let r = McpCallResult::from_result(
            json!({"content": [{"type": "text", "text": "On branch main"}], "isError": false}),
        );
        assert_eq!(r.value, json!("On branch main"));
        let r = McpCallResult::from_result(json!({"content": [{"type": "text", "text": "bad zone"}], "isError": true}));
        assert!(r.is_error);
        assert_eq!(r.value, json!("bad zone"));
    }

    #[test]
    fn several_text_items() {
        let r = McpCallResult::from_result(json!({"content": [
            {"type": "text", "text": "{\"a\": 1}"}, {"type": "text", "text": "2"}
        ]}));
        assert_eq!(r.value, json!([{"a": 1}, 2]));
        let r = McpCallResult::from_result(json!({"content": [
            {"type": "text", "text": "first"}, {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "text", "text": "second"}
        ]}));
        assert_eq!(r.value, json!("first\nsecond"));
        assert_eq!(r.text.as_deref(), Some("first\nsecond"));
    }

    #[test]
    fn no_text_and_empty_results() {
        let image = json!({"type": "image", "data": "AA==", "mimeType": "image/png"});
        let r = McpCallResult::from_result(json!({"content": [image.clone()]}));
        assert_eq!(r.value, image);
        assert_eq!(r.text, None);
        let r = McpCallResult::from_result(json!({"content": []}));
        assert_eq!(r.value, Value::Null);
        let r = McpCallResult::from_result(json!({"content": [], "structuredContent": null}));
        assert_eq!(r.value, Value::Null);
    }

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(file_uri(Path::new("/tmp/my ws/ä")), "file:///tmp/my%20ws/%C3%A4");
        assert_eq!(file_uri(Path::new("/a/b-c_d.e~f")), "file:///a/b-c_d.e~f");
    }

    #[test]
    fn a_client_is_shared_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<McpClient>();
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human(Duration::from_secs(30)), "30 s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human(Duration::from_millis(250)), "250 ms");
    }
}
