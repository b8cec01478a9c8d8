//! ToolNet's graph as text, Graphviz DOT or an SVG picture (laid out by `layout-rs`), for
//! `chainsmith graph show` and the editor's `chainsmith.graph` command.

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
    let nodes = shown_nodes(catalog, &graph, from)?;
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
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    writeln!(
        out,
        "ToolNet: {} between tools, learnt from {}, {} and {}; each line: a tool, then the tools that came next and the share of the times each did (start: a program's first call, end: its last)",
        plural(graph.edge_count(), "transition", "transitions"),
        plural(programs, "program", "programs"),
        plural(runs, "run", "runs"),
        plural(imported, "imported trajectory", "imported trajectories"),
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

/// The nodes whose successors are shown: `from` alone, else every node with a successor (`start`
/// first, then the tools in order).
fn shown_nodes(catalog: &Catalog, graph: &ToolGraph, from: Option<&str>) -> Result<Vec<String>> {
    Ok(match from {
        Some(name) => vec![resolve_node(catalog, graph, name)?],
        None => {
            let mut nodes: Vec<String> =
                graph.nodes().filter(|n| *n != END && graph.out_count(n) > 0).map(str::to_string).collect();
            nodes.sort_by_key(|n| (n != START, n.clone()));
            nodes
        }
    })
}

/// An SVG picture of the graph, laid out left to right: each shown node's `top` successors with
/// their integer weights (thicker when heavier), the tools of `highlighted` (the document's) filled,
/// and tools failing lately — and the edges into them — drawn in red, dashed. The nodes shown are
/// `from` alone when given, else the highlighted tools when there are any (the picture of one
/// program's neighbourhood), else every node with a successor. Edges into `end` are drawn only
/// from highlighted tools (everywhere else they would crowd the picture), and a tool repeated right
/// after itself is said in its box (`↻ 40`) rather than drawn as a loop.
pub fn render_svg(
    inputs: &WorkspaceGraph,
    catalog: &Catalog,
    from: Option<&str>,
    top: usize,
    highlighted: &[String],
) -> Result<String> {
    use layout::backends::svg::SVGWriter;
    use layout::core::base::Orientation;
    use layout::core::color::Color;
    use layout::core::style::{LineStyleKind, StyleAttr};
    use layout::std_shapes::render::get_shape_size;
    use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
    use layout::topo::layout::VisualGraph;

    const FONT: usize = 14;
    let graph = inputs.graph();
    let top = top.max(1);
    let mut edges: Vec<(String, String, u32)> = Vec::new();
    let is_highlighted = |id: &str| highlighted.iter().any(|h| h == id);
    let expanded: Vec<String> = match from {
        None if highlighted.iter().any(|h| graph.contains(h)) => {
            highlighted.iter().filter(|h| graph.contains(h)).cloned().collect()
        }
        _ => shown_nodes(catalog, &graph, from)?,
    };
    for node in expanded {
        let successors = graph.successors(&node).into_iter().filter(|(to, _)| *to != END || is_highlighted(&node));
        for (to, w) in successors.take(top) {
            edges.push((node.clone(), to.to_string(), integer_weight(w)));
        }
    }
    let failing = |id: &str| graph.score(id).is_some_and(|s| s.failing_lately());
    let mut order: Vec<String> = Vec::new();
    for (a, b, _) in &edges {
        for id in [a, b] {
            if !order.contains(id) {
                order.push(id.clone());
            }
        }
    }
    if order.is_empty() {
        order.extend(from.map(|name| resolve_node(catalog, &graph, name)).transpose()?);
    }
    let mut picture = VisualGraph::new(Orientation::LeftToRight);
    let mut handles = std::collections::HashMap::new();
    for id in &order {
        let repeats = edges.iter().find(|(a, b, _)| a == id && b == id).map(|(_, _, w)| *w);
        let label = match repeats {
            Some(w) => format!("{id} ↻ {w}"),
            None => id.clone(),
        };
        let shape = match id.as_str() {
            START => ShapeKind::new_circle(START),
            END => ShapeKind::new_double_circle(END),
            _ => ShapeKind::new_box(&label),
        };
        let line = if failing(id) { Color::fast("#c62828") } else { Color::fast("#37474f") };
        let fill = if is_highlighted(id) { Color::fast("#bbdefb") } else { Color::fast("white") };
        let look = StyleAttr::new(line, if failing(id) { 3 } else { 1 }, Some(fill), 4, FONT);
        let size = get_shape_size(Orientation::LeftToRight, &shape, FONT, false);
        handles.insert(id.clone(), picture.add_node(Element::create(shape, look, Orientation::LeftToRight, size)));
    }
    for (a, b, w) in &edges {
        if a == b {
            continue;
        }
        let (style, color) =
            if failing(b) { (LineStyleKind::Dashed, "#c62828") } else { (LineStyleKind::Normal, "#546e7a") };
        let look = StyleAttr::new(Color::fast(color), (1 + *w as usize / 40).min(3), None, 0, FONT - 2);
        let arrow = Arrow::new(LineEndKind::None, LineEndKind::Arrow, style, &w.to_string(), &look, &None, &None);
        picture.add_edge(arrow, handles[a], handles[b]);
    }
    let mut svg = SVGWriter::new();
    if order.is_empty() {
        // Nothing learnt yet: an empty picture says so rather than failing.
        let shape = ShapeKind::new_box("ToolNet has no edges yet: run or import programs");
        let size = get_shape_size(Orientation::LeftToRight, &shape, FONT, false);
        picture.add_node(Element::create(shape, StyleAttr::simple(), Orientation::LeftToRight, size));
    }
    // The layout is a third party's code: a graph it cannot lay out is an error, not a crash.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        picture.do_it(false, false, false, &mut svg);
        svg.finalize()
    }))
    .map_err(|_| anyhow::anyhow!("the graph could not be laid out as a picture; `--dot` or text shows it"))
}

fn quoted(id: &str) -> String {
    format!("\"{}\"", id.replace('\\', "\\\\").replace('"', "\\\""))
}
