//! Program analysis: tool calls in both dialects, response schemas flowing through variables,
//! and the diagnostics, hovers and completions built on them.
//!
//! `analyze` is a plain function of (text, tree, catalog): the CLI calls it once per file, the
//! server on every edit against an immutable snapshot. Results borrow schemas from the catalog.

pub mod dialect;
pub mod flow;
pub mod ide;
pub mod parse;

use std::path::Path;

use serde_json::Value;
use tree_sitter::Tree;

use crate::config::DiagnosticsConfig;
use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;
use crate::toolset::{Catalog, ParamLocation, Tool};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `from chainsmith.tools import tmdb; tmdb.search_person(query=…)`
    Module,
    /// `requests.get(f"{BASE}/search/person", params={…}).json()`
    Http,
}

/// A toolset imported by the program (`from chainsmith.tools import tmdb as t`).
#[derive(Debug, Clone)]
pub struct ToolsetImport {
    /// The name the program uses (`t`).
    pub alias: String,
    pub toolset: String,
    /// The toolset name token in the import statement.
    pub range: ByteRange,
    pub known: bool,
}

#[derive(Debug, Clone)]
pub struct CallArg {
    /// The parameter name as written: the keyword (module dialect) or the wire name (HTTP dialect).
    pub name: String,
    pub name_range: Option<ByteRange>,
    pub value_range: ByteRange,
    pub location: Option<ParamLocation>,
}

/// One call of a tool, in either dialect: what the analysis, the runtime and ToolNet agree on.
#[derive(Debug, Clone)]
pub struct ToolCall<'c> {
    pub tool: Option<&'c Tool>,
    pub toolset: String,
    /// The tool name as written (module dialect) or matched (HTTP dialect).
    pub name: String,
    pub dialect: Dialect,
    /// The whole call expression.
    pub range: ByteRange,
    /// The tool name in the call (module dialect) or the URL expression (HTTP dialect).
    pub name_range: ByteRange,
    /// The parenthesised argument list.
    pub args_range: ByteRange,
    pub args: Vec<CallArg>,
    /// The variable that receives the response, when the call's result is assigned.
    pub target: Option<String>,
    /// The statement holding the call (inlay hints go at its end).
    pub statement_range: ByteRange,
    /// 0-based line of the call.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Key {
    Str(String),
    Int(i64),
    /// A key that is not a literal (a variable, a slice).
    Other,
}

/// A subscript or `.get()` into a value whose schema is known.
#[derive(Debug, Clone)]
pub struct Access<'c> {
    /// The whole access expression.
    pub range: ByteRange,
    /// The key expression (inside the brackets, or `.get`'s first argument).
    pub key_range: ByteRange,
    pub key: Key,
    /// The schema of the value being indexed.
    pub container: &'c Value,
    /// The schema the access yields, when known.
    pub result: Option<&'c Value>,
    /// The tool call the value came from.
    pub call: usize,
}

/// A URL string matched to a toolset's base URL (endpoint completion inside it).
#[derive(Debug, Clone)]
pub struct UrlSite {
    pub toolset: String,
    /// The string literal holding the path.
    pub range: ByteRange,
    /// The source offset where the path after the base URL starts, when exact.
    pub path_start: Option<usize>,
}

#[derive(Debug, Default)]
pub struct Analysis<'c> {
    pub imports: Vec<ToolsetImport>,
    pub calls: Vec<ToolCall<'c>>,
    pub accesses: Vec<Access<'c>>,
    pub urls: Vec<UrlSite>,
    pub diagnostics: Vec<Diagnostic>,
    /// What the next analysis of an edited text reuses ([`analyze_after`]).
    pub memo: Option<Box<flow::Memo<'c>>>,
}

impl<'c> Analysis<'c> {
    /// The innermost access whose key covers `offset`.
    pub fn access_at(&self, offset: usize) -> Option<&Access<'c>> {
        self.accesses
            .iter()
            .filter(|a| a.key_range.start <= offset && offset <= a.key_range.end)
            .min_by_key(|a| a.key_range.end - a.key_range.start)
    }

    /// The innermost tool call whose range covers `offset`.
    pub fn call_at(&self, offset: usize) -> Option<&ToolCall<'c>> {
        self.calls
            .iter()
            .filter(|c| c.range.start <= offset && offset <= c.range.end)
            .min_by_key(|c| c.range.end - c.range.start)
    }
}

/// The programs of a folder: `.py` files, sorted, skipping hidden folders, `__pycache__`, virtual
/// environments and `node_modules`.
pub fn python_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<std::path::PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0
                || !(name.starts_with('.') || name == "__pycache__" || name == "venv" || name == "node_modules")
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "py"))
        .map(|e| e.into_path())
        .collect();
    files.sort();
    files
}

/// Analyses one program. Diagnostics are filtered by `# chainsmith: ignore[code]` comments and
/// given the severities configured per code.
pub fn analyze<'c>(
    file: &Path,
    text: &str,
    tree: &Tree,
    catalog: &'c Catalog,
    config: &DiagnosticsConfig,
) -> Analysis<'c> {
    analyze_until(file, text, tree, catalog, config, None)
}

/// [`analyze`], skipping statements that start after `until` (for requests at a position).
pub fn analyze_until<'c>(
    file: &Path,
    text: &str,
    tree: &Tree,
    catalog: &'c Catalog,
    config: &DiagnosticsConfig,
    until: Option<usize>,
) -> Analysis<'c> {
    let analysis = flow::run(file, text, tree, catalog, until);
    configured(analysis, text, config)
}

/// [`analyze_until`] after an edit: `previous` is the analysis of the whole of an earlier text
/// this function made against the same catalog, and the top-level statements whose text and
/// inputs are unchanged are not walked again (their results are moved to where they now are).
/// The result is the one [`analyze_until`] gives; without `until`, it carries what the next edit
/// reuses.
pub fn analyze_after<'c>(
    file: &Path,
    text: &str,
    tree: &Tree,
    catalog: &'c Catalog,
    config: &DiagnosticsConfig,
    previous: Option<&Analysis<'c>>,
    until: Option<usize>,
) -> Analysis<'c> {
    let analysis = flow::run_after(file, text, tree, catalog, previous, until);
    configured(analysis, text, config)
}

/// The walk's diagnostics less those the program suppresses, with the configured severities, in
/// order.
fn configured<'c>(mut analysis: Analysis<'c>, text: &str, config: &DiagnosticsConfig) -> Analysis<'c> {
    let suppressions = Suppressions::scan(text);
    analysis.diagnostics.retain_mut(|d| {
        if suppressions.suppresses(text, d.range.start, d.code) {
            return false;
        }
        match config.severity_of(d.code, d.severity) {
            Some(severity) => {
                d.severity = severity;
                true
            }
            None => false,
        }
    });
    analysis.diagnostics.sort_by_key(|d| (d.range.start, d.range.end));
    analysis
}

/// `# chainsmith: ignore` (every code) or `# chainsmith: ignore[code-a, code-b]` on a line.
struct Suppressions {
    /// (line start, line end, codes; empty = all)
    lines: Vec<(usize, usize, Vec<String>)>,
}

impl Suppressions {
    fn scan(text: &str) -> Self {
        let mut lines = Vec::new();
        let mut start = 0;
        for line in text.split_inclusive('\n') {
            if let Some(at) = line.find("# chainsmith: ignore") {
                let rest = &line[at + "# chainsmith: ignore".len()..];
                let codes = rest
                    .strip_prefix('[')
                    .and_then(|r| r.split_once(']'))
                    .map(|(inside, _)| {
                        inside.split(',').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
                    })
                    .unwrap_or_default();
                lines.push((start, start + line.len(), codes));
            }
            start += line.len();
        }
        Suppressions { lines }
    }

    /// Lines are scanned in order and do not overlap, so the one holding `offset` is found by
    /// binary search: a chain being written may carry hundreds of suppressed diagnostics.
    fn suppresses(&self, _text: &str, offset: usize, code: &str) -> bool {
        let at = self.lines.partition_point(|(_, end, _)| *end <= offset);
        self.lines
            .get(at)
            .is_some_and(|(s, _, codes)| *s <= offset && (codes.is_empty() || codes.iter().any(|c| c == code)))
    }
}

#[cfg(test)]
mod tests;
