//! Instance discovery (ATC §4.1): for a tool whose response schema is unknown, the LLM writes a
//! question targeting it and a program that uses it; the program runs through the runtime; the
//! tool's responses in the trace are decoded and examined. Tries repeat (with the failure told to
//! the model) until a usable response arrives or `[probe] samples` tries are spent.
//!
//! Only read-only tools (MCP `readOnlyHint`, HTTP GET) run without confirmation; a probe program
//! that would call any other tool is not run unless the caller allows writes (`--yes`, the editor's
//! confirmation).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::analysis::{self, parse};
use crate::config::Config;
use crate::generate::{atc, extract, prompt};
use crate::llm::{self, Message};
use crate::runtime::{self, Cancel, McpPool, RunRequest, Trace};
use crate::toolset::{Catalog, Example, SourceKind, Tool, Transport};

use super::{decode, infer};

/// The instructions for probe programs.
pub const SYSTEM: &str = "You document tools by using them. Given one target tool whose response format is unknown, \
invent a realistic question a user could ask that the target answers, and write a short Python 3 program that answers \
it by calling the target.\n\
Rules:\n\
- Import a toolset as a module: `from chainsmith.tools import <toolset>`; call tools as `<toolset>.<tool>(name=value, ...)` \
with keyword arguments only.\n\
- Call the target tool at least once with realistic arguments; other listed tools may supply its arguments (IDs).\n\
- Do not guess the target's response keys: print its whole response with print().\n\
Reply with one line `Question: ...` and then the whole program in one ```python block.";

/// Everything a probe needs, shared by the tools of one probing session.
#[derive(Clone)]
pub struct Prober {
    pub config: Arc<Config>,
    pub client: llm::Client,
    /// Run probe programs that call tools not known to be read-only.
    pub allow_writes: bool,
    /// MCP sessions kept across the probes of a session.
    pub mcp: Arc<McpPool>,
    pub cancel: Cancel,
    /// Tries per tool (`[probe] samples`).
    pub samples: u32,
    /// Whole-session LLM budget.
    pub budget: atc::Budget,
}

impl Prober {
    pub fn new(config: Arc<Config>, client: llm::Client, allow_writes: bool) -> Prober {
        let samples = config.probe.samples.max(1);
        let budget = atc::Budget {
            max_llm_calls: config.generate.max_llm_calls.max(1) * 4,
            max_tokens: config.generate.max_tokens.max(1) * 4,
        };
        Prober { config, client, allow_writes, mcp: Arc::new(McpPool::new()), cancel: Cancel::new(), samples, budget }
    }

    fn root(&self) -> &Path {
        &self.config.root
    }
}

/// A tool documented by probing.
#[derive(Debug, Clone)]
pub struct Probed {
    /// `toolset.name`.
    pub tool: String,
    pub toolset: String,
    pub name: String,
    /// The schema inferred from every response seen.
    pub response: Value,
    /// The decoded responses (as many as the tool answered).
    pub samples: Vec<Value>,
    /// The (question, program) pair that obtained them, with the first call's arguments and a
    /// trimmed response.
    pub example: Example,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Tries it took (LLM programs run).
    pub tries: u32,
}

impl Probed {
    /// What a run observed where the API answered outside its protocol, as a probe result: the
    /// shape of the observed response becomes the tool's (`runtime::drift`).
    pub fn observed(drift: &runtime::drift::Drift, catalog: &Catalog) -> Option<Probed> {
        let tool = catalog.find(&drift.tool).ok()?;
        let (date, _) = runtime::trace::timestamps(std::time::SystemTime::now());
        Some(Probed {
            tool: tool.id(),
            toolset: tool.toolset.clone(),
            name: tool.name.clone(),
            response: infer::infer([&drift.observed]),
            samples: vec![drift.observed.clone()],
            example: Example {
                question: None,
                program: None,
                arguments: Some(drift.arguments.clone()),
                response: Some(infer::example_of(&drift.observed)),
            },
            date: date[..10].to_string(),
            tries: 0,
        })
    }
}

/// Why a tool was not probed.
#[derive(Debug, Clone, PartialEq)]
pub enum Unprobed {
    /// Running it may change something and writes were not allowed.
    NotReadOnly(String),
    /// It cannot run at all (no transport, no base URL).
    CannotRun(String),
    /// Every try failed for lack of an argument (an ID) another tool must supply.
    NeedsArgument {
        param: String,
        error: String,
    },
    /// Every try failed otherwise.
    Failed(String),
    /// The LLM could not be used (unreachable, budget).
    Llm(String),
    Cancelled,
}

impl Unprobed {
    pub fn reason(&self) -> String {
        match self {
            Unprobed::NotReadOnly(why) => why.clone(),
            Unprobed::CannotRun(why) => why.clone(),
            Unprobed::NeedsArgument { param, error } => {
                format!("needs `{param}`, which no probed tool supplied ({error})")
            }
            Unprobed::Failed(why) => why.clone(),
            Unprobed::Llm(why) => format!("the LLM failed: {why}"),
            Unprobed::Cancelled => "cancelled".into(),
        }
    }
}

/// Whether the tool may run without confirmation; the reason when not.
pub fn confirmation_needed(tool: &Tool) -> Option<String> {
    match tool.read_only() {
        Some(true) => None,
        Some(false) => Some(format!(
            "{} is not read-only ({}): probing runs it for real; confirm (--yes in the CLI)",
            tool.id(),
            match &tool.transport {
                Transport::Http { method, .. } => format!("HTTP {method}"),
                _ => "readOnlyHint is false".into(),
            }
        )),
        None => Some(format!(
            "{} is not declared read-only: probing runs it for real; confirm (--yes in the CLI)",
            tool.id()
        )),
    }
}

/// Whether the tool can run in this workspace at all.
pub fn cannot_run(tool: &Tool, catalog: &Catalog) -> Option<String> {
    let toolset = catalog.toolset(&tool.toolset)?;
    match &tool.transport {
        Transport::None if tool.source.kind == SourceKind::ToolBench && toolset.base_url.is_some() => None,
        Transport::None => Some(runtime::http::no_transport(toolset, tool)),
        Transport::Http { .. } if toolset.base_url.is_none() => {
            Some(format!("{} cannot run: toolset `{}` has no base URL", tool.id(), toolset.name))
        }
        _ => None,
    }
}

/// The first required parameter that looks like an identifier another tool hands out.
pub fn id_parameter(tool: &Tool) -> Option<String> {
    tool.required()
        .find(|p| {
            let n = p.name.to_ascii_lowercase();
            n == "id" || n.ends_with("_id") || n.ends_with("id") || n.ends_with("_ids") || n.ends_with("_key")
        })
        .map(|p| p.name.clone())
}

/// The probing request for one tool, with its prerequisites' protocols.
pub fn request_text(target: &Tool, prerequisites: &[&Tool]) -> String {
    let mut out = format!("Probe target: {}\n\nTarget tool:\n{}", target.id(), prompt::render_tool(target, 12));
    if !prerequisites.is_empty() {
        out.push_str(
            "\nPrerequisite tools (their responses are known; use them to obtain the arguments the target needs):\n",
        );
        for tool in prerequisites {
            out.push_str(&prompt::render_tool(tool, 16));
        }
    }
    out.push_str("\nWrite the question and the program.");
    out
}

/// `Question: …` from a reply, else the first prose line.
fn question_of(reply: &str) -> Option<String> {
    for line in reply.lines() {
        let trimmed = line.trim().trim_start_matches(['*', '#', ' ']);
        if let Some(q) = trimmed.strip_prefix("Question:").or_else(|| trimmed.strip_prefix("question:")) {
            let q = q.trim().trim_matches('*').trim();
            if !q.is_empty() {
                return Some(q.to_string());
            }
        }
    }
    None
}

/// Calls in `program` to tools that are neither read-only nor allowed.
fn unconfirmed_calls(program: &str, catalog: &Catalog, target: &Tool, allow_writes: bool) -> Vec<String> {
    if allow_writes {
        return Vec::new();
    }
    let tree = parse::parse(program);
    let analysis = analysis::analyze(Path::new("probe.py"), program, &tree, catalog, &Default::default());
    let mut out: Vec<String> = analysis
        .calls
        .iter()
        .filter_map(|c| c.tool)
        .filter(|t| t.id() != target.id() && confirmation_needed(t).is_some())
        .map(Tool::id)
        .collect();
    out.dedup();
    out
}

/// A response worth documenting: anything but nothing.
fn usable(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::String(s) => !s.trim().is_empty(),
        _ => true,
    }
}

/// The tool's decoded successful responses in a trace, and its failures' messages.
fn examine(trace: &Trace, id: &str) -> (Vec<(Value, Value)>, Vec<String>) {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for call in trace.calls.iter().filter(|c| c.tool == id) {
        if call.ok {
            let value = match &call.response {
                Value::String(text) => decode::decode(text).0,
                other => other.clone(),
            };
            if usable(&value) {
                ok.push((call.arguments.clone(), value));
            } else {
                failed.push("the response was empty".to_string());
            }
        } else {
            let status = call.status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
            failed.push(format!("{status}{}", call.error.clone().unwrap_or_else(|| "failed".into())));
        }
    }
    (ok, failed)
}

fn probe_file(root: &Path, target: &Tool) -> PathBuf {
    root.join(".chainsmith").join("probe").join(format!("{}.py", target.id()))
}

/// Discovers `target`'s response by running LLM-written programs (with `prerequisites` offered
/// to supply its arguments). `catalog` should hold the schemas probed so far.
pub async fn discover(
    prober: &Prober,
    catalog: &Arc<Catalog>,
    target: &Tool,
    prerequisites: &[&Tool],
) -> Result<Probed, Unprobed> {
    if let Some(why) = cannot_run(target, catalog) {
        return Err(Unprobed::CannotRun(why));
    }
    if !prober.allow_writes
        && let Some(why) = confirmation_needed(target)
    {
        return Err(Unprobed::NotReadOnly(why));
    }
    let mut messages = vec![Message::system(SYSTEM), Message::user(request_text(target, prerequisites))];
    let mut last_failure = String::from("no try was made");
    let mut call_failures = 0u32;
    for attempt in 1..=prober.samples {
        if prober.cancel.is_cancelled() {
            return Err(Unprobed::Cancelled);
        }
        prober.budget.check(&prober.client.meter).map_err(|e| Unprobed::Llm(e.to_string()))?;
        let reply = prober
            .client
            .chat(&messages, &llm::Options::new(0.4, atc::PROGRAM_REPLY_TOKENS))
            .await
            .map_err(|e| Unprobed::Llm(e.to_string()))?;
        messages.push(Message::assistant(reply.content.clone()));
        let feedback = match extract::extract(&reply.content) {
            None => "the reply contains no Python program".to_string(),
            Some(found) => {
                let refused = unconfirmed_calls(&found.code, catalog, target, prober.allow_writes);
                let problems = atc::static_problems(&found.code, catalog);
                if !refused.is_empty() {
                    format!(
                        "the program calls tools that are not read-only ({}); use only read-only tools",
                        refused.join(", ")
                    )
                } else if !problems.is_empty() {
                    format!("the program has problems: {}", problems.join("; "))
                } else {
                    let trace = run_program(prober, catalog, target, &found.code).await?;
                    let (ok, failed) = examine(&trace, &target.id());
                    if !ok.is_empty() {
                        let samples: Vec<Value> = ok.iter().map(|(_, v)| v.clone()).collect();
                        let (date, _) = runtime::trace::timestamps(std::time::SystemTime::now());
                        let example = Example {
                            question: question_of(&reply.content),
                            program: Some(found.code.clone()),
                            arguments: Some(ok[0].0.clone()),
                            response: Some(infer::example_of(&ok[0].1)),
                        };
                        return Ok(Probed {
                            tool: target.id(),
                            toolset: target.toolset.clone(),
                            name: target.name.clone(),
                            response: infer::infer(samples.iter()),
                            samples,
                            example,
                            date: date[..10].to_string(),
                            tries: attempt,
                        });
                    }
                    if let Some(first) = failed.first() {
                        call_failures += 1;
                        format!("the call to {} failed: {first}", target.id())
                    } else if let Some(error) = &trace.error {
                        format!("the program failed before calling {}: {}: {}", target.id(), error.kind, error.message)
                    } else {
                        format!("the program did not call {}", target.id())
                    }
                }
            }
        };
        last_failure = feedback.clone();
        messages.push(Message::user(format!(
            "That try did not obtain a response: {feedback}.\nReply with another question and the whole program."
        )));
    }
    if call_failures > 0
        && let Some(param) = id_parameter(target)
    {
        return Err(Unprobed::NeedsArgument { param, error: last_failure });
    }
    Err(Unprobed::Failed(format!("no response in {} tries; last: {last_failure}", prober.samples)))
}

async fn run_program(prober: &Prober, catalog: &Arc<Catalog>, target: &Tool, code: &str) -> Result<Trace, Unprobed> {
    let program = probe_file(prober.root(), target);
    // Inside the workspace and through no link: `.chainsmith/probe/` is the workspace's to plant.
    crate::files::write_inside(prober.root(), &program, code.as_bytes())
        .map_err(|e| Unprobed::Failed(e.to_string()))?;
    let mut request = RunRequest::new(&program, prober.root(), prober.config.clone(), catalog.clone());
    request.source = Some(code.to_string());
    request.save_trace = false;
    request.mcp = Some(prober.mcp.clone());
    let cancel = prober.cancel.clone();
    let outcome = tokio::task::spawn_blocking(move || runtime::run(request, Arc::new(runtime::Quiet), &cancel))
        .await
        .map_err(|e| Unprobed::Failed(format!("the probe run panicked: {e}")))?;
    let _ = std::fs::remove_file(&program);
    if prober.cancel.is_cancelled() {
        return Err(Unprobed::Cancelled);
    }
    Ok(outcome.trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_read_from_replies() {
        assert_eq!(
            question_of("Question: What time is it in Paris?\n```python\n```").as_deref(),
            Some("What time is it in Paris?")
        );
        assert_eq!(question_of("**Question:** Who?\n").as_deref(), Some("Who?"));
        assert_eq!(question_of("no question here"), None);
    }

    #[test]
    fn empty_responses_are_not_usable() {
        assert!(!usable(&Value::Null));
        assert!(!usable(&Value::String("  ".into())));
        assert!(usable(&serde_json::json!([])));
    }
}
