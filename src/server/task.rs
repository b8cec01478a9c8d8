//! The server's long tasks — run, generate, fix, probe — in one place: one registry keyed by
//! document and kind (one task of a kind per document at a time; probing is workspace-wide), one
//! progress type that always ends, and one way to spawn them.
//!
//! Three guarantees hold whatever the task does, panics included:
//! - its registry entry goes when its [`Task`] is dropped, so a document is never left "already
//!   running";
//! - its work-done progress ends when its [`Progress`] is dropped, so no spinner turns forever;
//! - `window/workDoneProgress/cancel` for its token, and `shutdown`, reach its [`Cancel`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tower_lsp_server::Client;
use tower_lsp_server::lsp_types::{self as lsp, notification, request};

use crate::runtime::Cancel;
use crate::server::command_names as names;

/// How long the server waits for the client to answer one of its requests
/// (`window/workDoneProgress/create`, `workspace/configuration`, `workspace/applyEdit`, …) before
/// going on without it.
pub const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskKind {
    Run,
    Generate,
    Fix,
    Probe,
}

impl TaskKind {
    pub fn command(self) -> &'static str {
        match self {
            TaskKind::Run => names::RUN,
            TaskKind::Generate => names::GENERATE,
            TaskKind::Fix => names::FIX,
            TaskKind::Probe => names::PROBE,
        }
    }
}

/// What a task is about: a document (by URI) or, for probing, the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskKey {
    pub document: Option<String>,
    pub kind: TaskKind,
}

impl TaskKey {
    pub fn document(uri: &lsp::Uri, kind: TaskKind) -> TaskKey {
        TaskKey { document: Some(uri.as_str().to_string()), kind }
    }

    pub fn workspace(kind: TaskKind) -> TaskKey {
        TaskKey { document: None, kind }
    }
}

struct Entry {
    id: u64,
    token: Option<String>,
    cancel: Cancel,
}

/// Why a task could not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    AlreadyRunning,
    ShuttingDown,
}

/// The registry of running tasks.
#[derive(Default)]
pub struct Tasks {
    active: Mutex<HashMap<TaskKey, Entry>>,
    next: AtomicU64,
    shut_down: AtomicBool,
    /// Client tokens cancelled before a task showed progress on them: the editor shows its Cancel
    /// as soon as it sends the command, so a quick click can overtake the task's start.
    cancelled_early: Mutex<std::collections::VecDeque<String>>,
}

/// How many early cancels are remembered (a client that cancels tokens it never used cannot grow
/// the list).
const EARLY_CANCELS_KEPT: usize = 64;

impl Tasks {
    fn active(&self) -> MutexGuard<'_, HashMap<TaskKey, Entry>> {
        self.active.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a task under `key`, unless one runs there already or the server is shutting
    /// down. The entry lives as long as the returned [`Task`].
    pub fn begin(self: &Arc<Self>, key: TaskKey) -> Result<Task, Refused> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(Refused::ShuttingDown);
        }
        let mut active = self.active();
        if active.contains_key(&key) {
            return Err(Refused::AlreadyRunning);
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let cancel = Cancel::new();
        active.insert(key.clone(), Entry { id, token: None, cancel: cancel.clone() });
        Ok(Task { tasks: self.clone(), key, id, cancel })
    }

    /// `window/workDoneProgress/cancel`: cancels the task showing that progress; whether one did.
    pub fn cancel_token(&self, token: &lsp::ProgressToken) -> bool {
        let token = token_text(token);
        let mut found = false;
        // Held while the token is remembered: a task taking it meanwhile would miss the cancel.
        let active = self.active();
        for entry in active.values() {
            if entry.token.as_deref() == Some(token.as_str()) {
                entry.cancel.cancel();
                found = true;
            }
        }
        if !found {
            let mut early = self.cancelled_early.lock().unwrap_or_else(PoisonError::into_inner);
            if !early.contains(&token) {
                early.push_back(token);
            }
            while early.len() > EARLY_CANCELS_KEPT {
                early.pop_front();
            }
        }
        found
    }

    /// Whether `token` was cancelled before any task took it (and forgets that it was).
    fn take_early_cancel(&self, token: &str) -> bool {
        let mut early = self.cancelled_early.lock().unwrap_or_else(PoisonError::into_inner);
        let at = early.iter().position(|t| t == token);
        at.map(|i| early.remove(i)).is_some()
    }

    /// Cancels the task under `key`, if one runs.
    pub fn cancel(&self, key: &TaskKey) -> bool {
        self.active().get(key).map(|e| e.cancel.cancel()).is_some()
    }

    /// `shutdown`: cancels every task and refuses new ones.
    pub fn shut_down(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
        for entry in self.active().values() {
            entry.cancel.cancel();
        }
    }

    /// Whether `shutdown` came: the editor is closing, and what ends now needs no word to the user.
    pub fn shutting_down(&self) -> bool {
        self.shut_down.load(Ordering::SeqCst)
    }

    pub fn is_running(&self, key: &TaskKey) -> bool {
        self.active().contains_key(key)
    }

    pub fn count(&self) -> usize {
        self.active().len()
    }

    fn new_token(&self, kind: TaskKind) -> lsp::ProgressToken {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let kind = format!("{kind:?}").to_ascii_lowercase();
        lsp::NumberOrString::String(format!("chainsmith-{kind}-{n}"))
    }
}

/// A registered task: its cancel flag, and its registry entry until it is dropped.
pub struct Task {
    tasks: Arc<Tasks>,
    key: TaskKey,
    id: u64,
    pub cancel: Cancel,
}

impl Task {
    pub fn key(&self) -> &TaskKey {
        &self.key
    }

    /// Starts the task's work-done progress (`title`, and `message` as its first status): on the
    /// client's token when the command came with one, else on one the server creates when the
    /// client supports that, else none (the task still runs, and `shutdown` still cancels it).
    /// The token cancels this task.
    pub async fn progress(
        &self,
        client: &Client,
        client_token: Option<lsp::ProgressToken>,
        server_initiated: bool,
        title: String,
        message: Option<&str>,
    ) -> Progress {
        let token = match client_token {
            Some(token) => Some(token),
            None if server_initiated => {
                let token = self.tasks.new_token(self.key.kind);
                let params = lsp::WorkDoneProgressCreateParams { token: token.clone() };
                let create = client.send_request::<request::WorkDoneProgressCreate>(params);
                match tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, create).await {
                    Ok(Ok(())) => Some(token),
                    _ => None,
                }
            }
            None => None,
        };
        if let Some(token) = &token {
            // Under the registry's lock, as `cancel_token` remembers early cancels under it.
            let mut active = self.tasks.active();
            if let Some(entry) = active.get_mut(&self.key).filter(|e| e.id == self.id) {
                entry.token = Some(token_text(token));
            }
            if self.tasks.take_early_cancel(&token_text(token)) {
                self.cancel.cancel();
            }
        }
        let progress = Progress { client: client.clone(), token, ended: false };
        progress
            .send(lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
                title,
                cancellable: Some(true),
                message: message.map(str::to_string),
                percentage: None,
            }))
            .await;
        progress
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        let mut active = self.tasks.active();
        if active.get(&self.key).is_some_and(|e| e.id == self.id) {
            active.remove(&self.key);
        }
    }
}

/// A task's work-done progress. Ending it is explicit ([`Progress::end`]); a progress dropped
/// without an end (an early return, a panic) ends with "stopped".
pub struct Progress {
    client: Client,
    token: Option<lsp::ProgressToken>,
    ended: bool,
}

impl Progress {
    async fn send(&self, value: lsp::WorkDoneProgress) {
        if let Some(token) = &self.token {
            let params = lsp::ProgressParams { token: token.clone(), value: lsp::ProgressParamsValue::WorkDone(value) };
            self.client.send_notification::<notification::Progress>(params).await;
        }
    }

    pub async fn report(&self, message: impl Into<String>) {
        let report =
            lsp::WorkDoneProgressReport { cancellable: Some(true), message: Some(message.into()), percentage: None };
        self.send(lsp::WorkDoneProgress::Report(report)).await;
    }

    pub async fn end(mut self, message: impl Into<String>) {
        self.ended = true;
        let end = lsp::WorkDoneProgressEnd { message: Some(message.into()) };
        self.send(lsp::WorkDoneProgress::End(end)).await;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let (Some(token), Ok(runtime)) = (self.token.take(), tokio::runtime::Handle::try_current()) else { return };
        let client = self.client.clone();
        runtime.spawn(async move {
            let end = lsp::WorkDoneProgressEnd { message: Some("stopped".into()) };
            let params = lsp::ProgressParams {
                token,
                value: lsp::ProgressParamsValue::WorkDone(lsp::WorkDoneProgress::End(end)),
            };
            client.send_notification::<notification::Progress>(params).await;
        });
    }
}

/// How a task shows itself: its work-done progress and what the user is told when another task of
/// its kind is already at work on the same thing.
pub struct Showing {
    /// The progress token the command came with, if any.
    pub client_token: Option<lsp::ProgressToken>,
    /// Whether the client lets the server create progress tokens.
    pub server_initiated: bool,
    pub title: String,
    pub first_message: Option<&'static str>,
    pub already_running: String,
}

/// Begins a task under `key` with its progress, the one way every long command starts: `None`
/// when it cannot start (another task of its kind on the same thing — the user is told — or
/// shutdown).
pub async fn begin(tasks: &Arc<Tasks>, client: &Client, key: TaskKey, showing: Showing) -> Option<(Task, Progress)> {
    let task = match tasks.begin(key) {
        Ok(task) => task,
        Err(Refused::AlreadyRunning) => {
            client.show_message(lsp::MessageType::INFO, showing.already_running).await;
            return None;
        }
        Err(Refused::ShuttingDown) => return None,
    };
    let progress = task
        .progress(client, showing.client_token, showing.server_initiated, showing.title, showing.first_message)
        .await;
    Some((task, progress))
}

/// Spawns a background task whose panic is logged and shown to the user instead of vanishing.
/// Whatever the future owns (its [`Task`], its [`Progress`]) is dropped either way, which ends its
/// progress and frees its document.
pub fn spawn_guarded<F>(client: &Client, what: &'static str, future: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let handle = tokio::spawn(future);
    let client = client.clone();
    tokio::spawn(async move {
        if let Err(e) = handle.await
            && e.is_panic()
        {
            let reason = crate::server::guard::panic_reason(e.into_panic().as_ref());
            tracing::error!("{what} panicked: {reason}");
            client.show_message(lsp::MessageType::ERROR, format!("chainsmith: {what} failed: {reason}")).await;
        }
    });
}

pub fn token_text(token: &lsp::ProgressToken) -> String {
    match token {
        lsp::NumberOrString::Number(n) => n.to_string(),
        lsp::NumberOrString::String(s) => s.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_task_per_document_and_kind_until_dropped() {
        let tasks = Arc::new(Tasks::default());
        let uri: lsp::Uri = "file:///p.py".parse().unwrap();
        let run = tasks.begin(TaskKey::document(&uri, TaskKind::Run)).unwrap();
        assert_eq!(tasks.begin(TaskKey::document(&uri, TaskKind::Run)).err(), Some(Refused::AlreadyRunning));
        let fix = tasks.begin(TaskKey::document(&uri, TaskKind::Fix)).unwrap();
        assert_eq!(tasks.count(), 2);
        drop(run);
        assert!(!tasks.is_running(&TaskKey::document(&uri, TaskKind::Run)));
        assert!(tasks.begin(TaskKey::document(&uri, TaskKind::Run)).is_ok());
        drop(fix);
        assert_eq!(tasks.count(), 0);
    }

    #[test]
    fn shutdown_cancels_every_task_and_refuses_new_ones() {
        let tasks = Arc::new(Tasks::default());
        let probe = tasks.begin(TaskKey::workspace(TaskKind::Probe)).unwrap();
        tasks.shut_down();
        assert!(probe.cancel.is_cancelled());
        assert_eq!(tasks.begin(TaskKey::workspace(TaskKind::Run)).err(), Some(Refused::ShuttingDown));
    }

    #[test]
    fn a_panicking_task_frees_its_document() {
        let tasks = Arc::new(Tasks::default());
        let key = TaskKey::workspace(TaskKind::Generate);
        let task = tasks.begin(key.clone()).unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _task = task;
            panic!("boom");
        }));
        assert!(result.is_err());
        assert!(!tasks.is_running(&key));
    }
}
