//! The OpenAPI 3.0 / 3.1 loader (and Swagger 2.0, through [`swagger::upgrade`]): turns every
//! operation under `paths` into a [`Tool`].
//!
//! It reads the position-keeping [`Node`] tree, so every tool knows the byte range of its operation
//! (go-to-definition) and every problem is a [`Diagnostic`] on its own text. Local `$ref`s
//! (`#/components/...`) become references into the toolset's schema store (each named schema read
//! once; recursion is kept, nothing is cut); path-item
//! parameters are merged with the operation's; JSON request bodies become keyword parameters; the
//! first successful JSON response gives the response schema and its examples. `servers` gives the
//! base URL and `securitySchemes` the authentication.
//!
//! Loading is tolerant: a broken operation (an unresolvable `$ref`, a malformed operation) becomes
//! a diagnostic and is left out; every other operation still loads.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Value, json};

use super::doc::{Node, NodeKind, text_weight};
use super::refs::{self, RefError, Resolver};
use super::required::{Flag, flag};
use super::schema::{self, Schemas};
use super::swagger;
use super::{Auth, Example, Loaded, Param, ParamLocation, Provenance, Source, SourceKind, Tool, Transport};
use crate::diagnostic::Diagnostic;
use crate::names;
use crate::text::{ByteRange, quoted};

/// The operation keys of a path item, in the order OpenAPI lists them.
const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Header parameters OpenAPI says to ignore: the transport sets them.
const IGNORED_HEADERS: [&str; 3] = ["accept", "content-type", "authorization"];

/// Loads the tools of one OpenAPI document. `doc` is `text` already parsed; `file` is the path that
/// diagnostics and [`Source::file`] carry; `toolset` is the module name each tool belongs to.
pub fn load(doc: &Node, text: &str, file: &Path, toolset: &str) -> Loaded {
    load_within(doc, text, file, toolset, None)
}

/// [`load`], the tools built out of `budget` when one is given (what is left of it after the
/// files the document refers to were bundled in: [`super::bundle::Bundled`]).
pub fn load_within(doc: &Node, _text: &str, file: &Path, toolset: &str, budget: Option<refs::BuildBudget>) -> Loaded {
    if swagger::is_swagger2(doc) {
        // Sized by the 2.0 document as written: what the rewrite copies into each operation
        // draws on the same bound as what the loader then builds.
        let mut budget = budget.unwrap_or_else(|| refs::BuildBudget::for_weight(doc.weight()));
        let (upgraded, form_flags) = swagger::upgrade(doc, &mut budget);
        return load_document(&upgraded, file, toolset, &form_flags, Some(budget));
    }
    load_document(doc, file, toolset, &[], budget)
}

fn load_document(
    doc: &Node,
    file: &Path,
    toolset: &str,
    form_flags: &[swagger::FormFlag],
    budget: Option<refs::BuildBudget>,
) -> Loaded {
    let mut loaded = Loaded::default();
    if !supported_version(doc, file, &mut loaded.diagnostics) {
        return loaded;
    }
    if let Some(info) = doc.get("info") {
        loaded.description = join_text(info.str_of("title"), info.str_of("description"));
    }
    loaded.base_url = base_url(doc);

    let mut loader = Loader {
        resolver: match budget {
            Some(budget) => Resolver::with_budget(doc, format!("{toolset}/{}", file.display()), budget),
            None => Resolver::new(doc, format!("{toolset}/{}", file.display())),
        },
        file,
        toolset,
        diagnostics: Vec::new(),
        auth: None,
        flagged: HashSet::new(),
    };
    loader.auth = loader.auth(doc);
    let operations = loader.operations(doc);
    let names = operation_names(&operations);

    // Names are taken in document order by every operation that exists, whether or not it then
    // loads, so a broken operation never renames its neighbours.
    let mut taken: HashMap<&str, &Operation> = HashMap::new();
    let mut tools = Vec::new();
    for (op, name) in operations.iter().zip(&names) {
        if let Some(first) = taken.get(name.as_str()) {
            loader.diagnostics.push(Diagnostic::error(
                file,
                op.key_range,
                "name-collision",
                format!(
                    "operation {} would be named `{}`, which {} already uses; this operation is skipped",
                    op.label(),
                    quoted(name),
                    first.label()
                ),
            ));
            continue;
        }
        taken.insert(name, op);
        if let Some(tool) = loader.tool(op, name.clone()) {
            tools.push(tool);
        }
    }

    for swagger::FormFlag { what, node } in form_flags {
        let consequence = match flag(node) {
            Flag::Text(taken) | Flag::Bool(taken) => format!("read as {taken}"),
            Flag::Other => "read as false, as if absent (the field is optional)".to_string(),
        };
        loader.report_flag(node, what, &consequence);
    }
    for at in std::mem::take(&mut loader.resolver.empty_names) {
        loader.diagnostics.push(Diagnostic::warning(file, at, "empty-property-name", refs::EMPTY_NAME));
    }
    loader.diagnostics.extend(loader.resolver.budget.diagnostic(file));

    loaded.auth = loader.auth.take();
    loaded.tools = tools;
    for problem in std::mem::take(&mut loader.resolver.problems) {
        let consequence = "the schemas that use it are unknown at that point (not checked)";
        loaded.diagnostics.push(problem.diagnostic(file, consequence));
    }
    loaded.schemas = std::sync::Arc::new(std::mem::take(&mut loader.resolver.store));
    for tool in &mut loaded.tools {
        tool.schemas = loaded.schemas.clone();
    }
    loaded.diagnostics.append(&mut loader.diagnostics);
    loaded
}

/// Only OpenAPI 3.x is read; anything else gets one diagnostic on its version field.
fn supported_version(doc: &Node, file: &Path, diagnostics: &mut Vec<Diagnostic>) -> bool {
    if !doc.is_object() {
        diagnostics.push(Diagnostic::error(
            file,
            doc.range,
            "unsupported-openapi",
            "an OpenAPI document must be an object with an `openapi` version",
        ));
        return false;
    }
    if let Some(node) = doc.get("openapi") {
        let version = scalar_text(node);
        if version == "3" || version.starts_with("3.") {
            return true;
        }
        let at = doc.key_range("openapi").unwrap_or(node.range);
        diagnostics.push(Diagnostic::error(
            file,
            at,
            "unsupported-openapi",
            format!("OpenAPI version `{version}` is not supported; chainsmith reads OpenAPI 3.0 and 3.1"),
        ));
        return false;
    }
    if let Some(node) = doc.get("swagger") {
        let at = doc.key_range("swagger").unwrap_or(node.range);
        diagnostics.push(Diagnostic::error(
            file,
            at,
            "unsupported-openapi",
            format!(
                "Swagger `{}` is not supported, so no tools are loaded from this file; chainsmith reads \
                 Swagger 2.0 and OpenAPI 3.0 / 3.1",
                scalar_text(node)
            ),
        ));
        return false;
    }
    diagnostics.push(Diagnostic::error(
        file,
        ByteRange::new(doc.range.start, doc.range.start),
        "unsupported-openapi",
        "the document has no `openapi` version; chainsmith reads OpenAPI 3.0 and 3.1",
    ));
    false
}

/// A string or number as text (`openapi: 3.0` is a number in YAML).
fn scalar_text(node: &Node) -> String {
    match &node.kind {
        NodeKind::String(s) => s.clone(),
        NodeKind::Number(n) => n.to_string(),
        NodeKind::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// A heading and a body joined into one text: `Search People. Search for people.`
fn join_text(head: &str, body: &str) -> String {
    let (head, body) = (head.trim(), body.trim());
    if head.is_empty() {
        return body.to_string();
    }
    if body.is_empty() || body.eq_ignore_ascii_case(head) {
        return head.to_string();
    }
    if body.to_lowercase().starts_with(&head.to_lowercase()) {
        return body.to_string();
    }
    let separator = if head.ends_with(['.', '!', '?', ':']) { " " } else { ". " };
    format!("{head}{separator}{body}")
}

/// The first server's URL, `{variables}` replaced by their defaults, without a trailing `/`.
fn base_url(doc: &Node) -> Option<String> {
    let server = doc.get("servers")?.items().first()?;
    let template = server.get("url")?.as_str()?;
    let variables = server.get("variables");
    let mut url = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else { break };
        url.push_str(&rest[..open]);
        let name = &rest[open + 1..close];
        match variables.and_then(|v| v.get(name)).and_then(|v| v.get("default")).map(scalar_text) {
            Some(value) if !value.is_empty() => url.push_str(&value),
            _ => url.push_str(&rest[open..=close]),
        }
        rest = &rest[close + 1..];
    }
    url.push_str(rest);
    let url = url.trim().trim_end_matches('/');
    (!url.is_empty()).then(|| url.to_string())
}

/// One `paths` entry's operation, before it becomes a tool.
struct Operation<'a> {
    path: &'a str,
    /// Lowercase, as OpenAPI spells the key.
    method: &'static str,
    key_range: ByteRange,
    node: &'a Node,
    /// The path item holding it (after its own `$ref`, if any).
    item: &'a Node,
}

impl Operation<'_> {
    /// `GET /person/{person_id}`.
    fn label(&self) -> String {
        format!("{} {}", self.method.to_ascii_uppercase(), quoted(self.path))
    }
}

/// A `{parameter}` path segment.
fn is_template(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with('}')
}

fn has_path_params(path: &str) -> bool {
    path.split('/').any(is_template)
}

/// The design's naming rule: the name from the path; when several operations of the file share it,
/// the ones with path parameters append them (`items_by_id`) while one without keeps the plain name.
fn operation_names(operations: &[Operation]) -> Vec<String> {
    let bases: Vec<String> = operations.iter().map(|op| names::openapi_tool(op.method, op.path)).collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for base in &bases {
        *counts.entry(base.as_str()).or_default() += 1;
    }
    operations
        .iter()
        .zip(&bases)
        .map(|(op, base)| {
            if counts[base.as_str()] > 1 && has_path_params(op.path) {
                names::openapi_disambiguated(base, op.path)
            } else {
                base.clone()
            }
        })
        .collect()
}

/// The template variables of a path (`/a/{x}/b/{y}` → `x`, `y`).
fn path_variables(path: &str) -> impl Iterator<Item = &str> {
    path.split('{').skip(1).filter_map(|s| s.split_once('}').map(|(name, _)| name)).filter(|n| !n.is_empty())
}

/// The media type without parameters, lowercase (`application/json; charset=utf-8` → `application/json`).
fn media_essence(media_type: &str) -> String {
    media_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

fn is_json_media(essence: &str) -> bool {
    essence == "application/json" || essence.ends_with("/json") || essence.ends_with("+json")
}

fn is_form_media(essence: &str) -> bool {
    essence == "application/x-www-form-urlencoded" || essence == "multipart/form-data"
}

/// The JSON media type of a `content` map: `application/json` first, then any other JSON type.
fn json_media(content: Option<&Node>) -> Option<&Node> {
    let members = content?.members();
    let essences: Vec<String> = members.iter().map(|(k, _, _)| media_essence(k)).collect();
    let pick = essences
        .iter()
        .position(|e| e == "application/json")
        .or_else(|| essences.iter().position(|e| is_json_media(e)))?;
    Some(&members[pick].2)
}

/// A request body's media type: JSON, then forms, then whatever comes first. The flag says whether
/// its members travel as named fields (JSON or a form).
fn body_media(content: Option<&Node>) -> Option<(&Node, bool)> {
    if let Some(json) = json_media(content) {
        return Some((json, true));
    }
    let members = content?.members();
    if let Some((_, _, form)) = members.iter().find(|(k, _, _)| is_form_media(&media_essence(k))) {
        return Some((form, true));
    }
    members.first().map(|(_, _, node)| (node, false))
}

/// The top-level properties of an object schema (its own and its `allOf` parts'), with whether each
/// is required, or `None` when the schema is not an object with declared properties.
/// Each property's schema is a copy (a named body schema's, for every operation sending it),
/// weighed against what the file's tools may be built of: one past it is unknown (`{}`).
fn body_properties(
    refs: &Schemas,
    schema: &Value,
    budget: &mut refs::BuildBudget,
    at: ByteRange,
) -> Option<Vec<(String, Value, bool)>> {
    let schema = resolved(refs, schema);
    let mut parts = vec![schema];
    let mut i = 0;
    while i < parts.len() && parts.len() < 64 {
        if let Some(Value::Array(all)) = parts[i].get("allOf") {
            parts.extend(all.iter().map(|part| resolved(refs, part)));
        }
        i += 1;
    }
    let declared_type = schema.get("type").and_then(Value::as_str);
    if declared_type.is_some_and(|t| t != "object") {
        return None;
    }
    let mut required: HashSet<&str> = HashSet::new();
    let mut out: Vec<(String, Value, bool)> = Vec::new();
    // The first part declaring a name gives it (found in a set: a body may declare 200,000).
    let mut named: HashSet<&str> = HashSet::new();
    for part in &parts {
        if let Some(Value::Array(names)) = part.get("required") {
            required.extend(names.iter().filter_map(Value::as_str));
        }
    }
    for part in &parts {
        let Some(Value::Object(props)) = part.get("properties") else { continue };
        for (name, prop) in props {
            // Read-only members come back in responses; a request never sends them.
            if keyword(refs, prop, "readOnly") == Some(&Value::Bool(true)) || !named.insert(name.as_str()) {
                continue;
            }
            // The parameter's name, wire name and schema are each a copy for this operation.
            if !budget.take(2 * (1 + text_weight(name)), at) {
                continue;
            }
            let prop = budget.keep(Some(prop), at).unwrap_or_else(|| json!({}));
            out.push((name.clone(), prop, required.contains(name.as_str())));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A schema's example: `example`, else the first of 3.1's `examples`.
fn schema_example<'v>(refs: &'v Schemas, schema: &'v Value) -> Option<&'v Value> {
    keyword(refs, schema, "example").or_else(|| keyword(refs, schema, "examples").and_then(Value::as_array)?.first())
}

/// Where a schema's `$ref` leads, or the schema itself.
fn resolved<'v>(refs: &'v Schemas, schema: &'v Value) -> &'v Value {
    schema::follow(refs, schema).unwrap_or(schema)
}

/// A keyword of a schema, given beside its `$ref` or by the schema it refers to.
fn keyword<'v>(refs: &'v Schemas, schema: &'v Value, key: &str) -> Option<&'v Value> {
    schema.get(key).or_else(|| resolved(refs, schema).get(key))
}

/// Python names must be unique in a signature: a later parameter with a taken name gets its
/// location appended (`id` in the path and in the body → `id`, `id_body`).
fn dedupe_param_names(params: &mut [Param]) {
    let mut used = names::Unique::default();
    for param in params.iter_mut() {
        if !used.take(&param.name) {
            param.name = used.claim(&format!("{}_{}", param.name, param.location.as_str()), "");
        }
    }
}

/// What an operation's `responses` say.
struct Responses {
    /// The success schema, `None` when unknown.
    schema: Option<Value>,
    /// Every declared status code, in document order.
    statuses: Vec<String>,
    examples: Vec<Example>,
}

/// What the loader carries from operation to operation.
struct Loader<'a, 'f> {
    resolver: Resolver<'a>,
    file: &'f Path,
    toolset: &'f str,
    diagnostics: Vec<Diagnostic>,
    auth: Option<Auth>,
    /// The `required` values already reported: a path item's parameters, and shared ones, are
    /// read once for each operation.
    flagged: HashSet<ByteRange>,
}

impl<'a> Loader<'a, '_> {
    /// The authentication of the first usable security scheme, those the document requires first.
    /// apiKey (query/header) and http bearer are what the design names; OAuth 2 / OpenID Connect
    /// tokens also travel as bearer tokens, so they are accepted after those.
    fn auth(&mut self, doc: &'a Node) -> Option<Auth> {
        let schemes = doc.pointer("/components/securitySchemes")?;
        let mut order: Vec<&str> = Vec::new();
        for requirement in doc.get("security").map(Node::items).unwrap_or_default() {
            for (name, _, _) in requirement.members() {
                if !order.contains(&name.as_str()) {
                    order.push(name);
                }
            }
        }
        for (name, _, _) in schemes.members() {
            if !order.contains(&name.as_str()) {
                order.push(name);
            }
        }
        let mut best: Option<(u8, Auth)> = None;
        for name in order {
            let Some(scheme) = schemes.get(name) else { continue };
            let scheme = match self.resolver.deref(scheme) {
                Ok(scheme) => scheme,
                Err(err) => {
                    let consequence = format!("security scheme `{}` is ignored", quoted(name));
                    self.diagnostics.push(err.diagnostic(self.file, &consequence));
                    continue;
                }
            };
            if let Some((rank, auth)) = scheme_auth(scheme)
                && best.as_ref().is_none_or(|(r, _)| rank < *r)
            {
                best = Some((rank, auth));
            }
        }
        best.map(|(_, auth)| auth)
    }

    /// A `required` as the document means it: a boolean, or a string spelling one. Any other
    /// value reads as absent. Either is reported on the value; `consequence` says, given what
    /// was read, what chainsmith makes of it.
    fn required(
        &mut self,
        node: Option<&Node>,
        what: &str,
        consequence: impl Fn(Option<bool>) -> String,
    ) -> Option<bool> {
        let node = node?;
        let read = match flag(node) {
            Flag::Bool(b) => return Some(b),
            Flag::Text(b) => Some(b),
            Flag::Other => None,
        };
        self.report_flag(node, what, &consequence(read));
        read
    }

    /// One warning on a `required` that is no boolean, the first time its value is met.
    fn report_flag(&mut self, node: &Node, what: &str, consequence: &str) {
        if !self.flagged.insert(node.range) {
            return;
        }
        let (code, written) = match (&node.kind, flag(node)) {
            (NodeKind::String(text), Flag::Text(_)) => {
                ("required-as-string", format!("the string {}", Value::from(text.as_str())))
            }
            _ => (
                "required-not-boolean",
                format!("{}, neither true nor false", crate::text::short_json(&node.to_json(), 41)),
            ),
        };
        self.diagnostics.push(Diagnostic::warning(
            self.file,
            node.range,
            code,
            format!("`required` of {what} is {written}; {consequence}"),
        ));
    }

    /// Every operation under `paths`, in document order.
    fn operations(&mut self, doc: &'a Node) -> Vec<Operation<'a>> {
        let mut out = Vec::new();
        let Some(paths) = doc.get("paths") else { return out };
        if !paths.is_object() {
            self.diagnostics.push(Diagnostic::error(
                self.file,
                paths.range,
                "invalid-operation",
                "`paths` must be an object mapping paths to their operations; no tools are loaded",
            ));
            return out;
        }
        for (path, _, item) in paths.members() {
            if path.starts_with("x-") {
                continue;
            }
            let item = match self.resolver.deref(item) {
                Ok(item) => item,
                Err(err) => {
                    let consequence = format!("the operations of `{}` are disabled", quoted(path));
                    self.diagnostics.push(err.diagnostic(self.file, &consequence));
                    continue;
                }
            };
            if !item.is_object() {
                self.diagnostics.push(Diagnostic::error(
                    self.file,
                    item.range,
                    "invalid-operation",
                    format!("the path item `{}` must be an object of operations; it is skipped", quoted(path)),
                ));
                continue;
            }
            for (key, key_range, node) in item.members() {
                let Some(method) = METHODS.iter().find(|m| key.eq_ignore_ascii_case(m)) else { continue };
                // An operation kept elsewhere (`get: {$ref: ...}`, as multi-file specs write it).
                let node = match self.resolver.deref(node) {
                    Ok(node) => node,
                    Err(err) => {
                        let consequence =
                            format!("operation {} {} is disabled", method.to_ascii_uppercase(), quoted(path));
                        self.diagnostics.push(err.diagnostic(self.file, &consequence));
                        continue;
                    }
                };
                out.push(Operation { path, method, key_range: *key_range, node, item });
            }
        }
        out
    }

    /// The tool of one operation, or `None` (with a diagnostic) when the operation is disabled.
    fn tool(&mut self, op: &Operation<'a>, name: String) -> Option<Tool> {
        if !op.node.is_object() {
            self.diagnostics.push(Diagnostic::error(
                self.file,
                op.node.range,
                "invalid-operation",
                format!("operation {} must be an object; it is skipped", op.label()),
            ));
            return None;
        }
        match self.build(op, name) {
            Ok(tool) => Some(tool),
            Err(err) => {
                let consequence = format!("operation {} is disabled", op.label());
                self.diagnostics.push(err.diagnostic(self.file, &consequence));
                None
            }
        }
    }

    fn build(&mut self, op: &Operation<'a>, name: String) -> Result<Tool, RefError<'a>> {
        let node = op.node;
        let method = op.method.to_ascii_uppercase();
        let mut params = self.parameters(op)?;
        params.extend(self.request_body(op)?);
        dedupe_param_names(&mut params);
        let Responses { schema: response, statuses, examples } = self.responses(op)?;

        let category = node
            .get("tags")
            .and_then(|tags| tags.items().first())
            .and_then(Node::as_str)
            .map(str::to_string)
            .or_else(|| op.path.split('/').find(|s| !s.is_empty() && !is_template(s)).map(String::from))
            .unwrap_or_else(|| "root".into());
        let mut description = join_text(node.str_of("summary"), node.str_of("description"));
        if description.is_empty() {
            description = join_text(op.item.str_of("summary"), op.item.str_of("description"));
        }
        let operation_id = node.get("operationId").and_then(Node::as_str).map(str::to_string);

        Ok(Tool {
            name,
            toolset: self.toolset.to_string(),
            category,
            description,
            params,
            response: response.into(),
            statuses,
            examples,
            provenance: Provenance::Declared,
            transport: Transport::Http { method: method.clone(), path: op.path.to_string() },
            annotations: None,
            source: Source {
                kind: SourceKind::OpenApi,
                file: self.file.to_path_buf(),
                range: node.range,
                name_range: op.key_range,
                method: Some(method),
                path: Some(op.path.to_string()),
                tool: None,
                api: None,
                operation_id,
            },
            schemas: Default::default(),
        })
    }

    /// Path-item parameters, overridden by the operation's own (same name and location).
    fn parameters(&mut self, op: &Operation<'a>) -> Result<Vec<Param>, RefError<'a>> {
        let mut params: Vec<Param> = Vec::new();
        let lists = [(op.item.get("parameters"), true), (op.node.get("parameters"), false)];
        for (list, of_item) in lists.into_iter().filter_map(|(list, of_item)| Some((list?, of_item))) {
            if !list.is_array() {
                self.diagnostics.push(Diagnostic::error(
                    self.file,
                    list.range,
                    "invalid-operation",
                    format!("`parameters` of {} must be a list; it is ignored", op.label()),
                ));
                continue;
            }
            for item in list.items() {
                let declared = self.resolver.deref(item)?;
                // Where the parameter is written, for messages about it.
                let place = match item.get("$ref").and_then(Node::as_str) {
                    Some(reference) => format!("at {}", quoted(reference)),
                    None if of_item => format!("of the path item {}", quoted(op.path)),
                    None => format!("in {}", op.label()),
                };
                let Some(param) = self.parameter(declared, op, &place)? else { continue };
                match params.iter_mut().find(|p| p.wire_name == param.wire_name && p.location == param.location) {
                    Some(existing) => *existing = param,
                    None => params.push(param),
                }
            }
        }
        // Every template variable must be filled: one the document forgot is assumed a required string.
        for variable in path_variables(op.path) {
            if !params.iter().any(|p| p.location == ParamLocation::Path && p.wire_name == variable) {
                self.diagnostics.push(Diagnostic::warning(
                    self.file,
                    op.key_range,
                    "undeclared-path-param",
                    format!(
                        "path parameter `{}` of {} is not declared; it is assumed to be a required string",
                        quoted(variable),
                        op.label()
                    ),
                ));
                params.push(Param {
                    name: names::python_param(variable),
                    wire_name: variable.to_string(),
                    location: ParamLocation::Path,
                    required: true,
                    description: String::new(),
                    schema: json!({"type": "string"}),
                    default: None,
                    example: None,
                });
            }
        }
        Ok(params)
    }

    /// One Parameter Object, or `None` when it is malformed (diagnosed) or ignored. `place` says
    /// where it is written (`in GET /x`).
    fn parameter(
        &mut self,
        declared: &'a Node,
        op: &Operation<'a>,
        place: &str,
    ) -> Result<Option<Param>, RefError<'a>> {
        let invalid = |this: &mut Self, range: ByteRange, what: String| {
            this.diagnostics.push(Diagnostic::error(
                this.file,
                range,
                "invalid-operation",
                format!("{what} in {}; the parameter is ignored", op.label()),
            ));
        };
        if !declared.is_object() {
            invalid(self, declared.range, "a parameter must be an object".into());
            return Ok(None);
        }
        let wire = declared.get("name").and_then(Node::as_str).filter(|n| !n.is_empty());
        let location = declared.get("in").and_then(Node::as_str);
        let (Some(wire), Some(location_text)) = (wire, location) else {
            let missing = if wire.is_none() { "`name`" } else { "`in`" };
            invalid(self, declared.range, format!("a parameter without {missing}"));
            return Ok(None);
        };
        let location = match ParamLocation::parse(location_text) {
            Some(l @ (ParamLocation::Path | ParamLocation::Query | ParamLocation::Header | ParamLocation::Cookie)) => l,
            _ => {
                let range = declared.get("in").map_or(declared.range, |n| n.range);
                invalid(
                    self,
                    range,
                    format!(
                        "parameter `{}` has `in: {}`, which is not an OpenAPI 3 location \
                         (path, query, header, cookie; bodies are `requestBody`)",
                        quoted(wire),
                        quoted(location_text)
                    ),
                );
                return Ok(None);
            }
        };
        if location == ParamLocation::Header && IGNORED_HEADERS.iter().any(|h| wire.eq_ignore_ascii_case(h)) {
            return Ok(None);
        }
        // Its name and wire name are copies for this operation (a `$ref`'d parameter's, for each
        // operation using it): past the bound the parameter is left out.
        if !self.resolver.budget.take(2 * (1 + text_weight(wire)), declared.range) {
            return Ok(None);
        }
        // The credential is added by the runtime from the toolset's auth, never passed by a program.
        if let Some(auth) = &self.auth {
            let is_credential = match location {
                ParamLocation::Query => auth.query.as_deref() == Some(wire),
                ParamLocation::Header => auth.header.as_deref().is_some_and(|h| h.eq_ignore_ascii_case(wire)),
                _ => false,
            };
            if is_credential {
                return Ok(None);
            }
        }
        let consequence = |read: Option<bool>| match (read, location) {
            (Some(true), _) => "read as true".to_string(),
            (_, ParamLocation::Path) => "a path parameter is required all the same".to_string(),
            (Some(false), _) => "read as false".to_string(),
            (None, _) => "read as false, as if absent (the parameter is optional)".to_string(),
        };
        let declared_required =
            self.required(declared.get("required"), &format!("parameter `{}` {place}", quoted(wire)), consequence);
        let required = location == ParamLocation::Path || declared_required == Some(true);

        let schema = if let Some(schema) = declared.get("schema") {
            self.resolver.schema(schema)?
        } else if let Some(schema) = declared.get("content").and_then(|c| c.members().first()?.2.get("schema")) {
            self.resolver.schema(schema)?
        } else {
            json!({})
        };
        let mut example = declared.get("example").and_then(|e| self.resolver.literal(e));
        if example.is_none()
            && let Some((_, _, first)) = declared.get("examples").and_then(|e| e.members().first())
        {
            example = self.resolver.deref(first)?.get("value").and_then(|e| self.resolver.literal(e));
        }
        // What a shared parameter's schema says is copied into each operation using it: weighed.
        let (refs, budget, at) = (&self.resolver.store, &mut self.resolver.budget, declared.range);
        let example = example.or_else(|| budget.keep(schema_example(refs, &schema), at));
        let description = match declared.str_of("description").trim() {
            "" => {
                budget.keep_text(keyword(refs, &schema, "description").and_then(Value::as_str).unwrap_or("").trim(), at)
            }
            text => budget.keep_text(text, at),
        };
        let default = budget.keep(keyword(refs, &schema, "default"), at);
        Ok(Some(Param {
            name: names::python_param(wire),
            wire_name: wire.to_string(),
            location,
            required,
            description,
            default,
            example,
            schema,
        }))
    }

    /// The request body as parameters: one per top-level property of a JSON (or form) object, else
    /// a single `body`.
    ///
    /// `requestBody.required` defaults to false in OpenAPI, yet most documents leave it out even
    /// when the body is needed; so only an explicit `required: false` makes every member optional,
    /// otherwise the schema's `required` list decides.
    fn request_body(&mut self, op: &Operation<'a>) -> Result<Vec<Param>, RefError<'a>> {
        let Some(written) = op.node.get("requestBody") else { return Ok(Vec::new()) };
        let body = self.resolver.deref(written)?;
        let what = match written.get("$ref").and_then(Node::as_str) {
            Some(reference) => format!("the request body at {}", quoted(reference)),
            None => format!("the request body of {}", op.label()),
        };
        let consequence = |read: Option<bool>| match read {
            Some(b) => format!("read as {b}"),
            None => "it is ignored, as if absent (the body schema's `required` list decides)".to_string(),
        };
        let body_required = self.required(body.get("required"), &what, consequence) != Some(false);
        let description = self.resolver.budget.keep_text(body.str_of("description").trim(), written.range);
        let (schema, example, fielded) = match body_media(body.get("content")) {
            Some((media, fielded)) => {
                let schema = match media.get("schema") {
                    Some(schema) => self.resolver.schema(schema)?,
                    None => json!({}),
                };
                let mut example = media.get("example").and_then(|e| self.resolver.literal(e));
                if example.is_none()
                    && let Some((_, _, first)) = media.get("examples").and_then(|e| e.members().first())
                {
                    example = self.resolver.deref(first)?.get("value").and_then(|e| self.resolver.literal(e));
                }
                (schema, example, fielded)
            }
            None => (json!({}), None, false),
        };
        let (refs, budget, at) = (&self.resolver.store, &mut self.resolver.budget, written.range);
        if fielded && let Some(properties) = body_properties(refs, &schema, budget, at) {
            return Ok(properties
                .into_iter()
                .map(|(wire, prop, required)| Param {
                    name: names::python_param(&wire),
                    description: budget.keep_text(
                        keyword(refs, &prop, "description").and_then(Value::as_str).unwrap_or("").trim(),
                        at,
                    ),
                    default: budget.keep(keyword(refs, &prop, "default"), at),
                    example: budget
                        .keep(schema_example(refs, &prop), at)
                        .or_else(|| example.as_ref()?.get(&wire).cloned()),
                    wire_name: wire,
                    location: ParamLocation::Body,
                    required: body_required && required,
                    schema: prop,
                })
                .collect());
        }
        let description = if description.is_empty() {
            budget.keep_text(keyword(refs, &schema, "description").and_then(Value::as_str).unwrap_or("").trim(), at)
        } else {
            description
        };
        Ok(vec![Param {
            name: "body".into(),
            wire_name: "body".into(),
            location: ParamLocation::Body,
            required: body_required,
            description,
            default: budget.keep(keyword(refs, &schema, "default"), at),
            example: example.or_else(|| budget.keep(schema_example(refs, &schema), at)),
            schema,
        }])
    }

    /// The response schema (first 2xx with JSON content; `default` only without any 2xx), the
    /// declared statuses and the examples of that response.
    fn responses(&mut self, op: &Operation<'a>) -> Result<Responses, RefError<'a>> {
        let mut statuses = Vec::new();
        let Some(responses) = op.node.get("responses").filter(|r| r.is_object()) else {
            // Still callable, so the tool stays loaded: only its response is unknown until probed.
            let message = match op.node.get("responses") {
                None => {
                    format!("operation {} declares no `responses`; its response is unknown until probed", op.label())
                }
                Some(_) => format!(
                    "`responses` of {} must be an object of status codes; its response is unknown until probed",
                    op.label()
                ),
            };
            self.diagnostics.push(Diagnostic::warning(self.file, op.key_range, "missing-responses", message));
            return Ok(Responses { schema: None, statuses, examples: Vec::new() });
        };
        // (rank, status number) → response; 2xx by number, then 2XX, then default.
        let mut candidates: Vec<((u8, u16), &'a Node)> = Vec::new();
        for (status, _, response) in responses.members() {
            if status.starts_with("x-") {
                continue;
            }
            statuses.push(status.clone());
            let response = self.resolver.deref(response)?;
            let rank = match status.as_str() {
                s if s.len() == 3 && s.starts_with('2') && s.bytes().all(|b| b.is_ascii_digit()) => {
                    (0, s.parse().unwrap_or(299))
                }
                s if s.eq_ignore_ascii_case("2xx") => (1, 0),
                "default" => (2, 0),
                _ => continue,
            };
            candidates.push((rank, response));
        }
        candidates.sort_by_key(|(rank, _)| *rank);
        if candidates.iter().any(|((rank, _), _)| *rank < 2) {
            candidates.retain(|((rank, _), _)| *rank < 2);
        }
        for (_, response) in candidates {
            let Some(media) = json_media(response.get("content")) else { continue };
            let schema = match media.get("schema") {
                Some(schema) => Some(self.resolver.schema(schema)?),
                None => None,
            };
            let mut examples = Vec::new();
            if let Some(example) = media.get("example").and_then(|e| self.resolver.literal(e)) {
                examples.push(Example { response: Some(example), ..Default::default() });
            }
            for (_, _, example) in media.get("examples").map(Node::members).unwrap_or_default() {
                if let Some(value) = self.resolver.deref(example)?.get("value").and_then(|e| self.resolver.literal(e)) {
                    examples.push(Example { response: Some(value), ..Default::default() });
                }
            }
            return Ok(Responses { schema, statuses, examples });
        }
        Ok(Responses { schema: None, statuses, examples: Vec::new() })
    }
}

/// A security scheme as auth, with a rank (lower is preferred), when chainsmith can apply it.
fn scheme_auth(scheme: &Node) -> Option<(u8, Auth)> {
    let bearer = || Auth { header: Some("Authorization".into()), prefix: "Bearer ".into(), ..Default::default() };
    match scheme.str_of("type") {
        "apiKey" => {
            let name = scheme.str_of("name");
            if name.is_empty() {
                return None;
            }
            match scheme.str_of("in") {
                "query" => Some((0, Auth { query: Some(name.into()), ..Default::default() })),
                "header" => Some((0, Auth { header: Some(name.into()), ..Default::default() })),
                _ => None,
            }
        }
        "http" if scheme.str_of("scheme").eq_ignore_ascii_case("bearer") => Some((0, bearer())),
        "oauth2" | "openIdConnect" => Some((1, bearer())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Severity;
    use crate::toolset::doc::{Syntax, parse};
    use crate::toolset::schema::{self, KeyLookup};

    fn load_text(text: &str, syntax: Syntax) -> Loaded {
        let doc = parse(text, syntax).expect("the test document parses");
        load(&doc, text, Path::new("api.yaml"), "api")
    }

    fn tool<'l>(loaded: &'l Loaded, name: &str) -> &'l Tool {
        loaded.tools.iter().find(|t| t.name == name).unwrap_or_else(|| {
            panic!("no tool `{name}` in {:?}", loaded.tools.iter().map(|t| &t.name).collect::<Vec<_>>())
        })
    }

    fn slice(text: &str, range: ByteRange) -> &str {
        &text[range.start..range.end]
    }

    /// Stripe's components refer to each other through "expandable" fields at every level: inlined,
    /// they once cost ~15 GB; as a graph each is read once and shared by every operation.
    #[test]
    fn stripe_schemas_are_stored_once_and_shared() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/specs/stripe.com.json");
        let text = std::fs::read_to_string(path).expect("the Stripe spec is readable");
        let doc = parse(&text, Syntax::Json).expect("the Stripe spec parses");
        let loaded = load(&doc, &text, Path::new("stripe.json"), "stripe");
        assert_eq!(loaded.tools.len(), 452, "{:?}", loaded.diagnostics.first());
        let components = doc.get("components").and_then(|c| c.get("schemas")).unwrap().members().len();
        assert!(loaded.schemas.len() <= components, "{} stored, {components} declared", loaded.schemas.len());
        assert!(loaded.tools.iter().all(|t| std::sync::Arc::ptr_eq(&t.schemas, &loaded.schemas)));
        let charge = tool(&loaded, "v1_charges_by_charge");
        let response = charge.response.as_ref().unwrap();
        assert_eq!(schema::reference(response), Some("stripe/stripe.json#/components/schemas/charge"));
        let KeyLookup::Declared(customer) = schema::property(charge, response, "customer") else { panic!() };
        // Expandable: an id or the customer object, which leads on to its own payment method.
        let KeyLookup::Declared(settings) = schema::property(charge, customer, "invoice_settings") else { panic!() };
        assert!(matches!(schema::property(charge, settings, "default_payment_method"), KeyLookup::Declared(_)));
    }

    #[test]
    fn tmdb_loads_every_operation() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/datasets/restbench/tmdb_oas.json");
        let text = std::fs::read_to_string(path).expect("the TMDB spec is readable");
        let doc = parse(&text, Syntax::Json).expect("the TMDB spec parses");
        let started = std::time::Instant::now();
        let loaded = load(&doc, &text, Path::new("tmdb_oas.json"), "tmdb");
        let elapsed = started.elapsed();

        let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        assert_eq!(loaded.tools.len(), 54);
        assert_eq!(loaded.tools.iter().filter(|t| t.response.is_some()).count(), 54);
        assert!(loaded.tools.iter().all(|t| t.toolset == "tmdb" && t.source.file == Path::new("tmdb_oas.json")));
        assert_eq!(loaded.base_url.as_deref(), Some("https://api.themoviedb.org/3"));
        assert_eq!(loaded.auth, Some(Auth { query: Some("api_key".into()), ..Default::default() }));
        assert!(!loaded.description.is_empty());

        let search = tool(&loaded, "search_person");
        let query = search.param("query").expect("search_person has `query`");
        assert!(query.required);
        assert_eq!(query.location, ParamLocation::Query);
        assert_eq!(query.schema, json!({"type": "string"}));
        assert_eq!(search.param("page").and_then(|p| p.default.clone()), Some(json!(1)));
        let response = search.response.as_ref().unwrap();
        let KeyLookup::Declared(results) = schema::property(search, response, "results") else { panic!("{response}") };
        assert_eq!(schema::types(search, results), ["array"]);
        // `$ref`s lead into the store: known_for items are movie/tv objects.
        let person = schema::items(search, results).unwrap();
        let KeyLookup::Declared(known_for) = schema::property(search, person, "known_for") else { panic!() };
        let movie_or_tv = schema::items(search, known_for).unwrap();
        assert_eq!(schema::types(search, movie_or_tv), ["object"]);
        assert!(matches!(schema::property(search, movie_or_tv, "overview"), KeyLookup::Declared(_)));
        assert!(search.schemas.len() < 100, "each named schema is stored once");
        assert_eq!(search.statuses, ["200", "401", "404"]);
        assert!(!search.examples.is_empty());
        assert_eq!(search.transport, Transport::Http { method: "GET".into(), path: "/search/person".into() });
        assert_eq!(search.source.operation_id.as_deref(), Some("GET_search-person"));
        assert_eq!(search.description, "Search People. Search for people.");

        let credits = tool(&loaded, "person_movie_credits");
        let person_id = credits.param("person_id").expect("declared at the path item");
        assert!(person_id.required);
        assert_eq!(person_id.location, ParamLocation::Path);
        assert_eq!(person_id.schema, json!({"type": "integer"}));
        assert_eq!(credits.response.as_ref().unwrap().pointer("/properties/crew/type"), Some(&json!("array")));

        let person = tool(&loaded, "person");
        assert_eq!(person.source.path.as_deref(), Some("/person/{person_id}"));
        assert!(text[person.source.range.start..].starts_with('{'));
        assert_eq!(slice(&text, person.source.name_range), "\"get\"");
        assert!(slice(&text, person.source.range).contains("\"operationId\""));

        // `trending` names a property `""` where `results` belongs: reported, and its keys unchecked.
        let empty: Vec<_> = loaded.diagnostics.iter().filter(|d| d.code == "empty-property-name").collect();
        assert_eq!(empty.len(), 1, "{:#?}", loaded.diagnostics);
        assert_eq!(slice(&text, empty[0].range), "\"\"");
        let trending = tool(&loaded, "trending");
        let response = trending.response.as_ref().unwrap();
        assert_eq!(schema::property(trending, response, "results"), KeyLookup::Open(None));

        // Generous bound for debug builds; the real cost is a few milliseconds.
        assert!(elapsed.as_secs_f64() < 5.0, "loading took {elapsed:?}");
    }

    const ITEMS: &str = r##"openapi: 3.1.0
info:
  title: Items API
  description: Things to test.
servers:
  - url: https://{host}/v1/
    variables:
      host:
        default: api.example.com
components:
  securitySchemes:
    token:
      type: http
      scheme: bearer
  parameters:
    Limit:
      name: limit
      in: query
      description: How many.
      schema: {type: integer, default: 10}
  requestBodies:
    NewItem:
      required: true
      content:
        application/json:
          schema: {$ref: '#/components/schemas/NewItem'}
          example: {name: lamp, tags: [light]}
  schemas:
    Item:
      type: object
      properties:
        id: {type: integer, readOnly: true}
        name: {type: string}
        children:
          type: array
          items: {$ref: '#/components/schemas/Item'}
    NewItem:
      type: object
      required: [name]
      properties:
        name: {type: string, description: The item's name.}
        tags: {type: array, items: {type: string}}
paths:
  /items:
    get:
      tags: [inventory]
      summary: List items
      parameters:
        - $ref: '#/components/parameters/Limit'
        - name: from
          in: query
          schema: {type: string}
        - in: query
          schema: {type: string}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                type: array
                items: {$ref: '#/components/schemas/Item'}
              example: [{id: 1, name: a}]
    post:
      summary: Create an item.
      description: Stores it.
      requestBody: {$ref: '#/components/requestBodies/NewItem'}
      responses:
        '201':
          description: created
          content:
            application/json; charset=utf-8:
              schema: {$ref: '#/components/schemas/Item'}
  /items/{id}:
    parameters:
      - name: id
        in: path
        schema: {type: integer}
    get:
      operationId: getItem
      parameters:
        - name: id
          in: path
          description: The item.
          schema: {type: integer}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Item'}
              examples:
                one: {value: {id: 1, name: a}}
    delete:
      responses:
        '204':
          description: gone
  /broken:
    get:
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Nope'}
  /silent:
    get:
      summary: No responses here
  /a/{x}/b:
    get:
      responses: {'200': {description: ok}}
  /a/b/{x}:
    get:
      responses: {'200': {description: ok}}
"##;

    #[test]
    fn yaml_spec_loads_with_refs_bodies_and_collisions() {
        let loaded = load_text(ITEMS, Syntax::Yaml);
        let mut names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["a_b_by_x", "delete_items", "items", "items_by_id", "post_items", "silent"]);
        assert_eq!(loaded.base_url.as_deref(), Some("https://api.example.com/v1"));
        assert_eq!(
            loaded.auth,
            Some(Auth { header: Some("Authorization".into()), prefix: "Bearer ".into(), ..Default::default() })
        );
        assert_eq!(loaded.description, "Items API. Things to test.");

        let items = tool(&loaded, "items");
        assert_eq!(items.category, "inventory");
        let limit = items.param("limit").unwrap();
        assert_eq!(
            (limit.required, limit.default.clone(), limit.description.as_str()),
            (false, Some(json!(10)), "How many.")
        );
        let from = items.param("from_").unwrap();
        assert_eq!(from.wire_name, "from");
        assert_eq!(items.params.len(), 2, "the parameter without `name` is dropped");
        // A recursive schema stays recursive: an item's children are items, to any depth.
        let mut item = schema::items(items, items.response.as_ref().unwrap()).unwrap();
        for _ in 0..5 {
            let KeyLookup::Declared(children) = schema::property(items, item, "children") else { panic!("{item}") };
            item = schema::items(items, children).unwrap();
        }
        assert!(matches!(schema::property(items, item, "name"), KeyLookup::Declared(_)));
        assert_eq!(items.examples.len(), 1);
        assert_eq!(slice(ITEMS, items.source.name_range), "get");

        let by_id = tool(&loaded, "items_by_id");
        assert_eq!(by_id.params.len(), 1, "the operation's `id` overrides the path item's");
        assert_eq!(by_id.params[0].description, "The item.");
        assert!(by_id.params[0].required);
        assert_eq!(by_id.category, "items");
        assert_eq!(by_id.source.operation_id.as_deref(), Some("getItem"));
        assert_eq!(by_id.examples[0].response, Some(json!({"id": 1, "name": "a"})));

        let post = tool(&loaded, "post_items");
        assert_eq!(post.description, "Create an item. Stores it.");
        assert_eq!(post.endpoint().as_deref(), Some("POST /items"));
        let name = post.param("name").unwrap();
        assert_eq!((name.location, name.required), (ParamLocation::Body, true));
        assert_eq!(name.example, Some(json!("lamp")));
        let tags = post.param("tags").unwrap();
        assert!(!tags.required);
        assert_eq!(tags.schema, json!({"type": "array", "items": {"type": "string"}}));
        assert!(post.param("id").is_none(), "read-only members are not sent");
        assert_eq!(schema::types(post, post.response.as_ref().unwrap()), ["object"]);

        let delete = tool(&loaded, "delete_items");
        assert!(delete.response.is_none());
        assert_eq!(delete.statuses, ["204"]);
        assert_eq!(delete.param("id").map(|p| p.location), Some(ParamLocation::Path));

        let silent = tool(&loaded, "silent");
        assert!(silent.response.is_none() && silent.statuses.is_empty());

        let codes: Vec<&str> = loaded.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes.iter().filter(|c| **c == "unresolved-ref").count(), 1, "{:#?}", loaded.diagnostics);
        let bad = loaded.diagnostics.iter().find(|d| d.code == "unresolved-ref").unwrap();
        assert_eq!(bad.severity, Severity::Error);
        assert_eq!(slice(ITEMS, bad.range).trim_matches('\''), "#/components/schemas/Nope");
        assert!(bad.message.contains("operation GET /broken is disabled"), "{}", bad.message);

        let missing = loaded.diagnostics.iter().find(|d| d.code == "missing-responses").unwrap();
        assert_eq!(missing.severity, Severity::Warning);
        assert_eq!(slice(ITEMS, missing.range), "get");
        assert!(ITEMS[..missing.range.start].ends_with("/silent:\n    "));

        let collision = loaded.diagnostics.iter().find(|d| d.code == "name-collision").unwrap();
        assert!(ITEMS[..collision.range.start].ends_with("/a/b/{x}:\n    "), "{collision:?}");
        assert!(collision.message.contains("a_b_by_x"), "{}", collision.message);

        let invalid = loaded.diagnostics.iter().find(|d| d.code == "invalid-operation").unwrap();
        assert!(slice(ITEMS, invalid.range).starts_with("in: query"), "{invalid:?}");
    }

    #[test]
    fn json_spec_ranges_and_bad_operations() {
        let text = r##"{
  "openapi": "3.0.3",
  "info": {"title": "T"},
  "components": {"securitySchemes": {"k": {"type": "apiKey", "in": "header", "name": "X-Key"}}},
  "paths": {
    "/x/{id}": {
      "get": "not an operation",
      "put": {
        "parameters": [{"name": "X-Key", "in": "header"}, {"name": "q", "in": "body"}],
        "requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}},
        "responses": {"default": {"description": "", "content": {"application/json": {"schema": {"$ref": "other.json#/A"}}}}}
      },
      "post": {
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "array"}}}},
        "responses": {"default": {"description": "", "content": {"application/problem+json": {"schema": {"type": "object"}}}}}
      }
    }
  }
}"##;
        let loaded = load_text(text, Syntax::Json);
        assert_eq!(loaded.tools.len(), 1, "{:#?}", loaded.diagnostics);
        let post = &loaded.tools[0];
        assert_eq!(post.name, "post_x");
        assert_eq!(*post.response, Some(json!({"type": "object"})));
        let body = post.param("body").unwrap();
        assert_eq!((body.location, body.required), (ParamLocation::Body, false));
        assert_eq!(body.schema, json!({"type": "array"}));
        let id = post.param("id").expect("an undeclared path variable is still a parameter");
        assert!(id.required);
        assert_eq!(loaded.auth, Some(Auth { header: Some("X-Key".into()), ..Default::default() }));

        let by_code = |code: &str| loaded.diagnostics.iter().filter(|d| d.code == code).collect::<Vec<_>>();
        let invalid = by_code("invalid-operation");
        assert_eq!(invalid.len(), 2, "{invalid:#?}");
        assert_eq!(slice(text, invalid[0].range), "\"not an operation\"");
        assert_eq!(slice(text, invalid[1].range), "\"body\"");
        let external = by_code("unresolved-ref");
        assert_eq!(external.len(), 1);
        assert_eq!(slice(text, external[0].range), "\"other.json#/A\"");
        assert!(external[0].message.contains("operation PUT /x/{id} is disabled"), "{}", external[0].message);
    }

    /// A `$ref` that leads nowhere inside a named schema breaks that schema alone: reported once,
    /// where it is written, and every operation using it loads alike, the schema unknown there.
    #[test]
    fn a_broken_named_schema_is_reported_once_and_its_users_all_load() {
        let text = r##"openapi: 3.0.0
info: {title: t, version: "1"}
paths:
  /a:
    get:
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/A"}}}}}
  /b:
    get:
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/B"}}}}}
components:
  schemas:
    A: {type: object, properties: {b: {$ref: "#/components/schemas/B"}, name: {type: string}}}
    B: {type: object, properties: {c: {$ref: "#/components/schemas/C"}}}
    C: {type: object, properties: {d: {$ref: "#/components/schemas/Missing"}}}
"##;
        let loaded = load_text(text, Syntax::Yaml);
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"], "{:?}", loaded.diagnostics);
        let [d] = loaded.diagnostics.as_slice() else { panic!("{:?}", loaded.diagnostics) };
        assert_eq!((d.code, slice(text, d.range)), ("unresolved-ref", "\"#/components/schemas/Missing\""));
        assert!(d.message.contains("unknown at that point"), "{}", d.message);
        let a = tool(&loaded, "a");
        let response = a.response.as_ref().unwrap();
        assert_eq!(schema::property(a, response, "nmae"), KeyLookup::Missing, "what is known is still checked");
    }

    #[test]
    fn swagger_one_is_unsupported() {
        let text = "swagger: \"1.2\"\ninfo: {title: Old}\npaths:\n  /x:\n    get:\n      responses: {}\n";
        let loaded = load_text(text, Syntax::Yaml);
        assert!(loaded.tools.is_empty());
        assert_eq!(loaded.diagnostics.len(), 1);
        let d = &loaded.diagnostics[0];
        assert_eq!((d.code, d.severity), ("unsupported-openapi", Severity::Error));
        assert_eq!(slice(text, d.range), "swagger");
        assert!(d.message.contains("Swagger 2.0"), "{}", d.message);
    }

    const PETSTORE_2: &str = r##"swagger: "2.0"
info: {title: Petstore, description: Pets for sale.}
host: petstore.example.com
basePath: /v2
schemes: [http, https]
consumes: [application/json]
produces: [application/json]
securityDefinitions:
  api_key: {type: apiKey, name: api_key, in: header}
parameters:
  limit: {name: limit, in: query, type: integer, format: int32, default: 20}
paths:
  /pet/{petId}:
    parameters:
      - {name: petId, in: path, required: true, type: integer, format: int64}
    get:
      operationId: getPetById
      summary: Find a pet by id
      responses:
        "200":
          description: the pet
          schema: {$ref: "#/definitions/Pet"}
          examples:
            application/json: {id: 7, name: Rex, status: sold}
        "404": {description: not found}
    post:
      operationId: updatePetWithForm
      consumes: [application/x-www-form-urlencoded]
      parameters:
        - {name: name, in: formData, type: string, description: New name.}
        - {name: status, in: formData, required: true, type: string, enum: [available, sold]}
      responses:
        "405": {description: invalid input}
  /pet:
    post:
      operationId: addPet
      parameters:
        - {name: body, in: body, required: true, schema: {$ref: "#/definitions/Pet"}}
      responses:
        "200": {description: ok, schema: {$ref: "#/definitions/Pet"}}
  /pet/findByStatus:
    get:
      parameters:
        - {name: status, in: query, required: true, type: array, items: {type: string, enum: [available, sold]}, collectionFormat: multi}
        - {$ref: "#/parameters/limit"}
      responses:
        "200": {description: ok, schema: {type: array, items: {$ref: "#/definitions/Pet"}}}
  /store/order:
    get:
      responses:
        "200": {description: ok, schema: {$ref: "#/definitions/Order"}}
definitions:
  Pet:
    type: object
    required: [name]
    properties:
      id: {type: integer, format: int64, readOnly: true}
      name: {type: string}
      status: {type: string, enum: [available, sold]}
      friends: {type: array, items: {$ref: "#/definitions/Pet"}}
"##;

    #[test]
    fn swagger_two_is_read_directly() {
        let loaded = load_text(PETSTORE_2, Syntax::Yaml);
        assert_eq!(loaded.base_url.as_deref(), Some("https://petstore.example.com/v2"));
        assert_eq!(loaded.auth, Some(Auth { header: Some("api_key".into()), ..Default::default() }));
        assert_eq!(loaded.description, "Petstore. Pets for sale.");

        let get = tool(&loaded, "pet");
        assert_eq!(get.endpoint().as_deref(), Some("GET /pet/{petId}"));
        let pet_id = get.param("pet_id").unwrap();
        assert_eq!((pet_id.location, pet_id.required), (ParamLocation::Path, true));
        assert_eq!(schema::types(get, &pet_id.schema), ["integer"]);
        let response = get.response.as_ref().unwrap();
        assert!(matches!(schema::property(get, response, "status"), KeyLookup::Declared(_)));
        assert_eq!(schema::property(get, response, "nmae"), KeyLookup::Missing);
        let KeyLookup::Declared(friends) = schema::property(get, response, "friends") else { panic!() };
        assert!(matches!(schema::property(get, schema::items(get, friends).unwrap(), "name"), KeyLookup::Declared(_)));
        assert_eq!(get.examples[0].response, Some(json!({"id": 7, "name": "Rex", "status": "sold"})));
        assert_eq!(get.statuses, ["200", "404"]);
        assert_eq!(slice(PETSTORE_2, get.source.name_range), "get", "definitions point into the 2.0 file");

        let form = tool(&loaded, "post_pet_by_pet_id");
        let status = form.param("status").unwrap();
        assert_eq!((status.location, status.required), (ParamLocation::Body, true));
        assert!(schema::check_literal(form, &status.schema, &json!("lost")).is_err());
        assert!(!form.param("name").unwrap().required);
        assert_eq!(form.param("name").unwrap().description, "New name.");
        assert!(form.response.is_none(), "no 2xx response: unknown");

        let add = tool(&loaded, "post_pet");
        let name = add.param("name").expect("body members are parameters");
        assert_eq!((name.location, name.required), (ParamLocation::Body, true));
        assert!(add.param("id").is_none(), "read-only members are not sent");

        let find = tool(&loaded, "pet_find_by_status");
        let status = find.param("status").unwrap();
        assert_eq!((status.location, status.required), (ParamLocation::Query, true));
        assert_eq!(schema::types(find, &status.schema), ["array"]);
        let limit = find.param("limit").expect("a shared parameter behind `$ref`");
        assert_eq!((limit.default.clone(), schema::types(find, &limit.schema)), (Some(json!(20)), vec!["integer"]));

        // A broken `$ref` disables only its operation, located in the 2.0 text.
        assert!(loaded.tools.iter().all(|t| t.name != "store_order"));
        let [d] = loaded.diagnostics.as_slice() else { panic!("{:?}", loaded.diagnostics) };
        assert_eq!(d.code, "unresolved-ref");
        assert_eq!(slice(PETSTORE_2, d.range), "\"#/definitions/Order\"");
    }

    /// Generators that quote booleans write `required: "true"`: read as meant, each such value
    /// reported once where it is written, whichever operations share it.
    #[test]
    fn required_written_as_a_string_is_read_as_meant_and_reported() {
        let text = r##"openapi: 3.0.0
info: {title: t, version: "1"}
components:
  parameters:
    Lang: {name: lang, in: query, required: "false", schema: {type: string}}
paths:
  /search/movie:
    parameters:
      - {name: region, in: query, required: "True", schema: {type: string}}
    get:
      parameters:
        - {name: query, in: query, required: "true", schema: {type: string}}
        - {name: page, in: query, required: 1, schema: {type: integer}}
        - $ref: "#/components/parameters/Lang"
      responses: {"200": {description: ok}}
    post:
      parameters:
        - $ref: "#/components/parameters/Lang"
      requestBody:
        required: "false"
        content: {application/json: {schema: {type: object, required: [name], properties: {name: {type: string}}}}}
      responses: {"200": {description: ok}}
  /movie/{movie_id}:
    get:
      parameters:
        - {name: movie_id, in: path, required: "false", schema: {type: integer}}
      responses: {"200": {description: ok}}
"##;
        let loaded = load_text(text, Syntax::Yaml);
        let get = tool(&loaded, "search_movie");
        let required = |t: &Tool, p: &str| t.param(p).unwrap_or_else(|| panic!("no {p}")).required;
        assert!(required(get, "query") && required(get, "region"));
        assert!(!required(get, "lang") && !required(get, "page"));
        let post = tool(&loaded, "post_search_movie");
        assert!(required(post, "region") && !required(post, "lang"));
        assert!(!required(post, "name"), "`required: \"false\"` on the body makes its members optional");
        assert!(required(tool(&loaded, "movie"), "movie_id"), "a path parameter is always required");

        let found: Vec<(&str, &str, &str)> =
            loaded.diagnostics.iter().map(|d| (d.code, slice(text, d.range), d.message.as_str())).collect();
        assert_eq!(
            found,
            [
                (
                    "required-as-string",
                    "\"True\"",
                    "`required` of parameter `region` of the path item /search/movie is the string \"True\"; read as true"
                ),
                (
                    "required-as-string",
                    "\"true\"",
                    "`required` of parameter `query` in GET /search/movie is the string \"true\"; read as true"
                ),
                (
                    "required-not-boolean",
                    "1",
                    "`required` of parameter `page` in GET /search/movie is 1, neither true nor false; read as false, as \
                     if absent (the parameter is optional)"
                ),
                (
                    "required-as-string",
                    "\"false\"",
                    "`required` of parameter `lang` at #/components/parameters/Lang is the string \"false\"; read as false"
                ),
                (
                    "required-as-string",
                    "\"false\"",
                    "`required` of the request body of POST /search/movie is the string \"false\"; read as false"
                ),
                (
                    "required-as-string",
                    "\"false\"",
                    "`required` of parameter `movie_id` in GET /movie/{movie_id} is the string \"false\"; a path \
                     parameter is required all the same"
                ),
            ],
            "{:#?}",
            loaded.diagnostics
        );
        assert!(loaded.diagnostics.iter().all(|d| d.severity == Severity::Warning));
    }

    /// Swagger 2.0 parameters, bodies and form fields alike; the warning points into the 2.0 file.
    #[test]
    fn swagger_two_required_as_a_string() {
        let text = r##"swagger: "2.0"
info: {title: t, version: "1"}
paths:
  /pet/{petId}:
    post:
      consumes: [application/x-www-form-urlencoded]
      parameters:
        - {name: petId, in: path, required: true, type: integer}
        - {name: verbose, in: query, required: "TRUE", type: boolean}
        - {name: status, in: formData, required: "true", type: string}
        - {name: name, in: formData, required: "no", type: string}
      responses: {"200": {description: ok}}
  /pet:
    put:
      parameters:
        - {name: body, in: body, required: "false", schema: {type: object, required: [name], properties: {name: {type: string}}}}
      responses: {"200": {description: ok}}
"##;
        let loaded = load_text(text, Syntax::Yaml);
        let form = tool(&loaded, "post_pet");
        assert!(form.param("verbose").unwrap().required);
        assert!(form.param("status").unwrap().required);
        assert!(!form.param("name").unwrap().required);
        assert!(!tool(&loaded, "put_pet").param("name").unwrap().required);
        let found: Vec<(&str, &str, &str)> =
            loaded.diagnostics.iter().map(|d| (d.code, slice(text, d.range), d.message.as_str())).collect();
        assert_eq!(
            found,
            [
                (
                    "required-as-string",
                    "\"TRUE\"",
                    "`required` of parameter `verbose` in POST /pet/{petId} is the string \"TRUE\"; read as true"
                ),
                (
                    "required-as-string",
                    "\"false\"",
                    "`required` of the request body of PUT /pet is the string \"false\"; read as false"
                ),
                (
                    "required-as-string",
                    "\"true\"",
                    "`required` of form field `status` in POST /pet/{petId} is the string \"true\"; read as true"
                ),
                (
                    "required-not-boolean",
                    "\"no\"",
                    "`required` of form field `name` in POST /pet/{petId} is \"no\", neither true nor false; read as \
                     false, as if absent (the field is optional)"
                ),
            ],
            "{:#?}",
            loaded.diagnostics
        );
    }

    /// A property named `""` (RestBench TMDB's `trending` has one where `results` belongs) is
    /// reported once where it is written, and the object declaring it reports no key missing.
    #[test]
    fn a_property_named_empty_is_reported_and_leaves_its_object_open() {
        let text = r##"{
  "openapi": "3.0.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/trending": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
      "type": "object",
      "properties": {"page": {"type": "integer"}, "": {"$ref": "#/components/schemas/Movie"}}}}}}}}},
    "/a": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Box"}}}}}}},
    "/b": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Box"}}}}}}}
  },
  "components": {"schemas": {
    "Movie": {"type": "object", "properties": {"id": {"type": "integer"}}},
    "Box": {"type": "object", "properties": {"": {"type": "string"}, "size": {"type": "integer"}}}
  }}
}"##;
        let loaded = load_text(text, Syntax::Json);
        assert_eq!(loaded.tools.len(), 3, "{:#?}", loaded.diagnostics);
        let found: Vec<(&str, Severity, &str)> =
            loaded.diagnostics.iter().map(|d| (d.code, d.severity, slice(text, d.range))).collect();
        assert_eq!(
            found,
            [("empty-property-name", Severity::Warning, "\"\""), ("empty-property-name", Severity::Warning, "\"\"")],
            "one for the inline schema, one for the named schema both operations use"
        );
        assert!(text[..loaded.diagnostics[0].range.start].ends_with("\"page\": {\"type\": \"integer\"}, "));
        assert!(
            text[..loaded.diagnostics[1].range.start].ends_with("\"Box\": {\"type\": \"object\", \"properties\": {")
        );
        assert_eq!(loaded.diagnostics[0].message, refs::EMPTY_NAME);

        let trending = tool(&loaded, "trending");
        let response = trending.response.as_ref().unwrap();
        assert_eq!(schema::property(trending, response, "results"), KeyLookup::Open(None));
        assert!(matches!(schema::property(trending, response, "page"), KeyLookup::Declared(_)));
        let keys: Vec<&str> = schema::keys(trending, response).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["page"], "completion offers the named keys only");
        let movie = tool(&loaded, "a");
        let boxed = movie.response.as_ref().unwrap();
        assert_eq!(schema::property(movie, boxed, "colour"), KeyLookup::Open(None));
        let KeyLookup::Declared(size) = schema::property(movie, boxed, "size") else { panic!() };
        assert_eq!(schema::types(movie, size), ["integer"]);
    }

    /// A parameter shared by `$ref` is copied into every operation that uses it: 400 operations
    /// each using ten parameters of 5,000-value enums would build 20 million values from a file of
    /// 50,000. What is built stops at eight times what the file holds, with one error saying so;
    /// the operations still load.
    #[test]
    fn shared_components_are_copied_into_operations_to_a_bound() {
        let parameters: serde_json::Map<String, Value> = (0..10)
            .map(|n| (format!("P{n}"), json!({"name": format!("p{n}"), "in": "query", "schema": {"type": "integer", "enum": (0..5000).collect::<Vec<_>>()}})))
            .collect();
        let uses: Vec<Value> = (0..10).map(|n| json!({"$ref": format!("#/components/parameters/P{n}")})).collect();
        let paths: serde_json::Map<String, Value> = (0..400)
            .map(|n| {
                (format!("/o{n}"), json!({"get": {"parameters": uses, "responses": {"200": {"description": "ok"}}}}))
            })
            .collect();
        let text = json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": paths, "components": {"parameters": parameters}}).to_string();
        let loaded = load_text(&text, Syntax::Json);
        assert_eq!(loaded.tools.len(), 400);
        let too_large: Vec<_> = loaded.diagnostics.iter().filter(|d| d.code == "protocol-too-large").collect();
        assert_eq!(too_large.len(), 1, "{:#?}", loaded.diagnostics);
        assert!(too_large[0].message.contains("8 times what the file holds"), "{}", too_large[0].message);
        let built: usize =
            loaded.tools.iter().flat_map(|t| &t.params).map(|p| serde_json::to_string(&p.schema).unwrap().len()).sum();
        assert!(built < 40 << 20, "{built} bytes of parameter schemas");
        let first = tool(&loaded, "o0");
        assert_eq!(first.params.len(), 10);
        assert_eq!(first.params[0].schema["enum"].as_array().map(Vec::len), Some(5000), "the first operations whole");

        // A long text counts by its length: a 200 KB `default` shared by 800 operations (and
        // copied out of a named schema, outside the schema's conversion) would be 160 MB.
        let paths: serde_json::Map<String, Value> = (0..800)
            .map(|n| (format!("/o{n}"), json!({"get": {"parameters": [{"$ref": "#/components/parameters/P"}], "responses": {"200": {"description": "ok"}}}})))
            .collect();
        let text = json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": paths, "components": {
            "parameters": {"P": {"name": "p", "in": "query", "schema": {"$ref": "#/components/schemas/S"}}},
            "schemas": {"S": {"type": "string", "default": "x".repeat(200_000)}}}})
        .to_string();
        let loaded = load_text(&text, Syntax::Json);
        assert_eq!(loaded.tools.len(), 800);
        assert_eq!(loaded.diagnostics.iter().filter(|d| d.code == "protocol-too-large").count(), 1);
        let copied: usize = loaded
            .tools
            .iter()
            .flat_map(|t| &t.params)
            .filter_map(|p| p.default.as_ref()?.as_str().map(str::len))
            .sum();
        assert!(copied > 0 && copied <= 64 << 20, "{copied} bytes of defaults");

        // So does a long key, copied with the object holding it.
        let paths: serde_json::Map<String, Value> = (0..800)
            .map(|n| (format!("/o{n}"), json!({"get": {"parameters": [{"$ref": "#/components/parameters/P"}], "responses": {"200": {"description": "ok"}}}})))
            .collect();
        let text = json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": paths, "components": {
            "parameters": {"P": {"name": "p", "in": "query", "schema": {"type": "object", "properties": {"k".repeat(200_000): {"type": "string"}}}}}}})
        .to_string();
        let loaded = load_text(&text, Syntax::Json);
        assert_eq!(loaded.diagnostics.iter().filter(|d| d.code == "protocol-too-large").count(), 1);
    }

    /// Swagger 2.0 has no shared request bodies: a `body` parameter shared by `$ref` (or by a
    /// path item) is copied into each operation's `requestBody` by the rewrite to 3.0, before the
    /// loader builds anything. Those copies draw on the same bound, sized by the 2.0 file: 400
    /// operations sharing a 20,000-property body (8 million values) stop at one error, and so do
    /// shared form fields and a long `consumes` every operation would name.
    #[test]
    fn what_swagger_operations_copy_out_of_shared_parameters_is_bounded() {
        let properties: serde_json::Map<String, Value> =
            (0..20_000).map(|n| (format!("x{n}"), json!({"type": "integer"}))).collect();
        let paths: serde_json::Map<String, Value> = (0..400)
            .map(|n| (format!("/o{n}"), json!({"post": {"parameters": [{"$ref": "#/parameters/big"}], "responses": {"200": {"description": "ok"}}}})))
            .collect();
        let text = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "host": "example.com", "paths": paths,
            "parameters": {"big": {"name": "big", "in": "body", "schema": {"type": "object", "properties": properties}}}})
        .to_string();
        let loaded = load_text(&text, Syntax::Json);
        assert_eq!(loaded.tools.len(), 400);
        let too_large: Vec<_> = loaded.diagnostics.iter().filter(|d| d.code == "protocol-too-large").collect();
        assert_eq!(too_large.len(), 1, "{:#?}", loaded.diagnostics);
        assert!(too_large[0].message.contains("8 times what the file holds"), "{}", too_large[0].message);
        let built: usize = loaded.tools.iter().map(|t| t.params.len()).sum();
        assert!(built < 400 * 1000, "{built} parameters built");
        assert_eq!(tool(&loaded, "post_o0").params.len(), 20_000, "the first operations whole");

        let fields: serde_json::Map<String, Value> = (0..50)
            .map(|n| (format!("f{n}"), json!({"name": format!("f{n}"), "in": "formData", "type": "string", "required": "yes", "description": "d".repeat(20_000)})))
            .collect();
        let uses: Vec<Value> = (0..50).map(|n| json!({"$ref": format!("#/parameters/f{n}")})).collect();
        let paths: serde_json::Map<String, Value> = (0..200)
            .map(|n| {
                let ops: serde_json::Map<String, Value> = ["get", "put", "post", "delete", "patch"]
                    .iter()
                    .map(|m| {
                        (
                            m.to_string(),
                            json!({"responses": {"200": {"description": "ok", "schema": {"type": "object"}}}}),
                        )
                    })
                    .collect();
                let mut item = json!({"parameters": uses});
                item.as_object_mut().unwrap().extend(ops);
                (format!("/o{n}"), item)
            })
            .collect();
        let text = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "host": "example.com",
            "consumes": [format!("application/json{}", "j".repeat(200_000))], "produces": [format!("application/json{}", "j".repeat(200_000))],
            "paths": paths, "parameters": fields})
        .to_string();
        let loaded = load_text(&text, Syntax::Json);
        assert_eq!(loaded.tools.len(), 1000);
        assert_eq!(loaded.diagnostics.iter().filter(|d| d.code == "protocol-too-large").count(), 1);
        let flagged = loaded.diagnostics.iter().filter(|d| d.code == "required-not-boolean").count();
        assert_eq!(flagged, 50, "each shared field's `required` reported once");
        let described: usize = loaded.tools.iter().flat_map(|t| &t.params).map(|p| p.description.len()).sum();
        assert!(described <= 64 << 20, "{described} bytes of descriptions");
    }

    /// A message names an operation by its path, and a file may write a megabyte there and fifty
    /// thousand broken parameters under it: each message quotes the path cut short (fifty
    /// thousand whole copies would be 50 GB).
    #[test]
    fn messages_quote_what_the_file_wrote_cut_short() {
        let path = format!("/{}", "a".repeat(100_000));
        let params: Vec<Value> = (0..2_000).map(|_| json!({})).collect();
        let text = json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "paths": {&path: {"get": {"parameters": params, "responses": {"200": {"description": "ok"}}}}}})
        .to_string();
        let loaded = load_text(&text, Syntax::Json);
        let invalid: Vec<_> = loaded.diagnostics.iter().filter(|d| d.code == "invalid-operation").collect();
        assert_eq!(invalid.len(), 2_000);
        assert!(invalid.iter().all(|d| d.message.len() < 400), "{}", invalid[0].message.len());
        assert!(invalid[0].message.contains(&format!("GET /{}…", "a".repeat(198))), "{}", &invalid[0].message[..300]);
    }

    #[test]
    fn helpers() {
        assert_eq!(join_text("Title", ""), "Title");
        assert_eq!(join_text("Get it", "Get it now."), "Get it now.");
        assert_eq!(path_variables("/a/{x}/b/{y}").collect::<Vec<_>>(), ["x", "y"]);
    }
}
