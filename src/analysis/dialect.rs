//! The two program dialects' surface: which names refer to toolsets (module dialect) or to HTTP
//! clients (`requests`, `httpx`), and how a URL expression is matched to a toolset's endpoint.

use std::collections::HashMap;

use tree_sitter::Node;

use super::parse::{fields, range_of, text_of};
use crate::text::ByteRange;
use crate::toolset::endpoint::HOLE;

pub const TOOLS_PACKAGE: &str = "chainsmith.tools";
pub const HTTP_METHODS: &[&str] = &["get", "post", "put", "patch", "delete", "head", "options"];

/// Names bound by import statements.
#[derive(Debug, Default, Clone)]
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
                kind if super::parse::contains_statements(kind) => {
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

    /// The source range from `flat[start]` to `flat[end - 1]` when `start` lies in an exact
    /// literal and every part up to `end` lies after the one before it within that range (the
    /// span's last part may be a hole: the span ends where its expression does).
    pub fn source_span(&self, start: usize, end: usize) -> Option<ByteRange> {
        let part_at = |at: usize| self.parts.iter().rev().find(|(s, _)| *s <= at);
        let (first_start, first) = part_at(start)?;
        if !first.exact || first.hole.is_some() {
            return None;
        }
        let from = first.origin.start + (start - first_start);
        let (last_start, last) = part_at(end.checked_sub(1)?)?;
        let to =
            if last.exact && last.hole.is_none() { last.origin.start + (end - last_start) } else { last.origin.end };
        // One stretch of source, in order: no part between taken from elsewhere (a name's value).
        let mut at = from;
        for (_, part) in self.parts.iter().filter(|(s, _)| (*first_start..=*last_start).contains(s)).skip(1) {
            if part.origin.start < at || part.origin.end > to {
                return None;
            }
            at = part.origin.end;
        }
        (from < to).then(|| ByteRange::new(from, to))
    }

    /// The hole expression at `flat[at]`, if there is one.
    pub fn hole_at(&self, at: usize) -> Option<Node<'t>> {
        self.parts.iter().find(|(s, p)| *s == at && p.hole.is_some()).and_then(|(_, p)| p.hole)
    }
}
