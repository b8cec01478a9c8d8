//! Prompts: the candidates' protocols rendered compactly (signature, description, parameters,
//! response schema), the module dialect's conventions, and the feedback messages of the loop.

use crate::toolset::{Tool, schema};

/// The conventions of the module dialect, as the model must follow them.
pub const SYSTEM: &str = "You write tool-chain programs: short Python 3 programs that solve a task by calling tools and \
combining their JSON responses.\n\
Rules:\n\
- Import a toolset as a module: `from chainsmith.tools import <toolset>`; call tools as `<toolset>.<tool>(name=value, ...)` \
with keyword arguments only.\n\
- A tool returns its parsed JSON response (dicts and lists) as described under `returns`; read only keys that are listed.\n\
- A failed call raises `chainsmith.ToolError`; do not catch it unless the task needs a fallback.\n\
- Use only the tools listed below. Do not invent tools, parameters or response keys.\n\
- Print the final answer with print().\n\
Reply with the whole program in one ```python block.";

/// One tool's protocol in a few lines: `toolset.name(*, query: string, page?: integer) -> object`,
/// its description, parameter notes and the response outline.
pub fn render_tool(tool: &Tool, outline_lines: usize) -> String {
    let params: Vec<String> = tool
        .params
        .iter()
        .map(|p| format!("{}{}: {}", p.name, if p.required { "" } else { "?" }, schema::summary(tool, &p.schema)))
        .collect();
    let returns = tool.response.as_ref().map(|r| schema::summary(tool, r)).unwrap_or_else(|| "unknown JSON".into());
    let mut out = format!("{}.{}({}) -> {}\n", tool.toolset, tool.name, params.join(", "), returns);
    let description = tool.description.split_whitespace().collect::<Vec<_>>().join(" ");
    if !description.is_empty() {
        let short: String = description.chars().take(300).collect();
        out.push_str(&format!("  {short}\n"));
    }
    for p in &tool.params {
        let mut note = p.description.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(values) = schema::enum_values(tool, &p.schema) {
            let shown: Vec<String> = values.iter().take(8).map(|v| v.to_string()).collect();
            note = format!("{note} one of {}", shown.join(", ")).trim().to_string();
        }
        if !note.is_empty() {
            let short: String = note.chars().take(160).collect();
            out.push_str(&format!("  - {}: {short}\n", p.name));
        }
    }
    if let Some(response) = &*tool.response {
        let lines = schema::outline(tool, response, outline_lines);
        if !lines.is_empty() {
            out.push_str("  returns:\n");
            for l in lines {
                out.push_str(&format!("    {l}\n"));
            }
        }
    }
    out
}

/// The generation request: the task, the candidate tools and the chains the planner found for
/// the task (typed skeletons, best first), if any.
pub fn generation(task: &str, candidates: &[&Tool], plans: &[String]) -> String {
    let mut out = format!("Task: {}\n\nTools:\n", task.trim());
    for tool in candidates {
        out.push_str(&render_tool(tool, 12));
        out.push('\n');
    }
    if !plans.is_empty() {
        out.push_str(
            "Chains the tools' data flow allows for this task, most likely first (each passes the checks; \
the values come from the task and from earlier responses). Start from the one that answers the task, and \
change what it needs: pick the right item, add the reading of the answer, print it.\n",
        );
        for (i, plan) in plans.iter().enumerate() {
            out.push_str(&format!("\nChain {}:\n```python\n{}```\n", i + 1, plan));
        }
        out.push('\n');
    }
    out.push_str("Write the program.");
    out
}

/// The request to choose among the planner's chains (`chains`: each skeleton with its tools): one
/// number back, the chain's, or 0 for none. Each chain is shown by its calls alone, and each
/// tool once by what it does, so the choice costs a few hundred prompt tokens and one reply token.
pub fn plan_choice(task: &str, chains: &[(&str, Vec<&Tool>)]) -> String {
    let mut out = format!(
        "Task: {}\n\nThese chains of tool calls can be made for the task (each passes the checks):\n",
        task.trim()
    );
    for (i, (skeleton, _)) in chains.iter().enumerate() {
        let calls: Vec<&str> = skeleton
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("from ") && !l.starts_with("print("))
            .collect();
        out.push_str(&format!("\nChain {}:\n```python\n{}\n```\n", i + 1, calls.join("\n")));
    }
    let mut described: Vec<String> = Vec::new();
    for tool in chains.iter().flat_map(|(_, tools)| tools) {
        let id = format!("{}.{}", tool.toolset, tool.name);
        if described.contains(&id) {
            continue;
        }
        let summary = first_sentence(&tool.description, 160);
        if !summary.is_empty() {
            if described.is_empty() {
                out.push_str("\nWhat the tools do:\n");
            }
            out.push_str(&format!("- {id}: {summary}\n"));
        }
        described.push(id);
    }
    out.push_str(
        "\nWhich chain gets what the task asks for, with no call it does not need? Reply with the chain's number \
only, or 0 if none does.",
    );
    out
}

/// The request to complete the chosen chain into the program: the chain's tools' protocols, the
/// skeleton, and what is left to write (the reading of the answer, the item the task means).
pub fn plan_completion(task: &str, tools: &[&Tool], skeleton: &str) -> String {
    let mut out = format!("Task: {}\n\nTools:\n", task.trim());
    for tool in tools {
        out.push_str(&render_tool(tool, 16));
        out.push('\n');
    }
    out.push_str(&format!(
        "These calls get what the task needs (they pass the checks; their values come from the task and from \
earlier responses):\n```python\n{skeleton}```\nComplete them into the program that solves the task: keep the calls; \
change an argument or the item a call picks from a list only where the task says which; read the answer from the \
responses (only keys listed under `returns`) and print it instead of the whole response. Write no comments. \
Reply with the whole program in one ```python block."
    ));
    out
}

/// A description's first sentence, whitespace collapsed, at most `limit` characters.
fn first_sentence(description: &str, limit: usize) -> String {
    let flat = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat.find(". ").map_or(flat.len(), |i| i + 1);
    flat[..end].chars().take(limit).collect()
}

/// Feedback on a program that the static analysis rejected, before anything runs.
pub fn static_feedback(problems: &[String]) -> String {
    let mut out = String::from("The program has these problems (found by checking it against the tool protocols):\n");
    for p in problems {
        out.push_str(&format!("- {p}\n"));
    }
    out.push_str("Fix them and reply with the whole corrected program in one ```python block.");
    out
}

/// The request for a model that sent back a program it had already sent: its program with each
/// problem marked on its line.
pub fn repeated_program_feedback(marked: &str) -> String {
    format!(
        "You sent the same program again, and it still has the same problems. Here it is with each problem marked \
         under the line it is on:\n```python\n{marked}```\nDo not repeat it. Change every marked line: use only the \
         tools and the argument names listed above, pass arguments by keyword, and read ids from earlier responses \
         instead of writing them in. Reply with the whole corrected program in one ```python block."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::toolset::loader;

    #[test]
    fn a_tmdb_tool_renders_compactly() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tmdb"));
        let catalog = loader::load(&Config::load(root, None));
        let tool = catalog.tool("tmdb", "search_person").unwrap();
        let text = render_tool(tool, 8);
        assert!(text.starts_with("tmdb.search_person("), "{text}");
        assert!(text.contains("query: string"), "{text}");
        assert!(text.contains("returns:\n    page: integer"), "{text}");
        assert!(text.contains("results: array of object"), "{text}");
        assert!(text.lines().count() < 25, "{text}");
    }

    #[test]
    fn a_plan_choice_shows_each_chain_by_its_calls_and_each_tool_once() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tmdb"));
        let catalog = loader::load(&Config::load(root, None));
        let search = catalog.tool("tmdb", "search_movie").unwrap();
        let credits = catalog.tool("tmdb", "movie_credits").unwrap();
        let reviews = catalog.tool("tmdb", "movie_reviews").unwrap();
        let first = "from chainsmith.tools import tmdb\n\nfound = tmdb.search_movie(query=\"Up\")\ncredits = tmdb.movie_credits(movie_id=found[\"results\"][0][\"id\"])\nprint(credits)\n";
        let second = "from chainsmith.tools import tmdb\n\nfound = tmdb.search_movie(query=\"Up\")\nreviews = tmdb.movie_reviews(movie_id=found[\"results\"][0][\"id\"])\nprint(reviews)\n";
        let text = plan_choice("Who directed Up?", &[(first, vec![search, credits]), (second, vec![search, reviews])]);
        assert!(text.starts_with("Task: Who directed Up?\n"), "{text}");
        assert!(
            text.contains(
                "Chain 2:\n```python\nfound = tmdb.search_movie(query=\"Up\")\nreviews = tmdb.movie_reviews("
            ),
            "{text}"
        );
        assert!(!text.contains("print("), "the print every skeleton ends with is noise here: {text}");
        assert_eq!(text.matches("- tmdb.search_movie: ").count(), 1, "{text}");
        assert!(text.contains("- tmdb.movie_reviews: "), "{text}");
        assert!(text.ends_with("or 0 if none does."), "{text}");
    }
}
