//! `textDocument/codeLens`: "Run chain" at the top of a program that calls tools, and "Run
//! against the mock" where it calls HTTP tools (no keys, no network: `chainsmith run --mock`); after a run,
//! "Re-run with recorded answers" beside it (every call identical to one the last run made is
//! answered from its trace, the rest go live — after fixing a line, nothing before it is called
//! again) and, while the document is as it ran, "Re-run from here" above each call the run made
//! (the calls before it answered from the trace, it and those after live).

use tower_lsp_server::lsp_types as lsp;

use serde_json::json;

use crate::server::convert;
use crate::server::handlers::commands::names;
use crate::server::session::Snapshot;
use crate::toolset::Transport;

pub const RUN_TITLE: &str = "▶ Run chain";
pub const MOCK_TITLE: &str = "▶ Run against the mock";
pub const RERUN_TITLE: &str = "↻ Re-run with recorded answers";
pub const RERUN_FROM_TITLE: &str = "↻ Re-run from here";

pub fn code_lens(snap: &Snapshot, _params: lsp::CodeLensParams) -> Option<Vec<lsp::CodeLens>> {
    if snap.analysis().calls.is_empty() {
        return Some(Vec::new());
    }
    let uri = snap.uri.as_str().to_string();
    let lens = |range: lsp::Range, title: &str, argument: serde_json::Value| lsp::CodeLens {
        range,
        command: Some(lsp::Command {
            title: title.into(),
            command: names::RUN.into(),
            arguments: Some(vec![argument]),
        }),
        data: None,
    };
    let top = lsp::Range::new(lsp::Position::new(0, 0), lsp::Position::new(0, 0));
    let mut lenses = vec![lens(top, RUN_TITLE, json!(uri))];
    // Offline, without keys: the HTTP tools answered by chainsmith's mock of their protocols.
    let http =
        snap.analysis().calls.iter().filter_map(|c| c.tool).any(|t| matches!(t.transport, Transport::Http { .. }));
    if http {
        lenses.push(lens(top, MOCK_TITLE, json!({"uri": uri, "mock": true})));
    }
    let recorded = snap.last_trace.as_ref().is_some_and(|t| !t.calls.is_empty());
    if recorded {
        lenses.push(lens(top, RERUN_TITLE, json!({"uri": uri, "replay": "all"})));
    }
    // Only with a record of the APIs' answers to take them from (a mock run leaves none).
    if let Some(run) = snap.run.as_ref().filter(|r| recorded && r.version == snap.version) {
        // The first call is where a plain run starts anyway.
        for hint in run.hints.iter().filter(|h| h.first_call > 1) {
            let at = convert::position(&snap.line_index, snap.text(), hint.statement_start, snap.world.encoding);
            let line = lsp::Range::new(lsp::Position::new(at.line, 0), lsp::Position::new(at.line, 0));
            lenses.push(lens(line, RERUN_FROM_TITLE, json!({"uri": uri, "replay": hint.first_call})));
        }
    }
    Some(lenses)
}
