//! What a run leaves on its document: per-call results as inlay hints (until the next edit) and
//! failure diagnostics (until the next good run or an edit of their lines; edits elsewhere move
//! them). A run stops at its first failure, so its diagnostics — the failure and the call it is
//! attributed to — describe one thing and go together: fixing the failing line also takes the
//! `attributed-call` warning on the call away.

use std::path::Path;

use crate::analysis;
use crate::config::Config;
use crate::diagnostic::Diagnostic;
use crate::runtime::{RunOutcome, TraceCall};
use crate::text::{ByteRange, LineIndex};
use crate::toolset::Catalog;

/// One call's result at its place in the program.
#[derive(Debug, Clone, PartialEq)]
pub struct CallHint {
    /// Byte offset of the end of the call's statement.
    pub offset: usize,
    /// Byte offset of the start of the call's statement (where a "Re-run from here" lens goes).
    pub statement_start: usize,
    /// The trace id of the first call made there.
    pub first_call: u32,
    pub label: String,
    pub tooltip: String,
}

/// A run diagnostic with what it needs to survive edits elsewhere: the text of its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkedDiagnostic {
    pub diagnostic: Diagnostic,
    /// Byte range of the whole lines the diagnostic covers, and their text.
    pub lines: ByteRange,
    pub line_number: usize,
    pub line_text: String,
}

/// What a run leaves on its document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMarks {
    /// The document version the run ran; hints show only while it holds.
    pub version: i32,
    pub hints: Vec<CallHint>,
    pub diagnostics: Vec<MarkedDiagnostic>,
}

impl RunMarks {
    pub fn is_empty(&self) -> bool {
        self.hints.is_empty() && self.diagnostics.is_empty()
    }

    /// After a ranged edit (`range` of `before` replaced by `inserted`): hints go; when the edit
    /// touches the lines of one of the failure's diagnostics, they all go; else they move with
    /// the text.
    pub fn edited(&mut self, before: &str, range: ByteRange, inserted: &str) {
        self.hints.clear();
        if self.diagnostics.iter().any(|marked| range.start <= marked.lines.end && range.end >= marked.lines.start) {
            self.diagnostics.clear();
            return;
        }
        let delta = inserted.len() as isize - (range.end - range.start) as isize;
        let removed_lines = before.get(range.start..range.end).map_or(0, |r| r.matches('\n').count()) as isize;
        let line_delta = inserted.matches('\n').count() as isize - removed_lines;
        self.diagnostics.retain_mut(|marked| {
            if range.end < marked.lines.start {
                let shift = |o: usize| (o as isize + delta).max(0) as usize;
                marked.lines = ByteRange::new(shift(marked.lines.start), shift(marked.lines.end));
                let d = &mut marked.diagnostic;
                d.range = ByteRange::new(shift(d.range.start), shift(d.range.end));
                marked.line_number = (marked.line_number as isize + line_delta).max(0) as usize;
            }
            true
        });
    }

    /// After the whole text was replaced: the diagnostics stay when all their lines are unchanged
    /// at the same line numbers, else they all go.
    pub fn replaced(&mut self, after: &str) {
        self.hints.clear();
        let index = LineIndex::new(after);
        let unchanged = |marked: &MarkedDiagnostic| {
            let start = index.line_start(marked.line_number)?;
            let end = start + marked.line_text.len();
            (after.get(start..end) == Some(marked.line_text.as_str())).then_some(start)
        };
        let starts: Option<Vec<usize>> = self.diagnostics.iter().map(unchanged).collect();
        let Some(starts) = starts else {
            self.diagnostics.clear();
            return;
        };
        for (marked, start) in self.diagnostics.iter_mut().zip(starts) {
            let offset = |o: usize| start + o.saturating_sub(marked.lines.start);
            let d = &mut marked.diagnostic;
            d.range = ByteRange::new(offset(d.range.start), offset(d.range.end));
            marked.lines = ByteRange::new(start, start + marked.line_text.len());
        }
    }

    /// The marks of a finished run on the text it ran: the program at `path`, analysed against the
    /// workspace's catalog and configuration (those of the session's snapshot, which this file does
    /// not name: the session holds the marks).
    pub fn of(
        version: i32,
        text: &str,
        path: &Path,
        catalog: &Catalog,
        config: &Config,
        outcome: &RunOutcome,
    ) -> RunMarks {
        let index = LineIndex::new(text);
        let diagnostics = outcome.diagnostics.iter().map(|d| mark(d.clone(), text, &index)).collect();
        let tree = analysis::parse::parse(text);
        let result = analysis::analyze(path, text, &tree, catalog, &config.diagnostics);
        let mut by_offset: Vec<(usize, usize, Vec<&TraceCall>)> = Vec::new();
        for call in &outcome.trace.calls {
            let Some(line) = call.line else { continue };
            let line0 = line.saturating_sub(1) as usize;
            let analysed = result
                .calls
                .iter()
                .filter(|c| index.line_of(c.range.start) <= line0 && line0 <= index.line_of(c.range.end))
                .min_by_key(|c| (c.tool.is_none_or(|t| t.id() != call.tool), c.range.end - c.range.start));
            let (start, offset) = match analysed {
                Some(c) => (c.statement_range.start, c.statement_range.end),
                None => match index.line_start(line0) {
                    Some(start) => (start, text[start..].find('\n').map(|i| start + i).unwrap_or(text.len())),
                    None => continue,
                },
            };
            match by_offset.iter_mut().find(|(o, _, _)| *o == offset) {
                Some((_, _, calls)) => calls.push(call),
                None => by_offset.push((offset, start, vec![call])),
            }
        }
        let hints = by_offset
            .into_iter()
            .map(|(offset, statement_start, calls)| CallHint {
                offset,
                statement_start,
                first_call: calls.iter().map(|c| c.id).min().unwrap_or(0),
                label: hint_label(&calls),
                tooltip: calls.iter().map(|c| c.summary()).collect::<Vec<_>>().join("\n"),
            })
            .collect();
        RunMarks { version, hints, diagnostics }
    }
}

pub fn mark(diagnostic: Diagnostic, text: &str, index: &LineIndex) -> MarkedDiagnostic {
    let first = index.line_of(diagnostic.range.start.min(text.len()));
    let last = index.line_of(diagnostic.range.end.min(text.len()));
    let start = index.line_start(first).unwrap_or(0);
    let end =
        index.line_start(last).map(|s| text[s..].find('\n').map(|i| s + i).unwrap_or(text.len())).unwrap_or(text.len());
    MarkedDiagnostic {
        diagnostic,
        lines: ByteRange::new(start, end),
        line_number: first,
        line_text: text[start..end].to_string(),
    }
}

/// `✓ 200 · 84 ms`, `✗ 404`, `✓ 200 · replayed`, `✓ 200 · 12 ms ×5 (1 failed)`.
pub fn hint_label(calls: &[&TraceCall]) -> String {
    let Some(last) = calls.last() else { return String::new() };
    let timing = if last.replayed { "replayed".to_string() } else { format!("{} ms", last.duration_ms) };
    let mut label = match (last.ok, last.status) {
        (true, Some(status)) => format!("✓ {status} · {timing}"),
        (true, None) => format!("✓ {timing}"),
        (false, Some(status)) => format!("✗ {status}"),
        (false, None) => "✗ failed".to_string(),
    };
    if calls.len() > 1 {
        label.push_str(&format!(" ×{}", calls.len()));
        let failed = calls.iter().filter(|c| !c.ok).count();
        if failed > 0 && last.ok {
            label.push_str(&format!(" ({failed} failed)"));
        }
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn call(id: u32, ok: bool, status: Option<u16>, ms: u64) -> TraceCall {
        TraceCall {
            id,
            tool: "t.a".into(),
            arguments: json!({}),
            ok,
            status,
            response: Value::Null,
            error: None,
            duration_ms: ms,
            line: Some(1),
            replayed: false,
        }
    }

    #[test]
    fn hint_labels() {
        assert_eq!(hint_label(&[&call(1, true, Some(200), 84)]), "✓ 200 · 84 ms");
        assert_eq!(hint_label(&[&call(1, false, Some(404), 3)]), "✗ 404");
        assert_eq!(hint_label(&[&call(1, true, None, 5)]), "✓ 5 ms");
        assert_eq!(hint_label(&[&call(1, false, None, 5)]), "✗ failed");
        let (a, b) = (call(1, false, Some(500), 1), call(2, true, Some(200), 9));
        assert_eq!(hint_label(&[&a, &b]), "✓ 200 · 9 ms ×2 (1 failed)");
    }

    #[test]
    fn marks_follow_edits_elsewhere_and_go_with_edits_of_their_line() {
        let text = "a = 1\nb = x[\"k\"]\nc = 3\n";
        let index = LineIndex::new(text);
        let at = text.find("x[").unwrap();
        let d = Diagnostic::error("p.py", ByteRange::new(at, at + 6), "runtime-error", "KeyError: 'k'");
        let marks = RunMarks { version: 1, hints: vec![], diagnostics: vec![mark(d, text, &index)] };

        // An edit on the first line moves it.
        let mut moved = marks.clone();
        moved.edited(text, ByteRange::new(4, 5), "1\n\n");
        assert_eq!(moved.diagnostics[0].line_number, 3);
        assert_eq!(moved.diagnostics[0].diagnostic.range, ByteRange::new(at + 2, at + 8));
        // An edit after it leaves it.
        let mut kept = marks.clone();
        kept.edited(text, ByteRange::new(text.len() - 2, text.len() - 1), "4");
        assert_eq!(kept.diagnostics[0].diagnostic.range, ByteRange::new(at, at + 6));
        // An edit of its line removes it.
        let mut gone = marks.clone();
        gone.edited(text, ByteRange::new(at + 3, at + 4), "j");
        assert!(gone.diagnostics.is_empty());

        // A full replacement keeps it only where its line is unchanged.
        let mut same = marks.clone();
        same.replaced("a = 2\nb = x[\"k\"]\n");
        assert_eq!(same.diagnostics.len(), 1);
        let mut changed = marks;
        changed.replaced("a = 2\nb = y\n");
        assert!(changed.diagnostics.is_empty());
    }

    /// The failure and the call it is attributed to are one finding: fixing the failing line
    /// takes the warning on the call away too, by a ranged edit or a whole-text replacement.
    #[test]
    fn a_failure_and_its_attribution_go_together() {
        let text = "found = tmdb.search_person(query='x')\nname = found['nmae']\n";
        let index = LineIndex::new(text);
        let key = text.find("found['nmae']").unwrap();
        let failure = Diagnostic::error("p.py", ByteRange::new(key, key + 13), "runtime-error", "KeyError: 'nmae'");
        let call = Diagnostic::warning("p.py", ByteRange::new(8, 26), "attributed-call", "the KeyError came from here");
        let marks = RunMarks {
            version: 1,
            hints: vec![],
            diagnostics: vec![mark(failure, text, &index), mark(call, text, &index)],
        };
        let typo = text.find("nmae").unwrap();
        let mut fixed = marks.clone();
        fixed.edited(text, ByteRange::new(typo, typo + 4), "name");
        assert!(fixed.diagnostics.is_empty(), "{:?}", fixed.diagnostics);
        let mut replaced = marks.clone();
        replaced.replaced(&text.replace("nmae", "name"));
        assert!(replaced.diagnostics.is_empty(), "{:?}", replaced.diagnostics);
        // An edit of neither line keeps both where they are.
        let mut elsewhere = marks;
        elsewhere.edited(text, ByteRange::new(text.len(), text.len()), "print(name)\n");
        assert_eq!(elsewhere.diagnostics.len(), 2);
    }
}
