//! Attribution: a failed run becomes diagnostics on the program, naming the tool call it is due to.
//!
//! The Python side reports the uncaught exception (type, message, the program's frames with their
//! columns, and the id of the tool call it came from when it came from one: a `ToolError`, or an
//! HTTP-dialect exception whose response the host answered). The call it is attributed to is:
//! 1. that call, when the exception carries one;
//! 2. else the call whose response flowed into the failing expression: the analysis' accesses
//!    (subscripts and `.get()` on values derived from a call's response) inside the failing
//!    expression — preferring the one whose key the error names (`KeyError: 'nmae'`) — else a
//!    variable of the failing expression that received a call's response;
//! 3. mapped to the trace by line: the latest executed call whose line lies within that call's
//!    source lines.

use std::path::Path;

use serde::Deserialize;
use tree_sitter::Node;

use super::Stop;
use super::trace::{TraceCall, TraceError};
use crate::analysis::{self, Analysis, Key, parse};
use crate::config::DiagnosticsConfig;
use crate::diagnostic::{Diagnostic, Severity};
use crate::text::ByteRange;
use crate::text::LineIndex;
use crate::toolset::Catalog;

/// The program's uncaught exception, as the Python package reports it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ErrorReport {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    /// The program file's frames, outermost first.
    #[serde(default)]
    pub frames: Vec<Frame>,
    /// The trace id of the call the exception came from.
    #[serde(default)]
    pub call: Option<u32>,
}

/// A 1-based line with Python's 0-based UTF-8 columns, when it knows them.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Frame {
    pub line: u32,
    #[serde(default)]
    pub end_line: Option<u32>,
    #[serde(default)]
    pub col: Option<u32>,
    #[serde(default)]
    pub end_col: Option<u32>,
}

/// Why the run failed, for attribution.
pub enum Failure<'a> {
    Exception(&'a ErrorReport),
    /// Stopped by the host; `at_line` is where the program was (timeouts), `pending` the calls
    /// that were running.
    Stopped {
        stop: &'a Stop,
        at_line: Option<u32>,
        pending: &'a [u32],
    },
}

pub const RUNTIME_ERROR: &str = "runtime-error";
pub const TOOL_ERROR: &str = "tool-error";
pub const ATTRIBUTED_CALL: &str = "attributed-call";
pub const RUN_STOPPED: &str = "run-stopped";

/// The trace's `error` and the diagnostics of a failed run.
pub fn attribute(
    file: &Path,
    text: &str,
    catalog: &Catalog,
    calls: &[TraceCall],
    failure: Failure,
) -> (TraceError, Vec<Diagnostic>) {
    let tree = parse::parse(text);
    let analysis = analysis::analyze(file, text, &tree, catalog, &DiagnosticsConfig::default());
    let index = LineIndex::new(text);
    let ctx = Context { file, text, index: &index, analysis: &analysis, calls, root: tree.root_node() };
    match failure {
        Failure::Exception(report) => ctx.exception(report),
        Failure::Stopped { stop, at_line, pending } => ctx.stopped(stop, at_line, pending),
    }
}

struct Context<'a, 'c> {
    file: &'a Path,
    text: &'a str,
    index: &'a LineIndex,
    analysis: &'a Analysis<'c>,
    calls: &'a [TraceCall],
    root: Node<'a>,
}

impl Context<'_, '_> {
    fn exception(&self, report: &ErrorReport) -> (TraceError, Vec<Diagnostic>) {
        let frame = report.frames.last();
        let line = frame.map(|f| f.line);
        let failing = frame.map(|f| self.frame_range(f));
        let attributed = report.call.or_else(|| self.by_flow(report, failing?));
        let call = attributed.and_then(|id| self.calls.iter().find(|c| c.id == id));
        let mut diagnostics = Vec::new();
        let is_tool_error = report.kind == "ToolError" && call.is_some();
        let summary = format!("{}: {}", report.kind, report.message);
        if is_tool_error {
            let call = call.expect("checked");
            let at = self.call_range(call).or(failing).unwrap_or_default();
            diagnostics.push(self.diagnostic(
                at,
                Severity::Error,
                TOOL_ERROR,
                format!("{} failed (call #{}): {}", call.tool, call.id, report.message),
            ));
        } else if let Some(range) = failing {
            let message = match call {
                Some(call) => format!("{summary} — on the response of {}", describe(call)),
                None => summary.clone(),
            };
            diagnostics.push(self.diagnostic(range, Severity::Error, RUNTIME_ERROR, message));
        }
        if let (Some(call), false) = (call, is_tool_error)
            && let Some(range) = self.call_range(call)
            && failing.is_none_or(|f| self.index.line_of(f.start) != self.index.line_of(range.start))
        {
            let at = line.map(|l| format!("line {l}")).unwrap_or_else(|| "a later line".into());
            diagnostics.push(self.diagnostic(
                range,
                Severity::Warning,
                ATTRIBUTED_CALL,
                format!("the run failed at {at} with {summary}, on the response of this call: {}", describe(call)),
            ));
        }
        let error = TraceError {
            kind: report.kind.clone(),
            message: report.message.clone(),
            line,
            attributed_call: attributed,
        };
        (error, diagnostics)
    }

    fn stopped(&self, stop: &Stop, at_line: Option<u32>, pending: &[u32]) -> (TraceError, Vec<Diagnostic>) {
        let running = pending.iter().filter_map(|id| self.calls.iter().find(|c| c.id == *id)).next_back();
        let line = match stop {
            Stop::ToolCallLimit { line, .. } => *line,
            _ => at_line.or(running.and_then(|c| c.line)),
        };
        let attributed = match stop {
            Stop::Timeout { .. } => running.map(|c| c.id),
            _ => None,
        };
        let mut message = stop.message();
        if let (Stop::Timeout { .. }, Some(call)) = (stop, running) {
            message.push_str(&format!(" while waiting for {} (call #{})", call.tool, call.id));
        }
        let mut diagnostics = Vec::new();
        if !matches!(stop, Stop::Cancelled)
            && let Some(line) = line
        {
            let range = match running.filter(|c| c.line == Some(line)).and_then(|c| self.call_range(c)) {
                Some(range) => range,
                None => self.line_range(line),
            };
            diagnostics.push(self.diagnostic(range, Severity::Error, RUN_STOPPED, message.clone()));
        }
        let error = TraceError { kind: stop.kind().to_string(), message, line, attributed_call: attributed };
        (error, diagnostics)
    }

    fn diagnostic(&self, range: ByteRange, severity: Severity, code: &'static str, message: String) -> Diagnostic {
        Diagnostic::new(self.file, range, severity, code, message)
    }

    /// The content of a 1-based line, without its indentation and line break.
    fn line_range(&self, line: u32) -> ByteRange {
        let Some(start) = self.index.line_start(line.saturating_sub(1) as usize) else {
            return ByteRange::new(self.text.len(), self.text.len());
        };
        let end = self.text[start..].find('\n').map(|i| start + i).unwrap_or(self.text.len());
        let content = &self.text[start..end];
        let indent = content.len() - content.trim_start().len();
        let trimmed_end = start + content.trim_end().len();
        ByteRange::new((start + indent).min(trimmed_end), trimmed_end)
    }

    /// The failing expression: Python's columns when it knows them, else the whole line.
    fn frame_range(&self, frame: &Frame) -> ByteRange {
        let whole = self.line_range(frame.line);
        let Some(col) = frame.col else { return whole };
        let Some(end_col) = frame.end_col else {
            // A column without an end (a syntax error): from there to the end of the line.
            let start = self.index.line_start(frame.line.saturating_sub(1) as usize).map(|s| s + col as usize);
            return match start {
                Some(start) if start < whole.end && self.text.is_char_boundary(start) => {
                    ByteRange::new(start, whole.end)
                }
                _ => whole,
            };
        };
        let Some(start_line) = self.index.line_start(frame.line.saturating_sub(1) as usize) else { return whole };
        let end_line = frame.end_line.unwrap_or(frame.line);
        let Some(end_line_start) = self.index.line_start(end_line.saturating_sub(1) as usize) else { return whole };
        let start = start_line + col as usize;
        let end = end_line_start + end_col as usize;
        if start >= end
            || end > self.text.len()
            || !self.text.is_char_boundary(start)
            || !self.text.is_char_boundary(end)
        {
            return whole;
        }
        ByteRange::new(start, end)
    }

    /// The source lines (1-based, inclusive) of an analysed call.
    fn lines_of(&self, range: ByteRange) -> (u32, u32) {
        (self.index.line_of(range.start) as u32 + 1, self.index.line_of(range.end.max(range.start)) as u32 + 1)
    }

    /// Where a traced call is in the program: the analysed call on its line, else the line.
    fn call_range(&self, call: &TraceCall) -> Option<ByteRange> {
        let line = call.line?;
        let analysed = self
            .analysis
            .calls
            .iter()
            .filter(|c| {
                let (first, last) = self.lines_of(c.range);
                first <= line && line <= last
            })
            .min_by_key(|c| (c.tool.is_none_or(|t| t.id() != call.tool), c.range.end - c.range.start));
        Some(analysed.map(|c| c.range).unwrap_or_else(|| self.line_range(line)))
    }

    /// The call whose response flowed into the failing expression (a trace id).
    fn by_flow(&self, report: &ErrorReport, failing: ByteRange) -> Option<u32> {
        let overlaps = |r: ByteRange, f: ByteRange| r.start < f.end && f.start < r.end;
        let mut accesses: Vec<_> = self.analysis.accesses.iter().filter(|a| overlaps(a.range, failing)).collect();
        if accesses.is_empty() {
            let line = self.index.line_of(failing.start) as u32 + 1;
            let whole = self.line_range(line);
            accesses = self.analysis.accesses.iter().filter(|a| overlaps(a.range, whole)).collect();
        }
        let named = error_key(report);
        let chosen = accesses
            .iter()
            .find(|a| named.as_ref().is_some_and(|k| &a.key == k))
            .or_else(|| accesses.iter().find(|a| report.kind == "IndexError" && matches!(a.key, Key::Int(_))))
            .or_else(|| accesses.iter().max_by_key(|a| a.range.start));
        let analysed = match chosen {
            Some(access) => Some(access.call),
            None => self.by_variable(failing),
        }?;
        let call = self.analysis.calls.get(analysed)?;
        let (first, last) = self.lines_of(call.range);
        let tool = call.tool.map(|t| t.id());
        self.calls
            .iter()
            .filter(|c| c.line.is_some_and(|l| first <= l && l <= last))
            .filter(|c| tool.as_ref().is_none_or(|t| *t == c.tool))
            .map(|c| c.id)
            .max()
    }

    /// A variable of the failing expression that received a call's response: the latest such call
    /// before the failing line.
    fn by_variable(&self, failing: ByteRange) -> Option<usize> {
        let mut names = Vec::new();
        collect_identifiers(self.root, failing, self.text, &mut names);
        self.analysis
            .calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.target.as_ref().is_some_and(|t| names.contains(t)))
            .filter(|(_, c)| c.range.start <= failing.start)
            .max_by_key(|(_, c)| c.range.start)
            .map(|(i, _)| i)
    }
}

/// `tmdb.search_person (call #1, line 3, ✓ 200)`: a call for messages.
fn describe(call: &TraceCall) -> String {
    let line = call.line.map(|l| format!(", line {l}")).unwrap_or_default();
    format!("{} (call #{}{line}, {})", call.tool, call.id, call.outcome())
}

/// The key a `KeyError` names (`'nmae'` → `nmae`, `3` → 3).
fn error_key(report: &ErrorReport) -> Option<Key> {
    if report.kind != "KeyError" {
        return None;
    }
    let m = report.message.trim();
    if let Some(inner) = m.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        return Some(Key::Str(inner.to_string()));
    }
    if let Some(inner) = m.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return Some(Key::Str(inner.to_string()));
    }
    m.parse::<i64>().ok().map(Key::Int)
}

fn collect_identifiers(node: Node, within: ByteRange, text: &str, out: &mut Vec<String>) {
    if node.end_byte() <= within.start || node.start_byte() >= within.end {
        return;
    }
    if node.kind() == "identifier" {
        out.push(parse::text_of(node, text).to_string());
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect_identifiers(child, within, text, out);
    }
}
