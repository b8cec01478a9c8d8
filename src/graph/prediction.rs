//! `chainsmith graph eval`: k-fold cross-validated next-tool prediction.
//!
//! Trajectories are assigned to folds by index (`i mod k`), so every run of the evaluation sees
//! the same folds. For each fold, the predictors are trained on the other folds and asked, at every
//! step of every held-out trajectory, to rank candidates for the next tool given the previous one
//! (`start` for the first step; the step to `end` is not scored). Reported per predictor:
//! hit@1/3/5, MRR (a miss counts 0), the mean number of candidates offered per step (the sparsity
//! that keeps ToolNet's prompts small), and coverage (how often the answer was a candidate at all).
//!
//! Predictors:
//! - `frequency`: every tool seen in training, by overall frequency (the baseline).
//! - `bigram`: ToolNet's static graph (Eq. 5): the successors of the previous tool by weight.
//! - `backoff`: bigram, and when a node has fewer than [`BACKOFF_FILL`] successors, the list is
//!   filled by a class-based bigram — P(category(next) | category(previous)) · P(next | its
//!   category) — then by frequency.
//! - `task-start`, `task`: bigram successors re-ranked by `w + λ·relevance`, relevance being the
//!   catalog index's BM25 between the task text and the tool's document (the one retrieval uses:
//!   name, path, description, category, parameters, field-weighted), normalised to the best
//!   candidate; at the first step only, or at every step. Re-ranking never adds candidates.
//! - `backoff+task`: both.
//! - `flow`, `flow+task`: bigram, plus at most [`FLOW_EXTRA`] tools that are not successors yet but
//!   can take what the previous tool yields (the catalog's data flow, [`crate::toolset::dataflow`]:
//!   every required parameter any tool can feed is fed by the previous one, `search_movie` →
//!   `movie_reviews`), by frequency, or for `flow+task` by task relevance, and then re-ranked like
//!   `task`.
//!
//! - `combined`: the graph, the data flow, the task and the program so far in one score: the
//!   previous tool's successors (weight normalised to the best), plus a bonus for every tool
//!   taking an id it yields (a bonus), plus the [`TASK_EXTRA`] tools most relevant to the task as
//!   candidates too, every candidate adding `λ·relevance`; the score of a tool the trajectory
//!   already called is multiplied by a damping factor.
//!
//! λ (and for `combined` the bonus and the damping) is chosen per outer fold by an inner
//! cross-validation on that fold's training part (MRR, from fixed grids); the test fold is never
//! looked at.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{END, START, ToolGraph, Trajectory};
use crate::config::ToolnetConfig;
use crate::toolset::Catalog;
use crate::toolset::index::{CatalogIndex, Query};

/// Back-off fills a node's candidate list up to this many.
pub const BACKOFF_FILL: usize = 3;
/// Data-flow back-off adds at most this many candidates per step.
pub const FLOW_EXTRA: usize = 2;
/// `combined`: tools most relevant to the task that join the candidates.
pub const TASK_EXTRA: usize = 5;
/// λ values tried by the inner cross-validation.
pub const LAMBDAS: &[f64] = &[0.0, 0.25, 0.5, 1.0, 2.0, 4.0];
/// `combined`: what being able to take the previous tool's id adds (a successor of weight 1 gets
/// 1), tried by the inner cross-validation.
pub const FLOW_BONUSES: &[f64] = &[0.0, 0.25, 0.5, 1.0];
/// `combined`: the factor on the score of a tool already called, tried likewise.
pub const REPEAT_DAMPINGS: &[f64] = &[0.25, 0.5, 1.0];

/// The weights a predictor is run with, chosen on training folds: λ (task relevance) for the task
/// variants; for `combined` also the data-flow bonus and the damping of tools already called.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    pub lambda: f64,
    pub flow: f64,
    pub repeat: f64,
}

impl Weights {
    const NONE: Weights = Weights { lambda: 0.0, flow: 0.0, repeat: 1.0 };

    /// The grid the inner cross-validation tries for `variant`.
    fn grid(variant: Variant) -> Vec<Weights> {
        let mut grid = Vec::new();
        for &lambda in LAMBDAS {
            if variant != Variant::Combined {
                grid.push(Weights { lambda, ..Weights::NONE });
                continue;
            }
            for &flow in FLOW_BONUSES {
                for &repeat in REPEAT_DAMPINGS {
                    grid.push(Weights { lambda, flow, repeat });
                }
            }
        }
        grid
    }
}

/// Counts of one predictor over all scored steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    pub steps: usize,
    pub hit1: usize,
    pub hit3: usize,
    pub hit5: usize,
    pub covered: usize,
    pub reciprocal: f64,
    pub candidates: usize,
}

impl Metrics {
    fn add(&mut self, ranked: &[String], truth: &str) {
        self.steps += 1;
        self.candidates += ranked.len();
        if let Some(i) = ranked.iter().position(|c| c == truth) {
            let rank = i + 1;
            self.covered += 1;
            self.reciprocal += 1.0 / rank as f64;
            self.hit1 += usize::from(rank <= 1);
            self.hit3 += usize::from(rank <= 3);
            self.hit5 += usize::from(rank <= 5);
        }
    }
    fn merge(&mut self, other: &Metrics) {
        self.steps += other.steps;
        self.hit1 += other.hit1;
        self.hit3 += other.hit3;
        self.hit5 += other.hit5;
        self.covered += other.covered;
        self.reciprocal += other.reciprocal;
        self.candidates += other.candidates;
    }
    fn ratio(&self, n: usize) -> f64 {
        if self.steps == 0 { 0.0 } else { n as f64 / self.steps as f64 }
    }
    pub fn hit_at_1(&self) -> f64 {
        self.ratio(self.hit1)
    }
    pub fn hit_at_3(&self) -> f64 {
        self.ratio(self.hit3)
    }
    pub fn hit_at_5(&self) -> f64 {
        self.ratio(self.hit5)
    }
    pub fn mrr(&self) -> f64 {
        if self.steps == 0 { 0.0 } else { self.reciprocal / self.steps as f64 }
    }
    pub fn mean_candidates(&self) -> f64 {
        self.ratio(self.candidates)
    }
    pub fn coverage(&self) -> f64 {
        self.ratio(self.covered)
    }

    /// The `hit@3 0.666`-style lines.
    pub fn lines(&self) -> Vec<String> {
        vec![
            format!("hit@1 {:.3}", self.hit_at_1()),
            format!("hit@3 {:.3}", self.hit_at_3()),
            format!("hit@5 {:.3}", self.hit_at_5()),
            format!("mrr {:.3}", self.mrr()),
            format!("candidates {:.2}", self.mean_candidates()),
            format!("coverage {:.3}", self.coverage()),
        ]
    }
}

/// The predictors `graph eval` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Frequency,
    Bigram,
    Backoff,
    TaskStart,
    Task,
    BackoffTask,
    Flow,
    FlowTask,
    Combined,
}

impl Variant {
    pub const ALL: [Variant; 9] = [
        Variant::Frequency,
        Variant::Bigram,
        Variant::Backoff,
        Variant::TaskStart,
        Variant::Task,
        Variant::BackoffTask,
        Variant::Flow,
        Variant::FlowTask,
        Variant::Combined,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Frequency => "frequency",
            Variant::Bigram => "bigram",
            Variant::Backoff => "backoff",
            Variant::TaskStart => "task-start",
            Variant::Task => "task",
            Variant::BackoffTask => "backoff+task",
            Variant::Flow => "flow",
            Variant::FlowTask => "flow+task",
            Variant::Combined => "combined",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Variant::Frequency => "baseline: every tool seen in training, by overall frequency",
            Variant::Bigram => "ToolNet static graph (Eq. 5): successors of the previous tool by weight",
            Variant::Backoff => {
                "bigram; nodes with fewer than 3 successors filled by a category bigram, then frequency"
            }
            Variant::TaskStart => "bigram; the first step re-ranked by task-text relevance (BM25)",
            Variant::Task => "bigram; every step re-ranked by task-text relevance (BM25)",
            Variant::BackoffTask => "backoff, re-ranked by task-text relevance at every step",
            Variant::Flow => "bigram, plus up to 2 tools taking an id the previous tool yields (by frequency)",
            Variant::FlowTask => {
                "bigram, plus up to 2 tools taking an id the previous tool yields, by task relevance; re-ranked"
            }
            Variant::Combined => {
                "one score: successors' weight + data-flow bonus + λ·task relevance (5 most relevant tools join), tools already called damped"
            }
        }
    }

    fn uses_task(self) -> bool {
        matches!(
            self,
            Variant::TaskStart | Variant::Task | Variant::BackoffTask | Variant::FlowTask | Variant::Combined
        )
    }
}

/// One predictor's cross-validated figures.
#[derive(Debug, Clone)]
pub struct VariantResult {
    pub variant: Variant,
    pub metrics: Metrics,
    /// The λ chosen for each outer fold (task variants).
    pub weights: Vec<Weights>,
}

/// What the predictors know about tools besides the trajectories: categories and the catalog's
/// text index (task relevance).
pub struct ToolInfo {
    categories: HashMap<String, String>,
    index: CatalogIndex,
    /// tool → the tools that can take an id it yields.
    links: HashMap<String, Vec<String>>,
}

impl ToolInfo {
    pub fn new(catalog: &Catalog) -> Self {
        let mut categories = HashMap::new();
        for tool in catalog.tools() {
            // ToolBench's RapidAPI tool is the natural group of its APIs; OpenAPI and native tools
            // have a category (tag or first path segment).
            let group = if !tool.category.is_empty() {
                tool.category.clone()
            } else {
                tool.source.tool.clone().unwrap_or_else(|| tool.toolset.clone())
            };
            categories.insert(tool.id(), group);
        }
        let links = catalog.data_flow().followers(catalog);
        ToolInfo { categories, index: CatalogIndex::new(catalog), links }
    }

    /// The tools that can take what `from` yields (the catalog's data flow, [`crate::toolset::dataflow`]).
    pub fn linked(&self, from: &str) -> &[String] {
        self.links.get(from).map_or(&[], Vec::as_slice)
    }

    /// The category of a node: the catalog's, else guessed from the id (`ts.name` → `ts`,
    /// `GET /movie/{id}` → `movie`).
    pub fn category(&self, id: &str) -> String {
        if let Some(c) = self.categories.get(id) {
            return c.clone();
        }
        if id == START || id == END {
            return id.to_string();
        }
        if let Some((_, path)) = id.split_once(' ') {
            return path.trim_start_matches('/').split('/').next().unwrap_or("").to_string();
        }
        id.split_once('.').map_or(id, |(ts, _)| ts).to_string()
    }
}

/// What one training set teaches.
struct Model<'i> {
    info: &'i ToolInfo,
    graph: ToolGraph,
    /// tool → occurrences.
    frequency: BTreeMap<String, u64>,
    /// category → category → transitions.
    category_bigram: HashMap<String, HashMap<String, u64>>,
    /// category → occurrences of its tools.
    category_total: HashMap<String, u64>,
}

impl<'i> Model<'i> {
    fn train(trajectories: &[&Trajectory], info: &'i ToolInfo) -> Self {
        // β = 1: the static weights alone (no scores exist here; Eq. 8 would not change the order).
        let mut graph = ToolGraph::new(&ToolnetConfig { alpha: 0.5, beta: 1.0, ..Default::default() });
        let mut frequency: BTreeMap<String, u64> = BTreeMap::new();
        let mut category_bigram: HashMap<String, HashMap<String, u64>> = HashMap::new();
        let mut category_total: HashMap<String, u64> = HashMap::new();
        for t in trajectories {
            graph.add_trajectory(&t.tools);
            let mut previous = START.to_string();
            for tool in &t.tools {
                *frequency.entry(tool.clone()).or_default() += 1;
                let category = info.category(tool);
                *category_total.entry(category.clone()).or_default() += 1;
                *category_bigram.entry(info.category(&previous)).or_default().entry(category).or_default() += 1;
                previous = tool.clone();
            }
        }
        Model { info, graph, frequency, category_bigram, category_total }
    }

    fn by_frequency(&self) -> Vec<String> {
        let mut tools: Vec<(&String, u64)> = self.frequency.iter().map(|(t, c)| (t, *c)).collect();
        tools.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        tools.into_iter().map(|(t, _)| t.clone()).collect()
    }

    /// Successors of `from` (without `end`), with weights.
    fn bigram(&self, from: &str) -> Vec<(String, f64)> {
        self.graph.successors(from).into_iter().filter(|(t, _)| *t != END).map(|(t, w)| (t.to_string(), w)).collect()
    }

    /// Bigram, filled up to [`BACKOFF_FILL`] by the category bigram, then by frequency. Back-off
    /// candidates get weights below every real successor's.
    fn backoff(&self, from: &str) -> Vec<(String, f64)> {
        let mut ranked = self.bigram(from);
        if ranked.len() >= BACKOFF_FILL {
            return ranked;
        }
        let present: HashSet<String> = ranked.iter().map(|(t, _)| t.clone()).collect();
        let floor = ranked.iter().map(|(_, w)| *w).fold(1.0, f64::min);
        let mut extra: Vec<(String, f64)> = Vec::new();
        if let Some(next) = self.category_bigram.get(&self.info.category(from)) {
            let total: u64 = next.values().sum();
            for (tool, count) in &self.frequency {
                if present.contains(tool) {
                    continue;
                }
                let category = self.info.category(tool);
                let Some(&c) = next.get(&category) else { continue };
                let p = (c as f64 / total as f64) * (*count as f64 / self.category_total[&category] as f64);
                extra.push((tool.clone(), p));
            }
        }
        extra.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for tool in self.by_frequency() {
            if !present.contains(&tool) && !extra.iter().any(|(t, _)| *t == tool) {
                extra.push((tool, 0.0));
            }
        }
        let missing = BACKOFF_FILL - ranked.len();
        // Scaled below the weakest real successor, order kept.
        for (i, (tool, _)) in extra.into_iter().take(missing).enumerate() {
            ranked.push((tool, floor * 0.5 / (i + 1) as f64));
        }
        ranked
    }

    /// Bigram, plus at most [`FLOW_EXTRA`] tools taking an id `from` yields, by task relevance
    /// (when `query`) then frequency, below every real successor.
    fn flow(&self, from: &str, query: Option<&Query>) -> Vec<(String, f64)> {
        let mut ranked = self.bigram(from);
        let present: HashSet<String> = ranked.iter().map(|(t, _)| t.clone()).collect();
        let floor = ranked.iter().map(|(_, w)| *w).fold(1.0, f64::min);
        let mut extra: Vec<(&String, f64, u64)> = self
            .info
            .linked(from)
            .iter()
            .filter(|t| !present.contains(*t))
            .map(|t| {
                let relevance = query.map_or(0.0, |q| self.info.index.relevance(q, t));
                (t, relevance, self.frequency.get(t).copied().unwrap_or(0))
            })
            .collect();
        extra.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.2.cmp(&a.2)).then_with(|| a.0.cmp(b.0)));
        for (i, (tool, _, _)) in extra.into_iter().take(FLOW_EXTRA).enumerate() {
            ranked.push((tool.clone(), floor * 0.5 / (i + 1) as f64));
        }
        ranked
    }

    /// See [`Variant::Combined`]; `called` is the trajectory so far.
    fn combined(&self, from: &str, query: Option<&Query>, called: &[String], weights: Weights) -> Vec<String> {
        let mut scores: BTreeMap<String, f64> = BTreeMap::new();
        let successors = self.bigram(from);
        let top = successors.iter().map(|(_, w)| *w).fold(0.0, f64::max).max(1e-9);
        for (tool, w) in successors {
            *scores.entry(tool).or_default() += w / top;
        }
        for tool in self.info.linked(from) {
            *scores.entry(tool.clone()).or_default() += weights.flow;
        }
        if let Some(query) = query {
            for (tool, _) in self.info.index.search(query, TASK_EXTRA) {
                scores.entry(tool.to_string()).or_default();
            }
            let relevance: Vec<(String, f64)> =
                scores.keys().map(|t| (t.clone(), self.info.index.relevance(query, t))).collect();
            let best = relevance.iter().map(|(_, r)| *r).fold(0.0, f64::max);
            if best > 0.0 {
                for (tool, r) in relevance {
                    *scores.get_mut(&tool).expect("a candidate") += weights.lambda * r / best;
                }
            }
        }
        for tool in called {
            if let Some(score) = scores.get_mut(tool) {
                *score *= weights.repeat;
            }
        }
        let mut ranked: Vec<(String, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked.into_iter().map(|(t, _)| t).collect()
    }

    fn rank(
        &self,
        variant: Variant,
        from: &str,
        called: &[String],
        query: Option<&Query>,
        weights: Weights,
    ) -> Vec<String> {
        let lambda = weights.lambda;
        let mut scored = match variant {
            Variant::Frequency => return self.by_frequency(),
            Variant::Combined => return self.combined(from, query, called, weights),
            Variant::Bigram | Variant::TaskStart | Variant::Task => self.bigram(from),
            Variant::Backoff | Variant::BackoffTask => self.backoff(from),
            Variant::Flow => self.flow(from, None),
            Variant::FlowTask => self.flow(from, query),
        };
        let rerank = match variant {
            Variant::TaskStart => from == START,
            Variant::Task | Variant::BackoffTask | Variant::FlowTask => true,
            _ => false,
        };
        if let (true, Some(query)) = (rerank && lambda > 0.0, query) {
            let relevance: Vec<f64> = scored.iter().map(|(t, _)| self.info.index.relevance(query, t)).collect();
            let best = relevance.iter().copied().fold(0.0, f64::max);
            if best > 0.0 {
                for ((_, w), r) in scored.iter_mut().zip(relevance) {
                    *w += lambda * r / best;
                }
                scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            }
        }
        scored.into_iter().map(|(t, _)| t).collect()
    }
}

/// Scores `variant` trained on `train`, tested on `test`.
fn score(variant: Variant, train: &[&Trajectory], test: &[&Trajectory], info: &ToolInfo, weights: Weights) -> Metrics {
    let model = Model::train(train, info);
    let mut metrics = Metrics::default();
    for t in test {
        let query: Option<Query> = t.query.as_deref().map(|q| info.index.query(q));
        let mut previous = START;
        for (i, tool) in t.tools.iter().enumerate() {
            let ranked = model.rank(variant, previous, &t.tools[..i], query.as_ref(), weights);
            metrics.add(&ranked, tool);
            previous = tool;
        }
    }
    metrics
}

/// `items` split into `k` folds by index: (training part, test part) of fold `f`.
fn split<'t>(items: &[&'t Trajectory], k: usize, f: usize) -> (Vec<&'t Trajectory>, Vec<&'t Trajectory>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (i, t) in items.iter().enumerate() {
        if i % k == f { test.push(*t) } else { train.push(*t) }
    }
    (train, test)
}

/// The weights for a task variant, by inner cross-validation on `train` only.
fn choose_weights(variant: Variant, train: &[&Trajectory], info: &ToolInfo, k: usize) -> Weights {
    let inner = k.saturating_sub(1).max(2).min(train.len().max(1));
    if inner < 2 {
        return Weights::NONE;
    }
    let mut best = (f64::NEG_INFINITY, Weights::NONE);
    for weights in Weights::grid(variant) {
        let mut metrics = Metrics::default();
        for f in 0..inner {
            let (tr, te) = split(train, inner, f);
            metrics.merge(&score(variant, &tr, &te, info, weights));
        }
        // Strictly better only: ties keep the earlier (smaller) weights.
        if metrics.mrr() > best.0 + 1e-12 {
            best = (metrics.mrr(), weights);
        }
    }
    best.1
}

/// Cross-validates every variant on `trajectories` with `k` folds.
pub fn evaluate(trajectories: &[Trajectory], info: &ToolInfo, k: usize) -> Vec<VariantResult> {
    let items: Vec<&Trajectory> = trajectories.iter().filter(|t| !t.tools.is_empty()).collect();
    let k = k.clamp(2, items.len().max(2));
    Variant::ALL
        .iter()
        .map(|&variant| {
            let mut metrics = Metrics::default();
            let mut chosen = Vec::new();
            for f in 0..k {
                let (train, test) = split(&items, k, f);
                let weights =
                    if variant.uses_task() { choose_weights(variant, &train, info, k) } else { Weights::NONE };
                if variant.uses_task() {
                    chosen.push(weights);
                }
                metrics.merge(&score(variant, &train, &test, info, weights));
            }
            VariantResult { variant, metrics, weights: chosen }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ToolInfo {
        ToolInfo::new(&Catalog::default())
    }

    #[test]
    fn metrics_count_ranks() {
        let mut m = Metrics::default();
        m.add(&["a".into(), "b".into(), "c".into()], "b");
        m.add(&["a".into()], "z");
        assert_eq!((m.steps, m.hit1, m.hit3, m.covered, m.candidates), (2, 0, 1, 1, 4));
        assert!((m.mrr() - 0.25).abs() < 1e-12);
        assert_eq!(m.lines()[1], "hit@3 0.500");
    }

    #[test]
    fn bigram_beats_frequency_on_a_chain() {
        // a → b → c always: the bigram predicts every step; frequency cannot tell them apart.
        let data: Vec<Trajectory> = (0..6).map(|_| Trajectory::new(["t.a", "t.b", "t.c"])).collect();
        let results = evaluate(&data, &info(), 3);
        let get = |v: Variant| results.iter().find(|r| r.variant == v).unwrap().metrics.clone();
        assert_eq!(get(Variant::Bigram).hit_at_1(), 1.0);
        assert_eq!(get(Variant::Bigram).mean_candidates(), 1.0);
        assert!(get(Variant::Frequency).hit_at_1() < 0.5);
        assert_eq!(get(Variant::Frequency).mean_candidates(), 3.0);
        assert_eq!(get(Variant::Backoff).hit_at_1(), 1.0, "back-off only appends");
        assert_eq!(get(Variant::Backoff).mean_candidates(), 3.0);
    }

    #[test]
    fn backoff_uses_categories() {
        // x.* tools follow x.*: an unseen x tool backs off to the x category's tools.
        let train = [Trajectory::new(["x.a", "x.b"]), Trajectory::new(["x.a", "x.b"]), Trajectory::new(["y.c", "x.d"])];
        let refs: Vec<&Trajectory> = train.iter().collect();
        let i = info();
        let model = Model::train(&refs, &i);
        assert!(model.bigram("x.unseen").is_empty());
        let ranked = model.rank(Variant::Backoff, "x.unseen", &[], None, Weights::NONE);
        // P(x | x) = 1; within x: x.a 2/5, x.b 2/5 (ties by id), x.d 1/5.
        assert_eq!(ranked, ["x.a", "x.b", "x.d"]);
    }

    #[test]
    fn data_flow_followers_take_what_a_tool_yields() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb");
        let catalog = crate::toolset::loader::load(&crate::config::Config::load(&root, None));
        let info = ToolInfo::new(&catalog);
        let linked = |from: &str| info.linked(from).to_vec();
        // search_movie names the movie: every tool taking only a movie_id may follow.
        let after_search = linked("tmdb.search_movie");
        assert!(after_search.contains(&"tmdb.movie_reviews".to_string()), "{after_search:?}");
        assert!(!after_search.iter().any(|t| t.starts_with("tmdb.tv") || t.starts_with("tmdb.person")));
        // tv's response holds `networks`: network follows; person_popular's tools take a person_id.
        assert!(linked("tmdb.tv").contains(&"tmdb.network".to_string()));
        assert!(linked("tmdb.person_popular").contains(&"tmdb.person".to_string()));
        // Tools without id parameters follow nothing by data flow.
        assert!(!linked("tmdb.search_person").contains(&"tmdb.search_movie".to_string()));
        assert_eq!(info.category("tmdb.search_movie"), "search");
        assert_eq!(info.category("GET /movie/{movie_id}"), "movie");

        // The flow variant adds at most FLOW_EXTRA candidates, the task deciding which.
        let train = [Trajectory::new(["tmdb.search_movie", "tmdb.movie_credits"])];
        let refs: Vec<&Trajectory> = train.iter().collect();
        let model = Model::train(&refs, &info);
        let query = info.index.query("reviews of Titanic");
        let ranked = model.rank(
            Variant::FlowTask,
            "tmdb.search_movie",
            &[],
            Some(&query),
            Weights { lambda: 1.0, ..Weights::NONE },
        );
        assert_eq!(ranked.len(), 1 + FLOW_EXTRA);
        assert_eq!(ranked[0], "tmdb.movie_reviews", "{ranked:?}");
        assert_eq!(
            model.rank(
                Variant::Bigram,
                "tmdb.search_movie",
                &[],
                Some(&query),
                Weights { lambda: 1.0, ..Weights::NONE }
            ),
            ["tmdb.movie_credits"]
        );
    }

    #[test]
    fn folds_are_by_index() {
        let data: Vec<Trajectory> = (0..5).map(|i| Trajectory::new([format!("t.{i}")])).collect();
        let refs: Vec<&Trajectory> = data.iter().collect();
        let (train, test) = split(&refs, 2, 1);
        assert_eq!(test.iter().map(|t| t.tools[0].as_str()).collect::<Vec<_>>(), ["t.1", "t.3"]);
        assert_eq!(train.len(), 3);
    }
}
