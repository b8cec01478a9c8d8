//! Swagger 2.0 (OpenAPI 2) read directly: a 2.0 document is rewritten, node by node, into the
//! OpenAPI 3.0 shape the OpenAPI loader reads, every node keeping the byte range it came from, so a
//! tool's definition and every diagnostic still point into the user's 2.0 file.
//!
//! What moves: `host` + `basePath` + `schemes` become `servers`; `securityDefinitions` become
//! `components.securitySchemes`; a `body` parameter becomes the `requestBody` (media type from
//! `consumes`), `formData` parameters one form body; the type keywords of other parameters move
//! under `schema`; a response's `schema` and `examples` move under `content` (media type from
//! `produces`). `definitions`, `parameters` and `responses` stay at the root, where `$ref`s point
//! (`#/definitions/...`); shared parameters and responses are rewritten in place.
//!
//! A `body` parameter shared by `$ref` becomes a request body whose schema is a `$ref` to the
//! shared one, as OpenAPI 3 writes it. What is copied into every operation instead (a body
//! parameter of a path item, form fields, the JSON media type each operation names) is weighed
//! against the [`BuildBudget`] the loader then builds the tools out of, sized by the 2.0
//! document, so a small file whose operations share one large body stops at
//! `protocol-too-large` as its 3.0 form would.

use std::collections::HashSet;

use super::doc::{Node, NodeKind, text_weight};
use super::refs::BuildBudget;
use super::required::Flag;
use crate::text::{ByteRange, quoted};

/// Parameter keywords that describe the value: under OpenAPI 3 they belong to its `schema`.
const VALUE_KEYWORDS: [&str; 17] = [
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "allowEmptyValue",
];

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];

/// Whether the document declares itself Swagger 2.
pub fn is_swagger2(doc: &Node) -> bool {
    doc.get("swagger").is_some_and(|v| scalar(v).starts_with('2'))
}

/// A form field whose `required` is no boolean. The 3.0 shape lists required fields by name, with
/// no place for how the flag was written, so the rewrite reads it as [`required::flag`] does and
/// hands it on for the loader to report.
///
/// [`required::flag`]: super::required::flag
pub struct FormFlag {
    /// How messages name it (``form field `status` in POST /pet/{petId}``).
    pub what: String,
    /// The `required` value as written.
    pub node: Node,
}

/// What the rewrite copies out of shared parts, and what it hands the loader to report.
struct Copies<'b> {
    budget: &'b mut BuildBudget,
    flags: Vec<FormFlag>,
    /// The `required` values already flagged: a shared field is reported (and copied) once.
    flagged: HashSet<ByteRange>,
}

impl Copies<'_> {
    /// A copy of `node` for one operation, or an empty object when there is no room for it.
    fn node(&mut self, node: &Node, at: ByteRange) -> Node {
        self.budget.keep_node(node, at).unwrap_or_else(|| object(at, vec![]))
    }

    /// The JSON media type among `media` (else `application/json`) as one operation's key.
    fn json_media(&mut self, media: &[String], at: ByteRange) -> String {
        match media.iter().find(|m| m.contains("json")) {
            Some(m) if self.budget.take(1 + text_weight(m), at) => m.clone(),
            _ => "application/json".into(),
        }
    }
}

/// The OpenAPI 3.0 form of a Swagger 2.0 document, with the form fields whose `required` it read
/// from something other than a boolean. What it copies into operations is taken from `budget`.
pub fn upgrade(doc: &Node, budget: &mut BuildBudget) -> (Node, Vec<FormFlag>) {
    let mut copies = Copies { budget, flags: Vec::new(), flagged: HashSet::new() };
    let mut members: Vec<(String, Node)> = Vec::new();
    let version = doc.get("swagger").map_or(doc.range, |v| v.range);
    members.push(("openapi".into(), string(version, "3.0.0")));
    if let Some(info) = doc.get("info") {
        members.push(("info".into(), info.clone()));
    }
    if let Some(servers) = servers(doc) {
        members.push(("servers".into(), servers));
    }
    let consumes = media_list(doc.get("consumes"));
    let produces = media_list(doc.get("produces"));
    if let Some(paths) = doc.get("paths") {
        let converted = paths
            .members()
            .iter()
            .map(|(path, key_range, item)| {
                (path.clone(), *key_range, path_item(doc, path, item, &consumes, &produces, &mut copies))
            })
            .collect();
        members.push(("paths".into(), Node { kind: NodeKind::Object(converted), range: paths.range }));
    }
    let mut components: Vec<(String, Node)> = Vec::new();
    if let Some(schemes) = doc.get("securityDefinitions") {
        let converted = schemes.members().iter().map(|(k, r, s)| (k.clone(), *r, security_scheme(s))).collect();
        components.push(("securitySchemes".into(), Node { kind: NodeKind::Object(converted), range: schemes.range }));
    }
    if !components.is_empty() {
        members.push(("components".into(), object(doc.range, components)));
    }
    // Where 2.0 `$ref`s point: kept at the root, shared parameters and responses in 3.0 form.
    if let Some(definitions) = doc.get("definitions") {
        members.push(("definitions".into(), definitions.clone()));
    }
    if let Some(parameters) = doc.get("parameters") {
        let converted = parameters.members().iter().map(|(k, r, p)| (k.clone(), *r, plain_parameter(p))).collect();
        members.push(("parameters".into(), Node { kind: NodeKind::Object(converted), range: parameters.range }));
    }
    if let Some(responses) = doc.get("responses") {
        let converted =
            responses.members().iter().map(|(k, r, x)| (k.clone(), *r, response(x, &produces, &mut copies))).collect();
        members.push(("responses".into(), Node { kind: NodeKind::Object(converted), range: responses.range }));
    }
    for key in ["security", "tags", "externalDocs", super::bundle::BUNDLED] {
        if let Some(node) = doc.get(key) {
            members.push((key.into(), node.clone()));
        }
    }
    let mut upgraded = object(doc.range, members);
    // Keys keep their own ranges where the 2.0 document had the same key.
    if let NodeKind::Object(out) = &mut upgraded.kind {
        for (key, range, _) in out.iter_mut() {
            if let Some(original) = doc.key_range(key) {
                *range = original;
            }
        }
    }
    (upgraded, copies.flags)
}

/// `schemes://host/basePath`, https preferred; a document without `host` keeps a relative base.
fn servers(doc: &Node) -> Option<Node> {
    let host = doc.get("host").and_then(Node::as_str);
    let base = doc.get("basePath").and_then(Node::as_str).unwrap_or("");
    if host.is_none() && base.is_empty() {
        return None;
    }
    let url = match host {
        Some(host) => {
            let schemes: Vec<&str> =
                doc.get("schemes").map(|s| s.items().iter().filter_map(Node::as_str).collect()).unwrap_or_default();
            let scheme = if schemes.is_empty() || schemes.contains(&"https") { "https" } else { schemes[0] };
            format!("{scheme}://{host}{base}")
        }
        None => base.to_string(),
    };
    let range = doc.get("host").or(doc.get("basePath")).map_or(doc.range, |n| n.range);
    let server = object(range, vec![("url".into(), string(range, &url))]);
    Some(Node { kind: NodeKind::Array(vec![server]), range })
}

fn security_scheme(scheme: &Node) -> Node {
    match scheme.str_of("type") {
        "basic" => object(
            scheme.range,
            vec![("type".into(), string(scheme.range, "http")), ("scheme".into(), string(scheme.range, "basic"))],
        ),
        "oauth2" => object(
            scheme.range,
            vec![("type".into(), string(scheme.range, "http")), ("scheme".into(), string(scheme.range, "bearer"))],
        ),
        // apiKey has the same shape in both versions.
        _ => scheme.clone(),
    }
}

fn path_item(
    doc: &Node,
    path: &str,
    item: &Node,
    consumes: &[String],
    produces: &[String],
    copies: &mut Copies,
) -> Node {
    let NodeKind::Object(members) = &item.kind else { return item.clone() };
    let shared: Vec<&Node> = item.get("parameters").map(|p| p.items().iter().collect()).unwrap_or_default();
    let mut out = Vec::new();
    for (key, key_range, value) in members {
        let converted = if METHODS.contains(&key.as_str()) {
            let label = format!("{} {}", key.to_ascii_uppercase(), quoted(path));
            operation(doc, &label, value, &shared, Media { consumes, produces }, copies)
        } else if key == "parameters" {
            // Body and form parameters of the path item are folded into each operation's body.
            let kept: Vec<Node> =
                shared.iter().filter(|p| !is_body_like(resolve(doc, p))).map(|p| parameter_or_ref(p)).collect();
            Node { kind: NodeKind::Array(kept), range: value.range }
        } else {
            value.clone()
        };
        out.push((key.clone(), *key_range, converted));
    }
    Node { kind: NodeKind::Object(out), range: item.range }
}

/// The media types a document or an operation declares.
#[derive(Clone, Copy)]
struct Media<'m> {
    consumes: &'m [String],
    produces: &'m [String],
}

/// `label`: how messages name the operation (`POST /pet/{petId}`).
fn operation(doc: &Node, label: &str, op: &Node, shared: &[&Node], media: Media, copies: &mut Copies) -> Node {
    let NodeKind::Object(members) = &op.kind else { return op.clone() };
    // The document's media types are read in place, never copied into each operation.
    let own_consumes = op.get("consumes").map(|c| media_list(Some(c)));
    let own_produces = op.get("produces").map(|p| media_list(Some(p)));
    let consumes = own_consumes.as_deref().unwrap_or(media.consumes);
    let produces = own_produces.as_deref().unwrap_or(media.produces);
    let own: Vec<&Node> = op.get("parameters").map(|p| p.items().iter().collect()).unwrap_or_default();
    // Body and form parameters of the path item apply unless the operation redeclares them.
    let mut body_params: Vec<&Node> = own.iter().copied().filter(|p| is_body_like(resolve(doc, p))).collect();
    for p in shared.iter().copied().filter(|p| is_body_like(resolve(doc, p))) {
        let name = resolve(doc, p).str_of("name");
        if !body_params.iter().any(|b| resolve(doc, b).str_of("name") == name) {
            body_params.push(p);
        }
    }
    let mut out = Vec::new();
    for (key, key_range, value) in members {
        let converted = match key.as_str() {
            "parameters" => {
                let kept: Vec<Node> =
                    own.iter().filter(|p| !is_body_like(resolve(doc, p))).map(|p| parameter_or_ref(p)).collect();
                Node { kind: NodeKind::Array(kept), range: value.range }
            }
            "responses" => {
                let converted =
                    value.members().iter().map(|(k, r, x)| (k.clone(), *r, response(x, produces, copies))).collect();
                Node { kind: NodeKind::Object(converted), range: value.range }
            }
            "consumes" | "produces" | "schemes" => continue,
            _ => value.clone(),
        };
        out.push((key.clone(), *key_range, converted));
    }
    if let Some(body) = request_body(doc, label, &body_params, consumes, copies) {
        let range = body.range;
        out.push(("requestBody".into(), range, body));
    }
    Node { kind: NodeKind::Object(out), range: op.range }
}

/// A shared parameter (`$ref: '#/parameters/x'`) stays a reference: the target is rewritten at the
/// root.
fn parameter_or_ref(param: &Node) -> Node {
    if param.get("$ref").is_some() { param.clone() } else { plain_parameter(param) }
}

/// A query, path, header or cookie parameter with its value keywords moved under `schema`.
fn plain_parameter(param: &Node) -> Node {
    let NodeKind::Object(members) = &param.kind else { return param.clone() };
    if param.get("in").and_then(Node::as_str).is_some_and(|i| i == "body" || i == "formData") {
        return param.clone();
    }
    let mut out = Vec::new();
    let mut schema = Vec::new();
    for (key, key_range, value) in members {
        if VALUE_KEYWORDS.contains(&key.as_str()) {
            schema.push((key.clone(), *key_range, value.clone()));
        } else if key != "collectionFormat" {
            out.push((key.clone(), *key_range, value.clone()));
        }
    }
    if !schema.is_empty() && param.get("schema").is_none() {
        out.push(("schema".into(), param.range, Node { kind: NodeKind::Object(schema), range: param.range }));
    }
    Node { kind: NodeKind::Object(out), range: param.range }
}

/// The operation's body: the `body` parameter's schema, or an object of the `formData` fields.
fn request_body(doc: &Node, label: &str, params: &[&Node], consumes: &[String], copies: &mut Copies) -> Option<Node> {
    let first = *params.first()?;
    let at = first.range;
    let resolved: Vec<&Node> = params.iter().map(|p| resolve(doc, p)).collect();
    if let Some(i) = resolved.iter().position(|p| p.str_of("in") == "body") {
        let body = resolved[i];
        let media = copies.json_media(consumes, at);
        // A body shared by `$ref` keeps its schema where it is written, as OpenAPI 3's shared
        // request bodies do: the loader reads it once and weighs what each operation takes of it.
        let shared = params[i].get("$ref").filter(|r| r.as_str().is_some_and(stays_in_place));
        let schema = match (body.get("schema"), shared) {
            (Some(_), Some(reference)) => {
                let pointer = format!("{}/schema", reference.as_str().unwrap_or_default());
                object(reference.range, vec![("$ref".into(), string(reference.range, &pointer))])
            }
            (Some(schema), None) => copies.node(schema, at),
            (None, _) => object(body.range, vec![]),
        };
        let mut members = vec![(
            "content".into(),
            object(body.range, vec![(media, object(body.range, vec![("schema".into(), schema)]))]),
        )];
        for key in ["required", "description"] {
            if let Some(value) = body.get(key).and_then(|v| copies.budget.keep_node(v, at)) {
                members.push((key.into(), value));
            }
        }
        return Some(object(first.range, members));
    }
    let range = first.range;
    let mut properties = Vec::new();
    let mut required = Vec::new();
    let mut has_file = false;
    for field in resolved.iter().filter(|p| p.str_of("in") == "formData") {
        let name = field.str_of("name");
        if name.is_empty() || !copies.budget.take(1 + text_weight(name), at) {
            continue;
        }
        has_file |= field.str_of("type") == "file";
        let mut schema: Vec<(String, Node)> = Vec::new();
        for (key, _, value) in field.members() {
            if VALUE_KEYWORDS.contains(&key.as_str()) || key == "description" {
                let value = if key == "type" && value.as_str() == Some("file") {
                    string(value.range, "string")
                } else {
                    copies.node(value, at)
                };
                schema.push((key.clone(), value));
            }
        }
        properties.push((name.to_string(), object(field.range, schema)));
        let flag = field.get("required").map(super::required::flag);
        if let (Some(Flag::Text(_) | Flag::Other), Some(node)) = (flag, field.get("required"))
            && copies.flagged.insert(node.range)
        {
            let what = format!("form field `{}` in {label}", quoted(name));
            copies.flags.push(FormFlag { what, node: node.clone() });
        }
        if matches!(flag, Some(Flag::Bool(true) | Flag::Text(true))) && copies.budget.take(1 + text_weight(name), at) {
            required.push(string(field.range, name));
        }
    }
    if properties.is_empty() {
        return None;
    }
    let media = if has_file
        || consumes.iter().any(|m| m == "multipart/form-data")
            && !consumes.iter().any(|m| m == "application/x-www-form-urlencoded")
    {
        "multipart/form-data"
    } else {
        "application/x-www-form-urlencoded"
    };
    let mut schema = vec![("type".into(), string(range, "object")), ("properties".into(), object(range, properties))];
    if !required.is_empty() {
        schema.push(("required".into(), Node { kind: NodeKind::Array(required), range }));
    }
    let content = object(range, vec![(media.into(), object(range, vec![("schema".into(), object(range, schema))]))]);
    Some(object(range, vec![("content".into(), content)]))
}

/// A response with its `schema` and `examples` under `content`.
fn response(response: &Node, produces: &[String], copies: &mut Copies) -> Node {
    let NodeKind::Object(members) = &response.kind else { return response.clone() };
    if response.get("$ref").is_some() {
        return response.clone();
    }
    let mut out = Vec::new();
    for (key, key_range, value) in members {
        if key != "schema" && key != "examples" {
            out.push((key.clone(), *key_range, value.clone()));
        }
    }
    if let Some(schema) = response.get("schema") {
        let media = copies.json_media(produces, schema.range);
        let mut media_members = vec![("schema".to_string(), schema.clone())];
        if let Some(example) = response.get("examples").and_then(|e| e.get(&media)) {
            media_members.push(("example".into(), example.clone()));
        }
        let content = object(schema.range, vec![(media, object(schema.range, media_members))]);
        out.push(("content".into(), schema.range, content));
    }
    Node { kind: NodeKind::Object(out), range: response.range }
}

/// Whether what `reference` points at keeps its place and its 2.0 form in the upgraded document:
/// shared parameters (a body one is not rewritten) and what the bundler copied in.
fn stays_in_place(reference: &str) -> bool {
    // The rewrite finds parameters by the pointer as written; the loader decodes `%XX` first.
    !reference.contains('%')
        && reference.strip_prefix("#/").is_some_and(|pointer| {
            pointer.starts_with("parameters/")
                || pointer.strip_prefix(super::bundle::BUNDLED).is_some_and(|rest| rest.starts_with('/'))
        })
}

/// A parameter behind a local `$ref` (`#/parameters/x`), or the parameter itself.
fn resolve<'a>(doc: &'a Node, param: &'a Node) -> &'a Node {
    let Some(reference) = param.get("$ref").and_then(Node::as_str) else { return param };
    reference.strip_prefix('#').and_then(|pointer| doc.pointer(pointer)).unwrap_or(param)
}

fn is_body_like(param: &Node) -> bool {
    matches!(param.str_of("in"), "body" | "formData")
}

fn media_list(node: Option<&Node>) -> Vec<String> {
    node.map(|n| n.items().iter().filter_map(Node::as_str).map(str::to_string).collect()).unwrap_or_default()
}

fn scalar(node: &Node) -> String {
    match &node.kind {
        NodeKind::String(s) => s.clone(),
        NodeKind::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn string(range: ByteRange, text: &str) -> Node {
    Node { kind: NodeKind::String(text.to_string()), range }
}

/// An object node whose keys all carry `range` (synthetic keys have no text of their own).
fn object(range: ByteRange, members: Vec<(String, Node)>) -> Node {
    Node { kind: NodeKind::Object(members.into_iter().map(|(k, v)| (k, range, v)).collect()), range }
}
