//! Trajectory files: what `chainsmith graph import` and `graph eval` read, told apart by content.
//!
//! - **RestBench task files**: `[{"query": …, "solution": ["GET /search/person", …]}]`. Each
//!   `METHOD /path` is mapped to the workspace tool whose HTTP transport has that method and path
//!   template. The data's known defects are repaired: stray spaces around an entry are trimmed, and
//!   a path whose parameter names differ from the spec's (`/person/{movie_id}/movie_credits`) is
//!   matched by its shape when exactly one operation has it. An entry that still maps to nothing is
//!   reported and its task is left out.
//! - **ToolBench DFSDT answer files** (`tree.tree`, `answer_generation`): the Action nodes on the
//!   path from the root to the `give_answer` Finish leaf, as function names `<api>_for_<tool>`,
//!   mapped to the workspace's tools by name. ToolBench cuts names to their last 64 characters:
//!   a 64-character name that is no tool is matched by suffix (then prefix) when exactly one tool
//!   fits. A run that gave up has no such leaf and yields no trajectory.
//! - **JSONL**: one JSON array of tool ids per line (or `{"tools": [...], "query": …}`).
//! - **Run traces** (`{program, calls: [...]}`): imported as runs, see [`super::trace`].

use std::collections::HashMap;

use serde_json::Value;

use super::Trajectory;
use super::trace::TraceSummary;
use crate::names;
use crate::toolset::{Catalog, Transport};

/// What kind of trajectory file a text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    RestBench,
    Dfsdt,
    Jsonl,
    Trace,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::RestBench => "restbench",
            Kind::Dfsdt => "toolbench-dfsdt",
            Kind::Jsonl => "jsonl",
            Kind::Trace => "trace",
        }
    }
}

/// A trajectory file, read and mapped to tool ids.
#[derive(Debug, Clone)]
pub struct Imported {
    pub kind: Kind,
    pub trajectories: Vec<Trajectory>,
    /// A trace file's run.
    pub trace: Option<TraceSummary>,
    /// Tasks (entries, lines) left out because a step maps to no tool.
    pub dropped: usize,
    /// Steps that needed a repair (trimmed, matched by shape or by a cut name).
    pub repaired: usize,
    /// One line per repair or problem, naming the entry.
    pub notes: Vec<String>,
}

impl Imported {
    fn new(kind: Kind) -> Self {
        Imported { kind, trajectories: Vec::new(), trace: None, dropped: 0, repaired: 0, notes: Vec::new() }
    }
}

/// How a step was mapped to a tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    Exact(String),
    /// Mapped after a repair, described.
    Repaired(String, String),
    Unknown(String),
}

/// Maps the names trajectory files use to the workspace's tool ids.
pub struct Resolver<'c> {
    catalog: &'c Catalog,
    /// (METHOD, path template) → ids.
    endpoints: HashMap<(String, String), Vec<String>>,
    /// (METHOD, path with every `{param}` as `{}`) → ids.
    shapes: HashMap<(String, String), Vec<String>>,
    /// bare tool name → ids.
    names: HashMap<String, Vec<String>>,
    /// Keep what maps to nothing as a node of its own (for `graph eval`) instead of dropping the task.
    pub keep_unknown: bool,
}

/// ToolBench's cut: function names keep their last 64 characters.
const TOOLBENCH_NAME_LIMIT: usize = 64;

impl<'c> Resolver<'c> {
    pub fn new(catalog: &'c Catalog) -> Self {
        let mut endpoints: HashMap<(String, String), Vec<String>> = HashMap::new();
        let mut shapes: HashMap<(String, String), Vec<String>> = HashMap::new();
        let mut names: HashMap<String, Vec<String>> = HashMap::new();
        for tool in catalog.tools() {
            if let Transport::Http { method, path } = &tool.transport {
                let method = method.to_ascii_uppercase();
                let path = normalise_path(path);
                endpoints.entry((method.clone(), path.clone())).or_default().push(tool.id());
                shapes.entry((method, path_shape(&path))).or_default().push(tool.id());
            }
            names.entry(tool.name.clone()).or_default().push(tool.id());
        }
        Resolver { catalog, endpoints, shapes, names, keep_unknown: false }
    }

    /// `METHOD /path` (RestBench) → a tool.
    pub fn endpoint(&self, entry: &str) -> Resolved {
        let trimmed = entry.trim();
        let mut words = trimmed.split_whitespace();
        let (Some(method), Some(path), None) = (words.next(), words.next(), words.next()) else {
            return Resolved::Unknown(format!("`{entry}` is not `METHOD /path`"));
        };
        let method = method.to_ascii_uppercase();
        let path = normalise_path(path);
        let spaced = trimmed != entry;
        if let Some([id]) = self.endpoints.get(&(method.clone(), path.clone())).map(Vec::as_slice) {
            return if spaced {
                Resolved::Repaired(id.clone(), format!("`{entry}` has stray spaces; trimmed"))
            } else {
                Resolved::Exact(id.clone())
            };
        }
        if let Some(ids) = self.endpoints.get(&(method.clone(), path.clone()))
            && ids.len() > 1
        {
            return Resolved::Unknown(format!("`{method} {path}` is ambiguous: {}", ids.join(", ")));
        }
        match self.shapes.get(&(method.clone(), path_shape(&path))).map(Vec::as_slice) {
            Some([id]) => {
                let declared = self.catalog.find(id).ok().and_then(|t| t.endpoint()).unwrap_or_else(|| id.clone());
                Resolved::Repaired(
                    id.clone(),
                    format!("`{method} {path}` is not in the spec; its shape matches `{declared}` ({id})"),
                )
            }
            _ => Resolved::Unknown(format!("`{method} {path}` is no operation of the workspace")),
        }
    }

    /// A ToolBench function name (`<api>_for_<tool>`, possibly cut to 64 characters) → a tool.
    pub fn function(&self, name: &str) -> Resolved {
        let name = name.trim();
        if let Some([id]) = self.names.get(name).map(Vec::as_slice) {
            return Resolved::Exact(id.clone());
        }
        if let Some(ids) = self.names.get(name)
            && ids.len() > 1
        {
            return Resolved::Unknown(format!("`{name}` is ambiguous: {}", ids.join(", ")));
        }
        // Names may also arrive un-standardised (`Get Word` for `get_word_for_…`).
        let standard = names::toolbench_standardize(name);
        if standard != name
            && let Some([id]) = self.names.get(&standard).map(Vec::as_slice)
        {
            return Resolved::Repaired(id.clone(), format!("`{name}` standardised to `{standard}`"));
        }
        if name.chars().count() == TOOLBENCH_NAME_LIMIT {
            for (how, matches) in [("suffix", true), ("prefix", false)] {
                let found: Vec<&String> = self
                    .names
                    .iter()
                    .filter(|(n, _)| if matches { n.ends_with(name) } else { n.starts_with(name) })
                    .flat_map(|(_, ids)| ids)
                    .collect();
                if let [id] = found.as_slice() {
                    return Resolved::Repaired(
                        (*id).clone(),
                        format!("`{name}` is a name cut to 64 characters; matched by {how} to {id}"),
                    );
                }
            }
        }
        Resolved::Unknown(format!("`{name}` is no tool of the workspace"))
    }

    /// A tool id (`toolset.name`, or a bare name unique in the workspace) → a tool.
    pub fn id(&self, id: &str) -> Resolved {
        let trimmed = id.trim();
        match self.catalog.find(trimmed) {
            Ok(tool) if tool.id() == id => Resolved::Exact(id.to_string()),
            Ok(tool) => Resolved::Repaired(tool.id(), format!("`{id}` read as {}", tool.id())),
            Err(message) => Resolved::Unknown(message),
        }
    }
}

/// Path templates compare without a trailing slash.
fn normalise_path(path: &str) -> String {
    let path = path.trim();
    let path = path.split('?').next().unwrap_or(path);
    if path.len() > 1 { path.trim_end_matches('/').to_string() } else { path.to_string() }
}

/// `/person/{person_id}/movie_credits` → `/person/{}/movie_credits`.
fn path_shape(path: &str) -> String {
    path.split('/').map(|s| if s.starts_with('{') && s.ends_with('}') { "{}" } else { s }).collect::<Vec<_>>().join("/")
}

/// Reads a trajectory file of any supported kind. `Err` when the text is none of them.
pub fn read(text: &str, resolver: &Resolver<'_>) -> Result<Imported, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => {
            if items.iter().any(|i| i.get("solution").is_some()) {
                Ok(restbench(&items, resolver))
            } else if !items.is_empty() && items.iter().all(Value::is_string) {
                // A one-line JSONL file: one sequence.
                Ok(sequences(vec![("line 1".into(), Value::Array(items))], resolver))
            } else if items.iter().all(|i| i.is_array() || i.get("tools").is_some()) {
                let lines: Vec<(String, Value)> =
                    items.into_iter().enumerate().map(|(i, v)| (format!("item {i}"), v)).collect();
                Ok(sequences(lines, resolver))
            } else {
                Err("not a trajectory file: expected RestBench tasks ([{query, solution}]), a ToolBench DFSDT \
                     answer, JSONL tool-id sequences or a run trace"
                    .into())
            }
        }
        Ok(doc @ Value::Object(_)) => {
            if doc.pointer("/tree/tree").is_some() {
                dfsdt(&doc, resolver)
            } else if doc.get("calls").is_some() {
                let trace: TraceSummary = serde_json::from_value(doc).map_err(|e| format!("not a run trace: {e}"))?;
                let mut imported = Imported::new(Kind::Trace);
                let tools = trace.trajectory();
                if !tools.is_empty() {
                    imported.trajectories.push(Trajectory { tools, query: None });
                }
                imported.trace = Some(trace);
                Ok(imported)
            } else if doc.get("tools").is_some() {
                Ok(sequences(vec![("line 1".into(), doc)], resolver))
            } else {
                Err("not a trajectory file: a JSON object that is neither a ToolBench DFSDT answer (`tree`) \
                     nor a run trace (`calls`)"
                    .into())
            }
        }
        Ok(_) => Err("not a trajectory file".into()),
        Err(whole) => {
            let mut lines = Vec::new();
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(line) {
                    Ok(v) => lines.push((format!("line {}", i + 1), v)),
                    Err(e) if lines.is_empty() => {
                        return Err(format!(
                            "not a trajectory file: not JSON ({whole}) nor JSONL (line {}: {e})",
                            i + 1
                        ));
                    }
                    Err(e) => return Err(format!("line {}: not JSON: {e}", i + 1)),
                }
            }
            if lines.is_empty() {
                return Err("the file is empty".into());
            }
            Ok(sequences(lines, resolver))
        }
    }
}

/// Maps one task's steps; `None` (with a note) when a step maps to nothing and unknowns are not kept.
fn map_steps<'s>(
    label: &str,
    steps: impl IntoIterator<Item = &'s str>,
    resolve: impl Fn(&str) -> Resolved,
    keep_unknown: bool,
    imported: &mut Imported,
) -> Option<Vec<String>> {
    let mut tools = Vec::new();
    let mut unknown = Vec::new();
    for step in steps {
        match resolve(step) {
            Resolved::Exact(id) => tools.push(id),
            Resolved::Repaired(id, how) => {
                imported.repaired += 1;
                imported.notes.push(format!("{label}: {how}"));
                tools.push(id);
            }
            Resolved::Unknown(why) => {
                unknown.push(why);
                tools.push(step.trim().to_string());
            }
        }
    }
    if unknown.is_empty() {
        return Some(tools);
    }
    if keep_unknown {
        for why in unknown {
            imported.notes.push(format!("{label}: {why}; kept as a node of its own"));
        }
        return Some(tools);
    }
    imported.dropped += 1;
    imported.notes.push(format!("{label}: {}; the task is left out", unknown.join("; ")));
    None
}

fn restbench(items: &[Value], resolver: &Resolver<'_>) -> Imported {
    let mut imported = Imported::new(Kind::RestBench);
    for (i, item) in items.iter().enumerate() {
        let label = format!("#{i}");
        let Some(solution) = item.get("solution").and_then(Value::as_array) else {
            imported.dropped += 1;
            imported.notes.push(format!("{label}: no `solution` list; left out"));
            continue;
        };
        let steps: Vec<&str> = solution.iter().filter_map(Value::as_str).collect();
        if steps.len() != solution.len() {
            imported.dropped += 1;
            imported.notes.push(format!("{label}: `solution` holds something other than strings; left out"));
            continue;
        }
        if steps.is_empty() {
            continue;
        }
        let query = item.get("query").and_then(Value::as_str).map(str::to_string);
        if let Some(tools) = map_steps(&label, steps, |s| resolver.endpoint(s), resolver.keep_unknown, &mut imported) {
            imported.trajectories.push(Trajectory { tools, query });
        }
    }
    imported
}

fn sequences(lines: Vec<(String, Value)>, resolver: &Resolver<'_>) -> Imported {
    let mut imported = Imported::new(Kind::Jsonl);
    for (label, value) in lines {
        let (steps, query) = match &value {
            Value::Array(items) => (Some(items), None),
            Value::Object(_) => (
                value.get("tools").or_else(|| value.get("trajectory")).and_then(Value::as_array),
                value.get("query").and_then(Value::as_str).map(str::to_string),
            ),
            _ => (None, None),
        };
        let Some(steps) = steps else {
            imported.dropped += 1;
            imported.notes.push(format!("{label}: expected a JSON array of tool ids; left out"));
            continue;
        };
        let ids: Vec<&str> = steps.iter().filter_map(Value::as_str).collect();
        if ids.len() != steps.len() {
            imported.dropped += 1;
            imported.notes.push(format!("{label}: every tool id must be a string; left out"));
            continue;
        }
        if ids.is_empty() {
            continue;
        }
        if let Some(tools) = map_steps(&label, ids, |s| resolver.id(s), resolver.keep_unknown, &mut imported) {
            imported.trajectories.push(Trajectory { tools, query });
        }
    }
    imported
}

/// The function names on the path from the root of a DFSDT tree to its `give_answer` leaf.
pub fn give_answer_path(tree: &Value) -> Option<Vec<String>> {
    fn walk<'v>(node: &'v Value, path: &mut Vec<&'v Value>) -> bool {
        path.push(node);
        if is_give_answer(node, path) {
            return true;
        }
        if let Some(children) = node.get("children").and_then(Value::as_array) {
            for child in children {
                if walk(child, path) {
                    return true;
                }
            }
        }
        path.pop();
        false
    }
    fn is_give_answer(node: &Value, path: &[&Value]) -> bool {
        let parent_is_finish = path.len() >= 2 && {
            let parent = path[path.len() - 2];
            parent.get("node_type").and_then(Value::as_str) == Some("Action")
                && parent.get("description").and_then(Value::as_str).map(str::trim) == Some("Finish")
        };
        if !parent_is_finish || node.get("node_type").and_then(Value::as_str) != Some("Action Input") {
            return false;
        }
        let description = node.get("description").and_then(Value::as_str).unwrap_or("");
        match serde_json::from_str::<Value>(description) {
            Ok(args) => args.get("return_type").and_then(Value::as_str) == Some("give_answer"),
            // Answers are sometimes cut mid-string: the marker is still there.
            Err(_) => description.contains("\"give_answer\""),
        }
    }
    let mut path = Vec::new();
    if !walk(tree, &mut path) {
        return None;
    }
    Some(
        path.iter()
            .filter(|n| n.get("node_type").and_then(Value::as_str) == Some("Action"))
            .filter_map(|n| n.get("description").and_then(Value::as_str))
            .map(str::trim)
            .filter(|name| *name != "Finish" && !name.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

fn dfsdt(doc: &Value, resolver: &Resolver<'_>) -> Result<Imported, String> {
    let mut imported = Imported::new(Kind::Dfsdt);
    let tree = doc.pointer("/tree/tree").ok_or("no `tree.tree`")?;
    let query = doc.pointer("/answer_generation/query").and_then(Value::as_str).map(str::to_string);
    let Some(steps) = give_answer_path(tree) else {
        let finish = doc.pointer("/answer_generation/finish_type").and_then(Value::as_str).unwrap_or("unknown");
        imported.notes.push(format!("no `give_answer` leaf in the tree (finish_type {finish}): no trajectory"));
        return Ok(imported);
    };
    if steps.is_empty() {
        imported.notes.push("the `give_answer` leaf follows no tool call: no trajectory".into());
        return Ok(imported);
    }
    if let Some(tools) = map_steps(
        "the give_answer path",
        steps.iter().map(String::as_str),
        |s| resolver.function(s),
        resolver.keep_unknown,
        &mut imported,
    ) {
        imported.trajectories.push(Trajectory { tools, query });
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_ignore_parameter_names() {
        assert_eq!(path_shape("/person/{movie_id}/movie_credits"), "/person/{}/movie_credits");
        assert_eq!(normalise_path(" /search/movie/ "), "/search/movie");
        assert_eq!(normalise_path("/"), "/");
    }

    #[test]
    fn the_give_answer_path_skips_abandoned_branches() {
        let tree = json!({"node_type": "Action Input", "description": "", "children": [
            {"node_type": "Action", "description": "a_for_x", "children": [
                {"node_type": "Action Input", "description": "{}", "children": [
                    {"node_type": "Action", "description": "b_for_x", "children": [
                        {"node_type": "Action", "description": "Finish", "children": [
                            {"node_type": "Action Input", "description": "{\"return_type\": \"give_up_and_restart\"}", "children": []}]}]}]}]},
            {"node_type": "Thought", "description": "again", "children": [
                {"node_type": "Action", "description": "c_for_x", "children": [
                    {"node_type": "Action Input", "description": "{}", "children": [
                        {"node_type": "Action", "description": "Finish", "children": [
                            {"node_type": "Action Input", "description": "{\"return_type\": \"give_answer\", \"final_answer\": \"…", "children": []}]}]}]}]}]});
        assert_eq!(give_answer_path(&tree), Some(vec!["c_for_x".to_string()]));
        assert_eq!(give_answer_path(&json!({"node_type": "Action Input", "description": "", "children": []})), None);
    }
}
