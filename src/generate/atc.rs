//! ATC generation: the model writes the whole chain at once from the task and the candidates'
//! protocols; the program is extracted from the reply and checked statically, and static errors go
//! back to the model before anything runs.

use std::path::Path;

use crate::analysis::{self, parse};
use crate::config::DiagnosticsConfig;
use crate::diagnostic::Severity;
use crate::llm::{self, Message};
use crate::toolset::{Catalog, Tool};

use super::{extract, prompt};

/// The whole-operation budget (`[generate] max_llm_calls`, `max_tokens`).
#[derive(Debug, Clone)]
pub struct Budget {
    pub max_llm_calls: u32,
    pub max_tokens: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error(transparent)]
    Llm(#[from] llm::LlmError),
    #[error("the budget ran out ({0}) before a program passed the checks")]
    Budget(String),
    #[error("cancelled")]
    Cancelled,
}

/// A statically valid program and the conversation that produced it.
#[derive(Debug, Clone)]
pub struct Draft {
    pub program: String,
    pub messages: Vec<Message>,
    /// Problems the model was told about along the way, in order.
    pub feedback: Vec<Vec<String>>,
}

/// The static problems of a program: syntax errors and error diagnostics, one line each.
pub fn static_problems(program: &str, catalog: &Catalog) -> Vec<String> {
    let tree = parse::parse(program);
    let mut problems = Vec::new();
    if tree.root_node().has_error() {
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if node.is_error() || node.is_missing() {
                let line = node.start_position().row + 1;
                let text: String = program[node.byte_range()].chars().take(40).collect();
                problems.push(format!("line {line}: syntax error near `{}`", text.trim()));
                break;
            }
            let mut cursor = node.walk();
            let mut children: Vec<_> = node.children(&mut cursor).collect();
            children.reverse();
            stack.extend(children);
        }
    }
    let analysis = analysis::analyze(Path::new("chain.py"), program, &tree, catalog, &DiagnosticsConfig::default());
    let index = crate::text::LineIndex::new(program);
    for d in analysis.diagnostics.iter().filter(|d| d.severity == Severity::Error) {
        let line = index.line_of(d.range.start) + 1;
        problems.push(format!("line {line}: {} [{}]", d.message, d.code));
    }
    problems
}

impl Budget {
    pub fn check(&self, meter: &llm::UsageMeter) -> Result<(), GenerateError> {
        if meter.requests() >= self.max_llm_calls {
            return Err(GenerateError::Budget(format!("{} LLM calls", self.max_llm_calls)));
        }
        if meter.usage().total() >= self.max_tokens {
            return Err(GenerateError::Budget(format!("{} tokens", self.max_tokens)));
        }
        Ok(())
    }
}

/// Asks the model for a program until one passes the static checks (or the budget ends).
/// `cancelled` is polled between requests.
pub async fn draft(
    task: &str,
    candidates: &[&Tool],
    catalog: &Catalog,
    client: &llm::Client,
    budget: &Budget,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Draft, GenerateError> {
    converse(first_messages(task, candidates), catalog, client, budget, cancelled).await
}

/// The conversation that asks for a first draft.
pub fn first_messages(task: &str, candidates: &[&Tool]) -> Vec<Message> {
    vec![Message::system(prompt::SYSTEM), Message::user(prompt::generation(task, candidates))]
}

/// The static loop from a conversation whose last message asks for a program (a first draft, a
/// revision, a distinct alternative): the reply's program is checked and its problems go back.
pub async fn converse(
    messages: Vec<Message>,
    catalog: &Catalog,
    client: &llm::Client,
    budget: &Budget,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Draft, GenerateError> {
    converse_logged(messages, catalog, client, budget, cancelled, &mut Vec::new(), true).await
}

/// [`converse`], adding the number of static problems of every reply it checks to `checked`
/// (0 for the reply that passes), whether or not a program passes in the end. Without
/// `feedback_enabled` (an ablation), the first program extracted is taken as it is, problems and
/// all.
pub async fn converse_logged(
    mut messages: Vec<Message>,
    catalog: &Catalog,
    client: &llm::Client,
    budget: &Budget,
    cancelled: &(dyn Fn() -> bool + Sync),
    checked: &mut Vec<usize>,
    feedback_enabled: bool,
) -> Result<Draft, GenerateError> {
    let mut feedback = Vec::new();
    loop {
        if cancelled() {
            return Err(GenerateError::Cancelled);
        }
        budget.check(&client.meter)?;
        let reply = client.chat(&messages, &llm::Options { temperature: Some(0.2), max_tokens: None }).await?;
        messages.push(Message::assistant(reply.content.clone()));
        let problems = match extract::extract(&reply.content) {
            None => vec!["the reply contains no Python program".to_string()],
            Some(found) => {
                let mut problems = static_problems(&found.code, catalog);
                if found.truncated && problems.is_empty() {
                    // A cut-off reply that happens to parse is still missing its end.
                    problems.push("the reply was cut off; write the whole program, shorter if needed".into());
                }
                checked.push(problems.len());
                if problems.is_empty() || !feedback_enabled {
                    return Ok(Draft { program: found.code, messages, feedback });
                }
                problems
            }
        };
        messages.push(Message::user(prompt::static_feedback(&problems)));
        feedback.push(problems);
    }
}
