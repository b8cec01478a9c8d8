//! `textDocument/completion`: toolsets, tools, arguments, enum values, response keys, endpoints.

use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::graph::editor;
use crate::plan;
use crate::server::convert;
use crate::server::session::Snapshot;

pub fn completion(snap: &Snapshot, params: lsp::CompletionParams) -> Option<lsp::CompletionResponse> {
    let world = &snap.world;
    let offset = convert::offset(&snap.line_index, snap.text(), params.text_document_position.position, world.encoding);
    let mut completions = ide::complete_with(
        &snap.path,
        snap.text(),
        &snap.parsed.tree,
        offset,
        &world.catalog,
        &world.config.diagnostics,
        Some(snap.analysis()),
    );
    if completions.items.iter().any(|c| c.kind == ide::CompletionKind::Tool) {
        rank_by_toolnet(snap, offset, &mut completions);
    }
    if let Some(value) = completions.value_of.take() {
        offer_feeds(snap, offset, &value, &mut completions);
    }
    let items = completions
        .items
        .iter()
        .map(|c| convert::completion_item(c, &snap.line_index, snap.text(), world.encoding, world.support.snippets))
        .collect();
    Some(lsp::CompletionResponse::List(lsp::CompletionList { is_incomplete: completions.is_incomplete, items }))
}

/// After `person_id=`: the fields of responses the program holds that can feed the parameter,
/// then calls that produce it, ahead of the parameter's enum values.
fn offer_feeds(snap: &Snapshot, offset: usize, value: &ide::ArgumentValue, completions: &mut ide::Completions) {
    let world = &snap.world;
    let Ok(tool) = world.catalog.find(&value.tool) else { return };
    let task = ide::task_of(snap.text(), &snap.parsed.tree);
    let feeds = plan::editor::feeds(snap.analysis(), &world.catalog, tool, &value.param, offset, task.as_deref());
    if feeds.is_empty() {
        return;
    }
    for item in &mut completions.items {
        item.sort_text = format!("1{}", item.sort_text);
    }
    let mut items = plan::editor::completions(&feeds, value.replace);
    items.append(&mut completions.items);
    completions.items = items;
}

/// Orders tool completions by ToolNet's transition weight from the previous call (then by
/// relevance to the task docstring), visibly: the order in `sortText`, the weight in `detail`.
fn rank_by_toolnet(snap: &Snapshot, offset: usize, completions: &mut ide::Completions) {
    let world = &snap.world;
    if !completions.items.iter().any(|c| c.tool_id.as_deref().is_some_and(|id| id.contains('.'))) {
        return;
    }
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
    // Only the items being sent are ranked, with the catalog's text index built once per catalog:
    // the cost does not grow with the toolset.
    let tools: Vec<&crate::toolset::Tool> = completions
        .items
        .iter()
        .filter(|c| c.kind == ide::CompletionKind::Tool)
        .filter_map(|c| world.catalog.find(c.tool_id.as_deref()?).ok())
        .collect();
    let task = ide::task_of(text, &snap.parsed.tree);
    let index = task.as_ref().map(|_| world.relevance.of(&world.catalog));
    let ranked = editor::rank_among(graph, &tools, previous.as_deref(), task.as_deref(), index);
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
