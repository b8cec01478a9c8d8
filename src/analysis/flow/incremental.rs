//! Re-analysis after an edit without re-walking the whole program: what each top-level statement
//! did is kept (a [`Memo`]), keyed by its text and by what it read of the state flowing into it,
//! and a statement whose text and inputs are unchanged is not walked again — its calls, accesses,
//! URL sites and diagnostics are copied, moved to where the statement now is, and its bindings
//! replayed.
//!
//! A statement's inputs, as the walk sees them: the module-level names it read before binding
//! them (and the tool calls their values come from), the local functions whose return values it
//! read, the membership guards in force, how many calls come before it, and the program's imports.
//! A statement that looked a name's assignment up in the syntax (URL constants, `params=` held in
//! a variable) depends on other statements' text, so it is always walked again.

use std::cell::RefCell;
use std::ops::Range;

use tree_sitter::Node;

use super::guards::Guard;
use super::{Ty, Walker};
use crate::analysis::dialect::Imports;
use crate::analysis::{Access, Analysis, CallArg, ToolCall, UrlSite};
use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;

/// What the last full or incremental walk of a program left for the next one.
#[derive(Debug, Default)]
pub struct Memo<'c> {
    text: String,
    imports: Imports,
    statements: Vec<Statement<'c>>,
    /// Every diagnostic the walk made, before suppressions and configured severities.
    diagnostics: Vec<Diagnostic>,
    walked: usize,
}

impl Memo<'_> {
    /// How many top-level statements this analysis walked (the rest it reused).
    pub fn walked(&self) -> usize {
        self.walked
    }
}

/// The top-level statements of one walk, and how many of them were walked rather than reused.
pub(super) struct Statements<'c> {
    statements: Vec<Statement<'c>>,
    walked: usize,
}

/// One top-level statement's inputs and what it produced.
#[derive(Debug)]
struct Statement<'c> {
    range: ByteRange,
    kind: u16,
    /// The 0-based line it starts on (calls carry their line).
    row: usize,
    calls_before: usize,
    guards_before: Vec<Guard>,
    reads: Vec<(String, Ty<'c>)>,
    function_reads: Vec<(String, Option<Ty<'c>>)>,
    used_assignments: bool,
    writes: Vec<(String, Ty<'c>)>,
    function_writes: Vec<(String, Ty<'c>)>,
    guards_pushed: Vec<Guard>,
    calls: Range<usize>,
    accesses: Range<usize>,
    urls: Range<usize>,
    diagnostics: Range<usize>,
}

/// What the statement being walked reads and writes of the module's state; kept in a `RefCell`
/// because name lookups are `&self`.
#[derive(Debug, Default)]
pub(super) struct Log<'c> {
    active: bool,
    reads: Vec<(String, Ty<'c>)>,
    function_reads: Vec<(String, Option<Ty<'c>>)>,
    written: Vec<String>,
    functions_written: Vec<String>,
    used_assignments: bool,
}

pub(super) type LogCell<'c> = RefCell<Log<'c>>;

impl<'c> Log<'c> {
    /// A module-level name read (or not found anywhere): an input unless the statement bound it.
    pub(super) fn read(&mut self, name: &str, ty: Ty<'c>) {
        if self.active && !self.written.iter().any(|w| w == name) && !self.reads.iter().any(|(r, _)| r == name) {
            self.reads.push((name.to_string(), ty));
        }
    }

    pub(super) fn wrote(&mut self, name: &str) {
        if self.active && !self.written.iter().any(|w| w == name) {
            self.written.push(name.to_string());
        }
    }

    pub(super) fn read_function(&mut self, name: &str, ty: Option<Ty<'c>>) {
        if self.active
            && !self.functions_written.iter().any(|w| w == name)
            && !self.function_reads.iter().any(|(r, _)| r == name)
        {
            self.function_reads.push((name.to_string(), ty));
        }
    }

    pub(super) fn wrote_function(&mut self, name: &str) {
        if self.active && !self.functions_written.iter().any(|w| w == name) {
            self.functions_written.push(name.to_string());
        }
    }

    pub(super) fn used_assignments(&mut self) {
        self.used_assignments = true;
    }
}

impl<'t, 'c> Walker<'t, 'c> {
    /// Walks the module's statements, reusing what `previous` recorded for each statement whose
    /// text and inputs are unchanged, and returns what each did.
    pub(super) fn module(&mut self, root: Node<'t>, previous: Option<&Analysis<'c>>) -> Statements<'c> {
        let mut cursor = root.walk();
        let children: Vec<Node<'t>> = root.named_children(&mut cursor).collect();
        let old = previous
            .and_then(|p| p.memo.as_deref().map(|m| (p, m)))
            .filter(|(_, m)| m.imports.same_names(&self.imports));
        let aligned = old.map(|(_, memo)| align(memo, self.text, &children)).unwrap_or_default();
        let mut statements = Vec::with_capacity(children.len());
        let mut walked = 0;
        for (i, child) in children.iter().enumerate() {
            if child.start_byte() > self.until {
                break;
            }
            // A statement reaching past `until` is walked: the walk stops inside it.
            let whole = child.end_byte() <= self.until;
            let reused = match (old, aligned.get(i).copied().flatten()) {
                (Some((analysis, memo)), Some(j)) if whole && self.unchanged_inputs(&memo.statements[j], analysis) => {
                    Some(self.replay(*child, &memo.statements[j], analysis, memo))
                }
                _ => None,
            };
            let record = match reused {
                Some(record) => record,
                None => {
                    walked += 1;
                    self.walk_recorded(*child)
                }
            };
            statements.push(record);
        }
        Statements { statements, walked }
    }

    /// What the next analysis reuses of this walk of the whole program.
    pub(super) fn memo(&self, walk: Statements<'c>) -> Memo<'c> {
        // Diagnostics made before the statements (the imports') belong to no statement.
        Memo {
            text: self.text.to_string(),
            imports: self.imports.clone(),
            statements: walk.statements,
            diagnostics: self.out.diagnostics.clone(),
            walked: walk.walked,
        }
    }

    /// Walks one top-level statement, recording its inputs and outputs.
    fn walk_recorded(&mut self, node: Node<'t>) -> Statement<'c> {
        let before = self.counts();
        let guards_before = self.guards.clone();
        *self.log.borrow_mut() = Log { active: true, ..Log::default() };
        self.statement(node);
        let log = std::mem::take(&mut *self.log.borrow_mut());
        let module = &self.scopes[0];
        let writes = log.written.into_iter().filter_map(|name| module.get(&name).map(|ty| (name, *ty))).collect();
        let function_writes = log
            .functions_written
            .into_iter()
            .filter_map(|name| self.function_returns.get(&name).map(|ty| (name, *ty)))
            .collect();
        let after = self.counts();
        Statement {
            range: ByteRange::new(node.start_byte(), node.end_byte()),
            kind: node.kind_id(),
            row: node.start_position().row,
            calls_before: before.0,
            guards_pushed: self.guards.get(guards_before.len()..).unwrap_or_default().to_vec(),
            guards_before,
            reads: log.reads,
            function_reads: log.function_reads,
            used_assignments: log.used_assignments,
            writes,
            function_writes,
            calls: before.0..after.0,
            accesses: before.1..after.1,
            urls: before.2..after.2,
            diagnostics: before.3..after.3,
        }
    }

    fn counts(&self) -> (usize, usize, usize, usize) {
        (self.out.calls.len(), self.out.accesses.len(), self.out.urls.len(), self.out.diagnostics.len())
    }

    /// Whether the statement recorded as `old` would see what it saw then.
    fn unchanged_inputs(&self, old: &Statement<'c>, previous: &Analysis<'c>) -> bool {
        let same = |now: Ty<'c>, then: Ty<'c>| same_value(now, &self.out.calls, then, &previous.calls);
        !old.used_assignments
            && old.calls_before == self.out.calls.len()
            && old.guards_before == self.guards
            && old
                .reads
                .iter()
                .all(|(name, then)| same(self.scopes[0].get(name).copied().unwrap_or(Ty::Unknown), *then))
            && old.function_reads.iter().all(|(name, then)| match (self.function_returns.get(name), then) {
                (Some(now), Some(then)) => same(*now, *then),
                (None, None) => true,
                _ => false,
            })
    }

    /// Applies what the statement recorded as `old` did, at `node`'s place.
    fn replay(
        &mut self,
        node: Node<'t>,
        old: &Statement<'c>,
        previous: &Analysis<'c>,
        memo: &Memo<'c>,
    ) -> Statement<'c> {
        let shift = Shift {
            bytes: node.start_byte() as isize - old.range.start as isize,
            rows: node.start_position().row as isize - old.row as isize,
        };
        let before = self.counts();
        for (name, ty) in &old.writes {
            self.scopes[0].insert(name.clone(), *ty);
        }
        for (name, ty) in &old.function_writes {
            self.function_returns.insert(name.clone(), *ty);
        }
        self.guards.extend(old.guards_pushed.iter().cloned());
        self.out.calls.extend(previous.calls[old.calls.clone()].iter().map(|c| shift.call(c)));
        self.out.accesses.extend(previous.accesses[old.accesses.clone()].iter().map(|a| shift.access(a)));
        self.out.urls.extend(previous.urls[old.urls.clone()].iter().map(|u| shift.url(u)));
        self.out.diagnostics.extend(memo.diagnostics[old.diagnostics.clone()].iter().map(|d| shift.diagnostic(d)));
        let after = self.counts();
        Statement {
            range: shift.range(old.range),
            kind: old.kind,
            row: node.start_position().row,
            calls_before: old.calls_before,
            guards_before: old.guards_before.clone(),
            reads: old.reads.clone(),
            function_reads: old.function_reads.clone(),
            used_assignments: false,
            writes: old.writes.clone(),
            function_writes: old.function_writes.clone(),
            guards_pushed: old.guards_pushed.clone(),
            calls: before.0..after.0,
            accesses: before.1..after.1,
            urls: before.2..after.2,
            diagnostics: before.3..after.3,
        }
    }
}

/// For each of the new top-level statements, the old one it corresponds to: those before the
/// first change (same text at the same place) and those after the last (same text at the same
/// distance from the end). Statements in between are walked.
fn align(memo: &Memo, text: &str, children: &[Node]) -> Vec<Option<usize>> {
    let old = &memo.statements;
    let same_text = |o: &Statement, n: &Node| {
        o.kind == n.kind_id() && memo.text.get(o.range.start..o.range.end) == text.get(n.start_byte()..n.end_byte())
    };
    let mut aligned = vec![None; children.len()];
    let mut prefix = 0;
    while prefix < old.len()
        && prefix < children.len()
        && old[prefix].range.start == children[prefix].start_byte()
        && same_text(&old[prefix], &children[prefix])
    {
        aligned[prefix] = Some(prefix);
        prefix += 1;
    }
    let mut suffix = 0;
    while suffix < old.len() - prefix && suffix < children.len() - prefix {
        let (o, n) = (&old[old.len() - 1 - suffix], &children[children.len() - 1 - suffix]);
        if memo.text.len() - o.range.start != text.len() - n.start_byte() || !same_text(o, n) {
            break;
        }
        aligned[children.len() - 1 - suffix] = Some(old.len() - 1 - suffix);
        suffix += 1;
    }
    aligned
}

/// Whether two values are the same value: the same schema, and parts of calls of the same tool
/// written the same way (the walk reads a call's tool and name back through its index).
fn same_value<'c>(now: Ty<'c>, calls_now: &[ToolCall<'c>], then: Ty<'c>, calls_then: &[ToolCall<'c>]) -> bool {
    let same_call = |a: usize, b: usize| {
        a == b
            && match (calls_now.get(a), calls_then.get(b)) {
                (Some(x), Some(y)) => same_tool(x, y),
                (None, None) => true,
                _ => false,
            }
    };
    let same_part = |a: Option<(&'c serde_json::Value, usize)>, b: Option<(&'c serde_json::Value, usize)>| match (a, b)
    {
        (Some((s, c)), Some((t, d))) => std::ptr::eq(s, t) && same_call(c, d),
        (None, None) => true,
        _ => false,
    };
    match (now, then) {
        (Ty::Unknown, Ty::Unknown) | (Ty::Session, Ty::Session) => true,
        (Ty::Json { schema: s, call: c, not_null: n }, Ty::Json { schema: t, call: d, not_null: m }) => {
            std::ptr::eq(s, t) && same_call(c, d) && n == m
        }
        (Ty::Items { element: s, call: c }, Ty::Items { element: t, call: d }) => std::ptr::eq(s, t) && same_call(c, d),
        (Ty::Pairs { first: a, second: b }, Ty::Pairs { first: c, second: d }) => same_part(a, c) && same_part(b, d),
        (Ty::Response { call: c }, Ty::Response { call: d }) => same_call(c, d),
        _ => false,
    }
}

fn same_tool(a: &ToolCall, b: &ToolCall) -> bool {
    let tool = match (a.tool, b.tool) {
        (Some(x), Some(y)) => std::ptr::eq(x, y),
        (None, None) => true,
        _ => false,
    };
    tool && a.name == b.name
}

/// How far a reused statement moved.
struct Shift {
    bytes: isize,
    rows: isize,
}

impl Shift {
    fn offset(&self, at: usize) -> usize {
        at.saturating_add_signed(self.bytes)
    }

    fn range(&self, r: ByteRange) -> ByteRange {
        ByteRange::new(self.offset(r.start), self.offset(r.end))
    }

    fn call<'c>(&self, c: &ToolCall<'c>) -> ToolCall<'c> {
        ToolCall {
            range: self.range(c.range),
            name_range: self.range(c.name_range),
            args_range: self.range(c.args_range),
            args: c
                .args
                .iter()
                .map(|a| CallArg {
                    name_range: a.name_range.map(|r| self.range(r)),
                    value_range: self.range(a.value_range),
                    ..a.clone()
                })
                .collect(),
            statement_range: self.range(c.statement_range),
            line: c.line.saturating_add_signed(self.rows),
            ..c.clone()
        }
    }

    fn access<'c>(&self, a: &Access<'c>) -> Access<'c> {
        Access { range: self.range(a.range), key_range: self.range(a.key_range), ..a.clone() }
    }

    fn url(&self, u: &UrlSite) -> UrlSite {
        UrlSite { range: self.range(u.range), path_start: u.path_start.map(|p| self.offset(p)), ..u.clone() }
    }

    fn diagnostic(&self, d: &Diagnostic) -> Diagnostic {
        let mut moved = d.clone();
        moved.range = self.range(d.range);
        for s in &mut moved.suggestions {
            s.range = self.range(s.range);
        }
        moved
    }
}

impl Imports {
    /// Whether the program's names for toolsets, tools and HTTP clients are the same: every
    /// statement's meaning depends on them.
    fn same_names(&self, other: &Imports) -> bool {
        self.toolsets == other.toolsets
            && self.tools == other.tools
            && self.http_modules == other.http_modules
            && self.http_functions == other.http_functions
    }
}
