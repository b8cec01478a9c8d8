//! The graph of a workspace: the store, the programs and the runs, kept ready to rebuild.
//!
//! [`WorkspaceGraph`] holds the graph's inputs and rebuilds the [`ToolGraph`] from them on demand
//! (a few hundred trajectories: microseconds). Refreshing is incremental: the store is re-read only
//! when its file changed, a trace only when it is new, and a program only when the editor hands over
//! its new call sequence ([`WorkspaceGraph::set_program`]). Loading never writes anything: runs found
//! in `.chainsmith/runs/` but not yet in the store are used in memory until
//! [`WorkspaceGraph::absorb_runs`] (or [`learn_run`]) records them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::store::{RunRecord, Store, StoreError};
use super::trace::{Evaluator, TraceEvaluator, TraceSummary};
use super::{ToolGraph, Trajectory};
use crate::analysis::{self, Analysis, parse};
use crate::config::{Config, ToolnetConfig};
use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;
use crate::toolset::Catalog;

/// Where the runtime writes traces, relative to the workspace root.
pub const RUNS_DIR: &str = ".chainsmith/runs";

/// A file's identity for change detection.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The tool ids of a program's calls, in program order (calls to unknown tools left out).
pub fn program_tools(analysis: &Analysis<'_>) -> Vec<String> {
    analysis.calls.iter().filter_map(|c| c.tool.map(|t| t.id())).collect()
}

/// A run as the store keeps it: its successful-call trajectory and the evaluator's scores.
pub fn run_record(trace: &TraceSummary, evaluator: &dyn Evaluator) -> RunRecord {
    RunRecord {
        program: trace.program.clone(),
        started: trace.started.as_ref().and_then(|s| s.as_str()).map(str::to_string),
        ok: trace.succeeded(),
        answered: trace.answered,
        tools: trace.trajectory(),
        scores: evaluator.evaluate(trace),
    }
}

/// Reads a trace file of the workspace `root`'s runs.
pub fn read_trace(root: &Path, path: &Path) -> Result<TraceSummary, String> {
    let text = crate::files::read_state(root, path, crate::files::MAX_READ, crate::files::MAX_RECORD_VALUES)
        .map_err(|e| format!("cannot read the trace: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("not a run trace: {e}"))
}

/// Records one run in the workspace's store (what the runtime calls after writing a trace).
/// `name` is the trace's file name; a run already recorded under that name is replaced.
pub fn learn_run(root: &Path, name: &str, trace: &TraceSummary, evaluator: &dyn Evaluator) -> Result<(), StoreError> {
    let mut store = Store::load(root)?;
    store.runs.insert(name.to_string(), run_record(trace, evaluator));
    store.save(root).map(|_| ())
}

/// The graph's inputs for one workspace.
#[derive(Debug)]
pub struct WorkspaceGraph {
    root: PathBuf,
    config: ToolnetConfig,
    diagnostics: crate::config::DiagnosticsConfig,
    store: Store,
    store_stamp: Stamp,
    store_problem: Option<Diagnostic>,
    /// Program file → its calls' tool ids.
    programs: BTreeMap<PathBuf, Vec<String>>,
    /// Trace file name → (stamp, the run, or why it could not be read), for traces not in the store.
    runs: BTreeMap<String, (Stamp, Result<RunRecord, String>)>,
    /// The workspace's tools: nodes even before anyone uses them.
    tools: Vec<String>,
}

impl WorkspaceGraph {
    /// Reads the store, every program and every trace of the workspace.
    pub fn load(config: &Config, catalog: &Catalog) -> Self {
        let mut graph = WorkspaceGraph {
            root: config.root.clone(),
            config: config.toolnet.clone(),
            diagnostics: config.diagnostics.clone(),
            store: Store::default(),
            store_stamp: None,
            store_problem: None,
            programs: BTreeMap::new(),
            runs: BTreeMap::new(),
            tools: Vec::new(),
        };
        graph.set_catalog(catalog);
        graph.reload_store();
        graph.refresh_runs();
        graph.analyse_programs(catalog);
        graph
    }

    /// Empty inputs for a root (no file is read): for tests and for callers that feed programs themselves.
    pub fn empty(root: &Path, config: &ToolnetConfig) -> Self {
        WorkspaceGraph {
            root: root.to_path_buf(),
            config: config.clone(),
            diagnostics: Default::default(),
            store: Store::default(),
            store_stamp: None,
            store_problem: None,
            programs: BTreeMap::new(),
            runs: BTreeMap::new(),
            tools: Vec::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The tools that are nodes even without edges (after a catalog reload).
    pub fn set_catalog(&mut self, catalog: &Catalog) {
        self.tools = catalog.tools().map(|t| t.id()).collect();
    }

    /// Re-reads what changed on disk: the store (when its file changed) and the traces (new,
    /// changed or removed files). Cheap when nothing changed: a few `stat`s.
    pub fn refresh(&mut self) {
        if stamp(&Store::path(&self.root)) != self.store_stamp || self.store_problem.is_some() {
            self.reload_store();
        }
        self.refresh_runs();
    }

    /// Replaces one program's call sequence (on save, from the editor's analysis).
    pub fn set_program(&mut self, file: &Path, tools: Vec<String>) {
        self.programs.insert(file.to_path_buf(), tools);
    }

    pub fn remove_program(&mut self, file: &Path) {
        self.programs.remove(file);
    }

    /// Parses and analyses every `.py` file of the workspace.
    pub fn analyse_programs(&mut self, catalog: &Catalog) {
        self.programs.clear();
        let mut parser = parse::parser();
        for file in crate::analysis::python_files(&self.root) {
            let Ok(text) = crate::files::read_python(&file) else { continue };
            let Some(tree) = parser.parse(&text, None) else { continue };
            let analysis = analysis::analyze(&file, &text, &tree, catalog, &self.diagnostics);
            // A program the checks reject (unknown tools, wrong arguments) teaches no transitions.
            if analysis.diagnostics.iter().any(|d| d.severity == crate::diagnostic::Severity::Error) {
                continue;
            }
            self.programs.insert(file, program_tools(&analysis));
        }
    }

    fn reload_store(&mut self) {
        let path = Store::path(&self.root);
        self.store_stamp = stamp(&path);
        match Store::load(&self.root) {
            Ok(store) => {
                self.store = store;
                self.store_problem = None;
            }
            Err(e) => {
                self.store = Store::default();
                let at = ByteRange::new(e.offset(), e.offset());
                self.store_problem = Some(Diagnostic::warning(e.file(), at, "invalid-toolnet", e.to_string()));
            }
        }
    }

    fn refresh_runs(&mut self) {
        let dir = self.root.join(RUNS_DIR);
        let mut seen = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
                if self.store.runs.contains_key(&name) {
                    continue;
                }
                let now = stamp(&path);
                match self.runs.remove(&name) {
                    Some((old, run)) if old == now => {
                        seen.insert(name, (old, run));
                    }
                    _ => {
                        let run = read_trace(&self.root, &path).map(|t| run_record(&t, &TraceEvaluator));
                        seen.insert(name, (now, run));
                    }
                }
            }
        }
        self.runs = seen;
    }

    /// Records the runs not yet in the store. Returns how many were added.
    pub fn absorb_runs(&mut self) -> Result<usize, StoreError> {
        let mut store = Store::load(&self.root)?;
        let mut added = 0;
        for (name, (_, run)) in &self.runs {
            if let Ok(run) = run
                && !store.runs.contains_key(name)
            {
                store.runs.insert(name.clone(), run.clone());
                added += 1;
            }
        }
        if added > 0 {
            store.save(&self.root)?;
        }
        self.reload_store();
        self.refresh_runs();
        Ok(added)
    }

    /// Problems met: a corrupt or foreign store, unreadable traces.
    pub fn problems(&self) -> Vec<Diagnostic> {
        let mut out: Vec<Diagnostic> = self.store_problem.iter().cloned().collect();
        for (name, (_, run)) in &self.runs {
            if let Err(why) = run {
                out.push(Diagnostic::warning(
                    self.root.join(RUNS_DIR).join(name),
                    ByteRange::default(),
                    "invalid-trace",
                    format!("{name}: {why}; ToolNet ignores it"),
                ));
            }
        }
        out
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// How many inputs of each kind: (imported trajectories, programs with calls, runs).
    pub fn counts(&self) -> (usize, usize, usize) {
        let imported = self.store.imports.values().map(|s| s.trajectories.len()).sum();
        let programs = self.programs.values().filter(|p| !p.is_empty()).count();
        let runs = self.store.runs.len() + self.runs.values().filter(|(_, r)| r.is_ok()).count();
        (imported, programs, runs)
    }

    /// Every trajectory with a task text (imports only), for task relevance.
    pub fn trajectories(&self) -> impl Iterator<Item = &Trajectory> {
        self.store.imports.values().flat_map(|s| s.trajectories.iter())
    }

    /// Builds the graph: tools as nodes, then imported trajectories, programs and runs (in run
    /// order, which Eq. 6's accumulation follows).
    pub fn graph(&self) -> ToolGraph {
        self.graph_excluding(None)
    }

    /// [`WorkspaceGraph::graph`] without one program's own calls: hints in a file then show what
    /// the rest of the workspace does, not the file echoing itself.
    pub fn graph_excluding(&self, program: Option<&Path>) -> ToolGraph {
        let mut graph = self.edges_excluding(program);
        for tool in &self.tools {
            graph.add_node(tool);
        }
        graph
    }

    /// The graph's edges and scores only, without the workspace's unused tools as nodes: what the
    /// editor's hints, ranking and hover read. At ToolBench scale this skips thousands of nodes.
    pub fn edges_excluding(&self, program: Option<&Path>) -> ToolGraph {
        let mut graph = ToolGraph::new(&self.config);
        for set in self.store.imports.values() {
            for t in &set.trajectories {
                graph.add_trajectory(&t.tools);
            }
        }
        for (file, tools) in &self.programs {
            if Some(file.as_path()) != program {
                graph.add_trajectory(tools);
            }
        }
        let mut runs: BTreeMap<&str, &RunRecord> = self.store.runs.iter().map(|(k, v)| (k.as_str(), v)).collect();
        for (name, (_, run)) in &self.runs {
            if let Ok(run) = run {
                runs.entry(name.as_str()).or_insert(run);
            }
        }
        for run in runs.values() {
            graph.add_trajectory(&run.tools);
            graph.record_scores(&run.scores);
        }
        graph
    }
}
