//! `chainsmith eval`: benchmark tasks run through exactly what a user's `generate` does (the same
//! job, [`crate::jobs::chain`]) —
//! retrieval, the ATC draft with static feedback, runs, attributable reflection, the DFSDT search
//! with its judge — against the workspace's tools (or a mock of them, [`crate::mock`]), scored
//! against each task's gold tools.
//!
//! Measures per task (ATC's, RestBench's): whether the best program ran without error
//! (`executable`), whether the judge took its output as an answer (`solved`), **Path** — the share
//! of the gold solution's tools the program called — and **Prec** — the share of the tools it
//! called that are gold. "Called" is the tools of the best program's run when it ran, else of its
//! static analysis. Path and Prec credit a program's tools also when it failed, so the summary
//! also gives both **over programs that ran** (a task whose best program failed counts 0): a
//! revision that trades a wide failing program for a narrow running one lowers Path and raises
//! these. Also: static problems in the model's first program and in its last,
//! reflections (revision nodes), DFSDT nodes, LLM calls, tokens and wall time.
//!
//! Beside the means, the table compares each variant with the first one task by task (higher /
//! lower Path, with a sign test), so an ablation row says whether its difference is more than the
//! model's sampling.
//!
//! ToolNet (the candidates' expansion, the planner's transitions) knows only what the user names
//! with `--history`: the gold solutions of other tasks — never the tasks being scored, nor other
//! folds of the file being scored — so a figure on a new API measures what a user with a new API
//! gets. Runs during an evaluation teach the workspace nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::generate::retrieve::Query;
use crate::generate::search::{self, Kind, Settings, Verdict};
use crate::graph::ToolGraph;
use crate::jobs::chain::{self, ChainRequest, Finished, Goal, Options};
use crate::jobs::{Silent, Workspace};
use crate::runtime::Cancel;
use crate::toolset::Catalog;
use crate::toolset::index::CatalogIndex;

/// One configuration of the system: the full system or an ablation.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Its name in reports (`full`, `no-static-feedback`, …).
    pub label: String,
    pub settings: Settings,
    /// Candidates shown to the model; `None`: every tool of the workspace.
    pub candidates: Option<usize>,
    /// Candidates expanded with ToolNet neighbours.
    pub toolnet: bool,
}

/// What one task came to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaskRecord {
    pub variant: String,
    pub index: usize,
    pub query: String,
    /// Gold tools in solution order.
    pub gold: Vec<String>,
    /// Tools the best program called, in order, without repeats.
    pub called: Vec<String>,
    pub program: Option<String>,
    pub executable: bool,
    pub solved: bool,
    pub path: f64,
    pub precision: f64,
    /// Static problems in the model's first program (`None`: it never wrote one).
    pub static_first: Option<usize>,
    /// Static problems in its last program (0 when one passed the checks).
    pub static_last: Option<usize>,
    pub reflections: usize,
    pub nodes: usize,
    pub llm_calls: u32,
    pub tokens: u64,
    /// Of `tokens`, the prompt's, and of those the ones the server reused from its prompt cache
    /// (absent from records of earlier versions: 0).
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub reused_tokens: u64,
    /// The planner's chain the model chose to complete (1 for the first; 0: none); `None` when it
    /// was offered none.
    #[serde(default)]
    pub plan_chosen: Option<usize>,
    pub wall_ms: u64,
    /// Why the search stopped without a solution, if it did.
    pub stop: Option<String>,
}

impl TaskRecord {
    /// Path where the best program ran without error, 0 where it did not.
    pub fn path_ran(&self) -> f64 {
        if self.executable { self.path } else { 0.0 }
    }

    /// Prec where the best program ran without error, 0 where it did not.
    pub fn precision_ran(&self) -> f64 {
        if self.executable { self.precision } else { 0.0 }
    }
}

/// Path and Prec of `called` against `gold`, both taken as sets of tool ids.
pub fn path_and_precision(gold: &[String], called: &[String]) -> (f64, f64) {
    let distinct = |ids: &[String]| {
        let mut ids = ids.to_vec();
        ids.sort();
        ids.dedup();
        ids
    };
    let (gold, called) = (distinct(gold), distinct(called));
    if gold.is_empty() {
        return (0.0, 0.0);
    }
    let hits = gold.iter().filter(|g| called.contains(g)).count() as f64;
    let precision = if called.is_empty() { 0.0 } else { hits / called.len() as f64 };
    (hits / gold.len() as f64, precision)
}

/// ToolNet learnt from the gold solutions of `history` (tasks other than those scored).
pub fn history_graph(history: &[Query], config: &Config) -> ToolGraph {
    let mut graph = ToolGraph::new(&config.toolnet);
    for trajectory in history.iter().filter_map(Query::trajectory) {
        graph.add_trajectory(trajectory);
    }
    graph
}

/// Where one evaluation runs.
pub struct Bench {
    pub root: PathBuf,
    pub config: Arc<Config>,
    pub catalog: Arc<Catalog>,
    /// The catalog's text index, built once for every task.
    pub index: Arc<CatalogIndex>,
    /// (base URL, stand-in) pairs: the mock's, or none to use the real APIs.
    pub upstream: Vec<(String, String)>,
    /// ToolNet from the history the user named ([`history_graph`]), or none.
    pub toolnet: Option<ToolGraph>,
}

impl Bench {
    /// Runs task `index` of `queries` under `variant`: the job a user's `generate` runs, with
    /// ToolNet from the named history only and the runs teaching the workspace nothing. Against
    /// the mock, tools that may change data run without asking: a mock is no real API, and a
    /// benchmark of write tasks would otherwise score nothing.
    pub async fn run_task(&self, queries: &[Query], index: usize, variant: &Variant) -> TaskRecord {
        let query = &queries[index];
        let started = Instant::now();
        let ws = Workspace {
            root: self.root.clone(),
            config: self.config.clone(),
            catalog: self.catalog.clone(),
            index: &self.index,
            toolnet: self.toolnet.clone().filter(|_| variant.toolnet),
            mcp: None,
            upstream: self.upstream.clone(),
            learn: false,
        };
        let options = Options {
            settings: variant.settings.clone(),
            candidates: variant.candidates.unwrap_or(self.catalog.tool_count()),
        };
        let request = ChainRequest {
            goal: Goal::Generate { task: query.text.clone() },
            tools: Vec::new(),
            // Where `chainsmith generate` puts its program: the workspace root is its working folder.
            program: self.root.join("generated.py"),
            allow_writes: !self.upstream.is_empty(),
            cancel: Cancel::new(),
        };
        let prepared = match chain::prepare(&ws, request, options) {
            Ok(prepared) => prepared,
            Err(e) => return self.failed(query, index, variant, e.to_string()),
        };
        let Finished::Searched(searched) = prepared.run(&Silent).await else {
            unreachable!("only a fix finds its program already running")
        };
        let outcome = &searched.outcome;
        let best = outcome.best_node();
        let called = best.map(|b| called_tools(b, &self.catalog)).unwrap_or_default();
        let gold = if query.sequence.is_empty() { query.gold.clone() } else { query.sequence.clone() };
        let (path, precision) = path_and_precision(&gold, &called);
        TaskRecord {
            variant: variant.label.clone(),
            index,
            query: query.text.clone(),
            gold,
            called,
            program: best.map(|b| b.program.clone()),
            executable: best.is_some_and(|b| matches!(b.verdict, Some(Verdict::Solved(_) | Verdict::Unsolved(_)))),
            solved: outcome.solved,
            path,
            precision,
            static_first: outcome.static_checks.first().copied(),
            static_last: outcome.static_checks.last().copied(),
            reflections: outcome.nodes.iter().filter(|n| n.kind == Kind::Revision).count(),
            nodes: outcome.nodes.len().saturating_sub(1),
            llm_calls: searched.llm_calls,
            tokens: searched.usage.total(),
            prompt_tokens: searched.usage.prompt_tokens,
            reused_tokens: searched.usage.reused_tokens,
            plan_chosen: outcome.plan_chosen,
            wall_ms: started.elapsed().as_millis() as u64,
            stop: outcome.stop.as_ref().map(ToString::to_string),
        }
    }

    fn failed(&self, query: &Query, index: usize, variant: &Variant, why: String) -> TaskRecord {
        TaskRecord {
            variant: variant.label.clone(),
            index,
            query: query.text.clone(),
            gold: if query.sequence.is_empty() { query.gold.clone() } else { query.sequence.clone() },
            called: Vec::new(),
            program: None,
            executable: false,
            solved: false,
            path: 0.0,
            precision: 0.0,
            static_first: None,
            static_last: None,
            reflections: 0,
            nodes: 0,
            llm_calls: 0,
            tokens: 0,
            prompt_tokens: 0,
            reused_tokens: 0,
            plan_chosen: None,
            wall_ms: 0,
            stop: Some(why),
        }
    }
}

/// The tools a search node's program called: its run's calls when it ran, else its static calls.
fn called_tools(node: &search::Node, catalog: &Catalog) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    match &node.trace {
        Some(trace) if !trace.calls.is_empty() => {
            for call in &trace.calls {
                if !out.contains(&call.tool) {
                    out.push(call.tool.clone());
                }
            }
        }
        _ => {
            let tree = crate::analysis::parse::parse(&node.program);
            let analysis =
                crate::analysis::analyze(Path::new("chain.py"), &node.program, &tree, catalog, &Default::default());
            for id in crate::graph::workspace::program_tools(&analysis) {
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
    }
    out
}

/// Averages of a variant's records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub tasks: usize,
    pub executable: f64,
    pub solved: f64,
    pub path: f64,
    pub precision: f64,
    /// Path and Prec where the best program ran without error, 0 where it did not.
    pub path_ran: f64,
    pub precision_ran: f64,
    /// Tasks whose first program had static problems, and of those, how many ended without.
    pub static_first_bad: usize,
    pub static_fixed: usize,
    /// Tasks without any program.
    pub no_program: usize,
    pub reflections: f64,
    pub nodes: f64,
    pub llm_calls: f64,
    pub tokens: f64,
    /// The share of prompt tokens the server reused from its cache.
    pub reused: f64,
    /// Of the tasks offered the planner's chains, how many the model completed one of (the
    /// first, another), and how many it chose none.
    pub plan_first: usize,
    pub plan_other: usize,
    pub plan_none: usize,
    pub wall_s: f64,
    pub median_wall_s: f64,
}

pub fn summarize(records: &[&TaskRecord]) -> Summary {
    let n = records.len();
    if n == 0 {
        return Summary::default();
    }
    let mean = |f: &dyn Fn(&TaskRecord) -> f64| records.iter().map(|r| f(r)).sum::<f64>() / n as f64;
    Summary {
        tasks: n,
        executable: mean(&|r| f64::from(u8::from(r.executable))),
        solved: mean(&|r| f64::from(u8::from(r.solved))),
        path: mean(&|r| r.path),
        precision: mean(&|r| r.precision),
        path_ran: mean(&TaskRecord::path_ran),
        precision_ran: mean(&TaskRecord::precision_ran),
        static_first_bad: records.iter().filter(|r| r.static_first.is_some_and(|s| s > 0)).count(),
        static_fixed: records
            .iter()
            .filter(|r| r.static_first.is_some_and(|s| s > 0) && r.static_last == Some(0))
            .count(),
        no_program: records.iter().filter(|r| r.program.is_none()).count(),
        reflections: mean(&|r| r.reflections as f64),
        nodes: mean(&|r| r.nodes as f64),
        llm_calls: mean(&|r| f64::from(r.llm_calls)),
        tokens: mean(&|r| r.tokens as f64),
        reused: {
            let prompt: u64 = records.iter().map(|r| r.prompt_tokens).sum();
            let reused: u64 = records.iter().map(|r| r.reused_tokens).sum();
            if prompt == 0 { 0.0 } else { reused as f64 / prompt as f64 }
        },
        plan_first: records.iter().filter(|r| r.plan_chosen == Some(1)).count(),
        plan_other: records.iter().filter(|r| r.plan_chosen.is_some_and(|c| c > 1)).count(),
        plan_none: records.iter().filter(|r| r.plan_chosen == Some(0)).count(),
        wall_s: mean(&|r| r.wall_ms as f64 / 1000.0),
        median_wall_s: {
            let mut walls: Vec<u64> = records.iter().map(|r| r.wall_ms).collect();
            walls.sort_unstable();
            let middle = walls.len() / 2;
            let ms = if walls.len() % 2 == 1 {
                walls[middle] as f64
            } else {
                (walls[middle - 1] + walls[middle]) as f64 / 2.0
            };
            ms / 1000.0
        },
    }
}

/// The summary table: a row per variant, in the order they first appear.
pub fn table(records: &[TaskRecord]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut by_variant: BTreeMap<&str, Vec<&TaskRecord>> = BTreeMap::new();
    for r in records {
        if !order.contains(&r.variant.as_str()) {
            order.push(&r.variant);
        }
        by_variant.entry(&r.variant).or_default().push(r);
    }
    let mut out = String::from(
        "| variant | tasks | exec % | solved % | Path % | Prec % | Path ran % | Prec ran % | first program with static errors → fixed | no program | plan chosen: first / other / none | reflections | DFSDT nodes | LLM calls | tokens | prompt reused % | wall s | median wall s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for variant in &order {
        let s = summarize(&by_variant[variant]);
        out.push_str(&format!(
            "| {variant} | {} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {} → {} | {} | {} / {} / {} | {:.2} | {:.2} | {:.1} | {:.0} | {:.1} | {:.0} | {:.0} |\n",
            s.tasks,
            100.0 * s.executable,
            100.0 * s.solved,
            100.0 * s.path,
            100.0 * s.precision,
            100.0 * s.path_ran,
            100.0 * s.precision_ran,
            s.static_first_bad,
            s.static_fixed,
            s.no_program,
            s.plan_first,
            s.plan_other,
            s.plan_none,
            s.reflections,
            s.nodes,
            s.llm_calls,
            s.tokens,
            100.0 * s.reused,
            s.wall_s,
            s.median_wall_s
        ));
    }
    if let Some((reference, others)) = order.split_first()
        && !others.is_empty()
    {
        out.push_str(&paired_table(reference, others, &by_variant));
    }
    out
}

/// Per-task comparisons with the first variant: on 30 tasks one task moves a mean by several
/// points, so a difference of means alone cannot tell a lever from the model's sampling.
fn paired_table(reference: &str, others: &[&str], by_variant: &BTreeMap<&str, Vec<&TaskRecord>>) -> String {
    let mut out = format!(
        "\nPer task against `{reference}`, on the tasks both answered (ties left out; p: two-sided sign test):\n\n| variant | tasks | Path higher / lower | p | Path ran higher / lower | p |\n|---|---|---|---|---|---|\n"
    );
    for variant in others {
        let pairs: Vec<(&TaskRecord, &TaskRecord)> = by_variant[variant]
            .iter()
            .filter_map(|r| by_variant[reference].iter().find(|f| f.index == r.index).map(|f| (*r, *f)))
            .collect();
        let count = |metric: &dyn Fn(&TaskRecord) -> f64| {
            let higher = pairs.iter().filter(|(r, f)| metric(r) > metric(f)).count();
            let lower = pairs.iter().filter(|(r, f)| metric(r) < metric(f)).count();
            (higher, lower, sign_test(higher, lower))
        };
        let (path_higher, path_lower, path_p) = count(&|r| r.path);
        let (ran_higher, ran_lower, ran_p) = count(&TaskRecord::path_ran);
        out.push_str(&format!(
            "| {variant} | {} | {path_higher} / {path_lower} | {path_p:.2} | {ran_higher} / {ran_lower} | {ran_p:.2} |\n",
            pairs.len()
        ));
    }
    out
}

/// Two-sided sign test: the chance of a split at least as uneven as `wins` to `losses` when
/// either side is equally likely. Written out rather than taken from a statistics crate: it is one
/// binomial tail.
pub fn sign_test(wins: usize, losses: usize) -> f64 {
    let n = wins + losses;
    if n == 0 {
        return 1.0;
    }
    let mut term = 0.5f64.powi(n as i32); // C(n, 0) / 2^n
    let mut tail = 0.0;
    for k in 0..=wins.min(losses) {
        if k > 0 {
            term *= (n - k + 1) as f64 / k as f64;
        }
        tail += term;
    }
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_is_recall_of_gold_and_precision_of_called() {
        let gold = vec!["t.search_person".to_string(), "t.person_movie_credits".to_string()];
        let (path, precision) = path_and_precision(&gold, &["t.search_person".into(), "t.movie_latest".into()]);
        assert_eq!((path, precision), (0.5, 0.5));
        assert_eq!(path_and_precision(&gold, &[]), (0.0, 0.0));
        assert_eq!(path_and_precision(&gold, &gold.clone()), (1.0, 1.0));
    }

    #[test]
    fn the_history_graph_learns_the_order_of_each_solution() {
        let q = |tools: &[&str]| Query {
            text: "q".into(),
            gold: tools.iter().map(|t| t.to_string()).collect(),
            sequence: tools.iter().map(|t| t.to_string()).collect(),
            missing_steps: 0,
        };
        // `t.e → (a step the workspace lacks) → t.f`: t.e and t.f are not neighbours.
        let gap = Query { missing_steps: 1, ..q(&["t.e", "t.f"]) };
        let graph = history_graph(&[q(&["t.a", "t.b"]), q(&["t.c", "t.d"]), gap], &Config::default());
        assert!(graph.weight("t.a", "t.b") > 0.0);
        assert_eq!(graph.weight("t.b", "t.a"), 0.0);
        assert_eq!(graph.weight("t.a", "t.d"), 0.0);
        assert_eq!(graph.weight("t.e", "t.f"), 0.0, "a sequence with a gap teaches no transition");
    }

    #[test]
    fn the_table_has_a_row_per_variant() {
        let record = |variant: &str, path: f64, executable: bool| TaskRecord {
            variant: variant.into(),
            index: 0,
            query: "q".into(),
            gold: vec!["t.a".into()],
            called: vec!["t.a".into()],
            program: Some("p".into()),
            executable,
            solved: false,
            path,
            precision: 1.0,
            static_first: Some(2),
            static_last: Some(0),
            reflections: 1,
            nodes: 2,
            llm_calls: 4,
            tokens: 1000,
            prompt_tokens: 800,
            reused_tokens: if executable { 600 } else { 0 },
            plan_chosen: Some(if executable { 1 } else { 0 }),
            wall_ms: if executable { 2000 } else { 9000 },
            stop: None,
        };
        // The second program failed: its tools count for Path and Prec, not for the "ran" columns.
        let text = table(&[record("full", 1.0, true), record("full", 0.5, false), record("no-dfsdt", 0.0, true)]);
        let rows: Vec<&str> = text.lines().skip(2).take_while(|l| !l.is_empty()).collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert!(
            rows[0].starts_with("| full | 2 | 50.0 | 0.0 | 75.00 | 100.00 | 50.00 | 50.00 | 2 → 2 | 0 | 1 / 0 / 1 |"),
            "{text}"
        );
        // 600 of 1,600 prompt tokens reused; walls 2 s and 9 s.
        assert!(rows[0].ends_with("| 1000 | 37.5 | 6 | 6 |"), "{text}");
        assert!(rows[1].starts_with("| no-dfsdt | 1 |"), "{text}");
        // Task 0 is the only one both answered: the ablation's Path 0 is lower than the full 1.0 there.
        assert!(text.contains("| no-dfsdt | 1 | 0 / 1 | 1.00 | 0 / 1 | 1.00 |"), "{text}");
    }

    #[test]
    fn the_sign_test_is_a_two_sided_binomial_tail() {
        assert_eq!(sign_test(0, 0), 1.0);
        assert_eq!(sign_test(4, 4), 1.0);
        // 1 of 10: 2 * (1 + 10) / 1024.
        assert!((sign_test(1, 9) - 22.0 / 1024.0).abs() < 1e-12);
        assert!((sign_test(9, 1) - sign_test(1, 9)).abs() < 1e-12);
        assert!((sign_test(0, 5) - 2.0 / 32.0).abs() < 1e-12);
    }
}
