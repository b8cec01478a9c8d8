//! `workspace/symbol`: the workspace's tools, located at their names in their protocol files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::server::convert;
use crate::server::session::World;
use crate::text::LineIndex;

/// At most this many symbols per answer.
pub const LIMIT: usize = 256;

pub fn workspace_symbol(
    world: &World,
    params: lsp::WorkspaceSymbolParams,
) -> Option<lsp::OneOf<Vec<lsp::SymbolInformation>, Vec<lsp::WorkspaceSymbol>>> {
    let tools = ide::workspace_symbols(&world.catalog, &params.query, LIMIT);
    let mut files: HashMap<PathBuf, Option<(Arc<str>, LineIndex, lsp::Uri)>> = HashMap::new();
    let mut out = Vec::new();
    for tool in tools {
        let file = files.entry(tool.source.file.clone()).or_insert_with(|| {
            let text = world.file_text(&tool.source.file)?;
            let index = LineIndex::new(&text);
            Some((text, index, world.uri_of(&tool.source.file)?))
        });
        let Some((text, index, uri)) = file else { continue };
        let range = convert::range(index, text, tool.source.name_range, world.encoding);
        out.push(convert::symbol_information(
            tool.id(),
            lsp::SymbolKind::FUNCTION,
            lsp::Location::new(uri.clone(), range),
            Some(tool.toolset.clone()),
        ));
    }
    Some(lsp::OneOf::Left(out))
}
