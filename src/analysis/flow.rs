//! The walk over a program: binds variables to the schemas of the tool responses they hold (through
//! assignments, subscripts, `.get()`, `for` loops, comprehensions and every kind of block), finds the
//! tool calls of both dialects, and checks each call's arguments and each access into a response.

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

    fn call(&mut self, node: Node<'t>) -> Ty<'c> {
        let Some(function) = node.child_by_field_id(fields().function.get()) else { return Ty::Unknown };
        let arguments = node.child_by_field_id(fields().arguments.get());
        match function.kind() {
            "attribute" => {
                let object = function.child_by_field_id(fields().object.get());
                let attr = function.child_by_field_id(fields().attribute.get());
                let (Some(object), Some(attr)) = (object, attr) else { return self.call_fallback(node) };
                let attr_name = text_of(attr, self.text);
                let object_text = text_of(object, self.text);
                // Module dialect: `tmdb.search_person(…)` or `chainsmith.tools.tmdb.search_person(…)`.
                if let Some(toolset) = self.imports.toolsets.get(object_text).cloned() {
                    return self.module_call(node, &toolset, attr_name, range_of(attr), arguments);
                }
                // HTTP dialect: `requests.get(…)`, `httpx.post(…)`, `requests.Session()`.
                if object.kind() == "identifier"
                    && self.imports.http_modules.contains_key(object_text)
                    && self.lookup(object_text).is_unknown_or_module()
                {
                    return match attr_name {
                        "Session" | "Client" | "AsyncClient" | "session" => {
                            self.eval_args(arguments);
                            Ty::Session
                        }
                        "request" => self.http_call(node, None, arguments),
                        m if dialect::HTTP_METHODS.contains(&m) => self.http_call(node, Some(m), arguments),
                        _ => self.call_fallback(node),
                    };
                }
                let receiver = self.expr(object);
                match (receiver, attr_name) {
                    (Ty::Session, "request") => self.http_call(node, None, arguments),
                    (Ty::Session, m) if dialect::HTTP_METHODS.contains(&m) => self.http_call(node, Some(m), arguments),
                    (Ty::Response { call }, "json") => {
                        self.eval_args(arguments);
                        match self.out.calls.get(call).and_then(|c| c.tool).and_then(|t| t.response.as_ref()) {
                            Some(schema) => Ty::Json { schema, call },
                            None => Ty::Unknown,
                        }
                    }
                    (Ty::Json { .. }, "get") => {
                        let key = arguments.and_then(|a| a.named_child(0));
                        let ty = match key {
                            Some(k) if matches!(k.kind(), "string" | "integer") => self.access(receiver, node, k, true),
                            _ => Ty::Unknown,
                        };
                        if let Some(a) = arguments {
                            let mut cursor = a.walk();
                            let rest: Vec<Node<'t>> = a.named_children(&mut cursor).skip(1).collect();
                            for r in rest {
                                self.expr(r);
                            }
                        }
                        ty
                    }
                    (Ty::Json { schema: s, call }, "copy") => Ty::Json { schema: s, call },
                    (Ty::Json { schema: s, call }, "values") => match schema::property(s, "") {
                        KeyLookup::Open(Some(sub)) => Ty::Json { schema: self.array_of(sub), call },
                        _ => {
                            self.eval_args(arguments);
                            Ty::Unknown
                        }
                    },
                    _ => {
                        self.eval_args(arguments);
                        Ty::Unknown
                    }
                }
            }
            "identifier" => {
                let name = text_of(function, self.text);
                if let Some((toolset, tool)) = self.imports.tools.get(name).cloned() {
                    return self.module_call(node, &toolset, &tool, range_of(function), arguments);
                }
                if let Some(method) = self.imports.http_functions.get(name).cloned() {
                    return match method.as_str() {
                        "session" => {
                            self.eval_args(arguments);
                            Ty::Session
                        }
                        "request" => self.http_call(node, None, arguments),
                        m => self.http_call(node, Some(m), arguments),
                    };
                }
                let args = self.eval_args_collect(arguments);
                match (name, args.as_slice()) {
                    // `next(iter(xs))`, `list(xs)`, `sorted(xs)`, `reversed(xs)` keep the element type.
                    ("list" | "sorted" | "reversed" | "iter" | "tuple", [ty, ..]) => *ty,
                    ("next", [ty, ..]) => *ty,
                    ("dict", [ty, ..]) => *ty,
                    _ => Ty::Unknown,
                }
            }
            _ => self.call_fallback(node),
        }
    }

    /// Schemas borrowed from the catalog can't be built at analysis time, so `.values()` keeps the
    /// value schema and iteration treats it as the element.
    fn array_of(&self, item: &'c Value) -> &'c Value {
        item
    }

    fn call_fallback(&mut self, node: Node<'t>) -> Ty<'c> {
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        for child in children {
            self.expr(child);
        }
        Ty::Unknown
    }

    fn eval_args(&mut self, arguments: Option<Node<'t>>) {
        self.eval_args_collect(arguments);
    }

    fn eval_args_collect(&mut self, arguments: Option<Node<'t>>) -> Vec<Ty<'c>> {
        let Some(arguments) = arguments else { return Vec::new() };
        let mut cursor = arguments.walk();
        let children: Vec<Node<'t>> = arguments.named_children(&mut cursor).collect();
        children
            .into_iter()
            .map(|c| match c.kind() {
                "keyword_argument" => {
                    c.child_by_field_id(fields().value.get()).map(|v| self.expr(v));
                    Ty::Unknown
                }
                _ => self.expr(c),
            })
            .collect()
    }

    // ----- module dialect --------------------------------------------------------------------

    fn module_call(
        &mut self,
        node: Node<'t>,
        toolset: &str,
        name: &str,
        name_range: ByteRange,
        arguments: Option<Node<'t>>,
    ) -> Ty<'c> {
        let target = self.target.take();
        let tool = self.check_tool_name(toolset, name, name_range);
        let mut sites = Vec::new();
        let mut complete = true;
        if let Some(arguments) = arguments {
            let mut cursor = arguments.walk();
            let children: Vec<Node<'t>> = arguments.named_children(&mut cursor).collect();
            for child in children {
                match child.kind() {
                    "keyword_argument" => {
                        let (Some(n), v) = (
                            child.child_by_field_id(fields().name.get()),
                            child.child_by_field_id(fields().value.get()),
                        ) else {
                            continue;
                        };
                        sites.push(ArgSite {
                            name: text_of(n, self.text).to_string(),
                            name_range: Some(range_of(n)),
                            value: v,
                            text_value: None,
                            value_range: v.map(range_of).unwrap_or(range_of(child)),
                            location: None,
                        });
                    }
                    "dictionary_splat" | "list_splat" => {
                        complete = false;
                        self.expr(child);
                    }
                    "comment" => {}
                    _ => {
                        self.expr(child);
                        if tool.is_some() {
                            let d = self.error(
                                range_of(child),
                                "positional-argument",
                                "tool calls take keyword arguments only (name=value)".into(),
                            );
                            self.diag(d);
                        }
                    }
                }
            }
        }
        let call_index = self.out.calls.len();
        let args_range = arguments.map(range_of).unwrap_or(range_of(node));
        self.out.calls.push(ToolCall {
            tool,
            toolset: toolset.to_string(),
            name: name.to_string(),
            dialect: Dialect::Module,
            range: range_of(node),
            name_range,
            args_range,
            args: Vec::new(),
            target,
            statement_range: self.statement,
            line: node.start_position().row,
        });
        self.check_args(call_index, tool, sites, complete, false, name_range, arguments);
        match tool.and_then(|t| t.response.as_ref()) {
            Some(schema) => Ty::Json { schema, call: call_index },
            None => Ty::Unknown,
        }
    }

    // ----- arguments -------------------------------------------------------------------------

    /// Checks a call's arguments against the tool's parameters and records them on the call.
    /// `wire` says whether names are wire names (HTTP dialect) or Python keywords.
    #[allow(clippy::too_many_arguments)]
    fn check_args(
        &mut self,
        call_index: usize,
        tool: Option<&'c Tool>,
        sites: Vec<ArgSite<'t>>,
        complete: bool,
        wire: bool,
        anchor: ByteRange,
        arguments: Option<Node<'t>>,
    ) {
        let mut recorded = Vec::new();
        let auth_param = tool
            .and_then(|t| self.catalog.toolset(&t.toolset))
            .and_then(|ts| ts.auth.as_ref())
            .and_then(|a| a.query.clone());
        for site in &sites {
            let ty = match site.value {
                Some(v) if literal_json(v, self.text).is_none() => self.expr(v),
                _ => Ty::Unknown,
            };
            let param = tool.and_then(|t| {
                t.params.iter().find(|p| if wire { p.wire_name == site.name } else { p.name == site.name })
            });
            recorded.push(CallArg {
                name: site.name.clone(),
                name_range: site.name_range,
                value_range: site.value_range,
                location: param.map(|p| p.location).or(site.location),
            });
            let Some(tool) = tool else { continue };
            let Some(param) = param else {
                if wire
                    && (auth_param.as_deref() == Some(site.name.as_str())
                        || site.location == Some(ParamLocation::Header))
                {
                    continue;
                }
                let range = site.name_range.unwrap_or(site.value_range);
                let names: Vec<&str> =
                    tool.params.iter().map(|p| if wire { p.wire_name.as_str() } else { p.name.as_str() }).collect();
                let mut d =
                    self.error(range, "unknown-argument", format!("`{}` has no parameter `{}`", tool.name, site.name));
                if let Some(best) = did_you_mean(&site.name, names.iter().copied()) {
                    d.message.push_str(&format!("; did you mean `{best}`?"));
                    if let Some(name_range) = site.name_range {
                        let replacement = if wire {
                            let quote = self.text.get(name_range.start..name_range.start + 1).unwrap_or("\"");
                            format!("{quote}{best}{quote}")
                        } else {
                            best.to_string()
                        };
                        d = d.with_suggestion(format!("Change to `{best}`"), name_range, replacement);
                    }
                } else if !names.is_empty() {
                    d.message.push_str(&format!(" (parameters: {})", names.join(", ")));
                }
                self.diag(d);
                continue;
            };
            if let Some(v) = site.value {
                if let Some(value) = literal_json(v, self.text) {
                    self.check_literal_value(param, &value, site.value_range, false);
                } else if let Ty::Json { schema: s, .. } = ty {
                    self.check_flowed_value(param, s, site.value_range);
                }
            } else if let Some((text, range)) = &site.text_value {
                let value = coerce_text(text, &param.schema);
                self.check_literal_value(param, &value, *range, true);
            }
        }
        if let Some(tool) = tool
            && complete
        {
            let given: Vec<&str> = recorded.iter().map(|a| a.name.as_str()).collect();
            let missing: Vec<&crate::toolset::Param> = tool
                .required()
                .filter(|p| {
                    let name = if wire { p.wire_name.as_str() } else { p.name.as_str() };
                    // The URL carries path parameters and the runtime adds headers and the auth key.
                    let supplied_elsewhere = wire && matches!(p.location, ParamLocation::Path | ParamLocation::Header);
                    !given.contains(&name) && !supplied_elsewhere && auth_param.as_deref() != Some(p.wire_name.as_str())
                })
                .collect();
            if !missing.is_empty() {
                let list: Vec<String> =
                    missing.iter().map(|p| format!("`{}`", if wire { &p.wire_name } else { &p.name })).collect();
                let plural = if missing.len() > 1 { "s" } else { "" };
                let mut d = self.error(
                    anchor,
                    "missing-argument",
                    format!("`{}` is missing required argument{plural} {}", tool.name, list.join(", ")),
                );
                if !wire && let Some(arguments) = arguments {
                    let close = arguments.end_byte().saturating_sub(1);
                    let has_args = arguments.named_child_count() > 0;
                    let additions: Vec<String> = missing.iter().map(|p| format!("{}=...", p.name)).collect();
                    let insert = format!("{}{}", if has_args { ", " } else { "" }, additions.join(", "));
                    d = d.with_suggestion(
                        format!("Add missing argument{plural} {}", list.join(", ")),
                        ByteRange::new(close, close),
                        insert,
                    );
                }
                self.diag(d);
            }
        }
        if let Some(call) = self.out.calls.get_mut(call_index) {
            call.args = recorded;
        }
    }

    fn check_literal_value(&mut self, param: &crate::toolset::Param, value: &Value, range: ByteRange, from_text: bool) {
        let expected = schema::types(&param.schema);
        let actual = schema::json_type(value);
        if !schema::type_fits(actual, &expected) {
            // URL text is a string on the wire; only complain when it cannot be read as the type.
            if from_text && expected.contains(&"string") {
                return;
            }
            let d = self.error(
                range,
                "wrong-type",
                format!("`{}` expects {}, got {} {}", param.name, expected.join(" | "), actual, short_json(value)),
            );
            self.diag(d);
            return;
        }
        if let Err(message) = schema::check_literal(&param.schema, value) {
            let d = self.error(range, "not-in-enum", format!("`{}`: {message}", param.name));
            self.diag(d);
        }
    }

    fn check_flowed_value(&mut self, param: &crate::toolset::Param, value_schema: &Value, range: ByteRange) {
        let expected = schema::types(&param.schema);
        let actual = schema::types(value_schema);
        if expected.is_empty() || actual.is_empty() {
            return;
        }
        let fits = actual.iter().filter(|t| **t != "null").any(|t| {
            schema::type_fits(t, &expected)
                // Numbers and booleans are sent as text in paths and query strings.
                || (expected.contains(&"string") && matches!(*t, "integer" | "number" | "boolean"))
        });
        if !fits && actual.iter().any(|t| *t != "null") {
            let d = self.warning(
                range,
                "argument-type-mismatch",
                format!(
                    "`{}` expects {}, but this response field is {}",
                    param.name,
                    expected.join(" | "),
                    schema::summary(value_schema)
                ),
            );
            self.diag(d);
        }
    }

    // ----- HTTP dialect ----------------------------------------------------------------------

    fn http_call(&mut self, node: Node<'t>, method: Option<&str>, arguments: Option<Node<'t>>) -> Ty<'c> {
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
    fn url_parts(&self, node: Node<'t>, depth: usize) -> Vec<UrlPart<'t>> {
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
                            let value = super::parse::content_value(child, self.text);
                            let exact = value.len() == child.end_byte() - child.start_byte();
                            parts.push(UrlPart { text: value, hole: None, origin: range_of(child), exact })
                        }
                        "escape_sequence" => parts.push(UrlPart {
                            text: super::parse::decode_escape(text_of(child, self.text)),
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

fn is_string_expression(node: Node) -> bool {
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

fn normalize_template(path: &str) -> String {
    let mut out = String::new();
    for segment in endpoint::template_segments(path) {
        out.push('/');
        out.push_str(if endpoint::template_param(segment).is_some() { "{}" } else { segment });
    }
    out
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

/// The JSON value of a Python literal (strings, numbers, booleans, None, and lists/dicts of them).
pub fn literal_json(node: Node, text: &str) -> Option<Value> {
    match node.kind() {
        "string" | "concatenated_string" => string_value(node, text).map(Value::String),
        "integer" => {
            let raw = text_of(node, text).replace('_', "");
            raw.parse::<i64>().ok().map(Value::from)
        }
        "float" => text_of(node, text)
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number)),
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "none" => Some(Value::Null),
        "unary_operator" => {
            let operand = node.child_by_field_id(fields().argument.get())?;
            let v = literal_json(operand, text)?;
            let negative = text_of(node, text).trim_start().starts_with('-');
            match v {
                Value::Number(n) if negative => {
                    if let Some(i) = n.as_i64() {
                        Some(Value::from(-i))
                    } else {
                        n.as_f64().and_then(|f| serde_json::Number::from_f64(-f)).map(Value::Number)
                    }
                }
                Value::Number(n) => Some(Value::Number(n)),
                _ => None,
            }
        }
        "list" | "tuple" => {
            let mut cursor = node.walk();
            let items: Option<Vec<Value>> = node.named_children(&mut cursor).map(|c| literal_json(c, text)).collect();
            items.map(Value::Array)
        }
        "dictionary" => {
            let mut map = serde_json::Map::new();
            let mut cursor = node.walk();
            for pair in node.named_children(&mut cursor) {
                if pair.kind() != "pair" {
                    return None;
                }
                let key = string_value(pair.child_by_field_id(fields().key.get())?, text)?;
                map.insert(key, literal_json(pair.child_by_field_id(fields().value.get())?, text)?);
            }
            Some(Value::Object(map))
        }
        "parenthesized_expression" => literal_json(node.named_child(0)?, text),
        _ => None,
    }
}

/// The pairs of a dict literal or `dict(a=1)` call: (string key, key range, value). `None` when
/// the expression is not a literal dict.
fn dict_pairs<'t>(node: Node<'t>, text: &str) -> Option<Vec<(Option<String>, ByteRange, Node<'t>)>> {
    match node.kind() {
        "dictionary" => {
            let mut out = Vec::new();
            let mut cursor = node.walk();
            for pair in node.named_children(&mut cursor) {
                match pair.kind() {
                    "pair" => {
                        let key = pair.child_by_field_id(fields().key.get())?;
                        let value = pair.child_by_field_id(fields().value.get())?;
                        out.push((string_value(key, text), range_of(key), value));
                    }
                    "dictionary_splat" => out.push((None, range_of(pair), pair)),
                    "comment" => {}
                    _ => return None,
                }
            }
            Some(out)
        }
        "call" if node.child_by_field_id(fields().function.get()).is_some_and(|f| text_of(f, text) == "dict") => {
            let args = node.child_by_field_id(fields().arguments.get())?;
            let mut out = Vec::new();
            let mut cursor = args.walk();
            for arg in args.named_children(&mut cursor) {
                match arg.kind() {
                    "keyword_argument" => {
                        let n = arg.child_by_field_id(fields().name.get())?;
                        out.push((
                            Some(text_of(n, text).to_string()),
                            range_of(n),
                            arg.child_by_field_id(fields().value.get())?,
                        ));
                    }
                    _ => out.push((None, range_of(arg), arg)),
                }
            }
            Some(out)
        }
        _ => None,
    }
}

/// A value written as URL text, read as the parameter's type when it parses as one.
fn coerce_text(text: &str, param_schema: &Value) -> Value {
    let types = schema::types(param_schema);
    if types.contains(&"integer")
        && let Ok(i) = text.parse::<i64>()
    {
        return Value::from(i);
    }
    if types.contains(&"number")
        && let Ok(f) = text.parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(f)
    {
        return Value::Number(n);
    }
    if types.contains(&"boolean") && matches!(text, "true" | "false") {
        return Value::Bool(text == "true");
    }
    Value::String(text.to_string())
}

fn short_json(value: &Value) -> String {
    let s = value.to_string();
    if s.chars().count() > 40 { format!("{}…", s.chars().take(40).collect::<String>()) } else { s }
}
