//! The forward walk over a program: one pass in program order that binds variables to what they
//! hold (see `Ty`), finds the tool calls of both dialects, and checks each call's arguments and
//! each access into a response.
//!
//! Every file here extends the one `Walker`, each with one concern:
//! - this file: the walker, its entry point, statements, and the expression dispatch;
//! - `values`: scopes, and how values flow through assignments, subscripts, `.get()`, `for`
//!   targets and comprehensions (where accesses into responses are checked);
//! - `calls`: which tool a call reaches, and the module dialect (`tmdb.search_person(…)`);
//! - `args`: a call's arguments checked against its tool's parameters (both dialects);
//! - `http`: the HTTP dialect: a request's endpoint, and its URL, `params=` and `json=` arguments;
//! - `url`: what string a URL expression spells (literals, f-strings, `+`, names holding strings).

mod args;
mod calls;
mod http;
mod url;
mod values;

pub use args::literal_json;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use tree_sitter::{Node, Tree};

use super::Analysis;
use super::dialect::Imports;
use super::parse::{fields, range_of, text_of};
use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;
use crate::toolset::Catalog;

/// What the analysis knows about a value.
#[derive(Debug, Clone, Copy)]
enum Ty<'c> {
    Unknown,
    /// JSON from a tool response (or a part of it), with the call it came from.
    Json {
        schema: &'c Value,
        call: usize,
    },
    /// An HTTP dialect response object; `.json()` gives the tool's response.
    Response {
        call: usize,
    },
    /// A `requests.Session()` / `httpx.Client()`.
    Session,
}

/// Analyses the program; with `until`, statements starting after that offset are skipped (what
/// follows the cursor cannot change what completion or hover sees there).
pub fn run<'c>(file: &Path, text: &str, tree: &Tree, catalog: &'c Catalog, until: Option<usize>) -> Analysis<'c> {
    let root = tree.root_node();
    let imports = Imports::collect(root, text);
    let mut walker = Walker {
        file,
        text,
        catalog,
        imports,
        scopes: vec![HashMap::new()],
        assignments: HashMap::new(),
        out: Analysis::default(),
        statement: ByteRange::default(),
        target: None,
        until: until.unwrap_or(usize::MAX),
    };
    walker.collect_assignments(root);
    walker.check_imports();
    walker.block(root);
    walker.out
}

/// How deep a statement's syntax may nest before the walk leaves it alone.
pub const MAX_NESTING: usize = 400;

/// Whether `node`'s subtree is deeper than `limit`, found without recursion (and without going
/// deeper than `limit + 1`).
pub fn nesting_exceeds(node: Node, limit: usize) -> bool {
    let mut cursor = node.walk();
    let mut depth = 0usize;
    loop {
        if depth > limit {
            return true;
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if depth == 0 {
                return false;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            cursor.goto_parent();
            depth -= 1;
        }
    }
}

struct Walker<'t, 'c> {
    file: &'t Path,
    text: &'t str,
    catalog: &'c Catalog,
    imports: Imports,
    scopes: Vec<HashMap<String, Ty<'c>>>,
    /// name → (position, right-hand side) of every simple assignment, for resolving URL strings.
    assignments: HashMap<String, Vec<(usize, Node<'t>)>>,
    out: Analysis<'c>,
    /// The statement being walked and the name its value is assigned to.
    statement: ByteRange,
    target: Option<String>,
    /// Statements starting after this offset are not walked.
    until: usize,
}

impl<'t, 'c> Walker<'t, 'c> {
    fn diag(&mut self, d: Diagnostic) {
        self.out.diagnostics.push(d);
    }

    fn error(&self, range: ByteRange, code: &'static str, message: String) -> Diagnostic {
        Diagnostic::error(self.file, range, code, message)
    }

    fn warning(&self, range: ByteRange, code: &'static str, message: String) -> Diagnostic {
        Diagnostic::warning(self.file, range, code, message)
    }

    fn block(&mut self, node: Node<'t>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        for child in children {
            if child.start_byte() > self.until {
                break;
            }
            self.statement(child);
        }
    }

    fn statement(&mut self, node: Node<'t>) {
        // The walk recurses through expressions and blocks: a statement nested past what any
        // real program needs (Python itself stops near 100 levels) is reported, not walked.
        if nesting_exceeds(node, MAX_NESTING) {
            self.report_too_deep(node);
            return;
        }
        let previous = (self.statement, self.target.take());
        self.statement = range_of(node);
        match node.kind() {
            "import_statement"
            | "import_from_statement"
            | "comment"
            | "pass_statement"
            | "break_statement"
            | "continue_statement"
            | "future_import_statement" => {}
            "expression_statement" => self.walk_named_children(node),
            "for_statement" => {
                self.bind_loop_target(node);
                self.children(node, &["left", "right"]);
            }
            "with_statement" => self.with_statement(node),
            "function_definition" | "class_definition" => self.definition(node),
            "decorated_definition" => {
                if let Some(def) = node.child_by_field_id(fields().definition.get()) {
                    self.statement(def);
                }
            }
            // Compound statements and their clauses, and anything else: statements and expressions
            // in order.
            _ => self.children(node, &[]),
        }
        (self.statement, self.target) = previous;
    }

    fn report_too_deep(&mut self, node: Node<'t>) {
        let first_line = self.text[node.start_byte()..].find('\n').map_or(node.end_byte(), |i| node.start_byte() + i);
        let message =
            format!("this statement is nested more than {MAX_NESTING} levels deep; chainsmith does not analyse it");
        let d = self.warning(ByteRange::new(node.start_byte(), first_line), "too-deep", message);
        self.diag(d);
    }

    /// Walks the named children of `node` (statements as statements, the rest as expressions),
    /// except the given fields (already handled).
    fn children(&mut self, node: Node<'t>, skip: &[&str]) {
        let mut cursor = node.walk();
        let mut children = Vec::new();
        if cursor.goto_first_child() {
            loop {
                let n = cursor.node();
                let field = cursor.field_name();
                if n.is_named() && !field.is_some_and(|f| skip.contains(&f)) {
                    children.push(n);
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        for child in children {
            if is_statement_like(child.kind()) {
                self.statement(child);
            } else {
                self.expr(child);
            }
        }
    }

    /// Walks every named child of `node` as an expression, for the calls and accesses inside.
    fn walk_named_children(&mut self, node: Node<'t>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        for child in children {
            self.expr(child);
        }
    }

    fn with_statement(&mut self, node: Node<'t>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        for child in children {
            if child.kind() == "with_clause" {
                let mut clause_cursor = child.walk();
                let items: Vec<Node<'t>> = child.named_children(&mut clause_cursor).collect();
                for item in items {
                    self.with_item(item);
                }
            } else {
                self.statement(child);
            }
        }
    }

    /// A function or class: its body gets its own scope over the enclosing ones.
    fn definition(&mut self, node: Node<'t>) {
        self.scopes.push(HashMap::new());
        if let Some(params) = node.child_by_field_id(fields().parameters.get()) {
            // Defaults are evaluated; parameters themselves are unknown.
            let mut cursor = params.walk();
            let children: Vec<Node<'t>> = params.named_children(&mut cursor).collect();
            for p in children {
                if let Some(v) = p.child_by_field_id(fields().value.get()) {
                    self.expr(v);
                }
            }
        }
        if let Some(body) = node.child_by_field_id(fields().body.get()) {
            self.block(body);
        }
        self.scopes.pop();
    }

    fn expr(&mut self, node: Node<'t>) -> Ty<'c> {
        match node.kind() {
            "identifier" => self.lookup(text_of(node, self.text)),
            "assignment" => {
                self.assignment(node);
                Ty::Unknown
            }
            "augmented_assignment" => {
                if let Some(r) = node.child_by_field_id(fields().right.get()) {
                    self.expr(r);
                }
                if let Some(l) = node.child_by_field_id(fields().left.get()) {
                    self.expr(l);
                }
                Ty::Unknown
            }
            "named_expression" => self.walrus(node),
            "parenthesized_expression" | "await" => {
                node.named_child(0).map(|inner| self.expr(inner)).unwrap_or(Ty::Unknown)
            }
            "call" => self.call(node),
            "subscript" => self.subscript(node),
            "list_comprehension" | "set_comprehension" | "generator_expression" | "dictionary_comprehension" => {
                self.comprehension(node);
                Ty::Unknown
            }
            "conditional_expression" | "boolean_operator" => self.first_known_operand(node),
            "lambda" => {
                self.scopes.push(HashMap::new());
                if let Some(body) = node.child_by_field_id(fields().body.get()) {
                    self.expr(body);
                }
                self.scopes.pop();
                Ty::Unknown
            }
            _ => {
                self.walk_named_children(node);
                Ty::Unknown
            }
        }
    }
}

/// Node kinds whose children include statements (or, for `expression_statement`, assignments).
pub fn contains_statements(kind: &str) -> bool {
    is_statement_like(kind) || kind == "module"
}

fn is_statement_like(kind: &str) -> bool {
    kind.ends_with("_statement")
        || kind.ends_with("_definition")
        || matches!(kind, "block" | "else_clause" | "elif_clause" | "except_clause" | "finally_clause" | "case_clause")
}
