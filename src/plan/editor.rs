//! The data flow in the editor, with no model: what can feed a tool's parameter at a place in a
//! program — a response already held in a variable, or a call that produces the value — offered
//! by completion after `person_id=` and by the quick fix of `missing-argument`.
//!
//! Both read the same edges the planner reads ([`crate::toolset::dataflow`]), strongest first,
//! and fill a producing call's own arguments from the task the document states where the task
//! gives a fitting value, as plans do.

use crate::analysis::flow::missing_keywords;
use crate::analysis::ide::{Completion, CompletionKind};
use crate::analysis::{Analysis, Dialect, ToolCall};
use crate::text::ByteRange;
use crate::toolset::dataflow::Edge;
use crate::toolset::{Catalog, Tool, schema};

use super::python_literal;
use super::values::{self, TaskValues};

/// Producing calls offered for one parameter, strongest edge first: more would bury the first.
const CALLS_OFFERED: usize = 3;
/// Producers looked at before choosing the ones offered.
const CALLS_CONSIDERED: usize = 8;
/// What an argument the task fills (or leaves open) adds to (or takes from) a producing call's
/// edge weight when calls are ordered.
const FILLED_BONUS: f64 = 0.2;
/// Responses in scope offered for one parameter.
const IN_SCOPE_OFFERED: usize = 3;

/// One way to feed a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Feed<'f> {
    /// A response held in `variable` has the field: `found["results"][0]["id"]`.
    InScope { variable: String, expression: String, edge: &'f Edge },
    /// A call of `tool` produces it: `tmdb.search_person(query="Sofia Coppola")["results"][0]["id"]`.
    Call { call: ProducingCall, edge: &'f Edge },
}

/// A call that produces a value, written the way the document refers to its toolset.
#[derive(Debug, Clone, PartialEq)]
pub struct ProducingCall {
    /// `tmdb.search_person`, with the document's name for the toolset.
    pub callee: String,
    /// The tool's own name, the variable an inserted call assigns to.
    pub name: String,
    /// Each required argument: its keyword and its value, when the task gives one (as Python).
    pub arguments: Vec<(String, Option<String>)>,
    /// `["results"][0]["id"]`.
    pub subscripts: String,
}

impl ProducingCall {
    /// The call as text, with `...` where the task gives no value.
    pub fn text(&self) -> String {
        let arguments: Vec<String> =
            self.arguments.iter().map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("..."))).collect();
        format!("{}({})", self.callee, arguments.join(", "))
    }

    /// The call and its subscripts as a snippet: one tab stop per argument, given values as
    /// their placeholders' defaults.
    pub fn snippet(&self) -> String {
        let arguments: Vec<String> = self
            .arguments
            .iter()
            .enumerate()
            .map(|(i, (k, v))| match v {
                Some(v) => format!("{k}=${{{}:{}}}", i + 1, escape_snippet(v)),
                None => format!("{k}=${{{}:...}}", i + 1),
            })
            .collect();
        format!("{}({}){}", self.callee, arguments.join(", "), escape_snippet(&self.subscripts))
    }
}

/// What can feed `tool`'s parameter `param` at `offset` of a program: the responses held in
/// variables assigned before it first, then calls that produce the value, each strongest edge
/// first. `task` is the document's task, whose values fill a producing call's arguments.
pub fn feeds<'c>(
    analysis: &Analysis<'c>,
    catalog: &'c Catalog,
    tool: &Tool,
    param: &str,
    offset: usize,
    task: Option<&str>,
) -> Vec<Feed<'c>> {
    let flow = catalog.data_flow();
    let edges: Vec<&Edge> = flow.producers(&tool.id(), param).collect();
    if edges.is_empty() {
        return Vec::new();
    }
    let held = responses_held(analysis, offset);
    let mut out = Vec::new();
    for edge in &edges {
        for (variable, from) in &held {
            if **from == *edge.from && out.len() < IN_SCOPE_OFFERED {
                out.push(Feed::InScope {
                    variable: variable.clone(),
                    expression: format!("{variable}{}", edge.field.subscripts()),
                    edge,
                });
            }
        }
    }
    let task_values = task.map(|task| values::of(task, &super::api_names(catalog)));
    let mut calls: Vec<(f64, ProducingCall, &Edge)> = Vec::new();
    for edge in edges {
        if calls.len() == CALLS_CONSIDERED {
            break;
        }
        if *edge.from == *tool.id() || calls.iter().any(|(_, _, e)| e.from == edge.from) {
            continue;
        }
        let Ok(producer) = catalog.find(&edge.from) else { continue };
        let Some(call) = producing_call(analysis, catalog, producer, edge, task_values.as_ref()) else { continue };
        // A call the task can fill in beats one that needs values nobody has given.
        let filled = call.arguments.iter().filter(|(_, v)| v.is_some()).count() as f64;
        let unfilled = call.arguments.len() as f64 - filled;
        calls.push((edge.weight + FILLED_BONUS * filled - FILLED_BONUS * unfilled, call, edge));
    }
    calls.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.extend(calls.into_iter().take(CALLS_OFFERED).map(|(_, call, edge)| Feed::Call { call, edge }));
    out
}

/// One quick fix: a title and the edits it makes, in the document's byte offsets.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<(ByteRange, String)>,
}

/// The fixes of a module-dialect call that lacks required arguments: pass a field of a response
/// already held, or insert the call that produces the values above the statement (one producer
/// feeding every missing argument it can) and pass its fields.
pub fn missing_argument_fixes(
    analysis: &Analysis<'_>,
    text: &str,
    catalog: &Catalog,
    call: &ToolCall<'_>,
    task: Option<&str>,
) -> Vec<Fix> {
    let Some(tool) = call.tool else { return Vec::new() };
    if call.dialect != Dialect::Module {
        return Vec::new();
    }
    let given: Vec<&str> = call.args.iter().map(|a| a.name.as_str()).collect();
    let missing: Vec<String> = missing_keywords(catalog, tool, &given).into_iter().map(|p| p.name.clone()).collect();
    let close = call.args_range.end.saturating_sub(1);
    let separator = if call.args.is_empty() { "" } else { ", " };
    let mut fixes = Vec::new();
    let mut by_producer: Vec<(ProducingCall, Vec<(String, String)>)> = Vec::new();
    for param in &missing {
        for feed in feeds(analysis, catalog, tool, param, call.range.start, task) {
            match feed {
                Feed::InScope { expression, .. } => fixes.push(Fix {
                    title: format!("Pass `{expression}` as `{param}`"),
                    edits: vec![(ByteRange::new(close, close), format!("{separator}{param}={expression}"))],
                }),
                Feed::Call { call: producing, edge } => {
                    match by_producer.iter_mut().find(|(p, _)| p.callee == producing.callee) {
                        Some((_, fed)) => {
                            if !fed.iter().any(|(p, _)| p == param) {
                                fed.push((param.clone(), edge.field.subscripts()));
                            }
                        }
                        None => {
                            let subscripts = producing.subscripts.clone();
                            by_producer.push((producing, vec![(param.clone(), subscripts)]));
                        }
                    }
                }
            }
        }
    }
    // The producer that feeds the most missing arguments first; ties keep the strongest edge's order.
    by_producer.sort_by_key(|(_, fed)| std::cmp::Reverse(fed.len()));
    let line_start = text[..call.statement_range.start.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let indent: String = text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect();
    for (producing, fed) in by_producer.into_iter().take(CALLS_OFFERED) {
        let variable = fresh_variable(text, &producing.name);
        let arguments: Vec<String> = fed.iter().map(|(p, subscripts)| format!("{p}={variable}{subscripts}")).collect();
        let names: Vec<String> = fed.iter().map(|(p, _)| format!("`{p}`")).collect();
        fixes.push(Fix {
            title: format!("Call `{}` above for {}", producing.name, names.join(", ")),
            edits: vec![
                (ByteRange::new(line_start, line_start), format!("{indent}{variable} = {}\n", producing.text())),
                (ByteRange::new(close, close), format!("{separator}{}", arguments.join(", "))),
            ],
        });
    }
    fixes
}

/// Variables holding a whole tool response at `offset`: the last call assigned to each name
/// before it, with the tool it came from.
fn responses_held(analysis: &Analysis<'_>, offset: usize) -> Vec<(String, String)> {
    let mut held: Vec<(String, String)> = Vec::new();
    for call in analysis.calls.iter().filter(|c| c.range.end <= offset) {
        let Some(variable) = &call.target else { continue };
        held.retain(|(v, _)| v != variable);
        if let Some(tool) = call.tool {
            held.push((variable.clone(), tool.id()));
        }
    }
    // The nearest first: the value the user most likely means.
    held.reverse();
    held
}

/// A call of `producer` reading `edge`'s field, if the document imports its toolset.
fn producing_call(
    analysis: &Analysis<'_>,
    catalog: &Catalog,
    producer: &Tool,
    edge: &Edge,
    task: Option<&TaskValues>,
) -> Option<ProducingCall> {
    let alias = analysis.imports.iter().find(|i| i.toolset == producer.toolset && i.known)?.alias.clone();
    let mut used = Vec::new();
    let arguments = missing_keywords(catalog, producer, &[])
        .into_iter()
        .map(|param| {
            let types = schema::types(catalog, &param.schema);
            let value = task.and_then(|t| {
                t.for_param(param, &types).into_iter().find(|(_, place)| place.is_none_or(|p| !used.contains(&p)))
            });
            let value = value.map(|(v, place)| {
                used.extend(place);
                python_literal(&v)
            });
            (param.name.clone(), value)
        })
        .collect();
    Some(ProducingCall {
        callee: format!("{alias}.{}", producer.name),
        name: producer.name.clone(),
        arguments,
        subscripts: edge.field.subscripts(),
    })
}

/// `name`, or `name_2`, `name_3`… when the program already uses it.
fn fresh_variable(text: &str, name: &str) -> String {
    let used = |candidate: &str| {
        text.match_indices(candidate).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + candidate.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !ident(before) && !ident(after)
        })
    };
    let mut candidate = name.to_string();
    let mut n = 2;
    while used(&candidate) {
        candidate = format!("{name}_{n}");
        n += 1;
    }
    candidate
}

fn escape_snippet(text: &str) -> String {
    text.replace('\\', "\\\\").replace('$', "\\$").replace('}', "\\}")
}

/// The feeds as completion items replacing `replace`, in their order (held values, then calls),
/// ahead of whatever else completion offers there.
pub fn completions(feeds: &[Feed<'_>], replace: ByteRange) -> Vec<Completion> {
    feeds
        .iter()
        .enumerate()
        .map(|(i, feed)| {
            let (label, insert_text, is_snippet, kind, edge) = match feed {
                Feed::InScope { expression, edge, .. } => {
                    (expression.clone(), expression.clone(), false, CompletionKind::HeldValue, edge)
                }
                Feed::Call { call, edge } => {
                    let shown: Vec<String> =
                        call.arguments.iter().map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("…"))).collect();
                    let label = format!("{}({}){}", call.callee, shown.join(", "), call.subscripts);
                    (label, call.snippet(), true, CompletionKind::ProducingCall, edge)
                }
            };
            Completion {
                label,
                kind,
                detail: format!("{} → {}", edge.from, edge.field),
                insert_text,
                is_snippet,
                replace,
                sort_text: format!("0{i:03}"),
                documentation: Some(evidence_markdown(edge)),
                tool_id: None,
                alias: None,
                via_alias: false,
            }
        })
        .collect()
}

/// Why an edge exists, for a completion's documentation and a hover.
pub fn evidence_markdown(edge: &Edge) -> String {
    let why: Vec<&str> = edge.evidence.iter().map(|e| &*e.why).collect();
    format!("`{}` of `{}` can feed `{}`: {}", edge.field, edge.from, edge.param, why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::parse::parse;
    use crate::toolset::test_support::openapi_catalog;

    fn fixes_for(program: &str) -> Vec<Fix> {
        let catalog = openapi_catalog("hub", super::super::tests::SPEC, None);
        let tree = parse(program);
        let analysis =
            crate::analysis::analyze(std::path::Path::new("p.py"), program, &tree, &catalog, &Default::default());
        let call = analysis.calls.iter().find(|c| c.tool.is_some_and(|t| t.name == "repos_pulls")).unwrap();
        let task = crate::analysis::ide::task_of(program, &tree);
        missing_argument_fixes(&analysis, program, &catalog, call, task.as_deref())
    }

    #[test]
    fn one_inserted_call_feeds_every_argument_it_can() {
        let program = "\"\"\"Pull requests of the top \\\"rust\\\" repository.\"\"\"\nfrom chainsmith.tools import hub\n\nsearch_repositories = 1\npulls = hub.repos_pulls()\n";
        let fixes = fixes_for(program);
        let fix = fixes
            .iter()
            .find(|f| f.title.starts_with("Call `search_repositories` above"))
            .unwrap_or_else(|| panic!("{fixes:#?}"));
        assert_eq!(fix.title, "Call `search_repositories` above for `owner`, `repo`");
        let mut text = program.to_string();
        let mut edits = fix.edits.clone();
        edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
        for (range, new) in edits {
            text.replace_range(range.start..range.end, &new);
        }
        // The name the program already uses is not taken over.
        assert!(
            text.contains("search_repositories_2 = hub.search_repositories(q=\"rust\")\npulls = hub.repos_pulls(owner=search_repositories_2[\"items\"][0][\"owner\"][\"login\"], repo=search_repositories_2[\"items\"][0][\"name\"])"),
            "{text}"
        );
    }

    #[test]
    fn a_snippet_has_a_tab_stop_per_argument_and_escapes_dollars() {
        let call = ProducingCall {
            callee: "t.find".into(),
            name: "find".into(),
            arguments: vec![("q".into(), Some("\"$x\"".into())), ("page".into(), None)],
            subscripts: "[\"id\"]".into(),
        };
        assert_eq!(call.snippet(), "t.find(q=${1:\"\\$x\"}, page=${2:...})[\"id\"]");
        assert_eq!(call.text(), "t.find(q=\"$x\", page=...)");
    }
}
