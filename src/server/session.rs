//! The server's mutable state: open programs (text + incrementally maintained syntax tree + version),
//! the workspace configuration and catalog, and what the client can do.
//!
//! Only notification handlers change a [`Session`], under the server's `std::sync` lock and before
//! any `.await`. Requests copy out a [`Snapshot`] (all `Arc`s) and release the lock at once, so a
//! slow request never blocks typing and never sees a half-applied edit.
//!
//! Caches, each with the key that invalidates it:
//! - a document's analysis, per (document version, catalog generation): built by the first
//!   request that needs it and shared by every snapshot of that version ([`Snapshot::analysis`]);
//! - ToolNet's graph, per change of its inputs ([`Toolnet`]), and the graph without one program's
//!   own calls (inlay hints), per program, until the inputs change.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types::{ClientCapabilities, TextDocumentContentChangeEvent, Uri};

use crate::analysis::parse::ParsedText;
use crate::analysis::{self, Analysis};
use crate::config::{CONFIG_FILE, Config, ToolsetSource};
use crate::graph::ToolGraph;
use crate::graph::workspace::WorkspaceGraph;
use crate::text::{Encoding, LineIndex};
use crate::toolset::Catalog;
use crate::toolset::index::CatalogIndex;

use super::convert;
use super::marks::RunMarks;

/// What the client said it supports, reduced to the answers the server needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientSupport {
    /// `workspace/configuration` (pull settings).
    pub configuration: bool,
    /// Dynamic registration of `workspace/didChangeWatchedFiles`.
    pub watch_files: bool,
    pub snippets: bool,
    /// Signature help parameter labels as offsets into the signature label.
    pub label_offsets: bool,
    /// Hierarchical `DocumentSymbol`s (else flat `SymbolInformation`).
    pub hierarchical_symbols: bool,
    /// `window/workDoneProgress/create` (server-initiated progress).
    pub work_done_progress: bool,
    /// `workspace/inlayHint/refresh`.
    pub inlay_hint_refresh: bool,
    /// `workspace/codeLens/refresh`.
    pub code_lens_refresh: bool,
    /// Workspace edits that name the document version they were made for (`documentChanges`).
    pub versioned_edits: bool,
}

impl ClientSupport {
    pub fn from_capabilities(caps: &ClientCapabilities) -> Self {
        let workspace = caps.workspace.as_ref();
        let text = caps.text_document.as_ref();
        ClientSupport {
            configuration: workspace.and_then(|w| w.configuration).unwrap_or(false),
            watch_files: workspace
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|w| w.dynamic_registration)
                .unwrap_or(false),
            snippets: text
                .and_then(|t| t.completion.as_ref())
                .and_then(|c| c.completion_item.as_ref())
                .and_then(|i| i.snippet_support)
                .unwrap_or(false),
            label_offsets: text
                .and_then(|t| t.signature_help.as_ref())
                .and_then(|s| s.signature_information.as_ref())
                .and_then(|s| s.parameter_information.as_ref())
                .and_then(|p| p.label_offset_support)
                .unwrap_or(false),
            hierarchical_symbols: text
                .and_then(|t| t.document_symbol.as_ref())
                .and_then(|d| d.hierarchical_document_symbol_support)
                .unwrap_or(false),
            work_done_progress: caps.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false),
            inlay_hint_refresh: workspace
                .and_then(|w| w.inlay_hint.as_ref())
                .and_then(|i| i.refresh_support)
                .unwrap_or(false),
            code_lens_refresh: workspace
                .and_then(|w| w.code_lens.as_ref())
                .and_then(|c| c.refresh_support)
                .unwrap_or(false),
            versioned_edits: workspace
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.document_changes)
                .unwrap_or(false),
        }
    }
}

/// An open program.
#[derive(Clone)]
pub struct Document {
    pub uri: Uri,
    pub path: PathBuf,
    pub version: i32,
    pub parsed: Arc<ParsedText>,
    pub line_index: Arc<LineIndex>,
    /// What the last run left on the program: per-call inlay hints (until the next edit) and
    /// failure diagnostics (until the next good run or an edit of their line).
    pub run: Option<Arc<RunMarks>>,
    /// The trace of the document's last finished run, kept across edits: a re-run answers the
    /// calls it recorded from it (the "Re-run" code lenses).
    pub last_trace: Option<Arc<crate::runtime::Trace>>,
    /// The analysis of this version against the installed catalog, once a request needed it.
    analysis: AnalysisSlot,
    /// The latest analysis of an earlier version against the installed catalog: the next one
    /// re-walks only the statements an edit changed.
    previous: Option<AnalysisSlot>,
}

self_cell::self_cell!(
    /// A program's analysis together with the catalog its results borrow from.
    pub struct CachedAnalysis {
        owner: Arc<Catalog>,
        #[covariant]
        dependent: Analysis,
    }
);

/// Where the analysis of one (document version, catalog generation) is kept; replaced whenever
/// either changes.
type AnalysisSlot = Arc<OnceLock<CachedAnalysis>>;

impl Document {
    pub fn new(uri: Uri, path: PathBuf, version: i32, text: String) -> Self {
        let line_index = Arc::new(LineIndex::new(&text));
        Document {
            uri,
            path,
            version,
            parsed: Arc::new(ParsedText::new(text)),
            line_index,
            run: None,
            last_trace: None,
            analysis: AnalysisSlot::default(),
            previous: None,
        }
    }

    /// Applies `didChange` content changes in order (each range refers to the text left by the
    /// previous change): ranged changes edit the tree incrementally, full texts re-parse.
    pub fn apply_changes(&mut self, changes: Vec<TextDocumentContentChangeEvent>, encoding: Encoding, version: i32) {
        let mut parsed = (*self.parsed).clone();
        let mut line_index = self.line_index.clone();
        let mut run = self.run.take().map(Arc::unwrap_or_clone);
        for change in changes {
            match change.range {
                Some(range) => {
                    let bytes = convert::byte_range(&line_index, &parsed.text, range, encoding);
                    if let Some(run) = &mut run {
                        run.edited(&parsed.text, bytes, &change.text);
                    }
                    parsed.edit(bytes, &change.text);
                }
                None => {
                    if let Some(run) = &mut run {
                        run.replaced(&change.text);
                    }
                    parsed = ParsedText::new(change.text)
                }
            }
            line_index = Arc::new(LineIndex::new(&parsed.text));
        }
        self.run = run.filter(|r| !r.is_empty()).map(Arc::new);
        self.parsed = Arc::new(parsed);
        self.line_index = line_index;
        self.version = version;
        let analysed = std::mem::take(&mut self.analysis);
        if analysed.get().is_some() {
            self.previous = Some(analysed);
        }
    }
}

/// The workspace as requests see it: immutable and cheap to copy.
#[derive(Clone)]
pub struct World {
    pub root: Option<PathBuf>,
    pub config: Arc<Config>,
    pub catalog: Arc<Catalog>,
    pub encoding: Encoding,
    pub support: ClientSupport,
    /// Bumped on every configuration / catalog reload.
    pub generation: u64,
    pub toolnet: Arc<Toolnet>,
    /// The catalog's text index (retrieval and task relevance), built when first needed.
    pub relevance: Arc<Relevance>,
}

/// The catalog's text index, for one catalog: built once (by the first completion with a task
/// or generation that needs it), used by every keystroke after.
#[derive(Default)]
pub struct Relevance {
    index: OnceLock<CatalogIndex>,
}

impl Relevance {
    /// The index of `catalog`, which must be the catalog this `Relevance` was installed with.
    pub fn of(&self, catalog: &Catalog) -> &CatalogIndex {
        self.index.get_or_init(|| CatalogIndex::new(catalog))
    }
}

/// ToolNet in the editor: the workspace's inputs (programs, runs, imported trajectories) and the
/// graph built from them (edges and scores only: at ToolBench scale, thousands of unused tools as
/// nodes would cost every request). Built off the session lock, once per change of the inputs.
pub struct Toolnet {
    pub inputs: WorkspaceGraph,
    pub graph: ToolGraph,
    /// The graph without one program's own calls, by program: hints in a file show what the rest
    /// of the workspace does, not the file echoing itself.
    without: Mutex<HashMap<PathBuf, Arc<ToolGraph>>>,
}

impl Toolnet {
    pub fn new(inputs: WorkspaceGraph) -> Toolnet {
        let graph = inputs.edges_excluding(None);
        Toolnet { inputs, graph, without: Mutex::default() }
    }

    pub fn empty() -> Toolnet {
        Toolnet::new(WorkspaceGraph::empty(Path::new("."), &Default::default()))
    }

    pub fn without_program(&self, program: &Path) -> Arc<ToolGraph> {
        if let Some(graph) = self.without.lock().unwrap_or_else(PoisonError::into_inner).get(program) {
            return graph.clone();
        }
        // Built outside the lock: two requests may both build it, neither waits for the other.
        let graph = Arc::new(self.inputs.edges_excluding(Some(program)));
        self.without.lock().unwrap_or_else(PoisonError::into_inner).insert(program.to_path_buf(), graph.clone());
        graph
    }
}

impl World {
    /// The text a core path (protocol file, chainsmith.toml) refers to: the catalog's copy (the
    /// one its byte ranges were computed on), else the file on disk.
    pub fn file_text(&self, path: &Path) -> Option<Arc<str>> {
        if let Some(text) = self.catalog.texts.get(path) {
            return Some(text.clone());
        }
        let resolved = self.resolve(path);
        if let Some(text) = self.catalog.texts.get(&resolved) {
            return Some(text.clone());
        }
        crate::files::read_text(&resolved, crate::files::MAX_READ).ok().map(Into::into)
    }

    /// A core path made absolute against the workspace root.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        match &self.root {
            Some(root) if path.is_relative() => root.join(path),
            _ => path.to_path_buf(),
        }
    }

    pub fn uri_of(&self, path: &Path) -> Option<Uri> {
        Uri::from_file_path(self.resolve(path))
    }
}

/// A request's view of one open program plus the workspace.
#[derive(Clone)]
pub struct Snapshot {
    pub uri: Uri,
    pub path: PathBuf,
    pub version: i32,
    pub parsed: Arc<ParsedText>,
    pub line_index: Arc<LineIndex>,
    pub world: World,
    /// The marks of the document's last run.
    pub run: Option<Arc<RunMarks>>,
    /// The trace of the document's last finished run (see [`Document::last_trace`]).
    pub last_trace: Option<Arc<crate::runtime::Trace>>,
    analysis: AnalysisSlot,
    previous: Option<AnalysisSlot>,
}

impl Snapshot {
    pub fn text(&self) -> &str {
        &self.parsed.text
    }

    /// The whole program's analysis, computed once per (document version, catalog generation),
    /// from the previous version's where there is one.
    pub fn analysis(&self) -> &Analysis<'_> {
        let cached = self.analysis.get_or_init(|| {
            CachedAnalysis::new(self.world.catalog.clone(), |catalog| {
                let previous = self.previous.as_ref().filter(|_| !*WHOLE_ANALYSES).and_then(|slot| slot.get());
                let previous = previous.and_then(|p| earlier_analysis(p, catalog));
                analysis::analyze_after(
                    &self.path,
                    self.text(),
                    &self.parsed.tree,
                    catalog,
                    &self.world.config.diagnostics,
                    previous,
                    None,
                )
            })
        });
        cached.borrow_dependent()
    }
}

/// Turns incremental re-analysis off for one process: every edit walks the whole program (the
/// benchmark's baseline, a suspected stale result).
pub const WHOLE_ANALYSIS_ENV: &str = "CHAINSMITH_NO_INCREMENTAL";

static WHOLE_ANALYSES: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var_os(WHOLE_ANALYSIS_ENV).is_some());

/// An earlier version's analysis, typed as borrowing from `catalog`, when it was made against that
/// very catalog; `None` when it was not.
fn earlier_analysis<'o, 'c>(earlier: &'o CachedAnalysis, catalog: &'c Catalog) -> Option<&'o Analysis<'c>> {
    if !std::ptr::eq(Arc::as_ptr(earlier.borrow_owner()), catalog) {
        return None;
    }
    let analysis: &'o Analysis<'o> = earlier.borrow_dependent();
    // SAFETY: an `Analysis<'x>` borrows nothing but data of the catalog it was made against (its
    // tools and schemas) and `'static` data. That catalog is the one `catalog` points to: the
    // same allocation, owned by an `Arc` that the new analysis' cell owns too, so what the earlier
    // analysis borrows lives as long as anything borrowing `catalog`. Only the lifetime changes.
    Some(unsafe { std::mem::transmute::<&'o Analysis<'o>, &'o Analysis<'c>>(analysis) })
}

pub struct Session {
    pub root: Option<PathBuf>,
    /// Who tells the server that a protocol file or chainsmith.toml changed on disk.
    pub file_watching: crate::server::FileWatching,
    /// Editor settings: `initializationOptions` overlaid with `workspace/configuration`.
    pub init_settings: Option<serde_json::Value>,
    pub pulled_settings: Option<serde_json::Value>,
    pub config: Arc<Config>,
    pub catalog: Arc<Catalog>,
    pub encoding: Encoding,
    pub support: ClientSupport,
    pub generation: u64,
    /// The sequence number of the load installed (see `Context::reload`).
    pub loaded: u64,
    /// ToolNet, rebuilt on reload, after runs and when a program is saved.
    pub toolnet: Arc<Toolnet>,
    /// The sequence number of the ToolNet installed.
    pub toolnet_loaded: u64,
    pub relevance: Arc<Relevance>,
    /// Open programs by URI (as text: `Uri` caches parts of itself, so it makes a poor map key).
    pub documents: HashMap<String, Document>,
    /// Protocol files / chainsmith.toml that currently carry published diagnostics.
    pub published_workspace: HashMap<String, Uri>,
    /// Responses runs saw outside their protocols, the latest per tool, for the load they were
    /// seen against (a reload may have changed the protocol, so only the current load's count).
    pub drift: Vec<ObservedDrift>,
}

#[derive(Debug, Clone)]
pub struct ObservedDrift {
    pub generation: u64,
    /// The program whose run saw it.
    pub program: PathBuf,
    pub drift: crate::runtime::drift::Drift,
}

impl Session {
    /// Records what a run saw, replacing what earlier runs saw of the same tools; a run that
    /// started under an older load compared against schemas that may have changed, so it is not
    /// recorded.
    pub fn observe_drift(&mut self, program: &Path, drift: &[crate::runtime::drift::Drift], generation: u64) {
        if generation != self.generation {
            return;
        }
        self.drift.retain(|d| d.generation == generation && !drift.iter().any(|n| n.tool == d.drift.tool));
        self.drift.extend(drift.iter().map(|d| ObservedDrift {
            generation,
            program: program.to_path_buf(),
            drift: d.clone(),
        }));
    }

    /// The current load's drift as diagnostics on the protocol files.
    pub fn drift_diagnostics(&self) -> Vec<crate::diagnostic::Diagnostic> {
        self.drift
            .iter()
            .filter(|d| d.generation == self.generation)
            .filter_map(|d| d.drift.diagnostic(&self.catalog, &d.program))
            .collect()
    }
}

impl Default for Session {
    fn default() -> Self {
        Session {
            root: None,
            init_settings: None,
            pulled_settings: None,
            config: Arc::new(Config::default()),
            catalog: Arc::new(Catalog::default()),
            encoding: Encoding::Utf16,
            support: ClientSupport::default(),
            file_watching: crate::server::FileWatching::None,
            generation: 0,
            loaded: 0,
            toolnet: Arc::new(Toolnet::empty()),
            toolnet_loaded: 0,
            relevance: Arc::default(),
            documents: HashMap::new(),
            published_workspace: HashMap::new(),
            drift: Vec::new(),
        }
    }
}

impl Session {
    pub fn world(&self) -> World {
        World {
            root: self.root.clone(),
            config: self.config.clone(),
            catalog: self.catalog.clone(),
            encoding: self.encoding,
            support: self.support,
            generation: self.generation,
            toolnet: self.toolnet.clone(),
            relevance: self.relevance.clone(),
        }
    }

    pub fn document(&self, uri: &Uri) -> Option<&Document> {
        self.documents.get(uri.as_str())
    }

    pub fn document_mut(&mut self, uri: &Uri) -> Option<&mut Document> {
        self.documents.get_mut(uri.as_str())
    }

    pub fn open(&mut self, document: Document) {
        self.documents.insert(document.uri.as_str().to_string(), document);
    }

    pub fn close(&mut self, uri: &Uri) -> Option<Document> {
        self.documents.remove(uri.as_str())
    }

    pub fn snapshot(&self, uri: &Uri) -> Option<Snapshot> {
        let doc = self.document(uri)?;
        Some(Snapshot {
            uri: doc.uri.clone(),
            path: doc.path.clone(),
            version: doc.version,
            parsed: doc.parsed.clone(),
            line_index: doc.line_index.clone(),
            world: self.world(),
            run: doc.run.clone(),
            last_trace: doc.last_trace.clone(),
            analysis: doc.analysis.clone(),
            previous: doc.previous.clone(),
        })
    }

    pub fn snapshots(&self) -> Vec<Snapshot> {
        let mut docs: Vec<&Document> = self.documents.values().collect();
        docs.sort_by(|a, b| a.uri.as_str().cmp(b.uri.as_str()));
        docs.into_iter().filter_map(|d| self.snapshot(&d.uri)).collect()
    }

    /// The editor settings passed to `Config::load` as overrides.
    pub fn settings(&self) -> Option<serde_json::Value> {
        crate::config::layer_settings(self.init_settings.as_ref(), self.pulled_settings.as_ref())
    }

    /// Installs a configuration, catalog and ToolNet loaded as load number `sequence`, unless a
    /// later load is installed already; whether it was installed.
    pub fn install(&mut self, sequence: u64, config: Config, catalog: Catalog, toolnet: Toolnet) -> bool {
        if sequence <= self.loaded {
            return false;
        }
        self.loaded = sequence;
        self.config = Arc::new(config);
        self.catalog = Arc::new(catalog);
        self.generation += 1;
        self.relevance = Arc::default();
        self.toolnet = Arc::new(toolnet);
        self.toolnet_loaded = sequence;
        for document in self.documents.values_mut() {
            document.analysis = AnalysisSlot::default();
            document.previous = None;
        }
        true
    }

    /// Installs a ToolNet rebuilt as number `sequence` from the catalog of `generation`, unless a
    /// later one is installed or the catalog changed since; whether it was installed.
    pub fn install_toolnet(&mut self, sequence: u64, generation: u64, toolnet: Toolnet) -> bool {
        if sequence <= self.toolnet_loaded || generation != self.generation {
            return false;
        }
        self.toolnet_loaded = sequence;
        self.toolnet = Arc::new(toolnet);
        true
    }

    /// Whether a change to `path` on disk can change the configuration or the catalog:
    /// chainsmith.toml, a protocol file that was read or is named by the configuration, or
    /// anything under `protocols/`.
    pub fn is_workspace_file(&self, path: &Path) -> bool {
        let Some(root) = &self.root else { return false };
        let candidates = equivalent_paths(path);
        let matches = |p: &Path| same_file(&candidates, p);
        if path.file_name().is_some_and(|n| n == CONFIG_FILE)
            && path.parent().is_some_and(|dir| same_file(&equivalent_paths(dir), root))
        {
            return true;
        }
        // A file under protocols/ (only consulted without [[toolsets]], but a new chainsmith.toml-less
        // layout must be picked up as it appears).
        let protocols = root.join("protocols");
        let protocol_dirs = equivalent_paths(&protocols);
        if candidates.iter().any(|c| protocol_dirs.iter().any(|d| c.starts_with(d))) {
            return true;
        }
        if self.catalog.texts.keys().any(|p| matches(p)) {
            return true;
        }
        if self.catalog.toolsets.iter().flat_map(|t| t.files.iter()).any(|p| matches(p)) {
            return true;
        }
        self.config.toolsets.iter().any(|t| {
            let files: Vec<&String> = match &t.source {
                ToolsetSource::OpenApi(f) | ToolsetSource::Protocol(f) => vec![f],
                ToolsetSource::ToolBench(fs) => fs.iter().collect(),
                ToolsetSource::Mcp(_) => vec![],
            };
            files.into_iter().any(|f| matches(&root.join(f)))
        })
    }
}

/// `path` as given and canonicalized (when it exists), so `/tmp/x` and a symlinked spelling of it
/// compare equal.
fn equivalent_paths(path: &Path) -> Vec<PathBuf> {
    let mut out = vec![crate::files::normalize(path)];
    if let Ok(canonical) = std::fs::canonicalize(path)
        && !out.contains(&canonical)
    {
        out.push(canonical);
    }
    out
}

fn same_file(candidates: &[PathBuf], other: &Path) -> bool {
    equivalent_paths(other).iter().any(|o| candidates.contains(o))
}

/// The path of a document URI: the file path for `file:` URIs, else the URI's path (untitled
/// buffers), so the analysis always has a name to report.
pub fn document_path(uri: &Uri) -> PathBuf {
    if uri.scheme().is_some_and(|s| s.as_str().eq_ignore_ascii_case("file"))
        && let Some(path) = uri.to_file_path()
    {
        return path.into_owned();
    }
    PathBuf::from(uri.path().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranged_and_full_changes() {
        use tower_lsp_server::lsp_types::{Position, Range};
        let mut doc = Document::new("file:///p.py".parse().unwrap(), "p.py".into(), 1, "x = \"😀\"\ny = 1\n".into());
        let change = |l1, c1, l2, c2, text: &str| TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(l1, c1), Position::new(l2, c2))),
            range_length: None,
            text: text.into(),
        };
        // After the emoji (2 UTF-16 units) and its closing quote: column 8 in UTF-16.
        doc.apply_changes(vec![change(0, 8, 0, 8, "!"), change(1, 4, 1, 5, "22")], Encoding::Utf16, 2);
        assert_eq!(doc.parsed.text, "x = \"😀\"!\ny = 22\n");
        assert_eq!(doc.version, 2);
        assert_eq!(doc.line_index.line_count(), 3);
        doc.apply_changes(
            vec![TextDocumentContentChangeEvent { range: None, range_length: None, text: "z = 3\n".into() }],
            Encoding::Utf8,
            3,
        );
        assert_eq!(doc.parsed.text, "z = 3\n");
        assert_eq!(
            doc.parsed.tree.root_node().to_sexp(),
            crate::analysis::parse::parse("z = 3\n").root_node().to_sexp()
        );
    }
}
