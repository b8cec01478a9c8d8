//! How values flow through a program: scopes, and what a name holds after an assignment, a walrus,
//! a `for` target, a comprehension clause or a `with … as`; what a subscript, `.get()`, `.json()`
//! or a copying builtin yields. Each access into a response is checked against its schema and
//! recorded here.

use std::collections::HashMap;

use serde_json::Value;
use tree_sitter::Node;

use super::args::literal_json;
use super::{Ty, Walker};
use crate::analysis::parse::{fields, range_of, string_value, text_of};
use crate::analysis::{Access, Key};
use crate::toolset::Tool;
use crate::toolset::schema::{self, KeyLookup};

impl<'c> Ty<'c> {
    /// What a call of `tool` returns to the program.
    pub(super) fn response_of(tool: Option<&'c Tool>, call: usize) -> Ty<'c> {
        match tool.and_then(|t| t.response.as_ref()) {
            Some(schema) => Ty::Json { schema, call, not_null: false },
            None => Ty::Unknown,
        }
    }
}

impl<'t, 'c> Walker<'t, 'c> {
    pub(super) fn lookup(&self, name: &str) -> Ty<'c> {
        let (module, inner) = self.scopes.split_first().expect("the module scope is never popped");
        match inner.iter().rev().find_map(|s| s.get(name).copied()) {
            Some(ty) => ty,
            None => {
                let ty = module.get(name).copied().unwrap_or(Ty::Unknown);
                self.log.borrow_mut().read(name, ty);
                ty
            }
        }
    }

    pub(super) fn bind_name(&mut self, name: &str, ty: Ty<'c>) {
        if self.scopes.len() == 1 {
            self.log.borrow_mut().wrote(name);
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), ty);
        }
    }

    /// Binds an assignment or loop target; the parts of a tuple target get unknown values.
    fn bind(&mut self, target: Node<'t>, ty: Ty<'c>) {
        match target.kind() {
            "identifier" => {
                let name = text_of(target, self.text).to_string();
                self.bind_name(&name, ty);
            }
            kind if is_tuple_target(kind) => {
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

    /// Binds a loop target to one element of `iterable`; `k, v` over pairs gets each side.
    fn bind_element(&mut self, target: Node<'t>, iterable: Ty<'c>) {
        if let Ty::Pairs { first, second } = iterable
            && is_tuple_target(target.kind())
            && target.named_child_count() == 2
            && let (Some(a), Some(b)) = (target.named_child(0), target.named_child(1))
        {
            self.bind(a, Ty::from_part(first));
            self.bind(b, Ty::from_part(second));
            return;
        }
        self.bind(target, iterable.element(self.catalog));
    }

    /// `name = value`. While the value is walked, `target` names the variable, so that a tool
    /// call there records where its response goes. `a, b = x, y` binds each side.
    pub(super) fn assignment(&mut self, node: Node<'t>) {
        let right = node.child_by_field_id(fields().right.get());
        let left = node.child_by_field_id(fields().left.get());
        if let (Some(l), Some(r)) = (left, right)
            && is_tuple_target(l.kind())
            && matches!(r.kind(), "expression_list" | "tuple")
            && l.named_child_count() == r.named_child_count()
        {
            let mut cursor = r.walk();
            let values: Vec<Ty<'c>> =
                r.named_children(&mut cursor).collect::<Vec<_>>().into_iter().map(|v| self.expr(v)).collect();
            let mut cursor = l.walk();
            let targets: Vec<Node<'t>> = l.named_children(&mut cursor).collect();
            for (target, ty) in targets.into_iter().zip(values) {
                self.bind(target, ty);
            }
            return;
        }
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
    }

    /// `(name := value)`: binds the name and is the value.
    pub(super) fn walrus(&mut self, node: Node<'t>) -> Ty<'c> {
        let ty = node.child_by_field_id(fields().value.get()).map(|v| self.expr(v)).unwrap_or(Ty::Unknown);
        if let Some(name) = node.child_by_field_id(fields().name.get()) {
            self.bind(name, ty);
        }
        ty
    }

    /// `for target in iterable`, as a statement or a comprehension clause: the target holds the
    /// iterable's elements.
    pub(super) fn bind_loop_target(&mut self, clause: Node<'t>) {
        let iterable = clause.child_by_field_id(fields().right.get()).map(|r| self.expr(r)).unwrap_or(Ty::Unknown);
        if let Some(left) = clause.child_by_field_id(fields().left.get()) {
            self.bind_element(left, iterable);
        }
    }

    /// One item of a `with` statement; `with f() as x` binds `x` to what `f()` returns.
    pub(super) fn with_item(&mut self, item: Node<'t>) {
        let Some(value) = item.child_by_field_id(fields().value.get()) else { return };
        if value.kind() != "as_pattern" {
            self.expr(value);
            return;
        }
        let ty = value.named_child(0).map(|inner| self.expr(inner)).unwrap_or(Ty::Unknown);
        if let Some(alias) = value.child_by_field_id(fields().alias.get()) {
            let target = if alias.kind() == "as_pattern_target" { alias.named_child(0) } else { Some(alias) };
            if let Some(target) = target {
                self.bind(target, ty);
            }
        }
    }

    /// A list, set or dict comprehension or a generator expression: a list of what its element
    /// expression yields, when that is a part of a response.
    pub(super) fn comprehension(&mut self, node: Node<'t>) -> Ty<'c> {
        self.scopes.push(HashMap::new());
        let guards_before = self.guards.len();
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        // Clauses bind names the element uses, so they go first, in order; what an `if` checks is
        // guarded in the clauses after it and in the element.
        for child in &children {
            match child.kind() {
                "for_in_clause" => self.bind_loop_target(*child),
                "if_clause" => {
                    if let Some(cond) = child.named_child(0) {
                        let held = self.condition(cond).1;
                        self.guards.extend(held);
                    }
                }
                _ => {}
            }
        }
        let mut element = Ty::Unknown;
        for child in children {
            if !matches!(child.kind(), "for_in_clause" | "if_clause" | "comment") {
                element = self.expr(child);
            }
        }
        self.guards.truncate(guards_before);
        self.scopes.pop();
        match (node.kind(), element) {
            ("dictionary_comprehension", _) => Ty::Unknown,
            (_, Ty::Json { schema, call, .. }) => Ty::Items { element: schema, call },
            _ => Ty::Unknown,
        }
    }

    /// `a if c else b`, `a or b`: every operand is walked; the value is the first one known
    /// (branches are not merged).
    pub(super) fn first_known_operand(&mut self, node: Node<'t>) -> Ty<'c> {
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

    /// A method of a value the walk follows; any other method's result is unknown.
    pub(super) fn value_method(
        &mut self,
        receiver: Ty<'c>,
        method: &str,
        node: Node<'t>,
        arguments: Option<Node<'t>>,
    ) -> Ty<'c> {
        match (receiver, method) {
            (Ty::Response { call }, "json") => {
                self.eval_args(arguments);
                Ty::response_of(self.out.calls.get(call).and_then(|c| c.tool), call)
            }
            (Ty::Json { .. }, "get") => self.get_method(receiver, node, arguments),
            (Ty::Json { .. } | Ty::Items { .. }, "copy") => receiver,
            // The values of a map-like object (`additionalProperties`) share one schema.
            (Ty::Json { schema: s, call, .. }, "values" | "items") => {
                self.eval_args(arguments);
                let value = match schema::property(self.catalog, s, "") {
                    KeyLookup::Open(Some(sub)) => Some((sub, call)),
                    _ => None,
                };
                match (method, value) {
                    ("values", Some((element, call))) => Ty::Items { element, call },
                    ("items", value @ Some(_)) => Ty::Pairs { first: None, second: value },
                    _ => Ty::Unknown,
                }
            }
            _ => {
                self.eval_args(arguments);
                Ty::Unknown
            }
        }
    }

    /// `value.get(key, default)`: a literal key is an access, as in `value[key]`.
    fn get_method(&mut self, receiver: Ty<'c>, node: Node<'t>, arguments: Option<Node<'t>>) -> Ty<'c> {
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

    pub(super) fn subscript(&mut self, node: Node<'t>) -> Ty<'c> {
        let container = node.child_by_field_id(fields().value.get()).map(|v| self.expr(v)).unwrap_or(Ty::Unknown);
        let key_node = node.child_by_field_id(fields().subscript.get());
        if let Some(k) = key_node
            && !matches!(k.kind(), "string" | "integer" | "unary_operator")
        {
            self.expr(k);
        }
        let Some(key_node) = key_node else { return Ty::Unknown };
        // A list the program built: an index gives an element, a slice the same list; there is no
        // schema of the list itself to record the access against.
        if let Ty::Items { .. } = container {
            return match key_node.kind() {
                "slice" => container,
                "string" | "concatenated_string" => Ty::Unknown,
                _ => container.element(self.catalog),
            };
        }
        self.access(container, node, key_node, false)
    }

    /// `container[key]` or `container.get(key)`: checks the key against the schema, records the
    /// access, and returns what it yields.
    fn access(&mut self, container: Ty<'c>, whole: Node<'t>, key_node: Node<'t>, via_get: bool) -> Ty<'c> {
        let Ty::Json { schema: s, call, not_null } = container else { return Ty::Unknown };
        if !via_get && !not_null {
            self.check_not_null(s, whole);
        }
        let key = literal_key(key_node, self.text);
        let key_range = range_of(key_node);
        let result = match &key {
            Key::Str(k) => {
                let container_text = container_source(whole).map(|c| text_of(c, self.text)).unwrap_or("");
                if self.is_guarded(container_text, k) {
                    match schema::property(self.catalog, s, k) {
                        KeyLookup::Declared(sub) | KeyLookup::Open(Some(sub)) => Some(sub),
                        _ => None,
                    }
                } else {
                    self.string_key(s, call, k, key_node, via_get)
                }
            }
            Key::Int(i) => self.integer_index(s, *i, key_node, via_get),
            // A slice of an array is an array of the same items.
            Key::Other if key_node.kind() == "slice" => {
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
            Key::Other => computed_key(self.catalog, s),
        };
        self.out.accesses.push(Access { range: range_of(whole), key_range, key, container: s, result, call });
        match result {
            Some(sub) => Ty::Json { schema: sub, call, not_null: false },
            None => Ty::Unknown,
        }
    }

    /// A subscript on a value the protocol marks nullable, with nothing in the program ruling out
    /// `null` first: `possibly-null` on the value (basedpyright says the same on the stubs).
    fn check_not_null(&mut self, s: &'c Value, access: Node<'t>) {
        let Some(container) = container_source(access) else { return };
        // `(x or {})["k"]` and other computed containers rule null out themselves or are unknown.
        if !matches!(container.kind(), "identifier" | "subscript" | "attribute" | "call") {
            return;
        }
        let types = schema::types(self.catalog, s);
        if !types.contains(&"null") || types.iter().all(|t| *t == "null") {
            return;
        }
        let text = text_of(container, self.text);
        if self.is_guarded(text, super::guards::NOT_NULL) {
            return;
        }
        // `r["owner"]["login"]` under `if r.get("owner"):`.
        if container.kind() == "subscript"
            && let Some(object) = container.child_by_field_id(fields().value.get())
            && let Key::Str(key) =
                literal_key(container.child_by_field_id(fields().subscript.get()).unwrap_or(container), self.text)
            && self.member_not_null(text_of(object, self.text), &key)
        {
            return;
        }
        let message = if text.chars().count() > 40 {
            "this value may be null (the protocol marks it nullable); check it before reading from it".to_string()
        } else {
            format!(
                "`{text}` may be null (the protocol marks it nullable); check it first (`if {text}:`) or give a default (`({text} or {{}})`)"
            )
        };
        let d = self.warning(range_of(container), "possibly-null", message);
        self.diag(d);
    }

    /// What `value["key"]` yields; reports a key the schema lacks, or a value that is no object.
    fn string_key(
        &mut self,
        s: &'c Value,
        call: usize,
        key: &str,
        key_node: Node<'t>,
        via_get: bool,
    ) -> Option<&'c Value> {
        let types = schema::types(self.catalog, s);
        if !types.is_empty() && !types.contains(&"object") {
            let d = self.error(
                range_of(key_node),
                "bad-index",
                format!("string key \"{key}\" on a value of type {}, not an object", types.join(" | ")),
            );
            self.diag(d);
            return None;
        }
        match schema::property(self.catalog, s, key) {
            KeyLookup::Declared(sub) | KeyLookup::Open(Some(sub)) => Some(sub),
            KeyLookup::Open(None) => None,
            KeyLookup::Missing => {
                // The schema's keys are listed, and measured for a near miss, while this walk may
                // still spend on suggestions: listing them costs what the schema declares.
                let names: Vec<&str> = if self.suggestion_work > 0 {
                    schema::keys(self.catalog, s).into_iter().map(|(n, _)| n).collect()
                } else {
                    Vec::new()
                };
                self.suggestion_work = self.suggestion_work.saturating_sub(names.len() * super::LISTING_WORK);
                let best = self.did_you_mean(key, names.iter().copied());
                // `.get("k")` says the key may be absent: a key the schema has nothing like is
                // read on purpose; a near miss of a declared one is still a typo.
                if !via_get || best.is_some() {
                    self.report_unknown_key(call, key, key_node, best, &names);
                }
                None
            }
        }
    }

    /// `best`: the declared key it is a near miss of; `names`: the declared keys, when listed.
    fn report_unknown_key(&mut self, call: usize, key: &str, key_node: Node<'t>, best: Option<&str>, names: &[&str]) {
        let key_range = range_of(key_node);
        let tool = self.out.calls.get(call).map(|c| crate::text::quoted(&c.name).into_owned()).unwrap_or_default();
        let mut d =
            self.warning(key_range, "unknown-key", format!("key \"{key}\" is not in the response schema of `{tool}`"));
        if let Some(best) = best {
            d.message.push_str(&format!("; did you mean \"{best}\"?"));
            let quote = quote_of(key_node, self.text);
            d = d.with_suggestion(format!("Change to \"{best}\""), key_range, format!("{quote}{best}{quote}"));
        } else if !names.is_empty() {
            d.message.push_str(&format!(" (keys: {})", crate::text::some_of(names, 10)));
        }
        self.diag(d);
    }

    /// What `value[i]` yields; reports an index into a value that is no array.
    fn integer_index(&mut self, s: &'c Value, index: i64, key_node: Node<'t>, via_get: bool) -> Option<&'c Value> {
        // `.get(0)` on JSON is unusual, but no indexing error.
        if via_get {
            return None;
        }
        let types = schema::types(self.catalog, s);
        if !types.is_empty() && !types.contains(&"array") {
            let d = self.error(
                range_of(key_node),
                "bad-index",
                format!("integer index {index} on a value of type {}, not an array", types.join(" | ")),
            );
            self.diag(d);
            return None;
        }
        schema::items(self.catalog, s)
    }
}

/// What `value[k]` yields for a key computed at run time: an array's item, or an open object's
/// value.
fn computed_key<'c>(refs: &'c dyn schema::Refs, s: &'c Value) -> Option<&'c Value> {
    if schema::types(refs, s) == ["array"] {
        return schema::items(refs, s);
    }
    match schema::property(refs, s, "") {
        KeyLookup::Open(Some(sub)) => Some(sub),
        _ => None,
    }
}

/// The expression a key is read from: `x` in `x["k"]` and in `x.get("k")`.
fn container_source(access: Node) -> Option<Node> {
    match access.kind() {
        "subscript" => access.child_by_field_id(fields().value.get()),
        "call" => access.child_by_field_id(fields().function.get())?.child_by_field_id(fields().object.get()),
        _ => None,
    }
}

/// Target kinds that unpack (`a, b = …`, `for (k, v) in …`).
fn is_tuple_target(kind: &str) -> bool {
    matches!(kind, "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list")
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

/// The quote a string key was written with, for a replacement written the same way.
fn quote_of(node: Node, text: &str) -> &'static str {
    match text.get(node.start_byte()..node.end_byte()) {
        Some(s) if s.ends_with('\'') => "'",
        _ => "\"",
    }
}
