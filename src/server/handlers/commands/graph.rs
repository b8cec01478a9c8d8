//! `chainsmith.graph`: ToolNet's graph as text (also logged), Graphviz DOT and an SVG picture,
//! from one tool when the argument names one; the picture shows the neighbourhood of the
//! document's tools, highlighted, when the argument is the document's URI.

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::lsp_types as lsp;

use crate::graph::render::{render, render_svg};
use crate::server::context::Context;

pub async fn execute(ctx: &Context, from: Option<String>, document: Option<lsp::Uri>) -> Result<Option<Value>> {
    let (world, snapshot) = {
        let session = ctx.session();
        (session.world(), document.as_ref().and_then(|uri| session.snapshot(uri)))
    };
    let rendered = tokio::task::spawn_blocking(move || {
        let mut called: Vec<String> = Vec::new();
        if let Some(snap) = &snapshot {
            for tool in snap.analysis().calls.iter().filter_map(|c| c.tool) {
                if !called.contains(&tool.id()) {
                    called.push(tool.id());
                }
            }
        }
        let inputs = &world.toolnet.inputs;
        let text = render(inputs, &world.catalog, false, from.as_deref(), 3)?;
        let dot = render(inputs, &world.catalog, true, from.as_deref(), 3)?;
        // The picture is extra: without it the text and DOT still answer.
        let svg = render_svg(inputs, &world.catalog, from.as_deref(), 3, &called).map_err(|e| format!("{e:#}"));
        anyhow::Ok((text, dot, svg, called))
    })
    .await;
    match rendered {
        Ok(Ok((text, dot, svg, called))) => {
            ctx.client.log_message(lsp::MessageType::INFO, format!("chainsmith: ToolNet\n{text}")).await;
            let (svg, svg_error) = match svg {
                Ok(svg) => (Some(svg), None),
                Err(e) => (None, Some(e)),
            };
            Ok(Some(json!({"text": text, "dot": dot, "svg": svg, "svgError": svg_error, "highlighted": called})))
        }
        Ok(Err(e)) => Err(Error::invalid_params(format!("{e:#}"))),
        Err(e) => Err(Error {
            code: ErrorCode::InternalError,
            message: format!("chainsmith: the graph failed: {e}").into(),
            data: None,
        }),
    }
}
