//! `chainsmith probe [TOOL...] [--all] [--yes]`: documents tools whose response schema is unknown
//! by running LLM-written programs against them (instance discovery, chain of probing), then
//! writes the schemas back (native files in place, overlays for other sources).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, anyhow, bail};

use super::{load_workspace, workspace_root};
use crate::jobs::{self, probe::ProbeRequest, probe::Probing};
use crate::probe::chain::ProbeObserver;
use crate::probe::discover::{Probed, Unprobed};
use crate::probe::write;
use crate::runtime::{Cancel, McpPool};

struct Progress;

impl ProbeObserver for Progress {
    fn started(&self, tool: &str, round: u32, prerequisites: &[String]) {
        let with = if prerequisites.is_empty() { String::new() } else { format!(" with {}", prerequisites.join(", ")) };
        eprintln!("probing {tool} (round {round}){with}…");
    }
    fn finished(&self, tool: &str, round: u32, result: &Result<Probed, Unprobed>) {
        match result {
            Ok(p) => eprintln!(
                "  ✓ {tool}: {} sample{} in {} tr{} (round {round})",
                p.samples.len(),
                if p.samples.len() == 1 { "" } else { "s" },
                p.tries,
                if p.tries == 1 { "y" } else { "ies" }
            ),
            Err(why) => eprintln!("  ✗ {tool}: {}", why.reason()),
        }
    }
}

/// Exit status: 0 when every target was probed, 1 when some remain unprobed, 2 on usage errors.
pub fn probe(root: Option<&Path>, tools: &[String], all: bool, yes: bool) -> Result<u8> {
    if tools.is_empty() && !all {
        bail!("name the tools to probe (toolset.name or a unique bare name), or pass --all for every unprobed tool");
    }
    let root = workspace_root(root, &[])?;
    let (config, catalog) = load_workspace(&root)?;
    let targets = jobs::probe::targets(&catalog, tools, all).map_err(|message| anyhow!("{message}"))?;
    if targets.is_empty() {
        eprintln!("every tool's response schema is known: nothing to probe");
        return Ok(0);
    }
    let catalog = Arc::new(catalog);
    let mcp = Arc::new(McpPool::new());
    let request = ProbeRequest { targets: targets.clone(), allow_writes: yes, mcp: mcp.clone(), cancel: Cancel::new() };
    let prepared = jobs::probe::prepare(Arc::new(config), catalog.clone(), request).map_err(|e| anyhow!("{e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let Probing { report, llm_calls, usage } = runtime.block_on(prepared.run(&Progress));
    // Here, outside the runtime: ending an HTTP MCP session makes a blocking request.
    mcp.clear();

    let probed: Vec<&Probed> = report.probed.iter().map(|(p, _)| p).collect();
    let written = write::write_back(&root, &catalog, &probed)?;
    println!(
        "probed {} of {} tool{} in {} round{}",
        probed.len(),
        targets.len(),
        if targets.len() == 1 { "" } else { "s" },
        report.rounds,
        if report.rounds == 1 { "" } else { "s" }
    );
    for (p, round) in &report.probed {
        println!(
            "  probed {} (round {round}, {} sample{})",
            p.tool,
            p.samples.len(),
            if p.samples.len() == 1 { "" } else { "s" }
        );
    }
    for file in &written {
        println!("  wrote {}", file.strip_prefix(&root).unwrap_or(file).display());
    }
    for (id, why) in &report.unprobed {
        println!("  unprobed {id}: {}", why.reason());
    }
    eprintln!("LLM usage: {llm_calls} request(s), {usage}");
    Ok(if report.unprobed.is_empty() { 0 } else { 1 })
}
