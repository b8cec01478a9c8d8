//! The ToolBench / RapidAPI loader.
//!
//! ToolBench (ToolLLM) describes its 16k RapidAPI tools in a few related JSON shapes, all accepted
//! here and told apart by content, element by element:
//!
//! - **query files** (ToolBench `G*_query.json`, StableToolBench `test_instruction/*.json`): an
//!   array of `{api_list, query, query_id, "relevant APIs"}`. The toolset is the union of every
//!   query's `api_list`; a record seen again (same `tool_name` + `api_name`) is merged, the first
//!   one kept.
//! - **RapidAPI tool files** (`toolenv/tools/<Category>/<tool>.json`): one object
//!   `{tool_name | name, tool_description, category?, api_list}` whose records may say `name` for
//!   `api_name`, `description` for `api_description`, and leave tool name and category to the file.
//! - **bare arrays** of api records.
//! - **the OpenAI-function form** ToolBench shows to models: an array of
//!   `{name, description, parameters: {type: object, properties, required, optional}}`, also
//!   wrapped as `{"function": {...}}`, inside a DFSDT answer (`answer_generation.function`) or a
//!   ToolEval results dict `{query_id: {available_tools: [...]}}` (union of all). The `Finish`
//!   pseudo-function is skipped. Names there are already `<api>_for_<tool>`.
//!
//! Records become tools named `<api_name>_for_<tool_name>` ([`names::toolbench_tool`]); parameters
//! keep ToolBench's renaming ([`names::toolbench_param`], `id` → `is_id`). The `template_response`
//! type sketch (`{"id": "int", "items": [{"name": "str", "_list_length": 20}]}`) becomes a JSON
//! Schema, without its `_list_length` pseudo-keys; StableToolBench's sketches that were stored as
//! (truncated) JSON text are repaired, and the objects the cut went through are left open.
//!
//! ToolBench records carry no URL: every tool gets [`Transport::None`]. The workspace layer gives
//! them an HTTP transport only when the toolset config names a `base_url`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::doc::{Node, NodeKind, text_weight};
use super::refs::BuildBudget;
use super::{Loaded, Param, ParamLocation, Provenance, Source, SourceKind, Tool, Transport};
use crate::diagnostic::Diagnostic;
use crate::names;
use crate::text::{ByteRange, quoted};

/// The name of ToolBench's answer pseudo-function, never a tool.
const FINISH: &str = "Finish";

pub fn load(doc: &Node, _text: &str, file: &Path, toolset: &str) -> Loaded {
    let mut loader = Loader::new(file, toolset, BuildBudget::for_weight(doc.weight()));
    loader.document(doc);
    loader.diagnostics.extend(loader.budget.diagnostic(file));
    Loaded {
        tools: loader.tools,
        diagnostics: loader.diagnostics,
        description: loader.description,
        ..Default::default()
    }
}

/// What identifies one declaration for merging: the same key seen again is the same API.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// (tool_name, api_name) as declared.
    Api(String, String),
    /// An OpenAI-function name as declared.
    Function(String),
}

impl Key {
    /// How a message names the declaration: `search` of tool `weather`.
    fn described(&self) -> String {
        match self {
            Key::Api(tool, api) => format!("`{}` of tool `{}`", quoted(api), quoted(tool)),
            Key::Function(f) => format!("function `{}`", quoted(f)),
        }
    }
}

/// What a tool file's object supplies to records that leave it out.
#[derive(Default, Clone, Copy)]
struct FileDefaults<'a> {
    tool_name: Option<&'a str>,
    category: Option<&'a str>,
    description: Option<&'a str>,
}

struct Loader<'a> {
    file: &'a Path,
    toolset: &'a str,
    tools: Vec<Tool>,
    diagnostics: Vec<Diagnostic>,
    description: String,
    /// Every key met so far (loaded, or reported as a collision): later copies are merged silently.
    seen: std::collections::HashSet<Key>,
    /// Tool name → the key that owns it, to tell a duplicate from a collision.
    owners: HashMap<String, Key>,
    /// Whether anything ToolBench-shaped was found at all.
    recognised: bool,
    /// What the records' tools may be built of: a tool file's name, category and description are
    /// copied into each of its records.
    budget: BuildBudget,
}

impl<'a> Loader<'a> {
    fn new(file: &'a Path, toolset: &'a str, budget: BuildBudget) -> Self {
        Loader {
            file,
            toolset,
            tools: Vec::new(),
            diagnostics: Vec::new(),
            description: String::new(),
            seen: Default::default(),
            owners: HashMap::new(),
            recognised: false,
            budget,
        }
    }

    fn document(&mut self, doc: &Node) {
        match &doc.kind {
            NodeKind::Array(items) => {
                self.recognised = true;
                for item in items {
                    self.element(item, FileDefaults::default());
                }
            }
            NodeKind::Object(members) => {
                if let Some(list) = doc.get("api_list") {
                    // A RapidAPI tool file (or a single query object).
                    self.recognised = true;
                    let tool_name = non_empty(doc, "tool_name")
                        .or_else(|| non_empty(doc, "name"))
                        .or_else(|| non_empty(doc, "title"))
                        .or_else(|| non_empty(doc, "standardized_name"));
                    let category = non_empty(doc, "category_name").or_else(|| non_empty(doc, "category"));
                    let description = non_empty(doc, "tool_description").or_else(|| non_empty(doc, "description"));
                    self.description = description.unwrap_or("").to_string();
                    let defaults = FileDefaults { tool_name, category, description };
                    self.api_list(list, defaults);
                } else if let Some(functions) = doc.pointer("/answer_generation/function") {
                    // A DFSDT answer file: its toolset in function form.
                    self.recognised = true;
                    self.functions(functions);
                } else if let Some(functions) = doc.get("available_tools") {
                    self.recognised = true;
                    self.functions(functions);
                } else if doc.get("function").is_some() || doc.get("parameters").is_some() {
                    self.recognised = true;
                    self.function(doc);
                } else {
                    // A ToolEval results dict `{query_id: {available_tools}}` (or of queries).
                    for (_, _, value) in members {
                        if let Some(functions) = value.get("available_tools") {
                            self.recognised = true;
                            self.functions(functions);
                        } else if let Some(list) = value.get("api_list") {
                            self.recognised = true;
                            self.api_list(list, FileDefaults::default());
                        }
                    }
                }
            }
            _ => {}
        }
        if !self.recognised {
            let at = ByteRange::new(doc.range.start, (doc.range.start + 1).min(doc.range.end));
            self.diagnostics.push(Diagnostic::error(
                self.file,
                at,
                "invalid-toolset",
                "not a ToolBench file: expected api_list records, queries with an `api_list`, \
                 or tools in OpenAI-function form",
            ));
        }
    }

    /// One element of a top-level array: a query, a record, or a function.
    fn element(&mut self, item: &Node, defaults: FileDefaults<'_>) {
        if let Some(list) = item.get("api_list") {
            self.api_list(list, defaults);
        } else if let Some(functions) = item.get("available_tools") {
            self.functions(functions);
        } else if item.get("api_name").is_some() || item.get("tool_name").is_some() {
            self.record(item, defaults);
        } else if item.get("function").is_some() || item.get("parameters").is_some() {
            self.function(item);
        } else if item.get("query").is_some() {
            // A query without its candidate APIs (ToolBench's open-domain demos): nothing to load.
        } else {
            self.record(item, defaults);
        }
    }

    fn api_list(&mut self, list: &Node, defaults: FileDefaults<'_>) {
        if !list.is_array() {
            self.diagnostics.push(Diagnostic::error(
                self.file,
                list.range,
                "invalid-operation",
                "`api_list` must be an array of api records",
            ));
            return;
        }
        for record in list.items() {
            self.record(record, defaults);
        }
    }

    fn functions(&mut self, functions: &Node) {
        if !functions.is_array() {
            self.diagnostics.push(Diagnostic::error(
                self.file,
                functions.range,
                "invalid-operation",
                "expected an array of functions ({name, description, parameters})",
            ));
            return;
        }
        for function in functions.items() {
            self.function(function);
        }
    }

    /// Claims `name` for `key`. `false` when the record is a duplicate (merged) or collides.
    fn claim(&mut self, name: &str, key: Key, record: &Node, name_range: ByteRange) -> bool {
        if !self.seen.insert(key.clone()) {
            return false;
        }
        if let Some(owner) = self.owners.get(name) {
            let first = owner.described();
            let this = key.described();
            let at = if name_range == ByteRange::default() { record.range } else { name_range };
            self.diagnostics.push(Diagnostic::warning(
                self.file,
                at,
                "name-collision",
                format!("{this} is named `{}` like {first}, declared earlier; this one is skipped", quoted(name)),
            ));
            return false;
        }
        self.owners.insert(name.to_string(), key);
        true
    }

    fn invalid(&mut self, range: ByteRange, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::error(self.file, range, "invalid-operation", message));
    }

    /// One RapidAPI api record.
    fn record(&mut self, record: &Node, defaults: FileDefaults<'_>) {
        if !record.is_object() {
            self.invalid(record.range, "an api record must be an object; this one is skipped");
            return;
        }
        let api_node = record.get("api_name").or_else(|| record.get("name"));
        let api = api_node.and_then(Node::as_str).map(str::trim).filter(|s| !s.is_empty());
        let tool_name = non_empty(record, "tool_name").or(defaults.tool_name);
        let (Some(api), Some(tool_name)) = (api, tool_name) else {
            let missing = match (api, tool_name) {
                (None, None) => "`api_name` and `tool_name`",
                (None, _) => "`api_name`",
                _ => "`tool_name`",
            };
            self.invalid(record.range, format!("this api record has no {missing}; it is skipped"));
            return;
        };
        // The tool's name, its two keys and its source each hold a copy of the tool name (the
        // file's default one for every record that names none): weighed before any is made, a
        // record merged into an earlier one too, and past the bound the record is not loaded (a
        // tool has no name without it).
        if !self.budget.take(4 * text_weight(tool_name), record.range) {
            return;
        }
        let name_range = api_node.map(|n| n.range).unwrap_or(record.range);
        let name = names::toolbench_tool(api, tool_name);
        if !self.claim(&name, Key::Api(tool_name.to_string(), api.to_string()), record, name_range) {
            return;
        }
        let method = non_empty(record, "method").map(str::to_ascii_uppercase);
        // ToolBench calls carry no placement (the RapidAPI wrapper decides): GET parameters are
        // taken to be query parameters, everything else body members.
        let location = match method.as_deref() {
            None | Some("GET") | Some("DELETE") | Some("HEAD") => ParamLocation::Query,
            Some(_) => ParamLocation::Body,
        };
        let mut params: Vec<Param> = Vec::new();
        for (key, required) in [("required_parameters", true), ("optional_parameters", false)] {
            let Some(list) = record.get(key) else { continue };
            if !list.is_array() {
                self.diagnostics.push(Diagnostic::warning(
                    self.file,
                    list.range,
                    "invalid-parameter",
                    format!("`{key}` must be an array of parameters; it is ignored"),
                ));
                continue;
            }
            for p in list.items() {
                self.parameter(p, required, location, &mut params);
            }
        }

        let description = non_empty(record, "api_description")
            .or_else(|| non_empty(record, "description"))
            .or(defaults.description)
            .unwrap_or("");
        let description = self.budget.keep_text(description, record.range);
        let category = non_empty(record, "category_name")
            .or_else(|| non_empty(record, "category"))
            .or(defaults.category)
            .unwrap_or("");
        let category = self.budget.keep_text(category, record.range);
        let response = match record.get("template_response") {
            Some(sketch) => response_from_sketch(sketch),
            // RapidAPI tool files keep a `schema`: a JSON Schema or a sketch.
            None => record.get("schema").and_then(response_from_rapidapi_schema),
        };

        self.tools.push(Tool {
            name,
            toolset: self.toolset.to_string(),
            category,
            description,
            params,
            response: response.into(),
            statuses: Vec::new(),
            examples: Vec::new(),
            provenance: Provenance::Declared,
            transport: Transport::None,
            annotations: None,
            source: Source {
                kind: SourceKind::ToolBench,
                file: self.file.to_path_buf(),
                range: record.range,
                name_range,
                method,
                path: None,
                tool: Some(tool_name.to_string()),
                api: Some(api.to_string()),
                operation_id: None,
            },
            schemas: Default::default(),
        });
    }

    /// One `{name, type, description, default}` of a record.
    fn parameter(&mut self, p: &Node, required: bool, location: ParamLocation, params: &mut Vec<Param>) {
        let Some(wire) = p.get("name").and_then(Node::as_str).filter(|s| !s.trim().is_empty()) else {
            self.diagnostics.push(Diagnostic::warning(
                self.file,
                p.range,
                "invalid-parameter",
                "a parameter needs a `name`; this one is ignored",
            ));
            return;
        };
        let name = names::toolbench_param(wire);
        if params.iter().any(|q| q.name == name) {
            self.diagnostics.push(Diagnostic::warning(
                self.file,
                p.get("name").map_or(p.range, |n| n.range),
                "invalid-parameter",
                format!("parameter `{wire}` is declared twice (as `{name}`); the first declaration is kept"),
            ));
            return;
        }
        let schema = param_schema(p.str_of("type"));
        let value = p.get("default").and_then(|d| typed_default(&d.to_json(), &schema));
        params.push(Param {
            name,
            wire_name: wire.to_string(),
            location,
            required,
            description: p.str_of("description").trim().to_string(),
            schema,
            // RapidAPI's `default` is a sample value (ToolBench calls it `example_value`): it is both.
            example: value.clone(),
            default: value,
        });
    }

    /// One tool in OpenAI-function form.
    fn function(&mut self, node: &Node) {
        let f = match node.get("function") {
            Some(inner) if inner.is_object() => inner,
            _ => node,
        };
        if !f.is_object() {
            self.invalid(node.range, "a function must be an object; this one is skipped");
            return;
        }
        let name_node = f.get("name");
        let Some(declared) = name_node.and_then(Node::as_str).map(str::trim).filter(|s| !s.is_empty()) else {
            self.invalid(node.range, "this function has no `name`; it is skipped");
            return;
        };
        if declared == FINISH {
            return;
        }
        let name = identifier(declared);
        let name_range = name_node.map_or(node.range, |n| n.range);
        if !self.claim(&name, Key::Function(declared.to_string()), node, name_range) {
            return;
        }
        let (tool, description) = split_function_description(f.str_of("description"));
        let api = tool.as_ref().and_then(|t| {
            declared.strip_suffix(&format!("_for_{}", names::toolbench_standardize(t))).map(str::to_string)
        });

        let mut params = Vec::new();
        let parameters = f.get("parameters");
        let required: std::collections::HashSet<&str> = parameters
            .and_then(|p| p.get("required"))
            .map(|r| r.items().iter().filter_map(Node::as_str).collect())
            .unwrap_or_default();
        if let Some(properties) = parameters.and_then(|p| p.get("properties")) {
            for (key, key_range, spec) in properties.members() {
                let pname = if names::is_identifier(key) { key.clone() } else { names::toolbench_param(key) };
                if params.iter().any(|q: &Param| q.name == pname) {
                    self.diagnostics.push(Diagnostic::warning(
                        self.file,
                        *key_range,
                        "invalid-parameter",
                        format!("parameter `{key}` is declared twice (as `{pname}`); the first declaration is kept"),
                    ));
                    continue;
                }
                let mut schema = match spec.to_json() {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                let description = match schema.remove("description") {
                    Some(Value::String(s)) => s.trim().to_string(),
                    _ => String::new(),
                };
                let example = schema.remove("example_value").filter(|v| !is_blank(v));
                let default = schema.remove("default").filter(|v| !is_blank(v));
                params.push(Param {
                    name: pname,
                    // The function form already renamed the parameter (`is_id`); ToolBench's
                    // servers take that spelling, so it is the wire name too.
                    wire_name: key.clone(),
                    // No placement is recorded; ToolBench's RapidAPI calls are GETs with query strings.
                    location: ParamLocation::Query,
                    required: required.contains(&key.as_str()),
                    description,
                    schema: Value::Object(schema),
                    default,
                    example,
                });
            }
        }

        self.tools.push(Tool {
            name,
            toolset: self.toolset.to_string(),
            category: String::new(),
            description,
            params,
            response: None.into(),
            statuses: Vec::new(),
            examples: Vec::new(),
            provenance: Provenance::Declared,
            transport: Transport::None,
            annotations: None,
            source: Source {
                kind: SourceKind::ToolBench,
                file: self.file.to_path_buf(),
                range: node.range,
                name_range,
                method: None,
                path: None,
                tool,
                api,
                operation_id: None,
            },
            schemas: Default::default(),
        });
    }
}

/// A trimmed, non-empty string member.
fn non_empty<'n>(node: &'n Node, key: &str) -> Option<&'n str> {
    node.get(key).and_then(Node::as_str).map(str::trim).filter(|s| !s.is_empty())
}

fn is_blank(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        _ => false,
    }
}

/// A function name as a Python identifier: kept when it already is one.
fn identifier(name: &str) -> String {
    if names::is_identifier(name) {
        return name.to_string();
    }
    let mut out: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if names::is_python_keyword(&out) {
        out.push('_');
    }
    out
}

/// ToolBench's function descriptions read `This is the subfunction for tool "<tool>", you can use
/// this tool.The description of this function is: "<description>"`: the tool and the real text.
fn split_function_description(text: &str) -> (Option<String>, String) {
    const HEAD: &str = "This is the subfunction for tool \"";
    const BODY: &str = "The description of this function is: \"";
    let text = text.trim();
    let tool = text.strip_prefix(HEAD).and_then(|rest| rest.split_once('"')).map(|(tool, _)| tool.to_string());
    let description = match text.find(BODY) {
        Some(at) => {
            let body = &text[at + BODY.len()..];
            body.strip_suffix('"').unwrap_or(body).trim().to_string()
        }
        None => text.to_string(),
    };
    (tool, description)
}

/// A RapidAPI parameter type (`STRING`, `NUMBER`, `DATE (YYYY-MM-DD)`, …) as a JSON Schema.
fn param_schema(rapid: &str) -> Value {
    let lower = rapid.trim().to_ascii_lowercase();
    let head = lower.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or("");
    match head {
        "string" | "str" | "text" | "enum" | "credentials" | "geopoint" | "password" => json!({"type": "string"}),
        "number" | "float" | "double" | "decimal" => json!({"type": "number"}),
        "integer" | "int" | "long" => json!({"type": "integer"}),
        "boolean" | "bool" => json!({"type": "boolean"}),
        "array" | "list" => json!({"type": "array"}),
        "object" | "dict" | "json" => json!({"type": "object"}),
        "date" => json!({"type": "string", "format": "date"}),
        "datetime" | "timestamp" => json!({"type": "string", "format": "date-time"}),
        "time" => json!({"type": "string", "format": "time"}),
        "binary" | "file" => json!({"type": "string", "format": "binary"}),
        _ => json!({}),
    }
}

/// A declared default converted to the parameter's type when it parses (`"10"` for a NUMBER →
/// `10`); kept as written otherwise. Empty defaults are no default.
fn typed_default(raw: &Value, schema: &Value) -> Option<Value> {
    if is_blank(raw) {
        return None;
    }
    let Value::String(s) = raw else { return Some(raw.clone()) };
    let t = s.trim();
    let converted = match schema.get("type").and_then(Value::as_str) {
        Some("integer") => t.parse::<i64>().ok().map(Value::from),
        Some("number") => t
            .parse::<i64>()
            .ok()
            .map(Value::from)
            .or_else(|| t.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number)),
        Some("boolean") => match t.to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        Some("array") => serde_json::from_str::<Value>(t).ok().filter(Value::is_array),
        Some("object") => serde_json::from_str::<Value>(t).ok().filter(Value::is_object),
        _ => None,
    };
    Some(converted.unwrap_or_else(|| raw.clone()))
}

/// `template_response` → the response's JSON Schema (`None` when it says nothing).
fn response_from_sketch(node: &Node) -> Option<Value> {
    match &node.kind {
        NodeKind::Null => None,
        NodeKind::String(text) => sketch_from_text(text),
        _ => Some(sketch(&node.to_json())),
    }
}

/// A RapidAPI tool file's `schema`: a real JSON Schema is kept, anything else read as a sketch.
fn response_from_rapidapi_schema(node: &Node) -> Option<Value> {
    match node.to_json() {
        Value::Object(map) if map.is_empty() => None,
        Value::Object(map)
            if map.contains_key("$schema")
                || map.contains_key("properties")
                || map.get("type").and_then(Value::as_str).is_some_and(|t| {
                    ["object", "array", "string", "integer", "number", "boolean", "null"].contains(&t)
                }) =>
        {
            Some(Value::Object(map))
        }
        Value::Null => None,
        Value::String(text) => sketch_from_text(&text),
        other => Some(sketch(&other)),
    }
}

/// A sketch stored as text: JSON (StableToolBench keeps long ones as JSON strings, often cut off
/// mid-way) or a single type word.
fn sketch_from_text(text: &str) -> Option<Value> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if t.starts_with('{') || t.starts_with('[') {
        if let Ok(value) = serde_json::from_str::<Value>(t) {
            return Some(sketch(&value));
        }
        let (value, open) = repair_truncated(t)?;
        let mut schema = sketch(&value);
        open_truncated(&mut schema, &open);
        return Some(schema);
    }
    Some(sketch_word(t))
}

/// A type sketch → JSON Schema. Object keys are all listed but none is required (a sketch shows
/// one sample response); lists take their item schema from the first element.
fn sketch(value: &Value) -> Value {
    match value {
        Value::String(s) => sketch_word(s),
        Value::Object(map) => {
            let properties: Map<String, Value> =
                map.iter().filter(|(k, _)| k.as_str() != "_list_length").map(|(k, v)| (k.clone(), sketch(v))).collect();
            if properties.is_empty() {
                json!({"type": "object"})
            } else {
                json!({"type": "object", "properties": properties})
            }
        }
        Value::Array(items) => match items.first() {
            None => json!({"type": "array"}),
            // `["list of str with length 3"]` is a list of strings.
            Some(Value::String(s)) if list_of(s).is_some() => {
                json!({"type": "array", "items": list_of(s).unwrap_or_default()})
            }
            Some(first) => json!({"type": "array", "items": sketch(first)}),
        },
        Value::Null => json!({"type": "null"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
    }
}

/// One word of a sketch: a Python type name, `empty list`, `list of <type> with length <n>`.
fn sketch_word(word: &str) -> Value {
    match word.trim() {
        "str" => json!({"type": "string"}),
        "int" => json!({"type": "integer"}),
        "float" => json!({"type": "number"}),
        "bool" => json!({"type": "boolean"}),
        "NoneType" => json!({"type": "null"}),
        "dict" => json!({"type": "object"}),
        "list" | "empty list" => json!({"type": "array"}),
        other => match list_of(other) {
            Some(items) => json!({"type": "array", "items": items}),
            None => json!({}),
        },
    }
}

/// `list of str with length 3` → the item schema (`{"type": "string"}`).
fn list_of(word: &str) -> Option<Value> {
    let rest = word.trim().strip_prefix("list of ")?;
    let item = rest.split(" with length").next().unwrap_or(rest);
    Some(sketch_word(item))
}

/// Cuts a truncated JSON text back to its last complete member and closes what is still open.
/// Returns the value and the containers (`{` / `[`) the cut went through, outermost first.
fn repair_truncated(text: &str) -> Option<(Value, Vec<u8>)> {
    let bytes = text.as_bytes();
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    // The last place where the text so far is a prefix that closing brackets would complete.
    let mut cut: Option<(usize, Vec<u8>)> = None;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                stack.push(b);
                cut = Some((i + 1, stack.clone()));
            }
            b'}' | b']' => {
                stack.pop();
                if stack.is_empty() {
                    // A complete document followed by something else: not a truncation.
                    return None;
                }
            }
            b',' => cut = Some((i, stack.clone())),
            _ => {}
        }
    }
    let (at, open) = cut?;
    let mut repaired = String::with_capacity(at + open.len());
    repaired.push_str(&text[..at]);
    for &b in open.iter().rev() {
        repaired.push(if b == b'{' { '}' } else { ']' });
    }
    let value = serde_json::from_str::<Value>(&repaired).ok()?;
    Some((value, open))
}

/// Marks the objects a truncation went through as open (`additionalProperties: true`): the keys
/// after the cut are unknown, not absent. The cut runs through the last member at every level.
fn open_truncated(schema: &mut Value, open: &[u8]) {
    let Some((&first, rest)) = open.split_first() else { return };
    let next = if first == b'{' {
        let Some(map) = schema.as_object_mut() else { return };
        map.insert("additionalProperties".into(), Value::Bool(true));
        map.get_mut("properties").and_then(Value::as_object_mut).and_then(|p| p.values_mut().next_back())
    } else {
        schema.get_mut("items")
    };
    if let Some(next) = next {
        open_truncated(next, rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Severity;
    use crate::toolset::doc::{Syntax, parse, parse_json};
    use std::collections::HashSet;

    const STB: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/datasets/stabletoolbench/solvable_queries/test_instruction"
    );
    const TB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/datasets/toolbench");

    fn load_text(text: &str) -> Loaded {
        let doc = parse_json(text).expect("valid JSON");
        load(&doc, text, Path::new("tb.json"), "tb")
    }

    fn load_file(path: &str) -> Loaded {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let doc = parse_json(&text).expect("valid JSON");
        load(&doc, &text, Path::new(path), "tb")
    }

    #[test]
    fn stabletoolbench_groups_load_with_their_distinct_apis() {
        // SOURCE.md's "distinct APIs" are distinct (tool_name, api_name) pairs. Its "distinct tools"
        // are (category, tool) pairs: a few tool names sit in two categories (`👋 Demo Project` in
        // Media/Sports/Events, `Currency Converter_v2` in Financial/Finance) with the same APIs, which
        // merge here as duplicates; no two different pairs map to one name.
        for (group, apis, tools) in
            [("G1_instruction", 810, 152), ("G1_category", 364, 88), ("G1_tool", 499, 99), ("G2_instruction", 604, 330)]
        {
            let started = std::time::Instant::now();
            let loaded = load_file(&format!("{STB}/{group}.json"));
            let elapsed = started.elapsed();
            // The data's only flaws: two APIs declare a parameter twice (`Riddle by ID` of Riddlie:
            // `id` twice; `User by id` of Reqres: `array[]` twice), a warning each.
            for d in &loaded.diagnostics {
                assert_eq!((d.code, d.severity), ("invalid-parameter", Severity::Warning), "{group}: {d:?}");
                assert!(d.message.contains("declared twice"), "{group}: {d:?}");
            }
            assert!(loaded.diagnostics.len() <= 2, "{group}: {:?}", loaded.diagnostics);
            assert_eq!(loaded.tools.len(), apis, "{group}");
            let distinct: HashSet<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(distinct.len(), apis, "{group}: names are unique");
            let tool_names: HashSet<&str> = loaded.tools.iter().filter_map(|t| t.source.tool.as_deref()).collect();
            assert_eq!(tool_names.len(), tools, "{group}");
            assert!(loaded.tools.iter().all(|t| !t.category.is_empty()), "{group}: categories kept");
            assert!(
                loaded.tools.iter().all(|t| t.transport == Transport::None && t.source.kind == SourceKind::ToolBench)
            );
            assert!(
                loaded.tools.iter().any(|t| t.response.is_some()) && loaded.tools.iter().any(|t| t.response.is_none())
            );
            // No `_list_length` survives anywhere.
            for tool in &loaded.tools {
                if let Some(r) = &*tool.response {
                    assert!(!r.to_string().contains("_list_length"), "{group}: {}", tool.name);
                }
            }
            // ~1 MB each: comfortably fast even in a debug build.
            assert!(elapsed.as_secs() < 5, "{group} took {elapsed:?}");
        }
    }

    #[test]
    fn a_record_is_located_and_typed() {
        // The example record of SOURCE.md.
        let path = format!("{STB}/G2_instruction.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let loaded = load_file(&path);
        let tool = loaded.tools.iter().find(|t| t.name == "get_word_by_start_for_random_word_api").unwrap();
        assert_eq!(tool.category, "Data");
        assert!(tool.description.starts_with("Returns a random word"));
        assert_eq!(&text[tool.source.name_range.start..tool.source.name_range.end], "\"Get Word by Start\"");
        assert!(text[tool.source.range.start..tool.source.range.end].starts_with('{'));
        assert_eq!(tool.params.len(), 1);
        assert_eq!(tool.params[0].name, "start");
        assert!(tool.params[0].required);
        assert_eq!(tool.params[0].schema, json!({"type": "string"}));
        assert_eq!(tool.params[0].default, Some(json!("fru")));
        assert_eq!(*tool.response, Some(json!({"type": "object", "properties": {"word": {"type": "string"}}})));
    }

    #[test]
    fn every_record_points_at_its_own_text() {
        let path = format!("{STB}/G2_instruction.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let loaded = load_file(&path);
        for tool in &loaded.tools {
            let record = &text[tool.source.range.start..tool.source.range.end];
            let name = &text[tool.source.name_range.start..tool.source.name_range.end];
            assert!(record.starts_with('{') && record.ends_with('}'));
            assert!(record.contains(name));
            assert_eq!(serde_json::from_str::<String>(name).unwrap(), tool.source.api.clone().unwrap());
        }
    }

    #[test]
    fn query_file_union_merges_duplicates() {
        let text = r#"[
          {"query": "q1", "query_id": 1, "relevant APIs": [["Cats", "Breeds"]], "api_list": [
            {"category_name": "Animals", "tool_name": "Cats", "api_name": "Breeds", "api_description": "All breeds.",
             "required_parameters": [], "optional_parameters": [{"name": "limit", "type": "NUMBER", "description": "", "default": "10"}],
             "method": "GET"},
            {"category_name": "Animals", "tool_name": "Cats", "api_name": "Breed", "api_description": "One breed.",
             "required_parameters": [{"name": "id", "type": "STRING", "description": "Breed id", "default": "abys"}],
             "optional_parameters": [], "method": "GET", "template_response": {"id": "str", "weight": {"metric": "str"}}}]},
          {"query": "q2", "query_id": 2, "api_list": [
            {"category_name": "Animals", "tool_name": "Cats", "api_name": "Breeds", "api_description": "changed",
             "required_parameters": [], "optional_parameters": [], "method": "GET"},
            {"category_name": "Animals", "tool_name": "Dogs", "api_name": "Search", "api_description": "",
             "required_parameters": [{"name": "q", "type": "STRING", "description": "", "default": ""}],
             "optional_parameters": [{"name": "from", "type": "DATE (YYYY-MM-DD)", "description": "", "default": ""},
                                     {"name": "exact", "type": "BOOLEAN", "description": "", "default": "false"}],
             "method": "POST"}]}
        ]"#;
        let loaded = load_text(text);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["breeds_for_cats", "breed_for_cats", "search_for_dogs"]);
        let breeds = &loaded.tools[0];
        assert_eq!(breeds.description, "All breeds.", "the first declaration wins");
        assert_eq!(breeds.params[0].default, Some(json!(10)));
        assert_eq!(breeds.params[0].schema, json!({"type": "number"}));
        assert!(!breeds.params[0].required);
        assert_eq!(breeds.response, None);
        let breed = &loaded.tools[1];
        assert_eq!((breed.params[0].name.as_str(), breed.params[0].wire_name.as_str()), ("is_id", "id"));
        assert!(breed.params[0].required);
        assert_eq!(breed.params[0].location, ParamLocation::Query);
        assert_eq!(breed.params[0].description, "Breed id");
        assert_eq!(breed.source.tool.as_deref(), Some("Cats"));
        assert_eq!(breed.source.api.as_deref(), Some("Breed"));
        assert_eq!(breed.source.method.as_deref(), Some("GET"));
        assert_eq!(
            breed.response,
            Some(json!({"type": "object", "properties": {"id": {"type": "string"},
                "weight": {"type": "object", "properties": {"metric": {"type": "string"}}}}}))
        );
        let search = &loaded.tools[2];
        assert_eq!(search.params[0].default, None);
        assert_eq!(search.params[1].name, "is_from");
        assert_eq!(search.params[1].schema, json!({"type": "string", "format": "date"}));
        assert_eq!(search.params[2].default, Some(json!(false)));
        assert!(search.params.iter().all(|p| p.location == ParamLocation::Body), "POST parameters go in the body");
    }

    #[test]
    fn template_response_sketches() {
        let text = r#"[{"tool_name": "Movies", "api_name": "Search", "category_name": "Media",
            "required_parameters": [], "optional_parameters": [], "method": "GET",
            "template_response": {"page": "int", "score": "float", "adult": "bool", "note": "NoneType",
              "genres": ["list of str with length 3"], "tags": "empty list",
              "results": [{"id": "int", "title": "str", "_list_length": 20}], "_list_length": 1}}]"#;
        let loaded = load_text(text);
        assert_eq!(
            loaded.tools[0].response,
            Some(json!({"type": "object", "properties": {
                "page": {"type": "integer"}, "score": {"type": "number"}, "adult": {"type": "boolean"},
                "note": {"type": "null"},
                "genres": {"type": "array", "items": {"type": "string"}},
                "tags": {"type": "array"},
                "results": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "integer"}, "title": {"type": "string"}}}}}}))
        );
    }

    #[test]
    fn truncated_text_sketches_are_repaired_and_left_open() {
        let sketch = r#"{"status": "str", "data": {"items": [{"id": "int", "name": "str", "_list_length": 2}], "meta": {"total": "int", "pa"#;
        let schema = sketch_from_text(sketch).unwrap();
        assert_eq!(schema["additionalProperties"], json!(true));
        assert_eq!(schema["properties"]["status"], json!({"type": "string"}));
        let data = &schema["properties"]["data"];
        assert_eq!(data["additionalProperties"], json!(true));
        assert_eq!(data["properties"]["items"]["items"]["properties"]["id"], json!({"type": "integer"}));
        assert!(
            data["properties"]["items"]["items"].get("additionalProperties").is_none(),
            "complete objects stay closed"
        );
        assert_eq!(data["properties"]["meta"]["additionalProperties"], json!(true));
        assert_eq!(data["properties"]["meta"]["properties"]["total"], json!({"type": "integer"}));
        // Complete text is parsed as is; a single word is a type.
        assert_eq!(
            sketch_from_text(r#"{"a": "str"}"#).unwrap(),
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
        assert_eq!(sketch_from_text("str").unwrap(), json!({"type": "string"}));
    }

    #[test]
    fn stabletoolbench_text_sketches_all_parse() {
        // G1_instruction keeps ~50 sketches as JSON text cut at a fixed length.
        let path = format!("{STB}/G1_instruction.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let doc = parse_json(&text).unwrap();
        let mut text_sketches = 0;
        for query in doc.items() {
            for record in query.get("api_list").unwrap().items() {
                if let Some(s) = record.get("template_response").and_then(Node::as_str) {
                    text_sketches += 1;
                    let schema = sketch_from_text(s).expect("repaired");
                    assert_eq!(schema["type"], json!("object"), "{s}");
                    assert!(!schema.to_string().contains("_list_length"));
                }
            }
        }
        assert!(text_sketches > 10, "{text_sketches}");
    }

    #[test]
    fn a_record_without_api_name_is_reported_and_skipped() {
        let text = r#"[
          {"tool_name": "Cats", "category_name": "Animals", "api_description": "no name",
           "required_parameters": [], "optional_parameters": [], "method": "GET"},
          {"tool_name": "Cats", "api_name": "Facts", "category_name": "Animals",
           "required_parameters": [], "optional_parameters": [], "method": "GET"},
          {"api_name": "Orphan", "required_parameters": []}
        ]"#;
        let loaded = load_text(text);
        assert_eq!(loaded.tools.len(), 1);
        assert_eq!(loaded.tools[0].name, "facts_for_cats");
        assert_eq!(loaded.diagnostics.len(), 2, "{:?}", loaded.diagnostics);
        let first = &loaded.diagnostics[0];
        assert_eq!((first.code, first.severity), ("invalid-operation", Severity::Error));
        assert!(text[first.range.start..first.range.end].contains("no name"));
        assert!(first.message.contains("api_name"));
        let second = &loaded.diagnostics[1];
        assert!(text[second.range.start..second.range.end].contains("Orphan"));
        assert!(second.message.contains("tool_name"));
    }

    #[test]
    fn colliding_names_keep_the_first() {
        let text = r#"[
          {"tool_name": "Cat Facts", "api_name": "Get Fact", "category_name": "A", "method": "GET"},
          {"tool_name": "cat-facts", "api_name": "get fact", "category_name": "B", "method": "GET"},
          {"tool_name": "cat-facts", "api_name": "get fact", "category_name": "B", "method": "GET"}
        ]"#;
        let loaded = load_text(text);
        assert_eq!(loaded.tools.len(), 1);
        assert_eq!(loaded.tools[0].category, "A");
        assert_eq!(loaded.diagnostics.len(), 1, "one report per distinct record: {:?}", loaded.diagnostics);
        let d = &loaded.diagnostics[0];
        assert_eq!((d.code, d.severity), ("name-collision", Severity::Warning));
        assert_eq!(&text[d.range.start..d.range.end], "\"get fact\"");
        assert!(d.message.contains("get_fact_for_cat_facts"));
    }

    #[test]
    fn rapidapi_tool_file() {
        let text = r#"{
          "tool_name": "Transitaires", "tool_description": "Freight forwarders.", "category": "Logistics",
          "host": "transitaires.p.rapidapi.com",
          "api_list": [
            {"name": "Transitaire", "url": "https://transitaires.p.rapidapi.com/transitaires/X",
             "description": "One forwarder.", "method": "GET",
             "required_parameters": [{"name": "id", "type": "string", "description": "", "default": "DOUANE"}],
             "optional_parameters": [], "schema": {"type": "object", "properties": {"nom": {"type": "string"}}}},
            {"name": "Transitaires", "method": "GET", "required_parameters": [], "optional_parameters": [],
             "schema": {"items": [{"nom": "str"}]}}
          ]}"#;
        let loaded = load_text(text);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert_eq!(loaded.description, "Freight forwarders.");
        let [one, all] = &loaded.tools[..] else { panic!("{:?}", loaded.tools) };
        assert_eq!(one.name, "transitaire_for_transitaires");
        assert_eq!(one.category, "Logistics");
        assert_eq!(one.description, "One forwarder.");
        assert_eq!(one.params[0].name, "is_id");
        assert_eq!(one.response, Some(json!({"type": "object", "properties": {"nom": {"type": "string"}}})));
        assert_eq!(all.description, "Freight forwarders.", "falls back to the tool's description");
        assert_eq!(
            all.response,
            Some(json!({"type": "object", "properties": {"items": {"type": "array", "items":
                {"type": "object", "properties": {"nom": {"type": "string"}}}}}}))
        );
    }

    const FUNCTIONS: &str = r#"[
      {"name": "transitaire_for_transitaires",
       "description": "This is the subfunction for tool \"transitaires\", you can use this tool.The description of this function is: \"Récupère un transitaire donnée\"",
       "parameters": {"type": "object", "properties": {"is_id": {"type": "string", "description": "", "example_value": "DOUANE_AGENCE_GONDRAND"}},
                      "required": ["is_id"], "optional": []}},
      {"function": {"name": "transitaires_for_transitaires", "description": "plain",
       "parameters": {"type": "object", "properties": {"limit": {"type": "integer", "description": "How many", "example_value": 5}},
                      "required": [], "optional": ["limit"]}}},
      {"name": "Finish", "description": "Answer.", "parameters": {"type": "object",
       "properties": {"return_type": {"type": "string", "enum": ["give_answer", "give_up_and_restart"]}}, "required": ["return_type"]}}
    ]"#;

    #[test]
    fn openai_function_form() {
        let loaded = load_text(FUNCTIONS);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let [one, all] = &loaded.tools[..] else { panic!("{:?}", loaded.tools) };
        assert_eq!(one.name, "transitaire_for_transitaires");
        assert_eq!(one.description, "Récupère un transitaire donnée");
        assert_eq!(one.category, "");
        assert_eq!(one.source.tool.as_deref(), Some("transitaires"));
        assert_eq!(one.source.api.as_deref(), Some("transitaire"));
        assert_eq!(
            &FUNCTIONS[one.source.name_range.start..one.source.name_range.end],
            "\"transitaire_for_transitaires\""
        );
        let p = &one.params[0];
        assert_eq!((p.name.as_str(), p.wire_name.as_str(), p.required), ("is_id", "is_id", true));
        assert_eq!(p.schema, json!({"type": "string"}));
        assert_eq!(p.example, Some(json!("DOUANE_AGENCE_GONDRAND")));
        assert_eq!(all.description, "plain");
        assert_eq!(all.source.tool, None);
        assert!(!all.params[0].required);
        assert_eq!(all.params[0].description, "How many");
    }

    #[test]
    fn tooleval_results_and_answer_files() {
        let dict = format!(
            r#"{{"1103": {{"query": "q", "available_tools": {FUNCTIONS}}}, "7": {{"available_tools": {FUNCTIONS}}}}}"#
        );
        let loaded = load_text(&dict);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert_eq!(loaded.tools.len(), 2, "the union, duplicates merged");

        let dir = format!("{TB}/toolbench/tooleval/results/default_evalset/gpt-3.5-turbo_CoT");
        let loaded = load_file(&format!("{dir}/G1_tool.json"));
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics.first());
        assert!(loaded.tools.len() > 100, "{}", loaded.tools.len());
        assert!(loaded.tools.iter().all(|t| t.name != FINISH && names::is_identifier(&t.name)));

        let answers = format!("{TB}/data_example/answer/G1_answer");
        let mut files: Vec<_> = std::fs::read_dir(&answers).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let loaded = load_file(files[0].to_str().unwrap());
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert!(!loaded.tools.is_empty());
    }

    #[test]
    fn toolbench_query_examples_load() {
        for group in ["G1", "G2", "G3"] {
            let loaded = load_file(&format!("{TB}/data_example/instruction/{group}_query.json"));
            assert!(loaded.diagnostics.is_empty(), "{group}: {:?}", loaded.diagnostics);
            assert!(!loaded.tools.is_empty());
        }
        // Records reduced to their names still load; bare queries are no tools and no error.
        let demo = load_file(&format!("{TB}/data_example/instruction/inference_query_demo.json"));
        assert_eq!(demo.tools.len(), 3);
        let open = load_file(&format!("{TB}/data_example/instruction/inference_query_demo_open_domain.json"));
        assert!(open.tools.is_empty() && open.diagnostics.is_empty());
    }

    /// A tool file's category is copied into each of its records: a 64 KB one and 1,100 records
    /// would copy 70 MB out of a 100 KB file.
    #[test]
    fn what_a_tool_file_gives_its_records_is_copied_to_a_bound() {
        let records: Vec<Value> = (0..1100).map(|i| json!({"api_name": format!("a{i}"), "method": "GET"})).collect();
        let text = json!({"tool_name": "t", "category": "c".repeat(64 << 10), "api_list": records}).to_string();
        let loaded = load_text(&text);
        let copied: usize = loaded.tools.iter().map(|t| t.category.len()).sum();
        assert!(copied <= 64 << 20, "{copied} bytes of categories copied out of {} bytes", text.len());
        assert_eq!(loaded.tools.len(), 1100, "every record still loads");
        assert_eq!(loaded.tools[0].category.len(), 64 << 10, "what fits is copied");
        let too_large: Vec<_> = loaded.diagnostics.iter().filter(|d| d.code == "protocol-too-large").collect();
        assert_eq!(too_large.len(), 1, "{:?}", loaded.diagnostics);
    }

    /// A tool file's name is copied into the name, keys and source of each record's tool: past
    /// the bound a record is skipped before any copy is made (one kept as a key of a record that
    /// was then not loaded cost as much: 1 MB × 8,000 records made 3.8 GB).
    #[test]
    fn a_tool_files_name_is_weighed_before_it_is_copied() {
        let records: Vec<Value> = (0..1100).map(|i| json!({"api_name": format!("a{i}"), "method": "GET"})).collect();
        let text = json!({"tool_name": "n".repeat(64 << 10), "api_list": records}).to_string();
        let doc = parse(&text, Syntax::Json).expect("parses");
        let mut loader = Loader::new(Path::new("tools.json"), "rapid", BuildBudget::for_weight(doc.weight()));
        loader.document(&doc);
        assert!(!loader.tools.is_empty() && loader.tools.len() < 1100, "{} tools", loader.tools.len());
        assert_eq!(loader.seen.len(), loader.tools.len(), "a key only for a record loaded");
        assert_eq!(loader.owners.len(), loader.tools.len(), "a name only for a record loaded");
        assert!(loader.budget.diagnostic(Path::new("tools.json")).is_some());
    }

    #[test]
    fn not_toolbench_is_one_diagnostic() {
        let loaded = load_text(r#"{"hello": "world"}"#);
        assert!(loaded.tools.is_empty());
        assert_eq!(loaded.diagnostics.len(), 1);
        assert_eq!(loaded.diagnostics[0].code, "invalid-toolset");
    }

    #[test]
    fn rapidapi_types() {
        assert_eq!(param_schema("STRING"), json!({"type": "string"}));
        assert_eq!(param_schema("NUMBER"), json!({"type": "number"}));
        assert_eq!(param_schema("integer"), json!({"type": "integer"}));
        assert_eq!(param_schema("ENUM"), json!({"type": "string"}));
        assert_eq!(param_schema("DATE (YYYY-MM-DD)"), json!({"type": "string", "format": "date"}));
        assert_eq!(param_schema("TIME (24-hour HH:MM)"), json!({"type": "string", "format": "time"}));
        assert_eq!(param_schema("GEOPOINT (latitude, longitude)"), json!({"type": "string"}));
        assert_eq!(param_schema("mystery"), json!({}));
        assert_eq!(typed_default(&json!("2.5"), &json!({"type": "number"})), Some(json!(2.5)));
        assert_eq!(typed_default(&json!("abc"), &json!({"type": "number"})), Some(json!("abc")));
        assert_eq!(typed_default(&json!("[1,2]"), &json!({"type": "array"})), Some(json!([1, 2])));
        assert_eq!(typed_default(&json!(""), &json!({"type": "string"})), None);
        assert_eq!(names::toolbench_param("id"), "is_id");
    }
}
