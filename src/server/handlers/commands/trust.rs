//! `chainsmith.trustWorkspace`: the user trusts the workspace (the code action "Trust this
//! workspace" on a `workspace-untrusted` diagnostic, Neovim's `:ChainsmithTrust`). Like `chainsmith
//! trust`, it records exactly the commands the workspace names now ([`crate::trust`]); then the
//! workspace is reloaded, so its MCP servers start and their tools load.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::lsp_types as lsp;

use crate::config::Config;
use crate::server::context::Context;
use crate::server::convert;
use crate::server::guard::guarded;
use crate::server::session::World;
use crate::text::LineIndex;
use crate::toolset::loader;
use crate::trust::{self, Store};

use super::names;

/// Records trust for the session's workspace and reloads it; answers `{root, commands: [{from,
/// command}]}`.
pub async fn execute(ctx: &Context) -> Result<Option<Value>> {
    let (root, settings) = {
        let s = ctx.session();
        (s.root.clone(), s.settings())
    };
    let Some(root) = root else {
        ctx.client.show_message(lsp::MessageType::ERROR, "chainsmith: no workspace to trust").await;
        return Ok(None);
    };
    let recorded =
        tokio::task::spawn_blocking(move || guarded(names::TRUST_WORKSPACE, || record(&root, settings.as_ref()))).await;
    let (canonical, commands) = match recorded {
        Ok(Ok(Ok(recorded))) => recorded,
        Ok(Ok(Err(message))) => {
            let message = format!("chainsmith: the workspace was not trusted: {message}");
            ctx.client.show_message(lsp::MessageType::ERROR, message.clone()).await;
            return Err(Error { code: ErrorCode::InternalError, message: message.into(), data: None });
        }
        Ok(Err(e)) => return Err(e),
        Err(e) => {
            let message = format!("chainsmith: trusting the workspace failed: {e}");
            return Err(Error { code: ErrorCode::InternalError, message: message.into(), data: None });
        }
    };
    ctx.reload(HashMap::new()).await;
    ctx.publish_everything().await;
    // Trust covers commands, secrets sent to the workspace's addresses and a loosened sandbox:
    // the message names what was granted, by where the workspace declares it.
    let said = match commands.len() {
        0 => format!("chainsmith: {canonical} asks for nothing that needs trust: there is nothing to trust"),
        _ => {
            let granted: Vec<&str> = commands.iter().map(|c| c.from.as_str()).collect();
            format!("chainsmith: trusted {canonical}: {}", granted.join(", "))
        }
    };
    ctx.client.show_message(lsp::MessageType::INFO, said).await;
    Ok(Some(json!({"root": canonical, "commands": commands})))
}

fn record(root: &Path, settings: Option<&Value>) -> std::result::Result<(String, Vec<trust::Command>), String> {
    let canonical = trust::canonical_root(root)?;
    let commands = loader::commands(&Config::load(root, settings));
    Store::open()?.trust(&canonical, &commands)?;
    Ok((canonical, commands))
}

/// "Trust this workspace" on the `workspace-untrusted` diagnostics of `path` (chainsmith.toml, a
/// protocol file declaring command tools) in the requested range.
pub fn code_actions(world: &World, path: &Path, params: &lsp::CodeActionParams) -> Vec<lsp::CodeActionOrCommand> {
    let wanted = params.context.only.as_ref().is_none_or(|only| only.contains(&lsp::CodeActionKind::QUICKFIX));
    let path = world.resolve(path);
    let found: Vec<_> = world
        .catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == trust::UNTRUSTED && world.resolve(&d.file) == path)
        .collect();
    if !wanted || found.is_empty() {
        return Vec::new();
    }
    let Some(text) = world.file_text(&path) else { return Vec::new() };
    let index = LineIndex::new(&text);
    let requested = convert::byte_range(&index, &text, params.range, world.encoding);
    let touching: Vec<lsp::Diagnostic> = found
        .into_iter()
        .filter(|d| d.range.start <= requested.end && requested.start <= d.range.end)
        .map(|d| convert::diagnostic(d, &index, &text, world.encoding))
        .collect();
    if touching.is_empty() {
        return Vec::new();
    }
    let title = "Trust this workspace".to_string();
    vec![lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
        title: title.clone(),
        kind: Some(lsp::CodeActionKind::QUICKFIX),
        diagnostics: Some(touching),
        command: Some(lsp::Command {
            title,
            command: names::TRUST_WORKSPACE.into(),
            arguments: Some(vec![Value::String(params.text_document.uri.as_str().to_string())]),
        }),
        ..Default::default()
    })]
}
