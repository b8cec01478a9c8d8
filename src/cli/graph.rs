//! `chainsmith graph show | import | eval`: the terminal over ToolNet (`crate::graph`).

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{load_workspace, workspace_root};
use crate::graph::import::{self, Kind, Resolver};
use crate::graph::prediction::{self, ToolInfo};
use crate::graph::render::{render, render_svg};
use crate::graph::store::{ImportedSet, STORE_PATH, Store};
use crate::graph::trace::TraceEvaluator;
use crate::graph::workspace::{WorkspaceGraph, run_record};

#[derive(clap::Subcommand, Debug, Clone)]
pub enum GraphCommand {
    /// Show each node's heaviest successors, with integer weights (0–100).
    Show {
        /// Graphviz DOT instead of text.
        #[arg(long, conflicts_with = "svg")]
        dot: bool,
        /// An SVG picture instead of text (tools failing lately in red).
        #[arg(long)]
        svg: bool,
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
    let root = workspace_root(root, &[])?;
    match command {
        GraphCommand::Show { dot, svg, from, top } => show(&root, dot, svg, from.as_deref(), top),
        GraphCommand::Import { files } => import_files(&root, &files),
        GraphCommand::Eval { trajectories, folds } => evaluate(&root, &trajectories, folds),
    }
}

fn show(root: &Path, dot: bool, svg: bool, from: Option<&str>, top: usize) -> Result<u8> {
    let (config, catalog) = load_workspace(root)?;
    let inputs = WorkspaceGraph::load(&config, &catalog);
    for problem in inputs.problems() {
        eprintln!("{}: {}[{}]: {}", problem.file.display(), problem.severity.as_str(), problem.code, problem.message);
    }
    let text =
        if svg { render_svg(&inputs, &catalog, from, top, &[])? } else { render(&inputs, &catalog, dot, from, top)? };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(0)
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
        let text = match crate::files::read_text(file, crate::files::MAX_READ) {
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
    let text = crate::files::read_text(trajectories, crate::files::MAX_READ)
        .with_context(|| format!("cannot read {}", trajectories.display()))?;
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
    let results = prediction::evaluate(&data, &info, folds);
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
        if !result.weights.is_empty() {
            let lambdas: Vec<String> = result.weights.iter().map(|w| format!("{}", w.lambda)).collect();
            writeln!(out, "lambda {} (per fold, chosen on its training part)", lambdas.join(" "))?;
            if result.variant == prediction::Variant::Combined {
                let flows: Vec<String> = result.weights.iter().map(|w| format!("{}", w.flow)).collect();
                let repeats: Vec<String> = result.weights.iter().map(|w| format!("{}", w.repeat)).collect();
                writeln!(out, "flow bonus {} · repeat damping {} (likewise)", flows.join(" "), repeats.join(" "))?;
            }
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
