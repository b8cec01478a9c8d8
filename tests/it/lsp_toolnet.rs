//! ToolNet in the editor, over real LSP messages against the TMDB example workspace (whose chains
//! are the trajectories): successor inlay hints, completion ranked by transition weight, the graph
//! neighbourhood on hover, and the "failing lately" hint from runs.

use std::path::Path;

use crate::support::lsp::Client;
use serde_json::json;

fn copy_workspace(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb");
    for entry in walkdir::WalkDir::new(&from).into_iter().filter_map(Result::ok) {
        let rel = entry.path().strip_prefix(&from).unwrap();
        let target = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

const PROGRAM: &str = "\"\"\"how many movies did Sofia Coppola direct\"\"\"\nfrom chainsmith.tools import tmdb\n\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nnext_call = tmdb.\n";

#[tokio::test]
async fn successors_rank_completion_and_show_inline() {
    let dir = tempfile::tempdir().unwrap();
    copy_workspace(dir.path());
    let mut client = Client::start(dir.path()).await;
    let uri = client.open(&dir.path().join("new_chain.py"), PROGRAM).await;

    // After the program's last call, `found = tmdb.search_person(…)`: what next, from the other
    // chains (which went on to person_movie_credits); the broken mistakes/ programs teach nothing.
    let hints = client.hints(&uri).await;
    assert_eq!(hints, vec![(3, "next → person_movie_credits 100".to_string())]);

    // `tmdb.` on the next line: person_movie_credits first, its weight in the detail.
    let completion = client
        .request(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": 4, "character": 17}}),
        )
        .await
        .unwrap();
    let mut items: Vec<&serde_json::Value> = completion["items"].as_array().unwrap().iter().collect();
    assert!(items.len() > 40, "all tools are offered");
    items.sort_by_key(|i| i["sortText"].as_str().unwrap().to_string());
    assert_eq!(items[0]["label"], "person_movie_credits", "{:?}", &items[..3]);
    assert!(items[0]["detail"].as_str().unwrap().starts_with("ToolNet "), "{}", items[0]["detail"]);

    // Hover on the call: its neighbourhood.
    let hover = client
        .request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": 16}}))
        .await
        .unwrap();
    let markdown = hover["contents"]["value"].as_str().unwrap();
    assert!(markdown.contains("person_movie_credits"), "{markdown}");

    // The graph command: the tool's successors as the editor's output shows them.
    let graph = client
        .request(
            "workspace/executeCommand",
            json!({"command": "chainsmith.graph", "arguments": ["tmdb.search_person"]}),
        )
        .await
        .unwrap();
    let text = graph["text"].as_str().unwrap();
    assert!(text.contains("\ntmdb.search_person → person_movie_credits 100"), "{text}");
    client.shutdown().await;
}
