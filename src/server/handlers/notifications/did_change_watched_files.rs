//! `workspace/didChangeWatchedFiles`: a change on disk to chainsmith.toml or a protocol file
//! reloads the workspace.

use std::collections::HashMap;

use tower_lsp_server::lsp_types as lsp;

use crate::server::context::Context;
use crate::server::session;

pub async fn did_change_watched_files(ctx: &Context, params: lsp::DidChangeWatchedFilesParams) {
    let relevant = {
        let s = ctx.session();
        params.changes.iter().any(|change| s.is_workspace_file(&session::document_path(&change.uri)))
    };
    if relevant {
        ctx.reload(HashMap::new()).await;
        ctx.publish_everything().await;
    }
}
