//! `textDocument/hover`: a tool's protocol (with its ToolNet neighbourhood), an argument's parameter
//! (with the tools whose responses can feed it), a response field's schema.

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::server::convert;
use crate::server::session::Snapshot;

/// How many producing tools a hover on an argument lists, strongest first.
const PRODUCERS_SHOWN: usize = 5;

pub fn hover(snap: &Snapshot, params: lsp::HoverParams) -> Option<lsp::Hover> {
    let world = &snap.world;
    let position = params.text_document_position_params.position;
    let offset = convert::offset(&snap.line_index, snap.text(), position, world.encoding);
    let mut found = ide::hover_in(snap.analysis(), offset, &world.catalog)?;
    // On a tool: its ToolNet neighbourhood and recent reliability.
    if let Some(id) = found.tool_id.clone()
        && let Some(section) =
            crate::graph::editor::hover_markdown(&world.toolnet.graph, &id, crate::graph::editor::DEFAULT_TOP)
    {
        found.markdown.push_str("\n\n---\n");
        found.markdown.push_str(&section);
    }
    // On an argument: the tools whose responses can feed it, and why.
    if let Some((tool, param)) = found.parameter.clone() {
        let producers: Vec<String> = world
            .catalog
            .data_flow()
            .producers(&tool, &param)
            .take(PRODUCERS_SHOWN)
            .map(|e| {
                let why = e.evidence.iter().map(|w| &*w.why).collect::<Vec<_>>().join("; ");
                format!("- `{}` → `{}` ({why})", e.from, e.field)
            })
            .collect();
        if !producers.is_empty() {
            found.markdown.push_str(&format!("\n\n---\n**Produced by**\n{}", producers.join("\n")));
        }
    }
    Some(convert::hover(found, &snap.line_index, snap.text(), world.encoding))
}
