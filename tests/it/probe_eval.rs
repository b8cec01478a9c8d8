//! `chainsmith probe-eval`: the figures of response-schema inference, computed by the real command.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap())
}

fn figure(output: &str, metric: &str) -> f64 {
    let line = output.lines().find(|l| l.starts_with(metric)).unwrap_or_else(|| panic!("no {metric} in {output}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn tmdb_examples_recover_the_declared_schemas() {
    let (code, out) = run(&["probe-eval", "--openapi", "tests/fixtures/datasets/restbench/tmdb_oas.json"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("54 operations with a response example"), "{out}");
    // An example shows only the keys it happens to have, so neither figure is 1; both are high.
    assert!(figure(&out, "keypath precision ") > 0.9, "{out}");
    assert!(figure(&out, "keypath recall ") > 0.9, "{out}");
    assert!(figure(&out, "type agreement (integer within number) ") > 0.95, "{out}");
}

#[test]
fn toolbench_answers_are_decoded_and_grouped_per_tool() {
    let t = "tests/fixtures/datasets/toolbench/data_example";
    let queries: Vec<String> = ["G1", "G2", "G3"].iter().map(|g| format!("{t}/instruction/{g}_query.json")).collect();
    let answers = format!("{t}/answer");
    let mut args = vec!["probe-eval", "--answers", answers.as_str(), "--queries"];
    args.extend(queries.iter().map(String::as_str));
    let (code, out) = run(&args);
    assert_eq!(code, 0, "{out}");
    // Python-literal responses decoded, several samples per tool merged.
    assert!(out.contains("19 tools with recorded responses (63 samples, 7 tools with several)"), "{out}");
    assert!(out.contains("keypath precision "), "{out}");
}

#[test]
fn nothing_to_measure_is_a_usage_error() {
    let (code, out) = run(&["probe-eval"]);
    assert_eq!(code, 2, "{out}");
}
