//! The planner: for a task in words, the chains of up to four calls the protocols allow, ranked.
//!
//! Types say which chains are *possible*: every required argument is a value the task gives (a
//! quoted string or a name, a number, an ordinal next to the word it counts), a field of an
//! earlier call's response that the data-flow graph ([`crate::toolset::dataflow`]) says can feed
//! it, or a default or enum value. Retrieval relevance and ToolNet's transitions say which are
//! *likely*. Chains are built backwards from the tools most relevant to the task, so the last
//! call is the one whose response answers it; enumeration has a budget, and a task with nothing
//! usable gets a clear "no plan" instead of a long wait.
//!
//! A plan is a list of calls and a typed skeleton program in the module dialect. Calls that may
//! change data are planned like reads but marked, so nothing runs them unasked.

pub mod values;

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::graph::ToolGraph;
use crate::toolset::dataflow::{DataFlow, FieldPath};
use crate::toolset::index::CatalogIndex;
use crate::toolset::{Catalog, Param, Tool, Transport, schema};
use values::TaskValues;

/// The longest chain planned.
pub const MAX_CALLS: usize = 4;
/// How many partial chains enumeration may build for one task before it stops with what it has.
pub const BUDGET: usize = 20_000;
/// The tools a chain may end in: the most relevant ones.
const FINAL_CANDIDATES: usize = 12;
/// Producers tried for one parameter, strongest edge first.
const PRODUCERS_PER_PARAM: usize = 6;

/// Where one argument's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A value the task states (`"Sofia Coppola"`, `2`).
    Task(Value),
    /// A field of the response of the call at this index of the plan.
    Field { call: usize, field: FieldPath, weight: f64, why: String },
    /// The parameter's default or a value of its enum.
    Default(Value),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Argument {
    pub param: String,
    pub source: Source,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool's id (`tmdb.search_person`).
    pub tool: String,
    pub arguments: Vec<Argument>,
    /// `METHOD /path` for HTTP tools.
    pub endpoint: Option<String>,
    /// The tool may change data: run only with the user's consent.
    pub writes: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub calls: Vec<Call>,
    pub score: f64,
    /// Why it ranks where it does, term by term.
    pub reasons: Vec<String>,
}

/// Why a task got no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPlan {
    #[error("no tool of the workspace is relevant to the task")]
    NothingRelevant,
    #[error(
        "no chain of at most {MAX_CALLS} calls gets every required argument from the task, a response or a default"
    )]
    NoChain,
}

/// What the planner reads: the catalog, its data flow, its text index and (optionally) ToolNet.
pub struct Planner<'a> {
    pub catalog: &'a Catalog,
    pub flow: &'a DataFlow,
    pub index: &'a CatalogIndex,
    pub toolnet: Option<&'a ToolGraph>,
}

/// A chain being built backwards: its calls in run order and the task values it used.
#[derive(Debug, Clone)]
struct Partial {
    calls: Vec<Call>,
    used: Vec<usize>,
    /// Edge weights of the fields it feeds.
    flow: Vec<f64>,
}

struct Search<'p, 'a> {
    planner: &'p Planner<'a>,
    values: TaskValues,
    task_words: Vec<String>,
    spent: usize,
}

impl<'a> Planner<'a> {
    /// The best `k` plans for `task`, best first.
    pub fn plans(&self, task: &str, k: usize) -> Result<Vec<Plan>, NoPlan> {
        let relevance = self.relevance(task);
        if relevance.is_empty() {
            return Err(NoPlan::NothingRelevant);
        }
        let mut search = Search {
            planner: self,
            values: values::of(task),
            task_words: crate::textsearch::tokens(task, true),
            spent: 0,
        };
        let mut finals: Vec<(&str, f64)> = relevance.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        finals.truncate(FINAL_CANDIDATES);
        let mut found: Vec<Partial> = Vec::new();
        for (id, _) in &finals {
            let Ok(tool) = self.catalog.find(id) else { continue };
            found.extend(search.chains_ending_in(tool, MAX_CALLS));
            if search.spent >= BUDGET {
                break;
            }
        }
        let mut plans: Vec<Plan> = found.into_iter().map(|p| self.score(p, &relevance, &search.values)).collect();
        plans.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.calls.len().cmp(&b.calls.len())));
        plans.dedup_by(|a, b| a.calls == b.calls);
        plans.truncate(k);
        if plans.is_empty() { Err(NoPlan::NoChain) } else { Ok(plans) }
    }

    /// Each tool's relevance to the task, scaled so the most relevant is 1, best first.
    fn relevance(&self, task: &str) -> Vec<(String, f64)> {
        let hits = self.index.search_task(task, self.index.len());
        let top = hits.first().map(|(_, s)| *s).unwrap_or(0.0).max(1e-9);
        hits.into_iter().map(|(id, s)| (id.to_string(), s / top)).collect()
    }

    fn score(&self, partial: Partial, relevance: &[(String, f64)], values: &TaskValues) -> Plan {
        let rel: HashMap<&str, f64> = relevance.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        let mut reasons = Vec::new();
        let calls = partial.calls;
        let last = calls.last().map(|c| c.tool.as_str()).unwrap_or("");
        let final_rel = rel.get(last).copied().unwrap_or(0.0);
        let others: Vec<f64> =
            calls[..calls.len() - 1].iter().map(|c| rel.get(c.tool.as_str()).copied().unwrap_or(0.0)).collect();
        let others_rel = if others.is_empty() { 1.0 } else { others.iter().sum::<f64>() / others.len() as f64 };
        let mut score = 2.0 * final_rel + others_rel;
        reasons.push(format!("relevance: last call {final_rel:.2}, earlier calls {others_rel:.2}"));
        let flow = if partial.flow.is_empty() { 1.0 } else { partial.flow.iter().product::<f64>() };
        score += flow;
        reasons.push(format!("data flow {flow:.2}"));
        let unused =
            values.names.len().saturating_sub(partial.used.iter().filter(|&&i| i < values.names.len()).count());
        if unused > 0 {
            score -= 0.75 * unused as f64;
            reasons.push(format!("{unused} name{} of the task unused", if unused == 1 { "" } else { "s" }));
        }
        score -= 0.15 * (calls.len() as f64 - 1.0);
        if let Some(graph) = self.toolnet {
            let mut previous = crate::graph::START;
            let mut transitions = 0.0;
            for call in &calls {
                transitions += graph.weight(previous, &call.tool);
                previous = &call.tool;
            }
            let transitions = transitions / calls.len() as f64;
            score += transitions;
            reasons.push(format!("ToolNet transitions {transitions:.2}"));
        }
        Plan { calls, score, reasons }
    }
}

impl Search<'_, '_> {
    /// Every chain of at most `room` calls whose last call is `tool`.
    fn chains_ending_in(&mut self, tool: &Tool, room: usize) -> Vec<Partial> {
        if room == 0 || self.spent >= BUDGET {
            return Vec::new();
        }
        self.spent += 1;
        let mut arguments: Vec<Vec<(Argument, Option<Partial>)>> = Vec::new();
        for param in tool.required() {
            let options = self.options_for(tool, param, room);
            if options.is_empty() {
                return Vec::new();
            }
            arguments.push(options);
        }
        // Each combination of the arguments' options, the producers' chains run first.
        let empty = Partial { calls: Vec::new(), used: Vec::new(), flow: Vec::new() };
        let mut combined: Vec<(Vec<Argument>, Partial)> = vec![(Vec::new(), empty)];
        for options in arguments {
            let mut next = Vec::new();
            for (args, partial) in &combined {
                for (argument, producer) in &options {
                    let mut partial = partial.clone();
                    let mut argument = argument.clone();
                    if let Some(producer) = producer {
                        if partial.calls.len() + producer.calls.len() + 1 > room {
                            continue;
                        }
                        let offset = partial.calls.len();
                        partial.calls.extend(producer.calls.iter().cloned().map(|c| shifted(c, offset)));
                        partial.used.extend(producer.used.iter().copied());
                        partial.flow.extend(producer.flow.iter().copied());
                        if let Source::Field { call, weight, .. } = &mut argument.source {
                            *call += offset;
                            partial.flow.push(*weight);
                        }
                    }
                    if let Source::Task(_) = argument.source
                        && let Some(i) = self.values.index_of(&argument)
                    {
                        if partial.used.contains(&i) {
                            continue;
                        }
                        partial.used.push(i);
                    }
                    let mut args = args.clone();
                    args.push(argument);
                    next.push((args, partial));
                    self.spent += 1;
                }
            }
            combined = next;
            if combined.is_empty() || self.spent >= BUDGET {
                return Vec::new();
            }
        }
        combined
            .into_iter()
            .map(|(arguments, mut partial)| {
                partial.calls.push(Call {
                    tool: tool.id(),
                    arguments,
                    endpoint: endpoint(tool),
                    writes: tool.read_only() != Some(true),
                });
                partial
            })
            .collect()
    }

    /// Where a required parameter's value may come from, each with the chain that produces it.
    fn options_for(&mut self, tool: &Tool, param: &Param, room: usize) -> Vec<(Argument, Option<Partial>)> {
        let mut out = Vec::new();
        let argument = |source| Argument { param: param.name.clone(), source };
        if let Some(values) = schema::enum_values(tool, &param.schema) {
            let value = values::pick_enum(values, &self.task_words).or_else(|| param.default.clone());
            if let Some(value) = value.or_else(|| values.first().cloned()) {
                out.push((argument(Source::Default(value)), None));
            }
            return out;
        }
        for value in self.values.for_param(param, &schema::types(tool, &param.schema)) {
            out.push((argument(Source::Task(value)), None));
        }
        if room > 1 {
            let edges: Vec<_> =
                self.planner.flow.producers(&tool.id(), &param.name).take(PRODUCERS_PER_PARAM).cloned().collect();
            for edge in edges {
                let Ok(producer) = self.planner.catalog.find(&edge.from) else { continue };
                let why = edge.evidence.iter().map(|e| e.why.as_str()).collect::<Vec<_>>().join("; ");
                for chain in self.chains_ending_in(producer, room - 1) {
                    let call = chain.calls.len() - 1;
                    let source =
                        Source::Field { call, field: edge.field.clone(), weight: edge.weight, why: why.clone() };
                    out.push((argument(source), Some(chain)));
                }
            }
        }
        if out.is_empty()
            && let Some(default) = &param.default
        {
            out.push((argument(Source::Default(default.clone())), None));
        }
        out
    }
}

/// A call moved `offset` places later in a plan: its field sources point there too.
fn shifted(mut call: Call, offset: usize) -> Call {
    for argument in &mut call.arguments {
        if let Source::Field { call, .. } = &mut argument.source {
            *call += offset;
        }
    }
    call
}

fn endpoint(tool: &Tool) -> Option<String> {
    match &tool.transport {
        Transport::Http { method, path } => Some(format!("{} {path}", method.to_ascii_uppercase())),
        _ => None,
    }
}

impl Plan {
    /// The plan as a program in the module dialect: one call per line, each argument a literal
    /// from the task, a subscript into an earlier response, or a default, then the last response
    /// printed.
    pub fn skeleton(&self, catalog: &Catalog) -> String {
        let mut toolsets: Vec<&str> =
            self.calls.iter().filter_map(|c| c.tool.split_once('.').map(|(t, _)| t)).collect();
        toolsets.sort();
        toolsets.dedup();
        let mut out = format!("from chainsmith.tools import {}\n\n", toolsets.join(", "));
        let mut names: Vec<String> = Vec::new();
        for call in &self.calls {
            let (toolset, name) = call.tool.split_once('.').unwrap_or(("", &call.tool));
            let mut var = name.to_string();
            let mut n = 2;
            while names.contains(&var) {
                var = format!("{name}_{n}");
                n += 1;
            }
            let arguments: Vec<String> = call
                .arguments
                .iter()
                .map(|a| {
                    let value = match &a.source {
                        Source::Task(v) | Source::Default(v) => python_literal(v),
                        Source::Field { call, field, .. } => format!("{}{}", names[*call], field.subscripts()),
                    };
                    format!("{}={value}", a.param)
                })
                .collect();
            if call.writes {
                out.push_str("# may change data: chainsmith asks before running this call\n");
            }
            let written = catalog.find(&call.tool).map(|t| t.name.clone()).unwrap_or_else(|_| name.to_string());
            out.push_str(&format!("{var} = {toolset}.{written}({})\n", arguments.join(", ")));
            names.push(var);
        }
        if let Some(last) = names.last() {
            out.push_str(&format!("print({last})\n"));
        }
        out
    }

    /// `GET /search/person → GET /person/{person_id}/movie_credits`, or the tool ids.
    pub fn path(&self) -> Vec<String> {
        self.calls.iter().map(|c| c.endpoint.clone().unwrap_or_else(|| c.tool.clone())).collect()
    }

    pub fn to_json(&self, catalog: &Catalog) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|c| {
                let arguments: BTreeMap<&str, Value> = c
                    .arguments
                    .iter()
                    .map(|a| {
                        let source = match &a.source {
                            Source::Task(v) => json!({"task": v}),
                            Source::Default(v) => json!({"default": v}),
                            Source::Field { call, field, weight, why } => {
                                json!({"call": call, "field": field.to_string(), "weight": weight, "evidence": why})
                            }
                        };
                        (a.param.as_str(), source)
                    })
                    .collect();
                json!({"tool": c.tool, "endpoint": c.endpoint, "writes": c.writes, "arguments": arguments})
            })
            .collect();
        json!({"score": self.score, "calls": calls, "reasons": self.reasons, "skeleton": self.skeleton(catalog)})
    }
}

fn python_literal(value: &Value) -> String {
    match value {
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}
