//! The language server: the router ([`Backend`], a `tower_lsp_server::LanguageServer`) over the
//! session ([`session`]), one handler per request ([`handlers`]) and the core ↔ LSP conversions
//! ([`convert`]). Only this module speaks LSP types.
//!
//! Concurrency (DESIGN.md, "LSP conventions"): notification handlers change the [`Session`] under a
//! `std::sync::Mutex` before their first `.await` and never hold it across one; requests copy out a
//! [`Snapshot`] and run a plain handler function on it under `catch_unwind`, so a panic in the core
//! answers an internal error instead of taking the server down.

pub mod convert;
pub mod generate;
pub mod handlers;
pub mod probe;
pub mod run;
pub mod session;

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::lsp_types::{self as lsp, notification::Notification};
use tower_lsp_server::{Client, LanguageServer, LspService, Server, UriExt};

use crate::config::Config;
use crate::graph::workspace::WorkspaceGraph;
use crate::toolset::{Catalog, workspace};
use handlers::execute_command::{COMMANDS, Outcome};
use session::{ClientSupport, Document, Session, Snapshot, World};

/// How long the server waits for the client to answer one of its requests
/// (`workspace/configuration`, `client/registerCapability`) before going on without it.
const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Completion trigger characters: attribute access, string quotes (keys, enum values, URLs),
/// argument lists, subscripts, URL paths and keyword values.
pub const COMPLETION_TRIGGERS: [&str; 8] = [".", "\"", "'", "(", ",", "[", "/", "="];

/// `chainsmith/status`: the catalog's size after every (re)load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub toolsets: usize,
    pub tools: usize,
    /// Tools whose response schema is unknown (probing would fill it).
    pub unprobed: usize,
}

impl Status {
    pub fn of(catalog: &Catalog) -> Self {
        Status { toolsets: catalog.toolsets.len(), tools: catalog.tool_count(), unprobed: catalog.unprobed_count() }
    }
}

pub enum StatusNotification {}

impl Notification for StatusNotification {
    type Params = Status;
    const METHOD: &'static str = "chainsmith/status";
}

/// Runs the server over stdin/stdout until `exit`. Exit code 0 after `shutdown` then `exit`, 1 when
/// the client went away (or sent `exit`) without `shutdown`.
pub fn run_stdio() -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let clean = runtime.block_on(serve(tokio::io::stdin(), tokio::io::stdout()));
    // Reading stdin blocks a runtime thread that only returns when the client closes the pipe;
    // do not wait for it once `exit` has been handled.
    runtime.shutdown_background();
    Ok(if clean { 0 } else { 1 })
}

/// Serves one client over a pair of byte streams (stdio, or in-memory pipes in tests). Returns
/// whether `shutdown` was received before the stream ended or `exit` arrived.
pub async fn serve<I, O>(input: I, output: O) -> bool
where
    I: AsyncRead + Unpin,
    O: AsyncWrite,
{
    let shut_down = Arc::new(AtomicBool::new(false));
    let flag = shut_down.clone();
    let (service, socket) = LspService::build(move |client| Backend::new(client, flag))
        .custom_method("window/workDoneProgress/cancel", Backend::work_done_progress_cancel)
        .finish();
    Server::new(input, output, socket).serve(service).await;
    shut_down.load(Ordering::SeqCst)
}

pub struct Backend {
    client: Client,
    session: Arc<Mutex<Session>>,
    /// Serialises publishing so a stale result never overtakes a fresh one.
    publishing: Arc<tokio::sync::Mutex<()>>,
    /// Programs running in the background (`chainsmith.run`).
    runs: Arc<run::Runs>,
    shut_down: Arc<AtomicBool>,
}

impl Backend {
    pub fn new(client: Client, shut_down: Arc<AtomicBool>) -> Self {
        Backend {
            client,
            session: Arc::new(Mutex::new(Session::default())),
            publishing: Arc::new(tokio::sync::Mutex::new(())),
            runs: Arc::new(run::Runs::default()),
            shut_down,
        }
    }

    /// `window/workDoneProgress/cancel`: stops the run that shows this progress.
    async fn work_done_progress_cancel(&self, params: lsp::WorkDoneProgressCancelParams) {
        if !probe::cancel(&params.token) {
            self.runs.cancel(&params.token);
        }
    }

    fn run_shared(&self) -> run::Shared {
        run::Shared {
            client: self.client.clone(),
            session: self.session.clone(),
            publishing: self.publishing.clone(),
            runs: self.runs.clone(),
        }
    }

    /// The session, even after a panic elsewhere poisoned the lock (every change to it is
    /// applied whole or not at all).
    fn session(&self) -> MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A request on an open program: `None` when the document is not open.
    fn on_document<R>(
        &self,
        method: &str,
        uri: &lsp::Uri,
        handler: impl FnOnce(Snapshot) -> Option<R>,
    ) -> Result<Option<R>> {
        let snapshot = self.session().snapshot(uri);
        match snapshot {
            Some(snap) => guarded(method, || handler(snap)),
            None => Ok(None),
        }
    }

    fn on_world<R>(&self, method: &str, handler: impl FnOnce(World) -> R) -> Result<R> {
        let world = self.session().world();
        guarded(method, || handler(world))
    }

    /// Re-reads chainsmith.toml (with the editor settings) and every protocol file.
    /// Reloads configuration, catalog and ToolNet's inputs. Loading reads protocol files, starts
    /// MCP servers and analyses the workspace's programs: it runs on a blocking thread, and the
    /// session is only locked to install the result.
    async fn reload(&self) {
        let (root, settings) = {
            let s = self.session();
            (s.root.clone(), s.settings())
        };
        let loaded = tokio::task::spawn_blocking(move || {
            guarded("reload", || {
                let (config, catalog) = load(root.as_deref(), settings.as_ref());
                let toolnet = WorkspaceGraph::load(&config, &catalog);
                (config, catalog, toolnet)
            })
        })
        .await;
        match loaded {
            Ok(Ok((config, catalog, toolnet))) => {
                tracing::info!(
                    "loaded {} toolsets, {} tools, {} workspace diagnostics",
                    catalog.toolsets.len(),
                    catalog.tool_count(),
                    catalog.diagnostics.len()
                );
                self.session().install(config, catalog, toolnet);
            }
            Ok(Err(e)) => tracing::error!("reloading the workspace failed: {}", e.message),
            Err(e) => tracing::error!("reloading the workspace failed: {e}"),
        }
    }

    async fn refresh_toolnet(&self) {
        refresh_toolnet(&self.session).await;
    }

    /// After a (re)load: `chainsmith/status`, diagnostics of protocol files (clearing files whose
    /// problems are gone) and of every open program.
    async fn publish_everything(&self) {
        let (world, snapshots) = {
            let s = self.session();
            (s.world(), s.snapshots())
        };
        let files =
            guarded("publish workspace diagnostics", || handlers::diagnostics::workspace(&world)).unwrap_or_default();
        let programs: Vec<_> = snapshots
            .iter()
            .map(|snap| {
                let diagnostics =
                    guarded("publish diagnostics", || handlers::diagnostics::program(snap)).unwrap_or_default();
                (snap.uri.clone(), snap.version, diagnostics)
            })
            .collect();

        let _turn = self.publishing.lock().await;
        // Files that had problems and no longer do, against what was actually sent last.
        let cleared = {
            let mut s = self.session();
            if s.generation != world.generation {
                return; // a newer load publishes its own
            }
            let now: HashMap<String, lsp::Uri> =
                files.iter().map(|(uri, _)| (uri.as_str().to_string(), uri.clone())).collect();
            let mut cleared: Vec<lsp::Uri> = s
                .published_workspace
                .iter()
                .filter(|(key, _)| !now.contains_key(*key))
                .map(|(_, uri)| uri.clone())
                .collect();
            cleared.sort();
            s.published_workspace = now;
            cleared
        };
        self.client.send_notification::<StatusNotification>(Status::of(&world.catalog)).await;
        for (uri, diagnostics) in files {
            self.client.publish_diagnostics(uri, diagnostics, None).await;
        }
        for uri in cleared {
            self.client.publish_diagnostics(uri, Vec::new(), None).await;
        }
        for (uri, version, diagnostics) in programs {
            if self.is_current(&uri, version, world.generation) {
                self.client.publish_diagnostics(uri, diagnostics, Some(version)).await;
            }
        }
    }

    /// Re-analyses one program and publishes its diagnostics unless a newer edit or load has
    /// superseded the snapshot by the time it is sent.
    async fn publish_program(&self, snap: Snapshot) {
        let diagnostics = guarded("publish diagnostics", || handlers::diagnostics::program(&snap)).unwrap_or_default();
        let _turn = self.publishing.lock().await;
        if self.is_current(&snap.uri, snap.version, snap.world.generation) {
            self.client.publish_diagnostics(snap.uri, diagnostics, Some(snap.version)).await;
        }
    }

    fn is_current(&self, uri: &lsp::Uri, version: i32, generation: u64) -> bool {
        let s = self.session();
        s.generation == generation && s.document(uri).is_some_and(|d| d.version == version)
    }

    /// The client's `chainsmith` settings section, or `None` when it has none or does not answer.
    async fn pull_settings(&self) -> Option<Value> {
        let scope = {
            let s = self.session();
            s.root.as_deref().and_then(lsp::Uri::from_file_path)
        };
        let items = vec![lsp::ConfigurationItem { scope_uri: scope, section: Some("chainsmith".into()) }];
        match tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, self.client.configuration(items)).await {
            Ok(Ok(values)) => values.into_iter().next().and_then(settings_object),
            Ok(Err(e)) => {
                tracing::warn!("workspace/configuration failed: {e}");
                None
            }
            Err(_) => {
                tracing::warn!("the client did not answer workspace/configuration in time");
                None
            }
        }
    }

    async fn register_watchers(&self) {
        let watchers = ["**/chainsmith.toml", "**/*.json", "**/*.yaml", "**/*.yml"]
            .into_iter()
            .map(|glob| lsp::FileSystemWatcher { glob_pattern: lsp::GlobPattern::String(glob.into()), kind: None })
            .collect();
        let options = lsp::DidChangeWatchedFilesRegistrationOptions { watchers };
        let registration = lsp::Registration {
            id: "chainsmith-watch-protocols".into(),
            method: "workspace/didChangeWatchedFiles".into(),
            register_options: serde_json::to_value(options).ok(),
        };
        match tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, self.client.register_capability(vec![registration])).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("registering file watchers failed: {e}"),
            Err(_) => tracing::warn!("the client did not answer client/registerCapability in time"),
        }
    }
}

/// Runs `f`, turning a panic into an `InternalError` answer (and a log line on stderr).
/// Re-reads ToolNet's inputs (a program was saved, a run wrote its trace) on a blocking thread —
/// it analyses the workspace's programs — and installs them.
pub(crate) async fn refresh_toolnet(session: &Arc<Mutex<Session>>) {
    let (config, catalog) = {
        let s = session.lock().unwrap_or_else(PoisonError::into_inner);
        (s.config.clone(), s.catalog.clone())
    };
    match tokio::task::spawn_blocking(move || guarded("toolnet", || WorkspaceGraph::load(&config, &catalog))).await {
        Ok(Ok(toolnet)) => session.lock().unwrap_or_else(PoisonError::into_inner).set_toolnet(toolnet),
        Ok(Err(e)) => tracing::error!("reading ToolNet's inputs failed: {}", e.message),
        Err(e) => tracing::error!("reading ToolNet's inputs failed: {e}"),
    }
}

fn guarded<R>(method: &str, f: impl FnOnce() -> R) -> Result<R> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let reason = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        tracing::error!("{method} panicked: {reason}");
        Error {
            code: ErrorCode::InternalError,
            message: format!("chainsmith: {method} failed: {reason}").into(),
            data: None,
        }
    })
}

/// The configuration and catalog of a workspace; nothing without a root.
fn load(root: Option<&Path>, settings: Option<&Value>) -> (Config, Catalog) {
    match root {
        Some(root) => {
            let config = Config::load(root, settings);
            let catalog = workspace::load(&config);
            (config, catalog)
        }
        None => (Config::default(), Catalog::default()),
    }
}

/// Editor settings as `Config::load` overrides: an object with chainsmith.toml's keys, also
/// accepted wrapped in `{"chainsmith": {...}}`.
fn settings_object(value: Value) -> Option<Value> {
    match value {
        Value::Object(mut map) => match map.remove("chainsmith") {
            Some(inner @ Value::Object(_)) => Some(inner),
            Some(_) | None if map.is_empty() => None,
            Some(_) | None => Some(Value::Object(map)),
        },
        _ => None,
    }
}

/// The workspace root the client announced: its first workspace folder, else `rootUri`, else
/// `rootPath`.
#[allow(deprecated)]
fn workspace_root(params: &lsp::InitializeParams) -> Option<PathBuf> {
    let folder = params.workspace_folders.as_ref().and_then(|f| f.first()).map(|f| &f.uri);
    if let Some(uri) = folder.or(params.root_uri.as_ref())
        && let Some(path) = uri.to_file_path()
    {
        return Some(path.into_owned());
    }
    params.root_path.as_ref().filter(|p| !p.is_empty()).map(PathBuf::from)
}

fn is_program(uri: &lsp::Uri, language_id: &str) -> bool {
    language_id.eq_ignore_ascii_case("python") || uri.path().as_str().ends_with(".py")
}

fn capabilities(encoding: crate::text::Encoding) -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        position_encoding: Some(convert::encoding_kind(encoding)),
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(lsp::TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
            save: Some(lsp::TextDocumentSyncSaveOptions::SaveOptions(lsp::SaveOptions { include_text: Some(false) })),
            ..Default::default()
        })),
        completion_provider: Some(lsp::CompletionOptions {
            resolve_provider: Some(true),
            trigger_characters: Some(COMPLETION_TRIGGERS.iter().map(|c| c.to_string()).collect()),
            ..Default::default()
        }),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        signature_help_provider: Some(lsp::SignatureHelpOptions {
            trigger_characters: Some(vec!["(".into(), ",".into()]),
            retrigger_characters: None,
            work_done_progress_options: Default::default(),
        }),
        definition_provider: Some(lsp::OneOf::Left(true)),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        workspace_symbol_provider: Some(lsp::OneOf::Left(true)),
        code_lens_provider: Some(lsp::CodeLensOptions { resolve_provider: Some(false) }),
        inlay_hint_provider: Some(lsp::OneOf::Left(true)),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Options(lsp::CodeActionOptions {
            code_action_kinds: Some(vec![lsp::CodeActionKind::QUICKFIX, lsp::CodeActionKind::REFACTOR_REWRITE]),
            resolve_provider: Some(false),
            work_done_progress_options: Default::default(),
        })),
        execute_command_provider: Some(lsp::ExecuteCommandOptions {
            commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
            work_done_progress_options: Default::default(),
        }),
        ..Default::default()
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: lsp::InitializeParams) -> Result<lsp::InitializeResult> {
        let encoding = convert::negotiate_encoding(&params.capabilities);
        let root = workspace_root(&params);
        tracing::info!("initialize: root {:?}, positions in {:?}", root, encoding);
        {
            let mut s = self.session();
            s.encoding = encoding;
            s.support = ClientSupport::from_capabilities(&params.capabilities);
            s.root = root;
            s.init_settings = params.initialization_options.clone().and_then(settings_object);
        }
        self.reload().await;
        Ok(lsp::InitializeResult {
            capabilities: capabilities(encoding),
            server_info: Some(lsp::ServerInfo {
                name: "chainsmith".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
        })
    }

    async fn initialized(&self, _: lsp::InitializedParams) {
        let support = self.session().support;
        self.publish_everything().await;
        if support.watch_files {
            self.register_watchers().await;
        }
        if support.configuration {
            let pulled = self.pull_settings().await;
            let changed = {
                let mut s = self.session();
                let changed = s.pulled_settings != pulled;
                s.pulled_settings = pulled;
                changed
            };
            if changed {
                self.reload().await;
                self.publish_everything().await;
            }
        }
    }

    async fn shutdown(&self) -> Result<()> {
        self.runs.cancel_all();
        self.runs.mcp.clear();
        self.shut_down.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn did_open(&self, params: lsp::DidOpenTextDocumentParams) {
        let doc = params.text_document;
        if !is_program(&doc.uri, &doc.language_id) {
            return;
        }
        let path = session::document_path(&doc.uri);
        let opened = guarded("didOpen", || Document::new(doc.uri.clone(), path.clone(), doc.version, doc.text));
        let Ok(document) = opened else { return };
        let needs_root = {
            let mut s = self.session();
            s.open(document);
            s.root.is_none()
        };
        // Opened without a workspace folder: the program's own workspace, if it is in one.
        if needs_root && let Some(root) = session::discover_root(&path) {
            tracing::info!("no workspace folder: using {}", root.display());
            self.session().root = Some(root);
            self.reload().await;
            self.publish_everything().await;
            return;
        }
        let snapshot = self.session().snapshot(&doc.uri);
        if let Some(snap) = snapshot {
            self.publish_program(snap).await;
        }
    }

    async fn did_change(&self, params: lsp::DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let snapshot = {
            let mut s = self.session();
            let encoding = s.encoding;
            let Some(doc) = s.document_mut(&uri) else { return };
            let version = params.text_document.version;
            let applied = guarded("didChange", || doc.apply_changes(params.content_changes, encoding, version));
            if applied.is_err() {
                // The text may now differ from the client's: better no answers than wrong ones.
                s.close(&uri);
                None
            } else {
                s.snapshot(&uri)
            }
        };
        match snapshot {
            Some(snap) => self.publish_program(snap).await,
            None => self.client.publish_diagnostics(uri, Vec::new(), None).await,
        }
    }

    async fn did_save(&self, params: lsp::DidSaveTextDocumentParams) {
        let path = session::document_path(&params.text_document.uri);
        let affects_workspace = self.session().is_workspace_file(&path);
        if affects_workspace {
            self.reload().await;
            self.publish_everything().await;
        } else if path.extension().is_some_and(|e| e == "py") {
            // A saved program is a ToolNet trajectory (its calls in program order).
            self.refresh_toolnet().await;
        }
    }

    async fn did_close(&self, params: lsp::DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        let was_open = self.session().close(&uri).is_some();
        if was_open {
            self.client.publish_diagnostics(uri, Vec::new(), None).await;
        }
    }

    async fn did_change_watched_files(&self, params: lsp::DidChangeWatchedFilesParams) {
        let relevant = {
            let s = self.session();
            params.changes.iter().any(|change| s.is_workspace_file(&session::document_path(&change.uri)))
        };
        if relevant {
            self.reload().await;
            self.publish_everything().await;
        }
    }

    async fn did_change_configuration(&self, params: lsp::DidChangeConfigurationParams) {
        let support = self.session().support;
        let pulled = if support.configuration {
            self.pull_settings().await
        } else {
            match settings_object(params.settings) {
                Some(settings) => Some(settings),
                None => return,
            }
        };
        self.session().pulled_settings = pulled;
        self.reload().await;
        self.publish_everything().await;
    }

    async fn completion(&self, params: lsp::CompletionParams) -> Result<Option<lsp::CompletionResponse>> {
        let uri = params.text_document_position.text_document.uri.clone();
        self.on_document("textDocument/completion", &uri, |snap| handlers::completion::completion(&snap, params))
    }

    async fn completion_resolve(&self, params: lsp::CompletionItem) -> Result<lsp::CompletionItem> {
        let fallback = params.clone();
        self.on_world("completionItem/resolve", |world| {
            handlers::completion_resolve::completion_resolve(&world, params)
        })
        .or(Ok(fallback))
    }

    async fn hover(&self, params: lsp::HoverParams) -> Result<Option<lsp::Hover>> {
        let uri = params.text_document_position_params.text_document.uri.clone();
        self.on_document("textDocument/hover", &uri, |snap| handlers::hover::hover(&snap, params))
    }

    async fn signature_help(&self, params: lsp::SignatureHelpParams) -> Result<Option<lsp::SignatureHelp>> {
        let uri = params.text_document_position_params.text_document.uri.clone();
        self.on_document("textDocument/signatureHelp", &uri, |snap| {
            handlers::signature_help::signature_help(&snap, params)
        })
    }

    async fn goto_definition(&self, params: lsp::GotoDefinitionParams) -> Result<Option<lsp::GotoDefinitionResponse>> {
        let uri = params.text_document_position_params.text_document.uri.clone();
        self.on_document("textDocument/definition", &uri, |snap| handlers::definition::definition(&snap, params))
    }

    async fn document_symbol(&self, params: lsp::DocumentSymbolParams) -> Result<Option<lsp::DocumentSymbolResponse>> {
        let uri = params.text_document.uri.clone();
        self.on_document("textDocument/documentSymbol", &uri, |snap| {
            handlers::document_symbol::document_symbol(&snap, params)
        })
    }

    async fn symbol(
        &self,
        params: lsp::WorkspaceSymbolParams,
    ) -> Result<Option<lsp::OneOf<Vec<lsp::SymbolInformation>, Vec<lsp::WorkspaceSymbol>>>> {
        self.on_world("workspace/symbol", |world| handlers::workspace_symbol::workspace_symbol(&world, params))
    }

    async fn code_action(&self, params: lsp::CodeActionParams) -> Result<Option<lsp::CodeActionResponse>> {
        let uri = params.text_document.uri.clone();
        let (snapshot, world) = {
            let s = self.session();
            (s.snapshot(&uri), s.world())
        };
        guarded("textDocument/codeAction", || match snapshot {
            Some(snap) => handlers::code_action::code_action(&snap, &params),
            None => handlers::code_action::protocol_code_action(&world, &session::document_path(&uri), &params),
        })
    }

    async fn code_lens(&self, params: lsp::CodeLensParams) -> Result<Option<Vec<lsp::CodeLens>>> {
        let uri = params.text_document.uri.clone();
        self.on_document("textDocument/codeLens", &uri, |snap| handlers::code_lens::code_lens(&snap, params))
    }

    async fn inlay_hint(&self, params: lsp::InlayHintParams) -> Result<Option<Vec<lsp::InlayHint>>> {
        let uri = params.text_document.uri.clone();
        self.on_document("textDocument/inlayHint", &uri, |snap| handlers::inlay_hint::inlay_hint(&snap, params))
    }

    async fn execute_command(&self, params: lsp::ExecuteCommandParams) -> Result<Option<Value>> {
        match handlers::execute_command::execute_command(&params) {
            Outcome::Run => run::execute(self.run_shared(), params).await,
            Outcome::Generate => generate::execute(self.run_shared(), params, false).await,
            Outcome::Fix => generate::execute(self.run_shared(), params, true).await,
            Outcome::Probe { all } => probe::execute(self.run_shared(), params, all).await,
            Outcome::Graph { from } => {
                let (toolnet, catalog) = {
                    let s = self.session();
                    (s.toolnet.clone(), s.catalog.clone())
                };
                let rendered = tokio::task::spawn_blocking(move || {
                    let text = crate::graph::render::render(&toolnet, &catalog, false, from.as_deref(), 3);
                    let dot = crate::graph::render::render(&toolnet, &catalog, true, from.as_deref(), 3);
                    (text, dot)
                })
                .await;
                match rendered {
                    Ok((Ok(text), Ok(dot))) => {
                        self.client.log_message(lsp::MessageType::INFO, format!("chainsmith: ToolNet\n{text}")).await;
                        Ok(Some(serde_json::json!({"text": text, "dot": dot})))
                    }
                    Ok((Err(e), _)) | Ok((_, Err(e))) => Err(Error::invalid_params(format!("{e:#}"))),
                    Err(e) => Err(Error {
                        code: ErrorCode::InternalError,
                        message: format!("chainsmith: the graph failed: {e}").into(),
                        data: None,
                    }),
                }
            }
            Outcome::Unavailable { message } => {
                self.client.show_message(lsp::MessageType::WARNING, message).await;
                Ok(None)
            }
            Outcome::Unknown { message } => Err(Error::invalid_params(message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_accept_plain_and_wrapped_objects() {
        assert_eq!(settings_object(json!({"llm": {"model": "m"}})), Some(json!({"llm": {"model": "m"}})));
        assert_eq!(settings_object(json!({"chainsmith": {"llm": {}}})), Some(json!({"llm": {}})));
        assert_eq!(settings_object(json!({})), None);
        assert_eq!(settings_object(json!(null)), None);
        assert_eq!(settings_object(json!([1])), None);
    }

    #[test]
    fn panics_become_internal_errors() {
        let result: Result<()> = guarded("test", || panic!("boom"));
        let error = result.unwrap_err();
        assert_eq!(error.code, ErrorCode::InternalError);
        assert!(error.message.contains("boom"));
    }
}
