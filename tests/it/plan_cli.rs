//! `chainsmith plan` as a user runs it: chains planned from the TMDB example's protocol alone (no
//! model), each with the evidence for its data flow and a skeleton program that checks clean;
//! `plan --eval` scoring RestBench-style task files; and a clear "no plan" where there is none.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn chainsmith(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the chainsmith binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_plan_names_its_calls_its_evidence_and_a_skeleton_that_checks_clean() {
    let (code, stdout, stderr) = chainsmith(
        repo(),
        &["--root", "examples/tmdb", "plan", "Who is the director of the movie \"Twilight\"?", "--format", "json"],
    );
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let first = &report["plans"][0];
    let endpoints: Vec<&str> =
        first["calls"].as_array().unwrap().iter().map(|c| c["endpoint"].as_str().unwrap()).collect();
    assert_eq!(endpoints, ["GET /search/movie", "GET /movie/{movie_id}/credits"], "{first:#}");
    assert_eq!(first["calls"][0]["arguments"]["query"]["task"], "Twilight");
    let movie_id = &first["calls"][1]["arguments"]["movie_id"];
    assert_eq!(
        (movie_id["call"].as_u64(), movie_id["field"].as_str()),
        (Some(0), Some("results[].id")),
        "{movie_id:#}"
    );
    assert!(movie_id["evidence"].as_str().unwrap().contains("identifies a movie"), "{movie_id:#}");
    assert_eq!(first["calls"][1]["writes"], false);

    // The skeleton is a program of the module dialect that the checker finds nothing wrong with.
    let skeleton = first["skeleton"].as_str().unwrap();
    assert!(
        skeleton.contains("movie_credits = tmdb.movie_credits(movie_id=search_movie[\"results\"][0][\"id\"])"),
        "{skeleton}"
    );
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("plan.py");
    std::fs::write(&program, skeleton).unwrap();
    let (code, stdout, stderr) =
        chainsmith(repo(), &["--root", "examples/tmdb", "check", "--format", "json", program.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let diagnostics: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert!(
        diagnostics.iter().all(|d| !d["file"].as_str().unwrap().ends_with("plan.py")),
        "the skeleton has diagnostics: {diagnostics:#?}"
    );

    // The text form: ranked plans, each field's evidence, the skeleton.
    let (code, stdout, _) = chainsmith(
        repo(),
        &["--root", "examples/tmdb", "plan", "Who is the director of the movie \"Twilight\"?", "--k", "2"],
    );
    assert_eq!(code, 0);
    assert!(stdout.starts_with("#1  score "), "{stdout}");
    assert!(stdout.contains("GET /search/movie → GET /movie/{movie_id}/credits"), "{stdout}");
    assert!(stdout.contains("tmdb.movie_credits.movie_id ← results[].id: "), "{stdout}");
    assert!(stdout.contains("#2  score "), "{stdout}");
}

#[test]
fn plan_eval_scores_gold_paths_and_ends_with_the_two_figures() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.json");
    // RestBench's own spelling, stray spaces included.
    std::fs::write(
        &tasks,
        r#"[
          {"query": "Who is the director of the movie \"Twilight\"?", "solution": ["GET /search/movie", "GET /movie/{movie_id}/credits "]},
          {"query": "What is top-1 rated movie?", "solution": [" GET /movie/top_rated"]}
        ]"#,
    )
    .unwrap();
    let (code, stdout, stderr) =
        chainsmith(repo(), &["--root", "examples/tmdb", "plan", "--eval", tasks.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("#000 top-1 ✓ top-5 ✓  Who is the director"), "{stdout}");
    assert_eq!(lines[lines.len() - 2..], ["top-1 100.00", "top-5 100.00"], "{stdout}");

    // Only a slice, as the tuning discipline asks.
    let (_, stdout, _) =
        chainsmith(repo(), &["--root", "examples/tmdb", "plan", "--eval", tasks.to_str().unwrap(), "--tasks", "1..2"]);
    assert!(stdout.starts_with("#001 "), "{stdout}");
    assert!(!stdout.contains("#000"), "{stdout}");
}

#[test]
fn a_task_without_a_usable_plan_says_so_at_once() {
    // Nothing in the catalog is about it.
    let (code, _, stderr) = chainsmith(repo(), &["--root", "examples/tmdb", "plan", "zxqv wpfl"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("no plan: no tool of the workspace is relevant to the task"), "{stderr}");

    // A tool needs an id nothing yields and the task does not give: no chain, no hang.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("protocols")).unwrap();
    std::fs::write(
        dir.path().join("protocols/vault.json"),
        r#"{"openapi": "3.0.0", "info": {"title": "vault", "version": "1"}, "paths": {
          "/secrets/{secret_id}": {"get": {"summary": "Read a secret", "parameters": [{"name": "secret_id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"value": {"type": "string"}}}}}}}}}}}"#,
    )
    .unwrap();
    let (code, stdout, stderr) = chainsmith(dir.path(), &["plan", "read a secret", "--format", "json"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stderr.contains("no chain of at most 4 calls"), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["plans"], serde_json::json!([]));
    assert!(report["none"].as_str().unwrap().contains("no chain"), "{report}");
}
