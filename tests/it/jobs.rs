//! One job behind every front end: the same task generated from the terminal (`chainsmith
//! generate`), from the editor (`chainsmith.generate` over LSP) and by `chainsmith eval` asks the
//! model exactly the same things — the same candidate tools, the same revision with the same
//! protocol, the same judge — so the benchmark measures what a user's command runs. Fixing and
//! probing ask the same from the terminal and the editor.

use serde_json::Value;
use tower_lsp_server::lsp_types as lsp;
use tower_lsp_server::lsp_types::notification::ShowMessage;
use tower_lsp_server::lsp_types::request::{ApplyWorkspaceEdit, ShowMessageRequest};

use crate::support::lsp::TestClient;
use crate::support::openai::{Answer, Server};
use crate::support::probe::{VAULT_TOOLSET, vault_llm};
use crate::support::runtime::{TmdbServer, chainsmith, text, workspace};

const TASK: &str = "print the biography of Sofia Coppola";

const GOOD: &str = "```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=found[\"results\"][0][\"id\"])\nprint(person[\"biography\"])\n```";

/// The planner's first chain chosen, a completion that fails at run time (the test server answers
/// 404 for that id), the revision that works, and the judge's "Solved": the conversation touches
/// the plans, candidates, runs, attribution, revision with a tool's protocol and the judge.
fn scripted() -> Server {
    Server::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
        if last.contains("Does the output answer the task") {
            Answer::text("Solved.")
        } else if last.contains("Which chain gets what the task asks for") {
            Answer::text("1")
        } else if last.contains("Revise it") {
            Answer::text(GOOD)
        } else {
            Answer::text(
                "```python\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n```",
            )
        }
    })
}

fn llm_config(llm: &Server) -> String {
    format!("[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n", llm.base_url)
}

/// The requests the model received, with call durations (`12 ms`) masked: they are the only
/// thing two runs of the same chain may differ in.
fn conversation(llm: &Server) -> Vec<Value> {
    llm.bodies()
        .into_iter()
        .map(|body| {
            let masked = mask_durations(&serde_json::to_string(&body).unwrap());
            serde_json::from_str(&masked).unwrap()
        })
        .collect()
}

fn mask_durations(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut masked = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            masked.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        if chars[i..].starts_with(&[' ', 'm', 's']) {
            masked.push('N');
        } else {
            masked.extend(&chars[start..i]);
        }
    }
    masked
}

#[test]
fn generate_asks_the_model_the_same_from_the_terminal_the_editor_and_eval() {
    let tmdb = TmdbServer::start(&[]);

    let terminal_llm = scripted();
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&terminal_llm));
    let out = chainsmith(ws.path(), &["--trust", "generate", TASK, "-o", "bio.py"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let editor_llm = scripted();
    let mut client = TestClient::in_process()
        .workspace(workspace(&tmdb.base_url(), false, &llm_config(&editor_llm)))
        .trusted()
        .start();
    let uri = client.open("bio.py", &format!("\"\"\"{TASK}\"\"\"\n"));
    client.answer::<ApplyWorkspaceEdit>(lsp::ApplyWorkspaceEditResponse {
        applied: true,
        failure_reason: None,
        failed_change: None,
    });
    let arguments = vec![serde_json::json!({"uri": uri.as_str(), "task": TASK, "tools": []})];
    assert_eq!(client.execute_command("chainsmith.generate", arguments, None), Ok(None));
    let edit = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    assert!(format!("{:?}", edit.params).contains("person_id=found"), "{:?}", edit.params);
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.message, "chainsmith: a chain that runs was added to bio.py (4 LLM calls)");
    client.shutdown();

    let eval_llm = scripted();
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&eval_llm));
    let tasks = format!(r#"[{{"query": "{TASK}", "solution": ["GET /search/person", "GET /person/{{person_id}}"]}}]"#);
    std::fs::write(ws.path().join("tasks.json"), tasks).unwrap();
    // `--live`: the same test server answers all three, so the runs' outputs are the same too.
    let out = chainsmith(ws.path(), &["--trust", "eval", "tasks.json", "--live", "--out", "results.jsonl"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let terminal = conversation(&terminal_llm);
    assert_eq!(terminal.len(), 4, "plan choice, completion, revision, judge: {terminal:#?}");
    let revision = terminal[2]["messages"].to_string();
    assert!(revision.contains("attributed to the tool `tmdb.person`"), "{revision}");
    assert_eq!(conversation(&editor_llm), terminal, "the editor's generation asked otherwise");
    assert_eq!(conversation(&eval_llm), terminal, "eval asked otherwise than the user's command");
}

#[test]
fn durations_are_masked_and_other_numbers_kept() {
    assert_eq!(
        mask_durations("#1 tmdb.person(person_id=404)  ✗ 404  12 ms  line 3"),
        "#1 tmdb.person(person_id=404)  ✗ 404  N ms  line 3"
    );
}

#[test]
fn fix_asks_the_model_the_same_from_the_terminal_and_the_editor() {
    let tmdb = TmdbServer::start(&[]);
    let broken = format!(
        "# task: {TASK}\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n"
    );

    let terminal_llm = scripted();
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&terminal_llm));
    std::fs::write(ws.path().join("bio.py"), &broken).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "fix", "bio.py"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let fixed = std::fs::read_to_string(ws.path().join("bio.py")).unwrap();

    let editor_llm = scripted();
    let mut client = TestClient::in_process()
        .workspace(workspace(&tmdb.base_url(), false, &llm_config(&editor_llm)))
        .trusted()
        .start();
    let uri = client.open("bio.py", &broken);
    client.answer::<ApplyWorkspaceEdit>(lsp::ApplyWorkspaceEditResponse {
        applied: true,
        failure_reason: None,
        failed_change: None,
    });
    let arguments = vec![serde_json::json!({"uri": uri.as_str()})];
    assert_eq!(client.execute_command("chainsmith.fix", arguments, None), Ok(None));
    let edit = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    let edits = &edit.params.edit.changes.as_ref().unwrap()[&uri];
    assert_eq!(edits[0].new_text, fixed, "the same fixed program, task header kept");
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.message, "chainsmith: fixed bio.py; the new program runs (2 LLM calls)");
    client.shutdown();

    // The program is run once to see it fail, and that run is the search's first attempt: a
    // program that changes data must not change it twice.
    let failing_calls = |tmdb: &TmdbServer| {
        tmdb.requests()
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["path"].as_str().unwrap().ends_with("/person/404"))
            .count()
    };
    assert_eq!(failing_calls(&tmdb), 2, "once from the terminal, once from the editor");

    let terminal = conversation(&terminal_llm);
    assert_eq!(terminal.len(), 2, "the given program's revision and the judge: {terminal:#?}");
    assert_eq!(conversation(&editor_llm), terminal, "the editor's fix asked otherwise");
}

#[test]
fn probe_asks_the_model_the_same_from_the_terminal_and_the_editor() {
    let vaults = TmdbServer::start(&[]);
    let workspace = |llm: &Server| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("vault.toolset.json"), VAULT_TOOLSET).unwrap();
        let toml = format!(
            "[[toolsets]]\nname = \"vault\"\nprotocol = \"vault.toolset.json\"\nbase_url = \"{}\"\n\n{}\n[probe]\nsamples = 2\nrounds = 3\n",
            vaults.base_url(),
            llm_config(llm)
        );
        std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
        dir
    };

    // Probe all, leaving the tool that writes alone: `--all` without `--yes` in the terminal.
    let terminal_llm = vault_llm(std::time::Duration::ZERO);
    let ws = workspace(&terminal_llm);
    let out = chainsmith(ws.path(), &["--trust", "probe", "--all"], &[]);
    assert_eq!(out.status.code(), Some(1), "lock_vault stays unprobed: {}", text(&out.stderr));
    let written = std::fs::read_to_string(ws.path().join("vault.toolset.json")).unwrap();

    // "Probe all" with "Only read-only tools" in the editor.
    let editor_llm = vault_llm(std::time::Duration::ZERO);
    let mut client = TestClient::in_process().workspace(workspace(&editor_llm)).trusted().start();
    client.answer::<ShowMessageRequest>(Some(lsp::MessageActionItem {
        title: "Only read-only tools".into(),
        properties: Default::default(),
    }));
    client.answer::<ApplyWorkspaceEdit>(lsp::ApplyWorkspaceEditResponse {
        applied: true,
        failure_reason: None,
        failed_change: None,
    });
    assert_eq!(client.execute_command("chainsmith.probeAll", vec![], None), Ok(None));
    let asked = client.await_request::<ShowMessageRequest>(|_| true);
    assert!(asked.params.message.ends_with("not known to be read-only: vault.lock_vault"), "{:?}", asked.params);
    let edit = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    let edits = edit.params.edit.changes.as_ref().and_then(|changes| changes.values().next()).unwrap();
    let edited = crate::support::lsp::apply_edits(VAULT_TOOLSET, edits);
    assert_eq!(edited, written, "the editor's edit writes what the terminal wrote");
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert!(told.message.contains("vault.lock_vault not probed"), "{told:?}");
    client.shutdown();

    let terminal = conversation(&terminal_llm);
    assert!(terminal.len() >= 4, "two samples of each read-only tool, a prerequisite chosen: {terminal:#?}");
    assert_eq!(conversation(&editor_llm), terminal, "the editor's probing asked otherwise");
}
