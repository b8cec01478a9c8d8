//! Candidate tools for a task: BM25 over each tool's fields, tokenised the way identifiers and URL
//! paths are written, with field weights and AnyTool's tool-level aggregation (an API inherits part
//! of the score of the tool it belongs to). `evaluate` scores retrieval against StableToolBench query
//! files and RestBench task files.

use std::collections::HashMap;

use serde_json::Value;

use crate::names;
pub use crate::textsearch::tokens;
use crate::textsearch::{Bm25, Doc, add};
use crate::toolset::{Catalog, SourceKind, Tool, Transport};

/// How documents are built and scored; each step of the improvement over plain BM25 is a switch, so
/// `retrieve --eval` can report every step's gain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Split identifiers (`movie_credits`, `movieCredits`) and paths into words; else whitespace and
    /// punctuation only.
    pub split_identifiers: bool,
    /// Weight the name, path and category above the description; else every field counts once.
    pub field_weights: bool,
    /// Add a share of the score of the API's tool (ToolBench tool, toolset for others).
    pub tool_level: bool,
    pub k1: f64,
    pub b: f64,
}

impl Options {
    pub const PLAIN: Options =
        Options { split_identifiers: false, field_weights: false, tool_level: false, k1: 1.2, b: 0.75 };
    pub const BEST: Options =
        Options { split_identifiers: true, field_weights: true, tool_level: true, k1: 1.2, b: 0.75 };
}

impl Default for Options {
    fn default() -> Self {
        Options::BEST
    }
}

fn tool_doc(tool: &Tool, options: &Options) -> Doc {
    let w = |strong: f64| if options.field_weights { strong } else { 1.0 };
    let split = options.split_identifiers;
    let mut doc = Doc::new();
    add(&mut doc, &tool.name, w(3.0), split);
    if let Some(api) = &tool.source.api {
        add(&mut doc, api, w(2.0), split);
    }
    if let Transport::Http { path, .. } = &tool.transport {
        add(&mut doc, path, w(2.0), split);
    }
    add(&mut doc, &tool.description, 1.0, split);
    add(&mut doc, &tool.category, w(0.5), split);
    for p in &tool.params {
        add(&mut doc, &p.name, w(0.7), split);
        add(&mut doc, &p.description, w(0.3), split);
    }
    doc
}

/// The group an API belongs to for tool-level aggregation: its ToolBench tool, else its toolset.
fn group_of(tool: &Tool) -> String {
    match (&tool.source.kind, &tool.source.tool) {
        (SourceKind::ToolBench, Some(t)) => format!("{}::{t}", tool.toolset),
        _ => tool.toolset.clone(),
    }
}

/// A retrieval index over every tool of a catalog.
pub struct Index<'c> {
    tools: Vec<&'c Tool>,
    apis: Bm25,
    groups: Option<(Bm25, Vec<usize>)>,
    options: Options,
}

/// Share of the tool-level score an API inherits.
const TOOL_LEVEL_SHARE: f64 = 0.5;

impl<'c> Index<'c> {
    pub fn new(catalog: &'c Catalog, options: Options) -> Self {
        let tools: Vec<&Tool> = catalog.tools().collect();
        let docs: Vec<Doc> = tools.iter().map(|t| tool_doc(t, &options)).collect();
        let groups = options.tool_level.then(|| {
            let mut ids: HashMap<String, usize> = HashMap::new();
            let mut group_docs: Vec<Doc> = Vec::new();
            let mut of_tool = Vec::with_capacity(tools.len());
            for (tool, doc) in tools.iter().zip(&docs) {
                let key = group_of(tool);
                let next = ids.len();
                let g = *ids.entry(key.clone()).or_insert(next);
                if g == group_docs.len() {
                    let mut d = Doc::new();
                    if let Some(name) = &tool.source.tool {
                        add(&mut d, name, 2.0, options.split_identifiers);
                    }
                    group_docs.push(d);
                }
                for (t, w) in doc {
                    // A group's document is its APIs' words, damped so big tools don't drown small ones.
                    *group_docs[g].entry(t.clone()).or_default() += w.sqrt();
                }
                of_tool.push(g);
            }
            (Bm25::new(group_docs, options.k1, options.b), of_tool)
        });
        Index { tools, apis: Bm25::new(docs, options.k1, options.b), groups, options }
    }

    /// The `k` best tools for `query`, best first, with their scores.
    pub fn search(&self, query: &str, k: usize) -> Vec<(&'c Tool, f64)> {
        let q = tokens(query, self.options.split_identifiers);
        let mut scores = self.apis.scores(&q);
        if let Some((groups, of_tool)) = &self.groups {
            let group_scores = groups.scores(&q);
            let top = group_scores.iter().cloned().fold(0.0, f64::max).max(1e-9);
            let api_top = scores.iter().cloned().fold(0.0, f64::max).max(1e-9);
            for (i, s) in scores.iter_mut().enumerate() {
                *s += TOOL_LEVEL_SHARE * api_top * group_scores[of_tool[i]] / top;
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().enumerate().filter(|(_, s)| *s > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(self.tools[a.0].name.cmp(&self.tools[b.0].name)));
        ranked.truncate(k);
        ranked.into_iter().map(|(i, s)| (self.tools[i], s)).collect()
    }
}

/// One evaluation query: the task text and the ids of the tools that solve it.
#[derive(Debug, Clone)]
pub struct Query {
    pub text: String,
    pub gold: Vec<String>,
    /// The gold tools in solution order, when the file gives an order (RestBench); empty otherwise.
    pub sequence: Vec<String>,
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
        if let Some(solution) = item.get("solution").and_then(Value::as_array) {
            for step in solution.iter().filter_map(Value::as_str) {
                let step = step.split_whitespace().collect::<Vec<_>>().join(" ");
                match by_endpoint.get(&step) {
                    Some(id) => {
                        gold.push(id.clone());
                        sequence.push(id.clone());
                    }
                    None => unmapped += 1,
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
            queries.push(Query { text, gold, sequence });
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
pub fn evaluate(index: &Index, queries: &[Query]) -> Scores {
    let mut s = Scores { queries: queries.len(), ..Default::default() };
    for q in queries {
        let ranked: Vec<String> = index.search(&q.text, 20).into_iter().map(|(t, _)| t.id()).collect();
        add_scores(&mut s, &ranked, &q.gold);
    }
    s.average()
}

/// [`evaluate`] with ToolNet expansion, cross-validated: query `i` is in fold `i mod folds`, and each
/// fold's graph is built from the solution sequences of the other folds only. `None` when the
/// queries give no sequences (StableToolBench's gold sets are unordered).
pub fn evaluate_with_graph(
    index: &Index,
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
            if i % folds != fold && !q.sequence.is_empty() {
                graph.add_trajectory(&q.sequence);
            }
        }
        for (_, q) in queries.iter().enumerate().filter(|(i, _)| i % folds == fold) {
            let hits: Vec<(String, f64)> = index.search(&q.text, 20).into_iter().map(|(t, s)| (t.id(), s)).collect();
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
    fn tokens_split_identifiers_and_paths() {
        assert_eq!(
            tokens("GET /person/{person_id}/movieCredits", true),
            vec!["person", "person", "id", "movi", "credit"]
        );
        assert_eq!(tokens("the movies of Sofia Coppola", true), vec!["movi", "sofia", "coppola"]);
        assert_eq!(tokens("movie companies company", true), vec!["movi", "compani", "compani"]);
        assert_eq!(tokens("person_movie_credits", false), vec!["person_movie_credits"]);
    }

    #[test]
    fn ndcg_is_standard() {
        let ranked: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(ndcg(&ranked, &["a".to_string()], 1), 1.0);
        let v = ndcg(&ranked, &["b".to_string()], 3);
        assert!((v - 1.0 / 3f64.log2()).abs() < 1e-9);
        assert_eq!(ndcg(&ranked, &["z".to_string()], 5), 0.0);
    }
}
