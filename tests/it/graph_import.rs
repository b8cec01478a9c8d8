//! ToolNet's importers on the real datasets: RestBench's TMDB tasks against the TMDB example
//! workspace, and ToolBench DFSDT answer files against a toolset loaded from ToolBench's query files.

use std::path::{Path, PathBuf};

use chainsmith::config::Config;
use chainsmith::graph::import::{self, Kind, Resolved, Resolver};
use chainsmith::toolset::{Catalog, loader};

const DATASETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/datasets");

/// The workspace's catalog, trusted: the test data its protocols name lies outside it.
fn catalog_of(root: &Path) -> Catalog {
    let mut config = Config::load(root, None);
    config.trusted = true;
    loader::load(&config)
}

fn tmdb() -> Catalog {
    catalog_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb"))
}

/// A workspace whose one ToolBench toolset `tb` is ToolBench's `G<n>_query.json`.
fn toolbench_workspace(group: &str) -> (tempfile::TempDir, Catalog) {
    let dir = tempfile::tempdir().unwrap();
    let query = PathBuf::from(DATASETS).join(format!("toolbench/data_example/instruction/{group}_query.json"));
    std::fs::write(
        dir.path().join("chainsmith.toml"),
        format!("[[toolsets]]\nname = \"tb\"\ntoolbench = {:?}\n", query.display().to_string()),
    )
    .unwrap();
    let catalog = catalog_of(dir.path());
    assert!(catalog.tool_count() > 5, "{:?}", catalog.diagnostics);
    (dir, catalog)
}

fn answer(group: &str, id: &str) -> String {
    std::fs::read_to_string(format!(
        "{DATASETS}/toolbench/data_example/answer/{group}_answer/{id}_ChatGPT_DFS_woFilter_w2.json"
    ))
    .unwrap()
}

#[test]
fn restbench_tmdb_maps_every_task_and_repairs_both_defects() {
    let catalog = tmdb();
    let text = std::fs::read_to_string(format!("{DATASETS}/restbench/tmdb.json")).unwrap();
    let imported = import::read(&text, &Resolver::new(&catalog)).unwrap();
    assert_eq!(imported.kind, Kind::RestBench);
    // SOURCE.md: 100 tasks, 226 gold calls.
    assert_eq!(imported.trajectories.len(), 100, "{:?}", imported.notes);
    assert_eq!(imported.trajectories.iter().map(|t| t.tools.len()).sum::<usize>(), 226);
    let distinct: std::collections::HashSet<&String> = imported.trajectories.iter().flat_map(|t| &t.tools).collect();
    // 49 distinct as written; 46 once the stray spaces and the misnamed parameter are repaired.
    assert_eq!(distinct.len(), 46);
    assert_eq!(imported.dropped, 0);
    // Defect 1: stray spaces in #26, #28 (leading) and #29, #32 (trailing).
    assert_eq!(imported.trajectories[26].tools[0], "tmdb.movie_now_playing");
    assert_eq!(imported.trajectories[28].tools[0], "tmdb.movie_popular");
    assert_eq!(imported.trajectories[29].tools[0], "tmdb.search_movie");
    for i in [26, 28, 29, 32] {
        assert!(imported.notes.iter().any(|n| n.starts_with(&format!("#{i}: ")) && n.contains("stray spaces")), "#{i}");
    }
    // Defect 2: #98's `/person/{movie_id}/movie_credits` is matched by shape.
    assert!(imported.trajectories[98].tools.contains(&"tmdb.person_movie_credits".to_string()));
    let note = imported.notes.iter().find(|n| n.starts_with("#98: ")).unwrap();
    assert!(
        note.contains("GET /person/{movie_id}/movie_credits") && note.contains("tmdb.person_movie_credits"),
        "{note}"
    );
    assert_eq!(imported.repaired, 5);
    assert_eq!(imported.notes.len(), 5, "{:?}", imported.notes);
    // The first task, with its query kept for task relevance.
    assert_eq!(imported.trajectories[0].tools, ["tmdb.search_person", "tmdb.person_movie_credits"]);
    assert_eq!(
        imported.trajectories[0].query.as_deref(),
        Some("give me the number of movies directed by Sofia Coppola")
    );
}

#[test]
fn an_unmappable_restbench_entry_is_reported_not_fatal() {
    let catalog = tmdb();
    let text = r#"[
      {"query": "ok", "solution": ["GET /search/person", "GET /person/{person_id}"]},
      {"query": "bad", "solution": ["GET /search/person", "GET /nowhere/{x}"]},
      {"query": "odd", "solution": ["search person"]}
    ]"#;
    let mut resolver = Resolver::new(&catalog);
    let imported = import::read(text, &resolver).unwrap();
    assert_eq!(imported.trajectories.len(), 1);
    assert_eq!(imported.dropped, 2);
    assert!(
        imported.notes[0].starts_with("#1: ") && imported.notes[0].contains("GET /nowhere/{x}"),
        "{:?}",
        imported.notes
    );
    assert!(imported.notes[1].starts_with("#2: "), "{:?}", imported.notes);
    // For evaluation, what maps to nothing stays a node of its own.
    resolver.keep_unknown = true;
    let kept = import::read(text, &resolver).unwrap();
    assert_eq!(kept.trajectories.len(), 3);
    assert_eq!(kept.trajectories[1].tools, ["tmdb.search_person", "GET /nowhere/{x}"]);
}

#[test]
fn a_dfsdt_answer_gives_its_give_answer_path() {
    let (_dir, catalog) = toolbench_workspace("G3");
    let resolver = Resolver::new(&catalog);
    let imported = import::read(&answer("G3", "3"), &resolver).unwrap();
    assert_eq!(imported.kind, Kind::Dfsdt);
    assert!(imported.notes.is_empty(), "{:?}", imported.notes);
    let [t] = imported.trajectories.as_slice() else { panic!("{:?}", imported.trajectories) };
    // The tree tries other branches; the path to the give_answer leaf calls the cocktail list thrice.
    assert_eq!(t.tools, vec!["tb.list_of_cocktails_for_the_cocktail_db".to_string(); 3]);
    assert!(t.query.as_deref().unwrap().starts_with("I'm planning a family vacation"));
}

#[test]
fn toolbench_names_cut_to_64_characters_match_by_suffix() {
    let (_dir, catalog) = toolbench_workspace("G3");
    let resolver = Resolver::new(&catalog);
    // G3's answer #3 offers this function: ToolBench kept the last 64 characters of
    // `iex_regulation_sho_threshold_securities_list_for_investors_exchange_iex_trading`.
    let cut = "sho_threshold_securities_list_for_investors_exchange_iex_trading";
    assert_eq!(cut.len(), 64);
    let Resolved::Repaired(id, how) = resolver.function(cut) else { panic!("{:?}", resolver.function(cut)) };
    assert_eq!(id, "tb.iex_regulation_sho_threshold_securities_list_for_investors_exchange_iex_trading");
    assert!(how.contains("suffix"), "{how}");
    // A short name that merely ends another is no cut name.
    assert!(matches!(resolver.function("iex_trading"), Resolved::Unknown(_)));
    assert!(matches!(resolver.function("list_of_cocktails_for_the_cocktail_db"), Resolved::Exact(_)));
}

#[test]
fn dfsdt_give_ups_and_foreign_tools_are_reported() {
    let (_dir, catalog) = toolbench_workspace("G2");
    let resolver = Resolver::new(&catalog);
    // #10 gave up: no give_answer leaf, no trajectory.
    let gave_up = import::read(&answer("G2", "10"), &resolver).unwrap();
    assert!(gave_up.trajectories.is_empty());
    assert!(gave_up.notes[0].contains("give_up"), "{:?}", gave_up.notes);
    // #52 answered with tools G2's query file does not have: reported, left out.
    let foreign = import::read(&answer("G2", "52"), &resolver).unwrap();
    assert!(foreign.trajectories.is_empty());
    assert_eq!(foreign.dropped, 1);
    assert!(foreign.notes[0].contains("get_track_info_for_pridnestrovie_post"), "{:?}", foreign.notes);
}

#[test]
fn jsonl_sequences_and_traces() {
    let catalog = tmdb();
    let resolver = Resolver::new(&catalog);
    let jsonl = "[\"tmdb.search_person\", \"person\"]\n\n{\"query\": \"q\", \"tools\": [\"tmdb.search_tv\"]}\n[\"tmdb.nope\"]\n";
    let imported = import::read(jsonl, &resolver).unwrap();
    assert_eq!(imported.kind, Kind::Jsonl);
    assert_eq!(imported.trajectories.len(), 2);
    assert_eq!(
        imported.trajectories[0].tools,
        ["tmdb.search_person", "tmdb.person"],
        "a unique bare name is read as its id"
    );
    assert_eq!(imported.trajectories[1].query.as_deref(), Some("q"));
    assert_eq!(imported.dropped, 1);
    assert!(imported.notes.iter().any(|n| n.starts_with("line 4: ")), "{:?}", imported.notes);

    let trace = r#"{"program": "a.py", "started": "2025-01-01T00:00:00Z", "ok": true,
      "calls": [{"id": 1, "tool": "tmdb.search_person", "arguments": {}, "ok": true, "status": 200,
                 "response": {}, "error": null, "duration_ms": 3, "line": 2}]}"#;
    let imported = import::read(trace, &resolver).unwrap();
    assert_eq!(imported.kind, Kind::Trace);
    assert_eq!(imported.trajectories[0].tools, ["tmdb.search_person"]);

    assert!(import::read("{\"openapi\": \"3.0.0\"}", &resolver).is_err());
    assert!(import::read("not json\nat all", &resolver).is_err());
}
