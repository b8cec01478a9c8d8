//! The planner: for a task in words, the chains of up to four calls the protocols allow, ranked.
//!
//! Types say which chains are *possible*: every required argument is a value the task gives (a
//! quoted string or a name, a number, an ordinal next to the word it counts), a field of an
//! earlier call's response that the data-flow graph ([`crate::toolset::dataflow`]) says can feed
//! it, or a default or enum value. Retrieval relevance and ToolNet's transitions say which are
//! *likely*. Chains are built backwards from the tools most relevant to the task, so the last
//! call is the one whose response answers it; enumeration has a budget, and a task with nothing
//! usable gets a clear "no plan" instead of a long wait.
//!
//! A plan is a list of calls and a typed skeleton program in the module dialect. Calls that may
//! change data are planned like reads but marked, so nothing runs them unasked.

pub mod editor;
pub mod values;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{Value, json};

use crate::graph::ToolGraph;
use crate::toolset::dataflow::{DataFlow, FieldPath};
use crate::toolset::index::CatalogIndex;
use crate::toolset::{Catalog, Param, Tool, Transport, schema};
use values::TaskValues;

/// The longest chain planned.
pub const MAX_CALLS: usize = 4;
/// How many partial chains enumeration may build for one task before it stops with what it has.
pub const BUDGET: usize = 60_000;
/// How many of them one final tool may take: a tool with three id parameters (`PATCH
/// …/pulls/{pull_number}`, ranked first for "the open pull requests") would otherwise spend the
/// whole budget, and the tools after it would get none.
const BUDGET_PER_FINAL: usize = 20_000;
/// The tools a chain may end in: the most relevant ones.
const FINAL_CANDIDATES: usize = 30;
/// Chains kept for one tool at one length limit, shortest first.
const CHAINS_PER_TOOL: usize = 64;
/// Producers tried for one parameter, strongest edge first.
const PRODUCERS_PER_PARAM: usize = 16;
/// Chains tried for one producer of one parameter, shortest first.
const CHAINS_PER_PRODUCER: usize = 8;
/// Ways tried to fill one parameter: task values and defaults, then the shortest producers'
/// chains. Without a cap a call with three id parameters multiplies thousands of options and
/// spends the whole budget before its one-call plan from the task's own values is kept.
const OPTIONS_PER_PARAM: usize = 48;

/// Where one argument's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A value the task states (`"Sofia Coppola"`, `2`).
    Task(Value),
    /// A field of the response of the call at this index of the plan.
    Field { call: usize, field: FieldPath, weight: f64, why: String },
    /// The parameter's default or a value of its enum.
    Default(Value),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Argument {
    pub param: String,
    pub source: Source,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool's id (`tmdb.search_person`).
    pub tool: String,
    pub arguments: Vec<Argument>,
    /// `METHOD /path` for HTTP tools.
    pub endpoint: Option<String>,
    /// The tool may change data: run only with the user's consent.
    pub writes: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub calls: Vec<Call>,
    pub score: f64,
    /// Why it ranks where it does, term by term.
    pub reasons: Vec<String>,
    /// Names that pick one item of a call's list instead of being passed to a call.
    pub picks: Vec<Pick>,
}

/// "my site 'blog'": the items of the list call `call` answers (at its top, or under `list`)
/// narrowed to those whose `key` is `name`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub call: usize,
    pub list: Option<String>,
    pub key: String,
    pub name: String,
}

/// Why a task got no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPlan {
    #[error("no tool of the workspace is relevant to the task")]
    NothingRelevant,
    #[error(
        "no chain of at most {MAX_CALLS} calls gets every required argument from the task, a response or a default"
    )]
    NoChain,
    #[error("the planner gave up: its budget of {BUDGET} partial chains ran out before a complete one")]
    Budget,
}

/// What the planner reads: the catalog, its data flow, its text index and (optionally) ToolNet.
pub struct Planner<'a> {
    pub catalog: &'a Catalog,
    pub flow: &'a DataFlow,
    pub index: &'a CatalogIndex,
    pub toolnet: Option<&'a ToolGraph>,
}

/// One way to fill an argument: the argument, the chain that produces its value (if a response
/// does) and which task value it uses (if one does).
type ArgumentOption = (Argument, Option<Partial>, Option<usize>);

/// A chain being built backwards: its calls in run order and the task values it used.
#[derive(Debug, Clone)]
struct Partial {
    calls: Vec<Call>,
    used: Vec<usize>,
    /// Edge weights of the fields it feeds.
    flow: Vec<f64>,
}

struct Search<'p, 'a> {
    planner: &'p Planner<'a>,
    /// Each tool's relevance to the task (the most relevant 1).
    relevance: HashMap<String, f64>,
    values: TaskValues,
    task_words: Vec<String>,
    spent: usize,
    /// Where `spent` stops the chains of the final tool being enumerated.
    limit: usize,
    /// The chains already built, by (last tool, room): a producer is reached from many consumers.
    memo: HashMap<(String, usize), Vec<Partial>>,
    /// The task values some parameter could take (their places, as in [`Partial::used`]).
    offered: BTreeSet<usize>,
}

impl<'a> Planner<'a> {
    /// The best `k` plans for `task`, best first.
    pub fn plans(&self, task: &str, k: usize) -> Result<Vec<Plan>, NoPlan> {
        let relevance = self.relevance(task);
        if relevance.is_empty() {
            return Err(NoPlan::NothingRelevant);
        }
        let words = TaskWords::of(task, &api_names(self.catalog));
        let mut search = Search {
            planner: self,
            relevance: relevance.iter().cloned().collect(),
            values: words.values.clone(),
            task_words: crate::textsearch::tokens(task, true),
            spent: 0,
            limit: BUDGET_PER_FINAL,
            memo: HashMap::new(),
            offered: BTreeSet::new(),
        };
        let mut finals: Vec<(&str, f64)> = relevance.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        finals.truncate(FINAL_CANDIDATES);
        let mut found: Vec<Partial> = Vec::new();
        let mut cut = false;
        for (id, _) in &finals {
            let Ok(tool) = self.catalog.find(id) else { continue };
            search.limit = (search.spent + BUDGET_PER_FINAL).min(BUDGET);
            found.extend(search.chains_ending_in(tool, MAX_CALLS));
            cut |= search.spent >= search.limit;
            if search.spent >= BUDGET {
                break;
            }
        }
        let relevance: HashMap<&str, f64> = relevance.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        let mut vocab = Vocabularies::default();
        let offered = std::mem::take(&mut search.offered);
        let mut plans: Vec<Plan> =
            found.into_iter().map(|p| self.score(p, &relevance, &words, &offered, &mut vocab)).collect();
        plans.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.calls.len().cmp(&b.calls.len())));
        // One plan per path: the same calls fed differently are one choice for the reader.
        let mut seen = BTreeSet::new();
        plans.retain(|p| seen.insert(p.path()));
        plans.truncate(k);
        match plans.is_empty() {
            false => Ok(plans),
            true if cut => Err(NoPlan::Budget),
            true => Err(NoPlan::NoChain),
        }
    }

    /// Each tool's relevance to the task, scaled so the most relevant is 1, best first.
    ///
    /// An operation shares in the relevance of the others on its path: the one that reads a
    /// site's TLS certificate often has no description, and the one beside it that provisions
    /// it says what the resource is.
    fn relevance(&self, task: &str) -> Vec<(String, f64)> {
        let hits = self.index.search_task(task, self.index.len());
        let top = hits.first().map(|(_, s)| *s).unwrap_or(0.0).max(1e-9);
        let mut scores: Vec<(String, f64)> = hits.into_iter().map(|(id, s)| (id.to_string(), s / top)).collect();
        let resource = |tool: &'a Tool| match &tool.transport {
            Transport::Http { path, .. } => Some((tool.toolset.as_str(), path.as_str())),
            _ => None,
        };
        let mut best: HashMap<(&str, &str), f64> = HashMap::new();
        for (id, score) in &scores {
            if let Some(key) = self.catalog.find(id).ok().and_then(resource) {
                let best = best.entry(key).or_default();
                *best = best.max(*score);
            }
        }
        let mut shared: BTreeMap<String, f64> = BTreeMap::new();
        for tool in self.catalog.tools() {
            if let Some(best) = resource(tool).and_then(|key| best.get(&key)) {
                shared.insert(tool.id(), SIBLING_SHARE * best);
            }
        }
        for (id, score) in &mut scores {
            if let Some(shared) = shared.remove(id.as_str()) {
                *score = score.max(shared);
            }
        }
        // Operations the words alone did not reach at all.
        scores.extend(shared.into_iter().filter(|(_, s)| *s > 0.0));
        scores.sort_by(|a, b| b.1.total_cmp(&a.1));
        scores
    }

    fn score(
        &self,
        partial: Partial,
        relevance: &HashMap<&str, f64>,
        task: &TaskWords,
        offered: &BTreeSet<usize>,
        vocab: &mut Vocabularies,
    ) -> Plan {
        let mut reasons = Vec::new();
        let calls = partial.calls;
        let last = calls.last().map(|c| c.tool.as_str()).unwrap_or("");
        let final_rel = relevance.get(last).copied().unwrap_or(0.0);
        let others: Vec<f64> =
            calls[..calls.len() - 1].iter().map(|c| relevance.get(c.tool.as_str()).copied().unwrap_or(0.0)).collect();
        let others_rel = if others.is_empty() { 0.5 } else { others.iter().sum::<f64>() / others.len() as f64 };
        let mut score = final_rel + 0.5 * others_rel;
        reasons.push(format!("relevance: last call {final_rel:.2}, earlier calls {others_rel:.2}"));
        // What the task asks, said by the chain's own words: the last call's (its answer) and all.
        let said: Vec<BTreeSet<&str>> = calls
            .iter()
            .map(|c| {
                let words = vocab.of(self.catalog, &c.tool);
                task.content.iter().filter(|w| words.contains(*w)).map(String::as_str).collect()
            })
            .collect();
        let covered: BTreeSet<&str> = said.iter().flatten().copied().collect();
        let content = task.content.len().max(1) as f64;
        let cover = covered.len() as f64 / content;
        // A tool whose response holds everything (a generic detail record) says every word by
        // chance; its saying the task's words counts for less.
        let specificity = (VOCABULARY_OF_ONE_THING / vocab.of(self.catalog, last).len().max(1) as f64).min(1.0).sqrt();
        let answer = specificity * said.last().map_or(0, BTreeSet::len) as f64 / content;
        score += cover + answer;
        reasons.push(format!(
            "the chain says {:.0} % of the task's words, its last call {:.0} %",
            100.0 * cover,
            100.0 * answer
        ));
        // The task's head ("the director of …", "some reviews of …") is what the last call answers.
        if !task.ask.is_empty() {
            let final_words = vocab.of(self.catalog, last);
            let asked = specificity * task.ask.iter().filter(|w| final_words.contains(*w)).count() as f64
                / task.ask.len() as f64;
            score += asked;
            reasons.push(format!("its last call says {:.0} % of what the task asks for", 100.0 * asked));
            // A chain whose last call says nothing of what is asked answers another question.
            if asked == 0.0 {
                score -= UNANSWERED_PENALTY;
                reasons.push("its last call says nothing of what the task asks for".to_string());
            }
            // Said by what the last call is about (its path), not by a key among dozens in its
            // response: "the reviews on the newest pull request" are `…/pulls/{n}/reviews`,
            // not the pull requests' `review_comments_url`.
            let nouns = vocab.nouns(self.catalog, last);
            let named = task.ask.iter().filter(|w| nouns.contains(*w)).count() as f64 / task.ask.len() as f64;
            if named > 0.0 {
                score += ASKED_BY_PATH * named;
                reasons.push(format!("its path names {:.0} % of what the task asks for", 100.0 * named));
            }
        }
        let flow = if partial.flow.is_empty() { 1.0 } else { partial.flow.iter().product::<f64>() };
        score += flow;
        reasons.push(format!("data flow {flow:.2}"));
        let values = &task.values;
        // A name of one of the user's own things that the chain passes to no call may pick one
        // item of a list of them ("my site 'blog'": the site in `GET /sites` whose `name` is
        // "blog"). Any other name is meant for a search: a list of popular movies holds titles too.
        let (mut unused, mut penalty) = (0, 0.0);
        let mut picks = Vec::new();
        for (i, name) in values.names.iter().enumerate().filter(|(i, _)| !partial.used.contains(i)) {
            let owned = values.contexts[i].before.iter().any(|w| w == "my" || w == "our");
            let picker = calls.iter().enumerate().filter(|_| owned).find_map(|(at, call)| {
                let nouns = vocab.nouns(self.catalog, &call.tool);
                let about = values.contexts[i].before.iter().any(|w| nouns.contains(w));
                let (list, key) = self.catalog.find(&call.tool).ok().and_then(named_items)?;
                about.then(|| Pick {
                    call: at,
                    list: list.map(str::to_string),
                    key: key.to_string(),
                    name: name.clone(),
                })
            });
            match picker {
                Some(pick) => {
                    reasons.push(format!(
                        "{name:?} picks the item of `{}` whose `{}` it is",
                        calls[pick.call].tool, pick.key
                    ));
                    picks.push(pick);
                }
                // What the task names as an agent or owner (`directed by …`, `…'s latest
                // movie`) narrows what is asked to theirs: a chain without it answers for all.
                None => {
                    unused += 1;
                    penalty += if values.contexts[i].agent { UNUSED_AGENT_PENALTY } else { UNUSED_NAME_PENALTY };
                }
            }
        }
        if unused > 0 {
            score -= penalty;
            reasons.push(format!("{unused} name{} of the task unused", if unused == 1 { "" } else { "s" }));
        }
        // A number that names what a parameter takes (`pull request 1347`, `season 2`) is meant
        // to be passed: a chain that leaves it out answers something else.
        let unused_numbers = offered.iter().filter(|&&i| i >= values.names.len() && !partial.used.contains(&i)).count();
        if unused_numbers > 0 {
            score -= UNUSED_NUMBER_PENALTY * unused_numbers as f64;
            reasons.push(format!(
                "{unused_numbers} number{} of the task unused",
                if unused_numbers == 1 { "" } else { "s" }
            ));
        }
        // A name goes to the search for what the task calls it (`the movie Titanic`), an agent's
        // name (`directed by …`, `…'s latest movie`) to a search for persons or users.
        for call in &calls {
            for argument in &call.arguments {
                let Source::Task(Value::String(name)) = &argument.source else { continue };
                let Some(i) = values.names.iter().position(|n| n == name) else { continue };
                let context = &values.contexts[i];
                let nouns = vocab.nouns(self.catalog, &call.tool);
                if context.agent {
                    if AGENTS.iter().any(|a| nouns.contains(&crate::textsearch::root(a))) {
                        score += 0.6;
                        reasons.push(format!("{name:?} is someone, and `{}` searches people", call.tool));
                    }
                } else if context.before.iter().any(|w| nouns.contains(w)) {
                    score += 0.6;
                    reasons.push(format!("the task calls {name:?} what `{}` searches", call.tool));
                }
                // "the most starred Go repository": a name that qualifies a noun says what kind
                // of thing is meant — words to search by, not the name of some other thing.
                if let Some(noun) = &context.qualifies
                    && let Some(entity) =
                        self.catalog.find(&call.tool).ok().and_then(|t| names_other_thing(t, &argument.param, noun))
                {
                    score -= QUALIFIER_AS_NAME_PENALTY;
                    reasons.push(format!("{name:?} qualifies a {noun}, not the {entity} `{}` names", argument.param));
                }
            }
        }
        score -= 0.2 * (calls.len() as f64 - 1.0);
        // A call that may change data belongs in a plan only when the task asks for that change
        // (`lock the deploy`); as a step towards reading something it is never meant.
        for call in calls.iter().filter(|c| c.writes) {
            let words = vocab.nouns(self.catalog, &call.tool).clone();
            let asked = task.content.iter().any(|w| words.contains(w))
                && call.endpoint.as_deref().is_some_and(|e| !e.starts_with("GET "));
            let verb_asked =
                call.endpoint.as_deref().map(|e| e.split(' ').next().unwrap_or("")).is_some_and(|method| {
                    WRITE_VERBS
                        .iter()
                        .any(|(m, verbs)| *m == method && verbs.iter().any(|v| task.commands.iter().any(|w| w == v)))
                });
            if !(asked && verb_asked) {
                score -= 1.0;
                reasons.push(format!("`{}` may change data, which the task does not ask", call.tool));
            }
        }
        if let Some(graph) = self.toolnet {
            let mut previous = crate::graph::START;
            let mut transitions = 0.0;
            for call in &calls {
                transitions += graph.weight(previous, &call.tool);
                previous = &call.tool;
            }
            // Whether chains usually stop where this one does counts too: a tool usually
            // followed by another is seldom the answer.
            transitions += graph.weight(previous, crate::graph::END);
            let transitions = transitions / (calls.len() + 1) as f64;
            score += transitions;
            reasons.push(format!("ToolNet transitions {transitions:.2}"));
        }
        Plan { calls, score, reasons, picks }
    }
}

const UNUSED_NUMBER_PENALTY: f64 = 0.9;
const UNUSED_NAME_PENALTY: f64 = 0.9;
const UNUSED_AGENT_PENALTY: f64 = 2.0;
const UNANSWERED_PENALTY: f64 = 0.5;
const QUALIFIER_AS_NAME_PENALTY: f64 = 1.0;

/// The thing `param` of `tool` identifies, when it identifies one and that is not `noun`.
fn names_other_thing(tool: &Tool, param: &str, noun: &str) -> Option<String> {
    let param = tool.param(param)?;
    let entity = crate::toolset::dataflow::identified_by(tool, param)?;
    (entity != crate::toolset::dataflow::singular(noun)).then_some(entity)
}

const ASKED_BY_PATH: f64 = 1.0;

/// How much of the most relevant operation on a path the others on it share.
const SIBLING_SHARE: f64 = 0.8;

/// About how many words a tool about one thing has (name, path, description, response keys and
/// categories); more make its matches less telling.
const VOCABULARY_OF_ONE_THING: f64 = 200.0;

/// The roots of the verbs that ask for each kind of change.
const WRITE_VERBS: &[(&str, &[&str])] = &[
    (
        "POST",
        &["creat", "add", "new", "open", "post", "lock", "send", "request", "start", "mak", "submit", "run", "restor"],
    ),
    ("PUT", &["set", "updat", "chang", "replac", "merg", "edit", "renam", "mov", "lock", "unlock"]),
    ("PATCH", &["set", "updat", "chang", "edit", "renam", "clos", "reopen"]),
    ("DELETE", &["delet", "remov", "cancel", "drop", "unlock", "clear"]),
];

/// Words after which a task stops saying what it asks for and starts saying which thing it means.
const HEAD_ENDS: &[&str] = &[
    "of",
    "by",
    "in",
    "for",
    "from",
    "with",
    "that",
    "which",
    "about",
    "to",
    "on",
    "associated",
    "belong",
    "belonging",
];

/// Words that name one kind of thing in everyday English and another in an API's: a tool whose
/// words say one of a group says them all (`images` answers "the logo", "a photo of …";
/// `credits` with its `cast` answers "the lead actor", "who starred").
const KINDRED: &[&[&str]] = &[
    &["image", "photo", "picture", "poster", "cover", "logo"],
    &["cast", "actor", "actress", "star"],
    &["theater", "theatre", "cinema"],
];

/// `words` with the roots of every group of [`KINDRED`] one of them is in.
fn with_kindred(mut words: BTreeSet<String>) -> BTreeSet<String> {
    for group in KINDRED {
        let roots: Vec<String> = group.iter().map(|w| crate::textsearch::root(w)).collect();
        if roots.iter().any(|r| words.contains(r)) {
            words.extend(roots);
        }
    }
    words
}

/// Words that say how many are wanted (`one image of …`, `a few reviews`), not what.
const QUANTITIES: &[&str] = &["one", "few", "several", "couple", "many"];

/// Forms of "to be": after "who" they ask what someone is, not what they did.
const COPULAS: &[&str] = &["is", "was", "are", "were", "be", "s"];

/// Words that, followed by "of", ask to count what comes after.
const COUNTS: &[&str] = &["number", "count", "total", "amount"];

/// Words that name agents: a name used as "by X" or "X's" is one of these.
const AGENTS: &[&str] = &["person", "people", "user", "author", "artist", "creator", "member", "owner", "actor"];

/// The workspace's API names, lower case: in a task (`my Netlify sites`, `on GitHub`) they say
/// which tools, not a value.
pub(crate) fn api_names(catalog: &Catalog) -> BTreeSet<String> {
    catalog.toolsets.iter().map(|t| t.name.to_lowercase()).collect()
}

/// The task as the scorer reads it: its values, and the roots of its other content words.
struct TaskWords {
    values: TaskValues,
    content: Vec<String>,
    /// The roots of the task's head: its content words before the first name or preposition
    /// that starts describing which thing is meant.
    ask: Vec<String>,
    /// The roots of the words that may command a change: a sentence's or clause's first word
    /// and a word after "please", "to", "you", "then" or "and" (`Close the oldest pull request`,
    /// `ask hubot to review …`, `Can you close …`, `… and then delete it`). A verb elsewhere
    /// describes (`the reviews submitted on …`, `the newest open pull request`).
    commands: Vec<String>,
}

impl TaskWords {
    fn of(task: &str, api_names: &BTreeSet<String>) -> TaskWords {
        let values = values::of(task, api_names);
        let in_values: BTreeSet<String> = values
            .names
            .iter()
            .flat_map(|n| crate::textsearch::tokens(n, true))
            .map(|w| crate::textsearch::root(&w))
            .collect();
        let mut content: Vec<String> = crate::textsearch::tokens(task, true)
            .iter()
            .map(|w| crate::textsearch::root(w))
            .filter(|w| {
                !in_values.contains(w)
                    && !w.chars().all(|c| c.is_ascii_digit())
                    && !QUANTITIES.iter().any(|q| crate::textsearch::root(q) == **w)
            })
            .collect();
        // In "movies directed by NAME" the verb says how the name relates to what is asked (the
        // name is an agent, searched as one); it is not what the answer holds.
        let relations: BTreeSet<&String> = values
            .contexts
            .iter()
            .filter(|c| c.agent && c.before.first().is_some_and(|w| w == "by"))
            .filter_map(|c| c.before.get(1))
            .collect();
        // "The number of movies" asks to count movies: any list of them answers it, and no
        // response says "number" for that reason.
        let split: Vec<&str> =
            task.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '\'').filter(|w| !w.is_empty()).collect();
        let words: Vec<String> = split.iter().map(|w| w.to_lowercase()).collect();
        let counted: BTreeSet<String> = words
            .windows(2)
            .filter(|pair| COUNTS.contains(&pair[0].as_str()) && pair[1] == "of")
            .map(|pair| crate::textsearch::root(&pair[0]))
            .collect();
        // The API's own name is in every one of its tools' words: it tells no tool from another.
        // Read as the task spells it: `GitHub` is the words `git` and `hub`.
        let apis: BTreeSet<String> = task
            .split(|c: char| !c.is_alphanumeric())
            // Capitalised: `What time is it?` asks the time of a toolset called `time`.
            .filter(|w| w.chars().next().is_some_and(char::is_uppercase) && api_names.contains(&w.to_lowercase()))
            .flat_map(|w| crate::textsearch::tokens(w, true))
            .map(|w| crate::textsearch::root(&w))
            .collect();
        content.retain(|w| !relations.contains(w) && !counted.contains(w) && !apis.contains(w));
        content.sort();
        content.dedup();
        let mut ask = Vec::new();
        // "Who directed the top-rated movie?" asks for whoever did it — the director — and the
        // rest says which movie; "Who is the director of …" is read like any other task.
        let first = words.first().map(String::as_str).unwrap_or_default();
        let mut verb = words.iter().skip_while(|w| *w == "who");
        let next = verb.next();
        let verb = match next.map(String::as_str) {
            // "Who has starred in …", not "Who has more stars …".
            Some("has" | "have" | "had") => {
                verb.next().filter(|v| ["ed", "en", "wn"].iter().any(|end| v.ends_with(end)))
            }
            Some("did") => verb.next(),
            _ => next,
        };
        if let Some(verb) = verb.filter(|v| first == "who" && !COPULAS.contains(&v.as_str())) {
            let root = crate::textsearch::root(verb);
            if content.contains(&root) {
                ask.push(root);
            }
        }
        // "When is … released?" asks a date and what its verb says; "What does … VERB?" what its
        // last word says, not what the words after "what" name; "… look like?" an image.
        let second = words.get(1).map(String::as_str).unwrap_or_default();
        let looks_like =
            matches!(&words[..], [.., _, look, like] if (look == "look" || look == "looks") && like == "like");
        let verb_at_end = first == "when" || (first == "what" && ["do", "does", "did"].contains(&second)) || looks_like;
        if ask.is_empty() && looks_like {
            // How something looks is what its images show.
            ask.push(crate::textsearch::root("image"));
        } else if ask.is_empty() && verb_at_end {
            // The verb: the last word shaped like a participle (`released`, `airing`), else the
            // last content word (`start`).
            let said: Vec<&String> = words.iter().filter(|w| content.contains(&crate::textsearch::root(w))).collect();
            let verb =
                said.iter().rev().find(|w| ["ed", "ing", "en"].iter().any(|end| w.ends_with(end))).or(said.last());
            if let Some(verb) = verb {
                ask.push(crate::textsearch::root(verb));
            }
            let date = crate::textsearch::root("date");
            if first == "when" && !ask.contains(&date) {
                ask.push(date);
            }
        }
        let head = if ask.is_empty() { &split[..] } else { &[] };
        for word in head {
            let lower = word.to_lowercase();
            let starts_name = values.names.iter().any(|n| n.split_whitespace().next() == Some(word));
            if !ask.is_empty() && (HEAD_ENDS.contains(&lower.as_str()) || starts_name) {
                break;
            }
            let root = crate::textsearch::root(&lower);
            if content.contains(&root) && !ask.contains(&root) {
                ask.push(root);
            }
        }
        let raw: Vec<&str> = task.split_whitespace().collect();
        let bare = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        let commands = raw
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                // After "and" or a comma a verb commands only with its object after it (`… and
                // delete it`); `the open and closed pull requests` describes.
                let object_follows = raw.get(i + 1).is_some_and(|next| {
                    matches!(
                        bare(next).as_str(),
                        "the" | "a" | "an" | "it" | "them" | "this" | "that" | "these" | "those" | "all" | "my" | "our"
                    )
                });
                *i == 0
                    || raw[i - 1].ends_with(['.', '?', '!'])
                    || matches!(bare(raw[i - 1]).as_str(), "please" | "to" | "you" | "then")
                    || ((raw[i - 1].ends_with([',', ';', ':']) || bare(raw[i - 1]) == "and") && object_follows)
            })
            .map(|(_, w)| crate::textsearch::root(&bare(w)))
            .collect();
        TaskWords { values, content, ask, commands }
    }
}

/// Each tool's words, computed when a plan first needs them.
#[derive(Default)]
struct Vocabularies {
    words: HashMap<String, BTreeSet<String>>,
    nouns: HashMap<String, BTreeSet<String>>,
}

impl Vocabularies {
    /// Roots of what a tool is called and about, and of what its response holds: keys, and
    /// one-word example values (`"job": "Director"`).
    fn of(&mut self, catalog: &Catalog, id: &str) -> &BTreeSet<String> {
        self.words.entry(id.to_string()).or_insert_with(|| {
            let mut words = BTreeSet::new();
            let Ok(tool) = catalog.find(id) else { return words };
            let mut add = |text: &str| {
                for w in crate::textsearch::tokens(text, true) {
                    words.insert(crate::textsearch::root(&w));
                }
            };
            add(&tool.name);
            if let Some(endpoint) = tool.endpoint() {
                add(&endpoint);
            }
            add(&tool.description.chars().take(400).collect::<String>());
            // An operation without a description is about what the others on its path say
            // (the provisioning of a TLS certificate beside the one that reads it).
            if tool.description.trim().is_empty()
                && let Transport::Http { path, .. } = &tool.transport
            {
                for sibling in catalog.tools_by_name(&tool.toolset) {
                    if matches!(&sibling.transport, Transport::Http { path: p, .. } if p == path) {
                        add(&sibling.description.chars().take(400).collect::<String>());
                    }
                }
            }
            // What a tool is about has kindred words; what its response holds does not: every
            // list of movies has a `poster_path`, and none of them answers "an image of …".
            let mut words = with_kindred(words);
            let mut keys = Vec::new();
            if let Some(response) = &*tool.response {
                response_keys(tool, response, 0, &mut keys);
            }
            for example in tool.examples.iter().filter_map(|e| e.response.as_ref()).take(3) {
                example_words(example, &mut keys, &mut 2_000);
            }
            for key in keys {
                for w in crate::textsearch::tokens(&key, true) {
                    words.insert(crate::textsearch::root(&w));
                }
            }
            words
        })
    }

    /// Roots of the nouns a tool's path (else its name) is about, without verbs like `search`.
    fn nouns(&mut self, catalog: &Catalog, id: &str) -> &BTreeSet<String> {
        self.nouns.entry(id.to_string()).or_insert_with(|| {
            let Ok(tool) = catalog.find(id) else { return BTreeSet::new() };
            let text = match &tool.transport {
                Transport::Http { path, .. } => {
                    path.split('/').filter(|s| !s.starts_with('{')).collect::<Vec<_>>().join(" ")
                }
                _ => tool.name.clone(),
            };
            with_kindred(
                crate::textsearch::tokens(&text, true)
                    .iter()
                    .map(|w| crate::textsearch::root(w))
                    .filter(|w| {
                        !["search", "find", "list", "get", "query"].iter().any(|v| crate::textsearch::root(v) == *w)
                    })
                    .collect(),
            )
        })
    }
}

/// The key by which a name picks one item of the list a tool answers with (`name`, `title`, …),
/// if it answers with such a list (at the top or in one of its top-level keys).
fn named_items(tool: &Tool) -> Option<(Option<&str>, &'static str)> {
    const NAME_KEYS: &[&str] = &["name", "title", "login", "slug", "full_name", "display_name"];
    let response = (*tool.response).as_ref()?;
    let lists = schema::items(tool, response).map(|items| (None, items)).into_iter().chain(
        schema::keys(tool, response)
            .into_iter()
            .filter_map(|(list, value)| schema::items(tool, value).map(|items| (Some(list), items))),
    );
    for (list, items) in lists {
        let keys = schema::keys(tool, items);
        if let Some(key) = NAME_KEYS.iter().find(|k| keys.iter().any(|(name, _)| name == *k)) {
            return Some((list, key));
        }
    }
    None
}

/// Property names of a response schema, a few levels deep.
fn response_keys(tool: &Tool, node: &Value, depth: usize, out: &mut Vec<String>) {
    if depth > 4 || out.len() > 200 {
        return;
    }
    if let Some(items) = schema::items(tool, node) {
        response_keys(tool, items, depth + 1, out);
    }
    for (key, value) in schema::keys(tool, node) {
        out.push(key.to_string());
        response_keys(tool, value, depth + 1, out);
    }
}

/// Keys and one-word string values of an example response (`Director`, `Acting`), within `budget`.
fn example_words(value: &Value, out: &mut Vec<String>, budget: &mut usize) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    match value {
        // Short phrases are categories (`Director of Photography`, `Acting`); longer text is
        // prose, numbers and codes say nothing.
        Value::String(s)
            if s.len() <= 40
                && s.split_whitespace().count() <= 4
                && s.chars().all(|c| c.is_alphabetic() || c == ' ') =>
        {
            out.push(s.clone())
        }
        Value::Array(items) => items.iter().for_each(|v| example_words(v, out, budget)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k.clone());
            example_words(v, out, budget);
        }),
        _ => {}
    }
}

impl Search<'_, '_> {
    /// Every chain of at most `room` calls whose last call is `tool`.
    fn chains_ending_in(&mut self, tool: &Tool, room: usize) -> Vec<Partial> {
        if room == 0 || self.spent >= self.limit {
            return Vec::new();
        }
        let key = (tool.id(), room);
        if let Some(known) = self.memo.get(&key) {
            return known.clone();
        }
        let chains = self.build_chains_ending_in(tool, room);
        // Chains cut short by the limit are not all there is: a later final may build them whole.
        if self.spent < self.limit {
            self.memo.insert(key, chains.clone());
        }
        chains
    }

    fn build_chains_ending_in(&mut self, tool: &Tool, room: usize) -> Vec<Partial> {
        self.spent += 1;
        let mut arguments: Vec<Vec<ArgumentOption>> = Vec::new();
        for param in tool.required() {
            let options = self.options_for(tool, param, room);
            if options.is_empty() {
                return Vec::new();
            }
            arguments.push(options);
        }
        // Each combination of the arguments' options, the producers' chains run first.
        let empty = Partial { calls: Vec::new(), used: Vec::new(), flow: Vec::new() };
        let mut combined: Vec<(Vec<Argument>, Partial)> = vec![(Vec::new(), empty)];
        for options in arguments {
            let mut next = Vec::new();
            for (args, partial) in &combined {
                for (argument, producer, value) in &options {
                    let mut partial = partial.clone();
                    let mut argument = argument.clone();
                    if let Some(producer) = producer {
                        // Two arguments from one producer (`owner` and `repo` of one
                        // repository) share its call instead of running it twice.
                        let n = producer.calls.len();
                        let shared = (0..=partial.calls.len().saturating_sub(n)).find(|&at| {
                            partial.calls.len() >= n
                                && partial.calls[at..at + n]
                                    .iter()
                                    .zip(&producer.calls)
                                    .all(|(a, b)| *a == shifted(b.clone(), at))
                        });
                        let offset = match shared {
                            Some(at) => at,
                            None => {
                                if partial.calls.len() + n + 1 > room {
                                    continue;
                                }
                                // A task value goes to one argument of the plan only.
                                if producer.used.iter().any(|i| partial.used.contains(i)) {
                                    continue;
                                }
                                let offset = partial.calls.len();
                                partial.calls.extend(producer.calls.iter().cloned().map(|c| shifted(c, offset)));
                                partial.used.extend(producer.used.iter().copied());
                                partial.flow.extend(producer.flow.iter().copied());
                                offset
                            }
                        };
                        if let Source::Field { call, weight, .. } = &mut argument.source {
                            *call += offset;
                            partial.flow.push(*weight);
                        }
                    }
                    if let Some(i) = *value {
                        if partial.used.contains(&i) {
                            continue;
                        }
                        partial.used.push(i);
                    }
                    let mut args = args.clone();
                    args.push(argument);
                    next.push((args, partial));
                    self.spent += 1;
                    if self.spent >= self.limit {
                        return Vec::new();
                    }
                }
            }
            // The shortest combinations are kept: a call with several id arguments multiplies
            // its producers' chains, and the long ones are the least likely plans.
            next.sort_by_key(|(_, partial)| partial.calls.len());
            next.truncate(CHAINS_PER_TOOL);
            combined = next;
            if combined.is_empty() || self.spent >= self.limit {
                return Vec::new();
            }
        }
        combined
            .into_iter()
            .map(|(arguments, mut partial)| {
                partial.calls.push(Call {
                    tool: tool.id(),
                    arguments,
                    endpoint: tool.endpoint(),
                    writes: tool.read_only() != Some(true),
                });
                partial.calls = merge_repeated(std::mem::take(&mut partial.calls));
                partial
            })
            .collect()
    }

    /// Where a required parameter's value may come from, each with the chain that produces it.
    fn options_for(&mut self, tool: &Tool, param: &Param, room: usize) -> Vec<ArgumentOption> {
        let mut out = Vec::new();
        let argument = |source| Argument { param: param.name.clone(), source };
        if let Some(values) = schema::enum_values(tool, &param.schema) {
            let value = values::pick_enum(values, &self.task_words).or_else(|| param.default.clone());
            if let Some(value) = value.or_else(|| values.first().cloned()) {
                out.push((argument(Source::Default(value)), None, None));
            }
            return out;
        }
        let names = self.values.names.len();
        // An ordinal (`the first pull request`) may be a place in a list as well as a number.
        let ordinal = |i: usize| i >= names && self.values.ordinal.get(i - names).copied().unwrap_or(false);
        for (value, index) in self.values.for_param(param, &schema::types(tool, &param.schema)) {
            // A plan that picks from the list instead has not left the ordinal unused.
            self.offered.extend(index.filter(|&i| !ordinal(i)));
            out.push((argument(Source::Task(value)), None, index));
        }
        // A value the task gives for the parameter by its kind (`owner/repo`, `pull request
        // 1347`) is what it means; fetching one from a response instead (a pull request's own
        // repository for `owner`) answers another task. A name may fit any text parameter, so
        // it does not rule the producers out.
        // The list an ordinal would pick from stays an option.
        let given = out.iter().any(|(_, _, index)| index.is_none_or(|i| i >= names && !ordinal(i)));
        if room > 1 && !given {
            // The producers most relevant to the task first: an entity has many (every list of
            // movies yields movie ids), and the task says which way to it is meant.
            // A producer that needs the very parameter it would give (`PATCH …/pulls` for the
            // `owner` of a list of pull requests) comes after those that do not: it can only
            // start from another producer, and ranked by relevance alone such producers took
            // every place. It stays an option (`/movie/{movie_id}/similar` gives other movies' ids).
            let needs_it =
                |from: &str| self.planner.catalog.find(from).is_ok_and(|p| p.required().any(|q| q.name == param.name));
            let (mut edges, mut needing): (Vec<_>, Vec<_>) =
                self.planner.flow.producers(&tool.id(), &param.name).cloned().partition(|e| !needs_it(&e.from));
            let rank = |e: &crate::toolset::dataflow::Edge| {
                e.weight * (0.25 + self.relevance.get(&*e.from).copied().unwrap_or(0.0))
            };
            edges.sort_by(|a, b| rank(b).total_cmp(&rank(a)));
            needing.sort_by(|a, b| rank(b).total_cmp(&rank(a)));
            edges.append(&mut needing);
            // Each producer's best field first, its other fields in the places left: a response
            // that holds the thing in many places (a pull request's `user`, `head.user`,
            // `assignee`, …) is one way to it, and its fields took every place from the other
            // producers.
            let mut producers_seen = HashSet::new();
            let (mut edges, mut other_fields): (Vec<_>, Vec<_>) =
                edges.into_iter().partition(|e| producers_seen.insert(e.from.clone()));
            edges.append(&mut other_fields);
            edges.truncate(PRODUCERS_PER_PARAM);
            for edge in edges {
                let Ok(producer) = self.planner.catalog.find(&edge.from) else { continue };
                let why = edge.evidence.iter().map(|e| &*e.why).collect::<Vec<_>>().join("; ");
                for chain in self.chains_ending_in(producer, room - 1).into_iter().take(CHAINS_PER_PRODUCER) {
                    let call = chain.calls.len() - 1;
                    let source =
                        Source::Field { call, field: (*edge.field).clone(), weight: edge.weight, why: why.clone() };
                    out.push((argument(source), Some(chain), None));
                }
            }
        }
        // Task values first (they carry no chain), then the shortest chains.
        out.sort_by_key(|(_, chain, _)| chain.as_ref().map_or(0, |c| c.calls.len()));
        out.truncate(OPTIONS_PER_PARAM);
        if out.is_empty()
            && let Some(default) = &param.default
        {
            out.push((argument(Source::Default(default.clone())), None, None));
        }
        out
    }
}

/// The calls with any call that repeats an earlier one (same tool, same arguments) taken out and
/// its readers pointed at the earlier one: two arguments reached through different producers'
/// chains (`pull_number` and a review's id, both from one list of pull requests) run it once.
fn merge_repeated(calls: Vec<Call>) -> Vec<Call> {
    let mut kept: Vec<Call> = Vec::with_capacity(calls.len());
    let mut moved_to = Vec::with_capacity(calls.len());
    for mut call in calls {
        for argument in &mut call.arguments {
            if let Source::Field { call, .. } = &mut argument.source {
                *call = moved_to[*call];
            }
        }
        match kept.iter().position(|earlier| call.repeats(earlier)) {
            Some(at) => moved_to.push(at),
            None => {
                moved_to.push(kept.len());
                kept.push(call);
            }
        }
    }
    kept
}

impl Call {
    /// Whether this call sends what `earlier` sends: the same tool with each argument read from
    /// the same place (a field's weight and evidence say why it was chosen, not what it reads).
    fn repeats(&self, earlier: &Call) -> bool {
        let same = |a: &Argument, b: &Argument| {
            a.param == b.param
                && match (&a.source, &b.source) {
                    (Source::Field { call, field, .. }, Source::Field { call: other, field: other_field, .. }) => {
                        call == other && field == other_field
                    }
                    (a, b) => a == b,
                }
        };
        self.tool == earlier.tool
            && self.arguments.len() == earlier.arguments.len()
            && self.arguments.iter().zip(&earlier.arguments).all(|(a, b)| same(a, b))
    }
}

/// A call moved `offset` places later in a plan: its field sources point there too.
fn shifted(mut call: Call, offset: usize) -> Call {
    for argument in &mut call.arguments {
        if let Source::Field { call, .. } = &mut argument.source {
            *call += offset;
        }
    }
    call
}

impl Plan {
    /// The plan as a program in the module dialect: one call per line, each argument a literal
    /// from the task, a subscript into an earlier response, or a default, then the last response
    /// printed.
    pub fn skeleton(&self, catalog: &Catalog) -> String {
        let mut toolsets: Vec<&str> =
            self.calls.iter().filter_map(|c| c.tool.split_once('.').map(|(t, _)| t)).collect();
        toolsets.sort();
        toolsets.dedup();
        let mut out = format!("from chainsmith.tools import {}\n\n", toolsets.join(", "));
        let mut names: Vec<String> = Vec::new();
        for call in &self.calls {
            let (toolset, name) = call.tool.split_once('.').unwrap_or(("", &call.tool));
            let mut var = name.to_string();
            let mut n = 2;
            while names.contains(&var) {
                var = format!("{name}_{n}");
                n += 1;
            }
            let arguments: Vec<String> = call
                .arguments
                .iter()
                .map(|a| {
                    let value = match &a.source {
                        Source::Task(v) | Source::Default(v) => python_literal(v),
                        Source::Field { call, field, .. } => format!("{}{}", names[*call], field.subscripts()),
                    };
                    format!("{}={value}", a.param)
                })
                .collect();
            if call.writes {
                out.push_str("# may change data: chainsmith asks before running this call\n");
            }
            let written = catalog.find(&call.tool).map(|t| t.name.clone()).unwrap_or_else(|_| name.to_string());
            out.push_str(&format!("{var} = {toolset}.{written}({})\n", arguments.join(", ")));
            let at = names.len();
            for pick in self.picks.iter().filter(|p| p.call == at) {
                let list = match &pick.list {
                    Some(key) => format!("{var}[{}]", python_literal(&Value::String(key.clone()))),
                    None => var.clone(),
                };
                let (key, name) = (
                    python_literal(&Value::String(pick.key.clone())),
                    python_literal(&Value::String(pick.name.clone())),
                );
                out.push_str(&format!("{list} = [item for item in {list} if item[{key}] == {name}]\n"));
            }
            names.push(var);
        }
        if let Some(last) = names.last() {
            out.push_str(&format!("print({last})\n"));
        }
        out
    }

    /// `GET /search/person → GET /person/{person_id}/movie_credits`, or the tool ids.
    pub fn path(&self) -> Vec<String> {
        self.calls.iter().map(|c| c.endpoint.clone().unwrap_or_else(|| c.tool.clone())).collect()
    }

    pub fn to_json(&self, catalog: &Catalog) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|c| {
                let arguments: BTreeMap<&str, Value> = c
                    .arguments
                    .iter()
                    .map(|a| {
                        let source = match &a.source {
                            Source::Task(v) => json!({"task": v}),
                            Source::Default(v) => json!({"default": v}),
                            Source::Field { call, field, weight, why } => {
                                json!({"call": call, "field": field.to_string(), "weight": weight, "evidence": why})
                            }
                        };
                        (a.param.as_str(), source)
                    })
                    .collect();
                json!({"tool": c.tool, "endpoint": c.endpoint, "writes": c.writes, "arguments": arguments})
            })
            .collect();
        json!({"score": self.score, "calls": calls, "reasons": self.reasons, "skeleton": self.skeleton(catalog)})
    }
}

fn python_literal(value: &Value) -> String {
    match value {
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolset::test_support::openapi_catalog;

    /// A search of repositories, their pull requests (read, and one that opens a pull request).
    pub(super) const SPEC: &str = r#"{"openapi": "3.0.0", "info": {"title": "hub", "version": "1"}, "paths": {
      "/search/repositories": {"get": {"summary": "Search repositories", "parameters": [{"name": "q", "in": "query", "required": true, "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "stargazers_count": {"type": "integer"},
            "owner": {"type": "object", "properties": {"login": {"type": "string"}, "id": {"type": "integer"}}}}}}}}}}}}}},
      "/repos/{owner}/{repo}/pulls": {
        "get": {"summary": "List pull requests", "parameters": [{"name": "owner", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "repo", "in": "path", "required": true, "schema": {"type": "string"}}],
          "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array", "items": {"type": "object", "properties": {"number": {"type": "integer"}, "title": {"type": "string"}}}}}}}}},
        "post": {"summary": "Create a pull request", "parameters": [{"name": "owner", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "repo", "in": "path", "required": true, "schema": {"type": "string"}}],
          "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"type": "object", "properties": {"number": {"type": "integer"}}}}}}}}}
    }}"#;

    fn plan_for(task: &str) -> (Catalog, Vec<Plan>) {
        let catalog = openapi_catalog("hub", SPEC, None);
        let flow = DataFlow::build(&catalog);
        let index = CatalogIndex::new(&catalog);
        let plans = Planner { catalog: &catalog, flow: &flow, index: &index, toolnet: None }.plans(task, 5).unwrap();
        (catalog, plans)
    }

    #[test]
    fn two_arguments_from_one_response_share_its_call() {
        let (catalog, plans) = plan_for("list the pull requests of the most starred \"rust\" repository");
        let first = &plans[0];
        assert_eq!(first.path(), ["GET /search/repositories", "GET /repos/{owner}/{repo}/pulls"], "{plans:#?}");
        let skeleton = first.skeleton(&catalog);
        assert!(skeleton.contains("search_repositories = hub.search_repositories(q=\"rust\")"), "{skeleton}");
        assert!(
            skeleton.contains("owner=search_repositories[\"items\"][0][\"owner\"][\"login\"]")
                && skeleton.contains("repo=search_repositories[\"items\"][0][\"name\"]"),
            "{skeleton}"
        );
    }

    #[test]
    fn a_write_is_planned_only_when_asked_and_then_marked() {
        let (_, plans) = plan_for("list the pull requests of the most starred \"rust\" repository");
        assert!(plans[0].calls.iter().all(|c| !c.writes), "{plans:#?}");
        let (catalog, plans) = plan_for("create a pull request in the most starred \"rust\" repository");
        let first = &plans[0];
        assert_eq!(first.path().last().map(String::as_str), Some("POST /repos/{owner}/{repo}/pulls"), "{plans:#?}");
        assert!(first.calls.last().unwrap().writes);
        assert!(first.skeleton(&catalog).contains("# may change data: chainsmith asks before running this call\n"));
    }

    #[test]
    fn a_change_only_described_is_not_asked() {
        let (_, plans) = plan_for("list the pull requests created in the most starred \"rust\" repository");
        assert!(plans[0].calls.iter().all(|c| !c.writes), "{plans:#?}");
        for plan in plans.iter().filter(|p| p.calls.iter().any(|c| c.writes)) {
            assert!(plan.reasons.iter().any(|r| r.contains("which the task does not ask")), "{plan:#?}");
        }
    }

    /// Sites with names, and a site's TLS certificate: read (no description) and provisioned.
    const SITES: &str = r#"{"openapi": "3.0.0", "info": {"title": "host", "version": "1"}, "paths": {
      "/sites": {"get": {"summary": "List sites", "responses": {"200": {"description": "ok", "content": {"application/json": {"schema":
        {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}}}}}}}},
      "/sites/{site_id}/ssl": {
        "get": {"parameters": [{"name": "site_id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"expires_at": {"type": "string"}}}}}}}},
        "post": {"summary": "Provision a TLS certificate for the site", "parameters": [{"name": "site_id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"expires_at": {"type": "string"}}}}}}}}}
    }}"#;

    /// "my site 'blog'" is found in the list of sites by its name, and the operation that reads
    /// the certificate answers although only the one beside it describes what it is about.
    #[test]
    fn a_name_of_the_users_own_thing_picks_it_from_their_list() {
        let catalog = openapi_catalog("host", SITES, None);
        let flow = DataFlow::build(&catalog);
        let index = CatalogIndex::new(&catalog);
        let planner = Planner { catalog: &catalog, flow: &flow, index: &index, toolnet: None };
        let plans = planner.plans("When does the TLS certificate of my site 'blog' expire?", 3).unwrap();
        assert_eq!(plans[0].path(), ["GET /sites", "GET /sites/{site_id}/ssl"], "{plans:#?}");
        let skeleton = plans[0].skeleton(&catalog);
        assert!(skeleton.contains("sites = [item for item in sites if item[\"name\"] == \"blog\"]\n"), "{skeleton}");
        assert!(skeleton.contains("site_id=sites[0][\"id\"]"), "{skeleton}");
    }

    /// The task's words as the scorer reads them: the verb of "directed by NAME" relates the name
    /// and "the number of" asks to count; neither is what the answer holds.
    #[test]
    fn relations_to_a_name_and_counting_are_not_what_is_asked() {
        let words = TaskWords::of("give me the number of movies directed by Sofia Coppola", &BTreeSet::new());
        let root = |w: &str| crate::textsearch::root(w);
        assert!(words.content.contains(&root("movies")), "{:?}", words.content);
        assert!(!words.content.contains(&root("directed")), "{:?}", words.content);
        assert!(!words.content.contains(&root("number")), "{:?}", words.content);
        assert_eq!(words.ask, [root("movies")], "the head goes on past the count to what is counted");
        let kept = TaskWords::of("Who is the director of the movie \"Twilight\"?", &BTreeSet::new());
        assert!(kept.content.contains(&root("director")), "asked, not a relation: {:?}", kept.content);
    }

    /// A change is asked by a sentence's verb, also in a question or a later clause; the API's
    /// name does not end what is asked.
    #[test]
    fn a_change_is_asked_in_questions_and_later_clauses() {
        let none = BTreeSet::new();
        let root = |w: &str| crate::textsearch::root(w);
        assert!(TaskWords::of("Can you close the oldest pull request?", &none).commands.contains(&root("close")));
        let words = TaskWords::of("Find the stale branch and then delete it", &none);
        assert!(words.commands.contains(&root("delete")), "{:?}", words.commands);
        let words = TaskWords::of("Find the stale branch and delete it", &none);
        assert!(words.commands.contains(&root("delete")), "{:?}", words.commands);
        let words = TaskWords::of("List the open and closed pull requests of octocat/Hello-World", &none);
        assert!(!words.commands.contains(&root("closed")), "described, not asked: {:?}", words.commands);
        let time = BTreeSet::from(["time".to_string()]);
        assert!(TaskWords::of("What time is it in Tokyo?", &time).content.contains(&root("time")));
        let netlify = BTreeSet::from(["netlify".to_string()]);
        let words = TaskWords::of("List the Netlify sites with forms", &netlify);
        assert!(words.ask.contains(&root("sites")), "{:?}", words.ask);
    }

    /// Two arguments reached through different edges into one response run its call once, whatever
    /// evidence each edge carries.
    #[test]
    fn a_call_repeated_with_other_evidence_runs_once() {
        let list = Call { tool: "hub.list".into(), arguments: vec![], endpoint: None, writes: false };
        let read = |why: &str, weight: f64| Call {
            tool: "hub.get".into(),
            arguments: vec![Argument {
                param: "id".into(),
                source: Source::Field { call: 0, field: FieldPath(vec![]), weight, why: why.into() },
            }],
            endpoint: None,
            writes: false,
        };
        let merged = merge_repeated(vec![list.clone(), read("named id", 0.9), read("same type", 0.4)]);
        assert_eq!(merged.len(), 2, "{merged:#?}");
        let other_tool = Call { tool: "hub.other".into(), ..read("named id", 0.9) };
        assert_eq!(merge_repeated(vec![list, read("named id", 0.9), other_tool]).len(), 3);
    }

    /// The paths of the best five plans for `task` on the vendored GitHub pull-requests spec.
    fn github_paths(task: &str) -> Vec<Vec<String>> {
        let spec = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/specs/api.github.com.pulls.json"
        ))
        .unwrap();
        let catalog = openapi_catalog("github", &spec, None);
        let flow = DataFlow::build(&catalog);
        let index = CatalogIndex::new(&catalog);
        let planner = Planner { catalog: &catalog, flow: &flow, index: &index, toolnet: None };
        planner.plans(task, 5).unwrap().iter().map(Plan::path).collect()
    }

    /// "Python" qualifies the repository searched for; it is no user's name. The owner of the
    /// found repository is (by its shape) a user, whose login the user's repositories take.
    #[test]
    fn a_name_that_qualifies_a_thing_is_searched_by_not_passed_as_another() {
        let paths = github_paths("List the repositories of the owner of the most starred Python repository");
        assert_eq!(paths[0], ["GET /search/repositories", "GET /users/{username}/repos"], "{paths:#?}");
    }

    /// A list of pull requests holds users in a dozen places (`user`, `head.user`, `assignee`, …):
    /// each was a producer of its own, they took every producer's place for `username`, and the
    /// one pull request the task names was never asked.
    #[test]
    fn a_producer_takes_one_place_however_many_fields_it_has() {
        let paths = github_paths("List the public repositories of the author of pull request 7 in rust-lang/cargo");
        assert_eq!(
            paths[0],
            ["GET /repos/{owner}/{repo}/pulls/{pull_number}", "GET /users/{username}/repos"],
            "{paths:#?}"
        );
    }

    /// "open" ranks the operations that change a pull request first; each of them needs the
    /// repository it would give, and they had taken every producer's place, so the list of a
    /// searched repository's pull requests was never built.
    #[test]
    fn producers_that_need_what_they_give_come_last() {
        let paths = github_paths("List the open pull requests of the most starred Rust repository");
        assert!(
            paths.iter().any(|p| p == &["GET /search/repositories", "GET /repos/{owner}/{repo}/pulls"]),
            "{paths:?}"
        );
    }

    /// "the first pull request" may be pull request number 1 or the first of a list: the list
    /// stays among the plans.
    #[test]
    fn an_ordinal_keeps_the_list_it_may_pick_from() {
        let paths = github_paths("List the reviews of the first pull request of octocat/Hello-World");
        assert!(
            paths
                .iter()
                .any(|p| p
                    == &["GET /repos/{owner}/{repo}/pulls", "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews"]),
            "{paths:?}"
        );
    }

    /// The first plan for each task on the real TMDB spec, without ToolNet.
    fn tmdb_first_plans(tasks: &[&str]) -> Vec<(Vec<String>, String)> {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tmdb"));
        let catalog = crate::toolset::loader::load(&crate::config::Config::load(root, None));
        let flow = DataFlow::build(&catalog);
        let index = CatalogIndex::new(&catalog);
        let planner = Planner { catalog: &catalog, flow: &flow, index: &index, toolnet: None };
        tasks
            .iter()
            .map(|task| {
                let plan = planner.plans(task, 1).unwrap().remove(0);
                (plan.path(), plan.skeleton(&catalog))
            })
            .collect()
    }

    /// On the real TMDB spec: movies directed by someone are that person's movie credits, not
    /// one credit looked up from them.
    #[test]
    fn movies_directed_by_someone_are_their_movie_credits() {
        let plans = tmdb_first_plans(&["give me the number of movies directed by Sofia Coppola"]);
        assert_eq!(plans[0].0, ["GET /search/person", "GET /person/{person_id}/movie_credits"], "{plans:#?}");
    }

    /// What a question asks is where English puts it: "who directed X" asks for whoever did it,
    /// "when was X released" for a date, "who starred in" for the cast; and a list whose name
    /// the spec lost (`trending`'s `""`) still feeds the call after it.
    #[test]
    fn questions_ask_what_their_verb_says() {
        let tasks = [
            "Who directed the most popular movie?",
            "When was the movie Heat released?",
            "Who starred in the movie Heat?",
            "Show me a photo of the collection Alien",
            "Who is the director of this week's trending movie?",
        ];
        let plans = tmdb_first_plans(&tasks);
        let paths: Vec<Vec<String>> = plans.iter().map(|(path, _)| path.clone()).collect();
        assert_eq!(
            paths,
            [
                vec!["GET /movie/popular", "GET /movie/{movie_id}/credits"],
                vec!["GET /search/movie", "GET /movie/{movie_id}/release_dates"],
                vec!["GET /search/movie", "GET /movie/{movie_id}/credits"],
                vec!["GET /search/collection", "GET /collection/{collection_id}/images"],
                vec!["GET /trending/{media_type}/{time_window}", "GET /movie/{movie_id}/credits"],
            ]
        );
        assert!(
            plans[4].1.contains(r#"tmdb.trending(media_type="movie", time_window="week")"#)
                && plans[4].1.contains(r#"movie_id=trending["results"][0]["id"]"#),
            "{}",
            plans[4].1
        );
    }
}
