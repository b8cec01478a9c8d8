//! Attributable reflection and the DFSDT search against a scripted OpenAI-compatible server (which
//! answers by the request's content: the task, the tool named, a revision, a judge, a diversity
//! request) and the TMDB-like test server: retrieval, prompts, extraction, static checks, runs,
//! attribution, revision, tree search and budget stops are the real code.

use std::path::Path;
use std::sync::Arc;

use crate::support::openai::{Answer, Server, client, unreachable_client};
use crate::support::runtime::{TmdbServer, workspace};
use chainsmith::config::Config;
use chainsmith::generate::atc::Budget;
use chainsmith::generate::reflect::{Attribution, Runner};
use chainsmith::generate::search::{self, Kind, Request, Settings, Stop, Verdict};
use chainsmith::llm::Client;
use chainsmith::runtime::Cancel;
use chainsmith::toolset::index::CatalogIndex;
use chainsmith::toolset::loader as toolsets;
use serde_json::Value;

fn runner(dir: &Path) -> Runner {
    let mut config = Config::load(dir, None);
    // Trusted for the session, as `--trust` does: the chains call the test's server on this machine.
    config.trusted = true;
    let catalog = toolsets::load(&config);
    Runner {
        root: dir.to_path_buf(),
        program: dir.join("chain.py"),
        config: Arc::new(config),
        catalog: Arc::new(catalog),
        allow_writes: false,
        cancel: Cancel::new(),
        mcp: None,
        upstream: Vec::new(),
        learn: true,
    }
}

fn settings(width: usize, depth: usize, reflections: usize, calls: u32) -> Settings {
    Settings {
        width,
        depth,
        reflections,
        budget: Budget { max_llm_calls: calls, max_tokens: 1_000_000 },
        static_feedback: true,
        plans: 0,
    }
}

/// The last message's text, and the whole conversation's.
fn texts(body: &Value) -> (String, String) {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap()["content"].as_str().unwrap().to_string();
    let all = messages.iter().map(|m| m["content"].as_str().unwrap_or("")).collect::<Vec<_>>().join("\n");
    (last, all)
}

#[derive(Debug, PartialEq)]
enum Asks {
    Draft,
    Revision,
    Diversity,
    Judge,
    Attribution,
    Static,
}

fn asks(body: &Value) -> Asks {
    let (last, _) = texts(body);
    if last.contains("Which tool is the error") || last.contains("not one of the candidate tools") {
        Asks::Attribution
    } else if last.contains("Does the output answer the task") {
        Asks::Judge
    } else if last.contains("DIFFERENT approach") {
        Asks::Diversity
    } else if last.contains("The program failed when it ran. Revise it.") {
        Asks::Revision
    } else if last.contains("found by checking it against the tool protocols") {
        Asks::Static
    } else {
        Asks::Draft
    }
}

fn fenced(prose: &str, code: &str) -> String {
    format!("{prose}\n\n```python\nfrom chainsmith.tools import tmdb\n{code}```\n\nThis should work!")
}

async fn run_search(task: &str, dir: &Path, client: &Client, settings: &Settings, runner: &Runner) -> search::Outcome {
    let index = CatalogIndex::new(&runner.catalog);
    let (candidates, allowed) = search::candidates(task, &runner.catalog, &index, 20, &[], None);
    search::search(
        Request { task, candidates, allowed, given: None, given_run: None, judge: true, plans: Vec::new() },
        &runner.catalog,
        &index,
        client,
        runner,
        settings,
    )
    .await
    .tap(dir)
}

trait Tap {
    fn tap(self, dir: &Path) -> Self;
}

impl Tap for search::Outcome {
    /// Every run fed ToolNet's store.
    fn tap(self, dir: &Path) -> Self {
        let runs = self.nodes.iter().filter(|n| n.trace.is_some()).count();
        if runs > 0 {
            let store = std::fs::read_to_string(chainsmith::graph::store::Store::path(dir)).unwrap_or_default();
            assert!(store.contains("chain"), "ToolNet's store has the runs: {store}");
        }
        self
    }
}

const BIO: &str = "print the biography of Sofia Coppola";

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_call_is_attributed_from_the_trace_and_revised_with_its_protocol() {
    let tmdb = TmdbServer::start(&[]);
    let ws = workspace(&tmdb.base_url(), false, "");
    let llm = Server::start(|body, _| match asks(body) {
        Asks::Draft => Answer::text(fenced(
            "Here's the chain:",
            "found = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=404)\nprint(person[\"biography\"])\n",
        )),
        Asks::Revision => Answer::text(fenced(
            "You're right, the id must come from the search:",
            "found = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=found[\"results\"][0][\"id\"])\nprint(person[\"biography\"])\n",
        )),
        Asks::Judge => Answer::text("Solved. The biography is printed."),
        other => panic!("unexpected request {other:?}"),
    });
    let client = client(&llm);
    let runner = runner(ws.path());
    let outcome = run_search(BIO, ws.path(), &client, &settings(2, 3, 3, 10), &runner).await;

    assert!(outcome.solved, "{outcome:#?}");
    assert_eq!(llm.count(), 3, "draft, revision, judge");
    let kinds: Vec<(Kind, usize)> = outcome.nodes.iter().map(|n| (n.kind, n.depth)).collect();
    assert_eq!(kinds, [(Kind::Root, 0), (Kind::Draft, 1), (Kind::Revision, 2)]);
    assert_eq!(outcome.nodes[1].attributed, Some(("tmdb.person".to_string(), Attribution::Trace)));
    assert!(matches!(&outcome.nodes[1].verdict, Some(Verdict::Failed(e)) if e.contains("404")), "{outcome:#?}");
    let best = outcome.best_node().unwrap();
    assert_eq!(best.id, 2);
    assert!(best.program.contains("found[\"results\"][0][\"id\"]"));
    // The revision prompt: the error, the failed attempt and tmdb.person's full protocol.
    let bodies = llm.bodies();
    let (revision, all) = texts(&bodies[1]);
    assert!(revision.contains("The error is attributed to the tool `tmdb.person`"), "{revision}");
    assert!(revision.contains("tmdb.person(person_id: integer"), "{revision}");
    assert!(revision.contains("returns:"), "{revision}");
    assert!(revision.contains("#2 tmdb.person(person_id=404)  ✗ 404"), "{revision}");
    assert!(all.contains("tmdb.person(person_id=404)"), "the previous attempt is in the conversation");
    // The revision's run replayed the search instead of calling it again.
    let trace = best.trace.as_ref().unwrap();
    assert!(trace.calls[0].replayed && !trace.calls[1].replayed, "{trace:#?}");
    let paths: Vec<String> =
        tmdb.requests().as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap().to_string()).collect();
    assert_eq!(paths.iter().filter(|p| p.contains("search/person")).count(), 1, "{paths:?}");
    assert_eq!(outcome.shape(), "2 attempts (1 draft, 1 revision, 0 alternatives), depth 2, 0 backtracks");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_that_gives_up_backtracks_to_a_distinct_sibling_without_the_broken_tool() {
    let tmdb = TmdbServer::start(&[]);
    let ws = workspace(&tmdb.base_url(), false, "");
    let llm = Server::start(|body, _| match asks(body) {
        Asks::Draft => Answer::text(fenced("Sure!", "print(tmdb.person(person_id=404)[\"name\"])\n")),
        Asks::Revision => Answer::text(fenced("Try the other id:", "print(tmdb.person(person_id=500)[\"name\"])\n")),
        Asks::Diversity => Answer::text(fenced(
            "A different approach, through the search:",
            "found = tmdb.search_person(query=\"Sofia Coppola\")\nprint(found[\"results\"][0][\"name\"])\n",
        )),
        Asks::Judge => Answer::text("**Solved** — a name is printed"),
        other => panic!("unexpected request {other:?}"),
    });
    let client = client(&llm);
    let runner = runner(ws.path());
    let task = "print the name of the person Sofia Coppola";
    let outcome = run_search(task, ws.path(), &client, &settings(2, 2, 3, 10), &runner).await;

    assert!(outcome.solved, "{outcome:#?}");
    let shape: Vec<(Kind, Option<usize>, usize)> = outcome.nodes.iter().map(|n| (n.kind, n.parent, n.depth)).collect();
    assert_eq!(
        shape,
        [
            (Kind::Root, None, 0),
            (Kind::Draft, Some(0), 1),
            (Kind::Revision, Some(1), 2),
            (Kind::Alternative, Some(1), 2)
        ]
    );
    assert_eq!(outcome.backtracks(), 1);
    assert!(outcome.nodes.iter().all(|n| n.depth <= 2 && n.children.len() <= 2));
    assert_eq!(llm.count(), 4, "draft, revision, diversity, judge");
    // Self-reflection dropped the tool that failed on every call.
    assert_eq!(outcome.dropped, ["tmdb.person"]);
    let (diversity, _) = texts(&llm.bodies()[2]);
    assert!(
        diversity.contains(
            "Failed attempt 1:\n```python\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)"
        ),
        "{diversity}"
    );
    assert!(
        diversity.contains(
            "Failed attempt 2:\n```python\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=500)"
        ),
        "{diversity}"
    );
    let tools_part = diversity.split("This is not the first attempt").next().unwrap();
    assert!(!tools_part.contains("\ntmdb.person("), "the broken tool is no candidate: {tools_part}");
    assert!(tools_part.contains("\ntmdb.search_person("), "{tools_part}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_judge_makes_a_running_program_give_up() {
    let tmdb = TmdbServer::start(&[]);
    let ws = workspace(&tmdb.base_url(), false, "");
    let llm = Server::start(|body, _| match asks(body) {
        Asks::Draft => {
            Answer::text(fenced("", "found = tmdb.search_person(query=\"Sofia Coppola\")\nprint(found[\"page\"])\n"))
        }
        Asks::Diversity => Answer::text(fenced(
            "Let me count the credits instead.",
            "found = tmdb.search_person(query=\"Sofia Coppola\")\ncredits = tmdb.person_movie_credits(person_id=found[\"results\"][0][\"id\"])\nprint(len(credits[\"crew\"]))\n",
        )),
        Asks::Judge => {
            let (last, _) = texts(body);
            if last.contains("person_movie_credits") {
                Answer::text("Solved: the count is printed.")
            } else {
                Answer::text("Unsolved - it prints a page number, not a number of movies.")
            }
        }
        other => panic!("unexpected request {other:?}"),
    });
    let client = client(&llm);
    let runner = runner(ws.path());
    let task = "how many movies did Sofia Coppola work on";
    let outcome = run_search(task, ws.path(), &client, &settings(2, 1, 3, 10), &runner).await;
    assert!(outcome.solved, "{outcome:#?}");
    assert!(matches!(&outcome.nodes[1].verdict, Some(Verdict::Unsolved(r)) if r.contains("page number")));
    assert_eq!(outcome.nodes[0].children, [1, 2]);
    assert_eq!(outcome.nodes[2].kind, Kind::Alternative);
    assert_eq!(llm.count(), 4, "draft, judge, diversity, judge");
    let (diversity, _) = texts(&llm.bodies()[2]);
    assert!(diversity.contains("it ran, but the output does not answer the task"), "{diversity}");
    // ToolNet's store has both runs with the judge's verdicts (its evaluator rewards answering runs).
    let store = std::fs::read_to_string(ws.path().join(".chainsmith/toolnet.json")).unwrap();
    let store: Value = serde_json::from_str(&store).unwrap();
    let mut verdicts: Vec<Option<bool>> =
        store["runs"].as_object().unwrap().values().map(|r| r["answered"].as_bool()).collect();
    verdicts.sort();
    assert_eq!(verdicts, [Some(false), Some(true)], "{store:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_names_the_tool_when_the_trace_cannot_and_nonsense_is_asked_again() {
    let tmdb = TmdbServer::start(&[]);
    let ws = workspace(&tmdb.base_url(), false, "");
    let llm = Server::start(|body, _| match asks(body) {
        Asks::Draft => Answer::text(fenced(
            "",
            "found = tmdb.search_person(query=\"Sofia Coppola\")\ncount = 0\nif count == 0:\n    raise SystemExit(\"nothing counted\")\n",
        )),
        Asks::Attribution => {
            let (last, _) = texts(body);
            if last.contains("not one of the candidate tools") {
                Answer::text("Sorry — it is `tmdb.search_person`.")
            } else {
                Answer::text("The culprit is the movie_lookup function.")
            }
        }
        Asks::Revision => Answer::text(fenced(
            "",
            "found = tmdb.search_person(query=\"Sofia Coppola\")\nprint(found[\"total_results\"])\n",
        )),
        Asks::Judge => Answer::text("Solved"),
        other => panic!("unexpected request {other:?}"),
    });
    let client = client(&llm);
    let runner = runner(ws.path());
    let outcome =
        run_search("count the people called Sofia Coppola", ws.path(), &client, &settings(2, 3, 3, 10), &runner).await;
    assert!(outcome.solved, "{outcome:#?}");
    assert_eq!(outcome.nodes[1].attributed, Some(("tmdb.search_person".to_string(), Attribution::Model)));
    let kinds: Vec<Asks> = llm.bodies().iter().map(asks).collect();
    assert_eq!(kinds, [Asks::Draft, Asks::Attribution, Asks::Attribution, Asks::Revision, Asks::Judge]);
    let (attribution, _) = texts(&llm.bodies()[1]);
    assert!(attribution.contains("Candidate tools:") && attribution.contains("tmdb.search_person"), "{attribution}");
    let (revision, _) = texts(&llm.bodies()[3]);
    assert!(revision.contains("attributed to the tool `tmdb.search_person`"), "{revision}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_budget_stops_the_search_and_keeps_the_best_node() {
    let tmdb = TmdbServer::start(&[]);
    let ws = workspace(&tmdb.base_url(), false, "");
    let llm = Server::start(|body, _| match asks(body) {
        Asks::Draft | Asks::Revision | Asks::Diversity => {
            Answer::text(fenced("", "found = tmdb.search_person(query=\"x\")\nprint(tmdb.person(person_id=404))\n"))
        }
        other => panic!("unexpected request {other:?}"),
    });
    let client = client(&llm);
    let runner = runner(ws.path());
    let outcome = run_search(BIO, ws.path(), &client, &settings(3, 5, 5, 3), &runner).await;
    assert!(!outcome.solved);
    assert!(matches!(&outcome.stop, Some(Stop::Budget(what)) if what == "3 LLM calls"), "{:?}", outcome.stop);
    assert_eq!(llm.count(), 3);
    assert_eq!(outcome.nodes.len(), 4, "three attempts ran");
    assert!(outcome.best.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn model_failures_leave_clear_stops() {
    let tmdb = TmdbServer::start(&[]);
    let ws = workspace(&tmdb.base_url(), false, "");
    let runner = runner(ws.path());
    let good = "found = tmdb.search_person(query=\"Sofia Coppola\")\nprint(found[\"results\"][0][\"name\"])\n";

    // Two 500s, then answers: the client retries and the search goes on.
    let llm = Server::start(move |body, i| match (i, asks(body)) {
        (0 | 1, _) => Answer::Status { code: 500, body: "{\"error\":\"overloaded\"}".into(), retry_after: None },
        (_, Asks::Judge) => Answer::text("Solved."),
        _ => Answer::text(fenced("ok", good)),
    });
    let outcome = run_search(BIO, ws.path(), &client(&llm), &settings(2, 2, 3, 10), &runner).await;
    assert!(outcome.solved, "{outcome:#?}");
    assert_eq!(llm.count(), 4);

    // A malformed reply.
    let llm = Server::start(|_, _| Answer::Raw("<html>gateway</html>".into()));
    let outcome = run_search(BIO, ws.path(), &client(&llm), &settings(2, 2, 3, 10), &runner).await;
    assert!(matches!(&outcome.stop, Some(Stop::Llm(e)) if e.contains("not a chat completion")), "{:?}", outcome.stop);
    assert!(outcome.best.is_none());

    // No code at all: the static loop asks again, and after three such replies the search stops
    // saying so (the budget, 10 calls, is not spent on more of the same).
    let llm = Server::start(|_, _| Answer::text("I am unable to access external APIs."));
    let outcome = run_search(BIO, ws.path(), &client(&llm), &settings(2, 2, 3, 10), &runner).await;
    assert!(
        matches!(&outcome.stop, Some(Stop::Llm(e)) if e.contains("replied 3 times in a row without a Python program")),
        "{:?}",
        outcome.stop
    );
    assert_eq!(llm.count(), 3);

    // The model is down.
    let down = unreachable_client();
    let outcome = run_search(BIO, ws.path(), &down, &settings(2, 2, 3, 10), &runner).await;
    // It says why (the root cause, not the HTTP client's wrappers) and where the address is set.
    assert!(
        matches!(&outcome.stop, Some(Stop::Llm(e)) if e.contains("cannot be reached (Connection refused")
            && e.contains("(`[llm] base_url` in chainsmith.toml sets the address)")
            && !e.contains("error sending request")),
        "{:?}",
        outcome.stop
    );

    // Cancelled before it starts.
    let llm = Server::start(move |_, _| Answer::text(fenced("", good)));
    let cancelled = Runner { cancel: Cancel::new(), ..runner.clone() };
    cancelled.cancel.cancel();
    let outcome = run_search(BIO, ws.path(), &client(&llm), &settings(2, 2, 3, 10), &cancelled).await;
    assert_eq!(outcome.stop, Some(Stop::Cancelled));
    assert_eq!(llm.count(), 0);
}
