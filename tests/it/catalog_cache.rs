//! The catalog cache as a user meets it: a large spec is parsed once and read back from
//! `.chainsmith/cache/` after that with the same answers, and an entry that is corrupt, stale,
//! made under another user's key or made before a file the spec pulls in changed is never believed.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::runtime::{chainsmith, repo, text};

const CHAIN: &str = "from chainsmith.tools import stripe\n\ncharge = stripe.v1_charges_by_charge(charge=\"ch_1\")\nprint(charge[\"outcme\"])\n";

/// A workspace holding Stripe's API description (2.5 MB) and a chain with one key mistake.
fn stripe_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo("tests/fixtures/specs/stripe.com.json"), dir.path().join("stripe.json")).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), "[[toolsets]]\nname = \"stripe\"\nopenapi = \"stripe.json\"\n")
        .unwrap();
    std::fs::write(dir.path().join("chain.py"), CHAIN).unwrap();
    dir
}

/// chainsmith in `dir` with its debug log on and the cache key kept in `user_cache`.
fn run(dir: &Path, user_cache: &Path, args: &[&str]) -> Output {
    chainsmith(dir, args, &[("XDG_CACHE_HOME", user_cache.to_str().unwrap()), ("CHAINSMITH_LOG", "debug")])
}

fn read_from_cache(out: &Output) -> bool {
    text(&out.stderr).contains("read from the cache")
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join(".chainsmith/cache"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.retain(|p| p.file_name().unwrap().to_string_lossy().starts_with("catalog-"));
    found
}

#[test]
fn a_large_spec_is_read_back_from_the_cache_with_the_same_answers() {
    let dir = stripe_workspace();
    let user = tempfile::tempdir().unwrap();
    let first = run(dir.path(), user.path(), &["check", "--format", "json", "chain.py"]);
    assert!(!read_from_cache(&first), "{}", text(&first.stderr));
    assert!(text(&first.stdout).contains("unknown-key"), "{}", text(&first.stdout));
    assert_eq!(entries(dir.path()).len(), 1, "one entry for the one spec");
    let key = user.path().join("chainsmith/catalog.key");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600, "the key is the user's alone");

    let second = run(dir.path(), user.path(), &["check", "--format", "json", "chain.py"]);
    assert!(read_from_cache(&second), "{}", text(&second.stderr));
    assert_eq!(text(&second.stdout), text(&first.stdout), "the same diagnostics from the cache");
    let cached = run(dir.path(), user.path(), &["tools", "--format", "json"]);
    let parsed = chainsmith(dir.path(), &["tools", "--format", "json"], &[("CHAINSMITH_NO_CACHE", "1")]);
    assert!(read_from_cache(&cached));
    assert_eq!(text(&cached.stdout), text(&parsed.stdout), "the same tools, aliases and sources");
    let problems =
        |out: &Output| text(&out.stderr).lines().filter(|l| !l.contains("DEBUG")).collect::<Vec<_>>().join("\n");
    assert_eq!(problems(&cached), problems(&parsed), "the same problems in the spec");
    assert!(text(&cached.stdout).matches("\"id\"").count() > 400);
}

#[test]
fn a_corrupt_foreign_or_stale_entry_is_never_believed() {
    let dir = stripe_workspace();
    let user = tempfile::tempdir().unwrap();
    let expected = run(dir.path(), user.path(), &["check", "--format", "json", "chain.py"]);
    let entry = entries(dir.path()).pop().expect("an entry");

    // One byte changed in the middle: ignored, the spec parsed again and the entry rewritten.
    let mut bytes = std::fs::read(&entry).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&entry, &bytes).unwrap();
    let out = run(dir.path(), user.path(), &["check", "--format", "json", "chain.py"]);
    assert!(!read_from_cache(&out), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("stale or not ours"), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), text(&expected.stdout));
    assert!(read_from_cache(&run(dir.path(), user.path(), &["check", "chain.py"])), "rewritten, then read");

    // An entry made under another key (what a workspace could ship) is not believed either.
    let other_user = tempfile::tempdir().unwrap();
    let out = run(dir.path(), other_user.path(), &["check", "--format", "json", "chain.py"]);
    assert!(!read_from_cache(&out), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), text(&expected.stdout));

    // The spec changed: its new text is what counts.
    let spec = dir.path().join("stripe.json");
    let changed =
        std::fs::read_to_string(&spec).unwrap().replace("\"/v1/charges/{charge}\"", "\"/v1/payments/{charge}\"");
    std::fs::write(&spec, changed).unwrap();
    let out = run(dir.path(), other_user.path(), &["check", "--format", "json", "chain.py"]);
    assert!(!read_from_cache(&out));
    assert!(text(&out.stdout).contains("unknown-tool"), "{}", text(&out.stdout));
    let tools = run(dir.path(), other_user.path(), &["tools"]);
    assert!(read_from_cache(&tools));
    assert!(text(&tools.stdout).contains("stripe.v1_payments(charge"), "{}", text(&tools.stdout));
    assert!(!text(&tools.stdout).contains("stripe.v1_charges_by_charge("));
}

#[test]
fn a_change_to_a_file_the_spec_pulls_in_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    // Enough operations that the spec is worth caching, one of them answering a schema kept in
    // another file.
    let mut paths = serde_json::Map::new();
    paths.insert(
        "/pets/{id}".into(),
        serde_json::json!({"get": {"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "A pet", "content": {"application/json": {"schema": {"$ref": "./pet.json#/Pet"}}}}}}}),
    );
    for n in 0..600 {
        paths.insert(
            format!("/things{n}"),
            serde_json::json!({"get": {"description": "Lists things of one kind, padded so the spec passes the cache's size floor",
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}}}}}}}}}),
        );
    }
    let spec = serde_json::json!({"openapi": "3.0.0", "info": {"title": "Pets", "version": "1"}, "paths": paths});
    std::fs::write(dir.path().join("pets.json"), serde_json::to_string_pretty(&spec).unwrap()).unwrap();
    let pet =
        |key: &str| format!(r#"{{"Pet": {{"type": "object", "properties": {{"{key}": {{"type": "string"}}}}}}}}"#);
    std::fs::write(dir.path().join("chainsmith.toml"), "[[toolsets]]\nname = \"pets\"\nopenapi = \"pets.json\"\n")
        .unwrap();
    std::fs::write(
        dir.path().join("chain.py"),
        "from chainsmith.tools import pets\n\np = pets.pets(id=\"1\")\nprint(p[\"name\"])\n",
    )
    .unwrap();
    let user = tempfile::tempdir().unwrap();
    // Missing at first: the load says so, and that holds only until the file appears.
    let missing = run(dir.path(), user.path(), &["check", "chain.py"]);
    assert!(text(&missing.stdout).contains("pet.json"), "{}", text(&missing.stdout));
    std::fs::write(dir.path().join("pet.json"), pet("name")).unwrap();
    let first = run(dir.path(), user.path(), &["check", "chain.py"]);
    assert!(first.status.success(), "{}{}", text(&first.stdout), text(&first.stderr));
    assert_eq!(entries(dir.path()).len(), 1, "{}", text(&first.stderr));
    assert!(read_from_cache(&run(dir.path(), user.path(), &["check", "chain.py"])));

    std::fs::write(dir.path().join("pet.json"), pet("title")).unwrap();
    let out = run(dir.path(), user.path(), &["check", "chain.py"]);
    assert!(!read_from_cache(&out), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("pet.json changed"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("unknown-key"), "{}", text(&out.stdout));
}

/// A load read back from the cache takes from the values a workspace's protocol files may hold
/// together what it took when parsed: of three specs of three million values each, two load and
/// one is refused, on every `check` — not one more with each run, which grew memory without end.
#[test]
fn what_the_cache_holds_counts_against_what_one_load_may_hold() {
    let dir = tempfile::tempdir().unwrap();
    let padding = format!("[{}]", vec!["0"; 3_000_000].join(","));
    let mut toml = String::new();
    for n in 0..3 {
        let spec = format!(
            r#"{{"openapi": "3.0.0", "info": {{"title": "t{n}", "version": "1"}}, "x-padding": {padding},
            "paths": {{"/p": {{"get": {{"operationId": "op", "responses": {{"200": {{"description": "ok"}}}}}}}}}}}}"#
        );
        std::fs::write(dir.path().join(format!("t{n}.json")), spec).unwrap();
        toml.push_str(&format!("[[toolsets]]\nname = \"t{n}\"\nopenapi = \"t{n}.json\"\n"));
    }
    std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
    let user = tempfile::tempdir().unwrap();
    let refused = |out: &Output| text(&out.stdout).matches("not parsed: the protocol files loaded with it").count();
    for attempt in 0..3 {
        let out = run(dir.path(), user.path(), &["check", "--format", "json"]);
        assert_eq!(refused(&out), 1, "load {attempt}: {}", text(&out.stdout));
        if attempt > 0 {
            assert!(read_from_cache(&out), "load {attempt}: {}", text(&out.stderr));
        }
    }
}
