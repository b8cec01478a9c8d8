//! ATC generation: the model writes the whole chain at once from the task and the candidates'
//! protocols; the program is extracted from the reply and checked statically, and static errors go
//! back to the model before anything runs.
//!
//! Two things keep a small local model from wasting the budget: chainsmith's own quick fixes
//! (did-you-mean tool and argument names, positional arguments named, a missing argument passed from
//! a response the program holds — the editor's fixes) are
//! applied before anything goes back to the model, so it is asked only about what chainsmith
//! cannot fix; and a model that sends back a program it already sent gets a different request —
//! its program with every problem marked on its line, at a higher temperature — instead of the
//! same one again.

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
    /// The model kept answering without a program: more calls would burn the budget on the same.
    #[error("the model replied {replies} times in a row without a Python program (its last reply: \"{last}\")")]
    NoProgram { replies: usize, last: String },
}

/// The program a conversation produced (statically valid unless `problems` says otherwise) and the
/// conversation itself.
#[derive(Debug, Clone)]
pub struct Draft {
    pub program: String,
    pub messages: Vec<Message>,
    /// Problems the model was told about along the way, in order.
    pub feedback: Vec<Vec<String>>,
    /// The static problems the program still has: empty for a valid one; else the static loop
    /// gave up on the model fixing them and hands back its best program, to run and revise.
    pub problems: Vec<String>,
}

/// How many programs with static problems one conversation may send before its best one is run
/// anyway: a small model that cannot fix a problem from its description usually repeats it, and
/// a run (whose failure is attributed to one call) tells it more than the same list again.
pub const MAX_STATIC_ROUNDS: usize = 3;

/// How many replies in a row without a program end a conversation: a model that answers with prose
/// (or nothing) three times does the same the fourth, and every try costs a call.
pub const MAX_UNUSABLE_REPLIES: usize = 3;

/// The start of a reply, on one line, for a message that quotes it.
fn excerpt(reply: &str) -> String {
    let flat = reply.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= 80 {
        return flat;
    }
    format!("{}…", flat.chars().take(80).collect::<String>())
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

/// The program with chainsmith's own fixes applied: the first suggestion of every error that has
/// one (did-you-mean names, positional arguments named), non-overlapping, until nothing changes
/// (at most three rounds: a fix can reveal the next problem, as a renamed tool reveals its
/// arguments). A fix that inserts a placeholder (`movie_id=...`, the editor's snippet for a missing
/// argument) is left out: it would turn a problem the model can be told about into a run that
/// sends `Ellipsis`.
pub fn apply_quick_fixes(program: &str, catalog: &Catalog) -> String {
    let mut text = program.to_string();
    for _ in 0..3 {
        let tree = parse::parse(&text);
        let analysis = analysis::analyze(Path::new("chain.py"), &text, &tree, catalog, &DiagnosticsConfig::default());
        let mut edits: Vec<(usize, usize, String)> = analysis
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .filter_map(|d| d.suggestions.first())
            .filter(|s| !s.replacement.contains("..."))
            .map(|s| (s.range.start, s.range.end, s.replacement.clone()))
            .filter(|(start, end, _)| start <= end && *end <= text.len())
            .collect();
        if edits.is_empty() {
            edits = held_values_for_missing_arguments(&analysis, &text, catalog);
        }
        if edits.is_empty() {
            break;
        }
        edits.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
        let mut next = text.clone();
        let mut floor = usize::MAX;
        for (start, end, replacement) in edits {
            // From the end backwards; an edit overlapping one already made waits for the next round.
            if end > floor || !next.is_char_boundary(start) || !next.is_char_boundary(end) {
                continue;
            }
            next.replace_range(start..end, &replacement);
            floor = start;
        }
        if next == text {
            break;
        }
        text = next;
    }
    text
}

/// For each call that lacks a required argument, the editor's first fix that passes a field of a
/// response the program already holds (`movie_id=found["results"][0]["id"]`, the data-flow
/// graph's best feed in scope), as an edit. Calls with no such value are left for the model.
fn held_values_for_missing_arguments(
    analysis: &analysis::Analysis<'_>,
    program: &str,
    catalog: &Catalog,
) -> Vec<(usize, usize, String)> {
    let mut edits = Vec::new();
    for d in analysis.diagnostics.iter().filter(|d| d.code == "missing-argument" && d.severity == Severity::Error) {
        let Some(call) = analysis.call_at(d.range.start) else { continue };
        let fixes = crate::plan::editor::missing_argument_fixes(analysis, program, catalog, call, None);
        let held = fixes.into_iter().find(|f| f.title.starts_with("Pass ") && f.edits.len() == 1);
        if let Some((range, text)) = held.and_then(|f| f.edits.into_iter().next())
            && !edits.iter().any(|(start, _, _)| *start == range.start)
        {
            edits.push((range.start, range.end, text));
        }
    }
    edits
}

/// The program with each problem written as a comment under the line it is on (`problems` as
/// [`static_problems`] words them: `line N: …`).
pub fn mark_problems(program: &str, problems: &[String]) -> String {
    let mut by_line: std::collections::BTreeMap<usize, Vec<&str>> = Default::default();
    let mut unplaced = Vec::new();
    for p in problems {
        let placed = p
            .strip_prefix("line ")
            .and_then(|rest| rest.split_once(": "))
            .and_then(|(n, message)| Some((n.parse::<usize>().ok()?, message)));
        match placed {
            Some((line, message)) => by_line.entry(line).or_default().push(message),
            None => unplaced.push(p.as_str()),
        }
    }
    let mut out = String::new();
    for (i, line) in program.lines().enumerate() {
        out.push_str(line);
        out.push('\n');
        for message in by_line.get(&(i + 1)).into_iter().flatten() {
            let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
            out.push_str(&format!("{indent}# ^ PROBLEM: {message}\n"));
        }
    }
    for message in unplaced {
        out.push_str(&format!("# PROBLEM: {message}\n"));
    }
    out
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
    converse(first_messages(task, candidates, &[]), catalog, client, budget, cancelled).await
}

/// The conversation that asks for a first draft, showing the planner's chains (`plans`) if any.
pub fn first_messages(task: &str, candidates: &[&Tool], plans: &[String]) -> Vec<Message> {
    vec![Message::system(prompt::SYSTEM), Message::user(prompt::generation(task, candidates, plans))]
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
    let asking = Asking { static_feedback: true, reply_tokens: PROGRAM_REPLY_TOKENS };
    converse_logged(messages, catalog, client, budget, cancelled, &mut Vec::new(), asking).await
}

/// The longest reply asked for a program written from scratch: the chains of a task take a few
/// hundred tokens, and a small model that goes on past this is writing a helper for every tool
/// (2,000–3,000-token replies, minutes each on a laptop) — better cut off and told so.
pub const PROGRAM_REPLY_TOKENS: u32 = 1024;

/// The reply budget for a program that revises `program`: its size and room to grow.
pub fn reply_tokens_for(program: &str) -> u32 {
    let estimate = u32::try_from(program.chars().count() / 3).unwrap_or(u32::MAX);
    estimate.saturating_add(512).max(PROGRAM_REPLY_TOKENS)
}

/// How a conversation asks for programs.
#[derive(Debug, Clone, Copy)]
pub struct Asking {
    /// Static problems go back to the model (off only as an ablation: the first program is taken).
    pub static_feedback: bool,
    /// The longest reply asked for ([`PROGRAM_REPLY_TOKENS`], [`reply_tokens_for`]).
    pub reply_tokens: u32,
}

/// [`converse`], adding the number of static problems of every reply it checks to `checked`
/// (0 for the reply that passes), whether or not a program passes in the end. Without static
/// feedback (an ablation), the first program extracted is taken as it is, problems and all.
pub async fn converse_logged(
    mut messages: Vec<Message>,
    catalog: &Catalog,
    client: &llm::Client,
    budget: &Budget,
    cancelled: &(dyn Fn() -> bool + Sync),
    checked: &mut Vec<usize>,
    asking: Asking,
) -> Result<Draft, GenerateError> {
    let mut feedback = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut temperature = 0.2;
    // The program with the fewest problems so far, with them.
    let mut best: Option<(String, Vec<String>)> = None;
    let mut unusable = 0;
    loop {
        if cancelled() {
            return Err(GenerateError::Cancelled);
        }
        if let Err(out_of_budget) = budget.check(&client.meter) {
            // Better a program with known problems than none: the user can see and fix it.
            return match best {
                Some((program, problems)) => Ok(Draft { program, messages, feedback, problems }),
                None => Err(out_of_budget),
            };
        }
        let reply = client.chat(&messages, &llm::Options::new(temperature, asking.reply_tokens)).await?;
        messages.push(Message::assistant(reply.content.clone()));
        let Some(found) = extract::extract(&reply.content) else {
            unusable += 1;
            if unusable >= MAX_UNUSABLE_REPLIES {
                return match best {
                    Some((program, problems)) => Ok(Draft { program, messages, feedback, problems }),
                    None => Err(GenerateError::NoProgram { replies: unusable, last: excerpt(&reply.content) }),
                };
            }
            let problems = vec!["the reply contains no Python program".to_string()];
            messages.push(Message::user(prompt::static_feedback(&problems)));
            feedback.push(problems);
            continue;
        };
        unusable = 0;
        let raw = static_problems(&found.code, catalog);
        checked.push(raw.len());
        if !asking.static_feedback {
            return Ok(Draft { program: found.code, messages, feedback, problems: raw });
        }
        let program = if raw.is_empty() { found.code.clone() } else { apply_quick_fixes(&found.code, catalog) };
        let mut problems = if program == found.code { raw } else { static_problems(&program, catalog) };
        if found.truncated && problems.is_empty() {
            // A cut-off reply that happens to parse is still missing its end.
            problems.push("the reply was cut off; write the whole program, shorter if needed".into());
        }
        if problems.is_empty() {
            if program != found.code {
                checked.push(0);
            }
            return Ok(Draft { program, messages, feedback, problems });
        }
        if best.as_ref().is_none_or(|(_, fewest)| problems.len() < fewest.len()) {
            best = Some((program.clone(), problems.clone()));
        }
        if seen.len() + 1 >= MAX_STATIC_ROUNDS {
            feedback.push(problems);
            let (program, problems) = best.expect("set above");
            return Ok(Draft { program, messages, feedback, problems });
        }
        let normalized: String = found.code.split_whitespace().collect::<Vec<_>>().join(" ");
        let request = if seen.contains(&normalized) {
            // The same program again: the same request would get the same answer.
            temperature = 0.7;
            prompt::repeated_program_feedback(&mark_problems(&program, &problems))
        } else {
            prompt::static_feedback(&problems)
        };
        seen.push(normalized);
        messages.push(Message::user(request));
        feedback.push(problems);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::toolset::loader;

    fn tmdb() -> Catalog {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tmdb"));
        loader::load(&Config::load(root, None))
    }

    /// What a small model writes most often (seen with Qwen2.5-Coder-1.5B on RestBench): a
    /// positional id and a misspelt tool. Both are fixed without asking it again.
    #[test]
    fn quick_fixes_name_positional_arguments_and_correct_tool_names() {
        let catalog = tmdb();
        let program = "from chainsmith.tools import tmdb\nm = tmdb.search_movie(query=\"Titanic\")\nmovie_id = m[\"results\"][0][\"id\"]\ncredits = tmdb.movie_credit(movie_id)\nprint(credits[\"cast\"][0][\"name\"])\n";
        let fixed = apply_quick_fixes(program, &catalog);
        assert!(fixed.contains("credits = tmdb.movie_credits(movie_id=movie_id)\n"), "{fixed}");
        assert!(static_problems(&fixed, &catalog).is_empty(), "{fixed}");
    }

    /// A missing id that a response the program holds provides is passed from it, as the editor's
    /// quick fix would (the model is not asked again for it).
    #[test]
    fn quick_fixes_pass_a_held_field_to_a_missing_argument() {
        let catalog = tmdb();
        let program = "from chainsmith.tools import tmdb\nfound = tmdb.search_movie(query=\"Up\")\ncredits = tmdb.movie_credits()\nprint(credits[\"cast\"][0][\"name\"])\n";
        let fixed = apply_quick_fixes(program, &catalog);
        assert!(fixed.contains("credits = tmdb.movie_credits(movie_id=found[\"results\"][0][\"id\"])\n"), "{fixed}");
        assert!(static_problems(&fixed, &catalog).is_empty(), "{fixed}");
    }

    /// A missing argument has no value chainsmith could know: the program is left for the model
    /// to be told, not filled with a placeholder that would run as `Ellipsis`.
    #[test]
    fn quick_fixes_insert_no_placeholders() {
        let catalog = tmdb();
        let program = "from chainsmith.tools import tmdb\nprint(tmdb.movie_credits())\n";
        assert_eq!(apply_quick_fixes(program, &catalog), program);
        assert_eq!(static_problems(program, &catalog).len(), 1);
    }
}
