//! `chainsmith.acceptObserved`: the quick fix on a `schema-drift` warning (a run saw the API answer
//! outside its protocol, [`crate::runtime::drift`]). The observed response's shape becomes the
//! tool's, written where probing writes ([`super::probe::write_probed`]): the native file through a
//! `WorkspaceEdit`, other protocols as `.chainsmith/probed/<toolset>.json`; then the catalog reloads.

use std::path::Path;

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::lsp_types as lsp;

use crate::probe::discover::Probed;
use crate::server::context::Context;
use crate::server::convert;
use crate::server::session::{ObservedDrift, World};
use crate::text::LineIndex;

use super::{arguments, names};

/// Writes the observed shape of the tool named by the first argument (`toolset.name`).
pub async fn execute(ctx: &Context, params: lsp::ExecuteCommandParams) -> Result<Option<Value>> {
    let Some(tool) = arguments::tool(&params.arguments) else {
        return Err(Error::invalid_params(format!(
            "{} takes the tool id (toolset.name) as its argument",
            names::ACCEPT_OBSERVED
        )));
    };
    let (root, catalog, observed, before) = {
        let s = ctx.session();
        let generation = s.generation;
        let observed = s.drift.iter().find(|d| d.drift.tool == tool && d.generation == generation).cloned();
        (s.root.clone(), s.catalog.clone(), observed, generation)
    };
    let (Some(root), Some(observed)) = (root, observed) else {
        let message = format!("chainsmith: no response of `{tool}` outside its protocol was seen since the last load");
        ctx.client.show_message(lsp::MessageType::INFO, message).await;
        return Ok(None);
    };
    let Some(probed) = Probed::observed(&observed.drift, &catalog) else { return Ok(None) };
    super::probe::write_probed(ctx, &root, &catalog, &[&probed]).await;
    {
        // The reload changed only this tool's schema: what runs saw of the others still holds.
        let mut s = ctx.session();
        let now = s.generation;
        s.drift.retain(|d| d.drift.tool != tool && d.generation == before);
        for d in s.drift.iter_mut() {
            d.generation = now;
        }
    }
    ctx.publish_everything().await;
    Ok(None)
}

/// "Take the observed response as `tool`'s schema" on the drift warnings of `path` in the
/// requested range.
pub fn code_actions(
    world: &World,
    path: &Path,
    params: &lsp::CodeActionParams,
    observed: &[ObservedDrift],
) -> Vec<lsp::CodeActionOrCommand> {
    let wanted = params.context.only.as_ref().is_none_or(|only| only.contains(&lsp::CodeActionKind::QUICKFIX));
    let path = world.resolve(path);
    if !wanted || observed.is_empty() {
        return Vec::new();
    }
    let Some(text) = world.file_text(&path) else { return Vec::new() };
    let index = LineIndex::new(&text);
    let requested = convert::byte_range(&index, &text, params.range, world.encoding);
    let mut out = Vec::new();
    for seen in observed.iter().filter(|d| d.generation == world.generation) {
        let Some(d) = seen.drift.diagnostic(&world.catalog, &seen.program) else { continue };
        if world.resolve(&d.file) != path || d.range.start > requested.end || requested.start > d.range.end {
            continue;
        }
        let title = format!("Take the observed response as `{}`'s schema", seen.drift.tool);
        out.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: title.clone(),
            kind: Some(lsp::CodeActionKind::QUICKFIX),
            diagnostics: Some(vec![convert::diagnostic(&d, &index, &text, world.encoding)]),
            command: Some(lsp::Command {
                title,
                command: names::ACCEPT_OBSERVED.into(),
                arguments: Some(vec![Value::String(seen.drift.tool.clone())]),
            }),
            ..Default::default()
        }));
    }
    out
}
