//! ToolNet's graph as text or Graphviz DOT, for `chainsmith graph show` and the editor's
//! `chainsmith.graph` command.

use anyhow::{Result, bail};

use super::editor::display_name;
use super::workspace::WorkspaceGraph;
use super::{END, START, ToolGraph, integer_weight};
use crate::toolset::Catalog;

fn resolve_node(catalog: &Catalog, graph: &ToolGraph, name: &str) -> Result<String> {
    if name == START || name == END || graph.contains(name) {
        return Ok(name.to_string());
    }
    match catalog.find(name) {
        Ok(tool) => Ok(tool.id()),
        Err(message) => bail!("{message}"),
    }
}

/// `graph show` as text (or DOT): each node's top successors with integer weights and its recent
/// reliability. The editor's `chainsmith.graph` command answers with the same.
pub fn render(inputs: &WorkspaceGraph, catalog: &Catalog, dot: bool, from: Option<&str>, top: usize) -> Result<String> {
    use std::fmt::Write as _;
    let graph = inputs.graph();
    let nodes: Vec<String> = match from {
        Some(name) => vec![resolve_node(catalog, &graph, name)?],
        None => {
            let mut nodes: Vec<String> =
                graph.nodes().filter(|n| *n != END && graph.out_count(n) > 0).map(str::to_string).collect();
            // `start` first, then the tools in order.
            nodes.sort_by_key(|n| (n != START, n.clone()));
            nodes
        }
    };
    let top = top.max(1);
    let mut out = String::new();
    if dot {
        writeln!(out, "digraph toolnet {{")?;
        writeln!(out, "  rankdir=LR;")?;
        writeln!(out, "  node [shape=box];")?;
        writeln!(out, "  \"{START}\" [shape=circle];")?;
        writeln!(out, "  \"{END}\" [shape=doublecircle];")?;
        for node in &nodes {
            if let Some(score) = graph.score(node)
                && score.failing_lately()
            {
                writeln!(out, "  {} [color=red];", quoted(node))?;
            }
            for (to, w) in graph.successors(node).into_iter().take(top) {
                let w = integer_weight(w);
                writeln!(
                    out,
                    "  {} -> {} [label=\"{w}\", penwidth={:.1}];",
                    quoted(node),
                    quoted(to),
                    1.0 + w as f64 / 25.0
                )?;
            }
        }
        writeln!(out, "}}")?;
        return Ok(out);
    }
    let (imported, programs, runs) = inputs.counts();
    writeln!(
        out,
        "ToolNet: {} edges from {imported} imported trajectories, {programs} programs and {runs} runs (alpha {}, beta {})",
        graph.edge_count(),
        graph.alpha,
        graph.beta
    )?;
    for node in &nodes {
        let successors = graph.successors(node);
        let shown: Vec<String> = successors
            .iter()
            .take(top)
            .map(|(to, w)| format!("{} {}", display_name(to, node), integer_weight(*w)))
            .collect();
        let more = successors.len().saturating_sub(top);
        let more = if more > 0 { format!(" (+{more} more)") } else { String::new() };
        if shown.is_empty() {
            writeln!(out, "{node} → (no successor yet)")?;
        } else {
            writeln!(out, "{node} → {}{more}", shown.join(" · "))?;
        }
        if let Some(score) = graph.score(node) {
            let recent: Vec<String> = score.recent.iter().map(|s| format!("{s:+}")).collect();
            writeln!(
                out,
                "    score {:+.1} over {} runs; recent {}{}",
                score.total,
                score.runs,
                recent.join(" "),
                if score.failing_lately() { " — failing lately" } else { "" }
            )?;
        }
    }
    Ok(out)
}

fn quoted(id: &str) -> String {
    format!("\"{}\"", id.replace('\\', "\\\\").replace('"', "\\\""))
}
