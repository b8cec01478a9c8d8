//! `chainsmith probe` end to end: real MCP servers (mcp-server-git on a temporary repository,
//! mcp-server-time, @modelcontextprotocol/server-memory) and the runtime's local HTTP test server
//! (undocumented endpoints in a native toolset, one needing an ID from the other), with the LLM as
//! the test-local OpenAI-compatible server answering by request content.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::external;
use crate::support::openai::{Answer, Server};
use crate::support::probe::{VAULT_TOOLSET, is_selection, program, target_of, vault_llm};
use crate::support::runtime::{TmdbServer, chainsmith, text};
use serde_json::Value;

fn tools_json(dir: &Path) -> Vec<Value> {
    let out = chainsmith(dir, &["--trust", "tools", "--format", "json"], &[]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

fn response_known(tools: &[Value], id: &str) -> bool {
    tools.iter().find(|t| t["id"] == id).unwrap_or_else(|| panic!("no {id}"))["response_known"].as_bool().unwrap()
}

#[test]
fn chain_of_probing_resolves_an_id_needing_http_tool_and_edits_the_native_file_in_place() {
    let tmdb = TmdbServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("vault.toolset.json"), VAULT_TOOLSET).unwrap();
    let llm = vault_llm(Duration::ZERO);
    let toml = format!(
        "[[toolsets]]\nname = \"vault\"\nprotocol = \"vault.toolset.json\"\nbase_url = \"{}\"\n\n[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n\n[probe]\nsamples = 2\nrounds = 3\n",
        tmdb.base_url(),
        llm.base_url
    );
    std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
    // A link planted where the probe programs are written, to a file of the user's elsewhere.
    let elsewhere = tempfile::tempdir().unwrap();
    let precious = elsewhere.path().join("bashrc");
    std::fs::write(&precious, "# mine\n").unwrap();
    std::fs::create_dir_all(dir.path().join(".chainsmith/probe")).unwrap();
    std::os::unix::fs::symlink(&precious, dir.path().join(".chainsmith/probe/vault.search_vaults.py")).unwrap();

    let out = chainsmith(dir.path(), &["--trust", "probe", "--all"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "lock_vault stays unprobed\n{stdout}\n{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "# mine\n", "a probe program went through the link");
    assert!(stdout.contains("probed vault.search_vaults (round 1"), "{stdout}");
    assert!(stdout.contains("probed vault.vault_details (round 2"), "{stdout}");
    assert!(stdout.contains("unprobed vault.lock_vault: vault.lock_vault is not read-only"), "{stdout}");
    assert!(stdout.contains("wrote vault.toolset.json"), "{stdout}");

    // The POST tool never ran; the guessed ID failed, the searched one worked.
    let requests = tmdb.requests();
    let paths: Vec<(&str, &str)> = requests
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["method"].as_str().unwrap(), r["path"].as_str().unwrap()))
        .collect();
    assert!(paths.iter().all(|(m, _)| *m == "GET"), "{paths:?}");
    assert!(paths.contains(&("GET", "/3/undocumented/vaults/1")), "{paths:?}");
    assert!(paths.contains(&("GET", "/3/undocumented/vaults/v-7731")), "{paths:?}");

    // Round 2's probe prompt offered the prerequisite with its probed schema.
    let bodies = llm.bodies();
    let selection = bodies.iter().find(|b| is_selection(b)).expect("a prerequisite-selection request");
    assert!(selection["messages"][1]["content"].as_str().unwrap().contains("vault.search_vaults("));
    let chained = bodies.iter().find(|b| target_of(b) == Some(("vault.vault_details".into(), true))).unwrap();
    let prompt = chained["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("results: array of object"), "{prompt}");

    // The native file was edited in place: the head is byte-identical, the members are in.
    let edited = std::fs::read_to_string(dir.path().join("vault.toolset.json")).unwrap();
    let head = &VAULT_TOOLSET[..VAULT_TOOLSET.find("\"tools\"").unwrap()];
    assert!(edited.starts_with(head), "{edited}");
    assert!(edited.contains("\"probed\": {"), "{edited}");
    assert!(edited.contains("\"question\": \"What is in the Archive vault?\""), "{edited}");
    assert!(!dir.path().join(".chainsmith/probed/vault.json").exists(), "native tools need no overlay");

    let tools = tools_json(dir.path());
    assert!(response_known(&tools, "vault.search_vaults"));
    assert!(response_known(&tools, "vault.vault_details"));
    assert!(!response_known(&tools, "vault.lock_vault"));

    // Diagnostics use the probed schema at once.
    std::fs::write(
        dir.path().join("use.py"),
        "from chainsmith.tools import vault\nv = vault.vault_details(vault_id=\"v-7731\")\nprint(v[\"items\"][0][\"size\"], v[\"titel\"])\n",
    )
    .unwrap();
    let check = chainsmith(dir.path(), &["check", "use.py"], &[]);
    let report = text(&check.stdout);
    assert!(report.contains("[unknown-key]") && report.contains("titel"), "{report}");
    assert!(!report.contains("\"size\""), "{report}");
}

#[test]
fn mcp_tools_are_probed_into_an_overlay_merged_on_the_next_load() {
    if !external::python_package("mcp_server_git", "mcp-server-git")
        || !external::python_package("mcp_server_time", "mcp-server-time")
    {
        return;
    }
    let Some(memory) = external::npm_mcp_server("server-memory") else { return };

    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(&repo).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "hello\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "first"]);
    std::fs::write(repo.join("a.txt"), "hello again\n").unwrap();

    let repo_text = repo.display().to_string();
    let repo_for_llm = repo_text.clone();
    let llm = Server::start(move |body, _| {
        let Some((target, _)) = target_of(body) else { return Answer::text("[]") };
        let r = &repo_for_llm;
        let call = match target.as_str() {
            "git.git_status" => format!("git.git_status(repo_path={r:?})"),
            "git.git_log" => format!("git.git_log(repo_path={r:?}, max_count=5)"),
            "git.git_diff_unstaged" => format!("git.git_diff_unstaged(repo_path={r:?})"),
            "git.git_commit" => format!("git.git_commit(repo_path={r:?}, message=\"probe\")"),
            "time.get_current_time" => "time.get_current_time(timezone=\"Europe/Paris\")".to_string(),
            "memory.read_graph" => "memory.read_graph()".to_string(),
            "memory.create_entities" => {
                "memory.create_entities(entities=[{\"name\": \"x\", \"entityType\": \"t\", \"observations\": []}])"
                    .into()
            }
            _ => return Answer::text("No idea."),
        };
        let module = target.split('.').next().unwrap().to_string();
        program(&format!("What does {target} say?"), &format!("from chainsmith.tools import {module}\nprint({call})"))
    });
    let memory_file = dir.path().join("memory.jsonl");
    // Python and Node servers start in a second alone, but take longer beside a parallel test run
    // on two cores: the default 10 s would test the machine's load, not probing.
    let toml = format!(
        "[[toolsets]]\nname = \"git\"\nmcp = {{ command = \"python3\", args = [\"-m\", \"mcp_server_git\", \"--repository\", {repo_text:?}], timeout_s = 60 }}\n\n\
         [[toolsets]]\nname = \"time\"\nmcp = {{ command = \"python3\", args = [\"-m\", \"mcp_server_time\"], timeout_s = 60 }}\n\n\
         [[toolsets]]\nname = \"memory\"\nmcp = {{ command = \"node\", args = [{:?}], env = {{ MEMORY_FILE_PATH = {:?} }}, timeout_s = 60 }}\n\n\
         [llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n\n[probe]\nsamples = 1\nrounds = 1\n",
        memory,
        memory_file.display().to_string(),
        llm.base_url
    );
    std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
    let out = chainsmith(
        dir.path(),
        &[
            "--trust",
            "probe",
            "git.git_status",
            "git.git_log",
            "git.git_diff_unstaged",
            "git_commit",
            "time.get_current_time",
            "memory.read_graph",
            "memory.create_entities",
        ],
        &[],
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for id in ["git.git_status", "git.git_log", "git.git_diff_unstaged", "time.get_current_time", "memory.read_graph"] {
        assert!(stdout.contains(&format!("probed {id} (round 1")), "{id}\n{stdout}\n{stderr}");
    }
    assert!(stdout.contains("unprobed git.git_commit: git.git_commit is not read-only"), "{stdout}");
    assert!(stdout.contains("unprobed memory.create_entities: memory.create_entities is not read-only"), "{stdout}");
    // Nothing was committed, nothing was written to the memory graph.
    assert_eq!(git(&["rev-list", "--count", "HEAD"]).trim(), "1");
    assert!(std::fs::read_to_string(&memory_file).unwrap_or_default().trim().is_empty());

    // The overlays, in their shape.
    let overlay: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(".chainsmith/probed/git.json")).unwrap())
            .unwrap();
    assert_eq!(overlay["chainsmith"], "probed/1");
    let status = &overlay["tools"]["git_status"];
    assert!(status["response"].is_object(), "{overlay:#}");
    assert_eq!(status["probed"]["samples"], 1);
    assert_eq!(status["examples"][0]["question"], "What does git.git_status say?");
    assert!(status["examples"][0]["program"].as_str().unwrap().contains("git.git_status("));
    assert!(dir.path().join(".chainsmith/probed/time.json").is_file());
    assert!(dir.path().join(".chainsmith/probed/memory.json").is_file());

    // Merged on the next load.
    let after = tools_json(dir.path());
    assert!(response_known(&after, "git.git_status"));
    assert!(response_known(&after, "git.git_log"));
    assert!(!response_known(&after, "git.git_commit"));

    // A wrong key on a probed tool is flagged.
    std::fs::write(
        dir.path().join("use.py"),
        "from chainsmith.tools import time\nnow = time.get_current_time(timezone=\"UTC\")\nprint(now[\"datetime\"], now[\"dattime\"])\n",
    )
    .unwrap();
    let check = chainsmith(dir.path(), &["--trust", "check", "use.py"], &[]);
    let report = text(&check.stdout);
    assert!(report.contains("[unknown-key]") && report.contains("dattime"), "{report}");

    // A corrupt overlay is a located diagnostic, not a failed load.
    std::fs::write(dir.path().join(".chainsmith/probed/git.json"), "{\"tools\": {\"git_status\": ").unwrap();
    let broken = chainsmith(dir.path(), &["--trust", "tools", "--format", "json"], &[]);
    let tools: Vec<Value> = serde_json::from_slice(&broken.stdout).unwrap();
    assert!(!response_known(&tools, "git.git_status"));
    assert!(text(&broken.stderr).contains("[invalid-overlay]"), "{}", text(&broken.stderr));
}
