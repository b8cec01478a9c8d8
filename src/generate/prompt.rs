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
    use crate::toolset::workspace;

    #[test]
    fn a_tmdb_tool_renders_compactly() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tmdb"));
        let catalog = workspace::load(&Config::load(root, None));
        let tool = catalog.tool("tmdb", "search_person").unwrap();
        let text = render_tool(tool, 8);
        assert!(text.starts_with("tmdb.search_person("), "{text}");
        assert!(text.contains("query: string"), "{text}");
        assert!(text.contains("returns:\n    page: integer"), "{text}");
        assert!(text.contains("results: array of object"), "{text}");
        assert!(text.lines().count() < 25, "{text}");
    }
}
