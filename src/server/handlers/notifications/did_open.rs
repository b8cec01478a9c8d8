//! `textDocument/didOpen`: a program is analysed and its diagnostics published. Opened without a
//! workspace folder, the program's own workspace (the nearest folder with chainsmith.toml or
//! `protocols/`) is loaded first — when it is the user's own; one that is not is named in a
//! warning and left unloaded.

use std::collections::HashMap;

use tower_lsp_server::lsp_types as lsp;

use crate::config;
use crate::server::context::Context;
use crate::server::guard::guarded;
use crate::server::session::{self, Document};

pub async fn did_open(ctx: &Context, params: lsp::DidOpenTextDocumentParams) {
    let doc = params.text_document;
    if !is_program(&doc.uri, &doc.language_id) {
        return;
    }
    let path = session::document_path(&doc.uri);
    let opened = guarded("didOpen", || Document::new(doc.uri.clone(), path.clone(), doc.version, doc.text));
    let Ok(document) = opened else { return };
    let needs_root = {
        let mut s = ctx.session();
        s.open(document);
        s.root.is_none()
    };
    match needs_root.then(|| path.parent().and_then(config::discover_root)).flatten() {
        Some(Ok(root)) => {
            tracing::info!("no workspace folder: using {}", root.display());
            ctx.session().root = Some(root);
            ctx.reload(HashMap::new()).await;
            ctx.publish_everything().await;
            return;
        }
        Some(Err(not_yours)) => {
            // Said at each such open: the program is analysed without the workspace, which the
            // user would otherwise take for missing protocols.
            tracing::warn!("{not_yours}");
            let message = format!(
                "chainsmith: {not_yours}. Open a folder of your own as the workspace (or that folder, if you trust it)"
            );
            ctx.client.show_message(lsp::MessageType::WARNING, message).await;
        }
        None => {}
    }
    let snapshot = ctx.session().snapshot(&doc.uri);
    if let Some(snap) = snapshot {
        ctx.publish_program(&snap).await;
    }
}

fn is_program(uri: &lsp::Uri, language_id: &str) -> bool {
    language_id.eq_ignore_ascii_case("python") || uri.path().as_str().ends_with(".py")
}
