//! Core ↔ LSP: every position goes through [`LineIndex`] with the negotiated encoding (UTF-8 when
//! the client offers it, else UTF-16); diagnostics, completions, hovers, signatures and symbols
//! are translated here and nowhere else.

use std::path::Path;

use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types as lsp;

use crate::analysis::ide;
use crate::diagnostic::{Diagnostic, Severity};
use crate::text::ByteRange;
use crate::text::{Encoding, LineIndex, Position};

pub const SOURCE: &str = "chainsmith";

/// UTF-8 when the client lists it in `general.positionEncodings`, else UTF-16 (the LSP default).
pub fn negotiate_encoding(caps: &lsp::ClientCapabilities) -> Encoding {
    let offered = caps.general.as_ref().and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(kinds) if kinds.contains(&lsp::PositionEncodingKind::UTF8) => Encoding::Utf8,
        _ => Encoding::Utf16,
    }
}

pub fn encoding_kind(encoding: Encoding) -> lsp::PositionEncodingKind {
    match encoding {
        Encoding::Utf8 => lsp::PositionEncodingKind::UTF8,
        Encoding::Utf16 => lsp::PositionEncodingKind::UTF16,
    }
}

pub fn position(index: &LineIndex, text: &str, offset: usize, encoding: Encoding) -> lsp::Position {
    let p = index.position(text, offset, encoding);
    lsp::Position::new(p.line, p.character)
}

pub fn range(index: &LineIndex, text: &str, bytes: ByteRange, encoding: Encoding) -> lsp::Range {
    let start = position(index, text, bytes.start, encoding);
    let end = position(index, text, bytes.end.max(bytes.start), encoding);
    lsp::Range::new(start, end)
}

/// Byte offset of a client position (clamped into the text).
pub fn offset(index: &LineIndex, text: &str, position: lsp::Position, encoding: Encoding) -> usize {
    index.offset(text, Position { line: position.line, character: position.character }, encoding)
}

/// Byte range of a client range; a reversed range is put in order.
pub fn byte_range(index: &LineIndex, text: &str, range: lsp::Range, encoding: Encoding) -> ByteRange {
    let a = offset(index, text, range.start, encoding);
    let b = offset(index, text, range.end, encoding);
    ByteRange::new(a.min(b), a.max(b))
}

pub fn severity(severity: Severity) -> lsp::DiagnosticSeverity {
    match severity {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Information => lsp::DiagnosticSeverity::INFORMATION,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    }
}

pub fn diagnostic(d: &Diagnostic, index: &LineIndex, text: &str, encoding: Encoding) -> lsp::Diagnostic {
    lsp::Diagnostic {
        range: range(index, text, d.range, encoding),
        severity: Some(severity(d.severity)),
        code: Some(lsp::NumberOrString::String(d.code.to_string())),
        code_description: None,
        source: Some(SOURCE.to_string()),
        message: d.message.clone(),
        related_information: None,
        tags: None,
        data: None,
    }
}

pub fn markdown(value: String) -> lsp::MarkupContent {
    lsp::MarkupContent { kind: lsp::MarkupKind::Markdown, value }
}

pub fn completion_kind(kind: ide::CompletionKind) -> lsp::CompletionItemKind {
    match kind {
        ide::CompletionKind::Toolset => lsp::CompletionItemKind::MODULE,
        ide::CompletionKind::Tool => lsp::CompletionItemKind::FUNCTION,
        ide::CompletionKind::Argument => lsp::CompletionItemKind::PROPERTY,
        ide::CompletionKind::EnumValue => lsp::CompletionItemKind::ENUM_MEMBER,
        ide::CompletionKind::Key => lsp::CompletionItemKind::FIELD,
        ide::CompletionKind::Endpoint => lsp::CompletionItemKind::VALUE,
        ide::CompletionKind::HeldValue => lsp::CompletionItemKind::VARIABLE,
        ide::CompletionKind::ProducingCall => lsp::CompletionItemKind::FUNCTION,
    }
}

/// A completion item replacing `item.replace`; snippets become plain text for clients without
/// snippet support.
pub fn completion_item(
    item: &ide::Completion,
    index: &LineIndex,
    text: &str,
    encoding: Encoding,
    snippets: bool,
) -> lsp::CompletionItem {
    let (new_text, format) = if item.is_snippet && snippets {
        (item.insert_text.clone(), lsp::InsertTextFormat::SNIPPET)
    } else if item.is_snippet {
        (strip_snippet(&item.insert_text), lsp::InsertTextFormat::PLAIN_TEXT)
    } else {
        (item.insert_text.clone(), lsp::InsertTextFormat::PLAIN_TEXT)
    };
    lsp::CompletionItem {
        label: item.label.clone(),
        kind: Some(completion_kind(item.kind)),
        detail: (!item.detail.is_empty()).then(|| item.detail.clone()),
        documentation: item.documentation.clone().map(|d| lsp::Documentation::MarkupContent(markdown(d))),
        sort_text: (!item.sort_text.is_empty()).then(|| item.sort_text.clone()),
        insert_text_format: Some(format),
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
            range: range(index, text, item.replace, encoding),
            new_text,
        })),
        data: item.tool_id.clone().map(serde_json::Value::String),
        label_details: label_details(item),
        filter_text: item.alias.as_ref().map(|alias| format!("{} {alias}", item.label)),
        ..Default::default()
    }
}

/// Beside a tool's name in the list: its parameters right after it (`(query, page?)`) and, at the
/// right, what it answers (`→ object {page, results, …}`, as `ide::signature_line` says it) — or
/// the `operationId` alias when that is what the typed word matched.
fn label_details(item: &ide::Completion) -> Option<lsp::CompletionItemLabelDetails> {
    if item.kind != ide::CompletionKind::Tool {
        return None;
    }
    let (parameters, answer) = item.detail.split_once(" → ").unwrap_or((item.detail.as_str(), ""));
    let description = match &item.alias {
        Some(alias) if item.via_alias => Some(alias.clone()),
        _ => (!answer.is_empty()).then(|| format!("→ {answer}")),
    };
    Some(lsp::CompletionItemLabelDetails {
        detail: (!parameters.is_empty()).then(|| parameters.to_string()),
        description,
    })
}

/// The text a snippet inserts with every placeholder at its default: `${1:query}` → `query`,
/// `$1` / `$0` → nothing, `\$` → `$`.
pub fn strip_snippet(snippet: &str) -> String {
    let mut out = String::new();
    let mut chars = snippet.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(&next) = chars.peek()
                    && matches!(next, '$' | '}' | '\\')
                {
                    out.push(next);
                    chars.next();
                } else {
                    out.push('\\');
                }
            }
            '$' => match chars.peek() {
                Some(d) if d.is_ascii_digit() => {
                    while chars.peek().is_some_and(char::is_ascii_digit) {
                        chars.next();
                    }
                }
                Some('{') => {
                    chars.next();
                    while chars.peek().is_some_and(char::is_ascii_digit) {
                        chars.next();
                    }
                    match chars.next() {
                        Some(':') => {
                            // The default, up to the matching brace (nested placeholders flattened).
                            let inner: String = take_braced(&mut chars);
                            out.push_str(&strip_snippet(&inner));
                        }
                        Some('|') => {
                            // A choice: its first option.
                            let inner: String = take_braced(&mut chars);
                            let first = inner.trim_end_matches('|').split(',').next().unwrap_or("");
                            out.push_str(first);
                        }
                        _ => {}
                    }
                }
                _ => out.push('$'),
            },
            other => out.push(other),
        }
    }
    out
}

/// Everything up to the `}` that closes an already opened brace.
fn take_braced(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut depth = 1;
    let mut inner = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                inner.push(c);
                if let Some(n) = chars.next() {
                    inner.push(n);
                }
            }
            '{' => {
                depth += 1;
                inner.push(c);
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
                inner.push(c);
            }
            _ => inner.push(c),
        }
    }
    inner
}

pub fn hover(h: ide::Hover, index: &LineIndex, text: &str, encoding: Encoding) -> lsp::Hover {
    lsp::Hover {
        contents: lsp::HoverContents::Markup(markdown(h.markdown)),
        range: Some(range(index, text, h.range, encoding)),
    }
}

/// Offsets of `bytes` inside `label`, in the negotiated encoding's code units.
fn label_offsets(label: &str, bytes: ByteRange, encoding: Encoding) -> Option<[u32; 2]> {
    let start = bytes.start.min(label.len());
    let end = bytes.end.clamp(start, label.len());
    let (before, inside) = (label.get(..start)?, label.get(start..end)?);
    let units = |s: &str| match encoding {
        Encoding::Utf8 => s.len(),
        Encoding::Utf16 => s.encode_utf16().count(),
    };
    let a = units(before) as u32;
    Some([a, a + units(inside) as u32])
}

pub fn signature_help(s: ide::SignatureHelp, encoding: Encoding, label_offsets_supported: bool) -> lsp::SignatureHelp {
    let parameters = s
        .parameters
        .iter()
        .map(|(bytes, doc)| {
            let label = match label_offsets(&s.label, *bytes, encoding) {
                Some(offsets) if label_offsets_supported => lsp::ParameterLabel::LabelOffsets(offsets),
                _ => lsp::ParameterLabel::Simple(s.label.get(bytes.start..bytes.end).unwrap_or("").to_string()),
            };
            lsp::ParameterInformation {
                label,
                documentation: (!doc.is_empty()).then(|| lsp::Documentation::MarkupContent(markdown(doc.clone()))),
            }
        })
        .collect();
    let active = s.active_parameter.map(|a| a as u32);
    lsp::SignatureHelp {
        signatures: vec![lsp::SignatureInformation {
            label: s.label,
            documentation: (!s.documentation.is_empty())
                .then(|| lsp::Documentation::MarkupContent(markdown(s.documentation))),
            parameters: Some(parameters),
            active_parameter: active,
        }],
        active_signature: Some(0),
        active_parameter: active,
    }
}

pub fn symbol_kind(kind: ide::SymbolKind) -> lsp::SymbolKind {
    match kind {
        ide::SymbolKind::Call => lsp::SymbolKind::METHOD,
        ide::SymbolKind::Variable => lsp::SymbolKind::VARIABLE,
        ide::SymbolKind::Function => lsp::SymbolKind::FUNCTION,
    }
}

/// A flat document symbol; a selection range outside the symbol's range (which clients reject)
/// falls back to the range.
#[allow(deprecated)]
pub fn document_symbol(s: &ide::Symbol, index: &LineIndex, text: &str, encoding: Encoding) -> lsp::DocumentSymbol {
    let selection = if s.range.start <= s.selection_range.start && s.selection_range.end <= s.range.end {
        s.selection_range
    } else {
        s.range
    };
    lsp::DocumentSymbol {
        name: if s.name.is_empty() { "?".into() } else { s.name.clone() },
        detail: (!s.detail.is_empty()).then(|| s.detail.clone()),
        kind: symbol_kind(s.kind),
        tags: None,
        deprecated: None,
        range: range(index, text, s.range, encoding),
        selection_range: range(index, text, selection, encoding),
        children: None,
    }
}

#[allow(deprecated)]
pub fn symbol_information(
    name: String,
    kind: lsp::SymbolKind,
    location: lsp::Location,
    container: Option<String>,
) -> lsp::SymbolInformation {
    lsp::SymbolInformation { name, kind, tags: None, deprecated: None, location, container_name: container }
}

pub fn file_uri(path: &Path) -> Option<lsp::Uri> {
    lsp::Uri::from_file_path(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_flatten_to_their_defaults() {
        assert_eq!(strip_snippet("search_person(query=${1:\"\"})$0"), "search_person(query=\"\")");
        assert_eq!(strip_snippet("f(${1:a}, ${2:b${3:c}})"), "f(a, bc)");
        assert_eq!(strip_snippet("x=${1|movie,tv|}"), "x=movie");
        assert_eq!(strip_snippet("cost \\$5 $1"), "cost $5 ");
    }

    #[test]
    fn label_offsets_follow_the_encoding() {
        let label = "f(é: str, q: int)";
        let q = label.find('q').unwrap();
        let bytes = ByteRange::new(q, q + 6);
        assert_eq!(label_offsets(label, bytes, Encoding::Utf8), Some([q as u32, q as u32 + 6]));
        assert_eq!(label_offsets(label, bytes, Encoding::Utf16), Some([q as u32 - 1, q as u32 + 5]));
    }

    #[test]
    fn diagnostics_carry_code_source_and_severity() {
        let text = "x = \"😀\"; y\n";
        let index = LineIndex::new(text);
        let y = text.find('y').unwrap();
        let d = Diagnostic::warning("p.py", ByteRange::new(y, y + 1), "unknown-key", "m");
        let utf16 = diagnostic(&d, &index, text, Encoding::Utf16);
        assert_eq!(utf16.range.start, lsp::Position::new(0, 10));
        assert_eq!(utf16.code, Some(lsp::NumberOrString::String("unknown-key".into())));
        assert_eq!(utf16.source.as_deref(), Some("chainsmith"));
        assert_eq!(utf16.severity, Some(lsp::DiagnosticSeverity::WARNING));
        let utf8 = diagnostic(&d, &index, text, Encoding::Utf8);
        assert_eq!(utf8.range.start, lsp::Position::new(0, 12));
    }
}
