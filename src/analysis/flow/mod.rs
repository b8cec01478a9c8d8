//! The walk over a program: binds variables to the schemas of the tool responses they hold (through
//! assignments, subscripts, `.get()`, `for` loops, comprehensions and every kind of block), finds the
//! tool calls of both dialects, and checks each call's arguments and each access into a response.
//!
//! This file holds the walk itself (scopes, statements, expressions, subscripts and accesses);
//! `calls` holds calls and their arguments (module dialect), `http` the HTTP dialect's URLs
//! and parameters. All three extend the one `Walker`.

mod calls;
mod http;

pub use calls::literal_json;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use tree_sitter::{Node, Tree};

use super::dialect::{self, FlatUrl, Imports, UrlPart};
use super::parse::{fields, range_of, string_value, text_of};
use super::{Access, Analysis, CallArg, Dialect, Key, ToolCall, ToolsetImport, UrlSite};
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::text::ByteRange;
use crate::toolset::endpoint::{self, Matched};
use crate::toolset::schema::{self, KeyLookup};
use crate::toolset::{Catalog, ParamLocation, Tool, Transport};

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

/// Arguments of a call as the checks see them.
struct ArgSite<'t> {
    name: String,
    name_range: Option<ByteRange>,
    value: Option<Node<'t>>,
    /// A literal value given as text (URL segments and query strings), checked leniently.
    text_value: Option<(String, ByteRange)>,
    value_range: ByteRange,
    location: Option<ParamLocation>,
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

    // ----- imports ---------------------------------------------------------------------------

    fn check_imports(&mut self) {
        let tokens = std::mem::take(&mut self.imports.toolset_tokens);
        for (alias, toolset, range) in &tokens {
            let known = self.catalog.toolset(toolset).is_some();
            if !known {
                let names = self.catalog.toolsets.iter().map(|t| t.name.as_str());
                let mut d = self.error(*range, "unknown-toolset", format!("no toolset `{toolset}` in this workspace"));
                if let Some(best) = did_you_mean(toolset, names) {
                    d.message.push_str(&format!("; did you mean `{best}`?"));
                    d = d.with_suggestion(format!("Change to `{best}`"), *range, best);
                } else if !self.catalog.toolsets.is_empty() {
                    let known: Vec<&str> = self.catalog.toolsets.iter().map(|t| t.name.as_str()).take(8).collect();
                    d.message.push_str(&format!(" (toolsets: {})", known.join(", ")));
                }
                self.diag(d);
            }
            self.out.imports.push(ToolsetImport {
                alias: alias.clone(),
                toolset: toolset.clone(),
                range: *range,
                known,
            });
        }
        self.imports.toolset_tokens = tokens;
        let tool_tokens = std::mem::take(&mut self.imports.tool_tokens);
        for (toolset, tool, range) in &tool_tokens {
            self.check_tool_name(toolset, tool, *range);
        }
        self.imports.tool_tokens = tool_tokens;
    }

    /// Reports an unknown tool of a known toolset; returns the tool when it exists.
    fn check_tool_name(&mut self, toolset: &str, name: &str, range: ByteRange) -> Option<&'c Tool> {
        let ts = self.catalog.toolset(toolset)?;
        if let Some(tool) = self.catalog.tool(toolset, name) {
            return Some(tool);
        }
        if ts.unlisted.is_some() {
            return None; // no list to check against (an untrusted or unavailable MCP server)
        }
        let mut d = self.error(range, "unknown-tool", format!("toolset `{toolset}` has no tool `{name}`"));
        if let Some(best) = did_you_mean(name, ts.tools.iter().map(|t| t.name.as_str())) {
            d.message.push_str(&format!("; did you mean `{best}`?"));
            d = d.with_suggestion(format!("Change to `{best}`"), range, best);
        }
        self.diag(d);
        None
    }

    // ----- scopes ----------------------------------------------------------------------------

    fn lookup(&self, name: &str) -> Ty<'c> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied()).unwrap_or(Ty::Unknown)
    }

    fn bind_name(&mut self, name: &str, ty: Ty<'c>) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), ty);
        }
    }

    /// Binds an assignment or loop target; tuples of targets get unknown values.
    fn bind(&mut self, target: Node<'t>, ty: Ty<'c>) {
        match target.kind() {
            "identifier" => {
                let name = text_of(target, self.text).to_string();
                self.bind_name(&name, ty);
            }
            "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list" => {
                let mut cursor = target.walk();
                let children: Vec<Node> = target.named_children(&mut cursor).collect();
                for child in children {
                    self.bind(child, Ty::Unknown);
                }
            }
            "parenthesized_expression" => {
                if let Some(inner) = target.named_child(0) {
                    self.bind(inner, ty);
                }
            }
            // `x["k"] = …`, `obj.attr = …`: evaluate for the accesses, bind nothing.
            _ => {
                self.expr(target);
            }
        }
    }

    fn collect_assignments(&mut self, root: Node<'t>) {
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            if node.kind() == "assignment"
                && let (Some(left), Some(right)) =
                    (node.child_by_field_id(fields().left.get()), node.child_by_field_id(fields().right.get()))
                && left.kind() == "identifier"
            {
                self.assignments
                    .entry(text_of(left, self.text).to_string())
                    .or_default()
                    .push((node.start_byte(), right));
            }
            // URL constants are assigned by statements; expressions need not be searched.
            if node.kind() == "assignment" || contains_statements(node.kind()) {
                let mut cursor = node.walk();
                stack.extend(node.named_children(&mut cursor));
            }
        }
        for list in self.assignments.values_mut() {
            list.sort_by_key(|(at, _)| *at);
        }
    }

    /// The right-hand side of the last assignment to `name` before `at` (else the first after it,
    /// for constants defined below a function that uses them).
    fn assigned_value(&self, name: &str, at: usize) -> Option<Node<'t>> {
        let list = self.assignments.get(name)?;
        list.iter().rev().find(|(pos, _)| *pos < at).or_else(|| list.first()).map(|(_, rhs)| *rhs)
    }

    // ----- statements ------------------------------------------------------------------------

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
            let first_line =
                self.text[node.start_byte()..].find('\n').map_or(node.end_byte(), |i| node.start_byte() + i);
            let message =
                format!("this statement is nested more than {MAX_NESTING} levels deep; chainsmith does not analyse it");
            self.diag(Diagnostic::warning(
                self.file,
                ByteRange::new(node.start_byte(), first_line),
                "too-deep",
                message,
            ));
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
            "expression_statement" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.expr(child);
                }
            }
            "for_statement" => {
                let iterable =
                    node.child_by_field_id(fields().right.get()).map(|r| self.expr(r)).unwrap_or(Ty::Unknown);
                if let Some(left) = node.child_by_field_id(fields().left.get()) {
                    let item = self.element(iterable);
                    self.bind(left, item);
                }
                self.children(node, &["left", "right"]);
            }
            "with_statement" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                for child in children {
                    if child.kind() == "with_clause" {
                        let mut c2 = child.walk();
                        let items: Vec<Node<'t>> = child.named_children(&mut c2).collect();
                        for item in items {
                            self.with_item(item);
                        }
                    } else {
                        self.statement(child);
                    }
                }
            }
            "function_definition" | "class_definition" => {
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

    fn with_item(&mut self, item: Node<'t>) {
        let Some(value) = item.child_by_field_id(fields().value.get()) else { return };
        if value.kind() == "as_pattern" {
            let inner = value.named_child(0);
            let ty = inner.map(|i| self.expr(i)).unwrap_or(Ty::Unknown);
            if let Some(alias) = value.child_by_field_id(fields().alias.get()) {
                let target = if alias.kind() == "as_pattern_target" { alias.named_child(0) } else { Some(alias) };
                if let Some(target) = target {
                    self.bind(target, ty);
                }
            }
        } else {
            self.expr(value);
        }
    }

    // ----- expressions -----------------------------------------------------------------------

    fn element(&self, ty: Ty<'c>) -> Ty<'c> {
        match ty {
            Ty::Json { schema: s, call } => {
                let types = schema::types(s);
                if types.contains(&"array") {
                    match schema::items(s) {
                        Some(item) => Ty::Json { schema: item, call },
                        None => Ty::Unknown,
                    }
                } else {
                    // Iterating an object yields its keys.
                    Ty::Unknown
                }
            }
            _ => Ty::Unknown,
        }
    }

    fn expr(&mut self, node: Node<'t>) -> Ty<'c> {
        match node.kind() {
            "identifier" => self.lookup(text_of(node, self.text)),
            "assignment" => {
                let right = node.child_by_field_id(fields().right.get());
                let left = node.child_by_field_id(fields().left.get());
                if let Some(l) = left
                    && l.kind() == "identifier"
                {
                    self.target = Some(text_of(l, self.text).to_string());
                }
                let ty = right.map(|r| self.expr(r)).unwrap_or(Ty::Unknown);
                self.target = None;
                if let Some(l) = left {
                    self.bind(l, ty);
                }
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
            "named_expression" => {
                let ty = node.child_by_field_id(fields().value.get()).map(|v| self.expr(v)).unwrap_or(Ty::Unknown);
                if let Some(name) = node.child_by_field_id(fields().name.get()) {
                    self.bind(name, ty);
                }
                ty
            }
            "parenthesized_expression" | "await" => {
                node.named_child(0).map(|inner| self.expr(inner)).unwrap_or(Ty::Unknown)
            }
            "call" => self.call(node),
            "subscript" => self.subscript(node),
            "list_comprehension" | "set_comprehension" | "generator_expression" | "dictionary_comprehension" => {
                self.comprehension(node);
                Ty::Unknown
            }
            "conditional_expression" | "boolean_operator" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                let mut found = Ty::Unknown;
                for child in children {
                    let ty = self.expr(child);
                    if matches!(found, Ty::Unknown) && !matches!(ty, Ty::Unknown) {
                        found = ty;
                    }
                }
                found
            }
            "lambda" => {
                self.scopes.push(HashMap::new());
                if let Some(body) = node.child_by_field_id(fields().body.get()) {
                    self.expr(body);
                }
                self.scopes.pop();
                Ty::Unknown
            }
            _ => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.expr(child);
                }
                Ty::Unknown
            }
        }
    }

    fn comprehension(&mut self, node: Node<'t>) {
        self.scopes.push(HashMap::new());
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        // Clauses bind names the body uses, so they go first, in order.
        for child in &children {
            match child.kind() {
                "for_in_clause" => {
                    let iterable =
                        child.child_by_field_id(fields().right.get()).map(|r| self.expr(r)).unwrap_or(Ty::Unknown);
                    let item = self.element(iterable);
                    if let Some(left) = child.child_by_field_id(fields().left.get()) {
                        self.bind(left, item);
                    }
                }
                "if_clause" => {
                    if let Some(cond) = child.named_child(0) {
                        self.expr(cond);
                    }
                }
                _ => {}
            }
        }
        for child in children {
            if !matches!(child.kind(), "for_in_clause" | "if_clause") {
                self.expr(child);
            }
        }
        self.scopes.pop();
    }

    fn subscript(&mut self, node: Node<'t>) -> Ty<'c> {
        let container = node.child_by_field_id(fields().value.get()).map(|v| self.expr(v)).unwrap_or(Ty::Unknown);
        let key_node = node.child_by_field_id(fields().subscript.get());
        if let Some(k) = key_node
            && !matches!(k.kind(), "string" | "integer" | "unary_operator")
        {
            self.expr(k);
        }
        let Some(key_node) = key_node else { return Ty::Unknown };
        self.access(container, node, key_node, false)
    }

    /// `container[key]` or `container.get(key)`: checks the key against the schema, records the
    /// access, and returns what it yields.
    fn access(&mut self, container: Ty<'c>, whole: Node<'t>, key_node: Node<'t>, via_get: bool) -> Ty<'c> {
        let Ty::Json { schema: s, call } = container else { return Ty::Unknown };
        let key = literal_key(key_node, self.text);
        let key_range = range_of(key_node);
        let types = schema::types(s);
        let mut result: Option<&'c Value> = None;
        match &key {
            Key::Str(k) => {
                if !types.is_empty() && !types.contains(&"object") {
                    let d = self.error(
                        key_range,
                        "bad-index",
                        format!("string key \"{k}\" on a value of type {}, not an object", types.join(" | ")),
                    );
                    self.diag(d);
                } else {
                    match schema::property(s, k) {
                        KeyLookup::Declared(sub) | KeyLookup::Open(Some(sub)) => result = Some(sub),
                        KeyLookup::Open(None) => {}
                        KeyLookup::Missing => {
                            let names: Vec<&str> = schema::keys(s).into_iter().map(|(n, _)| n).collect();
                            let tool = self.out.calls.get(call).map(|c| c.name.clone()).unwrap_or_default();
                            let mut d = self.warning(
                                key_range,
                                "unknown-key",
                                format!("key \"{k}\" is not in the response schema of `{tool}`"),
                            );
                            if let Some(best) = did_you_mean(k, names.iter().copied()) {
                                d.message.push_str(&format!("; did you mean \"{best}\"?"));
                                let quote = quote_of(key_node, self.text);
                                d = d.with_suggestion(
                                    format!("Change to \"{best}\""),
                                    key_range,
                                    format!("{quote}{best}{quote}"),
                                );
                            } else if !names.is_empty() {
                                let shown: Vec<&str> = names.iter().take(10).copied().collect();
                                let more = if names.len() > 10 { ", …" } else { "" };
                                d.message.push_str(&format!(" (keys: {}{more})", shown.join(", ")));
                            }
                            self.diag(d);
                        }
                    }
                }
            }
            Key::Int(i) => {
                if via_get {
                    // dict.get with an int key on JSON is unusual but not an indexing error.
                } else if !types.is_empty() && !types.contains(&"array") {
                    let d = self.error(
                        key_range,
                        "bad-index",
                        format!("integer index {i} on a value of type {}, not an array", types.join(" | ")),
                    );
                    self.diag(d);
                } else {
                    result = schema::items(s);
                }
            }
            Key::Other => {
                if key_node.kind() == "slice" {
                    self.out.accesses.push(Access {
                        range: range_of(whole),
                        key_range,
                        key,
                        container: s,
                        result: Some(s),
                        call,
                    });
                    return container;
                }
                if types == ["array"] {
                    result = schema::items(s);
                } else if let KeyLookup::Open(Some(sub)) = schema::property(s, "") {
                    result = Some(sub);
                }
            }
        }
        self.out.accesses.push(Access { range: range_of(whole), key_range, key, container: s, result, call });
        match result {
            Some(sub) => Ty::Json { schema: sub, call },
            None => Ty::Unknown,
        }
    }
}

impl Ty<'_> {
    fn is_unknown_or_module(&self) -> bool {
        matches!(self, Ty::Unknown)
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

fn literal_key(node: Node, text: &str) -> Key {
    if let Some(s) = string_value(node, text) {
        return Key::Str(s);
    }
    match literal_json(node, text) {
        Some(Value::Number(n)) if n.is_i64() => Key::Int(n.as_i64().unwrap_or(0)),
        _ => Key::Other,
    }
}

fn quote_of(node: Node, text: &str) -> &'static str {
    match text.get(node.start_byte()..node.end_byte()) {
        Some(s) if s.ends_with('\'') => "'",
        _ => "\"",
    }
}
