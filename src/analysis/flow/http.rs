//! The HTTP dialect in the walk: `requests`/`httpx` calls, their URL flattened (literals,
//! f-strings, `+`, names holding strings) and matched to a toolset's endpoint, and their query,
//! path and body arguments checked against the tool's parameters.

use tree_sitter::Node;

use super::calls::dict_pairs;
use super::*;

impl<'t, 'c> Walker<'t, 'c> {
    pub(super) fn http_call(&mut self, node: Node<'t>, method: Option<&str>, arguments: Option<Node<'t>>) -> Ty<'c> {
        let target = self.target.take();
        let Some(arguments) = arguments else { return Ty::Unknown };
        let mut cursor = arguments.walk();
        let children: Vec<Node<'t>> = arguments.named_children(&mut cursor).collect();
        let mut positional = children.iter().filter(|c| !matches!(c.kind(), "keyword_argument" | "comment"));
        let keyword = |name: &str| {
            children
                .iter()
                .find(|c| {
                    c.kind() == "keyword_argument"
                        && c.child_by_field_id(fields().name.get()).is_some_and(|n| text_of(n, self.text) == name)
                })
                .and_then(|c| c.child_by_field_id(fields().value.get()))
        };
        let (method, url_node) = match method {
            Some(m) => (Some(m.to_string()), positional.next().copied().or_else(|| keyword("url"))),
            None => {
                let m = positional.next().copied().or_else(|| keyword("method"));
                let m = m.and_then(|m| string_value(m, self.text)).map(|s| s.to_ascii_lowercase());
                (m, positional.next().copied().or_else(|| keyword("url")))
            }
        };
        let (Some(method), Some(url_node)) = (method, url_node) else {
            self.eval_args(Some(arguments));
            return Ty::Unknown;
        };
        let parts = self.url_parts(url_node, 0);
        let flat = FlatUrl::new(parts);
        let Some(split) = endpoint::split_url(&flat.flat, self.catalog) else {
            // Not a known tool's URL: an ordinary HTTP call.
            self.eval_args(Some(arguments));
            return Ty::Unknown;
        };
        let toolset = self.catalog.toolset(&split.toolset).expect("split_url returns catalog toolsets");
        self.out.urls.push(UrlSite {
            toolset: toolset.name.clone(),
            range: range_of(url_node),
            path_start: {
                let r = flat.source_range(split.path_start, split.path_start);
                (r.start == r.end).then_some(r.start)
            },
        });
        let matched = endpoint::match_endpoint(toolset, &method, &split.segments);
        let url_range = range_of(url_node);
        let path_range = {
            let end = split.segments.last().map(|s| s.start + s.text.len()).unwrap_or(split.path_start);
            let r = flat.source_range(split.path_start, end);
            if r.end > r.start { r } else { url_range }
        };
        let tool = match matched {
            Matched::Tool(m) => Some(m),
            Matched::Unknowable => None,
            Matched::WrongMethod(methods) => {
                let d = self.error(
                    path_range,
                    "unknown-endpoint",
                    format!(
                        "{} {} is not an endpoint of `{}`; that path has {}",
                        method.to_ascii_uppercase(),
                        endpoint::display_path(&split.segments),
                        toolset.name,
                        methods.join(", ")
                    ),
                );
                self.diag(d);
                None
            }
            Matched::NoPath => {
                let written = endpoint::display_path(&split.segments);
                let mut d = self.error(
                    path_range,
                    "unknown-endpoint",
                    format!("{} {} is not an endpoint of `{}`", method.to_ascii_uppercase(), written, toolset.name),
                );
                let paths: Vec<&str> = toolset
                    .tools
                    .iter()
                    .filter_map(|t| match &t.transport {
                        Transport::Http { method: m, path } if m.eq_ignore_ascii_case(&method) => Some(path.as_str()),
                        _ => None,
                    })
                    .collect();
                let normalized = written.replace("{…}", "{}");
                let comparable: Vec<String> = paths.iter().map(|p| normalize_template(p)).collect();
                if let Some(best) = did_you_mean(&normalized, comparable.iter().map(String::as_str))
                    && let Some(i) = comparable.iter().position(|c| c == best)
                {
                    d.message.push_str(&format!("; did you mean {}?", paths[i]));
                }
                self.diag(d);
                None
            }
        };
        let mut sites: Vec<ArgSite<'t>> = Vec::new();
        let mut complete = true;
        if let Some(m) = &tool {
            for (param_name, segment_index) in &m.path_params {
                let segment = &split.segments[*segment_index];
                let range = flat.source_range(segment.start, segment.start + segment.text.len());
                let (value, text_value) = if segment.text == endpoint::HOLE.to_string() {
                    (flat.hole_at(segment.start), None)
                } else if segment.text.contains(endpoint::HOLE) {
                    (None, None)
                } else {
                    (None, Some((segment.text.clone(), range)))
                };
                let wire =
                    m.tool.params.iter().find(|p| p.location == ParamLocation::Path && &p.wire_name == param_name);
                sites.push(ArgSite {
                    name: wire.map(|p| p.wire_name.clone()).unwrap_or(param_name.clone()),
                    name_range: None,
                    value,
                    text_value,
                    value_range: value.map(range_of).unwrap_or(range),
                    location: Some(ParamLocation::Path),
                });
            }
            for (name, value, name_at, value_at) in &split.query {
                if name.contains(endpoint::HOLE) {
                    complete = false;
                    continue;
                }
                let name_range = flat.source_range(*name_at, name_at + name.len());
                let value_range = flat.source_range(*value_at, value_at + value.len());
                let (v, text_value) = if value == &endpoint::HOLE.to_string() {
                    (flat.hole_at(*value_at), None)
                } else if value.contains(endpoint::HOLE) {
                    (None, None)
                } else {
                    (None, Some((value.clone(), value_range)))
                };
                sites.push(ArgSite {
                    name: name.clone(),
                    name_range: Some(name_range),
                    value: v,
                    text_value,
                    value_range,
                    location: Some(ParamLocation::Query),
                });
            }
        }
        for child in &children {
            if child.kind() != "keyword_argument" {
                if child.id() != url_node.id() {
                    self.expr(*child);
                }
                if child.kind() == "dictionary_splat" {
                    complete = false;
                }
                continue;
            }
            let (Some(n), Some(v)) =
                (child.child_by_field_id(fields().name.get()), child.child_by_field_id(fields().value.get()))
            else {
                continue;
            };
            let location = match text_of(n, self.text) {
                "params" => ParamLocation::Query,
                "json" | "data" => ParamLocation::Body,
                "headers" => ParamLocation::Header,
                _ => {
                    if v.id() != url_node.id() {
                        self.expr(v);
                    }
                    continue;
                }
            };
            if tool.is_none() || location == ParamLocation::Header {
                self.expr(v);
                continue;
            }
            match dict_pairs(v, self.text) {
                Some(pairs) => {
                    for (key, key_range, value) in pairs {
                        match key {
                            Some(key) => sites.push(ArgSite {
                                name: key,
                                name_range: Some(key_range),
                                value: Some(value),
                                text_value: None,
                                value_range: range_of(value),
                                location: Some(location),
                            }),
                            None => {
                                complete = false;
                                self.expr(value);
                            }
                        }
                    }
                }
                None => {
                    complete = false;
                    self.expr(v);
                }
            }
        }
        let call_index = self.out.calls.len();
        let tool_ref = tool.as_ref().map(|m| m.tool);
        self.out.calls.push(ToolCall {
            tool: tool_ref,
            toolset: toolset.name.clone(),
            name: tool_ref.map(|t| t.name.clone()).unwrap_or_else(|| endpoint::display_path(&split.segments)),
            dialect: Dialect::Http,
            range: range_of(node),
            name_range: url_range,
            args_range: range_of(arguments),
            args: Vec::new(),
            target,
            statement_range: self.statement,
            line: node.start_position().row,
        });
        self.check_args(call_index, tool_ref, sites, complete, true, url_range, Some(arguments));
        Ty::Response { call: call_index }
    }

    /// The pieces of a URL expression: literals, f-strings, `+` concatenations, and names
    /// holding them.
    pub(super) fn url_parts(&self, node: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
        let hole = |n: Node<'t>| UrlPart { text: String::new(), hole: Some(n), origin: range_of(n), exact: false };
        if depth > 8 {
            return vec![hole(node)];
        }
        match node.kind() {
            "string" => {
                let mut parts = Vec::new();
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    match child.kind() {
                        "string_start" if text_of(child, self.text).to_ascii_lowercase().contains('b') => {
                            return vec![hole(node)];
                        }
                        "string_content" => {
                            let value = crate::analysis::parse::content_value(child, self.text);
                            let exact = value.len() == child.end_byte() - child.start_byte();
                            parts.push(UrlPart { text: value, hole: None, origin: range_of(child), exact })
                        }
                        "escape_sequence" => parts.push(UrlPart {
                            text: crate::analysis::parse::decode_escape(text_of(child, self.text)),
                            hole: None,
                            origin: range_of(child),
                            exact: false,
                        }),
                        "interpolation" => {
                            let inner =
                                child.child_by_field_id(fields().expression.get()).or_else(|| child.named_child(0));
                            let has_format = child.child_by_field_id(fields().format_specifier.get()).is_some()
                                || child.child_by_field_id(fields().type_conversion.get()).is_some();
                            match inner {
                                Some(e) if !has_format => {
                                    let resolved = self.url_parts(e, depth + 1);
                                    if resolved.len() == 1 && resolved[0].hole.is_some() {
                                        parts.push(hole(e));
                                    } else {
                                        parts.extend(resolved.into_iter().map(|mut p| {
                                            p.origin = if p.hole.is_some() { p.origin } else { range_of(child) };
                                            p.exact = false;
                                            p
                                        }));
                                    }
                                }
                                Some(e) => parts.push(hole(e)),
                                None => parts.push(hole(child)),
                            }
                        }
                        _ => {}
                    }
                }
                parts
            }
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
            "identifier" => {
                let name = text_of(node, self.text);
                match self.assigned_value(name, node.start_byte()) {
                    Some(rhs) if is_string_expression(rhs) => self
                        .url_parts(rhs, depth + 1)
                        .into_iter()
                        .map(|mut p| {
                            if p.hole.is_none() {
                                p.origin = range_of(node);
                                p.exact = false;
                            }
                            p
                        })
                        .collect(),
                    _ => vec![hole(node)],
                }
            }
            _ => vec![hole(node)],
        }
    }
}

pub(super) fn is_string_expression(node: Node) -> bool {
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

pub(super) fn normalize_template(path: &str) -> String {
    let mut out = String::new();
    for segment in endpoint::template_segments(path) {
        out.push('/');
        out.push_str(if endpoint::template_param(segment).is_some() { "{}" } else { segment });
    }
    out
}
