//! Text as an escape scheme decodes it, each decoded byte with the span of the text it came from:
//! how a secret is found however much of it a tool or a program escaped (`K3y%2Bsecret`,
//! `&#75;3y&amp;…`, `"\u004b3y…"`, `=4B=33=79`, `4b:33:79`), escaped twice (`%254B`, `&amp;#75;`), or
//! written in another case (a key sent back as a lower-cased header name), and redacted where it
//! stood. Decoding rather than listing the encoded forms of each secret catches any mix of escaped
//! and plain characters, which no list can enumerate. Percent-decoding of URL parts lives here
//! too, for the same reason: one decoder.

use std::ops::Range;

/// The longest escape any scheme here decodes, in bytes (`&#x` + ten digits + `;`): a secret of n
/// bytes takes at most n times this in text, escaped once.
pub const MAX_ESCAPE_LEN: usize = 14;

/// The most text one byte takes escaped twice (each byte of its escape escaped again).
pub const MAX_TWICE_ESCAPED_LEN: usize = MAX_ESCAPE_LEN * MAX_ESCAPE_LEN;

/// How much text is decoded at a time: the decoded text and its spans cost ~17 bytes a byte, so a
/// 64 MiB answer is decoded in windows rather than at once.
const WINDOW: usize = 1 << 20;

/// An escape scheme a secret may be written in, whole or in part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escapes {
    /// `%4B` (either case), and `+` for a space as forms encode it.
    Percent,
    /// Quoted-printable, as mail and multipart bodies carry text: `=4B` (either case), and a soft
    /// line break (`=` ending a line) that stands for nothing, so a key wrapped across lines is
    /// whole.
    QuotedPrintable,
    /// HTML character references: `&#75;`, `&#x4b;`, and the named `&amp;`, `&lt;`, `&gt;`,
    /// `&quot;`, `&apos;`; the `;` may be left out, as browsers allow.
    Html,
    /// Backslash escapes of JSON and most languages: `\u004B` (surrogate pairs joined),
    /// `\u{4B}`, `\x4b`, the octal `\113` of C and PostgreSQL's `bytea`, and a backslash before any other ASCII
    /// character (`\/`, `\"`, `\n`).
    Backslash,
    /// Bytes written as hex digit pairs with separators between them (`4b:33:79`, `4B-33`,
    /// `0x4b, 0x33`): a pair not followed by another hex digit, `0x` before it and one of `:-,.`
    /// and a space after it taken with it. (Hex without separators is one of a secret's forms.)
    HexPairs,
    /// A line break (`\n`, `\r\n`, `\r`, or one written as its backslash escape, as a program
    /// prints a string) standing for nothing: an encoded form of a secret wrapped in lines (MIME
    /// and `base64.encodebytes` wrap base64 at 76 characters, `xxd -p` hex at 60) is whole. Not
    /// one of [`Escapes::ALL`]: it is searched for a secret's encoded forms, see
    /// [`spans_of_forms`].
    LineBreaks,
}

impl Escapes {
    pub const ALL: [Escapes; 5] =
        [Escapes::Percent, Escapes::QuotedPrintable, Escapes::Html, Escapes::Backslash, Escapes::HexPairs];

    /// Whether `text` may hold an escape of this scheme at all.
    pub fn present_in(self, text: &[u8]) -> bool {
        match self {
            Escapes::Percent => memchr::memchr2(b'%', b'+', text).is_some(),
            // `=` alone is everywhere (query strings, base64 padding): only an escape counts.
            Escapes::QuotedPrintable => memchr::memchr_iter(b'=', text).any(|at| {
                soft_break_at(&text[at..])
                    || text.get(at + 1..at + 3).is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit))
            }),
            Escapes::Html => memchr::memchr(b'&', text).is_some(),
            Escapes::Backslash => memchr::memchr(b'\\', text).is_some(),
            Escapes::HexPairs => holds_separated_hex(text),
            Escapes::LineBreaks => {
                memchr::memchr2(b'\n', b'\r', text).is_some()
                    || memchr::memchr_iter(b'\\', text).any(|at| matches!(text.get(at + 1), Some(b'n' | b'r')))
            }
        }
    }

    /// The escape at the start of `text`: the character or byte it stands for, and its length.
    fn escape_at(self, text: &[u8]) -> Option<(Decoded, usize)> {
        match self {
            Escapes::Percent => match text {
                [b'%', hi, lo, ..] => Some((Decoded::Byte(hex_value(&[*hi, *lo])? as u8), 3)),
                [b'+', ..] => Some((Decoded::Byte(b' '), 1)),
                _ => None,
            },
            // A soft break before another stands for itself: no encoder writes two in a row, and
            // a run of them would let a secret take more text than `MAX_ESCAPE_LEN` a byte.
            Escapes::QuotedPrintable => match text {
                [b'=', b'\r', b'\n', rest @ ..] if !soft_break_at(rest) => Some((Decoded::Nothing, 3)),
                [b'=', b'\n', rest @ ..] if !soft_break_at(rest) => Some((Decoded::Nothing, 2)),
                [b'=', hi, lo, ..] => Some((Decoded::Byte(hex_value(&[*hi, *lo])? as u8), 3)),
                _ => None,
            },
            Escapes::Html => html_reference(text),
            Escapes::Backslash => backslash_escape(text),
            Escapes::HexPairs => hex_pair(text),
            // One break at a time, as with soft breaks: a secret takes at most five bytes a byte.
            Escapes::LineBreaks => match line_break_at(text) {
                Some(len) if line_break_at(&text[len..]).is_none() => Some((Decoded::Nothing, len)),
                _ => None,
            },
        }
    }

    /// `text` decoded, and for each decoded byte the span of `text` it came from.
    pub fn decode(self, text: &[u8]) -> (Vec<u8>, Vec<Range<usize>>) {
        let mut decoded = Vec::with_capacity(text.len());
        let mut spans = Vec::with_capacity(text.len());
        let mut at = 0;
        while at < text.len() {
            match self.escape_at(&text[at..]) {
                Some((what, len)) => {
                    let mut buffer = [0u8; 4];
                    let bytes: &[u8] = match what {
                        Decoded::Byte(b) => {
                            buffer[0] = b;
                            &buffer[..1]
                        }
                        Decoded::Char(c) => c.encode_utf8(&mut buffer).as_bytes(),
                        Decoded::Nothing => &[],
                    };
                    for &b in bytes {
                        decoded.push(b);
                        spans.push(at..at + len);
                    }
                    at += len;
                }
                None => {
                    decoded.push(text[at]);
                    spans.push(at..at + 1);
                    at += 1;
                }
            }
        }
        (decoded, spans)
    }
}

/// Whether `text` starts with a quoted-printable soft line break.
fn soft_break_at(text: &[u8]) -> bool {
    matches!(text, [b'=', b'\r', b'\n', ..] | [b'=', b'\n', ..])
}

/// The length of the line break `text` starts with, if it does ([`Escapes::LineBreaks`]).
fn line_break_at(text: &[u8]) -> Option<usize> {
    match text {
        [b'\r', b'\n', ..] => Some(2),
        [b'\n' | b'\r', ..] => Some(1),
        [b'\\', b'r', b'\\', b'n', ..] => Some(4),
        [b'\\', b'n' | b'r', ..] => Some(2),
        _ => None,
    }
}

/// What one escape stands for: a byte (percent escapes, which may be half a UTF-8 sequence), a
/// character, or nothing (a quoted-printable soft line break).
enum Decoded {
    Byte(u8),
    Char(char),
    Nothing,
}

fn hex_value(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

/// The HTML character reference at the start of `text`.
fn html_reference(text: &[u8]) -> Option<(Decoded, usize)> {
    let rest = text.strip_prefix(b"&")?;
    if let Some(number) = rest.strip_prefix(b"#") {
        let (hex, digits_from) = match number.first() {
            Some(b'x' | b'X') => (true, 1),
            _ => (false, 0),
        };
        let digits = &number[digits_from..];
        let count = digits.iter().take_while(|b| if hex { b.is_ascii_hexdigit() } else { b.is_ascii_digit() }).count();
        // Leading zeros are allowed, so up to ten digits are read (a longer run is not decoded).
        if count == 0 || count > 10 {
            return None;
        }
        let text_digits = std::str::from_utf8(&digits[..count]).ok()?;
        let code = u32::from_str_radix(text_digits, if hex { 16 } else { 10 }).ok()?;
        let semicolon = usize::from(digits.get(count) == Some(&b';'));
        return Some((Decoded::Char(char::from_u32(code)?), 2 + digits_from + count + semicolon));
    }
    for (name, c) in [("amp", '&'), ("lt", '<'), ("gt", '>'), ("quot", '"'), ("apos", '\'')] {
        if rest.starts_with(name.as_bytes()) {
            let semicolon = usize::from(rest.get(name.len()) == Some(&b';'));
            return Some((Decoded::Char(c), 1 + name.len() + semicolon));
        }
    }
    None
}

/// Whether `text` holds four separated hex pairs in a row (`4b:33:79:26`): the least of a secret
/// (four bytes) written so. Most text holds none, and is not decoded as hex at all.
fn holds_separated_hex(text: &[u8]) -> bool {
    let mut at = 0;
    let mut in_a_row = 0;
    while at < text.len() {
        match hex_pair(&text[at..]) {
            Some((_, len)) if at == 0 || !text[at - 1].is_ascii_hexdigit() => {
                in_a_row += 1;
                if in_a_row == 4 {
                    return true;
                }
                at += len;
                if len == 2 {
                    in_a_row = 0;
                }
            }
            _ => {
                in_a_row = 0;
                at += 1;
            }
        }
    }
    false
}

/// The separated hex pair at the start of `text` (see [`Escapes::HexPairs`]).
fn hex_pair(text: &[u8]) -> Option<(Decoded, usize)> {
    let prefix = if matches!(text, [b'0', b'x' | b'X', ..]) { 2 } else { 0 };
    let pair = text.get(prefix..prefix + 2)?;
    if text.get(prefix + 2).is_some_and(u8::is_ascii_hexdigit) {
        return None;
    }
    let byte = hex_value(pair)? as u8;
    let mut len = prefix + 2;
    if matches!(text.get(len), Some(b':' | b'-' | b',' | b'.')) {
        len += 1;
    }
    if text.get(len) == Some(&b' ') {
        len += 1;
    }
    Some((Decoded::Byte(byte), len))
}

/// The backslash escape at the start of `text`.
fn backslash_escape(text: &[u8]) -> Option<(Decoded, usize)> {
    let rest = text.strip_prefix(b"\\")?;
    let unit = |at: usize| rest.get(at..at + 5).filter(|u| u[0] == b'u').and_then(|u| hex_value(&u[1..]));
    match rest.first()? {
        // `\u{4B}`, as JavaScript, Rust and Swift write any code point.
        b'u' if rest.get(1) == Some(&b'{') => {
            let digits = rest.get(2..)?.iter().take(7).position(|b| *b == b'}').filter(|n| (1..=6).contains(n))?;
            let code = hex_value(&rest[2..2 + digits])?;
            Some((Decoded::Char(char::from_u32(code)?), 4 + digits))
        }
        b'u' => {
            let first = unit(0)?;
            if (0xD800..0xDC00).contains(&first)
                && rest.get(5) == Some(&b'\\')
                && let Some(second) = unit(6).filter(|s| (0xDC00..0xE000).contains(s))
            {
                let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                return Some((Decoded::Char(char::from_u32(code)?), 12));
            }
            Some((Decoded::Char(char::from_u32(first)?), 6))
        }
        b'x' => Some((Decoded::Char(char::from_u32(hex_value(rest.get(1..3)?)?)?), 4)),
        b'0'..=b'3' => {
            let digits = rest.get(..3).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)))?;
            Some((Decoded::Byte(digits.iter().fold(0, |byte, digit| byte * 8 + (digit - b'0'))), 4))
        }
        b'n' => Some((Decoded::Char('\n'), 2)),
        b't' => Some((Decoded::Char('\t'), 2)),
        b'r' => Some((Decoded::Char('\r'), 2)),
        &b if b.is_ascii_punctuation() || b == b' ' => Some((Decoded::Char(b as char), 2)),
        _ => None,
    }
}

/// The spans of `text` that, decoded by any scheme or by two escape schemes in turn, hold one of
/// `needles` (each at least four bytes) in any ASCII case, merged and in order.
///
/// Text is decoded in [`windows`], each reaching on by the longest a needle can take escaped.
pub fn spans_holding(text: &[u8], needles: &[String]) -> Vec<Range<usize>> {
    let needles: Vec<Vec<u8>> =
        needles.iter().filter(|n| n.len() >= 4).map(|n| n.as_bytes().to_ascii_lowercase()).collect();
    let Some(reach) = needles.iter().map(|n| n.len() * MAX_TWICE_ESCAPED_LEN).max() else { return Vec::new() };
    let mut found: Vec<Range<usize>> = Vec::new();
    for (start, window) in windows(text, reach) {
        let mut find = |decoded: &mut Vec<u8>, span_of: &dyn Fn(Range<usize>) -> Range<usize>| {
            // ASCII case changes no byte's place: spans stay right.
            decoded.make_ascii_lowercase();
            find_in_window(decoded, &needles, start, span_of, &mut found);
        };
        find(&mut window.to_vec(), &|span| span);
        for scheme in Escapes::ALL.into_iter().filter(|s| s.present_in(window)) {
            let (mut once, spans) = scheme.decode(window);
            if once == window {
                continue;
            }
            let span_of = |at: Range<usize>| spans[at.start].start..spans[at.end - 1].end;
            // Escaped twice (`%254B`, `&amp;#75;`, a form field holding a JSON string): the
            // escape schemes again, on what the first decoded.
            for again in Escapes::ALL.into_iter().filter(|s| *s != Escapes::HexPairs && s.present_in(&once)) {
                let (mut twice, inner) = again.decode(&once);
                if twice != once {
                    find(&mut twice, &|at| span_of(inner[at.start].start..inner[at.end - 1].end));
                }
            }
            find(&mut once, &span_of);
        }
    }
    merged(found)
}

/// The spans of `text` that hold one of `needles` (exactly, each at least four bytes), as written
/// or with its line breaks left out ([`Escapes::LineBreaks`]), merged and in order: a secret's
/// encoded forms, whole or wrapped in lines, which no escape scheme decodes back to the secret.
pub fn spans_of_forms(text: &[u8], needles: &[String]) -> Vec<Range<usize>> {
    let needles: Vec<&[u8]> = needles.iter().filter(|n| n.len() >= 4).map(|n| n.as_bytes()).collect();
    let Some(reach) = needles.iter().map(|n| n.len() * 5).max() else { return Vec::new() };
    let mut found = Vec::new();
    for (start, window) in windows(text, reach) {
        if Escapes::LineBreaks.present_in(window) {
            let (joined, spans) = Escapes::LineBreaks.decode(window);
            let span_of = |at: Range<usize>| spans[at.start].start..spans[at.end - 1].end;
            find_in_window(&joined, &needles, start, &span_of, &mut found);
        } else {
            find_in_window(window, &needles, start, &|span| span, &mut found);
        }
    }
    merged(found)
}

/// `text` in windows of [`WINDOW`] bytes, each with where it starts, reaching on by `reach` bytes
/// (the most text a needle can take), so every span lies whole in the window where it starts. A
/// window may start inside an escape; what it then reads as plain bytes ends with that escape,
/// before any span that starts in the window (but for a line break written `\r\n`, whose `r`
/// may begin one: a span then takes one byte more than it needs).
fn windows(text: &[u8], reach: usize) -> impl Iterator<Item = (usize, &[u8])> {
    (0..text.len()).step_by(WINDOW).map(move |start| (start, &text[start..text.len().min(start + WINDOW + reach)]))
}

/// Adds to `found` where each of `needles` occurs in `decoded` (a window, starting at `start`,
/// decoded), as the span of the window's text (`span_of`) it was decoded from; only spans that
/// start in this window, not in the reach the next one starts in.
fn find_in_window<N: AsRef<[u8]>>(
    decoded: &[u8],
    needles: &[N],
    start: usize,
    span_of: &dyn Fn(Range<usize>) -> Range<usize>,
    found: &mut Vec<Range<usize>>,
) {
    for needle in needles {
        let needle = needle.as_ref();
        for at in memchr::memmem::find_iter(decoded, needle) {
            let span = span_of(at..at + needle.len());
            if span.start < WINDOW {
                found.push(start + span.start..start + span.end);
            }
        }
    }
}

/// `spans` in order, those that overlap or touch made one.
fn merged(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// `text` with each of `spans` (in order, not overlapping) replaced by `with`.
pub fn replace_spans(text: &[u8], spans: &[Range<usize>], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        out.extend_from_slice(&text[at..span.start]);
        out.extend_from_slice(with);
        at = span.end;
    }
    out.extend_from_slice(&text[at..]);
    out
}

/// The user and password written into `url` (`user:pass@host`), percent-decoded; `None` when it
/// holds neither.
pub fn url_credentials(url: &reqwest::Url) -> Option<(String, String)> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    Some((percent_decode(url.username()), percent_decode(url.password().unwrap_or(""))))
}

/// `text` with its percent escapes decoded (invalid UTF-8 replaced).
pub fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(scheme: Escapes, text: &str) -> String {
        String::from_utf8(scheme.decode(text.as_bytes()).0).unwrap()
    }

    #[test]
    fn each_scheme_decodes_its_escapes_and_leaves_the_rest() {
        assert_eq!(decoded(Escapes::Percent, "a%2Bb%2fc+d%zz%"), "a+b/c d%zz%");
        assert_eq!(decoded(Escapes::QuotedPrintable, "a=3Db=3d=\r\nc=\nd==zz="), "a=b=cd==zz=");
        assert_eq!(decoded(Escapes::QuotedPrintable, "a=\n=\nb"), "a=\nb", "no two soft breaks in a row");
        assert!(!Escapes::QuotedPrintable.present_in(b"a=1&b==zz&c="), "a query string holds no escape");
        assert_eq!(decoded(Escapes::Html, "&#75;&#x33;y&amp;&lt&#0000000075;&bogus;&#;"), "K3y&<K&bogus;&#;");
        assert_eq!(decoded(Escapes::Backslash, r#"\u004B3\x79\/\"\n\uD83D\uDE00\q\u12"#), "K3y/\"\n😀\\q\\u12");
        assert_eq!(decoded(Escapes::Backslash, r"\u{4B}\u{33}y\u{}\u{1234567}"), r"K3y\u{}\u{1234567}");
        assert_eq!(decoded(Escapes::Backslash, r"\113\063y\0\08\477"), "K3y\\0\\08\\477", "three octal digits, to 377");
    }

    #[test]
    fn a_secret_across_a_window_edge_is_found_once() {
        let needle = "K3y&Secret".to_string();
        let escaped = "K3y&amp;Secret";
        for offset in [WINDOW - 20, WINDOW - 5, WINDOW - 1, WINDOW, WINDOW + 3] {
            let mut text = "a".repeat(offset);
            text.push_str(escaped);
            text.push_str(&"b".repeat(50));
            let spans = spans_holding(text.as_bytes(), std::slice::from_ref(&needle));
            assert_eq!(spans, vec![offset..offset + escaped.len()], "at {offset}");
        }
        assert_eq!(decoded(Escapes::Backslash, r"\x+4 \u+04B"), r"\x+4 \u+04B", "only hex digits are hex");
    }

    /// A form wrapped in lines is found whole, across a window's edge too; two breaks in a row
    /// are text, as no encoder writes them inside what it wraps.
    #[test]
    fn a_form_wrapped_in_lines_is_found_where_it_stood() {
        let needle = "c2tfbGl2ZV9SMjF4".to_string();
        for wrapped in [
            "c2tfbGl2ZV9SMjF4",
            "c2tfbGl2\nZV9SMjF4",
            "c2tfbGl2\r\nZV9SMjF4",
            "c2tfbGl2\\nZV9SMjF4",
            "c\n2\nt\nfbGl2ZV9SMjF4",
        ] {
            for offset in [0, WINDOW - 9, WINDOW] {
                let text = format!("{}{wrapped}\n==", "a".repeat(offset));
                let spans = spans_of_forms(text.as_bytes(), std::slice::from_ref(&needle));
                assert_eq!(spans, vec![offset..offset + wrapped.len()], "{wrapped:?} at {offset}");
            }
        }
        assert!(spans_of_forms(b"c2tfbGl2\n\nZV9SMjF4", std::slice::from_ref(&needle)).is_empty());
        assert!(spans_of_forms(b"c2tfbGl2 ZV9SMjF4", &[needle]).is_empty());
    }

    #[test]
    fn a_secret_escaped_in_part_is_found_where_it_stood() {
        let needles = vec!["K3y&Secret".to_string()];
        for (text, left) in [
            ("x=K3y&amp;Secret!", "x=[r]!"),
            ("x=&#75;3y&Secr&#x65;t!", "x=[r]!"),
            (r#"{"k": "\u004b3y\u0026Secret"}"#, r#"{"k": "[r]"}"#),
            ("x=K3y%26Se%63ret!", "x=[r]!"),
            ("K3y&amp;Secret and K3y%26Secret", "[r] and [r]"),
            ("nothing here &amp; 100%", "nothing here &amp; 100%"),
            // Escaped twice: percent, HTML (`html.escape` twice), HTML then percent.
            ("x=K3y%2526Secret!", "x=[r]!"),
            ("x=&amp;#75;3y&amp;amp;Secret!", "x=[r]!"),
            ("x=K3y&#37;26Secret!", "x=[r]!"),
            // Hex with separators, and a key sent back in another case (a header name).
            ("k=4b:33:79:26:53:65:63:72:65:74;", "k=[r];"),
            ("k=0x4B, 0x33, 0x79, 0x26, 0x53, 0x65, 0x63, 0x72, 0x65, 0x74}", "k=[r]}"),
            ("k3y&secret: 1", "[r]: 1"),
            ("K3Y&SECRET", "[r]"),
        ] {
            let spans = spans_holding(text.as_bytes(), &needles);
            let out = replace_spans(text.as_bytes(), &spans, b"[r]");
            assert_eq!(String::from_utf8(out).unwrap(), left, "{text}");
        }
    }
}
