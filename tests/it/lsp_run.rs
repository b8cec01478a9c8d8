//! `chainsmith.run` in the language server, in process and over real LSP messages, against the
//! TMDB-like test server: the code lens, a run streaming its output as `window/logMessage` with
//! work-done progress, per-call inlay hints, a failing run's diagnostics (and their clearing), and
//! cancellation through `window/workDoneProgress/cancel`.

use std::time::Duration;

use serde_json::json;
use tower_lsp_server::lsp_types::notification::{LogMessage, ShowMessage, WorkDoneProgressCancel};
use tower_lsp_server::lsp_types::request::InlayHintRefreshRequest;
use tower_lsp_server::lsp_types::{self as lsp, NumberOrString};

use crate::support::lsp::{TestClient, edit, full_text, pos, range, token};
use crate::support::runtime::{TmdbServer, workspace};

/// The run's result hints (ToolNet's successor hints are also there once the run is learnt).
fn run_hints(hints: Vec<(u32, String)>) -> Vec<(u32, String)> {
    hints.into_iter().filter(|(_, label)| label.starts_with('✓') || label.starts_with('✗')).collect()
}

fn codes(params: &lsp::PublishDiagnosticsParams) -> Vec<(u32, String)> {
    params
        .diagnostics
        .iter()
        .map(|d| {
            let code = match &d.code {
                Some(NumberOrString::String(code)) => code.clone(),
                _ => String::new(),
            };
            (d.range.start.line, code)
        })
        .collect()
}

const GOOD: &str = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
person = found["results"][0]
credits = tmdb.person_movie_credits(person_id=person["id"])
print(person["name"], len(credits["crew"]))
"#;

const BAD: &str = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
person = found["results"][0]
print(person["nmae"])  # chainsmith: ignore
"#;

#[test]
fn run_chain_from_the_editor() {
    let server = TmdbServer::start(&[]);
    let mut client = TestClient::in_process().workspace(workspace(&server.base_url(), false, "")).trusted().start();
    let uri = client.open("p.py", GOOD);
    client.diagnostics(&uri, |_| true);

    // The code lenses run the chain, against the real API or against chainsmith's mock of it.
    let lenses = client.code_lenses(&uri).expect("code lenses");
    let titles: Vec<String> = lenses.iter().map(|l| l.command.as_ref().unwrap().title.clone()).collect();
    assert_eq!(titles, ["▶ Run chain", "▶ Run against the mock"], "{lenses:#?}");

    // The mock: no request reaches the API, the chain runs on answers made from the protocol.
    let mock = lenses[1].command.clone().unwrap();
    client.execute_command(&mock.command, mock.arguments.unwrap_or_default(), None).unwrap();
    let (token, _) = client.progress_begin(None);
    assert_eq!(client.progress_end(Some(&token)).message.as_deref(), Some("✓ 2 calls"));
    assert_eq!(server.requests().as_array().unwrap().len(), 0, "the mock run reached the API");
    // Its made-up answers are no record of the API: nothing offers to re-run with them.
    let after_mock: Vec<String> =
        client.code_lenses(&uri).unwrap().iter().map(|l| l.command.as_ref().unwrap().title.clone()).collect();
    assert_eq!(after_mock, ["▶ Run chain", "▶ Run against the mock"]);

    let command = lenses[0].command.clone().unwrap();
    assert_eq!(command.command, "chainsmith.run");

    let answer = client.execute_command(&command.command, command.arguments.unwrap_or_default(), None);
    assert_eq!(answer, Ok(None));
    let (token, begin) = client.progress_begin(None);
    assert_eq!(begin.cancellable, Some(true));
    let report = client.progress_report(&token);
    assert_eq!(report.message.as_deref(), Some("#1 tmdb.search_person ✓ 200"));
    let output = client.await_notification::<LogMessage>(|p| p.message == "Bradley Cooper 38");
    assert_eq!(output.typ, lsp::MessageType::LOG, "program output is logged");
    // The results are on the document (hints refreshed) before the progress ends.
    client.await_request::<InlayHintRefreshRequest>(|_| true);
    let end = client.progress_end(Some(&token));
    assert_eq!(end.message.as_deref(), Some("✓ 2 calls"));

    let hints = run_hints(client.hints(&uri));
    assert_eq!(hints.len(), 2, "{hints:?}");
    assert_eq!(hints[0].0, 2);
    assert_eq!(hints[1].0, 4);
    for (_, label) in &hints {
        assert!(label.starts_with("✓ 200 · ") && label.ends_with(" ms"), "{label}");
    }

    // After the run: re-run lenses, with the last run's answers for every call or for the calls
    // before one. Re-running from the second call calls only it (and what follows) again.
    let lenses = client.code_lenses(&uri).expect("code lenses");
    let titled: Vec<(u32, String)> =
        lenses.iter().map(|l| (l.range.start.line, l.command.as_ref().unwrap().title.clone())).collect();
    assert_eq!(
        titled,
        [
            (0, "▶ Run chain".into()),
            (0, "▶ Run against the mock".into()),
            (0, "↻ Re-run with recorded answers".into()),
            (4, "↻ Re-run from here".into())
        ]
    );
    let asked_before = server.requests().as_array().unwrap().len();
    let from_here = lenses[3].command.clone().unwrap();
    assert_eq!(from_here.arguments.as_ref().unwrap()[0]["replay"], json!(2));
    client.execute_command(&from_here.command, from_here.arguments.unwrap_or_default(), None).unwrap();
    let (token, _) = client.progress_begin(None);
    client.await_notification::<LogMessage>(|p| p.message == "Bradley Cooper 38");
    assert_eq!(client.progress_end(Some(&token)).message.as_deref(), Some("✓ 2 calls"));
    let asked: Vec<String> = server.requests().as_array().unwrap()[asked_before..]
        .iter()
        .map(|r| r["path"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(asked.len(), 1, "only the call from here on reaches the API: {asked:?}");
    assert!(asked[0].contains("/movie_credits"), "{asked:?}");
    let hints = run_hints(client.hints(&uri));
    assert!(hints[0].1.contains("replayed") && !hints[1].1.contains("replayed"), "{hints:?}");

    // An edit: the hints go.
    client.change(&uri, 2, vec![full_text(BAD)]);
    client.diagnostics(&uri, |p| p.version == Some(2));
    assert_eq!(run_hints(client.hints(&uri)), vec![]);

    // A failing run: the failing line and the call it is attributed to.
    client.execute_command("chainsmith.run", vec![json!(uri)], None).unwrap();
    let published = client.diagnostics(&uri, |p| !p.diagnostics.is_empty());
    assert_eq!(codes(&published), [(2, "attributed-call".to_string()), (4, "runtime-error".to_string())]);
    let failing = &published.diagnostics[1];
    assert_eq!(failing.range.start, pos(4, 6));
    assert!(failing.message.starts_with("KeyError: 'nmae' — on the response of tmdb.search_person"));
    let hints = run_hints(client.hints(&uri));
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(hints[0].0 == 2 && hints[0].1.starts_with("✓ 200"), "{hints:?}");

    // Editing the failing line clears its diagnostic and the attribution on the call with it:
    // they describe one failure, which the edit meant to fix.
    client.change(&uri, 3, vec![edit(range(pos(4, 14), pos(4, 18)), "name")]);
    let published = client.diagnostics(&uri, |p| p.version == Some(3));
    assert_eq!(codes(&published), []);

    // The next run is good and leaves none.
    client.execute_command("chainsmith.run", vec![json!(uri)], None).unwrap();
    let published = client.diagnostics(&uri, |p| p.diagnostics.is_empty());
    assert_eq!(published.version, Some(3));
    let hints = run_hints(client.hints(&uri));
    assert!(hints.len() == 1 && hints[0].1.starts_with("✓ 200"), "{hints:?}");
    client.shutdown();
}

#[test]
fn a_run_is_cancelled_from_its_progress() {
    let server = TmdbServer::start(&["--slow", "/search/person=30"]);
    let mut client = TestClient::in_process().workspace(workspace(&server.base_url(), false, "")).trusted().start();
    let uri = client.open("slow.py", "from chainsmith.tools import tmdb\n\ntmdb.search_person(query=\"x\")\n");
    let answer = client.execute_command("chainsmith.run", vec![json!({"uri": uri})], Some("run-1"));
    assert_eq!(answer, Ok(None));
    client.progress_begin(Some(&token("run-1")));
    let started = std::time::Instant::now();
    client.notify::<WorkDoneProgressCancel>(lsp::WorkDoneProgressCancelParams { token: token("run-1") });
    let end = client.progress_end(Some(&token("run-1")));
    assert_eq!(end.message.as_deref(), Some("cancelled"));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.message, "chainsmith: the run of slow.py was cancelled");

    // A Cancel clicked at once, before the run has shown its progress: VS Code shows the button
    // as it sends the command, so the cancel can reach the server first. It still cancels.
    client.notify::<WorkDoneProgressCancel>(lsp::WorkDoneProgressCancelParams { token: token("run-2") });
    let answer = client.execute_command("chainsmith.run", vec![json!({"uri": uri})], Some("run-2"));
    assert_eq!(answer, Ok(None));
    let end = client.progress_end(Some(&token("run-2")));
    assert_eq!(end.message.as_deref(), Some("cancelled"));
    let told = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(told.message, "chainsmith: the run of slow.py was cancelled");
    client.shutdown();
}

/// A run whose response contradicts the protocol: `schema-drift` on the protocol file, and its
/// quick fix writes the observed shape as the tool's schema (the warning goes, the new shape
/// checks programs).
#[test]
fn drift_seen_in_a_run_goes_on_the_protocol_and_its_fix_takes_the_observed_shape() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    let spec_path = ws.path().join("specs/tmdb_oas.json");
    let mut spec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&spec_path).unwrap()).unwrap();
    let schema =
        &mut spec["paths"]["/search/person"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    schema["properties"]["results"]["items"]["properties"]["id"] = json!({"type": "string"});
    // A second tool drifts too: accepting one keeps the other's warning.
    let credits = &mut spec["paths"]["/person/{person_id}/movie_credits"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    credits["properties"]["cast"] = json!({"type": "string"});
    std::fs::write(&spec_path, serde_json::to_string_pretty(&spec).unwrap()).unwrap();
    let mut client = TestClient::in_process().workspace(ws).trusted().start();
    let uri = client.open("p.py", GOOD);
    client.diagnostics(&uri, |_| true);

    assert_eq!(client.execute_command("chainsmith.run", vec![json!(uri.as_str())], None), Ok(None));
    let spec_uri = client.uri("specs/tmdb_oas.json");
    let published =
        client.diagnostics(&spec_uri, |p| codes(p).iter().filter(|(_, c)| c == "schema-drift").count() == 2);
    let drift = published.diagnostics.iter().find(|d| d.message.contains("`results[0].id`")).expect("the drift");
    assert_eq!(drift.severity, Some(lsp::DiagnosticSeverity::WARNING));
    assert!(drift.message.contains("expected string, got integer"), "{}", drift.message);
    let text = std::fs::read_to_string(client.path("specs/tmdb_oas.json")).unwrap();
    let at = text.lines().nth(drift.range.start.line as usize).unwrap();
    assert_eq!(at.trim(), "\"get\": {", "on the operation");
    client.progress_end(None);

    let actions = client.code_actions(&spec_uri, drift.range, vec![drift.clone()]);
    let fix = actions
        .iter()
        .find_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(a) if a.title.contains("observed response") => Some(a.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{actions:#?}"));
    assert_eq!(fix.title, "Take the observed response as `tmdb.search_person`'s schema");
    let command = fix.command.unwrap();
    assert_eq!(client.execute_command(&command.command, command.arguments.unwrap(), None), Ok(None));
    let left = client.diagnostics(&spec_uri, |p| codes(p).iter().filter(|(_, c)| c == "schema-drift").count() == 1);
    let other = left.diagnostics.iter().find(|d| d.message.contains("schema-drift") || d.message.contains("answered"));
    assert!(other.is_some_and(|d| d.message.contains("tmdb.person_movie_credits")), "{left:#?}");
    let overlay = std::fs::read_to_string(client.path(".chainsmith/probed/tmdb.json")).expect("the overlay");
    assert!(overlay.contains("\"search_person\""), "{overlay}");
    // The observed shape now checks programs: person ids are integers again, names still known.
    let checked = client.open("q.py", "from chainsmith.tools import tmdb\n\nr = tmdb.search_person(query=\"x\")\nprint(r[\"results\"][0][\"nmae\"])\n");
    let found = client.diagnostics(&checked, |_| true);
    assert_eq!(codes(&found), [(3, "unknown-key".to_string())]);
}
