//! Probing tools whose response schema is unknown, as `chainsmith probe` and the editor's Probe
//! tool / Probe all both do: which tools a request stands for, which of them run only with the
//! user's consent, and the probing session itself (its model client, its budget, its MCP servers,
//! the chain of probing). Where the learnt schemas are written — files in place from the
//! terminal, an edit the user can undo in the editor — and how progress reads stay with the front
//! end. Probing needs no retrieval, so it takes the workspace's configuration and catalog rather
//! than a whole [`super::Workspace`].

use std::sync::Arc;

use crate::config::Config;
use crate::llm;
use crate::probe::chain::{self, ChainReport, ProbeObserver};
use crate::probe::discover::{self, Prober};
use crate::runtime::{Cancel, McpPool};
use crate::toolset::Catalog;

/// One probing session.
pub struct ProbeRequest {
    /// Tool ids, in the order asked ([`targets`]).
    pub targets: Vec<String>,
    /// The user agreed to run tools not known to be read-only (`--yes`, the editor's question).
    pub allow_writes: bool,
    /// The MCP servers probing talks to: the editor's, kept for its session, or the terminal's
    /// own, which it stops once probing is over — outside the async runtime, since stopping an
    /// HTTP MCP session makes a blocking request.
    pub mcp: Arc<McpPool>,
    pub cancel: Cancel,
}

/// The tool ids `named` stands for (an id or a unique bare name each), then, with `all`, every
/// other tool whose response is unknown. A name the workspace does not know is the error.
pub fn targets(catalog: &Catalog, named: &[String], all: bool) -> Result<Vec<String>, String> {
    let mut ids: Vec<String> = Vec::new();
    for name in named {
        let id = catalog.find(name)?.id();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if all {
        for tool in catalog.tools().filter(|t| t.response.is_none()) {
            if !ids.contains(&tool.id()) {
                ids.push(tool.id());
            }
        }
    }
    Ok(ids)
}

/// The targets that run only with the user's consent: those not known to be read-only.
pub fn needing_consent(catalog: &Catalog, targets: &[String]) -> Vec<String> {
    targets
        .iter()
        .filter_map(|id| catalog.find(id).ok())
        .filter(|tool| discover::confirmation_needed(tool).is_some())
        .map(|tool| tool.id())
        .collect()
}

/// A session ready to probe: its model client is built and its budget set.
pub struct Prepared {
    prober: Prober,
    catalog: Arc<Catalog>,
    targets: Vec<String>,
}

/// What a session came to.
#[derive(Debug)]
pub struct Probing {
    pub report: ChainReport,
    pub llm_calls: u32,
    pub usage: llm::Usage,
}

/// Checks the model's settings and sizes the budget: one try per sample, plus one, for each target
/// in each round; `[generate] max_tokens` per target.
pub fn prepare(config: Arc<Config>, catalog: Arc<Catalog>, request: ProbeRequest) -> Result<Prepared, String> {
    let mut client = llm::Client::new(&config.llm, &catalog.trust).map_err(|e| e.to_string())?;
    client.cancel = Some(request.cancel.clone());
    let rounds = config.probe.rounds.max(1);
    let max_tokens = config.generate.max_tokens.max(1);
    let mut prober = Prober::new(config, client, request.allow_writes);
    prober.mcp = request.mcp;
    prober.cancel = request.cancel;
    let n = request.targets.len() as u32;
    prober.budget.max_llm_calls = (prober.samples + 1) * n * rounds;
    prober.budget.max_tokens = max_tokens * u64::from(n);
    Ok(Prepared { prober, catalog, targets: request.targets })
}

impl Prepared {
    pub fn targets(&self) -> &[String] {
        &self.targets
    }

    /// Probes every target, round after round, each tool's start and end told to `observer`.
    pub async fn run(self, observer: &dyn ProbeObserver) -> Probing {
        let report = chain::probe_chain(&self.prober, &self.catalog, &self.targets, observer).await;
        let meter = &self.prober.client.meter;
        Probing { report, llm_calls: meter.requests(), usage: meter.usage() }
    }
}
