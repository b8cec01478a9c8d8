//! Generation in the editor: the code actions "Generate tool chain for this task" (the task from
//! the selection, the module docstring or a `# task:` comment) and "Fix failing chain" (on a
//! runtime diagnostic), and the commands `chainsmith.generate` / `chainsmith.fix` they invoke.
//!
//! Both run as background tasks with cancellable work-done progress (the LLM calls so far are
//! reported as it goes). The result is applied with `workspace/applyEdit` only when the document
//! still has the version the task started from; otherwise the program is logged and a message says
//! why nothing changed. LLM failures and replies without a usable program leave the document as it
//! is, with a message. When the user selected calls, or the task names tools, the candidates are
//! those tools and their ToolNet neighbours.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::lsp_types as lsp;

use crate::generate::search;
use crate::jobs::chain::{self, ChainRequest, Finished, Goal, Options, Refusal};
use crate::jobs::{Sink, Workspace};
use crate::server::context::Context;
use crate::server::session::Snapshot;
use crate::server::task::{self, CLIENT_REQUEST_TIMEOUT, Progress, Showing, TaskKey, TaskKind, spawn_guarded};
use crate::server::{convert, session};
use crate::text::ByteRange;

use super::{arguments, names};
/// Diagnostic codes of a failed run (src/runtime/attribute.rs).
pub const RUNTIME_CODES: [&str; 3] = ["runtime-error", "tool-error", "attributed-call"];

pub const GENERATE_TITLE: &str = "Generate tool chain for this task";
pub const FIX_TITLE: &str = "Fix failing chain";

fn wants(params: &lsp::CodeActionParams, kind: &lsp::CodeActionKind) -> bool {
    match &params.context.only {
        Some(kinds) => kinds.iter().any(|k| kind.as_str().starts_with(k.as_str())),
        None => true,
    }
}

/// The task and the tools the user selected for a generation at `requested`.
pub fn task_at(snap: &Snapshot, requested: ByteRange) -> Option<(String, Vec<String>)> {
    let text = snap.text();
    let catalog = &snap.world.catalog;
    let result = snap.analysis();
    let selected = text.get(requested.start..requested.end).unwrap_or("").trim();
    let mut tools: Vec<String> = Vec::new();
    if !selected.is_empty() {
        for call in &result.calls {
            if call.range.start >= requested.start
                && call.range.end <= requested.end
                && let Some(tool) = call.tool
                && !tools.contains(&tool.id())
            {
                tools.push(tool.id());
            }
        }
    }
    let task = if !selected.is_empty() && tools.is_empty() {
        let words: Vec<&str> = selected
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .map(|l| l.strip_prefix("task:").or_else(|| l.strip_prefix("Task:")).unwrap_or(l))
            .collect();
        let task = words.join(" ").trim_matches(|c: char| c == '"' || c == '\'' || c.is_whitespace()).to_string();
        (!task.is_empty()).then_some(task)
    } else {
        // The snapshot's tree: this runs on every code action request.
        crate::analysis::ide::task_of(text, &snap.parsed.tree)
    }?;
    for named in search::named_tools(&task, catalog) {
        if !tools.contains(&named) {
            tools.push(named);
        }
    }
    Some((task, tools))
}

/// The generation and fix actions offered at the requested range.
pub fn code_actions(snap: &Snapshot, params: &lsp::CodeActionParams) -> Vec<lsp::CodeActionOrCommand> {
    let mut out = Vec::new();
    let uri = json!(snap.uri.as_str());
    let rewrite = lsp::CodeActionKind::REFACTOR_REWRITE;
    if wants(params, &rewrite) {
        let requested = convert::byte_range(&snap.line_index, snap.text(), params.range, snap.world.encoding);
        if let Some((task, tools)) = task_at(snap, requested) {
            out.push(super::plan::code_action(snap, &task));
            let arguments = json!({"uri": uri, "version": snap.version, "task": task, "tools": tools});
            out.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                title: GENERATE_TITLE.into(),
                kind: Some(rewrite),
                command: Some(lsp::Command {
                    title: GENERATE_TITLE.into(),
                    command: names::GENERATE.into(),
                    arguments: Some(vec![arguments]),
                }),
                ..Default::default()
            }));
        }
    }
    let failing: Vec<lsp::Diagnostic> = params
        .context
        .diagnostics
        .iter()
        .filter(|d| matches!(&d.code, Some(lsp::NumberOrString::String(c)) if RUNTIME_CODES.contains(&c.as_str())))
        .cloned()
        .collect();
    if !failing.is_empty() && wants(params, &lsp::CodeActionKind::QUICKFIX) {
        out.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: FIX_TITLE.into(),
            kind: Some(lsp::CodeActionKind::QUICKFIX),
            diagnostics: Some(failing),
            command: Some(lsp::Command {
                title: FIX_TITLE.into(),
                command: names::FIX.into(),
                arguments: Some(vec![json!({"uri": uri, "version": snap.version})]),
            }),
            ..Default::default()
        }));
    }
    out
}

/// What a `chainsmith.generate` / `chainsmith.fix` names.
struct Target {
    uri: lsp::Uri,
    task: Option<String>,
    tools: Vec<String>,
    allow_writes: bool,
}

fn target(params: &lsp::ExecuteCommandParams) -> Option<Target> {
    let uri = arguments::document(&params.arguments)?;
    let args = params.arguments.first().and_then(Value::as_object);
    let get = |k: &str| args.and_then(|a| a.get(k));
    Some(Target {
        uri,
        task: get("task").and_then(Value::as_str).map(str::to_string),
        tools: get("tools")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
        allow_writes: get("allowWrites").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// `chainsmith.generate` (`fix` false) and `chainsmith.fix`: answers at once, the work going on in
/// the background.
pub async fn execute(ctx: &Context, params: lsp::ExecuteCommandParams, fix: bool) -> Result<Option<Value>> {
    let kind = if fix { TaskKind::Fix } else { TaskKind::Generate };
    let command = kind.command();
    let Some(target) = target(&params) else {
        return Err(Error::invalid_params(format!("{command} takes the program's URI as its argument")));
    };
    let snapshot = ctx.session().snapshot(&target.uri);
    let Some(snap) = snapshot else {
        let message =
            format!("chainsmith: open {} to {}", target.uri.as_str(), if fix { "fix it" } else { "generate" });
        ctx.client.show_message(lsp::MessageType::ERROR, message).await;
        return Ok(None);
    };
    let Some(root) = snap.world.root.clone() else {
        ctx.client.show_message(lsp::MessageType::ERROR, "chainsmith: no workspace to generate in").await;
        return Ok(None);
    };
    let text = snap.text().to_string();
    let goal = match (fix, target.task.clone().or_else(|| search::task_of(&text))) {
        (true, _) => Goal::Fix { text },
        (false, Some(task)) => Goal::Generate { task },
        (false, None) => {
            let message = format!("chainsmith: {}", Refusal::NoTask);
            ctx.client.show_message(lsp::MessageType::ERROR, message).await;
            return Ok(None);
        }
    };
    let name = file_name(&snap);
    let showing = Showing {
        client_token: params.work_done_progress_params.work_done_token.clone(),
        server_initiated: snap.world.support.work_done_progress,
        title: if fix { format!("Fixing {name}") } else { format!("Generating a tool chain in {name}") },
        first_message: Some("asking the model"),
        already_running: format!("chainsmith: {command} is already running on this document"),
    };
    let key = TaskKey::document(&target.uri, kind);
    let Some((task, progress)) = task::begin(&ctx.tasks, &ctx.client, key, showing).await else { return Ok(None) };
    let request = ChainRequest {
        goal,
        tools: target.tools,
        program: snap.path.clone(),
        allow_writes: target.allow_writes,
        cancel: task.cancel.clone(),
    };
    let context = ctx.clone();
    spawn_guarded(&ctx.client, command, async move {
        background(&context, &snap, root, request, task, progress).await;
    });
    Ok(None)
}

fn file_name(snap: &Snapshot) -> String {
    session::document_path(&snap.uri).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The editor as a job's sink: LLM calls as progress, consent as a question to the user.
struct Editor<'a> {
    ctx: &'a Context,
    progress: &'a Progress,
}

impl Sink for Editor<'_> {
    async fn progress(&self, message: String) {
        self.progress.report(message).await;
    }

    async fn confirm_writes(&self, tools: &[String]) -> bool {
        confirm(self.ctx, tools).await
    }
}

/// Carries out the job; `task` is released as its progress ends, before the last message, so the
/// user who reads "done" can start the next one on this document at once.
async fn background(
    ctx: &Context,
    snap: &Snapshot,
    root: PathBuf,
    request: ChainRequest,
    task: task::Task,
    progress: Progress,
) {
    let name = file_name(snap);
    let world = &snap.world;
    let fix = matches!(request.goal, Goal::Fix { .. });
    let ws = Workspace {
        root,
        config: world.config.clone(),
        catalog: world.catalog.clone(),
        index: world.relevance.of(&world.catalog),
        toolnet: Some(world.toolnet.inputs.graph()),
        mcp: Some(ctx.mcp.clone()),
        upstream: Vec::new(),
        learn: true,
    };
    let finished = match chain::prepare(&ws, request, Options::of(&world.config.generate)) {
        Ok(prepared) => prepared.run(&Editor { ctx, progress: &progress }).await,
        Err(refusal) => {
            drop(task);
            progress.end(format!("not started: {refusal}")).await;
            ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {refusal}")).await;
            return;
        }
    };
    let searched = match finished {
        Finished::AlreadyRuns => {
            drop(task);
            progress.end("done: it runs without error").await;
            ctx.client.show_message(lsp::MessageType::INFO, format!("chainsmith: {name} runs as it is")).await;
            return;
        }
        Finished::Searched(searched) => searched,
    };
    let usage = searched.summary();
    ctx.client.log_message(lsp::MessageType::INFO, format!("chainsmith: {name}: {usage}")).await;
    let Some(program) = searched.program.clone() else {
        let why = searched.why();
        drop(task);
        progress.end(format!("no change: {why}")).await;
        let kind = if matches!(searched.outcome.stop, Some(search::Stop::Cancelled)) {
            lsp::MessageType::INFO
        } else {
            lsp::MessageType::ERROR
        };
        let what = if fix { "fix" } else { "generate a working chain for" };
        let message = format!("chainsmith: could not {what} {name}: {why}; the document is unchanged");
        ctx.client.show_message(kind, message).await;
        return;
    };
    drop(task);
    progress.end(format!("done: {usage}")).await;
    let text = snap.text();
    if fix && program == text {
        ctx.client.show_message(lsp::MessageType::INFO, format!("chainsmith: {name} runs as it is")).await;
        return;
    }
    // The edit is made against the text the task started from, and only if it is still there.
    let current = ctx.session().document(&snap.uri).map(|d| d.version);
    if current != Some(snap.version) {
        let message = format!(
            "chainsmith: {name} changed while the chain was being generated; nothing was applied (the program is in the output log)"
        );
        ctx.client.show_message(lsp::MessageType::WARNING, message).await;
        ctx.client.log_message(lsp::MessageType::INFO, format!("chainsmith: the program for {name}:\n{program}")).await;
        return;
    }
    let (range, new_text) = if fix {
        // The job already kept the document's task header.
        (convert::range(&snap.line_index, text, ByteRange::new(0, text.len()), world.encoding), program.clone())
    } else {
        let end = convert::range(&snap.line_index, text, ByteRange::new(text.len(), text.len()), world.encoding);
        (end, format!("{}{program}", crate::jobs::plan::separator(text)))
    };
    let edit = lsp::WorkspaceEdit {
        changes: Some(HashMap::from([(snap.uri.clone(), vec![lsp::TextEdit { range, new_text }])])),
        ..Default::default()
    };
    match tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, ctx.client.apply_edit(edit)).await {
        Ok(Ok(response)) if response.applied => {
            let calls = searched.llm_calls;
            let calls = format!("{calls} LLM call{}", if calls == 1 { "" } else { "s" });
            let message = if fix {
                format!("chainsmith: fixed {name}; the new program runs ({calls})")
            } else {
                format!("chainsmith: a chain that runs was added to {name} ({calls})")
            };
            ctx.client.show_message(lsp::MessageType::INFO, message).await;
        }
        other => {
            let why = match other {
                Ok(Ok(r)) => r.failure_reason.unwrap_or_else(|| "the editor refused it".into()),
                Ok(Err(e)) => e.to_string(),
                Err(_) => "the editor did not answer".into(),
            };
            ctx.client
                .log_message(lsp::MessageType::INFO, format!("chainsmith: the program for {name}:\n{program}"))
                .await;
            let message =
                format!("chainsmith: the edit to {name} was not applied ({why}); the program is in the output log");
            ctx.client.show_message(lsp::MessageType::WARNING, message).await;
        }
    }
}

/// Asks the user whether tools that may change data may run.
async fn confirm(ctx: &Context, tools: &[String]) -> bool {
    let run = lsp::MessageActionItem { title: "Run them".into(), properties: Default::default() };
    let cancel = lsp::MessageActionItem { title: "Don't run".into(), properties: Default::default() };
    let message =
        format!("chainsmith: the generated program calls tools that may change data ({}). Run them?", tools.join(", "));
    let asked = ctx.client.show_message_request(lsp::MessageType::WARNING, message, Some(vec![run, cancel]));
    // The user may take their time; an editor that never answers must not hold the task forever.
    let answer = tokio::time::timeout(Duration::from_secs(300), asked).await;
    matches!(answer, Ok(Ok(Some(item))) if item.title == "Run them")
}
