//! Chain of probing (ATC §4.2): tools that fail for lack of an argument only another tool supplies
//! (an ID) are retried in later rounds with prerequisites — a subset of the tools whose responses
//! are known (declared or probed in an earlier round) that the LLM selects — until every target is
//! probed or `[probe] rounds` is reached. What remains unprobed is reported with its reason.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::generate::prompt;
use crate::llm::{self, Message};
use crate::toolset::{Catalog, Tool};

use super::discover::{self, Probed, Prober, Unprobed};
use super::write;

/// The prerequisite-selection request opens with this line (scripted test servers key on it).
pub const SELECTION_HEADER: &str = "Prerequisite selection for";

const SELECTION_SYSTEM: &str = "You plan tool chains. A tool failed because it needs an argument (usually an ID) that \
only another tool's response supplies. From the candidate tools, select the few whose responses supply it. Reply with \
a JSON array of their ids, e.g. [\"toolset.tool\"]; reply [] if none does.";

/// Hears about a probing session as it goes (the CLI prints, the editor reports progress).
pub trait ProbeObserver: Send + Sync {
    fn started(&self, _tool: &str, _round: u32, _prerequisites: &[String]) {}
    fn finished(&self, _tool: &str, _round: u32, _result: &Result<Probed, Unprobed>) {}
}

pub struct Silent;
impl ProbeObserver for Silent {}

/// What a session found.
#[derive(Debug, Default)]
pub struct ChainReport {
    /// In the order they were probed, with the round that probed each.
    pub probed: Vec<(Probed, u32)>,
    /// Tool id → why it remains unprobed.
    pub unprobed: BTreeMap<String, Unprobed>,
    /// Rounds run.
    pub rounds: u32,
}

impl ChainReport {
    pub fn round_of(&self, id: &str) -> Option<u32> {
        self.probed.iter().find(|(p, _)| p.tool == id).map(|(_, r)| *r)
    }
}

/// The catalog with the probed schemas in place, for prompts and static checks of later rounds.
pub fn with_probed(catalog: &Catalog, probed: &[&Probed]) -> Catalog {
    let mut toolsets = catalog.toolsets.clone();
    for p in probed {
        if let Some(ts) = toolsets.iter_mut().find(|t| t.name == p.toolset)
            && let Some(tool) = ts.tools.iter_mut().find(|t| t.name == p.name)
        {
            crate::toolset::overlay::apply(tool, &write::entry_of(p));
        }
    }
    let mut out = Catalog::new(toolsets, catalog.diagnostics.clone());
    out.texts = catalog.texts.clone();
    out.trust = catalog.trust.clone();
    out
}

/// Probes `targets` (tool ids) in rounds.
pub async fn probe_chain(
    prober: &Prober,
    catalog: &Arc<Catalog>,
    targets: &[String],
    observer: &dyn ProbeObserver,
) -> ChainReport {
    let mut report = ChainReport::default();
    let rounds = prober.config.probe.rounds.max(1);
    let mut working = catalog.clone();
    let mut pending: Vec<String> = targets.to_vec();
    for round in 1..=rounds {
        if pending.is_empty() {
            break;
        }
        report.rounds = round;
        let mut retry = Vec::new();
        for id in std::mem::take(&mut pending) {
            if prober.cancel.is_cancelled() {
                report.unprobed.insert(id, Unprobed::Cancelled);
                continue;
            }
            let Ok(target) = working.find(&id) else {
                report.unprobed.insert(id.clone(), Unprobed::Failed(format!("no tool `{id}` in the workspace")));
                continue;
            };
            let prerequisites: Vec<&Tool> = if round == 1 {
                Vec::new()
            } else {
                match select_prerequisites(prober, &working, target, report.unprobed.get(&id)).await {
                    Ok(p) => p,
                    Err(e) => {
                        report.unprobed.insert(id.clone(), e);
                        continue;
                    }
                }
            };
            if round > 1 && prerequisites.is_empty() {
                // Nothing can supply the argument (yet): keep the round-1 reason, maybe a later
                // round has new probed tools.
                retry.push(id);
                continue;
            }
            let names: Vec<String> = prerequisites.iter().map(|t| t.id()).collect();
            observer.started(&id, round, &names);
            let result = discover::discover(prober, &working, target, &prerequisites).await;
            observer.finished(&id, round, &result);
            match result {
                Ok(probed) => {
                    report.unprobed.remove(&id);
                    report.probed.push((probed, round));
                    let all: Vec<&Probed> = report.probed.iter().map(|(p, _)| p).collect();
                    working = Arc::new(with_probed(catalog, &all));
                }
                Err(why @ Unprobed::NeedsArgument { .. }) => {
                    report.unprobed.insert(id.clone(), why);
                    retry.push(id);
                }
                Err(why) => {
                    report.unprobed.insert(id, why);
                }
            }
        }
        pending = retry;
    }
    report
}

/// Tools that may supply `target`'s arguments: known responses, runnable without confirmation.
fn candidates<'c>(catalog: &'c Catalog, target: &Tool, allow_writes: bool) -> Vec<&'c Tool> {
    let mut out: Vec<&Tool> = catalog
        .tools()
        .filter(|t| t.id() != target.id() && t.response.is_some())
        .filter(|t| allow_writes || discover::confirmation_needed(t).is_none())
        .filter(|t| discover::cannot_run(t, catalog).is_none())
        .collect();
    // The target's own toolset first: IDs mostly come from the same API.
    out.sort_by_key(|t| t.toolset != target.toolset);
    out.truncate(30);
    out
}

/// The prerequisite-selection request: the LLM picks, among the candidates, the tools whose
/// responses supply the missing argument.
pub fn selection_text(target: &Tool, why: Option<&Unprobed>, candidates: &[&Tool]) -> String {
    let mut out = format!("{SELECTION_HEADER} {}\n\nTarget tool:\n{}", target.id(), prompt::render_tool(target, 8));
    if let Some(why) = why {
        out.push_str(&format!("\nIt failed: {}\n", why.reason()));
    }
    out.push_str("\nCandidate tools:\n");
    for tool in candidates {
        out.push_str(&prompt::render_tool(tool, 12));
    }
    out.push_str("\nReply with a JSON array of tool ids.");
    out
}

/// The first JSON array of strings in a reply.
pub fn parse_selection(reply: &str) -> Vec<String> {
    let mut start = 0;
    while let Some(open) = reply[start..].find('[').map(|i| i + start) {
        if let Some(close) = reply[open..].find(']').map(|i| i + open)
            && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&reply[open..=close])
        {
            return items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
        }
        start = open + 1;
    }
    Vec::new()
}

async fn select_prerequisites<'c>(
    prober: &Prober,
    catalog: &'c Catalog,
    target: &Tool,
    why: Option<&Unprobed>,
) -> Result<Vec<&'c Tool>, Unprobed> {
    let candidates = candidates(catalog, target, prober.allow_writes);
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    prober.budget.check(&prober.client.meter).map_err(|e| Unprobed::Llm(e.to_string()))?;
    let messages = vec![Message::system(SELECTION_SYSTEM), Message::user(selection_text(target, why, &candidates))];
    let reply =
        prober.client.chat(&messages, &llm::Options::new(0.0, 200)).await.map_err(|e| Unprobed::Llm(e.to_string()))?;
    let chosen = parse_selection(&reply.content);
    Ok(candidates.into_iter().filter(|t| chosen.iter().any(|c| *c == t.id() || *c == t.name)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_are_read_from_prose() {
        assert_eq!(parse_selection("The ID comes from [search]. So: [\"a.search\", \"b\"]"), ["a.search", "b"]);
        assert!(parse_selection("none").is_empty());
        assert!(parse_selection("[]").is_empty());
    }
}
