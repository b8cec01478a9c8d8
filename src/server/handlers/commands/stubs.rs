//! `chainsmith.writeStubs`: `.pyi` stubs of the workspace's toolset modules in `typings/` (as
//! `chainsmith stubs` writes them), offered as a code action on a `chainsmith.tools` import while
//! they are missing — Pyright, basedpyright and Pylance look there, and without them every chain
//! shows `Import "chainsmith.tools" could not be resolved`.

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::lsp_types as lsp;

use super::names;
use crate::runtime::stubs;
use crate::server::context::Context;
use crate::server::convert;
use crate::server::guard::guarded;
use crate::server::session::Snapshot;

pub const TITLE: &str = "Write type stubs for chainsmith.tools (typings/), so Python language servers resolve it";

pub async fn execute(ctx: &Context) -> Result<Option<Value>> {
    let (root, catalog) = {
        let s = ctx.session();
        (s.root.clone(), s.catalog.clone())
    };
    let Some(root) = root else {
        ctx.client.show_message(lsp::MessageType::ERROR, "chainsmith: no workspace to write stubs in").await;
        return Ok(None);
    };
    let out = root.join(stubs::STUB_DIR);
    let written = tokio::task::spawn_blocking(move || {
        guarded(names::WRITE_STUBS, || stubs::write(&catalog, &out, &root).map_err(|e| format!("{e:#}")))
    })
    .await;
    match written {
        Ok(Ok(Ok(files))) => {
            let message = format!("chainsmith: wrote {} stub files to {}/", files.len(), stubs::STUB_DIR);
            ctx.client.show_message(lsp::MessageType::INFO, message).await;
            Ok(Some(json!({"written": files.len()})))
        }
        Ok(Ok(Err(why))) => {
            ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: no stubs written: {why}")).await;
            Ok(None)
        }
        Ok(Err(e)) => Err(e),
        Err(e) => {
            ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: writing stubs failed: {e}")).await;
            Ok(None)
        }
    }
}

/// The action on an import of `chainsmith.tools` in the requested range, while the workspace has
/// no stubs of it.
pub fn code_actions(snap: &Snapshot, params: &lsp::CodeActionParams) -> Vec<lsp::CodeActionOrCommand> {
    let Some(root) = snap.world.root.as_ref() else { return Vec::new() };
    if root.join(stubs::STUB_DIR).join("chainsmith").join("tools").join("__init__.pyi").exists() {
        return Vec::new();
    }
    let text = snap.text();
    let requested = convert::byte_range(&snap.line_index, text, params.range, snap.world.encoding);
    let line_of = |offset: usize| snap.line_index.line_of(offset.min(text.len()));
    let (first, last) = (line_of(requested.start), line_of(requested.end));
    let on_import = snap.analysis().imports.iter().any(|i| (first..=last).contains(&line_of(i.range.start)));
    if !on_import {
        return Vec::new();
    }
    vec![lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
        title: TITLE.into(),
        kind: Some(lsp::CodeActionKind::QUICKFIX),
        command: Some(lsp::Command { title: TITLE.into(), command: names::WRITE_STUBS.into(), arguments: None }),
        ..Default::default()
    })]
}
