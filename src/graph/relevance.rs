//! Task-text relevance: BM25 between a task (a query, a docstring) and tool documents (name,
//! category, endpoint, description). Used to rank completions after the graph's weight and, in
//! `graph eval`, to re-rank candidate successors.

use std::collections::{HashMap, HashSet};

use crate::textsearch;
use crate::toolset::Tool;

/// Task words as every text search here tokenises them (identifiers split, plurals folded).
pub fn tokens(text: &str) -> Vec<String> {
    textsearch::tokens(text, true)
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

/// A BM25 index over documents identified by strings (tool ids), on [`textsearch::Bm25`].
#[derive(Debug, Clone, Default)]
pub struct Bm25 {
    index: Option<textsearch::Bm25>,
    ids: HashMap<String, usize>,
}

impl Bm25 {
    pub fn new<'a>(documents: impl IntoIterator<Item = (String, &'a str)>) -> Self {
        let mut ids = HashMap::new();
        let mut docs = Vec::new();
        for (id, text) in documents {
            let mut doc = textsearch::Doc::new();
            textsearch::add(&mut doc, text, 1.0, true);
            ids.insert(id, docs.len());
            docs.push(doc);
        }
        Bm25 { index: Some(textsearch::Bm25::new(docs, 1.2, 0.75)), ids }
    }

    /// An index over tools by id.
    pub fn of_tools<'t>(tools: impl IntoIterator<Item = &'t Tool>) -> Self {
        let texts: Vec<(String, String)> = tools.into_iter().map(|t| (t.id(), tool_text(t))).collect();
        Bm25::new(texts.iter().map(|(id, text)| (id.clone(), text.as_str())))
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The BM25 score of document `id` for `query` (0 for an unknown document).
    pub fn score(&self, query: &str, id: &str) -> f64 {
        let query: HashSet<String> = tokens(query).into_iter().collect();
        self.score_tokens(&query, id)
    }

    /// [`Bm25::score`] with the query already tokenised.
    pub fn score_tokens(&self, query: &HashSet<String>, id: &str) -> f64 {
        let (Some(index), Some(&doc)) = (&self.index, self.ids.get(id)) else { return 0.0 };
        let terms: Vec<String> = query.iter().cloned().collect();
        index.score_of(&terms, doc)
    }

    /// Every document with a positive score for `query`, by id.
    pub fn scores(&self, query: &[String]) -> HashMap<&str, f64> {
        let Some(index) = &self.index else { return HashMap::new() };
        let scores = index.scores(query);
        self.ids.iter().map(|(id, &doc)| (id.as_str(), scores[doc])).filter(|(_, s)| *s > 0.0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_and_fold() {
        assert_eq!(tokens("movieCredits search_person"), ["movi", "credit", "search", "person"]);
        assert_eq!(tokens("Who directed the movies of these companies?"), ["directed", "movi", "these", "compani"]);
        assert_eq!(tokens("a movie, a company, images"), ["movi", "compani", "image"]);
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
