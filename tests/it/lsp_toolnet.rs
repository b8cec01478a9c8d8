//! ToolNet in the editor, over real LSP messages against the TMDB example workspace (whose chains
//! are the trajectories): successor inlay hints, completion ranked by transition weight, the graph
//! neighbourhood on hover, and the "failing lately" hint from runs.

use serde_json::json;
use tower_lsp_server::lsp_types as lsp;

use crate::support::lsp::{TestClient, pos};
use crate::support::runtime::copy_example;

const PROGRAM: &str = "\"\"\"how many movies did Sofia Coppola direct\"\"\"\nfrom chainsmith.tools import tmdb\n\nfound = tmdb.search_person(query=\"Sofia Coppola\")\nnext_call = tmdb.\n";

#[test]
fn successors_rank_completion_and_show_inline() {
    let dir = tempfile::tempdir().unwrap();
    copy_example(dir.path());
    let mut client = TestClient::in_process().workspace(dir).start();
    let uri = client.open("new_chain.py", PROGRAM);

    // After the program's last call, `found = tmdb.search_person(…)`: what next, from the other
    // chains (which went on to person_movie_credits); the broken mistakes/ programs teach nothing.
    let hints = client.hints(&uri);
    assert_eq!(hints, vec![(3, "next → person_movie_credits 100%".to_string())]);

    // A tool called twice gets its successors once, at its first call; the last call, what next.
    let twice = client.open(
        "twice.py",
        "from chainsmith.tools import tmdb\n\na = tmdb.search_person(query=\"a\")\nb = tmdb.search_person(query=\"b\")\nc = tmdb.search_person(query=\"c\")\n",
    );
    let hints = client.hints(&twice);
    assert_eq!(
        hints,
        vec![(2, "→ person_movie_credits 100%".to_string()), (4, "next → person_movie_credits 100%".to_string())]
    );

    // `tmdb.` on the next line: person_movie_credits first, its weight in the detail.
    let mut items = client.completion_items(&uri, pos(4, 17));
    assert!(items.len() > 40, "all tools are offered");
    items.sort_by_key(|i| i.sort_text.clone().unwrap());
    assert_eq!(items[0].label, "person_movie_credits", "{:?}", &items[..3]);
    let detail = items[0].detail.as_deref().unwrap();
    assert!(detail.starts_with("ToolNet "), "{detail}");

    // Hover on the call: its neighbourhood.
    let hover = client.hover(&uri, pos(3, 16)).expect("a hover");
    let lsp::HoverContents::Markup(markdown) = &hover.contents else { panic!("{hover:?}") };
    assert!(markdown.value.contains("person_movie_credits"), "{}", markdown.value);

    // The graph command: the tool's successors as the editor's output shows them.
    let graph = client.execute_command("chainsmith.graph", vec![json!("tmdb.search_person")], None);
    let graph = graph.unwrap().expect("the graph");
    let text = graph["text"].as_str().unwrap();
    assert!(text.contains("\ntmdb.search_person → person_movie_credits 100"), "{text}");
    // The same graph is logged for the editor's output.
    client.await_notification::<lsp::notification::LogMessage>(|p| p.message.contains("person_movie_credits 100"));

    // From the document: a picture of its tools' neighbourhood, its own tool filled.
    let graph = client.execute_command("chainsmith.graph", vec![json!(uri.as_str())], None);
    let graph = graph.unwrap().expect("the graph");
    assert_eq!(graph["highlighted"], json!(["tmdb.search_person"]), "{graph}");
    let svg = graph["svg"].as_str().unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(svg.contains(">tmdb.search_person<") && svg.contains(">tmdb.person_movie_credits<"), "{svg}");
    assert!(svg.contains("#bbdefbff"), "the document's tool is highlighted: {svg}");
    assert!(!svg.contains(">tmdb.tv_season<"), "only the neighbourhood is drawn: {svg}");
    client.shutdown();
}

/// `[toolnet] hints`: `"last"` keeps only what comes next after the last call, `"off"` shows none.
#[test]
fn successor_hints_follow_the_workspace_setting() {
    let program = "from chainsmith.tools import tmdb\n\na = tmdb.search_person(query=\"a\")\nb = tmdb.movie_credits(movie_id=1)\nc = tmdb.search_person(query=\"c\")\n";
    for (setting, expected) in [("last", vec![(4, "next → person_movie_credits 100%".to_string())]), ("off", vec![])]
    {
        let dir = tempfile::tempdir().unwrap();
        copy_example(dir.path());
        let config = dir.path().join("chainsmith.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("{text}\n[toolnet]\nhints = \"{setting}\"\n")).unwrap();
        let mut client = TestClient::in_process().workspace(dir).start();
        let uri = client.open("p.py", program);
        assert_eq!(client.hints(&uri), expected, "hints = {setting}");
        client.shutdown();
    }
}
