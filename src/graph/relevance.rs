//! Task-text relevance: BM25 between a task (a query, a docstring) and tool documents (name,
//! category, endpoint, description). Used to rank completions after the graph's weight and, in
//! `graph eval`, to re-rank candidate successors.

use std::collections::{HashMap, HashSet};

use crate::toolset::Tool;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "get", "give", "had", "has", "have", "he", "her", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "just", "me", "my", "of", "on", "one", "or", "our", "please", "she", "show",
    "so", "some", "tell", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "up",
    "us", "was", "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you",
    "your",
];

/// Lower-cased word tokens: camelCase and snake_case split, stop words dropped, plurals folded.
pub fn tokens(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words.into_iter().filter(|w| !STOP_WORDS.contains(&w.as_str())).map(|w| stem(&w)).collect()
}

/// Folds English plurals and a final `e`/`y`, so that singular and plural meet:
/// `movies`, `movie` → `movi`; `companies`, `company` → `compani`; `images` → `imag`; `status` stays.
fn stem(word: &str) -> String {
    let mut w = word.to_string();
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('i');
    } else if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    if w.len() > 3 && w.ends_with('y') {
        w.pop();
        w.push('i');
    } else if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// The text a tool is found by.
pub fn tool_text(tool: &Tool) -> String {
    let mut text = format!("{} {} ", tool.name, tool.category);
    if let Some(path) = &tool.source.path {
        text.push_str(path);
        text.push(' ');
    }
    if let Some(api) = &tool.source.api {
        text.push_str(api);
        text.push(' ');
    }
    text.push_str(&tool.description);
    text
}

/// A BM25 index over documents identified by strings (tool ids).
#[derive(Debug, Clone, Default)]
pub struct Bm25 {
    docs: HashMap<String, (HashMap<String, u32>, usize)>,
    df: HashMap<String, u32>,
    average_len: f64,
}

impl Bm25 {
    pub fn new<'a>(documents: impl IntoIterator<Item = (String, &'a str)>) -> Self {
        let mut index = Bm25::default();
        let mut total = 0usize;
        for (id, text) in documents {
            let words = tokens(text);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for w in &words {
                *tf.entry(w.clone()).or_default() += 1;
            }
            for w in tf.keys() {
                *index.df.entry(w.clone()).or_default() += 1;
            }
            total += words.len();
            index.docs.insert(id, (tf, words.len()));
        }
        index.average_len = if index.docs.is_empty() { 0.0 } else { total as f64 / index.docs.len() as f64 };
        index
    }

    /// An index over tools by id.
    pub fn of_tools<'t>(tools: impl IntoIterator<Item = &'t Tool>) -> Self {
        let texts: Vec<(String, String)> = tools.into_iter().map(|t| (t.id(), tool_text(t))).collect();
        Bm25::new(texts.iter().map(|(id, text)| (id.clone(), text.as_str())))
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The BM25 score of document `id` for `query` (0 for an unknown document).
    pub fn score(&self, query: &str, id: &str) -> f64 {
        let query: HashSet<String> = tokens(query).into_iter().collect();
        self.score_tokens(&query, id)
    }

    /// [`Bm25::score`] with the query already tokenised.
    pub fn score_tokens(&self, query: &HashSet<String>, id: &str) -> f64 {
        let Some((tf, len)) = self.docs.get(id) else { return 0.0 };
        let n = self.docs.len() as f64;
        let mut score = 0.0;
        for word in query {
            let Some(&f) = tf.get(word) else { continue };
            let df = *self.df.get(word).unwrap_or(&0) as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let f = f as f64;
            let norm = 1.0 - B + B * (*len as f64) / self.average_len.max(1.0);
            score += idf * f * (K1 + 1.0) / (f + K1 * norm);
        }
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_and_fold() {
        assert_eq!(tokens("movieCredits search_person"), ["movi", "credit", "search", "person"]);
        assert_eq!(tokens("Who directed the movies of these companies?"), ["directed", "movi", "compani"]);
        assert_eq!(tokens("a movie, a company, images"), ["movi", "compani", "imag"]);
        assert_eq!(tokens("series status"), ["seri", "status"]);
    }

    #[test]
    fn bm25_prefers_the_matching_document() {
        let index = Bm25::new([
            ("a".to_string(), "search for people by name"),
            ("b".to_string(), "search for movies by title"),
            ("c".to_string(), "movie reviews written by users"),
        ]);
        let q = "reviews of the movie Titanic";
        assert!(index.score(q, "c") > index.score(q, "b"));
        assert!(index.score(q, "b") > index.score(q, "a"));
        assert_eq!(index.score(q, "a"), 0.0);
        assert_eq!(index.score(q, "zzz"), 0.0);
    }
}
