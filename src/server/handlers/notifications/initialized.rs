//! `initialized`: the first diagnostics are published, protocol files are watched (by the client
//! when it can register watchers, else by the server), and the editor's settings are pulled;
//! settings that differ from the initialization options reload the workspace.

use std::collections::HashMap;

use tower_lsp_server::lsp_types as lsp;

use super::did_change_configuration::pull_settings;
use crate::server::context::Context;
use crate::server::task::CLIENT_REQUEST_TIMEOUT;
use crate::server::{FileWatching, watch};

pub async fn initialized(ctx: &Context, _: lsp::InitializedParams) {
    let support = ctx.session().support;
    // An editor that cannot watch files for the server (no dynamic registration) would never say
    // that one changed: the server watches them itself.
    let watching = match support.watch_files {
        true => FileWatching::Editor,
        false if watch::start(ctx.clone()) => FileWatching::Server,
        false => FileWatching::None,
    };
    ctx.session().file_watching = watching;
    ctx.publish_everything().await;
    if support.watch_files {
        register_watchers(ctx).await;
    }
    if support.configuration {
        let pulled = pull_settings(ctx).await;
        let changed = {
            let mut s = ctx.session();
            let changed = s.pulled_settings != pulled;
            s.pulled_settings = pulled;
            changed
        };
        if changed {
            ctx.reload(HashMap::new()).await;
            ctx.publish_everything().await;
        }
    }
}

async fn register_watchers(ctx: &Context) {
    let watchers = ["**/chainsmith.toml", "**/*.json", "**/*.yaml", "**/*.yml"]
        .into_iter()
        .map(|glob| lsp::FileSystemWatcher { glob_pattern: lsp::GlobPattern::String(glob.into()), kind: None })
        .collect();
    let options = lsp::DidChangeWatchedFilesRegistrationOptions { watchers };
    let registration = lsp::Registration {
        id: "chainsmith-watch-protocols".into(),
        method: "workspace/didChangeWatchedFiles".into(),
        register_options: serde_json::to_value(options).ok(),
    };
    match tokio::time::timeout(CLIENT_REQUEST_TIMEOUT, ctx.client.register_capability(vec![registration])).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("registering file watchers failed: {e}"),
        Err(_) => tracing::warn!("the client did not answer client/registerCapability in time"),
    }
}
