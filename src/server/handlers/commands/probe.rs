//! `chainsmith.probe` (arguments: tool ids) and `chainsmith.probeAll` (every tool whose response is
//! unknown, chain of probing) in the editor: a background task with work-done progress (a report
//! per tool; `window/workDoneProgress/cancel` stops it). Tools not known to be read-only run only
//! after the user confirms (`window/showMessageRequest`). Results are written back: native JSON
//! toolsets as a `WorkspaceEdit` (`workspace/applyEdit`, so the user sees and can undo it),
//! other sources as `.chainsmith/probed/<toolset>.json`; then the catalog is reloaded and the open
//! programs' diagnostics are published against the new schemas.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::lsp_types::{self as lsp, request};

use crate::llm;
use crate::probe::chain::{self, ProbeObserver};
use crate::probe::discover::{self, Probed, Prober, Unprobed};
use crate::probe::write;
use crate::server::context::Context;
use crate::server::convert;
use crate::server::session::World;
use crate::server::task::{self, Progress, Showing, TaskKey, TaskKind, spawn_guarded};
use crate::text::LineIndex;
use crate::toolset::Catalog;

use super::names;

const CONFIRM: &str = "Probe them too";
const SKIP: &str = "Only read-only tools";

/// Starts probing; answers at once (`null`).
pub async fn execute(ctx: &Context, params: lsp::ExecuteCommandParams, all: bool) -> Result<Option<Value>> {
    let world = ctx.session().world();
    let Some(root) = world.root.clone() else {
        ctx.client.show_message(lsp::MessageType::ERROR, "chainsmith: no workspace to probe in").await;
        return Ok(None);
    };
    let catalog = world.catalog.clone();
    let mut targets: Vec<String> = Vec::new();
    for arg in &params.arguments {
        let id = match arg {
            Value::String(s) => s.clone(),
            Value::Object(m) => m.get("tool").and_then(Value::as_str).unwrap_or_default().to_string(),
            _ => continue,
        };
        match catalog.find(&id) {
            Ok(tool) => targets.push(tool.id()),
            Err(message) => {
                ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {message}")).await;
                return Ok(None);
            }
        }
    }
    if all || targets.is_empty() {
        let unknown: Vec<String> = catalog
            .tools()
            .filter(|t| t.response.is_none())
            .map(|t| t.id())
            .filter(|id| !targets.contains(id))
            .collect();
        targets.extend(unknown);
    }
    if targets.is_empty() {
        ctx.client.show_message(lsp::MessageType::INFO, "chainsmith: every response schema is known").await;
        return Ok(None);
    }
    let needing: Vec<String> = targets
        .iter()
        .filter_map(|id| catalog.find(id).ok())
        .filter(|t| discover::confirmation_needed(t).is_some())
        .map(|t| t.id())
        .collect();
    let mut allow_writes = false;
    if !needing.is_empty() {
        let asked = ctx.client.show_message_request(
            lsp::MessageType::WARNING,
            format!(
                "chainsmith: probing runs tools for real; these are not known to be read-only: {}",
                needing.join(", ")
            ),
            Some(vec![
                lsp::MessageActionItem { title: CONFIRM.into(), properties: HashMap::new() },
                lsp::MessageActionItem { title: SKIP.into(), properties: HashMap::new() },
            ]),
        );
        match tokio::time::timeout(Duration::from_secs(120), asked).await {
            Ok(Ok(Some(item))) if item.title == CONFIRM => allow_writes = true,
            Ok(Ok(Some(item))) if item.title == SKIP => {}
            _ => return Ok(None),
        }
    }
    let client = match llm::Client::new(&world.config.llm, &world.catalog.trust) {
        Ok(c) => c,
        Err(e) => {
            ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {e}")).await;
            return Ok(None);
        }
    };
    let showing = Showing {
        client_token: params.work_done_progress_params.work_done_token.clone(),
        server_initiated: world.support.work_done_progress,
        title: format!("Probing {} tool{}", targets.len(), if targets.len() == 1 { "" } else { "s" }),
        first_message: None,
        already_running: "chainsmith: probing is already running".into(),
    };
    let key = TaskKey::workspace(TaskKind::Probe);
    let Some((task, progress)) = task::begin(&ctx.tasks, &ctx.client, key, showing).await else { return Ok(None) };
    let mut prober = Prober::new(world.config.clone(), client, allow_writes);
    prober.mcp = ctx.mcp.clone();
    prober.cancel = task.cancel.clone();
    let n = targets.len() as u32;
    prober.budget.max_llm_calls = (prober.samples + 1) * n * world.config.probe.rounds.max(1);
    prober.budget.max_tokens = world.config.generate.max_tokens.max(1) * u64::from(n);
    let context = ctx.clone();
    spawn_guarded(&ctx.client, names::PROBE, async move {
        background(&context, root, catalog, prober, targets, progress).await;
        drop(task);
    });
    Ok(None)
}

struct Forward(tokio::sync::mpsc::UnboundedSender<String>);

impl ProbeObserver for Forward {
    fn started(&self, tool: &str, round: u32, _prerequisites: &[String]) {
        let _ = self.0.send(format!("probing {tool} (round {round})"));
    }
    fn finished(&self, tool: &str, _round: u32, result: &std::result::Result<Probed, Unprobed>) {
        let _ = self.0.send(match result {
            Ok(_) => format!("✓ {tool}"),
            Err(why) => format!("✗ {tool}: {}", why.reason()),
        });
    }
}

// `lsp::Uri` keys are what `WorkspaceEdit::changes` takes.
#[allow(clippy::mutable_key_type)]
async fn background(
    ctx: &Context,
    root: PathBuf,
    catalog: Arc<Catalog>,
    prober: Prober,
    targets: Vec<String>,
    progress: Progress,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = {
        let (prober, catalog, targets) = (prober.clone(), catalog.clone(), targets.clone());
        tokio::spawn(async move { chain::probe_chain(&prober, &catalog, &targets, &Forward(tx)).await })
    };
    while let Some(line) = rx.recv().await {
        ctx.client.log_message(lsp::MessageType::INFO, format!("chainsmith: {line}")).await;
        progress.report(line).await;
    }
    let Ok(result) = task.await else {
        progress.end("failed").await;
        return;
    };
    let probed: Vec<&Probed> = result.probed.iter().map(|(p, _)| p).collect();
    write_probed(ctx, &root, &catalog, &probed).await;
    let mut end = format!("probed {} of {}", probed.len(), targets.len());
    for (id, why) in &result.unprobed {
        end.push_str(&format!("\n{id}: {}", why.reason()));
    }
    ctx.client.log_message(lsp::MessageType::INFO, format!("chainsmith: {end}")).await;
    progress.end(end).await;
    ctx.publish_everything().await;
}

fn wants_refactor(params: &lsp::CodeActionParams) -> bool {
    params.context.only.as_ref().is_none_or(|only| only.iter().any(|k| k.as_str().starts_with("refactor")))
}

fn probe_action(tool: &crate::toolset::Tool) -> lsp::CodeActionOrCommand {
    let title = format!("Probe tool {}", tool.id());
    lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
        title: title.clone(),
        kind: Some(lsp::CodeActionKind::REFACTOR),
        command: Some(lsp::Command {
            title,
            command: names::PROBE.into(),
            arguments: Some(vec![Value::String(tool.id())]),
        }),
        ..Default::default()
    })
}

/// "Probe tool `toolset.name`" on the protocol entries (native tool, OpenAPI operation, ToolBench
/// record) of the file `path` in the requested range whose response is unknown.
pub fn protocol_code_actions(
    world: &World,
    path: &Path,
    params: &lsp::CodeActionParams,
) -> Vec<lsp::CodeActionOrCommand> {
    if !wants_refactor(params) {
        return Vec::new();
    }
    let path = world.resolve(path);
    let mut tools: Vec<&crate::toolset::Tool> = world
        .catalog
        .tools()
        .filter(|t| t.response.is_none() && t.source.kind != crate::toolset::SourceKind::Mcp)
        .filter(|t| world.resolve(&t.source.file) == path)
        .collect();
    if tools.is_empty() {
        return Vec::new();
    }
    let Some(text) = world.file_text(&path) else { return Vec::new() };
    let index = LineIndex::new(&text);
    let requested = convert::byte_range(&index, &text, params.range, world.encoding);
    tools.retain(|t| {
        let r = t.source.range;
        r.start <= requested.end && requested.start <= r.end && r.end > r.start
    });
    // The innermost declaration first (a cursor in an entry, not the whole file).
    tools.sort_by_key(|t| t.source.range.end - t.source.range.start);
    tools.into_iter().map(probe_action).collect()
}

/// "Probe tool `toolset.name`" on the calls in the requested range whose response is unknown.
pub fn code_actions(
    snap: &crate::server::session::Snapshot,
    params: &lsp::CodeActionParams,
) -> Vec<lsp::CodeActionOrCommand> {
    if !wants_refactor(params) {
        return Vec::new();
    }
    let world = &snap.world;
    let requested = convert::byte_range(&snap.line_index, snap.text(), params.range, world.encoding);
    let analysis = snap.analysis();
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for call in &analysis.calls {
        let Some(tool) = call.tool else { continue };
        let touches = call.range.start <= requested.end && requested.start <= call.range.end;
        if !touches || tool.response.is_some() || seen.contains(&tool.id()) {
            continue;
        }
        seen.push(tool.id());
        out.push(probe_action(tool));
    }
    out
}

/// Writes probed (or observed) schemas back: native files through one `WorkspaceEdit` the user
/// can see and undo, other sources as `.chainsmith/probed/<toolset>.json`; then reloads the
/// catalog with the edited files as the editor holds them.
#[allow(clippy::mutable_key_type)]
pub(super) async fn write_probed(ctx: &Context, root: &Path, catalog: &Catalog, probed: &[&Probed]) {
    let (native, other): (Vec<&Probed>, Vec<&Probed>) =
        probed.iter().partition(|p| catalog.tool(&p.toolset, &p.name).is_some_and(write::is_native_json));
    // Native files: one WorkspaceEdit the user can see and undo.
    let mut by_file: BTreeMap<PathBuf, Vec<&Probed>> = BTreeMap::new();
    for p in native {
        if let Some(tool) = catalog.tool(&p.toolset, &p.name) {
            by_file.entry(tool.source.file.clone()).or_default().push(p);
        }
    }
    let mut changes: HashMap<lsp::Uri, Vec<lsp::TextEdit>> = HashMap::new();
    // The files as the editor will hold them once the edit is applied (before any save).
    let mut edited: HashMap<PathBuf, String> = HashMap::new();
    let encoding = ctx.session().encoding;
    for (file, items) in by_file {
        let path = if file.is_absolute() { file.clone() } else { root.join(&file) };
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let Ok(edits) = write::native_edits(&text, &items) else { continue };
        let Some(uri) = convert::file_uri(&path) else { continue };
        edited.insert(path.clone(), write::apply_edits(&text, &edits));
        let index = LineIndex::new(&text);
        let edits = edits
            .iter()
            .map(|e| lsp::TextEdit {
                range: convert::range(&index, &text, e.range, encoding),
                new_text: e.text.clone(),
            })
            .collect();
        changes.insert(uri, edits);
    }
    if !changes.is_empty() {
        let edit = lsp::WorkspaceEdit { changes: Some(changes), ..Default::default() };
        let applied = ctx
            .client
            .send_request::<request::ApplyWorkspaceEdit>(lsp::ApplyWorkspaceEditParams {
                label: Some("Probed response schemas".into()),
                edit,
            })
            .await;
        match applied {
            Ok(r) if r.applied => {}
            Ok(r) => {
                edited.clear();
                let why = r.failure_reason.map(|w| format!(": {w}")).unwrap_or_default();
                let message = format!("chainsmith: the editor did not apply the probed schemas{why}");
                ctx.client.show_message(lsp::MessageType::WARNING, message).await;
            }
            // No (usable) answer: a client without `workspace/applyEdit`; the results would be
            // lost, so the files are written as the CLI writes them.
            Err(_) => {
                edited.clear();
                let native: Vec<&Probed> = probed
                    .iter()
                    .copied()
                    .filter(|p| catalog.tool(&p.toolset, &p.name).is_some_and(write::is_native_json))
                    .collect();
                if let Err(e) = write::write_back(root, catalog, &native) {
                    ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {e:#}")).await;
                }
            }
        }
    }
    if let Err(e) = write::write_back(root, catalog, &other) {
        ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {e:#}")).await;
    }
    // The catalog reloads at once (with the edited files as the editor holds them), so completion
    // and diagnostics see the new schemas before the user saves.
    ctx.reload(edited).await;
}
