//! `textDocument/documentSymbol`: the program's tool calls and response variables.

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::server::convert;
use crate::server::session::Snapshot;

pub fn document_symbol(snap: &Snapshot, _params: lsp::DocumentSymbolParams) -> Option<lsp::DocumentSymbolResponse> {
    let world = &snap.world;
    let symbols = ide::document_symbols(snap.analysis(), snap.text(), &snap.parsed.tree);
    if world.support.hierarchical_symbols {
        let nested = symbols
            .iter()
            .map(|s| convert::document_symbol(s, &snap.line_index, snap.text(), world.encoding))
            .collect();
        return Some(lsp::DocumentSymbolResponse::Nested(nested));
    }
    let flat = symbols
        .iter()
        .map(|s| {
            let range = convert::range(&snap.line_index, snap.text(), s.range, world.encoding);
            convert::symbol_information(
                s.name.clone(),
                convert::symbol_kind(s.kind),
                lsp::Location::new(snap.uri.clone(), range),
                None,
            )
        })
        .collect();
    Some(lsp::DocumentSymbolResponse::Flat(flat))
}
