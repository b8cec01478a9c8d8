//! ToolNet's Figure 4 — a broken tool loses to its backup, and wins again once fixed — driven by
//! trace files that THIS TEST GENERATES in the design's trace shape (`.chainsmith/runs/*.json`).
//!
//! `graph_figure4_runtime.rs` is the same experiment on real runs against the runtime's test server;
//! this one writes the traces itself so the number of runs each phase takes is pinned exactly.
//! Everything after the trace files — discovering them, the default evaluator, Eq. 6–8, the
//! editor's hint and "failing lately" — is the real code path.

use std::path::Path;

use chainsmith::config::Config;
use chainsmith::graph::editor;
use chainsmith::graph::workspace::WorkspaceGraph;
use chainsmith::toolset::loader;
use serde_json::json;

const TOOLSET: &str = r#"{
  "chainsmith": "toolset/1",
  "name": "svc",
  "base_url": "http://127.0.0.1:9",
  "tools": [
    {"name": "find", "description": "Finds an item by name.", "http": {"method": "GET", "path": "/find"},
     "parameters": {"q": {"type": "string", "required": true}},
     "response": {"type": "object", "properties": {"id": {"type": "integer"}}}},
    {"name": "primary", "description": "An item's details (main service).", "http": {"method": "GET", "path": "/primary/{item_id}"},
     "parameters": {"item_id": {"type": "integer", "required": true}}, "response": {"type": "object"}},
    {"name": "backup", "description": "An item's details (mirror).", "http": {"method": "GET", "path": "/backup/{item_id}"},
     "parameters": {"item_id": {"type": "integer", "required": true}}, "response": {"type": "object"}}
  ]
}"#;

const PROGRAM: &str = r#""""Print an item's details, from the mirror when the main service fails."""
from chainsmith.tools import svc

found = svc.find(q="lamp")
try:
    item = svc.primary(item_id=found["id"])
except Exception:
    item = svc.backup(item_id=found["id"])
print(item)
"#;

/// Writes run number `n` as the runtime would: the primary answers 500 when `primary_fails`, and
/// the program falls back to the backup (line 8), so the run itself succeeds.
fn write_run(root: &Path, n: usize, primary_fails: bool) {
    let call = |id: u32, tool: &str, ok: bool, status: u16, line: u32| {
        json!({"id": id, "tool": tool, "arguments": {"item_id": 7}, "ok": ok, "status": status,
               "response": if ok { json!({"id": 7, "name": "lamp"}) } else { json!({"status_message": "Internal error"}) },
               "error": if ok { json!(null) } else { json!("HTTP 500 Internal Server Error") },
               "duration_ms": 12, "line": line})
    };
    let mut calls = vec![call(1, "svc.find", true, 200, 4)];
    if primary_fails {
        calls.push(call(2, "svc.primary", false, 500, 6));
        calls.push(call(3, "svc.backup", true, 200, 8));
    } else {
        calls.push(call(2, "svc.primary", true, 200, 6));
    }
    let trace = json!({"program": "chain.py", "started": format!("2025-03-01T10:{:02}:{:02}Z", n / 60, n % 60),
                       "ok": true, "calls": calls});
    let file = root.join(format!(".chainsmith/runs/20250301T10{:04}-chain.py.json", n));
    std::fs::write(file, serde_json::to_string_pretty(&trace).unwrap()).unwrap();
}

#[test]
fn figure4_a_failing_primary_drops_below_its_backup_and_recovers_with_generated_traces() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("protocols")).unwrap();
    std::fs::create_dir_all(root.join(".chainsmith/runs")).unwrap();
    std::fs::write(root.join("protocols/svc.toolset.json"), TOOLSET).unwrap();
    std::fs::write(root.join("chain.py"), PROGRAM).unwrap();
    let config = Config::load(root, None);
    let catalog = loader::load(&config);
    assert_eq!(catalog.tool_count(), 3, "{:?}", catalog.diagnostics);
    let mut inputs = WorkspaceGraph::load(&config, &catalog);
    let weights = |inputs: &WorkspaceGraph| {
        let g = inputs.graph();
        (g.weight("svc.find", "svc.primary"), g.weight("svc.find", "svc.backup"))
    };
    let mut run = 0;

    // Healthy: ten good runs. The primary is the preferred successor of `find`.
    for _ in 0..10 {
        run += 1;
        write_run(root, run, false);
    }
    inputs.refresh();
    let (primary, backup) = weights(&inputs);
    assert!(primary > backup, "{primary} vs {backup}");
    assert_eq!(editor::failing_lately(&inputs.graph(), "svc.primary"), None);

    // Outage: the primary answers 500; the program falls back to the backup.
    let mut dropped_after = None;
    for outage in 1..=8 {
        run += 1;
        write_run(root, run, true);
        inputs.refresh();
        let (primary, backup) = weights(&inputs);
        if primary < backup && dropped_after.is_none() {
            dropped_after = Some(outage);
        }
    }
    let dropped_after = dropped_after.expect("the primary's weight drops below the backup's");
    // With α = β = 0.5 and ten good runs before: below the backup after the 5th failing run.
    assert!(dropped_after <= 5, "dropped after {dropped_after} failing runs");
    let graph = inputs.graph();
    let hint = editor::hint_label(&graph, "svc.find", 2).unwrap();
    assert!(hint.starts_with("→ backup "), "{hint}");
    let message = editor::failing_lately(&graph, "svc.primary").expect("a hint diagnostic");
    assert!(message.contains("svc.primary") && message.contains("failing lately"), "{message}");
    assert!(editor::hover_markdown(&graph, "svc.primary", 3).unwrap().contains("failing lately"));

    // Fixed: the primary works again and wins back its place.
    let mut recovered_after = None;
    for healthy in 1..=20 {
        run += 1;
        write_run(root, run, false);
        inputs.refresh();
        let (primary, backup) = weights(&inputs);
        if primary > backup {
            recovered_after = Some(healthy);
            break;
        }
    }
    let recovered_after = recovered_after.expect("the primary recovers");
    assert!(recovered_after <= 15, "recovered after {recovered_after} good runs");
    assert_eq!(editor::failing_lately(&inputs.graph(), "svc.primary"), None);
    assert!(editor::hint_label(&inputs.graph(), "svc.find", 2).unwrap().starts_with("→ primary "));

    // Absorbing the runs into the store changes nothing in the graph, and the store says why.
    let before = inputs.graph().successors("svc.find").into_iter().map(|(t, w)| (t.to_string(), w)).collect::<Vec<_>>();
    assert_eq!(inputs.absorb_runs().unwrap(), run);
    assert_eq!(inputs.store().runs.len(), run);
    let after = inputs.graph().successors("svc.find").into_iter().map(|(t, w)| (t.to_string(), w)).collect::<Vec<_>>();
    assert_eq!(before.len(), after.len());
    for ((t1, w1), (t2, w2)) in before.iter().zip(&after) {
        assert_eq!(t1, t2);
        assert!((w1 - w2).abs() < 1e-9);
    }
    eprintln!(
        "figure 4 (generated traces): below the backup after {dropped_after} failing runs, back after {recovered_after} good runs"
    );
}
