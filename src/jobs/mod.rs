//! The use cases every front end offers, assembled once: generating a chain for a task and fixing a
//! failing one ([`chain`]), planning one with no model ([`plan`]), running one ([`run`]) and
//! documenting tools whose response is unknown ([`probe`]). The CLI, the language server and `eval`
//! are adapters over this layer: each says where the job runs (a [`Workspace`] built from what it
//! holds), what it is asked (the job's request) and where progress and questions go (a [`Sink`]);
//! the job chooses the candidates, the graph and the budget the same way for all of them. So
//! `eval` measures exactly what a user's "Generate" runs, and a change to the loop is made here,
//! once.

pub mod chain;
pub mod plan;
pub mod probe;
pub mod run;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::graph::ToolGraph;
use crate::runtime::McpPool;
use crate::toolset::Catalog;
use crate::toolset::index::CatalogIndex;

/// Where a job runs: one snapshot of a workspace, fixed for the job's whole life.
pub struct Workspace<'a> {
    pub root: PathBuf,
    pub config: Arc<Config>,
    pub catalog: Arc<Catalog>,
    /// The catalog's retrieval index, built once per catalog by its holder (the CLI's fuses dense
    /// retrieval in when the workspace names a model; the server's is BM25's, see ARCHITECTURE.md).
    pub index: &'a CatalogIndex,
    /// ToolNet's graph, which widens the candidates with the best hits' neighbours: the
    /// workspace's own (CLI, editor), one learnt only from other tasks (`eval`), or none.
    pub toolnet: Option<ToolGraph>,
    /// The editor keeps one MCP server per toolset for its session; the CLI starts them per run.
    pub mcp: Option<Arc<McpPool>>,
    /// (base URL, stand-in) pairs: HTTP calls go to a mock of the APIs instead (`eval`).
    pub upstream: Vec<(String, String)>,
    /// Runs are saved and teach ToolNet; an evaluation leaves the workspace as it was.
    pub learn: bool,
}

/// Where a job's progress and questions go: the terminal, the editor, or nowhere (`eval`).
pub trait Sink: Sync {
    /// A short status while the job works ("3 LLM calls").
    fn progress(&self, message: String) -> impl Future<Output = ()> + Send;

    /// Whether tools that may change data (`tools`, by id) may run: asked once, when the best
    /// program needs them and the request did not already allow it.
    fn confirm_writes(&self, tools: &[String]) -> impl Future<Output = bool> + Send;
}

/// A sink that shows nothing and agrees to nothing: the terminal, where consent is `--yes` up
/// front, and `eval`.
pub struct Silent;

impl Sink for Silent {
    async fn progress(&self, _message: String) {}

    async fn confirm_writes(&self, _tools: &[String]) -> bool {
        false
    }
}
