//! Text search, one implementation for every user: the catalog's index (`toolset::index`, shared
//! by retrieval and ToolNet's task relevance) and the planner's word matching ([`root`]).
//! Tokens are lower-case words with identifiers and URL paths split (`movieCredits`,
//! `movie_credits`, `/person/{person_id}`), stop words dropped and plurals folded by one light
//! stemmer; documents are weighted term frequencies; BM25 runs over an inverted index, so a query
//! touches only its terms' postings.

use std::collections::{BTreeMap, HashMap};

use crate::names;

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "for", "to", "in", "on", "and", "or", "is", "are", "be", "by", "with", "me", "my", "i",
    "you", "your", "it", "its", "this", "that", "from", "at", "as", "can", "will", "get", "what", "which", "who",
    "how", "some", "all", "any", "give", "tell", "show", "please", "do", "does", "about", "also", "want", "need",
    "would", "like", "could", "should", "there", "their", "them", "we", "our", "us", "if", "so", "than", "then",
    "into", "out", "up", "api", "endpoint", "returns", "return", "using", "use",
];

/// Lowercase words of a text. With `split_identifiers`, `movieCredits`, `movie_credits`,
/// `/person/{person_id}` all become separate words; plural `s` is folded.
pub fn tokens(text: &str, split_identifiers: bool) -> Vec<String> {
    let mut out = Vec::new();
    let words: Vec<String> = if split_identifiers {
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).flat_map(split_camel).collect()
    } else {
        text.split(|c: char| c.is_whitespace() || (c.is_ascii_punctuation() && c != '_'))
            .filter(|w| !w.is_empty())
            .map(|w| w.to_lowercase())
            .collect()
    };
    for w in words {
        if STOPWORDS.contains(&w.as_str()) || w.len() < 2 && !w.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        out.push(if split_identifiers { fold(&w) } else { w });
    }
    out
}

fn split_camel(word: &str) -> Vec<String> {
    names::snake_case(word).split('_').filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// The separate requests in a task text: its sentences (ended by `.`, `?`, `!` or `;` and a space),
/// each split again at `, and` and ` and also `. A request that asks for several things ("Find X.
/// Also, fetch Y.") is retrieved need by need; a one-request text is one part.
pub fn requests_in(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let ends_sentence =
            matches!(b, b'.' | b'?' | b'!' | b';') && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
        if ends_sentence {
            parts.push(&text[start..=i]);
            start = i + 1;
        }
    }
    parts.push(&text[start..]);
    let mut requests = Vec::new();
    for sentence in parts {
        let mut rest = sentence;
        while let Some((at, sep)) = [", and ", " and also "].iter().filter_map(|sep| Some((rest.find(sep)?, sep))).min()
        {
            requests.push(&rest[..at]);
            rest = &rest[at + sep.len()..];
        }
        requests.push(rest);
    }
    requests.into_iter().map(str::trim).filter(|r| !tokens(r, true).is_empty()).collect()
}

/// A light stemmer folding plurals and `y`/`ie` endings onto one stem: `movies`/`movie` → `movi`,
/// `companies`/`company` → `compani`, `credits` → `credit`.
pub fn fold(word: &str) -> String {
    let w = word;
    if w.len() > 4 && w.ends_with("ies") {
        return w[..w.len() - 2].to_string();
    }
    if w.len() > 3 && w.ends_with("ie") {
        return w[..w.len() - 1].to_string();
    }
    if w.len() > 3 && w.ends_with('y') && !w.ends_with("ey") && !w.ends_with("ay") {
        return format!("{}i", &w[..w.len() - 1]);
    }
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        return w[..w.len() - 1].to_string();
    }
    w.to_string()
}

/// A word's root for matching meaning rather than form: [`fold`], then derivational endings
/// dropped, so `directed`, `director` and `Directing` meet at `direct` and `actor`, `acting` at
/// `act`. Coarser than the index's terms, for the planner's question "does this tool's vocabulary
/// say what the task asks?". A consonant doubled before an ending is one (`starred`, `starring`
/// → `star`), except the letters English doubles in the word itself (`called`, `passed`).
pub fn root(word: &str) -> String {
    let folded = fold(&word.to_lowercase());
    for suffix in ["ings", "ing", "ions", "ion", "ed", "ors", "or", "ers", "er", "e"] {
        if let Some(stem) = folded.strip_suffix(suffix)
            && stem.len() >= 3
        {
            let mut last = stem.chars().rev();
            return match (last.next(), last.next()) {
                (Some(a), Some(b))
                    if a == b
                        && suffix.starts_with(['i', 'e'])
                        && !"aeioulsfz".contains(a)
                        && a.is_alphabetic()
                        && stem.len() - a.len_utf8() >= 3 =>
                {
                    stem[..stem.len() - a.len_utf8()].to_string()
                }
                _ => stem.to_string(),
            };
        }
    }
    folded
}

/// One document's weighted term frequencies.
pub type Doc = BTreeMap<String, f64>;

pub fn add(doc: &mut Doc, text: &str, weight: f64, split: bool) {
    for t in tokens(text, split) {
        *doc.entry(t).or_default() += weight;
    }
}

/// BM25 over an inverted index: scoring a query touches only the postings of its terms.
#[derive(Debug, Clone)]
pub struct Bm25 {
    /// term → (document, weighted term frequency)
    postings: HashMap<String, Vec<(usize, f64)>>,
    lengths: Vec<f64>,
    average: f64,
    k1: f64,
    b: f64,
}

impl Bm25 {
    pub fn new(docs: Vec<Doc>, k1: f64, b: f64) -> Self {
        let lengths: Vec<f64> = docs.iter().map(|d| d.values().sum()).collect();
        let average = lengths.iter().sum::<f64>() / lengths.len().max(1) as f64;
        let mut postings: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        for (i, d) in docs.into_iter().enumerate() {
            for (t, tf) in d {
                postings.entry(t).or_default().push((i, tf));
            }
        }
        Bm25 { postings, lengths, average, k1, b }
    }

    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// One document's score for `query` (its distinct terms): a binary search per term in the
    /// postings, not a pass over the corpus.
    pub fn score_of(&self, query: &[String], doc: usize) -> f64 {
        let n = self.lengths.len() as f64;
        let mut score = 0.0;
        let mut seen: Vec<&str> = Vec::new();
        for term in query {
            if seen.contains(&term.as_str()) {
                continue;
            }
            seen.push(term);
            let Some(list) = self.postings.get(term) else { continue };
            let Ok(at) = list.binary_search_by_key(&doc, |&(d, _)| d) else { continue };
            let tf = list[at].1;
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            let norm = self.k1 * (1.0 - self.b + self.b * self.lengths[doc] / self.average.max(1e-9));
            score += idf * tf * (self.k1 + 1.0) / (tf + norm);
        }
        score
    }

    /// Every document's score for `query` (by document index).
    pub fn scores(&self, query: &[String]) -> Vec<f64> {
        let n = self.lengths.len() as f64;
        let mut scores = vec![0.0; self.lengths.len()];
        let mut seen: Vec<&str> = Vec::new();
        for term in query {
            if seen.contains(&term.as_str()) {
                continue;
            }
            seen.push(term);
            let Some(list) = self.postings.get(term) else { continue };
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(i, tf) in list {
                let norm = self.k1 * (1.0 - self.b + self.b * self.lengths[i] / self.average.max(1e-9));
                scores[i] += idf * tf * (self.k1 + 1.0) / (tf + norm);
            }
        }
        scores
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_task_splits_into_its_requests() {
        let text = "I'm planning a trip to Paris. Can you find hotels near the Louvre? Also, fetch the weather \
                    for 3.5 days, and convert 100 USD to EUR; thanks";
        assert_eq!(
            super::requests_in(text),
            vec![
                "I'm planning a trip to Paris.",
                "Can you find hotels near the Louvre?",
                "Also, fetch the weather for 3.5 days",
                "convert 100 USD to EUR;",
                "thanks",
            ]
        );
        assert_eq!(super::requests_in("the credits of Titanic"), vec!["the credits of Titanic"]);
    }

    use super::*;

    #[test]
    fn one_stemmer_for_plurals_and_identifiers() {
        assert_eq!(tokens("images image", true), ["image", "image"]);
        assert_eq!(tokens("movieCredits movie_credits", true), ["movi", "credit", "movi", "credit"]);
        assert_eq!(tokens("companies company", true), ["compani", "compani"]);
        assert_eq!(tokens("series status", true), ["seri", "status"]);
    }

    #[test]
    fn roots_meet_across_derivations() {
        for (words, meeting) in [
            (&["directed", "director", "Directing"][..], "direct"),
            (&["starred", "starring", "star"][..], "star"),
            (&["called", "call"][..], "call"),
            (&["added", "adding", "add"][..], "add"),
            (&["passed", "pass"][..], "pass"),
        ] {
            for word in words {
                assert_eq!(root(word), meeting, "{word}");
            }
        }
    }

    #[test]
    fn tokens_split_identifiers_and_paths() {
        assert_eq!(
            tokens("GET /person/{person_id}/movieCredits", true),
            vec!["person", "person", "id", "movi", "credit"]
        );
        assert_eq!(tokens("the movies of Sofia Coppola", true), vec!["movi", "sofia", "coppola"]);
        assert_eq!(tokens("movie companies company", true), vec!["movi", "compani", "compani"]);
        assert_eq!(tokens("person_movie_credits", false), vec!["person_movie_credits"]);
        assert_eq!(tokens("movieCredits search_person", true), ["movi", "credit", "search", "person"]);
        assert_eq!(tokens("getHTTPResponse v3/tv/{tv_id}", true), ["http", "response", "v3", "tv", "tv", "id"]);
        assert_eq!(
            tokens("Who directed the movies of these companies?", true),
            ["directed", "movi", "these", "compani"]
        );
        assert_eq!(tokens("a movie, a company, images", true), ["movi", "compani", "image"]);
    }

    #[test]
    fn the_stemmer_folds_plural_and_third_person_forms() {
        for (a, b) in [("images", "image"), ("movies", "movie"), ("returns", "return"), ("lists", "list")] {
            assert_eq!(fold(a), fold(b), "{a} / {b}");
        }
        // Short words, `ss` and `us` endings stay as they are.
        assert_eq!([fold("is"), fold("address"), fold("status"), fold("bus")], ["is", "address", "status", "bus"]);
        assert_eq!([fold("key"), fold("day"), fold("tie")], ["key", "day", "tie"]);
    }

    #[test]
    fn bm25_prefers_the_matching_document() {
        let doc = |text: &str| {
            let mut d = Doc::new();
            add(&mut d, text, 1.0, true);
            d
        };
        let index = Bm25::new(
            vec![
                doc("search for people by name"),
                doc("search for movies by title"),
                doc("movie reviews written by users"),
            ],
            1.2,
            0.75,
        );
        let q = tokens("reviews of the movie Titanic", true);
        assert!(index.score_of(&q, 2) > index.score_of(&q, 1));
        assert!(index.score_of(&q, 1) > index.score_of(&q, 0));
        assert_eq!(index.score_of(&q, 0), 0.0);
        assert_eq!(index.score_of(&q, 99), 0.0, "an unknown document");
        assert_eq!((index.len(), index.is_empty()), (3, false));
    }

    #[test]
    fn postings_score_the_field_weighted_match_first() {
        let doc = |parts: &[(&str, f64)]| {
            let mut d = Doc::new();
            for (text, weight) in parts {
                add(&mut d, text, *weight, true);
            }
            d
        };
        let index = Bm25::new(
            vec![
                doc(&[("search_person", 3.0), ("find people by name", 1.0)]),
                doc(&[("movie_reviews", 3.0), ("reviews of a movie by its users", 1.0)]),
                doc(&[("search_movie", 3.0), ("find a movie; reviews not included", 1.0)]),
            ],
            1.2,
            0.75,
        );
        let query = tokens("reviews of the movie Titanic", true);
        let scores = index.scores(&query);
        assert!(scores[1] > scores[2] && scores[2] > 0.0 && scores[0] == 0.0, "{scores:?}");
        for (doc, score) in scores.iter().enumerate() {
            assert!((index.score_of(&query, doc) - score).abs() < 1e-12);
        }
    }
}
