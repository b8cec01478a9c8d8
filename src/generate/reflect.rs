//! Attributable reflection (ATC §3.3): run the drafted chain; on failure attribute the error to one
//! tool — from the trace when the runtime knows the call, else by asking the model (its answer is
//! validated against the candidates, asked once more, and otherwise the last call is taken) — and
//! revise with the error, the previous attempts and that tool's full protocol. Revisions go through
//! the same static loop as first drafts.
//!
//! Runs inside the loop replay the calls already made (the previous trace), and a program that
//! calls a tool which is not known to be read-only runs only when the user agreed (`allow_writes`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::analysis::{self, parse};
use crate::config::Config;
use crate::llm::{self, Message};
use crate::runtime::{self, Cancel, Quiet, RunOutcome, RunRequest, Trace};
use crate::toolset::{Catalog, Tool};

use super::atc::{self, Budget, GenerateError};
use super::prompt;

/// Where and how programs run during generation.
#[derive(Clone)]
pub struct Runner {
    pub root: PathBuf,
    /// The file the program stands for (its folder is the working directory; it need not exist).
    pub program: PathBuf,
    pub config: Arc<Config>,
    pub catalog: Arc<Catalog>,
    /// The user agreed to execute tools that may change something (CLI `--yes`, editor confirmation).
    pub allow_writes: bool,
    pub cancel: Cancel,
    pub mcp: Option<Arc<runtime::McpPool>>,
    /// Where HTTP calls go instead of the toolsets' base URLs (a mock of the APIs).
    pub upstream: Vec<(String, String)>,
    /// Runs are saved and teach ToolNet (a user's generation); an evaluation keeps the workspace
    /// as it was, so one task cannot teach the next.
    pub learn: bool,
}

/// The result of trying to run a program.
#[derive(Debug, Clone)]
pub enum Execution {
    Ran(Box<RunOutcome>),
    /// Not run: it calls these tools, which may write, and the user did not agree.
    NeedsConsent(Vec<String>),
    /// Not run: the analysis says these calls cannot run (no transport, no base URL).
    Unrunnable(Vec<String>),
}

/// The tools a program calls that are not known to be read-only (HTTP non-GET, MCP tools without
/// `readOnlyHint`), by id, in call order without repeats.
pub fn writing_tools(program: &str, catalog: &Catalog) -> Vec<String> {
    let tree = parse::parse(program);
    let result = analysis::analyze(Path::new("chain.py"), program, &tree, catalog, &Default::default());
    let mut out: Vec<String> = Vec::new();
    for tool in result.calls.iter().filter_map(|c| c.tool) {
        if tool.read_only() != Some(true) && !out.contains(&tool.id()) {
            out.push(tool.id());
        }
    }
    out
}

impl Runner {
    /// Runs `program` (replaying `replay`'s calls) on a blocking thread.
    pub async fn execute(&self, program: &str, replay: Option<&Trace>) -> Execution {
        let refused = runtime::unrunnable_calls(&self.program, program, &self.config, &self.catalog, &self.upstream);
        if !refused.is_empty() {
            return Execution::Unrunnable(refused.into_iter().map(|d| d.message).collect());
        }
        let writes = writing_tools(program, &self.catalog);
        if !writes.is_empty() && !self.allow_writes {
            return Execution::NeedsConsent(writes);
        }
        let mut request = RunRequest::new(&self.program, &self.root, self.config.clone(), self.catalog.clone());
        request.source = Some(program.to_string());
        request.replay = replay.cloned();
        request.mcp = self.mcp.clone();
        request.upstream = self.upstream.clone();
        request.save_trace = self.learn;
        let cancel = self.cancel.clone();
        let outcome = tokio::task::spawn_blocking(move || runtime::run(request, Arc::new(Quiet), &cancel)).await;
        match outcome {
            Ok(outcome) => {
                self.learn(&outcome);
                Execution::Ran(Box::new(outcome))
            }
            Err(e) => Execution::Unrunnable(vec![format!("the run failed: {e}")]),
        }
    }

    /// Feeds the run's trajectory to ToolNet's store (best effort: a store problem is logged).
    fn learn(&self, outcome: &RunOutcome) {
        if self.learn {
            learn_run(&self.root, outcome, None);
        }
    }
}

/// Records a run in ToolNet's store; `answered` is the judge's verdict on whether the output answers
/// the task (the default evaluator gives every tool of an answering run +1 more). Recording the same
/// run again replaces it.
pub fn learn_run(root: &std::path::Path, outcome: &RunOutcome, answered: Option<bool>) {
    let Some(name) = outcome.trace_file.as_ref().and_then(|f| f.file_name()).map(|n| n.to_string_lossy()) else {
        return;
    };
    let Ok(value) = serde_json::to_value(&outcome.trace) else { return };
    let Ok(mut trace) = serde_json::from_value::<crate::graph::trace::TraceSummary>(value) else { return };
    trace.answered = answered;
    if let Err(e) = crate::graph::workspace::learn_run(root, &name, &trace, &crate::graph::trace::TraceEvaluator) {
        tracing::warn!("ToolNet did not record the run {name}: {e}");
    }
}

/// How the failing tool was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attribution {
    /// The runtime attributed the error to this call.
    Trace,
    /// The model named it (validated).
    Model,
    /// The model did not name a candidate; the run's last call was taken.
    LastCall,
    /// Nothing to go on (no calls, no answer).
    Unknown,
}

/// A failed run's error in one line, with the status of the attributed call.
pub fn error_text(outcome: &RunOutcome) -> String {
    if let Some(e) = &outcome.start_error {
        return e.clone();
    }
    match &outcome.trace.error {
        Some(e) => {
            let at = e.line.map(|l| format!(" (line {l})")).unwrap_or_default();
            format!("{}: {}{at}", e.kind, e.message)
        }
        None => "the program failed".into(),
    }
}

fn trace_text(trace: &Trace) -> String {
    let mut out = String::new();
    for call in &trace.calls {
        out.push_str(&format!("{}\n", call.summary()));
        if !call.ok
            && let Some(e) = &call.error
        {
            out.push_str(&format!("    error: {}\n", crate::text::shorten(e, 200)));
        }
    }
    if out.is_empty() {
        out.push_str("(no tool calls)\n");
    }
    out
}

/// The prompt asking which tool the error is due to.
pub fn attribution_prompt(task: &str, program: &str, outcome: &RunOutcome, candidates: &[&Tool]) -> String {
    let names: Vec<String> = candidates.iter().map(|t| t.id()).collect();
    format!(
        "Which tool is the error of this tool-chain program due to?\n\nTask: {}\n\nProgram:\n```python\n{}```\n\nError: {}\n\nTool calls:\n{}\nCandidate tools: {}\n\nReply with the tool's name only, as `toolset.tool`.",
        task.trim(),
        program,
        error_text(outcome),
        trace_text(&outcome.trace),
        names.join(", ")
    )
}

/// The candidate a reply names: the longest candidate id (or bare tool name) that occurs in it.
fn named_tool<'a>(reply: &str, candidates: &[&'a Tool]) -> Option<&'a Tool> {
    let found = |needle: &str| {
        reply.match_indices(needle).any(|(i, _)| {
            let before = reply[..i].chars().next_back();
            let after = reply[i + needle.len()..].chars().next();
            let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            boundary(before) && boundary(after)
        })
    };
    candidates
        .iter()
        .filter(|t| found(&t.id()) || found(&t.name))
        .max_by_key(|t| (found(&t.id()), t.name.len()))
        .copied()
}

/// The tool the failure is attributed to: exact from the trace, else named by the model (asked at
/// most twice), else the last call's tool. The id may be outside the candidates only when it comes
/// from the trace or the last call.
#[allow(clippy::too_many_arguments)]
pub async fn attribute(
    task: &str,
    program: &str,
    outcome: &RunOutcome,
    candidates: &[&Tool],
    client: &llm::Client,
    budget: &Budget,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<(Option<String>, Attribution), GenerateError> {
    let calls = &outcome.trace.calls;
    if let Some(id) = outcome.trace.error.as_ref().and_then(|e| e.attributed_call)
        && let Some(call) = calls.iter().find(|c| c.id == id)
    {
        return Ok((Some(call.tool.clone()), Attribution::Trace));
    }
    let mut messages = vec![Message::user(attribution_prompt(task, program, outcome, candidates))];
    for _ in 0..2 {
        if cancelled() {
            return Err(GenerateError::Cancelled);
        }
        budget.check(&client.meter)?;
        let reply = client.chat(&messages, &llm::Options::new(0.0, 64)).await?;
        if let Some(tool) = named_tool(&reply.content, candidates) {
            return Ok((Some(tool.id()), Attribution::Model));
        }
        messages.push(Message::assistant(reply.content));
        messages
            .push(Message::user("That is not one of the candidate tools. Reply with exactly one name from the list."));
    }
    match calls.last() {
        Some(call) => Ok((Some(call.tool.clone()), Attribution::LastCall)),
        None => Ok((None, Attribution::Unknown)),
    }
}

/// A tool's full protocol for a revision: the long outline and its examples.
pub fn full_protocol(tool: &Tool) -> String {
    let mut out = prompt::render_tool(tool, 60);
    for example in tool.examples.iter().take(3) {
        if let Some(question) = &example.question {
            out.push_str(&format!("  example task: {question}\n"));
        }
        if let Some(args) = &example.arguments {
            out.push_str(&format!("  example arguments: {args}\n"));
        }
        if let Some(program) = &example.program {
            out.push_str(&format!("  example program:\n{program}\n"));
        }
        if let Some(response) = &example.response {
            let text = crate::text::shorten(&response.to_string(), 600).into_owned();
            out.push_str(&format!("  example response: {text}\n"));
        }
    }
    out
}

/// One failed attempt as the revision prompt shows it.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub program: String,
    pub error: String,
}

/// The revision request: the error, the previous attempts and the attributed tool's protocol.
pub fn revision_prompt(attempts: &[Attempt], tool: Option<&Tool>, trace: &Trace) -> String {
    let mut out = String::from("The program failed when it ran. Revise it.\n\n");
    if let Some(last) = attempts.last() {
        out.push_str(&format!("Error: {}\n\nTool calls of the failed run:\n{}\n", last.error, trace_text(trace)));
    }
    if attempts.len() > 1 {
        out.push_str("Earlier attempts that also failed:\n");
        for (i, a) in attempts[..attempts.len() - 1].iter().enumerate() {
            out.push_str(&format!("Attempt {}:\n```python\n{}```\nError: {}\n\n", i + 1, a.program, a.error));
        }
    }
    if let Some(tool) = tool {
        out.push_str(&format!(
            "The error is attributed to the tool `{}`. Its full protocol:\n{}\n",
            tool.id(),
            full_protocol(tool)
        ));
    }
    out.push_str("Reply with the whole revised program in one ```python block.");
    out
}

/// The conversation asking for a revision of the last attempt (it then goes through the static
/// loop like any request for a program).
pub fn revision_messages(
    task: &str,
    candidates: &[&Tool],
    plans: &[String],
    attempts: &[Attempt],
    tool: Option<&Tool>,
    trace: &Trace,
) -> Vec<Message> {
    // The first request as it was, so a revision's conversation starts with the same text.
    let mut messages = atc::first_messages(task, candidates, plans);
    if let Some(last) = attempts.last() {
        messages.push(Message::assistant(format!("```python\n{}```", last.program)));
    }
    messages.push(Message::user(revision_prompt(attempts, tool, trace)));
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolset::test_support::openapi_catalog;

    const SPEC: &str = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /items:\n    get:\n      operationId: listItems\n      responses: {'200': {description: ok}}\n    post:\n      operationId: createItem\n      responses: {'200': {description: ok}}\n";

    #[test]
    fn only_tools_not_known_to_read_are_writes() {
        let catalog = openapi_catalog("shop", SPEC, Some("http://127.0.0.1:1"));
        let names: Vec<String> = catalog.tools().map(|t| t.id()).collect();
        let (get, post) = (
            &names.iter().find(|n| n.as_str() == "shop.items").unwrap(),
            names.iter().find(|n| n.as_str() == "shop.post_items").unwrap(),
        );
        let reading = format!("from chainsmith.tools import shop\nprint({get}())\n");
        assert!(writing_tools(&reading, &catalog).is_empty());
        let writing = format!("from chainsmith.tools import shop\n{post}()\n{post}()\nprint({get}())\n");
        assert_eq!(writing_tools(&writing, &catalog), vec![post.clone()]);
    }

    #[test]
    fn a_reply_names_a_candidate() {
        let catalog = openapi_catalog("shop", SPEC, None);
        let tools: Vec<&Tool> = catalog.tools().collect();
        let create = tools.iter().find(|t| t.name == "post_items").unwrap();
        let reply = format!("The failing tool is **{}** because…", create.id());
        assert_eq!(named_tool(&reply, &tools).map(|t| t.id()), Some(create.id()));
        assert!(named_tool("it is tmdb.nothing", &tools).is_none());
    }
}
