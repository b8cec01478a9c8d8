//! A position-keeping document tree for protocol files.
//!
//! Every loader (native, OpenAPI, ToolBench) reads JSON or YAML through this one tree so that each
//! value knows the byte range it came from: go-to-definition lands on the exact operation and a
//! broken operation gets a diagnostic on its own text. JSON goes through `jsonc-parser` (tolerant
//! of comments and trailing commas), YAML through `saphyr`'s marked loader.

use serde_json::{Map, Number, Value};
use std::collections::HashMap;

use crate::text::ByteRange;

#[derive(Debug, Clone)]
pub enum NodeKind {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Node>),
    /// Members in document order: (key, key range, value).
    Object(Vec<(String, ByteRange, Node)>),
}

#[derive(Debug, Clone)]
pub struct Node {
    pub kind: NodeKind,
    pub range: ByteRange,
}

/// A parse failure with the place it happened.
#[derive(Debug, Clone)]
pub struct ParseFailure {
    pub range: ByteRange,
    pub message: String,
}

impl Node {
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            NodeKind::Object(members) => members.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }
    /// The range of `key` itself inside this object (for diagnostics on a name).
    pub fn key_range(&self, key: &str) -> Option<ByteRange> {
        match &self.kind {
            NodeKind::Object(members) => members.iter().find(|(k, _, _)| k == key).map(|(_, r, _)| *r),
            _ => None,
        }
    }
    pub fn members(&self) -> &[(String, ByteRange, Node)] {
        match &self.kind {
            NodeKind::Object(members) => members,
            _ => &[],
        }
    }
    pub fn items(&self) -> &[Node] {
        match &self.kind {
            NodeKind::Array(items) => items,
            _ => &[],
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::String(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match &self.kind {
            NodeKind::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn is_object(&self) -> bool {
        matches!(self.kind, NodeKind::Object(_))
    }
    pub fn is_array(&self) -> bool {
        matches!(self.kind, NodeKind::Array(_))
    }
    /// A string member, or "" when absent or not a string.
    pub fn str_of(&self, key: &str) -> &str {
        self.get(key).and_then(Node::as_str).unwrap_or("")
    }

    /// Follows a JSON pointer (`/components/schemas/Movie`, with `~0`/`~1` escapes).
    pub fn pointer(&self, pointer: &str) -> Option<&Node> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut node = self;
        for raw in pointer.strip_prefix('/')?.split('/') {
            let part = raw.replace("~1", "/").replace("~0", "~");
            node = match &node.kind {
                NodeKind::Object(_) => node.get(&part)?,
                NodeKind::Array(items) => items.get(part.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// A tree of a JSON value that has no text (an MCP server's schemas): every range is `at`.
    pub fn from_json(value: &Value, at: ByteRange) -> Node {
        let kind = match value {
            Value::Null => NodeKind::Null,
            Value::Bool(b) => NodeKind::Bool(*b),
            Value::Number(n) => NodeKind::Number(n.clone()),
            Value::String(s) => NodeKind::String(s.clone()),
            Value::Array(items) => NodeKind::Array(items.iter().map(|i| Node::from_json(i, at)).collect()),
            Value::Object(map) => {
                NodeKind::Object(map.iter().map(|(k, v)| (k.clone(), at, Node::from_json(v, at))).collect())
            }
        };
        Node { kind, range: at }
    }

    /// The plain JSON value, without positions.
    pub fn to_json(&self) -> Value {
        match &self.kind {
            NodeKind::Null => Value::Null,
            NodeKind::Bool(b) => Value::Bool(*b),
            NodeKind::Number(n) => Value::Number(n.clone()),
            NodeKind::String(s) => Value::String(s.clone()),
            NodeKind::Array(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeKind::Object(members) => {
                let mut map = Map::new();
                for (k, _, v) in members {
                    map.insert(k.clone(), v.to_json());
                }
                Value::Object(map)
            }
        }
    }
}

/// Which syntax a protocol file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
}

impl Syntax {
    pub fn of_path(path: &std::path::Path) -> Syntax {
        match path.extension().and_then(|e| e.to_str()) {
            Some("yaml") | Some("yml") => Syntax::Yaml,
            _ => Syntax::Json,
        }
    }
}

pub fn parse(text: &str, syntax: Syntax) -> Result<Node, ParseFailure> {
    parse_within(text, syntax, &AliasBudget::default())
}

/// [`parse`], a YAML document's aliases drawing on `aliases`, which the files loaded together share.
pub fn parse_within(text: &str, syntax: Syntax, aliases: &AliasBudget) -> Result<Node, ParseFailure> {
    match syntax {
        Syntax::Json => parse_json(text),
        Syntax::Yaml => parse_yaml(text, aliases),
    }
}

/// What YAML documents loaded together (a workspace's protocol files and the files they refer to)
/// may take through their aliases beyond eight times their own size: shared, so that many small
/// files cannot each expand to the whole of it (16 planted files of 1 MB once loaded as 1.2 GB).
#[derive(Debug)]
pub struct AliasBudget {
    left: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Whether anything was asked of it through this share (taken or refused).
    asked: std::sync::atomic::AtomicBool,
}

impl Default for AliasBudget {
    fn default() -> AliasBudget {
        AliasBudget {
            left: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(ALIAS_EXPANSION)),
            asked: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl AliasBudget {
    /// A share of the same budget that tells whether it was drawn on (one file's load).
    pub fn share(&self) -> AliasBudget {
        AliasBudget { left: self.left.clone(), asked: std::sync::atomic::AtomicBool::new(false) }
    }

    /// Whether a document read through this share was sized against the budget: it took from
    /// it or was refused, either of which depends on the files loaded beside it.
    pub fn asked(&self) -> bool {
        self.asked.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Takes `bytes` from what is left, or nothing when less is left.
    fn take(&self, bytes: u64) -> bool {
        use std::sync::atomic::Ordering;
        self.asked.store(true, Ordering::Release);
        self.left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(bytes)).is_ok()
    }
}

pub fn parse_json(text: &str) -> Result<Node, ParseFailure> {
    use jsonc_parser::{CollectOptions, ParseOptions, parse_to_ast};
    let options = ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: true,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        ..Default::default()
    };
    let parsed = parse_to_ast(text, &CollectOptions::default(), &options).map_err(|e| {
        let r = e.range();
        ParseFailure {
            range: ByteRange::new(r.start, r.end.max(r.start)),
            message: format!("invalid JSON: {}", e.kind()),
        }
    })?;
    match parsed.value {
        Some(value) => Ok(from_jsonc(value)),
        None => Err(ParseFailure {
            range: ByteRange::new(0, 0),
            message: "the file is empty: expected a JSON document".into(),
        }),
    }
}

fn from_jsonc(value: jsonc_parser::ast::Value<'_>) -> Node {
    use jsonc_parser::ast::{ObjectPropName, Value as J};
    let (kind, range) = match value {
        J::StringLit(s) => (NodeKind::String(s.value.into_owned()), s.range),
        J::NumberLit(n) => {
            let number = n
                .value
                .parse::<i64>()
                .map(Number::from)
                .ok()
                .or_else(|| n.value.parse::<f64>().ok().and_then(Number::from_f64))
                .unwrap_or_else(|| Number::from(0));
            (NodeKind::Number(number), n.range)
        }
        J::BooleanLit(b) => (NodeKind::Bool(b.value), b.range),
        J::NullKeyword(n) => (NodeKind::Null, n.range),
        J::Array(a) => (NodeKind::Array(a.elements.into_iter().map(from_jsonc).collect()), a.range),
        J::Object(o) => {
            let members = o
                .properties
                .into_iter()
                .map(|p| {
                    let (key, key_range) = match p.name {
                        ObjectPropName::String(s) => (s.value.into_owned(), s.range),
                        ObjectPropName::Word(w) => (w.value.to_string(), w.range),
                    };
                    (key, ByteRange::new(key_range.start, key_range.end), from_jsonc(p.value))
                })
                .collect();
            (NodeKind::Object(members), o.range)
        }
    };
    Node { kind, range: ByteRange::new(range.start, range.end) }
}

pub fn parse_yaml(text: &str, aliases: &AliasBudget) -> Result<Node, ParseFailure> {
    use saphyr::{LoadableYamlNode, MarkedYaml};
    let (as_written, expanded) = yaml_sizes(text);
    let beyond = expanded.saturating_sub(as_written.saturating_mul(8));
    if beyond > 0 && !aliases.take(beyond) {
        return Err(ParseFailure {
            range: ByteRange::new(0, 0),
            message: format!(
                "invalid YAML: its aliases expand it to {} MiB, past what chainsmith loads (eight times its size, and {} MiB more over all the files loaded together)",
                expanded.div_ceil(1 << 20),
                ALIAS_EXPANSION >> 20
            ),
        });
    }
    let offsets = CharOffsets::new(text);
    let docs = MarkedYaml::load_from_str(text).map_err(|e| {
        let at = offsets.byte(e.marker().index());
        ParseFailure { range: ByteRange::new(at, at), message: format!("invalid YAML: {}", e.info()) }
    })?;
    match docs.into_iter().next() {
        Some(doc) => Ok(from_yaml(&doc, &offsets)),
        None => Err(ParseFailure {
            range: ByteRange::new(0, 0),
            message: "the file is empty: expected a YAML document".into(),
        }),
    }
}

/// What YAML files loaded together may expand to through their aliases beyond eight times their
/// size (each alias counted as one node), over all of them ([`AliasBudget`]).
const ALIAS_EXPANSION: u64 = 64 << 20;

/// About the bytes a YAML document takes loaded — each scalar's text and a little for each node —
/// with each alias counted as one node (as written), and with each copied in (as loading does).
/// Read from the parser's events, which hold no copies, so a 1 MB file whose aliases nest a 1 MiB
/// string ten thousand times (10 GiB loaded) costs nothing to size. A file the parser refuses
/// sizes as far as it read: loading it reports where it failed.
fn yaml_sizes(text: &str) -> (u64, u64) {
    use saphyr_parser::{Event, Parser};
    const NODE: u64 = 64;
    let mut anchored: HashMap<usize, u64> = HashMap::new();
    let mut as_written = 0u64;
    // (anchor of the open collection, its size so far); the bottom collects the documents.
    let mut open: Vec<(usize, u64)> = vec![(0, 0)];
    for event in Parser::new_from_str(text) {
        let Ok((event, _)) = event else { break };
        let finished = match event {
            Event::Scalar(value, _, anchor, _) => {
                as_written = as_written.saturating_add(NODE + value.len() as u64);
                Some((anchor, NODE + value.len() as u64))
            }
            Event::Alias(anchor) => {
                as_written = as_written.saturating_add(NODE);
                Some((0, anchored.get(&anchor).copied().unwrap_or(NODE)))
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                as_written = as_written.saturating_add(NODE);
                open.push((anchor, NODE));
                None
            }
            Event::SequenceEnd | Event::MappingEnd if open.len() > 1 => open.pop(),
            _ => None,
        };
        if let Some((anchor, size)) = finished {
            if anchor != 0 {
                anchored.insert(anchor, size);
            }
            let parent = open.last_mut().expect("the bottom is never popped");
            parent.1 = parent.1.saturating_add(size);
        }
    }
    (as_written, open.iter().fold(0u64, |total, (_, size)| total.saturating_add(*size)))
}

/// saphyr reports positions in characters; protocol ranges are bytes.
struct CharOffsets {
    /// Byte offset of each char index, only built when the text is not ASCII.
    bytes: Option<Vec<usize>>,
    len: usize,
}

impl CharOffsets {
    fn new(text: &str) -> Self {
        let bytes = if text.is_ascii() {
            None
        } else {
            let mut v: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
            v.push(text.len());
            Some(v)
        };
        CharOffsets { bytes, len: text.len() }
    }
    fn byte(&self, char_index: usize) -> usize {
        match &self.bytes {
            None => char_index.min(self.len),
            Some(v) => v.get(char_index).copied().unwrap_or(self.len),
        }
    }
}

fn from_yaml(node: &saphyr::MarkedYaml<'_>, offsets: &CharOffsets) -> Node {
    use saphyr::{Scalar, YamlData};
    let range = ByteRange::new(offsets.byte(node.span.start.index()), offsets.byte(node.span.end.index()));
    let scalar = |s: &Scalar<'_>| match s {
        Scalar::Null => NodeKind::Null,
        Scalar::Boolean(b) => NodeKind::Bool(*b),
        Scalar::Integer(i) => NodeKind::Number(Number::from(*i)),
        Scalar::FloatingPoint(f) => {
            Number::from_f64(f.into_inner()).map(NodeKind::Number).unwrap_or_else(|| NodeKind::String(f.to_string()))
        }
        Scalar::String(s) => NodeKind::String(s.to_string()),
    };
    let kind = match &node.data {
        YamlData::Value(s) => scalar(s),
        YamlData::Representation(text, _, _) => NodeKind::String(text.to_string()),
        YamlData::Sequence(items) => NodeKind::Array(items.iter().map(|n| from_yaml(n, offsets)).collect()),
        YamlData::Mapping(map) => NodeKind::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match &k.data {
                        YamlData::Value(Scalar::String(s)) => s.to_string(),
                        YamlData::Value(Scalar::Integer(i)) => i.to_string(),
                        YamlData::Value(Scalar::Boolean(b)) => b.to_string(),
                        YamlData::Value(Scalar::FloatingPoint(f)) => f.to_string(),
                        YamlData::Value(Scalar::Null) => "null".to_string(),
                        YamlData::Representation(text, _, _) => text.to_string(),
                        _ => String::new(),
                    };
                    let key_range =
                        ByteRange::new(offsets.byte(k.span.start.index()), offsets.byte(k.span.end.index()));
                    (key, key_range, from_yaml(v, offsets))
                })
                .collect(),
        ),
        YamlData::Tagged(_, inner) => return from_yaml(inner, offsets),
        YamlData::Alias(_) | YamlData::BadValue => NodeKind::Null,
    };
    Node { kind, range }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_byte_ranges() {
        let text = "{\n  \"a\": {\"b\": [1, 2.5, \"é\"]}, \"c\": null\n}";
        let doc = parse_json(text).unwrap();
        let b = doc.pointer("/a/b").unwrap();
        assert_eq!(&text[b.range.start..b.range.end], "[1, 2.5, \"é\"]");
        let r = doc.key_range("c").unwrap();
        assert_eq!(&text[r.start..r.end], "\"c\"");
        assert_eq!(doc.to_json(), serde_json::json!({"a": {"b": [1, 2.5, "é"]}, "c": null}));
    }

    /// A small file whose aliases nest one long string ever deeper would load as gigabytes: it is
    /// refused, sized without being copied. Aliases a real protocol uses load as before.
    #[test]
    fn yaml_aliases_that_would_expand_past_the_budget_are_refused() {
        let mut bomb = format!("l0: &l0 \"{}\"\n", "A".repeat(1 << 20));
        for level in 1..=4 {
            let copies = vec![format!("*l{}", level - 1); 10].join(", ");
            bomb.push_str(&format!("l{level}: &l{level} [{copies}]\n"));
        }
        let failure = parse_yaml(&bomb, &AliasBudget::default()).unwrap_err();
        assert!(failure.message.starts_with("invalid YAML: its aliases expand it to 1111"), "{failure:?}");
        let shared = "components:\n  x: &ok {type: string}\npaths:\n  /a: {get: {schema: *ok}}\n";
        // Many small values and no alias: large loaded, but no larger than written.
        let flat = format!("[{}]", vec!["0"; 1 << 20].join(","));
        assert!(parse_yaml(&flat, &AliasBudget::default()).is_ok());
        let loaded = parse_yaml(shared, &AliasBudget::default()).unwrap();
        assert_eq!(loaded.pointer("/paths/~1a/get/schema/type").unwrap().to_json(), "string");
    }

    /// Files loaded together share what their aliases may add: a file that copies a 1 MiB string
    /// 26 times (about 19 MiB beyond eight times its size) loads, and so do a second and a third,
    /// but not a fourth, whose share would pass the 64 MiB they have together.
    #[test]
    fn yaml_files_loaded_together_share_their_alias_budget() {
        let mut file = format!("s: &s \"{}\"\n", "A".repeat(1 << 20));
        file.push_str(&format!("copies: [{}]\n", vec!["*s"; 26].join(", ")));
        let together = AliasBudget::default();
        let loads: Vec<bool> = (0..4).map(|_| parse_yaml(&file, &together).is_ok()).collect();
        assert_eq!(loads, [true, true, true, false]);
        assert!(parse_yaml(&file, &AliasBudget::default()).is_ok(), "alone, the fourth loads");
    }

    #[test]
    fn json_error_is_located() {
        let err = parse_json("{\"a\": [1, 2}").unwrap_err();
        assert!(err.range.start > 0, "{err:?}");
        assert!(err.message.starts_with("invalid JSON"));
    }

    #[test]
    fn yaml_keeps_byte_ranges_past_non_ascii() {
        let text = "title: héllo\npaths:\n  /x:\n    get:\n      summary: s\n";
        let doc = parse_yaml(text, &AliasBudget::default()).unwrap();
        let get = doc.pointer("/paths/~1x/get").unwrap();
        assert!(text[get.range.start..].starts_with("summary"), "{:?}", &text[get.range.start..]);
        let r = doc.pointer("/paths").unwrap().key_range("/x").unwrap();
        assert_eq!(&text[r.start..r.end], "/x");
        assert_eq!(doc.pointer("/title").unwrap().as_str(), Some("héllo"));
    }

    #[test]
    fn yaml_error_is_located() {
        let err = parse_yaml("a: [1, 2\nb: c\n", &AliasBudget::default()).unwrap_err();
        assert!(err.message.starts_with("invalid YAML"), "{err:?}");
    }
}
