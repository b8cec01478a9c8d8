//! Probing from the editor, in process over real LSP messages: the "Probe tool" code action on a
//! call and on protocol entries (native tool, OpenAPI operation, ToolBench record),
//! `chainsmith.probe` / `chainsmith.probeAll` with work-done progress, the confirmation asked for
//! tools that are not read-only, the `workspace/applyEdit` splicing the probed `response` into the
//! native toolset file, diagnostics against the new schema once the edit is saved, and
//! cancellation. The tools are the runtime test server's undocumented vault endpoints; the LLM is
//! the test-local OpenAI-compatible server answering by request content (as in probe_cli.rs).

use std::path::Path;
use std::time::Duration;

use crate::support::lsp::{Client, uri};
use crate::support::openai::Server;
use crate::support::probe::{VAULT_TOOLSET, vault_llm};
use crate::support::runtime::TmdbServer;
use serde_json::{Value, json};

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

fn position_of(text: &str, needle: &str) -> Value {
    let at = text.find(needle).unwrap_or_else(|| panic!("no {needle:?}"));
    let line = text[..at].matches('\n').count();
    let character = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": character})
}

fn offset(text: &str, position: &Value) -> usize {
    let line = position["line"].as_u64().unwrap() as usize;
    let character = position["character"].as_u64().unwrap() as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    start + character
}

/// `text` with the (ASCII-positioned) LSP text edits applied, as a client would.
fn apply(text: &str, edits: &[Value]) -> String {
    let mut ranged: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| (offset(text, &e["range"]["start"]), offset(text, &e["range"]["end"]), e["newText"].as_str().unwrap()))
        .collect();
    ranged.sort_by_key(|(start, _, _)| std::cmp::Reverse(*start));
    let mut out = text.to_string();
    for (start, end, new) in ranged {
        out.replace_range(start..end, new);
    }
    out
}

async fn actions_at(client: &mut Client, uri: &str, position: Value) -> Vec<Value> {
    let range = json!({"start": position, "end": position});
    let answer = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": []}}),
        )
        .await
        .unwrap();
    answer.as_array().cloned().unwrap_or_default()
}

fn probe_commands(actions: &[Value]) -> Vec<(String, Value)> {
    actions
        .iter()
        .filter(|a| a["command"]["command"] == "chainsmith.probe")
        .map(|a| (a["title"].as_str().unwrap().to_string(), a["command"]["arguments"].clone()))
        .collect()
}

fn progress(token: &'static str, kind: &'static str) -> impl Fn(&Value) -> bool {
    move |p: &Value| p["token"] == token && p["value"]["kind"] == kind
}

fn methods_seen(tmdb: &TmdbServer) -> Vec<(String, String)> {
    tmdb.requests()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["method"].as_str().unwrap().to_string(), r["path"].as_str().unwrap().to_string()))
        .collect()
}

fn codes_with(params: &Value, code: &str) -> Vec<String> {
    params["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == code)
        .map(|d| d["message"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_from_a_call_and_probe_all_edit_the_native_toolset_through_the_editor() {
    let tmdb = TmdbServer::start(&[]);
    let llm = vault_llm(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    write_workspace(dir.path(), &tmdb, &llm);
    let toolset_path = dir.path().join("vault.toolset.json");
    let toolset_uri = uri(&toolset_path);

    let mut client = Client::start(dir.path()).await;
    let program_uri = client.open(&dir.path().join("use.py"), PROGRAM).await;
    let first = client.notification("textDocument/publishDiagnostics", |p| p["uri"] == program_uri.as_str()).await;
    assert!(codes_with(&first, "unknown-key").is_empty(), "the response is unknown yet: {first:#}");

    // The code action at the call.
    let actions = actions_at(&mut client, &program_uri, position_of(PROGRAM, "search_vaults(")).await;
    let probes = probe_commands(&actions);
    assert_eq!(
        probes,
        vec![("Probe tool vault.search_vaults".to_string(), json!(["vault.search_vaults"]))],
        "{actions:#?}"
    );

    // Running it: progress, then an edit of the native file at the tool's entry.
    client.answer("workspace/applyEdit", json!({"applied": true}));
    let answer = client
        .request(
            "workspace/executeCommand",
            json!({"command": "chainsmith.probe", "arguments": probes[0].1, "workDoneToken": "probe-1"}),
        )
        .await;
    assert_eq!(answer, Ok(Value::Null));
    client.notification("$/progress", progress("probe-1", "begin")).await;
    let apply_request = client.wait_for("workspace/applyEdit", |m| m["method"] == "workspace/applyEdit").await;
    let end = client.notification("$/progress", progress("probe-1", "end")).await;
    assert!(end["value"]["message"].as_str().unwrap().starts_with("probed 1 of 1"), "{end:#}");
    let changes = &apply_request["params"]["edit"]["changes"];
    let edits = changes[toolset_uri.as_str()].as_array().unwrap_or_else(|| panic!("{changes:#}"));
    let inserted: String = edits.iter().map(|e| e["newText"].as_str().unwrap()).collect();
    assert!(inserted.contains("\"response\"") && inserted.contains("\"results\""), "{inserted}");
    let edited = apply(VAULT_TOOLSET, edits);
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
    let after = client
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == program_uri.as_str() && !codes_with(p, "unknown-key").is_empty()
        })
        .await;
    let flagged = codes_with(&after, "unknown-key");
    assert!(flagged.iter().all(|m| m.contains("resluts")), "{after:#}");
    assert_eq!(std::fs::read_to_string(&toolset_path).unwrap(), VAULT_TOOLSET);
    // Then the client saves it.
    std::fs::write(&toolset_path, &edited).unwrap();
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": toolset_uri}})).await;
    let actions = actions_at(&mut client, &program_uri, position_of(PROGRAM, "search_vaults(")).await;
    assert!(probe_commands(&actions).is_empty(), "a known response needs no probe: {actions:#?}");

    // Probe all: lock_vault is not read-only; "Only read-only tools" leaves it alone.
    // This time the client does not answer the edit (as a client without `workspace/applyEdit`):
    // the server writes the file itself.
    client.answer("window/showMessageRequest", json!({"title": "Only read-only tools"}));
    let answer = client
        .request("workspace/executeCommand", json!({"command": "chainsmith.probeAll", "workDoneToken": "probe-2"}))
        .await;
    assert_eq!(answer, Ok(Value::Null));
    let asked = client.wait_for("showMessageRequest", |m| m["method"] == "window/showMessageRequest").await;
    assert!(asked["params"]["message"].as_str().unwrap().contains("vault.lock_vault"), "{asked:#}");
    client.notification("$/progress", progress("probe-2", "begin")).await;
    let apply_request = client.wait_for("workspace/applyEdit", |m| m["method"] == "workspace/applyEdit").await;
    let end = client.notification("$/progress", progress("probe-2", "end")).await;
    let end = end["value"]["message"].as_str().unwrap().to_string();
    assert!(end.contains("vault.lock_vault: vault.lock_vault is not read-only"), "{end}");
    let edits = apply_request["params"]["edit"]["changes"][toolset_uri.as_str()].as_array().unwrap().clone();
    let edited_again = apply(&edited, &edits);
    let (details, lock) = edited_again.split_at(edited_again.find("\"name\": \"lock_vault\"").unwrap());
    let details = &details[details.find("\"name\": \"vault_details\"").unwrap()..];
    assert!(details.contains("\"response\""), "{edited_again}");
    assert!(!lock.contains("\"response\""), "{edited_again}");
    assert_eq!(std::fs::read_to_string(&toolset_path).unwrap(), edited_again);

    // The same with no answer (the user dismissed the question): nothing runs.
    let answer = client.request("workspace/executeCommand", json!({"command": "chainsmith.probeAll"})).await;
    assert_eq!(answer, Ok(Value::Null));
    client.wait_for("the second question", |m| m["method"] == "window/showMessageRequest").await;
    assert!(methods_seen(&tmdb).iter().all(|(m, _)| m == "GET"), "{:?}", methods_seen(&tmdb));
    assert!(!methods_seen(&tmdb).iter().any(|(_, p)| p.ends_with("/lock")), "{:?}", methods_seen(&tmdb));

    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_tool_on_protocol_entries_and_cancellation() {
    let tmdb = TmdbServer::start(&[]);
    let llm = vault_llm(Duration::from_millis(700));
    let dir = tempfile::tempdir().unwrap();
    write_workspace(dir.path(), &tmdb, &llm);
    let mut client = Client::start(dir.path()).await;

    // A native entry without `response`: the tool under the cursor.
    let toolset_uri = uri(&dir.path().join("vault.toolset.json"));
    let actions = actions_at(&mut client, &toolset_uri, position_of(VAULT_TOOLSET, "\"Locks a vault.\"")).await;
    assert_eq!(
        probe_commands(&actions),
        vec![("Probe tool vault.lock_vault".to_string(), json!(["vault.lock_vault"]))]
    );
    let actions =
        actions_at(&mut client, &toolset_uri, position_of(VAULT_TOOLSET, "\"name\": \"search_vaults\"")).await;
    assert_eq!(probe_commands(&actions)[0].1, json!(["vault.search_vaults"]), "{actions:#?}");
    let actions = actions_at(&mut client, &toolset_uri, position_of(VAULT_TOOLSET, "\"chainsmith\"")).await;
    assert!(probe_commands(&actions).is_empty(), "no entry under the cursor: {actions:#?}");

    // An OpenAPI operation with no response schema, a ToolBench record with no template response.
    let openapi_uri = uri(&dir.path().join("vaults.openapi.json"));
    let actions = actions_at(&mut client, &openapi_uri, position_of(OPENAPI, "\"operationId\"")).await;
    let probes = probe_commands(&actions);
    assert_eq!(probes.len(), 1, "{actions:#?}");
    assert!(probes[0].0.starts_with("Probe tool docs."), "{probes:?}");
    let toolbench_uri = uri(&dir.path().join("rapid.json"));
    let actions = actions_at(&mut client, &toolbench_uri, position_of(TOOLBENCH, "\"Get Fact\"")).await;
    let probes = probe_commands(&actions);
    assert_eq!(probes.len(), 1, "{actions:#?}");
    assert!(probes[0].0.starts_with("Probe tool rapid."), "{probes:?}");

    // Cancelling a probe (the LLM is slow) ends its progress without an edit.
    let answer = client
        .request(
            "workspace/executeCommand",
            json!({"command": "chainsmith.probe", "arguments": ["vault.search_vaults"], "workDoneToken": "probe-c"}),
        )
        .await;
    assert_eq!(answer, Ok(Value::Null));
    client.notification("$/progress", progress("probe-c", "begin")).await;
    client.notify("window/workDoneProgress/cancel", json!({"token": "probe-c"})).await;
    let end = client
        .wait_for("the end of the cancelled probe", |m| {
            m["method"] == "workspace/applyEdit"
                || (m["method"] == "$/progress" && progress("probe-c", "end")(&m["params"]))
        })
        .await;
    assert_eq!(end["method"], "$/progress", "no edit after a cancel: {end:#}");
    let message = end["params"]["value"]["message"].as_str().unwrap();
    assert!(message.contains("probed 0 of 1") && message.contains("cancelled"), "{message}");
    assert_eq!(VAULT_TOOLSET, std::fs::read_to_string(dir.path().join("vault.toolset.json")).unwrap());

    client.shutdown().await;
}
