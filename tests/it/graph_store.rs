//! The ToolNet store (`.chainsmith/toolnet.json`) and the workspace graph built on it.

use std::path::Path;

use chainsmith::config::Config;
use chainsmith::graph::editor;
use chainsmith::graph::store::{ImportedSet, RunRecord, STORE_PATH, Store, StoreError};
use chainsmith::graph::workspace::WorkspaceGraph;
use chainsmith::graph::{END, START, Trajectory};
use chainsmith::toolset::index::CatalogIndex;
use chainsmith::toolset::loader;

fn sample() -> Store {
    let mut store = Store::default();
    store.imports.insert(
        "../data/tmdb.json".into(),
        ImportedSet {
            kind: "restbench".into(),
            trajectories: vec![
                Trajectory {
                    tools: vec!["tmdb.search_person".into(), "tmdb.person_movie_credits".into()],
                    query: Some("movies directed by Sofia Coppola".into()),
                },
                Trajectory::new(["tmdb.search_person", "tmdb.person"]),
            ],
        },
    );
    store.runs.insert(
        "20250102T101500-a.py.json".into(),
        RunRecord {
            program: "a.py".into(),
            started: Some("2025-01-02T10:15:00Z".into()),
            ok: true,
            answered: Some(true),
            tools: vec!["tmdb.search_person".into(), "tmdb.person".into()],
            scores: [("tmdb.search_person".to_string(), 2.0), ("tmdb.person".to_string(), 1.5)].into_iter().collect(),
        },
    );
    store
}

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(Store::load(dir.path()).unwrap(), Store::default(), "no file yet: an empty store");
    let written = sample().save(dir.path()).unwrap();
    assert_eq!(written, dir.path().join(STORE_PATH));
    assert_eq!(Store::load(dir.path()).unwrap(), sample());
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.starts_with("{\n  \"chainsmith\": \"toolnet/1\",\n"), "{text}");
    assert!(text.contains(
        r#"{"query": "movies directed by Sofia Coppola", "tools": ["tmdb.search_person", "tmdb.person_movie_credits"]}"#
    ));
    assert!(text.contains(r#""scores": {"tmdb.person": 1.5, "tmdb.search_person": 2}"#), "{text}");
    assert!(text.ends_with("}\n"));
}

#[cfg(unix)]
#[test]
fn saving_replaces_the_file_atomically() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(STORE_PATH);
    Store::default().save(dir.path()).unwrap();
    let before = std::fs::metadata(&file).unwrap().ino();
    let old_text = std::fs::read_to_string(&file).unwrap();
    // A reader holding the old file keeps reading the old, complete text.
    let mut held = std::fs::File::open(&file).unwrap();
    sample().save(dir.path()).unwrap();
    let after = std::fs::metadata(&file).unwrap().ino();
    assert_ne!(before, after, "written to a new file and renamed over the old one, not rewritten in place");
    let mut seen = String::new();
    std::io::Read::read_to_string(&mut held, &mut seen).unwrap();
    assert_eq!(seen, old_text);
    // Nothing else is left in the folder.
    let names: Vec<String> = std::fs::read_dir(dir.path().join(".chainsmith"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names, ["toolnet.json"]);
}

#[test]
fn a_corrupt_or_foreign_store_is_reported_and_kept() {
    for (text, corrupt) in [
        ("{\n  \"chainsmith\": \"toolnet/1\",\n  \"imports\": {\n", true),
        ("{\"openapi\": \"3.0.0\", \"paths\": {}}", false),
        ("{\"chainsmith\": \"toolnet/7\"}", false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(STORE_PATH);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        let error = Store::load(dir.path()).unwrap_err();
        assert_eq!(matches!(error, StoreError::Corrupt { .. }), corrupt, "{error}");
        let message = error.to_string();
        assert!(message.contains(&file.display().to_string()), "names the file: {message}");
        assert!(message.contains("kept"), "{message}");
        // Never overwritten.
        assert!(sample().save(dir.path()).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
        // The workspace graph reports it and goes on without it.
        let config = Config::load(dir.path(), None);
        let catalog = loader::load(&config);
        let inputs = WorkspaceGraph::load(&config, &catalog);
        let problems = inputs.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].code, "invalid-toolnet");
        assert_eq!(problems[0].file, file);
        assert_eq!(inputs.graph().edge_count(), 0);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    }
}

#[test]
fn the_tmdb_workspace_graph_comes_from_its_programs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb");
    let config = Config::load(&root, None);
    let catalog = loader::load(&config);
    let inputs = WorkspaceGraph::load(&config, &catalog);
    assert!(inputs.problems().is_empty(), "{:?}", inputs.problems());
    let graph = inputs.graph();
    // Every tool is a node; task000 and task009 both go search_person → person_movie_credits.
    assert!(graph.nodes().count() >= catalog.tool_count() + 2);
    assert_eq!(graph.count("tmdb.search_person", "tmdb.person_movie_credits"), 2);
    assert!(graph.count(START, "tmdb.search_tv") >= 3);
    assert_eq!(graph.static_weight("tmdb.person_movie_credits", END), 1.0);
    let hint = editor::hint_label(&graph, "tmdb.search_tv", 3).unwrap();
    assert!(hint.starts_with("→ ") && hint.contains("tv ") && !hint.contains("tmdb."), "{hint}");

    // Completion after `tmdb.` following search_movie: the graph's successor first, visibly.
    let ranked = editor::rank_tools(&graph, &catalog, None, "tmdb", Some("tmdb.search_movie"), None);
    assert_eq!(ranked.len(), catalog.tool_count());
    assert_eq!(ranked[0].name, "movie_credits");
    assert_eq!(ranked[0].weight, Some(100));
    assert_eq!(ranked[0].sort_text, "0000");
    assert_eq!(ranked[0].detail, "ToolNet 100 after search_movie");
    assert_eq!((ranked[1].weight, ranked[1].sort_text.as_str()), (None, "0001"));
    // `mistakes/mistakes.py` fails the checks, so its repeated search_person calls teach nothing.
    assert_eq!(graph.count("tmdb.search_person", "tmdb.search_person"), 0);
    // Without an edge, the task docstring decides.
    let index = CatalogIndex::new(&catalog);
    let ranked = editor::rank_tools(
        &graph,
        &catalog,
        Some(&index),
        "tmdb",
        Some("tmdb.network"),
        Some("the reviews of a movie"),
    );
    assert_eq!(ranked[0].name, "movie_reviews", "{:?}", &ranked[..3]);

    // Refreshing with nothing changed keeps the same graph; a saved program replaces its calls.
    let mut inputs = inputs;
    inputs.refresh();
    assert_eq!(inputs.graph().edge_count(), graph.edge_count());
    let program = root.join("chains/task000_sofia_coppola_directed.py");
    inputs.set_program(&program, vec!["tmdb.search_person".into(), "tmdb.person".into()]);
    let changed = inputs.graph();
    assert_eq!(changed.count("tmdb.search_person", "tmdb.person_movie_credits"), 1);
    assert_eq!(changed.count("tmdb.search_person", "tmdb.person"), 1);
    let without = inputs.graph_excluding(Some(&program));
    assert_eq!(without.count("tmdb.search_person", "tmdb.person"), 0);
    assert_eq!(without.count("tmdb.search_person", "tmdb.person_movie_credits"), 1);
}
