//! `chainsmith eval TASKS…` and `chainsmith eval merge RESULTS…`: see [`crate::eval`].
//!
//! Records go to a JSON-lines file, one per (variant, task), written as each task ends: a run that
//! stops (interrupted, out of time) is resumed by running the same command again, and shards of one
//! evaluation (`--shard i/n` on several machines) are joined by `eval merge`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};

use super::{load_workspace, workspace_root};
use crate::eval::{Bench, TaskRecord, Variant, table};
use crate::generate::search::Settings;
use crate::mock::MockServer;

#[derive(clap::Args, Debug, Clone)]
pub struct EvalArgs {
    /// Benchmark task files (RestBench `tmdb.json`; ToolBench / StableToolBench query files).
    pub files: Vec<PathBuf>,
    /// Which tasks: the first N (`30`) or a range of indices (`10..40`).
    #[arg(long)]
    pub tasks: Option<String>,
    /// Only tasks whose index is i modulo n (`--shard 0/3`), to split a run across machines.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The JSON-lines results file (default `.chainsmith/eval/<variant>.jsonl`); tasks already in it are skipped.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Use the real APIs instead of a mock built from their protocols.
    #[arg(long)]
    pub live: bool,
    /// Print the summary as JSON.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Ablation: static problems are not fed back to the model.
    #[arg(long)]
    pub no_static_feedback: bool,
    /// Ablation: revisions under one attempt (ATC's α; 0 disables attributable reflection).
    #[arg(long)]
    pub reflections: Option<usize>,
    /// Ablation: children per DFSDT node (1 disables the search over alternatives).
    #[arg(long)]
    pub width: Option<usize>,
    /// Candidates shown to the model: a number, or `all` for the whole spec.
    #[arg(long)]
    pub candidates: Option<String>,
    /// ToolNet's prior: the gold solutions of the tasks in this file (same formats as the task
    /// files) — other tasks than those scored; without it, ToolNet knows nothing.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Which tasks of the history file: the first N or a range (`0..30`); all by default.
    #[arg(long, value_name = "RANGE", requires = "history")]
    pub history_tasks: Option<String>,
    /// Ablation: no ToolNet, not even from `--history`.
    #[arg(long)]
    pub no_toolnet: bool,
    /// Ablation: the model plans alone; the planner's chains are not shown with the tools.
    #[arg(long)]
    pub no_plans: bool,
    /// A name for this configuration in the results (default: derived from the flags).
    #[arg(long)]
    pub label: Option<String>,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum EvalCommand {
    /// Join results files (shards, variants) and print the table.
    Merge {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Only the tasks every variant has answered, so rows of unfinished runs compare alike.
        #[arg(long)]
        common: bool,
    },
}

/// The variant the flags describe, from the workspace's `[generate]` settings.
fn variant(args: &EvalArgs, settings: Settings, default_candidates: usize) -> Result<Variant> {
    let mut settings = settings;
    let mut parts: Vec<String> = Vec::new();
    if args.no_static_feedback {
        settings.static_feedback = false;
        parts.push("no-static-feedback".into());
    }
    if let Some(alpha) = args.reflections {
        settings.reflections = alpha;
        parts.push(format!("alpha{alpha}"));
    }
    if args.no_plans {
        settings.plans = 0;
        parts.push("no-plans".into());
    }
    if let Some(width) = args.width {
        settings.width = width.max(1);
        parts.push(format!("width{width}"));
    }
    let candidates = match args.candidates.as_deref() {
        None => Some(default_candidates),
        Some("all") => {
            parts.push("all-candidates".into());
            None
        }
        Some(n) => {
            let n: usize = n.parse().with_context(|| format!("--candidates takes a number or `all`, not `{n}`"))?;
            parts.push(format!("candidates{n}"));
            Some(n)
        }
    };
    if args.no_toolnet {
        parts.push("no-toolnet".into());
    }
    let label = args.label.clone().unwrap_or_else(|| if parts.is_empty() { "full".into() } else { parts.join("+") });
    Ok(Variant { label, settings, candidates, toolnet: !args.no_toolnet })
}

/// `10..40` or `30` (the first 30) over `total` tasks.
pub(crate) fn task_range(spec: Option<&str>, total: usize) -> Result<std::ops::Range<usize>> {
    let Some(spec) = spec else { return Ok(0..total) };
    let range = match spec.split_once("..") {
        Some((a, b)) => {
            let start: usize = a.trim().parse().with_context(|| format!("bad --tasks `{spec}`"))?;
            let end: usize = b.trim().parse().with_context(|| format!("bad --tasks `{spec}`"))?;
            start..end
        }
        None => 0..spec.trim().parse::<usize>().with_context(|| format!("bad --tasks `{spec}`"))?,
    };
    Ok(range.start.min(total)..range.end.min(total))
}

fn shard(spec: Option<&str>) -> Result<(usize, usize)> {
    let Some(spec) = spec else { return Ok((0, 1)) };
    let parse = || -> Option<(usize, usize)> {
        let (i, n) = spec.split_once('/')?;
        let (i, n) = (i.trim().parse().ok()?, n.trim().parse().ok()?);
        (n > 0 && i < n).then_some((i, n))
    };
    parse().with_context(|| format!("--shard takes I/N with I < N, not `{spec}`"))
}

/// The history's tasks (`range` of `file`), refused where they are tasks being scored: a figure
/// whose own tasks taught ToolNet measures nothing a user with a new API gets.
fn history(
    file: &Path,
    range: Option<&str>,
    scored_files: &[PathBuf],
    scored: &std::ops::Range<usize>,
    catalog: &crate::toolset::Catalog,
) -> Result<Vec<crate::generate::retrieve::Query>> {
    let (tasks, _) = super::retrieve::read_task_files(&[file.to_path_buf()], catalog)?;
    let taken = task_range(range, tasks.len())?;
    if scored_files.iter().any(|scored| super::same_file(file, scored)) {
        if scored_files.len() > 1 {
            bail!("--history {} is one of the task files being scored; name another file", file.display());
        }
        if taken.start < scored.end && scored.start < taken.end {
            bail!(
                "--history-tasks {}..{} overlap the tasks being scored ({}..{}): ToolNet may learn only from other tasks",
                taken.start,
                taken.end,
                scored.start,
                scored.end
            );
        }
    }
    Ok(tasks[taken].to_vec())
}

/// The records of a results file; `workspace` names the workspace whose own file it is (the
/// default one in `.chainsmith/eval`), read only where it lies inside it.
pub fn read_records(path: &Path, workspace: Option<&Path>) -> Result<Vec<TaskRecord>> {
    let read = match workspace {
        Some(root) => crate::files::read_state(root, path, crate::files::MAX_READ, crate::files::MAX_RECORD_VALUES),
        None => crate::files::read_text(path, crate::files::MAX_READ),
    };
    let text = match read {
        Ok(text) => text,
        Err(e) if e.not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut records = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        // A line cut off by an interrupted run is the only damage a resumed run can meet.
        match serde_json::from_str(line) {
            Ok(record) => records.push(record),
            Err(e) => eprintln!("{}:{}: skipped, not a result record: {e}", path.display(), n + 1),
        }
    }
    Ok(records)
}

fn print(records: &[TaskRecord], format: Format) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Text => write!(out, "{}", table(records))?,
        Format::Json => {
            let mut variants: Vec<&str> = records.iter().map(|r| r.variant.as_str()).collect();
            variants.dedup();
            let summary: serde_json::Map<String, serde_json::Value> = variants
                .iter()
                .map(|v| {
                    let rs: Vec<&TaskRecord> = records.iter().filter(|r| r.variant == *v).collect();
                    let s = crate::eval::summarize(&rs);
                    let value = serde_json::json!({
                        "tasks": s.tasks, "executable": s.executable, "solved": s.solved, "path": s.path,
                        "precision": s.precision, "path_ran": s.path_ran,
                        "precision_ran": s.precision_ran, "static_first_bad": s.static_first_bad,
                        "static_fixed": s.static_fixed, "no_program": s.no_program,
                        "reflections": s.reflections, "nodes": s.nodes, "llm_calls": s.llm_calls,
                        "tokens": s.tokens, "wall_s": s.wall_s,
                    });
                    (v.to_string(), value)
                })
                .collect();
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({"summary": summary, "tasks": records}))?
            )?;
        }
    }
    Ok(())
}

pub fn merge(files: &[PathBuf], format: Format, common: bool) -> Result<u8> {
    let mut records: Vec<TaskRecord> = Vec::new();
    for file in files {
        for record in read_records(file, None)? {
            // A task evaluated twice (an overlapping shard): the later record wins.
            records.retain(|r| !(r.variant == record.variant && r.index == record.index));
            records.push(record);
        }
    }
    if common {
        // Each (variant, task) holds one record, so a task every variant answered has as many.
        let variants = records.iter().map(|r| r.variant.as_str()).collect::<std::collections::HashSet<_>>().len();
        let mut answers: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        for r in &records {
            *answers.entry(r.index).or_default() += 1;
        }
        records.retain(|r| answers[&r.index] == variants);
    }
    records.sort_by_key(|r| r.index);
    print(&records, format)?;
    Ok(0)
}

pub fn eval(root: Option<&Path>, command: Option<EvalCommand>, args: EvalArgs) -> Result<u8> {
    if let Some(EvalCommand::Merge { files, format, common }) = command {
        return merge(&files, format, common);
    }
    if args.files.is_empty() {
        bail!("give benchmark task files (`chainsmith eval tmdb.json`), or `eval merge RESULTS…`");
    }
    let root = workspace_root(root, &[])?;
    let (config, catalog) = load_workspace(&root)?;
    let (queries, unmapped) = super::retrieve::read_task_files(&args.files, &catalog)?;
    if queries.is_empty() {
        bail!("no task in the files has a gold tool of this workspace (is --root the right workspace?)");
    }
    let variant = variant(&args, Settings::from_config(&config.generate), config.generate.candidates)?;
    let range = task_range(args.tasks.as_deref(), queries.len())?;
    let (shard_index, shards) = shard(args.shard.as_deref())?;
    // The default file lies in the workspace, whose links may be planted: it is written only inside.
    let (out, boundary) = match &args.out {
        Some(out) => (out.clone(), None),
        None => (root.join(".chainsmith").join("eval").join(format!("{}.jsonl", variant.label)), Some(root.as_path())),
    };
    let mut records = read_records(&out, boundary)?;
    let catalog = Arc::new(catalog);
    let mock = match args.live {
        true => None,
        false => Some(MockServer::start(catalog.clone(), ([127, 0, 0, 1], 0).into()).context("cannot start the mock")?),
    };
    let toolnet = match &args.history {
        Some(file) => {
            let tasks = history(file, args.history_tasks.as_deref(), &args.files, &range, &catalog)?;
            Some(crate::eval::history_graph(&tasks, &config))
        }
        None => None,
    };
    let index = Arc::new(super::retrieval_index(&catalog, &config));
    let bench = Bench {
        root: root.clone(),
        config: Arc::new(config),
        index,
        catalog,
        upstream: mock.as_ref().map(MockServer::upstream).unwrap_or_default(),
        toolnet,
    };
    eprintln!(
        "chainsmith eval: {} tasks ({} gold steps not in the workspace), variant {}, tasks {}..{} shard {shard_index}/{shards}, results in {}{}",
        queries.len(),
        unmapped,
        variant.label,
        range.start,
        range.end,
        out.display(),
        if mock.is_some() { ", tools answered by the mock" } else { ", real APIs" }
    );
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    for index in range.filter(|i| i % shards == shard_index) {
        if records.iter().any(|r| r.index == index && r.variant == variant.label) {
            continue;
        }
        if let Some(mock) = &mock {
            mock.reset();
        }
        let record = tokio.block_on(bench.run_task(&queries, index, &variant));
        eprintln!(
            "#{index:03} {} exec {} solved {} path {:.2} prec {:.2} calls {} tokens {} {:.0}s{}",
            if record.executable { "✓" } else { "✗" },
            record.executable,
            record.solved,
            record.path,
            record.precision,
            record.llm_calls,
            record.tokens,
            record.wall_ms as f64 / 1000.0,
            record.stop.as_ref().map(|s| format!(" ({s})")).unwrap_or_default()
        );
        crate::files::append_line(boundary, &out, &serde_json::to_string(&record)?)?;
        records.push(record);
    }
    records.retain(|r| r.variant == variant.label);
    records.sort_by_key(|r| r.index);
    print(&records, args.format)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_and_shards() {
        assert_eq!(task_range(None, 100).unwrap(), 0..100);
        assert_eq!(task_range(Some("30"), 100).unwrap(), 0..30);
        assert_eq!(task_range(Some("90..120"), 100).unwrap(), 90..100);
        assert!(task_range(Some("x"), 100).is_err());
        assert_eq!(shard(Some("1/3")).unwrap(), (1, 3));
        assert!(shard(Some("3/3")).is_err());
        assert_eq!(shard(None).unwrap(), (0, 1));
    }
}
