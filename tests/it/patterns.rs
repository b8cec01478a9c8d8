//! Python as people write it (tests/fixtures/patterns): every planted mistake is reported on its
//! line and nothing else is; the correct programs get no diagnostic; and whatever basedpyright
//! finds on chainsmith's own stubs, chainsmith finds too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::external;
use serde_json::Value;

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/patterns");
    for sub in ["protocols", "planted", "correct"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        for entry in std::fs::read_dir(from.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.path().join(sub).join(path.file_name().unwrap())).unwrap();
        }
    }
    dir
}

fn programs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// `chainsmith check --format json` on one program: (line, code) of each diagnostic, 1-based.
fn reported(root: &Path, program: &Path) -> BTreeSet<(usize, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(["check", "--format", "json", "--root"])
        .arg(root)
        .arg(program)
        .output()
        .unwrap();
    let diagnostics: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    diagnostics
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["range"]["start"]["line"].as_u64().unwrap() as usize + 1, d["code"].as_str().unwrap().to_string()))
        .collect()
}

/// (line, code) of each `# mistake: <code>` mark, 1-based.
fn planted(program: &Path) -> BTreeSet<(usize, String)> {
    let text = std::fs::read_to_string(program).unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| line.split_once("# mistake: ").map(|(_, code)| (i + 1, code.trim().to_string())))
        .collect()
}

#[test]
fn every_planted_mistake_is_reported_on_its_line_and_nothing_else() {
    let ws = fixture();
    let mut total = 0;
    for program in programs(&ws.path().join("planted")) {
        let expected = planted(&program);
        let found = reported(ws.path(), &program);
        let missed: Vec<_> = expected.difference(&found).collect();
        let extra: Vec<_> = found.difference(&expected).collect();
        assert!(
            missed.is_empty() && extra.is_empty(),
            "{}: missed {missed:?}, not planted {extra:?}",
            program.display()
        );
        total += expected.len();
    }
    assert!(total >= 60, "{total} planted patterns");
}

#[test]
fn the_correct_programs_get_no_diagnostic() {
    let ws = fixture();
    for program in programs(&ws.path().join("correct")) {
        assert_eq!(reported(ws.path(), &program), BTreeSet::new(), "{}", program.display());
    }
}

/// basedpyright on the module-dialect program with `chainsmith stubs`: each line where it finds a
/// wrong key or a wrong type chainsmith reports too. Its `reportTypedDictNotRequiredAccess` (a
/// key the spec does not list as required) is a different question chainsmith leaves alone:
/// real specs' `required` lists are too unreliable to warn on every optional key.
#[test]
fn chainsmith_finds_what_basedpyright_finds_on_its_stubs() {
    if !external::basedpyright() {
        return;
    }
    let ws = fixture();
    let stubs = Command::new(env!("CARGO_BIN_EXE_chainsmith")).arg("stubs").current_dir(ws.path()).output().unwrap();
    assert!(stubs.status.success(), "{}", String::from_utf8_lossy(&stubs.stderr));
    std::fs::write(ws.path().join("pyrightconfig.json"), r#"{"typeCheckingMode": "standard"}"#).unwrap();
    let program = ws.path().join("planted/module_dialect.py");
    let checked = Command::new("basedpyright")
        .args(["--outputjson"])
        .arg(&program)
        .current_dir(ws.path())
        .output()
        .expect("basedpyright runs");
    let report: Value = serde_json::from_slice(&checked.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&checked.stdout)));
    let pyright_lines: BTreeSet<usize> = report["generalDiagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error" && d["rule"] != "reportTypedDictNotRequiredAccess")
        .map(|d| d["range"]["start"]["line"].as_u64().unwrap() as usize + 1)
        .collect();
    assert!(pyright_lines.len() >= 30, "basedpyright found too little to compare: {report}");
    let ours: BTreeSet<usize> = reported(ws.path(), &program).into_iter().map(|(line, _)| line).collect();
    let missed: Vec<_> = pyright_lines.difference(&ours).collect();
    assert!(missed.is_empty(), "basedpyright finds lines {missed:?} that chainsmith does not");
    let beyond: Vec<_> = ours.difference(&pyright_lines).collect();
    assert!(!beyond.is_empty(), "chainsmith also finds what stubs cannot express (enums in comparisons)");
}
