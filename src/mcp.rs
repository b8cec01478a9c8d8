//! A blocking MCP client: JSON-RPC 2.0 over stdio (one JSON message per line) to a server it
//! starts, or over Streamable HTTP to a remote server (`mcp = { url = … }`, see [`Remote`]).
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
//! quoted in errors, since they usually explain why nothing sensible came back.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::McpConfig;
use crate::trust::redact_url;

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
            Err(_) => self.noise(trimmed),
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
        let timeout = crate::config::timeout(config.timeout_s);
        let mut command = Command::new(&config.command);
        // A cleared environment with what a program needs to find its way and what the entry
        // declares: the server never sees chainsmith's API keys.
        crate::trust::confine(&mut command, &config.env)
            .args(&config.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !root.as_os_str().is_empty() {
            command.current_dir(root);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let command_line = std::iter::once(config.command.as_str())
            .chain(config.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let mut child = command.spawn().map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound if !root.as_os_str().is_empty() && !root.is_dir() => {
                    format!("the workspace root {} is not a folder", root.display())
                }
                std::io::ErrorKind::NotFound => {
                    format!("command `{}` not found (is it installed and on PATH?)", config.command)
                }
                std::io::ErrorKind::PermissionDenied => format!("command `{}` is not executable", config.command),
                _ => e.to_string(),
            };
            McpError {
                kind: McpErrorKind::Spawn,
                server: name.to_string(),
                message: format!("cannot start MCP server `{name}` (`{command_line}`): {why}"),
            }
        })?;
        let pid = child.id();
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("stdin is piped"),
            child.stdout.take().expect("stdout is piped"),
            child.stderr.take().expect("stderr is piped"),
        );
        let (outbox, inbox) = mpsc::channel::<Vec<u8>>();
        let shared = Arc::new(Shared {
            server: name.to_string(),
            state: Mutex::new(State::default()),
            outbox: Mutex::new(Some(outbox)),
            stderr: Mutex::new(VecDeque::new()),
            stderr_done: AtomicBool::new(false),
            noise: Mutex::new(VecDeque::new()),
            noise_count: AtomicU64::new(0),
            list_changed: AtomicU64::new(0),
            roots: json!({"roots": [root_entry(root)]}),
            remote: None,
        });
        let client = McpClient {
            shared: shared.clone(),
            child: Some(Mutex::new(child)),
            pid,
            next_id: AtomicU64::new(1),
            listed_at: AtomicU64::new(0),
            timeout,
            protocol_version: String::new(),
            server_info: Value::Null,
            capabilities: Value::Null,
            instructions: None,
        };
        let spawned = spawn_thread(format!("mcp-{name}-writer"), move || {
            let mut stdin = stdin;
            for bytes in inbox {
                if stdin.write_all(&bytes).and_then(|()| stdin.flush()).is_err() {
                    break;
                }
            }
            // Dropping stdin here tells the server that the session is over.
        })
        .and_then(|()| {
            let shared = shared.clone();
            spawn_thread(format!("mcp-{name}-stderr"), move || {
                let mut reader = BufReader::new(stderr);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match reader.by_ref().take(64 * 1024).read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let text = String::from_utf8_lossy(&line);
                            tracing::debug!(server = %shared.server, "stderr: {}", text.trim_end());
                            Shared::keep(&shared.stderr, &text, STDERR_LINES);
                        }
                    }
                }
                shared.stderr_done.store(true, Ordering::SeqCst);
            })
        })
        .and_then(|()| {
            let shared = shared.clone();
            spawn_thread(format!("mcp-{name}-reader"), move || {
                let mut reader = BufReader::new(stdout);
                let mut line = Vec::new();
                let reason = loop {
                    line.clear();
                    match reader.by_ref().take(MAX_MESSAGE_BYTES + 1).read_until(b'\n', &mut line) {
                        Ok(0) => break "closed its output".to_string(),
                        Ok(n) if n as u64 > MAX_MESSAGE_BYTES => {
                            break format!("sent a message larger than {} MiB", MAX_MESSAGE_BYTES >> 20);
                        }
                        Ok(_) => shared.dispatch_line(&line),
                        Err(e) => break format!("could not be read ({e})"),
                    }
                };
                shared.close(reason);
            })
        });
        if let Err(e) = spawned {
            return Err(McpError {
                kind: McpErrorKind::Spawn,
                server: name.to_string(),
                message: format!("cannot start MCP server `{name}`: {e}"),
            }
            .into());
        }
        client.handshake()
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

    /// Closes the server's stdin, gives it a moment to exit, then ends its process group.
    fn shut_down(&mut self) {
        lock(&self.shared.outbox).take();
        if let Some(remote) = &self.shared.remote {
            remote.end_session();
        }
        let Some(child) = self.child.as_mut() else { return };
        let child = child.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        let exited = |child: &mut Child, within: Duration| {
            let deadline = Instant::now() + within;
            loop {
                if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
                    return true;
                }
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        if !exited(child, Duration::from_millis(200)) {
            signal_group(self.pid, Signal::Term);
            if !exited(child, Duration::from_millis(300)) {
                signal_group(self.pid, Signal::Kill);
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        // Whatever the server started in its group (helpers, a wrapped interpreter) goes with it.
        signal_group(self.pid, Signal::Kill);
    }
}

/// A remote server spoken to over Streamable HTTP (MCP 2025-03-26 and later): every message the
/// client sends is a POST of its own, on a thread of its own, answered by nothing (202), by one
/// JSON message, or by an event stream of messages (the server's own requests and notifications,
/// then the response); each is dispatched as a line from a stdio server would be, so both
/// transports share every rule above. The session id the server gives at `initialize` and the
/// negotiated version go with every later request; the session is ended with a DELETE. After the
/// handshake a GET stream is kept open for what the server sends outside any request (a
/// `list_changed`, a ping), reopened when the server ends it, given up on when the server offers
/// none (405) or refuses it three times in a row.
struct Remote {
    url: String,
    http: reqwest::blocking::Client,
    session: Mutex<Option<String>>,
    protocol_version: Mutex<Option<String>>,
}

impl Remote {
    /// Posts one message and dispatches whatever comes back. A request that cannot be delivered
    /// or is refused gets a made-up error reply, so its caller learns why at once.
    fn post(&self, shared: &Shared, body: Vec<u8>) {
        let request_id = serde_json::from_slice::<Value>(&body)
            .ok()
            .filter(|m| m.get("method").is_some())
            .and_then(|m| m.get("id").cloned());
        let fail = |why: String| {
            tracing::debug!(server = %shared.server, "{why}");
            if let Some(id) = &request_id {
                let reply = json!({"jsonrpc": "2.0", "id": id, "error": {"code": TRANSPORT_FAILURE, "message": why}});
                shared.dispatch(reply, b"");
            }
        };
        let request = self
            .http
            .post(&self.url)
            .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let response = match self.in_session(request).send() {
            Ok(response) => response,
            Err(e) => return fail(format!("{} cannot be reached ({})", redact_url(&self.url), error_chain(&e))),
        };
        if let Some(session) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            *lock(&self.session) = Some(session.to_string());
        }
        let status = response.status();
        let event_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if status.is_success() && event_stream {
            return read_events(response, |data| shared.dispatch_line(data));
        }
        let mut text = Vec::new();
        if let Err(e) = response.take(MAX_MESSAGE_BYTES + 1).read_to_end(&mut text) {
            return fail(format!("{} answered HTTP {status}, then the body failed ({e})", redact_url(&self.url)));
        }
        if text.len() as u64 > MAX_MESSAGE_BYTES {
            return fail(format!("{} sent a message larger than {} MiB", self.url, MAX_MESSAGE_BYTES >> 20));
        }
        let json_rpc = serde_json::from_slice::<Value>(&text).is_ok_and(|v| v.get("jsonrpc").is_some());
        if status.is_success() || json_rpc {
            if status == reqwest::StatusCode::NOT_FOUND && lock(&self.session).is_some() {
                shared.close(format!("ended the session ({} answered HTTP 404)", redact_url(&self.url)));
            }
            if !text.trim_ascii().is_empty() {
                shared.dispatch_line(&text);
            }
            if status.is_success() || request_id.is_none() {
                return;
            }
        }
        let said = String::from_utf8_lossy(&text);
        let said: String = said.trim().chars().take(KEPT_LINE_CHARS).collect();
        if status == reqwest::StatusCode::NOT_FOUND && lock(&self.session).is_some() {
            shared.close(format!("ended the session ({} answered HTTP 404)", redact_url(&self.url)));
        }
        fail(format!(
            "{} answered HTTP {status}{}",
            self.url,
            if said.is_empty() { String::new() } else { format!(": {said}") }
        ))
    }

    /// The request with the session's id and protocol version, once the handshake gave them.
    fn in_session(&self, mut request: reqwest::blocking::RequestBuilder) -> reqwest::blocking::RequestBuilder {
        if let Some(session) = lock(&self.session).clone() {
            request = request.header("mcp-session-id", session);
        }
        if let Some(version) = lock(&self.protocol_version).clone() {
            request = request.header("mcp-protocol-version", version);
        }
        request
    }

    /// Ends the session, when the server gave one (best effort, briefly: nothing waits on it).
    fn end_session(&self) {
        let Some(session) = lock(&self.session).take() else { return };
        let _ = self.http.delete(&self.url).header("mcp-session-id", session).timeout(Duration::from_secs(2)).send();
    }
}

/// Keeps the session's GET stream open while the session stands, dispatching what comes on it.
/// The stream holds the session only while it is open: once the client is gone, nothing reopens it.
fn listen(session: std::sync::Weak<Shared>) {
    let mut refusals = 0;
    loop {
        let Some(shared) = session.upgrade() else { return };
        let Some(remote) = shared.remote.as_ref() else { return };
        if lock(&shared.outbox).is_none() || lock(&shared.state).closed.is_some() {
            return;
        }
        let request = remote.http.get(&remote.url).header(reqwest::header::ACCEPT, "text/event-stream");
        match remote.in_session(request).send() {
            Ok(response) if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED => return,
            Ok(response)
                if response.status().is_success()
                    && response
                        .headers()
                        .get(reqwest::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.starts_with("text/event-stream")) =>
            {
                refusals = 0;
                read_events(response, |data| shared.dispatch_line(data));
            }
            Ok(response) => {
                tracing::debug!(server = %shared.server, "the GET stream was refused (HTTP {})", response.status());
                refusals += 1;
            }
            Err(e) => {
                tracing::debug!(server = %shared.server, "the GET stream failed ({})", error_chain(&e));
                refusals += 1;
            }
        }
        if refusals >= 3 {
            return;
        }
        drop(shared);
        std::thread::sleep(Duration::from_millis(500 << refusals));
    }
}

/// Reads a server-sent event stream, handing each event's data (its `data:` lines joined by
/// newlines) to `dispatch`; an event larger than the message limit ends the stream.
fn read_events(stream: impl Read, mut dispatch: impl FnMut(&[u8])) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    loop {
        line.clear();
        match reader.by_ref().take(MAX_MESSAGE_BYTES + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.is_empty() {
            if has_data {
                dispatch(&data);
            }
            data.clear();
            has_data = false;
            continue;
        }
        if let Some(value) = text.strip_prefix(b"data:") {
            if has_data {
                data.push(b'\n');
            }
            data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
            has_data = true;
            if data.len() as u64 > MAX_MESSAGE_BYTES {
                break;
            }
        }
        // `event:`, `id:`, `retry:` and `:` comments carry nothing chainsmith uses.
    }
    if has_data {
        dispatch(&data);
    }
}

/// An error and its causes on one line (reqwest's own message stops at "error sending request").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

impl McpClient {
    /// Opens a session with the remote server at `url` and performs the handshake.
    fn connect(name: &str, url: &str, config: &McpConfig, root: &Path) -> anyhow::Result<McpClient> {
        let refuse = |why: String| McpError {
            kind: McpErrorKind::Spawn,
            server: name.to_string(),
            message: format!("cannot reach MCP server `{name}` ({}): {why}", redact_url(url)),
        };
        let mut headers = reqwest::header::HeaderMap::new();
        for (header, value) in &config.headers {
            let Some(text) = value.value() else {
                let crate::config::HeaderValueConfig::FromEnv(from) = value else {
                    unreachable!("a literal has a value")
                };
                return Err(refuse(format!("header `{header}` takes ${}, which is not set", from.value_env)).into());
            };
            let header_name = reqwest::header::HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| refuse(format!("`{header}` is not a header name")))?;
            let mut header_value = reqwest::header::HeaderValue::from_str(&text)
                .map_err(|_| refuse(format!("the value of header `{header}` is not valid in a header")))?;
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let timeout = crate::config::timeout(config.timeout_s);
        // The headers carry the user's secrets to the address trusted for them: a redirect to
        // another origin is not followed (reqwest would keep every header but Authorization and
        // Cookie), and its status is the answer.
        let same_origin = reqwest::redirect::Policy::custom(|attempt| {
            let first = attempt.previous().first().map(reqwest::Url::origin);
            match first {
                Some(first) if first != attempt.url().origin() => attempt.stop(),
                _ if attempt.previous().len() > 10 => attempt.stop(),
                _ => attempt.follow(),
            }
        });
        let http = reqwest::blocking::Client::builder()
            .default_headers(headers)
            .redirect(same_origin)
            .connect_timeout(timeout)
            .timeout(LONGEST_EXCHANGE)
            .user_agent(concat!("chainsmith/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| refuse(error_chain(&e)))?;
        let (outbox, inbox) = mpsc::channel::<Vec<u8>>();
        let shared = Arc::new(Shared {
            server: name.to_string(),
            state: Mutex::new(State::default()),
            outbox: Mutex::new(Some(outbox)),
            stderr: Mutex::new(VecDeque::new()),
            stderr_done: AtomicBool::new(true),
            noise: Mutex::new(VecDeque::new()),
            noise_count: AtomicU64::new(0),
            list_changed: AtomicU64::new(0),
            roots: json!({"roots": [root_entry(root)]}),
            remote: Some(Remote {
                url: url.to_string(),
                http,
                session: Mutex::new(None),
                protocol_version: Mutex::new(None),
            }),
        });
        let poster = shared.clone();
        spawn_thread(format!("mcp-{name}-poster"), move || {
            for body in inbox {
                // One thread per exchange: a server may ask something of the client (and wait
                // for the answer, a POST of its own) while a request's event stream is open.
                let shared = poster.clone();
                let posted = spawn_thread("mcp-post".into(), move || {
                    if let Some(remote) = &shared.remote {
                        remote.post(&shared, body);
                    }
                });
                if let Err(e) = posted {
                    poster.close(format!("cannot start a thread ({e})"));
                }
            }
        })
        .map_err(|e| refuse(e.to_string()))?;
        let client = McpClient {
            shared,
            child: None,
            pid: 0,
            next_id: AtomicU64::new(1),
            listed_at: AtomicU64::new(0),
            timeout,
            protocol_version: String::new(),
            server_info: Value::Null,
            capabilities: Value::Null,
            instructions: None,
        };
        let client = client.handshake()?;
        let session = Arc::downgrade(&client.shared);
        if let Err(e) = spawn_thread(format!("mcp-{name}-listener"), move || listen(session)) {
            tracing::debug!(server = %name, "no GET stream ({e})");
        }
        Ok(client)
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

enum Signal {
    Term,
    Kill,
}

#[cfg(unix)]
fn signal_group(pgid: u32, signal: Signal) {
    let signal = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    if let Ok(pgid) = libc::pid_t::try_from(pgid)
        && pgid > 1
    {
        // SAFETY: killpg only sends a signal; the group is the one the server was started in
        // (process_group(0) made its pid the group id). An already empty group yields ESRCH.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

#[cfg(not(unix))]
fn signal_group(_pgid: u32, _signal: Signal) {}

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
