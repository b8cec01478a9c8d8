//! Generation in the language server, in process over real LSP messages: the "Generate tool chain
//! for this task" and "Fix failing chain" code actions, their commands running in the background
//! with work-done progress, the `workspace/applyEdit` (only while the document's version holds),
//! cancellation, and a model without code leaving the document alone. The LLM is the scripted
//! server; the tools are the TMDB-like test server.

use std::time::Duration;

use serde_json::Value;
use tower_lsp_server::lsp_types::notification::{LogMessage, ShowMessage, WorkDoneProgressCancel};
use tower_lsp_server::lsp_types::request::ApplyWorkspaceEdit;
use tower_lsp_server::lsp_types::{self as lsp, Uri};

use crate::support::lsp::{Message, ServerRequest, TestClient, full_text, pos, range};
use crate::support::openai::{Answer, Server};
use crate::support::runtime::{TmdbServer, workspace};

const DRAFT: &str = "Sure! Here is the chain:\n```python\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=found[\"results\"][0][\"id\"])\nprint(person[\"biography\"])\n```\nIt prints the biography.";

/// The editor's answer to `workspace/applyEdit`: done.
const APPLIED: lsp::ApplyWorkspaceEditResponse =
    lsp::ApplyWorkspaceEditResponse { applied: true, failure_reason: None, failed_change: None };

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
        let last = last_message(body);
        if last.contains("Does the output answer the task") {
            Answer::text("Solved — the biography is printed.")
        } else if last.contains("Which chain gets what the task asks for") {
            Answer::text("1")
        } else {
            std::thread::sleep(delay);
            Answer::text(DRAFT)
        }
    })
}

fn generate_action(client: &mut TestClient, uri: &Uri) -> lsp::CodeAction {
    let actions = client.code_actions(uri, range(pos(0, 0), pos(0, 0)), vec![]);
    actions
        .iter()
        .find_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) if action.title == "Generate tool chain for this task" => {
                Some(action.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no generate action in {actions:#?}"))
}

fn execute(client: &mut TestClient, action: &lsp::CodeAction) {
    let command = action.command.as_ref().expect("the action runs a command");
    let answer = client.execute_command(&command.command, command.arguments.clone().unwrap_or_default(), None);
    assert_eq!(answer, Ok(None));
}

/// The program's server on a workspace of the TMDB test server with `llm` as the model.
fn start(tmdb: &TmdbServer, llm: &Server, extra: &str) -> TestClient {
    let config = format!("{}{extra}", llm_config(llm));
    TestClient::in_process().workspace(workspace(&tmdb.base_url(), false, &config)).trusted().start()
}

#[test]
fn the_generate_code_action_inserts_a_working_chain() {
    let tmdb = TmdbServer::start(&[]);
    let llm = scripted(Duration::ZERO);
    let mut client = start(&tmdb, &llm, "");
    let text = "\"\"\"Print the biography of Sofia Coppola.\"\"\"\n";
    let uri = client.open("bio.py", text);

    let action = generate_action(&mut client, &uri);
    assert_eq!(action.kind, Some(lsp::CodeActionKind::REFACTOR_REWRITE));
    let command = action.command.as_ref().unwrap();
    assert_eq!(command.command, "chainsmith.generate");
    assert_eq!(command.arguments.as_ref().unwrap()[0]["task"], "Print the biography of Sofia Coppola.");
    client.answer::<ApplyWorkspaceEdit>(APPLIED);
    execute(&mut client, &action);

    let (_, begin) = client.progress_begin(None);
    assert_eq!(begin.cancellable, Some(true));
    let ServerRequest { params: edit, .. } = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    let edits = &edit.edit.changes.as_ref().unwrap()[&uri];
    assert_eq!(edits[0].range.start, pos(1, 0), "{edit:#?}");
    assert_eq!(
        edits[0].new_text,
        "\nfrom chainsmith.tools import tmdb\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nperson = tmdb.person(person_id=found[\"results\"][0][\"id\"])\nprint(person[\"biography\"])\n"
    );
    assert_eq!(llm.count(), 3, "plan choice, completion and judge");
    let prompt = last_message(&llm.bodies()[1]);
    assert!(prompt.starts_with("Task: Print the biography of Sofia Coppola."), "{prompt}");
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.typ, lsp::MessageType::INFO);
    assert_eq!(told.message, "chainsmith: a chain that runs was added to bio.py (3 LLM calls)");
    client.shutdown();
}

#[test]
fn an_edit_during_generation_means_no_edit_is_applied() {
    let tmdb = TmdbServer::start(&[]);
    let llm = scripted(Duration::from_millis(800));
    let mut client = start(&tmdb, &llm, "");
    let uri = client.open("bio.py", "# task: print the biography of Sofia Coppola\n");
    let action = generate_action(&mut client, &uri);
    execute(&mut client, &action);
    client.progress_begin(None);
    client.change(&uri, 2, vec![full_text("# task: print the biography of Sofia Coppola\nx = 1\n")]);
    let message = client.await_message("the changed message", |m| {
        m.is_request::<ApplyWorkspaceEdit>() || m.is::<ShowMessage>(|p| p.message.contains("changed while"))
    });
    let Message::Notification { params, .. } = &message else { panic!("no edit may be applied: {message:#?}") };
    assert_eq!(message.method(), Some("window/showMessage"), "no edit may be applied: {message:#?}");
    assert!(params["message"].as_str().unwrap().contains("nothing was applied"));
    let log = client.await_notification::<LogMessage>(|p| p.message.contains("the program for bio.py"));
    assert!(log.message.contains("tmdb.person(person_id="), "the program is not lost");
    client.shutdown();
}

#[test]
fn generation_can_be_cancelled_and_a_model_without_code_changes_nothing() {
    let tmdb = TmdbServer::start(&[]);
    let llm = scripted(Duration::from_millis(600));
    let mut client = start(&tmdb, &llm, "");
    let uri = client.open("bio.py", "# task: print the biography of Sofia Coppola\n");
    let action = generate_action(&mut client, &uri);
    execute(&mut client, &action);
    let (token, _) = client.progress_begin(None);
    client.notify::<WorkDoneProgressCancel>(lsp::WorkDoneProgressCancelParams { token: token.clone() });
    let end = client.progress_end(Some(&token));
    let ended = end.message.unwrap_or_default();
    assert!(ended.contains("cancelled"), "{ended}");
    let message = client.await_notification::<ShowMessage>(|_| true);
    assert!(message.message.contains("the document is unchanged"), "{message:?}");
    assert!(llm.count() <= 2, "nothing after the cancel (the plan choice is answered at once)");
    // Once it said how it ended, the user can start it again at once: it is not "already running".
    execute(&mut client, &action);
    let (token, _) = client.progress_begin(None);
    client.notify::<WorkDoneProgressCancel>(lsp::WorkDoneProgressCancelParams { token: token.clone() });
    assert!(client.progress_end(Some(&token)).message.unwrap_or_default().contains("cancelled"));
    let message = client.await_notification::<ShowMessage>(|_| true);
    assert!(!message.message.contains("already running"), "{message:?}");
    client.shutdown();

    // A model that never writes code: three such replies in a row end the job, which says why
    // (not "the budget ran out"), and the document stays as it is.
    let chatty = Server::start(|_, _| Answer::text("As an AI model I cannot call APIs."));
    let mut client = start(&tmdb, &chatty, "");
    let uri = client.open("bio.py", "\"\"\"print the biography of Sofia Coppola\"\"\"\n");
    let action = generate_action(&mut client, &uri);
    execute(&mut client, &action);
    let message = client.await_notification::<ShowMessage>(|_| true);
    let text = message.message;
    assert!(text.contains("the model replied 3 times in a row without a Python program"), "{text}");
    assert!(text.contains("As an AI model I cannot call APIs.") && text.contains("unchanged"), "{text}");
    assert_eq!(chatty.count(), 4, "the plan choice (no number: no chain) and three replies");
    client.shutdown();
}

/// Cancel reaches the model's request: the request in flight is dropped (the LLM server sees its
/// connection closed) and the user hears "cancelled" without waiting for the reply, even with
/// the ten-minute timeout a CPU model needs.
#[test]
fn cancel_drops_the_models_request_and_says_cancelled() {
    let tmdb = TmdbServer::start(&[]);
    let slow = Server::start(|_, _| Answer::Slow { after: Duration::from_secs(60), text: DRAFT.into() });
    let config = format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\ntimeout_s = 600\n",
        slow.base_url
    );
    let mut client = TestClient::in_process().workspace(workspace(&tmdb.base_url(), false, &config)).trusted().start();
    let uri = client.open("bio.py", "# task: print the biography of Sofia Coppola\n");
    let action = generate_action(&mut client, &uri);
    execute(&mut client, &action);
    let (token, _) = client.progress_begin(None);
    let asked = poll(|| slow.count() == 1);
    assert!(asked, "the model was never asked");
    client.notify::<WorkDoneProgressCancel>(lsp::WorkDoneProgressCancelParams { token: token.clone() });
    // Well before the model's reply is due (the client gives up after 15 s).
    let message = client.await_notification::<ShowMessage>(|_| true);
    assert!(message.message.contains("cancelled") && message.message.contains("unchanged"), "{message:?}");
    let end = client.progress_end(Some(&token));
    assert!(end.message.unwrap_or_default().contains("cancelled"));
    assert!(poll(|| slow.abandoned() == 1), "the LLM server never saw its connection closed");
    assert_eq!(slow.count(), 1, "nothing asked after the cancel");
    client.shutdown();
}

/// Waits up to 20 s for `done`: a generous bound on something that takes milliseconds.
fn poll(done: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn fix_failing_chain_replaces_the_program_with_the_revision() {
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
    let mut client = start(&tmdb, &llm, "");
    let broken = "# task: print the biography of Sofia Coppola\nfrom chainsmith.tools import tmdb\nprint(tmdb.person(person_id=404)[\"biography\"])\n";
    let uri = client.open("bio.py", broken);
    let failing = range(pos(2, 6), pos(2, 16));
    let diagnostic = lsp::Diagnostic {
        range: failing,
        severity: Some(lsp::DiagnosticSeverity::ERROR),
        code: Some(lsp::NumberOrString::String("tool-error".into())),
        source: Some("chainsmith".into()),
        message: "404".into(),
        ..Default::default()
    };
    let actions = client.code_actions(&uri, failing, vec![diagnostic]);
    let fix = actions
        .iter()
        .find_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) if action.title == "Fix failing chain" => Some(action.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{actions:#?}"));
    assert_eq!(fix.kind, Some(lsp::CodeActionKind::QUICKFIX));
    client.answer::<ApplyWorkspaceEdit>(APPLIED);
    execute(&mut client, &fix);
    let ServerRequest { params: edit, .. } = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    let edits = &edit.edit.changes.as_ref().unwrap()[&uri];
    assert_eq!(edits[0].range.start, pos(0, 0));
    assert_eq!(edits[0].range.end, pos(3, 0));
    let new_text = &edits[0].new_text;
    assert!(
        new_text.starts_with("# task: print the biography of Sofia Coppola\nfrom chainsmith.tools import tmdb\n"),
        "{new_text}"
    );
    assert!(new_text.contains("person_id=found[\"results\"][0][\"id\"]"), "{new_text}");
    assert_eq!(llm.count(), 2, "revision and judge");
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.message, "chainsmith: fixed bio.py; the new program runs (2 LLM calls)");
    client.shutdown();
}
