//! Analysis tests over a small OpenAPI toolset written inline: each asserts what a user would see
//! (a diagnostic's code, its exact range, its message) for both dialects.

use std::path::Path;

use crate::config::{Config, DiagnosticsConfig};
use crate::diagnostic::Diagnostic;
use crate::toolset::Catalog;

const SPEC: &str = r##"
openapi: 3.0.0
info: {title: Films, version: "1"}
servers: [{url: "https://films.example/3"}]
components:
  securitySchemes:
    key: {type: apiKey, in: query, name: api_key}
  schemas:
    Person:
      type: object
      properties:
        id: {type: integer}
        name: {type: string}
        known_for:
          type: array
          items: {type: object, properties: {title: {type: string}}}
paths:
  /search/person:
    get:
      parameters:
        - {name: query, in: query, required: true, schema: {type: string}}
        - {name: page, in: query, schema: {type: integer}}
        - {name: sort, in: query, schema: {type: string, enum: [asc, desc]}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  page: {type: integer}
                  results: {type: array, items: {$ref: "#/components/schemas/Person"}}
  /person/{person_id}:
    parameters:
      - {name: person_id, in: path, required: true, schema: {type: integer}}
    get:
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {$ref: "#/components/schemas/Person"}}}
  /person/{person_id}/movie_credits:
    parameters:
      - {name: person_id, in: path, required: true, schema: {type: integer}}
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  crew:
                    type: array
                    items: {type: object, properties: {job: {type: string}, title: {type: string}}}
  /person/popular:
    get:
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {results: {type: array}}}}}}
"##;

fn catalog() -> (tempfile::TempDir, Config, Catalog) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("protocols")).unwrap();
    std::fs::write(dir.path().join("protocols/films.yaml"), SPEC).unwrap();
    let config = Config::load(dir.path(), None);
    let catalog = crate::toolset::loader::load(&config);
    assert!(catalog.diagnostics.is_empty(), "{:?}", catalog.diagnostics);
    (dir, config, catalog)
}

fn check(program: &str) -> Vec<Diagnostic> {
    let (_dir, _config, catalog) = catalog();
    let tree = super::parse::parse(program);
    super::analyze(Path::new("p.py"), program, &tree, &catalog, &DiagnosticsConfig::default()).diagnostics
}

/// (code, the text the range covers) for each diagnostic.
fn spans(program: &str) -> Vec<(&'static str, String)> {
    check(program).into_iter().map(|d| (d.code, program[d.range.start..d.range.end].to_string())).collect()
}

#[test]
fn a_correct_module_program_has_no_diagnostics() {
    let program = r#"
from chainsmith.tools import films
found = films.search_person(query="Sofia Coppola", page=1, sort="asc")
pid = found["results"][0]["id"]
credits = films.person_movie_credits(person_id=pid)
jobs = [c["job"] for c in credits["crew"] if c.get("title")]
for person in found["results"]:
    if person["known_for"]:
        print(person["known_for"][0]["title"], person.get("name"))
def again(q):
    with open("x") as f:
        try:
            return films.person(person_id=found["results"][-1]["id"])["name"]
        except KeyError:
            return None
print(len(jobs))
"#;
    assert_eq!(check(program), vec![]);
}

#[test]
fn module_dialect_mistakes_are_located() {
    let program = r#"
from chainsmith.tools import films, flims
found = films.search_persn(query="x")
a = films.search_person(querry="x", page="two", sort="up")
b = films.search_person(query="x")
c = b["result"]
d = b[0]
e = b["results"]["id"]
f = films.person_movie_credits(person_id=b["results"][0]["name"])
g = films.person(person_id=b["results"][0]["id"])["known_for"][0]["titel"]
"#;
    assert_eq!(
        spans(program),
        vec![
            ("unknown-toolset", "flims".into()),
            ("unknown-tool", "search_persn".into()),
            ("missing-argument", "search_person".into()),
            ("unknown-argument", "querry".into()),
            ("wrong-type", "\"two\"".into()),
            ("not-in-enum", "\"up\"".into()),
            ("unknown-key", "\"result\"".into()),
            ("bad-index", "0".into()),
            ("bad-index", "\"id\"".into()),
            ("argument-type-mismatch", "b[\"results\"][0][\"name\"]".into()),
            ("unknown-key", "\"titel\"".into()),
        ]
    );
    let diags = check(program);
    assert!(diags[0].message.contains("did you mean `films`"), "{}", diags[0].message);
    assert!(diags[1].message.contains("did you mean `search_person`"));
    assert_eq!(diags[1].suggestions[0].replacement, "search_person");
    assert!(diags[3].message.contains("did you mean `query`"));
    assert_eq!(diags[2].suggestions[0].replacement, ", query=...");
}

#[test]
fn a_value_close_to_an_allowed_one_gets_a_did_you_mean_and_its_quick_fix() {
    let program = "from chainsmith.tools import films\na = films.search_person(query=\"x\", sort=\"dsc\")\nb = films.search_person(query=\"x\", sort='ascc')\nc = films.search_person(query=\"x\", sort=\"up\")\n";
    let diags = check(program);
    let fixes: Vec<(&str, &str, &str)> = diags
        .iter()
        .filter(|d| d.code == "not-in-enum")
        .map(|d| {
            let fix = d.suggestions.first();
            (
                fix.map_or("", |f| &program[f.range.start..f.range.end]),
                fix.map_or("", |f| f.replacement.as_str()),
                d.message.rsplit("; ").next().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        fixes,
        vec![
            ("\"dsc\"", "\"desc\"", "did you mean \"desc\"?"),
            ("'ascc'", "'asc'", "did you mean \"asc\"?"),
            // Nothing close: the allowed values are listed, no guess.
            ("", "", "`sort`: \"up\" is not one of \"asc\", \"desc\""),
        ]
    );
}

#[test]
fn http_dialect_matches_urls_and_checks_them() {
    let program = r#"
import requests
BASE = "https://films.example/3"
KEY = "k"
s = requests.Session()
found = s.get(f"{BASE}/search/person", params={"api_key": KEY, "query": "Sofia"}).json()
pid = found["results"][0]["id"]
credits = requests.get(BASE + "/person/" + str(pid) + "/movie_credits", params={"api_key": KEY}).json()
print([c["job"] for c in credits["crew"]])
popular = requests.get("https://films.example/3/person/popular?api_key=k").json()
print(popular["results"])
url = f"{BASE}/person/{pid}"
person = requests.get(url).json()
print(person["name"])
"#;
    assert_eq!(check(program), vec![]);
    let bad = r#"
import requests as rq
BASE = "https://films.example/3"
a = rq.get(BASE + "/search/persons", params={"query": "x"})
b = rq.get(f"{BASE}/search/person", params={"querry": "x"}).json()
c = rq.get(f"{BASE}/person/abc").json()
d = rq.post(f"{BASE}/person/popular")
e = rq.get(f"{BASE}/search/person?query=x").json()["results"][0]["nam"]
f = rq.get("https://elsewhere.example/x").json()["anything"]
"#;
    assert_eq!(
        spans(bad),
        vec![
            ("unknown-endpoint", "/search/persons".into()),
            ("missing-argument", "f\"{BASE}/search/person\"".into()),
            ("unknown-argument", "\"querry\"".into()),
            ("wrong-type", "abc".into()),
            ("unknown-endpoint", "/person/popular".into()),
            ("unknown-key", "\"nam\"".into()),
        ]
    );
    let diags = check(bad);
    assert!(diags[0].message.contains("did you mean /search/person"), "{}", diags[0].message);
    // The quick fix respells the path where it is written.
    let fix = &diags[0].suggestions[0];
    assert_eq!((fix.title.as_str(), fix.replacement.as_str()), ("Change to /search/person", "/search/person"));
    assert_eq!(&bad[fix.range.start..fix.range.end], "/search/persons");
    assert!(diags[4].message.contains("that path has GET"), "{}", diags[4].message);
}

#[test]
fn an_unknown_endpoint_is_respelt_where_it_is_written_keeping_its_interpolations() {
    let fixes = |program: &str| -> Vec<(String, String)> {
        check(program)
            .iter()
            .filter(|d| d.code == "unknown-endpoint")
            .flat_map(|d| &d.suggestions)
            .map(|s| (program[s.range.start..s.range.end].to_string(), s.replacement.clone()))
            .collect()
    };
    let base = "import requests\nBASE = \"https://films.example/3\"\n";
    let f_string = format!("{base}pid = 1\nc = requests.get(f\"{{BASE}}/person/{{pid}}/movie_credit\").json()\n");
    assert_eq!(
        fixes(&f_string),
        vec![("/person/{pid}/movie_credit".to_string(), "/person/{pid}/movie_credits".to_string())]
    );
    let hole_last = format!("{base}pid = 1\nc = requests.get(f\"{{BASE}}/persons/{{pid}}?language=en\").json()\n");
    assert_eq!(fixes(&hole_last), vec![("/persons/{pid}".to_string(), "/person/{pid}".to_string())]);
    // Built with `+`, the path's pieces are not one text to respell: the message says, no fix.
    let joined =
        format!("{base}pid = 1\nc = requests.get(BASE + \"/person/\" + str(pid) + \"/movie_credit\").json()\n");
    let diags = check(&joined);
    let d = diags.iter().find(|d| d.code == "unknown-endpoint").expect("an unknown-endpoint diagnostic");
    assert!(d.message.contains("did you mean /person/{person_id}/movie_credits"), "{}", d.message);
    assert!(d.suggestions.is_empty(), "{:?}", d.suggestions);
    // Spread over two statements, neither is the path's one text: no fix.
    let spread = format!(
        "{base}pid = 1\nurl = f\"{{BASE}}/person/{{pid}}\"\nc = requests.get(url + \"/movie_credit\").json()\n"
    );
    let diags = check(&spread);
    let d = diags.iter().find(|d| d.code == "unknown-endpoint").expect("an unknown-endpoint diagnostic");
    assert!(d.suggestions.is_empty(), "{:?}", d.suggestions);
}

#[test]
fn suppressions_and_configured_severities() {
    let (_dir, _config, catalog) = catalog();
    let program = "from chainsmith.tools import films\nb = films.search_person(query=\"x\")\nc = b[\"nope\"]  # chainsmith: ignore[unknown-key]\nd = b[\"nope2\"]\n";
    let tree = super::parse::parse(program);
    let mut config = DiagnosticsConfig::default();
    let diags = super::analyze(Path::new("p.py"), program, &tree, &catalog, &config).diagnostics;
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].severity, crate::diagnostic::Severity::Warning);
    config.severity.insert("unknown-key".into(), Some(crate::diagnostic::Severity::Error));
    let diags = super::analyze(Path::new("p.py"), program, &tree, &catalog, &config).diagnostics;
    assert_eq!(diags[0].severity, crate::diagnostic::Severity::Error);
    config.severity.insert("unknown-key".into(), None);
    assert!(super::analyze(Path::new("p.py"), program, &tree, &catalog, &config).diagnostics.is_empty());
}

#[test]
fn calls_record_arguments_targets_and_lines() {
    let (_dir, _config, catalog) = catalog();
    let program = "import chainsmith.tools.films as f\nx = f.search_person(query=\"a\")\ny = f.person_movie_credits(person_id=x[\"results\"][0][\"id\"])\n";
    let tree = super::parse::parse(program);
    let analysis = super::analyze(Path::new("p.py"), program, &tree, &catalog, &DiagnosticsConfig::default());
    assert!(analysis.diagnostics.is_empty(), "{:?}", analysis.diagnostics);
    let names: Vec<(&str, Option<&str>, usize)> =
        analysis.calls.iter().map(|c| (c.name.as_str(), c.target.as_deref(), c.line)).collect();
    assert_eq!(names, vec![("search_person", Some("x"), 1), ("person_movie_credits", Some("y"), 2)]);
    assert_eq!(analysis.calls[1].args[0].name, "person_id");
    let at = program.find("\"id\"").unwrap() + 1;
    let access = analysis.access_at(at).unwrap();
    assert_eq!(access.key, super::Key::Str("id".into()));
    assert_eq!(crate::toolset::schema::types(&catalog, access.result.unwrap()), vec!["integer"]);
}

mod ide {
    use super::*;
    use crate::analysis::ide::{self, CompletionKind};

    /// Completion labels at the `|` in `program` (the bar is removed first).
    fn labels_at(program: &str) -> (Vec<String>, Vec<ide::Completion>) {
        let (_dir, _config, catalog) = catalog();
        let offset = program.find('|').unwrap();
        let text = program.replacen('|', "", 1);
        let tree = crate::analysis::parse::parse(&text);
        let c = ide::complete(Path::new("p.py"), &text, &tree, offset, &catalog, &DiagnosticsConfig::default());
        (c.items.iter().map(|i| i.label.clone()).collect(), c.items)
    }

    #[test]
    fn toolsets_and_tools() {
        assert_eq!(labels_at("from chainsmith.tools import fi|").0, vec!["films"]);
        let (labels, items) = labels_at("from chainsmith.tools import films\nfilms.sea|");
        assert_eq!(labels, vec!["search_person"]);
        assert_eq!(items[0].insert_text, "search_person(query=\"${1}\")$0", "a string is typed inside quotes");
        assert!(items[0].is_snippet);
        assert_eq!(items[0].tool_id.as_deref(), Some("films.search_person"));
        let (labels, _) = labels_at("import chainsmith.tools.films as f\nx = f.|");
        assert_eq!(labels.len(), 4);
    }

    #[test]
    fn arguments_and_enum_values() {
        let (labels, items) = labels_at("from chainsmith.tools import films\nfilms.search_person(|)");
        assert_eq!(labels, vec!["query=", "page=", "sort="]);
        assert_eq!(items[0].sort_text, "0_query");
        assert!(items[0].detail.contains("required"));
        let (labels, _) = labels_at("from chainsmith.tools import films\nfilms.search_person(query=\"x\", |");
        assert_eq!(labels, vec!["page=", "sort="]);
        let (labels, _) = labels_at("from chainsmith.tools import films\nfilms.search_person(query=\"x\", sort=|");
        assert_eq!(labels, vec!["\"asc\"", "\"desc\""]);
        // A half-typed name is a positional argument to the analysis; it still completes.
        let (labels, _) = labels_at("from chainsmith.tools import films\nfilms.search_person(qu|)");
        assert_eq!(labels, vec!["query="]);
        let (labels, _) = labels_at("from chainsmith.tools import films\nfilms.search_person(query=\"x\", pa|)");
        assert_eq!(labels, vec!["page="]);
    }

    #[test]
    fn completion_after_a_non_ascii_character() {
        // Found by the fuzzer: a multi-byte character just before the word or the object.
        for program in
            ["KEY =\u{fffd}os.|", "x = \u{e9}films.|", "films.search_person(query=\u{fffd}|", "print(\u{fffd}x[\"|"]
        {
            labels_at(program);
        }
        assert_eq!(labels_at("import chainsmith.tools.films as f\n\u{e9} = f.sea|").0, vec!["search_person"]);
    }

    #[test]
    fn endpoints_after_filled_path_segments_once_per_path() {
        let base = "import requests\npid = 1\n";
        let (labels, items) =
            labels_at(&format!("{base}requests.get(f\"https://films.example/3/person/{{pid}}/mo|\")"));
        assert_eq!(labels, vec!["/person/{person_id}/movie_credits"]);
        assert_eq!(items[0].insert_text, "movie_credits", "the program's own segments stay");
        assert_eq!(items[0].detail, "GET · person_movie_credits");
        let (labels, items) = labels_at(&format!("{base}requests.get(\"https://films.example/3/pe|\")"));
        assert_eq!(labels, vec!["/person/popular", "/person/{person_id}", "/person/{person_id}/movie_credits"]);
        assert_eq!(items[1].insert_text, "person/{person_id}");
        let (labels, _) = labels_at(&format!("{base}requests.get(f\"https://films.example/3/person/{{pid}}/|\")"));
        assert_eq!(labels, vec!["/person/{person_id}/movie_credits"]);
        let (labels, _) = labels_at(&format!("{base}requests.get(\"https://films.example/3/person/12|\")"));
        assert_eq!(labels, Vec::<String>::new(), "a value being typed into a parameter segment gets no template");
    }

    #[test]
    fn keys_on_a_half_typed_line_after_another_broken_line() {
        let base = "from chainsmith.tools import films\nx = films.search_person(query=\"a\")\n";
        for broken in ["y = x[\"resu\n", "y = films.search_person(query=\n", "for p in x[\"results\"]\n", "y = (x\n"] {
            let (labels, _) = labels_at(&format!("{base}{broken}print(x[\"|"));
            assert_eq!(labels, vec!["page", "results"], "after {broken:?}");
        }
        let in_loop = format!("{base}for p in x[\"results\"]:\n    y = p[\"na\n    print(p[\"|");
        assert_eq!(labels_at(&in_loop).0, vec!["id", "name", "known_for"]);
    }

    #[test]
    fn response_keys_at_any_depth_on_half_typed_lines() {
        let base = "from chainsmith.tools import films\nx = films.search_person(query=\"a\")\n";
        let (labels, items) = labels_at(&format!("{base}print(x[\"|"));
        assert_eq!(labels, vec!["page", "results"]);
        assert_eq!(items[1].kind, CompletionKind::Key);
        assert_eq!(items[1].detail, "array of object");
        let (labels, _) = labels_at(&format!("{base}for p in x[\"results\"]:\n    print(p[\"kn|\"])\n"));
        assert_eq!(labels, vec!["known_for"]);
        let (labels, items) = labels_at(&format!("{base}y = x[\"results\"][0][|"));
        assert_eq!(labels, vec!["id", "name", "known_for"]);
        assert_eq!(items[0].insert_text, "\"id\"");
        let (labels, _) = labels_at(&format!("{base}z = x.get('|"));
        assert_eq!(labels, vec!["page", "results"]);
        // An unfinished string followed by lines with quotes: the parser must not pair them up.
        let (labels, _) =
            labels_at(&format!("{base}w = x[\"|\nprint(x[\"page\"])\nv = films.search_person(query=\"b\")\n"));
        assert_eq!(labels, vec!["page", "results"]);
    }

    #[test]
    fn endpoint_paths_inside_url_strings() {
        let program = "import requests\nBASE = \"https://films.example/3\"\nr = requests.get(f\"{BASE}/person/|";
        let (labels, _) = labels_at(program);
        assert_eq!(labels, vec!["/person/popular", "/person/{person_id}", "/person/{person_id}/movie_credits"]);
    }

    #[test]
    fn hover_signature_and_definition() {
        let (_dir, _config, catalog) = catalog();
        let text = "from chainsmith.tools import films\nx = films.search_person(query=\"a\", page=2)\nprint(x[\"results\"][0][\"id\"])\n";
        let tree = crate::analysis::parse::parse(text);
        let cfg = DiagnosticsConfig::default();
        let at = |needle: &str| text.find(needle).unwrap() + 1;
        let h = ide::hover(Path::new("p.py"), text, &tree, at("search_person"), &catalog, &cfg).unwrap();
        assert!(h.markdown.contains("**films.search_person**"), "{}", h.markdown);
        assert!(h.markdown.contains("`query`: string (query)"), "{}", h.markdown);
        assert!(h.markdown.contains("results: array of object"), "{}", h.markdown);
        let h = ide::hover(Path::new("p.py"), text, &tree, at("\"results\""), &catalog, &cfg).unwrap();
        assert!(h.markdown.starts_with("**\"results\"**: array of object"), "{}", h.markdown);
        let h = ide::hover(Path::new("p.py"), text, &tree, at("\"id\""), &catalog, &cfg).unwrap();
        assert!(h.markdown.starts_with("**\"id\"**: integer"), "{}", h.markdown);
        let h = ide::hover(Path::new("p.py"), text, &tree, at("page="), &catalog, &cfg).unwrap();
        assert!(h.markdown.starts_with("`page`: integer — query"), "{}", h.markdown);

        let s = ide::signature_help(Path::new("p.py"), text, &tree, at("2)"), &catalog, &cfg, None).unwrap();
        assert!(s.label.starts_with("search_person(query: string, page: integer = …"), "{}", s.label);
        assert_eq!(s.active_parameter, Some(1));

        let whole = crate::analysis::analyze(Path::new("p.py"), text, &tree, &catalog, &cfg);
        let d = ide::definition(&whole, at("search_person"), &catalog).unwrap();
        assert!(d.file.ends_with("protocols/films.yaml"));
        let spec = &catalog.texts[&d.file];
        assert!(spec[d.range.start..].starts_with("parameters:"), "{:?}", &spec[d.range.start..d.range.start + 20]);
        let d2 = ide::definition(&whole, at("\"id\""), &catalog).unwrap();
        assert_eq!(d, d2);

        let symbols = ide::document_symbols(&whole, text, &tree);
        assert_eq!(symbols[0].name, "x = films.search_person");
        assert_eq!(ide::workspace_symbols(&catalog, "person", 10).len(), 4);
    }
}

#[test]
fn signature_help_moves_to_the_next_open_parameter() {
    let (_dir, _config, catalog) = catalog();
    let text = "from chainsmith.tools import films\nx = films.search_person(query=\"a\", )\n";
    let tree = crate::analysis::parse::parse(text);
    let at = text.find(", )").unwrap() + 2;
    let s = crate::analysis::ide::signature_help(
        Path::new("p.py"),
        text,
        &tree,
        at,
        &catalog,
        &DiagnosticsConfig::default(),
        None,
    )
    .unwrap();
    assert_eq!(s.active_parameter, Some(1), "page, the first optional parameter not given");
}

/// The short-statement shortcut of the depth guard holds: no statement shorter than half the
/// limit nests past it, however its bytes are spent (operators, brackets, keywords, broken code).
#[test]
fn short_statements_cannot_nest_past_the_limit() {
    use crate::analysis::flow::{MAX_NESTING, nesting_exceeds};
    let budget = MAX_NESTING / 2 - 1;
    let fill = |unit: &str, close: &str| {
        let n = (budget - 1) / (unit.len() + close.len());
        format!("{}x{}", unit.repeat(n), close.repeat(n))
    };
    let samples = [
        fill("-", ""),
        fill("~", ""),
        fill("(", ")"),
        fill("[", "]"),
        fill("{", "}"),
        fill("not ", ""),
        fill("await ", ""),
        fill("lambda:", ""),
        fill("f(", ")"),
        format!("x{}", "[0]".repeat((budget - 1) / 3)),
        format!("x{}", ".a".repeat((budget - 1) / 2)),
        format!("x{}", "()".repeat((budget - 1) / 2)),
        "(".repeat(budget),
        "[".repeat(budget),
        "-".repeat(budget),
        "if ".repeat(budget / 3),
        format!("{}x", "yield ".repeat(budget / 6)),
        "x = ".repeat(budget / 4) + "1",
    ];
    for sample in samples {
        assert!(sample.len() < MAX_NESTING / 2, "{}", sample.len());
        let tree = super::parse::parse(&sample);
        let root = tree.root_node();
        let mut cursor = root.walk();
        for statement in root.children(&mut cursor) {
            assert!(!nesting_exceeds(statement, MAX_NESTING), "{sample}");
        }
        assert!(!nesting_exceeds(root, MAX_NESTING + 2), "{sample}");
    }
}

/// A positional argument is an error whose fix names the parameter left for it (required ones
/// first), and it counts as that parameter: the call is not also missing it, and its value is
/// checked against it.
#[test]
fn a_positional_argument_is_taken_as_the_parameter_left_for_it() {
    let program = r#"
from chainsmith.tools import films
found = films.search_person(query="x")
pid = found["results"][0]["id"]
credits = films.person_movie_credits(pid)
wrong = films.person_movie_credits(found["results"][0]["name"])
both = films.search_person("x", page=2)
extra = films.person(pid, 3)
generated = films.person(p for p in [1])
"#;
    assert_eq!(
        spans(program),
        vec![
            ("positional-argument", "pid".into()),
            ("positional-argument", "found[\"results\"][0][\"name\"]".into()),
            ("argument-type-mismatch", "found[\"results\"][0][\"name\"]".into()),
            ("positional-argument", "\"x\"".into()),
            ("positional-argument", "pid".into()),
            ("positional-argument", "3".into()),
            ("missing-argument", "person".into()),
            ("positional-argument", "(p for p in [1])".into()),
        ]
    );
    let diags = check(program);
    assert!(diags[0].message.contains("taken as `person_id`"), "{}", diags[0].message);
    assert_eq!(diags[0].suggestions[0].replacement, "person_id=");
    assert_eq!(diags[3].suggestions[0].replacement, "query=");
    // No required parameter is left for the second positional of `person`: reported, without a fix.
    assert!(diags[5].suggestions.is_empty(), "{:?}", diags[5]);
    assert!(diags[7].suggestions.is_empty(), "{:?}", diags[7]);
}

/// Incremental re-analysis (`analyze_after`) against a whole analysis of the same text, over
/// random one-character edits of real chains: the same diagnostics, calls, accesses, URL sites and
/// imports, and the same hovers and completions answered from each.
mod incremental {
    use std::path::{Path, PathBuf};

    use crate::analysis::parse::ParsedText;
    use crate::analysis::{Analysis, analyze, analyze_after, ide};
    use crate::config::Config;
    use crate::text::ByteRange;
    use crate::toolset::Catalog;

    /// A small deterministic generator (xorshift64*): the edits are the same on every run.
    struct Edits(u64);

    impl Edits {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
        }

        /// A one-character edit of `text`: a character typed or one deleted, anywhere.
        fn next(&mut self, text: &str) -> (ByteRange, String) {
            const TYPED: &[&str] =
                &["a", "_", "1", " ", "\n", "    ", "\"", "'", "(", ")", "[", "]", ":", ",", "=", "#", ".", "{"];
            let mut at = self.below(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if self.below(3) == 0 && at < text.len() {
                let end = at + text[at..].chars().next().map_or(0, char::len_utf8);
                (ByteRange::new(at, end), String::new())
            } else {
                (ByteRange::new(at, at), TYPED[self.below(TYPED.len())].to_string())
            }
        }
    }

    /// What a user sees of an analysis, with positions.
    fn seen(a: &Analysis<'_>) -> String {
        let calls: Vec<String> = a
            .calls
            .iter()
            .map(|c| {
                let args: Vec<String> = c
                    .args
                    .iter()
                    .map(|a| format!("{}@{:?}={:?}/{:?}", a.name, a.name_range, a.value_range, a.location))
                    .collect();
                format!(
                    "{}:{} tool={:?} {:?} name@{:?} args@{:?} {:?} target={:?} stmt@{:?} line {}",
                    c.toolset,
                    c.name,
                    c.tool.map(|t| t.id()),
                    c.dialect,
                    c.name_range,
                    c.args_range,
                    args,
                    c.target,
                    c.statement_range,
                    c.line
                )
            })
            .collect();
        let accesses: Vec<String> = a
            .accesses
            .iter()
            .map(|x| {
                format!(
                    "{:?} key {:?}@{:?} in {:p} gives {:?} of call {}",
                    x.range,
                    x.key,
                    x.key_range,
                    x.container,
                    x.result.map(|r| r as *const _),
                    x.call
                )
            })
            .collect();
        format!("{:#?}\n{calls:#?}\n{accesses:#?}\n{:?}\n{:?}", a.diagnostics, a.urls, a.imports)
    }

    fn programs(root: &Path, dirs: &[&str]) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = dirs.iter().flat_map(|d| crate::analysis::python_files(&root.join(d))).collect();
        files.sort();
        assert!(!files.is_empty(), "no programs under {}", root.display());
        files
    }

    /// Edits each program `edits` times (each edit checked, then undone half of the time and
    /// checked again), comparing the incremental analysis with a whole one after every change.
    fn compare_under_edits(root: &Path, dirs: &[&str], edits: usize) {
        let config = Config::load(root, None);
        let catalog: Catalog = crate::toolset::loader::load(&config);
        let mut random = Edits(0x9e37_79b9_7f4a_7c15);
        for file in programs(root, dirs) {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut parsed = ParsedText::new(text);
            let mut previous =
                analyze_after(&file, &parsed.text, &parsed.tree, &catalog, &config.diagnostics, None, None);
            for _ in 0..edits {
                let (range, typed) = random.next(&parsed.text);
                let removed = parsed.text[range.start..range.end].to_string();
                let mut changes = vec![(range, typed.clone())];
                if random.below(2) == 0 {
                    changes.push((ByteRange::new(range.start, range.start + typed.len()), removed));
                }
                for (range, replacement) in changes {
                    parsed.edit(range, &replacement);
                    let text = &parsed.text;
                    let after =
                        analyze_after(&file, text, &parsed.tree, &catalog, &config.diagnostics, Some(&previous), None);
                    let whole = analyze(&file, text, &parsed.tree, &catalog, &config.diagnostics);
                    assert_eq!(seen(&after), seen(&whole), "{} after an edit at {range:?}:\n{text}", file.display());
                    for _ in 0..4 {
                        let mut offset = random.below(text.len() + 1);
                        while !text.is_char_boundary(offset) {
                            offset -= 1;
                        }
                        assert_eq!(
                            ide::hover_in(&after, offset, &catalog),
                            ide::hover_in(&whole, offset, &catalog),
                            "hover at {offset} in {}:\n{text}",
                            file.display()
                        );
                        let complete = |a: &Analysis<'_>| {
                            ide::complete_with(
                                &file,
                                text,
                                &parsed.tree,
                                offset,
                                &catalog,
                                &config.diagnostics,
                                Some(a),
                            )
                        };
                        assert_eq!(
                            complete(&after),
                            complete(&whole),
                            "completion at {offset} in {}:\n{text}",
                            file.display()
                        );
                    }
                    previous = after;
                }
            }
        }
    }

    fn repository(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
    }

    #[test]
    fn the_tmdb_chains_analyse_the_same_after_random_edits() {
        compare_under_edits(&repository("examples/tmdb"), &["chains", "mistakes"], 150);
    }

    #[test]
    fn the_pattern_programs_analyse_the_same_after_random_edits() {
        compare_under_edits(&repository("tests/fixtures/patterns"), &["correct", "planted"], 150);
    }

    /// A long chain: an edit of one call line walks that statement again, not the chain.
    #[test]
    fn an_edit_walks_only_the_statements_it_changes() {
        let (_dir, config, catalog) = super::catalog();
        let mut program = String::from("from chainsmith.tools import films\n");
        for n in 0..300 {
            program.push_str(&format!("r{n} = films.search_person(query=\"q{n}\")\nprint(r{n}[\"resuls\"])\n"));
        }
        let file = Path::new("p.py");
        let mut parsed = ParsedText::new(program.clone());
        let first = analyze_after(file, &parsed.text, &parsed.tree, &catalog, &config.diagnostics, None, None);
        assert_eq!(first.memo.as_ref().unwrap().walked(), 601);
        let at = program.find("r150 = ").unwrap() + "r150 = films.search_person(".len();
        parsed.edit(ByteRange::new(at, at), " ");
        let after = analyze_after(file, &parsed.text, &parsed.tree, &catalog, &config.diagnostics, Some(&first), None);
        assert_eq!(after.memo.as_ref().unwrap().walked(), 1);
        assert_eq!(after.diagnostics.len(), 300, "{:?}", after.diagnostics);
        // The edit renames the variable the next line reads: that line is walked again too.
        let at = program.find("r150 = ").unwrap() + 3;
        parsed.edit(ByteRange::new(at, at), "x");
        let renamed =
            analyze_after(file, &parsed.text, &parsed.tree, &catalog, &config.diagnostics, Some(&after), None);
        assert_eq!(renamed.memo.as_ref().unwrap().walked(), 2);
        assert_eq!(renamed.diagnostics.len(), 299);
        let whole = analyze(file, &parsed.text, &parsed.tree, &catalog, &config.diagnostics);
        assert_eq!(seen(&renamed), seen(&whole));
    }
}

/// What a message quotes of a protocol is cut short, and made once per call or access: a schema
/// key or a parameter name may be a megabyte, a tool may require thousands of parameters, and a
/// program may read thousands of unknown keys (2,000 against a 1 MB key took `check` 33 s and
/// 2.2 GB). Each message stays a line; a fix larger than a user would type is not offered.
#[test]
fn messages_quote_the_protocol_cut_short() {
    let long_key = "k".repeat(100_000);
    let mut properties = serde_json::Map::new();
    properties.insert(long_key.clone(), serde_json::json!({"type": "string"}));
    let required: Vec<serde_json::Value> = (0..3000)
        .map(|n| serde_json::json!({"name": format!("p{n}"), "in": "query", "required": true, "schema": {"type": "string"}}))
        .collect();
    let spec = serde_json::json!({"openapi": "3.0.0", "info": {"title": "Big", "version": "1"},
        "servers": [{"url": "https://big.example"}],
        "paths": {"/x": {"get": {"operationId": "x", "parameters": required, "responses": {"200": {"description": "ok",
            "content": {"application/json": {"schema": {"type": "object", "properties": properties}}}}}}}}});
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("protocols")).unwrap();
    std::fs::write(dir.path().join("protocols/big.json"), spec.to_string()).unwrap();
    let catalog = crate::toolset::loader::load(&Config::load(dir.path(), None));
    assert!(catalog.diagnostics.is_empty(), "{:?}", catalog.diagnostics);
    let program = "from chainsmith.tools import big\nr = big.x()\nv = r[\"zz\"]\nw = r[\"kkk\"]\n";
    let tree = super::parse::parse(program);
    let diags = super::analyze(Path::new("p.py"), program, &tree, &catalog, &DiagnosticsConfig::default()).diagnostics;
    let codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["missing-argument", "unknown-key", "unknown-key"], "{diags:?}");
    assert!(
        diags.iter().all(|d| d.message.len() < 1000),
        "{:?}",
        diags.iter().map(|d| d.message.len()).collect::<Vec<_>>()
    );
    assert!(diags[0].message.contains("`p0`, `p1`") && diags[0].message.ends_with(", …"), "{}", diags[0].message);
    assert!(diags[0].suggestions.is_empty(), "3,000 arguments are not inserted as a fix");
    assert!(diags[1].message.contains(&format!("(keys: {}…)", "k".repeat(199))), "{}", diags[1].message);
}
