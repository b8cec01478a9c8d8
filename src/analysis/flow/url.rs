//! What string a URL expression spells, as pieces for [`FlatUrl`](crate::analysis::dialect::FlatUrl):
//! literal text (with where it came from, for exact ranges) and holes for what is unknown. URLs are
//! built from literals, f-strings, `+`, implicit concatenation, and names holding strings, read
//! from their last assignment before the use.

use tree_sitter::Node;

use super::{Walker, contains_statements};
use crate::analysis::dialect::UrlPart;
use crate::analysis::parse::{content_value, decode_escape, fields, range_of, text_of};

/// How many names and nested pieces a URL is followed through. Names may refer to each other,
/// even in a cycle (`url = url + "/x"` reads its own assignment), so the resolution must stop.
const MAX_URL_DEPTH: usize = 8;

impl<'t, 'c> Walker<'t, 'c> {
    /// Indexes every `name = value` statement, for [`Self::assigned_value`].
    pub(super) fn collect_assignments(&mut self, root: Node<'t>) {
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            if node.kind() == "assignment"
                && let (Some(left), Some(right)) =
                    (node.child_by_field_id(fields().left.get()), node.child_by_field_id(fields().right.get()))
                && left.kind() == "identifier"
            {
                self.assignments
                    .entry(text_of(left, self.text).to_string())
                    .or_default()
                    .push((node.start_byte(), right));
            }
            // URL constants are assigned by statements; expressions need not be searched.
            if node.kind() == "assignment" || contains_statements(node.kind()) {
                let mut cursor = node.walk();
                stack.extend(node.named_children(&mut cursor));
            }
        }
        for list in self.assignments.values_mut() {
            list.sort_by_key(|(at, _)| *at);
        }
    }

    /// The right-hand side of the last assignment to `name` before `at` (else the first after it,
    /// for constants defined below a function that uses them).
    fn assigned_value(&self, name: &str, at: usize) -> Option<Node<'t>> {
        let list = self.assignments.get(name)?;
        list.iter().rev().find(|(pos, _)| *pos < at).or_else(|| list.first()).map(|(_, rhs)| *rhs)
    }

    /// The pieces of a URL expression.
    pub(super) fn url_parts(&self, node: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
        if depth > MAX_URL_DEPTH {
            return vec![hole(node)];
        }
        match node.kind() {
            "string" => self.string_url_parts(node, depth),
            "concatenated_string" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                children.into_iter().flat_map(|c| self.url_parts(c, depth + 1)).collect()
            }
            "binary_operator" if node.child_by_field_id(fields().operator.get()).is_some_and(|o| o.kind() == "+") => {
                let mut parts = Vec::new();
                if let Some(l) = node.child_by_field_id(fields().left.get()) {
                    parts.extend(self.url_parts(l, depth + 1));
                }
                if let Some(r) = node.child_by_field_id(fields().right.get()) {
                    parts.extend(self.url_parts(r, depth + 1));
                }
                parts
            }
            "parenthesized_expression" => match node.named_child(0) {
                Some(inner) => self.url_parts(inner, depth + 1),
                None => vec![hole(node)],
            },
            "identifier" => self.assigned_url_parts(node, depth),
            _ => vec![hole(node)],
        }
    }

    /// A string literal or f-string; its pieces are exact where the source text is the value.
    fn string_url_parts(&self, node: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
        let mut parts = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                // Bytes are no URL text.
                "string_start" if text_of(child, self.text).to_ascii_lowercase().contains('b') => {
                    return vec![hole(node)];
                }
                "string_content" => {
                    let value = content_value(child, self.text);
                    let exact = value.len() == child.end_byte() - child.start_byte();
                    parts.push(UrlPart { text: value, hole: None, origin: range_of(child), exact })
                }
                "escape_sequence" => parts.push(UrlPart {
                    text: decode_escape(text_of(child, self.text)),
                    hole: None,
                    origin: range_of(child),
                    exact: false,
                }),
                "interpolation" => self.interpolation_url_parts(child, depth, &mut parts),
                _ => {}
            }
        }
        parts
    }

    /// `{expr}` in an f-string: what `expr` spells, located at the braces (its text is elsewhere);
    /// a hole when it is formatted (`{x:>4}`, `{x!r}`) or unknown.
    fn interpolation_url_parts(&self, interpolation: Node<'t>, depth: usize, parts: &mut Vec<UrlPart<'t>>) {
        let inner = interpolation.child_by_field_id(fields().expression.get()).or_else(|| interpolation.named_child(0));
        let has_format = interpolation.child_by_field_id(fields().format_specifier.get()).is_some()
            || interpolation.child_by_field_id(fields().type_conversion.get()).is_some();
        match inner {
            Some(e) if !has_format => {
                let resolved = self.url_parts(e, depth + 1);
                if resolved.len() == 1 && resolved[0].hole.is_some() {
                    parts.push(hole(e));
                } else {
                    parts.extend(resolved.into_iter().map(|mut p| {
                        p.origin = if p.hole.is_some() { p.origin } else { range_of(interpolation) };
                        p.exact = false;
                        p
                    }));
                }
            }
            Some(e) => parts.push(hole(e)),
            None => parts.push(hole(interpolation)),
        }
    }

    /// A name holding a string: what its assignment spells, located at the name.
    fn assigned_url_parts(&self, name: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
        match self.assigned_value(text_of(name, self.text), name.start_byte()) {
            Some(rhs) if is_string_expression(rhs) => self
                .url_parts(rhs, depth + 1)
                .into_iter()
                .map(|mut p| {
                    if p.hole.is_none() {
                        p.origin = range_of(name);
                        p.exact = false;
                    }
                    p
                })
                .collect(),
            _ => vec![hole(name)],
        }
    }
}

/// A piece whose value is unknown: the expression `node` stands for it.
fn hole(node: Node) -> UrlPart {
    UrlPart { text: String::new(), hole: Some(node), origin: range_of(node), exact: false }
}

/// Whether an assigned value may be a string worth following into: a literal, a concatenation
/// with one, or another name.
fn is_string_expression(node: Node) -> bool {
    match node.kind() {
        "string" | "concatenated_string" => true,
        "binary_operator" => {
            node.child_by_field_id(fields().left.get()).is_some_and(is_string_expression)
                || node.child_by_field_id(fields().right.get()).is_some_and(is_string_expression)
        }
        "parenthesized_expression" => node.named_child(0).is_some_and(is_string_expression),
        "identifier" => true,
        _ => false,
    }
}
