//! Generation in the language server, in process over real LSP messages: the "Generate tool chain
//! for this task" and "Fix failing chain" code actions, their commands running in the background
//! with work-done progress, the `workspace/applyEdit` (only while the document's version holds),
//! cancellation, and a model without code leaving the document alone. The LLM is the scripted
//! server; the tools are the TMDB-like test server.

use std::path::Path;
use std::time::Duration;

use crate::support::lsp::Client;
use crate::support::openai::{Answer, Server};
use crate::support::runtime::{TmdbServer, workspace};
use serde_json::{Value, json};

const DRAFT: &str = "Sure! Here is the chain:\n```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=found[\"results\"][0][\"id\"])\nprint(person[\"biography\"])\n```\nIt prints the biography.";

fn llm_config(llm: &Server) -> String {
    format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\ntimeout_s = 5\n",
        llm.base_url
    )
}

fn last_message(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string()
}

/// Answers drafts with `DRAFT` after `delay`, judges with "Solved".
fn scripted(delay: Duration) -> Server {
    Server::start(move |body, _| {
        if last_message(body).contains("Does the output answer the task") {
            Answer::text("Solved — the biography is printed.")
        } else {
            std::thread::sleep(delay);
            Answer::text(DRAFT)
        }
    })
}

async fn generate_action(client: &mut Client, uri: &str) -> Value {
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}});
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": []}}),
        )
        .await
        .unwrap();
    actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Generate tool chain for this task")
        .unwrap_or_else(|| panic!("no generate action in {actions:#}"))
        .clone()
}

async fn execute(client: &mut Client, action: &Value) {
    let command = &action["command"];
    let answer = client
        .request("workspace/executeCommand", json!({"command": command["command"], "arguments": command["arguments"]}))
        .await;
    assert_eq!(answer, Ok(Value::Null));
}

fn is_apply_edit(m: &Value) -> bool {
    m["method"] == "workspace/applyEdit"
}

async fn progress_end(client: &mut Client) -> Value {
    client.notification("$/progress", |p| p["value"]["kind"] == "end").await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_generate_code_action_inserts_a_working_chain() {
    let tmdb = TmdbServer::start(&[]);
    let llm = scripted(Duration::ZERO);
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let mut client = Client::start(ws.path()).await;
    let text = "\"\"\"Print the biography of Sofia Coppola.\"\"\"\n";
    let uri = client.open(&ws.path().join("bio.py"), text).await;

    let action = generate_action(&mut client, &uri).await;
    assert_eq!(action["kind"], "refactor.rewrite");
    assert_eq!(action["command"]["command"], "chainsmith.generate");
    assert_eq!(action["command"]["arguments"][0]["task"], "Print the biography of Sofia Coppola.");
    execute(&mut client, &action).await;

    let begin = client.notification("$/progress", |p| p["value"]["kind"] == "begin").await;
    assert_eq!(begin["value"]["cancellable"], true);
    let edit = client.wait_for("workspace/applyEdit", is_apply_edit).await;
    let edits = &edit["params"]["edit"]["changes"][uri.as_str()];
    assert_eq!(edits[0]["range"]["start"], json!({"line": 1, "character": 0}), "{edit:#}");
    let inserted = edits[0]["new_text"].as_str().or(edits[0]["newText"].as_str()).unwrap();
    assert_eq!(
        inserted,
        "\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=found[\"results\"][0][\"id\"])\nprint(person[\"biography\"])\n"
    );
    assert_eq!(llm.count(), 2, "draft and judge");
    let prompt = last_message(&llm.bodies()[0]);
    assert!(prompt.starts_with("Task: Print the biography of Sofia Coppola."), "{prompt}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_during_generation_means_no_edit_is_applied() {
    let tmdb = TmdbServer::start(&[]);
    let llm = scripted(Duration::from_millis(800));
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let mut client = Client::start(ws.path()).await;
    let uri = client.open(&ws.path().join("bio.py"), "# task: print the biography of Sofia Coppola\n").await;
    let action = generate_action(&mut client, &uri).await;
    execute(&mut client, &action).await;
    client.notification("$/progress", |p| p["value"]["kind"] == "begin").await;
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2},
                   "contentChanges": [{"text": "# task: print the biography of Sofia Coppola\nx = 1\n"}]}),
        )
        .await;
    let message = client
        .wait_for("the changed message", |m| {
            is_apply_edit(m)
                || (m["method"] == "window/showMessage"
                    && m["params"]["message"].as_str().unwrap_or("").contains("changed while"))
        })
        .await;
    assert_eq!(message["method"], "window/showMessage", "no edit may be applied: {message:#}");
    assert!(message["params"]["message"].as_str().unwrap().contains("nothing was applied"));
    let log = client
        .notification("window/logMessage", |p| p["message"].as_str().unwrap_or("").contains("the program for bio.py"))
        .await;
    assert!(log["message"].as_str().unwrap().contains("tmdb.person(person_id="), "the program is not lost");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn generation_can_be_cancelled_and_a_model_without_code_changes_nothing() {
    let tmdb = TmdbServer::start(&[]);
    let llm = scripted(Duration::from_millis(600));
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let mut client = Client::start(ws.path()).await;
    let uri = client.open(&ws.path().join("bio.py"), "# task: print the biography of Sofia Coppola\n").await;
    let action = generate_action(&mut client, &uri).await;
    execute(&mut client, &action).await;
    let begin = client.notification("$/progress", |p| p["value"]["kind"] == "begin").await;
    client.notify("window/workDoneProgress/cancel", json!({"token": begin["token"]})).await;
    let end = progress_end(&mut client).await;
    assert!(end["value"]["message"].as_str().unwrap().contains("cancelled"), "{end}");
    let message = client.notification("window/showMessage", |_| true).await;
    assert!(message["message"].as_str().unwrap().contains("the document is unchanged"), "{message}");
    assert!(llm.count() <= 1, "nothing after the cancel");
    client.shutdown().await;

    // A model that never writes code: the budget ends, the document stays as it is.
    let chatty = Server::start(|_, _| Answer::text("As an AI model I cannot call APIs."));
    let ws = workspace(&tmdb.base_url(), false, &format!("{}[generate]\nmax_llm_calls = 2\n", llm_config(&chatty)));
    let mut client = Client::start(ws.path()).await;
    let uri = client.open(&ws.path().join("bio.py"), "\"\"\"print the biography of Sofia Coppola\"\"\"\n").await;
    let action = generate_action(&mut client, &uri).await;
    execute(&mut client, &action).await;
    let message = client.notification("window/showMessage", |_| true).await;
    let text = message["message"].as_str().unwrap();
    assert!(text.contains("budget ran out (2 LLM calls)") && text.contains("unchanged"), "{text}");
    assert_eq!(chatty.count(), 2);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fix_failing_chain_replaces_the_program_with_the_revision() {
    let tmdb = TmdbServer::start(&[]);
    let llm = Server::start(|body, _| {
        let last = last_message(body);
        if last.contains("Does the output answer the task") {
            Answer::text("Solved")
        } else if last.contains("Revise it") && last.contains("attributed to the tool `tmdb.person`") {
            Answer::text(DRAFT)
        } else {
            Answer::text("```\nprint('unexpected')\n```")
        }
    });
    let ws = workspace(&tmdb.base_url(), false, &llm_config(&llm));
    let mut client = Client::start(ws.path()).await;
    let broken = "# task: print the biography of Sofia Coppola\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n";
    let uri = client.open(&ws.path().join("bio.py"), broken).await;
    let range = json!({"start": {"line": 2, "character": 6}, "end": {"line": 2, "character": 16}});
    let diagnostic =
        json!({"range": range, "severity": 1, "code": "tool-error", "source": "chainsmith", "message": "404"});
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": [diagnostic]}}),
        )
        .await
        .unwrap();
    let fix = actions.as_array().unwrap().iter().find(|a| a["title"] == "Fix failing chain").unwrap().clone();
    assert_eq!(fix["kind"], "quickfix");
    execute(&mut client, &fix).await;
    let edit = client.wait_for("workspace/applyEdit", is_apply_edit).await;
    let edits = &edit["params"]["edit"]["changes"][uri.as_str()];
    assert_eq!(edits[0]["range"]["start"], json!({"line": 0, "character": 0}));
    assert_eq!(edits[0]["range"]["end"], json!({"line": 3, "character": 0}));
    let new_text = edits[0]["newText"].as_str().unwrap();
    assert!(
        new_text.starts_with("# task: print the biography of Sofia Coppola\nfrom chainsmith.tools import tmdb\n"),
        "{new_text}"
    );
    assert!(new_text.contains("person_id=found[\"results\"][0][\"id\"]"), "{new_text}");
    assert_eq!(llm.count(), 2, "revision and judge");
    let _ = Path::new("");
    client.shutdown().await;
}
