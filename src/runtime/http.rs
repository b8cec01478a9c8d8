//! HTTP execution for the host: a tool call becomes a request by the protocol's parameter placement
//! (path / query / header / cookie / body, by wire name) on the toolset's base URL with its auth;
//! an HTTP-dialect request is sent as the program built it, with the toolset's auth added when the
//! program left it out.
//!
//! Redirects are followed here, not by reqwest (which keeps every header but Authorization and
//! Cookie): a hop to another origin drops every header that carries a secret — the toolset's auth
//! header, `Authorization`, `Proxy-Authorization`, `Cookie` — and a request with a body is not
//! resent to another origin at all (the redirect is the answer), nor is any request sent on from
//! elsewhere to this machine or its private network, by address ([`crate::trust::is_local`]) or
//! by what its name resolves to. Each hop also goes only where the host's `may_reach` lets it (a
//! local origin the workspace is trusted to call). Credentials written into
//! a URL (`https://user:pass@host`) become `Authorization: Basic` only when the request has no
//! `Authorization` of its own, so they never replace a trusted header, and they never appear in
//! an answer's URL or an error.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

#[cfg(test)]
use crate::toolset::Transport;
use crate::toolset::{Auth, ParamLocation, Tool, Toolset};

/// A request ready to send.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub method: String,
    pub url: reqwest::Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// Names of the headers chainsmith added that carry a secret (the toolset's auth header).
    pub secret_headers: Vec<String>,
    /// Whether the body carries a secret (a ToolBench server's `toolbench_key`).
    pub secret_body: bool,
}

impl Prepared {
    pub fn new(method: String, url: reqwest::Url, headers: Vec<(String, String)>, body: Option<Vec<u8>>) -> Prepared {
        Prepared { method, url, headers, body, secret_headers: Vec::new(), secret_body: false }
    }
}

/// Redirects followed before the answer is the redirect itself (as browsers and reqwest: 10).
const MAX_REDIRECTS: usize = 10;

/// Headers that carry credentials whoever set them; they never follow a redirect to another origin.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "proxy-authorization", "cookie"];

/// What came back.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub url: String,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON when it is JSON, else as text; `null` when empty.
    pub fn decoded(&self) -> Value {
        decode_body(&self.body)
    }
}

/// The host's HTTP client; it follows no redirect itself ([`send`] does, minding secrets), and
/// resolves names through [`crate::trust::Resolver::for_trust`].
pub fn client(trust: &crate::trust::Trust) -> Client {
    Client::builder()
        .user_agent(concat!("chainsmith/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(crate::trust::Resolver::for_trust(trust)))
        .build()
        .unwrap_or_default()
}

pub fn decode_body(body: &[u8]) -> Value {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Value::Null;
    }
    let as_text = || Value::String(String::from_utf8_lossy(body).into_owned());
    // An answer of more values than chainsmith parses reaches the program as its text, to parse
    // (if it must) inside the sandbox's memory limit rather than in chainsmith.
    if crate::files::json_values(body, crate::files::MAX_JSON_VALUES) > crate::files::MAX_JSON_VALUES {
        return as_text();
    }
    serde_json::from_slice(body).unwrap_or_else(|_| as_text())
}

/// A short, single-line description of an error answer: the API's own message when its JSON body
/// has one (`status_message`, `message`, `error`, `detail`), else the start of the body.
pub fn error_excerpt(answer: &Answer) -> String {
    let decoded = answer.decoded();
    let from_json = ["status_message", "message", "error_description", "error", "detail", "title"]
        .iter()
        .find_map(|k| decoded.get(k).and_then(Value::as_str).filter(|s| !s.trim().is_empty()))
        .map(str::to_string);
    let text = from_json.unwrap_or_else(|| {
        let body = String::from_utf8_lossy(&answer.body);
        body.split_whitespace().collect::<Vec<_>>().join(" ")
    });
    let reason = if answer.reason.is_empty() { String::new() } else { format!(" {}", answer.reason) };
    if text.is_empty() {
        format!("{}{reason}", answer.status)
    } else {
        format!("{}{reason}: {}", answer.status, crate::text::shorten(&text, 300))
    }
}

/// A scalar as it travels in a path segment, query string or header.
pub fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items.iter().map(scalar_text).collect::<Vec<_>>().join(","),
        Value::Object(_) => value.to_string(),
    }
}

/// A path segment: everything but RFC 3986's unreserved characters escaped.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn percent_encode_segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, SEGMENT).to_string()
}

/// The auth value of a toolset, from the environment variable its auth names.
pub fn auth_value(auth: &Auth) -> Option<String> {
    let var = auth.value_env.as_deref()?;
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

/// The request for a module-dialect call of an HTTP tool. `arguments` are keyed by the Python
/// parameter names; a name the tool does not declare is an error (the analysis flags it too).
pub fn tool_request(
    toolset: &Toolset,
    tool: &Tool,
    method: &str,
    path: &str,
    arguments: &Map<String, Value>,
) -> Result<Prepared, String> {
    let Some(base) = toolset.base_url.as_deref() else {
        return Err(format!(
            "toolset `{}` has no base URL, so {} cannot run: set `base_url` for it in chainsmith.toml",
            toolset.name,
            tool.id()
        ));
    };
    let mut path = path.to_string();
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut cookies: Vec<String> = Vec::new();
    let mut body = Map::new();
    let mut whole_body: Option<&Value> = None;
    let body_method = !matches!(method.to_ascii_uppercase().as_str(), "GET" | "DELETE" | "HEAD" | "OPTIONS");
    for (name, value) in arguments {
        let Some(param) = tool.param(name) else {
            return Err(unknown_argument(tool, name));
        };
        let wire = param.wire_name.as_str();
        let location = match param.location {
            ParamLocation::Argument if body_method => ParamLocation::Body,
            ParamLocation::Argument => ParamLocation::Query,
            other => other,
        };
        match location {
            ParamLocation::Path => {
                let placeholder = format!("{{{wire}}}");
                path = path.replace(&placeholder, &percent_encode_segment(&scalar_text(value)));
            }
            ParamLocation::Query => match value {
                Value::Null => {}
                Value::Array(items) => query.extend(items.iter().map(|v| (wire.to_string(), scalar_text(v)))),
                other => query.push((wire.to_string(), scalar_text(other))),
            },
            ParamLocation::Header => headers.push((wire.to_string(), scalar_text(value))),
            ParamLocation::Cookie => cookies.push(format!("{wire}={}", scalar_text(value))),
            ParamLocation::Body | ParamLocation::Argument => {
                let only_body = tool.params.iter().filter(|p| p.location == ParamLocation::Body).count() == 1;
                if only_body && wire == "body" && param.name == "body" {
                    whole_body = Some(value);
                } else {
                    body.insert(wire.to_string(), value.clone());
                }
            }
        }
    }
    if let Some(missing) = tool.required().find(|p| !arguments.contains_key(&p.name)) {
        return Err(format!("missing the required argument `{}`", missing.name));
    }
    if let Some(start) = path.find('{')
        && let Some(len) = path[start..].find('}')
    {
        return Err(format!("no value for the path parameter `{}`", &path[start + 1..start + len]));
    }
    let mut url = reqwest::Url::parse(&format!("{}{}", base.trim_end_matches('/'), path))
        .map_err(|e| format!("{}: the URL {}{path} is not valid: {e}", tool.id(), crate::trust::redact_url(base)))?;
    if !query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for (k, v) in &query {
            pairs.append_pair(k, v);
        }
    }
    if !cookies.is_empty() {
        headers.push(("Cookie".into(), cookies.join("; ")));
    }
    let body = match (whole_body, body.is_empty()) {
        (Some(value), _) => Some(serde_json::to_vec(value).unwrap_or_default()),
        (None, false) => Some(serde_json::to_vec(&Value::Object(body)).unwrap_or_default()),
        (None, true) => None,
    };
    if body.is_some() {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    headers.push(("Accept".into(), "application/json".into()));
    Ok(Prepared::new(method.to_ascii_uppercase(), url, headers, body))
}

fn unknown_argument(tool: &Tool, name: &str) -> String {
    let known = || tool.params.iter().map(|p| p.name.as_str());
    let hint = match crate::diagnostic::did_you_mean(name, known()) {
        Some(close) => format!("; did you mean `{close}`?"),
        None if tool.params.is_empty() => "; it takes no arguments".into(),
        None => format!("; it takes {}", crate::text::some_of(known(), 20)),
    };
    format!("unknown argument `{}`{hint}", crate::text::quoted(name))
}

/// The request for a ToolBench tool on a ToolBench-style server (`base_url` of its toolset): a POST
/// of `{category, tool_name, api_name, tool_input, strip, toolbench_key}`, as ToolBench's and
/// StableToolBench's servers take it.
pub fn toolbench_request(
    toolset: &Toolset,
    tool: &Tool,
    arguments: &Map<String, Value>,
    key: Option<&str>,
) -> Result<Prepared, String> {
    let Some(base) = toolset.base_url.as_deref() else {
        return Err(no_transport(toolset, tool));
    };
    let mut input = Map::new();
    for (name, value) in arguments {
        let Some(param) = tool.param(name) else { return Err(unknown_argument(tool, name)) };
        input.insert(param.wire_name.clone(), value.clone());
    }
    if let Some(missing) = tool.required().find(|p| !arguments.contains_key(&p.name)) {
        return Err(format!("missing the required argument `{}`", missing.name));
    }
    let body = serde_json::json!({
        "category": tool.category,
        "tool_name": tool.source.tool.clone().unwrap_or_default(),
        "api_name": tool.source.api.clone().unwrap_or_default(),
        "tool_input": Value::Object(input),
        "strip": "",
        "toolbench_key": key.unwrap_or(""),
    });
    let url = reqwest::Url::parse(base).map_err(|e| {
        format!("toolset `{}`: base_url {} is not valid: {e}", toolset.name, crate::trust::redact_url(base))
    })?;
    Ok(Prepared::new(
        "POST".into(),
        url,
        vec![("Content-Type".into(), "application/json".into())],
        Some(serde_json::to_vec(&body).unwrap_or_default()),
    ))
}

/// The message for a tool that cannot run.
pub fn no_transport(toolset: &Toolset, tool: &Tool) -> String {
    match tool.source.kind {
        crate::toolset::SourceKind::ToolBench => format!(
            "{} cannot run: ToolBench tools carry no URL; give toolset `{}` a `base_url` (a ToolBench or StableToolBench server) in chainsmith.toml",
            tool.id(),
            toolset.name
        ),
        _ => format!("{} cannot run: its protocol gives it no transport (no http, mcp or command)", tool.id()),
    }
}

/// A ToolBench server's answer `{"error": "...", "response": ...}` as the tool's own outcome: the
/// response (decoded when it is JSON text), or the error.
pub fn toolbench_outcome(answer: &Value) -> Result<Value, String> {
    let error = answer.get("error").and_then(Value::as_str).unwrap_or("");
    if !error.trim().is_empty() {
        return Err(error.trim().to_string());
    }
    let response = answer.get("response").cloned().unwrap_or_else(|| answer.clone());
    Ok(match &response {
        Value::String(text) => serde_json::from_str(text).unwrap_or(response),
        _ => response,
    })
}

/// Adds a toolset's auth to a request unless the request already carries it.
pub fn add_auth(prepared: &mut Prepared, auth: &Auth, value: &str) {
    if let Some(name) = &auth.query {
        if !prepared.url.query_pairs().any(|(k, _)| k == name.as_str()) {
            prepared.url.query_pairs_mut().append_pair(name, value);
        }
    } else if let Some(name) = &auth.header
        && !prepared.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
    {
        prepared.headers.push((name.clone(), format!("{}{value}", auth.prefix)));
        prepared.secret_headers.push(name.clone());
    }
}

/// Headers a forwarded request must not carry as given: the client sets them itself, and bodies
/// are asked for uncompressed (the host hands them to the program as they are).
fn forwardable(name: &str) -> bool {
    !matches!(
        name.to_ascii_lowercase().as_str(),
        "host" | "content-length" | "connection" | "accept-encoding" | "transfer-encoding" | "keep-alive" | "upgrade"
    )
}

/// The bytes of answers a run holds at once, over all its calls. Each call's answer counts from
/// its first byte read until its reply is written to the program, so a program calling in
/// parallel (a connection per thread or process) cannot make chainsmith, outside the sandbox's
/// memory limit, hold more: past the limit a call fails, saying why.
pub struct AnswerBudget {
    held: AtomicU64,
    limit: u64,
}

impl AnswerBudget {
    pub fn new(limit: u64) -> Arc<AnswerBudget> {
        Arc::new(AnswerBudget { held: AtomicU64::new(0), limit })
    }

    pub fn share(self: &Arc<Self>) -> Share {
        Share { budget: Arc::clone(self), bytes: 0 }
    }
}

/// One call's part of an [`AnswerBudget`]: grown as its answer is read, given back when dropped.
pub struct Share {
    budget: Arc<AnswerBudget>,
    bytes: u64,
}

impl Share {
    /// Counts `more` bytes; `false` (nothing counted) when that would pass the budget's limit.
    fn grow(&mut self, more: u64) -> bool {
        let limit = self.budget.limit;
        // Compared and added at once: two calls near the limit never both back off.
        let grown = self.budget.held.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
            held.checked_add(more).filter(|total| *total <= limit)
        });
        if grown.is_ok() {
            self.bytes += more;
        }
        grown.is_ok()
    }

    fn give_back(&mut self) {
        self.budget.held.fetch_sub(std::mem::take(&mut self.bytes), Ordering::SeqCst);
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// Sends `prepared` and follows its redirects (see the module's doc), all within `timeout`; an
/// answer whose body is longer than `max_body` bytes, or that would pass what `share`'s budget
/// has left, is an error, read no further. `share` holds the answer's bytes on return. Each hop
/// goes only where `may_reach` lets it (the first included); its refusal is the error.
pub fn send(
    client: &Client,
    prepared: &Prepared,
    timeout: Duration,
    max_body: u64,
    share: &mut Share,
    may_reach: &dyn Fn(&reqwest::Url) -> Result<(), String>,
) -> Result<Answer, String> {
    let deadline = std::time::Instant::now() + timeout;
    let mut request = prepared.clone();
    take_url_credentials(&mut request);
    for _ in 0..=MAX_REDIRECTS {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(format!("the request timed out ({})", request.url));
        }
        may_reach(&request.url)?;
        // A redirect's own body is dropped before the next hop's is read.
        share.give_back();
        let answer = send_once(client, &request, left, max_body, share)?;
        match next_hop(&request, &answer) {
            Some(next) => request = next,
            None => return Ok(answer),
        }
    }
    Err(format!("the request was redirected more than {MAX_REDIRECTS} times ({})", request.url))
}

/// Moves credentials written into the URL out of it: into `Authorization: Basic` when the request
/// has no `Authorization` (a trusted header always wins), else nowhere.
fn take_url_credentials(request: &mut Prepared) {
    let url = &mut request.url;
    let Some((user, password)) = super::escapes::url_credentials(url) else { return };
    let credentials = format!("{user}:{password}");
    let _ = url.set_username("");
    let _ = url.set_password(None);
    if !request.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
        let encoded = data_encoding::BASE64.encode(credentials.as_bytes());
        request.headers.push(("Authorization".into(), format!("Basic {encoded}")));
    }
}

/// The request a redirect answer asks for, or `None` when `answer` is the answer: not a redirect,
/// no usable `Location`, or a body holding a secret that would be resent to another origin.
fn next_hop(request: &Prepared, answer: &Answer) -> Option<Prepared> {
    if !matches!(answer.status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = answer.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("location"))?;
    let mut url = request.url.join(&location.1).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    url.set_fragment(None);
    let mut next = request.clone();
    // As browsers do: 303 (and 301/302 after a POST) become a GET without a body.
    let method = request.method.as_str();
    if (answer.status == 303 && method != "HEAD") || (matches!(answer.status, 301 | 302) && method == "POST") {
        next.method = "GET".into();
        next.body = None;
        next.secret_body = false;
        next.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
    }
    let upgrade = request.url.scheme() == "http"
        && url.scheme() == "https"
        && url.host_str() == request.url.host_str()
        && matches!(url.port(), None | Some(443));
    if url.origin() != request.url.origin() {
        // A body goes only where the program sent it (or the same host over https): a bounce
        // would carry it (a container's definition, a key) to an address no toolset names.
        if next.body.is_some() && !upgrade {
            return None;
        }
        // An API elsewhere cannot turn the run's requests toward this machine or its network:
        // a local service (a container daemon's port, a cloud's metadata address) trusts them.
        // A name counts by what it resolves to (behind a proxy, a name only the proxy resolves
        // may lead into its network): a workspace trusted for the session resolves every name,
        // and the API is not the workspace.
        let here = |url: &reqwest::Url| {
            crate::trust::is_local(url)
                || crate::trust::host_name(url).is_some_and(|n| crate::trust::reached_only_with_trust(&n))
        };
        if !here(&request.url) && here(&url) {
            return None;
        }
        next.headers.retain(|(k, _)| {
            !CREDENTIAL_HEADERS.iter().any(|c| k.eq_ignore_ascii_case(c))
                && !request.secret_headers.iter().any(|s| k.eq_ignore_ascii_case(s))
        });
        next.secret_headers.clear();
    }
    next.url = url;
    take_url_credentials(&mut next);
    Some(next)
}

/// Whether `url` lies beneath `base`: the same host and port (the scheme is judged apart, so a
/// default port is compared as written: none), and a
/// path within the base's (`/v3/x` beneath `/v3`, not `/v3x`).
pub fn beneath(url: &reqwest::Url, base: &reqwest::Url) -> bool {
    let base_path = base.path().trim_end_matches('/');
    url.host_str() == base.host_str()
        && url.port() == base.port()
        && url.path().strip_prefix(base_path).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn send_once(
    client: &Client,
    prepared: &Prepared,
    timeout: Duration,
    max_body: u64,
    share: &mut Share,
) -> Result<Answer, String> {
    let method = reqwest::Method::from_bytes(prepared.method.as_bytes())
        .map_err(|_| format!("`{}` is not an HTTP method", prepared.method))?;
    let mut headers = HeaderMap::new();
    for (k, v) in &prepared.headers {
        if !forwardable(k) {
            continue;
        }
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) else {
            return Err(format!("the header `{k}` is not valid HTTP"));
        };
        headers.append(name, value);
    }
    let mut request = client.request(method, prepared.url.clone()).headers(headers).timeout(timeout);
    if let Some(body) = &prepared.body {
        request = request.body(body.clone());
    }
    let mut response = request.send().map_err(describe_transport_error)?;
    let status = response.status();
    let url = response.url().to_string();
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let too_large = || {
        format!(
            "the answer of {} is larger than {} MiB ([runtime] max_response_mb); it was not read",
            without_query(&prepared.url),
            max_body >> 20
        )
    };
    if response.content_length().is_some_and(|length| length > max_body) {
        return Err(too_large());
    }
    // gzip and deflate are decoded as read (and capped decoded); any other coding was not asked
    // for, and what chainsmith cannot read it cannot keep a key out of.
    if let Some((_, coding)) = headers
        .iter()
        .find(|(k, v)| k.eq_ignore_ascii_case("content-encoding") && !v.trim().eq_ignore_ascii_case("identity"))
    {
        return Err(format!(
            "the answer of {} came encoded as `{}`, which chainsmith did not ask for and does not read",
            without_query(&prepared.url),
            crate::text::printable(coding)
        ));
    }
    let mut body = Vec::new();
    let mut piece = vec![0u8; 64 << 10];
    use std::io::Read;
    loop {
        let read = match response.read(&mut piece) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // reqwest hands its own error through `Read`; described as a failed send is.
            Err(e) => {
                return Err(match e.into_inner().map(|inner| inner.downcast::<reqwest::Error>()) {
                    Some(Ok(transport)) => describe_transport_error(*transport),
                    Some(Err(other)) => format!("the request failed: {other} ({})", without_query(&prepared.url)),
                    None => format!("the request failed ({})", without_query(&prepared.url)),
                });
            }
        };
        if (body.len() + read) as u64 > max_body {
            return Err(too_large());
        }
        if !share.grow(read as u64) {
            return Err(format!(
                "the answer of {} would take chainsmith past {} MiB of answers held at once over all calls \
                 (twice [runtime] max_response_mb); fewer calls at once get their answers",
                without_query(&prepared.url),
                share.budget.limit >> 20
            ));
        }
        body.extend_from_slice(&piece[..read]);
    }
    Ok(Answer {
        status: status.as_u16(),
        reason: status.canonical_reason().unwrap_or("").to_string(),
        headers,
        body,
        url,
    })
}

/// A URL as errors show it: its query may hold a key.
fn without_query(url: &reqwest::Url) -> reqwest::Url {
    let mut url = url.clone();
    url.set_query(None);
    url
}

fn describe_transport_error(e: reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    let mut message = format!("the request {what}");
    if let Some(cause) = crate::logging::root_cause(&e) {
        message.push_str(&format!(": {cause}"));
    }
    if let Some(url) = e.url() {
        message.push_str(&format!(" ({})", without_query(url)));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolset::test_support::openapi_catalog;
    use serde_json::json;

    const SPEC: &str = r#"
openapi: 3.0.0
info: {title: t, version: "1"}
servers: [{url: "http://h:1/v3/"}]
paths:
  /items/{item-id}:
    post:
      parameters:
        - {name: item-id, in: path, required: true, schema: {type: string}}
        - {name: vote_average.gte, in: query, schema: {type: number}}
        - {name: tags, in: query, schema: {type: array, items: {type: string}}}
        - {name: X-Trace, in: header, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [name]
              properties: {name: {type: string}, from: {type: integer}}
      responses: {"200": {description: ok}}
  /whole:
    put:
      requestBody:
        content: {application/json: {schema: {type: array, items: {type: integer}}}}
      responses: {"200": {description: ok}}
"#;

    #[test]
    fn parameters_go_where_the_protocol_says() {
        let catalog = openapi_catalog("ts", SPEC, None);
        let toolset = &catalog.toolsets[0];
        let tool = catalog.tool("ts", "post_items").expect("POST /items/{item-id} is post_items");
        let Transport::Http { method, path } = &tool.transport else { panic!("an HTTP tool") };
        let args = json!({"item_id": "a b/c", "vote_average_gte": 7.5, "tags": ["x", "y"], "x_trace": "1",
                          "name": "n", "from_": 3});
        let prepared = tool_request(toolset, tool, method, path, args.as_object().unwrap()).unwrap();
        assert_eq!(prepared.method, "POST");
        assert_eq!(prepared.url.as_str(), "http://h:1/v3/items/a%20b%2Fc?vote_average.gte=7.5&tags=x&tags=y");
        assert!(prepared.headers.contains(&("X-Trace".into(), "1".into())), "{:?}", prepared.headers);
        let body: Value = serde_json::from_slice(prepared.body.as_ref().unwrap()).unwrap();
        assert_eq!(body, json!({"name": "n", "from": 3}));

        let mut p = prepared.clone();
        add_auth(&mut p, &Auth { query: Some("api_key".into()), ..Default::default() }, "k");
        assert!(p.url.as_str().ends_with("&api_key=k"));
        let mut p = prepared;
        let bearer = Auth { header: Some("Authorization".into()), prefix: "Bearer ".into(), ..Default::default() };
        add_auth(&mut p, &bearer, "k");
        assert!(p.headers.contains(&("Authorization".into(), "Bearer k".into())));

        let err = tool_request(toolset, tool, method, path, json!({"nme": 1}).as_object().unwrap()).unwrap_err();
        assert_eq!(err, "unknown argument `nme`; did you mean `name`?");
        let err = tool_request(toolset, tool, method, path, json!({"name": "n"}).as_object().unwrap()).unwrap_err();
        assert_eq!(err, "missing the required argument `item_id`");
    }

    #[test]
    fn a_single_body_parameter_is_the_whole_body() {
        let catalog = openapi_catalog("ts", SPEC, None);
        let tool = catalog.tool("ts", "put_whole").unwrap();
        let Transport::Http { method, path } = &tool.transport else { panic!("an HTTP tool") };
        let prepared =
            tool_request(&catalog.toolsets[0], tool, method, path, json!({"body": [1, 2]}).as_object().unwrap())
                .unwrap();
        assert_eq!(prepared.body.as_deref(), Some(&b"[1,2]"[..]));
    }

    #[test]
    fn error_answers_are_summarised() {
        let answer = |body: &str| Answer {
            status: 404,
            reason: "Not Found".into(),
            headers: vec![],
            body: body.as_bytes().to_vec(),
            url: String::new(),
        };
        assert_eq!(
            error_excerpt(&answer(r#"{"status_code": 34, "status_message": "The resource could not be found."}"#)),
            "404 Not Found: The resource could not be found."
        );
        assert_eq!(error_excerpt(&answer("<h1>nope</h1>\n  gone")), "404 Not Found: <h1>nope</h1> gone");
        assert_eq!(error_excerpt(&answer("")), "404 Not Found");
        assert_eq!(toolbench_outcome(&json!({"error": "", "response": "{\"a\": 1}"})).unwrap(), json!({"a": 1}));
        assert_eq!(toolbench_outcome(&json!({"error": "Rate limit", "response": ""})).unwrap_err(), "Rate limit");
    }

    /// A redirect is followed to another origin only without a body, and never from elsewhere
    /// toward this machine or its private network (a container daemon, a cloud's metadata).
    #[test]
    fn a_redirect_never_bounces_a_body_or_a_request_toward_this_machine() {
        let request = |method: &str, url: &str, body: Option<&str>| {
            Prepared::new(method.into(), url.parse().unwrap(), vec![], body.map(|b| b.as_bytes().to_vec()))
        };
        let redirect = |status: u16, to: &str| Answer {
            status,
            reason: String::new(),
            headers: vec![("Location".into(), to.into())],
            body: vec![],
            url: String::new(),
        };
        let followed = |prepared: &Prepared, answer: &Answer| next_hop(prepared, answer).map(|n| n.url.to_string());
        let get = request("GET", "https://api.example.com/a", None);
        assert_eq!(
            followed(&get, &redirect(302, "https://cdn.example.net/b")).as_deref(),
            Some("https://cdn.example.net/b")
        );
        for local in [
            "http://127.0.0.1:2375/containers/create",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.8/admin",
            "http://[::1]:8888/",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost:6443/",
            "http://api.localhost./",
        ] {
            assert_eq!(followed(&get, &redirect(307, local)), None, "{local}");
        }
        // A name counts by what it resolves to (here this machine's own name, where it does).
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string();
        if crate::trust::resolves_here(&host) {
            assert_eq!(followed(&get, &redirect(307, &format!("http://{host}:2375/"))), None, "{host}");
        }
        let local_get = request("GET", "http://127.0.0.1:8000/a", None);
        assert!(followed(&local_get, &redirect(307, "http://127.0.0.1:9000/b")).is_some(), "local to local");
        let post = request("POST", "https://api.example.com/a", Some("{\"Image\": \"alpine\"}"));
        assert_eq!(followed(&post, &redirect(307, "https://other.example.org/b")), None, "a body stays");
        assert!(followed(&post, &redirect(307, "https://api.example.com/c")).is_some(), "same origin");
        assert_eq!(
            followed(&post, &redirect(303, "https://other.example.org/b")).as_deref(),
            Some("https://other.example.org/b")
        );
        let plain = request("POST", "http://api.example.com/a", Some("{}"));
        assert!(followed(&plain, &redirect(308, "https://api.example.com/a")).is_some(), "the same host over https");
    }

    /// A name that resolves to this machine (here its own host name, where it does) gives its
    /// addresses only to a trusted workspace's client; `localhost` always does, being judged as
    /// an address by `send`'s `may_reach`.
    #[test]
    fn a_name_on_this_machine_resolves_only_for_a_trusted_workspace() {
        use reqwest::dns::Resolve;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let resolve = |private_names: bool, name: &str| {
            let trust = if private_names { crate::trust::Trust::Session } else { crate::trust::Trust::Untrusted };
            let name: reqwest::dns::Name = name.parse().unwrap();
            runtime.block_on(crate::trust::Resolver::for_trust(&trust).resolve(name)).map(|a| a.collect::<Vec<_>>())
        };
        assert!(resolve(false, "localhost").is_ok_and(|a| !a.is_empty()));
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string();
        let found = resolve(true, &host).unwrap_or_default();
        if found.is_empty() || !found.iter().all(|a| crate::trust::is_local_ip(a.ip())) {
            eprintln!("skipped the rest: this machine's name `{host}` resolves to no address of its own ({found:?})");
            return;
        }
        let refused = resolve(false, &host).unwrap_err().to_string();
        assert!(refused.starts_with(&format!("{host} resolves to ")), "{refused}");
        assert!(refused.contains("on this machine or its private network"), "{refused}");
    }

    /// A key goes only beneath its base URL: a protocol's path is appended as written, and one not
    /// starting with `/` could name another host.
    #[test]
    fn a_request_is_beneath_its_base_url_only_on_its_host_and_path() {
        let base: reqwest::Url = "https://api.github.com/v3".parse().unwrap();
        let under = |url: &str| beneath(&url.parse().unwrap(), &base);
        assert!(under("https://api.github.com/v3/repos") && under("https://api.github.com:443/v3"));
        assert!(under("http://api.github.com/v3/repos"), "the scheme is judged apart");
        for elsewhere in [
            "https://api.github.com.evil.example/v3/x",
            "https://evil.example/x",
            "https://api.github.com:8443/v3/x",
            "https://api.github.com/v3x",
            "https://api.github.com/other",
        ] {
            assert!(!under(elsewhere), "{elsewhere}");
        }
    }
}
