//! Planning a chain for a task with no model ([`crate::plan`]), on a workspace: `chainsmith plan`
//! and the editor's "Plan a chain for this task" read the same catalog, data flow, text index
//! and ToolNet graph, and write the same program.

use super::Workspace;
use crate::analysis::dialect::Imports;
use crate::plan::{NoPlan, Plan, Planner};

/// The best `k` plans for `task` on the workspace, best first.
pub fn plans(ws: &Workspace<'_>, task: &str, k: usize) -> Result<Vec<Plan>, NoPlan> {
    let planner =
        Planner { catalog: &ws.catalog, flow: ws.catalog.data_flow(), index: ws.index, toolnet: ws.toolnet.as_ref() };
    planner.plans(task, k)
}

/// `plan`'s skeleton as it goes at the end of a program whose text is `text`: without the import
/// the program already has, and set apart from what precedes it by one blank line.
pub fn appended(ws: &Workspace<'_>, plan: &Plan, text: &str) -> String {
    let skeleton = plan.skeleton(&ws.catalog);
    let imports = Imports::collect(crate::analysis::parse::parse(text).root_node(), text);
    let imported = |line: &str| {
        line.strip_prefix("from chainsmith.tools import ").is_some_and(|names| {
            names.split(", ").all(|name| imports.toolsets.get(name).is_some_and(|toolset| toolset == name))
        })
    };
    let body: String = match skeleton.split_once("\n\n") {
        Some((head, rest)) if imported(head) => rest.to_string(),
        _ => skeleton,
    };
    format!("{}{body}", separator(text))
}

/// What goes between a program's text and a block appended to it: a blank line, once.
pub fn separator(text: &str) -> &'static str {
    if text.is_empty() || text.ends_with("\n\n") {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    }
}
