//! `textDocument/signatureHelp` inside a tool call's argument list (triggered by `(` and `,`).

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::server::convert;
use crate::server::session::Snapshot;

pub fn signature_help(snap: &Snapshot, params: lsp::SignatureHelpParams) -> Option<lsp::SignatureHelp> {
    let world = &snap.world;
    let position = params.text_document_position_params.position;
    let offset = convert::offset(&snap.line_index, snap.text(), position, world.encoding);
    let found = ide::signature_help(
        &snap.path,
        snap.text(),
        &snap.parsed.tree,
        offset,
        &world.catalog,
        &world.config.diagnostics,
        Some(snap.analysis()),
    )?;
    Some(convert::signature_help(found, world.encoding, world.support.label_offsets))
}
