//! Probing from the editor, in process over real LSP messages: the "Probe tool" code action on a
//! call and on protocol entries (native tool, OpenAPI operation, ToolBench record),
//! `chainsmith.probe` / `chainsmith.probeAll` with work-done progress, the confirmation asked for
//! tools that are not read-only, the `workspace/applyEdit` splicing the probed `response` into the
//! native toolset file, diagnostics against the new schema once the edit is saved, and
//! cancellation. The tools are the runtime test server's undocumented vault endpoints; the LLM is
//! the test-local OpenAI-compatible server answering by request content (as in probe_cli.rs).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tower_lsp_server::lsp_types::notification::{Progress, ShowMessage};
use tower_lsp_server::lsp_types::request::{ApplyWorkspaceEdit, ShowMessageRequest};
use tower_lsp_server::lsp_types::{self as lsp, NumberOrString, Uri};

use crate::support::lsp::{ServerRequest, TestClient, apply_edits, position_of, range, token, uri_of};
use crate::support::openai::Server;
use crate::support::probe::{VAULT_TOOLSET, vault_llm};
use crate::support::runtime::TmdbServer;

/// An OpenAPI operation declaring no response body schema.
const OPENAPI: &str = r#"{
  "openapi": "3.0.0",
  "info": {"title": "Vaults", "version": "1"},
  "paths": {
    "/undocumented/vaults/search": {
      "get": {
        "operationId": "find_vaults",
        "parameters": [{"name": "query", "in": "query", "required": true, "schema": {"type": "string"}}],
        "responses": {"200": {"description": "Found vaults."}}
      }
    }
  }
}
"#;

/// A ToolBench record without `template_response`.
const TOOLBENCH: &str = r#"[
  {"tool_name": "Cat Facts", "api_name": "Get Fact", "category_name": "Animals", "method": "GET",
   "required_parameters": [{"name": "animal", "type": "STRING", "description": "which"}], "optional_parameters": []}
]
"#;

const PROGRAM: &str = "from chainsmith.tools import vault\nv = vault.search_vaults(query=\"Archive\")\nprint(v[\"results\"], v[\"resluts\"])\n";

fn write_workspace(dir: &Path, tmdb: &TmdbServer, llm: &Server) {
    std::fs::write(dir.join("vault.toolset.json"), VAULT_TOOLSET).unwrap();
    std::fs::write(dir.join("vaults.openapi.json"), OPENAPI).unwrap();
    std::fs::write(dir.join("rapid.json"), TOOLBENCH).unwrap();
    let toml = format!(
        "[[toolsets]]\nname = \"vault\"\nprotocol = \"vault.toolset.json\"\nbase_url = \"{base}\"\n\n\
         [[toolsets]]\nname = \"docs\"\nopenapi = \"vaults.openapi.json\"\nbase_url = \"{base}\"\n\n\
         [[toolsets]]\nname = \"rapid\"\ntoolbench = \"rapid.json\"\n\n\
         [llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n\n[probe]\nsamples = 2\nrounds = 3\n",
        llm.base_url,
        base = tmdb.base_url(),
    );
    std::fs::write(dir.join("chainsmith.toml"), toml).unwrap();
}

fn actions_at(client: &mut TestClient, uri: &Uri, position: lsp::Position) -> Vec<lsp::CodeActionOrCommand> {
    client.code_actions(uri, range(position, position), vec![])
}

fn probe_commands(actions: &[lsp::CodeActionOrCommand]) -> Vec<(String, Value)> {
    actions
        .iter()
        .filter_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) => action.command.as_ref().map(|c| (&action.title, c)),
            lsp::CodeActionOrCommand::Command(command) => Some((&command.title, command)),
        })
        .filter(|(_, command)| command.command == "chainsmith.probe")
        .map(|(title, command)| (title.clone(), json!(command.arguments.clone().unwrap_or_default())))
        .collect()
}

/// The edits of a `workspace/applyEdit` for one document.
fn edits_of(edit: &lsp::ApplyWorkspaceEditParams, uri: &Uri) -> Vec<lsp::TextEdit> {
    let edits = edit.edit.changes.as_ref().and_then(|changes| changes.get(uri));
    edits.unwrap_or_else(|| panic!("no edit of {}: {edit:#?}", uri.as_str())).clone()
}

fn methods_seen(tmdb: &TmdbServer) -> Vec<(String, String)> {
    tmdb.requests()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["method"].as_str().unwrap().to_string(), r["path"].as_str().unwrap().to_string()))
        .collect()
}

fn codes_with(params: &lsp::PublishDiagnosticsParams, code: &str) -> Vec<String> {
    params
        .diagnostics
        .iter()
        .filter(|d| d.code == Some(NumberOrString::String(code.to_string())))
        .map(|d| d.message.clone())
        .collect()
}

#[test]
fn probe_from_a_call_and_probe_all_edit_the_native_toolset_through_the_editor() {
    let tmdb = TmdbServer::start(&[]);
    let llm = vault_llm(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    write_workspace(dir.path(), &tmdb, &llm);
    let toolset_path = dir.path().join("vault.toolset.json");
    let toolset_uri = uri_of(&toolset_path);

    let mut client = TestClient::in_process().workspace(dir).trusted().start();
    let program_uri = client.open("use.py", PROGRAM);
    let first = client.diagnostics(&program_uri, |_| true);
    assert!(codes_with(&first, "unknown-key").is_empty(), "the response is unknown yet: {first:#?}");

    // The code action at the call.
    let actions = actions_at(&mut client, &program_uri, position_of(PROGRAM, "search_vaults("));
    let probes = probe_commands(&actions);
    assert_eq!(
        probes,
        vec![("Probe tool vault.search_vaults".to_string(), json!(["vault.search_vaults"]))],
        "{actions:#?}"
    );

    // Running it: progress, then an edit of the native file at the tool's entry.
    client.answer::<ApplyWorkspaceEdit>(lsp::ApplyWorkspaceEditResponse {
        applied: true,
        failure_reason: None,
        failed_change: None,
    });
    let arguments = probes[0].1.as_array().unwrap().clone();
    let answer = client.execute_command("chainsmith.probe", arguments, Some("probe-1"));
    assert_eq!(answer, Ok(None));
    client.progress_begin(Some(&token("probe-1")));
    let ServerRequest { params: apply_request, answer: applied } = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    assert_eq!(applied, Ok(json!({"applied": true})));
    let end = client.progress_end(Some(&token("probe-1")));
    let message = end.message.unwrap_or_default();
    assert!(message.starts_with("probed 1 of 1"), "{message}");
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.message, "chainsmith: learnt 2 keys of vault.search_vaults, written to vault.toolset.json");
    let edits = edits_of(&apply_request, &toolset_uri);
    let inserted: String = edits.iter().map(|e| e.new_text.as_str()).collect();
    assert!(inserted.contains("\"response\"") && inserted.contains("\"results\""), "{inserted}");
    let edited = apply_edits(VAULT_TOOLSET, &edits);
    let (search, rest) = edited.split_at(edited.find("\"name\": \"vault_details\"").unwrap());
    assert!(search.contains("\"response\"") && search.contains("\"probed\""), "{edited}");
    assert!(!rest.contains("\"response\""), "only search_vaults was probed: {edited}");
    assert!(edited.starts_with(&VAULT_TOOLSET[..VAULT_TOOLSET.find("\"tools\"").unwrap()]), "{edited}");
    assert!(
        serde_json::from_str::<Value>(
            &edited.replace("// Written by hand; probing must keep this comment and the layout.", "")
        )
        .is_ok(),
        "{edited}"
    );

    // The edit is applied but not saved yet: the program is checked against the probed schema at
    // once, and the file on disk is untouched (the editor owns the buffer until the user saves).
    let after = client.diagnostics(&program_uri, |p| !codes_with(p, "unknown-key").is_empty());
    let flagged = codes_with(&after, "unknown-key");
    assert!(flagged.iter().all(|m| m.contains("resluts")), "{after:#?}");
    assert_eq!(std::fs::read_to_string(&toolset_path).unwrap(), VAULT_TOOLSET);
    // Then the client saves it.
    std::fs::write(&toolset_path, &edited).unwrap();
    client.save(&toolset_uri);
    let actions = actions_at(&mut client, &program_uri, position_of(PROGRAM, "search_vaults("));
    assert!(probe_commands(&actions).is_empty(), "a known response needs no probe: {actions:#?}");

    // Probe all: lock_vault is not read-only; "Only read-only tools" leaves it alone.
    // This time the client does not answer the edit (as a client without `workspace/applyEdit`):
    // the server writes the file itself.
    client.answer::<ShowMessageRequest>(Some(lsp::MessageActionItem {
        title: "Only read-only tools".into(),
        properties: Default::default(),
    }));
    let answer = client.execute_command("chainsmith.probeAll", vec![], Some("probe-2"));
    assert_eq!(answer, Ok(None));
    let ServerRequest { params: asked, .. } = client.await_request::<ShowMessageRequest>(|_| true);
    assert!(asked.message.contains("vault.lock_vault"), "{asked:#?}");
    client.progress_begin(Some(&token("probe-2")));
    let ServerRequest { params: apply_request, answer: applied } = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    assert_eq!(applied, Ok(Value::Null));
    let end = client.progress_end(Some(&token("probe-2")));
    let end = end.message.unwrap_or_default();
    assert!(end.contains("vault.lock_vault: vault.lock_vault is not read-only"), "{end}");
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.typ, lsp::MessageType::WARNING);
    assert!(
        told.message.starts_with("chainsmith: learnt 4 keys of vault.vault_details, written to vault.toolset.json; "),
        "{told:?}"
    );
    assert!(told.message.contains("; vault.lock_vault not probed: vault.lock_vault is not read-only"), "{told:?}");
    let edits = edits_of(&apply_request, &toolset_uri);
    let edited_again = apply_edits(&edited, &edits);
    let (details, lock) = edited_again.split_at(edited_again.find("\"name\": \"lock_vault\"").unwrap());
    let details = &details[details.find("\"name\": \"vault_details\"").unwrap()..];
    assert!(details.contains("\"response\""), "{edited_again}");
    assert!(!lock.contains("\"response\""), "{edited_again}");
    assert_eq!(std::fs::read_to_string(&toolset_path).unwrap(), edited_again);

    // The same with no answer (the user dismissed the question): nothing runs.
    let answer = client.execute_command("chainsmith.probeAll", vec![], None);
    assert_eq!(answer, Ok(None));
    let ServerRequest { answer: dismissed, .. } = client.await_request::<ShowMessageRequest>(|_| true);
    assert_eq!(dismissed, Ok(Value::Null));
    assert!(methods_seen(&tmdb).iter().all(|(m, _)| m == "GET"), "{:?}", methods_seen(&tmdb));
    assert!(!methods_seen(&tmdb).iter().any(|(_, p)| p.ends_with("/lock")), "{:?}", methods_seen(&tmdb));

    client.shutdown();
}

#[test]
fn probe_tool_on_protocol_entries_and_cancellation() {
    let tmdb = TmdbServer::start(&[]);
    let llm = vault_llm(Duration::from_millis(700));
    let dir = tempfile::tempdir().unwrap();
    write_workspace(dir.path(), &tmdb, &llm);
    let mut client = TestClient::in_process().workspace(dir).trusted().start();

    // A native entry without `response`: the tool under the cursor.
    let toolset_uri = client.uri("vault.toolset.json");
    let actions = actions_at(&mut client, &toolset_uri, position_of(VAULT_TOOLSET, "\"Locks a vault.\""));
    assert_eq!(
        probe_commands(&actions),
        vec![("Probe tool vault.lock_vault".to_string(), json!(["vault.lock_vault"]))]
    );
    let actions = actions_at(&mut client, &toolset_uri, position_of(VAULT_TOOLSET, "\"name\": \"search_vaults\""));
    assert_eq!(probe_commands(&actions)[0].1, json!(["vault.search_vaults"]), "{actions:#?}");
    let actions = actions_at(&mut client, &toolset_uri, position_of(VAULT_TOOLSET, "\"chainsmith\""));
    assert!(probe_commands(&actions).is_empty(), "no entry under the cursor: {actions:#?}");

    // An OpenAPI operation with no response schema, a ToolBench record with no template response.
    let openapi_uri = client.uri("vaults.openapi.json");
    let actions = actions_at(&mut client, &openapi_uri, position_of(OPENAPI, "\"operationId\""));
    let probes = probe_commands(&actions);
    assert_eq!(probes.len(), 1, "{actions:#?}");
    assert!(probes[0].0.starts_with("Probe tool docs."), "{probes:?}");
    let toolbench_uri = client.uri("rapid.json");
    let actions = actions_at(&mut client, &toolbench_uri, position_of(TOOLBENCH, "\"Get Fact\""));
    let probes = probe_commands(&actions);
    assert_eq!(probes.len(), 1, "{actions:#?}");
    assert!(probes[0].0.starts_with("Probe tool rapid."), "{probes:?}");

    // Cancelling a probe (the LLM is slow) ends its progress without an edit.
    let answer = client.execute_command("chainsmith.probe", vec![json!("vault.search_vaults")], Some("probe-c"));
    assert_eq!(answer, Ok(None));
    client.progress_begin(Some(&token("probe-c")));
    client.notify::<lsp::notification::WorkDoneProgressCancel>(lsp::WorkDoneProgressCancelParams {
        token: token("probe-c"),
    });
    let end = client.await_message("the end of the cancelled probe", |m| {
        m.is_request::<ApplyWorkspaceEdit>()
            || m.is::<Progress>(|p| {
                p.token == token("probe-c")
                    && matches!(p.value, lsp::ProgressParamsValue::WorkDone(lsp::WorkDoneProgress::End(_)))
            })
    });
    assert_eq!(end.method(), Some("$/progress"), "no edit after a cancel: {end:#?}");
    let message = end.params()["value"]["message"].as_str().unwrap();
    assert!(message.contains("probed 0 of 1") && message.contains("cancelled"), "{message}");
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.message, "chainsmith: probing was cancelled");
    assert_eq!(VAULT_TOOLSET, std::fs::read_to_string(client.path("vault.toolset.json")).unwrap());

    client.shutdown();
}

/// What VS Code's palette and status bar and Neovim's `:ChainsmithProbe` / `:ChainsmithProbeAll`
/// send: the active document's URI. "Probe tool" probes the tools of unknown response that the
/// document calls, "Probe all" ignores it; both end telling the user what was learnt and where it
/// went, not only the log.
#[test]
fn probe_and_probe_all_take_the_document_entry_points_send() {
    let tmdb = TmdbServer::start(&[]);
    let llm = vault_llm(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    write_workspace(dir.path(), &tmdb, &llm);
    let mut client = TestClient::in_process().workspace(dir).trusted().start();
    let program_uri = client.open("use.py", PROGRAM);
    client.answer_always::<ApplyWorkspaceEdit>(lsp::ApplyWorkspaceEditResponse {
        applied: true,
        failure_reason: None,
        failed_change: None,
    });

    let answer = client.execute_command("chainsmith.probe", vec![json!(program_uri.as_str())], None);
    assert_eq!(answer, Ok(None));
    let ServerRequest { params: first, .. } = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.typ, lsp::MessageType::INFO, "{told:?}");
    assert_eq!(told.message, "chainsmith: learnt 2 keys of vault.search_vaults, written to vault.toolset.json");

    // The status bar's "Probe all" (VS Code sends the active document along; so does Neovim).
    client.answer::<ShowMessageRequest>(Some(lsp::MessageActionItem {
        title: "Only read-only tools".into(),
        properties: Default::default(),
    }));
    let answer = client.execute_command("chainsmith.probeAll", vec![json!({"uri": program_uri.as_str()})], None);
    assert_eq!(answer, Ok(None));
    let ServerRequest { params: asked, .. } = client.await_request::<ShowMessageRequest>(|_| true);
    assert!(asked.message.contains("vault.lock_vault"), "{asked:#?}");
    let ServerRequest { params: second, .. } = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    // The editor holds the first edit unsaved: the second is made on that text, not the file's.
    let toolset_uri = uri_of(&client.path("vault.toolset.json"));
    let unsaved = apply_edits(VAULT_TOOLSET, &edits_of(&first, &toolset_uri));
    let both = apply_edits(&unsaved, &edits_of(&second, &toolset_uri));
    let parsed: Value =
        serde_json::from_str(&both.replace("// Written by hand; probing must keep this comment and the layout.", ""))
            .unwrap_or_else(|e| panic!("{e}: {both}"));
    let responses: Vec<bool> =
        parsed["tools"].as_array().unwrap().iter().map(|t| t.get("response").is_some()).collect();
    assert_eq!(responses, [true, true, false], "search and details probed, lock left: {both}");
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.typ, lsp::MessageType::WARNING, "some tools stay unprobed: {told:?}");
    assert!(told.message.contains("of vault.vault_details, written to vault.toolset.json"), "{told:?}");
    assert!(told.message.contains("vault.lock_vault not probed: vault.lock_vault is not read-only"), "{told:?}");
    assert!(!told.message.contains("file://"), "{told:?}");

    // A document with nothing left to probe says so.
    client.execute_command("chainsmith.probe", vec![json!(program_uri.as_str())], None).unwrap();
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.message, "chainsmith: use.py uses no tool whose response is unknown; nothing to probe there");
    client.shutdown();
}
