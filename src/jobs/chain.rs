//! Writing a chain for a task (`generate`) and repairing a failing one (`fix`): the candidates,
//! the search over attempts, the user's consent to tools that may change data, and what the job
//! came to. What a front end does with the result — print it, write the file, apply an edit to
//! the version it was computed for, score it — stays with that front end.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use super::{Sink, Workspace};
use crate::config::GenerateConfig;
use crate::generate::reflect::{Execution, Runner};
use crate::generate::search::{self, Outcome, Planned, Request, Settings, Stop};
use crate::llm;
use crate::runtime::Cancel;

/// The task a fix searches for when its program states none.
pub const RUN_WITHOUT_ERRORS: &str = "make this program run without errors";

/// What the job is asked.
#[derive(Debug, Clone)]
pub enum Goal {
    /// A new program for this task.
    Generate { task: String },
    /// A working version of `text`, which states its task (docstring, `# task:`) or not.
    Fix { text: String },
}

/// One generation or fix.
#[derive(Debug, Clone)]
pub struct ChainRequest {
    pub goal: Goal,
    /// Tools the user selected (ids): the candidates stay among them and their ToolNet neighbours.
    pub tools: Vec<String>,
    /// The file the program stands for: its folder is the runs' working folder (it need not exist).
    pub program: PathBuf,
    /// The user agreed up front to run tools that may change data (`--yes`, `allowWrites`).
    pub allow_writes: bool,
    pub cancel: Cancel,
}

/// How far the search may go and how many tools the model is shown.
#[derive(Debug, Clone)]
pub struct Options {
    pub settings: Settings,
    pub candidates: usize,
}

impl Options {
    pub fn of(config: &GenerateConfig) -> Options {
        Options { settings: Settings::from_config(config), candidates: config.candidates }
    }
}

/// Why a job could not start; nothing was asked of the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no task to generate for: write it in the module docstring or a `# task:` comment, or select it")]
    NoTask,
    #[error("{0}")]
    Llm(String),
    #[error("not running any program: {0}")]
    UntrustedRuntime(String),
    #[error("no tool of the workspace matches the task")]
    NoCandidates,
}

/// A job ready to run: its model client, its task and its first candidates.
pub struct Prepared<'w> {
    ws: &'w Workspace<'w>,
    client: llm::Client,
    options: Options,
    request: ChainRequest,
    /// The task as the user stated it (`None`: a fix of a program that states none).
    task: Option<String>,
    candidates: Vec<String>,
    allowed: Option<BTreeSet<String>>,
    /// The planner's chains for a generation's task.
    plans: Vec<Planned>,
}

/// What a job came to.
#[derive(Debug)]
pub enum Finished {
    /// A fix whose program already runs without error: nothing was asked of the model.
    AlreadyRuns,
    Searched(Box<Searched>),
}

#[derive(Debug)]
pub struct Searched {
    pub outcome: Outcome,
    /// The program to hand the user when the search solved the task (a fix keeps its task header).
    pub program: Option<String>,
    pub llm_calls: u32,
    pub usage: llm::Usage,
}

impl Searched {
    /// "2 LLM calls, 1,234 tokens (…); search: …", as the CLI and the editor report it.
    pub fn summary(&self) -> String {
        let s = if self.llm_calls == 1 { "" } else { "s" };
        format!("{} LLM call{s}, {}; search: {}", self.llm_calls, self.usage, self.outcome.shape())
    }

    /// Why the search ended without a solution.
    pub fn why(&self) -> String {
        self.outcome.stop.as_ref().map(ToString::to_string).unwrap_or_else(|| "no attempt succeeded".into())
    }
}

/// Checks what can be checked before anything runs: a task, the model's settings, an interpreter
/// the workspace may start, and at least one candidate tool.
pub fn prepare<'w>(ws: &'w Workspace<'w>, request: ChainRequest, options: Options) -> Result<Prepared<'w>, Refusal> {
    let task = match &request.goal {
        Goal::Generate { task } => Some(task.trim().to_string()).filter(|t| !t.is_empty()).ok_or(Refusal::NoTask)?,
        Goal::Fix { text } => return prepare_fix(ws, search::task_of(text), request, options),
    };
    prepare_with(ws, Some(task), &[], request, options)
}

fn prepare_fix<'w>(
    ws: &'w Workspace<'w>,
    task: Option<String>,
    request: ChainRequest,
    options: Options,
) -> Result<Prepared<'w>, Refusal> {
    let Goal::Fix { text } = &request.goal else { unreachable!("prepare_fix is called for fixes") };
    let tree = crate::analysis::parse::parse(text);
    let analysis = crate::analysis::analyze(&request.program, text, &tree, &ws.catalog, &Default::default());
    let called = crate::graph::workspace::program_tools(&analysis);
    prepare_with(ws, task, &called, request, options)
}

fn prepare_with<'w>(
    ws: &'w Workspace<'w>,
    task: Option<String>,
    called: &[String],
    request: ChainRequest,
    options: Options,
) -> Result<Prepared<'w>, Refusal> {
    // Every attempt runs: with an interpreter the workspace is not trusted with, none could.
    if let Some(why) = crate::runtime::untrusted_runtime(&ws.config, &ws.catalog) {
        return Err(Refusal::UntrustedRuntime(why));
    }
    let mut client = llm::Client::new(&ws.config.llm, &ws.catalog.trust).map_err(|e| Refusal::Llm(e.to_string()))?;
    client.cancel = Some(request.cancel.clone());
    let (mut candidates, allowed) = candidates(ws, task.as_deref(), &request.tools, called, options.candidates);
    if candidates.is_empty() {
        return Err(Refusal::NoCandidates);
    }
    let plans = match (&request.goal, &task) {
        (Goal::Generate { .. }, Some(task)) => planned(ws, task, options.settings.plans, allowed.as_ref()),
        _ => Vec::new(),
    };
    // A chain calling a tool the model was not shown would be no help: its tools join the rest.
    for call in plans.iter().flat_map(|p| &p.calls) {
        if !candidates.contains(&call.tool) {
            candidates.push(call.tool.clone());
        }
    }
    let plans = plans
        .iter()
        .map(|p| Planned { skeleton: p.skeleton(&ws.catalog), tools: p.calls.iter().map(|c| c.tool.clone()).collect() })
        .collect();
    Ok(Prepared { ws, client, options, request, task, candidates, allowed, plans })
}

/// The planner's best `k` chains for a generation's task, within the user's selection if any.
fn planned(ws: &Workspace<'_>, task: &str, k: usize, allowed: Option<&BTreeSet<String>>) -> Vec<crate::plan::Plan> {
    if k == 0 {
        return Vec::new();
    }
    let plans = super::plan::plans(ws, task, k * 4).unwrap_or_default();
    plans.into_iter().filter(|p| allowed.is_none_or(|a| p.calls.iter().all(|c| a.contains(&c.tool)))).take(k).collect()
}

/// The tools shown to the model: the tools the user selected or the task names (then the pool
/// stays among them and their ToolNet neighbours), else retrieval's best `k` widened by ToolNet;
/// a fix's own tools always lead, and the query names them too, so a fix without a task still
/// finds their neighbourhood.
fn candidates(
    ws: &Workspace<'_>,
    task: Option<&str>,
    tools: &[String],
    called: &[String],
    k: usize,
) -> (Vec<String>, Option<BTreeSet<String>>) {
    let task_text = task.unwrap_or(RUN_WITHOUT_ERRORS);
    let mut selected = tools.to_vec();
    for named in search::named_tools(task_text, &ws.catalog) {
        if !selected.contains(&named) {
            selected.push(named);
        }
    }
    let query = if called.is_empty() { task_text.to_string() } else { format!("{task_text} {}", called.join(" ")) };
    let (mut ids, mut allowed) = search::candidates(&query, &ws.catalog, ws.index, k, &selected, ws.toolnet.as_ref());
    for id in called.iter().rev() {
        ids.retain(|x| x != id);
        ids.insert(0, id.clone());
        if let Some(allowed) = &mut allowed {
            allowed.insert(id.clone());
        }
    }
    (ids, allowed)
}

impl Prepared<'_> {
    /// The candidate tools the model will be shown first.
    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    /// Runs the job to its end: a fix first runs its program (one that already works needs no
    /// model), then the search; a best program that needs tools which may change data is run only
    /// if the sink agrees, and the search goes on from it.
    pub async fn run(self, sink: &impl Sink) -> Finished {
        let ws = self.ws;
        let mut runner = Runner {
            root: ws.root.clone(),
            program: self.request.program.clone(),
            config: ws.config.clone(),
            catalog: ws.catalog.clone(),
            allow_writes: self.request.allow_writes,
            cancel: self.request.cancel.clone(),
            mcp: ws.mcp.clone(),
            upstream: ws.upstream.clone(),
            learn: ws.learn,
        };
        let original = match &self.request.goal {
            Goal::Fix { text } => Some(text.clone()),
            Goal::Generate { .. } => None,
        };
        // A fix runs its program once: when it already works nothing is asked of the model, and
        // otherwise that run is the search's first node (a program that writes must not write twice).
        let mut given_run = None;
        if let Some(text) = &original {
            let first = runner.execute(text, None).await;
            if let Execution::Ran(outcome) = &first
                && outcome.trace.ok
                && outcome.exit_status() == 0
            {
                return Finished::AlreadyRuns;
            }
            given_run = Some(first);
        }
        let task_text = self.task.clone().unwrap_or_else(|| RUN_WITHOUT_ERRORS.into());
        let mut given = original.clone();
        let outcome = loop {
            let request = Request {
                task: &task_text,
                candidates: self.candidates.clone(),
                allowed: self.allowed.clone(),
                given: given.clone(),
                given_run: given_run.take(),
                judge: self.task.is_some(),
                plans: self.plans.clone(),
            };
            let search = search::search(request, &ws.catalog, ws.index, &self.client, &runner, &self.options.settings);
            let outcome = reporting_calls(search, &self.client, sink).await;
            if let Some(Stop::NeedsConsent(tools)) = &outcome.stop
                && !runner.allow_writes
                && sink.confirm_writes(tools).await
            {
                runner.allow_writes = true;
                given = outcome.best_node().map(|b| b.program.clone());
                continue;
            }
            break outcome;
        };
        let program = outcome.best_node().filter(|_| outcome.solved).map(|best| match &original {
            Some(text) => search::with_header(text, &best.program),
            None => best.program.clone(),
        });
        Finished::Searched(Box::new(Searched {
            program,
            llm_calls: self.client.meter.requests(),
            usage: self.client.meter.usage(),
            outcome,
        }))
    }
}

/// Awaits the search, telling the sink how many LLM calls it has made whenever that changes.
async fn reporting_calls(
    search: impl std::future::Future<Output = Outcome>,
    client: &llm::Client,
    sink: &impl Sink,
) -> Outcome {
    tokio::pin!(search);
    let mut ticker = tokio::time::interval(Duration::from_millis(250));
    let mut reported = 0;
    loop {
        tokio::select! {
            outcome = &mut search => return outcome,
            _ = ticker.tick() => {
                let calls = client.meter.requests();
                if calls != reported {
                    reported = calls;
                    sink.progress(format!("{calls} LLM call{}", if calls == 1 { "" } else { "s" })).await;
                }
            }
        }
    }
}
