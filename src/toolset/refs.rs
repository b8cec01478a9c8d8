//! The one `$ref` resolver of every loader (OpenAPI and Swagger 2.0, native toolsets, MCP tool
//! schemas): each named schema a document references is converted once into the toolset's
//! [`Schemas`] store, under `<prefix>#<pointer>`, and every reference to it becomes a reference to
//! that key, so recursion is kept and nothing is inlined or cut. Only local references (`#/…`) are
//! followed: references to other files are bundled into the document before it gets here
//! (`bundle.rs`), and remote ones are refused, never fetched.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::doc::{Node, NodeKind, text_weight};
use super::schema::Schemas;
use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;

/// Output nesting beyond which a schema is no longer expanded (guards the stack, not correctness).
const MAX_DEPTH: usize = 64;

/// Schema keywords whose values are data, not schemas: their `$ref`-looking members are left alone.
const LITERAL_KEYWORDS: [&str; 5] = ["example", "examples", "default", "enum", "const"];

/// Schema keywords whose values map arbitrary names to schemas.
const SCHEMA_MAPS: [&str; 5] = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];

/// The warning on a property named `""` (see [`Resolver::empty_names`]).
pub const EMPTY_NAME: &str = "a property named `\"\"`: which key it stands for is unknown, so the keys programs \
                              read from this object are not checked (give the property its name to check them)";

/// Why a `$ref` could not be followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefProblem {
    /// A local pointer that leads nowhere.
    Missing,
    /// A reference to another document, which the loader does not fetch.
    External,
    /// `$ref`s that only lead to each other.
    Cycle,
}

#[derive(Debug, Clone)]
pub struct RefError<'a> {
    /// The byte range of the `$ref`'s value.
    pub range: ByteRange,
    pub reference: &'a str,
    pub problem: RefProblem,
}

impl RefError<'_> {
    /// `consequence` says what the failure disables (`operation GET /x is disabled`).
    pub fn diagnostic(&self, file: &Path, consequence: &str) -> Diagnostic {
        let reference = crate::text::quoted(self.reference);
        let message = match self.problem {
            RefProblem::Missing => format!("`$ref` `{reference}` does not resolve; {consequence}"),
            RefProblem::External if self.reference.contains("://") => format!(
                "`$ref` `{reference}` is remote; chainsmith never fetches protocols over the network; {consequence}"
            ),
            RefProblem::External => {
                format!("`$ref` `{reference}` leads to a file that could not be read; {consequence}")
            }
            RefProblem::Cycle => format!("`$ref` `{reference}` only leads to other `$ref`s in a cycle; {consequence}"),
        };
        Diagnostic::error(file, self.range, "unresolved-ref", message)
    }
}

/// Follows `$ref`s inside one document. Schemas keep their references: each named schema is
/// converted once into the toolset's [`Schemas`] store, under `<prefix>#pointer`, and every
/// reference to it becomes a reference to that key — memory grows with the document, not with how
/// often (or how recursively) its components are used.
pub struct Resolver<'a> {
    root: &'a Node,
    /// What every stored key starts with: `toolset/file` (the catalog routes a key to its toolset
    /// by the part before the first `/`).
    prefix: String,
    pub store: Schemas,
    /// Referenced schemas stored as placeholders, still to be converted.
    pending: Vec<(&'a str, &'a Node)>,
    /// Named schemas that failed to convert (a `$ref` inside them leads nowhere): reported once,
    /// and unknown wherever they are used, so every operation using one loads alike.
    broken: HashSet<&'a str>,
    pub problems: Vec<RefError<'a>>,
    /// Where a schema names a property `""`, each place once (a schema shared by several
    /// operations is converted for each): the loader reports them, [`schema::property`] leaves
    /// such an object's keys unchecked.
    ///
    /// [`schema::property`]: super::schema::property
    pub empty_names: Vec<ByteRange>,
    /// What the document's tools may still be built of.
    pub budget: BuildBudget,
}

/// What a document's tools may be built of, in values weighed as [`Node::weight`] weighs them:
/// [`MAX_BUILT_PER_WRITTEN`] times what the document holds.
pub struct BuildBudget {
    built: usize,
    /// What the documents the tools are built from weigh.
    written: usize,
    /// What `written` is, for the error (`the file holds`).
    sized_by: &'static str,
    /// Where building first went past `max_built`: what is past it is not read.
    past: Option<ByteRange>,
}

impl BuildBudget {
    /// What the tools of a document weighing `weight` (as [`Node::weight`] weighs) may be built of.
    pub fn for_weight(weight: usize) -> Self {
        BuildBudget { built: 0, written: weight, sized_by: "the file holds", past: None }
    }

    /// The same budget, its error saying what it was sized by (`the server's answer holds`).
    pub fn sized_by(self, sized_by: &'static str) -> Self {
        BuildBudget { sized_by, ..self }
    }

    /// Adds what another document read for the same tools (a file a `$ref` names) weighs.
    pub fn add_written(&mut self, weight: usize) {
        self.written = self.written.saturating_add(weight);
    }

    fn max_built(&self) -> usize {
        self.written.saturating_mul(MAX_BUILT_PER_WRITTEN).max(MIN_BUILT)
    }

    /// Takes `weight` from what is left; `false`, noting where (`at`), when that is spent.
    pub fn take(&mut self, weight: usize, at: ByteRange) -> bool {
        if self.built.saturating_add(weight) > self.max_built() {
            self.past.get_or_insert(at);
            return false;
        }
        self.built += weight;
        true
    }

    /// A copy of `value` (a default, an example, a schema read out of the store for one
    /// operation), when there is room for it, weighed before it is copied.
    pub fn keep(&mut self, value: Option<&Value>, at: ByteRange) -> Option<Value> {
        let value = value?;
        self.take(value_weight(value), at).then(|| value.clone())
    }

    /// Takes what `node` weighs, weighed no further than the room left: `false` when there is
    /// no room for a copy of it.
    pub fn take_node(&mut self, node: &Node, at: ByteRange) -> bool {
        let room = self.max_built().saturating_sub(self.built);
        self.take(node.weight_past(room), at)
    }

    /// A copy of `node` (a shared part of a document an operation takes in), when there is room
    /// for it, weighed before it is copied.
    pub fn keep_node(&mut self, node: &Node, at: ByteRange) -> Option<Node> {
        self.take_node(node, at).then(|| node.clone())
    }

    /// A copy of `text` (a description read out of the store), or nothing when there is no room.
    pub fn keep_text(&mut self, text: &str, at: ByteRange) -> String {
        if self.take(1 + text_weight(text), at) { text.to_string() } else { String::new() }
    }

    /// The error on `file` when building its tools went past what they may be built of.
    pub fn diagnostic(&self, file: &Path) -> Option<Diagnostic> {
        let at = self.past?;
        Some(Diagnostic::error(
            file,
            at,
            "protocol-too-large",
            format!(
                "the tools copy more than {} values out of what they share (`$ref`'d parameters, bodies, responses, descriptions, examples; {MAX_BUILT_PER_WRITTEN} times what {}, a value for each 64 bytes of text): from here on, what they copy is not read, and the schemas are unknown there (not checked)",
                self.max_built(),
                self.sized_by
            ),
        ))
    }
}

/// [`Node::weight`] of a built value.
pub fn value_weight(value: &Value) -> usize {
    value_weight_past(value, usize::MAX)
}

/// [`value_weight`], or a weight past `limit` as soon as one is reached (weighing a large value
/// costs no more than the room it is weighed against).
pub fn value_weight_past(value: &Value, limit: usize) -> usize {
    let mut weight = 0;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        if weight > limit {
            break;
        }
        weight += 1;
        match value {
            Value::String(text) => weight += text_weight(text),
            // Each item weighs at least one: more than the room left need not be looked at.
            Value::Array(items) => stack.extend(items.iter().take(limit.saturating_sub(weight).saturating_add(1))),
            Value::Object(members) => {
                for (key, member) in members.iter().take(limit.saturating_sub(weight).saturating_add(1)) {
                    weight += text_weight(key);
                    stack.push(member);
                }
            }
            _ => {}
        }
    }
    weight
}

/// What a document's tools may be built of, in values, for each value it holds (and at least
/// [`MIN_BUILT`]): a schema `$ref`'d by name is kept once, but everything else a shared component
/// holds (a `$ref`'d parameter's or body's own schema, an example) is copied into each operation
/// that uses it, so a 1.6 MB file of shared parameters once built 23 GB of tools.
pub const MAX_BUILT_PER_WRITTEN: usize = 8;

/// Small documents may be built of this many values whatever they hold.
const MIN_BUILT: usize = 1 << 20;

impl<'a> Resolver<'a> {
    pub fn new(root: &'a Node, prefix: String) -> Self {
        Self::with_budget(root, prefix, BuildBudget::for_weight(root.weight()))
    }

    /// A resolver that builds out of `budget` (several documents' tools sharing one bound, as a
    /// `tools/list` answer's tools do; the caller takes it back from [`Resolver::budget`]).
    pub fn with_budget(root: &'a Node, prefix: String, budget: BuildBudget) -> Self {
        Resolver {
            root,
            prefix,
            store: Schemas::default(),
            pending: Vec::new(),
            broken: HashSet::new(),
            problems: Vec::new(),
            empty_names: Vec::new(),
            budget,
        }
    }

    /// A literal (an example, a default) as JSON, when what the document's tools may be built of
    /// leaves room for it.
    pub fn literal(&mut self, node: &Node) -> Option<Value> {
        self.budget.take(node.weight(), node.range).then(|| node.to_json())
    }

    fn target(&self, reference: &str) -> Result<&'a Node, RefProblem> {
        let fragment = reference.strip_prefix('#').ok_or(RefProblem::External)?;
        let pointer = percent_decode(fragment);
        self.root.pointer(&pointer).ok_or(RefProblem::Missing)
    }

    /// The object a node stands for: itself, or where its `$ref` (chain) leads.
    pub fn deref(&self, node: &'a Node) -> Result<&'a Node, RefError<'a>> {
        let mut node = node;
        let mut last: Option<(&'a str, ByteRange)> = None;
        for _ in 0..32 {
            let Some(r) = node.get("$ref") else { return Ok(node) };
            let Some(reference) = r.as_str() else { return Ok(node) };
            last = Some((reference, r.range));
            node = self.target(reference).map_err(|problem| RefError { range: r.range, reference, problem })?;
        }
        let (reference, range) = last.unwrap_or(("", node.range));
        Err(RefError { range, reference, problem: RefProblem::Cycle })
    }

    /// A schema node as JSON Schema whose references are keys of the store; every schema it
    /// reaches is stored (once) before this returns. A reference of the node itself that leads
    /// nowhere fails it (and disables its operation); one inside a named schema breaks only that
    /// schema, reported once (see [`Resolver::problems`]).
    pub fn schema(&mut self, node: &'a Node) -> Result<Value, RefError<'a>> {
        let value = self.value(node, 0, false);
        self.drain();
        value
    }

    /// Converts every queued target into the store (a target that fails is left out, reported once).
    pub fn drain(&mut self) {
        while let Some((reference, target)) = self.pending.pop() {
            let key = self.key(reference);
            match self.value(target, 0, false) {
                Ok(value) => self.store.insert(key, value),
                Err(error) => {
                    self.store.remove(&key);
                    self.broken.insert(reference);
                    self.problems.push(error);
                }
            }
        }
    }

    fn key(&self, reference: &str) -> String {
        format!("{}{reference}", self.prefix)
    }

    /// `names`: the node maps arbitrary names to schemas (`properties`), so its keys are not keywords.
    fn value(&mut self, node: &'a Node, depth: usize, names: bool) -> Result<Value, RefError<'a>> {
        if !self.budget.take(node.own_weight(), node.range) {
            return Ok(json!({"description": "(not read: the protocol's tools would be built of too many values)"}));
        }
        match &node.kind {
            NodeKind::Object(members) => {
                if !names
                    && let Some(r) = node.get("$ref")
                    && let Some(reference) = r.as_str()
                {
                    return self.reference(node, reference, depth);
                }
                if depth >= MAX_DEPTH {
                    return Ok(json!({"description": "(nested too deeply; not read)"}));
                }
                let mut map = Map::with_capacity(members.len());
                for (key, _, member) in members {
                    let value = self.member(key, member, depth, names)?;
                    map.insert(key.clone(), value);
                }
                Ok(Value::Object(map))
            }
            NodeKind::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.value(item, depth + 1, false)?);
                }
                Ok(Value::Array(out))
            }
            _ => Ok(node.to_json()),
        }
    }

    /// One member of a schema object: data keywords are copied, everything else is a schema.
    fn member(&mut self, key: &str, member: &'a Node, depth: usize, names: bool) -> Result<Value, RefError<'a>> {
        if names {
            self.value(member, depth + 1, false)
        } else if LITERAL_KEYWORDS.contains(&key) || key.starts_with("x-") {
            Ok(self.literal(member).unwrap_or(Value::Null))
        } else {
            if key == "properties"
                && let Some((_, at, _)) = member.members().iter().find(|(name, _, _)| name.is_empty())
                && !self.empty_names.contains(at)
            {
                self.empty_names.push(*at);
            }
            self.value(member, depth + 1, SCHEMA_MAPS.contains(&key))
        }
    }

    /// A `$ref` node: a reference to the stored schema, with the members beside `$ref` (3.1 allows
    /// them; 3.0 documents use them for descriptions) kept to refine it.
    fn reference(&mut self, node: &'a Node, reference: &'a str, depth: usize) -> Result<Value, RefError<'a>> {
        let range = node.get("$ref").map_or(node.range, |r| r.range);
        let key = self.stored(reference, range)?;
        let mut map = Map::new();
        map.insert("$ref".into(), Value::String(key));
        for (name, _, member) in node.members() {
            if name != "$ref" {
                let member = self.member(name, member, depth, false)?;
                map.insert(name.clone(), member);
            }
        }
        Ok(Value::Object(map))
    }

    /// The store's key for what `reference` (written at `range`) names, its target queued for
    /// conversion on first sight; [`Resolver::drain`] converts what is queued. Missing targets and
    /// pure reference cycles are the user's mistakes, found here.
    pub fn stored(&mut self, reference: &'a str, range: ByteRange) -> Result<String, RefError<'a>> {
        let key = self.key(reference);
        if self.broken.contains(reference) {
            return Ok(key); // unknown: reported once where it breaks
        }
        let target = self.target(reference).map_err(|problem| RefError { range, reference, problem })?;
        self.deref(target)?;
        if !self.store.contains(&key) {
            self.store.insert(key.clone(), Value::Null);
            self.pending.push((reference, target));
        }
        Ok(key)
    }
}

/// `%7B` → `{` in a URI fragment (JSON pointer escapes `~0`/`~1` are left to [`Node::pointer`]).
pub fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_are_percent_decoded() {
        assert_eq!(percent_decode("/components/schemas/a%7Bb%7D"), "/components/schemas/a{b}");
    }
}
