//! The catalog's text-search index: what retrieval (generation's candidate pool, `chainsmith
//! retrieve`) and ToolNet's task relevance (completion ranking, `graph eval`) both ask, so they
//! agree on which tools a task is about.
//!
//! Every tool is one BM25 document over its fields, tokenised by [`crate::textsearch`]: the name
//! (×3), the ToolBench API name and the HTTP path (×2), the description, the category (×0.5), the
//! parameters' names (×0.7) and descriptions (×0.3). For ranking the whole catalog, an API also
//! inherits a share of the score of its group (AnyTool's tool-level aggregation: its ToolBench
//! tool, else its toolset). The index is built once from a catalog, owns everything it needs
//! (`Send + Sync`, to be held in an `Arc` beside the catalog) and answers any number of queries;
//! a BM25 query costs the postings of its terms, not a pass over the catalog.
//!
//! With an embedding model (`[retrieval] embedding_model`, [`CatalogIndex::for_workspace`]), task
//! searches also rank every tool by similarity ([`crate::embedding`]: a pass over the vectors) and
//! fuse that ranking with BM25's; task relevance for ToolNet stays BM25.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Catalog, SourceKind, Tool, Transport};
use crate::embedding::DenseIndex;
use crate::textsearch::{self, Bm25, Doc};

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
    /// Retrieve a task of several requests request by request and fuse the rankings (see
    /// [`CatalogIndex::search_task`]).
    pub decompose: bool,
    pub k1: f64,
    pub b: f64,
}

impl Options {
    pub const PLAIN: Options = Options {
        split_identifiers: false,
        field_weights: false,
        tool_level: false,
        decompose: false,
        k1: 1.2,
        b: 0.75,
    };
    /// Query decomposition is off: fused by plain reciprocal rank, the rankings of a task's
    /// context sentences ("I'm planning a trip.") weigh as much as the whole task's, and on
    /// StableToolBench every group lost NDCG@5 (`retrieve --eval` prints the row).
    pub const BEST: Options =
        Options { split_identifiers: true, field_weights: true, tool_level: true, decompose: false, k1: 1.2, b: 0.75 };
}

impl Default for Options {
    fn default() -> Self {
        Options::BEST
    }
}

/// Reciprocal rank fusion's constant (the value of the paper that introduced it, Cormack et al. 2009).
const RRF_K: f64 = 60.0;

/// How deep each request's ranking goes into the fusion.
const FUSED_DEPTH: usize = 100;

/// Share of the tool-level score an API inherits.
const TOOL_LEVEL_SHARE: f64 = 0.5;

/// A task's terms as the index tokenises them (distinct, in order of first use).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    terms: Vec<String>,
}

impl Query {
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// A text-search index over every tool of a catalog (see the module docs).
#[derive(Debug, Clone)]
pub struct CatalogIndex {
    /// Tool ids in catalog order; a tool's position is its document number.
    ids: Vec<String>,
    /// Where the tool's name starts in its id (after `toolset.`), for ties broken by name.
    name_at: Vec<usize>,
    positions: HashMap<String, usize>,
    apis: Bm25,
    /// The groups' index and each tool's group, with tool-level aggregation.
    groups: Option<(Bm25, Vec<usize>)>,
    options: Options,
    /// The tools' embeddings, when the workspace names an embedding model: task searches fuse
    /// their ranking with BM25's.
    dense: Option<Arc<DenseIndex>>,
}

impl Default for CatalogIndex {
    fn default() -> Self {
        CatalogIndex::new(&Catalog::default())
    }
}

fn tool_doc(tool: &Tool, options: &Options) -> Doc {
    let w = |strong: f64| if options.field_weights { strong } else { 1.0 };
    let split = options.split_identifiers;
    let mut doc = Doc::new();
    textsearch::add(&mut doc, &tool.name, w(3.0), split);
    if let Some(api) = &tool.source.api {
        textsearch::add(&mut doc, api, w(2.0), split);
    }
    if let Transport::Http { path, .. } = &tool.transport {
        textsearch::add(&mut doc, path, w(2.0), split);
    }
    textsearch::add(&mut doc, &tool.description, 1.0, split);
    textsearch::add(&mut doc, &tool.category, w(0.5), split);
    for p in &tool.params {
        textsearch::add(&mut doc, &p.name, w(0.7), split);
        textsearch::add(&mut doc, &p.description, w(0.3), split);
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

/// Reciprocal rank fusion (Cormack et al. 2009): each ranking gives an item 1 / (k + rank); best
/// first, ties by id.
fn fuse<'a>(rankings: impl IntoIterator<Item = Vec<&'a str>>) -> Vec<(&'a str, f64)> {
    let mut fused: HashMap<&str, f64> = HashMap::new();
    for ranking in rankings {
        for (rank, id) in ranking.into_iter().enumerate() {
            *fused.entry(id).or_default() += 1.0 / (RRF_K + rank as f64 + 1.0);
        }
    }
    let mut ranked: Vec<(&str, f64)> = fused.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    ranked
}

/// The text a tool is embedded as: which tool it belongs to, its name in words, and what it does
/// (the description's start; the model reads at most 128 tokens).
pub fn tool_sentence(tool: &Tool) -> String {
    let mut text = String::new();
    if let Some(group) = &tool.source.tool {
        text.push_str(group);
        text.push_str(": ");
    }
    let name = tool.source.api.as_deref().unwrap_or(&tool.name);
    text.push_str(&crate::names::snake_case(name).replace('_', " "));
    let description: String = tool.description.chars().take(600).collect();
    if !description.trim().is_empty() {
        text.push_str(". ");
        text.push_str(description.trim());
    }
    if !tool.category.is_empty() {
        text.push_str(" (");
        text.push_str(&tool.category);
        text.push(')');
    }
    text
}

impl CatalogIndex {
    /// The index retrieval and relevance use ([`Options::BEST`]).
    pub fn new(catalog: &Catalog) -> Self {
        CatalogIndex::with_options(catalog, Options::BEST)
    }

    /// An index built another way (the ablations `retrieve --eval` reports).
    pub fn with_options(catalog: &Catalog, options: Options) -> Self {
        let tools: Vec<&Tool> = catalog.tools().collect();
        let docs: Vec<Doc> = tools.iter().map(|t| tool_doc(t, &options)).collect();
        let groups = options.tool_level.then(|| {
            let mut ids: HashMap<String, usize> = HashMap::new();
            let mut group_docs: Vec<Doc> = Vec::new();
            let mut of_tool = Vec::with_capacity(tools.len());
            for (tool, doc) in tools.iter().zip(&docs) {
                let next = ids.len();
                let g = *ids.entry(group_of(tool)).or_insert(next);
                if g == group_docs.len() {
                    let mut d = Doc::new();
                    if let Some(name) = &tool.source.tool {
                        textsearch::add(&mut d, name, 2.0, options.split_identifiers);
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
        let ids: Vec<String> = tools.iter().map(|t| t.id()).collect();
        let name_at = tools.iter().map(|t| t.toolset.len() + 1).collect();
        let positions = ids.iter().enumerate().map(|(i, id)| (id.clone(), i)).collect();
        CatalogIndex {
            ids,
            name_at,
            positions,
            apis: Bm25::new(docs, options.k1, options.b),
            groups,
            options,
            dense: None,
        }
    }

    /// The index a workspace's retrieval uses: [`CatalogIndex::new`], fused with dense retrieval
    /// when `[retrieval] embedding_model` names a model (its vectors cached under the workspace).
    /// A model that cannot be loaded leaves BM25 alone and says why in the second value.
    pub fn for_workspace(catalog: &Catalog, config: &crate::config::Config) -> (CatalogIndex, Option<String>) {
        let index = CatalogIndex::new(catalog);
        let Some(model) = &config.retrieval.embedding_model else { return (index, None) };
        let dir = config.root.join(model);
        let dense = crate::embedding::Embedder::load(&dir).and_then(|embedder| {
            let texts: Vec<String> = catalog.tools().map(tool_sentence).collect();
            let dense = DenseIndex::build(embedder, &texts, Some(&config.root))?;
            // The same tool level as BM25's: an API shares its tool's similarity.
            Ok(match &index.groups {
                Some((_, group_of)) => dense.with_groups(group_of, TOOL_LEVEL_SHARE as f32),
                None => dense,
            })
        });
        match dense {
            Ok(dense) => (index.with_dense(Arc::new(dense)), None),
            Err(e) => (index, Some(format!("dense retrieval is off, BM25 ranks alone: {e:#}"))),
        }
    }

    /// This index with dense retrieval over the same tools (in catalog order).
    pub fn with_dense(mut self, dense: Arc<DenseIndex>) -> Self {
        if dense.len() == self.ids.len() {
            self.dense = Some(dense);
        } else {
            tracing::warn!(
                "the embeddings cover {} tools, the catalog {}: dense retrieval is off",
                dense.len(),
                self.ids.len()
            );
        }
        self
    }

    /// The dense index fused into task searches, if any.
    pub fn dense(&self) -> Option<&DenseIndex> {
        self.dense.as_deref()
    }

    pub fn options(&self) -> Options {
        self.options
    }

    /// How many tools the index holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether the index holds the tool `id` (`toolset.name`).
    pub fn contains(&self, id: &str) -> bool {
        self.positions.contains_key(id)
    }

    /// A task text's terms, tokenised as the documents were.
    pub fn query(&self, text: &str) -> Query {
        let mut terms: Vec<String> = Vec::new();
        for term in textsearch::tokens(text, self.options.split_identifiers) {
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        Query { terms }
    }

    /// The task relevance of one tool: its document's BM25 score for `query` (0 for a tool the
    /// index does not hold). Costs a lookup per query term, whatever the catalog's size.
    pub fn relevance(&self, query: &Query, id: &str) -> f64 {
        match self.positions.get(id) {
            Some(&doc) => self.apis.score_of(&query.terms, doc),
            None => 0.0,
        }
    }

    /// The `k` best tools for `query` by id, best first, with their scores (only positive ones):
    /// the document score plus, with tool-level aggregation, a share of the group's score scaled
    /// to the best document's. Ties go by tool name.
    pub fn search(&self, query: &Query, k: usize) -> Vec<(&str, f64)> {
        let mut scores = self.apis.scores(&query.terms);
        if let Some((groups, of_tool)) = &self.groups {
            let group_scores = groups.scores(&query.terms);
            let top = group_scores.iter().cloned().fold(0.0, f64::max).max(1e-9);
            let api_top = scores.iter().cloned().fold(0.0, f64::max).max(1e-9);
            for (i, s) in scores.iter_mut().enumerate() {
                *s += TOOL_LEVEL_SHARE * api_top * group_scores[of_tool[i]] / top;
            }
        }
        let name = |i: usize| &self.ids[i][self.name_at[i]..];
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().enumerate().filter(|(_, s)| *s > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| name(a.0).cmp(name(b.0))));
        ranked.truncate(k);
        ranked.into_iter().map(|(i, s)| (self.ids[i].as_str(), s)).collect()
    }

    /// The `k` best tools for a task text: BM25's ranking ([`CatalogIndex::search_lexical`]), fused
    /// by reciprocal rank with the embedding model's when the index has one.
    pub fn search_task(&self, text: &str, k: usize) -> Vec<(&str, f64)> {
        let Some(dense) = &self.dense else { return self.search_lexical(text, k) };
        let lexical: Vec<&str> = self.search_lexical(text, FUSED_DEPTH.max(k)).into_iter().map(|(id, _)| id).collect();
        match dense.search(text, FUSED_DEPTH.max(k)) {
            Ok(semantic) => {
                let semantic = semantic.into_iter().map(|(doc, _)| self.ids[doc].as_str()).collect();
                let mut fused = fuse([lexical, semantic]);
                fused.truncate(k);
                fused
            }
            Err(e) => {
                tracing::warn!("dense retrieval failed for this task, BM25 ranks alone: {e:#}");
                self.search_lexical(text, k)
            }
        }
    }

    /// The `k` best tools for a task text by BM25. With [`Options::decompose`], a text of several
    /// requests ("Find X. Also, fetch Y.") is searched as a whole and request by request, and the
    /// rankings are fused by reciprocal rank, so every need gets a slot near the top instead of
    /// the strongest one taking them all.
    pub fn search_lexical(&self, text: &str, k: usize) -> Vec<(&str, f64)> {
        let requests = textsearch::requests_in(text);
        if !self.options.decompose || requests.len() < 2 {
            return self.search(&self.query(text), k);
        }
        let rankings = std::iter::once(self.search(&self.query(text), FUSED_DEPTH))
            .chain(requests.iter().map(|r| self.search(&self.query(r), FUSED_DEPTH)))
            .map(|ranking| ranking.into_iter().map(|(id, _)| id).collect());
        let mut fused = fuse(rankings);
        fused.truncate(k);
        fused
    }

    /// [`CatalogIndex::search_task`] with the tools themselves, from the catalog the index was built from.
    pub fn search_tools<'c>(&self, catalog: &'c Catalog, task: &str, k: usize) -> Vec<(&'c Tool, f64)> {
        self.search_task(task, k).into_iter().filter_map(|(id, s)| Some((catalog.find(id).ok()?, s))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        super::super::test_support::openapi_catalog(
            "tmdb",
            r#"
openapi: 3.0.0
info: {title: t, version: "1"}
paths:
  /search/person:
    get:
      operationId: searchPerson
      summary: Find people by name.
      parameters: [{name: query, in: query, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /movie/{movie_id}/reviews:
    get:
      operationId: movieReviews
      summary: The reviews users wrote about a movie.
      parameters: [{name: movie_id, in: path, required: true, schema: {type: integer}}]
      responses: {"200": {description: ok}}
  /search/movie:
    get:
      operationId: searchMovie
      summary: Find a movie by title; reviews are not included.
      parameters: [{name: query, in: query, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
"#,
            None,
        )
    }

    #[test]
    fn one_index_answers_retrieval_and_relevance() {
        let catalog = catalog();
        let index = CatalogIndex::new(&catalog);
        assert_eq!(index.len(), 3);
        let query = index.query("the reviews of the movie Titanic");
        let hits = index.search(&query, 10);
        let ids: Vec<&str> = hits.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids[..2], ["tmdb.movie_reviews", "tmdb.search_movie"], "{hits:?}");
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        // Relevance reads the same documents: the same order, no tool-level share.
        let r = |id: &str| index.relevance(&query, id);
        assert!(r("tmdb.movie_reviews") > r("tmdb.search_movie") && r("tmdb.search_movie") > 0.0);
        assert_eq!(r("tmdb.search_person"), 0.0);
        assert_eq!(r("tmdb.unknown"), 0.0);
        let tools = index.search_tools(&catalog, "the reviews of the movie Titanic", 1);
        assert_eq!(tools[0].0.name, "movie_reviews");
    }

    #[test]
    fn queries_are_distinct_terms() {
        let index = CatalogIndex::default();
        assert!(index.is_empty());
        assert_eq!(index.query("movies of the movie").terms(), ["movi"]);
        assert!(index.query("the of").is_empty());
        assert!(index.search(&index.query("movie"), 5).is_empty());
    }

    #[test]
    fn the_index_can_be_shared_across_threads() {
        fn shared<T: Send + Sync + 'static>() {}
        shared::<CatalogIndex>();
        let index = std::sync::Arc::new(CatalogIndex::new(&catalog()));
        let other = index.clone();
        let hits = std::thread::spawn(move || other.search(&other.query("person"), 1)[0].0.to_string()).join().unwrap();
        assert_eq!(hits, "tmdb.search_person");
    }
}
