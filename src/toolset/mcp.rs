//! MCP toolsets: the tools a running server lists (`tools/list`) as [`Tool`]s.
//!
//! Names follow the one rule (`get-sum` → `get_sum`, the original kept in the transport and the
//! source); parameters come from `inputSchema.properties` as MCP arguments; the response schema is
//! the `outputSchema` when it describes real structure (one that only wraps a text, such as
//! `{content: string}`, counts as unknown so probing fills it); `annotations` are kept on the tool.
//! An MCP tool is declared by its `[[toolsets]]` entry in chainsmith.toml: that is its source
//! location.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Value, json};

use super::doc::Node;
use super::refs::{BuildBudget, Resolver, value_weight};
use super::schema::Schemas;
use super::{Loaded, Param, ParamLocation, Provenance, Source, SourceKind, Tool, Transport, schema};
use crate::config::McpConfig;
use crate::diagnostic::Diagnostic;
use crate::mcp::McpClient;
use crate::names;
use crate::text::ByteRange;

/// Starts the toolset's server, lists its tools and shuts it down again. A server that cannot be
/// started or listed yields no tools and an `mcp-unavailable` error on the toolset's entry.
pub fn load_server(name: &str, config: &McpConfig, root: &Path, file: &Path, range: ByteRange) -> Loaded {
    let listed = McpClient::start_named(name, config, root).and_then(|client| {
        let listed = client.tools()?;
        // A server that announced a change while it was being listed is listed once more.
        if client.tools_changed() { client.tools() } else { Ok(listed) }
    });
    match listed {
        Ok(listed) => tools_from_list(&listed, name, file, range),
        Err(e) => {
            // The summary first (one-line renderers), then the server's own words.
            let message = e.to_string();
            let (first, details) = message.split_once('\n').unwrap_or((&message, ""));
            let message = format!("{first}; toolset `{name}` has no tools until its server starts\n{details}");
            Loaded {
                diagnostics: vec![Diagnostic::error(file, range, "mcp-unavailable", message.trim_end())],
                ..Default::default()
            }
        }
    }
}

/// The tools of a `tools/list` answer (every page's `tools`, in order). A tool without a name is
/// skipped; two tools whose Python names collide keep the first name, the second gets a suffix.
pub fn tools_from_list(listed: &[Value], toolset: &str, file: &Path, range: ByteRange) -> Loaded {
    let mut loaded = Loaded::default();
    let mut store = Schemas::default();
    // The answer's tools are built out of one bound sized by the whole answer: each tool's schema
    // is a document of its own, but a bound per tool would let many tools build many times more.
    let mut budget = BuildBudget::for_weight(listed.iter().map(value_weight).sum())
        .sized_by("the server's `tools/list` answer holds");
    let mut taken = names::Unique::default();
    for described in listed {
        let Some(original) = described.get("name").and_then(Value::as_str).filter(|n| !n.trim().is_empty()) else {
            loaded.diagnostics.push(Diagnostic::warning(
                file,
                range,
                "invalid-protocol",
                format!("MCP server of toolset `{toolset}` lists a tool without a name; it is skipped"),
            ));
            continue;
        };
        let mut schemas = ToolSchemas {
            toolset,
            original,
            file,
            range,
            store: &mut store,
            budget: &mut budget,
            problems: Vec::new(),
        };
        let mut tool = tool(described, original, toolset, &mut schemas);
        loaded.diagnostics.append(&mut schemas.problems);
        let unique = taken.claim(&tool.name, "_");
        if unique != tool.name {
            let base = tool.name.clone();
            loaded.diagnostics.push(Diagnostic::warning(
                file,
                range,
                "name-collision",
                format!("MCP tool `{original}` of toolset `{toolset}` would also be named `{base}`; it is `{unique}`"),
            ));
            tool.name = unique;
        }
        loaded.tools.push(tool);
    }
    loaded.diagnostics.extend(budget.diagnostic(file));
    loaded.schemas = std::sync::Arc::new(store);
    for tool in &mut loaded.tools {
        tool.schemas = loaded.schemas.clone();
    }
    loaded.without_overlong_names(file)
}

/// Converts one listed tool's schemas into the toolset's store (each schema is a document of its
/// own: its `$ref`s point into itself).
struct ToolSchemas<'a> {
    toolset: &'a str,
    original: &'a str,
    file: &'a Path,
    range: ByteRange,
    store: &'a mut Schemas,
    budget: &'a mut BuildBudget,
    problems: Vec<Diagnostic>,
}

impl ToolSchemas<'_> {
    /// `member` of the listed tool (`inputSchema`, `outputSchema`) with its `$ref`s as keys of the
    /// store and its `$defs`/`definitions`/`$schema` dropped (what they hold is stored by key). A
    /// reference that leads nowhere leaves the schema as listed, its references unknown (not
    /// checked), with a warning on the entry.
    fn convert(&mut self, member: &str, schema: &Value) -> Value {
        let root = Node::from_json(schema, self.range);
        let budget = std::mem::replace(self.budget, BuildBudget::for_weight(0));
        let mut resolver = Resolver::with_budget(&root, format!("{}/{}/{member}", self.toolset, self.original), budget);
        let converted = resolver.schema(&root);
        let mut problems: Vec<&str> = resolver.problems.iter().map(|p| p.reference).collect();
        // The schema as listed keeps its parameters known; its references then lead nowhere
        // (unknown, so unchecked) instead of the whole tool losing its arguments.
        let mut converted = converted.unwrap_or_else(|e| {
            problems.push(e.reference);
            schema.clone()
        });
        for reference in problems {
            self.problems.push(Diagnostic::warning(
                self.file,
                self.range,
                "invalid-protocol",
                format!(
                    "MCP tool `{}` of toolset `{}`: `$ref` `{reference}` in its {member} does not resolve; what it stands for is not checked",
                    self.original, self.toolset
                ),
            ));
        }
        if let Value::Object(map) = &mut converted {
            for key in ["$defs", "definitions", "$schema"] {
                map.remove(key);
            }
        }
        self.store.extend(std::mem::take(&mut resolver.store));
        *self.budget = resolver.budget;
        converted
    }
}

/// One listed tool.
fn tool(described: &Value, original: &str, toolset: &str, schemas: &mut ToolSchemas<'_>) -> Tool {
    let text = |key: &str| described.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let annotations = described.get("annotations").filter(|a| a.is_object()).cloned();
    let title = text("title").or_else(|| annotations.as_ref().and_then(|a| a.get("title")?.as_str()));
    let description = text("description").or(title).unwrap_or_default().to_string();
    let input = described.get("inputSchema").map(|s| schemas.convert("inputSchema", s)).unwrap_or_else(|| json!({}));
    // Every declared output schema is kept, a `{content: string}` wrapper too: the server must send
    // `structuredContent` of that shape, which is what a call returns.
    let response = described
        .get("outputSchema")
        .map(|s| schemas.convert("outputSchema", s))
        .filter(|s| s.as_object().is_some_and(|o| !o.is_empty()));
    Tool {
        name: names::mcp_tool(original),
        toolset: toolset.to_string(),
        category: String::new(),
        description,
        params: params(&input, schemas.store, schemas.budget, schemas.range),
        response: response.into(),
        statuses: Vec::new(),
        examples: Vec::new(),
        provenance: Provenance::Declared,
        transport: Transport::Mcp { tool: original.to_string() },
        annotations,
        source: Source {
            kind: SourceKind::Mcp,
            file: schemas.file.to_path_buf(),
            range: schemas.range,
            name_range: schemas.range,
            method: None,
            path: None,
            tool: Some(original.to_string()),
            api: None,
            operation_id: None,
        },
        schemas: Default::default(),
    }
}

/// The arguments of an `inputSchema`: its `properties`, required per `required`. Each argument's
/// description (a `$ref`'d schema's, read out of the store, too) is a copy, weighed against `budget`.
fn params(input: &Value, refs: &Schemas, budget: &mut BuildBudget, at: ByteRange) -> Vec<Param> {
    let required: HashSet<&str> =
        input.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let Some(properties) = input.get("properties").and_then(Value::as_object) else { return Vec::new() };
    let mut taken = names::Unique::default();
    let mut params = Vec::new();
    for (wire, schema) in properties {
        let name = taken.claim(&names::python_param(wire), "_");
        let example = schema
            .get("examples")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
            .or_else(|| schema.get("example"))
            .cloned();
        params.push(Param {
            name,
            wire_name: wire.clone(),
            location: ParamLocation::Argument,
            required: required.contains(wire.as_str()),
            description: budget.keep_text(
                schema::description(refs, schema)
                    .or_else(|| schema.get("title").and_then(Value::as_str))
                    .unwrap_or_default(),
                at,
            ),
            schema: schema.clone(),
            default: schema.get("default").cloned(),
            example,
        });
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn listed() -> Vec<Value> {
        vec![
            json!({
                "name": "get-sum",
                "description": "Returns the sum of two numbers",
                "inputSchema": {"type": "object", "properties": {
                    "a": {"type": "number", "description": "First number"},
                    "b": {"type": "number"},
                    "from": {"type": "string"},
                    "entityType": {"type": "string", "default": "person"}
                }, "required": ["a", "b"]},
                "annotations": {"readOnlyHint": true}
            }),
            json!({
                "name": "convert_time",
                "inputSchema": {"type": "object", "properties": {}},
                "outputSchema": {
                    "type": "object",
                    "properties": {"source": {"$ref": "#/$defs/TimeResult"}, "time_difference": {"type": "string"}},
                    "$defs": {"TimeResult": {"type": "object", "properties": {"timezone": {"type": "string"}}}}
                }
            }),
            json!({"name": "fetch", "title": "Fetch a URL", "outputSchema": {"type": "object", "properties": {"content": {"type": "string"}}}}),
            json!({"name": "get_sum", "inputSchema": {}}),
            json!({"description": "nameless"}),
        ]
    }

    #[test]
    fn listed_tools_become_tools() {
        let file = Path::new("chainsmith.toml");
        let loaded = tools_from_list(&listed(), "demo", file, ByteRange::new(3, 40));
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["get_sum", "convert_time", "fetch", "get_sum_2"]);
        let codes: Vec<&str> = loaded.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["name-collision", "invalid-protocol"]);

        let sum = &loaded.tools[0];
        assert_eq!(sum.transport, Transport::Mcp { tool: "get-sum".into() });
        assert_eq!(sum.source.kind, SourceKind::Mcp);
        assert_eq!(sum.source.tool.as_deref(), Some("get-sum"));
        assert_eq!(sum.source.range, ByteRange::new(3, 40));
        assert_eq!(sum.read_only(), Some(true));
        assert_eq!(*sum.response, None);
        let params: Vec<(&str, &str, bool)> =
            sum.params.iter().map(|p| (p.name.as_str(), p.wire_name.as_str(), p.required)).collect();
        assert_eq!(
            params,
            [("a", "a", true), ("b", "b", true), ("from_", "from", false), ("entity_type", "entityType", false)]
        );
        assert!(sum.params.iter().all(|p| p.location == ParamLocation::Argument));
        assert_eq!(sum.params[0].description, "First number");
        assert_eq!(sum.params[3].default, Some(json!("person")));

        let convert = &loaded.tools[1];
        let response = convert.response.as_ref().expect("real structure");
        let schema::KeyLookup::Declared(source) = schema::property(convert, response, "source") else { panic!() };
        let schema::KeyLookup::Declared(timezone) = schema::property(convert, source, "timezone") else { panic!() };
        assert_eq!(schema::types(convert, timezone), ["string"]);
        assert!(response.get("$defs").is_none());

        let fetch = &loaded.tools[2];
        // A text wrapper is a known object: `r["contnt"]` is caught before the run.
        let response = fetch.response.as_ref().expect("the declared wrapper");
        assert_eq!(schema::property(fetch, response, "contnt"), schema::KeyLookup::Missing);
        assert_eq!(schema::types(fetch, &response["properties"]["content"]), ["string"]);
        assert_eq!(fetch.description, "Fetch a URL");
        assert_eq!(fetch.read_only(), None);
    }

    #[test]
    fn recursive_refs_are_followed_to_any_depth() {
        let listed = [
            json!({"name": "tree", "outputSchema": {
                "$ref": "#/$defs/Node",
                "$defs": {"Node": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                }}}
            }}),
            json!({"name": "broken", "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Nope"}}}}),
        ];
        let loaded = tools_from_list(&listed, "demo", Path::new("chainsmith.toml"), ByteRange::new(0, 1));
        let tree = &loaded.tools[0];
        let mut node = tree.response.as_ref().unwrap();
        for _ in 0..40 {
            let schema::KeyLookup::Declared(children) = schema::property(tree, node, "children") else { panic!() };
            node = schema::items(tree, children).unwrap();
        }
        assert!(matches!(schema::property(tree, node, "name"), schema::KeyLookup::Declared(_)));
        assert_eq!(schema::property(tree, node, "nmae"), schema::KeyLookup::Missing);
        assert_eq!(loaded.schemas.len(), 1, "the recursive schema is stored once");
        // A reference that leads nowhere: the tool loads with its argument, that part unchecked,
        // and the user is told.
        assert_eq!(loaded.tools[1].name, "broken");
        assert_eq!(loaded.tools[1].params.len(), 1);
        let [d] = loaded.diagnostics.as_slice() else { panic!("{:?}", loaded.diagnostics) };
        assert!(d.message.contains("`#/$defs/Nope`"), "{}", d.message);
    }

    /// A server's answer whose tools' arguments all share one long description: each tool is a
    /// document of its own, and a bound per tool would let forty of them copy 40 × 40 times 64 KB
    /// out of a 2.6 MB answer.
    #[test]
    fn what_an_answers_tools_copy_is_bounded_by_the_whole_answer() {
        let long = "d".repeat(64 << 10);
        let listed: Vec<Value> = (0..40)
            .map(|t| {
                let properties: Map<String, Value> =
                    (0..40).map(|p| (format!("p{p}"), json!({"$ref": "#/$defs/Shared"}))).collect();
                json!({"name": format!("t{t}"), "inputSchema": {
                    "type": "object", "properties": properties,
                    "$defs": {"Shared": {"type": "string", "description": long}}
                }})
            })
            .collect();
        let loaded = tools_from_list(&listed, "demo", Path::new("chainsmith.toml"), ByteRange::new(0, 1));
        assert_eq!(loaded.tools.len(), 40, "every tool still loads");
        let copied: usize = loaded.tools.iter().flat_map(|t| &t.params).map(|p| p.description.len()).sum();
        let answer: usize = listed.iter().map(|t| t.to_string().len()).sum();
        assert!(
            copied <= 8 * answer + (64 << 20),
            "{copied} bytes of descriptions copied out of a {answer}-byte answer"
        );
        assert!(loaded.tools[0].params[0].description == long, "what fits is copied");
        let too_large: Vec<_> = loaded.diagnostics.iter().filter(|d| d.code == "protocol-too-large").collect();
        assert_eq!(too_large.len(), 1, "{:?}", loaded.diagnostics);
        assert!(too_large[0].message.contains("the server's `tools/list` answer holds"), "{}", too_large[0].message);
    }
}
