//! Retrieval's evaluation and ToolNet expansion. The ranking itself is the catalog's one text
//! index ([`CatalogIndex`]: field-weighted BM25 over identifier-aware tokens with AnyTool's
//! tool-level aggregation), shared with ToolNet's task relevance. `evaluate` scores it against
//! StableToolBench query files and RestBench task files; `expand` adds graph neighbours of the hits.

use std::collections::HashMap;

use serde_json::Value;

use crate::names;
pub use crate::toolset::index::{CatalogIndex, Options};
use crate::toolset::{Catalog, SourceKind, Transport};

/// One evaluation query: the task text and the ids of the tools that solve it.
#[derive(Debug, Clone)]
pub struct Query {
    pub text: String,
    pub gold: Vec<String>,
    /// The gold tools in solution order, when the file gives an order (RestBench); empty otherwise.
    pub sequence: Vec<String>,
    /// Solution steps the catalog has no tool for, left out of `sequence`: its neighbours are no
    /// transition, so ToolNet learns nothing from a sequence with a gap.
    pub missing_steps: usize,
}

impl Query {
    /// The order of tools ToolNet may learn from this query: its whole solution sequence, or, where
    /// the file gives no order, its gold tools; nothing when a solution step is missing.
    pub fn trajectory(&self) -> Option<&[String]> {
        match (self.missing_steps, self.sequence.is_empty()) {
            (0, false) => Some(&self.sequence),
            (0, true) => Some(&self.gold),
            _ => None,
        }
    }
}

/// Reads StableToolBench/ToolBench query files (`relevant APIs`) and RestBench task files
/// (`solution` paths), mapping gold entries to tool ids of the catalog. Entries that map to no
/// tool are counted, not fatal.
pub fn read_queries(value: &Value, catalog: &Catalog) -> (Vec<Query>, usize) {
    let mut queries = Vec::new();
    let mut unmapped = 0;
    let by_endpoint: HashMap<String, String> = catalog
        .tools()
        .filter_map(|t| match &t.transport {
            Transport::Http { method, path } => Some((format!("{} {}", method.to_ascii_uppercase(), path), t.id())),
            _ => None,
        })
        .collect();
    let by_toolbench: HashMap<String, String> =
        catalog.tools().filter(|t| t.source.kind == SourceKind::ToolBench).map(|t| (t.name.clone(), t.id())).collect();
    for item in value.as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let text = item.get("query").and_then(Value::as_str).unwrap_or("").to_string();
        let mut gold = Vec::new();
        let mut sequence = Vec::new();
        let mut missing_steps = 0;
        if let Some(solution) = item.get("solution").and_then(Value::as_array) {
            for step in solution.iter().filter_map(Value::as_str) {
                let step = step.split_whitespace().collect::<Vec<_>>().join(" ");
                match by_endpoint.get(&step) {
                    Some(id) => {
                        gold.push(id.clone());
                        sequence.push(id.clone());
                    }
                    None => {
                        unmapped += 1;
                        missing_steps += 1;
                    }
                }
            }
        }
        if let Some(relevant) = item.get("relevant APIs").and_then(Value::as_array) {
            for pair in relevant.iter().filter_map(Value::as_array) {
                let (Some(tool), Some(api)) =
                    (pair.first().and_then(Value::as_str), pair.get(1).and_then(Value::as_str))
                else {
                    continue;
                };
                match by_toolbench.get(&names::toolbench_tool(api, tool)) {
                    Some(id) => gold.push(id.clone()),
                    None => unmapped += 1,
                }
            }
        }
        gold.sort();
        gold.dedup();
        if !text.is_empty() && !gold.is_empty() {
            queries.push(Query { text, gold, sequence, missing_steps });
        }
    }
    (queries, unmapped)
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    pub ndcg1: f64,
    pub ndcg3: f64,
    pub ndcg5: f64,
    pub recall20: f64,
    pub queries: usize,
    /// Milliseconds per query (median, 99th percentile), where measured.
    pub ms_p50: f64,
    pub ms_p99: f64,
}

fn ndcg(ranked: &[String], gold: &[String], k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, id)| gold.contains(id))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..gold.len().min(k)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

/// ToolNet expansion: the graph neighbours of the best `seeds` hits join the ranking — successors
/// (what follows a hit) and predecessors (what leads to it: the search a detail tool needs) — with
/// the hit's score scaled by the transition weight, below the hit itself.
pub fn expand(
    mut ranked: Vec<(String, f64)>,
    graph: &crate::graph::ToolGraph,
    seeds: usize,
    per_seed: usize,
) -> Vec<(String, f64)> {
    let hits: Vec<(String, f64)> = ranked.iter().take(seeds).cloned().collect();
    for (hit, score) in hits {
        let neighbours = graph
            .successors(&hit)
            .into_iter()
            .take(per_seed)
            .chain(graph.predecessors(&hit).into_iter().take(per_seed));
        for (next, weight) in neighbours {
            if next == crate::graph::END || next == crate::graph::START {
                continue;
            }
            let proposed = score * EXPANSION_SHARE * weight;
            match ranked.iter_mut().find(|(id, _)| id == next) {
                Some(existing) => existing.1 += proposed,
                None => ranked.push((next.to_string(), proposed)),
            }
        }
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

/// How much of a hit's score a graph neighbour receives (times the transition weight).
const EXPANSION_SHARE: f64 = 0.5;

fn add_scores(s: &mut Scores, ranked: &[String], gold: &[String]) {
    s.ndcg1 += ndcg(ranked, gold, 1);
    s.ndcg3 += ndcg(ranked, gold, 3);
    s.ndcg5 += ndcg(ranked, gold, 5);
    s.recall20 += gold.iter().filter(|g| ranked.iter().take(20).any(|r| r == *g)).count() as f64 / gold.len() as f64;
}

/// NDCG@1/3/5 and recall@20 of the index over the queries (binary relevance).
pub fn evaluate(index: &CatalogIndex, queries: &[Query]) -> Scores {
    evaluate_ranking(queries, |text| index.search_task(text, 20).into_iter().map(|(id, _)| id.to_string()).collect())
}

/// NDCG@1/3/5 and recall@20 of any ranking of tool ids (its best 20 per task text), with the time
/// each ranking took.
pub fn evaluate_ranking(queries: &[Query], rank: impl Fn(&str) -> Vec<String>) -> Scores {
    let mut s = Scores { queries: queries.len(), ..Default::default() };
    let mut times = Vec::with_capacity(queries.len());
    for q in queries {
        let started = std::time::Instant::now();
        let ranked = rank(&q.text);
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        add_scores(&mut s, &ranked, &q.gold);
    }
    times.sort_by(f64::total_cmp);
    let at = |p: f64| times.get(((times.len() as f64 * p).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
    (s.ms_p50, s.ms_p99) = (at(0.5), at(0.99));
    s.average()
}

/// [`evaluate`] with ToolNet expansion, cross-validated: query `i` is in fold `i mod folds`, and each
/// fold's graph is built from the solution sequences of the other folds only. `None` when the
/// queries give no sequences (StableToolBench's gold sets are unordered).
pub fn evaluate_with_graph(
    index: &CatalogIndex,
    queries: &[Query],
    folds: usize,
    config: &crate::config::ToolnetConfig,
) -> Option<Scores> {
    if queries.iter().all(|q| q.sequence.is_empty()) {
        return None;
    }
    let mut s = Scores { queries: queries.len(), ..Default::default() };
    for fold in 0..folds {
        let mut graph = crate::graph::ToolGraph::new(config);
        for (i, q) in queries.iter().enumerate() {
            if i % folds != fold
                && !q.sequence.is_empty()
                && let Some(trajectory) = q.trajectory()
            {
                graph.add_trajectory(trajectory);
            }
        }
        for (_, q) in queries.iter().enumerate().filter(|(i, _)| i % folds == fold) {
            let hits: Vec<(String, f64)> =
                index.search_task(&q.text, 20).into_iter().map(|(id, s)| (id.to_string(), s)).collect();
            let ranked: Vec<String> = expand(hits, &graph, 3, 2).into_iter().map(|(id, _)| id).collect();
            add_scores(&mut s, &ranked, &q.gold);
        }
    }
    Some(s.average())
}

impl Scores {
    fn average(mut self) -> Scores {
        let n = self.queries.max(1) as f64;
        self.ndcg1 /= n;
        self.ndcg3 /= n;
        self.ndcg5 /= n;
        self.recall20 /= n;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndcg_is_standard() {
        let ranked: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(ndcg(&ranked, &["a".to_string()], 1), 1.0);
        let v = ndcg(&ranked, &["b".to_string()], 3);
        assert!((v - 1.0 / 3f64.log2()).abs() < 1e-9);
        assert_eq!(ndcg(&ranked, &["z".to_string()], 5), 0.0);
    }
}
