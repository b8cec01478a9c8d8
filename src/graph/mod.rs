//! ToolNet: a weighted directed graph of tool transitions that learns from use.
//!
//! Nodes are tools by their `toolset.name` id, plus [`START`] and [`END`]. The graph is built from
//! trajectories (tool-id sequences) and tool scores:
//!
//! - **Static construction** (ToolNet Eq. 5): the prior weight w⁽⁰⁾ of `vi → vj` is the number of
//!   `vi → vj` transitions over the number of transitions out of `vi` — the bigram frequency among
//!   the trajectories through `vi`. Every trajectory adds `start → first` and `last → end`.
//! - **Dynamic construction** (Eq. 6–8): an [`trace::Evaluator`] scores each tool a run used in
//!   [-3, 3]; the scores accumulate into s_i (Eq. 6), which `f(x) = αx + 1` (x ≥ 0) or `e^{αx}`
//!   (x < 0) maps to a positive number (Eq. 7); the weight is `w = β·w⁽⁰⁾ + (1−β)·Δw`, Δw being
//!   `f(s_j)` normalised over the successors of `vi` (Eq. 8). `[toolnet] alpha, beta` set α and β.
//!
//! Edges exist only where a transition was seen, so a node's successors stay few: that sparsity is
//! what makes ToolNet cheap to show to a model or a person. Weights shown to people are integers
//! (0–100), as ToolNet found models read them better too.
//!
//! Where the graph comes from: the workspace's programs (their call order), run traces
//! (`.chainsmith/runs/*.json`) and imported trajectory files (RestBench, ToolBench DFSDT answers,
//! JSONL), the last two kept in `.chainsmith/toolnet.json` ([`store`]). [`workspace`] puts them
//! together; [`editor`] answers the editor's questions; [`prediction`] measures next-tool prediction.

pub mod editor;
pub mod import;
pub mod prediction;
pub mod render;
pub mod store;
pub mod trace;
pub mod workspace;

use std::collections::{BTreeMap, BTreeSet};

use crate::config::ToolnetConfig;

/// The node every trajectory starts from.
pub const START: &str = "start";
/// The node every trajectory ends in.
pub const END: &str = "end";

/// Accumulated scores are kept within ±this bound. The paper lets s_i grow without limit; a bound
/// keeps a long healthy history from hiding a new outage, and a long outage from outliving its fix,
/// for more than a bounded number of runs.
pub const SCORE_BOUND: f64 = 10.0;
/// How many of a tool's latest run scores are kept for "recent reliability".
pub const RECENT_RUNS: usize = 8;

/// One tool-use trajectory: tool ids in the order they were used, and the task when known.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trajectory {
    pub tools: Vec<String>,
    pub query: Option<String>,
}

impl Trajectory {
    pub fn new<S: Into<String>>(tools: impl IntoIterator<Item = S>) -> Self {
        Trajectory { tools: tools.into_iter().map(Into::into).collect(), query: None }
    }
}

/// What the evaluators said about one tool, run after run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolScore {
    /// s_i of Eq. 6: the sum of the per-run scores, kept within ±[`SCORE_BOUND`].
    pub total: f64,
    /// How many scored runs used the tool.
    pub runs: u32,
    /// The latest per-run scores, oldest first (at most [`RECENT_RUNS`]).
    pub recent: Vec<f64>,
}

impl ToolScore {
    /// Whether the tool has been failing lately: its latest run scored below zero, and so does the
    /// sum of its last three runs (one bad run after good ones is not yet "lately").
    pub fn failing_lately(&self) -> bool {
        let Some(&last) = self.recent.last() else { return false };
        let lately: f64 = self.recent.iter().rev().take(3).sum();
        last < 0.0 && lately < 0.0
    }

    /// How many of the recent runs scored below zero.
    pub fn recent_failures(&self) -> usize {
        self.recent.iter().filter(|s| **s < 0.0).count()
    }
}

/// The ToolNet graph: transition counts (the static part) and tool scores (the dynamic part).
#[derive(Debug, Clone)]
pub struct ToolGraph {
    pub alpha: f64,
    pub beta: f64,
    /// from → to → number of transitions seen.
    counts: BTreeMap<String, BTreeMap<String, u64>>,
    /// to → the nodes with an edge into it.
    incoming: BTreeMap<String, BTreeSet<String>>,
    scores: BTreeMap<String, ToolScore>,
    /// Every node, including tools without edges (the workspace's tools) and start/end.
    nodes: BTreeSet<String>,
    /// How many trajectories were added.
    trajectories: usize,
}

impl Default for ToolGraph {
    fn default() -> Self {
        ToolGraph::new(&ToolnetConfig::default())
    }
}

impl ToolGraph {
    pub fn new(config: &ToolnetConfig) -> Self {
        let nodes = [START.to_string(), END.to_string()].into_iter().collect();
        ToolGraph {
            // A negative α would make Eq. 7 decreasing (and f negative); β is a mixing weight.
            alpha: config.alpha.max(0.0),
            beta: config.beta.clamp(0.0, 1.0),
            counts: BTreeMap::new(),
            incoming: BTreeMap::new(),
            scores: BTreeMap::new(),
            nodes,
            trajectories: 0,
        }
    }

    /// Adds a node without edges (a tool nobody has used yet).
    pub fn add_node(&mut self, id: &str) {
        if !self.nodes.contains(id) {
            self.nodes.insert(id.to_string());
        }
    }

    /// Adds one trajectory's transitions (Eq. 5's counts): `start → t1 → … → tn → end`.
    /// An empty trajectory adds nothing.
    pub fn add_trajectory<S: AsRef<str>>(&mut self, tools: &[S]) {
        if tools.is_empty() {
            return;
        }
        self.trajectories += 1;
        let mut previous = START;
        for tool in tools {
            let tool = tool.as_ref();
            self.add_transition(previous, tool, 1);
            previous = tool;
        }
        self.add_transition(previous, END, 1);
    }

    /// Adds `count` transitions `from → to`.
    pub fn add_transition(&mut self, from: &str, to: &str, count: u64) {
        if count == 0 {
            return;
        }
        self.add_node(from);
        self.add_node(to);
        *self.counts.entry(from.to_string()).or_default().entry(to.to_string()).or_default() += count;
        self.incoming.entry(to.to_string()).or_default().insert(from.to_string());
    }

    /// Accumulates one run's scores (Eq. 6). Each score is clamped to [-3, 3], the total to
    /// ±[`SCORE_BOUND`].
    pub fn record_scores<'a>(&mut self, scores: impl IntoIterator<Item = (&'a String, &'a f64)>) {
        for (tool, score) in scores {
            if !score.is_finite() {
                continue;
            }
            let score = score.clamp(-3.0, 3.0);
            self.add_node(tool);
            let entry = self.scores.entry(tool.clone()).or_default();
            entry.total = (entry.total + score).clamp(-SCORE_BOUND, SCORE_BOUND);
            entry.runs += 1;
            entry.recent.push(score);
            if entry.recent.len() > RECENT_RUNS {
                entry.recent.remove(0);
            }
        }
    }

    /// Eq. 7: `αx + 1` for x ≥ 0, `e^{αx}` below: positive, continuous, increasing.
    pub fn f(&self, x: f64) -> f64 {
        if x >= 0.0 { self.alpha * x + 1.0 } else { (self.alpha * x).exp() }
    }

    /// s_i of a node (0 for start, end and unscored tools).
    pub fn accumulated(&self, id: &str) -> f64 {
        self.scores.get(id).map_or(0.0, |s| s.total)
    }

    pub fn score(&self, id: &str) -> Option<&ToolScore> {
        self.scores.get(id)
    }

    pub fn scores(&self) -> impl Iterator<Item = (&str, &ToolScore)> {
        self.scores.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The number of `from → to` transitions seen.
    pub fn count(&self, from: &str, to: &str) -> u64 {
        self.counts.get(from).and_then(|m| m.get(to)).copied().unwrap_or(0)
    }

    /// Transitions out of `from`.
    pub fn out_count(&self, from: &str) -> u64 {
        self.counts.get(from).map_or(0, |m| m.values().sum())
    }

    /// Eq. 5: w⁽⁰⁾ = count(from → to) / count(from → ·); 0 without a transition.
    pub fn static_weight(&self, from: &str, to: &str) -> f64 {
        let total = self.out_count(from);
        if total == 0 { 0.0 } else { self.count(from, to) as f64 / total as f64 }
    }

    /// Eq. 8's Δw: f(s_to) normalised over the successors of `from`; 0 for a non-successor.
    pub fn delta_weight(&self, from: &str, to: &str) -> f64 {
        let Some(successors) = self.counts.get(from) else { return 0.0 };
        if !successors.contains_key(to) {
            return 0.0;
        }
        let sum: f64 = successors.keys().map(|k| self.f(self.accumulated(k))).sum();
        self.f(self.accumulated(to)) / sum
    }

    /// Eq. 8: w = β·w⁽⁰⁾ + (1−β)·Δw.
    pub fn weight(&self, from: &str, to: &str) -> f64 {
        self.beta * self.static_weight(from, to) + (1.0 - self.beta) * self.delta_weight(from, to)
    }

    /// Every successor of `from` with its weight (Eq. 8), heaviest first, ties by id.
    pub fn successors(&self, from: &str) -> Vec<(&str, f64)> {
        let Some(successors) = self.counts.get(from) else { return Vec::new() };
        let total: u64 = successors.values().sum();
        let sum_f: f64 = successors.keys().map(|k| self.f(self.accumulated(k))).sum();
        let mut out: Vec<(&str, f64)> = successors
            .iter()
            .map(|(to, &c)| {
                let w0 = c as f64 / total as f64;
                let dw = self.f(self.accumulated(to)) / sum_f;
                (to.as_str(), self.beta * w0 + (1.0 - self.beta) * dw)
            })
            .collect();
        sort_ranked(&mut out);
        out
    }

    /// Every node with an edge into `to`, with the weight of that edge, heaviest first.
    pub fn predecessors(&self, to: &str) -> Vec<(&str, f64)> {
        let Some(from) = self.incoming.get(to) else { return Vec::new() };
        let mut out: Vec<(&str, f64)> = from.iter().map(|f| (f.as_str(), self.weight(f, to))).collect();
        sort_ranked(&mut out);
        out
    }

    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(String::as_str)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.nodes.contains(id)
    }

    /// Every edge `(from, to, count)`, sorted.
    pub fn edges(&self) -> impl Iterator<Item = (&str, &str, u64)> {
        self.counts.iter().flat_map(|(from, m)| m.iter().map(move |(to, &c)| (from.as_str(), to.as_str(), c)))
    }

    pub fn edge_count(&self) -> usize {
        self.counts.values().map(BTreeMap::len).sum()
    }

    pub fn trajectory_count(&self) -> usize {
        self.trajectories
    }
}

/// Heaviest first; equal weights by id, so every listing is stable.
fn sort_ranked(items: &mut [(&str, f64)]) {
    items.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
}

/// A weight in [0, 1] as the integer people see (0–100); an existing edge shows at least 1.
pub fn integer_weight(weight: f64) -> u32 {
    ((weight * 100.0).round() as u32).clamp(1, 100)
}

#[cfg(test)]
mod tests;
