//! The forward walk over a program: one pass in program order that binds variables to what they
//! hold (see `Ty`), finds the tool calls of both dialects, and checks each call's arguments and
//! each access into a response.
//!
//! Every file here extends the one `Walker`, each with one concern:
//! - this file: the walker, its entry point, statements, and the expression dispatch;
//! - `values`: scopes, and how values flow through assignments, subscripts, `.get()`, `for`
//!   targets and comprehensions (where accesses into responses are checked);
//! - `builtins`: what `sorted`, `next`, `max`, `map`, `zip`, `enumerate`… make of a response
//!   value, with the parameter of a `lambda` or `key=` function bound to its elements;
//! - `guards`: membership guards (`"k" in r`, `r.get("k")`, `except KeyError`) that silence
//!   `unknown-key`, and comparisons of enum-typed fields with literals;
//! - `calls`: which tool a call reaches, and the module dialect (`tmdb.search_person(…)`);
//! - `args`: a call's arguments checked against its tool's parameters (both dialects);
//! - `http`: the HTTP dialect: a request's endpoint, and its URL, `params=` and `json=` arguments;
//! - `url`: what string a URL expression spells (literals, f-strings, `+`, names holding strings).

mod args;
pub use args::missing_keywords;
mod builtins;
mod calls;
mod guards;
mod http;
mod incremental;
mod url;
mod values;

pub use args::literal_json;
pub use incremental::Memo;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use tree_sitter::{Node, Tree};

use super::Analysis;
use super::dialect::Imports;
use super::parse::{fields, is_statement_like, range_of, text_of};
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
        /// The program has ruled out `null` for this value (`x or {}`), whatever the schema says.
        not_null: bool,
    },
    /// A list, iterator or view built by the program whose elements are `element` (a part of the
    /// response of `call`): a comprehension, `map(…)`, `.values()`. Schemas are borrowed from the
    /// catalog, so "array of `element`" cannot be written as a schema of its own.
    Items {
        element: &'c Value,
        call: usize,
    },
    /// An iterable of pairs (`.items()`, `enumerate`, `zip`), with each side's schema when known.
    Pairs {
        first: Option<(&'c Value, usize)>,
        second: Option<(&'c Value, usize)>,
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
    let mut walker = Walker::new(file, text, root, catalog, until);
    walker.block(root);
    walker.out
}

/// Analyses the program, walking again only the top-level statements whose text or inputs
/// changed since `previous` (an analysis of an earlier text against the same catalog, made by
/// this function). The analysis of the whole program carries what the next edit's reuses; with
/// `until`, statements starting after that offset are skipped, and nothing is kept.
pub fn run_after<'c>(
    file: &Path,
    text: &str,
    tree: &Tree,
    catalog: &'c Catalog,
    previous: Option<&Analysis<'c>>,
    until: Option<usize>,
) -> Analysis<'c> {
    let root = tree.root_node();
    let mut walker = Walker::new(file, text, root, catalog, until);
    let statements = walker.module(root, previous);
    if until.is_none() {
        let memo = walker.memo(statements);
        walker.out.memo = Some(Box::new(memo));
    }
    walker.out
}

/// What listing one declared name (a schema's key, a tool's parameter) for a message costs of the
/// suggestion allowance, next to the character pairs did-you-mean measures (each found by a
/// hashed walk of the schema: some thirty times the work).
const LISTING_WORK: usize = 32;

impl<'t, 'c> Walker<'t, 'c> {
    /// [`crate::diagnostic::did_you_mean`] within what this walk may still spend on suggestions.
    fn did_you_mean<'a>(&mut self, word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
        crate::diagnostic::did_you_mean_within(word, candidates, &mut self.suggestion_work)
    }

    /// A walker at the start of the program, its imports checked.
    fn new(file: &'t Path, text: &'t str, root: Node<'t>, catalog: &'c Catalog, until: Option<usize>) -> Self {
        let imports = Imports::collect(root, text);
        let mut walker = Walker {
            file,
            text,
            catalog,
            imports,
            scopes: vec![HashMap::new()],
            root,
            assignments: std::cell::OnceCell::new(),
            out: Analysis::default(),
            statement: ByteRange::default(),
            target: None,
            until: until.unwrap_or(usize::MAX),
            guards: Vec::new(),
            key_errors_caught: 0,
            function_returns: HashMap::new(),
            returns: Vec::new(),
            nesting_checked: false,
            log: Default::default(),
            suggestion_work: crate::diagnostic::SUGGESTION_WORK,
            param_indexes: HashMap::new(),
        };
        walker.check_imports();
        walker
    }
}

/// How deep a statement's syntax may nest before the walk leaves it alone.
pub const MAX_NESTING: usize = 400;

/// Whether a statement is long enough to nest past [`MAX_NESTING`]: every level of Python's syntax
/// tree below a statement takes at least one byte of its own (an operator, a bracket, a keyword,
/// indentation) save a few wrapper nodes, so a statement shorter than half the limit cannot be too
/// deep — and most statements are that short, which spares the walk a second pass over them.
fn could_nest_too_deep(node: Node) -> bool {
    node.end_byte() - node.start_byte() >= MAX_NESTING / 2
}

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
    root: Node<'t>,
    /// name → (position, right-hand side) of every simple assignment, for resolving URL strings.
    assignments: std::cell::OnceCell<url::Assignments<'t>>,
    out: Analysis<'c>,
    /// The statement being walked and the name its value is assigned to.
    statement: ByteRange,
    target: Option<String>,
    /// Statements starting after this offset are not walked.
    until: usize,
    /// Keys the program checked before reading them (`if "k" in r:`): no `unknown-key` for them.
    guards: Vec<guards::Guard>,
    /// How many `try` blocks around the walk catch `KeyError`: no `unknown-key` inside.
    key_errors_caught: usize,
    /// What each local function returns, when that is a value the walk follows.
    function_returns: HashMap<String, Ty<'c>>,
    /// For each function being walked, what its first `return` of a followed value gives.
    returns: Vec<Ty<'c>>,
    /// Whether an enclosing statement was found shallow enough for the whole walk.
    nesting_checked: bool,
    /// What the top-level statement being walked reads and binds (for incremental re-analysis).
    log: incremental::LogCell<'c>,
    /// What did-you-mean suggestions may still cost this walk ([`crate::diagnostic::SUGGESTION_WORK`]).
    suggestion_work: usize,
    /// Each called tool's parameters indexed, by (the tool's address, wire names or keywords).
    param_indexes: HashMap<(usize, bool), std::rc::Rc<args::ParamIndex<'c>>>,
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
        // An `if "k" not in r: continue` guards the rest of its block.
        let guards_before = self.guards.len();
        for child in children {
            if child.start_byte() > self.until {
                break;
            }
            self.statement(child);
        }
        self.guards.truncate(guards_before);
    }

    fn statement(&mut self, node: Node<'t>) {
        // The walk recurses through expressions and blocks: a statement nested past what any
        // real program needs (Python itself stops near 100 levels) is reported, not walked. The
        // statements inside one that passed are shallower still, so only the outermost is measured.
        let measured_here = !self.nesting_checked;
        if measured_here {
            if could_nest_too_deep(node) && nesting_exceeds(node, MAX_NESTING) {
                self.report_too_deep(node);
                return;
            }
            self.nesting_checked = true;
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
            "if_statement" => self.if_statement(node),
            // `assert x` rules out what `if not x: raise` would, for the rest of the block.
            "assert_statement" => {
                self.walk_named_children(node);
                if let Some(held) = node.named_child(0).and_then(|c| self.present_when_true(c)) {
                    self.guards.push(held);
                }
            }
            "try_statement" => self.try_statement(node),
            "return_statement" => {
                let ty = node.named_child(0).map(|value| self.expr(value)).unwrap_or(Ty::Unknown);
                if let Some(first) = self.returns.last_mut()
                    && matches!(first, Ty::Unknown)
                {
                    *first = ty;
                }
            }
            "function_definition" | "class_definition" => self.definition(node),
            "decorated_definition" => {
                let mut cursor = node.walk();
                let decorators: Vec<Node<'t>> =
                    node.named_children(&mut cursor).filter(|c| c.kind() == "decorator").collect();
                for decorator in decorators {
                    self.walk_named_children(decorator);
                }
                if let Some(def) = node.child_by_field_id(fields().definition.get()) {
                    self.statement(def);
                }
            }
            // Compound statements and their clauses, and anything else: statements and expressions
            // in order.
            _ => self.children(node, &[]),
        }
        (self.statement, self.target) = previous;
        if measured_here {
            self.nesting_checked = false;
        }
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

    /// A function or class: its body gets its own scope over the enclosing ones. What a function
    /// returns is remembered for its calls.
    fn definition(&mut self, node: Node<'t>) {
        // Class bases and keywords are expressions of the enclosing scope.
        if let Some(bases) = node.child_by_field_id(fields().superclasses.get()) {
            self.walk_named_children(bases);
        }
        self.scopes.push(HashMap::new());
        if let Some(params) = node.child_by_field_id(fields().parameters.get()) {
            self.parameters(params);
        }
        let is_function = node.kind() == "function_definition";
        if is_function {
            self.returns.push(Ty::Unknown);
        }
        if let Some(body) = node.child_by_field_id(fields().body.get()) {
            self.block(body);
        }
        self.scopes.pop();
        if is_function {
            let returned = self.returns.pop().unwrap_or(Ty::Unknown);
            if let Some(name) = node.child_by_field_id(fields().name.get()) {
                let name = text_of(name, self.text).to_string();
                self.log.borrow_mut().wrote_function(&name);
                self.function_returns.insert(name, returned);
            }
        }
    }

    /// Binds a function's or lambda's parameters in the scope just pushed: defaults are
    /// evaluated; the parameters are unknown (so they hide the enclosing names they shadow).
    fn parameters(&mut self, params: Node<'t>) {
        let mut cursor = params.walk();
        let children: Vec<Node<'t>> = params.named_children(&mut cursor).collect();
        for p in children {
            if let Some(v) = p.child_by_field_id(fields().value.get()) {
                self.expr(v);
            }
            if let Some(name) = parameter_name(p, self.text) {
                self.bind_name(name, Ty::Unknown);
            }
        }
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
                self.comprehension(node)
            }
            "conditional_expression" => self.conditional(node),
            "boolean_operator" => self.boolean(node),
            "comparison_operator" => self.comparison(node),
            "lambda" => {
                // A lambda as a value is a function, not what its body gives.
                self.lambda(node, Ty::Unknown);
                Ty::Unknown
            }
            _ => {
                self.walk_named_children(node);
                Ty::Unknown
            }
        }
    }
}

/// The name a parameter binds (`x`, `x=1`, `x: int`, `*args`, `**kw`).
fn parameter_name<'t>(param: Node, text: &'t str) -> Option<&'t str> {
    match param.kind() {
        "identifier" => Some(text_of(param, text)),
        "default_parameter" | "typed_default_parameter" => {
            param.child_by_field_id(fields().name.get()).filter(|n| n.kind() == "identifier").map(|n| text_of(n, text))
        }
        "typed_parameter" | "list_splat_pattern" | "dictionary_splat_pattern" => {
            param.named_child(0).and_then(|inner| parameter_name(inner, text))
        }
        _ => None,
    }
}
