//! Editor features over the analysis, in the core's own types (byte offsets, plain strings):
//! completion, hover, signature help, go-to-definition and document symbols. The server converts
//! these to LSP; nothing here knows about LSP.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tree_sitter::Tree;

use super::dialect::Imports;
use super::parse::fields;
use super::{Analysis, Dialect, Key, analyze_after, analyze_until, parse};
use crate::config::DiagnosticsConfig;
use crate::text::ByteRange;
use crate::toolset::schema::Refs;
use crate::toolset::{Catalog, Param, Tool, Transport, schema};

/// Completion lists are cut here; the client asks again as the user types (`isIncomplete`).
pub const MAX_COMPLETIONS: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    Toolset,
    Tool,
    Argument,
    EnumValue,
    Key,
    Endpoint,
    /// A field of a response the program already holds, as an argument's value.
    HeldValue,
    /// A call that produces an argument's value.
    ProducingCall,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    /// One line shown beside the label (a signature, a type).
    pub detail: String,
    /// Text to insert; a snippet (`$1`, `${1:query}`) when `is_snippet`.
    pub insert_text: String,
    pub is_snippet: bool,
    /// The range the insertion replaces (the word being typed).
    pub replace: ByteRange,
    pub sort_text: String,
    /// Markdown documentation, when cheap; tools leave it to `resolve` (`tool_id`).
    pub documentation: Option<String>,
    /// `toolset.name` of a tool item, for lazy documentation.
    pub tool_id: Option<String>,
    /// The other name the item answers to (a tool's `operationId` alias): shown beside the label,
    /// and what the client filters by when the typed word matched it.
    pub alias: Option<String>,
    /// The item is offered because the typed word matched its alias, not its name: the alias is
    /// shown beside it, or the user could not tell why it is there.
    pub via_alias: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completions {
    pub items: Vec<Completion>,
    /// More items exist than were sent (large toolsets): the client should ask again as the user types.
    pub is_incomplete: bool,
    /// The cursor is at the value of this argument (`person_id=|`): layers above offer what can feed it.
    pub value_of: Option<ArgumentValue>,
}

/// The value of a keyword argument being written: the call's tool, the parameter and the text
/// a completion replaces.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentValue {
    pub tool: String,
    pub param: String,
    pub replace: ByteRange,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hover {
    pub markdown: String,
    pub range: ByteRange,
    /// `toolset.name` when the hover is on a tool (the server adds its ToolNet neighbourhood).
    pub tool_id: Option<String>,
    /// (tool id, parameter) when the hover is on an argument's name (the server adds the tools
    /// whose responses can feed it).
    pub parameter: Option<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SignatureHelp {
    /// `search_person(*, query: str, page: int = …) -> object {…}`
    pub label: String,
    pub documentation: String,
    /// Each parameter's byte range in `label`, with its documentation.
    pub parameters: Vec<(ByteRange, String)>,
    pub active_parameter: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub file: PathBuf,
    pub range: ByteRange,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    /// A tool call (name: `tmdb.search_person`).
    Call,
    /// A variable holding a tool response.
    Variable,
    Function,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Symbol {
    pub name: String,
    pub detail: String,
    pub kind: SymbolKind,
    pub range: ByteRange,
    pub selection_range: ByteRange,
}

/// Completions at `offset` (a byte offset into `text`). Works on text the user is still typing:
/// the current line is cut at the cursor and closed (string, brackets) before analysis.
pub fn complete(
    file: &Path,
    text: &str,
    tree: &Tree,
    offset: usize,
    catalog: &Catalog,
    config: &DiagnosticsConfig,
) -> Completions {
    complete_with(file, text, tree, offset, catalog, config, None)
}

/// [`complete`], reusing `analysed` — the whole document's analysis, when the caller holds it —
/// where the line at the cursor already parses: what precedes the cursor is the same in both.
pub fn complete_with(
    file: &Path,
    text: &str,
    tree: &Tree,
    offset: usize,
    catalog: &Catalog,
    config: &DiagnosticsConfig,
    analysed: Option<&Analysis<'_>>,
) -> Completions {
    let offset = floor_char(text, offset.min(text.len()));
    let line_start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line = &text[line_start..offset];
    let word_start =
        offset - line.chars().rev().take_while(|c| c.is_alphanumeric() || *c == '_').map(char::len_utf8).sum::<usize>();
    let word = &text[word_start..offset];
    let word_end = offset
        + text[offset..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').map(char::len_utf8).sum::<usize>();
    let replace = ByteRange::new(word_start, word_end);
    let before_word = text[line_start..word_start].trim_end_matches(' ');

    // `from chainsmith.tools import tm|`, `import chainsmith.tools.tm|`
    let trimmed = line.trim_start();
    if (trimmed.starts_with("from chainsmith.tools import") && !trimmed.contains('('))
        || (trimmed.starts_with("import chainsmith.tools.") && before_word.ends_with("chainsmith.tools."))
        || (trimmed.starts_with("from chainsmith.tools import (") && !trimmed.contains(')'))
    {
        return toolset_completions(catalog, word, replace);
    }
    if let Some(before_dot) = before_word.strip_suffix('.') {
        let object_start = trailing_run(before_dot, |c| c.is_alphanumeric() || c == '_' || c == '.');
        let object = &before_dot[object_start..];
        if object == "chainsmith.tools" {
            return toolset_completions(catalog, word, replace);
        }
        let imports = Imports::collect(tree.root_node(), text);
        if let Some(toolset) = imports.toolsets.get(object) {
            return tool_completions(catalog, toolset, word, replace);
        }
        return Completions::default();
    }

    // Everything else needs the analysis of the text as it would parse with this line closed.
    let mut fresh = None;
    let (analysis, key_hint) = analysis_at(file, text, tree, offset, catalog, config, analysed, &mut fresh);

    if let Some(quote) = key_hint {
        // Inside `x["par|` (or `.get("par|`): the keys of x's schema.
        if let Some(access) = analysis.access_at(offset) {
            return key_completions(catalog, access.container, word, ByteRange::new(word_start, word_end), quote);
        }
    }
    if before_word.ends_with('[')
        && !before_word.ends_with("[[")
        && let Some(access) = analysis.access_at(offset)
    {
        return key_completions(catalog, access.container, word, replace, None);
    }
    if let Some(site) = analysis.urls.iter().find(|u| u.range.start < offset && offset <= u.range.end)
        && let Some(path_start) = site.path_start
        && path_start <= offset
        && offset <= site.range.end
    {
        let typed = &text[path_start..offset];
        if !typed.contains('?') {
            return endpoint_completions(catalog, &site.toolset, typed, path_start, word_end);
        }
    }
    if let Some(call) = analysis.call_at(offset)
        && call.dialect == Dialect::Module
        && call.args_range.start < offset
        && offset < call.args_range.end.max(offset + 1)
        && let Some(tool) = call.tool
    {
        if before_word.ends_with('=') && !before_word.ends_with("==") {
            let name = before_word[..before_word.len() - 1].trim_end();
            let name = &name[trailing_run(name, |c| c.is_alphanumeric() || c == '_')..];
            let Some(param) = tool.param(name) else { return Completions::default() };
            let mut completions = enum_completions(catalog, param, replace);
            completions.value_of = Some(ArgumentValue { tool: tool.id(), param: param.name.clone(), replace });
            return completions;
        }
        if let Some(quote) = key_hint
            && let Some(name) = keyword_before_string(before_word)
            && let Some(param) = tool.param(name)
        {
            let mut c = enum_completions(catalog, param, replace);
            for item in &mut c.items {
                item.insert_text = item.insert_text.trim_matches(quote.unwrap_or('"')).to_string();
            }
            return c;
        }
        if before_word.ends_with('(') || before_word.ends_with(',') {
            let given = given_elsewhere(call, replace.start);
            return argument_completions(catalog, tool, &given, word, replace);
        }
    }
    Completions::default()
}

/// The parameters a call already gives, apart from the word at `offset`: a half-typed `qu` is a
/// positional argument to the analysis (taken as the parameter left for it), not a given one.
fn given_elsewhere<'a>(call: &'a crate::analysis::ToolCall<'_>, offset: usize) -> Vec<&'a str> {
    call.args
        .iter()
        .filter(|a| a.name_range.is_some() || !(a.value_range.start <= offset && offset <= a.value_range.end))
        .map(|a| a.name.as_str())
        .collect()
}

/// Where the run of `keep` characters that ends `s` starts (a char boundary, whatever the
/// character before it is).
fn trailing_run(s: &str, keep: impl Fn(char) -> bool) -> usize {
    s.char_indices().rev().find(|(_, c)| !keep(*c)).map_or(0, |(i, c)| i + c.len_utf8())
}

fn floor_char(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// `name="` before a string being typed → `name`.
fn keyword_before_string(before_word: &str) -> Option<&str> {
    let s = before_word.strip_suffix(['"', '\''])?.trim_end();
    let s = s.strip_suffix('=')?.trim_end();
    let start = trailing_run(s, |c| c.is_alphanumeric() || c == '_');
    let name = &s[start..];
    (!name.is_empty()).then_some(name)
}

/// The text and tree as they would be with the line holding `offset` cut at `offset` and closed:
/// an open string gets its quote, open brackets their closers, a dangling `=` a placeholder. The
/// tree is re-parsed incrementally from the document's own. Also returns the quote character when
/// the cursor is inside a string literal.
/// What the analysis sees at `offset`: `analysed` (the caller's whole-document analysis) where the
/// cursor's line already parses — what precedes the cursor is the same in both — else a fresh one
/// of the text with the line closed, kept in `fresh`; and, inside a string, its quote.
#[allow(clippy::too_many_arguments)]
fn analysis_at<'a, 'c>(
    file: &Path,
    text: &str,
    tree: &Tree,
    offset: usize,
    catalog: &'c Catalog,
    config: &DiagnosticsConfig,
    analysed: Option<&'a Analysis<'c>>,
    fresh: &'a mut Option<Analysis<'c>>,
) -> (&'a Analysis<'c>, Option<Option<char>>) {
    let offset = floor_char(text, offset.min(text.len()));
    let line_start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let (patched, key_hint) = patch_line(text, tree, line_start, offset);
    if let (None, Some(analysed)) = (&patched, analysed) {
        return (analysed, key_hint);
    }
    let (text, tree) = patched.as_ref().map_or((text, tree), |p| (p.text.as_str(), &p.tree));
    // The statements before the cursor's are those of `analysed`, at the same places: only the
    // closed line is walked.
    (fresh.insert(analyze_after(file, text, tree, catalog, config, analysed, Some(offset))), key_hint)
}

/// The text and tree with the cursor's line closed, or `None` when it needs no patch; and, inside
/// a string, its quote.
fn patch_line(
    text: &str,
    tree: &Tree,
    line_start: usize,
    offset: usize,
) -> (Option<parse::ParsedText>, Option<Option<char>>) {
    let line = &text[line_start..offset];
    let mut stack: Vec<char> = Vec::new();
    let mut in_string: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match in_string {
            Some(q) => {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    in_string = None;
                }
            }
            None => match c {
                '"' | '\'' => in_string = Some(c),
                '#' => break,
                '(' => stack.push(')'),
                '[' => stack.push(']'),
                '{' => stack.push('}'),
                ')' | ']' | '}' if stack.last() == Some(&c) => {
                    stack.pop();
                }
                _ => {}
            },
        }
    }
    let line_end = text[offset..].find('\n').map(|i| offset + i).unwrap_or(text.len());
    let mut insert = String::new();
    if let Some(q) = in_string {
        insert.push(q);
    } else {
        let t = line.trim_end();
        if t.ends_with('=') && !t.ends_with("==") || t.ends_with(':') && stack.last() == Some(&'}') {
            insert.push_str("None");
        } else if t.ends_with('.') {
            insert.push('_');
        }
    }
    while let Some(closer) = stack.pop() {
        insert.push(closer);
    }
    // A statement that already parses needs no patch (and no re-parse). A line that leaves a
    // string open always does: the parser may otherwise pair its quote with one on a later line
    // and read the rest of the file as one broken statement.
    let unfinished = leaves_string_open(&text[line_start..line_end]);
    if text[offset..line_end] == insert || (!unfinished && !statement_has_error(tree, offset)) {
        return (None, in_string.map(Some));
    }
    // Requests at a position only look at what precedes it, and the text after an unfinished line
    // is what makes re-parsing slow (error recovery defeats reuse): keep the prefix only.
    let mut patched = parse::ParsedText { text: text.to_string(), tree: tree.clone() };
    patched.edit(ByteRange::new(offset, text.len()), &insert);
    (Some(patched), in_string.map(Some))
}

/// Whether a line ends inside a (single-line) string literal.
fn leaves_string_open(line: &str) -> bool {
    let mut in_string: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match in_string {
            Some(_) if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q => in_string = None,
            Some(_) => {}
            None if c == '#' => return false,
            None if c == '"' || c == '\'' => {
                // Triple-quoted strings may legitimately span lines.
                let rest = chars.as_str();
                if rest.starts_with(&format!("{c}{c}")) {
                    return false;
                }
                in_string = Some(c);
            }
            None => {}
        }
    }
    in_string.is_some()
}

/// Whether the statement holding `offset` (or the text around it) has a syntax error.
fn statement_has_error(tree: &Tree, offset: usize) -> bool {
    let root = tree.root_node();
    let Some(mut node) = root.descendant_for_byte_range(offset.saturating_sub(1), offset) else { return true };
    while let Some(parent) = node.parent() {
        if parent.id() == root.id() || parent.kind() == "block" {
            break;
        }
        node = parent;
    }
    node.has_error() || node.is_error() || node.is_missing()
}

fn toolset_completions(catalog: &Catalog, word: &str, replace: ByteRange) -> Completions {
    let items = catalog
        .toolsets
        .iter()
        .filter(|t| matches_word(&t.name, word))
        .map(|t| Completion {
            label: t.name.clone(),
            kind: CompletionKind::Toolset,
            detail: format!("{} tools · {}", t.tools.len(), t.kind.as_str()),
            insert_text: t.name.clone(),
            is_snippet: false,
            replace,
            sort_text: t.name.clone(),
            documentation: (!t.description.is_empty()).then(|| t.description.clone()),
            tool_id: None,
            alias: None,
            via_alias: false,
        })
        .collect();
    Completions { items, is_incomplete: false, value_of: None }
}

fn matches_word(candidate: &str, word: &str) -> bool {
    word.is_empty() || candidate.to_ascii_lowercase().contains(&word.to_ascii_lowercase())
}

fn tool_completions(catalog: &Catalog, toolset: &str, word: &str, replace: ByteRange) -> Completions {
    if catalog.toolset(toolset).is_none() {
        return Completions::default();
    }
    let lower = word.to_ascii_lowercase();
    // Names starting with the word first, then names containing it, each in name order; the
    // first ones come from the catalog's name order without looking at the rest. Then tools
    // whose alias (`operationId`) contains the word.
    let mut matched: Vec<(u8, &Tool)> =
        catalog.tools_with_prefix(toolset, &lower).take(MAX_COMPLETIONS + 1).map(|t| (0, t)).collect();
    if matched.len() <= MAX_COMPLETIONS && !lower.is_empty() {
        let containing = catalog
            .tools_by_name(toolset)
            .filter(|t| !t.name.starts_with(&lower) && t.name.contains(&lower))
            .take(MAX_COMPLETIONS + 1 - matched.len());
        matched.extend(containing.map(|t| (1, t)));
    }
    if matched.len() <= MAX_COMPLETIONS && !lower.is_empty() {
        let by_alias = catalog
            .tools_by_name(toolset)
            .filter(|t| !t.name.contains(&lower) && catalog.alias_of(t).is_some_and(|a| a.contains(&lower)))
            .take(MAX_COMPLETIONS + 1 - matched.len());
        matched.extend(by_alias.map(|t| (2, t)));
    }
    let is_incomplete = matched.len() > MAX_COMPLETIONS;
    matched.truncate(MAX_COMPLETIONS);
    let items = matched
        .into_iter()
        .map(|(rank, tool)| {
            let mut snippet = format!("{}(", tool.name);
            for (i, p) in tool.required().enumerate() {
                if i > 0 {
                    snippet.push_str(", ");
                }
                // A string argument is typed between the quotes it needs.
                let quote = if schema::types(catalog, &p.schema) == ["string"] { "\"" } else { "" };
                snippet.push_str(&format!("{}={quote}${{{}}}{quote}", p.name, i + 1));
            }
            snippet.push_str(")$0");
            Completion {
                label: tool.name.clone(),
                kind: CompletionKind::Tool,
                detail: signature_line(catalog, tool),
                insert_text: snippet,
                is_snippet: true,
                replace,
                sort_text: format!("{rank}_{}", tool.name),
                documentation: None,
                tool_id: Some(tool.id()),
                alias: catalog.alias_of(tool).map(str::to_string),
                via_alias: rank == 2,
            }
        })
        .collect();
    Completions { items, is_incomplete, value_of: None }
}

fn argument_completions(refs: &dyn Refs, tool: &Tool, given: &[&str], word: &str, replace: ByteRange) -> Completions {
    let items = tool
        .params
        .iter()
        .filter(|p| !given.contains(&p.name.as_str()) && matches_word(&p.name, word))
        .map(|p| Completion {
            label: format!("{}=", p.name),
            kind: CompletionKind::Argument,
            detail: format!("{}{}", param_type(refs, p), if p.required { " (required)" } else { "" }),
            insert_text: format!("{}=", p.name),
            is_snippet: false,
            replace,
            sort_text: format!("{}_{}", if p.required { 0 } else { 1 }, p.name),
            documentation: Some(param_markdown(refs, p)),
            tool_id: None,
            alias: None,
            via_alias: false,
        })
        .collect();
    Completions { items, is_incomplete: false, value_of: None }
}

fn enum_completions(refs: &dyn Refs, param: &Param, replace: ByteRange) -> Completions {
    let Some(values) = schema::enum_values(refs, &param.schema) else { return Completions::default() };
    let items = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let text = v.to_string();
            Completion {
                label: text.clone(),
                kind: CompletionKind::EnumValue,
                detail: format!("{} value", param.name),
                insert_text: text,
                is_snippet: false,
                replace,
                sort_text: format!("{i:04}"),
                documentation: None,
                tool_id: None,
                alias: None,
                via_alias: false,
            }
        })
        .collect();
    Completions { items, is_incomplete: false, value_of: None }
}

fn key_completions(
    refs: &dyn Refs,
    container: &Value,
    word: &str,
    replace: ByteRange,
    quote: Option<char>,
) -> Completions {
    let object = if schema::types(refs, container).contains(&"object") || schema::types(refs, container).is_empty() {
        container
    } else {
        return Completions::default();
    };
    let items = schema::keys(refs, object)
        .into_iter()
        .enumerate()
        .filter(|(_, (k, _))| matches_word(k, word))
        .map(|(i, (key, sub))| Completion {
            label: key.to_string(),
            kind: CompletionKind::Key,
            detail: schema::summary(refs, sub),
            insert_text: match quote {
                Some(_) => key.to_string(),
                None => format!("\"{key}\""),
            },
            is_snippet: false,
            replace,
            sort_text: format!("{i:04}"),
            documentation: schema::description(refs, sub).map(str::to_string),
            tool_id: None,
            alias: None,
            via_alias: false,
        })
        .collect();
    Completions { items, is_incomplete: false, value_of: None }
}

/// The endpoints whose path continues what is typed after the base URL. Typed segments that
/// fill a path parameter (`/repos/{OWNER}/{REPO}/pu`, `/movie/550/`) match the template's
/// `{param}`; the segment being typed is completed with the rest of the template, so the
/// program's own segments stay as written. Each path is offered once, with its methods.
fn endpoint_completions(
    catalog: &Catalog,
    toolset: &str,
    typed: &str,
    path_start: usize,
    word_end: usize,
) -> Completions {
    let Some(ts) = catalog.toolset(toolset) else { return Completions::default() };
    let (filled, partial) = match typed.rsplit_once('/') {
        Some((filled, partial)) => (Some(filled), partial),
        None => (None, typed),
    };
    let filled: Vec<&str> = filled.map(|f| f.split('/').skip(1).collect()).unwrap_or_default();
    let replace = ByteRange::new(path_start + typed.len() - partial.len(), word_end);
    let mut by_path: Vec<(String, String, Vec<String>, Vec<String>)> = Vec::new();
    for tool in &ts.tools {
        let Transport::Http { method, path } = &tool.transport else { continue };
        let template: Vec<&str> = path.split('/').skip(1).collect();
        let Some(rest) = template.get(filled.len()..) else { continue };
        let fits = template.iter().zip(&filled).all(|(t, f)| t == f || is_template_param(t) || f.contains('{'));
        let Some(next) = rest.first() else { continue };
        // A parameter segment is offered as a placeholder only before anything is typed there.
        if !fits || !(next.starts_with(partial) || (partial.is_empty() && is_template_param(next))) {
            continue;
        }
        // Before the first slash, the path is inserted whole (with its leading `/`).
        let insert = if typed.contains('/') { rest.join("/") } else { path.clone() };
        match by_path.iter_mut().find(|(p, ..)| p == path) {
            Some((_, _, methods, tools)) => {
                methods.push(method.to_ascii_uppercase());
                tools.push(tool.name.clone());
            }
            None => by_path.push((path.clone(), insert, vec![method.to_ascii_uppercase()], vec![tool.name.clone()])),
        }
    }
    let mut items: Vec<Completion> = by_path
        .into_iter()
        .map(|(path, insert_text, methods, tools)| Completion {
            label: path.clone(),
            kind: CompletionKind::Endpoint,
            detail: format!("{} · {}", methods.join(", "), tools.join(", ")),
            insert_text,
            is_snippet: false,
            replace,
            sort_text: path,
            documentation: None,
            tool_id: Some(format!("{toolset}.{}", tools[0])),
            alias: None,
            via_alias: false,
        })
        .collect();
    let is_incomplete = items.len() > MAX_COMPLETIONS;
    items.sort_by(|a, b| a.sort_text.cmp(&b.sort_text));
    items.truncate(MAX_COMPLETIONS);
    Completions { items, is_incomplete, value_of: None }
}

fn is_template_param(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with('}')
}

fn param_type(refs: &dyn Refs, p: &Param) -> String {
    let mut t = schema::summary(refs, &p.schema);
    if let Some(values) = schema::enum_values(refs, &p.schema) {
        let shown: Vec<String> = values.iter().take(6).map(Value::to_string).collect();
        t = format!("{} ({})", t, shown.join(" | "));
    }
    t
}

fn param_markdown(refs: &dyn Refs, p: &Param) -> String {
    let mut out = format!(
        "`{}`: {} — {}{}",
        p.name,
        param_type(refs, p),
        p.location.as_str(),
        if p.required { ", required" } else { "" }
    );
    if p.wire_name != p.name {
        out.push_str(&format!(" (sent as `{}`)", p.wire_name));
    }
    if let Some(d) = &p.default {
        out.push_str(&format!(", default `{d}`"));
    }
    if !p.description.is_empty() {
        out.push_str("\n\n");
        out.push_str(p.description.trim());
    }
    out
}

/// `(query, page?) → object {page, results, …}`
pub fn signature_line(refs: &dyn Refs, tool: &Tool) -> String {
    let params: Vec<String> =
        tool.params.iter().map(|p| if p.required { p.name.clone() } else { format!("{}?", p.name) }).collect();
    let response = match &*tool.response {
        Some(r) => schema::summary(refs, r),
        None => "unknown".into(),
    };
    format!("({}) → {response}", params.join(", "))
}

/// Full markdown documentation of a tool (`completionItem/resolve`, hover).
pub fn tool_markdown(catalog: &Catalog, tool_id: &str) -> Option<String> {
    catalog.find(tool_id).ok().map(|tool| describe_tool(catalog, tool))
}

pub fn describe_tool(refs: &dyn Refs, tool: &Tool) -> String {
    let mut out = format!("**{}**", tool.id());
    if let Some(endpoint) = tool.endpoint() {
        out.push_str(&format!(" · `{endpoint}`"));
    }
    if let Transport::Mcp { tool: original } = &tool.transport {
        out.push_str(&format!(" · MCP tool `{original}`"));
    }
    if let Some(op) = &tool.source.operation_id {
        out.push_str(&format!(" · operationId `{op}`"));
    }
    if !tool.category.is_empty() {
        out.push_str(&format!(" · {}", tool.category));
    }
    if !tool.description.trim().is_empty() {
        out.push_str("\n\n");
        out.push_str(tool.description.trim());
    }
    if !tool.params.is_empty() {
        out.push_str("\n\n**Parameters**\n");
        for p in &tool.params {
            let desc = p.description.trim().lines().next().unwrap_or("");
            out.push_str(&format!(
                "- `{}`{}: {} ({}){}\n",
                p.name,
                if p.required { "" } else { "?" },
                param_type(refs, p),
                p.location.as_str(),
                if desc.is_empty() { String::new() } else { format!(" — {desc}") }
            ));
        }
    }
    match &*tool.response {
        Some(r) => {
            out.push_str(&format!("\n**Response**: {}\n", schema::summary(refs, r)));
            let lines = schema::outline(refs, r, 24);
            if !lines.is_empty() {
                out.push_str("```\n");
                out.push_str(&lines.join("\n"));
                out.push_str("\n```\n");
            }
        }
        None => out.push_str("\n**Response**: unknown (not declared; probing can discover it)\n"),
    }
    if let Some(example) = tool.examples.iter().find_map(|e| e.response.as_ref()) {
        let mut shown = serde_json::to_string(example).unwrap_or_default();
        if shown.chars().count() > 300 {
            shown = format!("{}…", shown.chars().take(300).collect::<String>());
        }
        out.push_str(&format!("\n**Example response**\n```json\n{shown}\n```\n"));
    }
    out
}

pub fn hover(
    file: &Path,
    text: &str,
    tree: &Tree,
    offset: usize,
    catalog: &Catalog,
    config: &DiagnosticsConfig,
) -> Option<Hover> {
    let analysis = analyze_until(file, text, tree, catalog, config, Some(offset));
    hover_in(&analysis, offset, catalog)
}

/// [`hover`] from an analysis of the program already made (the whole program's answers the same
/// as one stopping at `offset`: the walk only goes forward).
pub fn hover_in(analysis: &Analysis<'_>, offset: usize, catalog: &Catalog) -> Option<Hover> {
    let refs: &dyn Refs = catalog;
    if let Some(import) = analysis.imports.iter().find(|i| i.range.contains(offset)) {
        let ts = catalog.toolset(&import.toolset)?;
        let mut md = format!("**toolset {}** · {} tools · {}", ts.name, ts.tools.len(), ts.kind.as_str());
        if let Some(base) = &ts.base_url {
            md.push_str(&format!(" · `{base}`"));
        }
        if !ts.description.is_empty() {
            md.push_str(&format!("\n\n{}", ts.description));
        }
        return Some(Hover { markdown: md, range: import.range, tool_id: None, parameter: None });
    }
    if let Some(access) = analysis.access_at(offset) {
        let label = match &access.key {
            Key::Str(k) => format!("\"{k}\""),
            Key::Int(i) => format!("[{i}]"),
            Key::Other => "[…]".into(),
        };
        let tool = analysis.calls.get(access.call).map(|c| c.name.clone()).unwrap_or_default();
        let md = match access.result {
            Some(sub) => {
                let mut md = format!("**{label}**: {} — from `{tool}`", schema::summary(refs, sub));
                if let Some(d) = schema::description(refs, sub) {
                    md.push_str(&format!("\n\n{d}"));
                }
                let lines = schema::outline(refs, sub, 16);
                if !lines.is_empty() {
                    md.push_str(&format!("\n```\n{}\n```", lines.join("\n")));
                }
                md
            }
            None => format!("**{label}** — not described by the response schema of `{tool}`"),
        };
        return Some(Hover { markdown: md, range: access.key_range, tool_id: None, parameter: None });
    }
    let call = analysis.calls.iter().find(|c| {
        c.name_range.contains(offset) || c.args.iter().any(|a| a.name_range.is_some_and(|r| r.contains(offset)))
    })?;
    let tool = call.tool?;
    if let Some(arg) = call.args.iter().find(|a| a.name_range.is_some_and(|r| r.contains(offset))) {
        let param = tool.params.iter().find(|p| p.name == arg.name || p.wire_name == arg.name)?;
        return Some(Hover {
            markdown: param_markdown(refs, param),
            range: arg.name_range.unwrap_or_default(),
            tool_id: None,
            parameter: Some((tool.id(), param.name.clone())),
        });
    }
    Some(Hover {
        markdown: describe_tool(refs, tool),
        range: call.name_range,
        tool_id: Some(tool.id()),
        parameter: None,
    })
}

pub fn signature_help(
    file: &Path,
    text: &str,
    tree: &Tree,
    offset: usize,
    catalog: &Catalog,
    config: &DiagnosticsConfig,
    analysed: Option<&Analysis<'_>>,
) -> Option<SignatureHelp> {
    let refs: &dyn Refs = catalog;
    let mut fresh = None;
    let (analysis, _) = analysis_at(file, text, tree, offset, catalog, config, analysed, &mut fresh);
    let call = analysis
        .calls
        .iter()
        .filter(|c| c.args_range.start < offset && offset <= c.args_range.end && c.tool.is_some())
        .min_by_key(|c| c.args_range.end - c.args_range.start)?;
    let tool = call.tool?;
    let wire = call.dialect == Dialect::Http;
    let mut label = format!("{}(", tool.name);
    let mut parameters = Vec::new();
    for (i, p) in tool.params.iter().enumerate() {
        if i > 0 {
            label.push_str(", ");
        }
        let start = label.len();
        let name = if wire { &p.wire_name } else { &p.name };
        label.push_str(&format!("{name}: {}", schema::summary(refs, &p.schema)));
        if !p.required {
            label.push_str(" = …");
        }
        parameters.push((ByteRange::new(start, label.len()), param_markdown(refs, p)));
    }
    label.push_str(&format!(
        ") → {}",
        tool.response.as_ref().map(|r| schema::summary(refs, r)).unwrap_or_else(|| "unknown".into())
    ));
    let current = call
        .args
        .iter()
        .find(|a| a.name_range.is_some_and(|r| r.start <= offset) && offset <= a.value_range.end)
        .map(|a| a.name.as_str());
    let active_parameter = match current {
        Some(name) => tool.params.iter().position(|p| p.name == name || p.wire_name == name),
        None => {
            // The next parameter the user is likely to write: a missing required one, else the
            // first optional one not given yet.
            let given = given_elsewhere(call, offset);
            let open = |p: &&Param| !given.contains(&p.name.as_str()) && !given.contains(&p.wire_name.as_str());
            tool.params
                .iter()
                .position(|p| p.required && open(&p))
                .or_else(|| tool.params.iter().position(|p| open(&p)))
        }
    };
    Some(SignatureHelp { label, documentation: tool.description.clone(), parameters, active_parameter })
}

/// The protocol declaration of the tool (or response field's tool) at `offset`, in a program's
/// analysis (the editor's cached one of the whole program).
pub fn definition(analysis: &Analysis<'_>, offset: usize, catalog: &Catalog) -> Option<Definition> {
    if let Some(import) = analysis.imports.iter().find(|i| i.range.contains(offset)) {
        let ts = catalog.toolset(&import.toolset)?;
        return Some(Definition { file: ts.files.first()?.clone(), range: ByteRange::default() });
    }
    let tool = if let Some(access) = analysis.access_at(offset) {
        analysis.calls.get(access.call)?.tool?
    } else {
        analysis.calls.iter().find(|c| c.name_range.contains(offset))?.tool?
    };
    Some(Definition { file: tool.source.file.clone(), range: tool.source.range })
}

/// The program's tool calls (from its analysis) and its functions.
pub fn document_symbols(analysis: &Analysis<'_>, text: &str, tree: &Tree) -> Vec<Symbol> {
    let mut symbols = Vec::new();
    for call in &analysis.calls {
        let id = format!("{}.{}", call.toolset, call.name);
        symbols.push(Symbol {
            name: match &call.target {
                Some(t) => format!("{t} = {id}"),
                None => id.clone(),
            },
            detail: call.tool.and_then(Tool::endpoint).unwrap_or_default(),
            kind: if call.target.is_some() { SymbolKind::Variable } else { SymbolKind::Call },
            range: call.statement_range,
            selection_range: call.name_range,
        });
    }
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.kind() == "function_definition"
            && let Some(name) = node.child_by_field_id(fields().name.get())
        {
            symbols.push(Symbol {
                name: parse::text_of(name, text).to_string(),
                detail: String::new(),
                kind: SymbolKind::Function,
                range: parse::range_of(node),
                selection_range: parse::range_of(name),
            });
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    symbols.sort_by_key(|s| s.range.start);
    symbols
}

/// Tools whose name or id contains `query` (case-insensitive), for workspace symbols.
pub fn workspace_symbols<'c>(catalog: &'c Catalog, query: &str, limit: usize) -> Vec<&'c Tool> {
    let q = query.to_ascii_lowercase();
    let mut found: Vec<&Tool> =
        catalog.tools().filter(|t| q.is_empty() || t.name.contains(&q) || t.toolset.contains(&q)).collect();
    found.sort_by_key(|t| (!t.name.starts_with(&q), t.name.len()));
    found.truncate(limit);
    found
}

/// The task a program is written for: its module docstring, else a `# task:` comment.
pub fn task_of(text: &str, tree: &Tree) -> Option<String> {
    let collapsed = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let root = tree.root_node();
    let first = root.named_child(0);
    if let Some(statement) = first.filter(|n| n.kind() == "expression_statement")
        && let Some(string) = statement.named_child(0).filter(|n| n.kind() == "string")
        && let Some(value) = parse::string_value(string, text)
    {
        let task = collapsed(&value);
        if !task.is_empty() {
            return Some(task);
        }
    }
    text.lines().find_map(|line| {
        let comment = line.trim_start().strip_prefix('#')?.trim_start();
        let task = comment.get(..5).filter(|t| t.eq_ignore_ascii_case("task:")).map(|_| collapsed(&comment[5..]))?;
        (!task.is_empty()).then_some(task)
    })
}
