//! `chainsmith plan "TASK"`: the planner's best chains for a task, with their scores and evidence;
//! `chainsmith plan --eval TASKS.json`: how often the gold solution of RestBench-style tasks is the
//! first plan, or among the first five. No model is involved.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::graph::ToolGraph;
use crate::jobs::{self, Workspace};
use crate::plan::{Plan, Planner};
use crate::toolset::dataflow::DataFlow;
use crate::toolset::{Catalog, Transport};

/// What `chainsmith plan` was asked.
pub struct PlanArgs {
    pub task: Option<String>,
    pub k: usize,
    pub json: bool,
    pub eval: Option<PathBuf>,
    pub tasks: Option<String>,
    /// Gold solutions that teach ToolNet (never the task being scored).
    pub history: Option<PathBuf>,
    pub history_tasks: Option<String>,
}

pub fn plan(root: Option<&Path>, args: PlanArgs) -> Result<u8> {
    let root = super::workspace_root(root, &[])?;
    let (config, catalog) = super::load_workspace(&root)?;
    let index = super::retrieval_index(&catalog, &config);
    if let Some(file) = &args.eval {
        return evaluate(&catalog, &config.toolnet, catalog.data_flow(), &index, file, &args);
    }
    let Some(task) = args.task.as_deref() else {
        bail!("give a task (`chainsmith plan \"TASK\"`) or --eval TASKS.json")
    };
    // ToolNet as the editor's planner has it: learnt from the workspace, unless gold solutions
    // are named instead.
    let toolnet = match &args.history {
        Some(file) => history_graph(&catalog, &config.toolnet, file, args.history_tasks.as_deref(), None)?,
        None => crate::graph::workspace::WorkspaceGraph::load(&config, &catalog).graph(),
    };
    let ws = Workspace {
        root,
        config: Arc::new(config),
        catalog: Arc::new(catalog),
        index: &index,
        toolnet: Some(toolnet),
        mcp: None,
        upstream: Vec::new(),
        learn: false,
    };
    let catalog = &ws.catalog;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match jobs::plan::plans(&ws, task, args.k) {
        Ok(plans) if args.json => {
            let all: Vec<Value> = plans.iter().map(|p| p.to_json(catalog)).collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&json!({"task": task, "plans": all}))?)?;
            Ok(0)
        }
        Ok(plans) => {
            for (i, plan) in plans.iter().enumerate() {
                write_plan(&mut out, i + 1, plan, catalog)?;
            }
            Ok(0)
        }
        Err(why) => {
            if args.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&json!({"task": task, "plans": [], "none": why.to_string()}))?
                )?;
            }
            eprintln!("chainsmith: no plan: {why}");
            Ok(1)
        }
    }
}

fn write_plan(out: &mut impl Write, rank: usize, plan: &Plan, catalog: &Catalog) -> std::io::Result<()> {
    writeln!(out, "#{rank}  score {:.2}  {}", plan.score, plan.path().join(" → "))?;
    for call in &plan.calls {
        for argument in &call.arguments {
            if let crate::plan::Source::Field { field, why, .. } = &argument.source {
                writeln!(out, "    {}.{} ← {field}: {why}", call.tool, argument.param)?;
            }
        }
    }
    writeln!(out, "    ({})", plan.reasons.join("; "))?;
    for line in plan.skeleton(catalog).lines() {
        writeln!(out, "    | {line}")?;
    }
    writeln!(out)
}

/// One RestBench-style task: its text and gold solution (`METHOD /path`, in order).
struct GoldTask {
    query: String,
    solution: Vec<String>,
}

fn read_gold(file: &Path) -> Result<Vec<GoldTask>> {
    let text = crate::files::read_text(file, crate::files::MAX_READ)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let value: Value = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let items = value.as_array().with_context(|| format!("{} is not a list of tasks", file.display()))?;
    Ok(items
        .iter()
        .map(|item| GoldTask {
            query: item.get("query").and_then(Value::as_str).unwrap_or("").to_string(),
            solution: item
                .get("solution")
                .and_then(Value::as_array)
                .map(|steps| steps.iter().filter_map(Value::as_str).map(normalise_step).collect())
                .unwrap_or_default(),
        })
        .collect())
}

/// `" GET /movie/popular "` → `"GET /movie/popular"` (RestBench's own files have stray spaces).
fn normalise_step(step: &str) -> String {
    step.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// ToolNet learnt from the gold solutions of `file`'s tasks in `range`, leaving out `except`.
fn history_graph(
    catalog: &Catalog,
    config: &crate::config::ToolnetConfig,
    file: &Path,
    range: Option<&str>,
    except: Option<(&Path, usize)>,
) -> Result<ToolGraph> {
    let tasks = read_gold(file)?;
    let range = super::eval::task_range(range, tasks.len())?;
    let by_endpoint = endpoints(catalog);
    let mut graph = ToolGraph::new(config);
    let same_file = except.is_some_and(|(f, _)| super::same_file(f, file));
    for i in range {
        if same_file && except.is_some_and(|(_, e)| e == i) {
            continue;
        }
        // A step this workspace does not have would join its neighbours into a false transition.
        let ids: Option<Vec<&String>> = tasks[i].solution.iter().map(|s| by_endpoint.get(s)).collect();
        if let Some(ids) = ids {
            graph.add_trajectory(&ids);
        }
    }
    Ok(graph)
}

fn endpoints(catalog: &Catalog) -> std::collections::HashMap<String, String> {
    catalog
        .tools()
        .filter_map(|t| match &t.transport {
            Transport::Http { method, path } => Some((format!("{} {path}", method.to_ascii_uppercase()), t.id())),
            _ => None,
        })
        .collect()
}

fn evaluate(
    catalog: &Catalog,
    toolnet: &crate::config::ToolnetConfig,
    flow: &DataFlow,
    index: &crate::toolset::index::CatalogIndex,
    file: &Path,
    args: &PlanArgs,
) -> Result<u8> {
    let tasks = read_gold(file)?;
    let range = super::eval::task_range(args.tasks.as_deref(), tasks.len())?;
    if range.is_empty() {
        bail!("no task in {} in that range", file.display());
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let (mut top1, mut top5, mut scored) = (0usize, 0usize, 0usize);
    let mut records = Vec::new();
    for i in range {
        let task = &tasks[i];
        if task.query.is_empty() || task.solution.is_empty() {
            continue;
        }
        let history = match &args.history {
            Some(h) => Some(history_graph(catalog, toolnet, h, args.history_tasks.as_deref(), Some((file, i)))?),
            None => None,
        };
        let planner = Planner { catalog, flow, index, toolnet: history.as_ref() };
        let started = std::time::Instant::now();
        let plans = planner.plans(&task.query, 5.max(args.k));
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let paths: Vec<Vec<String>> = plans.as_ref().map(|ps| ps.iter().map(Plan::path).collect()).unwrap_or_default();
        let rank = paths.iter().position(|p| *p == task.solution);
        scored += 1;
        top1 += usize::from(rank == Some(0));
        top5 += usize::from(rank.is_some_and(|r| r < 5));
        let first = paths.first().map(|p| p.join(" → ")).unwrap_or_else(|| match &plans {
            Err(why) => format!("no plan: {why}"),
            Ok(_) => String::new(),
        });
        if args.json {
            records.push(
                json!({"index": i, "query": task.query, "gold": task.solution, "rank": rank, "plans": paths, "ms": ms}),
            );
        } else {
            let mark = |hit: bool| if hit { "✓" } else { "✗" };
            writeln!(
                out,
                "#{i:03} top-1 {} top-5 {}  {}\n      gold:  {}\n      first: {first}",
                mark(rank == Some(0)),
                mark(rank.is_some_and(|r| r < 5)),
                task.query,
                task.solution.join(" → ")
            )?;
        }
    }
    let percent = |n: usize| if scored == 0 { 0.0 } else { 100.0 * n as f64 / scored as f64 };
    if args.json {
        let report = json!({"tasks": records, "top1": percent(top1), "top5": percent(top5)});
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(0);
    }
    writeln!(out, "top-1 {:.2}", percent(top1))?;
    writeln!(out, "top-5 {:.2}", percent(top5))?;
    Ok(0)
}
