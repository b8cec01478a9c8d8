//! `chainsmith eval` end to end: the binary, a benchmark task file, the scripted LLM server, and
//! the mock of the TMDB API serving the chain's calls (the real API's base URL is unreachable).

use crate::support::openai::{Answer, Server};
use crate::support::runtime::{chainsmith, text, workspace};
use serde_json::Value;

const TASKS: &str = r#"[
  {"query": "give me the number of movies directed by Sofia Coppola",
   "solution": ["GET /search/person", "GET /person/{person_id}/movie_credits"]},
  {"query": "what is the latest movie", "solution": ["GET /movie/latest"]}
]"#;

const CHAIN: &str = "```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\ncredits = tmdb.person_movie_credits(person_id=found[\"results\"][0][\"id\"])\nprint(sum(1 for c in credits[\"crew\"] if c[\"job\"] == \"Director\"))\n```";

#[test]
fn eval_scores_generated_chains_run_against_the_mock_and_resumes() {
    let llm = Server::start(|body, _| {
        let messages = body["messages"].as_array().unwrap();
        let last = messages.last().unwrap()["content"].as_str().unwrap();
        if last.contains("Does the output answer the task") {
            Answer::text("Solved.")
        } else if last.contains("Which chain gets what the task asks for") {
            Answer::text("1")
        } else {
            Answer::text(CHAIN)
        }
    });
    let llm_config =
        format!("[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n", llm.base_url);
    // A base URL nothing answers: every call must reach the mock instead.
    let ws = workspace("http://127.0.0.1:9/3", false, &llm_config);
    std::fs::write(ws.path().join("tasks.json"), TASKS).unwrap();
    let out =
        chainsmith(ws.path(), &["--trust", "eval", "tasks.json", "--out", "results.jsonl", "--format", "json"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tasks = report["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    let first = &tasks[0];
    assert_eq!(first["executable"], true, "{first:#}");
    assert_eq!(first["solved"], true);
    assert_eq!((first["path"].as_f64(), first["precision"].as_f64()), (Some(1.0), Some(1.0)));
    assert_eq!(first["called"], serde_json::json!(["tmdb.search_person", "tmdb.person_movie_credits"]));
    assert_eq!(first["llm_calls"], 3, "the plan choice, the completed chain and the judge");
    assert_eq!(first["plan_chosen"], 1);
    // The same chain for the second task runs too, but calls none of its gold tools.
    assert_eq!((tasks[1]["path"].as_f64(), tasks[1]["precision"].as_f64()), (Some(0.0), Some(0.0)));
    let summary = &report["summary"]["full"];
    assert_eq!((summary["tasks"].as_u64(), summary["executable"].as_f64()), (Some(2), Some(1.0)));
    assert_eq!(summary["path"].as_f64(), Some(0.5));
    // Both programs ran, so crediting only running programs changes nothing here.
    assert_eq!(summary["path_ran"].as_f64(), Some(0.5));

    // Run again: both tasks are in the results file, so no model is asked.
    let asked = llm.count();
    let again = chainsmith(ws.path(), &["--trust", "eval", "tasks.json", "--out", "results.jsonl"], &[]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(llm.count(), asked);
    assert!(text(&again.stdout).contains("| full | 2 | 100.0 | 100.0 | 50.00 | 50.00 |"), "{}", text(&again.stdout));
    // Runs during an evaluation leave the workspace as it was.
    assert!(!ws.path().join(".chainsmith/runs").exists());

    // An unfinished variant beside it: `--common` compares both on the tasks both answered.
    let results = std::fs::read_to_string(ws.path().join("results.jsonl")).unwrap();
    let first = results.lines().find(|l| l.contains("\"index\":0")).unwrap();
    std::fs::write(ws.path().join("other.jsonl"), first.replace("\"variant\":\"full\"", "\"variant\":\"width1\""))
        .unwrap();
    let merged = chainsmith(ws.path(), &["eval", "merge", "results.jsonl", "other.jsonl", "--common"], &[]);
    let table = text(&merged.stdout);
    assert!(table.contains("| full | 1 | 100.0 | 100.0 | 100.00 | 100.00 |"), "{table}");
    assert!(table.contains("| width1 | 1 |"), "{table}");
    // The same record under two names: per task, neither is higher.
    assert!(table.contains("Per task against `full`"), "{table}");
    assert!(table.contains("| width1 | 1 | 0 / 0 | 1.00 | 0 / 0 | 1.00 |"), "{table}");
    let all = text(&chainsmith(ws.path(), &["eval", "merge", "results.jsonl", "other.jsonl"], &[]).stdout);
    assert!(all.contains("| full | 2 |"), "{all}");

    // The workspace's own results file linked to one outside it (another project's, or records
    // made up): not taken for this workspace's results.
    let outside = tempfile::tempdir().unwrap();
    std::fs::copy(ws.path().join("results.jsonl"), outside.path().join("full.jsonl")).unwrap();
    std::fs::create_dir_all(ws.path().join(".chainsmith/eval")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("full.jsonl"), ws.path().join(".chainsmith/eval/full.jsonl"))
        .unwrap();
    let asked = llm.count();
    let linked = chainsmith(ws.path(), &["--trust", "eval", "tasks.json"], &[]);
    let stderr = text(&linked.stderr);
    assert_ne!(linked.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("leads outside the workspace"), "{stderr}");
    assert!(!text(&linked.stdout).contains("| full | 2 |"), "{}", text(&linked.stdout));
    assert_eq!(llm.count(), asked, "nothing was evaluated");
}

const PLAYLISTS: &str = r#"{"openapi": "3.0.0", "info": {"title": "music", "version": "1"},
 "servers": [{"url": "http://127.0.0.1:9/music"}],
 "paths": {"/playlists": {"post": {"operationId": "create_playlist",
   "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object",
     "required": ["name"], "properties": {"name": {"type": "string"}}}}}},
   "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"type": "object",
     "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}}}}}}}}}"#;

/// Against the mock, a chain that calls a tool which may change data runs: a mock is no real API,
/// and a benchmark of write tasks would otherwise score nothing.
#[test]
fn eval_runs_chains_that_write_when_the_mock_answers_them() {
    let llm = Server::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
        if last.contains("Does the output answer the task") {
            Answer::text("Solved.")
        } else if last.contains("Which chain gets") {
            Answer::text("0")
        } else {
            Answer::text(
                "```python\nfrom chainsmith.tools import music\nmade = music.create_playlist(name=\"Road trip\")\nprint(made[\"id\"])\n```",
            )
        }
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("music.json"), PLAYLISTS).unwrap();
    std::fs::write(
        dir.path().join("chainsmith.toml"),
        format!(
            "[[toolsets]]\nname = \"music\"\nopenapi = \"music.json\"\n[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n",
            llm.base_url
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tasks.json"),
        r#"[{"query": "make a playlist called Road trip", "solution": ["POST /playlists"]}]"#,
    )
    .unwrap();
    let out = chainsmith(dir.path(), &["--trust", "eval", "tasks.json", "--out", "r.jsonl", "--format", "json"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let task = &report["tasks"][0];
    assert_eq!(task["executable"], true, "{task:#}");
    assert_eq!(task["called"], serde_json::json!(["music.post_playlists"]), "{task:#}");
}

/// ToolNet may learn only from tasks other than those scored: a history that overlaps them is
/// refused before anything runs.
#[test]
fn an_eval_history_overlapping_the_scored_tasks_is_refused() {
    let ws = workspace("http://127.0.0.1:9/3", false, "");
    std::fs::write(ws.path().join("tasks.json"), TASKS).unwrap();
    let out = chainsmith(
        ws.path(),
        &["eval", "tasks.json", "--tasks", "0..1", "--history", "tasks.json", "--history-tasks", "0..2"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("overlap the tasks being scored (0..1)"), "{}", text(&out.stderr));
}
