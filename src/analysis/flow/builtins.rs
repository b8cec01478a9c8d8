//! What Python's builtins make of a value the walk follows: `list`, `sorted`, `reversed`, `iter`,
//! `filter` keep an array; `next`, `min`, `max` take one element; `enumerate`, `zip` and `.items()`
//! pair elements up; `map` with a lambda yields what the lambda does to each element. The
//! parameter of a `lambda` given as the function of `map`/`filter` or as `key=` holds the
//! elements, so the keys it reads are checked. A call of a local function gives what the function
//! returned.

use tree_sitter::Node;

use super::{Ty, Walker};
use crate::analysis::parse::{fields, text_of};
use crate::toolset::schema::{self, Refs};

impl<'c> Ty<'c> {
    /// What iterating the value yields, one element (a pair of an iterable of pairs is unknown:
    /// only tuple targets unpack it, see [`Walker::bind_element`]).
    pub(super) fn element(self, refs: &'c dyn Refs) -> Ty<'c> {
        match self {
            Ty::Json { schema: s, call, .. } => {
                // Iterating an object yields its keys, which no schema describes.
                if !schema::types(refs, s).contains(&"array") {
                    return Ty::Unknown;
                }
                match schema::items(refs, s) {
                    Some(item) => Ty::Json { schema: item, call, not_null: false },
                    None => Ty::Unknown,
                }
            }
            Ty::Items { element, call } => Ty::Json { schema: element, call, not_null: false },
            _ => Ty::Unknown,
        }
    }

    /// The value as an iterable of the same elements (`list(x)`, `sorted(x)`, `iter(x)`): an array
    /// stays itself; an object, which iterates its keys, is unknown.
    fn iterable(self, refs: &'c dyn Refs) -> Ty<'c> {
        match self {
            Ty::Json { schema: s, .. } if schema::types(refs, s) == ["array"] => self,
            Ty::Items { .. } | Ty::Pairs { .. } => self,
            _ => Ty::Unknown,
        }
    }

    /// The schema and call of a response value, for one side of a pair.
    pub(super) fn part(self) -> Option<(&'c serde_json::Value, usize)> {
        match self {
            Ty::Json { schema, call, .. } => Some((schema, call)),
            _ => None,
        }
    }

    pub(super) fn from_part(part: Option<(&'c serde_json::Value, usize)>) -> Ty<'c> {
        match part {
            Some((schema, call)) => Ty::Json { schema, call, not_null: false },
            None => Ty::Unknown,
        }
    }
}

impl<'t, 'c> Walker<'t, 'c> {
    /// `name(…)` where the name is neither a tool nor an HTTP function: a local function (its
    /// return value), a builtin the walk follows values through, or anything else (its arguments
    /// are walked, its result is unknown).
    pub(super) fn builtin_call(&mut self, name: &str, arguments: Option<Node<'t>>) -> Ty<'c> {
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        // `next(f for f in files)`: a lone generator expression is the argument list itself.
        if let Some(generator) = arguments.filter(|a| a.kind() == "generator_expression") {
            positional.push(generator);
        } else if let Some(arguments) = arguments {
            let mut cursor = arguments.walk();
            for child in arguments.named_children(&mut cursor) {
                match child.kind() {
                    "keyword_argument" => keywords.push(child),
                    "comment" => {}
                    _ => positional.push(child),
                }
            }
        }
        // The iterable is walked before the functions that see its elements.
        let values: Vec<Ty<'c>> =
            positional.iter().map(|&p| if p.kind() == "lambda" { Ty::Unknown } else { self.expr(p) }).collect();
        let iterated = if matches!(name, "map" | "filter") { 1 } else { 0 };
        let element = values.get(iterated).copied().unwrap_or(Ty::Unknown).element(self.catalog);
        let mut mapped = Ty::Unknown;
        for &p in positional.iter().filter(|p| p.kind() == "lambda") {
            mapped = self.lambda(p, element);
        }
        for keyword in keywords {
            let Some(value) = keyword.child_by_field_id(fields().value.get()) else { continue };
            let is_key = keyword.child_by_field_id(fields().name.get()).is_some_and(|n| text_of(n, self.text) == "key");
            if is_key && value.kind() == "lambda" {
                self.lambda(value, element);
            } else {
                self.expr(value);
            }
        }
        let returned = self.function_returns.get(name).copied();
        self.log.borrow_mut().read_function(name, returned);
        if let Some(returned) = returned {
            return returned;
        }
        let first = values.first().copied().unwrap_or(Ty::Unknown);
        match name {
            "list" | "tuple" | "sorted" | "reversed" | "iter" | "set" | "frozenset" => first.iterable(self.catalog),
            "filter" => values.get(1).copied().unwrap_or(Ty::Unknown).iterable(self.catalog),
            "next" => first.element(self.catalog),
            // `max(a, b)` compares its arguments, which are no response elements.
            "min" | "max" if positional.len() == 1 => first.element(self.catalog),
            "dict" => match first {
                Ty::Json { schema: s, .. } if schema::types(self.catalog, s) == ["object"] => first,
                _ => Ty::Unknown,
            },
            "enumerate" => Ty::Pairs { first: None, second: first.element(self.catalog).part() },
            "zip" if positional.len() == 2 => {
                Ty::Pairs { first: first.element(self.catalog).part(), second: values[1].element(self.catalog).part() }
            }
            "map" => match mapped {
                Ty::Json { schema, call, .. } => Ty::Items { element: schema, call },
                _ => Ty::Unknown,
            },
            _ => Ty::Unknown,
        }
    }

    /// A lambda whose first parameter holds `argument`: walks its body in its own scope and
    /// returns what the body is.
    pub(super) fn lambda(&mut self, node: Node<'t>, argument: Ty<'c>) -> Ty<'c> {
        self.scopes.push(Default::default());
        if let Some(params) = node.child_by_field_id(fields().parameters.get()) {
            self.parameters(params);
            let mut cursor = params.walk();
            let first = params.named_children(&mut cursor).next();
            if let Some(first) = first
                && first.kind() == "identifier"
            {
                let name = text_of(first, self.text).to_string();
                self.bind_name(&name, argument);
            }
        }
        let body = node.child_by_field_id(fields().body.get()).map(|b| self.expr(b)).unwrap_or(Ty::Unknown);
        self.scopes.pop();
        body
    }
}
