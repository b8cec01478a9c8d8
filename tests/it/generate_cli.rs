//! `chainsmith generate` and `chainsmith fix`, the binary against the scripted LLM server and the
//! TMDB-like test server.

use crate::support::openai::{Answer, Server};
use crate::support::runtime::{TmdbServer, chainsmith, text, workspace};
use serde_json::Value;

const GOOD: &str = "found = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=found[\"results\"][0][\"id\"])\nprint(person[\"biography\"])\n";

fn llm_config(llm: &Server) -> String {
    format!("[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n", llm.base_url)
}

/// A program the model is asked to fix: person 404 does not exist.
const BROKEN: &str = "# task: print the biography of Sofia Coppola\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n";

/// A model that answers every program request with [`GOOD`] and the judge with "Solved".
fn fixing_model() -> Server {
    Server::start(|body, _| {
        if last_message(body).contains("Does the output answer the task") {
            Answer::text("Solved")
        } else {
            Answer::text(format!("```python\nfrom chainsmith.tools import tmdb\n{GOOD}```"))
        }
    })
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
        } else if last.contains("Which chain gets what the task asks for") {
            Answer::text("1")
        } else if last.contains("Revise it") {
            Answer::text(format!("Right:\n```python\nfrom chainsmith.tools import tmdb\n{GOOD}```"))
        } else {
            Answer::text(
                "```python\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n```",
            )
        }
    });
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let out =
        chainsmith(ws.path(), &["--trust", "generate", "print the biography of Sofia Coppola", "-o", "bio.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let program = std::fs::read_to_string(ws.path().join("bio.py")).unwrap();
    assert_eq!(
        program,
        format!("\"\"\"print the biography of Sofia Coppola\"\"\"\nfrom chainsmith.tools import tmdb\n{GOOD}")
    );
    assert!(stderr.contains("chainsmith: 4 LLM calls, "), "{stderr}");
    assert!(
        stderr.contains("search: 2 attempts (1 draft, 1 revision, 0 alternatives), depth 2, 0 backtracks"),
        "{stderr}"
    );
    assert!(stderr.contains("attributed to tmdb.person (Trace)"), "{stderr}");

    // `fix` on a program that already runs changes nothing and asks no model.
    let before = llm.count();
    let out = chainsmith(ws.path(), &["--trust", "fix", "bio.py"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("nothing to fix"));
    assert_eq!(llm.count(), before);
}

#[test]
fn fix_writes_back_only_on_success_and_otherwise_prints_a_diff() {
    let tmdb = TmdbServer::start(&[]);
    let broken = BROKEN;
    let good = fixing_model();
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&good));
    std::fs::write(ws.path().join("bio.py"), broken).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(ws.path().join("bio.py"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "fix", "bio.py"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mode = std::fs::metadata(ws.path().join("bio.py")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o750, "the fixed program keeps its permissions");
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
    let out = chainsmith(ws.path(), &["--trust", "fix", "bio.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(std::fs::read_to_string(ws.path().join("bio.py")).unwrap(), broken);
    assert!(stderr.contains("no fix found") && stderr.contains("bio.py is unchanged"), "{stderr}");
    assert!(stdout.contains("-print(tmdb.person(person_id=404)[\"biography\"])"), "{stdout}");
    assert!(stdout.contains("+found = tmdb.search_person(query=\"x\")"), "{stdout}");
    assert!(stdout.contains("+print(tmdb.person(person_id=500)[\"biography\"])"), "{stdout}");
    assert_eq!(bad.count(), 1, "one revision within width 1 and depth 2");
}

/// A program that is a symbolic link (planted in a repository, to a file of the user's elsewhere)
/// is fixed nowhere: the fix is refused and the file it points to stays as it was.
#[test]
fn fix_never_writes_through_a_program_that_is_a_link() {
    let tmdb = TmdbServer::start(&[]);
    let good = fixing_model();
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&good));
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("bashrc.py");
    let broken = BROKEN;
    std::fs::write(&target, broken).unwrap();
    std::os::unix::fs::symlink(&target, ws.path().join("bio.py")).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "fix", "bio.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // Not even read: its text would reach the run and the model.
    assert!(stderr.contains("bio.py leads outside the workspace"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), broken);
    assert!(std::fs::symlink_metadata(ws.path().join("bio.py")).unwrap().file_type().is_symlink());
    // A link to a file inside the workspace is read, and fixed nowhere either.
    std::fs::write(ws.path().join("real.py"), broken).unwrap();
    std::fs::remove_file(ws.path().join("bio.py")).unwrap();
    std::os::unix::fs::symlink(ws.path().join("real.py"), ws.path().join("bio.py")).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "fix", "bio.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bio.py") && stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(std::fs::read_to_string(ws.path().join("real.py")).unwrap(), broken);

    // Nor through a folder of the workspace that is a link out of it.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("p.py"), broken).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("sub")).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "fix", "sub/p.py"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sub/p.py leads outside the workspace"), "{stderr}");
    assert_eq!(std::fs::read_to_string(outside.path().join("p.py")).unwrap(), broken);
}

/// A model that answers the plan choice with `choice`, any program request with [`GOOD`] and the
/// judge with "Solved.".
fn planning_model(choice: &'static str) -> Server {
    Server::start(move |body, _| {
        let last = last_message(body);
        if last.contains("Does the output answer the task") {
            Answer::text("Solved.")
        } else if last.contains("Which chain gets what the task asks for") {
            Answer::text(choice)
        } else {
            Answer::text(format!("```python\nfrom chainsmith.tools import tmdb\n{GOOD}```"))
        }
    })
}

/// Plan first, write second: the model is asked to choose among the planner's chains (one number,
/// constrained to theirs by a reply schema), then to complete the chosen skeleton with only that
/// chain's tools in the prompt. `--no-plans` leaves the chains out (the ablation).
#[test]
fn generation_completes_the_planners_chain_the_model_chooses_unless_asked_not_to() {
    let tmdb = TmdbServer::start(&[]);
    let llm = planning_model("1");
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let task = "print the biography of \"Sofia Coppola\"";
    let out = chainsmith(ws.path(), &["--trust", "generate", task, "-o", "bio.py"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(ws.path().join("bio.py")).unwrap().ends_with(GOOD));
    let bodies = llm.bodies();
    let choice = bodies[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        choice.contains("Chain 1:\n```python\nsearch_person = tmdb.search_person(query=\"Sofia Coppola\")\n"),
        "{choice}"
    );
    let numbers = bodies[0]["response_format"]["json_schema"]["schema"]["enum"].as_array().unwrap().clone();
    assert!(numbers.len() >= 2 && numbers[0] == 0, "0 (none) and one number a chain: {numbers:?}");
    assert_eq!(bodies[0]["max_tokens"], 4);
    let completion = bodies[1]["messages"][1]["content"].as_str().unwrap();
    assert!(
        completion.contains("```python\nfrom chainsmith.tools import tmdb\n\nsearch_person = tmdb.search_person(query=\"Sofia Coppola\")\n"),
        "the chosen skeleton: {completion}"
    );
    assert!(completion.contains("Complete them into the program"), "{completion}");
    assert!(!completion.contains("tmdb.movie_latest("), "only the chain's tools are shown: {completion}");
    assert!(bodies[1]["max_tokens"].as_u64().is_some_and(|m| (1024..4096).contains(&m)), "{}", bodies[1]["max_tokens"]);
    assert!(text(&out.stderr).contains("search: 1 attempt"), "{}", text(&out.stderr));

    let seen = llm.count();
    let out = chainsmith(ws.path(), &["--trust", "generate", task, "--no-plans"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first = &llm.bodies()[seen];
    let first_text = first["messages"][1]["content"].as_str().unwrap();
    assert!(first_text.starts_with("Task: print the biography"), "{first_text}");
    assert!(!first_text.contains("Chain 1:") && first.get("response_format").is_none(), "{first_text}");
}

/// A completed chain that runs but does not answer the task gives way to another of the
/// planner's chains, chosen among those not tried yet, before the model writes on its own.
#[test]
fn an_unsolved_chain_gives_way_to_another_of_the_planners() {
    let tmdb = TmdbServer::start(&[]);
    let judged = std::sync::atomic::AtomicUsize::new(0);
    let llm = Server::start(move |body, _| {
        let last = last_message(body);
        if last.contains("Does the output answer the task") {
            let n = judged.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Answer::text(if n == 0 { "Unsolved: not the biography." } else { "Solved." })
        } else if last.contains("Which chain gets what the task asks for") {
            Answer::text("1")
        } else {
            Answer::text(format!("```python\nfrom chainsmith.tools import tmdb\n{GOOD}```"))
        }
    });
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let out = chainsmith(ws.path(), &["--trust", "generate", "print the biography of \"Sofia Coppola\""], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let bodies = llm.bodies();
    assert_eq!(bodies.len(), 6, "choice, completion, judge, then the same for another chain");
    let offered = |i: usize| bodies[i]["response_format"]["json_schema"]["schema"]["enum"].as_array().unwrap().len();
    assert_eq!(offered(3), offered(0) - 1, "the chain already tried is not offered again");
    let skeleton = |i: usize| {
        let text = bodies[i]["messages"][1]["content"].as_str().unwrap().to_string();
        text.split("```python").nth(1).unwrap().to_string()
    };
    assert_ne!(skeleton(1), skeleton(4), "the second completion starts from another chain");
    assert!(text(&out.stderr).contains("2 attempts (1 draft, 0 revisions, 1 alternative)"), "{}", text(&out.stderr));
}

/// A model that says no chain fits (0) writes the program itself, shown the tools and the chains.
#[test]
fn a_model_choosing_no_chain_writes_the_program_itself() {
    let tmdb = TmdbServer::start(&[]);
    let llm = planning_model("0");
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let out = chainsmith(ws.path(), &["--trust", "generate", "print the biography of \"Sofia Coppola\""], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = llm.bodies()[1]["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(written.starts_with("Task: print the biography"), "{written}");
    assert!(written.contains("Chains the tools' data flow allows"), "{written}");
    assert!(written.contains("Write the program."), "{written}");
}

/// A model that answers without a program: the fix stops after three such replies in a row and
/// says so, instead of spending the budget and blaming it.
#[test]
fn fix_stops_on_a_model_that_writes_no_program_and_says_why() {
    let tmdb = TmdbServer::start(&[]);
    let broken = BROKEN;
    let chatty = Server::start(|_, _| Answer::text("As an AI model I cannot call APIs."));
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&chatty));
    std::fs::write(ws.path().join("bio.py"), broken).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "fix", "bio.py"], &[]);
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
