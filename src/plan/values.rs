//! The values a task states, for the planner to bind to parameters: quoted strings and names
//! (`"Twilight"`, `Sofia Coppola`, `The Dark Knight`), `owner/repo` pairs, numbers and ordinals
//! with the word they count (`the second episode` → episode 2), and whether the task speaks of
//! the user themself ("my", "me").

use std::collections::BTreeSet;

use serde_json::Value;

use crate::toolset::Param;

/// The words before a name (roots, nearest first) and how it is used: after "by" (`directed by
/// Sofia Coppola`) or as an owner (`Clint Eastwood's latest movie`), a name is an agent — a
/// person, a user — rather than the thing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NameContext {
    pub before: Vec<String>,
    pub agent: bool,
    /// The word right after the name when it may be a noun the name qualifies (`the most starred
    /// Go repository`: `repository`), lower case; a verb or adverb form (`Octocat sorted by …`)
    /// is none.
    pub qualifies: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskValues {
    /// Quoted strings and capitalised names, in order of appearance.
    pub names: Vec<String>,
    /// What the task says around each name (same order as `names`).
    pub contexts: Vec<NameContext>,
    /// Numbers and ordinals, each with the word after (or before) it that it counts.
    pub numbers: Vec<(i64, Vec<String>)>,
    /// Which of `numbers` are ordinals (`first`, `top-1`): a place in a list, never an id.
    pub ordinal: Vec<bool>,
    /// `owner/repo` pairs.
    pub pairs: Vec<(String, String)>,
    /// The task speaks of the user ("my repositories", "show me").
    pub me: bool,
}

/// Sentence starters and question words that are capitalised without being names.
const NOT_NAMES: &[&str] = &[
    "who",
    "what",
    "when",
    "where",
    "which",
    "why",
    "how",
    "give",
    "tell",
    "show",
    "list",
    "find",
    "get",
    "please",
    "i",
    "is",
    "are",
    "do",
    "does",
    "can",
    "could",
    "would",
    "my",
    "me",
    "in",
    "on",
    "of",
    "and",
    "search",
    "recommend",
    "return",
    "fetch",
    "look",
    "let",
    "i'm",
    "i've",
    "what's",
    "who's",
    "today",
    "tonight",
    "yesterday",
    "tomorrow",
];

/// Words whose `'s` is "is", not a possessive: `It's the film …` opens with no name.
const CONTRACTED: &[&str] = &["it", "that", "there", "here", "he", "she", "what", "who", "let"];

/// Nouns whose next word, written in lower case, is a handle: `the user octocat`.
const HANDLE_NOUNS: &[&str] =
    &["user", "username", "login", "account", "org", "organization", "organisation", "team", "branch", "tag", "site"];

/// Small words that may join a name's capitalised words (`Lord of the Rings`).
const JOINERS: &[&str] = &["of", "the", "and", "de", "la", "van", "von", "&"];

const ORDINALS: &[(&str, i64)] = &[
    ("first", 1),
    ("second", 2),
    ("third", 3),
    ("fourth", 4),
    ("fifth", 5),
    ("sixth", 6),
    ("seventh", 7),
    ("eighth", 8),
    ("ninth", 9),
    ("tenth", 10),
    ("1st", 1),
    ("2nd", 2),
    ("3rd", 3),
];

/// Whether a lower-case word after a handle's noun is shaped like a common noun (`the team
/// members`, `the branch protection of …`) rather than a handle: a plural or an abstract suffix.
/// At a clause's end any word is taken (`the user torvalds`).
fn common_noun_shape(word: &str) -> bool {
    let plural = word.ends_with('s') && !word.ends_with("ss");
    plural || ["tion", "sion", "ment", "ness", "ity"].iter().any(|suffix| word.ends_with(suffix))
}

/// The values `task` states. A capitalised name that is one of `api_names` (`my Netlify sites`,
/// `on GitHub`) says which tools, not a value, and is left out; a quoted one is always kept.
pub fn of(task: &str, api_names: &BTreeSet<String>) -> TaskValues {
    let mut values = TaskValues::default();
    let mut rest = task.to_string();
    // Quoted strings first; they are taken out so their words are not read again.
    for (open, close) in [('"', '"'), ('“', '”'), ('\'', '\'')] {
        let mut from = 0;
        while let Some(found) = rest[from..].find(open) {
            let start = from + found;
            let after = start + open.len_utf8();
            let Some(len) = rest[after..].find(close) else { break };
            // An apostrophe in a word (`DiCaprio's`, `Who's`) is no quote: a single quote opens
            // only after a space or at the start, and closes only before a non-letter.
            if open == '\'' {
                let opens = rest[..start].chars().next_back().is_none_or(char::is_whitespace);
                let closes = rest[after + len + 1..].chars().next().is_none_or(|c| !c.is_alphanumeric());
                if !opens || !closes {
                    from = after;
                    continue;
                }
            }
            let quoted = rest[after..after + len].trim().to_string();
            if !quoted.is_empty() {
                values.names.push(quoted);
            }
            rest.replace_range(start..after + len + close.len_utf8(), " , ");
        }
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let clean = |w: &str| -> String {
        let w = w.trim_matches(|c: char| matches!(c, '?' | '.' | ',' | '!' | ':' | ';' | '(' | ')'));
        w.strip_suffix("'s").or_else(|| w.strip_suffix("’s")).unwrap_or(w).to_string()
    };
    let mut run: Vec<String> = Vec::new();
    // Whether the run of capitalised words began a sentence: one such word alone is the
    // sentence's verb (`Close the oldest …`, `Lock the deploy …`), not a name.
    let mut run_starts_sentence = false;
    let flush = |run: &mut Vec<String>, names: &mut Vec<String>, starts_sentence: bool| {
        while run.last().is_some_and(|w| JOINERS.contains(&w.to_lowercase().as_str())) {
            run.pop();
        }
        if starts_sentence && run.len() == 1 {
            run.clear();
        }
        // A name starts with a capital: `List the Netlify sites` names `Netlify`, not `the Netlify`.
        while run
            .first()
            .is_some_and(|w| NOT_NAMES.contains(&w.to_lowercase().as_str()) || matches!(w.as_str(), "the" | "a" | "an"))
        {
            run.remove(0);
        }
        // An article alone ("The" opening a sentence) is no name; before a name it is part of
        // the title (`The Dark Knight`).
        let only_articles = run.iter().all(|w| matches!(w.to_lowercase().as_str(), "the" | "a" | "an"));
        let name = run.join(" ");
        if !run.is_empty() && !only_articles && !api_names.contains(&name.to_lowercase()) {
            names.push(name);
        }
        run.clear();
    };
    for (i, raw) in words.iter().enumerate() {
        let word = clean(raw);
        let lower = word.to_lowercase();
        if lower == "my" || lower == "me" || lower == "mine" {
            values.me = true;
        }
        if let Some((owner, repo)) = word.split_once('/')
            && !owner.is_empty()
            && !repo.is_empty()
            && !repo.contains('/')
            && word.chars().all(|c| c.is_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'))
        {
            values.pairs.push((owner.to_string(), repo.to_string()));
            flush(&mut run, &mut values.names, run_starts_sentence);
            continue;
        }
        if let Some(n) = number(&lower) {
            let after: Vec<String> = words[i + 1..].iter().take(2).map(|w| clean(w).to_lowercase()).collect();
            let before: Vec<String> = words[..i].iter().rev().take(2).map(|w| clean(w).to_lowercase()).collect();
            values.numbers.push((n, after.into_iter().chain(before).collect()));
            values.ordinal.push(!lower.trim_start_matches('#').chars().all(|c| c.is_ascii_digit()));
            flush(&mut run, &mut values.names, run_starts_sentence);
            continue;
        }
        // "the user octocat", "a branch new-feature", "a user named octocat": a handle is lower
        // case, and the noun before it says what it names. Not after a possessive (`the user's
        // repositories`) nor inside a compound (`the branch protection rules`).
        let article = |w: &str| {
            ["the", "a", "an", "my", "our", "their", "his", "her", "its"].contains(&clean(w).to_lowercase().as_str())
        };
        let plain_noun = |w: &str| {
            HANDLE_NOUNS.contains(&w.to_lowercase().as_str())
                && !w.ends_with("'s")
                && !w.ends_with("’s")
                && !w.ends_with([',', '?', '.', '!', ';', ':'])
        };
        let named = i >= 1 && matches!(words[i - 1], "named" | "called");
        let after_noun = i >= 2
            && plain_noun(words[i - 1])
            && (article(words[i - 2])
                // `the GitHub user octocat`
                || (i >= 3 && article(words[i - 3]) && clean(words[i - 2]).chars().next().is_some_and(char::is_uppercase)));
        // `When does my site expire?`: a question whose auxiliary asks about a thing ends with
        // its verb (`Can you list … of the user octocat?` asks the reader, and ends with a handle).
        let question_verb = raw.ends_with('?')
            && words.iter().take(2).enumerate().any(|(at, w)| {
                matches!(
                    clean(w).to_lowercase().as_str(),
                    "do" | "does"
                        | "did"
                        | "will"
                        | "would"
                        | "can"
                        | "could"
                        | "should"
                        | "has"
                        | "have"
                        | "is"
                        | "are"
                        | "was"
                        | "were"
                ) && words
                    .get(at + 1)
                    .is_some_and(|subject| !matches!(clean(subject).to_lowercase().as_str(), "you" | "i" | "we"))
            });
        // `feature-x`, `v1.2`, `octo_cat`: no common word is written so.
        let marked = word.chars().any(|c| c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
        let at_clause_end =
            raw.ends_with([',', '?', '.', '!', ';', ':', '\'', '’']) || raw.ends_with("'s") || i + 1 == words.len();
        let ends_there = !matches!(lower.as_str(), "named" | "called")
            && (marked || if at_clause_end { !question_verb } else { !common_noun_shape(&word) });
        if (named || (after_noun && ends_there))
            && !word.is_empty()
            && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
            && !crate::textsearch::tokens(&word, false).is_empty()
            && !NOT_NAMES.contains(&lower.as_str())
            && !JOINERS.contains(&lower.as_str())
        {
            flush(&mut run, &mut values.names, run_starts_sentence);
            values.names.push(word);
            continue;
        }
        let capitalised = word.chars().next().is_some_and(char::is_uppercase);
        let shouting = word.len() <= 3 && word.chars().all(|c| c.is_uppercase());
        let ends_clause = raw.ends_with([',', '?', '.', '!', ';', ':']);
        if (capitalised && !shouting) || (!run.is_empty() && JOINERS.contains(&lower.as_str())) {
            if run.is_empty() {
                // A verb takes no `'s`: `Titanic's director` opens with a name.
                let possessive = (raw.ends_with("'s") || raw.ends_with("’s")) && !CONTRACTED.contains(&lower.as_str());
                run_starts_sentence = (i == 0 || words[i - 1].ends_with(['.', '?', '!'])) && !possessive;
            }
            run.push(word);
        } else {
            flush(&mut run, &mut values.names, run_starts_sentence);
        }
        if ends_clause {
            flush(&mut run, &mut values.names, run_starts_sentence);
        }
    }
    flush(&mut run, &mut values.names, run_starts_sentence);
    values.names.dedup();
    values.contexts = values.names.iter().map(|name| context_of(task, name)).collect();
    values
}

fn context_of(task: &str, name: &str) -> NameContext {
    let Some(at) = task.find(name) else { return NameContext::default() };
    let before: Vec<String> = task[..at]
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .rev()
        .take(3)
        .map(|w| w.to_lowercase())
        .collect();
    let after = &task[at + name.len()..];
    let possessive = after.starts_with("'s") || after.starts_with("’s");
    let agent = possessive || before.first().is_some_and(|w| w == "by");
    let next = after.split(|c: char| !c.is_alphanumeric()).find(|w| !w.is_empty());
    let qualifies = next
        .filter(|w| after.starts_with(' ') && w.chars().all(|c| c.is_ascii_lowercase()))
        .filter(|w| crate::textsearch::tokens(w, true).len() == 1)
        .filter(|w| !["ed", "ing", "ly"].iter().any(|end| w.ends_with(end)))
        .map(str::to_string);
    NameContext { before: before.iter().map(|w| crate::textsearch::root(w)).collect(), agent, qualifies }
}

fn number(word: &str) -> Option<i64> {
    if let Some((_, n)) = ORDINALS.iter().find(|(w, _)| *w == word) {
        return Some(*n);
    }
    let digits = word.strip_prefix("top-").unwrap_or(word).trim_start_matches('#');
    (!digits.is_empty() && digits.len() <= 9 && digits.chars().all(|c| c.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

impl TaskValues {
    /// The task's values that fit `param` (its name and types), best first, each with its
    /// place among the task's values (names first, then numbers) so one value feeds one
    /// argument only — two equal numbers ("the first episode of the first season") are two values.
    pub fn for_param(&self, param: &Param, types: &[&str]) -> Vec<(Value, Option<usize>)> {
        let name = param.name.to_ascii_lowercase();
        let numeric = types.iter().any(|t| matches!(*t, "integer" | "number"));
        let mut out = Vec::new();
        if name == "owner" || name == "repo" {
            for (owner, repo) in &self.pairs {
                out.push((Value::String(if name == "owner" { owner.clone() } else { repo.clone() }), None));
            }
        }
        if numeric {
            // A number counting the parameter's own word: `season_number` ← "the first season".
            let word = name.trim_end_matches("_number").trim_end_matches("_id").trim_end_matches("_count");
            let identifies = name == "id" || name.ends_with("_id");
            for (i, (n, near)) in self.numbers.iter().enumerate() {
                if identifies && self.ordinal.get(i).copied().unwrap_or(false) {
                    continue;
                }
                if near.iter().any(|w| crate::textsearch::fold(w) == crate::textsearch::fold(word)) {
                    out.push((Value::from(*n), Some(self.names.len() + i)));
                }
            }
            return out;
        }
        if types.is_empty() || types.contains(&"string") {
            let text_like = matches!(
                name.as_str(),
                "query"
                    | "q"
                    | "name"
                    | "title"
                    | "keyword"
                    | "keywords"
                    | "search"
                    | "term"
                    | "text"
                    | "username"
                    | "user"
                    | "login"
                    | "owner"
                    | "org"
            );
            if text_like {
                out.extend(self.names.iter().enumerate().map(|(i, n)| (Value::String(n.clone()), Some(i))));
            }
        }
        out
    }
}

/// The enum value the task names (`movie` for "the trending movie", `day` for "today"), if any.
pub fn pick_enum(values: &[Value], task_words: &[String]) -> Option<Value> {
    let says = |word: &str| task_words.iter().any(|w| *w == crate::textsearch::fold(word));
    let synonyms: &[(&str, &[&str])] = &[("day", &["today", "daily"]), ("week", &["weekly"])];
    values
        .iter()
        .find(|v| {
            v.as_str().is_some_and(|s| {
                says(&s.to_ascii_lowercase())
                    || synonyms.iter().any(|(value, words)| *value == s && words.iter().any(|w| says(w)))
            })
        })
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of_task(task: &str) -> TaskValues {
        of(task, &BTreeSet::new())
    }

    #[test]
    fn names_quotes_numbers_and_ordinals() {
        let v = of_task("give me the number of movies directed by Sofia Coppola");
        assert_eq!(v.names, vec!["Sofia Coppola"]);
        let v = of_task("Who is the director of the movie \"Twilight\"?");
        assert_eq!(v.names, vec!["Twilight"]);
        let v = of_task("Who was the lead actor in the movie The Dark Knight?");
        assert_eq!(v.names, vec!["The Dark Knight"]);
        let v = of_task("Who is the director of Leonardo DiCaprio's latest movie?");
        assert_eq!(v.names, vec!["Leonardo DiCaprio"]);
        // Apostrophes inside words are no quotes.
        let v = of_task("Who's the director of Christopher Nolan's latest movie?");
        assert_eq!(v.names, vec!["Christopher Nolan"]);
        assert_eq!(of_task("the reviews of 'Heat', please").names, vec!["Heat"]);
        let v = of_task("give me a photo belong to the second episode of the first season of the Witcher");
        assert_eq!(v.names, vec!["Witcher"]);
        assert_eq!(v.numbers.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![2, 1]);
        assert!(v.numbers[0].1.contains(&"episode".to_string()), "{:?}", v.numbers);
        let v = of_task("Who directed the top-1 rated movie?");
        assert!(v.names.is_empty(), "{:?}", v.names);
        let v = of_task("List the open pull requests of octocat/Hello-World");
        assert_eq!(v.pairs, vec![("octocat".to_string(), "Hello-World".to_string())]);
        assert!(of_task("show me my repositories").me);
        assert_eq!(of_task("List the repositories of the user octocat").names, vec!["octocat"]);
        assert!(of_task("the user of the month").names.is_empty());
        let v = of_task("reviews of the first movie similar to pull request 1347");
        assert_eq!(v.numbers.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 1347]);
        assert_eq!(v.ordinal, vec![true, false], "an ordinal is a place in a list, never an id");
        assert!(of_task("Close the oldest open pull request").names.is_empty(), "a sentence's verb is no name");
        assert_eq!(of_task("Titanic's director: who is it?").names, vec!["Titanic"], "a verb takes no 's");
        assert!(of_task("It's the film with the highest rating").names.is_empty());
        assert!(of_task("Today's trending movies").names.is_empty());
        assert_eq!(of_task("Who directed There Will Be Blood?").names, vec!["There Will Be Blood"]);
        assert_eq!(of_task("Who directed the movie It?").names, vec!["It"]);
    }

    #[test]
    fn a_handle_follows_its_noun_and_ends_there() {
        assert_eq!(of_task("Show the repositories of a user named octocat").names, vec!["octocat"]);
        assert_eq!(of_task("Is the branch main of octocat/linguist protected?").names, vec!["main"]);
        assert_eq!(of_task("the user octocat and their followers").names, vec!["octocat"]);
        assert_eq!(of_task("Can you list the repositories of the user octocat?").names, vec!["octocat"]);
        assert!(of_task("List the user's repositories").names.is_empty(), "a possessive's noun is no handle");
        assert!(of_task("list my team accounts with admin rights").names.is_empty(), "a compound's noun is no handle");
        assert!(of_task("show the branch protection rules of octocat/linguist").names.is_empty());
        assert!(of_task("Show the branch protection of octocat/linguist").names.is_empty());
        assert_eq!(of_task("List the team members of the org github").names, vec!["github"]);
        assert_eq!(of_task("Which organizations does the user octocat belong to?").names, vec!["octocat"]);
        assert_eq!(of_task("Merge the branch feature-x into main").names, vec!["feature-x"]);
        assert_eq!(of_task("List the commits on the branch main since Monday").names, vec!["main", "Monday"]);
        assert!(of_task("When was my site deployed?").names.is_empty(), "a question's last verb is no handle");
    }

    #[test]
    fn an_api_named_in_the_task_is_no_value_unless_quoted() {
        let apis = BTreeSet::from(["netlify".to_string()]);
        let v = of("When does the certificate of my Netlify site expire?", &apis);
        assert!(v.names.is_empty(), "{:?}", v.names);
        assert_eq!(of("the site called \"Netlify\"", &apis).names, vec!["Netlify"]);
    }

    #[test]
    fn an_enum_value_the_task_names_is_picked() {
        let words = crate::textsearch::tokens("Who is the director of today's most trending movie?", true);
        let media = [Value::from("all"), Value::from("movie"), Value::from("tv")];
        assert_eq!(pick_enum(&media, &words), Some(Value::from("movie")));
        let window = [Value::from("day"), Value::from("week")];
        assert_eq!(pick_enum(&window, &words), Some(Value::from("day")));
    }
}
