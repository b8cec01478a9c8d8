//! What a program checks before it reads: membership guards and comparisons.
//!
//! A key read under a guard is one the program knows may be absent, so `unknown-key` says nothing
//! there: `if "k" in r:` and `if r.get("k"):` guard their block and the rest of an `and`;
//! `if "k" not in r: continue` (or `return`, `break`, `raise`) guards the rest of its block;
//! `x["k"] if "k" in x else d` guards its first branch, a comprehension's `if` its element; and
//! a `try` that catches `KeyError` (or `LookupError`, `Exception`, everything) its body.
//!
//! A comparison of an enum-typed response field with a literal the enum lacks (`f["status"] ==
//! "moved"`, `s in ("open", "mergd")`) can never hold: `not-in-enum`.

use serde_json::Value;
use tree_sitter::Node;

use super::args::literal_json;
use super::{Ty, Walker};
use crate::analysis::parse::{fields, range_of, string_value, text_of};
use crate::toolset::schema;

/// The "key" of a guard that rules out `null` for the value itself (`if x:`, `x is not None`).
pub(super) const NOT_NULL: &str = "\0not-null";

/// A key the program checked on a container, written as the container's source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Guard {
    container: String,
    key: String,
    /// The key's value is not null either (`x.get("k")` was true, or `is not None`), which a
    /// membership test (`"k" in x`) does not say.
    value_not_null: bool,
}

impl<'t, 'c> Walker<'t, 'c> {
    /// Whether reading `key` from the container spelled `container` is guarded here.
    pub(super) fn is_guarded(&self, container: &str, key: &str) -> bool {
        self.key_errors_caught > 0 || self.guards.iter().any(|g| g.key == key && g.container == container)
    }

    /// Whether `container[key]` is known not to be null here (`if container.get(key):`).
    pub(super) fn member_not_null(&self, container: &str, key: &str) -> bool {
        self.guards.iter().any(|g| g.value_not_null && g.key == key && g.container == container)
    }

    pub(super) fn if_statement(&mut self, node: Node<'t>) {
        let condition = node.child_by_field_id(fields().condition.get());
        let held = condition.map(|c| self.condition(c).1).unwrap_or_default();
        let before = self.guards.len();
        self.guards.extend(held);
        let consequence = node.child_by_field_id(fields().consequence.get());
        if let Some(body) = consequence {
            self.block(body);
        }
        self.guards.truncate(before);
        let mut cursor = node.walk();
        let alternatives: Vec<Node<'t>> = node.children_by_field_id(fields().alternative, &mut cursor).collect();
        // `else`/`elif` run when the condition is false: what it rules out when true holds there.
        let ruled_out = condition.map(|c| self.absent_when_true(c)).unwrap_or_default();
        self.guards.extend(ruled_out);
        for alternative in alternatives {
            self.statement(alternative);
        }
        self.guards.truncate(before);
        // `if "k" not in r: continue`: past this statement, the key is there.
        if let (Some(condition), Some(body)) = (condition, consequence)
            && ends_by_leaving(body)
        {
            let absent = self.absent_when_true(condition);
            self.guards.extend(absent);
        }
    }

    pub(super) fn try_statement(&mut self, node: Node<'t>) {
        let mut cursor = node.walk();
        let clauses: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        let catches = clauses.iter().any(|c| c.kind() == "except_clause" && catches_key_error(*c, self.text));
        self.key_errors_caught += usize::from(catches);
        if let Some(body) = node.child_by_field_id(fields().body.get()) {
            self.block(body);
        }
        self.key_errors_caught -= usize::from(catches);
        for clause in clauses.into_iter().filter(|c| c.kind() != "block") {
            self.statement(clause);
        }
    }

    /// Walks a condition; returns its value and the keys it guards when true. In `a and b`, what
    /// `a` guards holds in `b`.
    pub(super) fn condition(&mut self, node: Node<'t>) -> (Ty<'c>, Vec<Guard>) {
        match node.kind() {
            "parenthesized_expression" => match node.named_child(0) {
                Some(inner) => self.condition(inner),
                None => (Ty::Unknown, Vec::new()),
            },
            "boolean_operator" if operator_of(node) == Some("and") => {
                let (Some(left), Some(right)) =
                    (node.child_by_field_id(fields().left.get()), node.child_by_field_id(fields().right.get()))
                else {
                    return (self.first_known_operand(node), Vec::new());
                };
                let (left_ty, mut held) = self.condition(left);
                let before = self.guards.len();
                self.guards.extend(held.iter().cloned());
                let (right_ty, right_held) = self.condition(right);
                self.guards.truncate(before);
                held.extend(right_held);
                (if matches!(right_ty, Ty::Unknown) { left_ty } else { right_ty }, held)
            }
            _ => {
                let held = self.present_when_true(node);
                (self.expr(node), held.into_iter().collect())
            }
        }
    }

    /// `a and b` / `a or b` as a value: in `a and b` what `a` guards holds in `b`, in `a or b`
    /// what `a` rules out (`"k" not in r or r["k"]`).
    pub(super) fn boolean(&mut self, node: Node<'t>) -> Ty<'c> {
        if operator_of(node) == Some("and") {
            return self.condition(node).0;
        }
        let (Some(left), Some(right)) =
            (node.child_by_field_id(fields().left.get()), node.child_by_field_id(fields().right.get()))
        else {
            return self.first_known_operand(node);
        };
        let left_ty = self.expr(left);
        let absent = self.absent_when_true(left);
        let before = self.guards.len();
        self.guards.extend(absent);
        let right_ty = self.expr(right);
        self.guards.truncate(before);
        // `r.get("x") or []`: the value is the first operand the walk follows; a default that is no
        // `None` rules null out.
        match left_ty {
            Ty::Unknown => right_ty,
            Ty::Json { schema, call, .. } if right.kind() != "none" => Ty::Json { schema, call, not_null: true },
            _ => left_ty,
        }
    }

    /// `body if condition else other`: the condition's guards hold in `body`.
    pub(super) fn conditional(&mut self, node: Node<'t>) -> Ty<'c> {
        let mut cursor = node.walk();
        let parts: Vec<Node<'t>> = node.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect();
        let [body, condition, other] = parts[..] else { return self.first_known_operand(node) };
        let held = self.condition(condition).1;
        let before = self.guards.len();
        self.guards.extend(held);
        let body_ty = self.expr(body);
        self.guards.truncate(before);
        let other_ty = self.expr(other);
        if matches!(body_ty, Ty::Unknown) { other_ty } else { body_ty }
    }

    /// A comparison chain: each operand is walked; an enum-typed response field compared with a
    /// literal outside its enum is reported.
    pub(super) fn comparison(&mut self, node: Node<'t>) -> Ty<'c> {
        let mut operands = Vec::new();
        let mut operators = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.is_named() {
                if child.kind() != "comment" {
                    operands.push(child);
                }
            } else {
                operators.push(child.kind());
            }
        }
        let values: Vec<Ty<'c>> = operands.iter().map(|&o| self.expr(o)).collect();
        for (i, operator) in operators.iter().enumerate() {
            let (Some(&left), Some(&right)) = (operands.get(i), operands.get(i + 1)) else { break };
            match *operator {
                "==" | "!=" => {
                    self.check_enum_literal(values[i], right);
                    self.check_enum_literal(values[i + 1], left);
                }
                "in" | "not in" if matches!(right.kind(), "tuple" | "list" | "set") => {
                    let mut items = right.walk();
                    let literals: Vec<Node<'t>> = right.named_children(&mut items).collect();
                    for literal in literals {
                        self.check_enum_literal(values[i], literal);
                    }
                }
                _ => {}
            }
        }
        Ty::Unknown
    }

    fn check_enum_literal(&mut self, field: Ty<'c>, literal: Node<'t>) {
        let Ty::Json { schema: s, .. } = field else { return };
        let Some(allowed) = schema::enum_values(self.catalog, s).filter(|v| !v.is_empty()) else { return };
        let Some(value) = literal_json(literal, self.text) else { return };
        if value.is_null() || allowed.contains(&value) {
            return;
        }
        // A literal of another type than the enum's is a different question (`x == 0` on a
        // string enum is no typo); only same-typed literals are checked.
        if !allowed.iter().any(|a| same_json_type(a, &value)) {
            return;
        }
        let shown = crate::text::some_of(allowed.iter().map(Value::to_string), 12);
        let d = self.warning(
            range_of(literal),
            "not-in-enum",
            format!("{value} is not a value this field takes ({shown}), so the comparison never holds"),
        );
        self.diag(d);
    }

    /// The guard a condition establishes when it is true: `"k" in x`, `x.get("k")`,
    /// `x.get("k") is not None`.
    pub(super) fn present_when_true(&self, node: Node<'t>) -> Option<Guard> {
        match node.kind() {
            "parenthesized_expression" => self.present_when_true(node.named_child(0)?),
            "comparison_operator" => match comparison_parts(node)? {
                (key, "in", container) => self.guard(container, key),
                (value, "is not" | "!=", none) if none.kind() == "none" => {
                    self.get_guard(value).or_else(|| self.not_null(value))
                }
                _ => None,
            },
            "call" => self.get_guard(node).or_else(|| self.isinstance_guard(node)),
            "identifier" | "subscript" | "attribute" => self.not_null(node),
            // `if (o := r["owner"]):` — the name is not null in the block.
            "named_expression" => self.not_null(node.child_by_field_id(fields().name.get())?),
            _ => None,
        }
    }

    /// A truthy value, or one compared `is not None`, is not null.
    fn not_null(&self, value: Node<'t>) -> Option<Guard> {
        matches!(value.kind(), "identifier" | "subscript" | "attribute" | "call").then(|| Guard {
            container: text_of(value, self.text).to_string(),
            key: NOT_NULL.to_string(),
            value_not_null: false,
        })
    }

    /// `isinstance(x, dict)` (or any type): `x` is not null.
    fn isinstance_guard(&self, call: Node<'t>) -> Option<Guard> {
        let function = call.child_by_field_id(fields().function.get())?;
        if text_of(function, self.text) != "isinstance" {
            return None;
        }
        self.not_null(call.child_by_field_id(fields().arguments.get())?.named_child(0)?)
    }

    /// The guards a condition rules out when it is true (`"k" not in x`, `not x.get("k")`,
    /// `x.get("k") is None`, and either side of an `or`), which hold once it is false.
    fn absent_when_true(&self, node: Node<'t>) -> Vec<Guard> {
        match node.kind() {
            "parenthesized_expression" => {
                node.named_child(0).map(|inner| self.absent_when_true(inner)).unwrap_or_default()
            }
            "boolean_operator" if operator_of(node) == Some("or") => {
                let mut guards = Vec::new();
                for side in [fields().left.get(), fields().right.get()] {
                    if let Some(side) = node.child_by_field_id(side) {
                        guards.extend(self.absent_when_true(side));
                    }
                }
                guards
            }
            "not_operator" => node
                .child_by_field_id(fields().argument.get())
                .and_then(|inner| self.present_when_true(inner))
                .into_iter()
                .collect(),
            "comparison_operator" => match comparison_parts(node) {
                Some((key, "not in", container)) => self.guard(container, key).into_iter().collect(),
                Some((value, "is" | "==", none)) if none.kind() == "none" => {
                    self.get_guard(value).or_else(|| self.not_null(value)).into_iter().collect()
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    fn guard(&self, container: Node<'t>, key: Node<'t>) -> Option<Guard> {
        Some(Guard {
            container: text_of(container, self.text).to_string(),
            key: string_value(key, self.text)?,
            value_not_null: false,
        })
    }

    /// `x.get("k")` guards `k` on `x`.
    fn get_guard(&self, call: Node<'t>) -> Option<Guard> {
        if call.kind() != "call" {
            return None;
        }
        let function = call.child_by_field_id(fields().function.get())?;
        if function.kind() != "attribute"
            || text_of(function.child_by_field_id(fields().attribute.get())?, self.text) != "get"
        {
            return None;
        }
        let key = call.child_by_field_id(fields().arguments.get())?.named_child(0)?;
        let guard = self.guard(function.child_by_field_id(fields().object.get())?, key)?;
        Some(Guard { value_not_null: true, ..guard })
    }
}

/// A two-operand comparison as (left, operator, right).
fn comparison_parts<'t>(node: Node<'t>) -> Option<(Node<'t>, &'t str, Node<'t>)> {
    if node.named_child_count() != 2 {
        return None;
    }
    let mut cursor = node.walk();
    let operator = node.children(&mut cursor).find(|c| !c.is_named())?.kind();
    Some((node.named_child(0)?, operator, node.named_child(1)?))
}

fn operator_of<'t>(node: Node<'t>) -> Option<&'t str> {
    node.child_by_field_id(fields().operator.get()).map(|o| o.kind())
}

/// Whether a block's last statement leaves it (`continue`, `break`, `return`, `raise`).
fn ends_by_leaving(block: Node) -> bool {
    let mut cursor = block.walk();
    let last = block.named_children(&mut cursor).filter(|c| c.kind() != "comment").last();
    last.is_some_and(|s| {
        matches!(s.kind(), "continue_statement" | "break_statement" | "return_statement" | "raise_statement")
    })
}

/// Whether an `except` clause catches a missing key: `KeyError`, `LookupError`, `Exception`,
/// `BaseException`, alone or in a tuple, or a bare `except:`.
fn catches_key_error(clause: Node, text: &str) -> bool {
    let Some(caught) = clause.child_by_field_id(fields().value.get()) else { return true };
    text_of(caught, text)
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| matches!(word, "KeyError" | "LookupError" | "Exception" | "BaseException"))
}

fn same_json_type(a: &Value, b: &Value) -> bool {
    schema::json_type(a) == schema::json_type(b) || (a.is_number() && b.is_number())
}
