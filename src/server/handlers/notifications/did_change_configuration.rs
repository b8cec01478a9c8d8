//! `workspace/didChangeConfiguration`: the editor's `chainsmith` settings changed; they are
//! pulled (`workspace/configuration`) when the client supports it, else taken from the
//! notification, and the workspace is reloaded with them.

use std::collections::HashMap;

use serde_json::Value;
use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types as lsp;

use crate::server::context::Context;
use crate::server::task::CLIENT_REQUEST_TIMEOUT;

pub async fn did_change_configuration(ctx: &Context, params: lsp::DidChangeConfigurationParams) {
    let support = ctx.session().support;
    let pulled = if support.configuration {
        pull_settings(ctx).await
    } else {
        match settings_object(params.settings) {
            Some(settings) => Some(settings),
            None => return,
        }
    };
    ctx.session().pulled_settings = pulled;
    ctx.reload(HashMap::new()).await;
    ctx.publish_everything().await;
}

/// The client's `chainsmith` settings section, or `None` when it has none or does not answer.
pub async fn pull_settings(ctx: &Context) -> Option<Value> {
    let scope = {
        let s = ctx.session();
        s.root.as_deref().and_then(lsp::Uri::from_file_path)
    };
    let items = vec![lsp::ConfigurationItem { scope_uri: scope, section: Some("chainsmith".into()) }];
    match tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, ctx.client.configuration(items)).await {
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

/// Editor settings as `Config::load` overrides: an object with chainsmith.toml's keys, also
/// accepted wrapped in `{"chainsmith": {...}}`.
pub fn settings_object(value: Value) -> Option<Value> {
    match value {
        Value::Object(mut map) => match map.remove("chainsmith") {
            Some(inner @ Value::Object(_)) => Some(inner),
            Some(_) | None if map.is_empty() => None,
            Some(_) | None => Some(Value::Object(map)),
        },
        _ => None,
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
}
