//! `textDocument/codeLens`: "Run chain" at the top of a program that calls tools.

use tower_lsp_server::lsp_types as lsp;

use crate::server::handlers::commands::names;
use crate::server::session::Snapshot;

pub const RUN_TITLE: &str = "▶ Run chain";

pub fn code_lens(snap: &Snapshot, _params: lsp::CodeLensParams) -> Option<Vec<lsp::CodeLens>> {
    if snap.analysis().calls.is_empty() {
        return Some(Vec::new());
    }
    let top = lsp::Range::new(lsp::Position::new(0, 0), lsp::Position::new(0, 0));
    Some(vec![lsp::CodeLens {
        range: top,
        command: Some(lsp::Command {
            title: RUN_TITLE.into(),
            command: names::RUN.into(),
            arguments: Some(vec![serde_json::Value::String(snap.uri.as_str().to_string())]),
        }),
        data: None,
    }])
}
