//! What string a URL expression spells, as pieces for [`FlatUrl`](crate::analysis::dialect::FlatUrl):
//! literal text (with where it came from, for exact ranges) and holes for what is unknown. URLs are
//! built from literals, f-strings, `+`, implicit concatenation, `str.format`, `%` formatting,
//! `urljoin`, and names holding strings, read from their last assignment before the use (`+=`
//! extends what the name held).

use std::collections::HashMap;

use tree_sitter::Node;

use super::Walker;
use crate::analysis::dialect::UrlPart;
use crate::analysis::parse::{
    contains_statements, content_value, decode_escape, fields, range_of, string_value, text_of,
};

/// How many names and nested pieces a URL is followed through. Names may refer to each other,
/// even in a cycle (`url = url + "/x"` reads its own assignment), so the resolution must stop.
const MAX_URL_DEPTH: usize = 8;

/// Every `name = value` (also `a, b = x, y`) and `name += value` statement under `root`: name →
/// (position, right-hand side), in order. An augmented assignment is indexed as itself.
pub(super) fn assignments<'t>(root: Node<'t>, text: &str) -> Assignments<'t> {
    let mut index: Assignments<'t> = HashMap::new();
    let mut add = |name: Node<'t>, at: usize, value: Node<'t>| {
        index.entry(text_of(name, text).to_string()).or_default().push((at, value));
    };
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let sides = (node.child_by_field_id(fields().left.get()), node.child_by_field_id(fields().right.get()));
        match (node.kind(), sides) {
            ("assignment", (Some(left), Some(right))) if left.kind() == "identifier" => {
                add(left, node.start_byte(), right);
            }
            ("assignment", (Some(left), Some(right)))
                if matches!(left.kind(), "pattern_list" | "tuple_pattern")
                    && matches!(right.kind(), "expression_list" | "tuple")
                    && left.named_child_count() == right.named_child_count() =>
            {
                for i in 0..left.named_child_count() as u32 {
                    if let (Some(name), Some(value)) = (left.named_child(i), right.named_child(i))
                        && name.kind() == "identifier"
                    {
                        add(name, node.start_byte(), value);
                    }
                }
            }
            ("augmented_assignment", (Some(left), Some(_)))
                if left.kind() == "identifier"
                    && node.child_by_field_id(fields().operator.get()).is_some_and(|o| o.kind() == "+=") =>
            {
                add(left, node.start_byte(), node);
            }
            _ => {}
        }
        // URL constants are assigned by statements; expressions need not be searched.
        if matches!(node.kind(), "assignment" | "augmented_assignment") || contains_statements(node.kind()) {
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
        }
    }
    for list in index.values_mut() {
        list.sort_by_key(|(at, _)| *at);
    }
    index
}

/// name → (position, right-hand side) of each assignment to it, in order.
pub(super) type Assignments<'t> = HashMap<String, Vec<(usize, Node<'t>)>>;

impl<'t, 'c> Walker<'t, 'c> {
    /// The right-hand side of the last assignment to `name` before `at` (else the first after it,
    /// for constants defined below a function that uses them); for `name += x`, that statement.
    pub(super) fn assigned_value(&self, name: &str, at: usize) -> Option<Node<'t>> {
        self.log.borrow_mut().used_assignments();
        // Indexed on the first URL that names a variable: most edits of most programs need none,
        // and the index walks the whole program.
        let list = self.assignments.get_or_init(|| assignments(self.root, self.text)).get(name)?;
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
            "binary_operator" if node.child_by_field_id(fields().operator.get()).is_some_and(|o| o.kind() == "%") => {
                self.percent_url_parts(node, depth)
            }
            "call" => self.call_url_parts(node, depth),
            "identifier" => self.assigned_url_parts(node, depth),
            _ => vec![hole(node)],
        }
    }

    /// `"…{}…".format(…)` and `urljoin(base, path)`; any other call is a hole.
    fn call_url_parts(&self, call: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
        let function = call.child_by_field_id(fields().function.get());
        let arguments = call.child_by_field_id(fields().arguments.get());
        let (Some(function), Some(arguments)) = (function, arguments) else { return vec![hole(call)] };
        let name = match function.kind() {
            "attribute" => function.child_by_field_id(fields().attribute.get()).map(|a| text_of(a, self.text)),
            "identifier" => Some(text_of(function, self.text)),
            _ => None,
        };
        let mut cursor = arguments.walk();
        let args: Vec<Node<'t>> = arguments.named_children(&mut cursor).filter(|a| a.kind() != "comment").collect();
        match name {
            Some("format") if function.kind() == "attribute" => {
                match function.child_by_field_id(fields().object.get()) {
                    Some(template) if template.kind() == "string" => {
                        self.format_url_parts(call, template, &args, depth)
                    }
                    _ => vec![hole(call)],
                }
            }
            Some("urljoin") if args.len() == 2 => self.urljoin_url_parts(call, args[0], args[1], depth),
            _ => vec![hole(call)],
        }
    }

    /// `"{}/repos/{owner}".format(API, owner=o)`: the template's text with each field replaced by
    /// what its argument spells (a hole when unknown or formatted with a spec).
    fn format_url_parts(
        &self,
        call: Node<'t>,
        template: Node<'t>,
        args: &[Node<'t>],
        depth: usize,
    ) -> Vec<UrlPart<'t>> {
        let Some(text) = string_value(template, self.text) else { return vec![hole(call)] };
        let positional: Vec<Node<'t>> = args.iter().copied().filter(|a| a.kind() != "keyword_argument").collect();
        let keyword = |name: &str| {
            args.iter().find_map(|a| {
                let key = a.child_by_field_id(fields().name.get())?;
                (a.kind() == "keyword_argument" && text_of(key, self.text) == name)
                    .then(|| a.child_by_field_id(fields().value.get()))?
            })
        };
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut next_index = 0;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('{', Some('{')) | ('}', Some('}')) => {
                    literal.push(c);
                    chars.next();
                }
                ('{', _) => {
                    let field: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    push_literal(&mut parts, &mut literal, template);
                    let argument = if field.contains([':', '!', '.', '[']) {
                        None
                    } else if field.is_empty() {
                        next_index += 1;
                        positional.get(next_index - 1).copied()
                    } else if let Ok(i) = field.parse::<usize>() {
                        positional.get(i).copied()
                    } else {
                        keyword(&field)
                    };
                    match argument {
                        Some(a) => parts.extend(self.url_parts(a, depth + 1).into_iter().map(moved_to(a))),
                        None => parts.push(hole(call)),
                    }
                }
                _ => literal.push(c),
            }
        }
        push_literal(&mut parts, &mut literal, template);
        parts
    }

    /// `"%s/repos/%s" % (API, owner)`: the template with each `%s`/`%d` replaced by what its
    /// value spells; named fields (`%(k)s`) are holes.
    fn percent_url_parts(&self, node: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
        let template = node.child_by_field_id(fields().left.get());
        let values = node.child_by_field_id(fields().right.get());
        let (Some(template), Some(values)) = (template, values) else { return vec![hole(node)] };
        let Some(text) = string_value(template, self.text) else { return vec![hole(node)] };
        let values: Vec<Node<'t>> = match values.kind() {
            "tuple" => {
                let mut cursor = values.walk();
                values.named_children(&mut cursor).collect()
            }
            _ => vec![values],
        };
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut next = 0;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                literal.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => literal.push('%'),
                Some('s' | 'd' | 'i') => {
                    push_literal(&mut parts, &mut literal, template);
                    match values.get(next) {
                        Some(&v) => parts.extend(self.url_parts(v, depth + 1).into_iter().map(moved_to(v))),
                        None => parts.push(hole(node)),
                    }
                    next += 1;
                }
                _ => {
                    // `%(name)s`, `%5d`, `%r`: not followed.
                    push_literal(&mut parts, &mut literal, template);
                    return parts.into_iter().chain([hole(node)]).collect();
                }
            }
        }
        push_literal(&mut parts, &mut literal, template);
        parts
    }

    /// `urljoin(base, path)`: an absolute path keeps the base's scheme and host; a relative one
    /// replaces the base's last segment. Unknown when the base is not fully known.
    fn urljoin_url_parts(&self, call: Node<'t>, base: Node<'t>, path: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
        let base_parts = self.url_parts(base, depth + 1);
        if base_parts.iter().any(|p| p.hole.is_some()) {
            return vec![hole(call)];
        }
        let base_text: String = base_parts.iter().map(|p| p.text.as_str()).collect();
        let path_parts = self.url_parts(path, depth + 1);
        let path_start = path_parts.first().filter(|p| p.hole.is_none()).map(|p| p.text.as_str()).unwrap_or("");
        let kept = if path_start.contains("://") {
            return path_parts;
        } else if path_start.starts_with('/') {
            let host_start = base_text.find("://").map_or(0, |i| i + 3);
            base_text[host_start..].find('/').map_or(base_text.len(), |i| host_start + i)
        } else {
            base_text.rfind('/').map_or(base_text.len(), |i| i + 1)
        };
        let mut parts =
            vec![UrlPart { text: base_text[..kept].to_string(), hole: None, origin: range_of(base), exact: false }];
        parts.extend(path_parts);
        parts
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
        self.named_url_parts(text_of(name, self.text), name.start_byte(), name, depth)
            .into_iter()
            .map(moved_to(name))
            .collect()
    }

    /// What `name` spells at `at`: its last assignment's value; after `name += x`, what it held
    /// before followed by `x`.
    fn named_url_parts(&self, name: &str, at: usize, origin: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
        if depth > MAX_URL_DEPTH {
            return vec![hole(origin)];
        }
        match self.assigned_value(name, at) {
            Some(statement) if statement.kind() == "augmented_assignment" && statement.start_byte() < at => {
                let Some(added) = statement.child_by_field_id(fields().right.get()) else { return vec![hole(origin)] };
                let mut parts = self.named_url_parts(name, statement.start_byte(), origin, depth + 1);
                parts.extend(self.url_parts(added, depth + 1));
                parts
            }
            Some(rhs) if is_string_expression(rhs, self.text) => self.url_parts(rhs, depth + 1),
            _ => vec![hole(origin)],
        }
    }
}

/// Ends the literal text gathered so far as one piece from `template`.
fn push_literal<'t>(parts: &mut Vec<UrlPart<'t>>, literal: &mut String, template: Node<'t>) {
    if !literal.is_empty() {
        parts.push(UrlPart { text: std::mem::take(literal), hole: None, origin: range_of(template), exact: false });
    }
}

/// Places the known pieces a name or argument resolved to at that name or argument (their text
/// is elsewhere in the source).
fn moved_to<'t>(at: Node<'t>) -> impl Fn(UrlPart<'t>) -> UrlPart<'t> {
    move |mut p| {
        if p.hole.is_none() {
            p.origin = range_of(at);
            p.exact = false;
        }
        p
    }
}

/// A piece whose value is unknown: the expression `node` stands for it.
fn hole(node: Node) -> UrlPart {
    UrlPart { text: String::new(), hole: Some(node), origin: range_of(node), exact: false }
}

/// Whether an assigned value may be a string worth following into: a literal, a concatenation
/// with one, or another name.
fn is_string_expression(node: Node, text: &str) -> bool {
    match node.kind() {
        "string" | "concatenated_string" => true,
        "binary_operator" => {
            node.child_by_field_id(fields().left.get()).is_some_and(|n| is_string_expression(n, text))
                || node.child_by_field_id(fields().right.get()).is_some_and(|n| is_string_expression(n, text))
        }
        "parenthesized_expression" => node.named_child(0).is_some_and(|n| is_string_expression(n, text)),
        "identifier" => true,
        // `"…".format(…)` and `urljoin(…)`, whose strings `call_url_parts` follows.
        "call" => node.child_by_field_id(fields().function.get()).is_some_and(|f| {
            let name = f.child_by_field_id(fields().attribute.get()).unwrap_or(f);
            matches!(text_of(name, text), "format" | "urljoin")
        }),
        _ => false,
    }
}
