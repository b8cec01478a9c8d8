//! The search over attempts (ToolLLM's DFSDT) with AnyTool's self-reflection.
//!
//! Attempts form a tree searched depth-first in pre-order. A node is a program and its run; its
//! first child is the revision of its failure (attributable reflection), further children are
//! alternatives *distinct* from the children already tried (the DFSDT diversity prompt shows them).
//! The virtual root's children are the first draft and its distinct alternatives. A node gives up
//! when it cannot grow (the depth limit, `width` children, `α` revisions under its top-level
//! attempt) or when its program ran but the judge (AnyTool's short rubric) says the output does not
//! answer the task; the search then backtracks to the parent and asks it for another child. Before
//! an alternative, self-reflection widens the candidate pool with the failure reason as an extra
//! retrieval query and drops the tools the runs showed broken. The whole search runs under one
//! budget; the best node and its trace are kept.

use std::collections::BTreeSet;

use crate::llm::{self, Message};
use crate::runtime::{RunOutcome, Trace};
use crate::toolset::index::CatalogIndex;
use crate::toolset::{Catalog, Tool};

use super::atc::{self, Budget, GenerateError};
use super::reflect::{self, Attempt, Attribution, Execution, Runner};
use super::{prompt, retrieve};

/// The search's shape and budget.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Children per node (`[generate] width`).
    pub width: usize,
    /// Longest path of attempts from the root (`[generate] depth`).
    pub depth: usize,
    /// Revisions under one top-level attempt (`[generate] reflections`, ATC's α).
    pub reflections: usize,
    pub budget: Budget,
    /// Static problems go back to the model before anything runs (off only as an ablation).
    pub static_feedback: bool,
    /// How many of the planner's chains the model is shown (`[generate] plans`; 0 shows none).
    pub plans: usize,
}

impl Settings {
    pub fn from_config(config: &crate::config::GenerateConfig) -> Settings {
        Settings {
            width: config.width.max(1),
            depth: config.depth.max(1),
            reflections: config.reflections as usize,
            budget: Budget { max_llm_calls: config.max_llm_calls, max_tokens: config.max_tokens },
            static_feedback: true,
            plans: config.plans,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Root,
    /// The first program (ATC draft), or the user's program (`fix`).
    Draft,
    Given,
    /// The revision of the parent's failure.
    Revision,
    /// A distinct alternative to the parent's other children.
    Alternative,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Ran, and the judge says the output answers the task.
    Solved(String),
    /// Ran, but the judge says it does not answer the task.
    Unsolved(String),
    /// The run failed with this error.
    Failed(String),
    /// Not run (the user's consent is missing).
    NotRun(String),
}

#[derive(Debug, Clone)]
pub struct Node {
    pub id: usize,
    pub parent: Option<usize>,
    pub depth: usize,
    pub kind: Kind,
    pub program: String,
    pub verdict: Option<Verdict>,
    pub trace: Option<Trace>,
    pub output: String,
    /// The tool the failure was attributed to, and how (filled when the node is revised).
    pub attributed: Option<(String, Attribution)>,
    pub children: Vec<usize>,
}

/// Why the search ended without a solved node.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// Every node gave up within the width and depth.
    Exhausted,
    Budget(String),
    Cancelled,
    /// The model failed: unreachable, or its replies unusable.
    Llm(String),
    /// The program calls tools that may write, and the user did not agree.
    NeedsConsent(Vec<String>),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Exhausted => write!(f, "every attempt failed within the search's width and depth"),
            Stop::Budget(what) => write!(f, "the budget ran out ({what})"),
            Stop::Cancelled => write!(f, "cancelled"),
            Stop::Llm(e) => write!(f, "{e}"),
            Stop::NeedsConsent(tools) => write!(
                f,
                "the program calls tools that may change data ({}); it was not run — agree with --yes (or confirm in the editor) to run it",
                tools.join(", ")
            ),
        }
    }
}

/// The tree, the best node and how the search ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub nodes: Vec<Node>,
    pub best: Option<usize>,
    pub solved: bool,
    pub stop: Option<Stop>,
    /// The candidate pool at the end (tool ids).
    pub candidates: Vec<String>,
    /// Tools dropped as broken by self-reflection.
    pub dropped: Vec<String>,
    /// The number of static problems in every program the model replied with, in order (0 for
    /// one that passed the checks).
    pub static_checks: Vec<usize>,
    /// The planner's chain the model chose to complete (1 for the first), 0 when it chose none;
    /// `None` when it was offered none.
    pub plan_chosen: Option<usize>,
}

impl Outcome {
    pub fn best_node(&self) -> Option<&Node> {
        self.best.map(|i| &self.nodes[i])
    }

    /// `5 attempts (2 drafts, 2 revisions, 1 alternative), depth 2, 1 backtrack`.
    pub fn shape(&self) -> String {
        let count = |k: Kind| self.nodes.iter().filter(|n| n.kind == k).count();
        let attempts = self.nodes.len().saturating_sub(1);
        let depth = self.nodes.iter().map(|n| n.depth).max().unwrap_or(0);
        format!(
            "{attempts} attempt{} ({} draft, {} revision{}, {} alternative{}), depth {depth}, {} backtrack{}",
            if attempts == 1 { "" } else { "s" },
            count(Kind::Draft) + count(Kind::Given),
            count(Kind::Revision),
            if count(Kind::Revision) == 1 { "" } else { "s" },
            count(Kind::Alternative),
            if count(Kind::Alternative) == 1 { "" } else { "s" },
            self.backtracks(),
            if self.backtracks() == 1 { "" } else { "s" },
        )
    }

    /// How many times the search came back to a node to ask for another child.
    pub fn backtracks(&self) -> usize {
        self.nodes.iter().map(|n| n.children.len().saturating_sub(1)).sum()
    }
}

/// What to search for.
pub struct Request<'a> {
    pub task: &'a str,
    /// The candidate pool to start from (tool ids), already restricted to a selection if any.
    pub candidates: Vec<String>,
    /// When the user selected tools: widening stays within these.
    pub allowed: Option<BTreeSet<String>>,
    /// `fix`: the user's program is the first attempt.
    pub given: Option<String>,
    /// Its run, when the caller already ran it (a fix checks first whether the program runs): the
    /// search takes that result instead of running the program, and its calls, again.
    pub given_run: Option<Execution>,
    /// Whether to ask the judge (there is a task to judge against).
    pub judge: bool,
    /// The planner's chains for the task, best first: the model chooses one to complete, and
    /// they are shown with the tools when it writes on its own.
    pub plans: Vec<Planned>,
}

/// One of the planner's chains as the model is offered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The typed skeleton program (it passes the checks).
    pub skeleton: String,
    /// Its calls' tools (ids), in order.
    pub tools: Vec<String>,
}

/// The candidate pool for a task: retrieval's best `k` in the catalog's `index`, restricted to
/// `selected` and their graph neighbours when the user selected tools.
pub fn candidates(
    task: &str,
    catalog: &Catalog,
    index: &CatalogIndex,
    k: usize,
    selected: &[String],
    graph: Option<&crate::graph::ToolGraph>,
) -> (Vec<String>, Option<BTreeSet<String>>) {
    if selected.is_empty() {
        let hits: Vec<(String, f64)> =
            index.search_task(task, k).into_iter().map(|(id, s)| (id.to_string(), s)).collect();
        // ToolNet expansion: the graph neighbours of the best hits (as `retrieve --eval` measures it).
        let ids = match graph {
            Some(graph) => retrieve::expand(hits, graph, 3, 2)
                .into_iter()
                .map(|(id, _)| id)
                .filter(|id| catalog_has(catalog, id))
                .take(k + 3)
                .collect(),
            None => hits.into_iter().map(|(id, _)| id).collect(),
        };
        return (ids, None);
    }
    let mut allowed: BTreeSet<String> = selected.iter().filter(|id| catalog_has(catalog, id)).cloned().collect();
    if let Some(graph) = graph {
        for id in selected {
            for (next, _) in graph.successors(id).into_iter().chain(graph.predecessors(id)) {
                if catalog_has(catalog, next) {
                    allowed.insert(next.to_string());
                }
            }
        }
    }
    let mut ids: Vec<String> = selected.iter().filter(|id| allowed.contains(*id)).cloned().collect();
    for (id, _) in index.search_task(task, index.len()) {
        if allowed.contains(id) && !ids.iter().any(|i| i == id) {
            ids.push(id.to_string());
        }
    }
    for id in &allowed {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    ids.truncate(k.max(selected.len()));
    (ids, Some(allowed))
}

fn catalog_has(catalog: &Catalog, id: &str) -> bool {
    id.split_once('.').is_some_and(|(ts, name)| catalog.tool(ts, name).is_some())
}

fn tool<'c>(catalog: &'c Catalog, id: &str) -> Option<&'c Tool> {
    let (ts, name) = id.split_once('.')?;
    catalog.tool(ts, name)
}

/// AnyTool's judge: does the output answer the task?
pub fn judge_prompt(task: &str, program: &str, output: &str) -> String {
    let shown = crate::text::shorten(output.trim(), 2000).into_owned();
    format!(
        "Does the output answer the task? Judge strictly: the output must contain the information the task asks for; an empty, partial or off-topic output does not answer it.\n\nTask: {}\n\nProgram:\n```python\n{program}```\n\nOutput:\n{}\n\nReply with \"Solved\" or \"Unsolved\", then a one-sentence reason.",
        task.trim(),
        if shown.is_empty() { "(nothing printed)".to_string() } else { shown }
    )
}

/// What a run that ended without error shows by itself, before any model is asked: a program
/// that caught its own failed call did not get what it asked for (it is revised like a failure),
/// and, when there is a task to answer (`asked`), one that printed nothing, or only text written
/// in the program, answers nothing from the tools. `None`: the judge decides.
pub fn checked_verdict(program: &str, outcome: &RunOutcome, asked: bool) -> Option<Verdict> {
    if let Some(call) = outcome.trace.calls.iter().find(|c| !c.ok) {
        let why = call.error.clone().unwrap_or_else(|| match call.status {
            Some(status) => format!("HTTP {status}"),
            None => "it failed".into(),
        });
        return Some(Verdict::Failed(format!(
            "the call of `{}` failed ({}) and the program went on without its answer",
            call.tool,
            crate::text::shorten(&why, 200)
        )));
    }
    if !asked {
        return None;
    }
    let mut left = outcome.output.clone();
    for literal in string_literals(program) {
        left = left.replace(&literal, " ");
    }
    if !left.chars().any(char::is_alphanumeric) {
        let why = if outcome.output.trim().is_empty() {
            "it printed nothing"
        } else {
            "it printed only text written in the program, nothing from the tools' responses"
        };
        return Some(Verdict::Unsolved(why.into()));
    }
    // `None` from a `.get` or a `next(…, None)` that found nothing: the search came up empty.
    const EMPTY: &[&str] = &["None", "[]", "{}", "()", "''", "null", "False"];
    let words: Vec<&str> = left.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    if words.iter().all(|w| EMPTY.contains(w)) {
        return Some(Verdict::Unsolved(format!("it printed only empty values ({})", words.join(" "))));
    }
    None
}

/// The contents of a program's string literals with at least one letter (f-strings' text parts
/// included), longest first so that a literal inside another is removed after it.
fn string_literals(program: &str) -> Vec<String> {
    let tree = crate::analysis::parse::parse(program);
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "string_content") {
            let text = &program[node.byte_range()];
            if text.chars().any(char::is_alphabetic) {
                out.push(text.to_string());
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    out.sort_by_key(|l| std::cmp::Reverse(l.len()));
    out
}

/// (solved, reason) from a judge's reply; an unclear reply counts as solved (the program ran).
pub fn read_verdict(reply: &str) -> (bool, String) {
    let lower = reply.to_ascii_lowercase();
    let reason = reply
        .trim()
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .split_once(['\n', ':', '-', '.', ','])
        .map(|(_, r)| r.trim().to_string())
        .unwrap_or_default();
    if lower.contains("unsolved") || lower.contains("not solved") {
        (false, if reason.is_empty() { "the judge says the output does not answer the task".into() } else { reason })
    } else if lower.contains("solved") {
        (true, reason)
    } else {
        (true, "the judge's reply was unclear; the program ran".into())
    }
}

/// The DFSDT diversity request: the failed siblings are shown and a different approach required.
pub fn diversity_prompt(siblings: &[(&str, String)]) -> String {
    let mut out = String::from("This is not the first attempt at this task. These programs were tried and failed:\n\n");
    for (i, (program, why)) in siblings.iter().enumerate() {
        out.push_str(&format!("Failed attempt {}:\n```python\n{program}```\nWhy it failed: {why}\n\n", i + 1));
    }
    out.push_str(
        "Write a program that takes a DIFFERENT approach from all of them (other tools, or another way of combining them); do not repeat them. Reply with the whole program in one ```python block.",
    );
    out
}

fn why(node: &Node) -> String {
    match &node.verdict {
        Some(Verdict::Failed(e)) => e.clone(),
        Some(Verdict::Unsolved(r)) => format!("it ran, but the output does not answer the task: {r}"),
        Some(Verdict::NotRun(r)) => r.clone(),
        Some(Verdict::Solved(_)) | None => String::new(),
    }
}

/// Tools that failed with 5xx or 404 on every call across the runs.
fn broken_tools(nodes: &[Node]) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for trace in nodes.iter().filter_map(|n| n.trace.as_ref()) {
        for call in &trace.calls {
            let entry = seen.entry(call.tool.as_str()).or_default();
            entry.0 += 1;
            if !call.ok && call.status.is_some_and(|s| s >= 500 || s == 404) {
                entry.1 += 1;
            }
        }
    }
    seen.into_iter().filter(|(_, (all, bad))| *all > 0 && all == bad).map(|(t, _)| t.to_string()).collect()
}

fn score(node: &Node) -> (u8, usize) {
    let ok_calls = node.trace.as_ref().map_or(0, |t| t.calls.iter().filter(|c| c.ok).count());
    let rank = match node.verdict {
        Some(Verdict::Solved(_)) => 4,
        Some(Verdict::Unsolved(_)) => 3,
        Some(Verdict::Failed(_)) => 2,
        Some(Verdict::NotRun(_)) => 1,
        None => 0,
    };
    (rank, ok_calls)
}

struct Search<'a> {
    task: &'a str,
    catalog: &'a Catalog,
    /// The catalog's text index: self-reflection retrieves with it.
    index: &'a CatalogIndex,
    client: &'a llm::Client,
    runner: &'a Runner,
    settings: &'a Settings,
    judge: bool,
    pool: Vec<String>,
    allowed: Option<BTreeSet<String>>,
    dropped: Vec<String>,
    nodes: Vec<Node>,
    static_checks: Vec<usize>,
    /// The given program's run made before the search, used once by its node.
    given_run: Option<Execution>,
    plans: Vec<Planned>,
    /// The planner's chains as skeletons, for the prompts that show them all.
    skeletons: Vec<String>,
    plan_chosen: Option<usize>,
    /// The plans completed so far (indices into `plans`), and whether the model said none of
    /// those it was offered answers the task (then it is not asked again).
    plans_tried: Vec<usize>,
    plans_refused: bool,
}

enum Step {
    Go,
    Stop(Stop),
}

fn stop_of(e: GenerateError) -> Stop {
    match e {
        GenerateError::Budget(what) => Stop::Budget(what),
        GenerateError::Cancelled | GenerateError::Llm(llm::LlmError::Cancelled) => Stop::Cancelled,
        GenerateError::Llm(e) => Stop::Llm(e.to_string()),
        unusable @ GenerateError::NoProgram { .. } => Stop::Llm(unusable.to_string()),
    }
}

impl<'a> Search<'a> {
    fn tools(&self) -> Vec<&'a Tool> {
        let catalog: &'a Catalog = self.catalog;
        self.pool.iter().filter_map(|id| tool(catalog, id)).collect()
    }

    fn cancelled(&self) -> bool {
        self.runner.cancel.is_cancelled()
    }

    /// The top-level attempt a node belongs to (its depth-1 ancestor).
    fn attempt_of(&self, mut id: usize) -> usize {
        while let Some(p) = self.nodes[id].parent {
            if p == 0 {
                return id;
            }
            id = p;
        }
        id
    }

    fn subtree_size(&self, id: usize) -> usize {
        1 + self.nodes[id].children.iter().map(|&c| self.subtree_size(c)).sum::<usize>()
    }

    fn can_grow(&self, id: usize) -> bool {
        let node = &self.nodes[id];
        if node.children.len() >= self.settings.width || node.depth >= self.settings.depth {
            return false;
        }
        if id == 0 {
            return true;
        }
        if !matches!(node.verdict, Some(Verdict::Failed(_))) {
            return false;
        }
        // α: revisions (every node below the top-level attempt) within the attempt.
        self.subtree_size(self.attempt_of(id)) - 1 < self.settings.reflections
    }

    /// Runs a node and judges it.
    async fn evaluate(&mut self, id: usize) -> Step {
        if self.cancelled() {
            return Step::Stop(Stop::Cancelled);
        }
        let replay = self.nodes[id].parent.and_then(|p| self.nodes[p].trace.clone());
        let program = self.nodes[id].program.clone();
        let execution = match self.given_run.take().filter(|_| self.nodes[id].kind == Kind::Given) {
            Some(done) => done,
            None => self.runner.execute(&program, replay.as_ref()).await,
        };
        let verdict = match execution {
            Execution::NeedsConsent(tools) => {
                self.nodes[id].verdict = Some(Verdict::NotRun(Stop::NeedsConsent(tools.clone()).to_string()));
                return Step::Stop(Stop::NeedsConsent(tools));
            }
            Execution::Unrunnable(problems) => Verdict::Failed(problems.join("; ")),
            Execution::Ran(outcome) => {
                if matches!(outcome.stopped, Some(crate::runtime::Stop::Cancelled)) || self.cancelled() {
                    return Step::Stop(Stop::Cancelled);
                }
                let verdict = self.verdict(&program, &outcome).await;
                self.nodes[id].output = outcome.output.clone();
                self.nodes[id].trace = Some(outcome.trace);
                match verdict {
                    Ok(v) => v,
                    Err(e) => return Step::Stop(stop_of(e)),
                }
            }
        };
        self.nodes[id].verdict = Some(verdict);
        Step::Go
    }

    async fn verdict(&self, program: &str, outcome: &RunOutcome) -> Result<Verdict, GenerateError> {
        if !(outcome.trace.ok && outcome.exit_status() == 0) {
            return Ok(Verdict::Failed(reflect::error_text(outcome)));
        }
        if let Some(verdict) = checked_verdict(program, outcome, self.judge) {
            return Ok(verdict);
        }
        if !self.judge {
            return Ok(Verdict::Solved("the program ran".into()));
        }
        self.settings.budget.check(&self.client.meter)?;
        let messages = [Message::user(judge_prompt(self.task, program, &outcome.output))];
        let reply = self.client.chat(&messages, &llm::Options::new(0.0, 128)).await?;
        let (solved, reason) = read_verdict(&reply.content);
        // The judge's verdict is what ToolNet's evaluator rewards: record the run again with it.
        if self.runner.learn {
            reflect::learn_run(&self.runner.root, outcome, Some(solved));
        }
        Ok(if solved { Verdict::Solved(reason) } else { Verdict::Unsolved(reason) })
    }

    /// Self-reflection before an alternative: widen the pool with the failure reasons, drop broken tools.
    fn self_reflect(&mut self, reasons: &[String]) {
        let broken = broken_tools(&self.nodes);
        for reason in reasons {
            for (id, _) in self.index.search(&self.index.query(reason), 5) {
                let id = id.to_string();
                let permitted = self.allowed.as_ref().is_none_or(|a| a.contains(&id));
                if permitted && !self.pool.contains(&id) && !broken.contains(&id) {
                    self.pool.push(id);
                }
            }
        }
        for id in broken {
            if self.pool.contains(&id) && !self.dropped.contains(&id) {
                self.pool.retain(|p| p != &id);
                self.dropped.push(id);
            }
        }
    }

    /// Makes the next child of `parent`: the first draft, a revision, or a distinct alternative.
    async fn child(&mut self, parent: usize) -> Result<(Kind, String), GenerateError> {
        let budget = &self.settings.budget;
        let cancel = self.runner.cancel.clone();
        let cancelled = move || cancel.is_cancelled();
        let first = self.nodes[parent].children.is_empty();
        // At the root, the planner's chains come first: the first draft and each alternative
        // complete one the model chooses among those not tried yet, until it says none fits.
        if parent == 0
            && let Some(chosen) = self.choose_plan().await?
        {
            let program = self.complete_plan(chosen).await?;
            return Ok((if first { Kind::Draft } else { Kind::Alternative }, program));
        }
        if parent == 0 && first {
            let tools = self.tools();
            let program = self
                .converse(atc::first_messages(self.task, &tools, &self.skeletons), atc::PROGRAM_REPLY_TOKENS)
                .await?;
            return Ok((Kind::Draft, program));
        }
        if parent != 0 && first {
            let node = &self.nodes[parent];
            let program = node.program.clone();
            let trace = node.trace.clone().unwrap_or_else(|| Trace {
                program: String::new(),
                started: String::new(),
                ok: false,
                calls: Vec::new(),
                error: None,
            });
            let error = why(node);
            // The attempts along the path to this node, oldest first.
            let mut attempts = Vec::new();
            let mut at = Some(parent);
            while let Some(i) = at.filter(|&i| i != 0) {
                attempts.push(Attempt { program: self.nodes[i].program.clone(), error: why(&self.nodes[i]) });
                at = self.nodes[i].parent;
            }
            attempts.reverse();
            let tools = self.tools();
            let attribution = match &node.trace {
                Some(_) => {
                    let outcome = RunOutcome {
                        trace: trace.clone(),
                        exit_code: None,
                        stopped: None,
                        start_error: None,
                        diagnostics: Vec::new(),
                        output: node.output.clone(),
                        trace_file: None,
                        save_error: None,
                        drift: Vec::new(),
                    };
                    reflect::attribute(self.task, &program, &outcome, &tools, self.client, budget, &cancelled).await?
                }
                None => (None, Attribution::Unknown),
            };
            let attributed = attribution.0.as_deref().and_then(|id| tool(self.catalog, id));
            if let Some(id) = &attribution.0 {
                self.nodes[parent].attributed = Some((id.clone(), attribution.1.clone()));
            }
            let _ = error;
            let messages =
                reflect::revision_messages(self.task, &tools, &self.skeletons, &attempts, attributed, &trace);
            let reply_tokens = atc::reply_tokens_for(&program);
            return Ok((Kind::Revision, self.converse(messages, reply_tokens).await?));
        }
        // A distinct alternative to the failed children (and, below the root, to the parent).
        let mut shown: Vec<usize> = self.nodes[parent].children.clone();
        if parent != 0 {
            shown.insert(0, parent);
        }
        let reasons: Vec<String> = shown.iter().map(|&i| why(&self.nodes[i])).filter(|r| !r.is_empty()).collect();
        self.self_reflect(&reasons);
        let siblings: Vec<(&str, String)> =
            shown.iter().map(|&i| (self.nodes[i].program.as_str(), why(&self.nodes[i]))).collect();
        let tools = self.tools();
        let messages = vec![
            Message::system(prompt::SYSTEM),
            Message::user(format!(
                "{}\n\n{}",
                prompt::generation(self.task, &tools, &self.skeletons),
                diversity_prompt(&siblings)
            )),
        ];
        Ok((Kind::Alternative, self.converse(messages, atc::PROGRAM_REPLY_TOKENS).await?))
    }

    /// The planner's chain the model chooses to complete next (an index into `plans`) among those
    /// not tried yet, or `None` when none is left or the model says none answers the task. The
    /// answer is one number, constrained to the chains' where the server decodes to a schema.
    async fn choose_plan(&mut self) -> Result<Option<usize>, GenerateError> {
        let untried: Vec<usize> = (0..self.plans.len()).filter(|i| !self.plans_tried.contains(i)).collect();
        if untried.is_empty() || self.plans_refused {
            return Ok(None);
        }
        self.settings.budget.check(&self.client.meter)?;
        let chains: Vec<(&str, Vec<&Tool>)> = untried
            .iter()
            .map(|&i| &self.plans[i])
            .map(|p| (p.skeleton.as_str(), p.tools.iter().filter_map(|id| tool(self.catalog, id)).collect()))
            .collect();
        let messages = [Message::system(prompt::SYSTEM), Message::user(prompt::plan_choice(self.task, &chains))];
        let numbers: Vec<usize> = (0..=untried.len()).collect();
        let options = llm::Options {
            reply_schema: Some(serde_json::json!({"type": "integer", "enum": numbers})),
            ..llm::Options::new(0.0, 4)
        };
        let reply = self.client.chat(&messages, &options).await?;
        let chosen = read_choice(&reply.content, untried.len()).map(|i| untried[i]);
        if self.plan_chosen.is_none() {
            self.plan_chosen = Some(chosen.map_or(0, |i| i + 1));
        }
        match chosen {
            Some(i) => self.plans_tried.push(i),
            None => self.plans_refused = true,
        }
        Ok(chosen)
    }

    /// The program the model writes from the planner's chain `index`: the chain's calls kept, the
    /// answer read from their responses and printed.
    async fn complete_plan(&mut self, index: usize) -> Result<String, GenerateError> {
        let plan = &self.plans[index];
        let tools: Vec<&Tool> = plan.tools.iter().filter_map(|id| tool(self.catalog, id)).collect();
        let messages = vec![
            Message::system(prompt::SYSTEM),
            Message::user(prompt::plan_completion(self.task, &tools, &plan.skeleton)),
        ];
        let reply_tokens = atc::reply_tokens_for(&plan.skeleton);
        self.converse(messages, reply_tokens).await
    }

    /// A program from a conversation ending in a request for one, through the static loop
    /// (every reply's static problems logged for the outcome), each reply at most `reply_tokens`.
    async fn converse(&mut self, messages: Vec<Message>, reply_tokens: u32) -> Result<String, GenerateError> {
        let cancel = self.runner.cancel.clone();
        let cancelled = move || cancel.is_cancelled();
        let asking = atc::Asking { static_feedback: self.settings.static_feedback, reply_tokens };
        let draft = atc::converse_logged(
            messages,
            self.catalog,
            self.client,
            &self.settings.budget,
            &cancelled,
            &mut self.static_checks,
            asking,
        )
        .await?;
        Ok(draft.program)
    }

    fn push(&mut self, parent: usize, kind: Kind, program: String) -> usize {
        let id = self.nodes.len();
        let depth = self.nodes[parent].depth + 1;
        self.nodes.push(Node {
            id,
            parent: Some(parent),
            depth,
            kind,
            program,
            verdict: None,
            trace: None,
            output: String::new(),
            attributed: None,
            children: Vec::new(),
        });
        self.nodes[parent].children.push(id);
        id
    }

    async fn run(&mut self, given: Option<String>) -> Option<Stop> {
        if let Some(program) = given {
            let id = self.push(0, Kind::Given, program);
            if let Step::Stop(stop) = self.evaluate(id).await {
                return Some(stop);
            }
        }
        let mut stack = vec![0];
        if self.nodes.len() > 1 {
            stack.push(1);
        }
        while let Some(&top) = stack.last() {
            if matches!(self.nodes[top].verdict, Some(Verdict::Solved(_))) {
                return None;
            }
            if !self.can_grow(top) {
                stack.pop();
                continue;
            }
            let (kind, program) = match self.child(top).await {
                Ok(child) => child,
                Err(e) => return Some(stop_of(e)),
            };
            let id = self.push(top, kind, program);
            if let Step::Stop(stop) = self.evaluate(id).await {
                return Some(stop);
            }
            stack.push(id);
        }
        Some(Stop::Exhausted)
    }
}

/// Searches for a program that solves the task, retrieving in `index` (the catalog's, built once).
pub async fn search(
    request: Request<'_>,
    catalog: &Catalog,
    index: &CatalogIndex,
    client: &llm::Client,
    runner: &Runner,
    settings: &Settings,
) -> Outcome {
    let root = Node {
        id: 0,
        parent: None,
        depth: 0,
        kind: Kind::Root,
        program: String::new(),
        verdict: None,
        trace: None,
        output: String::new(),
        attributed: None,
        children: Vec::new(),
    };
    let mut search = Search {
        task: request.task,
        catalog,
        index,
        client,
        runner,
        settings,
        judge: request.judge,
        pool: request.candidates,
        allowed: request.allowed,
        dropped: Vec::new(),
        nodes: vec![root],
        static_checks: Vec::new(),
        given_run: request.given_run,
        skeletons: request.plans.iter().map(|p| p.skeleton.clone()).collect(),
        plans: request.plans,
        plan_chosen: None,
        plans_tried: Vec::new(),
        plans_refused: false,
    };
    let stop = search.run(request.given).await;
    let best = search.nodes.iter().skip(1).max_by_key(|n| (score(n), std::cmp::Reverse(n.id))).map(|n| n.id);
    let solved = best.is_some_and(|b| matches!(search.nodes[b].verdict, Some(Verdict::Solved(_))));
    Outcome {
        nodes: search.nodes,
        best,
        solved,
        stop: if solved { None } else { stop },
        candidates: search.pool,
        dropped: search.dropped,
        static_checks: search.static_checks,
        plan_chosen: search.plan_chosen,
    }
}

/// The chain a plan-choice reply names (an index into `count` chains): its first number, where it
/// is one of theirs; 0, another number or none chooses no chain.
pub fn read_choice(reply: &str, count: usize) -> Option<usize> {
    let digits: String = reply.chars().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect();
    let number: usize = digits.parse().ok()?;
    (1..=count).contains(&number).then(|| number - 1)
}

/// The task a program states: its module docstring or a `# task:` comment.
pub fn task_of(program: &str) -> Option<String> {
    crate::analysis::ide::task_of(program, &crate::analysis::parse::parse(program))
}

/// A fixed program keeps the original's docstring / task comment when the model dropped it.
pub fn with_header(original: &str, fixed: &str) -> String {
    if task_of(original).is_none() || task_of(fixed).is_some() {
        return fixed.to_string();
    }
    let header: String = original
        .lines()
        .take_while(|l| !l.trim_start().starts_with("from ") && !l.trim_start().starts_with("import "))
        .map(|l| format!("{l}\n"))
        .collect();
    format!("{header}{fixed}")
}

/// The tools a task names as `toolset.tool` (the user's selection of tools in a task comment).
pub fn named_tools(task: &str, catalog: &Catalog) -> Vec<String> {
    let mut out = Vec::new();
    for word in task.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
        let word = word.trim_matches('.');
        if catalog_has(catalog, word) && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_come_from_docstrings_and_task_comments() {
        assert_eq!(
            task_of("\"\"\"Count the movies\n of Sofia Coppola.\"\"\"\nimport x\n").as_deref(),
            Some("Count the movies of Sofia Coppola.")
        );
        assert_eq!(task_of("import x\n# Task: find the id\n").as_deref(), Some("find the id"));
        assert_eq!(task_of("print(1)\n"), None);
    }

    #[test]
    fn judge_replies_are_read_as_models_write_them() {
        assert!(read_verdict("Solved. The output lists the movies.").0);
        let (solved, reason) = read_verdict("**Unsolved** - it printed an id, not a count");
        assert!(!solved);
        assert!(reason.contains("printed an id"), "{reason}");
        assert!(!read_verdict("The task is not solved: nothing printed").0);
        assert!(read_verdict("hmm").0);
    }

    fn ran(output: &str, calls: Vec<crate::runtime::trace::TraceCall>) -> RunOutcome {
        RunOutcome {
            trace: Trace { program: String::new(), started: String::new(), ok: true, calls, error: None },
            exit_code: Some(0),
            stopped: None,
            start_error: None,
            diagnostics: Vec::new(),
            output: output.into(),
            trace_file: None,
            save_error: None,
            drift: Vec::new(),
        }
    }

    #[test]
    fn runs_that_answer_nothing_from_the_tools_are_told_without_a_model() {
        let program = "m = t.movie(movie_id=1)\nprint(f\"The director is: {m['director']}\")\nprint('none found')\n";
        assert_eq!(checked_verdict(program, &ran("The director is: Greta Gerwig\n", vec![]), true), None);
        assert!(
            matches!(checked_verdict(program, &ran("", vec![]), true), Some(Verdict::Unsolved(r)) if r.contains("nothing"))
        );
        assert!(matches!(
            checked_verdict(program, &ran("none found\nThe director is: \n", vec![]), true),
            Some(Verdict::Unsolved(r)) if r.contains("only text written in the program")
        ));
        assert!(matches!(
            checked_verdict(program, &ran("The director is: None\n", vec![]), true),
            Some(Verdict::Unsolved(r)) if r.contains("only empty values (None)")
        ));
        // A count is the program's own number, and still an answer.
        assert_eq!(checked_verdict("print(len(x))\n", &ran("12\n", vec![]), true), None);
        // A fix without a task asks only that the program run: printing nothing is fine there.
        assert_eq!(checked_verdict(program, &ran("", vec![]), false), None);
        let failed = crate::runtime::trace::TraceCall {
            id: 1,
            tool: "t.movie".into(),
            arguments: serde_json::json!({"movie_id": 1}),
            ok: false,
            status: Some(404),
            response: serde_json::Value::Null,
            error: None,
            duration_ms: 3,
            line: Some(1),
            replayed: false,
        };
        let verdict = checked_verdict(program, &ran("The director is: ?\n", vec![failed]), true);
        assert!(
            matches!(&verdict, Some(Verdict::Failed(r)) if r.contains("`t.movie` failed (HTTP 404)")),
            "{verdict:?}"
        );
    }

    #[test]
    fn plan_choices_are_read_from_what_models_reply() {
        assert_eq!(read_choice("2", 3), Some(1));
        assert_eq!(read_choice("Chain 3.", 3), Some(2));
        assert_eq!(read_choice("0", 3), None, "0 is none of them");
        assert_eq!(read_choice("4", 3), None, "not one of the chains");
        assert_eq!(read_choice("none", 3), None);
    }

    #[test]
    fn the_diversity_prompt_shows_the_failed_siblings() {
        let p = diversity_prompt(&[("print(1)\n", "KeyError: 'x'".into())]);
        assert!(p.contains("Failed attempt 1:\n```python\nprint(1)\n```\nWhy it failed: KeyError: 'x'"), "{p}");
        assert!(p.contains("DIFFERENT approach"));
    }
}
