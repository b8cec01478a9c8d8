//! `chainsmith.run` in the editor: the program runs as a background task with work-done progress
//! (cancellable: `window/workDoneProgress/cancel` kills its process tree), its output streamed as
//! `window/logMessage`; when it ends, per-call results become inlay hints at the calls (until the
//! next edit) and a failure becomes diagnostics (until the next good run or an edit of their line),
//! published with the program's static diagnostics.
//!
//! The results are applied only when the document still has the version the run started from.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::lsp_types as lsp;

use crate::jobs::{self, run::Ready};
use crate::runtime::{self, RunObserver, RunRequest, Stream, TraceCall};
use crate::server::context::Context;
use crate::server::guard::guarded;
use crate::server::marks::{RunMarks, mark};
use crate::server::session::{self, Snapshot};
use crate::server::task::{self, CLIENT_REQUEST_TIMEOUT, Progress, Showing, Task, TaskKey, TaskKind, spawn_guarded};
use crate::text::LineIndex;

use super::{arguments, names};

enum Event {
    Output(Stream, String),
    Call(TraceCall),
}

struct Forward(mpsc::UnboundedSender<Event>);

impl RunObserver for Forward {
    fn output(&self, stream: Stream, line: &str) {
        let _ = self.0.send(Event::Output(stream, line.to_string()));
    }
    fn call_finished(&self, call: &TraceCall) {
        let _ = self.0.send(Event::Call(call.clone()));
    }
}

/// Starts a run of the program named by `params`; answers at once (`null`), the run going on in
/// the background.
pub async fn execute(ctx: &Context, params: lsp::ExecuteCommandParams) -> Result<Option<Value>> {
    let Some(uri) = arguments::document(&params.arguments) else {
        return Err(Error::invalid_params(format!("{} takes the program's URI as its argument", names::RUN)));
    };
    let (snapshot, world) = {
        let s = ctx.session();
        (s.snapshot(&uri), s.world())
    };
    let Some(root) = world.root.clone() else {
        ctx.client.show_message(lsp::MessageType::ERROR, "chainsmith: no workspace to run in").await;
        return Ok(None);
    };
    let (path, text, version) = match &snapshot {
        Some(snap) => (snap.path.clone(), snap.text().to_string(), Some(snap.version)),
        None => {
            let path = session::document_path(&uri);
            match crate::files::read_program(&path, &root) {
                Ok(text) => (path, text, None),
                Err(e) => {
                    let message = format!("chainsmith: cannot run {}: {e}", path.display());
                    ctx.client.show_message(lsp::MessageType::ERROR, message).await;
                    return Ok(None);
                }
            }
        }
    };
    // An open document's text is the editor's, but a link out of the workspace is not run either.
    if let Some(why) = crate::files::program_refusal(&path, &root) {
        ctx.client
            .show_message(lsp::MessageType::ERROR, format!("chainsmith: cannot run {}: {why}", path.display()))
            .await;
        return Ok(None);
    }
    let mut request = RunRequest::new(&path, &root, world.config.clone(), world.catalog.clone());
    request.source = Some(text.clone());
    request.mcp = Some(ctx.mcp.clone());
    let mock = arguments::mock(&params.arguments);
    let mut ready = match guarded(names::RUN, || jobs::run::prepare(request, &text, mock))? {
        Ok(ready) => ready,
        Err(refused) => {
            let message = format!(
                "chainsmith: not running {}: {}",
                file_name(&path),
                refused.first().map_or("", |d| d.message.as_str())
            );
            ctx.client.show_message(lsp::MessageType::ERROR, message).await;
            // A mock that did not start says nothing about the program's lines.
            let about_the_program = refused.iter().all(|d| d.code != jobs::run::MOCK_FAILED);
            if let (Some(snap), Some(version), true) = (snapshot.clone(), version, about_the_program) {
                let index = LineIndex::new(&text);
                let marks = RunMarks {
                    version,
                    hints: Vec::new(),
                    diagnostics: refused.into_iter().map(|d| mark(d, &text, &index)).collect(),
                };
                apply(ctx, &snap, marks).await;
            }
            return Ok(None);
        }
    };
    // A re-run takes answers from the document's last run: all identical calls, or those before one.
    let replay = match arguments::replay(&params.arguments) {
        None => None,
        Some(replay) => {
            let Some(last) = snapshot.as_ref().and_then(|s| s.last_trace.clone()) else {
                let message =
                    format!("chainsmith: {} has no earlier run to take answers from; run it first", file_name(&path));
                ctx.client.show_message(lsp::MessageType::WARNING, message).await;
                return Ok(None);
            };
            let first_live = match replay {
                arguments::Replay::Before(first_live) => Some(first_live),
                arguments::Replay::All => None,
            };
            Some(((*last).clone(), first_live))
        }
    };
    if let Some((trace, first_live)) = replay {
        ready.replay(trace, first_live);
    }
    let showing = Showing {
        client_token: params.work_done_progress_params.work_done_token.clone(),
        server_initiated: world.support.work_done_progress,
        title: format!("Running {}", file_name(&path)),
        first_message: Some("starting"),
        already_running: format!("chainsmith: {} is already running", file_name(&path)),
    };
    let key = TaskKey::document(&uri, TaskKind::Run);
    let Some((task, progress)) = task::begin(&ctx.tasks, &ctx.client, key, showing).await else { return Ok(None) };
    let context = ctx.clone();
    let generation = world.generation;
    spawn_guarded(&ctx.client, names::RUN, async move {
        background(&context, ready, task, progress, snapshot, text, generation).await;
    });
    Ok(None)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

async fn background(
    ctx: &Context,
    ready: Ready,
    task: Task,
    progress: Progress,
    snapshot: Option<Snapshot>,
    text: String,
    generation: u64,
) {
    let client = &ctx.client;
    // A run against the mock is no record of the APIs: a later re-run takes no answers from it.
    let against_the_apis = ready.against_the_apis();
    let name = file_name(ready.program());
    let path: PathBuf = ready.program().to_path_buf();
    client.log_message(lsp::MessageType::INFO, format!("chainsmith: running {}", path.display())).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let observer = Arc::new(Forward(tx));
    let cancel = task.cancel.clone();
    let mut run = tokio::task::spawn_blocking(move || ready.run(observer, &cancel));
    let outcome = loop {
        tokio::select! {
            event = rx.recv() => match event {
                Some(event) => forward(ctx, &progress, event).await,
                None => break (&mut run).await,
            },
            done = &mut run => {
                while let Ok(event) = rx.try_recv() {
                    forward(ctx, &progress, event).await;
                }
                break done;
            }
        }
    };
    // The program is over: the document may be run again while its results are applied.
    drop(task);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            tracing::error!("the run of {} failed: {e}", path.display());
            progress.end("failed").await;
            client.show_message(lsp::MessageType::ERROR, format!("chainsmith: the run of {name} failed: {e}")).await;
            return;
        }
    };
    let summary: Vec<String> = outcome.trace.calls.iter().map(TraceCall::summary).collect();
    let mut report =
        format!("chainsmith: {} — {} call{}", name, summary.len(), if summary.len() == 1 { "" } else { "s" });
    if let Some(file) = &outcome.trace_file {
        report.push_str(&format!(", trace {}", file.display()));
    }
    for line in &summary {
        report.push_str("\n  ");
        report.push_str(line);
    }
    let cancelled = matches!(outcome.stopped, Some(runtime::Stop::Cancelled));
    let end = match (&outcome.start_error, &outcome.trace.error) {
        _ if cancelled => {
            // A run the editor's shutdown cancelled: the user is closing it, not waiting to hear.
            if !ctx.tasks.shutting_down() {
                client
                    .show_message(lsp::MessageType::INFO, format!("chainsmith: the run of {name} was cancelled"))
                    .await;
            }
            "cancelled".to_string()
        }
        (Some(e), _) => {
            client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {e}")).await;
            format!("could not start: {e}")
        }
        (None, Some(error)) => {
            let at = error.line.map(|l| format!(" at line {l}")).unwrap_or_default();
            report.push_str(&format!("\n  failed{at}: {}: {}", error.kind, error.message));
            format!("✗ {}{at}", error.kind)
        }
        (None, None) => format!("✓ {} calls", summary.len()),
    };
    client.log_message(lsp::MessageType::INFO, report).await;
    // What the API answered outside its protocol goes on the protocol file.
    if !outcome.drift.is_empty() {
        ctx.session().observe_drift(&path, &outcome.drift, generation);
        ctx.publish_everything().await;
    }
    // The trace stays with the document across edits: a re-run takes answers from it.
    if let Some(snap) = &snapshot
        && against_the_apis
        && outcome.start_error.is_none()
        && !cancelled
        && let Some(doc) = ctx.session().document_mut(&snap.uri)
    {
        doc.last_trace = Some(Arc::new(outcome.trace.clone()));
    }
    // The results go on the document before the progress ends: a client that asks for hints or
    // diagnostics as soon as the run is over must see this run's.
    if let Some(snap) = snapshot
        && outcome.start_error.is_none()
        && !cancelled
        && let Ok(marks) = guarded(&format!("{} results", names::RUN), || {
            RunMarks::of(snap.version, &text, &snap.path, &snap.world.catalog, &snap.world.config, &outcome)
        })
    {
        apply(ctx, &snap, marks).await;
    }
    progress.end(end).await;
}

async fn forward(ctx: &Context, progress: &Progress, event: Event) {
    match event {
        Event::Output(stream, line) => {
            let kind = match stream {
                Stream::Stdout => lsp::MessageType::LOG,
                Stream::Stderr => lsp::MessageType::WARNING,
            };
            ctx.client.log_message(kind, line.trim_end_matches(['\n', '\r'])).await;
        }
        Event::Call(call) => progress.report(format!("#{} {} {}", call.id, call.tool, call.outcome())).await,
    }
}

/// Stores the marks on the document (when it still has the run's version) and publishes its
/// diagnostics and a hint refresh.
async fn apply(ctx: &Context, snap: &Snapshot, marks: RunMarks) {
    let fresh = {
        let mut s = ctx.session();
        let Some(doc) = s.document_mut(&snap.uri) else { return };
        if doc.version != marks.version {
            None
        } else {
            doc.run = (!marks.is_empty()).then(|| Arc::new(marks));
            s.snapshot(&snap.uri)
        }
    };
    let Some(fresh) = fresh else {
        let message =
            format!("chainsmith: {} changed during the run; its results are not shown", file_name(&snap.path));
        ctx.client.log_message(lsp::MessageType::INFO, message).await;
        return;
    };
    ctx.publish_program(&fresh).await;
    // The run's trace is a new ToolNet trajectory: hints and ranking learn from it at once.
    ctx.refresh_toolnet().await;
    if fresh.world.support.inlay_hint_refresh {
        let _ = tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, ctx.client.inlay_hint_refresh()).await;
    }
    // The re-run lenses follow the run.
    if fresh.world.support.code_lens_refresh {
        let _ = tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, ctx.client.code_lens_refresh()).await;
    }
}
