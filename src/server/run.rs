//! `chainsmith.run` in the editor: the program runs as a background task with work-done progress
//! (cancellable: `window/workDoneProgress/cancel` kills its process tree), its output streamed as
//! `window/logMessage`; when it ends, per-call results become inlay hints at the calls (until the
//! next edit) and a failure becomes diagnostics (until the next good run or an edit of their line),
//! published with the program's static diagnostics.
//!
//! The results are applied only when the document still has the version the run started from.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::lsp_types::{self as lsp, notification, request};

use super::session::{self, Session, Snapshot};
use super::{guarded, handlers};
use crate::analysis;
use crate::diagnostic::Diagnostic;
use crate::runtime::{self, Cancel, McpPool, RunObserver, RunOutcome, RunRequest, Stream, TraceCall};
use crate::text::ByteRange;
use crate::text::LineIndex;

const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs in progress (by URI, with the progress token that can cancel them) and the MCP sessions
/// shared by the editor session's runs.
#[derive(Default)]
pub struct Runs {
    active: Mutex<HashMap<String, (Option<String>, Cancel)>>,
    next: AtomicU64,
    pub mcp: Arc<McpPool>,
}

impl Runs {
    fn active(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Option<String>, Cancel)>> {
        self.active.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `window/workDoneProgress/cancel`: cancels the run showing that progress.
    pub fn cancel(&self, token: &lsp::ProgressToken) {
        let token = token_text(token);
        for (progress, cancel) in self.active().values() {
            if progress.as_deref() == Some(token.as_str()) {
                cancel.cancel();
            }
        }
    }

    /// Tracks another background task (generation, fix) under `key` so progress cancellation and
    /// shutdown reach it; `false` when one is already active under that key.
    pub(crate) fn track(&self, key: &str, cancel: Cancel) -> bool {
        let mut active = self.active();
        if active.contains_key(key) {
            return false;
        }
        active.insert(key.to_string(), (None, cancel));
        true
    }

    /// Records the progress token that can cancel the task under `key`.
    pub(crate) fn set_token(&self, key: &str, token: &lsp::ProgressToken) {
        if let Some(entry) = self.active().get_mut(key) {
            entry.0 = Some(token_text(token));
        }
    }

    pub(crate) fn untrack(&self, key: &str) {
        self.active().remove(key);
    }

    /// Cancels every run (shutdown).
    pub fn cancel_all(&self) {
        for (_, cancel) in self.active().values() {
            cancel.cancel();
        }
    }
}

fn token_text(token: &lsp::ProgressToken) -> String {
    match token {
        lsp::NumberOrString::Number(n) => n.to_string(),
        lsp::NumberOrString::String(s) => s.clone(),
    }
}

/// One call's result at its place in the program.
#[derive(Debug, Clone, PartialEq)]
pub struct CallHint {
    /// Byte offset of the end of the call's statement.
    pub offset: usize,
    pub label: String,
    pub tooltip: String,
}

/// A run diagnostic with what it needs to survive edits elsewhere: the text of its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkedDiagnostic {
    pub diagnostic: Diagnostic,
    /// Byte range of the whole lines the diagnostic covers, and their text.
    pub lines: ByteRange,
    pub line_number: usize,
    pub line_text: String,
}

/// What a run leaves on its document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMarks {
    /// The document version the run ran; hints show only while it holds.
    pub version: i32,
    pub hints: Vec<CallHint>,
    pub diagnostics: Vec<MarkedDiagnostic>,
}

impl RunMarks {
    pub fn is_empty(&self) -> bool {
        self.hints.is_empty() && self.diagnostics.is_empty()
    }

    /// After a ranged edit (`range` of `before` replaced by `inserted`): hints go, a diagnostic
    /// whose lines the edit touches goes, the others move with the text.
    pub fn edited(&mut self, before: &str, range: ByteRange, inserted: &str) {
        self.hints.clear();
        let delta = inserted.len() as isize - (range.end - range.start) as isize;
        let removed_lines = before.get(range.start..range.end).map_or(0, |r| r.matches('\n').count()) as isize;
        let line_delta = inserted.matches('\n').count() as isize - removed_lines;
        self.diagnostics.retain_mut(|marked| {
            if range.start <= marked.lines.end && range.end >= marked.lines.start {
                return false;
            }
            if range.end < marked.lines.start {
                let shift = |o: usize| (o as isize + delta).max(0) as usize;
                marked.lines = ByteRange::new(shift(marked.lines.start), shift(marked.lines.end));
                let d = &mut marked.diagnostic;
                d.range = ByteRange::new(shift(d.range.start), shift(d.range.end));
                marked.line_number = (marked.line_number as isize + line_delta).max(0) as usize;
            }
            true
        });
    }

    /// After the whole text was replaced: a diagnostic stays when its lines are unchanged at the
    /// same line number.
    pub fn replaced(&mut self, after: &str) {
        self.hints.clear();
        let index = LineIndex::new(after);
        self.diagnostics.retain_mut(|marked| {
            let Some(start) = index.line_start(marked.line_number) else { return false };
            let end = start + marked.line_text.len();
            if after.get(start..end) != Some(marked.line_text.as_str()) {
                return false;
            }
            let offset = |o: usize| start + o.saturating_sub(marked.lines.start);
            let d = &mut marked.diagnostic;
            d.range = ByteRange::new(offset(d.range.start), offset(d.range.end));
            marked.lines = ByteRange::new(start, end);
            true
        });
    }

    /// The marks of a finished run on the text it ran.
    pub fn of(version: i32, text: &str, snap: &Snapshot, outcome: &RunOutcome) -> RunMarks {
        let index = LineIndex::new(text);
        let diagnostics = outcome.diagnostics.iter().map(|d| mark(d.clone(), text, &index)).collect();
        let tree = analysis::parse::parse(text);
        let world = &snap.world;
        let result = analysis::analyze(&snap.path, text, &tree, &world.catalog, &world.config.diagnostics);
        let mut by_offset: Vec<(usize, Vec<&TraceCall>)> = Vec::new();
        for call in &outcome.trace.calls {
            let Some(line) = call.line else { continue };
            let line0 = line.saturating_sub(1) as usize;
            let analysed = result
                .calls
                .iter()
                .filter(|c| index.line_of(c.range.start) <= line0 && line0 <= index.line_of(c.range.end))
                .min_by_key(|c| (c.tool.is_none_or(|t| t.id() != call.tool), c.range.end - c.range.start));
            let offset = match analysed {
                Some(c) => c.statement_range.end,
                None => match index.line_start(line0) {
                    Some(start) => text[start..].find('\n').map(|i| start + i).unwrap_or(text.len()),
                    None => continue,
                },
            };
            match by_offset.iter_mut().find(|(o, _)| *o == offset) {
                Some((_, calls)) => calls.push(call),
                None => by_offset.push((offset, vec![call])),
            }
        }
        let hints = by_offset
            .into_iter()
            .map(|(offset, calls)| CallHint {
                offset,
                label: hint_label(&calls),
                tooltip: calls.iter().map(|c| c.summary()).collect::<Vec<_>>().join("\n"),
            })
            .collect();
        RunMarks { version, hints, diagnostics }
    }
}

fn mark(diagnostic: Diagnostic, text: &str, index: &LineIndex) -> MarkedDiagnostic {
    let first = index.line_of(diagnostic.range.start.min(text.len()));
    let last = index.line_of(diagnostic.range.end.min(text.len()));
    let start = index.line_start(first).unwrap_or(0);
    let end =
        index.line_start(last).map(|s| text[s..].find('\n').map(|i| s + i).unwrap_or(text.len())).unwrap_or(text.len());
    MarkedDiagnostic {
        diagnostic,
        lines: ByteRange::new(start, end),
        line_number: first,
        line_text: text[start..end].to_string(),
    }
}

/// `✓ 200 · 84 ms`, `✗ 404`, `✓ 200 · replayed`, `✓ 200 · 12 ms ×5 (1 failed)`.
pub fn hint_label(calls: &[&TraceCall]) -> String {
    let Some(last) = calls.last() else { return String::new() };
    let timing = if last.replayed { "replayed".to_string() } else { format!("{} ms", last.duration_ms) };
    let mut label = match (last.ok, last.status) {
        (true, Some(status)) => format!("✓ {status} · {timing}"),
        (true, None) => format!("✓ {timing}"),
        (false, Some(status)) => format!("✗ {status}"),
        (false, None) => "✗ failed".to_string(),
    };
    if calls.len() > 1 {
        label.push_str(&format!(" ×{}", calls.len()));
        let failed = calls.iter().filter(|c| !c.ok).count();
        if failed > 0 && last.ok {
            label.push_str(&format!(" ({failed} failed)"));
        }
    }
    label
}

/// What the background task needs from the server.
#[derive(Clone)]
pub struct Shared {
    pub client: Client,
    pub session: Arc<Mutex<Session>>,
    pub publishing: Arc<tokio::sync::Mutex<()>>,
    pub runs: Arc<Runs>,
}

impl Shared {
    fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The program a `chainsmith.run` names: its URI as the first argument (a string, or an object
/// with `uri`).
fn target(params: &lsp::ExecuteCommandParams) -> Option<lsp::Uri> {
    let first = params.arguments.first()?;
    let text = match first {
        Value::String(s) => s.as_str(),
        Value::Object(map) => map.get("uri").and_then(Value::as_str)?,
        _ => return None,
    };
    text.parse().ok()
}

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
pub async fn execute(shared: Shared, params: lsp::ExecuteCommandParams) -> Result<Option<Value>> {
    let Some(uri) = target(&params) else {
        return Err(Error::invalid_params("chainsmith.run takes the program's URI as its argument"));
    };
    let (snapshot, world, support) = {
        let s = shared.session();
        (s.snapshot(&uri), s.world(), s.support)
    };
    let Some(root) = world.root.clone() else {
        shared.client.show_message(lsp::MessageType::ERROR, "chainsmith: no workspace to run in").await;
        return Ok(None);
    };
    let (path, text, version) = match &snapshot {
        Some(snap) => (snap.path.clone(), snap.text().to_string(), Some(snap.version)),
        None => {
            let path = session::document_path(&uri);
            match std::fs::read_to_string(&path) {
                Ok(text) => (path, text, None),
                Err(e) => {
                    let message = format!("chainsmith: cannot run {}: {e}", path.display());
                    shared.client.show_message(lsp::MessageType::ERROR, message).await;
                    return Ok(None);
                }
            }
        }
    };
    let refused = guarded("chainsmith.run", || runtime::unrunnable_calls(&path, &text, &world.catalog))?;
    if let Some(first) = refused.first() {
        let message = format!("chainsmith: not running {}: {}", file_name(&path), first.message);
        shared.client.show_message(lsp::MessageType::ERROR, message).await;
        if let (Some(snap), Some(version)) = (snapshot.clone(), version) {
            let index = LineIndex::new(&text);
            let marks = RunMarks {
                version,
                hints: Vec::new(),
                diagnostics: refused.into_iter().map(|d| mark(d, &text, &index)).collect(),
            };
            apply(&shared, &snap, marks).await;
        }
        return Ok(None);
    }
    let key = uri.as_str().to_string();
    let cancel = Cancel::new();
    let already = {
        let mut active = shared.runs.active();
        let running = active.contains_key(&key);
        if !running {
            active.insert(key.clone(), (None, cancel.clone()));
        }
        running
    };
    if already {
        let message = format!("chainsmith: {} is already running", file_name(&path));
        shared.client.show_message(lsp::MessageType::INFO, message).await;
        return Ok(None);
    }
    let token = match params.work_done_progress_params.work_done_token.clone() {
        Some(token) => Some(token),
        None if support.work_done_progress => {
            let n = shared.runs.next.fetch_add(1, Ordering::SeqCst);
            let token = lsp::NumberOrString::String(format!("chainsmith-run-{n}"));
            let create =
                shared.client.send_request::<request::WorkDoneProgressCreate>(lsp::WorkDoneProgressCreateParams {
                    token: token.clone(),
                });
            match tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, create).await {
                Ok(Ok(())) => Some(token),
                _ => None,
            }
        }
        None => None,
    };
    if let Some(token) = &token {
        let mut active = shared.runs.active();
        if let Some(entry) = active.get_mut(&key) {
            entry.0 = Some(token_text(token));
        }
    }
    let mut request = RunRequest::new(&path, &root, world.config.clone(), world.catalog.clone());
    request.source = Some(text.clone());
    request.mcp = Some(shared.runs.mcp.clone());
    tokio::spawn(background(shared, key, request, token, cancel, snapshot, text));
    Ok(None)
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

async fn progress(client: &Client, token: &Option<lsp::ProgressToken>, value: lsp::WorkDoneProgress) {
    if let Some(token) = token {
        client
            .send_notification::<notification::Progress>(lsp::ProgressParams {
                token: token.clone(),
                value: lsp::ProgressParamsValue::WorkDone(value),
            })
            .await;
    }
}

async fn background(
    shared: Shared,
    key: String,
    request: RunRequest,
    token: Option<lsp::ProgressToken>,
    cancel: Cancel,
    snapshot: Option<Snapshot>,
    text: String,
) {
    let client = shared.client.clone();
    let name = file_name(&request.program);
    let path: PathBuf = request.program.clone();
    progress(
        &client,
        &token,
        lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
            title: format!("Running {name}"),
            cancellable: Some(true),
            message: Some("starting".into()),
            percentage: None,
        }),
    )
    .await;
    client.log_message(lsp::MessageType::INFO, format!("chainsmith: running {}", path.display())).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let observer = Arc::new(Forward(tx));
    let running = cancel.clone();
    let mut task = tokio::task::spawn_blocking(move || runtime::run(request, observer, &running));
    let outcome = loop {
        tokio::select! {
            event = rx.recv() => match event {
                Some(event) => forward(&client, &token, event).await,
                None => break (&mut task).await,
            },
            done = &mut task => {
                while let Ok(event) = rx.try_recv() {
                    forward(&client, &token, event).await;
                }
                break done;
            }
        }
    };
    shared.runs.active().remove(&key);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            tracing::error!("the run of {} failed: {e}", path.display());
            progress(
                &client,
                &token,
                lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd { message: Some("failed".into()) }),
            )
            .await;
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
    let end = match (&outcome.start_error, &outcome.trace.error) {
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
    // The results go on the document before the progress ends: a client that asks for hints or
    // diagnostics as soon as the run is over must see this run's.
    if let Some(snap) = snapshot
        && outcome.start_error.is_none()
        && !matches!(outcome.stopped, Some(runtime::Stop::Cancelled))
        && let Ok(marks) = guarded("chainsmith.run results", || RunMarks::of(snap.version, &text, &snap, &outcome))
    {
        apply(&shared, &snap, marks).await;
    }
    progress(&client, &token, lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd { message: Some(end) })).await;
}

async fn forward(client: &Client, token: &Option<lsp::ProgressToken>, event: Event) {
    match event {
        Event::Output(stream, line) => {
            let kind = match stream {
                Stream::Stdout => lsp::MessageType::LOG,
                Stream::Stderr => lsp::MessageType::WARNING,
            };
            client.log_message(kind, line.trim_end_matches(['\n', '\r'])).await;
        }
        Event::Call(call) => {
            let message = format!("#{} {} {}", call.id, call.tool, call.outcome());
            progress(
                client,
                token,
                lsp::WorkDoneProgress::Report(lsp::WorkDoneProgressReport {
                    cancellable: Some(true),
                    message: Some(message),
                    percentage: None,
                }),
            )
            .await;
        }
    }
}

/// Stores the marks on the document (when it still has the run's version) and publishes its
/// diagnostics and a hint refresh.
async fn apply(shared: &Shared, snap: &Snapshot, marks: RunMarks) {
    let fresh = {
        let mut s = shared.session();
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
        shared.client.log_message(lsp::MessageType::INFO, message).await;
        return;
    };
    let diagnostics = guarded("publish diagnostics", || handlers::diagnostics::program(&fresh)).unwrap_or_default();
    {
        let _turn = shared.publishing.lock().await;
        let current = {
            let s = shared.session();
            s.generation == fresh.world.generation && s.document(&fresh.uri).is_some_and(|d| d.version == fresh.version)
        };
        if current {
            shared.client.publish_diagnostics(fresh.uri.clone(), diagnostics, Some(fresh.version)).await;
        }
    }
    // The run's trace is a new ToolNet trajectory: hints and ranking learn from it at once.
    super::refresh_toolnet(&shared.session).await;
    if fresh.world.support.inlay_hint_refresh {
        let _ = tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, shared.client.inlay_hint_refresh()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: u32, ok: bool, status: Option<u16>, ms: u64) -> TraceCall {
        TraceCall {
            id,
            tool: "t.a".into(),
            arguments: json!({}),
            ok,
            status,
            response: Value::Null,
            error: None,
            duration_ms: ms,
            line: Some(1),
            replayed: false,
        }
    }

    #[test]
    fn hint_labels() {
        assert_eq!(hint_label(&[&call(1, true, Some(200), 84)]), "✓ 200 · 84 ms");
        assert_eq!(hint_label(&[&call(1, false, Some(404), 3)]), "✗ 404");
        assert_eq!(hint_label(&[&call(1, true, None, 5)]), "✓ 5 ms");
        assert_eq!(hint_label(&[&call(1, false, None, 5)]), "✗ failed");
        let (a, b) = (call(1, false, Some(500), 1), call(2, true, Some(200), 9));
        assert_eq!(hint_label(&[&a, &b]), "✓ 200 · 9 ms ×2 (1 failed)");
    }

    #[test]
    fn marks_follow_edits_elsewhere_and_go_with_edits_of_their_line() {
        let text = "a = 1\nb = x[\"k\"]\nc = 3\n";
        let index = LineIndex::new(text);
        let at = text.find("x[").unwrap();
        let d = Diagnostic::error("p.py", ByteRange::new(at, at + 6), "runtime-error", "KeyError: 'k'");
        let marks = RunMarks { version: 1, hints: vec![], diagnostics: vec![mark(d, text, &index)] };

        // An edit on the first line moves it.
        let mut moved = marks.clone();
        moved.edited(text, ByteRange::new(4, 5), "1\n\n");
        assert_eq!(moved.diagnostics[0].line_number, 3);
        assert_eq!(moved.diagnostics[0].diagnostic.range, ByteRange::new(at + 2, at + 8));
        // An edit after it leaves it.
        let mut kept = marks.clone();
        kept.edited(text, ByteRange::new(text.len() - 2, text.len() - 1), "4");
        assert_eq!(kept.diagnostics[0].diagnostic.range, ByteRange::new(at, at + 6));
        // An edit of its line removes it.
        let mut gone = marks.clone();
        gone.edited(text, ByteRange::new(at + 3, at + 4), "j");
        assert!(gone.diagnostics.is_empty());

        // A full replacement keeps it only where its line is unchanged.
        let mut same = marks.clone();
        same.replaced("a = 2\nb = x[\"k\"]\n");
        assert_eq!(same.diagnostics.len(), 1);
        let mut changed = marks;
        changed.replaced("a = 2\nb = y\n");
        assert!(changed.diagnostics.is_empty());
    }
}
