//! `completionItem/resolve`: a tool item's full documentation, looked up by its `data` (the tool id).

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::server::convert;
use crate::server::session::World;

pub fn completion_resolve(world: &World, mut item: lsp::CompletionItem) -> lsp::CompletionItem {
    if item.documentation.is_none()
        && let Some(serde_json::Value::String(tool_id)) = &item.data
        && let Some(markdown) = ide::tool_markdown(&world.catalog, tool_id)
    {
        item.documentation = Some(lsp::Documentation::MarkupContent(convert::markdown(markdown)));
    }
    item
}
