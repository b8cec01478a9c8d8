//! `textDocument/didChange`: the edit is applied to the text and, incrementally, to its syntax
//! tree; the program's diagnostics are published for the new version.

use tower_lsp_server::lsp_types as lsp;

use crate::server::context::Context;
use crate::server::guard::guarded;

pub async fn did_change(ctx: &Context, params: lsp::DidChangeTextDocumentParams) {
    let uri = params.text_document.uri;
    let snapshot = {
        let mut s = ctx.session();
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
        Some(snap) => ctx.publish_program(&snap).await,
        None => ctx.client.publish_diagnostics(uri, Vec::new(), None).await,
    }
}
