//! `chainsmith.graph`: ToolNet's graph as text (also logged) and Graphviz DOT, from one tool when
//! the argument names one.

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::lsp_types as lsp;

use crate::graph::render::render;
use crate::server::context::Context;

pub async fn execute(ctx: &Context, from: Option<String>) -> Result<Option<Value>> {
    let world = ctx.session().world();
    let rendered = tokio::task::spawn_blocking(move || {
        let inputs = &world.toolnet.inputs;
        let text = render(inputs, &world.catalog, false, from.as_deref(), 3);
        let dot = render(inputs, &world.catalog, true, from.as_deref(), 3);
        (text, dot)
    })
    .await;
    match rendered {
        Ok((Ok(text), Ok(dot))) => {
            ctx.client.log_message(lsp::MessageType::INFO, format!("chainsmith: ToolNet\n{text}")).await;
            Ok(Some(json!({"text": text, "dot": dot})))
        }
        Ok((Err(e), _)) | Ok((_, Err(e))) => Err(Error::invalid_params(format!("{e:#}"))),
        Err(e) => Err(Error {
            code: ErrorCode::InternalError,
            message: format!("chainsmith: the graph failed: {e}").into(),
            data: None,
        }),
    }
}
