//! `chainsmith graph eval | import | show` as a user runs them.

use std::path::Path;
use std::process::Command;

const TMDB_TASKS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/datasets/restbench/tmdb.json");

fn chainsmith(args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chainsmith")).args(args).current_dir(dir).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// The lines of one predictor's section of `graph eval`.
fn section<'a>(stdout: &'a str, name: &str) -> Vec<&'a str> {
    let start = stdout.lines().position(|l| l.starts_with(&format!("{name} — "))).unwrap_or_else(|| panic!("{stdout}"));
    stdout.lines().skip(start + 1).take_while(|l| !l.is_empty()).collect()
}

fn figure(lines: &[&str], metric: &str) -> f64 {
    let line = lines.iter().find(|l| l.starts_with(&format!("{metric} "))).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn eval_prints_cross_validated_figures_on_restbench_tmdb() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (code, stdout, stderr) =
        chainsmith(&["graph", "eval", "--trajectories", TMDB_TASKS, "--root", "examples/tmdb"], manifest);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("trajectories 100 · steps 226 · folds 5"), "{stdout}");
    // The data's five defects are repaired and said so.
    assert_eq!(stderr.lines().count(), 5, "{stderr}");
    let bigram = section(&stdout, "bigram");
    assert_eq!(
        bigram,
        ["hit@1 0.301", "hit@3 0.553", "hit@5 0.615", "mrr 0.441", "candidates 9.73", "coverage 0.730"],
        "{stdout}"
    );
    let frequency = section(&stdout, "frequency");
    for line in &frequency[..4] {
        let (metric, value) = line.split_once(' ').unwrap();
        assert!(value.len() == 5 && value.starts_with("0."), "`{line}` is `hit@3 0.666`-style");
        assert!(figure(&bigram, metric) > value.parse().unwrap(), "bigram beats frequency on {metric}");
    }
    assert!(figure(&frequency, "candidates") > 4.0 * figure(&bigram, "candidates"), "the graph is sparse");
    // The best variant beats plain bigrams on every hit rate with at most one more candidate per step.
    let best = section(&stdout, "flow+task");
    for metric in ["hit@1", "hit@3", "hit@5", "mrr"] {
        assert!(figure(&best, metric) > figure(&bigram, metric), "{metric}: {stdout}");
    }
    assert!(figure(&best, "candidates") <= figure(&bigram, "candidates") + 1.0);
    assert!(best.iter().any(|l| l.starts_with("lambda ")), "{best:?}");
    // One score over graph, data flow, task and the calls so far: more of the answers are among
    // its candidates, and its weights are chosen on each fold's training part and printed.
    let combined = section(&stdout, "combined");
    assert!(figure(&combined, "coverage") > figure(&best, "coverage"), "{stdout}");
    assert!(figure(&combined, "hit@5") > figure(&best, "hit@5"), "{stdout}");
    assert!(combined.iter().any(|l| l.starts_with("flow bonus ")), "{combined:?}");

    let (code, _, stderr) = chainsmith(
        &["graph", "eval", "--trajectories", TMDB_TASKS, "--folds", "1", "--root", "examples/tmdb"],
        manifest,
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("--folds"), "{stderr}");
}

#[test]
fn import_then_show() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb/specs/tmdb_oas.json");
    std::fs::copy(spec, dir.path().join("tmdb_oas.json")).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), "[[toolsets]]\nname = \"tmdb\"\nopenapi = \"tmdb_oas.json\"\n")
        .unwrap();
    let (code, stdout, stderr) = chainsmith(&["graph", "import", TMDB_TASKS], dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("100 trajectories (226 calls) from a restbench file; 5 repaired, 0 left out"), "{stdout}");
    let store = dir.path().join(".chainsmith/toolnet.json");
    let first = std::fs::read_to_string(&store).unwrap();
    assert!(first.contains("\"kind\": \"restbench\""));
    // Importing the same file again replaces it: nothing changes.
    let (code, _, _) = chainsmith(&["graph", "import", TMDB_TASKS], dir.path());
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(&store).unwrap(), first);

    let (code, stdout, stderr) = chainsmith(&["graph", "show", "--from", "search_person", "--top", "2"], dir.path());
    assert_eq!(code, 0, "{stderr}");
    let line = stdout.lines().find(|l| l.starts_with("tmdb.search_person → ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.starts_with("tmdb.search_person → person_movie_credits "), "{line}");
    assert!(line.contains(" · ") && line.contains("more)"), "{line}");

    let (code, stdout, _) = chainsmith(&["graph", "show", "--dot", "--top", "1"], dir.path());
    assert_eq!(code, 0);
    assert!(stdout.starts_with("digraph toolnet {"), "{stdout}");
    assert!(stdout.contains("\"start\" -> \"tmdb.search_tv\" [label="), "{stdout}");

    let (code, stdout, stderr) = chainsmith(&["graph", "show", "--svg", "--top", "2"], dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("<svg") && stdout.trim_end().ends_with("</svg>"), "{stdout}");
    assert!(stdout.contains("tmdb.search_person") && stdout.contains("tmdb.person_movie_credits"), "{stdout}");
    assert!(stdout.contains(">start<"), "the start node is drawn: {stdout}");

    let (code, _, stderr) = chainsmith(&["graph", "show", "--from", "no_such_tool"], dir.path());
    assert_eq!(code, 2);
    assert!(stderr.contains("no_such_tool"), "{stderr}");
}

#[test]
fn import_refuses_to_touch_a_corrupt_store() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".chainsmith")).unwrap();
    let store = dir.path().join(".chainsmith/toolnet.json");
    std::fs::write(&store, "{ half a file").unwrap();
    let jsonl = dir.path().join("t.jsonl");
    std::fs::write(&jsonl, "[\"a.b\"]\n").unwrap();
    let (code, _, stderr) = chainsmith(&["graph", "import", "t.jsonl"], dir.path());
    assert_eq!(code, 2);
    assert!(stderr.contains(".chainsmith/toolnet.json") && stderr.contains("corrupt"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&store).unwrap(), "{ half a file");
}
