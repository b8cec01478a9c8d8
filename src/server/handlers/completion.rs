//! `textDocument/completion`: toolsets, tools, arguments, enum values, response keys, endpoints.

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::server::convert;
use crate::server::session::Snapshot;

pub fn completion(snap: &Snapshot, params: lsp::CompletionParams) -> Option<lsp::CompletionResponse> {
    let world = &snap.world;
    let offset = convert::offset(&snap.line_index, snap.text(), params.text_document_position.position, world.encoding);
    let completions =
        ide::complete(&snap.path, snap.text(), &snap.parsed.tree, offset, &world.catalog, &world.config.diagnostics);
    let items = completions
        .items
        .iter()
        .map(|c| convert::completion_item(c, &snap.line_index, snap.text(), world.encoding, world.support.snippets))
        .collect();
    Some(lsp::CompletionResponse::List(lsp::CompletionList { is_incomplete: completions.is_incomplete, items }))
}
