//! What every handler of a notification or a command works with: the client, the session, the
//! task registry, the MCP sessions shared by the editor's runs — and the two things done the same
//! way from everywhere: reloading the workspace and publishing diagnostics.
//!
//! Reloading runs on a blocking thread (it reads protocol files, starts MCP servers and analyses
//! the workspace's programs for ToolNet); the session is locked only to install the result. Every
//! load and every ToolNet rebuild takes a number from one sequence, and the session installs only
//! a result newer than the one it holds, so a slow load finishing late never replaces a newer one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::lsp_types as lsp;

use super::diagnostics;
use super::guard::{guarded, off_loop};
use super::session::{Session, Snapshot, Toolnet};
use super::task::Tasks;
use super::{Status, StatusNotification};
use crate::config::Config;
use crate::graph::workspace::WorkspaceGraph;
use crate::runtime::McpPool;
use crate::toolset::{Catalog, loader};

#[derive(Clone)]
pub struct Context {
    pub client: Client,
    session: Arc<Mutex<Session>>,
    /// Serialises publishing so a stale result never overtakes a fresh one.
    publishing: Arc<tokio::sync::Mutex<()>>,
    pub tasks: Arc<Tasks>,
    /// MCP sessions shared by the editor session's runs, generations and probes.
    pub mcp: Arc<McpPool>,
    /// Numbers loads and ToolNet rebuilds.
    sequence: Arc<AtomicU64>,
}

impl Context {
    pub fn new(client: Client) -> Context {
        Context {
            client,
            session: Arc::new(Mutex::new(Session::default())),
            publishing: Arc::new(tokio::sync::Mutex::new(())),
            tasks: Arc::new(Tasks::default()),
            mcp: Arc::new(McpPool::new()),
            sequence: Arc::new(AtomicU64::new(1)),
        }
    }

    /// The session, even after a panic elsewhere poisoned the lock (every change to it is applied
    /// whole or not at all).
    pub fn session(&self) -> MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_sequence(&self) -> u64 {
        self.sequence.fetch_add(1, Ordering::SeqCst)
    }

    /// Re-reads chainsmith.toml (with the editor settings), every protocol file (`unsaved` texts
    /// replace files on disk) and ToolNet's inputs, and installs them unless a newer load was
    /// installed meanwhile. Whether this load was installed.
    pub async fn reload(&self, unsaved: HashMap<PathBuf, String>) -> bool {
        let sequence = self.next_sequence();
        let (root, settings) = {
            let s = self.session();
            (s.root.clone(), s.settings())
        };
        let loaded = tokio::task::spawn_blocking(move || {
            guarded("reload", || {
                let (config, catalog) = load(root.as_deref(), settings.as_ref(), &unsaved);
                let toolnet = Toolnet::new(WorkspaceGraph::load(&config, &catalog));
                (config, catalog, toolnet)
            })
        })
        .await;
        match loaded {
            Ok(Ok((config, catalog, toolnet))) => {
                tracing::info!(
                    "loaded {} toolsets, {} tools, {} workspace diagnostics",
                    catalog.toolsets.len(),
                    catalog.tool_count(),
                    catalog.diagnostics.len()
                );
                let installed = self.session().install(sequence, config, catalog, toolnet);
                if installed {
                    // The data-flow graph feeds hover, completion and quick fixes: build it now,
                    // off every request, rather than in the first one that needs it.
                    let catalog = self.session().catalog.clone();
                    tokio::task::spawn_blocking(move || guarded("data flow", || catalog.data_flow().edges().len()));
                } else {
                    tracing::info!("load {sequence} finished after a newer one; dropped");
                }
                installed
            }
            Ok(Err(e)) => {
                tracing::error!("reloading the workspace failed: {}", e.message);
                false
            }
            Err(e) => {
                tracing::error!("reloading the workspace failed: {e}");
                false
            }
        }
    }

    /// Re-reads ToolNet's inputs (a program was saved, a run wrote its trace) and rebuilds the
    /// graph, off the session lock.
    pub async fn refresh_toolnet(&self) {
        let sequence = self.next_sequence();
        let (config, catalog, generation) = {
            let s = self.session();
            (s.config.clone(), s.catalog.clone(), s.generation)
        };
        let built = tokio::task::spawn_blocking(move || {
            guarded("toolnet", || Toolnet::new(WorkspaceGraph::load(&config, &catalog)))
        })
        .await;
        match built {
            Ok(Ok(toolnet)) => {
                self.session().install_toolnet(sequence, generation, toolnet);
            }
            Ok(Err(e)) => tracing::error!("reading ToolNet's inputs failed: {}", e.message),
            Err(e) => tracing::error!("reading ToolNet's inputs failed: {e}"),
        }
    }

    /// After a (re)load: `chainsmith/status`, diagnostics of protocol files (clearing files whose
    /// problems are gone) and of every open program.
    pub async fn publish_everything(&self) {
        let (world, snapshots, observed, file_watching) = {
            let s = self.session();
            (s.world(), s.snapshots(), s.drift_diagnostics(), s.file_watching)
        };
        let files =
            guarded("publish workspace diagnostics", || diagnostics::workspace(&world, &observed)).unwrap_or_default();
        let programs: Vec<_> = snapshots
            .iter()
            .map(|snap| {
                let diagnostics = guarded("publish diagnostics", || diagnostics::program(snap)).unwrap_or_default();
                (snap.uri.clone(), snap.version, diagnostics)
            })
            .collect();

        let _turn = self.publishing.lock().await;
        // Files that had problems and no longer do, against what was actually sent last.
        let cleared = {
            let mut s = self.session();
            if s.generation != world.generation {
                return; // a newer load publishes its own
            }
            let now: HashMap<String, lsp::Uri> =
                files.iter().map(|(uri, _)| (uri.as_str().to_string(), uri.clone())).collect();
            let mut cleared: Vec<lsp::Uri> = s
                .published_workspace
                .iter()
                .filter(|(key, _)| !now.contains_key(*key))
                .map(|(_, uri)| uri.clone())
                .collect();
            cleared.sort();
            s.published_workspace = now;
            cleared
        };
        self.client.send_notification::<StatusNotification>(Status::of(&world.catalog, file_watching)).await;
        for (uri, diagnostics) in files {
            self.client.publish_diagnostics(uri, diagnostics, None).await;
        }
        for uri in cleared {
            self.client.publish_diagnostics(uri, Vec::new(), None).await;
        }
        for (uri, version, diagnostics) in programs {
            if self.is_current(&uri, version, world.generation) {
                self.client.publish_diagnostics(uri, diagnostics, Some(version)).await;
            }
        }
    }

    /// Analyses one program and publishes its diagnostics unless a newer edit or load has
    /// superseded the snapshot by the time they are sent.
    pub async fn publish_program(&self, snap: &Snapshot) {
        let (ctx, owned) = (self.clone(), snap.clone());
        let diagnostics = off_loop("publish diagnostics", move || {
            // A newer edit arrived while this waited for the pool: its own publish supersedes this.
            if !ctx.is_current(&owned.uri, owned.version, owned.world.generation) {
                return None;
            }
            Some(diagnostics::program(&owned))
        })
        .await;
        let diagnostics = match diagnostics {
            Ok(Some(diagnostics)) => diagnostics,
            Ok(None) => return,
            // The analysis panicked (logged): no diagnostics rather than stale ones.
            Err(_) => Vec::new(),
        };
        let _turn = self.publishing.lock().await;
        if self.is_current(&snap.uri, snap.version, snap.world.generation) {
            self.client.publish_diagnostics(snap.uri.clone(), diagnostics, Some(snap.version)).await;
        }
    }

    fn is_current(&self, uri: &lsp::Uri, version: i32, generation: u64) -> bool {
        let s = self.session();
        s.generation == generation && s.document(uri).is_some_and(|d| d.version == version)
    }
}

/// The configuration and catalog of a workspace; nothing without a root.
fn load(root: Option<&Path>, settings: Option<&Value>, unsaved: &HashMap<PathBuf, String>) -> (Config, Catalog) {
    match root {
        Some(root) => {
            let config = Config::load(root, settings);
            let catalog = loader::load_with_texts(&config, unsaved);
            (config, catalog)
        }
        None => (Config::default(), Catalog::default()),
    }
}
