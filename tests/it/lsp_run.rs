//! `chainsmith.run` in the language server, in process and over real LSP messages, against the
//! TMDB-like test server: the code lens, a run streaming its output as `window/logMessage` with
//! work-done progress, per-call inlay hints, a failing run's diagnostics (and their clearing), and
//! cancellation through `window/workDoneProgress/cancel`.

use std::time::Duration;

use crate::support::lsp::Client;
use crate::support::runtime::{TmdbServer, workspace};
use serde_json::{Value, json};

/// The run's result hints (ToolNet's successor hints are also there once the run is learnt).
fn run_hints(hints: Vec<(u64, String)>) -> Vec<(u64, String)> {
    hints.into_iter().filter(|(_, label)| label.starts_with('✓') || label.starts_with('✗')).collect()
}

fn codes(params: &Value) -> Vec<(u64, String)> {
    params["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["range"]["start"]["line"].as_u64().unwrap(), d["code"].as_str().unwrap_or("").to_string()))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_chain_from_the_editor() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    let mut client = Client::start(ws.path()).await;
    let uri = client.open(&ws.path().join("p.py"), GOOD).await;
    client.wait_for("diagnostics", |m| m["method"] == "textDocument/publishDiagnostics").await;

    // The code lens runs the chain.
    let lenses = client.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await.unwrap();
    assert_eq!(lenses.as_array().unwrap().len(), 1, "{lenses:#}");
    assert_eq!(lenses[0]["command"]["command"], "chainsmith.run");
    assert_eq!(lenses[0]["command"]["title"], "▶ Run chain");
    let command = lenses[0]["command"].clone();

    let answer = client
        .request("workspace/executeCommand", json!({"command": command["command"], "arguments": command["arguments"]}))
        .await;
    assert_eq!(answer, Ok(Value::Null));
    let begin = client.notification("$/progress", |p| p["value"]["kind"] == "begin").await;
    assert_eq!(begin["value"]["cancellable"], true);
    let token = begin["token"].clone();
    let report = client.notification("$/progress", |p| p["token"] == token && p["value"]["kind"] == "report").await;
    assert_eq!(report["value"]["message"], "#1 tmdb.search_person ✓ 200");
    let output = client.notification("window/logMessage", |p| p["message"] == "Bradley Cooper 38").await;
    assert_eq!(output["type"], 4, "program output is logged");
    // The results are on the document (hints refreshed) before the progress ends.
    client.wait_for("an inlay hint refresh", |m| m["method"] == "workspace/inlayHint/refresh").await;
    let end = client.notification("$/progress", |p| p["token"] == token && p["value"]["kind"] == "end").await;
    assert_eq!(end["value"]["message"], "✓ 2 calls");

    let hints = run_hints(client.hints(&uri).await);
    assert_eq!(hints.len(), 2, "{hints:?}");
    assert_eq!(hints[0].0, 2);
    assert_eq!(hints[1].0, 4);
    for (_, label) in &hints {
        assert!(label.starts_with("✓ 200 · ") && label.ends_with(" ms"), "{label}");
    }

    // An edit: the hints go.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": BAD}]}),
        )
        .await;
    client
        .wait_for("diagnostics of version 2", |m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == 2
        })
        .await;
    assert_eq!(run_hints(client.hints(&uri).await), vec![]);

    // A failing run: the failing line and the call it is attributed to.
    client.request("workspace/executeCommand", json!({"command": "chainsmith.run", "arguments": [uri]})).await.unwrap();
    let published = client
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri.as_str() && p["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
        })
        .await;
    assert_eq!(codes(&published), [(2, "attributed-call".to_string()), (4, "runtime-error".to_string())]);
    let failing = published["diagnostics"].as_array().unwrap().iter().find(|d| d["code"] == "runtime-error").unwrap();
    assert_eq!(failing["range"]["start"], json!({"line": 4, "character": 6}));
    assert!(
        failing["message"].as_str().unwrap().starts_with("KeyError: 'nmae' — on the response of tmdb.search_person")
    );
    let hints = run_hints(client.hints(&uri).await);
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(hints[0].0 == 2 && hints[0].1.starts_with("✓ 200"), "{hints:?}");

    // Editing the failing line clears its diagnostic; the attribution on the call stays.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
                {"range": {"start": {"line": 4, "character": 14}, "end": {"line": 4, "character": 18}}, "text": "name"}
            ]}),
        )
        .await;
    let published =
        client.notification("textDocument/publishDiagnostics", |p| p["uri"] == uri.as_str() && p["version"] == 3).await;
    assert_eq!(codes(&published), [(2, "attributed-call".to_string())]);

    // The next good run clears the rest.
    client.request("workspace/executeCommand", json!({"command": "chainsmith.run", "arguments": [uri]})).await.unwrap();
    let published = client
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri.as_str() && p["diagnostics"].as_array().is_some_and(Vec::is_empty)
        })
        .await;
    assert_eq!(published["version"], 3);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_cancelled_from_its_progress() {
    let server = TmdbServer::start(&["--slow", "/search/person=30"]);
    let ws = workspace(&server.base_url(), false, "");
    let mut client = Client::start(ws.path()).await;
    let uri = client
        .open(&ws.path().join("slow.py"), "from chainsmith.tools import tmdb\n\ntmdb.search_person(query=\"x\")\n")
        .await;
    let answer = client
        .request(
            "workspace/executeCommand",
            json!({"command": "chainsmith.run", "arguments": [{"uri": uri}], "workDoneToken": "run-1"}),
        )
        .await;
    assert_eq!(answer, Ok(Value::Null));
    client.notification("$/progress", |p| p["token"] == "run-1" && p["value"]["kind"] == "begin").await;
    let started = std::time::Instant::now();
    client.notify("window/workDoneProgress/cancel", json!({"token": "run-1"})).await;
    let end = client.notification("$/progress", |p| p["token"] == "run-1" && p["value"]["kind"] == "end").await;
    assert_eq!(end["value"]["message"], "✗ Cancelled");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    client.shutdown().await;
}
