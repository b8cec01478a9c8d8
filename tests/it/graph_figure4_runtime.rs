//! ToolNet's Figure 4 on real runs: a program prefers `tmdb.person` and falls back to
//! `tmdb.search_person`. The local TMDB test server is switched to answer 500 on `/person/` and
//! back; every run is a real `chainsmith run` whose trace lands in `.chainsmith/runs/`, and the
//! workspace graph is rebuilt from those traces as the editor does. The primary's weight drops
//! below the backup's within a bounded number of failing runs and recovers once it works again.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::support::runtime::{TmdbServer, chainsmith, text};
use chainsmith::config::Config;
use chainsmith::graph::workspace::WorkspaceGraph;
use chainsmith::graph::{START, editor};
use chainsmith::toolset::loader;

const PROGRAM: &str = r#""""The name of person 525, from the search when the person endpoint fails."""
from chainsmith.tools import tmdb

try:
    name = tmdb.person(person_id=525)["name"]
except Exception:
    name = tmdb.search_person(query="Christopher Nolan")["results"][0]["name"]
print(name)
"#;

fn control(port: u16, fail: serde_json::Value) {
    let body = serde_json::json!({"fail": fail}).to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        stream,
        "POST /__control HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200"), "{response}");
}

/// (weight start → person, weight start → search_person) as the editor would see them now.
fn weights(root: &Path) -> (f64, f64, Option<String>) {
    let config = Config::load(root, None);
    let catalog = loader::load(&config);
    // The program's own static calls are left out: only what the runs taught counts.
    let graph = WorkspaceGraph::load(&config, &catalog).graph_excluding(Some(&root.join("chain.py")));
    (
        graph.weight(START, "tmdb.person"),
        graph.weight(START, "tmdb.search_person"),
        editor::failing_lately(&graph, "tmdb.person"),
    )
}

fn run_once(root: &Path) {
    let out = chainsmith(root, &["--trust", "run", "chain.py"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the program falls back, so every run succeeds: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn a_failing_tool_loses_to_its_backup_and_recovers() {
    let server = TmdbServer::start(&[]);
    let dir = crate::support::runtime::workspace(&server.base_url(), false, "");
    std::fs::write(dir.path().join("chain.py"), PROGRAM).unwrap();

    for _ in 0..3 {
        run_once(dir.path());
    }
    let (primary, backup, failing) = weights(dir.path());
    assert!(primary > backup, "healthy: the primary leads ({primary} vs {backup})");
    assert_eq!(failing, None);

    control(server.port, serde_json::json!({"/person/": 500}));
    let mut outage_runs = 0;
    loop {
        run_once(dir.path());
        outage_runs += 1;
        let (primary, backup, _) = weights(dir.path());
        if primary < backup {
            break;
        }
        assert!(outage_runs < 8, "the primary still leads after {outage_runs} failing runs ({primary} vs {backup})");
    }
    assert!(weights(dir.path()).2.is_some(), "the primary is reported as failing lately");

    control(server.port, serde_json::json!({}));
    let mut good_runs = 0;
    loop {
        run_once(dir.path());
        good_runs += 1;
        let (primary, backup, _) = weights(dir.path());
        if primary > backup {
            break;
        }
        assert!(good_runs < 12, "the primary has not recovered after {good_runs} good runs ({primary} vs {backup})");
    }
    eprintln!(
        "primary fell below the backup after {outage_runs} failing runs and recovered after {good_runs} good runs"
    );
}
