//! `chainsmith graph show | import | eval`.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::editor::display_name;
use super::eval::{self, ToolInfo};
use super::import::{self, Kind, Resolver};
use super::store::{ImportedSet, STORE_PATH, Store};
use super::trace::TraceEvaluator;
use super::workspace::{WorkspaceGraph, run_record};
use super::{END, START, ToolGraph, integer_weight};
use crate::cli::{load_workspace, workspace_root};
use crate::toolset::Catalog;

#[derive(clap::Subcommand, Debug, Clone)]
pub enum GraphCommand {
    /// Show each node's heaviest successors, with integer weights (0–100).
    Show {
        /// Graphviz DOT instead of text.
        #[arg(long)]
        dot: bool,
        /// Only this node (a tool id, a bare tool name, `start`).
        #[arg(long)]
        from: Option<String>,
        /// Successors shown per node.
        #[arg(long, default_value_t = 5)]
        top: usize,
    },
    /// Add trajectory files to .chainsmith/toolnet.json: RestBench task files, ToolBench DFSDT
    /// answer files, JSONL tool-id sequences, run traces. Importing a file again replaces it.
    Import {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Cross-validated next-tool prediction on a trajectory file (hit@1/3/5, MRR, candidates).
    Eval {
        #[arg(long)]
        trajectories: PathBuf,
        #[arg(long, default_value_t = 5)]
        folds: usize,
    },
}

/// Runs a `graph` subcommand. Exit codes: 0 fine, 1 a file could not be used, 2 usage errors
/// (returned as `Err`).
pub fn run(root: Option<&Path>, command: GraphCommand) -> Result<u8> {
    let root = workspace_root(root, &[]);
    match command {
        GraphCommand::Show { dot, from, top } => show(&root, dot, from.as_deref(), top),
        GraphCommand::Import { files } => import_files(&root, &files),
        GraphCommand::Eval { trajectories, folds } => evaluate(&root, &trajectories, folds),
    }
}

fn resolve_node(catalog: &Catalog, graph: &ToolGraph, name: &str) -> Result<String> {
    if name == START || name == END || graph.contains(name) {
        return Ok(name.to_string());
    }
    match catalog.find(name) {
        Ok(tool) => Ok(tool.id()),
        Err(message) => bail!("{message}"),
    }
}

fn show(root: &Path, dot: bool, from: Option<&str>, top: usize) -> Result<u8> {
    let (config, catalog) = load_workspace(root)?;
    let inputs = WorkspaceGraph::load(&config, &catalog);
    for problem in inputs.problems() {
        eprintln!("{}: {}[{}]: {}", problem.file.display(), problem.severity.as_str(), problem.code, problem.message);
    }
    let text = render(&inputs, &catalog, dot, from, top)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(0)
}

/// `graph show` as text (or DOT): each node's top successors with integer weights and its recent
/// reliability. The editor's `chainsmith.graph` command answers with the same.
pub fn render(
    inputs: &WorkspaceGraph,
    catalog: &crate::toolset::Catalog,
    dot: bool,
    from: Option<&str>,
    top: usize,
) -> Result<String> {
    use std::fmt::Write as _;
    let graph = inputs.graph();
    let nodes: Vec<String> = match from {
        Some(name) => vec![resolve_node(catalog, &graph, name)?],
        None => {
            let mut nodes: Vec<String> =
                graph.nodes().filter(|n| *n != END && graph.out_count(n) > 0).map(str::to_string).collect();
            // `start` first, then the tools in order.
            nodes.sort_by_key(|n| (n != START, n.clone()));
            nodes
        }
    };
    let top = top.max(1);
    let mut out = String::new();
    if dot {
        writeln!(out, "digraph toolnet {{")?;
        writeln!(out, "  rankdir=LR;")?;
        writeln!(out, "  node [shape=box];")?;
        writeln!(out, "  \"{START}\" [shape=circle];")?;
        writeln!(out, "  \"{END}\" [shape=doublecircle];")?;
        for node in &nodes {
            if let Some(score) = graph.score(node)
                && score.failing_lately()
            {
                writeln!(out, "  {} [color=red];", quoted(node))?;
            }
            for (to, w) in graph.successors(node).into_iter().take(top) {
                let w = integer_weight(w);
                writeln!(
                    out,
                    "  {} -> {} [label=\"{w}\", penwidth={:.1}];",
                    quoted(node),
                    quoted(to),
                    1.0 + w as f64 / 25.0
                )?;
            }
        }
        writeln!(out, "}}")?;
        return Ok(out);
    }
    let (imported, programs, runs) = inputs.counts();
    writeln!(
        out,
        "ToolNet: {} edges from {imported} imported trajectories, {programs} programs and {runs} runs (alpha {}, beta {})",
        graph.edge_count(),
        graph.alpha,
        graph.beta
    )?;
    for node in &nodes {
        let successors = graph.successors(node);
        let shown: Vec<String> = successors
            .iter()
            .take(top)
            .map(|(to, w)| format!("{} {}", display_name(to, node), integer_weight(*w)))
            .collect();
        let more = successors.len().saturating_sub(top);
        let more = if more > 0 { format!(" (+{more} more)") } else { String::new() };
        if shown.is_empty() {
            writeln!(out, "{node} → (no successor yet)")?;
        } else {
            writeln!(out, "{node} → {}{more}", shown.join(" · "))?;
        }
        if let Some(score) = graph.score(node) {
            let recent: Vec<String> = score.recent.iter().map(|s| format!("{s:+}")).collect();
            writeln!(
                out,
                "    score {:+.1} over {} runs; recent {}{}",
                score.total,
                score.runs,
                recent.join(" "),
                if score.failing_lately() { " — failing lately" } else { "" }
            )?;
        }
    }
    Ok(out)
}

fn quoted(id: &str) -> String {
    format!("\"{}\"", id.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `file` relative to `root` (with `..` when outside it), `/`-separated: the store's key.
fn relative_key(root: &Path, file: &Path) -> String {
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or(p.into()));
    let (root, file) = (absolute(root), absolute(file));
    let r: Vec<Component> = root.components().collect();
    let f: Vec<Component> = file.components().collect();
    let common = r.iter().zip(&f).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), r.len() - common).collect();
    parts.extend(f[common..].iter().map(|c| c.as_os_str().to_string_lossy().to_string()));
    parts.join("/")
}

/// How many notes per file are printed before the rest are counted.
const MAX_NOTES: usize = 20;

/// A file's import notes on stderr, at most [`MAX_NOTES`] of them.
fn print_notes(file: &Path, notes: &[String]) {
    for note in notes.iter().take(MAX_NOTES) {
        eprintln!("{}: {note}", file.display());
    }
    if notes.len() > MAX_NOTES {
        eprintln!("{}: … and {} more", file.display(), notes.len() - MAX_NOTES);
    }
}

fn import_files(root: &Path, files: &[PathBuf]) -> Result<u8> {
    let (_, catalog) = load_workspace(root)?;
    // A store that cannot be read is reported and left alone: nothing is imported.
    let mut store = Store::load(root)?;
    let resolver = Resolver::new(&catalog);
    let mut failed = false;
    let mut changed = false;
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{}: cannot read: {e}", file.display());
                failed = true;
                continue;
            }
        };
        let imported = match import::read(&text, &resolver) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                failed = true;
                continue;
            }
        };
        print_notes(file, &imported.notes);
        if imported.kind == Kind::Trace {
            let trace = imported.trace.as_ref().expect("a trace file carries its trace");
            let name = file.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            store.runs.insert(name.clone(), run_record(trace, &TraceEvaluator));
            println!("{}: run {name} ({} successful calls)", file.display(), trace.trajectory().len());
            changed = true;
            continue;
        }
        let steps: usize = imported.trajectories.iter().map(|t| t.tools.len()).sum();
        println!(
            "{}: {} trajectories ({steps} calls) from a {} file; {} repaired, {} left out",
            file.display(),
            imported.trajectories.len(),
            imported.kind.as_str(),
            imported.repaired,
            imported.dropped
        );
        let key = relative_key(root, file);
        store
            .imports
            .insert(key, ImportedSet { kind: imported.kind.as_str().into(), trajectories: imported.trajectories });
        changed = true;
    }
    if changed {
        let written = store.save(root)?;
        println!("wrote {}", written.display());
    } else {
        println!("nothing imported; {STORE_PATH} unchanged");
    }
    Ok(u8::from(failed))
}

fn evaluate(root: &Path, trajectories: &Path, folds: usize) -> Result<u8> {
    if folds < 2 {
        bail!("--folds must be at least 2");
    }
    let (_, catalog) = load_workspace(root)?;
    let text =
        std::fs::read_to_string(trajectories).with_context(|| format!("cannot read {}", trajectories.display()))?;
    let mut resolver = Resolver::new(&catalog);
    resolver.keep_unknown = true;
    let imported = import::read(&text, &resolver).map_err(|e| anyhow::anyhow!("{}: {e}", trajectories.display()))?;
    print_notes(trajectories, &imported.notes);
    let data: Vec<_> = imported.trajectories.into_iter().filter(|t| !t.tools.is_empty()).collect();
    if data.len() < folds {
        bail!("{}: {} trajectories, fewer than the {folds} folds", trajectories.display(), data.len());
    }
    let steps: usize = data.iter().map(|t| t.tools.len()).sum();
    let info = ToolInfo::new(&catalog);
    let results = eval::evaluate(&data, &info, folds);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(
        out,
        "trajectories {} · steps {steps} · folds {folds} (trajectory i in fold i mod {folds}) · {} tools in the workspace",
        data.len(),
        catalog.tool_count()
    )?;
    for result in &results {
        writeln!(out)?;
        writeln!(out, "{} — {}", result.variant.name(), result.variant.description())?;
        for line in result.metrics.lines() {
            writeln!(out, "{line}")?;
        }
        if !result.lambdas.is_empty() {
            let lambdas: Vec<String> = result.lambdas.iter().map(|l| format!("{l}")).collect();
            writeln!(out, "lambda {} (per fold, chosen on its training part)", lambdas.join(" "))?;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_relative_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("data/t.json"), "[]").unwrap();
        std::fs::write(dir.path().join("outside.jsonl"), "").unwrap();
        assert_eq!(relative_key(&root, &root.join("data/t.json")), "data/t.json");
        assert_eq!(relative_key(&root, &dir.path().join("outside.jsonl")), "../outside.jsonl");
    }
}
