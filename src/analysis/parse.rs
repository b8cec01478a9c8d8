//! Parsing programs with tree-sitter-python, incrementally: an edit updates the old tree and the
//! parser reuses everything outside the edited region, so re-analysis after a keystroke stays cheap.

use std::sync::OnceLock;

use std::num::NonZeroU16;

use tree_sitter::{InputEdit, Node, Parser, Point, Tree};

/// tree-sitter names this `FieldId` but does not export the alias.
type FieldId = NonZeroU16;

use crate::text::ByteRange;

/// The grammar's field ids, looked up once: `child_by_field_name` compares strings on every call,
/// which showed up in profiles of the analysis of large programs.
pub struct Fields {
    pub alias: FieldId,
    pub alternative: FieldId,
    pub argument: FieldId,
    pub arguments: FieldId,
    pub attribute: FieldId,
    pub body: FieldId,
    pub condition: FieldId,
    pub consequence: FieldId,
    pub definition: FieldId,
    pub expression: FieldId,
    pub format_specifier: FieldId,
    pub function: FieldId,
    pub key: FieldId,
    pub left: FieldId,
    pub module_name: FieldId,
    pub name: FieldId,
    pub object: FieldId,
    pub operator: FieldId,
    pub parameters: FieldId,
    pub right: FieldId,
    pub subscript: FieldId,
    pub superclasses: FieldId,
    pub type_conversion: FieldId,
    pub value: FieldId,
}

pub fn fields() -> &'static Fields {
    static FIELDS: OnceLock<Fields> = OnceLock::new();
    FIELDS.get_or_init(|| {
        let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
        let id = |name: &str| language.field_id_for_name(name).expect("tree-sitter-python has this field");
        Fields {
            alias: id("alias"),
            alternative: id("alternative"),
            argument: id("argument"),
            arguments: id("arguments"),
            attribute: id("attribute"),
            body: id("body"),
            condition: id("condition"),
            consequence: id("consequence"),
            definition: id("definition"),
            expression: id("expression"),
            format_specifier: id("format_specifier"),
            function: id("function"),
            key: id("key"),
            left: id("left"),
            module_name: id("module_name"),
            name: id("name"),
            object: id("object"),
            operator: id("operator"),
            parameters: id("parameters"),
            right: id("right"),
            subscript: id("subscript"),
            superclasses: id("superclasses"),
            type_conversion: id("type_conversion"),
            value: id("value"),
        }
    })
}

pub fn parser() -> Parser {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("the bundled tree-sitter-python grammar matches the tree-sitter runtime");
    parser
}

pub fn parse(text: &str) -> Tree {
    parser().parse(text, None).expect("parsing without a timeout or cancellation flag always yields a tree")
}

/// A program's text and its syntax tree, kept in step through edits.
#[derive(Clone)]
pub struct ParsedText {
    pub text: String,
    pub tree: Tree,
}

impl ParsedText {
    pub fn new(text: String) -> Self {
        let tree = parse(&text);
        ParsedText { text, tree }
    }

    /// Replaces `range` (bytes, clamped to the text and to char boundaries) with `new_text` and
    /// re-parses incrementally.
    pub fn edit(&mut self, range: ByteRange, new_text: &str) {
        let start = floor_char(&self.text, range.start.min(self.text.len()));
        let old_end = floor_char(&self.text, range.end.clamp(start, self.text.len()));
        let start_position = point_at(&self.text, start);
        let old_end_position = point_at(&self.text, old_end);
        self.text.replace_range(start..old_end, new_text);
        let new_end = start + new_text.len();
        let edit = InputEdit {
            start_byte: start,
            old_end_byte: old_end,
            new_end_byte: new_end,
            start_position,
            old_end_position,
            new_end_position: point_at(&self.text, new_end),
        };
        self.tree.edit(&edit);
        self.tree = parser()
            .parse(&self.text, Some(&self.tree))
            .expect("parsing without a timeout or cancellation flag always yields a tree");
    }
}

fn floor_char(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fn point_at(text: &str, offset: usize) -> Point {
    let before = &text[..offset];
    let row = before.bytes().filter(|&b| b == b'\n').count();
    let column = offset - before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    Point { row, column }
}

/// Node kinds whose children include statements (or, for `expression_statement`, assignments).
/// The grammar's shape, so it lives with the parser: the import collector (`dialect`) and the
/// walk (`flow`) both descend by it.
pub fn contains_statements(kind: &str) -> bool {
    is_statement_like(kind) || kind == "module"
}

pub fn is_statement_like(kind: &str) -> bool {
    kind.ends_with("_statement")
        || kind.ends_with("_definition")
        || matches!(kind, "block" | "else_clause" | "elif_clause" | "except_clause" | "finally_clause" | "case_clause")
}

pub fn range_of(node: Node) -> ByteRange {
    ByteRange::new(node.start_byte(), node.end_byte())
}

pub fn text_of<'t>(node: Node, text: &'t str) -> &'t str {
    text.get(node.byte_range()).unwrap_or("")
}

/// The Python value of a plain (non-f) string literal node, with the common escapes decoded.
/// `None` for f-strings and byte strings.
pub fn string_value(node: Node, text: &str) -> Option<String> {
    match node.kind() {
        "string" => {
            let mut cursor = node.walk();
            let mut out = String::new();
            for child in node.children(&mut cursor) {
                match child.kind() {
                    "string_start" => {
                        let prefix = text_of(child, text).to_ascii_lowercase();
                        if prefix.contains('f') || prefix.contains('b') {
                            return None;
                        }
                    }
                    "string_content" => out.push_str(&content_value(child, text)),
                    "escape_sequence" => out.push_str(&decode_escape(text_of(child, text))),
                    "interpolation" => return None,
                    _ => {}
                }
            }
            Some(out)
        }
        "concatenated_string" => {
            let mut cursor = node.walk();
            let mut out = String::new();
            for child in node.named_children(&mut cursor) {
                out.push_str(&string_value(child, text)?);
            }
            Some(out)
        }
        _ => None,
    }
}

/// A `string_content` node's text with its escape sequences (child nodes) decoded.
pub fn content_value(node: Node, text: &str) -> String {
    let mut out = String::new();
    let mut at = node.start_byte();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.kind() == "escape_sequence" {
            out.push_str(text.get(at..child.start_byte()).unwrap_or(""));
            out.push_str(&decode_escape(text_of(child, text)));
            at = child.end_byte();
        }
    }
    out.push_str(text.get(at..node.end_byte()).unwrap_or(""));
    out
}

pub fn decode_escape(escape: &str) -> String {
    match escape {
        "\\n" => "\n".into(),
        "\\t" => "\t".into(),
        "\\r" => "\r".into(),
        "\\\\" => "\\".into(),
        "\\'" => "'".into(),
        "\\\"" => "\"".into(),
        "\\0" => "\0".into(),
        other => other.trim_start_matches('\\').to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_edit_matches_a_fresh_parse() {
        let mut doc = ParsedText::new("x = tmdb.search_person(query=\"a\")\ny = x[\"results\"]\n".into());
        let at = doc.text.find("results").unwrap();
        doc.edit(ByteRange::new(at, at + 7), "resultz");
        assert!(doc.text.contains("resultz"));
        assert_eq!(doc.tree.root_node().to_sexp(), parse(&doc.text).root_node().to_sexp());
        doc.edit(ByteRange::new(0, 0), "é = 1\n");
        assert_eq!(doc.tree.root_node().to_sexp(), parse(&doc.text).root_node().to_sexp());
    }

    #[test]
    fn string_values() {
        let text = "a = 'x\\ty' \"z\"\nb = f'{a}'\n";
        let tree = parse(text);
        let root = tree.root_node();
        let first = root.child(0).unwrap().child(0).unwrap().child_by_field_id(fields().right.get()).unwrap();
        assert_eq!(string_value(first, text).as_deref(), Some("x\tyz"));
        let second = root.child(1).unwrap().child(0).unwrap().child_by_field_id(fields().right.get()).unwrap();
        assert_eq!(string_value(second, text), None);
    }
}
