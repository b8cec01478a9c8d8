//! Watching chainsmith.toml and the protocol files on disk when the editor cannot: a client that
//! offers no dynamic registration of `workspace/didChangeWatchedFiles` (Neovim 0.11 on Linux)
//! never tells the server that a file changed, so the server watches the folders those files lie
//! in itself (inotify, through the `notify` crate) and reloads as the client's notification would.
//!
//! Only folders are watched, not trees: the workspace root (chainsmith.toml), `protocols/`, and
//! the folder of every file the catalog was read from — a few inotify watches, whatever the size
//! of the workspace. They are worked out again after each reload the watcher starts, so a toolset
//! added to chainsmith.toml on disk is watched from then on (one added through other reloads — the
//! editor's settings, trust — is watched after the next change the watcher sees).

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::server::context::Context;

/// Editors and tools write a file in several steps (truncate, write, rename): changes this close
/// together are one.
const SETTLE: Duration = Duration::from_millis(200);

/// Starts watching on the server's behalf; `false` when the system refused (the reason is logged).
pub fn start(ctx: Context) -> bool {
    let (sender, mut changed) = mpsc::unbounded_channel::<PathBuf>();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && !event.kind.is_access()
        {
            for path in event.paths {
                let _ = sender.send(path);
            }
        }
    });
    let mut watcher = match watcher {
        Ok(watcher) => watcher,
        Err(e) => {
            tracing::warn!("cannot watch the workspace's files: {e}");
            return false;
        }
    };
    let mut watched = BTreeSet::new();
    rewatch(&ctx, &mut watcher, &mut watched);
    tokio::spawn(async move {
        // The task owns the watcher: it watches as long as the server runs.
        while let Some(first) = changed.recv().await {
            let mut paths = vec![first];
            tokio::time::sleep(SETTLE).await;
            while let Ok(more) = changed.try_recv() {
                paths.push(more);
            }
            let relevant = {
                let s = ctx.session();
                paths.iter().any(|p| s.is_workspace_file(p))
            };
            if relevant {
                ctx.reload(HashMap::new()).await;
                // Before publishing: whoever reacts to the new status may already change a file
                // in a folder the reload added.
                rewatch(&ctx, &mut watcher, &mut watched);
                ctx.publish_everything().await;
            }
        }
    });
    true
}

/// Watches the folders the workspace's files lie in now, and no others.
fn rewatch(ctx: &Context, watcher: &mut notify::RecommendedWatcher, watched: &mut BTreeSet<PathBuf>) {
    let wanted: BTreeSet<PathBuf> = {
        let s = ctx.session();
        let Some(root) = s.root.clone() else { return };
        let files = s.catalog.texts.keys().chain(s.catalog.toolsets.iter().flat_map(|t| t.files.iter()));
        let folders = files.filter_map(|f| root.join(f).parent().map(PathBuf::from));
        [root.clone(), root.join("protocols")].into_iter().chain(folders).filter(|d| d.is_dir()).collect()
    };
    for gone in watched.difference(&wanted) {
        let _ = watcher.unwatch(gone);
    }
    let mut now = BTreeSet::new();
    for folder in wanted {
        if watched.contains(&folder) {
            now.insert(folder);
            continue;
        }
        // A folder that cannot be watched now is tried again after the next reload.
        match watcher.watch(&folder, RecursiveMode::NonRecursive) {
            Ok(()) => {
                now.insert(folder);
            }
            Err(e) => tracing::warn!("cannot watch {}: {e}", folder.display()),
        }
    }
    *watched = now;
}
