//! `textDocument/completion`: toolsets, tools, arguments, enum values, response keys, endpoints.

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::graph::editor;
use crate::server::convert;
use crate::server::session::Snapshot;

pub fn completion(snap: &Snapshot, params: lsp::CompletionParams) -> Option<lsp::CompletionResponse> {
    let world = &snap.world;
    let offset = convert::offset(&snap.line_index, snap.text(), params.text_document_position.position, world.encoding);
    let mut completions =
        ide::complete(&snap.path, snap.text(), &snap.parsed.tree, offset, &world.catalog, &world.config.diagnostics);
    if completions.items.iter().any(|c| c.kind == ide::CompletionKind::Tool) {
        rank_by_toolnet(snap, offset, &mut completions);
    }
    let items = completions
        .items
        .iter()
        .map(|c| convert::completion_item(c, &snap.line_index, snap.text(), world.encoding, world.support.snippets))
        .collect();
    Some(lsp::CompletionResponse::List(lsp::CompletionList { is_incomplete: completions.is_incomplete, items }))
}

/// Toolsets above this size are ranked by transition weight only: a task-relevance index over
/// thousands of tools per keystroke would cost more than the ranking is worth.
const TASK_RELEVANCE_MAX_TOOLS: usize = 2000;

/// Orders tool completions by ToolNet's transition weight from the previous call (then by
/// relevance to the task docstring), visibly: the order in `sortText`, the weight in `detail`.
fn rank_by_toolnet(snap: &Snapshot, offset: usize, completions: &mut ide::Completions) {
    let world = &snap.world;
    let Some(toolset) =
        completions.items.iter().find_map(|c| c.tool_id.as_deref()?.split_once('.').map(|(ts, _)| ts.to_string()))
    else {
        return;
    };
    let graph = &world.toolnet.graph;
    let text = snap.text();
    // The calls before the cursor are the same in the whole program's analysis as in one that
    // stops at the cursor (the walk only goes forward), and that one is cached.
    let previous = snap
        .analysis()
        .calls
        .iter()
        .filter(|c| c.range.end <= offset)
        .filter_map(|c| c.tool)
        .next_back()
        .map(|t| t.id());
    let small = world.catalog.toolset(&toolset).is_some_and(|ts| ts.tools.len() <= TASK_RELEVANCE_MAX_TOOLS);
    let ranked = if small {
        let task = ide::task_of(text, &snap.parsed.tree);
        editor::rank_tools(graph, &world.catalog, &toolset, previous.as_deref(), task.as_deref())
    } else {
        // Thousands of tools: rank only the items being sent, by transition weight.
        rank_items(graph, completions, previous.as_deref())
    };
    let by_name: std::collections::HashMap<&str, &editor::RankedTool> =
        ranked.iter().map(|r| (r.name.as_str(), r)).collect();
    for item in completions.items.iter_mut().filter(|c| c.kind == ide::CompletionKind::Tool) {
        if let Some(rank) = by_name.get(item.label.as_str()) {
            item.sort_text = rank.sort_text.clone();
            if !rank.detail.is_empty() {
                item.detail = format!("{} · {}", rank.detail, item.detail);
            }
        }
    }
}

/// The items' tools ordered by transition weight from `previous` (the program's start when
/// `None`), the rest keeping their order.
fn rank_items(
    graph: &crate::graph::ToolGraph,
    completions: &ide::Completions,
    previous: Option<&str>,
) -> Vec<editor::RankedTool> {
    let from = previous.unwrap_or(crate::graph::START);
    let mut weighted: Vec<(f64, usize, &ide::Completion)> = completions
        .items
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind == ide::CompletionKind::Tool)
        .filter_map(|(i, c)| Some((graph.weight(from, c.tool_id.as_deref()?), i, c)))
        .collect();
    weighted.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    weighted
        .into_iter()
        .enumerate()
        .map(|(rank, (w, _, c))| {
            let id = c.tool_id.clone().unwrap_or_default();
            let weight = (w > 0.0).then(|| crate::graph::integer_weight(w));
            let detail = match weight {
                Some(w) if from == crate::graph::START => format!("ToolNet {w} as a first call"),
                Some(w) => format!("ToolNet {w} after {}", editor::display_name(from, &id)),
                None => String::new(),
            };
            editor::RankedTool {
                id,
                name: c.label.clone(),
                weight,
                relevance: 0.0,
                sort_text: format!("{rank:04}"),
                detail,
            }
        })
        .collect()
}
