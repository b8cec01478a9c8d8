//! `textDocument/definition`: from a tool call (or a response field) to the tool's declaration in
//! its protocol file, located with that file's text as the catalog read it.

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::server::convert;
use crate::server::session::Snapshot;
use crate::text::LineIndex;

pub fn definition(snap: &Snapshot, params: lsp::GotoDefinitionParams) -> Option<lsp::GotoDefinitionResponse> {
    let world = &snap.world;
    let position = params.text_document_position_params.position;
    let offset = convert::offset(&snap.line_index, snap.text(), position, world.encoding);
    let target = ide::definition(snap.analysis(), offset, &world.catalog)?;
    let location = if world.resolve(&target.file) == world.resolve(&snap.path) {
        lsp::Location::new(
            snap.uri.clone(),
            convert::range(&snap.line_index, snap.text(), target.range, world.encoding),
        )
    } else {
        let uri = world.uri_of(&target.file)?;
        let text = world.file_text(&target.file)?;
        let index = LineIndex::new(&text);
        lsp::Location::new(uri, convert::range(&index, &text, target.range, world.encoding))
    };
    Some(lsp::GotoDefinitionResponse::Scalar(location))
}
