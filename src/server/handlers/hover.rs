//! `textDocument/hover`: a tool's protocol, an argument's parameter, a response field's schema.

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::server::convert;
use crate::server::session::Snapshot;

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
    Some(convert::hover(found, &snap.line_index, snap.text(), world.encoding))
}
