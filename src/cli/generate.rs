//! `chainsmith generate "TASK" [-o FILE] [--yes]` and `chainsmith fix FILE [--yes]`.
//!
//! `generate` prints the program (or writes it to FILE) and reports the LLM calls, the tokens and
//! the search's shape on stderr. `fix` runs FILE; on failure it searches for a fix and writes the
//! fixed program back to FILE only when it ran and answers the task; otherwise FILE is left as it
//! is and the best attempt is printed as a diff against it.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};

use super::{load_workspace, workspace_root};
use crate::config::Config;
use crate::generate::reflect::{Execution, Runner};
use crate::generate::search::{self, Outcome, Request, Settings, Verdict};
use crate::llm;
use crate::runtime::Cancel;
use crate::toolset::Catalog;

fn report(client: &llm::Client, outcome: &Outcome) {
    eprintln!(
        "chainsmith: {} LLM call{}, {}; search: {}",
        client.meter.requests(),
        if client.meter.requests() == 1 { "" } else { "s" },
        client.meter.usage(),
        outcome.shape()
    );
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

fn setup(config: &Config) -> Result<(llm::Client, Settings)> {
    let client = llm::Client::new(&config.llm).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((client, Settings::from_config(&config.generate)))
}

fn runner(root: &Path, program: &Path, config: Config, catalog: Catalog, yes: bool) -> Runner {
    Runner {
        root: root.to_path_buf(),
        program: program.to_path_buf(),
        config: Arc::new(config),
        catalog: Arc::new(catalog),
        allow_writes: yes,
        cancel: Cancel::new(),
        mcp: None,
        upstream: Vec::new(),
        learn: true,
    }
}

/// Generation runs every attempt: with an interpreter the workspace is not trusted with, none
/// could run, so nothing is asked of the model.
fn refuse_untrusted_interpreter(config: &crate::config::Config, catalog: &crate::toolset::Catalog) -> Result<()> {
    match crate::runtime::untrusted_interpreter(config, catalog) {
        Some(why) => bail!("not running any program: {why}"),
        None => Ok(()),
    }
}

/// `chainsmith generate`: exit 0 when a program was found that runs and answers the task.
pub fn generate(root: Option<&Path>, task: &str, out: Option<&Path>, yes: bool) -> Result<u8> {
    let root = workspace_root(root, &out.map(|o| vec![o.to_path_buf()]).unwrap_or_default());
    let (config, catalog) = load_workspace(&root)?;
    refuse_untrusted_interpreter(&config, &catalog)?;
    let (client, settings) = setup(&config)?;
    let graph = crate::graph::workspace::WorkspaceGraph::load(&config, &catalog).graph();
    let selected = search::named_tools(task, &catalog);
    let index = super::retrieval_index(&catalog, &config);
    let (candidates, allowed) =
        search::candidates(task, &catalog, &index, config.generate.candidates, &selected, Some(&graph));
    if candidates.is_empty() {
        bail!("no tool of the workspace matches the task");
    }
    let program_path = out.map(Path::to_path_buf).unwrap_or_else(|| root.join("generated.py"));
    let runner = runner(&root, &program_path, config, catalog, yes);
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let outcome = tokio.block_on(search::search(
        Request { task, candidates, allowed, given: None, judge: true },
        &runner.catalog,
        &index,
        &client,
        &runner,
        &settings,
    ));
    report(&client, &outcome);
    let Some(best) = outcome.best_node() else {
        let why = outcome.stop.as_ref().map(ToString::to_string).unwrap_or_default();
        eprintln!("chainsmith: no program was generated: {why}");
        return Ok(1);
    };
    let program = format!("\"\"\"{}\"\"\"\n{}", task.trim().replace("\"\"\"", "'''"), best.program);
    match out {
        Some(path) => {
            std::fs::write(path, &program).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("chainsmith: wrote {}", path.display());
        }
        None => print!("{program}"),
    }
    if outcome.solved {
        Ok(0)
    } else {
        let why = outcome.stop.as_ref().map(ToString::to_string).unwrap_or_default();
        eprintln!("chainsmith: the best attempt does not solve the task: {why}");
        Ok(1)
    }
}

/// `chainsmith fix`: 0 when FILE runs (already, or after the fix written back), 1 otherwise.
pub fn fix(root: Option<&Path>, file: &Path, yes: bool) -> Result<u8> {
    if !file.is_file() {
        bail!("{}: no such file", file.display());
    }
    let root = workspace_root(root, &[file.to_path_buf()]);
    let (config, catalog) = load_workspace(&root)?;
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    refuse_untrusted_interpreter(&config, &catalog)?;
    let (client, settings) = setup(&config)?;
    let task = search::task_of(&text);
    let selected = task.as_deref().map(|t| search::named_tools(t, &catalog)).unwrap_or_default();
    let called: Vec<String> = {
        let tree = crate::analysis::parse::parse(&text);
        let analysis = crate::analysis::analyze(file, &text, &tree, &catalog, &Default::default());
        crate::graph::workspace::program_tools(&analysis)
    };
    let query = format!("{} {}", task.clone().unwrap_or_default(), called.join(" "));
    let index = super::retrieval_index(&catalog, &config);
    let (mut candidates, allowed) =
        search::candidates(&query, &catalog, &index, config.generate.candidates, &selected, None);
    for id in called.iter().rev() {
        if !candidates.contains(id) {
            candidates.insert(0, id.clone());
        }
    }
    let runner = runner(&root, file, config, catalog, yes);
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // A program that already runs needs no fix.
    if let Execution::Ran(first) = tokio.block_on(runner.execute(&text, None))
        && first.trace.ok
        && first.exit_status() == 0
    {
        eprintln!("chainsmith: {} runs without error; nothing to fix", file.display());
        return Ok(0);
    }
    let task_text = task.clone().unwrap_or_else(|| "make this program run without errors".into());
    let outcome = tokio.block_on(search::search(
        Request { task: &task_text, candidates, allowed, given: Some(text.clone()), judge: task.is_some() },
        &runner.catalog,
        &index,
        &client,
        &runner,
        &settings,
    ));
    report(&client, &outcome);
    match outcome.best_node() {
        Some(best) if outcome.solved && best.program != text => {
            let fixed = search::with_header(&text, &best.program);
            std::fs::write(file, &fixed).with_context(|| format!("cannot write {}", file.display()))?;
            eprintln!("chainsmith: fixed {} (attempt #{})", file.display(), best.id);
            Ok(0)
        }
        Some(best) if outcome.solved => {
            eprintln!("chainsmith: {} runs as it is", file.display());
            let _ = best;
            Ok(0)
        }
        best => {
            let why = outcome.stop.as_ref().map(ToString::to_string).unwrap_or_default();
            eprintln!("chainsmith: no fix found ({why}); {} is unchanged", file.display());
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
