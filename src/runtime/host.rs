//! The host: the side of a run that executes tool calls. It serves connections from the program
//! (one per Python process, newline-delimited JSON requests and answers), checks each call against
//! the run's limits, answers it from the replayed trace or executes it by the tool's transport, and
//! records it in the trace.
//!
//! The program reaches the host through its *door*: one end of a socket pair the program inherits
//! (`CHAINSMITH_HOST_FD`) and nothing else holds. To connect, a process makes a stream socket pair
//! and sends one end through the door (`SCM_RIGHTS`, one byte per connection); the host serves the
//! end it receives. Nothing is bound to a path, so no other process (another run's program
//! included) can find the host, and no secret is needed: holding the door is the credential.
//!
//! Messages from the program:
//! - `{"op": "hello"}` → `{"toolsets": {name: {"base_url", "tools": {tool: [param, ...]}}}}`
//! - `{"op": "call", "tool": "tmdb.search_person", "arguments": {...}, "line": 8}` → `{"ok": true,
//!   "id", "response"}` or `{"ok": false, "id", "error": {"tool", "status", "message"}}`
//! - `{"op": "http", "method", "url", "headers": [[k, v]], "body" | "body_latin1", "line"}` (the HTTP
//!   dialect) → `{"ok": true, "id", "status", "reason", "headers", "body" | "body_latin1", "url",
//!   "duration_ms"}` or `{"ok": false, "id", "error": {"message"}}`
//! - `{"op": "error", "type", "message", "frames", "call", ...}`: the program's uncaught exception
//!   → `{}`
//!
//! Any of them may be answered `{"stop": "why"}` when the run is being stopped.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::attribute::ErrorReport;
use super::http::{self, Answer, AnswerBudget, Prepared, Share};
use super::trace::{Replay, Secrets, TraceCall, cap_response};
use super::{RunObserver, Stop};
use crate::config::{Config, McpConfig, ToolsetSource};
use crate::mcp::McpClient;
use crate::toolset::endpoint::{self, Matched};
use crate::toolset::{Catalog, ParamLocation, SourceKind, Tool, Toolset, Transport};

/// MCP server sessions by toolset: started on a toolset's first call, kept for the run (the CLI)
/// or for the editor session (the server keeps one pool across runs).
#[derive(Default)]
pub struct McpPool {
    clients: Mutex<HashMap<String, Arc<McpClient>>>,
}

impl McpPool {
    pub fn new() -> McpPool {
        McpPool::default()
    }

    fn client(&self, toolset: &str, config: &McpConfig, root: &Path) -> anyhow::Result<Arc<McpClient>> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(toolset)
            && client.is_alive()
        {
            return Ok(client.clone());
        }
        let client = Arc::new(McpClient::start_named(toolset, config, root)?);
        clients.insert(toolset.to_string(), client.clone());
        Ok(client)
    }

    /// Shuts every server down.
    pub fn clear(&self) {
        self.clients.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// How one executed call ended.
struct Outcome {
    ok: bool,
    status: Option<u16>,
    response: Value,
    error: Option<String>,
    /// The raw HTTP answer (HTTP dialect replies need it).
    answer: Option<Answer>,
    /// The answer's part of the run's [`AnswerBudget`], kept until its reply is written.
    held: Option<Share>,
    replayed: bool,
}

impl Outcome {
    fn failed(message: impl Into<String>) -> Outcome {
        Outcome {
            ok: false,
            status: None,
            response: Value::Null,
            error: Some(message.into()),
            answer: None,
            held: None,
            replayed: false,
        }
    }

    fn from_http(answer: Answer) -> Outcome {
        let ok = answer.is_success();
        Outcome {
            ok,
            status: Some(answer.status),
            response: answer.decoded(),
            error: (!ok).then(|| http::error_excerpt(&answer)),
            answer: Some(answer),
            held: None,
            replayed: false,
        }
    }

    fn from_trace(call: TraceCall) -> Outcome {
        Outcome {
            ok: call.ok,
            status: call.status,
            response: call.response,
            error: call.error,
            answer: None,
            held: None,
            replayed: true,
        }
    }
}

#[derive(Default)]
struct State {
    calls: Vec<TraceCall>,
    /// Responses that contradicted their declared schemas, the first per tool.
    drift: Vec<super::drift::Drift>,
    /// Ids of calls still running.
    pending: Vec<u32>,
    error: Option<ErrorReport>,
    stop: Option<Stop>,
}

pub struct Host {
    catalog: Arc<Catalog>,
    config: Arc<Config>,
    root: PathBuf,
    http: reqwest::blocking::Client,
    /// The names that may resolve to this machine or its private network (`None`: every name).
    local_names: Option<std::collections::BTreeSet<String>>,
    secrets: Secrets,
    replay: Option<Replay>,
    mcp: Arc<McpPool>,
    upstream: Vec<(String, String)>,
    max_calls: u32,
    deadline: Instant,
    observer: Arc<dyn RunObserver>,
    state: Mutex<State>,
    closing: AtomicBool,
    /// The bytes of messages being read, over every connection (see [`MAX_BUFFERED`]).
    buffered: std::sync::atomic::AtomicUsize,
    /// The bytes of answers held, over every call: twice `[runtime] max_response_mb`.
    answers: Arc<AnswerBudget>,
}

pub struct HostSetup {
    pub catalog: Arc<Catalog>,
    pub config: Arc<Config>,
    pub root: PathBuf,
    pub secrets: Secrets,
    pub replay: Option<Replay>,
    pub mcp: Arc<McpPool>,
    /// (toolset base URL, URL to send to instead): requests under a base URL go to a stand-in
    /// (a mock of the API) while the program and its trace still see the real URL.
    pub upstream: Vec<(String, String)>,
    pub max_calls: u32,
    pub deadline: Instant,
    pub observer: Arc<dyn RunObserver>,
}

impl Host {
    pub fn new(setup: HostSetup) -> Host {
        let answers = AnswerBudget::new(setup.config.runtime.max_response_mb.saturating_mul(2 << 20));
        let local_names = setup.catalog.trust.local_names();
        let http = http::client(&setup.catalog.trust);
        Host {
            catalog: setup.catalog,
            config: setup.config,
            root: setup.root,
            http,
            local_names,
            secrets: setup.secrets,
            replay: setup.replay,
            mcp: setup.mcp,
            upstream: setup.upstream,
            max_calls: setup.max_calls,
            deadline: setup.deadline,
            observer: setup.observer,
            state: Mutex::new(State::default()),
            closing: AtomicBool::new(false),
            buffered: std::sync::atomic::AtomicUsize::new(0),
            answers,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the run to stop (the first reason wins).
    pub fn request_stop(&self, stop: Stop) {
        let mut state = self.state();
        if state.stop.is_none() {
            state.stop = Some(stop);
        }
    }

    pub fn stop_requested(&self) -> Option<Stop> {
        self.state().stop.clone()
    }

    /// The recorded calls (unfinished ones marked as interrupted), the program's error report and
    /// why the run was stopped.
    pub fn finish(&self) -> (Vec<TraceCall>, Option<ErrorReport>, Option<Stop>, Vec<u32>) {
        let state = self.state();
        (state.calls.clone(), state.error.clone(), state.stop.clone(), state.pending.clone())
    }

    pub fn drift(&self) -> Vec<super::drift::Drift> {
        self.state().drift.clone()
    }

    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Serves the connections that arrive through `door` until [`Host::close`] or until every
    /// process holding its other end has ended.
    pub fn serve(self: &Arc<Self>, door: UnixStream) -> std::thread::JoinHandle<()> {
        let host = self.clone();
        std::thread::Builder::new()
            .name("chainsmith-host".into())
            .spawn(move || {
                let open = Arc::new(OpenConnections::default());
                while let Some(stream) = next_connection(&door) {
                    if host.closing.load(Ordering::SeqCst) {
                        break;
                    }
                    let Some(stream) = stream else { continue };
                    // Served one thread each, at most MAX_CONNECTIONS at once: a program opening
                    // more waits (its connections queue in the door) instead of costing chainsmith,
                    // which no sandbox limit holds, a thread each.
                    let slot = open.take();
                    let host = host.clone();
                    let _ = std::thread::Builder::new().name("chainsmith-host-conn".into()).spawn(move || {
                        host.connection(stream);
                        drop(slot);
                    });
                }
            })
            .expect("a thread for the host")
    }

    /// Stops accepting connections: shutting the door down wakes [`Host::serve`]'s wait.
    pub fn close(&self, door: &UnixStream) {
        self.closing.store(true, Ordering::SeqCst);
        let _ = door.shutdown(std::net::Shutdown::Both);
    }

    fn connection(&self, stream: UnixStream) {
        let Ok(writer) = stream.try_clone() else { return };
        let mut writer = std::io::BufWriter::new(writer);
        let mut reader = BufReader::new(stream);
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = read_message(&mut reader, &mut line, &self.buffered);
            let _held = Held(&self.buffered, line.len());
            match read {
                Ok(true) => {}
                Ok(false) | Err(MessageRefused::Closed) => break,
                Err(refused) => {
                    // Not read further: the connection ends with the reason, whatever else was sent.
                    let reply = json!({"ok": false, "error": {"message": format!("chainsmith host: {refused}; the connection is closed")}});
                    let _ = writer.write_all(format!("{reply}\n").as_bytes()).and_then(|()| writer.flush());
                    break;
                }
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let too_many =
                crate::files::json_values(&line, crate::files::MAX_JSON_VALUES) > crate::files::MAX_JSON_VALUES;
            // Counted before parsing: parsed, tiny values would take ~100 times their size.
            let parsed = if too_many {
                Err(format!("a message of more than {} JSON values", crate::files::MAX_JSON_VALUES))
            } else {
                serde_json::from_slice::<Value>(&line).map_err(|e| format!("a message that is not JSON: {e}"))
            };
            // The answer's bytes stay counted until its reply is written.
            let (reply, _held) = match parsed {
                Ok(message) => self.handle(&message),
                Err(why) => (json!({"ok": false, "error": {"message": format!("chainsmith host: {why}")}}), None),
            };
            let mut text = reply.to_string();
            text.push('\n');
            if writer.write_all(text.as_bytes()).and_then(|()| writer.flush()).is_err() {
                break;
            }
        }
    }

    /// The reply to one message, and the part of the answer budget it holds.
    fn handle(&self, message: &Value) -> (Value, Option<Share>) {
        if let Some(stop) = self.stop_requested() {
            return (json!({"stop": stop.message()}), None);
        }
        let reply = match message.get("op").and_then(Value::as_str) {
            Some("hello") => self.hello(),
            Some("call") => return self.module_call(message),
            Some("http") => return self.http_call(message),
            Some("error") => {
                match serde_json::from_value::<ErrorReport>(message.clone()) {
                    Ok(report) => self.state().error = Some(report),
                    Err(e) => tracing::warn!("an error report the host cannot read: {e}"),
                }
                json!({})
            }
            other => json!({"ok": false, "error": {"message": format!("chainsmith host: unknown op {other:?}")}}),
        };
        (reply, None)
    }

    fn hello(&self) -> Value {
        let mut toolsets = Map::new();
        for toolset in &self.catalog.toolsets {
            let mut tools = Map::new();
            for tool in &toolset.tools {
                let params = Value::Array(tool.params.iter().map(|p| Value::String(p.name.clone())).collect());
                if let Some(alias) = self.catalog.alias_of(tool) {
                    tools.insert(alias.to_string(), params.clone());
                }
                tools.insert(tool.name.clone(), params);
            }
            toolsets.insert(toolset.name.clone(), json!({"base_url": toolset.base_url, "tools": tools}));
        }
        json!({"toolsets": toolsets})
    }

    /// Registers a call about to run: its id, or the stop reason when it would exceed the limit.
    fn begin(&self, tool: &str, arguments: Value, line: Option<u32>) -> Result<TraceCall, Stop> {
        let mut state = self.state();
        if let Some(stop) = &state.stop {
            return Err(stop.clone());
        }
        if state.calls.len() >= self.max_calls as usize {
            let stop = Stop::ToolCallLimit { limit: self.max_calls, line, tool: tool.to_string() };
            state.stop = Some(stop.clone());
            return Err(stop);
        }
        let call = TraceCall {
            id: state.calls.len() as u32 + 1,
            tool: tool.to_string(),
            arguments,
            ok: false,
            status: None,
            response: Value::Null,
            error: Some("interrupted: the run stopped before this call finished".into()),
            duration_ms: 0,
            line,
            replayed: false,
        };
        state.calls.push(call.clone());
        state.pending.push(call.id);
        drop(state);
        self.observer.call_started(&call);
        Ok(call)
    }

    /// Records how a call ended; from here on `outcome.response` holds no key (the program never
    /// holds one, not even one an API echoes back).
    fn end(&self, mut call: TraceCall, outcome: &mut Outcome, started: Instant) -> TraceCall {
        self.secrets.redact(&mut outcome.response);
        // Compared whole, before the trace's cap cuts arrays and strings; a replayed answer was
        // compared when it was recorded.
        let drift = match (outcome.ok && !outcome.replayed, self.tool_of(&call.tool)) {
            (true, Ok((_, tool))) => super::drift::Drift::of(tool, call.id, &call.arguments, &outcome.response),
            _ => None,
        };
        call.ok = outcome.ok;
        call.status = outcome.status;
        call.response = cap_response(&outcome.response);
        call.error = outcome.error.as_deref().map(|e| self.secrets.text(e));
        call.duration_ms = started.elapsed().as_millis() as u64;
        call.replayed = outcome.replayed;
        {
            let mut state = self.state();
            if let Some(slot) = state.calls.iter_mut().find(|c| c.id == call.id) {
                *slot = call.clone();
            }
            if let Some(drift) = drift
                && !state.drift.iter().any(|d| d.tool == drift.tool)
            {
                state.drift.push(drift);
            }
            state.pending.retain(|id| *id != call.id);
        }
        self.observer.call_finished(&call);
        call
    }

    /// Time left for one call: the run's remaining wall time and a little more, so that the run's
    /// own timeout (the clearer message) fires first.
    fn call_timeout(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now()) + Duration::from_secs(1)
    }

    fn module_call(&self, message: &Value) -> (Value, Option<Share>) {
        let id = message.get("tool").and_then(Value::as_str).unwrap_or("").to_string();
        // A call by alias (`operationId`) is traced under the tool's own id, as ToolNet learns it.
        let id = self.tool_of(&id).map(|(_, tool)| tool.id()).unwrap_or(id);
        let arguments = message.get("arguments").cloned().unwrap_or_else(|| json!({}));
        let arguments = if arguments.is_object() { arguments } else { json!({}) };
        let line = line_of(message);
        let recorded = self.secrets.value(&arguments);
        let call = match self.begin(&id, recorded.clone(), line) {
            Ok(call) => call,
            Err(stop) => return (json!({"stop": stop.message()}), None),
        };
        let started = Instant::now();
        let mut outcome = match self.replay.as_ref().and_then(|r| r.answer(&id, &recorded)) {
            Some(recorded) => Outcome::from_trace(recorded),
            None => self.execute(&id, arguments.as_object().expect("an object")),
        };
        let call = self.end(call, &mut outcome, started);
        let reply = if outcome.ok {
            json!({"ok": true, "id": call.id, "response": std::mem::take(&mut outcome.response)})
        } else {
            json!({"ok": false, "id": call.id, "error": {
                "tool": id,
                "status": outcome.status,
                "message": call.error.clone().unwrap_or_else(|| "the call failed".into()),
            }})
        };
        (reply, outcome.held.take())
    }

    fn tool_of(&self, id: &str) -> Result<(&Toolset, &Tool), String> {
        let Some((toolset_name, name)) = id.split_once('.') else {
            return Err(format!("`{id}` is not a tool id (toolset.name)"));
        };
        let Some(toolset) = self.catalog.toolset(toolset_name) else {
            return Err(format!("the workspace has no toolset `{toolset_name}`"));
        };
        match self.catalog.tool(toolset_name, name) {
            Some(tool) => Ok((toolset, tool)),
            // Its tools are not known: say why (an untrusted workspace, a server that did not start).
            None if toolset.unlisted.is_some() => Err(format!(
                "toolset `{toolset_name}` has no tools: {}",
                toolset.unlisted.as_deref().unwrap_or_default()
            )),
            None => {
                let hint = crate::diagnostic::did_you_mean(name, self.catalog.names_and_aliases(toolset_name))
                    .map(|close| format!("; did you mean `{close}`?"))
                    .unwrap_or_default();
                Err(format!("toolset `{toolset_name}` has no tool `{name}`{hint}"))
            }
        }
    }

    /// Executes a module-dialect call by the tool's transport.
    fn execute(&self, id: &str, arguments: &Map<String, Value>) -> Outcome {
        let (toolset, tool) = match self.tool_of(id) {
            Ok(found) => found,
            Err(message) => return Outcome::failed(message),
        };
        match &tool.transport {
            Transport::Http { method, path } => {
                let mut prepared = match http::tool_request(toolset, tool, method, path, arguments) {
                    Ok(p) => p,
                    Err(message) => return Outcome::failed(message),
                };
                let missing = match self.add_auth(toolset, &mut prepared) {
                    Ok(missing) => missing,
                    Err(why) => return Outcome::failed(why),
                };
                self.send(prepared, missing)
            }
            Transport::None if tool.source.kind == SourceKind::ToolBench && toolset.base_url.is_some() => {
                if let Err(why) = self.may_send_secret(toolset) {
                    return Outcome::failed(why);
                }
                let key = toolset.auth.as_ref().and_then(http::auth_value);
                let prepared = match http::toolbench_request(toolset, tool, arguments, key.as_deref()) {
                    Ok(p) => p,
                    Err(message) => return Outcome::failed(message),
                };
                let missing = match (&toolset.auth, &key) {
                    (Some(auth), None) => Some(missing_auth(toolset, auth)),
                    _ => None,
                };
                let mut prepared = prepared;
                // The key travels in the body, which a redirect to another origin would resend.
                prepared.secret_body = key.is_some();
                let mut outcome = self.send(prepared, missing);
                if outcome.ok {
                    match http::toolbench_outcome(&outcome.response) {
                        Ok(response) => outcome.response = response,
                        Err(message) => {
                            outcome.ok = false;
                            outcome.error = Some(message);
                        }
                    }
                }
                outcome
            }
            Transport::Mcp { tool: server_name } => self.mcp_call(toolset, tool, server_name, arguments),
            Transport::Command { argv } => self.command_call(tool, argv, arguments),
            Transport::None => Outcome::failed(http::no_transport(toolset, tool)),
        }
    }

    /// Adds the toolset's auth; when it has auth but no value for it, why (for a 401's message).
    /// Refused when the workspace is not trusted to send that secret to its base URL, when the
    /// request leaves the base URL's scheme (a key meant for `https://` never goes out in clear),
    /// or when it is not beneath the base URL at all: a protocol's path need not start with `/`, and
    /// `.evil.example/x` after `https://api.github.com` names another host than the one trusted.
    /// A request a stand-in answers (chainsmith's mock, on this machine) goes without a key: the
    /// mock needs none, so a mock run sends no secret anywhere and needs no trust to.
    fn add_auth(&self, toolset: &Toolset, prepared: &mut Prepared) -> Result<Option<String>, String> {
        let Some(auth) = toolset.auth.as_ref() else { return Ok(None) };
        if self.stand_in(prepared.url.as_str()).is_some() {
            return Ok(None);
        }
        let Some(value) = http::auth_value(auth) else { return Ok(Some(missing_auth(toolset, auth))) };
        self.may_send_secret(toolset)?;
        let base_scheme =
            toolset.base_url.as_deref().and_then(|b| reqwest::Url::parse(b).ok()).map(|b| b.scheme().to_string());
        if let Some(base_scheme) = base_scheme
            && base_scheme != prepared.url.scheme()
        {
            return Err(format!(
                "toolset `{}` sends its key only over {base_scheme}://, its base URL's scheme; this request is {}://, so it is not sent",
                toolset.name,
                prepared.url.scheme()
            ));
        }
        if let Some(base) = toolset.base_url.as_deref().and_then(|b| reqwest::Url::parse(b).ok())
            && !http::beneath(&prepared.url, &base)
        {
            return Err(format!(
                "toolset `{}` sends its key only beneath {}; this request goes to {}, so it is not sent",
                toolset.name,
                crate::trust::redact_url(base.as_str()),
                crate::trust::redact_url(prepared.url.origin().ascii_serialization().as_str())
            ));
        }
        http::add_auth(prepared, auth, &value);
        Ok(None)
    }

    /// Whether the workspace is trusted to send the secret of `toolset`'s auth to its base URL.
    fn may_send_secret(&self, toolset: &Toolset) -> Result<(), String> {
        match toolset.secret_line() {
            Some(line) if !self.catalog.trust.allows(&line.command) => Err(self.catalog.trust.refusal(&line)),
            _ => Ok(()),
        }
    }

    /// Whether a request may go to `url`: anywhere but this machine and its private network
    /// ([`crate::trust::is_local`]), there only where the workspace is trusted to call
    /// ([`crate::trust::Command::reach`]) or where chainsmith's own stand-in answers.
    fn may_reach(&self, url: &reqwest::Url, stand_in: Option<&reqwest::Url>) -> Result<(), String> {
        if stand_in.is_some_and(|s| s.origin() == url.origin()) {
            return Ok(());
        }
        // A name is judged by what it resolves to: one the record lets resolve here is held to
        // the origins trusted with it, as an address is (its other ports are other services).
        let named_here = crate::trust::host_name(url)
            .is_some_and(|name| self.local_names.as_ref().is_some_and(|names| names.contains(&name)));
        if !named_here
            && let Some(why) =
                crate::trust::name_refusal(&self.catalog.trust, self.local_names.as_ref(), url, "a program's request")
        {
            return Err(why);
        }
        if !crate::trust::is_local(url) && !named_here {
            return Ok(());
        }
        // The toolset whose base URL is this origin: its line is what trust records for it.
        let declared = self.catalog.toolsets.iter().find_map(|t| {
            let base = reqwest::Url::parse(t.base_url.as_deref()?.trim()).ok()?;
            (base.origin() == url.origin())
                .then(|| crate::trust::Command::reach(format!("toolset `{}` (base URL)", t.name), url))
        });
        match declared {
            Some(line) if self.catalog.trust.allows(&line.command) => Ok(()),
            Some(line) => Err(self.catalog.trust.refusal(&line)),
            // No toolset's base URL: `chainsmith trust` has no line to record for it.
            None if self.catalog.trust == crate::trust::Trust::Session => Ok(()),
            None => Err(format!(
                "{} is on this machine or its private network and no toolset's base URL names it (a redirect, or a path that leaves its base URL), so the request is not sent; a toolset declaring it can be trusted, or `--trust` allows it for one run",
                url.origin().ascii_serialization()
            )),
        }
    }

    /// Where a stand-in for `url`'s API answers it (the run's `upstream`), if one does.
    fn stand_in(&self, url: &str) -> Option<String> {
        super::stand_in(&self.upstream, url)
    }

    fn send(&self, mut prepared: Prepared, missing_auth: Option<String>) -> Outcome {
        let stand_in = self.stand_in(prepared.url.as_str()).and_then(|u| reqwest::Url::parse(&u).ok());
        if let Some(url) = &stand_in {
            prepared.url = url.clone();
        }
        let may_reach = |url: &reqwest::Url| self.may_reach(url, stand_in.as_ref());
        let mut share = self.answers.share();
        match http::send(
            &self.http,
            &prepared,
            self.call_timeout(),
            self.config.runtime.max_response_mb.saturating_mul(1 << 20),
            &mut share,
            &may_reach,
        ) {
            Ok(answer) => {
                let mut outcome = Outcome::from_http(answer);
                outcome.held = Some(share);
                if let Some(why) = missing_auth
                    && matches!(outcome.status, Some(401 | 403))
                    && let Some(error) = &mut outcome.error
                {
                    error.push_str(&format!(" ({why})"));
                }
                outcome
            }
            Err(message) => Outcome::failed(message),
        }
    }

    fn mcp_call(&self, toolset: &Toolset, tool: &Tool, server_name: &str, arguments: &Map<String, Value>) -> Outcome {
        let config = self.config.toolsets.iter().find_map(|t| match &t.source {
            ToolsetSource::Mcp(mcp) if t.name == toolset.name => Some(mcp),
            _ => None,
        });
        let Some(config) = config else {
            return Outcome::failed(format!("toolset `{}` has no MCP server in chainsmith.toml", toolset.name));
        };
        let command = crate::trust::Command::mcp(&toolset.name, config);
        if !self.catalog.trust.allows(&command.command) {
            return Outcome::failed(self.catalog.trust.refusal(&command));
        }
        let mut wire = Map::new();
        for (name, value) in arguments {
            let param = tool.param(name);
            if param.is_none() && !tool.params.is_empty() {
                let hint = crate::diagnostic::did_you_mean(name, tool.params.iter().map(|p| p.name.as_str()))
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
                return Outcome::failed(format!("unknown argument `{name}`{hint}"));
            }
            wire.insert(param.map(|p| p.wire_name.clone()).unwrap_or_else(|| name.clone()), value.clone());
        }
        let client = match self.mcp.client(&toolset.name, config, &self.root) {
            Ok(client) => client,
            Err(e) => return Outcome::failed(format!("{e:#}")),
        };
        match client.call(server_name, Value::Object(wire), self.call_timeout()) {
            Ok(result) if result.is_error => {
                let message =
                    result.text.clone().filter(|t| !t.trim().is_empty()).unwrap_or_else(|| result.value.to_string());
                Outcome {
                    ok: false,
                    status: None,
                    response: result.value,
                    error: Some(message),
                    answer: None,
                    held: None,
                    replayed: false,
                }
            }
            Ok(result) => Outcome {
                ok: true,
                status: None,
                response: result.value,
                error: None,
                answer: None,
                held: None,
                replayed: false,
            },
            Err(e) => Outcome::failed(format!("{e:#}")),
        }
    }

    /// A command tool: the arguments (by wire name) as one JSON object on its standard input, its
    /// JSON response on standard output; a non-zero exit is a failure. Only a command line the
    /// workspace is trusted with runs.
    fn command_call(&self, tool: &Tool, argv: &[String], arguments: &Map<String, Value>) -> Outcome {
        let command = crate::trust::Command::tool(&tool.id(), argv);
        if !self.catalog.trust.allows(&command.command) {
            return Outcome::failed(self.catalog.trust.refusal(&command));
        }
        let mut wire = Map::new();
        for (name, value) in arguments {
            let key = tool.param(name).map(|p| p.wire_name.clone()).unwrap_or_else(|| name.clone());
            wire.insert(key, value.clone());
        }
        match super::process::run_command(argv, &self.root, &Value::Object(wire).to_string(), self.call_timeout()) {
            Ok((0, stdout, _)) => Outcome {
                ok: true,
                status: None,
                response: http::decode_body(stdout.as_bytes()),
                error: None,
                answer: None,
                held: None,
                replayed: false,
            },
            Ok((code, stdout, stderr)) => {
                let said = if stderr.trim().is_empty() { stdout } else { stderr };
                let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
                Outcome::failed(format!("exited with status {code}: {}", crate::text::shorten(&said, 300)))
            }
            Err(message) => Outcome::failed(message),
        }
    }

    fn http_call(&self, message: &Value) -> (Value, Option<Share>) {
        let method = message.get("method").and_then(Value::as_str).unwrap_or("GET").to_ascii_uppercase();
        let url_text = message.get("url").and_then(Value::as_str).unwrap_or("");
        let Ok(url) = reqwest::Url::parse(url_text) else {
            let shown = crate::trust::redact_url(url_text);
            return (json!({"ok": false, "error": {"message": format!("`{shown}` is not a URL")}}), None);
        };
        let headers: Vec<(String, String)> = message
            .get("headers")
            .and_then(Value::as_array)
            .map(|pairs| {
                pairs
                    .iter()
                    .filter_map(|p| Some((p.get(0)?.as_str()?.to_string(), p.get(1)?.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let body: Option<Vec<u8>> = match (message.get("body"), message.get("body_latin1")) {
            (Some(Value::String(text)), _) => Some(text.as_bytes().to_vec()),
            (_, Some(Value::String(latin1))) => Some(latin1.chars().map(|c| c as u32 as u8).collect()),
            _ => None,
        };
        let line = line_of(message);
        let endpoint = self.endpoint_of(&method, &url, &headers, body.as_deref());
        let Some((toolset, tool_id, arguments)) = endpoint else {
            let shown = crate::trust::redact_url(url_text);
            return (
                json!({"ok": false, "error": {"message": format!("{shown} is not under a toolset's base URL")}}),
                None,
            );
        };
        let recorded = self.secrets.value(&Value::Object(arguments));
        let call = match self.begin(&tool_id, recorded.clone(), line) {
            Ok(call) => call,
            Err(stop) => return (json!({"stop": stop.message()}), None),
        };
        let started = Instant::now();
        let mut outcome = match self.replay.as_ref().and_then(|r| r.answer(&tool_id, &recorded)) {
            Some(recorded) => Outcome::from_trace(recorded),
            None => {
                let mut prepared = Prepared::new(method, url, headers, body);
                match self.add_auth(toolset, &mut prepared) {
                    Ok(missing) => self.send(prepared, missing),
                    Err(why) => Outcome::failed(why),
                }
            }
        };
        let call = self.end(call, &mut outcome, started);
        let reply = match (&outcome.answer, outcome.status) {
            (Some(answer), _) => {
                let mut reply = json!({
                    "ok": true,
                    "id": call.id,
                    "status": answer.status,
                    "reason": answer.reason,
                    "headers": answer.headers.iter().map(|(k, v)| json!([k, self.secrets.text(v)])).collect::<Vec<_>>(),
                    "url": self.secrets.text(&answer.url),
                    "duration_ms": call.duration_ms,
                });
                put_body(&mut reply, &self.secrets.bytes(&answer.body));
                reply
            }
            // Replayed: the recorded status and response, as JSON (or text).
            (None, Some(status)) => {
                let (body, content_type) = match &outcome.response {
                    Value::String(text) => (text.clone().into_bytes(), "text/plain; charset=utf-8"),
                    Value::Null => (Vec::new(), "application/json"),
                    other => (other.to_string().into_bytes(), "application/json"),
                };
                let mut reply = json!({
                    "ok": true,
                    "id": call.id,
                    "status": status,
                    "reason": reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or(""),
                    "headers": [["content-type", content_type]],
                    "url": url_text,
                    "duration_ms": call.duration_ms,
                });
                put_body(&mut reply, &body);
                reply
            }
            (None, None) => json!({"ok": false, "id": call.id, "error": {
                "message": call.error.clone().unwrap_or_else(|| "the request failed".into()),
            }}),
        };
        (reply, outcome.held.take())
    }

    /// Which toolset and tool an HTTP-dialect request is for, and its arguments by the tool's
    /// parameter names (path parameters, query, headers the tool declares, JSON body members),
    /// typed by the parameter schemas; the toolset's auth parameter is not an argument. A request
    /// under a base URL that matches no endpoint is traced as `toolset.<METHOD /path>`.
    fn endpoint_of(
        &self,
        method: &str,
        url: &reqwest::Url,
        headers: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Option<(&Toolset, String, Map<String, Value>)> {
        let mut without_query = url.clone();
        without_query.set_query(None);
        without_query.set_fragment(None);
        let split = endpoint::split_url(without_query.as_str(), &self.catalog)?;
        let toolset = self.catalog.toolset(&split.toolset)?;
        let segments: Vec<endpoint::Segment> = split
            .segments
            .iter()
            .map(|s| endpoint::Segment { text: super::escapes::percent_decode(&s.text), start: s.start })
            .collect();
        let auth_query = toolset.auth.as_ref().and_then(|a| a.query.clone());
        let mut arguments = Map::new();
        let tool = match endpoint::match_endpoint(toolset, method, &segments) {
            Matched::Tool(m) => {
                for (name, index) in &m.path_params {
                    let value = segments.get(*index).map(|s| s.text.clone()).unwrap_or_default();
                    let param =
                        m.tool.params.iter().find(|p| p.location == ParamLocation::Path && &p.wire_name == name);
                    let key = param.map(|p| p.name.clone()).unwrap_or_else(|| name.clone());
                    arguments.insert(key, typed(&*toolset.schemas, param.map(|p| &p.schema), &value));
                }
                Some(m.tool)
            }
            _ => None,
        };
        for (name, value) in url.query_pairs() {
            if auth_query.as_deref() == Some(name.as_ref()) {
                continue;
            }
            let param =
                tool.and_then(|t| t.params.iter().find(|p| p.location == ParamLocation::Query && p.wire_name == name));
            let key = param.map(|p| p.name.clone()).unwrap_or_else(|| name.to_string());
            let value = typed(&*toolset.schemas, param.map(|p| &p.schema), &value);
            match arguments.get_mut(&key) {
                Some(Value::Array(items)) => items.push(value),
                Some(existing) => *existing = Value::Array(vec![existing.clone(), value]),
                None => {
                    arguments.insert(key, value);
                }
            }
        }
        if let Some(tool) = tool {
            for param in tool.params.iter().filter(|p| p.location == ParamLocation::Header) {
                if let Some((_, v)) = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(&param.wire_name)) {
                    arguments.insert(param.name.clone(), typed(&*toolset.schemas, Some(&param.schema), v));
                }
            }
        }
        if let Some(body) = body.filter(|b| !b.is_empty()) {
            let decoded = http::decode_body(body);
            let body_params: Vec<_> = tool
                .map(|t| t.params.iter().filter(|p| p.location == ParamLocation::Body).collect())
                .unwrap_or_default();
            match &decoded {
                Value::Object(members) if !(body_params.len() == 1 && body_params[0].name == "body") => {
                    for (wire, value) in members {
                        let key = body_params
                            .iter()
                            .find(|p| &p.wire_name == wire)
                            .map(|p| p.name.clone())
                            .unwrap_or_else(|| wire.clone());
                        arguments.insert(key, value.clone());
                    }
                }
                _ => {
                    arguments.insert("body".into(), decoded);
                }
            }
        }
        let id = match tool {
            Some(tool) => tool.id(),
            None => format!("{}.<{method} {}>", toolset.name, endpoint::display_path(&segments)),
        };
        Some((toolset, id, arguments))
    }
}

/// Why a toolset's auth could not be added.
fn missing_auth(toolset: &Toolset, auth: &crate::toolset::Auth) -> String {
    match &auth.value_env {
        Some(var) => format!("no auth value: the environment variable {var} is not set"),
        None => format!("no auth value: give toolset `{}` an `auth` with `value_env` in chainsmith.toml", toolset.name),
    }
}

fn put_body(reply: &mut Value, body: &[u8]) {
    match std::str::from_utf8(body) {
        Ok(text) => reply["body"] = Value::String(text.to_string()),
        Err(_) => reply["body_latin1"] = Value::String(body.iter().map(|&b| b as char).collect()),
    }
}

fn line_of(message: &Value) -> Option<u32> {
    message.get("line").and_then(Value::as_u64).map(|l| l as u32)
}

/// A text value from a URL or header as the parameter's schema types it (integers, numbers,
/// booleans), so both dialects trace the same arguments.
fn typed(refs: &dyn crate::toolset::schema::Refs, schema: Option<&Value>, text: &str) -> Value {
    let types = schema.map(|s| crate::toolset::schema::types(refs, s)).unwrap_or_default();
    match types.iter().copied().find(|t| *t != "null") {
        Some("integer") => text.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(text.into())),
        Some("number") => match text.parse::<i64>() {
            Ok(i) => Value::from(i),
            Err(_) => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .unwrap_or_else(|| Value::String(text.into())),
        },
        Some("boolean") if text == "true" || text == "false" => Value::Bool(text == "true"),
        _ => Value::String(text.into()),
    }
}

/// The largest message a program may send the host (16 MiB): tool arguments and request bodies
/// are far smaller, and a line read without end would grow chainsmith, outside the sandbox's
/// memory limit, without bound.
const MAX_MESSAGE: usize = 16 << 20;

/// The most bytes of messages the host holds at once, over all connections (64 MiB): many
/// connections each sending a message just under [`MAX_MESSAGE`] are refused past it.
const MAX_BUFFERED: usize = 64 << 20;

/// The most connections the host serves at once (512, above the default `max_processes`: each
/// process of a program holds one connection, so a pool of workers never waits for another's).
const MAX_CONNECTIONS: usize = 512;

/// Why a message was not read.
#[derive(Debug, thiserror::Error)]
enum MessageRefused {
    #[error("a message larger than {} MiB", MAX_MESSAGE >> 20)]
    TooLarge,
    #[error("messages of more than {} MiB at once over all connections", MAX_BUFFERED >> 20)]
    TooMuchAtOnce,
    #[error("the connection closed")]
    Closed,
}

/// Reads one message (a line) into `line`, counting what it holds in `buffered` as it grows:
/// `Ok(false)` at the end of the connection.
fn read_message(
    reader: &mut BufReader<UnixStream>,
    line: &mut Vec<u8>,
    buffered: &std::sync::atomic::AtomicUsize,
) -> Result<bool, MessageRefused> {
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(MessageRefused::Closed),
        };
        if available.is_empty() {
            return Ok(!line.is_empty());
        }
        let (taken, complete) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..taken]);
        reader.consume(taken);
        let total = buffered.fetch_add(taken, Ordering::SeqCst) + taken;
        if line.len() > MAX_MESSAGE + 1 {
            return Err(MessageRefused::TooLarge);
        }
        if total > MAX_BUFFERED {
            return Err(MessageRefused::TooMuchAtOnce);
        }
        if complete {
            return Ok(true);
        }
    }
}

/// A message's bytes counted in the host's `buffered`, uncounted when dropped.
struct Held<'a>(&'a std::sync::atomic::AtomicUsize, usize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::SeqCst);
    }
}

/// The connections being served, counted so no more than [`MAX_CONNECTIONS`] are at once.
#[derive(Default)]
struct OpenConnections {
    count: Mutex<usize>,
    freed: std::sync::Condvar,
}

/// One connection's place among [`OpenConnections`], given back when dropped.
struct ConnectionSlot(Arc<OpenConnections>);

impl OpenConnections {
    /// A place for one more connection, waiting while all are taken.
    fn take(self: &Arc<Self>) -> ConnectionSlot {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *count >= MAX_CONNECTIONS {
            count = self.freed.wait(count).unwrap_or_else(|e| e.into_inner());
        }
        *count += 1;
        ConnectionSlot(self.clone())
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        *self.0.count.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        self.0.freed.notify_one();
    }
}

/// The next connection sent through the door: `None` when the door is closed, `Some(None)` for
/// a message that carried no Unix stream socket (ignored; whatever came with it is closed).
fn next_connection(door: &UnixStream) -> Option<Option<UnixStream>> {
    let mut byte = 0u8;
    let mut iov = libc::iovec { iov_base: (&raw mut byte).cast(), iov_len: 1 };
    // Room for one control message with one descriptor, aligned as `cmsghdr` needs; a message
    // with more is cut short and the kernel closes the rest.
    let mut control = [0u64; 8];
    // SAFETY: a zeroed msghdr is a valid empty one.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &mut iov;
    header.msg_iovlen = 1;
    header.msg_control = control.as_mut_ptr().cast();
    header.msg_controllen = std::mem::size_of_val(&control) as _;
    let received = loop {
        // SAFETY: recvmsg writes into the buffers `header` points at, which outlive the call.
        let n = unsafe { libc::recvmsg(door.as_raw_fd(), &mut header, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break n;
    };
    if received <= 0 {
        return None;
    }
    let mut fds: Vec<OwnedFd> = Vec::new();
    // SAFETY: the CMSG macros walk the control buffer the kernel filled in; each descriptor of an
    // SCM_RIGHTS message is new in this process and owned here.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                fds.extend((0..count).map(|i| OwnedFd::from_raw_fd(data.add(i).read_unaligned())));
            }
            cmsg = libc::CMSG_NXTHDR(&header, cmsg);
        }
    }
    let Some(fd) = fds.into_iter().next() else { return Some(None) };
    let is_unix_stream = socket_option(&fd, libc::SO_TYPE) == Some(libc::SOCK_STREAM)
        && socket_option(&fd, libc::SO_DOMAIN) == Some(libc::AF_UNIX);
    Some(is_unix_stream.then(|| UnixStream::from(fd)))
}

/// An integer `SOL_SOCKET` option of a socket (`None` for anything that is not one).
fn socket_option(fd: &OwnedFd, option: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `length` bytes into `value`.
    let rc =
        unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, option, (&raw mut value).cast(), &mut length) };
    (rc == 0).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_text_is_decoded_and_typed() {
        assert_eq!(super::super::escapes::percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(super::super::escapes::percent_decode("100%"), "100%");
        assert_eq!(typed(&crate::toolset::schema::NoRefs, Some(&json!({"type": "integer"})), "1769"), json!(1769));
        assert_eq!(typed(&crate::toolset::schema::NoRefs, Some(&json!({"type": "number"})), "7.5"), json!(7.5));
        assert_eq!(typed(&crate::toolset::schema::NoRefs, Some(&json!({"type": "boolean"})), "true"), json!(true));
        assert_eq!(typed(&crate::toolset::schema::NoRefs, Some(&json!({"type": "integer"})), "abc"), json!("abc"));
        assert_eq!(typed(&crate::toolset::schema::NoRefs, None, "x"), json!("x"));
    }
}
