//! `textDocument/didSave`: a saved protocol file or chainsmith.toml reloads the workspace; a saved
//! program is a new ToolNet trajectory (its calls in program order).

use std::collections::HashMap;

use tower_lsp_server::lsp_types as lsp;

use crate::server::context::Context;
use crate::server::session;

pub async fn did_save(ctx: &Context, params: lsp::DidSaveTextDocumentParams) {
    let path = session::document_path(&params.text_document.uri);
    let affects_workspace = ctx.session().is_workspace_file(&path);
    if affects_workspace {
        ctx.reload(HashMap::new()).await;
        ctx.publish_everything().await;
    } else if path.extension().is_some_and(|e| e == "py") {
        ctx.refresh_toolnet().await;
    }
}
