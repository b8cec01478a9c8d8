//! "Plan a chain for this task": the planner's best chain for the document's task (no model
//! asked), inserted at the end of the program as a typed skeleton, by `chainsmith.plan`. The edit
//! names the document version the plan was made for, so an editor whose text moved on refuses it.

use std::collections::HashMap;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::lsp_types as lsp;

use crate::jobs::{self, Workspace};
use crate::server::context::Context;
use crate::server::convert;
use crate::server::guard::off_loop;
use crate::server::session::Snapshot;
use crate::server::task::CLIENT_REQUEST_TIMEOUT;
use crate::text::ByteRange;

use super::names;

pub const PLAN_TITLE: &str = "Plan a chain for this task (no model)";

/// The code action offered beside generation wherever a task is found.
pub fn code_action(snap: &Snapshot, task: &str) -> lsp::CodeActionOrCommand {
    let arguments = json!({"uri": snap.uri.as_str(), "version": snap.version, "task": task});
    lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
        title: PLAN_TITLE.into(),
        kind: Some(lsp::CodeActionKind::REFACTOR_REWRITE),
        command: Some(lsp::Command {
            title: PLAN_TITLE.into(),
            command: names::PLAN.into(),
            arguments: Some(vec![arguments]),
        }),
        ..Default::default()
    })
}

/// `chainsmith.plan {uri, version?, task?}`: the task defaults to the document's own.
pub async fn execute(ctx: &Context, params: lsp::ExecuteCommandParams) -> Result<Option<Value>> {
    let first = params.arguments.first();
    let Some(uri) = super::arguments::document(&params.arguments) else {
        return Err(Error::invalid_params(format!(
            "{} takes the program's URI, or {{uri, version?, task?}}",
            names::PLAN
        )));
    };
    let Some(snap) = ctx.session().snapshot(&uri) else {
        ctx.client
            .show_message(lsp::MessageType::ERROR, format!("chainsmith: open {} to plan in it", uri.as_str()))
            .await;
        return Ok(None);
    };
    let version = first.and_then(|a| a.get("version")).and_then(Value::as_i64);
    if version.is_some_and(|v| v != i64::from(snap.version)) {
        let message = "chainsmith: the program changed since the action was offered; nothing was planned";
        ctx.client.show_message(lsp::MessageType::WARNING, message).await;
        return Ok(None);
    }
    let task = first
        .and_then(|a| a.get("task"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| crate::analysis::ide::task_of(snap.text(), &snap.parsed.tree));
    let Some(task) = task else {
        let message = "chainsmith: no task to plan for: write it in the module docstring or a `# task:` comment";
        ctx.client.show_message(lsp::MessageType::ERROR, message).await;
        return Ok(None);
    };
    let planning = snap.clone();
    let planned = off_loop(names::PLAN, move || {
        let world = &planning.world;
        let ws = Workspace {
            root: world.root.clone().unwrap_or_default(),
            config: world.config.clone(),
            catalog: world.catalog.clone(),
            index: world.relevance.of(&world.catalog),
            toolnet: Some(world.toolnet.inputs.graph()),
            mcp: None,
            upstream: Vec::new(),
            learn: false,
        };
        jobs::plan::plans(&ws, &task, 1).map(|plans| {
            let best = &plans[0];
            (jobs::plan::appended(&ws, best, planning.text()), best.path().join(" → "))
        })
    })
    .await?;
    let (program, path) = match planned {
        Ok(planned) => planned,
        Err(why) => {
            let message = format!("chainsmith: no plan for the task: {why}; the document is unchanged");
            ctx.client.show_message(lsp::MessageType::WARNING, message).await;
            return Ok(None);
        }
    };
    let text = snap.text();
    let end = convert::range(&snap.line_index, text, ByteRange::new(text.len(), text.len()), snap.world.encoding);
    let insert = lsp::TextEdit { range: end, new_text: program };
    let edit = if snap.world.support.versioned_edits {
        let versioned = lsp::TextDocumentEdit {
            text_document: lsp::OptionalVersionedTextDocumentIdentifier {
                uri: snap.uri.clone(),
                version: Some(snap.version),
            },
            edits: vec![lsp::OneOf::Left(insert)],
        };
        lsp::WorkspaceEdit {
            document_changes: Some(lsp::DocumentChanges::Edits(vec![versioned])),
            ..Default::default()
        }
    } else {
        // The client cannot be told the version: check it as late as the server can.
        if ctx.session().document(&snap.uri).map(|d| d.version) != Some(snap.version) {
            let message = format!("chainsmith: the program changed while planning; the plan ({path}) was not inserted");
            ctx.client.show_message(lsp::MessageType::WARNING, message).await;
            return Ok(None);
        }
        lsp::WorkspaceEdit { changes: Some(HashMap::from([(snap.uri.clone(), vec![insert])])), ..Default::default() }
    };
    let message = match tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, ctx.client.apply_edit(edit)).await {
        Ok(Ok(response)) if response.applied => (lsp::MessageType::INFO, format!("chainsmith: planned {path}")),
        Ok(Ok(response)) => {
            let why = response.failure_reason.unwrap_or_else(|| "the editor refused it".into());
            (lsp::MessageType::WARNING, format!("chainsmith: the plan ({path}) was not inserted: {why}"))
        }
        Ok(Err(e)) => (lsp::MessageType::WARNING, format!("chainsmith: the plan ({path}) was not inserted: {e}")),
        Err(_) => (
            lsp::MessageType::WARNING,
            format!("chainsmith: the plan ({path}) was not inserted: the editor did not answer"),
        ),
    };
    ctx.client.show_message(message.0, message.1).await;
    Ok(None)
}
