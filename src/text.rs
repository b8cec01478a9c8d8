//! Line index over a text: byte offsets ↔ (line, column) in UTF-8 or UTF-16 code units.
//! Tree-sitter and the loaders speak bytes; LSP clients and `check --format json` speak UTF-16
//! (or UTF-8 when negotiated); the text output speaks 1-based characters. All conversion is here,
//! beside [`ByteRange`], the one span type of the core.

/// `text` with its control characters (an escape sequence that would move a terminal's cursor,
/// erase a line or retitle the window) written as Rust escapes (`\u{1b}`), for a terminal: what a
/// workspace wrote in a name, a URL or a command line is shown, never obeyed.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_unprintable) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars().map(|c| if is_unprintable(c) { c.escape_default().to_string() } else { c.to_string() }).collect(),
    )
}

/// A program's output as a terminal may be given it: text, line breaks, tabs, carriage returns
/// and backspaces (progress bars), and colours (SGR, `ESC [ … m`); every other control character
/// and escape sequence is shown escaped, as [`printable`] shows it. Written raw, a program's
/// output could set the user's clipboard (OSC 52: `curl … | sh` pasted later), retitle the
/// window, or ask the terminal for reports it answers by typing into the shell's input once the
/// run is over.
pub fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    let allowed = |c: char| matches!(c, '\n' | '\t' | '\r' | '\u{8}');
    if !text.chars().any(|c| is_unprintable(c) && !allowed(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let colour = rest.strip_prefix("\u{1b}[").and_then(|params| {
            params
                .find(|p: char| !(p.is_ascii_digit() || p == ';' || p == ':'))
                .filter(|&at| params[at..].starts_with('m'))
        });
        if let Some(at) = colour {
            let len = 2 + at + 1;
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        if is_unprintable(c) && !allowed(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// `text` cut to at most `max_chars` characters, the last of them `…` where it was cut. Costs no
/// more than `max_chars` however long `text` is: a message quoting what a file wrote (a path, a
/// name, a `$ref`) stays short when the file wrote a megabyte there, however many messages quote it.
pub fn shorten(text: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max_chars {
        return std::borrow::Cow::Borrowed(text);
    }
    match text.char_indices().nth(max_chars) {
        None => std::borrow::Cow::Borrowed(text),
        Some(_) => {
            let keep = text.char_indices().nth(max_chars.saturating_sub(1)).map_or(0, |(at, _)| at);
            std::borrow::Cow::Owned(format!("{}…", &text[..keep]))
        }
    }
}

/// `value` as JSON text, [`shorten`]ed to `max_chars`, made of no more of it than that: a message
/// quoting one `enum` member for each call of a program costs the length it shows, not the
/// member's.
pub fn short_json(value: &serde_json::Value, max_chars: usize) -> String {
    let mut clipped = Clipped { room: max_chars, cut: false };
    let text = clipped.clip(value).to_string();
    if !clipped.cut {
        return shorten(&text, max_chars).into_owned();
    }
    let kept: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// What is left to show of a value, and whether anything was left out.
struct Clipped {
    room: usize,
    cut: bool,
}

impl Clipped {
    /// The beginning of `value`: its text a character of room each, every other value (an
    /// empty array included) one.
    fn clip(&mut self, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        self.room = self.room.saturating_sub(1);
        match value {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => {
                let mut kept = Vec::new();
                for item in items {
                    if self.room == 0 {
                        self.cut = true;
                        break;
                    }
                    kept.push(self.clip(item));
                }
                Value::Array(kept)
            }
            Value::Object(members) => {
                let mut kept = serde_json::Map::new();
                for (key, member) in members {
                    if self.room == 0 {
                        self.cut = true;
                        break;
                    }
                    let key = self.text(key);
                    // A key cut short may read as one kept before it: nothing after it is shown.
                    if kept.contains_key(&key) {
                        self.cut = true;
                        break;
                    }
                    let member = self.clip(member);
                    kept.insert(key, member);
                }
                Value::Object(kept)
            }
            other => other.clone(),
        }
    }

    fn text(&mut self, text: &str) -> String {
        let kept: String = text.chars().take(self.room).collect();
        let taken = kept.chars().count();
        self.cut |= taken < text.chars().take(self.room + 1).count();
        self.room -= taken;
        kept
    }
}

/// How many characters of what a file wrote a message quotes: [`shorten`]'s length for paths,
/// names and references in diagnostics.
pub const QUOTED_CHARS: usize = 200;

/// `text` as a message quotes it: [`shorten`] to [`QUOTED_CHARS`].
pub fn quoted(text: &str) -> std::borrow::Cow<'_, str> {
    shorten(text, QUOTED_CHARS)
}

/// The first `max` of `items`, each [`quoted`], joined by commas, with `, …` when there are
/// more: how a message lists what a protocol declares (its keys, parameters, enum values), which
/// may be thousands of entries of any length.
pub fn some_of<T: AsRef<str>>(items: impl IntoIterator<Item = T>, max: usize) -> String {
    let mut items = items.into_iter();
    let shown: Vec<String> = items.by_ref().take(max).map(|item| quoted(item.as_ref()).into_owned()).collect();
    let more = if items.next().is_some() { ", …" } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// A control character, one that reorders the text around it on screen (the bidirectional
/// overrides and isolates, and the direction marks), or one that shows as nothing or as a blank
/// (zero-width spaces and joiners, the line and paragraph separators, the soft hyphen, the
/// Hangul fillers), which a name could use to show one command while holding another.
pub fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(
            c,
            '\u{00ad}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200d}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{2060}'..='\u{2064}'
                | '\u{3164}'
                | '\u{feff}'
                | '\u{ffa0}'
        )
}

/// A byte range `start..end` in a file's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct ByteRange {
    pub start: usize,
    pub end: usize,
}

impl ByteRange {
    pub fn new(start: usize, end: usize) -> Self {
        ByteRange { start, end }
    }
    pub fn contains(&self, offset: usize) -> bool {
        self.start <= offset && offset <= self.end
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

#[derive(Debug, Clone)]
pub struct LineIndex {
    line_starts: Vec<usize>,
    ascii: bool,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        LineIndex { line_starts, ascii: text.is_ascii() }
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.line_starts.get(line).copied()
    }

    /// The 0-based line holding `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    pub fn position(&self, text: &str, offset: usize, encoding: Encoding) -> Position {
        let offset = clamp_to_char(text, offset.min(text.len()));
        let line = self.line_of(offset);
        let start = self.line_starts[line];
        let character = if self.ascii || encoding == Encoding::Utf8 {
            offset - start
        } else {
            text[start..offset].encode_utf16().count()
        };
        Position { line: line as u32, character: character as u32 }
    }

    /// [`LineIndex::position`] of many offsets, in their order, counting each line's UTF-16 units
    /// once from the smallest offset to the largest: a protocol file can be one 10 MB line, and
    /// counting from its start for every symbol in it took seconds.
    pub fn positions(&self, text: &str, offsets: &[usize], encoding: Encoding) -> Vec<Position> {
        if self.ascii || encoding == Encoding::Utf8 {
            return offsets.iter().map(|&o| self.position(text, o, encoding)).collect();
        }
        let mut order: Vec<usize> = (0..offsets.len()).collect();
        order.sort_by_key(|&i| offsets[i]);
        let mut out = vec![Position { line: 0, character: 0 }; offsets.len()];
        // The last position counted: its line, byte offset and UTF-16 column.
        let mut counted: Option<(usize, usize, usize)> = None;
        for i in order {
            let offset = clamp_to_char(text, offsets[i].min(text.len()));
            let line = self.line_of(offset);
            let (from, units) = match counted {
                Some((l, at, units)) if l == line => (at, units),
                _ => (self.line_starts[line], 0),
            };
            let units = units + text[from..offset].encode_utf16().count();
            counted = Some((line, offset, units));
            out[i] = Position { line: line as u32, character: units as u32 };
        }
        out
    }

    /// Byte offset of a client position; positions past a line's end clamp to its end.
    pub fn offset(&self, text: &str, position: Position, encoding: Encoding) -> usize {
        let Some(&start) = self.line_starts.get(position.line as usize) else {
            return text.len();
        };
        let end = self.line_starts.get(position.line as usize + 1).map(|&next| next - 1).unwrap_or(text.len());
        let line = &text[start..end];
        let want = position.character as usize;
        if self.ascii || encoding == Encoding::Utf8 {
            return start + clamp_to_char(line, want.min(line.len()));
        }
        let mut units = 0;
        for (i, ch) in line.char_indices() {
            if units >= want {
                return start + i;
            }
            units += ch.len_utf16();
        }
        end
    }

    /// 1-based line and 1-based character column, for terminal output.
    pub fn line_col_1based(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = clamp_to_char(text, offset.min(text.len()));
        let line = self.line_of(offset);
        let col = text[self.line_starts[line]..offset].chars().count();
        (line + 1, col + 1)
    }
}

fn clamp_to_char(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_programs_output_keeps_its_colours_and_loses_its_other_escapes() {
        let shown =
            super::for_terminal("\u{1b}[1;31mred\u{1b}[0m 50%\r\u{1b}]52;c;Y3VybA==\u{7}\u{1b}[6n\u{1b}[2Jdone\t\n");
        assert_eq!(shown, "\u{1b}[1;31mred\u{1b}[0m 50%\r\\u{1b}]52;c;Y3VybA==\\u{7}\\u{1b}[6n\\u{1b}[2Jdone\t\n");
        assert!(matches!(super::for_terminal("plain\n"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn many_positions_are_the_positions_one_by_one() {
        let text = "aé\u{1F600}b\ncd\u{1F600}é\nxyz";
        let index = super::LineIndex::new(text);
        let offsets: Vec<usize> = (0..=text.len() + 2).rev().collect();
        for encoding in [super::Encoding::Utf16, super::Encoding::Utf8] {
            let one_by_one: Vec<super::Position> = offsets.iter().map(|&o| index.position(text, o, encoding)).collect();
            assert_eq!(index.positions(text, &offsets, encoding), one_by_one);
        }
    }

    use super::*;

    #[test]
    fn shorten_cuts_to_a_length_in_characters() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("abcdef", 6), "abcdef");
        assert_eq!(shorten("abcdefg", 6), "abcde…");
        assert_eq!(shorten("ééééééé", 6), "ééééé…", "characters, not bytes");
        assert_eq!(shorten("éé", 3), "éé", "four bytes but two characters");
        assert_eq!(quoted(&"x".repeat(1 << 20)).chars().count(), QUOTED_CHARS);
        assert_eq!(some_of(["a", "b", "c"], 3), "a, b, c");
        assert_eq!(some_of(["a", "b", "c"], 2), "a, b, …");
        assert_eq!(some_of(vec!["k".repeat(1000)], 1).chars().count(), QUOTED_CHARS);
        assert_eq!(short_json(&serde_json::json!({"a": [1, 2]}), 40), r#"{"a":[1,2]}"#);
        assert_eq!(short_json(&serde_json::json!("é".repeat(1 << 20)), 5), "\"ééé…");
        assert_eq!(short_json(&serde_json::json!(["x".repeat(10)]), 6), r#"["xxx…"#);
        let empties = serde_json::Value::Array(vec![serde_json::json!([]); 100_000]);
        assert_eq!(short_json(&empties, 10), "[[],[],[]…");
        let (a, b) = ("a".repeat(20), format!("{}Z", "a".repeat(20)));
        let clashing = serde_json::json!({a.clone(): "xy", b: 5});
        let shown = short_json(&clashing, 41);
        assert!(shown.ends_with('…') && shown.contains(r#""xy""#) && !shown.contains(":5"), "{shown}");
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert!(matches!(printable("plain — text"), std::borrow::Cow::Borrowed("plain — text")));
        assert_eq!(printable("a\u{1b}]0;title\u{7}b\r\n"), "a\\u{1b}]0;title\\u{7}b\\r\\n");
        assert_eq!(printable("rm -rf \u{202e}txt.exe"), "rm -rf \\u{202e}txt.exe");
        assert_eq!(
            printable("cur\u{200b}l\u{2028}\u{3164}"),
            "cur\\u{200b}l\\u{2028}\\u{3164}",
            "invisible, not shown as nothing"
        );
    }

    #[test]
    fn utf16_round_trip() {
        let text = "a = 1\nx = \"😀é\" + y\n";
        let idx = LineIndex::new(text);
        let y = text.find('y').unwrap();
        let p = idx.position(text, y, Encoding::Utf16);
        assert_eq!(p, Position { line: 1, character: 12 });
        assert_eq!(idx.offset(text, p, Encoding::Utf16), y);
        let p8 = idx.position(text, y, Encoding::Utf8);
        assert_eq!(p8.character as usize, y - 6);
        assert_eq!(idx.offset(text, p8, Encoding::Utf8), y);
        assert_eq!(idx.line_col_1based(text, y), (2, 12));
    }

    #[test]
    fn positions_past_the_end_clamp() {
        let text = "ab\ncd";
        let idx = LineIndex::new(text);
        assert_eq!(idx.offset(text, Position { line: 0, character: 99 }, Encoding::Utf16), 2);
        assert_eq!(idx.offset(text, Position { line: 9, character: 0 }, Encoding::Utf16), 5);
    }
}
