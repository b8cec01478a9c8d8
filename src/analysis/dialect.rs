//! The two program dialects' surface: which names refer to toolsets (module dialect) or to HTTP
//! clients (`requests`, `httpx`), and how a URL expression is matched to a toolset's endpoint.

use std::collections::HashMap;

use tree_sitter::Node;

use super::parse::{fields, range_of, text_of};
use crate::toolset::doc::ByteRange;
use crate::toolset::{Catalog, Tool, Toolset, Transport};

pub const TOOLS_PACKAGE: &str = "chainsmith.tools";
pub const HTTP_METHODS: &[&str] = &["get", "post", "put", "patch", "delete", "head", "options"];

/// Names bound by import statements.
#[derive(Debug, Default)]
pub struct Imports {
    /// Program name → toolset name (`t` → `tmdb`).
    pub toolsets: HashMap<String, String>,
    /// Program name → (toolset, tool) for `from chainsmith.tools.tmdb import search_person`.
    pub tools: HashMap<String, (String, String)>,
    /// Program name → HTTP library module (`requests`, `httpx`).
    pub http_modules: HashMap<String, &'static str>,
    /// Program name → HTTP method for `from requests import get` (`"request"` for `request`,
    /// `"session"` for `Session`/`Client`).
    pub http_functions: HashMap<String, String>,
    /// Import statements naming toolsets: (alias, toolset, range of the toolset token).
    pub toolset_tokens: Vec<(String, String, ByteRange)>,
    /// `from chainsmith.tools.X import name` tokens: (toolset, tool, range of the tool token).
    pub tool_tokens: Vec<(String, String, ByteRange)>,
}

fn http_library(module: &str) -> Option<&'static str> {
    match module {
        "requests" => Some("requests"),
        "httpx" => Some("httpx"),
        _ => None,
    }
}

impl Imports {
    pub fn collect(root: Node, text: &str) -> Imports {
        let mut imports = Imports::default();
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "import_statement" => imports.import_statement(node, text),
                "import_from_statement" => imports.import_from(node, text),
                kind if super::flow::contains_statements(kind) => {
                    let mut cursor = node.walk();
                    stack.extend(node.named_children(&mut cursor));
                }
                _ => {}
            }
        }
        imports
    }

    fn import_statement(&mut self, node: Node, text: &str) {
        let mut cursor = node.walk();
        for name in node.children_by_field_id(fields().name, &mut cursor) {
            let (dotted, alias) = match name.kind() {
                "aliased_import" => (
                    name.child_by_field_id(fields().name.get()),
                    name.child_by_field_id(fields().alias.get()).map(|a| text_of(a, text).to_string()),
                ),
                _ => (Some(name), None),
            };
            let Some(dotted) = dotted else { continue };
            let module = text_of(dotted, text);
            if let Some(toolset) = module.strip_prefix("chainsmith.tools.") {
                let last = dotted.named_child(dotted.named_child_count().saturating_sub(1) as u32).unwrap_or(dotted);
                let program_name = alias.unwrap_or_else(|| module.to_string());
                self.toolset_tokens.push((program_name.clone(), toolset.to_string(), range_of(last)));
                self.toolsets.insert(program_name, toolset.to_string());
            } else if let Some(lib) = http_library(module) {
                self.http_modules.insert(alias.unwrap_or_else(|| module.to_string()), lib);
            }
        }
    }

    fn import_from(&mut self, node: Node, text: &str) {
        let Some(module) = node.child_by_field_id(fields().module_name.get()) else { return };
        let module = text_of(module, text);
        let mut cursor = node.walk();
        for name in node.children_by_field_id(fields().name, &mut cursor) {
            let (imported, alias) = match name.kind() {
                "aliased_import" => {
                    let Some(n) = name.child_by_field_id(fields().name.get()) else { continue };
                    (n, name.child_by_field_id(fields().alias.get()).map(|a| text_of(a, text).to_string()))
                }
                _ => (name, None),
            };
            let imported_name = text_of(imported, text).to_string();
            let program_name = alias.unwrap_or_else(|| imported_name.clone());
            if module == TOOLS_PACKAGE {
                self.toolset_tokens.push((program_name.clone(), imported_name.clone(), range_of(imported)));
                self.toolsets.insert(program_name, imported_name);
            } else if let Some(toolset) = module.strip_prefix("chainsmith.tools.") {
                self.tool_tokens.push((toolset.to_string(), imported_name.clone(), range_of(imported)));
                self.tools.insert(program_name, (toolset.to_string(), imported_name));
            } else if http_library(module).is_some() {
                let lower = imported_name.to_ascii_lowercase();
                if HTTP_METHODS.contains(&lower.as_str()) || lower == "request" {
                    self.http_functions.insert(program_name, lower);
                } else if imported_name == "Session" || imported_name == "Client" {
                    self.http_functions.insert(program_name, "session".into());
                }
            }
        }
    }
}

/// A piece of a URL expression: literal text, or a hole (an expression whose value is unknown).
#[derive(Debug, Clone)]
pub struct UrlPart<'t> {
    pub text: String,
    pub hole: Option<Node<'t>>,
    /// Where the piece is in the source: the literal's content, or the expression standing for it.
    pub origin: ByteRange,
    /// Whether `origin.start + i` is the source offset of byte `i` of `text`.
    pub exact: bool,
}

/// A URL flattened to one string with holes as `\u{1}`, and a map back to the source.
#[derive(Debug, Clone)]
pub struct FlatUrl<'t> {
    pub flat: String,
    /// (start in `flat`, part).
    pub parts: Vec<(usize, UrlPart<'t>)>,
}

pub const HOLE: char = '\u{1}';

impl<'t> FlatUrl<'t> {
    pub fn new(parts: Vec<UrlPart<'t>>) -> Self {
        let mut flat = String::new();
        let mut placed = Vec::with_capacity(parts.len());
        for part in parts {
            let start = flat.len();
            if part.hole.is_some() {
                flat.push(HOLE);
            } else {
                flat.push_str(&part.text);
            }
            placed.push((start, part));
        }
        FlatUrl { flat, parts: placed }
    }

    /// The source range of `flat[start..end]`: exact when it lies in one exact literal, else the
    /// origin of the part holding `start`.
    pub fn source_range(&self, start: usize, end: usize) -> ByteRange {
        let Some((part_start, part)) = self.parts.iter().rev().find(|(s, _)| *s <= start) else {
            return ByteRange::default();
        };
        let part_len = if part.hole.is_some() { HOLE.len_utf8() } else { part.text.len() };
        if part.exact && part.hole.is_none() && end <= part_start + part_len {
            ByteRange::new(part.origin.start + (start - part_start), part.origin.start + (end - part_start))
        } else {
            part.origin
        }
    }

    /// The hole expression at `flat[at]`, if there is one.
    pub fn hole_at(&self, at: usize) -> Option<Node<'t>> {
        self.parts.iter().find(|(s, p)| *s == at && p.hole.is_some()).and_then(|(_, p)| p.hole)
    }
}

/// One segment of the URL's path: its text in `flat` and where it starts.
#[derive(Debug, Clone)]
pub struct Segment {
    pub text: String,
    pub start: usize,
}

/// A URL split after a toolset's base URL.
#[derive(Debug)]
pub struct SplitUrl {
    pub toolset: String,
    /// Offset in `flat` where the path starts.
    pub path_start: usize,
    pub segments: Vec<Segment>,
    /// (name, value, start of name in `flat`, start of value) from `?a=1&b=2`.
    pub query: Vec<(String, String, usize, usize)>,
}

fn strip_scheme(url: &str) -> &str {
    url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")).unwrap_or(url)
}

/// Which toolset's base URL the flattened URL starts with (the longest base wins).
pub fn split_url(flat: &str, catalog: &Catalog) -> Option<SplitUrl> {
    let flat_no_scheme = strip_scheme(flat);
    let scheme_len = flat.len() - flat_no_scheme.len();
    let mut best: Option<(&Toolset, usize)> = None;
    for toolset in &catalog.toolsets {
        let Some(base) = toolset.base_url.as_deref() else { continue };
        let base = strip_scheme(base.trim_end_matches('/'));
        if base.is_empty() || !flat_no_scheme.starts_with(base) {
            continue;
        }
        let rest = &flat_no_scheme[base.len()..];
        if !(rest.is_empty() || rest.starts_with('/') || rest.starts_with('?')) {
            continue;
        }
        if best.is_none_or(|(_, len)| base.len() > len) {
            best = Some((toolset, base.len()));
        }
    }
    let (toolset, base_len) = best?;
    let path_start = scheme_len + base_len;
    let rest = &flat[path_start..];
    let path_end = rest.find(['?', '#']).map(|i| path_start + i).unwrap_or(flat.len());
    let mut segments = Vec::new();
    let mut at = path_start;
    for piece in flat[path_start..path_end].split('/') {
        if at != path_start || !piece.is_empty() {
            segments.push(Segment { text: piece.to_string(), start: at });
        }
        at += piece.len() + 1;
    }
    // `/movie/` and `/movie` name the same endpoint.
    if segments.last().is_some_and(|s| s.text.is_empty()) {
        segments.pop();
    }
    let mut query = Vec::new();
    if flat[path_end..].starts_with('?') {
        let mut at = path_end + 1;
        let query_end = flat[at..].find('#').map(|i| at + i).unwrap_or(flat.len());
        for pair in flat[at..query_end].split('&') {
            if !pair.is_empty() {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                query.push((name.to_string(), value.to_string(), at, at + name.len() + 1));
            }
            at += pair.len() + 1;
        }
    }
    Some(SplitUrl { toolset: toolset.name.clone(), path_start, segments, query })
}

/// How a URL's path matched a tool's path template.
#[derive(Debug)]
pub struct EndpointMatch<'c> {
    pub tool: &'c Tool,
    /// (template parameter name, index of the URL segment).
    pub path_params: Vec<(String, usize)>,
}

pub fn template_segments(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

pub fn template_param(segment: &str) -> Option<&str> {
    segment.strip_prefix('{').and_then(|s| s.strip_suffix('}'))
}

/// The result of matching a URL path against a toolset's HTTP tools.
pub enum Matched<'c> {
    Tool(EndpointMatch<'c>),
    /// The path exists, but not for this method: the methods it has.
    WrongMethod(Vec<String>),
    NoPath,
    /// A segment is computed in a way that can't be matched (a hole covering several segments).
    Unknowable,
}

pub fn match_endpoint<'c>(toolset: &'c Toolset, method: &str, segments: &[Segment]) -> Matched<'c> {
    let method = method.to_ascii_uppercase();
    let mut best: Option<(usize, EndpointMatch<'c>)> = None;
    let mut other_methods = Vec::new();
    let has_hole = segments.iter().any(|s| s.text.contains(HOLE));
    for tool in &toolset.tools {
        let Transport::Http { method: m, path } = &tool.transport else { continue };
        let tpl = template_segments(path);
        if tpl.len() != segments.len() {
            continue;
        }
        let mut score = 0;
        let mut params = Vec::new();
        let mut ok = true;
        for (i, (t, s)) in tpl.iter().zip(segments).enumerate() {
            if let Some(name) = template_param(t) {
                if s.text.is_empty() {
                    ok = false;
                    break;
                }
                params.push((name.to_string(), i));
            } else if *t == s.text {
                score += 1;
            } else {
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        if !m.eq_ignore_ascii_case(&method) {
            other_methods.push(m.to_ascii_uppercase());
            continue;
        }
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, EndpointMatch { tool, path_params: params }));
        }
    }
    match best {
        Some((_, m)) => Matched::Tool(m),
        None if !other_methods.is_empty() => {
            other_methods.sort();
            other_methods.dedup();
            Matched::WrongMethod(other_methods)
        }
        None if has_hole && segments.iter().any(|s| s.text.contains(HOLE) && s.text.len() > HOLE.len_utf8()) => {
            Matched::Unknowable
        }
        None => Matched::NoPath,
    }
}

/// The URL path written with `{…}` for holes, for messages and did-you-mean.
pub fn display_path(segments: &[Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        out.push('/');
        out.push_str(&s.text.replace(HOLE, "{…}"));
    }
    if out.is_empty() { "/".into() } else { out }
}
