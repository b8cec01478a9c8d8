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
    /// What it takes built, in values: one for each value it holds, itself included, and one
    /// more for each [`BYTES_PER_VALUE`] of its strings and keys (counted without recursion: a
    /// document may nest as deep as its parser allows).
    pub fn weight(&self) -> usize {
        self.weight_past(usize::MAX)
    }

    /// [`Node::weight`], or a weight past `limit` as soon as one is reached (weighing a large
    /// node costs no more than the room it is weighed against).
    pub fn weight_past(&self, limit: usize) -> usize {
        let mut weight = 0;
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            if weight > limit {
                break;
            }
            weight += node.own_weight();
            // Each member weighs at least one: more than the room left need not be looked at.
            let room = limit.saturating_sub(weight).saturating_add(1);
            match &node.kind {
                NodeKind::Array(items) => stack.extend(items.iter().take(room)),
                NodeKind::Object(members) => stack.extend(members.iter().take(room).map(|(_, _, member)| member)),
                _ => {}
            }
        }
        weight
    }

    /// [`Node::weight`] of this node alone, its text and keys included, what it holds not.
    pub fn own_weight(&self) -> usize {
        1 + match &self.kind {
            NodeKind::String(text) => text_weight(text),
            NodeKind::Object(members) => members.iter().map(|(key, _, _)| text_weight(key)).sum(),
            _ => 0,
        }
    }

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
                NodeKind::Array(items) => items.get(array_index(&part)?)?,
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

/// What `text` adds to a value's weight ([`Node::weight`]): a value for each [`BYTES_PER_VALUE`].
pub fn text_weight(text: &str) -> usize {
    text.len() / BYTES_PER_VALUE as usize
}

/// An array index as a JSON pointer writes it (RFC 6901): `0`, or digits without a leading zero.
/// `00` or `+0` lead nowhere: read as numbers, one node would have endless spellings, and each
/// would be copied (a bundled `$ref`, a stored schema) as if it were another.
fn array_index(part: &str) -> Option<usize> {
    let canonical =
        part == "0" || (!part.starts_with('0') && !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    canonical.then(|| part.parse().ok()).flatten()
}

/// Which syntax a protocol file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
}

impl Syntax {
    /// What a value costs parsed, in JSON values: a YAML node about twice as much (measured: 4
    /// million nodes took 2.4 GB, as many JSON values 1 GB).
    fn weight(self) -> usize {
        match self {
            Syntax::Json => 1,
            Syntax::Yaml => 2,
        }
    }

    pub fn of_path(path: &std::path::Path) -> Syntax {
        match path.extension().and_then(|e| e.to_str()) {
            Some("yaml") | Some("yml") => Syntax::Yaml,
            _ => Syntax::Json,
        }
    }
}

pub fn parse(text: &str, syntax: Syntax) -> Result<Node, ParseFailure> {
    parse_within(text, syntax, &ParseBudget::default())
}

/// [`parse`] within `budget`: a document holding more values than its file's share allows is
/// refused before it is parsed, and a YAML document's aliases draw on what the files loaded
/// together share.
pub fn parse_within(text: &str, syntax: Syntax, budget: &ParseBudget) -> Result<Node, ParseFailure> {
    match syntax {
        Syntax::Json => {
            let max = budget.max_values(Syntax::Json);
            let values = crate::files::json_values(text.as_bytes(), max);
            if values > max {
                return Err(budget.too_many_values(Syntax::Json));
            }
            budget.draw_values(Syntax::Json, values)?;
            parse_json(text)
        }
        Syntax::Yaml => parse_yaml(text, budget),
    }
}

/// The bytes of a protocol file's size limit for each value it may hold, for limits above the
/// default (within it, the default's 4 million). Parsed, a value takes about a hundred bytes, so a
/// file of tiny values (`0,0,…`, two bytes a value) within the default 256 MiB would grow to five
/// gigabytes; 4 million take about 400 MB. Written out, real specifications take 25 to 65 bytes
/// a value: a file near the limit may need a higher one.
const BYTES_PER_VALUE: u64 = 64;

/// The values the protocol files parsed in one load may hold together (8 million, as JSON
/// values: a YAML node counts twice), beyond what toolsets trusted with a larger size limit add:
/// each file under its own count, many planted files would still take gigabytes each. Real
/// workspaces stay far below: GitHub's dereferenced description (73 MB) holds 1.2 million.
const LOAD_VALUES: u64 = 8 << 20;

/// What the protocol files loaded together (a workspace's protocol files and the files they refer
/// to) may take to parse: each file a number of values (more with a size limit above the
/// default), all of them [`LOAD_VALUES`], and all of them, through their YAML aliases, beyond eight
/// times their own size: shared, so that many small files cannot each expand to the whole of it
/// (16 planted files of 1 MB once loaded as 1.2 GB).
#[derive(Debug)]
pub struct ParseBudget {
    left: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The values, as JSON values, the files still to be parsed in this load may hold together.
    values_left: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Whether anything was asked of it through this share (taken or refused).
    asked: std::sync::atomic::AtomicBool,
    /// The values (weighted as [`ParseBudget::draw_values`] weighs them) drawn through this share.
    drawn: std::sync::atomic::AtomicU64,
    /// The values the file this share parses may hold.
    max_values: usize,
}

impl Default for ParseBudget {
    fn default() -> ParseBudget {
        ParseBudget::for_load([])
    }
}

/// The values a protocol file read with the size limit `max_bytes` may hold.
fn values_within(max_bytes: u64) -> usize {
    usize::try_from(max_bytes.max(crate::files::MAX_READ) / BYTES_PER_VALUE).unwrap_or(usize::MAX)
}

impl ParseBudget {
    /// The budget of one load whose files are read with the size limits `limits` (one for each
    /// file): those above the default add what such a file may hold beyond the default's.
    pub fn for_load(limits: impl IntoIterator<Item = u64>) -> ParseBudget {
        let default = values_within(crate::files::MAX_READ) as u64;
        let more = limits.into_iter().map(|max_bytes| (values_within(max_bytes) as u64).saturating_sub(default));
        ParseBudget {
            left: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(ALIAS_EXPANSION)),
            values_left: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(
                more.fold(LOAD_VALUES, u64::saturating_add),
            )),
            asked: std::sync::atomic::AtomicBool::new(false),
            drawn: std::sync::atomic::AtomicU64::new(0),
            max_values: values_within(crate::files::MAX_READ),
        }
    }

    /// A share of the same budget for one file's load (and the files it refers to), read with
    /// the size limit `max_bytes`, that tells whether its aliases drew on it.
    pub fn share(&self, max_bytes: u64) -> ParseBudget {
        ParseBudget {
            left: self.left.clone(),
            values_left: self.values_left.clone(),
            asked: std::sync::atomic::AtomicBool::new(false),
            drawn: std::sync::atomic::AtomicU64::new(0),
            max_values: values_within(max_bytes),
        }
    }

    /// This share, its file allowed `max_values` values (JSON values).
    #[cfg(test)]
    fn with_max_values(self, max_values: usize) -> ParseBudget {
        ParseBudget { max_values, ..self }
    }

    /// Takes the `values` of a document in `syntax` about to be parsed from what the load's files
    /// may hold together. Taken, it is no ask that keeps the load out of the catalog cache (read
    /// back, the load takes as much again: [`ParseBudget::draw_again`]); refused, it is (a file
    /// it pulls in would stay refused once there is room).
    fn draw_values(&self, syntax: Syntax, values: usize) -> Result<(), ParseFailure> {
        use std::sync::atomic::Ordering;
        let weighted = (values as u64).saturating_mul(syntax.weight() as u64);
        if self.draw_again(weighted) {
            return Ok(());
        }
        self.asked.store(true, Ordering::Release);
        Err(ParseFailure {
            range: ByteRange::new(0, 0),
            message: "not parsed: the protocol files loaded with it hold more values than chainsmith parses at once (8,388,608, a YAML node counting twice, more where a toolset's larger `max_mb` is trusted)".into(),
        })
    }

    /// What the documents parsed through this share drew from the load's values, weighted.
    pub fn drawn(&self) -> u64 {
        self.drawn.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Takes `drawn` values (weighted) from what the load's files may hold together: a load read
    /// back from the catalog cache takes what its parse took ([`ParseBudget::drawn`]), since what
    /// it holds in memory is what it held then. `false`, taking nothing, when they no longer
    /// leave that much.
    pub fn draw_again(&self, drawn: u64) -> bool {
        use std::sync::atomic::Ordering;
        let left = &self.values_left;
        let taken = left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(drawn)).is_ok();
        if taken {
            self.drawn.fetch_add(drawn, Ordering::AcqRel);
        }
        taken
    }

    /// The values a document in `syntax` may hold through this share.
    fn max_values(&self, syntax: Syntax) -> usize {
        self.max_values / syntax.weight()
    }

    /// Why a document in `syntax` holding more values than this share allows is not parsed.
    fn too_many_values(&self, syntax: Syntax) -> ParseFailure {
        let what = match syntax {
            Syntax::Json => "values",
            Syntax::Yaml => "values (or of the marks that separate them: `,` `:` `[` `{` `!` `&` `*`)",
        };
        ParseFailure {
            range: ByteRange::new(0, 0),
            message: format!(
                "it holds more than {} {what}, past what chainsmith parses from one protocol file; a [[toolsets]] entry's `max_mb` above {}, once trusted, raises the limit (by {} values a MiB)",
                self.max_values(syntax),
                crate::files::MAX_READ >> 20,
                (1 << 20) / BYTES_PER_VALUE as usize / syntax.weight()
            ),
        }
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

pub fn parse_yaml(text: &str, budget: &ParseBudget) -> Result<Node, ParseFailure> {
    use saphyr::{LoadableYamlNode, MarkedYaml};
    let max_nodes = budget.max_values(Syntax::Yaml);
    // The parser holds back every token of a flow collection (`[…]`, `{…}`) until it ends, since
    // the collection might be a key, so counting its nodes costs as much as loading them: its
    // tokens are bounded first by the marks that begin or separate them — commas, brackets, the
    // colons of keys, tags, anchors, aliases — counted in quoted and plain text too (so prose
    // counts: GitHub's 73 MB description, as YAML, would hold well under a million).
    let marks = text.bytes().filter(|b| matches!(b, b',' | b'[' | b'{' | b':' | b'!' | b'&' | b'*')).count();
    let YamlSizes { nodes, as_written, expanded, too_deep_at } = (marks <= max_nodes)
        .then(|| yaml_sizes(text, max_nodes))
        .filter(|sizes| sizes.nodes <= max_nodes)
        .ok_or_else(|| budget.too_many_values(Syntax::Yaml))?;
    let offsets = CharOffsets::new(text);
    if let Some(at) = too_deep_at.map(|at| offsets.byte(at)) {
        return Err(ParseFailure {
            range: ByteRange::new(at, at),
            message: format!(
                "invalid YAML: it nests deeper than {MAX_YAML_NESTING} levels (its aliases copied in), past what chainsmith loads"
            ),
        });
    }
    budget.draw_values(Syntax::Yaml, nodes)?;
    let beyond = expanded.saturating_sub(as_written.saturating_mul(8));
    if beyond > 0 && !budget.take(beyond) {
        return Err(ParseFailure {
            range: ByteRange::new(0, 0),
            message: format!(
                "invalid YAML: its aliases expand it to {} MiB, past what chainsmith loads (eight times its size, and {} MiB more over all the files loaded together)",
                expanded.div_ceil(1 << 20),
                ALIAS_EXPANSION >> 20
            ),
        });
    }
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
/// size (each alias counted as one node), over all of them ([`ParseBudget`]).
const ALIAS_EXPANSION: u64 = 64 << 20;

/// About the bytes a YAML document takes loaded — each scalar's text and a little for each node —
/// with each alias counted as one node (as written), and with each copied in (as loading does),
/// and how deep it nests with aliases copied in. Read from the parser's events, which hold no
/// copies, so a 1 MB file whose aliases nest a 1 MiB string ten thousand times (10 GiB loaded)
/// costs nothing to size. A file the parser refuses sizes as far as it read: loading it reports
/// where it failed.
fn yaml_sizes(text: &str, max_nodes: usize) -> YamlSizes {
    use saphyr_parser::{Event, Parser};
    const NODE: u64 = 64;
    /// A node being read: its anchor, its size so far and how many collections deep it nests
    /// (itself one level; a scalar none, as in JSON's count).
    struct Open {
        anchor: usize,
        size: u64,
        depth: usize,
    }
    let mut anchored: HashMap<usize, (u64, usize)> = HashMap::new();
    let (mut as_written, mut nodes) = (0u64, 0usize);
    // The bottom collects the documents.
    let mut open = vec![Open { anchor: 0, size: 0, depth: 0 }];
    let mut too_deep_at = None;
    for event in Parser::new_from_str(text) {
        let Ok((event, span)) = event else { break };
        if matches!(event, Event::Scalar(..) | Event::Alias(_) | Event::SequenceStart(..) | Event::MappingStart(..)) {
            nodes += 1;
            if nodes > max_nodes {
                break;
            }
        }
        let finished = match event {
            Event::Scalar(value, _, anchor, _) => {
                as_written = as_written.saturating_add(NODE + value.len() as u64);
                Some(Open { anchor, size: NODE + value.len() as u64, depth: 0 })
            }
            Event::Alias(anchor) => {
                as_written = as_written.saturating_add(NODE);
                let (size, depth) = anchored.get(&anchor).copied().unwrap_or((NODE, 0));
                Some(Open { anchor: 0, size, depth })
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                as_written = as_written.saturating_add(NODE);
                open.push(Open { anchor, size: NODE, depth: 1 });
                if open.len() - 1 > MAX_YAML_NESTING {
                    too_deep_at = Some(span.start.index());
                    break;
                }
                None
            }
            Event::SequenceEnd | Event::MappingEnd if open.len() > 1 => open.pop(),
            _ => None,
        };
        if let Some(node) = finished {
            if node.anchor != 0 {
                anchored.insert(node.anchor, (node.size, node.depth));
            }
            // Levels still open above it, the bottom not counted.
            let nesting = open.len() - 1 + node.depth;
            let parent = open.last_mut().expect("the bottom is never popped");
            parent.size = parent.size.saturating_add(node.size);
            parent.depth = parent.depth.max(node.depth + 1);
            if nesting > MAX_YAML_NESTING {
                too_deep_at = Some(span.start.index());
                break;
            }
        }
    }
    YamlSizes {
        nodes,
        as_written,
        expanded: open.iter().fold(0u64, |total, node| total.saturating_add(node.size)),
        too_deep_at,
    }
}

/// How deep a YAML protocol file may nest, its aliases copied in: as deep as a JSON one may
/// (jsonc-parser's limit). Loading recurses with the nesting, so a file of 30,000 nested `- `
/// (60 KB) would overflow the stack.
const MAX_YAML_NESTING: usize = 512;

/// What [`yaml_sizes`] finds: the nodes as written (each alias one), and about the bytes they
/// take loaded, as written and with each alias copied in; where (a character index) the nesting
/// passed [`MAX_YAML_NESTING`], if it did.
struct YamlSizes {
    nodes: usize,
    as_written: u64,
    expanded: u64,
    too_deep_at: Option<usize>,
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
        // An array index has one spelling: others would make one node many (each copied apart).
        assert_eq!(doc.pointer("/a/b/0").map(Node::to_json), Some(serde_json::json!(1)));
        assert!(doc.pointer("/a/b/2").is_some());
        for other in ["/a/b/00", "/a/b/+0", "/a/b/01", "/a/b/", "/a/b/-0", "/a/b/3"] {
            assert!(doc.pointer(other).is_none(), "{other}");
        }
    }

    /// A file of tiny values within the size limit would take gigabytes parsed: past 4 million
    /// values it is refused before parsing, in either syntax, unless its toolset's limit is higher.
    #[test]
    fn a_file_of_more_values_than_its_limit_allows_is_not_parsed() {
        for (syntax, limit, what, per_mib) in [
            (Syntax::Json, 4 << 20, "values", 16384),
            (Syntax::Yaml, 2 << 20, "values (or of the marks that separate them: `,` `:` `[` `{` `!` `&` `*`)", 8192),
        ] {
            let text = format!("[{}0]", "0,".repeat(limit));
            let failure = parse_within(&text, syntax, &ParseBudget::default()).unwrap_err();
            let expected = format!(
                "it holds more than {limit} {what}, past what chainsmith parses from one protocol file; a [[toolsets]] entry's `max_mb` above 256, once trusted, raises the limit (by {per_mib} values a MiB)"
            );
            assert_eq!(failure.message, expected);
        }
        assert_eq!(ParseBudget::default().share(300 << 20).max_values, 300 << 14);
        assert_eq!(ParseBudget::default().share(1 << 20).max_values, 4 << 20, "a lower size limit keeps the default's");

        // At the limit (a small one here), a file parses; past it, in flow or block style, not.
        let small = ParseBudget::default().with_max_values(100);
        let sequence = |n: usize| format!("[{}0]", "0,".repeat(n - 2));
        assert!(parse_within(&sequence(100), Syntax::Json, &small).is_ok());
        assert!(parse_within(&sequence(101), Syntax::Json, &small).is_err());
        assert!(parse_within(&sequence(50), Syntax::Yaml, &small).is_ok(), "a YAML node counts twice");
        assert!(parse_within(&sequence(51), Syntax::Yaml, &small).is_err());
        assert!(parse_within(&"- 0\n".repeat(50), Syntax::Yaml, &small).is_err(), "the sequence and 50 numbers");
        assert!(parse_within(&"- 0\n".repeat(49), Syntax::Yaml, &small).is_ok());
        // Flow mappings count their colons, tags and anchors too: the parser holds their tokens.
        let tagged = format!("{{{}k: v}}", "!t &a k: !t &b v, ".repeat(10));
        assert!(parse_within(&tagged, Syntax::Yaml, &small).is_err());
    }

    /// The files of one load share what they may hold together: each under its own count, many
    /// would still take gigabytes. Files read with a trusted larger limit add their share.
    #[test]
    fn the_files_of_one_load_share_what_their_values_may_take() {
        let load = ParseBudget::default();
        load.draw_values(Syntax::Json, LOAD_VALUES as usize - 5).unwrap();
        let file = load.share(crate::files::MAX_READ);
        assert!(parse_within("[0,0,0]", Syntax::Json, &file).is_ok());
        assert!(!file.asked(), "a file read back from the cache is not parsed: drawing values keeps no load from it");
        let failure = parse_within("[0,0]", Syntax::Json, &file).unwrap_err();
        assert!(
            failure.message.starts_with("not parsed: the protocol files loaded with it hold more values"),
            "{failure:?}"
        );
        assert!(file.asked(), "refused, a file pulled in would stay refused if its load were kept");
        // A load read back from the cache takes what it took when parsed, or nothing.
        let drawn = file.drawn();
        assert_eq!(drawn, 4, "the array and its three numbers");
        assert!(!load.share(crate::files::MAX_READ).draw_again(drawn));
        assert!(load.share(crate::files::MAX_READ).draw_again(1));
        assert!(!load.share(crate::files::MAX_READ).draw_again(1), "the last value was taken");
        let raised = ParseBudget::for_load([512 << 20]);
        raised.draw_values(Syntax::Json, LOAD_VALUES as usize + (4 << 20)).unwrap();
        assert!(raised.draw_values(Syntax::Json, 1).is_err());
    }

    /// A small file nesting block sequences (or aliases of them) thousands deep would overflow the
    /// stack loading it: it is refused, where it passes the limit, as deep JSON is.
    #[test]
    fn yaml_nested_past_the_limit_is_refused_where_it_passes_it() {
        let deep = format!("x:\n{}1\n", "- ".repeat(30_000));
        let failure = parse_yaml(&deep, &ParseBudget::default()).unwrap_err();
        assert!(failure.message.contains("nests deeper than 512 levels"), "{failure:?}");
        assert_eq!(failure.range.start, 3 + 2 * 511, "the 512th `- `, the 513th level under the mapping");
        let chained: String = (1..60).map(|k| format!("a{k}: &a{k}\n{}*a{}\n", "- ".repeat(300), k - 1)).collect();
        let failure = parse_yaml(&format!("a0: &a0 1\n{chained}"), &ParseBudget::default()).unwrap_err();
        assert!(failure.message.contains("its aliases copied in"), "{failure:?}");
        assert!(parse_yaml(&format!("x:\n{}1\n", "- ".repeat(500)), &ParseBudget::default()).is_ok());
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
        let failure = parse_yaml(&bomb, &ParseBudget::default()).unwrap_err();
        assert!(failure.message.starts_with("invalid YAML: its aliases expand it to 1111"), "{failure:?}");
        let shared = "components:\n  x: &ok {type: string}\npaths:\n  /a: {get: {schema: *ok}}\n";
        // Many small values and no alias: large loaded, but no larger than written.
        let flat = format!("[{}]", vec!["0"; 1 << 20].join(","));
        assert!(parse_yaml(&flat, &ParseBudget::default()).is_ok());
        let loaded = parse_yaml(shared, &ParseBudget::default()).unwrap();
        assert_eq!(loaded.pointer("/paths/~1a/get/schema/type").unwrap().to_json(), "string");
    }

    /// Files loaded together share what their aliases may add: a file that copies a 1 MiB string
    /// 26 times (about 19 MiB beyond eight times its size) loads, and so do a second and a third,
    /// but not a fourth, whose share would pass the 64 MiB they have together.
    #[test]
    fn yaml_files_loaded_together_share_their_alias_budget() {
        let mut file = format!("s: &s \"{}\"\n", "A".repeat(1 << 20));
        file.push_str(&format!("copies: [{}]\n", vec!["*s"; 26].join(", ")));
        let together = ParseBudget::default();
        let loads: Vec<bool> = (0..4).map(|_| parse_yaml(&file, &together).is_ok()).collect();
        assert_eq!(loads, [true, true, true, false]);
        assert!(parse_yaml(&file, &ParseBudget::default()).is_ok(), "alone, the fourth loads");
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
        let doc = parse_yaml(text, &ParseBudget::default()).unwrap();
        let get = doc.pointer("/paths/~1x/get").unwrap();
        assert!(text[get.range.start..].starts_with("summary"), "{:?}", &text[get.range.start..]);
        let r = doc.pointer("/paths").unwrap().key_range("/x").unwrap();
        assert_eq!(&text[r.start..r.end], "/x");
        assert_eq!(doc.pointer("/title").unwrap().as_str(), Some("héllo"));
    }

    #[test]
    fn yaml_error_is_located() {
        let err = parse_yaml("a: [1, 2\nb: c\n", &ParseBudget::default()).unwrap_err();
        assert!(err.message.starts_with("invalid YAML"), "{err:?}");
    }
}
