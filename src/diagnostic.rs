//! Diagnostics as the core speaks them: byte ranges in a file, a kebab-case code, a severity and
//! optional suggested edits. The CLI renders them as text or JSON, the server converts them to LSP.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::text::ByteRange;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "information",
            Severity::Hint => "hint",
        }
    }
    pub fn parse(s: &str) -> Option<Severity> {
        match s.to_ascii_lowercase().as_str() {
            "error" => Some(Severity::Error),
            "warning" | "warn" => Some(Severity::Warning),
            "information" | "info" => Some(Severity::Information),
            "hint" => Some(Severity::Hint),
            _ => None,
        }
    }
}

/// A replacement the user can apply as a quick fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suggestion {
    pub title: String,
    pub range: ByteRange,
    pub replacement: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub range: ByteRange,
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub suggestions: Vec<Suggestion>,
}

/// A diagnostic read back (from the catalog cache): its code becomes a `&'static str` as the codes
/// chainsmith writes are, each distinct code kept once for the life of the process.
impl<'de> Deserialize<'de> for Diagnostic {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            file: PathBuf,
            range: ByteRange,
            severity: Severity,
            code: String,
            message: String,
            suggestions: Vec<Suggestion>,
        }
        static CODES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
        let stored = Stored::deserialize(deserializer)?;
        let mut codes = CODES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let code = match codes.iter().find(|c| **c == stored.code) {
            Some(known) => *known,
            None => {
                let leaked: &'static str = Box::leak(stored.code.into_boxed_str());
                codes.push(leaked);
                leaked
            }
        };
        Ok(Diagnostic {
            file: stored.file,
            range: stored.range,
            severity: stored.severity,
            code,
            message: stored.message,
            suggestions: stored.suggestions,
        })
    }
}

impl Diagnostic {
    pub fn new(
        file: impl Into<PathBuf>,
        range: ByteRange,
        severity: Severity,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic { file: file.into(), range, severity, code, message: message.into(), suggestions: Vec::new() }
    }
    pub fn error(file: impl Into<PathBuf>, range: ByteRange, code: &'static str, message: impl Into<String>) -> Self {
        Self::new(file, range, Severity::Error, code, message)
    }
    pub fn warning(file: impl Into<PathBuf>, range: ByteRange, code: &'static str, message: impl Into<String>) -> Self {
        Self::new(file, range, Severity::Warning, code, message)
    }
    pub fn with_suggestion(
        mut self,
        title: impl Into<String>,
        range: ByteRange,
        replacement: impl Into<String>,
    ) -> Self {
        self.suggestions.push(Suggestion { title: title.into(), range, replacement: replacement.into() });
        self
    }
}

/// The closest candidate to `word` by edit distance, when it is close enough to be a likely typo.
///
/// Both measures cost the product of the two lengths, so a candidate whose length alone rules it
/// out is not measured: a file may name a megabyte-long key, a program may write one, and every
/// unknown key of a program is compared with every key its schema declares.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut unbounded = usize::MAX;
    did_you_mean_within(word, candidates, &mut unbounded)
}

/// What one analysis of a program may spend on [`did_you_mean_within`]: a character for each
/// one looked at in a candidate ruled out by its length, and the product of the two lengths for
/// each one measured (a few seconds at most). A misspelt tool against a 16,000-tool toolset of
/// 35-character names costs about 30 million, so some sixty of them get suggestions; a program
/// of thousands of unknown keys read from a schema of 200,000 stops getting them instead of
/// taking minutes.
pub const SUGGESTION_WORK: usize = 1_000_000_000;

/// What measuring one candidate costs beyond its character pairs (both measures allocate).
const MEASURE_WORK: usize = 128;

/// What looking at a candidate costs beyond its characters.
const LOOK_WORK: usize = 16;

/// [`did_you_mean`], spending at most `work_left` (see [`SUGGESTION_WORK`]): `None`, and nothing
/// left, when the candidates would cost more.
pub fn did_you_mean_within<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    work_left: &mut usize,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    let word_chars = lower.chars().count();
    let max_distance = (word.len() / 4).max(1);
    // Jaro-Winkler reaches 0.85 only when the longer text is at most four times the shorter
    // (Jaro is at most (2 + shorter / longer) / 3, the prefix bonus at most 0.4 of what is left);
    // Levenshtein is at least the difference in length.
    let may_be_close = |chars: usize| {
        let (short, long) = (chars.min(word_chars), chars.max(word_chars));
        long <= 4 * short + 1 || long - short <= max_distance
    };
    let longest_close = 4 * word_chars + max_distance + 2;
    let mut best: Option<(f64, &'a str)> = None;
    for candidate in candidates {
        let chars = candidate.chars().take(longest_close).count();
        let close_enough = may_be_close(chars);
        let work = if close_enough {
            MEASURE_WORK + word_chars.max(1).saturating_mul(chars.max(1))
        } else {
            LOOK_WORK + chars
        };
        if work > *work_left {
            *work_left = 0;
            return None;
        }
        *work_left -= work;
        if !close_enough {
            continue;
        }
        let candidate_lower = candidate.to_ascii_lowercase();
        let score = strsim::jaro_winkler(&lower, &candidate_lower);
        let distance = strsim::levenshtein(&lower, &candidate_lower);
        let close = score >= 0.85 || distance <= max_distance;
        if close && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_you_mean_finds_a_typo_within_what_it_may_spend() {
        assert_eq!(did_you_mean("titel", ["name", "title", "id"]), Some("title"));
        // A candidate its length rules out is not measured: it costs the characters looked at.
        let mut left = 1_000;
        assert_eq!(did_you_mean_within("titel", ["t".repeat(100_000).as_str()], &mut left), None);
        assert!(left >= 1_000 - LOOK_WORK - 25, "{left}");
        // One measured costs its character pairs and a fixed part: 2 × (128 + 5 × 4 or 5).
        let mut left = 1_000;
        assert_eq!(did_you_mean_within("titel", ["name", "title"], &mut left), Some("title"));
        assert_eq!(left, 1_000 - (MEASURE_WORK + 20) - (MEASURE_WORK + 25));
        // Out of work, no suggestion (not the best of those measured), and none after.
        let mut left = 30;
        assert_eq!(did_you_mean_within("titel", ["name", "title"], &mut left), None);
        assert_eq!(left, 0);
        assert_eq!(did_you_mean_within("titel", ["title"], &mut left), None);
    }
}
