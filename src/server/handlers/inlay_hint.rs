//! `textDocument/inlayHint`: the last run's result at each call (`✓ 200 · 84 ms`, `✗ 404`), shown
//! until the document is edited.

use tower_lsp_server::lsp_types as lsp;

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
                padding_right: None,
                data: None,
            });
        }
    }
    Some(hints)
}
