//! `chainsmith check` and `chainsmith tools` as a user runs them, on the TMDB example workspace.

use std::path::Path;
use std::process::Command;

fn chainsmith(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the chainsmith binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// Where the TMDB spec names a property `""` (`trending`'s, where `results` belongs), as the text
/// output prints it: `path:line:col`.
fn tmdb_empty_property() -> String {
    let spec = std::fs::read_to_string("examples/tmdb/specs/tmdb_oas.json").unwrap();
    let (line, text) = spec.lines().enumerate().find(|(_, l)| l.trim_start().starts_with("\"\": {")).unwrap();
    format!("examples/tmdb/specs/tmdb_oas.json:{}:{}", line + 1, text.find('"').unwrap() + 1)
}

#[test]
fn the_example_chains_are_clean() {
    let (code, stdout, stderr) = chainsmith(&["check", "examples/tmdb/chains"]);
    // The spec's own quirk is reported on the spec; the chains get no diagnostic at all.
    let spec_warning = format!("{}: warning[empty-property-name]: ", tmdb_empty_property());
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(matches!(lines[..], [only] if only.starts_with(&spec_warning)), "{stdout}");
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("checked 12 programs against 54 tools: 0 errors, 1 warning"), "{stderr}");
}

/// RestBench TMDB's `trending` names a property `""` where `results` belongs: reading `results`
/// is no unknown key, and the protocol file gets the warning, located.
#[test]
fn a_nameless_property_leaves_its_object_unchecked_and_is_reported_on_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("trending.py"),
        "from chainsmith.tools import tmdb\n\
         top = tmdb.trending(media_type=\"movie\", time_window=\"day\")[\"results\"][0][\"id\"]\n\
         print(tmdb.trending(media_type=\"tv\", time_window=\"week\")[\"page\"][\"x\"])\n",
    )
    .unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", "examples/tmdb", "check", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(!stdout.contains("unknown-key"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{}: warning[empty-property-name]: a property named `\"\"`: which key it stands for is unknown, so the keys \
             programs read from this object are not checked",
            tmdb_empty_property()
        )),
        "{stdout}"
    );
    // The keys it does name are still checked: `page` is an integer.
    assert!(stdout.contains("trending.py:3:") && stdout.contains("[bad-index]"), "{stdout}");
}

/// A spec that writes `"required": "true"` means it: leaving the parameter out is an error, and
/// the spec gets a warning on the value.
#[test]
fn a_required_written_as_a_string_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let spec = std::fs::read_to_string("examples/tmdb/specs/tmdb_oas.json").unwrap();
    let at = spec.find("\"/search/movie\"").unwrap();
    let value = at + spec[at..].find("\"required\": true").unwrap() + "\"required\": ".len();
    let quoted = format!("{}\"true\"{}", &spec[..value], &spec[value + "true".len()..]);
    std::fs::write(dir.path().join("tmdb.json"), &quoted).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), "[[toolsets]]\nname = \"tmdb\"\nopenapi = \"tmdb.json\"\n")
        .unwrap();
    std::fs::write(
        dir.path().join("p.py"),
        "from chainsmith.tools import tmdb\n\
         ok = tmdb.search_movie(query=\"Heat\")\n\
         none = tmdb.search_movie(page=2)\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", root, "check", "--format", "json", root]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let found: Vec<(String, u64, &str)> = items
        .iter()
        .map(|d| {
            let file = Path::new(d["file"].as_str().unwrap()).file_name().unwrap().to_string_lossy().to_string();
            (file, d["range"]["start"]["line"].as_u64().unwrap(), d["code"].as_str().unwrap())
        })
        .collect();
    let line = quoted[..value].lines().count() as u64 - 1;
    let nameless = quoted.lines().position(|l| l.trim_start().starts_with("\"\": {")).unwrap() as u64;
    assert_eq!(
        found,
        [
            ("tmdb.json".to_string(), line, "required-as-string"),
            ("tmdb.json".to_string(), nameless, "empty-property-name"),
            ("p.py".to_string(), 2, "missing-argument")
        ],
        "{stdout}"
    );
    assert_eq!(
        items[0]["message"],
        "`required` of parameter `query` in GET /search/movie is the string \"true\"; read as true"
    );
}

/// Every line marked `# mistake: <code>` gets exactly that diagnostic, and nothing else is reported.
#[test]
fn every_planted_mistake_is_reported_on_its_line() {
    let mut expected = Vec::new();
    for entry in std::fs::read_dir("examples/tmdb/mistakes").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "py") {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                if let Some((_, code)) = line.split_once("# mistake: ") {
                    expected.push((
                        path.file_name().unwrap().to_string_lossy().to_string(),
                        i as u64,
                        code.trim().to_string(),
                    ));
                }
            }
        }
    }
    expected.sort();
    assert!(expected.len() >= 10, "{expected:?}");
    let (code, stdout, _) = chainsmith(&["check", "--format", "json", "examples/tmdb/mistakes"]);
    assert_eq!(code, 1, "errors exit 1");
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    // The spec's own quirk (EXPECTED.md says so) is no planted mistake.
    let (on_spec, items): (Vec<_>, Vec<_>) =
        items.into_iter().partition(|d| d["file"] == "examples/tmdb/specs/tmdb_oas.json");
    let on_spec: Vec<&str> = on_spec.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(on_spec, ["empty-property-name"]);
    let mut got: Vec<(String, u64, String)> = items
        .iter()
        .map(|d| {
            let file = Path::new(d["file"].as_str().unwrap()).file_name().unwrap().to_string_lossy().to_string();
            (file, d["range"]["start"]["line"].as_u64().unwrap(), d["code"].as_str().unwrap().to_string())
        })
        .collect();
    got.sort();
    assert_eq!(got, expected);

    // EXPECTED.md's table says where each one is, how severe, and its message: held to what
    // `check` prints.
    type Row = (String, u64, u64, String, String, String);
    let table = std::fs::read_to_string("examples/tmdb/mistakes/EXPECTED.md").unwrap();
    let mut documented: Vec<Row> = table
        .lines()
        .filter(|l| l.starts_with("| `mistakes/"))
        .map(|row| {
            let raw: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            let cells: Vec<&str> = raw.iter().map(|c| c.trim_matches('`')).collect();
            let file = Path::new(cells[0]).file_name().unwrap().to_string_lossy().to_string();
            let message = raw[6].to_string();
            (
                file,
                cells[1].parse().unwrap(),
                cells[2].parse().unwrap(),
                cells[3].to_string(),
                cells[4].to_string(),
                message,
            )
        })
        .collect();
    documented.sort();
    let mut printed: Vec<Row> = items
        .iter()
        .map(|d| {
            let file = Path::new(d["file"].as_str().unwrap()).file_name().unwrap().to_string_lossy().to_string();
            let start = &d["range"]["start"];
            let (line, col) = (start["line"].as_u64().unwrap() + 1, start["character"].as_u64().unwrap() + 1);
            let text = |key: &str| d[key].as_str().unwrap().to_string();
            (file, line, col, text("severity"), text("code"), text("message"))
        })
        .collect();
    printed.sort();
    assert_eq!(documented, printed, "examples/tmdb/mistakes/EXPECTED.md no longer says what `check` prints");
    let errors = printed.iter().filter(|d| d.3 == "error").count();
    let summary = format!("{} diagnostics — {errors} errors and {} warnings", printed.len(), printed.len() - errors);
    let prose = table.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(prose.contains(&summary), "EXPECTED.md's count: {summary}");
    for d in &items {
        assert!(["error", "warning"].contains(&d["severity"].as_str().unwrap()));
        assert!(!d["message"].as_str().unwrap().is_empty());
        assert!(d["range"]["end"]["character"].as_u64() >= d["range"]["start"]["character"].as_u64());
    }
}

#[test]
fn text_output_is_path_line_col() {
    let (code, stdout, _) = chainsmith(&["check", "examples/tmdb/mistakes/wrong_module.py"]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with(&format!("{}: warning[empty-property-name]: ", tmdb_empty_property())), "{stdout}");
    assert_eq!(
        lines[1],
        "examples/tmdb/mistakes/wrong_module.py:5:30: error[unknown-toolset]: no toolset `tmbd` in this workspace; did you mean `tmdb`?"
    );
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, stderr) = chainsmith(&["check", "no/such/file.py"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no such file or folder"), "{stderr}");
}

#[test]
fn tools_json_has_the_design_shape() {
    let (code, stdout, _) = chainsmith(&["--root", "examples/tmdb", "tools", "--format", "json"]);
    assert_eq!(code, 0);
    let tools: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(tools.len(), 54);
    let credits = tools.iter().find(|t| t["id"] == "tmdb.person_movie_credits").unwrap();
    assert_eq!(credits["toolset"], "tmdb");
    assert_eq!(credits["name"], "person_movie_credits");
    assert_eq!(credits["source"]["kind"], "openapi");
    assert_eq!(credits["source"]["method"], "GET");
    assert_eq!(credits["source"]["path"], "/person/{person_id}/movie_credits");
    assert_eq!(credits["source"]["file"], "examples/tmdb/specs/tmdb_oas.json");
    assert_eq!(credits["required"], serde_json::json!(["person_id"]));
    assert_eq!(credits["response_known"], true);
}

#[test]
fn a_broken_protocol_file_is_a_located_error_and_loses_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("protocols")).unwrap();
    let spec = std::fs::read_to_string("examples/tmdb/specs/tmdb_oas.json").unwrap();
    // Break one operation's $ref: only that operation goes away.
    let broken = spec.replacen("#/components/schemas/", "#/components/schemas/Nope", 1);
    std::fs::write(dir.path().join("protocols/tmdb.json"), &broken).unwrap();
    std::fs::write(dir.path().join("protocols/bad.json"), "{\"openapi\": \"3.0.0\", \"paths\": {").unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", root, "tools", "--format", "json"]);
    assert_eq!(code, 1, "{stderr}");
    let tools: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(tools.len(), 53, "one operation disabled, the rest loaded");
    assert!(stderr.contains("protocols/bad.json:1:"), "{stderr}");
    assert!(stderr.contains("[invalid-protocol]"), "{stderr}");
    assert!(stderr.contains("[unresolved-ref]"), "{stderr}");
}

#[test]
fn all_of_stabletoolbench_loads_as_one_toolset_with_categories() {
    let data =
        std::path::absolute("tests/fixtures/datasets/stabletoolbench/solvable_queries/test_instruction").unwrap();
    let files: Vec<String> = ["G1_instruction", "G1_category", "G1_tool", "G2_instruction"]
        .iter()
        .map(|g| format!("\"{}\"", data.join(format!("{g}.json")).display()))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("chainsmith.toml"),
        format!("[[toolsets]]\nname = \"rapid\"\ntoolbench = [{}]\n", files.join(", ")),
    )
    .unwrap();
    // The data lies outside the workspace: read once it is trusted.
    let (code, stdout, stderr) =
        chainsmith(&["--trust", "--root", dir.path().to_str().unwrap(), "tools", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let tools: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    // 2,220 distinct (tool, API) pairs over the four groups, duplicates across files merged.
    assert_eq!(tools.len(), 2220);
    assert!(tools.iter().all(|t| t["toolset"] == "rapid" && t["source"]["kind"] == "toolbench"));
    let categories: std::collections::BTreeSet<&str> = tools.iter().filter_map(|t| t["category"].as_str()).collect();
    assert!(categories.len() >= 40, "{categories:?}");
    assert!(categories.contains("Data") && categories.contains("Sports"));
    let word = tools.iter().find(|t| t["id"] == "rapid.get_word_by_start_for_random_word_api");
    assert!(word.is_some_and(|w| w["required"] == serde_json::json!(["start"])), "{word:?}");
}

/// A protocol path naming a FIFO or a device, and a chainsmith.toml that is not UTF-8, are located
/// errors; `check` finishes (it used to hang on the FIFO and read /dev/zero without end).
#[test]
fn special_files_and_non_utf8_config_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.json");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    std::fs::write(
        dir.path().join("chainsmith.toml"),
        "[[toolsets]]\nname = \"a\"\nopenapi = \"pipe.json\"\n\n[[toolsets]]\nname = \"b\"\nopenapi = \"/dev/zero\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("p.py"), "print(1)\n").unwrap();
    let root = dir.path().to_str().unwrap();
    // `/dev/zero` lies outside the workspace: named by a trusted one.
    let (code, stdout, stderr) = chainsmith(&["--trust", "--root", root, "check", &format!("{root}/p.py")]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("error[unreadable-protocol]: cannot read protocol file") && stdout.contains("FIFO"),
        "{stdout}"
    );
    assert!(stdout.contains("/dev/zero: not a regular file (a device)"), "{stdout}");

    std::fs::write(dir.path().join("chainsmith.toml"), b"[llm]\nmodel = \"caf\xe9\"\n").unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", root, "check", &format!("{root}/p.py")]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains("chainsmith.toml:1:1: error[invalid-config]: chainsmith.toml cannot be read: not UTF-8 text (invalid byte at offset 18)"), "{stdout}");
}

/// A protocol file over its toolset's `max_mb` is a located error that says how to raise the
/// limit; raised, the same file loads.
#[test]
fn the_protocol_size_cap_is_set_per_toolset() {
    let dir = tempfile::tempdir().unwrap();
    // 1.3 MB: over `max_mb = 1`, under 2.
    std::fs::copy("examples/tmdb/specs/tmdb_oas.json", dir.path().join("tmdb.json")).unwrap();
    let toml = |max_mb: u64| format!("[[toolsets]]\nname = \"tmdb\"\nopenapi = \"tmdb.json\"\nmax_mb = {max_mb}\n");
    let root = dir.path().to_str().unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), toml(1)).unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", root, "check", "--format", "json"]);
    assert_eq!(code, 1, "{stderr}");
    let diagnostics: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let refused = diagnostics.iter().find(|d| d["code"] == "unreadable-protocol").expect("a located refusal");
    assert!(refused["file"].as_str().unwrap().ends_with("chainsmith.toml"), "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("larger than the 1 MiB limit") && message.contains("`max_mb`"), "{message}");

    std::fs::write(dir.path().join("chainsmith.toml"), toml(2)).unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", root, "tools", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let tools: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert!(tools.iter().any(|t| t["id"] == "tmdb.movie_credits"), "{stdout}");

    std::fs::write(dir.path().join("chainsmith.toml"), toml(0)).unwrap();
    let (_, stdout, _) = chainsmith(&["--root", root, "check"]);
    assert!(stdout.contains("`max_mb` must be between 1 and 65536"), "{stdout}");

    // Above the default, the limit is a loosening an untrusted folder does not get: parsed, a
    // file that large takes gigabytes. (Sparse: it takes no disk.)
    std::fs::File::create(dir.path().join("tmdb.json")).unwrap().set_len(257 << 20).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), toml(300)).unwrap();
    let (_, stdout, _) = chainsmith(&["--root", root, "check"]);
    assert!(stdout.contains("larger than the 256 MiB limit"), "{stdout}");
    assert!(
        stdout.contains(
            "warning[workspace-untrusted]: toolset `tmdb` (max_mb) would read its protocol files up to 300 MiB"
        ),
        "{stdout}"
    );

    // Within the size limit, a file of tiny values (8 MiB of `0,`) would parse to gigabytes: it
    // is refused, on itself, before parsing.
    std::fs::write(dir.path().join("tmdb.json"), format!("[{}0]", "0,".repeat(4 << 20))).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), toml(256)).unwrap();
    let (code, stdout, _) = chainsmith(&["--root", root, "check"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("tmdb.json:1:1: error[invalid-protocol]: it holds more than 4194304 values, past what chainsmith parses from one protocol file"),
        "{stdout}"
    );
}

/// A latin-1 program with its coding line is checked; one without is reported on itself alone.
#[test]
fn non_utf8_sources_are_decoded_or_reported_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("latin.py"),
        b"# -*- coding: latin-1 -*-\nfrom chainsmith.tools import tmdb\nr = tmdb.search_persn(query='caf\xe9')\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("broken.py"), b"x = '\xff'\n").unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", "examples/tmdb", "check", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains("broken.py:1:1: error[unreadable-source]: cannot check"), "{stdout}");
    assert!(stdout.contains("latin.py:3:10: error[unknown-tool]"), "{stdout}");
    assert!(stderr.contains("checked 2 programs"), "{stderr}");
}

/// Python nested past what the walk can hold (10,000 parentheses, a 100,000-term `+` chain) is a
/// located `too-deep` warning, not a stack overflow that takes the process down.
#[test]
fn deeply_nested_python_is_a_located_warning() {
    let dir = tempfile::tempdir().unwrap();
    let parens = format!("x = {}1{}\n", "(".repeat(10_000), ")".repeat(10_000));
    let sum = format!("from chainsmith.tools import tmdb\ny = {}\n", vec!["1"; 100_000].join(" + "));
    std::fs::write(dir.path().join("parens.py"), parens).unwrap();
    std::fs::write(dir.path().join("sum.py"), sum).unwrap();
    let (code, stdout, stderr) = chainsmith(&["--root", "examples/tmdb", "check", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("parens.py:1:1: warning[too-deep]"), "{stdout}");
    assert!(stdout.contains("sum.py:2:1: warning[too-deep]"), "{stdout}");
}

/// examples/tmdb/README.md says what the workspace holds and what `check` and `tools` print there:
/// held to the files and to the output.
#[test]
fn the_examples_readme_says_what_the_workspace_holds_and_prints() {
    let readme = std::fs::read_to_string("examples/tmdb/README.md").unwrap();
    let prose = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    // The chains' table lists exactly the files in chains/, and the count says how many.
    let mut on_disk: Vec<String> = std::fs::read_dir("examples/tmdb/chains")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|name| name.ends_with(".py"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `task"))
        .map(|rest| format!("task{}", &rest[..rest.find('`').unwrap()]))
        .collect();
    listed.sort();
    assert_eq!(listed, on_disk, "the chains' table in examples/tmdb/README.md");
    assert!(prose.contains(&format!("{} correct tool-chain programs", on_disk.len())), "the chains' count");
    let (module, http): (Vec<&str>, Vec<&str>) = readme
        .lines()
        .filter(|l| l.starts_with("| `task"))
        .map(|l| l.split(" | ").nth(2).unwrap())
        .partition(|dialect| dialect.starts_with("module"));
    assert!(prose.contains(&format!("{} use the **module dialect**", module.len())), "{module:?}");
    assert!(prose.contains(&format!("{} the **HTTP dialect**", http.len())), "{http:?}");

    // `chainsmith tools` lists as many tools as the README says.
    let (code, stdout, _) = chainsmith(&["--root", "examples/tmdb", "tools", "--format", "json"]);
    assert_eq!(code, 0);
    let tools: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert!(prose.contains(&format!("`chainsmith tools` lists the {} tools", tools.len())), "{} tools", tools.len());
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("examples/tmdb/specs/tmdb_oas.json").unwrap()).unwrap();
    let gets = spec["paths"].as_object().unwrap().values().filter(|p| p.get("get").is_some()).count();
    assert!(prose.contains(&format!("{gets} GET operations, so {} tools", tools.len())), "{gets} GETs");

    // `check mistakes`: the errors and warnings it names, in the README's words.
    let (_, stdout, _) = chainsmith(&["check", "--format", "json", "examples/tmdb/mistakes"]);
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let in_programs = |severity: &str| -> Vec<String> {
        items
            .iter()
            .filter(|d| d["severity"] == severity && d["file"].as_str().unwrap().ends_with(".py"))
            .map(|d| d["code"].as_str().unwrap().to_string())
            .collect()
    };
    let (errors, warnings) = (in_programs("error"), in_programs("warning"));
    assert!(prose.contains(&format!("then {} errors —", errors.len())), "{errors:?}");
    assert!(prose.contains(&format!("and {} warnings,", warnings.len())), "{warnings:?}");
    for code in errors.iter().chain(&warnings) {
        assert!(prose.contains(code.as_str()), "the README does not name {code}");
    }
}
