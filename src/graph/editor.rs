//! What the editor asks the graph, in plain strings and integers (the server converts to LSP):
//! inlay-hint labels after a call and for "what next", the ranking of completions after `toolset.`,
//! a hover section on a tool, and whether a tool has been failing lately.
//!
//! Weights are shown as integers 0–100 (ToolNet's finding: models, like people, read integers
//! better than decimals). Tool names drop the toolset prefix when it is the toolset of the tool
//! they are shown next to.

use super::{END, START, ToolGraph, integer_weight};
use crate::toolset::index::CatalogIndex;
use crate::toolset::{Catalog, Tool};

/// How many successors a hint or a hover shows by default.
pub const DEFAULT_TOP: usize = 3;

/// The top `k` successors of `from` (a tool id, [`START`]) with integer weights, heaviest first.
/// [`END`] is among them when programs often stop after `from`.
pub fn successors(graph: &ToolGraph, from: &str, k: usize) -> Vec<(String, u32)> {
    graph.successors(from).into_iter().take(k).map(|(to, w)| (to.to_string(), integer_weight(w))).collect()
}

/// `tmdb.person` shown next to a `tmdb.*` tool is `person`; other toolsets keep their prefix.
pub fn display_name<'a>(id: &'a str, beside: &str) -> &'a str {
    let toolset_of = |id: &str| id.split_once('.').map(|(ts, _)| ts.to_string());
    match (id.split_once('.'), toolset_of(beside)) {
        (Some((ts, name)), Some(other)) if ts == other => name,
        _ => id,
    }
}

/// How long an inlay hint's label may be: VS Code cuts a hint at 43 characters by default
/// (`editor.inlayHints.maximumLength`), and a cut hint reads as one with the run mark beside it.
const MAX_HINT_CHARS: usize = 40;

/// A tool as a sentence names it: [`START`] and [`END`] are not tools but a program's ends.
fn spoken(id: &str, beside: &str) -> String {
    match id {
        START => "nothing before it (a program's first call)".into(),
        END => "nothing after it (a program's last call)".into(),
        _ => display_name(id, beside).to_string(),
    }
}

/// `person_movie_credits (62%), person (21%)`: the share of the times each came next, in words.
fn listed(items: &[(String, u32)], beside: &str) -> String {
    items.iter().map(|(id, w)| format!("{} ({w}%)", spoken(id, beside))).collect::<Vec<_>>().join(", ")
}

/// `→ person_movie_credits 62% · person 21%`, as many tools as fit [`MAX_HINT_CHARS`] (one at
/// least); `None` when there are none.
fn short_label(prefix: &str, items: &[(String, u32)], beside: &str) -> Option<String> {
    let mut label = String::new();
    for (id, w) in items {
        let item = format!("{} {w}%", display_name(id, beside));
        let next = if label.is_empty() { format!("{prefix}{item}") } else { format!("{label} · {item}") };
        if !label.is_empty() && next.chars().count() > MAX_HINT_CHARS {
            break;
        }
        label = next;
    }
    (!label.is_empty()).then_some(label)
}

/// The tools after `from` (a tool id, [`START`]) that are tools, heaviest first.
fn next_tools(graph: &ToolGraph, from: &str, k: usize) -> Vec<(String, u32)> {
    graph
        .successors(from)
        .into_iter()
        .filter(|(to, _)| *to != END)
        .take(k)
        .map(|(to, w)| (to.to_string(), integer_weight(w)))
        .collect()
}

/// The inlay hint after a call of `tool`: `→ person_movie_credits 62% · person 21%` (the share
/// of the times each tool came next). `None` when no tool is known to follow; that programs
/// often end there is said by the tooltip and the hover, not by the hint.
pub fn hint_label(graph: &ToolGraph, tool: &str, k: usize) -> Option<String> {
    short_label("→ ", &next_tools(graph, tool, k), tool)
}

/// The "what next" hint after a program's last call (`last`; [`START`] for a program without
/// calls): `next → person 62% · movie 21%`. [`END`] is left out: the question is which tool to add.
pub fn what_next_label(graph: &ToolGraph, last: Option<&str>, k: usize) -> Option<String> {
    let from = last.unwrap_or(START);
    let top = next_tools(graph, from, k);
    let beside = if from == START { top.first().map_or(START, |(id, _)| id.as_str()) } else { from };
    short_label("next → ", &top, beside)
}

/// The hint's tooltip, a sentence: `After search_person, the workspace's programs and runs went
/// on to person_movie_credits (62%), person (21%) or nothing after it (17%) — of 40 times seen.`
pub fn hint_tooltip(graph: &ToolGraph, from: Option<&str>, k: usize) -> String {
    let from = from.unwrap_or(START);
    let top = successors(graph, from, k);
    let seen = graph.out_count(from);
    let times = if seen == 1 { "once".to_string() } else { format!("{seen} times") };
    let after = if from == START { "As their first call".to_string() } else { format!("After {from}") };
    format!(
        "{after}, this workspace's programs, runs and imported trajectories called {} ({times} seen; ToolNet)",
        listed(&top, from)
    )
}

/// One tool of a toolset, ranked for completion after `toolset.`.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedTool {
    pub id: String,
    pub name: String,
    /// The transition weight from the previous call (0–100), when there is an edge.
    pub weight: Option<u32>,
    /// BM25 relevance to the task text (0 without a task).
    pub relevance: f64,
    /// Sorts the completion list in this order (`0000`, `0001`, …).
    pub sort_text: String,
    /// `ToolNet 62 after search_person`, or empty.
    pub detail: String,
}

/// Ranks the tools of `toolset` for completion after `toolset.`: first by the transition weight
/// from `previous` (the previous call's tool id; the program's start when `None`), then by
/// relevance to `task` (a docstring) in the catalog's `index`, then by name.
pub fn rank_tools(
    graph: &ToolGraph,
    catalog: &Catalog,
    index: Option<&CatalogIndex>,
    toolset: &str,
    previous: Option<&str>,
    task: Option<&str>,
) -> Vec<RankedTool> {
    let Some(ts) = catalog.toolset(toolset) else { return Vec::new() };
    let tools: Vec<&Tool> = ts.tools.iter().collect();
    rank_among(graph, &tools, previous, task, index)
}

/// [`rank_tools`] over some tools only (the completion items being sent). Relevance is read from
/// the catalog's index, built once per catalog (the server keeps it with the catalog); without an
/// index or a task, every tool's relevance is 0.
pub fn rank_among(
    graph: &ToolGraph,
    tools: &[&Tool],
    previous: Option<&str>,
    task: Option<&str>,
    index: Option<&CatalogIndex>,
) -> Vec<RankedTool> {
    let from = previous.unwrap_or(START);
    let task = task.map(str::trim).filter(|t| !t.is_empty());
    let relevance = index.zip(task).map(|(index, task)| (index, index.query(task)));
    let mut ranked: Vec<(f64, RankedTool)> = tools
        .iter()
        .map(|tool| {
            let id = tool.id();
            let w = graph.weight(from, &id);
            let relevance = relevance.as_ref().map_or(0.0, |(index, query)| index.relevance(query, &id));
            let weight = (w > 0.0).then(|| integer_weight(w));
            let detail = match weight {
                Some(w) if from == START => format!("ToolNet {w} as a first call"),
                Some(w) => format!("ToolNet {w} after {}", display_name(from, &id)),
                None => String::new(),
            };
            (w, RankedTool { id, name: tool.name.clone(), weight, relevance, sort_text: String::new(), detail })
        })
        .collect();
    ranked.sort_by(|(wa, a), (wb, b)| {
        wb.total_cmp(wa).then_with(|| b.relevance.total_cmp(&a.relevance)).then_with(|| a.name.cmp(&b.name))
    });
    ranked
        .into_iter()
        .enumerate()
        .map(|(i, (_, mut t))| {
            t.sort_text = format!("{i:04}");
            t
        })
        .collect()
}

/// The hover section on a tool: its neighbourhood (what comes before and after it, with integer
/// weights) and its recent reliability. `None` when the graph knows nothing about it.
pub fn hover_markdown(graph: &ToolGraph, tool: &str, k: usize) -> Option<String> {
    let before: Vec<(String, u32)> =
        graph.predecessors(tool).into_iter().take(k).map(|(from, w)| (from.to_string(), integer_weight(w))).collect();
    let after = successors(graph, tool, k);
    let score = graph.score(tool);
    if before.is_empty() && after.is_empty() && score.is_none() {
        return None;
    }
    let mut out = String::from("**In this workspace's programs and runs** (ToolNet)\n");
    if !before.is_empty() {
        out.push_str(&format!("\n- usually called after {}", listed(&before, tool)));
    }
    if !after.is_empty() {
        let seen = graph.out_count(tool);
        out.push_str(&format!("\n- usually followed by {} — of {seen} times seen", listed(&after, tool)));
    }
    if let Some(score) = score {
        let recent: Vec<String> = score.recent.iter().map(|s| signed(*s)).collect();
        let runs = if score.runs == 1 { "1 run".to_string() } else { format!("{} runs", score.runs) };
        out.push_str(&format!(
            "\n- {} of its last {} runs failed or answered badly (their scores, oldest first: {}; over {runs}: {})",
            score.recent_failures(),
            score.recent.len(),
            recent.join(" "),
            signed(score.total),
        ));
        if score.failing_lately() {
            out.push_str("\n\n⚠ failing lately");
        }
    }
    out.push('\n');
    Some(out)
}

/// A hint message when `tool` has been failing lately ([`super::ToolScore::failing_lately`]: its
/// latest run scored below zero, and so do its last three together); `None` otherwise.
pub fn failing_lately(graph: &ToolGraph, tool: &str) -> Option<String> {
    let score = graph.score(tool)?;
    score.failing_lately().then(|| {
        format!(
            "`{tool}` has been failing lately: {} of its last {} runs failed or answered badly (ToolNet score {})",
            score.recent_failures(),
            score.recent.len(),
            signed(score.total)
        )
    })
}

/// `+1`, `-2`, `+0.5`, `0`.
fn signed(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == 0.0 {
        "0".into()
    } else if r.fract() == 0.0 {
        format!("{:+}", r as i64)
    } else {
        format!("{r:+}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ToolnetConfig;

    fn graph() -> ToolGraph {
        let mut g = ToolGraph::new(&ToolnetConfig { alpha: 0.5, beta: 1.0, ..Default::default() });
        for _ in 0..3 {
            g.add_trajectory(&["tmdb.search_person", "tmdb.person_movie_credits"]);
        }
        g.add_trajectory(&["tmdb.search_person", "tmdb.person"]);
        g.add_trajectory(&["tmdb.search_person", "other.lookup"]);
        g
    }

    #[test]
    fn hints_use_integer_weights_and_short_names() {
        let g = graph();
        assert_eq!(
            successors(&g, "tmdb.search_person", 2),
            [("tmdb.person_movie_credits".to_string(), 60), ("other.lookup".to_string(), 20)]
        );
        // As many as fit the 40 characters VS Code shows of a hint; the rest is in the tooltip.
        assert_eq!(hint_label(&g, "tmdb.search_person", 3).unwrap(), "→ person_movie_credits 60%");
        assert_eq!(hint_label(&g, "tmdb.person", 3), None);
        assert_eq!(what_next_label(&g, Some("tmdb.search_person"), 3).unwrap(), "next → person_movie_credits 60%");
        assert_eq!(hint_label(&g, "tmdb.person_movie_credits", 3), None, "only a program's end follows");
        let tooltip = hint_tooltip(&g, Some("tmdb.search_person"), 3);
        assert_eq!(
            tooltip,
            "After tmdb.search_person, this workspace's programs, runs and imported trajectories called \
             person_movie_credits (60%), other.lookup (20%), person (20%) (5 times seen; ToolNet)"
        );
        assert!(
            hint_tooltip(&g, Some("tmdb.person_movie_credits"), 3)
                .contains("nothing after it (a program's last call) (100%)")
        );
        assert_eq!(hint_label(&g, "tmdb.unknown", 3), None);
        assert_eq!(what_next_label(&g, Some("tmdb.person_movie_credits"), 3), None, "only `end` follows");
        assert_eq!(what_next_label(&g, None, 3).unwrap(), "next → search_person 100%");
    }

    #[test]
    fn failing_lately_follows_recent_scores() {
        let mut g = graph();
        let id = "tmdb.person".to_string();
        for s in [1.0, 1.0, 1.0] {
            g.record_scores([(&id, &s)]);
        }
        assert_eq!(failing_lately(&g, "tmdb.person"), None);
        let bad = -2.0;
        g.record_scores([(&id, &bad)]);
        assert_eq!(failing_lately(&g, "tmdb.person"), None, "one failure after three successes");
        g.record_scores([(&id, &bad)]);
        let message = failing_lately(&g, "tmdb.person").unwrap();
        assert!(message.contains("2 of its last 5 runs"), "{message}");
        let hover = hover_markdown(&g, "tmdb.person", 3).unwrap();
        assert!(hover.contains("usually called after search_person (20%)"), "{hover}");
        assert!(hover.contains("2 of its last 5 runs failed"), "{hover}");
        assert!(hover.contains("oldest first: +1 +1 +1 -2 -2"), "{hover}");
        assert!(!hover.contains("start") && !hover.contains(" end "), "no graph jargon: {hover}");
        assert!(hover.contains("failing lately"), "{hover}");
        assert_eq!(failing_lately(&g, "tmdb.search_person"), None, "never scored");
    }
}
