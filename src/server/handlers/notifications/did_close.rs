//! `textDocument/didClose`: the program is forgotten and its diagnostics cleared.

use tower_lsp_server::lsp_types as lsp;

use crate::server::context::Context;

pub async fn did_close(ctx: &Context, params: lsp::DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    let was_open = ctx.session().close(&uri).is_some();
    if was_open {
        ctx.client.publish_diagnostics(uri, Vec::new(), None).await;
    }
}
