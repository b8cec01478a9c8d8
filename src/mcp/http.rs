//! The Streamable HTTP transport (MCP 2025-03-26 and later) to a remote server: every message is a
//! POST on a thread of its own, answered by 202, one JSON message or an event stream; what comes
//! back is dispatched as a stdio line would be. Also the standalone GET stream ([`listen`]) and
//! the session's end (DELETE).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::{
    KEPT_LINE_CHARS, LONGEST_EXCHANGE, MAX_MESSAGE_BYTES, McpClient, McpError, McpErrorKind, Shared, TRANSPORT_FAILURE,
    lock, spawn_thread,
};
use crate::config::McpConfig;
use crate::trust::redact_url;

/// A remote server spoken to over Streamable HTTP (MCP 2025-03-26 and later): every message the
/// client sends is a POST of its own, on a thread of its own, answered by nothing (202), by one
/// JSON message, or by an event stream of messages (the server's own requests and notifications,
/// then the response); each is dispatched as a line from a stdio server would be, so both
/// transports share every rule of the bookkeeping (`Shared`). The session id the server gives at `initialize` and the
/// negotiated version go with every later request; the session is ended with a DELETE. After the
/// handshake a GET stream is kept open for what the server sends outside any request (a
/// `list_changed`, a ping), reopened when the server ends it, given up on when the server offers
/// none (405) or refuses it three times in a row.
pub(super) struct Remote {
    url: String,
    http: reqwest::blocking::Client,
    session: Mutex<Option<String>>,
    pub(super) protocol_version: Mutex<Option<String>>,
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
    pub(super) fn end_session(&self) {
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
    pub(super) fn connect(name: &str, url: &str, config: &McpConfig, root: &Path) -> anyhow::Result<McpClient> {
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
        let remote =
            Remote { url: url.to_string(), http, session: Mutex::new(None), protocol_version: Mutex::new(None) };
        let shared = Arc::new(Shared::new(name, outbox, root, Some(remote)));
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
