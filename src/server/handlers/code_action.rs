//! `textDocument/codeAction`: quick fixes from the suggestions the core attaches to diagnostics
//! (did-you-mean renames of tools, arguments, keys, endpoints; protocol-file respellings), and
//! "Trust this workspace" on `workspace-untrusted`, "Take the observed response as its schema" on
//! `schema-drift`.
//! Programs are re-analysed on the snapshot, so the fixes always match the text the client sees.

use std::collections::HashMap;
use std::path::Path;

use tower_lsp_server::lsp_types as lsp;

use crate::diagnostic::Diagnostic;
use crate::server::convert;
use crate::server::session::{Snapshot, World};
use crate::text::ByteRange;
use crate::text::{Encoding, LineIndex};

use crate::server::diagnostics;

/// Quick fixes in an open program.
pub fn code_action(snap: &Snapshot, params: &lsp::CodeActionParams) -> Option<lsp::CodeActionResponse> {
    let mut out = Vec::new();
    if wants_quickfix(params) {
        let found = diagnostics::core(snap);
        let requested = convert::byte_range(&snap.line_index, snap.text(), params.range, snap.world.encoding);
        out = actions(&found, &snap.uri, snap.text(), &snap.line_index, snap.world.encoding, requested);
        out.extend(producing_fixes(snap, &found, requested));
    }
    // Generation: "Generate tool chain for this task" and "Fix failing chain".
    out.extend(super::commands::generate::code_actions(snap, params));
    // Probing: "Probe tool" on a call whose response schema is unknown.
    out.extend(super::commands::probe::code_actions(snap, params));
    // Stubs: on a `chainsmith.tools` import while Python language servers cannot resolve it.
    if wants_quickfix(params) {
        out.extend(super::commands::stubs::code_actions(snap, params));
    }
    Some(out)
}

/// On `missing-argument`: pass a field of a response the program holds, or call the tool that
/// produces the value above the statement (the data-flow graph says which).
fn producing_fixes(snap: &Snapshot, found: &[Diagnostic], requested: ByteRange) -> Vec<lsp::CodeActionOrCommand> {
    let text = snap.text();
    let world = &snap.world;
    let mut task = None;
    let mut out = Vec::new();
    for d in found.iter().filter(|d| d.code == "missing-argument") {
        if !(d.range.start <= requested.end && requested.start <= d.range.end) {
            continue;
        }
        let Some(call) = snap.analysis().call_at(d.range.start) else { continue };
        let task = task.get_or_insert_with(|| crate::analysis::ide::task_of(text, &snap.parsed.tree));
        let diagnostic = convert::diagnostic(d, &snap.line_index, text, world.encoding);
        for fix in
            crate::plan::editor::missing_argument_fixes(snap.analysis(), text, &world.catalog, call, task.as_deref())
        {
            let edits = fix
                .edits
                .iter()
                .map(|(range, new_text)| lsp::TextEdit {
                    range: convert::range(&snap.line_index, text, *range, world.encoding),
                    new_text: new_text.clone(),
                })
                .collect();
            out.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                title: fix.title,
                kind: Some(lsp::CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic.clone()]),
                edit: Some(lsp::WorkspaceEdit {
                    changes: Some(HashMap::from([(snap.uri.clone(), edits)])),
                    ..Default::default()
                }),
                ..Default::default()
            }));
        }
    }
    out
}

/// Quick fixes in a protocol file or chainsmith.toml, from the catalog's diagnostics on it.
pub fn protocol_code_action(
    world: &World,
    path: &Path,
    params: &lsp::CodeActionParams,
    observed: &[crate::server::session::ObservedDrift],
) -> Option<lsp::CodeActionResponse> {
    // Probing: "Probe tool" on an entry whose response schema is unknown.
    let probes = super::commands::probe::protocol_code_actions(world, path, params);
    let mut out = protocol_quick_fixes(world, path, params).unwrap_or_default();
    // Trust: "Trust this workspace" on what does not run until it is trusted.
    out.extend(super::commands::trust::code_actions(world, path, params));
    // Drift: "Take the observed response as the tool's schema" on what a run saw.
    out.extend(super::commands::observed::code_actions(world, path, params, observed));
    out.extend(probes);
    Some(out)
}

fn protocol_quick_fixes(world: &World, path: &Path, params: &lsp::CodeActionParams) -> Option<lsp::CodeActionResponse> {
    if !wants_quickfix(params) {
        return Some(Vec::new());
    }
    let path = world.resolve(path);
    let found: Vec<Diagnostic> =
        world.catalog.diagnostics.iter().filter(|d| world.resolve(&d.file) == path).cloned().collect();
    if found.is_empty() {
        return Some(Vec::new());
    }
    let text = world.file_text(&path)?;
    let index = LineIndex::new(&text);
    let requested = convert::byte_range(&index, &text, params.range, world.encoding);
    Some(actions(&found, &params.text_document.uri, &text, &index, world.encoding, requested))
}

fn wants_quickfix(params: &lsp::CodeActionParams) -> bool {
    match &params.context.only {
        Some(kinds) => kinds.contains(&lsp::CodeActionKind::QUICKFIX),
        None => true,
    }
}

fn actions(
    found: &[Diagnostic],
    uri: &lsp::Uri,
    text: &str,
    index: &LineIndex,
    encoding: Encoding,
    requested: ByteRange,
) -> lsp::CodeActionResponse {
    let mut out = Vec::new();
    for d in found {
        let touches = d.range.start <= requested.end && requested.start <= d.range.end;
        if !touches || d.suggestions.is_empty() {
            continue;
        }
        let diagnostic = convert::diagnostic(d, index, text, encoding);
        for (i, suggestion) in d.suggestions.iter().enumerate() {
            let edit = lsp::TextEdit {
                range: convert::range(index, text, suggestion.range, encoding),
                new_text: suggestion.replacement.clone(),
            };
            out.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                title: suggestion.title.clone(),
                kind: Some(lsp::CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic.clone()]),
                edit: Some(lsp::WorkspaceEdit {
                    changes: Some(HashMap::from([(uri.clone(), vec![edit])])),
                    ..Default::default()
                }),
                is_preferred: Some(i == 0),
                ..Default::default()
            }));
        }
    }
    out
}
