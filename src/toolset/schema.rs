//! JSON Schemas as a graph: each named schema of a protocol is stored once, `$ref`s stay references
//! and are followed lazily by the questions the analysis asks of every response access and every
//! argument (the effective types of a schema, what a key or an index yields, whether a literal
//! fits). Recursive schemas are natural here: nothing is inlined, so nothing is cut.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// Where a `$ref` leads. The loaders rewrite every reference they keep to a key of the catalog's
/// schema store (`toolset/file#/pointer`), so one lookup answers it.
pub trait Refs {
    /// The schema a reference names, when it is known.
    fn target(&self, reference: &str) -> Option<&Value>;
}

/// For schemas that hold no references (written inline, probed, or from an MCP server).
pub struct NoRefs;

impl Refs for NoRefs {
    fn target(&self, _reference: &str) -> Option<&Value> {
        None
    }
}

/// The named schemas of one toolset, each parsed once, keyed as the references to them are written.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Schemas {
    named: HashMap<String, Value>,
}

impl Schemas {
    pub fn insert(&mut self, key: String, schema: Value) {
        self.named.insert(key, schema);
    }
    pub fn contains(&self, key: &str) -> bool {
        self.named.contains_key(key)
    }
    pub fn remove(&mut self, key: &str) {
        self.named.remove(key);
    }
    pub fn len(&self) -> usize {
        self.named.len()
    }
    pub fn is_empty(&self) -> bool {
        self.named.is_empty()
    }
    /// Takes in another file's schemas (their keys name their file, so none collide).
    pub fn extend(&mut self, other: Schemas) {
        self.named.extend(other.named);
    }
}

impl Refs for Schemas {
    fn target(&self, reference: &str) -> Option<&Value> {
        self.named.get(reference)
    }
}

/// The reference a schema node makes, if it makes one.
pub fn reference(schema: &Value) -> Option<&str> {
    schema.get("$ref").and_then(Value::as_str)
}

/// Where a node's `$ref` leads, following chains of references; `None` when it makes none or the
/// reference is unknown.
pub fn follow<'a>(refs: &'a dyn Refs, schema: &'a Value) -> Option<&'a Value> {
    let mut node = refs.target(reference(schema)?)?;
    for _ in 0..32 {
        match reference(node).and_then(|r| refs.target(r)) {
            Some(next) => node = next,
            None => return Some(node),
        }
    }
    None
}

/// The name a referenced schema goes by (`Customer` for `…#/components/schemas/Customer`).
pub fn ref_name(reference: &str) -> &str {
    let mut segments = reference.rsplit('/');
    let last = segments.next().unwrap_or(reference);
    // A Swagger body parameter's schema (`#/parameters/pet_list/schema`) is named by its parameter.
    match (last, segments.next(), segments.next()) {
        ("schema", Some(owner), Some("parameters")) if !owner.is_empty() => owner,
        _ => last,
    }
}

/// The JSON types a schema admits, after `nullable`, `type` arrays, `$ref` and
/// `anyOf`/`oneOf`/`allOf`. Empty means "anything" (no constraint known).
pub fn types(refs: &dyn Refs, schema: &Value) -> Vec<&'static str> {
    let mut out = Vec::new();
    collect_types(refs, schema, &mut out, 0);
    out
}

fn push(out: &mut Vec<&'static str>, t: &'static str) {
    if !out.contains(&t) {
        out.push(t);
    }
}

fn static_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "object" => "object",
        "array" => "array",
        "string" => "string",
        "integer" => "integer",
        "number" => "number",
        "boolean" => "boolean",
        "null" => "null",
        _ => return None,
    })
}

fn collect_types(refs: &dyn Refs, schema: &Value, out: &mut Vec<&'static str>, depth: usize) {
    if depth > 16 {
        return;
    }
    let Some(obj) = schema.as_object() else { return };
    let before = out.len();
    match obj.get("type") {
        Some(Value::String(t)) => {
            if let Some(t) = static_type(t) {
                push(out, t)
            }
        }
        Some(Value::Array(ts)) => {
            for t in ts.iter().filter_map(Value::as_str).filter_map(static_type) {
                push(out, t);
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = obj.get(key) {
            let mut alt_types = Vec::new();
            for alt in alts {
                let mut t = Vec::new();
                collect_types(refs, alt, &mut t, depth + 1);
                if t.is_empty() {
                    // One unconstrained alternative makes the whole union unconstrained.
                    out.truncate(before);
                    return;
                }
                alt_types.extend(t);
            }
            for t in alt_types {
                push(out, t);
            }
        }
    }
    if let Some(Value::Array(parts)) = obj.get("allOf") {
        for part in parts {
            collect_types(refs, part, out, depth + 1);
        }
    }
    if let Some(target) = follow(refs, schema) {
        collect_types(refs, target, out, depth + 1);
    }
    if out.len() == before {
        if obj.contains_key("properties") || obj.contains_key("additionalProperties") {
            push(out, "object");
        } else if obj.contains_key("items") {
            push(out, "array");
        } else if let Some(Value::Array(values)) = obj.get("enum") {
            for v in values {
                push(out, json_type(v));
            }
        }
    }
    if obj.get("nullable") == Some(&Value::Bool(true)) && !out.is_empty() {
        push(out, "null");
    }
}

pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The sub-schemas that together describe `schema` (itself, where its `$ref` leads, and its
/// `allOf`/`anyOf`/`oneOf` parts).
fn parts<'a>(refs: &'a dyn Refs, schema: &'a Value) -> Vec<&'a Value> {
    let mut out = vec![schema];
    let mut i = 0;
    while i < out.len() && out.len() < 64 {
        let s = out[i];
        if let Some(target) = follow(refs, s)
            && !out.iter().any(|seen| std::ptr::eq(*seen, target))
        {
            out.push(target);
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(alts)) = s.get(key) {
                out.extend(alts.iter());
            }
        }
        i += 1;
    }
    out
}

/// The keys an object schema requires (`required`, in any of its parts).
pub fn required_keys<'a>(refs: &'a dyn Refs, schema: &'a Value) -> Vec<&'a str> {
    // A set beside the list: a schema may require 100,000 keys, and a search of the list for
    // each made one lookup take minutes.
    let mut seen: HashSet<&str> = HashSet::new();
    let mut keys: Vec<&str> = Vec::new();
    for part in parts(refs, schema) {
        for key in part.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            if seen.insert(key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// What looking up a key in an object schema yields.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyLookup<'a> {
    /// The key is declared; its schema.
    Declared(&'a Value),
    /// The object admits any key (no `properties`, `additionalProperties`, or a property whose
    /// name was lost — see [`declares_empty_name`]); its schema if given.
    Open(Option<&'a Value>),
    /// The object declares its keys and this is not one of them.
    Missing,
}

/// Whether a `properties` map has a member named `""`. Real specs have them where a generator lost
/// a property's name (RestBench TMDB's `trending` has one where `results` belongs), so the object's
/// real keys are not all known.
pub fn declares_empty_name(properties: &serde_json::Map<String, Value>) -> bool {
    properties.contains_key("")
}

pub fn property<'a>(refs: &'a dyn Refs, schema: &'a Value, key: &str) -> KeyLookup<'a> {
    let mut declares_keys = false;
    let mut open: Option<Option<&Value>> = None;
    for part in parts(refs, schema) {
        if let Some(Value::Object(props)) = part.get("properties") {
            declares_keys = true;
            if let Some(s) = props.get(key).filter(|_| !key.is_empty()) {
                return KeyLookup::Declared(s);
            }
            // Which key the nameless property stands for is unknown, so no key can be called
            // missing; what it holds is not given to an arbitrary key either.
            if declares_empty_name(props) {
                open = open.or(Some(None));
            }
        }
        match part.get("additionalProperties") {
            Some(Value::Object(s)) if !s.is_empty() => {
                open = Some(Some(part.get("additionalProperties").unwrap_or(&Value::Null)))
            }
            Some(Value::Bool(true)) | Some(Value::Object(_)) => open = open.or(Some(None)),
            _ => {}
        }
        if part.get("patternProperties").is_some() {
            open = open.or(Some(None));
        }
    }
    match open {
        Some(s) => KeyLookup::Open(s),
        None if declares_keys => KeyLookup::Missing,
        None => KeyLookup::Open(None),
    }
}

/// The declared keys of an object schema, in declaration order, with their schemas; a property
/// named `""` is no key a program can read, so it is left out.
pub fn keys<'a>(refs: &'a dyn Refs, schema: &'a Value) -> Vec<(&'a str, &'a Value)> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out: Vec<(&str, &Value)> = Vec::new();
    for part in parts(refs, schema) {
        if let Some(Value::Object(props)) = part.get("properties") {
            for (k, v) in props {
                if !k.is_empty() && seen.insert(k.as_str()) {
                    out.push((k.as_str(), v));
                }
            }
        }
    }
    out
}

/// The schema of an object's property named `""` (see [`declares_empty_name`]), if it has one.
pub fn empty_named<'a>(refs: &'a dyn Refs, schema: &'a Value) -> Option<&'a Value> {
    parts(refs, schema).into_iter().find_map(|part| part.get("properties")?.get(""))
}

/// The item schema of an array schema (`{}` semantics when absent: `None`).
pub fn items<'a>(refs: &'a dyn Refs, schema: &'a Value) -> Option<&'a Value> {
    parts(refs, schema).into_iter().find_map(|p| match p.get("items") {
        Some(v @ Value::Object(_)) => Some(v),
        Some(Value::Array(tuple)) => tuple.first(),
        _ => None,
    })
}

pub fn description<'a>(refs: &'a dyn Refs, schema: &'a Value) -> Option<&'a str> {
    parts(refs, schema).into_iter().find_map(|p| p.get("description").and_then(Value::as_str)).filter(|d| !d.is_empty())
}

pub fn enum_values<'a>(refs: &'a dyn Refs, schema: &'a Value) -> Option<&'a Vec<Value>> {
    parts(refs, schema).into_iter().find_map(|p| p.get("enum").and_then(Value::as_array))
}

/// Does a value of JSON type `actual` fit a schema admitting `expected` types?
/// Integers fit numbers; an empty `expected` admits anything.
pub fn type_fits(actual: &str, expected: &[&str]) -> bool {
    expected.is_empty() || expected.contains(&actual) || (actual == "integer" && expected.contains(&"number"))
}

/// Checks a literal value against a parameter schema: its type and its enum.
/// Returns a message for the user when it does not fit.
pub fn check_literal(refs: &dyn Refs, schema: &Value, value: &Value) -> Result<(), String> {
    let expected = types(refs, schema);
    let actual = json_type(value);
    if !type_fits(actual, &expected) {
        // Query strings carry numbers as text; a numeric string is still a string literal, so keep
        // the error: the protocol's type is what the tool validates.
        return Err(format!(
            "expected {}, found {} {}",
            expected.join(" | "),
            actual,
            crate::text::short_json(value, 41)
        ));
    }
    if let Some(values) = enum_values(refs, schema)
        && !values.is_empty()
        && !values.contains(value)
    {
        let allowed = crate::text::some_of(values.iter().map(|v| crate::text::short_json(v, 41)), 12);
        return Err(format!("{} is not one of {allowed}", crate::text::short_json(value, 41)));
    }
    Ok(())
}

/// Where a value contradicts a schema, as `(path, what)` pairs (`results[0].gender`, "expected
/// integer, got null"), at most `max`. Only what the schema says for certain counts: a type it
/// does not admit, a value outside its enum, a required key that is missing, a key a closed object
/// (`additionalProperties: false`) does not declare. A union is followed into the one alternative
/// whose type fits, if only one does.
pub fn contradictions(refs: &dyn Refs, schema: &Value, value: &Value, max: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    contradictions_at(refs, schema, value, String::new(), &mut out, max, 0);
    out
}

fn contradictions_at(
    refs: &dyn Refs,
    schema: &Value,
    value: &Value,
    path: String,
    out: &mut Vec<(String, String)>,
    max: usize,
    depth: usize,
) {
    if out.len() >= max || depth > 32 {
        return;
    }
    let expected = types(refs, schema);
    let actual = json_type(value);
    if !type_fits(actual, &expected) {
        note(out, path, format!("expected {}, got {actual}", expected.join(" | ")));
        return;
    }
    let parts = parts(refs, schema);
    // A union says something certain only through the one alternative a value of this type
    // could be; several (a movie or a tv show, both objects) leave the rest open.
    let alternatives: Vec<&Value> =
        parts.iter().filter_map(|p| p.get("anyOf").or_else(|| p.get("oneOf"))?.as_array()).flatten().collect();
    if !alternatives.is_empty() {
        let fitting: Vec<&Value> =
            alternatives.into_iter().filter(|alt| type_fits(actual, &types(refs, alt))).collect();
        if let [only] = fitting[..] {
            contradictions_at(refs, only, value, path, out, max, depth + 1);
        }
        return;
    }
    // A nullable enum rarely lists `null` among its values (Stripe's never do).
    if let Some(values) = enum_values(refs, schema).filter(|v| !v.is_empty())
        && !values.contains(value)
        && !(value.is_null() && expected.contains(&"null"))
    {
        note(out, path, format!("{} is not one of its enum values", crate::text::short_json(value, 41)));
        return;
    }
    match value {
        Value::Object(map) => {
            let join = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
            for key in required_keys(refs, schema) {
                // A write-only member is required in requests, never sent back.
                let write_only = matches!(property(refs, schema, key), KeyLookup::Declared(s)
                    if self::parts(refs, s).iter().any(|p| p.get("writeOnly") == Some(&Value::Bool(true))));
                if !map.contains_key(key) && !write_only && out.len() < max {
                    note(out, join(key), "required key missing".into());
                }
            }
            let closed = parts.iter().any(|p| p.get("additionalProperties") == Some(&Value::Bool(false)));
            for (key, item) in map {
                match property(refs, schema, key) {
                    KeyLookup::Declared(sub) | KeyLookup::Open(Some(sub)) => {
                        contradictions_at(refs, sub, item, join(key), out, max, depth + 1)
                    }
                    KeyLookup::Missing if closed && out.len() < max => {
                        note(out, join(key), "key not declared by a closed object".into())
                    }
                    _ => {}
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(refs, schema) {
                for (i, item) in list.iter().enumerate().take(50) {
                    contradictions_at(refs, item_schema, item, format!("{path}[{i}]"), out, max, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Records a contradiction once per place in the shape: `results[3].id` after `results[0].id`
/// says nothing new.
fn note(out: &mut Vec<(String, String)>, path: String, what: String) {
    let shape = |p: &str| {
        let mut shape = String::with_capacity(p.len());
        let mut in_index = false;
        for c in p.chars() {
            match c {
                '[' => {
                    in_index = true;
                    shape.push('[');
                }
                ']' => {
                    in_index = false;
                    shape.push(']');
                }
                _ if in_index => {}
                _ => shape.push(c),
            }
        }
        shape
    };
    let this = shape(&path);
    if !out.iter().any(|(seen, _)| shape(seen) == this) {
        out.push((path, what));
    }
}

/// A one-line type summary: `object {id, name, …}`, `array of object {…}`, `string (date)`.
pub fn summary(refs: &dyn Refs, schema: &Value) -> String {
    summary_at(refs, schema, 0)
}

fn summary_at(refs: &dyn Refs, schema: &Value, depth: usize) -> String {
    let ts = types(refs, schema);
    if ts.is_empty() {
        return "any".into();
    }
    let rendered: Vec<String> = ts
        .iter()
        .map(|t| match *t {
            "object" => {
                let ks = keys(refs, schema);
                if ks.is_empty() || depth > 0 {
                    "object".to_string()
                } else {
                    format!("object {{{}}}", crate::text::some_of(ks.iter().map(|(k, _)| *k), 6))
                }
            }
            "array" => match items(refs, schema) {
                Some(item) if depth < 2 => format!("array of {}", summary_at(refs, item, depth + 1)),
                _ => "array".into(),
            },
            "string" => match parts(refs, schema).into_iter().find_map(|p| p.get("format").and_then(Value::as_str)) {
                Some(f) => format!("string ({f})"),
                None => "string".into(),
            },
            other => other.to_string(),
        })
        .collect();
    rendered.join(" | ")
}

/// A multi-line outline of a schema's keys, for hover: `results: array of object` …
pub fn outline(refs: &dyn Refs, schema: &Value, max_lines: usize) -> Vec<String> {
    let mut lines = Vec::new();
    outline_into(refs, schema, "", &mut lines, max_lines, 0);
    lines
}

fn outline_into(refs: &dyn Refs, schema: &Value, indent: &str, lines: &mut Vec<String>, max: usize, depth: usize) {
    if depth > 3 {
        return;
    }
    let target = if types(refs, schema).contains(&"array") { items(refs, schema).unwrap_or(schema) } else { schema };
    for (key, sub) in keys(refs, target) {
        if lines.len() >= max {
            lines.push(format!("{indent}…"));
            return;
        }
        lines.push(format!("{indent}{key}: {}", summary_at(refs, sub, 1)));
        let sub_is_nested = !keys(refs, sub).is_empty() || items(refs, sub).is_some_and(|i| !keys(refs, i).is_empty());
        if sub_is_nested {
            outline_into(refs, sub, &format!("{indent}  "), lines, max, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reference_is_named_by_its_last_segment_a_body_schema_by_its_parameter() {
        assert_eq!(ref_name("api/x.json#/components/schemas/Pet"), "Pet");
        assert_eq!(ref_name("api/x.json#/parameters/pet_list/schema"), "pet_list");
        assert_eq!(ref_name("api/x.json#/definitions/schema"), "schema");
    }

    #[test]
    fn lookups_through_compositions() {
        let s = json!({"allOf": [{"type": "object", "properties": {"id": {"type": "integer"}}},
                                 {"properties": {"name": {"type": "string", "nullable": true}}}]});
        assert_eq!(types(&NoRefs, &s), vec!["object"]);
        assert!(matches!(property(&NoRefs, &s, "id"), KeyLookup::Declared(_)));
        let KeyLookup::Declared(name) = property(&NoRefs, &s, "name") else { panic!() };
        assert_eq!(types(&NoRefs, name), vec!["string", "null"]);
        assert_eq!(property(&NoRefs, &s, "nope"), KeyLookup::Missing);
        assert_eq!(property(&NoRefs, &json!({"type": "object"}), "x"), KeyLookup::Open(None));
        assert_eq!(keys(&NoRefs, &s).len(), 2);
        // A property whose name the protocol lost: no key is missing, none is the nameless one.
        let lost = json!({"allOf": [s, {"properties": {"": {"type": "array"}}}]});
        assert_eq!(property(&NoRefs, &lost, "results"), KeyLookup::Open(None));
        assert_eq!(property(&NoRefs, &lost, ""), KeyLookup::Open(None));
        assert!(matches!(property(&NoRefs, &lost, "id"), KeyLookup::Declared(_)));
        assert_eq!(keys(&NoRefs, &lost).iter().map(|(k, _)| *k).collect::<Vec<_>>(), ["id", "name"]);
    }

    #[test]
    fn literals() {
        let s = json!({"type": "string", "enum": ["day", "week"]});
        assert!(check_literal(&NoRefs, &s, &json!("day")).is_ok());
        assert!(check_literal(&NoRefs, &s, &json!("month")).unwrap_err().contains("not one of"));
        assert!(check_literal(&NoRefs, &json!({"type": "number"}), &json!(3)).is_ok());
        assert!(check_literal(&NoRefs, &json!({"type": "integer"}), &json!("3")).is_err());
        assert!(check_literal(&NoRefs, &json!({}), &json!("x")).is_ok());
    }

    #[test]
    fn summaries() {
        let s = json!({"type": "object", "properties": {"results": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}}}});
        assert_eq!(summary(&NoRefs, &s), "object {results}");
        assert_eq!(outline(&NoRefs, &s, 10), vec!["results: array of object", "  id: integer"]);
    }

    #[test]
    fn references_are_followed_lazily_and_recursion_is_natural() {
        let mut store = Schemas::default();
        store.insert(
            "t/f#/components/schemas/Node".into(),
            json!({"type": "object", "properties": {
                "name": {"type": "string"},
                "parent": {"$ref": "t/f#/components/schemas/Node", "nullable": true},
                "children": {"type": "array", "items": {"$ref": "t/f#/components/schemas/Node"}}}}),
        );
        store.insert("t/f#/components/schemas/Alias".into(), json!({"$ref": "t/f#/components/schemas/Node"}));
        let root = json!({"$ref": "t/f#/components/schemas/Alias"});
        assert_eq!(types(&store, &root), vec!["object"]);
        let KeyLookup::Declared(children) = property(&store, &root, "children") else { panic!() };
        let child = items(&store, children).unwrap();
        let KeyLookup::Declared(parent) = property(&store, child, "parent") else { panic!() };
        assert_eq!(types(&store, parent), vec!["object", "null"]);
        assert_eq!(property(&store, parent, "nmae"), KeyLookup::Missing);
        assert_eq!(summary(&store, &root), "object {name, parent, children}");
        let lines = outline(&store, &root, 1000);
        assert_eq!(lines[..3], ["name: string", "parent: object | null", "  name: string"]);
        assert!(lines.len() < 100, "depth-bounded, not endless: {}", lines.len());
        // An unknown reference constrains nothing.
        assert_eq!(property(&store, &json!({"$ref": "t/f#/nope"}), "x"), KeyLookup::Open(None));
    }

    #[test]
    fn contradictions_are_only_what_the_schema_says_for_certain() {
        let s = json!({"type": "object", "required": ["id"], "properties": {
            "id": {"type": "integer"},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "owner": {"anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": false,
                                                     "properties": {"login": {"type": "string"}}}]},
            "media": {"type": "array", "items": {"oneOf": [
                {"type": "object", "properties": {"kind": {"enum": ["movie"]}}},
                {"type": "object", "properties": {"kind": {"enum": ["tv"]}}}]}},
            "tags": {"type": "array", "items": {"type": "string"}}}});
        let fits = json!({"id": 1, "state": "open", "owner": "o", "media": [{"kind": "tv"}, {"kind": "movie"}],
                          "tags": ["a"], "extra": true});
        assert_eq!(contradictions(&NoRefs, &s, &fits, 10), Vec::<(String, String)>::new());
        let drifted = json!({"state": "merged", "owner": {"login": "o", "site_admin": true},
                             "tags": ["a", 2, 3], "media": null});
        let found = contradictions(&NoRefs, &s, &drifted, 10);
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["id", "state", "owner.site_admin", "tags[1]", "media"], "{found:?}");
        assert_eq!(found[3].1, "expected string, got integer", "one finding per place in the shape");
        assert_eq!(contradictions(&NoRefs, &s, &drifted, 2).len(), 2);
        // A nullable enum admits null without listing it (as Stripe writes them); a write-only
        // required member is never sent back.
        let reason = json!({"type": "object", "required": ["secret"], "properties": {
            "reason": {"type": "string", "nullable": true, "enum": ["duplicate", "fraudulent"]},
            "secret": {"type": "string", "writeOnly": true}}});
        assert!(contradictions(&NoRefs, &reason, &json!({"reason": null}), 10).is_empty());
        assert_eq!(contradictions(&NoRefs, &reason, &json!({"reason": "lost"}), 10).len(), 1);
    }
}
