//! `chainsmith generate "TASK" [-o FILE] [--yes]` and `chainsmith fix FILE [--yes]`.
//!
//! `generate` prints the program (or writes it to FILE) and reports the LLM calls, the tokens and
//! the search's shape on stderr. `fix` runs FILE; on failure it searches for a fix and writes the
//! fixed program back to FILE only when it ran and answers the task; otherwise FILE is left as it
//! is and the best attempt is printed as a diff against it.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, bail};

use super::{load_workspace, workspace_root};
use crate::config::Config;
use crate::generate::search::Verdict;
use crate::jobs::chain::{self, ChainRequest, Finished, Goal, Options, Searched};
use crate::jobs::{Silent, Workspace};
use crate::runtime::Cancel;
use crate::toolset::Catalog;

fn report(searched: &Searched) {
    eprintln!("chainsmith: {}", searched.summary());
    let outcome = &searched.outcome;
    if !outcome.dropped.is_empty() {
        eprintln!("chainsmith: dropped as broken: {}", outcome.dropped.join(", "));
    }
    for node in outcome.nodes.iter().skip(1) {
        let verdict = match &node.verdict {
            Some(Verdict::Solved(r)) => format!("solved {r}"),
            Some(Verdict::Unsolved(r)) => format!("unsolved: {r}"),
            Some(Verdict::Failed(e)) => format!("failed: {e}"),
            Some(Verdict::NotRun(r)) => format!("not run: {r}"),
            None => "not run".into(),
        };
        let attributed =
            node.attributed.as_ref().map(|(t, how)| format!(" → attributed to {t} ({how:?})")).unwrap_or_default();
        let indent = "  ".repeat(node.depth);
        eprintln!("{indent}#{} {:?}: {verdict}{attributed}", node.id, node.kind);
    }
}

/// The workspace a terminal job runs in: the catalog's retrieval index as configured and ToolNet
/// learnt from the workspace; runs are saved and learnt from.
fn workspace<'a>(
    root: &Path,
    config: Config,
    catalog: Catalog,
    index: &'a crate::toolset::index::CatalogIndex,
) -> Workspace<'a> {
    let toolnet = crate::graph::workspace::WorkspaceGraph::load(&config, &catalog).graph();
    Workspace {
        root: root.to_path_buf(),
        config: Arc::new(config),
        catalog: Arc::new(catalog),
        index,
        toolnet: Some(toolnet),
        mcp: None,
        upstream: Vec::new(),
        learn: true,
    }
}

fn run_job(ws: &Workspace<'_>, request: ChainRequest) -> Result<Finished> {
    let prepared = chain::prepare(ws, request, Options::of(&ws.config.generate)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    Ok(tokio.block_on(prepared.run(&Silent)))
}

/// `chainsmith generate`: exit 0 when a program was found that runs and answers the task.
pub fn generate(root: Option<&Path>, task: &str, out: Option<&Path>, yes: bool, no_plans: bool) -> Result<u8> {
    let root = workspace_root(root, &out.map(|o| vec![o.to_path_buf()]).unwrap_or_default())?;
    let (mut config, catalog) = load_workspace(&root)?;
    if no_plans {
        config.generate.plans = 0;
    }
    let index = super::retrieval_index(&catalog, &config);
    let ws = workspace(&root, config, catalog, &index);
    let program_path = out.map(Path::to_path_buf).unwrap_or_else(|| root.join("generated.py"));
    let request = ChainRequest {
        goal: Goal::Generate { task: task.to_string() },
        tools: Vec::new(),
        program: program_path,
        allow_writes: yes,
        cancel: Cancel::new(),
    };
    let Finished::Searched(searched) = run_job(&ws, request)? else {
        unreachable!("only a fix finds its program already running")
    };
    report(&searched);
    let Some(best) = searched.outcome.best_node() else {
        eprintln!("chainsmith: no program was generated: {}", searched.why());
        return Ok(1);
    };
    let program = format!("\"\"\"{}\"\"\"\n{}", task.trim().replace("\"\"\"", "'''"), best.program);
    match out {
        Some(path) => {
            crate::files::write_named(&root, path, program.as_bytes())?;
            eprintln!("chainsmith: wrote {}", path.display());
        }
        None => print!("{program}"),
    }
    if searched.outcome.solved {
        Ok(0)
    } else {
        eprintln!("chainsmith: the best attempt does not solve the task: {}", searched.why());
        Ok(1)
    }
}

/// `chainsmith fix`: 0 when FILE runs (already, or after the fix written back), 1 otherwise.
pub fn fix(root: Option<&Path>, file: &Path, yes: bool) -> Result<u8> {
    if !file.is_file() {
        bail!("{}: no such file", file.display());
    }
    let root = workspace_root(root, &[file.to_path_buf()])?;
    let (config, catalog) = load_workspace(&root)?;
    let text = crate::files::read_program(file, &root)
        .map_err(|why| anyhow::anyhow!("not fixing {}: {why}", file.display()))?;
    let index = super::retrieval_index(&catalog, &config);
    let ws = workspace(&root, config, catalog, &index);
    let request = ChainRequest {
        goal: Goal::Fix { text: text.clone() },
        tools: Vec::new(),
        program: file.to_path_buf(),
        allow_writes: yes,
        cancel: Cancel::new(),
    };
    let searched = match run_job(&ws, request)? {
        Finished::AlreadyRuns => {
            eprintln!("chainsmith: {} runs without error; nothing to fix", file.display());
            return Ok(0);
        }
        Finished::Searched(searched) => searched,
    };
    report(&searched);
    match (&searched.program, searched.outcome.best_node()) {
        (Some(fixed), Some(best)) if *fixed != text => {
            crate::files::write_named(&root, file, fixed.as_bytes())?;
            eprintln!("chainsmith: fixed {} (attempt #{})", file.display(), best.id);
            Ok(0)
        }
        (Some(_), _) => {
            eprintln!("chainsmith: {} runs as it is", file.display());
            Ok(0)
        }
        (None, best) => {
            eprintln!("chainsmith: no fix found ({}); {} is unchanged", searched.why(), file.display());
            if let Some(best) = best.filter(|b| b.program != text) {
                print!("{}", diff(&file.display().to_string(), &text, &best.program));
            }
            Ok(1)
        }
    }
}

/// A line diff (longest common subsequence), unified-style without hunks.
pub fn diff(name: &str, before: &str, after: &str) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut out = format!("--- {name}\n+++ {name} (best attempt)\n");
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!(" {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+{}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{}\n", a[i]));
            i += 1;
        }
    }
    out
}
