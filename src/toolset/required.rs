//! How a `required` value is written: a boolean, a string spelling one (some generators quote
//! booleans), or anything else. The OpenAPI loader reads parameters' and bodies' flags with it and
//! the Swagger 2.0 rewrite its form fields', so both read a flag the same way; it sits below both.

use super::doc::{Node, NodeKind};

/// How a `required` flag is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    Bool(bool),
    /// `"true"` or `"false"` (any case), as some generators quote booleans: read as meant.
    Text(bool),
    /// Anything else, which reads as if absent.
    Other,
}

/// How `node`, a `required` value, is written.
pub fn flag(node: &Node) -> Flag {
    match &node.kind {
        NodeKind::Bool(b) => Flag::Bool(*b),
        NodeKind::String(s) if s.trim().eq_ignore_ascii_case("true") => Flag::Text(true),
        NodeKind::String(s) if s.trim().eq_ignore_ascii_case("false") => Flag::Text(false),
        _ => Flag::Other,
    }
}
