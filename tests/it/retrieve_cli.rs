//! `chainsmith retrieve` as a user runs it: candidates for a task, and retrieval quality figures.

use std::process::Command;

use crate::support::external;

fn chainsmith(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the chainsmith binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn candidates_for_a_task_are_ranked_with_scores() {
    let (code, stdout, stderr) = chainsmith(&[
        "--root",
        "examples/tmdb",
        "retrieve",
        "search for a person by name and list their movie credits",
        "--k",
        "5",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&str> = stdout.lines().map(|l| l.split_whitespace().nth(1).unwrap()).collect();
    assert_eq!(ids.len(), 5);
    assert!(ids.contains(&"tmdb.search_person"), "{stdout}");
    assert!(ids.contains(&"tmdb.person_movie_credits"), "{stdout}");
    let scores: Vec<f64> = stdout.lines().map(|l| l.split_whitespace().next().unwrap().parse().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "best first: {scores:?}");
}

/// The figures the issue asks for, computed by the real command on StableToolBench: every
/// improvement step is printed, and the full pipeline beats plain BM25.
#[test]
fn eval_reports_each_step_on_stabletoolbench() {
    let dir = "tests/fixtures/datasets/stabletoolbench/solvable_queries/test_instruction";
    let files: Vec<String> = ["G1_instruction", "G1_category", "G1_tool", "G2_instruction"]
        .iter()
        .map(|g| format!("{dir}/{g}.json"))
        .collect();
    // The example's data lies outside it (the copy vendored for the tests): read once trusted.
    let mut args = vec!["--trust", "--root", "examples/stabletoolbench", "retrieve", "--eval"];
    args.extend(files.iter().map(String::as_str));
    let (code, stdout, stderr) = chainsmith(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("corpus 2220 tools; 580 queries; 0 gold entries not in the corpus"), "{stdout}");
    let figure = |step: &str, metric: &str| -> f64 {
        let section = stdout.split(&format!("[{step}]")).nth(1).unwrap();
        let line = section.lines().find(|l| l.starts_with(metric)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    for metric in ["ndcg@1 ", "ndcg@3 ", "ndcg@5 ", "recall@20 "] {
        assert!(figure("+ tool-level aggregation", metric) > figure("plain BM25", metric), "{metric}: {stdout}");
    }
}

#[test]
fn eval_with_no_matching_gold_is_a_usage_error() {
    let (code, _, stderr) = chainsmith(&[
        "--root",
        "examples/tmdb",
        "retrieve",
        "--eval",
        "tests/fixtures/datasets/stabletoolbench/solvable_queries/test_instruction/G1_tool.json",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no query"), "{stderr}");
}

/// On RestBench, whose gold solutions are ordered, the eval also reports ToolNet expansion with a
/// graph built from the other folds only.
#[test]
fn eval_reports_graph_expansion_on_restbench() {
    let (code, stdout, stderr) =
        chainsmith(&["--root", "examples/tmdb", "retrieve", "--eval", "tests/fixtures/datasets/restbench/tmdb.json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("corpus 54 tools; 100 queries; 1 gold entries not in the corpus"), "{stdout}");
    assert!(stdout.contains("[+ ToolNet expansion (graph from the other 4 of 5 folds)]\nndcg@1 "), "{stdout}");
}

/// The embedding model `scripts/test-deps.sh` unpacks into target/embedding-model/all-MiniLM-L6-v2
/// (or the one `$CHAINSMITH_EMBEDDING_MODEL` names), when it is there.
fn embedding_model() -> Option<std::path::PathBuf> {
    let dir = external::repo_path_or_env("CHAINSMITH_EMBEDDING_MODEL", "target/embedding-model/all-MiniLM-L6-v2");
    let what = format!("the embedding model all-MiniLM-L6-v2 ({}, or $CHAINSMITH_EMBEDDING_MODEL)", dir.display());
    external::available(&what, external::TEST_DEPS, dir.join("model.safetensors").is_file()).then_some(dir)
}

/// A copy of the TMDB example whose chainsmith.toml adds `extra`.
fn tmdb_workspace(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb");
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    std::fs::copy(example.join("specs/tmdb_oas.json"), dir.path().join("specs/tmdb_oas.json")).unwrap();
    let config = std::fs::read_to_string(example.join("chainsmith.toml")).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), format!("{config}\n{extra}")).unwrap();
    dir
}

fn top_ids(root: &std::path::Path, task: &str, k: usize) -> (Vec<String>, String) {
    let (code, stdout, stderr) =
        chainsmith(&["--root", root.to_str().unwrap(), "retrieve", task, "--k", &k.to_string()]);
    assert_eq!(code, 0, "{stderr}");
    (stdout.lines().map(|l| l.split_whitespace().nth(1).unwrap().to_string()).collect(), stderr)
}

/// With the real embedding model, a task worded without any of the protocol's words still finds
/// its tool (BM25 alone cannot), and the catalog's vectors are cached in the workspace.
#[test]
fn dense_retrieval_finds_tools_by_meaning_with_the_real_model() {
    let Some(model) = embedding_model() else { return };
    let task = "which actors played in Titanic";
    let plain = tmdb_workspace("");
    let (lexical, _) = top_ids(plain.path(), task, 3);
    assert!(!lexical.contains(&"tmdb.movie_credits".to_string()), "BM25 alone: {lexical:?}");

    let dense = tmdb_workspace(&format!("[retrieval]\nembedding_model = \"{}\"\n", model.display()));
    let (fused, stderr) = top_ids(dense.path(), task, 3);
    assert!(fused.contains(&"tmdb.movie_credits".to_string()), "with the model: {fused:?}\n{stderr}");
    // The catalog cache keeps the spec's load beside the vectors.
    let cache: Vec<_> = std::fs::read_dir(dense.path().join(".chainsmith/cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("embeddings-"))
        .collect();
    assert_eq!(cache.len(), 1, "one cache file for the model");
    let written = std::fs::metadata(&cache[0]).unwrap().modified().unwrap();
    // The second run reads every vector back (the file is rewritten only when one is missing) and
    // ranks the same.
    let (again, _) = top_ids(dense.path(), task, 3);
    assert_eq!(again, fused);
    assert_eq!(std::fs::metadata(&cache[0]).unwrap().modified().unwrap(), written, "the cache was not rewritten");
}

/// A model folder that is not one: a note on stderr, and BM25 answers as before.
#[test]
fn a_missing_embedding_model_leaves_bm25_with_a_note() {
    let dir = tmdb_workspace("[retrieval]\nembedding_model = \"models/nowhere\"\n");
    let (ids, stderr) = top_ids(dir.path(), "search for a person by name", 3);
    assert_eq!(ids[0], "tmdb.search_person");
    assert!(
        stderr.contains("dense retrieval is off, BM25 ranks alone") && stderr.contains("models/nowhere"),
        "{stderr}"
    );
}

/// A protocol's words reach the terminal as text: a summary carrying escape sequences (one that
/// sets the clipboard, one the terminal answers by typing) is shown escaped.
#[test]
fn a_summarys_escape_sequences_are_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = serde_json::json!({
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/weather": {"get": {
            "operationId": "weather",
            "summary": "Weather now \u{1b}]52;c;Y3VybCBldmls\u{7}\u{1b}[6n",
            "responses": {"200": {"description": "ok"}}
        }}}
    });
    std::fs::write(dir.path().join("spec.json"), spec.to_string()).unwrap();
    std::fs::write(
        dir.path().join("chainsmith.toml"),
        "[[toolsets]]\nname = \"w\"\nopenapi = \"spec.json\"\nbase_url = \"https://weather.example\"\n",
    )
    .unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", dir.path().to_str().unwrap(), "retrieve", "weather now"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("w.weather  Weather now \\u{1b}]52;c;Y3VybCBldmls\\u{7}\\u{1b}[6n"), "{stdout:?}");
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
}
