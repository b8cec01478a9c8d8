//! The native toolset format: chainsmith's own `*.toolset.json` / `*.toolset.yaml` files.
//!
//! A native file is written by hand (and updated by probing, which writes discovered response
//! schemas back into it), so the loader is strict about meaning and lenient about failure: every
//! problem is a diagnostic on the exact text it concerns, an unknown field is a warning with a
//! did-you-mean fix, and an entry with an error is skipped while the rest of the file loads.
//! `protocols/README.md` documents the format; `protocols/schema/toolset.schema.json` is its JSON
//! Schema. In short:
//!
//! ```json
//! {"chainsmith": "toolset/1", "name": "weather", "base_url": "https://weather.example.com/v1",
//!  "auth": {"header": "Authorization", "prefix": "Bearer ", "value_env": "WEATHER_TOKEN"},
//!  "tools": [{"name": "geocode", "description": "Finds places by name.",
//!             "http": {"method": "GET", "path": "/geocode"},
//!             "parameters": {"q": {"type": "string", "required": true, "description": "Place name"}},
//!             "response": {"type": "object", "properties": {"results": {"type": "array"}}}}]}
//! ```
//!
//! A parameter's key is its name on the wire; its Python keyword follows the one naming rule
//! ([`names::python_param`]). Where it goes defaults to `path` when the HTTP path template names
//! it, else `query` for GET/DELETE/HEAD/OPTIONS and `body` for other methods, and `argument` for
//! tools without an HTTP transport. `$ref`s to `#/$defs/...` (or any pointer into the file) become
//! references into the toolset's schema store (`refs.rs`), so recursive definitions are natural.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Map, Value};

use super::doc::{Node, NodeKind};
use super::refs::{RefProblem, Resolver};
use super::{Auth, Example, Loaded, Param, ParamLocation, Provenance, Source, SourceKind, Tool, Transport, schema};
use crate::diagnostic::{Diagnostic, Severity, did_you_mean};
use crate::names;
use crate::text::ByteRange;

/// The format marker and version this loader reads (`"chainsmith": "toolset/1"`).
pub const FORMAT: &str = "toolset/1";

const TOP_FIELDS: &[&str] = &["$schema", "chainsmith", "name", "description", "base_url", "auth", "$defs", "tools"];
const TOOL_FIELDS: &[&str] = &[
    "name",
    "description",
    "category",
    "http",
    "mcp",
    "command",
    "parameters",
    "response",
    "statuses",
    "examples",
    "probed",
];
const AUTH_FIELDS: &[&str] = &["query", "header", "prefix", "value_env"];
const HTTP_FIELDS: &[&str] = &["method", "path"];
const MCP_FIELDS: &[&str] = &["tool"];
const EXAMPLE_FIELDS: &[&str] = &["question", "program", "arguments", "response"];
const PROBED_FIELDS: &[&str] = &["date", "samples"];
/// A parameter's own fields; everything else in a parameter is JSON Schema.
const PARAM_FIELDS: &[&str] = &["description", "required", "in", "default", "example", "schema"];
const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
const JSON_TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean", "null"];
/// JSON Schema 2020-12 keywords (plus OpenAPI's `nullable` and `example`), accepted inline in a
/// parameter.
const SCHEMA_KEYWORDS: &[&str] = &[
    "$ref",
    "$defs",
    "$comment",
    "$id",
    "$anchor",
    "type",
    "enum",
    "const",
    "format",
    "title",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "items",
    "prefixItems",
    "contains",
    "maxContains",
    "minContains",
    "maxItems",
    "minItems",
    "uniqueItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "maxProperties",
    "minProperties",
    "dependentRequired",
    "dependentSchemas",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "nullable",
];

pub fn load(doc: &Node, text: &str, file: &Path, toolset: &str) -> Loaded {
    let resolver = Resolver::new(doc, format!("{toolset}/{}", file.display()));
    let mut cx = Cx { text, file, diagnostics: Vec::new(), resolver };
    let mut loaded = Loaded::default();
    if !doc.is_object() {
        cx.error(
            head(doc),
            "invalid-toolset",
            "a toolset is an object: {\"chainsmith\": \"toolset/1\", \"tools\": [...]}",
        );
        loaded.diagnostics = cx.diagnostics;
        return loaded;
    }
    cx.unknown_fields(doc, TOP_FIELDS, "a toolset");

    match doc.get("chainsmith") {
        None => cx.warning(
            head(doc),
            "missing-version",
            format!("a toolset file starts with \"chainsmith\": \"{FORMAT}\"; reading it as {FORMAT}"),
        ),
        Some(v) => match v.as_str() {
            Some(FORMAT) => {}
            Some(other) if other.starts_with("toolset/") => cx.error(
                v.range,
                "unsupported-version",
                format!("this chainsmith reads {FORMAT}, not {other}; reading it as {FORMAT}"),
            ),
            _ => cx.error(v.range, "invalid-field", format!("`chainsmith` must be \"{FORMAT}\"")),
        },
    }
    if let Some(name) = cx.string(doc, "name")
        && !names::is_identifier(name)
    {
        let range = doc.get("name").map_or(head(doc), |n| n.range);
        cx.invalid_name(range, name, "a toolset name is its Python module name");
    }
    loaded.description = cx.string(doc, "description").unwrap_or("").trim().to_string();
    if let Some(url) = cx.string(doc, "base_url") {
        if url.starts_with("http://") || url.starts_with("https://") {
            loaded.base_url = Some(url.trim_end_matches('/').to_string());
        } else {
            let range = doc.get("base_url").map_or(head(doc), |n| n.range);
            cx.error(range, "invalid-field", "`base_url` must be an http:// or https:// URL");
        }
    }
    if let Some(auth) = doc.get("auth") {
        loaded.auth = cx.auth(auth);
    }
    if let Some(defs) = doc.get("$defs") {
        if defs.is_object() {
            // Checked once here; what `$ref`s to them lead to is converted by the resolver.
            for (_, _, def) in defs.members() {
                cx.schema(def, 0);
            }
        } else {
            cx.error(defs.range, "invalid-field", "`$defs` must be an object of named JSON Schemas");
        }
    }

    let Some(tools) = doc.get("tools") else {
        cx.error(head(doc), "invalid-toolset", "a toolset needs a `tools` array");
        loaded.diagnostics = cx.diagnostics;
        return loaded;
    };
    if !tools.is_array() {
        cx.error(tools.range, "invalid-toolset", "`tools` must be an array of tool entries");
        loaded.diagnostics = cx.diagnostics;
        return loaded;
    }
    let mut taken: HashSet<String> = HashSet::new();
    for entry in tools.items() {
        let Some(tool) = cx.tool(entry, toolset) else { continue };
        if !taken.insert(tool.name.clone()) {
            cx.error(
                tool.source.name_range,
                "name-collision",
                format!("a tool named `{}` is already declared above; this one is skipped", tool.name),
            );
            continue;
        }
        loaded.tools.push(tool);
    }
    cx.resolver.drain();
    // A `$ref` inside a referenced schema that leads nowhere was reported where `$defs` were
    // checked, or is reported here once, where it is written.
    for problem in std::mem::take(&mut cx.resolver.problems) {
        if !cx.diagnostics.iter().any(|d| d.range == problem.range) {
            cx.error(problem.range, "invalid-ref", format!("`{}` does not exist in this file", problem.reference));
        }
    }
    cx.diagnostics.extend(cx.resolver.budget.diagnostic(file));
    loaded.schemas = std::sync::Arc::new(std::mem::take(&mut cx.resolver.store));
    for tool in &mut loaded.tools {
        tool.schemas = loaded.schemas.clone();
    }
    loaded.diagnostics = cx.diagnostics;
    loaded
}

/// The start of a node, up to the end of its first key: where "this entry lacks …" is shown.
fn head(node: &Node) -> ByteRange {
    let end = node.members().first().map_or((node.range.start + 1).min(node.range.end), |(_, key, _)| key.end);
    ByteRange::new(node.range.start, end.max(node.range.start))
}

struct Cx<'a> {
    text: &'a str,
    file: &'a Path,
    diagnostics: Vec<Diagnostic>,
    /// The named schemas `$ref`s lead to, each converted once into the toolset's store.
    resolver: Resolver<'a>,
}

impl<'a> Cx<'a> {
    fn push(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }
    fn error(&mut self, range: ByteRange, code: &'static str, message: impl Into<String>) {
        self.push(Diagnostic::error(self.file, range, code, message));
    }
    fn warning(&mut self, range: ByteRange, code: &'static str, message: impl Into<String>) {
        self.push(Diagnostic::warning(self.file, range, code, message));
    }
    fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count()
    }

    /// `replacement` spelled the way the text at `range` is (quoted in JSON, maybe bare in YAML).
    fn respell(&self, range: ByteRange, replacement: &str) -> String {
        if self.text.get(range.start..range.end).is_some_and(|t| t.starts_with('"')) {
            Value::String(replacement.to_string()).to_string()
        } else {
            replacement.to_string()
        }
    }

    fn invalid_name(&mut self, range: ByteRange, name: &str, why: &str) {
        let fixed = names::python_param(name);
        let mut d = Diagnostic::error(
            self.file,
            range,
            "invalid-name",
            format!("`{name}` is not a Python identifier ({why}); try `{fixed}`"),
        );
        if names::is_identifier(&fixed) {
            d = d.with_suggestion(format!("Rename to `{fixed}`"), range, self.respell(range, &fixed));
        }
        self.push(d);
    }

    /// Warns about members of `node` that are not in `allowed` (`x-…` extensions are always fine).
    fn unknown_fields(&mut self, node: &Node, allowed: &[&str], what: &str) {
        for (key, range, _) in node.members() {
            if allowed.contains(&key.as_str()) || key.starts_with("x-") {
                continue;
            }
            let mut message = format!("unknown field `{key}` in {what}; it is ignored");
            let d = match did_you_mean(key, allowed.iter().copied()) {
                Some(close) => {
                    message.push_str(&format!(" (did you mean `{close}`?)"));
                    let replacement = self.respell(*range, close);
                    Diagnostic::warning(self.file, *range, "unknown-field", message).with_suggestion(
                        format!("Change to `{close}`"),
                        *range,
                        replacement,
                    )
                }
                None => Diagnostic::warning(self.file, *range, "unknown-field", message),
            };
            self.push(d);
        }
    }

    /// A string member: `None` when absent; an error (and `None`) when not a string.
    fn string<'n>(&mut self, node: &'n Node, key: &str) -> Option<&'n str> {
        let value = node.get(key)?;
        match value.as_str() {
            Some(s) => Some(s),
            None => {
                self.error(value.range, "invalid-field", format!("`{key}` must be a string"));
                None
            }
        }
    }

    /// A required, non-empty string member.
    fn required_string<'n>(&mut self, node: &'n Node, key: &str, what: &str) -> Option<&'n str> {
        match node.get(key) {
            None => {
                self.error(head(node), "missing-field", format!("{what} needs a `{key}`"));
                None
            }
            Some(_) => match self.string(node, key) {
                Some(s) if !s.trim().is_empty() => Some(s),
                Some(_) => {
                    let range = node.get(key).map_or(head(node), |n| n.range);
                    self.error(range, "invalid-field", format!("`{key}` must not be empty"));
                    None
                }
                None => None,
            },
        }
    }

    fn auth(&mut self, node: &Node) -> Option<Auth> {
        if !node.is_object() {
            self.error(
                node.range,
                "invalid-field",
                "`auth` must be an object: {\"query\" | \"header\", \"prefix\"?, \"value_env\"?}",
            );
            return None;
        }
        let before = self.error_count();
        self.unknown_fields(node, AUTH_FIELDS, "`auth`");
        if let Some(v) = node.get("value") {
            self.error(
                node.key_range("value").unwrap_or(v.range),
                "invalid-field",
                "secrets do not belong in protocol files: put the value in an environment variable and name it in `value_env`",
            );
        }
        let query = self.string(node, "query").map(str::to_string);
        let header = self.string(node, "header").map(str::to_string);
        let prefix = self.string(node, "prefix").unwrap_or("").to_string();
        let value_env = self.string(node, "value_env").map(str::to_string);
        match (&query, &header) {
            (None, None) => self.error(
                head(node),
                "missing-field",
                "`auth` needs `query` (a query parameter name) or `header` (a header name)",
            ),
            (Some(_), Some(_)) => self.error(
                node.key_range("header").unwrap_or(node.range),
                "invalid-field",
                "`auth` takes either `query` or `header`, not both",
            ),
            _ => {}
        }
        if let Some(env) = &value_env {
            let valid = env.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                let range = node.get("value_env").map_or(node.range, |n| n.range);
                self.warning(
                    range,
                    "invalid-field",
                    format!("`{env}` does not look like an environment variable name"),
                );
            }
        }
        if self.error_count() > before {
            return None;
        }
        Some(Auth { query, header, prefix, value_env })
    }

    /// One entry of `tools`. `None` (with diagnostics) when it has an error.
    fn tool(&mut self, entry: &'a Node, toolset: &str) -> Option<Tool> {
        if !entry.is_object() {
            self.error(entry.range, "invalid-field", "a tool entry must be an object with a `name`");
            return None;
        }
        let before = self.error_count();
        self.unknown_fields(entry, TOOL_FIELDS, "a tool");

        let name = self.required_string(entry, "name", "a tool");
        let name_range = entry.get("name").map_or(head(entry), |n| n.range);
        if let Some(name) = name
            && !names::is_identifier(name)
        {
            self.invalid_name(name_range, name, "tools are called as Python functions");
        }
        let description = match entry.get("description") {
            None => {
                self.warning(
                    head(entry),
                    "missing-field",
                    "this tool has no `description`: the editor and the LLM only know what it says",
                );
                String::new()
            }
            Some(_) => self.string(entry, "description").unwrap_or("").trim().to_string(),
        };
        let category = self.string(entry, "category").unwrap_or("").trim().to_string();

        let transport = self.transport(entry);
        let params = match entry.get("parameters") {
            None => Vec::new(),
            Some(p) if p.is_object() => self.parameters(p, &transport),
            Some(p) => {
                self.error(p.range, "invalid-field", "`parameters` must be an object: {\"<name>\": {\"type\": …}}");
                Vec::new()
            }
        };
        if let Transport::Http { path, .. } = &transport {
            let path_node = entry.pointer("/http/path");
            for placeholder in placeholders(path) {
                if !params.iter().any(|p| p.wire_name == placeholder) {
                    self.error(
                        path_node.map_or(entry.range, |n| n.range),
                        "missing-parameter",
                        format!("the path names `{{{placeholder}}}` but `parameters` does not declare `{placeholder}`"),
                    );
                }
            }
        }
        let response = match entry.get("response") {
            None => None,
            Some(r) if matches!(r.kind, NodeKind::Null) => None,
            Some(r) => Some(self.schema(r, 0)),
        };
        let statuses = entry.get("statuses").map(|s| self.statuses(s)).unwrap_or_default();
        let examples = entry.get("examples").map(|e| self.examples(e, &params)).unwrap_or_default();
        let provenance = entry.get("probed").map_or(Provenance::Declared, |p| self.probed(p));

        if self.error_count() > before {
            return None;
        }
        let (method, path, tool) = match &transport {
            Transport::Http { method, path } => (Some(method.clone()), Some(path.clone()), None),
            Transport::Mcp { tool } => (None, None, Some(tool.clone())),
            _ => (None, None, None),
        };
        Some(Tool {
            name: name?.to_string(),
            toolset: toolset.to_string(),
            category,
            description,
            params,
            response: response.into(),
            statuses,
            examples,
            provenance,
            transport,
            annotations: None,
            source: Source {
                kind: SourceKind::Native,
                file: self.file.to_path_buf(),
                range: entry.range,
                name_range,
                method,
                path,
                tool,
                api: None,
                operation_id: None,
            },
            schemas: Default::default(),
        })
    }

    /// `http` | `mcp` | `command` (at most one); none means analysis-only.
    fn transport(&mut self, entry: &Node) -> Transport {
        let given: Vec<&str> = ["http", "mcp", "command"].into_iter().filter(|k| entry.get(k).is_some()).collect();
        if given.len() > 1 {
            let range = entry.key_range(given[1]).unwrap_or(entry.range);
            self.error(
                range,
                "invalid-field",
                format!("a tool has one transport: `{}` and `{}` are both given", given[0], given[1]),
            );
            return Transport::None;
        }
        if let Some(http) = entry.get("http") {
            if !http.is_object() {
                self.error(
                    http.range,
                    "invalid-field",
                    "`http` must be an object: {\"method\": \"GET\", \"path\": \"/…\"}",
                );
                return Transport::None;
            }
            self.unknown_fields(http, HTTP_FIELDS, "`http`");
            let method = match http.get("method") {
                None => "GET".to_string(),
                Some(m) => match m.as_str().map(str::to_ascii_uppercase) {
                    Some(m) if METHODS.contains(&m.as_str()) => m,
                    _ => {
                        self.error(m.range, "invalid-field", format!("`method` must be one of {}", METHODS.join(", ")));
                        "GET".to_string()
                    }
                },
            };
            let Some(path) = self.required_string(http, "path", "`http`") else { return Transport::None };
            if !path.starts_with('/') {
                let range = http.get("path").map_or(http.range, |n| n.range);
                self.error(
                    range,
                    "invalid-field",
                    "`path` is relative to the toolset's `base_url` and starts with `/`",
                );
            }
            return Transport::Http { method, path: path.to_string() };
        }
        if let Some(mcp) = entry.get("mcp") {
            if !mcp.is_object() {
                self.error(mcp.range, "invalid-field", "`mcp` must be an object: {\"tool\": \"<server's tool name>\"}");
                return Transport::None;
            }
            self.unknown_fields(mcp, MCP_FIELDS, "`mcp`");
            return match self.required_string(mcp, "tool", "`mcp`") {
                Some(tool) => Transport::Mcp { tool: tool.to_string() },
                None => Transport::None,
            };
        }
        if let Some(command) = entry.get("command") {
            let argv: Option<Vec<String>> =
                command.items().iter().map(|a| a.as_str().map(str::to_string)).collect::<Option<_>>();
            return match argv {
                Some(argv) if command.is_array() && !argv.is_empty() => Transport::Command { argv },
                _ => {
                    self.error(command.range, "invalid-field", "`command` must be a non-empty array of strings (argv)");
                    Transport::None
                }
            };
        }
        Transport::None
    }

    fn parameters(&mut self, node: &'a Node, transport: &Transport) -> Vec<Param> {
        let mut params: Vec<Param> = Vec::new();
        for (key, key_range, spec) in node.members() {
            if let Some(param) = self.parameter(key, *key_range, spec, transport) {
                if let Some(other) = params.iter().find(|p| p.name == param.name) {
                    let message = format!(
                        "`{key}` and `{}` are both the Python keyword `{}`; this one is skipped",
                        other.wire_name, param.name
                    );
                    self.error(*key_range, "name-collision", message);
                    continue;
                }
                params.push(param);
            }
        }
        params
    }

    fn parameter(&mut self, key: &str, key_range: ByteRange, spec: &'a Node, transport: &Transport) -> Option<Param> {
        if key.trim().is_empty() {
            self.error(key_range, "invalid-name", "a parameter needs a non-empty name");
            return None;
        }
        if !spec.is_object() {
            self.error(
                spec.range,
                "invalid-field",
                format!("parameter `{key}` must be an object: {{\"type\": …, \"description\": …, \"required\": …}}"),
            );
            return None;
        }
        let before = self.error_count();
        let mut allowed: Vec<&str> = PARAM_FIELDS.to_vec();
        allowed.extend_from_slice(SCHEMA_KEYWORDS);
        self.unknown_fields(spec, &allowed, &format!("parameter `{key}`"));

        let description = self.string(spec, "description").unwrap_or("").trim().to_string();
        let required = match spec.get("required") {
            None => None,
            Some(r) => match r.as_bool() {
                Some(b) => Some(b),
                None => {
                    let hint = if r.is_array() {
                        "; for the required keys of an object parameter, put its JSON Schema under `schema`"
                    } else {
                        ""
                    };
                    self.error(r.range, "invalid-field", format!("`required` is true or false{hint}"));
                    None
                }
            },
        };
        let declared_in = match spec.get("in") {
            None => None,
            Some(n) => match n.as_str().and_then(ParamLocation::parse) {
                Some(loc) => Some((loc, n.range)),
                None => {
                    self.error(n.range, "invalid-field", "`in` is one of path, query, header, cookie, body, argument");
                    None
                }
            },
        };
        let schema = match spec.get("schema") {
            Some(s) => {
                if let Some((k, r, _)) = spec.members().iter().find(|(k, _, _)| SCHEMA_KEYWORDS.contains(&k.as_str())) {
                    self.warning(
                        *r,
                        "invalid-field",
                        format!("`{k}` is ignored: this parameter's `schema` says it all"),
                    );
                }
                self.schema(s, 0)
            }
            None => {
                let inline: Vec<&(String, ByteRange, Node)> =
                    spec.members().iter().filter(|(k, _, _)| SCHEMA_KEYWORDS.contains(&k.as_str())).collect();
                Value::Object(self.schema_members(inline.into_iter(), 0))
            }
        };

        // Where it goes: declared, else implied by the transport.
        let in_path = matches!(transport, Transport::Http { path, .. } if placeholders(path).any(|p| p == key));
        let location = match (declared_in, transport) {
            (Some((loc, range)), Transport::Http { .. }) => {
                if loc == ParamLocation::Argument {
                    self.error(
                        range,
                        "invalid-field",
                        "an HTTP tool's parameters go in path, query, header, cookie or body",
                    );
                } else if loc == ParamLocation::Path && !in_path {
                    self.error(
                        range,
                        "invalid-field",
                        format!("`{key}` is declared `in: path` but the path has no `{{{key}}}`"),
                    );
                } else if loc != ParamLocation::Path && in_path {
                    self.error(
                        range,
                        "invalid-field",
                        format!("the path names `{{{key}}}`, so `{key}` goes in the path"),
                    );
                }
                loc
            }
            (Some((loc, range)), _) => {
                if loc != ParamLocation::Argument {
                    self.error(
                        range,
                        "invalid-field",
                        format!(
                            "`in: {}` needs an `http` transport; this tool's parameters are arguments",
                            loc.as_str()
                        ),
                    );
                }
                loc
            }
            (None, Transport::Http { method, .. }) => {
                if in_path {
                    ParamLocation::Path
                } else if matches!(method.as_str(), "GET" | "DELETE" | "HEAD" | "OPTIONS") {
                    ParamLocation::Query
                } else {
                    ParamLocation::Body
                }
            }
            (None, _) => ParamLocation::Argument,
        };
        let required = if location == ParamLocation::Path {
            if required == Some(false)
                && let Some(r) = spec.get("required")
            {
                self.warning(r.range, "invalid-field", "a path parameter is always required");
            }
            true
        } else {
            required.unwrap_or(false)
        };

        let mut literal = |field: &str| -> Option<Value> {
            let node = spec.get(field)?;
            let value = node.to_json();
            self.resolver.drain();
            if let Err(why) = schema::check_literal(&self.resolver.store, &schema, &value) {
                self.warning(
                    node.range,
                    "invalid-field",
                    format!("`{field}` does not fit the parameter's schema: {why}"),
                );
            }
            Some(value)
        };
        let default = literal("default");
        let example = literal("example");

        if self.error_count() > before {
            return None;
        }
        Some(Param {
            name: names::python_param(key),
            wire_name: key.to_string(),
            location,
            required,
            description,
            schema,
            default,
            example,
        })
    }

    /// A JSON Schema in the file: `type`s checked, `$ref`s resolved, subschemas walked.
    fn schema(&mut self, node: &'a Node, depth: usize) -> Value {
        match &node.kind {
            NodeKind::Object(members) => Value::Object(self.schema_members(members.iter(), depth)),
            NodeKind::Bool(b) => Value::Bool(*b),
            _ => {
                self.error(node.range, "invalid-schema", "a JSON Schema is an object (or true / false)");
                Value::Object(Map::new())
            }
        }
    }

    fn schema_members(
        &mut self,
        members: impl Iterator<Item = &'a (String, ByteRange, Node)>,
        depth: usize,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        for (key, _, value) in members {
            if depth > 32 {
                // Nesting this deep is no schema a person writes: the rest is left unconstrained.
                break;
            }
            let converted = match key.as_str() {
                "$ref" => match self.reference(value) {
                    Some(key) => Value::String(key),
                    None => continue,
                },
                "type" => {
                    self.check_type(value);
                    value.to_json()
                }
                "properties" | "patternProperties" | "$defs" | "dependentSchemas" if value.is_object() => {
                    let mut map = Map::new();
                    for (k, at, v) in value.members() {
                        if key == "properties" && k.is_empty() {
                            self.warning(*at, "empty-property-name", super::refs::EMPTY_NAME);
                        }
                        map.insert(k.clone(), self.schema(v, depth + 1));
                    }
                    Value::Object(map)
                }
                "items"
                | "additionalProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema" => self.schema(value, depth + 1),
                "prefixItems" | "allOf" | "anyOf" | "oneOf" if value.is_array() => {
                    Value::Array(value.items().iter().map(|v| self.schema(v, depth + 1)).collect())
                }
                _ => value.to_json(),
            };
            out.insert(key.clone(), converted);
        }
        // A `$ref` with siblings stays one: the siblings refine its target where it is read.
        out
    }

    /// The store's key for a `$ref` into this file; `None` (and a diagnostic) when it leads nowhere.
    fn reference(&mut self, value: &'a Node) -> Option<String> {
        let Some(reference) = value.as_str().filter(|r| r.starts_with('#')) else {
            self.error(value.range, "invalid-ref", "only references into this file are supported (`#/$defs/Name`)");
            return None;
        };
        match self.resolver.stored(reference, value.range) {
            Ok(key) => Some(key),
            Err(e) => {
                let message = match e.problem {
                    RefProblem::Cycle => format!("`{}` only leads to other `$ref`s in a cycle", e.reference),
                    _ => format!("`{}` does not exist in this file", e.reference),
                };
                self.error(e.range, "invalid-ref", message);
                None
            }
        }
    }

    fn check_type(&mut self, value: &Node) {
        let bad: Vec<(&str, ByteRange)> = match &value.kind {
            NodeKind::String(t) => vec![(t.as_str(), value.range)],
            NodeKind::Array(items) => items.iter().map(|i| (i.as_str().unwrap_or(""), i.range)).collect(),
            _ => vec![("", value.range)],
        }
        .into_iter()
        .filter(|(t, _)| !JSON_TYPES.contains(t))
        .collect();
        for (t, range) in bad {
            let mut message = format!("`{t}` is not a JSON Schema type ({})", JSON_TYPES.join(", "));
            let alias = match t {
                "str" | "text" => Some("string"),
                "int" | "long" => Some("integer"),
                "float" | "double" => Some("number"),
                "bool" => Some("boolean"),
                "list" => Some("array"),
                "dict" | "map" => Some("object"),
                _ => did_you_mean(t, JSON_TYPES.iter().copied()),
            };
            let mut d = Diagnostic::error(self.file, range, "invalid-schema", String::new());
            if let Some(fix) = alias {
                message.push_str(&format!("; did you mean `{fix}`?"));
                d = d.with_suggestion(format!("Change to `{fix}`"), range, self.respell(range, fix));
            }
            d.message = message;
            self.push(d);
        }
    }

    /// `{"404": "no such city"}` → `["404: no such city"]`.
    fn statuses(&mut self, node: &Node) -> Vec<String> {
        if !node.is_object() {
            self.error(
                node.range,
                "invalid-field",
                "`statuses` maps HTTP status codes to what they mean: {\"404\": \"…\"}",
            );
            return Vec::new();
        }
        let mut out = Vec::new();
        for (code, _, meaning) in node.members() {
            match meaning.as_str() {
                Some(m) if !m.trim().is_empty() => out.push(format!("{code}: {}", m.trim())),
                Some(_) => out.push(code.clone()),
                None => self.warning(meaning.range, "invalid-field", "a status's meaning is a string"),
            }
        }
        out
    }

    fn examples(&mut self, node: &Node, params: &[Param]) -> Vec<Example> {
        if !node.is_array() {
            self.error(
                node.range,
                "invalid-field",
                "`examples` must be an array of {question?, program?, arguments?, response?}",
            );
            return Vec::new();
        }
        let mut out = Vec::new();
        for item in node.items() {
            if !item.is_object() {
                self.error(
                    item.range,
                    "invalid-field",
                    "an example is an object: {question?, program?, arguments?, response?}",
                );
                continue;
            }
            self.unknown_fields(item, EXAMPLE_FIELDS, "an example");
            let arguments = item.get("arguments");
            if let Some(args) = arguments {
                if args.is_object() {
                    for (k, r, _) in args.members() {
                        if !params.iter().any(|p| &p.wire_name == k || &p.name == k) {
                            self.warning(*r, "unknown-parameter", format!("this tool has no parameter `{k}`"));
                        }
                    }
                } else {
                    self.error(args.range, "invalid-field", "`arguments` is an object of parameter values");
                }
            }
            out.push(Example {
                question: self.string(item, "question").map(str::to_string),
                program: self.string(item, "program").map(str::to_string),
                arguments: arguments.filter(|a| a.is_object()).map(Node::to_json),
                response: item.get("response").map(Node::to_json),
            });
        }
        out
    }

    fn probed(&mut self, node: &Node) -> Provenance {
        if !node.is_object() {
            self.error(node.range, "invalid-field", "`probed` is {\"date\": \"YYYY-MM-DD\", \"samples\": n}");
            return Provenance::Declared;
        }
        self.unknown_fields(node, PROBED_FIELDS, "`probed`");
        let date = self.required_string(node, "date", "`probed`").unwrap_or("").to_string();
        let samples = match node.get("samples") {
            None => 0,
            Some(n) => match n.to_json().as_u64().and_then(|s| u32::try_from(s).ok()) {
                Some(s) => s,
                None => {
                    self.error(n.range, "invalid-field", "`samples` is a whole number (how many responses were seen)");
                    0
                }
            },
        };
        Provenance::Probed { date, samples }
    }
}

/// The `{name}`s of a path template, in order.
fn placeholders(path: &str) -> impl Iterator<Item = &str> {
    path.split('{').skip(1).filter_map(|rest| rest.split_once('}').map(|(name, _)| name.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolset::doc::{Syntax, parse};
    use crate::toolset::schema::KeyLookup;
    use serde_json::json;

    const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/examples/weather.toolset.json");
    const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/README.md");
    const SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/schema/toolset.schema.json");

    fn load_as(text: &str, syntax: Syntax) -> Loaded {
        let doc = parse(text, syntax).expect("parses");
        let file = if syntax == Syntax::Yaml { "t.toolset.yaml" } else { "t.toolset.json" };
        load(&doc, text, Path::new(file), "t")
    }

    fn slice(text: &str, r: ByteRange) -> &str {
        &text[r.start..r.end]
    }

    #[test]
    fn the_example_toolset_loads_cleanly() {
        let text = std::fs::read_to_string(EXAMPLE).unwrap();
        let doc = parse(&text, Syntax::Json).unwrap();
        let loaded = load(&doc, &text, Path::new("protocols/examples/weather.toolset.json"), "weather");
        assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
        assert_eq!(loaded.base_url.as_deref(), Some("https://weather.example.com/v1"));
        assert_eq!(
            loaded.auth,
            Some(Auth {
                query: None,
                header: Some("X-Api-Key".into()),
                prefix: String::new(),
                value_env: Some("WEATHER_API_KEY".into())
            })
        );
        assert!(!loaded.description.is_empty());
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["geocode", "forecast", "current_conditions", "station", "create_alert", "delete_alert"]);

        let geocode = &loaded.tools[0];
        assert_eq!(geocode.toolset, "weather");
        assert_eq!(geocode.category, "geocoding");
        assert_eq!(geocode.transport, Transport::Http { method: "GET".into(), path: "/geocode".into() });
        assert_eq!(geocode.endpoint().as_deref(), Some("GET /geocode"));
        let q = geocode.param("q").unwrap();
        assert!(q.required);
        assert_eq!(q.location, ParamLocation::Query);
        assert_eq!(q.schema["type"], json!("string"));
        let count = geocode.param("count").unwrap();
        assert!(!count.required);
        assert_eq!(count.default, Some(json!(5)));
        let response = geocode.response.as_ref().unwrap();
        let KeyLookup::Declared(results) = schema::property(geocode, response, "results") else { panic!("{response}") };
        let item = schema::items(geocode, results).unwrap();
        for key in ["name", "latitude", "longitude", "country"] {
            assert!(matches!(schema::property(geocode, item, key), KeyLookup::Declared(_)), "{key}");
        }
        assert_eq!(slice(&text, geocode.source.name_range), "\"geocode\"");
        assert!(slice(&text, geocode.source.range).starts_with('{'));
        assert_eq!(geocode.source.kind, SourceKind::Native);
        assert_eq!(geocode.examples.len(), 1);
        assert_eq!(geocode.provenance, Provenance::Declared);

        let forecast = &loaded.tools[1];
        let units = forecast.param("units").unwrap();
        assert_eq!(units.schema["enum"], json!(["metric", "imperial"]));
        assert_eq!(units.default, Some(json!("metric")));
        assert_eq!(forecast.param("days").unwrap().schema["maximum"], json!(16));
        assert!(forecast.param("latitude").unwrap().required && forecast.param("longitude").unwrap().required);
        // `$ref: #/$defs/...` stays a reference into the toolset's store, followed where it is read.
        let daily = schema::property(forecast, forecast.response.as_ref().unwrap(), "daily");
        let KeyLookup::Declared(daily) = daily else { panic!() };
        assert!(matches!(
            schema::property(forecast, schema::items(forecast, daily).unwrap(), "temperature_max"),
            KeyLookup::Declared(_)
        ));
        let written = forecast.response.as_ref().unwrap().to_string();
        assert!(written.contains("\"$ref\":\"weather/"), "{written}");
        assert!(std::sync::Arc::ptr_eq(&forecast.schemas, &loaded.schemas) && !loaded.schemas.is_empty());

        let current = &loaded.tools[2];
        assert!(matches!(current.provenance, Provenance::Probed { samples: 3, .. }));

        let station = &loaded.tools[3];
        let id = station.param("station_id").unwrap();
        assert_eq!((id.location, id.required), (ParamLocation::Path, true));
        assert_eq!(station.statuses, ["404: no station with this id"]);

        let alert = &loaded.tools[4];
        assert_eq!(alert.transport, Transport::Http { method: "POST".into(), path: "/alerts".into() });
        assert!(
            alert.params.iter().filter(|p| p.wire_name != "X-Request-Id").all(|p| p.location == ParamLocation::Body)
        );
        let header = alert.params.iter().find(|p| p.wire_name == "X-Request-Id").unwrap();
        assert_eq!((header.name.as_str(), header.location), ("x_request_id", ParamLocation::Header));

        let delete = &loaded.tools[5];
        assert_eq!(delete.param("alert_id").unwrap().location, ParamLocation::Path);
        assert_eq!(*delete.response, Some(json!({"type": "null"})));
    }

    #[test]
    fn a_malformed_tool_is_skipped_and_located() {
        let text = r#"{
  "chainsmith": "toolset/1",
  "base_url": "https://api.example.com",
  "tools": [
    {"name": "good_one", "description": "Fine.", "http": {"method": "GET", "path": "/items/{item_id}"},
     "parameters": {"item_id": {"type": "integer"}}},
    {"name": "bad-name", "description": "Dash.", "http": {"path": "/x"}},
    {"name": "bad_type", "description": "A typo.", "http": {"path": "/y"},
     "parameters": {"q": {"type": "str"}}},
    {"name": "missing_param", "description": "Path names an undeclared parameter.", "http": {"path": "/z/{zid}"}},
    {"name": "good_one", "description": "Again."},
    {"description": "no name"},
    {"name": "typo_field", "descripton": "A typo in a field name is only a warning."}
  ]
}"#;
        let loaded = load_as(text, Syntax::Json);
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["good_one", "typo_field"]);
        let good = &loaded.tools[0];
        assert_eq!(good.params[0].location, ParamLocation::Path);
        assert!(good.params[0].required);

        let find = |code: &str| loaded.diagnostics.iter().filter(|d| d.code == code).collect::<Vec<_>>();
        let [bad_name] = &find("invalid-name")[..] else { panic!("{:#?}", loaded.diagnostics) };
        assert_eq!(slice(text, bad_name.range), "\"bad-name\"");
        assert_eq!(bad_name.suggestions[0].replacement, "\"bad_name\"");
        let [bad_type] = &find("invalid-schema")[..] else { panic!("{:#?}", loaded.diagnostics) };
        assert_eq!(slice(text, bad_type.range), "\"str\"");
        assert!(bad_type.message.contains("string"));
        let [missing] = &find("missing-parameter")[..] else { panic!("{:#?}", loaded.diagnostics) };
        assert_eq!(slice(text, missing.range), "\"/z/{zid}\"");
        let [dup] = &find("name-collision")[..] else { panic!("{:#?}", loaded.diagnostics) };
        assert_eq!(slice(text, dup.range), "\"good_one\"");
        assert!(text[..dup.range.start].contains("A typo."), "the later one is reported");
        // The entry without a name (error), and `typo_field`, whose description is misspelt (warning).
        let [no_name, no_description] = &find("missing-field")[..] else { panic!("{:#?}", loaded.diagnostics) };
        assert_eq!(no_name.severity, Severity::Error);
        assert!(slice(text, no_name.range).starts_with("{\"description\""));
        assert_eq!(no_description.severity, Severity::Warning);
        let [typo] = &find("unknown-field")[..] else { panic!("{:#?}", loaded.diagnostics) };
        assert_eq!(typo.severity, Severity::Warning);
        assert_eq!(slice(text, typo.range), "\"descripton\"");
        assert_eq!(typo.suggestions[0].replacement, "\"description\"");
    }

    #[test]
    fn a_yaml_toolset_loads() {
        let text = "\
chainsmith: toolset/1
name: calc
description: Arithmetic over MCP and a local command.
tools:
  - name: add
    description: Adds two numbers.
    mcp: {tool: get-sum}
    parameters:
      a: {type: number, required: true}
      b: {type: number, required: true}
    response: {type: number}
  - name: word_count
    description: Counts words with wc.
    command: [wc, -w]
    parameters:
      text:
        type: string
        required: true
        description: The text to count.
  - name: broken
    mcp: {tool: x}
    parameters:
      a: {type: number, in: query}
";
        let loaded = load_as(text, Syntax::Yaml);
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add", "word_count"]);
        assert_eq!(loaded.description, "Arithmetic over MCP and a local command.");
        let add = &loaded.tools[0];
        assert_eq!(add.transport, Transport::Mcp { tool: "get-sum".into() });
        assert_eq!(add.source.tool.as_deref(), Some("get-sum"));
        assert_eq!(add.params.len(), 2);
        assert!(add.params.iter().all(|p| p.required && p.location == ParamLocation::Argument));
        assert_eq!(*add.response, Some(json!({"type": "number"})));
        assert_eq!(slice(text, add.source.name_range), "add");
        let wc = &loaded.tools[1];
        assert_eq!(wc.transport, Transport::Command { argv: vec!["wc".into(), "-w".into()] });
        assert_eq!(wc.params[0].description, "The text to count.");
        assert_eq!(wc.response, None, "no response declared: unknown");
        // `broken`: a query parameter on an MCP tool (error) and no description (warning).
        let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        let [error] = &errors[..] else { panic!("{:#?}", loaded.diagnostics) };
        assert_eq!(slice(text, error.range), "query");
        assert!(loaded.diagnostics.iter().any(|d| d.code == "missing-field" && d.severity == Severity::Warning));
    }

    #[test]
    fn top_level_problems_are_diagnostics() {
        let text = r#"{"chainsmith": "toolset/2", "name": "my-tools", "base_url": "api.example.com",
            "auth": {"header": "Authorization", "value": "sk-secret"}, "tools": [{"name": "ok", "description": "d"}]}"#;
        let loaded = load_as(text, Syntax::Json);
        let codes: Vec<&str> = loaded.diagnostics.iter().map(|d| d.code).collect();
        assert!(codes.contains(&"unsupported-version"), "{codes:?}");
        assert!(codes.contains(&"invalid-name"), "{codes:?}");
        assert!(codes.iter().filter(|c| **c == "invalid-field").count() >= 2, "{codes:?}");
        assert_eq!(loaded.base_url, None);
        assert_eq!(loaded.auth, None);
        assert_eq!(loaded.tools.len(), 1, "tools still load");

        let loaded = load_as(r#"{"chainsmith": "toolset/1"}"#, Syntax::Json);
        assert_eq!(loaded.diagnostics[0].code, "invalid-toolset");
        let loaded = load_as(r#"{"tools": []}"#, Syntax::Json);
        assert_eq!(loaded.diagnostics[0].code, "missing-version");
        assert_eq!(loaded.diagnostics[0].severity, Severity::Warning);
    }

    #[test]
    fn recursive_defs_are_followed_and_broken_refs_reported_once() {
        let text = r##"{"chainsmith": "toolset/1", "name": "files",
          "$defs": {
            "Entry": {"type": "object", "properties": {"name": {"type": "string"},
                      "children": {"type": "array", "items": {"$ref": "#/$defs/Entry"}}}},
            "Loop": {"$ref": "#/$defs/Loop"},
            "Broken": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Nope"}}}
          },
          "tools": [
            {"name": "tree", "description": "d", "response": {"$ref": "#/$defs/Entry", "description": "the root"}},
            {"name": "odd", "description": "d", "response": {"$ref": "#/$defs/Broken"}}
          ]}"##;
        let loaded = load_as(text, Syntax::Json);
        let problems: Vec<(&str, &str)> = loaded.diagnostics.iter().map(|d| (d.code, slice(text, d.range))).collect();
        assert_eq!(problems, [("invalid-ref", "\"#/$defs/Loop\""), ("invalid-ref", "\"#/$defs/Nope\"")]);
        let tree = &loaded.tools[0];
        let mut node = tree.response.as_ref().unwrap();
        for _ in 0..50 {
            let KeyLookup::Declared(children) = schema::property(tree, node, "children") else { panic!("{node}") };
            node = schema::items(tree, children).unwrap();
        }
        assert!(matches!(schema::property(tree, node, "name"), KeyLookup::Declared(_)));
        assert_eq!(schema::property(tree, node, "nmae"), KeyLookup::Missing);
        // The broken schema is unknown where it is used: its tool loads, its keys are not checked.
        let odd = &loaded.tools[1];
        assert!(!matches!(schema::property(odd, odd.response.as_ref().unwrap(), "anything"), KeyLookup::Missing));
    }

    /// A property named `""` is reported where it is written, in `$defs` once and inline alike,
    /// and leaves its object's keys unchecked.
    #[test]
    fn a_property_named_empty_is_reported() {
        let text = r##"{"chainsmith": "toolset/1", "name": "t",
          "$defs": {"Page": {"type": "object", "properties": {"": {"type": "array"}, "page": {"type": "integer"}}}},
          "tools": [
            {"name": "a", "description": "d", "response": {"$ref": "#/$defs/Page"}},
            {"name": "b", "description": "d", "response": {"$ref": "#/$defs/Page"}},
            {"name": "c", "description": "d", "response": {"type": "object", "properties": {"": {}}}}
          ]}"##;
        let loaded = load_as(text, Syntax::Json);
        let found: Vec<(&str, &str)> = loaded.diagnostics.iter().map(|d| (d.code, slice(text, d.range))).collect();
        assert_eq!(found, [("empty-property-name", "\"\""), ("empty-property-name", "\"\"")]);
        assert!(loaded.diagnostics.iter().all(|d| d.severity == crate::diagnostic::Severity::Warning));
        let a = &loaded.tools[0];
        assert_eq!(schema::property(a, a.response.as_ref().unwrap(), "results"), KeyLookup::Open(None));
    }

    #[test]
    fn parameter_locations_follow_the_transport() {
        let text = r#"{"chainsmith": "toolset/1", "tools": [
          {"name": "put_item", "description": "d", "http": {"method": "put", "path": "/items/{id}"},
           "parameters": {"id": {"type": "string"}, "name": {"type": "string", "required": true},
                          "dry-run": {"type": "boolean", "in": "query", "default": false},
                          "filter": {"schema": {"type": "object", "required": ["field"], "properties": {"field": {"type": "string"}}}}}},
          {"name": "remove", "description": "d", "http": {"method": "DELETE", "path": "/items"},
           "parameters": {"from": {"type": "string"}}},
          {"name": "offline", "description": "d", "parameters": {"x": {}}}
        ]}"#;
        let loaded = load_as(text, Syntax::Json);
        assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
        let put = &loaded.tools[0];
        assert_eq!(put.endpoint().as_deref(), Some("PUT /items/{id}"));
        let locs: Vec<(&str, ParamLocation, bool)> =
            put.params.iter().map(|p| (p.name.as_str(), p.location, p.required)).collect();
        assert_eq!(
            locs,
            [
                ("id", ParamLocation::Path, true),
                ("name", ParamLocation::Body, true),
                ("dry_run", ParamLocation::Query, false),
                ("filter", ParamLocation::Body, false)
            ]
        );
        assert_eq!(put.params[3].schema["required"], json!(["field"]));
        assert_eq!(put.params[2].schema, json!({"type": "boolean"}), "own fields are not schema");
        let remove = &loaded.tools[1];
        assert_eq!((remove.params[0].name.as_str(), remove.params[0].location), ("from_", ParamLocation::Query));
        assert_eq!(loaded.tools[2].params[0].location, ParamLocation::Argument);
        assert_eq!(loaded.tools[2].transport, Transport::None);
    }

    #[test]
    fn the_readme_example_loads_cleanly() {
        // The complete example of protocols/README.md (its first ```json block) is a valid toolset.
        let readme = std::fs::read_to_string(README).unwrap();
        let start = readme.find("```json\n").expect("a json block") + "```json\n".len();
        let end = start + readme[start..].find("```").unwrap();
        let loaded = load_as(&readme[start..end], Syntax::Json);
        assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
        assert_eq!(loaded.tools.len(), 3);
        assert_eq!(loaded.tools[0].params[1].name, "page_size");
        assert_eq!(loaded.tools[2].params[2].name, "idempotency_key");
        assert_eq!(loaded.tools[2].response, None);
        // And its YAML excerpt.
        let start = readme.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
        let end = start + readme[start..].find("```").unwrap();
        let loaded = load_as(&readme[start..end], Syntax::Yaml);
        assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
        assert_eq!(loaded.tools[0].endpoint().as_deref(), Some("GET /books/{book_id}"));
    }

    #[test]
    fn the_format_schema_names_every_field() {
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).unwrap();
        assert_eq!(schema["$schema"], json!("https://json-schema.org/draft/2020-12/schema"));
        let keys = |v: &Value| v["properties"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        let mut top = keys(&schema);
        top.sort();
        let mut expected: Vec<String> = TOP_FIELDS.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(top, expected);
        let mut tool = keys(&schema["$defs"]["tool"]);
        tool.sort();
        let mut expected: Vec<String> = TOOL_FIELDS.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(tool, expected);
        for field in PARAM_FIELDS {
            assert!(schema["$defs"]["parameter"]["properties"].get(*field).is_some(), "{field}");
        }
    }
}
