//! `textDocument/inlayHint`: the last run's result at each call (`✓ 200 · 84 ms`, `✗ 404`), shown
//! until the document is edited; and ToolNet's likely successors after each call statement
//! (`→ person_movie_credits 62% · person 21%`, once per tool, short enough not to be cut; the
//! tooltip says it in a sentence) and "what next" after the last one;
//! `[toolnet] hints = "last"` keeps only "what next", `"off"` none.

use tower_lsp_server::lsp_types as lsp;

use crate::config::SuccessorHints;
use crate::graph::editor;
use crate::server::convert;
use crate::server::session::Snapshot;

pub fn inlay_hint(snap: &Snapshot, params: lsp::InlayHintParams) -> Option<Vec<lsp::InlayHint>> {
    let mut hints = Vec::new();
    let text = snap.text();
    let encoding = snap.world.encoding;
    let wanted = convert::byte_range(&snap.line_index, text, params.range, encoding);
    if let Some(run) = snap.run.as_ref().filter(|r| r.version == snap.version) {
        for hint in run.hints.iter().filter(|h| wanted.start <= h.offset && h.offset <= wanted.end) {
            hints.push(lsp::InlayHint {
                position: convert::position(&snap.line_index, text, hint.offset, encoding),
                label: lsp::InlayHintLabel::String(hint.label.clone()),
                kind: None,
                text_edits: None,
                tooltip: Some(lsp::InlayHintTooltip::String(hint.tooltip.clone())),
                padding_left: Some(true),
                // A space after the run's mark, so ToolNet's hint at the same place reads apart.
                padding_right: Some(true),
                data: None,
            });
        }
    }
    hints.extend(toolnet_hints(snap, wanted));
    Some(hints)
}

/// Successor hints from the workspace's ToolNet graph, built without this program's own calls so
/// the hints say what other programs and runs did, not what this one already does.
fn toolnet_hints(snap: &Snapshot, wanted: crate::text::ByteRange) -> Vec<lsp::InlayHint> {
    let world = &snap.world;
    let shown = world.config.toolnet.hints;
    if shown == SuccessorHints::Off {
        return Vec::new();
    }
    let text = snap.text();
    let graph = world.toolnet.without_program(&snap.path);
    let analysis = snap.analysis();
    let calls: Vec<_> = analysis.calls.iter().filter(|c| c.tool.is_some()).collect();
    let mut hints = Vec::new();
    let mut seen_statements = Vec::new();
    let mut seen_tools = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let Some(tool) = call.tool else { continue };
        let at = line_end(text, call.statement_range.end);
        let last = i + 1 == calls.len();
        // The successors of a tool are the same after each of its calls: said once, at the first.
        let repeated = seen_tools.contains(&tool.id());
        seen_tools.push(tool.id());
        let wanted_here = last || shown == SuccessorHints::All;
        if !wanted_here
            || seen_statements.contains(&at)
            || (repeated && !last)
            || !(wanted.start <= at && at <= wanted.end)
        {
            continue;
        }
        seen_statements.push(at);
        let label = if last {
            editor::what_next_label(&graph, Some(&tool.id()), editor::DEFAULT_TOP)
        } else {
            editor::hint_label(&graph, &tool.id(), editor::DEFAULT_TOP)
        };
        let Some(label) = label else { continue };
        hints.push(lsp::InlayHint {
            position: convert::position(&snap.line_index, text, at, world.encoding),
            label: lsp::InlayHintLabel::String(label),
            kind: None,
            text_edits: None,
            tooltip: Some(lsp::InlayHintTooltip::String(editor::hint_tooltip(
                &graph,
                Some(&tool.id()),
                editor::DEFAULT_TOP,
            ))),
            padding_left: Some(true),
            padding_right: None,
            data: None,
        });
    }
    hints
}

/// The end of the line holding `offset` (hints go after the statement's last line).
fn line_end(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text[offset..].find('\n').map(|i| offset + i).unwrap_or(text.len())
}
