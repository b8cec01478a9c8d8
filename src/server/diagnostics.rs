//! `textDocument/publishDiagnostics` payloads: one per open program (re-analysed after every
//! edit) and one per protocol file / chainsmith.toml with problems.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tower_lsp_server::lsp_types as lsp;

use crate::diagnostic::{Diagnostic, Severity};
use crate::server::convert;
use crate::server::session::{Snapshot, World};
use crate::text::LineIndex;

/// The program's diagnostics, analysed against the snapshot's catalog and configuration, with
/// those its last run left (a failure and the call it is attributed to).
pub fn program(snap: &Snapshot) -> Vec<lsp::Diagnostic> {
    let run = snap.run.iter().flat_map(|r| r.diagnostics.iter().map(|m| &m.diagnostic));
    let mut all: Vec<Diagnostic> = core(snap).into_iter().chain(run.cloned()).collect();
    all.sort_by_key(|d| (d.range.start, d.range.end));
    all.iter().map(|d| convert::diagnostic(d, &snap.line_index, snap.text(), snap.world.encoding)).collect()
}

/// The core diagnostics of a program (also used by code actions for their suggestions).
pub fn core(snap: &Snapshot) -> Vec<Diagnostic> {
    let world = &snap.world;
    let result = snap.analysis();
    let mut diagnostics = result.diagnostics.clone();
    // A hint, not an error: ToolNet's scores say this tool has been failing in recent runs.
    let graph = &world.toolnet.graph;
    for call in &result.calls {
        let Some(tool) = call.tool else { continue };
        if let Some(message) = crate::graph::editor::failing_lately(graph, &tool.id())
            && let Some(severity) = world.config.diagnostics.severity_of("failing-lately", Severity::Hint)
        {
            diagnostics.push(Diagnostic::new(&snap.path, call.name_range, severity, "failing-lately", message));
        }
    }
    diagnostics
}

/// Diagnostics of protocol files and chainsmith.toml, grouped by file (sorted, for stable output),
/// with what runs observed (`observed`: schema drift) on the protocols.
pub fn workspace(world: &World, observed: &[Diagnostic]) -> Vec<(lsp::Uri, Vec<lsp::Diagnostic>)> {
    let mut by_file: BTreeMap<PathBuf, Vec<&Diagnostic>> = BTreeMap::new();
    for d in world.catalog.diagnostics.iter().chain(observed) {
        by_file.entry(world.resolve(&d.file)).or_default().push(d);
    }
    let mut out = Vec::new();
    for (path, diagnostics) in by_file {
        let Some(uri) = world.uri_of(&path) else {
            tracing::warn!("no URI for {}; its {} diagnostics are not published", path.display(), diagnostics.len());
            continue;
        };
        let text = world.file_text(&path).unwrap_or_else(|| "".into());
        let index = LineIndex::new(&text);
        let converted = diagnostics.iter().map(|d| convert::diagnostic(d, &index, &text, world.encoding)).collect();
        out.push((uri, converted));
    }
    out
}
