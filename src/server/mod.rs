//! The language server: the router ([`Backend`], a `tower_lsp_server::LanguageServer`) over the
//! session ([`session`]), one handler per request, notification and command ([`handlers`]), the
//! long-task layer ([`task`]) and the core ↔ LSP conversions ([`convert`]). Only this module
//! speaks LSP types.
//!
//! Concurrency (DESIGN.md, "LSP conventions"): notification handlers change the [`session::Session`] under a
//! `std::sync::Mutex` before their first `.await` and never hold it across one; requests copy out a
//! [`session::Snapshot`] and run a plain handler function on it on the blocking pool
//! ([`guard::off_loop`]: the I/O loop keeps reading the next `didChange` and `$/cancelRequest`
//! meanwhile, and a request cancelled before its turn never starts) under `catch_unwind`, so a
//! panic in the core answers an internal error instead of taking the server down. Only
//! `completionItem/resolve`, one tool's rendering, runs on the loop. Every other entry point —
//! `initialize`, notifications, `executeCommand` — is guarded the same way ([`guard::guarded_async`]). Long work (runs,
//! generation, probing) runs as registered tasks ([`task`]) that shutdown cancels.

pub mod command_names;
pub mod context;
pub mod convert;
pub mod diagnostics;
pub mod guard;
pub mod handlers;
pub mod marks;
pub mod session;
pub mod stream;
pub mod task;
pub mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::lsp_types::{self as lsp, notification::Notification};
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

use crate::toolset::Catalog;
use context::Context;
use guard::{guarded, guarded_async, off_loop};
use handlers::notifications as notify;
use session::{Snapshot, World};

/// `chainsmith/status`: the catalog's size after every (re)load, and who watches its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub toolsets: usize,
    pub tools: usize,
    /// Tools whose response schema is unknown (probing would fill it).
    pub unprobed: usize,
    /// Who notices changes on disk to the protocol files and chainsmith.toml.
    #[serde(default)]
    pub file_watching: FileWatching,
}

impl Status {
    pub fn of(catalog: &Catalog, file_watching: FileWatching) -> Self {
        Status {
            toolsets: catalog.toolsets.len(),
            tools: catalog.tool_count(),
            unprobed: catalog.unprobed_count(),
            file_watching,
        }
    }
}

/// Who notices changes on disk: the editor's file watchers (`workspace/didChangeWatchedFiles`),
/// the server's own ([`watch`]), or nobody yet (before `initialized`, or the system refused).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileWatching {
    Editor,
    Server,
    #[default]
    None,
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
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite,
{
    let shut_down = Arc::new(AtomicBool::new(false));
    let flag = shut_down.clone();
    let (service, socket) = LspService::build(move |client| Backend::new(client, flag))
        .custom_method("window/workDoneProgress/cancel", Backend::work_done_progress_cancel)
        .finish();
    // The framework reads and writes only through `stream`, which answers malformed input itself.
    let (to_framework, framework_input) = tokio::io::duplex(1 << 16);
    let (framework_output, from_framework) = tokio::io::duplex(1 << 16);
    let (answers, answered) = tokio::sync::mpsc::channel(stream::ANSWER_QUEUE);
    let filter = tokio::spawn(stream::filter_input(input, to_framework, answers));
    let server = Server::new(framework_input, framework_output, socket).serve(service);
    tokio::join!(server, stream::merge_output(from_framework, output, answered));
    filter.abort();
    shut_down.load(Ordering::SeqCst)
}

pub struct Backend {
    ctx: Context,
    shut_down: Arc<AtomicBool>,
}

impl Backend {
    pub fn new(client: Client, shut_down: Arc<AtomicBool>) -> Self {
        Backend { ctx: Context::new(client), shut_down }
    }

    /// `window/workDoneProgress/cancel`: stops the task that shows this progress.
    async fn work_done_progress_cancel(&self, params: lsp::WorkDoneProgressCancelParams) {
        self.ctx.tasks.cancel_token(&params.token);
    }

    /// A request on an open program, on the blocking pool: `None` when the document is not open.
    async fn on_document<R: Send + 'static>(
        &self,
        method: &'static str,
        uri: &lsp::Uri,
        handler: impl FnOnce(Snapshot) -> Option<R> + Send + 'static,
    ) -> Result<Option<R>> {
        let snapshot = self.ctx.session().snapshot(uri);
        match snapshot {
            Some(snap) => off_loop(method, move || handler(snap)).await,
            None => Ok(None),
        }
    }

    /// A request on the workspace, on the blocking pool.
    async fn on_world<R: Send + 'static>(
        &self,
        method: &'static str,
        handler: impl FnOnce(World) -> R + Send + 'static,
    ) -> Result<R> {
        let world = self.ctx.session().world();
        off_loop(method, move || handler(world)).await
    }

    /// A notification's handler, with a panic logged instead of ending the server.
    async fn notified(&self, method: &'static str, handler: impl Future<Output = ()>) {
        let _ = guarded_async(method, handler).await;
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: lsp::InitializeParams) -> Result<lsp::InitializeResult> {
        guarded_async("initialize", handlers::initialize::initialize(&self.ctx, params)).await?
    }

    async fn initialized(&self, params: lsp::InitializedParams) {
        self.notified("initialized", notify::initialized::initialized(&self.ctx, params)).await
    }

    async fn shutdown(&self) -> Result<()> {
        self.ctx.tasks.shut_down();
        self.ctx.mcp.clear();
        self.shut_down.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn did_open(&self, params: lsp::DidOpenTextDocumentParams) {
        self.notified("textDocument/didOpen", notify::did_open::did_open(&self.ctx, params)).await
    }

    async fn did_change(&self, params: lsp::DidChangeTextDocumentParams) {
        self.notified("textDocument/didChange", notify::did_change::did_change(&self.ctx, params)).await
    }

    async fn did_save(&self, params: lsp::DidSaveTextDocumentParams) {
        self.notified("textDocument/didSave", notify::did_save::did_save(&self.ctx, params)).await
    }

    async fn did_close(&self, params: lsp::DidCloseTextDocumentParams) {
        self.notified("textDocument/didClose", notify::did_close::did_close(&self.ctx, params)).await
    }

    async fn did_change_watched_files(&self, params: lsp::DidChangeWatchedFilesParams) {
        let handler = notify::did_change_watched_files::did_change_watched_files(&self.ctx, params);
        self.notified("workspace/didChangeWatchedFiles", handler).await
    }

    async fn did_change_configuration(&self, params: lsp::DidChangeConfigurationParams) {
        let handler = notify::did_change_configuration::did_change_configuration(&self.ctx, params);
        self.notified("workspace/didChangeConfiguration", handler).await
    }

    async fn completion(&self, params: lsp::CompletionParams) -> Result<Option<lsp::CompletionResponse>> {
        let uri = params.text_document_position.text_document.uri.clone();
        self.on_document("textDocument/completion", &uri, |snap| handlers::completion::completion(&snap, params)).await
    }

    async fn completion_resolve(&self, params: lsp::CompletionItem) -> Result<lsp::CompletionItem> {
        // Cheap (one tool's rendering), so it stays on the I/O loop.
        let fallback = params.clone();
        let world = self.ctx.session().world();
        guarded("completionItem/resolve", || handlers::completion_resolve::completion_resolve(&world, params))
            .or(Ok(fallback))
    }

    async fn hover(&self, params: lsp::HoverParams) -> Result<Option<lsp::Hover>> {
        let uri = params.text_document_position_params.text_document.uri.clone();
        self.on_document("textDocument/hover", &uri, |snap| handlers::hover::hover(&snap, params)).await
    }

    async fn signature_help(&self, params: lsp::SignatureHelpParams) -> Result<Option<lsp::SignatureHelp>> {
        let uri = params.text_document_position_params.text_document.uri.clone();
        self.on_document("textDocument/signatureHelp", &uri, |snap| {
            handlers::signature_help::signature_help(&snap, params)
        })
        .await
    }

    async fn goto_definition(&self, params: lsp::GotoDefinitionParams) -> Result<Option<lsp::GotoDefinitionResponse>> {
        let uri = params.text_document_position_params.text_document.uri.clone();
        self.on_document("textDocument/definition", &uri, |snap| handlers::definition::definition(&snap, params)).await
    }

    async fn document_symbol(&self, params: lsp::DocumentSymbolParams) -> Result<Option<lsp::DocumentSymbolResponse>> {
        let uri = params.text_document.uri.clone();
        self.on_document("textDocument/documentSymbol", &uri, |snap| {
            handlers::document_symbol::document_symbol(&snap, params)
        })
        .await
    }

    async fn symbol(
        &self,
        params: lsp::WorkspaceSymbolParams,
    ) -> Result<Option<lsp::OneOf<Vec<lsp::SymbolInformation>, Vec<lsp::WorkspaceSymbol>>>> {
        self.on_world("workspace/symbol", |world| handlers::workspace_symbol::workspace_symbol(&world, params)).await
    }

    async fn code_action(&self, params: lsp::CodeActionParams) -> Result<Option<lsp::CodeActionResponse>> {
        let uri = params.text_document.uri.clone();
        let (snapshot, world, observed) = {
            let s = self.ctx.session();
            (s.snapshot(&uri), s.world(), s.drift.clone())
        };
        off_loop("textDocument/codeAction", move || match snapshot {
            Some(snap) => handlers::code_action::code_action(&snap, &params),
            None => {
                let path = session::document_path(&uri);
                handlers::code_action::protocol_code_action(&world, &path, &params, &observed)
            }
        })
        .await
    }

    async fn code_lens(&self, params: lsp::CodeLensParams) -> Result<Option<Vec<lsp::CodeLens>>> {
        let uri = params.text_document.uri.clone();
        self.on_document("textDocument/codeLens", &uri, |snap| handlers::code_lens::code_lens(&snap, params)).await
    }

    async fn inlay_hint(&self, params: lsp::InlayHintParams) -> Result<Option<Vec<lsp::InlayHint>>> {
        let uri = params.text_document.uri.clone();
        self.on_document("textDocument/inlayHint", &uri, |snap| handlers::inlay_hint::inlay_hint(&snap, params)).await
    }

    async fn execute_command(&self, params: lsp::ExecuteCommandParams) -> Result<Option<Value>> {
        guarded_async("workspace/executeCommand", handlers::commands::execute_command(&self.ctx, params)).await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::jsonrpc::ErrorCode;

    #[tokio::test]
    async fn entry_points_and_pool_work_answer_a_panic_with_an_internal_error() {
        let notified: Result<()> = guarded_async("textDocument/didSave", async { panic!("in a notification") }).await;
        let error = notified.unwrap_err();
        assert_eq!(error.code, ErrorCode::InternalError);
        assert!(error.message.contains("didSave failed: in a notification"), "{}", error.message);
        let pooled: Result<()> = off_loop("textDocument/hover", || panic!("on the pool")).await;
        assert!(pooled.unwrap_err().message.contains("hover failed: on the pool"));
        assert_eq!(off_loop("textDocument/hover", || 7).await.unwrap(), 7);
    }

    #[test]
    fn panics_become_internal_errors() {
        let result: Result<()> = guarded("test", || panic!("boom"));
        let error = result.unwrap_err();
        assert_eq!(error.code, ErrorCode::InternalError);
        assert!(error.message.contains("boom"));
    }
}
