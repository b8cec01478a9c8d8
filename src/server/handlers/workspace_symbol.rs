//! `workspace/symbol`: the workspace's tools, located at their names in their protocol files.

use std::collections::HashMap;
use std::path::PathBuf;

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
    // Positions are converted file by file, all of a file's at once (`LineIndex::positions`).
    let mut by_file: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    for (i, tool) in tools.iter().enumerate() {
        by_file.entry(tool.source.file.clone()).or_default().push(i);
    }
    let mut located: Vec<Option<lsp::Location>> = vec![None; tools.len()];
    for (file, members) in by_file {
        let (Some(text), Some(uri)) = (world.file_text(&file), world.uri_of(&file)) else { continue };
        let index = LineIndex::new(&text);
        let offsets: Vec<usize> = members
            .iter()
            .flat_map(|&i| {
                let r = tools[i].source.name_range;
                [r.start, r.end.max(r.start)]
            })
            .collect();
        let positions = index.positions(&text, &offsets, world.encoding);
        for (k, &i) in members.iter().enumerate() {
            let (start, end) = (positions[2 * k], positions[2 * k + 1]);
            let range = lsp::Range::new(
                lsp::Position::new(start.line, start.character),
                lsp::Position::new(end.line, end.character),
            );
            located[i] = Some(lsp::Location::new(uri.clone(), range));
        }
    }
    let out = tools
        .iter()
        .zip(located)
        .filter_map(|(tool, location)| {
            Some(convert::symbol_information(
                tool.id(),
                lsp::SymbolKind::FUNCTION,
                location?,
                Some(tool.toolset.clone()),
            ))
        })
        .collect();
    Some(lsp::OneOf::Left(out))
}
