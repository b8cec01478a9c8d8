//! ATC generation's static loop against a scripted OpenAI-compatible server and the TMDB workspace:
//! retrieval, prompt, extraction from messy replies, static validation and feedback are the real code.

use std::path::Path;

use crate::support::openai::{Answer, Server, client, unreachable_client};
use chainsmith::config::Config;
use chainsmith::generate::atc::{self, Budget, GenerateError};
use chainsmith::toolset::index::CatalogIndex;
use chainsmith::toolset::{Catalog, Tool, loader};

const TASK: &str = "give me the number of movies directed by Sofia Coppola";

fn catalog() -> Catalog {
    loader::load(&Config::load(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tmdb")), None))
}

/// The tools a user selected plus retrieval's best hits, as the editor builds candidates.
fn candidates(catalog: &Catalog) -> Vec<&Tool> {
    let mut tools =
        vec![catalog.tool("tmdb", "search_person").unwrap(), catalog.tool("tmdb", "person_movie_credits").unwrap()];
    let index = CatalogIndex::new(catalog);
    for (tool, _) in index.search_tools(catalog, TASK, 20) {
        if tools.len() < 20 && !tools.iter().any(|t| t.name == tool.name) {
            tools.push(tool);
        }
    }
    tools
}

const WRONG: &str = "Sure, here's a chain:\n```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.director_movies(name=\"Sofia Coppola\")\nprint(found)\n```\nLet me know!";
const MISSPELLED: &str = "```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_persn(query=\"Sofia Coppola\")\ncredits = tmdb.person_movie_credits(person_id=found[\"results\"][0][\"id\"])\nprint(len(credits[\"crew\"]))\n```";
const RIGHT: &str = "Fixed:\n```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\ncredits = tmdb.person_movie_credits(person_id=found[\"results\"][0][\"id\"])\nprint(sum(1 for c in credits[\"crew\"] if c[\"job\"] == \"Director\"))\n```";

#[tokio::test]
async fn static_errors_go_back_to_the_model_before_anything_runs() {
    let server = Server::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
        if last.contains("has no tool `director_movies`") { Answer::text(RIGHT) } else { Answer::text(WRONG) }
    });
    let catalog = catalog();
    let client = client(&server);
    let budget = Budget { max_llm_calls: 5, max_tokens: 100_000 };
    let draft = atc::draft(TASK, &candidates(&catalog), &catalog, &client, &budget, &|| false).await.unwrap();
    assert!(draft.program.contains("tmdb.person_movie_credits(person_id=found[\"results\"][0][\"id\"])"));
    assert_eq!(server.count(), 2);
    assert_eq!(draft.feedback.len(), 1);
    assert!(draft.feedback[0][0].contains("has no tool `director_movies`"), "{:?}", draft.feedback);
    let first = &server.bodies()[0];
    let prompt = first["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.starts_with(&format!("Task: {TASK}")), "{prompt}");
    assert!(prompt.contains("tmdb.search_person(") && prompt.contains("tmdb.person_movie_credits("), "{prompt}");
    assert!(first["messages"][0]["content"].as_str().unwrap().contains("keyword arguments only"));
}

#[tokio::test]
async fn chainsmiths_own_fixes_are_applied_without_asking_the_model_again() {
    let server = Server::start(|_, _| Answer::text(MISSPELLED));
    let catalog = catalog();
    let client = client(&server);
    let budget = Budget { max_llm_calls: 5, max_tokens: 100_000 };
    let draft = atc::draft(TASK, &candidates(&catalog), &catalog, &client, &budget, &|| false).await.unwrap();
    assert_eq!(server.count(), 1, "the did-you-mean fix needs no second request");
    assert!(draft.program.contains("found = tmdb.search_person(query=\"Sofia Coppola\")"), "{}", draft.program);
    assert!(draft.feedback.is_empty());
}

#[tokio::test]
async fn a_repeated_program_gets_its_problems_marked_at_a_higher_temperature_then_runs_as_it_is() {
    let server = Server::start(|_, _| Answer::text(WRONG));
    let catalog = catalog();
    let client = client(&server);
    let budget = Budget { max_llm_calls: 10, max_tokens: 100_000 };
    let draft = atc::draft(TASK, &candidates(&catalog), &catalog, &client, &budget, &|| false).await.unwrap();
    // After MAX_STATIC_ROUNDS programs with problems, the best one is handed back, problems and
    // all, to be run: a run's attributed failure says more to the model than the same list.
    assert_eq!(server.count(), atc::MAX_STATIC_ROUNDS);
    assert!(draft.program.contains("tmdb.director_movies(name=\"Sofia Coppola\")"), "{}", draft.program);
    assert!(draft.problems[0].contains("has no tool `director_movies`"), "{:?}", draft.problems);
    let bodies = server.bodies();
    let last_of =
        |i: usize| bodies[i]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(last_of(1).starts_with("The program has these problems"), "{}", last_of(1));
    let third = last_of(2);
    assert!(third.starts_with("You sent the same program again"), "{third}");
    assert!(third.contains("found = tmdb.director_movies(name=\"Sofia Coppola\")\n# ^ PROBLEM: "), "{third}");
    assert_eq!(bodies[1]["temperature"], 0.2);
    assert_eq!(bodies[2]["temperature"], 0.7);
}

#[tokio::test]
async fn when_the_budget_ends_the_best_program_so_far_is_kept() {
    let server = Server::start(|_, n| Answer::text(if n == 0 { WRONG } else { "No code this time." }));
    let catalog = catalog();
    let client = client(&server);
    let budget = Budget { max_llm_calls: 2, max_tokens: 100_000 };
    let draft = atc::draft(TASK, &candidates(&catalog), &catalog, &client, &budget, &|| false).await.unwrap();
    assert_eq!(server.count(), 2);
    assert!(draft.program.contains("tmdb.director_movies"), "{}", draft.program);
    assert!(!draft.problems.is_empty());
}

/// A model that answers without code is told so, and after three such replies in a row the
/// conversation ends saying why, whatever budget is left.
#[tokio::test]
async fn a_model_without_code_stops_the_conversation_with_a_clear_error() {
    let server = Server::start(|_, _| Answer::text("I'm sorry, I can't do that."));
    let catalog = catalog();
    let client = client(&server);
    let budget = Budget { max_llm_calls: 12, max_tokens: 100_000 };
    let err = atc::draft(TASK, &candidates(&catalog), &catalog, &client, &budget, &|| false).await.unwrap_err();
    assert!(matches!(err, GenerateError::NoProgram { replies: 3, .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "the model replied 3 times in a row without a Python program (its last reply: \"I'm sorry, I can't do that.\")"
    );
    assert_eq!(server.count(), 3);
    let last =
        server.bodies()[2]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(last.contains("no Python program"), "{last}");

    // With less budget than that, the budget ends it.
    let server = Server::start(|_, _| Answer::text("I'm sorry, I can't do that."));
    let short = crate::support::openai::client(&server);
    let budget = Budget { max_llm_calls: 2, max_tokens: 100_000 };
    let err = atc::draft(TASK, &candidates(&catalog), &catalog, &short, &budget, &|| false).await.unwrap_err();
    assert!(matches!(err, GenerateError::Budget(_)), "{err}");
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn a_down_model_and_cancellation_stop_the_loop() {
    let catalog = catalog();
    let client = unreachable_client();
    let budget = Budget { max_llm_calls: 3, max_tokens: 100_000 };
    let err = atc::draft(TASK, &candidates(&catalog), &catalog, &client, &budget, &|| false).await.unwrap_err();
    assert!(matches!(err, GenerateError::Llm(_)), "{err}");
    let err = atc::draft(TASK, &candidates(&catalog), &catalog, &client, &budget, &|| true).await.unwrap_err();
    assert!(matches!(err, GenerateError::Cancelled));
}
