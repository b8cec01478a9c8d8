//! `initialize`: position encoding negotiated, what the client supports recorded, the workspace
//! root taken from the client, the workspace loaded, and the server's capabilities answered.

use std::collections::HashMap;
use std::path::PathBuf;

use tower_lsp_server::UriExt;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::lsp_types as lsp;

use super::commands::COMMANDS;
use super::notifications::did_change_configuration::settings_object;
use crate::server::context::Context;
use crate::server::convert;
use crate::server::session::ClientSupport;

/// Completion trigger characters: attribute access, string quotes (keys, enum values, URLs),
/// argument lists, subscripts, URL paths and keyword values.
pub const COMPLETION_TRIGGERS: [&str; 8] = [".", "\"", "'", "(", ",", "[", "/", "="];

pub async fn initialize(ctx: &Context, params: lsp::InitializeParams) -> Result<lsp::InitializeResult> {
    let encoding = convert::negotiate_encoding(&params.capabilities);
    let root = workspace_root(&params);
    tracing::info!("initialize: root {:?}, positions in {:?}", root, encoding);
    {
        let mut s = ctx.session();
        s.encoding = encoding;
        s.support = ClientSupport::from_capabilities(&params.capabilities);
        s.root = root;
        s.init_settings = params.initialization_options.clone().and_then(settings_object);
    }
    ctx.reload(HashMap::new()).await;
    Ok(lsp::InitializeResult {
        capabilities: capabilities(encoding),
        server_info: Some(lsp::ServerInfo {
            name: "chainsmith".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
    })
}

/// The workspace root the client announced: its first workspace folder, else `rootUri`, else
/// `rootPath`. A `..` in it is taken as written, as the CLI takes `--root` (`lnk/..` is the folder
/// holding `lnk`, not the one above where `lnk` leads), so what the editor shows as the workspace
/// is the one whose programs run.
#[allow(deprecated)]
fn workspace_root(params: &lsp::InitializeParams) -> Option<PathBuf> {
    let folder = params.workspace_folders.as_ref().and_then(|f| f.first()).map(|f| &f.uri);
    let announced = match folder.or(params.root_uri.as_ref()).and_then(|uri| uri.to_file_path()) {
        Some(path) => path.into_owned(),
        None => params.root_path.as_ref().filter(|p| !p.is_empty()).map(PathBuf::from)?,
    };
    // Absolute first: a relative `rootPath` of `.` or `a/..` would normalise to nothing.
    Some(crate::files::normalize(&std::path::absolute(&announced).ok()?))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_advertises_every_command_name() {
        let advertised = capabilities(crate::text::Encoding::Utf16).execute_command_provider.unwrap().commands;
        assert_eq!(advertised, COMMANDS.map(String::from));
    }

    /// `lnk/..` names the folder holding `lnk`, wherever `lnk` leads, in the editor as on the
    /// command line: a program run from it is judged against that folder.
    #[test]
    #[allow(deprecated)]
    fn a_root_with_dot_dot_is_taken_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("proj"), dir.path().join("lnk")).unwrap();
        std::fs::create_dir(outside.path().join("proj")).unwrap();
        let spelled = format!("{}/lnk/../.", dir.path().display());
        let uri: lsp::Uri = format!("file://{spelled}").parse().unwrap();
        let params = lsp::InitializeParams { root_uri: Some(uri), ..Default::default() };
        assert_eq!(workspace_root(&params).as_deref(), Some(dir.path()));
        let params = lsp::InitializeParams { root_path: Some(spelled), ..Default::default() };
        assert_eq!(workspace_root(&params).as_deref(), Some(dir.path()));
        let params = lsp::InitializeParams { root_path: Some("a/..".into()), ..Default::default() };
        assert_eq!(workspace_root(&params), Some(std::env::current_dir().unwrap()), "the folder chainsmith runs in");
    }
}
