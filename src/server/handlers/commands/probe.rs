//! `chainsmith.probe` (arguments: tools and documents, see [`super::arguments`]) and
//! `chainsmith.probeAll` (every tool whose response is unknown, chain of probing) in the editor: a
//! background task with work-done progress (a report per tool; `window/workDoneProgress/cancel`
//! stops it). Tools not known to be read-only run only after the user confirms
//! (`window/showMessageRequest`). Results are written back: native JSON toolsets as a
//! `WorkspaceEdit` (`workspace/applyEdit`, so the user sees and can undo it), other sources as
//! `.chainsmith/probed/<toolset>.json`; then the catalog is reloaded and the open programs'
//! diagnostics are published against the new schemas. The user is told how it ended ("learnt 3
//! keys of quotes.quote, written to quotes.toolset.json"), not only the log.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::lsp_types::{self as lsp, request};

use crate::jobs::{self, probe::ProbeRequest};
use crate::probe::chain::ProbeObserver;
use crate::probe::discover::{Probed, Unprobed};
use crate::probe::write;
use crate::server::context::Context;
use crate::server::convert;
use crate::server::session::{self, World};
use crate::server::task::{self, Progress, Showing, Task, TaskKey, TaskKind, spawn_guarded};
use crate::text::LineIndex;
use crate::toolset::Catalog;
use crate::toolset::overlay::overlay_path;

use super::arguments::{self, Argument};
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
    let mut push = |id: String| {
        if !targets.contains(&id) {
            targets.push(id);
        }
    };
    // Probe all takes no arguments: a document sent along (the palette's, the status bar's) is ignored.
    for value in params.arguments.iter().filter(|_| !all) {
        match arguments::argument(value) {
            Some(Argument::Tool(id)) => match catalog.find(&id) {
                Ok(tool) => push(tool.id()),
                Err(message) => {
                    ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {message}")).await;
                    return Ok(None);
                }
            },
            Some(Argument::Document(uri)) => {
                let found = document_tools(ctx, &world, &uri);
                if found.is_empty() {
                    let name = session::document_path(&uri).file_name().map(|n| n.to_string_lossy().into_owned());
                    let message = format!(
                        "chainsmith: {} uses no tool whose response is unknown; nothing to probe there",
                        name.unwrap_or_else(|| uri.as_str().to_string())
                    );
                    ctx.client.show_message(lsp::MessageType::INFO, message).await;
                    return Ok(None);
                }
                found.into_iter().for_each(&mut push);
            }
            None => {}
        }
    }
    if all || params.arguments.is_empty() {
        // Naming no tool, it cannot fail.
        jobs::probe::targets(&catalog, &[], true).unwrap_or_default().into_iter().for_each(&mut push);
    }
    if targets.is_empty() {
        ctx.client.show_message(lsp::MessageType::INFO, "chainsmith: every response schema is known").await;
        return Ok(None);
    }
    let needing = jobs::probe::needing_consent(&catalog, &targets);
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
    let showing = Showing {
        client_token: params.work_done_progress_params.work_done_token.clone(),
        server_initiated: world.support.work_done_progress,
        title: format!("Probing {} tool{}", targets.len(), if targets.len() == 1 { "" } else { "s" }),
        first_message: None,
        already_running: "chainsmith: probing is already running".into(),
    };
    let key = TaskKey::workspace(TaskKind::Probe);
    let Some((task, progress)) = task::begin(&ctx.tasks, &ctx.client, key, showing).await else { return Ok(None) };
    let request = ProbeRequest { targets, allow_writes, mcp: ctx.mcp.clone(), cancel: task.cancel.clone() };
    let prepared = match jobs::probe::prepare(world.config.clone(), catalog.clone(), request) {
        Ok(prepared) => prepared,
        Err(e) => {
            drop(task);
            progress.end(format!("not started: {e}")).await;
            ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {e}")).await;
            return Ok(None);
        }
    };
    let context = ctx.clone();
    spawn_guarded(&ctx.client, names::PROBE, async move {
        background(&context, root, catalog, prepared, task, progress).await;
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
    prepared: jobs::probe::Prepared,
    task: Task,
    progress: Progress,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let asked = prepared.targets().len();
    let probing = tokio::spawn(async move { prepared.run(&Forward(tx)).await.report });
    while let Some(line) = rx.recv().await {
        ctx.client.log_message(lsp::MessageType::INFO, format!("chainsmith: {line}")).await;
        progress.report(line).await;
    }
    let Ok(result) = probing.await else {
        progress.end("failed").await;
        return;
    };
    let probed: Vec<&Probed> = result.probed.iter().map(|(p, _)| p).collect();
    let written = write_probed(ctx, &root, &catalog, &probed).await;
    let mut end = format!("probed {} of {asked}", probed.len());
    for (id, why) in &result.unprobed {
        end.push_str(&format!("\n{id}: {}", why.reason()));
    }
    ctx.client.log_message(lsp::MessageType::INFO, format!("chainsmith: {end}")).await;
    // Probing is over once its results are written: the user told so may probe again at once.
    let cancelled = task.cancel.is_cancelled();
    drop(task);
    progress.end(end).await;
    let mut told: Vec<String> = probed.iter().map(|p| learnt(p, &written)).collect();
    let kind = if cancelled {
        told.push("probing was cancelled".into());
        lsp::MessageType::INFO
    } else if result.unprobed.is_empty() {
        lsp::MessageType::INFO
    } else {
        told.extend(result.unprobed.iter().map(|(id, why)| format!("{id} not probed: {}", why.reason())));
        lsp::MessageType::WARNING
    };
    ctx.client.show_message(kind, format!("chainsmith: {}", told.join("; "))).await;
    ctx.publish_everything().await;
}

/// What a probe learnt and where it went, in a user's words: "learnt 3 keys of quotes.quote,
/// written to quotes.toolset.json". `written` is where each tool's schema was written.
fn learnt(probed: &Probed, written: &[(String, PathBuf)]) -> String {
    let schema = &probed.response;
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or("untyped");
    let keys = |s: &Value| s.get("properties").and_then(Value::as_object).map(|p| p.len());
    let plural = |n: usize| format!("{n} key{}", if n == 1 { "" } else { "s" });
    let what = match (keys(schema), schema.get("items").filter(|_| kind == "array").and_then(keys)) {
        (Some(n), _) => plural(n),
        (None, Some(n)) => format!("a list of items with {}", plural(n)),
        (None, None) => format!("the {kind} response"),
    };
    match written.iter().find(|(tool, _)| tool == &probed.tool) {
        Some((_, file)) => format!("learnt {what} of {}, written to {}", probed.tool, file.display()),
        None => format!("learnt {what} of {}, but it was not written", probed.tool),
    }
}

/// The tools a document stands for in `chainsmith.probe`: those of unknown response that a
/// program calls, or that a protocol file declares.
fn document_tools(ctx: &Context, world: &World, uri: &lsp::Uri) -> Vec<String> {
    let snapshot = ctx.session().snapshot(uri);
    let mut ids: Vec<String> = Vec::new();
    if let Some(snap) = &snapshot {
        for tool in snap.analysis().calls.iter().filter_map(|c| c.tool).filter(|t| t.response.is_none()) {
            if !ids.contains(&tool.id()) {
                ids.push(tool.id());
            }
        }
    }
    if ids.is_empty() {
        ids = declared_unprobed(world, &session::document_path(uri)).into_iter().map(|t| t.id()).collect();
    }
    ids
}

/// The tools of unknown response a protocol file declares (MCP tools are declared by servers).
fn declared_unprobed<'w>(world: &'w World, path: &Path) -> Vec<&'w crate::toolset::Tool> {
    let path = world.resolve(path);
    world
        .catalog
        .tools()
        .filter(|t| t.response.is_none() && t.source.kind != crate::toolset::SourceKind::Mcp)
        .filter(|t| world.resolve(&t.source.file) == path)
        .collect()
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
    let mut tools = declared_unprobed(world, &path);
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
/// catalog with the edited files as the editor holds them. Where each tool's schema went: its
/// id and the file, relative to the root.
#[allow(clippy::mutable_key_type)]
pub(super) async fn write_probed(
    ctx: &Context,
    root: &Path,
    catalog: &Catalog,
    probed: &[&Probed],
) -> Vec<(String, PathBuf)> {
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
    let relative = |file: &Path| file.strip_prefix(root).unwrap_or(file).to_path_buf();
    let mut written: Vec<(String, PathBuf)> = Vec::new();
    let mut planned: Vec<(String, PathBuf)> = Vec::new();
    for (file, items) in by_file {
        let path = if file.is_absolute() { file.clone() } else { root.join(&file) };
        // The catalog's copy is the text the editor holds, an earlier probe's unsaved edit included.
        let held = catalog.texts.get(&file).or_else(|| catalog.texts.get(&path)).map(|t| t.to_string());
        let Some(text) = held.or_else(|| crate::files::read_text(&path, crate::files::MAX_READ).ok()) else { continue };
        let Ok(edits) = write::native_edits(&text, &items) else { continue };
        let Some(uri) = convert::file_uri(&path) else { continue };
        edited.insert(path.clone(), write::apply_edits(&text, &edits));
        planned.extend(items.iter().map(|p| (p.tool.clone(), relative(&file))));
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
            Ok(r) if r.applied => written.append(&mut planned),
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
                match write::write_back(root, catalog, &native) {
                    Ok(_) => written.append(&mut planned),
                    Err(e) => ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {e:#}")).await,
                }
            }
        }
    }
    match write::write_back(root, catalog, &other) {
        Ok(_) => written.extend(other.iter().map(|p| (p.tool.clone(), relative(&overlay_path(root, &p.toolset))))),
        Err(e) => ctx.client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {e:#}")).await,
    }
    // The catalog reloads at once (with the edited files as the editor holds them), so completion
    // and diagnostics see the new schemas before the user saves.
    ctx.reload(edited).await;
    written
}
