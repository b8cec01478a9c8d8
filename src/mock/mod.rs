//! A mock of the workspace's HTTP APIs, built from their protocols: every HTTP tool answers at
//! `http://127.0.0.1:PORT/<toolset><path>` with the example its protocol gives for the response,
//! else with data generated from its response schema. Programs then run offline (`chainsmith
//! mock`, `chainsmith run --mock`) and benchmark tasks run where the real APIs cannot be reached
//! (`chainsmith eval`).
//!
//! What a program sees is what the real API would say about its *request*: an unknown path is a
//! 404, a wrong method a 405, a missing required query parameter a 400 naming it (an array read in
//! every form OpenAPI allows: repeated, `name[]`, delimited), a literal that
//! does not fit its parameter's schema (type, enum) a 400 too. Answers are deterministic within a
//! session: generated values are seeded by (session, tool, arguments), and a path parameter named
//! like an id is echoed into the answer's top-level `id`, so `movie(movie_id=550)["id"]` is 550
//! and ids stay consistent across the calls of one task. [`MockServer::reset`] starts a new
//! session (a new task).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use serde_json::{Map, Value, json};

use crate::toolset::doc::text_weight;
use crate::toolset::endpoint::{self, Matched, Segment};
use crate::toolset::refs::value_weight_past;
use crate::toolset::schema::{self, Refs};
use crate::toolset::{Catalog, ParamLocation, Tool, Transport};

/// A running mock; stops when dropped.
pub struct MockServer {
    address: SocketAddr,
    state: Arc<State>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

struct State {
    catalog: Arc<Catalog>,
    session: AtomicU64,
    /// Requests answered in this session, by tool id (for tests and `eval`'s report).
    calls: Mutex<HashMap<String, u32>>,
}

impl MockServer {
    /// Serves every toolset of `catalog` that has HTTP tools, on `bind` (port 0: any free port).
    ///
    /// hyper serves it, on a thread of its own: a request's body is never read (no answer depends
    /// on one), so what a request declares it will send costs nothing.
    pub fn start(catalog: Arc<Catalog>, bind: SocketAddr) -> std::io::Result<MockServer> {
        let listener = std::net::TcpListener::bind(bind)?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let state = Arc::new(State { catalog, session: AtomicU64::new(1), calls: Mutex::default() });
        let (stop, stopped) = tokio::sync::oneshot::channel();
        // The runtime is made, and dropped, on the mock's thread: dropping one where a runtime
        // already runs (the language server's) would panic.
        let (started, starting) = std::sync::mpsc::channel();
        let thread = {
            let state = state.clone();
            std::thread::Builder::new().name("chainsmith-mock".into()).spawn(move || {
                let ready = tokio::runtime::Builder::new_current_thread().enable_all().build().and_then(|runtime| {
                    let listener = {
                        let _entered = runtime.enter();
                        tokio::net::TcpListener::from_std(listener)?
                    };
                    Ok((runtime, listener))
                });
                match ready {
                    Ok((runtime, listener)) => {
                        let _ = started.send(Ok(()));
                        runtime.block_on(serve(listener, state, stopped));
                    }
                    Err(e) => {
                        let _ = started.send(Err(e));
                    }
                }
            })?
        };
        starting.recv().map_err(std::io::Error::other)??;
        Ok(MockServer { address, state, stop: Some(stop), thread: Some(thread) })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The base URL standing in for `toolset`'s.
    pub fn base_url(&self, toolset: &str) -> String {
        format!("http://{}/{toolset}", self.address)
    }

    /// (toolset base URL, mock base URL) for every HTTP toolset with a base URL: what the runtime
    /// sends to the mock instead of the real API.
    pub fn upstream(&self) -> Vec<(String, String)> {
        self.state
            .catalog
            .toolsets
            .iter()
            .filter(|t| t.tools.iter().any(|tool| matches!(tool.transport, Transport::Http { .. })))
            .filter_map(|t| Some((t.base_url.clone()?, self.base_url(&t.name))))
            .collect()
    }

    /// Starts a new session: generated values change, call counts restart.
    pub fn reset(&self) {
        self.state.session.fetch_add(1, Ordering::SeqCst);
        self.state.calls.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// Requests answered (any status) in this session, by tool id.
    pub fn calls(&self) -> HashMap<String, u32> {
        self.state.calls.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections on `listener` until `stopped`, each served on a task of its own; the
/// connections still open end with the runtime.
async fn serve(listener: tokio::net::TcpListener, state: Arc<State>, mut stopped: tokio::sync::oneshot::Receiver<()>) {
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors, or a connection reset before it was taken: the next may do.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let answered = answer(&state, &request);
                async move { Ok::<_, std::convert::Infallible>(answered) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

fn answer<B>(state: &State, request: &hyper::Request<B>) -> hyper::Response<http_body_util::Full<bytes::Bytes>> {
    let method = request.method().as_str().to_ascii_uppercase();
    let url = request.uri().path_and_query().map_or("/", |target| target.as_str());
    let (status, body) = respond(state, &method, url);
    let mut response = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(body.to_string())));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    response
}

/// The status and JSON body for `method url` (the URL as the request line has it).
fn respond(state: &State, method: &str, url: &str) -> (u16, Value) {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let path = decode(path);
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let toolset_name = parts.next().unwrap_or("");
    let rest = parts.next().unwrap_or("");
    let Some(toolset) = state.catalog.toolset(toolset_name) else {
        let known: Vec<&str> = state.catalog.toolsets.iter().map(|t| t.name.as_str()).collect();
        return error(404, format!("no toolset `{toolset_name}` here; the mock serves /{}", known.join(", /")));
    };
    let segments: Vec<Segment> =
        rest.split('/').filter(|s| !s.is_empty()).map(|s| Segment { text: s.to_string(), start: 0 }).collect();
    let matched = match endpoint::match_endpoint(toolset, method, &segments) {
        Matched::Tool(m) => m,
        Matched::WrongMethod(methods) => {
            return error(405, format!("/{rest} takes {}", methods.join(", ")));
        }
        Matched::NoPath | Matched::Unknowable => return error(404, format!("no endpoint /{rest} in {toolset_name}")),
    };
    let tool = matched.tool;
    *state.calls.lock().unwrap_or_else(PoisonError::into_inner).entry(tool.id()).or_default() += 1;
    let query: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode_query(k), decode_query(v))
        })
        .collect();
    let mut arguments = Map::new();
    for (name, index) in &matched.path_params {
        arguments.insert(name.clone(), typed(tool, name, &segments[*index].text));
    }
    // The pairs by name, read once: a tool may declare 60,000 query parameters and a request
    // carry 32,000 pairs, and matching each against each took 43 s.
    let mut first: HashMap<&str, &str> = HashMap::new();
    let mut repeated: HashMap<&str, Vec<&str>> = HashMap::new();
    for (key, value) in &query {
        first.entry(key.as_str()).or_insert(value.as_str());
        // `type=a` and `type[]=a` both give `type` (and `type[]=a` a parameter named `type[]`).
        repeated.entry(key.as_str()).or_default().push(value.as_str());
        if let Some(name) = key.strip_suffix("[]") {
            repeated.entry(name).or_default().push(value.as_str());
        }
    }
    for param in tool.params.iter().filter(|p| p.location == ParamLocation::Query) {
        let given = first.get(param.wire_name.as_str()).copied();
        let array = schema::items(tool, &param.schema).map(|items| {
            let texts: Vec<&str> = repeated.get(param.wire_name.as_str()).cloned().unwrap_or_default();
            (items, texts)
        });
        match (given, array) {
            // Every form OpenAPI allows an array in a query: repeated (`type=a&type=b`, the
            // default), `type[]=a`, and one delimited value (`type=a,b`, `a|b`, `a b`).
            (_, Some((items, texts))) if !texts.is_empty() => {
                let parts: Vec<&str> = match texts.as_slice() {
                    [one] => one.split([',', '|', ' ']).filter(|p| !p.is_empty()).collect(),
                    many => many.to_vec(),
                };
                let value = Value::Array(parts.iter().map(|p| typed_as(tool, items, p)).collect());
                let problem =
                    value.as_array().into_iter().flatten().find_map(|v| schema::check_literal(tool, items, v).err());
                if let Some(why) = problem {
                    return error(400, format!("query parameter `{}`: {why}", param.wire_name));
                }
                arguments.insert(param.wire_name.clone(), value);
            }
            (Some(text), _) => {
                let value = typed(tool, &param.wire_name, text);
                if let Err(why) = schema::check_literal(tool, &param.schema, &value) {
                    return error(400, format!("query parameter `{}`: {why}", param.wire_name));
                }
                arguments.insert(param.wire_name.clone(), value);
            }
            (None, _) if param.required => {
                return error(400, format!("the required query parameter `{}` is missing", param.wire_name));
            }
            (None, _) => {}
        }
    }
    let seed =
        hash(&format!("{}|{}|{}", state.session.load(Ordering::SeqCst), tool.id(), Value::Object(arguments.clone())));
    let mut body = example_response(tool)
        .or_else(|| tool.response.as_ref().map(|s| generate(tool, s, seed)))
        .unwrap_or_else(|| json!({}));
    echo_ids(&mut body, &matched.path_params, &segments);
    (200, body)
}

fn error(status: u16, message: String) -> (u16, Value) {
    (status, json!({"status_code": status, "status_message": message}))
}

/// A path or query value typed by its parameter's schema (`"550"` → 550 for an integer).
fn typed(tool: &Tool, wire_name: &str, text: &str) -> Value {
    match tool.params.iter().find(|p| p.wire_name == wire_name) {
        Some(param) => typed_as(tool, &param.schema, text),
        None => Value::String(text.to_string()),
    }
}

/// `text` as the value `schema` takes: a number, a boolean, else the string.
fn typed_as(tool: &Tool, schema: &Value, text: &str) -> Value {
    let types = schema::types(tool, schema);
    if types.contains(&"integer")
        && let Ok(n) = text.parse::<i64>()
    {
        return json!(n);
    }
    if types.contains(&"number")
        && let Ok(n) = text.parse::<f64>()
    {
        return json!(n);
    }
    if types.contains(&"boolean") && (text == "true" || text == "false") {
        return json!(text == "true");
    }
    Value::String(text.to_string())
}

/// The first example response the protocol gives for the tool.
fn example_response(tool: &Tool) -> Option<Value> {
    tool.examples.iter().find_map(|e| e.response.clone())
}

/// A path parameter named like an id (`movie_id`, `id`) is the answer's own `id`: the program
/// that fetched `/movie/550` reads 550 back.
fn echo_ids(body: &mut Value, path_params: &[(String, usize)], segments: &[Segment]) {
    let Value::Object(object) = body else { return };
    if !object.contains_key("id") {
        return;
    }
    for (name, index) in path_params {
        if name == "id" || name.ends_with("_id") {
            let text = &segments[*index].text;
            object.insert("id".into(), text.parse::<i64>().map(Value::from).unwrap_or_else(|_| json!(text)));
            return;
        }
    }
}

/// How many values one generated answer may hold, a value for each 64 bytes of text (as loaders
/// weigh what they build): a schema that refers to itself would otherwise grow as
/// (properties × 2)^depth — megabytes from a 2 KB spec — and a 1 MB `enum` member or example
/// is copied wherever the schema holding it is used.
const MAX_GENERATED_VALUES: usize = 5_000;

/// How deep a generated answer nests before its arrays are empty and its objects hold only what
/// they require.
const MAX_GENERATED_DEPTH: usize = 8;

/// Data fitting `schema`: the first enum value or fitting example where the schema gives one,
/// else a value of its type; arrays get two items; objects get every declared property; ids
/// (`id`, `…_id`) are numbers or digit strings, as declared. Deterministic in `seed`; bounded in
/// size and depth (past either, arrays are empty and objects hold only their required keys), so
/// an answer always fits the schema it came from.
pub fn generate(refs: &dyn Refs, schema: &Value, seed: u64) -> Value {
    let mut budget = MAX_GENERATED_VALUES + REQUIRED_VALUES;
    generate_within(refs, schema, seed, 0, &mut budget)
}

/// Values still made, past the budget, for keys a schema requires — and then no more: a schema
/// that requires itself (`next: {$ref: Node}` among `required`, `anyOf: [{$ref: Node}]`) has no
/// finite answer, and following it would overflow the stack (and take the server down).
const REQUIRED_VALUES: usize = 20_000;

/// How deep required keys are followed at most (Stripe's deepest required chains are ~20).
const MAX_REQUIRED_DEPTH: usize = 64;

fn generate_within(refs: &dyn Refs, schema: &Value, seed: u64, depth: usize, budget: &mut usize) -> Value {
    if *budget == 0 || depth > MAX_REQUIRED_DEPTH {
        return Value::Null;
    }
    *budget -= 1;
    let spent = *budget <= REQUIRED_VALUES || depth > MAX_GENERATED_DEPTH;
    if let Some(target) = schema::follow(refs, schema) {
        return generate_within(refs, target, seed, depth + 1, budget);
    }
    if let Some(values) = schema::enum_values(refs, schema).filter(|values| !values.is_empty()) {
        // The seeded member, else the next that fits what is left.
        let start = (seed as usize) % values.len();
        for member in values.iter().cycle().skip(start).take(values.len().min(16)) {
            if let Some(cost) = copy_cost(*budget, member) {
                *budget -= cost;
                return member.clone();
            }
        }
        return Value::Null;
    }
    // The spec's own example, unless it contradicts the schema beside it (a `"20"` for an integer)
    // or is too heavy to copy (then a value of its type is made).
    if let Some(example) = schema.get("example")
        && let Some(cost) = copy_cost(*budget, example)
        && schema::contradictions(refs, schema, example, 1).is_empty()
    {
        *budget -= cost;
        return example.clone();
    }
    for combinator in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(combinator) {
            if combinator == "allOf" {
                let mut merged = Map::new();
                for option in options {
                    if let Value::Object(part) = generate_within(refs, option, seed, depth + 1, budget) {
                        merged.extend(part);
                    }
                }
                return Value::Object(merged);
            }
            if let Some(first) = options.first() {
                return generate_within(refs, first, seed, depth + 1, budget);
            }
        }
    }
    let types = schema::types(refs, schema);
    let kind = types.iter().copied().find(|t| *t != "null").unwrap_or(if schema.get("properties").is_some() {
        "object"
    } else {
        "string"
    });
    match kind {
        "object" => {
            let required: std::collections::HashSet<&str> = schema::required_keys(refs, schema).into_iter().collect();
            let mut object = Map::new();
            for (i, (key, property)) in schema::keys(refs, schema).into_iter().enumerate() {
                // Judged again for each key: the keys before may have spent what was left.
                if (spent || *budget <= REQUIRED_VALUES) && !required.contains(&key) {
                    continue;
                }
                // A key too long for what is left is left out.
                match budget.checked_sub(text_weight(key)) {
                    Some(left) => *budget = left,
                    None => continue,
                }
                let id_types = schema::types(refs, property);
                let value = if (key == "id" || key.ends_with("_id"))
                    && schema::enum_values(refs, property).is_none_or(|v| v.is_empty())
                    && (id_types.is_empty() || id_types.contains(&"integer") || id_types.contains(&"string"))
                {
                    let id = 1 + (hash(&format!("{seed}|{key}")) % 100_000) as i64;
                    if id_types.contains(&"integer") || id_types.is_empty() { json!(id) } else { json!(id.to_string()) }
                } else {
                    generate_within(refs, property, seed.wrapping_add(i as u64 + 1), depth + 1, budget)
                };
                object.insert(key.to_string(), value);
            }
            Value::Object(object)
        }
        "array" if spent => json!([]),
        "array" => {
            let any = json!({});
            let items = schema::items(refs, schema).unwrap_or(&any);
            Value::Array(
                (0..2)
                    .map(|i| generate_within(refs, items, seed.wrapping_add(31 * (i + 1)), depth + 1, budget))
                    .collect(),
            )
        }
        "integer" => json!(1 + (seed % 1000) as i64),
        "number" => json!(((seed % 1000) as f64) / 10.0),
        "boolean" => json!(seed.is_multiple_of(2)),
        _ => {
            let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
            match format {
                "date" => json!("2024-01-15"),
                "date-time" => json!("2024-01-15T12:00:00Z"),
                "uri" | "url" => json!("https://example.com/item"),
                "email" => json!("user@example.com"),
                _ => json!(format!("sample-{}", seed % 10_000)),
            }
        }
    }
}

/// The most one `enum` member or example copied into an answer may weigh (256 KB of text, or as
/// many values): weighing a heavier one costs no more than this, however often it is met.
const MAX_COPIED: usize = 4_096;

/// What a copy of `value` (an `enum` member, an example) takes from `budget`, its first value
/// taken already as for any value generated; `None` when it weighs more than is left or than
/// [`MAX_COPIED`] (weighed no further than that).
fn copy_cost(budget: usize, value: &Value) -> Option<usize> {
    let room = budget.min(MAX_COPIED);
    let cost = value_weight_past(value, room.saturating_add(1)) - 1;
    (cost <= room).then_some(cost)
}

/// FNV-1a: a stable seed from text (the standard hasher is randomised per process).
fn hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

fn decode_query(text: &str) -> String {
    decode(&text.replace('+', " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Arc<Catalog> {
        let spec = r#"
openapi: 3.0.0
info: {title: t, version: "1"}
servers: [{url: "https://api.example.com/3"}]
paths:
  /movie/{movie_id}:
    get:
      parameters:
        - {name: movie_id, in: path, required: true, schema: {type: integer}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  id: {type: integer}
                  title: {type: string}
                  genres: {type: array, items: {type: object, properties: {id: {type: integer}, name: {type: string}}}}
  /search/person:
    get:
      parameters:
        - {name: query, in: query, required: true, schema: {type: string}}
        - {name: page, in: query, schema: {type: integer}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {results: {type: array, items: {type: object, properties: {id: {type: integer}}}}}}
              example: {results: [{id: 1769, name: "Sofia Coppola"}]}
  /search:
    get:
      parameters:
        - {name: q, in: query, required: true, schema: {type: string}}
        - {name: type, in: query, required: true, schema: {type: array, items: {type: string, enum: [track, album]}}}
        - {name: years, in: query, schema: {type: array, items: {type: integer}}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {total: {type: integer}}}}}}
"#;
        Arc::new(crate::toolset::test_support::openapi_catalog("tmdb", spec, None))
    }

    fn state() -> State {
        State { catalog: catalog(), session: AtomicU64::new(1), calls: Mutex::default() }
    }

    /// An array in a query comes in every form OpenAPI allows, as the runtime sends it
    /// (`type=a&type=b`) and as other clients do; a value outside the items' enum is still a 400.
    #[test]
    fn array_query_parameters_are_read_in_every_form() {
        let state = state();
        for query in ["type=track", "type=track&type=album", "type=track,album", "type[]=album", "type=track|album"] {
            let (status, body) = respond(&state, "GET", &format!("/tmdb/search?q=x&{query}"));
            assert_eq!(status, 200, "{query}: {body}");
        }
        assert_eq!(respond(&state, "GET", "/tmdb/search?q=x&type=track&years=1999&years=2001").0, 200);
        let (status, body) = respond(&state, "GET", "/tmdb/search?q=x&type=podcast");
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains("query parameter `type`"), "{body}");
        assert_eq!(respond(&state, "GET", "/tmdb/search?q=x&type=track&years=soon").0, 400);
    }

    #[test]
    fn examples_are_answered_and_generated_data_fits_the_schema() {
        let state = state();
        let (status, body) = respond(&state, "GET", "/tmdb/search/person?query=Sofia%20Coppola");
        assert_eq!(status, 200);
        assert_eq!(body["results"][0]["id"], 1769);
        let (status, movie) = respond(&state, "GET", "/tmdb/movie/550");
        assert_eq!(status, 200);
        assert_eq!(movie["id"], 550, "the path id is echoed: {movie}");
        assert!(movie["title"].is_string() && movie["genres"].as_array().is_some_and(|g| g.len() == 2), "{movie}");
        assert!(movie["genres"][0]["name"].is_string());
        // Deterministic within a session.
        assert_eq!(respond(&state, "GET", "/tmdb/movie/550").1, movie);
        assert_eq!(state.calls.lock().unwrap()["tmdb.movie"], 2, "{:?}", state.calls.lock().unwrap());
    }

    /// What the mock makes up must never raise `schema-drift` against the spec it came from: ids
    /// as declared (a digit string where a string is), no example that contradicts its schema.
    #[test]
    fn generated_answers_fit_their_own_schemas_in_real_specs() {
        let specs = [
            ("tmdb", "tests/fixtures/datasets/restbench/tmdb_oas.json"),
            ("github", "tests/fixtures/specs/api.github.com.pulls.json"),
            ("netlify", "tests/fixtures/specs/netlify.swagger.json"),
            ("stripe", "tests/fixtures/specs/stripe.com.json"),
        ];
        for (name, file) in specs {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            let (catalog, _) = crate::toolset::test_support::openapi_catalog_and_diagnostics(name, &text, None);
            let mut answered = 0;
            for tool in catalog.toolsets.iter().flat_map(|t| t.tools.iter()) {
                let Some(response) = tool.response.as_ref() else { continue };
                for seed in [1, 2] {
                    let value = generate(tool, response, seed);
                    let wrong = schema::contradictions(tool, response, &value, 3);
                    assert!(wrong.is_empty(), "{name} {}: {wrong:?}\n{value}", tool.id());
                    assert!(
                        value.to_string().len() < 4 << 20,
                        "{name} {}: an answer of {} bytes",
                        tool.id(),
                        value.to_string().len()
                    );
                }
                answered += 1;
            }
            assert!(answered > 10, "{name}: {answered} tools with a response schema");
        }
        let string_ids =
            json!({"type": "object", "properties": {"id": {"type": "string"}, "owner_id": {"type": "integer"}}});
        let small = catalog();
        let tool = &small.toolsets[0].tools[0];
        let value = generate(tool, &string_ids, 7);
        assert!(value["id"].as_str().is_some_and(|id| id.parse::<u64>().is_ok()), "{value}");
        assert!(value["owner_id"].is_i64(), "{value}");
        let stale = json!({"type": "object", "properties": {"limit": {"type": "integer", "example": "20"}}});
        assert!(generate(tool, &stale, 7)["limit"].is_i64());
    }

    /// A schema that requires itself has no finite answer: generation stops instead of recursing
    /// until the stack overflows (which would take the whole server down).
    #[test]
    fn a_schema_that_requires_itself_ends() {
        let spec = r##"
openapi: 3.0.0
info: {title: t, version: "1"}
paths:
  /node:
    get:
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Node"}}}}
  /loop:
    get:
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Loop"}}}}
components:
  schemas:
    Node:
      type: object
      required: [next]
      properties:
        next: {$ref: "#/components/schemas/Node"}
    Loop:
      anyOf: [{$ref: "#/components/schemas/Loop"}]
"##;
        let catalog = crate::toolset::test_support::openapi_catalog("tree", spec, None);
        for tool in &catalog.toolsets[0].tools {
            let value = generate(tool, tool.response.as_ref().unwrap(), 1);
            assert!(value.to_string().len() < 10_000, "{value}");
        }
    }

    /// A schema that refers to itself through several properties grows as (properties × 2)^depth
    /// when followed to a fixed depth; the answer stays small and still fits.
    #[test]
    fn a_self_referencing_schema_gives_a_bounded_answer() {
        let spec = r##"
openapi: 3.0.0
info: {title: t, version: "1"}
paths:
  /node:
    get:
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Node"}}}}
components:
  schemas:
    Node:
      type: object
      required: [name]
      properties:
        name: {type: string}
        a: {type: array, items: {$ref: "#/components/schemas/Node"}}
        b: {type: array, items: {$ref: "#/components/schemas/Node"}}
        c: {$ref: "#/components/schemas/Node"}
        d: {$ref: "#/components/schemas/Node"}
"##;
        let catalog = crate::toolset::test_support::openapi_catalog("tree", spec, None);
        let tool = &catalog.toolsets[0].tools[0];
        let value = generate(tool, tool.response.as_ref().unwrap(), 1);
        let size = value.to_string().len();
        assert!(size < 1 << 20, "{size} bytes");
        assert!(value["a"][0]["name"].is_string(), "{value}");
        assert!(schema::contradictions(tool, tool.response.as_ref().unwrap(), &value, 3).is_empty());
    }

    /// One 64 KB `enum` member, example or key, in a schema 400 properties use: the schema is
    /// stored once, but an answer copying it for each would be 25 MB (one request took the mock
    /// down with a 1 MB member). Answers are weighed by their text, as loaders weigh what they build.
    #[test]
    fn an_answer_is_weighed_by_its_text() {
        let long = "x".repeat(64 << 10);
        let shared = [
            json!({"type": "string", "enum": [long]}),
            json!({"type": "string", "example": long}),
            json!({"type": "object", "properties": {long.clone(): {"type": "integer"}}}),
        ];
        for shared in shared {
            let properties: Map<String, Value> =
                (0..400).map(|i| (format!("k{i}"), json!({"$ref": "#/components/schemas/S"}))).collect();
            let spec = json!({
                "openapi": "3.0.0", "info": {"title": "t", "version": "1"},
                "paths": {"/o": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"type": "object", "properties": properties}}}}}}}},
                "components": {"schemas": {"S": shared}}
            });
            let catalog = crate::toolset::test_support::openapi_catalog("t", &spec.to_string(), None);
            let tool = &catalog.toolsets[0].tools[0];
            let value = generate(tool, tool.response.as_ref().unwrap(), 1);
            let size = value.to_string().len();
            assert!(size < 2 << 20, "{size} bytes");
            assert!(value.to_string().contains(&long), "what fits is copied: {}", &value.to_string()[..200]);
            let contradictions = schema::contradictions(tool, tool.response.as_ref().unwrap(), &value, 3);
            assert!(contradictions.is_empty(), "the answer still fits its schema: {contradictions:?}");
        }
    }

    #[test]
    fn bad_requests_get_the_status_a_real_api_would_give() {
        let state = state();
        assert_eq!(respond(&state, "GET", "/tmdb/search/person").0, 400);
        let (status, body) = respond(&state, "GET", "/tmdb/search/person?query=x&page=two");
        assert_eq!(status, 400, "{body}");
        assert!(body["status_message"].as_str().unwrap().contains("page"));
        assert_eq!(respond(&state, "POST", "/tmdb/movie/1").0, 405);
        assert_eq!(respond(&state, "GET", "/tmdb/movies/1").0, 404);
        assert_eq!(respond(&state, "GET", "/imdb/movie/1").0, 404);
    }

    #[test]
    fn a_real_server_on_loopback() {
        let mock = MockServer::start(catalog(), "127.0.0.1:0".parse().unwrap()).unwrap();
        let url = format!("{}/search/person?query=Sofia+Coppola", mock.base_url("tmdb"));
        let response = reqwest::blocking::get(&url).unwrap();
        assert_eq!(response.status(), 200);
        let body: Value = response.json().unwrap();
        assert_eq!(body["results"][0]["name"], "Sofia Coppola");
        assert_eq!(mock.upstream(), vec![("https://api.example.com/3".to_string(), mock.base_url("tmdb"))]);
        mock.reset();
        assert!(mock.calls().is_empty());
    }

    /// Any local process can reach the mock: a request declaring an endless body, sent while the
    /// runs it serves go on, is answered and costs nothing (it once aborted the process).
    #[test]
    fn a_request_declaring_an_endless_body_is_answered_and_the_mock_goes_on() {
        use std::io::{Read, Write};
        let mock = MockServer::start(catalog(), "127.0.0.1:0".parse().unwrap()).unwrap();
        let mut hostile = std::net::TcpStream::connect(mock.address()).unwrap();
        hostile
            .write_all(b"POST /tmdb/movie/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000000000000000\r\n\r\nAAAA")
            .unwrap();
        let mut head = [0u8; 12];
        hostile.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 405");
        drop(hostile);
        let response = reqwest::blocking::get(format!("{}/movie/550", mock.base_url("tmdb"))).unwrap();
        assert_eq!(response.status(), 200);
    }
}
