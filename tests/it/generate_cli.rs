//! `chainsmith generate` and `chainsmith fix`, the binary against the scripted LLM server and the
//! TMDB-like test server.

use crate::support::openai::{Answer, Server};
use crate::support::runtime::{TmdbServer, chainsmith, text, workspace};
use serde_json::Value;

const GOOD: &str = "found = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=found[\"results\"][0][\"id\"])\nprint(person[\"biography\"])\n";

fn llm_config(llm: &Server) -> String {
    format!("[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n", llm.base_url)
}

fn last_message(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string()
}

#[test]
fn generate_writes_the_program_and_reports_usage_and_shape() {
    let tmdb = TmdbServer::start(&[]);
    let llm = Server::start(|body, _| {
        let last = last_message(body);
        if last.contains("Does the output answer the task") {
            Answer::text("Solved.")
        } else if last.contains("Revise it") {
            Answer::text(format!("Right:\n```python\nfrom chainsmith.tools import tmdb\n{GOOD}```"))
        } else {
            Answer::text(
                "```python\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n```",
            )
        }
    });
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let out = chainsmith(ws.path(), &["generate", "print the biography of Sofia Coppola", "-o", "bio.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let program = std::fs::read_to_string(ws.path().join("bio.py")).unwrap();
    assert_eq!(
        program,
        format!("\"\"\"print the biography of Sofia Coppola\"\"\"\nfrom chainsmith.tools import tmdb\n{GOOD}")
    );
    assert!(stderr.contains("chainsmith: 3 LLM calls, 3"), "{stderr}");
    assert!(
        stderr.contains("search: 2 attempts (1 draft, 1 revision, 0 alternatives), depth 2, 0 backtracks"),
        "{stderr}"
    );
    assert!(stderr.contains("attributed to tmdb.person (Trace)"), "{stderr}");

    // `fix` on a program that already runs changes nothing and asks no model.
    let before = llm.count();
    let out = chainsmith(ws.path(), &["fix", "bio.py"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("nothing to fix"));
    assert_eq!(llm.count(), before);
}

#[test]
fn fix_writes_back_only_on_success_and_otherwise_prints_a_diff() {
    let tmdb = TmdbServer::start(&[]);
    let broken = "# task: print the biography of Sofia Coppola\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n";
    let good = Server::start(|body, _| {
        if last_message(body).contains("Does the output answer the task") {
            Answer::text("Solved")
        } else {
            Answer::text(format!("```python\nfrom chainsmith.tools import tmdb\n{GOOD}```"))
        }
    });
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&good));
    std::fs::write(ws.path().join("bio.py"), broken).unwrap();
    let out = chainsmith(ws.path(), &["fix", "bio.py"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let fixed = std::fs::read_to_string(ws.path().join("bio.py")).unwrap();
    assert_eq!(
        fixed,
        format!("# task: print the biography of Sofia Coppola\nfrom chainsmith.tools import tmdb\n{GOOD}")
    );

    // A model that only makes it worse: the file stays, the best attempt is a diff on stdout.
    let bad = Server::start(|_, _| {
        Answer::text(
            "```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"x\")\nprint(tmdb.person(person_id=500)[\"biography\"])\n```",
        )
    });
    let ws = workspace(&tmdb.base_url(), false, &format!("{}[generate]\nwidth = 1\ndepth = 2\n", llm_config(&bad)));
    std::fs::write(ws.path().join("bio.py"), broken).unwrap();
    let out = chainsmith(ws.path(), &["fix", "bio.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(std::fs::read_to_string(ws.path().join("bio.py")).unwrap(), broken);
    assert!(stderr.contains("no fix found") && stderr.contains("bio.py is unchanged"), "{stderr}");
    assert!(stdout.contains("-print(tmdb.person(person_id=404)[\"biography\"])"), "{stdout}");
    assert!(stdout.contains("+found = tmdb.search_person(query=\"x\")"), "{stdout}");
    assert!(stdout.contains("+print(tmdb.person(person_id=500)[\"biography\"])"), "{stdout}");
    assert_eq!(bad.count(), 1, "one revision within width 1 and depth 2");
}

/// The model is shown the planner's chains for the task as typed skeletons beside the tools, the
/// same text in every request of the task; `--no-plans` leaves them out (the ablation).
#[test]
fn generation_shows_the_planners_chains_unless_asked_not_to() {
    let tmdb = TmdbServer::start(&[]);
    let llm = Server::start(|body, _| {
        if last_message(body).contains("Does the output answer the task") {
            Answer::text("Solved.")
        } else {
            Answer::text(format!("```python\nfrom chainsmith.tools import tmdb\n{GOOD}```"))
        }
    });
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let task = "print the biography of \"Sofia Coppola\"";
    let out = chainsmith(ws.path(), &["generate", task], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first = llm.bodies()[0]["messages"][1]["content"].as_str().unwrap().to_string();
    let chains = first.split("Chains the tools' data flow allows").nth(1).unwrap_or_else(|| panic!("{first}"));
    assert!(
        chains.contains("Chain 1:\n```python\nfrom chainsmith.tools import tmdb\n\nsearch_person = tmdb.search_person(query=\"Sofia Coppola\")\n"),
        "{chains}"
    );
    let seen = llm.count();
    let out = chainsmith(ws.path(), &["generate", task, "--no-plans"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first = llm.bodies()[seen]["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(first.starts_with("Task: print the biography"), "{first}");
    assert!(!first.contains("Chain 1:"), "{first}");
}

/// A model that answers without a program: the fix stops after three such replies in a row and
/// says so, instead of spending the budget and blaming it.
#[test]
fn fix_stops_on_a_model_that_writes_no_program_and_says_why() {
    let tmdb = TmdbServer::start(&[]);
    let broken = "# task: print the biography of Sofia Coppola\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n";
    let chatty = Server::start(|_, _| Answer::text("As an AI model I cannot call APIs."));
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&chatty));
    std::fs::write(ws.path().join("bio.py"), broken).unwrap();
    let out = chainsmith(ws.path(), &["fix", "bio.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the model replied 3 times in a row without a Python program (its last reply: \"As an AI model I cannot call APIs.\")"),
        "{stderr}"
    );
    assert!(!stderr.contains("budget ran out"), "{stderr}");
    assert_eq!(std::fs::read_to_string(ws.path().join("bio.py")).unwrap(), broken);
    assert_eq!(chatty.count(), 3, "three replies without a program, then no more calls");
}
