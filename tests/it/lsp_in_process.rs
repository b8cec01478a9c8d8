//! The language server in process, spoken to in real LSP messages through the test client
//! (`tests/support/lsp.rs`): the server runs on one end of an in-memory pipe, so the real
//! Content-Length codec is exercised, and the client answers the server's own requests
//! (`workspace/configuration`, `client/registerCapability`).
//!
//! Each test works in its own temporary copy of the TMDB example workspace.

use std::path::{Path, PathBuf};

use chainsmith::server::{FileWatching, Status, StatusNotification};
use serde_json::{Value, json};
use tower_lsp_server::lsp_types::notification::{DidChangeConfiguration, LogMessage, ShowMessage};
use tower_lsp_server::lsp_types::request::{
    ApplyWorkspaceEdit, Completion, RegisterCapability, ResolveCompletionItem, WorkspaceConfiguration,
};
use tower_lsp_server::lsp_types::{self as lsp, NumberOrString, Uri};

use crate::support::lsp::{Builder, ServerRequest, TestClient, apply_edits, at, edit, full_text, pos, range};

const PROGRAM: &str = r#"from chainsmith.tools import tmdb

found = tmdb.search_person(query="Sofia Coppola")
print("é😀", tmdb.search_persn(query="Sofia"))
no_query = tmdb.search_person(page=1)
first_id = found["result"][0]["id"]
"#;

fn example(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb").join(rel)
}

/// A server on a fresh copy of the TMDB workspace (its chainsmith.toml and spec).
fn tmdb() -> Builder {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("specs")).unwrap();
    std::fs::copy(example("chainsmith.toml"), workspace.path().join("chainsmith.toml")).unwrap();
    std::fs::copy(example("specs/tmdb_oas.json"), workspace.path().join("specs/tmdb_oas.json")).unwrap();
    TestClient::in_process().workspace(workspace).capabilities(json!({}))
}

fn utf16_client() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-16"]},
        "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}},
        "textDocument": {
            "completion": {"completionItem": {"snippetSupport": true}},
            "signatureHelp": {"signatureInformation": {"parameterInformation": {"labelOffsetSupport": true}}},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
        },
    })
}

/// `line:start-line:end severity code (source)` per diagnostic, for compact snapshots.
fn summary(params: &lsp::PublishDiagnosticsParams) -> Vec<String> {
    params
        .diagnostics
        .iter()
        .map(|d| {
            let r = d.range;
            format!(
                "{}:{}-{}:{} severity {} {} ({})",
                r.start.line,
                r.start.character,
                r.end.line,
                r.end.character,
                json!(d.severity),
                code(d).unwrap_or("<no code>"),
                d.source.as_deref().unwrap_or("<no source>"),
            )
        })
        .collect()
}

fn code(diagnostic: &lsp::Diagnostic) -> Option<&str> {
    match &diagnostic.code {
        Some(NumberOrString::String(code)) => Some(code),
        _ => None,
    }
}

fn codes(params: &lsp::PublishDiagnosticsParams) -> Vec<String> {
    params.diagnostics.iter().map(|d| code(d).unwrap_or("").to_string()).collect()
}

fn has_diagnostics(params: &lsp::PublishDiagnosticsParams) -> bool {
    !params.diagnostics.is_empty()
}

fn tools(count: usize) -> impl Fn(&Status) -> bool {
    move |s| s.tools == count
}

fn markdown(hover: &lsp::Hover) -> &str {
    match &hover.contents {
        lsp::HoverContents::Markup(lsp::MarkupContent { kind: lsp::MarkupKind::Markdown, value }) => value,
        other => panic!("not markdown: {other:?}"),
    }
}

#[test]
fn utf16_diagnostics_incremental_edits_and_quick_fixes() {
    let mut client = tmdb().capabilities(utf16_client()).start();
    // The handshake as a whole: encoding, incremental sync, trigger characters, code action kinds,
    // commands, the server's name.
    insta::assert_json_snapshot!(client.initialize_result(), @r#"
    {
      "capabilities": {
        "positionEncoding": "utf-16",
        "textDocumentSync": {
          "openClose": true,
          "change": 2,
          "save": {
            "includeText": false
          }
        },
        "hoverProvider": true,
        "completionProvider": {
          "resolveProvider": true,
          "triggerCharacters": [
            ".",
            "\"",
            "'",
            "(",
            ",",
            "[",
            "/",
            "="
          ]
        },
        "signatureHelpProvider": {
          "triggerCharacters": [
            "(",
            ","
          ]
        },
        "definitionProvider": true,
        "documentSymbolProvider": true,
        "workspaceSymbolProvider": true,
        "codeActionProvider": {
          "codeActionKinds": [
            "quickfix",
            "refactor.rewrite"
          ],
          "resolveProvider": false
        },
        "codeLensProvider": {
          "resolveProvider": false
        },
        "executeCommandProvider": {
          "commands": [
            "chainsmith.run",
            "chainsmith.generate",
            "chainsmith.fix",
            "chainsmith.plan",
            "chainsmith.probe",
            "chainsmith.probeAll",
            "chainsmith.graph",
            "chainsmith.trustWorkspace",
            "chainsmith.acceptObserved",
            "chainsmith.writeStubs"
          ]
        },
        "inlayHintProvider": true
      },
      "serverInfo": {
        "name": "chainsmith",
        "version": "0.1.0"
      }
    }
    "#);

    let status = client.await_notification::<StatusNotification>(|_| true);
    assert_eq!(status, Status { toolsets: 1, tools: 54, unprobed: 0, file_watching: FileWatching::Editor });
    let ServerRequest { params: registration, .. } = client.await_request::<RegisterCapability>(|_| true);
    let registered = &registration.registrations[0];
    assert_eq!(registered.method, "workspace/didChangeWatchedFiles");
    let options: lsp::DidChangeWatchedFilesRegistrationOptions =
        serde_json::from_value(registered.register_options.clone().unwrap()).unwrap();
    let globs: Vec<String> = options
        .watchers
        .iter()
        .map(|w| match &w.glob_pattern {
            lsp::GlobPattern::String(glob) => glob.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(globs, ["**/chainsmith.toml", "**/*.json", "**/*.yaml", "**/*.yml"]);

    let uri = client.open("programs/p.py", PROGRAM);
    let published = client.diagnostics(&uri, |p| p.version == Some(1));
    insta::assert_json_snapshot!(summary(&published), @r#"
    [
      "3:18-3:30 severity 1 unknown-tool (chainsmith)",
      "4:16-4:29 severity 1 missing-argument (chainsmith)",
      "5:17-5:25 severity 2 unknown-key (chainsmith)"
    ]
    "#);
    let unknown_tool = published.diagnostics[0].clone();
    assert!(unknown_tool.message.contains("search_persn"), "{unknown_tool:?}");
    assert!(unknown_tool.message.contains("search_person"), "{unknown_tool:?}");

    // The quick fix for the unknown tool, offered for a cursor inside its name.
    let actions = client.code_actions(&uri, range(pos(3, 20), pos(3, 20)), vec![unknown_tool]);
    assert_eq!(actions.len(), 1, "{actions:#?}");
    let lsp::CodeActionOrCommand::CodeAction(fix) = &actions[0] else { panic!("{actions:#?}") };
    assert_eq!(fix.title, "Change to `search_person`");
    assert_eq!(fix.kind, Some(lsp::CodeActionKind::QUICKFIX));
    assert_eq!(fix.is_preferred, Some(true));
    assert_eq!(code(&fix.diagnostics.as_ref().unwrap()[0]), Some("unknown-tool"));
    let edits = &fix.edit.as_ref().unwrap().changes.as_ref().unwrap()[&uri];
    assert_eq!(*edits, [lsp::TextEdit { range: range(pos(3, 18), pos(3, 30)), new_text: "search_person".into() }]);

    // Apply it as the editor would: a ranged (incremental) change. The unknown tool is gone, the
    // other mistakes stay where they were.
    client.change(&uri, 2, vec![edit(edits[0].range, "search_person")]);
    let published = client.diagnostics(&uri, |p| p.version == Some(2));
    insta::assert_json_snapshot!(summary(&published), @r#"
    [
      "4:16-4:29 severity 1 missing-argument (chainsmith)",
      "5:17-5:25 severity 2 unknown-key (chainsmith)"
    ]
    "#);

    // Two ranged changes in one notification (the second relative to the first's result), then a
    // full-text change.
    client.change(
        &uri,
        3,
        vec![edit(range(pos(5, 18), pos(5, 24)), "results"), edit(range(pos(4, 30), pos(4, 36)), "query=\"x\"")],
    );
    let published = client.diagnostics(&uri, |p| p.version == Some(3));
    assert_eq!(codes(&published), Vec::<String>::new(), "{published:#?}");
    client.change(&uri, 4, vec![full_text(PROGRAM)]);
    let published = client.diagnostics(&uri, |p| p.version == Some(4));
    assert_eq!(codes(&published), ["unknown-tool", "missing-argument", "unknown-key"]);

    // Closing clears the program's diagnostics.
    client.close(&uri);
    let cleared = client.diagnostics(&uri, |p| p.version.is_none());
    assert_eq!(cleared.diagnostics, []);

    client.shutdown();
}

#[test]
fn utf8_positions_when_the_client_offers_them() {
    let mut client = tmdb().capabilities(json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}})).start();
    assert_eq!(client.initialize_result()["capabilities"]["positionEncoding"], "utf-8");
    let uri = client.open("p.py", PROGRAM);
    let published = client.diagnostics(&uri, |p| p.version == Some(1));
    // `print("é😀", ` is 16 bytes but 13 UTF-16 code units: the unknown tool starts at byte 21.
    assert_eq!(summary(&published)[0], "3:21-3:33 severity 1 unknown-tool (chainsmith)");
    client.change(&uri, 2, vec![edit(range(pos(3, 21), pos(3, 33)), "search_person")]);
    let published = client.diagnostics(&uri, |p| p.version == Some(2));
    assert_eq!(codes(&published), ["missing-argument", "unknown-key"]);
    client.shutdown();
}

#[test]
fn settings_from_initialization_options_and_workspace_configuration() {
    let mut client = tmdb()
        .capabilities(
            json!({"workspace": {"configuration": true, "didChangeConfiguration": {"dynamicRegistration": false}}}),
        )
        .initialization_options(json!({"diagnostics": {"severity": {"unknown-key": "off"}}}))
        .configuration(json!({"diagnostics": {"severity": {"missing-argument": "hint"}}}))
        .start();
    let ServerRequest { params: asked, answer } = client.await_request::<WorkspaceConfiguration>(|_| true);
    assert_eq!(asked.items[0].section.as_deref(), Some("chainsmith"));
    assert_eq!(answer, Ok(json!([{"diagnostics": {"severity": {"missing-argument": "hint"}}}])));
    // Both layers apply: unknown-key off (initializationOptions), missing-argument a hint (pulled).
    let uri = client.open("p.py", PROGRAM);
    let published =
        client.diagnostics(&uri, |p| p.diagnostics.iter().any(|d| d.severity == Some(lsp::DiagnosticSeverity::HINT)));
    insta::assert_json_snapshot!(summary(&published), @r#"
    [
      "3:18-3:30 severity 1 unknown-tool (chainsmith)",
      "4:16-4:29 severity 4 missing-argument (chainsmith)"
    ]
    "#);

    // A settings change: the server pulls the section again and re-publishes.
    client.set_configuration(json!({"diagnostics": {"severity": {"unknown-tool": "warning"}}}));
    client.notify::<DidChangeConfiguration>(lsp::DidChangeConfigurationParams { settings: Value::Null });
    client.await_notification::<StatusNotification>(tools(54));
    let published = client
        .diagnostics(&uri, |p| p.diagnostics.iter().any(|d| d.severity == Some(lsp::DiagnosticSeverity::WARNING)));
    assert_eq!(
        summary(&published),
        ["3:18-3:30 severity 2 unknown-tool (chainsmith)", "4:16-4:29 severity 1 missing-argument (chainsmith)"]
    );
    client.shutdown();
}

/// Python language servers flag `from chainsmith.tools import tmdb` until stubs are in `typings/`:
/// the import offers to write them, once.
#[test]
fn the_import_offers_type_stubs_for_python_language_servers() {
    let mut client = tmdb().start();
    client.await_notification::<StatusNotification>(tools(54));
    let uri = client.open("p.py", PROGRAM);
    client.diagnostics(&uri, |p| p.version == Some(1));
    let on_import = |client: &mut TestClient| -> Vec<lsp::Command> {
        client
            .code_actions(&uri, range(pos(0, 0), pos(0, 0)), vec![])
            .into_iter()
            .filter_map(|a| match a {
                lsp::CodeActionOrCommand::CodeAction(a) => a.command,
                lsp::CodeActionOrCommand::Command(c) => Some(c),
            })
            .filter(|c| c.command == "chainsmith.writeStubs")
            .collect()
    };
    let offered = on_import(&mut client);
    assert_eq!(offered.len(), 1, "{offered:#?}");
    assert!(
        client
            .code_actions(&uri, range(pos(2, 0), pos(2, 0)), vec![])
            .iter()
            .all(|a| !format!("{a:?}").contains("writeStubs")),
        "offered on the import only"
    );
    let answer = client.execute_command(&offered[0].command, vec![], None).unwrap().unwrap();
    assert_eq!(answer["written"], 3, "{answer}");
    let stub = std::fs::read_to_string(client.path("typings/chainsmith/tools/tmdb.pyi")).unwrap();
    assert!(stub.contains("def search_person(*, query: str"), "{}", &stub[..500.min(stub.len())]);
    let said = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(said.message, "chainsmith: wrote 3 stub files to typings/");
    assert!(on_import(&mut client).is_empty(), "offered again once the stubs are there");
    client.shutdown();
}

#[test]
fn changes_on_disk_are_picked_up_without_the_editors_watchers() {
    // Neovim 0.11 on Linux offers no dynamic registration of file watchers: no
    // didChangeWatchedFiles will come, so the server watches the files itself.
    let mut client = tmdb().capabilities(json!({"general": {"positionEncodings": ["utf-16"]}})).start();
    let status = client.await_notification::<StatusNotification>(tools(54));
    assert_eq!(status.file_watching, FileWatching::Server);
    let uri = client.open("p.py", PROGRAM);
    client.diagnostics(&uri, |p| p.version == Some(1));
    let spec = client.path("specs/tmdb_oas.json");
    let spec_uri = client.uri("specs/tmdb_oas.json");
    let original = std::fs::read_to_string(&spec).unwrap();

    std::fs::write(&spec, "{\n  \"openapi\": \"3.0.0\",\n  \"paths\": {\n").unwrap();
    client.await_notification::<StatusNotification>(tools(0));
    let broken = client.diagnostics(&spec_uri, |p| codes(p).iter().any(|c| c == "invalid-protocol"));
    assert_eq!(codes(&broken), ["invalid-protocol"], "{broken:#?}");

    // Written back the way editors save (a new file renamed over the old one).
    let staging = client.path("specs/.tmdb_oas.json.swp");
    std::fs::write(&staging, &original).unwrap();
    std::fs::rename(&staging, &spec).unwrap();
    client.await_notification::<StatusNotification>(tools(54));
    client.diagnostics(&spec_uri, |p| !codes(p).iter().any(|c| c == "invalid-protocol"));

    // chainsmith.toml itself: a second toolset appears.
    let toml = client.path("chainsmith.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    std::fs::create_dir_all(client.path("more")).unwrap();
    std::fs::write(client.path("more/pets.yaml"), PETS).unwrap();
    text.push_str("\n[[toolsets]]\nname = \"pets\"\nopenapi = \"more/pets.yaml\"\n");
    std::fs::write(&toml, text).unwrap();
    let grown = client.await_notification::<StatusNotification>(|s| s.toolsets == 2);
    assert_eq!(grown.tools, 55);
    // Its protocol's folder is watched from then on.
    std::fs::write(client.path("more/pets.yaml"), PETS.replace("listPets", "listAllPets")).unwrap();
    client.await_notification::<StatusNotification>(|s| s.toolsets == 2);
    client.shutdown();
}

/// A one-operation OpenAPI document.
const PETS: &str = "openapi: 3.0.0\ninfo: {title: pets, version: '1'}\nservers: [{url: 'https://pets.example.com'}]\npaths:\n  /pets:\n    get:\n      operationId: listPets\n      responses:\n        '200': {description: ok, content: {application/json: {schema: {type: array, items: {type: string}}}}}\n";

#[test]
fn protocol_and_config_changes_on_disk_are_picked_up() {
    let mut client = tmdb().capabilities(utf16_client()).start();
    client.await_notification::<StatusNotification>(tools(54));
    let uri = client.open("p.py", PROGRAM);
    client.diagnostics(&uri, |p| p.version == Some(1));
    let spec = client.path("specs/tmdb_oas.json");
    let spec_uri = client.uri("specs/tmdb_oas.json");
    let original = std::fs::read_to_string(&spec).unwrap();

    // The spec becomes invalid JSON: a diagnostic on the spec, no tools, programs re-checked.
    std::fs::write(&spec, "{\n  \"openapi\": \"3.0.0\",\n  \"paths\": {\n").unwrap();
    client.watched_files_changed(&[(spec_uri.clone(), lsp::FileChangeType::CHANGED)]);
    client.await_notification::<StatusNotification>(tools(0));
    // The spec's own warning (a property named `""`) was published at start; the breakage replaces it.
    let broken = client.diagnostics(&spec_uri, |p| codes(p).iter().any(|c| c == "invalid-protocol"));
    assert_eq!(codes(&broken), ["invalid-protocol"], "{broken:#?}");
    assert_eq!(broken.diagnostics[0].source.as_deref(), Some("chainsmith"));
    assert_eq!(broken.diagnostics[0].severity, Some(lsp::DiagnosticSeverity::ERROR));
    let reanalysed = client.diagnostics(&uri, |_| true);
    assert!(!codes(&reanalysed).contains(&"missing-argument".to_string()), "{reanalysed:#?}");

    // Restored: the breakage is cleared, the spec's own warning is back, and the program is checked
    // against it again.
    std::fs::write(&spec, &original).unwrap();
    client.watched_files_changed(&[(spec_uri.clone(), lsp::FileChangeType::CHANGED)]);
    client.await_notification::<StatusNotification>(tools(54));
    let cleared = client.diagnostics(&spec_uri, |p| !codes(p).iter().any(|c| c == "invalid-protocol"));
    assert_eq!(codes(&cleared), ["empty-property-name"], "{cleared:#?}");
    assert_eq!(cleared.diagnostics[0].severity, Some(lsp::DiagnosticSeverity::WARNING));
    let reanalysed = client.diagnostics(&uri, |_| true);
    assert_eq!(codes(&reanalysed), ["unknown-tool", "missing-argument", "unknown-key"]);

    // chainsmith.toml: a syntax error is located on it; saving the fixed file (open in the
    // editor) reloads without a watcher event.
    let toml = client.path("chainsmith.toml");
    let toml_uri = client.uri("chainsmith.toml");
    let good = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, "[[toolsets]]\nname = \"tmdb\nopenapi = 1\n").unwrap();
    client.watched_files_changed(&[(toml_uri.clone(), lsp::FileChangeType::CHANGED)]);
    let broken = client.diagnostics(&toml_uri, has_diagnostics);
    assert_eq!(codes(&broken), ["invalid-config"], "{broken:#?}");
    std::fs::write(&toml, &good).unwrap();
    client.save(&toml_uri);
    client.await_notification::<StatusNotification>(tools(54));
    client.diagnostics(&toml_uri, |p| !has_diagnostics(p));

    // Files that are not part of the workspace's protocols do not trigger a reload.
    std::fs::write(client.path("notes.json"), "{").unwrap();
    let notes_uri = client.uri("notes.json");
    client.watched_files_changed(&[(notes_uri, lsp::FileChangeType::CREATED)]);
    let symbols = client.workspace_symbols("zzz_no_such_tool");
    assert_eq!(symbols, Some(lsp::WorkspaceSymbolResponse::Flat(vec![])));
    let unread = client.unread_messages();
    assert!(
        !unread.iter().any(|m| m.is::<StatusNotification>(|_| true)),
        "an unrelated file reloaded the workspace: {unread:#?}"
    );
    client.shutdown();
}

/// Every editor request on a program answers what the program is: a tool completion list after
/// `tmdb.`, the tool's hover, its signature, its declaration in the spec, the program's symbols.
#[test]
fn editor_requests_answer_well_formed() {
    let mut client = tmdb().capabilities(utf16_client()).start();
    let uri = client.open("p.py", PROGRAM);
    client.diagnostics(&uri, |p| p.version == Some(1));

    // After `tmdb.` on line 2: every tool of the toolset, as functions.
    let items = client.completion_items(&uri, pos(2, 13));
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(items.len(), 54, "{labels:?}");
    assert!(items.iter().all(|i| i.kind == Some(lsp::CompletionItemKind::FUNCTION)), "{items:#?}");
    insta::assert_json_snapshot!(&labels[..5], @r#"
    [
      "collection",
      "collection_images",
      "company",
      "company_images",
      "credit"
    ]
    "#);
    // On the tool's name: its operation, parameters and response (tests/it/snapshots/).
    let hover = client.hover(&uri, pos(2, 16)).expect("a hover on the tool");
    insta::assert_snapshot!("hover_on_a_tool", markdown(&hover));
    // Inside the call: the tool's signature, the first parameter active.
    let signature = client.signature_help(&uri, pos(2, 28)).expect("signature help inside the call");
    insta::assert_json_snapshot!("signature_inside_a_call", signature);
    // The operation in the spec.
    let definition = client.definition(&uri, pos(2, 16)).expect("the tool's declaration");
    insta::assert_json_snapshot!(client.redacted(&definition), @r#"
    {
      "uri": "[root]/specs/tmdb_oas.json",
      "range": {
        "start": {
          "line": 12229,
          "character": 15
        },
        "end": {
          "line": 13440,
          "character": 9
        }
      }
    }
    "#);
    // The program's calls.
    let symbols = client.document_symbols(&uri).expect("the program's symbols");
    insta::assert_json_snapshot!("symbols_of_a_program", symbols);
    let Some(lsp::WorkspaceSymbolResponse::Flat(workspace)) = client.workspace_symbols("search") else {
        panic!("workspace symbols are a flat list")
    };
    let names: Vec<&str> = workspace.iter().map(|s| s.name.as_str()).collect();
    insta::assert_json_snapshot!(names, @r#"
    [
      "tmdb.search_tv",
      "tmdb.search_movie",
      "tmdb.search_person",
      "tmdb.search_company",
      "tmdb.search_collection"
    ]
    "#);
    let resolved = client.request::<ResolveCompletionItem>(lsp::CompletionItem {
        label: "search_person".into(),
        data: Some(json!("tmdb.search_person")),
        ..Default::default()
    });
    assert_eq!(resolved.label, "search_person");

    // Positions past the end of a line or of the document are clamped, not failures.
    for (line, character) in [(2, 500), (999, 0), (0, 0)] {
        assert!(client.try_request::<lsp::request::HoverRequest>(hover_params(&uri, pos(line, character))).is_ok());
        assert!(client.try_request::<Completion>(completion_params(&uri, pos(line, character))).is_ok());
    }
    // An edit whose range lies past the end is clamped too; the document stays usable.
    client.change(&uri, 2, vec![edit(range(pos(40, 3), pos(2, 900)), "\n")]);
    client.diagnostics(&uri, |p| p.version == Some(2));
    // Requests on documents that were never opened answer null.
    let other = client.uri("never_opened.py");
    assert_eq!(client.hover(&other, pos(0, 0)), None);
    client.shutdown();
}

fn hover_params(uri: &Uri, position: lsp::Position) -> lsp::HoverParams {
    lsp::HoverParams { text_document_position_params: at(uri, position), work_done_progress_params: Default::default() }
}

fn completion_params(uri: &Uri, position: lsp::Position) -> lsp::CompletionParams {
    lsp::CompletionParams {
        text_document_position: at(uri, position),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
        context: None,
    }
}

/// The real behaviour of the editor features over LSP (ide.rs computes them; this checks that the
/// server asks at the right offsets and converts the answers).
#[test]
fn completion_hover_definition_signature_and_symbols() {
    let mut client = tmdb().capabilities(utf16_client()).start();
    let text = "from chainsmith.tools import tmdb\n\nfound = tmdb.search_person(query=\"Sofia Coppola\", )\nname = found[\"results\"][0][\"\"]\ntmdb.\ntmdb.get_search_pe\n";
    let uri = client.open("p.py", text);
    client.diagnostics(&uri, |p| p.version == Some(1));

    // Completion after `tmdb.`: the toolset's tools, as function items with the tool id as data.
    let items = client.completion_items(&uri, pos(4, 5));
    let item = items.iter().find(|i| i.label == "search_person").unwrap_or_else(|| panic!("{items:#?}"));
    assert_eq!(item.kind, Some(lsp::CompletionItemKind::FUNCTION));
    assert_eq!(item.data, Some(json!("tmdb.search_person")));
    let Some(lsp::CompletionTextEdit::Edit(text_edit)) = &item.text_edit else { panic!("{item:#?}") };
    assert_eq!(text_edit.range.start.line, 4);
    assert_eq!(text_edit.range.end, pos(4, 5));
    let resolved = client.request::<ResolveCompletionItem>(item.clone());
    let Some(lsp::Documentation::MarkupContent(docs)) = &resolved.documentation else { panic!("{resolved:#?}") };
    assert!(docs.value.contains("query"), "{}", docs.value);

    // Beside the name: its parameters, and what it answers.
    let details = item.label_details.as_ref().unwrap_or_else(|| panic!("{item:#?}"));
    assert_eq!(details.detail.as_deref(), Some("(query, page?, include_adult?, region?)"), "{item:#?}");
    assert!(details.description.as_deref().is_some_and(|d| d.starts_with("→ object {")), "{item:#?}");

    // The tool's `operationId` (`GET_search-person`) completes too, and then says so beside it.
    let items = client.completion_items(&uri, pos(5, 18));
    let item = items.iter().find(|i| i.label == "search_person").unwrap_or_else(|| panic!("{items:#?}"));
    assert_eq!(item.label_details.as_ref().and_then(|d| d.description.as_deref()), Some("get_search_person"));
    assert!(item.filter_text.as_deref().is_some_and(|f| f.contains("get_search_person")), "{item:#?}");

    // Response keys inside a subscript's quotes, replacing nothing yet.
    let items = client.completion_items(&uri, pos(3, 28));
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    assert!(labels.contains(&"name") && labels.contains(&"id"), "{labels:?}");
    let name = items.iter().find(|i| i.label == "name").unwrap();
    assert_eq!(name.kind, Some(lsp::CompletionItemKind::FIELD));
    let Some(lsp::CompletionTextEdit::Edit(text_edit)) = &name.text_edit else { panic!("{name:#?}") };
    assert_eq!(text_edit.range, range(pos(3, 28), pos(3, 28)));

    // Hover on the tool name mentions its required parameter.
    let hover = client.hover(&uri, pos(2, 16)).expect("a hover");
    assert!(markdown(&hover).contains("query"), "{hover:#?}");
    assert_eq!(hover.range.unwrap().start.line, 2);

    // Definition: the operation in the spec.
    let Some(lsp::GotoDefinitionResponse::Scalar(definition)) = client.definition(&uri, pos(2, 16)) else {
        panic!("one location")
    };
    assert_eq!(definition.uri, client.uri("specs/tmdb_oas.json"));
    let spec = std::fs::read_to_string(client.path("specs/tmdb_oas.json")).unwrap();
    let line = definition.range.start.line as usize;
    let lines: Vec<&str> = spec.lines().collect();
    // The operation object: `"get": {` under the path `/search/person`.
    assert_eq!((lines[line - 1].trim(), lines[line].trim()), ("\"/search/person\": {", "\"get\": {"));

    // Signature help inside the argument list, after the comma.
    let signature = client.signature_help(&uri, pos(2, 50)).expect("signature help");
    let label = &signature.signatures[0].label;
    assert!(label.contains("query"), "{label}");
    for parameter in signature.signatures[0].parameters.as_ref().unwrap() {
        let lsp::ParameterLabel::LabelOffsets([start, end]) = parameter.label else { panic!("{parameter:?}") };
        assert!(start <= end && end as usize <= label.encode_utf16().count(), "{parameter:?}");
    }

    // Document symbols: the call (hierarchical form, as the client asked).
    let Some(lsp::DocumentSymbolResponse::Nested(symbols)) = client.document_symbols(&uri) else {
        panic!("hierarchical symbols")
    };
    let names: Vec<&str> = symbols.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.first(), Some(&"found = tmdb.search_person"), "{symbols:#?}");

    // Workspace symbols: tools located at their names in the spec.
    let Some(lsp::WorkspaceSymbolResponse::Flat(workspace)) = client.workspace_symbols("search_person") else {
        panic!("a flat list")
    };
    let found = workspace.iter().find(|s| s.name == "tmdb.search_person").unwrap_or_else(|| panic!("{workspace:#?}"));
    assert_eq!(found.location.uri, client.uri("specs/tmdb_oas.json"));
    assert_eq!(found.container_name.as_deref(), Some("tmdb"));
    client.shutdown();
}

#[test]
fn commands_unknown_methods_and_lifecycle() {
    let mut client = tmdb().start();
    // chainsmith.graph answers with ToolNet's graph (this workspace has no programs yet).
    let answer = client.execute_command("chainsmith.graph", vec![json!("tmdb.search_person")], None);
    let answer = answer.unwrap().expect("the graph");
    let text = answer["text"].as_str().unwrap();
    assert!(text.starts_with("ToolNet: 0 transitions between tools"), "{text}");
    assert!(text.contains("\ntmdb.search_person → (no successor yet)"), "{text}");
    assert!(answer["dot"].as_str().unwrap().starts_with("digraph toolnet {"), "{answer}");
    let logged = client.await_notification::<LogMessage>(|p| p.message.contains("ToolNet"));
    assert!(logged.message.contains("tmdb.search_person"), "{logged:?}");

    let error = client.execute_command("other.tool", vec![], None).unwrap_err();
    assert_eq!(error.code.code(), -32602, "{error:?}");
    assert!(error.message.contains("other.tool"), "{error:?}");

    let error = client.request_json("chainsmith/noSuchMethod", json!({})).unwrap_err();
    assert_eq!(error.code.code(), -32601, "{error:?}");
    // Malformed parameters are an error answer, not a crash.
    let error = client.request_json("textDocument/hover", json!({"textDocument": 5})).unwrap_err();
    assert_eq!(error.code.code(), -32602, "{error:?}");
    client.shutdown();
}

/// A document that is not Python is not analysed: the same text with a planted mistake gets
/// diagnostics, symbols and code lenses as `p.py`, and none of them as markdown.
#[test]
fn a_non_python_document_is_not_analysed() {
    let mut client = tmdb().start();
    client.await_notification::<StatusNotification>(tools(54));
    let text = "from chainsmith.tools import tmdb\n\nfound = tmdb.search_persn(query=\"x\")\n";
    let notes = client.uri("notes.md");
    std::fs::write(client.path("notes.md"), text).unwrap();
    client.open_document(&notes, "markdown", 1, text);
    let program = client.open("p.py", text);
    let published = client.diagnostics(&program, |p| p.version == Some(1));
    assert_eq!(codes(&published), ["unknown-tool"]);
    assert!(client.document_symbols(&program).is_some());
    assert_eq!(client.code_lenses(&program).map(|l| l.len()), Some(1));

    assert_eq!(client.document_symbols(&notes), None);
    assert_eq!(client.code_lenses(&notes), None);
    assert_eq!(client.hover(&notes, pos(2, 16)), None);
    assert_eq!(client.completion(&notes, pos(2, 13)), None);
    let exit = client.shutdown();
    let about_notes: Vec<_> =
        exit.unread.iter().filter(|m| m.is::<lsp::notification::PublishDiagnostics>(|p| p.uri == notes)).collect();
    assert!(about_notes.is_empty(), "diagnostics for a markdown document: {about_notes:#?}");
}

#[test]
fn without_a_workspace_folder_the_programs_workspace_is_found() {
    let mut client = tmdb().no_workspace_folder().start();
    let uri = client.open("programs/p.py", PROGRAM);
    client.await_notification::<StatusNotification>(tools(54));
    let published = client.diagnostics(&uri, |p| p.version == Some(1));
    assert_eq!(codes(&published), ["unknown-tool", "missing-argument", "unknown-key"]);
    client.shutdown();
}

#[test]
fn exit_without_shutdown_is_not_clean() {
    let client = tmdb().start();
    let exit = client.exit_without_shutdown();
    assert!(!exit.clean);
}

/// A hover on an argument says which tools' responses can feed it (the data-flow graph), so the
/// user learns where a `person_id` comes from without opening the spec.
#[test]
fn hover_on_an_argument_lists_the_tools_that_produce_it() {
    let mut client = tmdb().start();
    let text = "from chainsmith.tools import tmdb\ncredits = tmdb.person_movie_credits(person_id=1)\n";
    let uri = client.open("p.py", text);
    let hover = client.hover(&uri, pos(1, 38)).expect("a hover on the argument");
    let shown = markdown(&hover);
    let produced = shown.split("**Produced by**").nth(1).unwrap_or_else(|| panic!("{shown}"));
    assert!(produced.contains("- `tmdb.search_person` → `results[].id` ("), "{shown}");
    assert!(produced.contains("identifies a person"), "{shown}");
    client.shutdown();
}

/// After `person_id=`, completion offers what can feed it: the field of the response the program
/// already holds first, then a call that produces it with the task's value filled in.
#[test]
fn completing_an_argument_offers_the_values_that_feed_it() {
    let mut client = tmdb().start();
    let text = "\"\"\"Movies directed by \"Sofia Coppola\".\"\"\"\nfrom chainsmith.tools import tmdb\n\nfound = tmdb.search_person(query=\"Sofia Coppola\")\ncredits = tmdb.person_movie_credits(person_id=)\n";
    let uri = client.open("p.py", text);
    let mut items = client.completion_items(&uri, pos(4, 46));
    items.sort_by(|a, b| a.sort_text.cmp(&b.sort_text));
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(labels.first(), Some(&"found[\"results\"][0][\"id\"]"), "{labels:?}");
    assert_eq!(items[0].kind, Some(lsp::CompletionItemKind::VARIABLE));
    let call = items
        .iter()
        .find(|i| i.kind == Some(lsp::CompletionItemKind::FUNCTION))
        .unwrap_or_else(|| panic!("no producing call among {labels:?}"));
    assert_eq!(call.label, "tmdb.search_person(query=\"Sofia Coppola\")[\"results\"][0][\"id\"]", "{labels:?}");
    let Some(lsp::CompletionTextEdit::Edit(edit)) = &call.text_edit else { panic!("{call:?}") };
    // This client takes no snippets: the call is inserted as plain text.
    assert_eq!(edit.new_text, "tmdb.search_person(query=\"Sofia Coppola\")[\"results\"][0][\"id\"]");
    client.shutdown();
}

/// `missing-argument` gets quick fixes from the data flow: pass a field of a response the program
/// holds, or insert the call that produces the value above the statement — and the result checks
/// clean.
#[test]
fn a_missing_argument_is_fixed_with_the_call_that_produces_it() {
    let mut client = tmdb().start();
    let text = "\"\"\"Movies directed by \"Sofia Coppola\".\"\"\"\nfrom chainsmith.tools import tmdb\n\n\ndef main():\n    credits = tmdb.person_movie_credits()\n    print(credits[\"crew\"])\n";
    let uri = client.open("p.py", text);
    let published = client.diagnostics(&uri, |p| p.version == Some(1));
    let missing: Vec<lsp::Diagnostic> =
        published.diagnostics.into_iter().filter(|d| code(d) == Some("missing-argument")).collect();
    assert_eq!(missing.len(), 1, "{missing:?}");
    let actions = client.code_actions(&uri, missing[0].range, missing.clone());
    let fix = actions
        .iter()
        .filter_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) => Some(action),
            _ => None,
        })
        .find(|a| a.title == "Call `search_person` above for `person_id`")
        .unwrap_or_else(|| panic!("{actions:#?}"));
    let edits = &fix.edit.as_ref().unwrap().changes.as_ref().unwrap()[&uri];
    let fixed = apply_edits(text, edits);
    assert!(
        fixed.contains(
            "    search_person = tmdb.search_person(query=\"Sofia Coppola\")\n    credits = tmdb.person_movie_credits(person_id=search_person[\"results\"][0][\"id\"])\n"
        ),
        "{fixed}"
    );
    client.change(&uri, 2, vec![full_text(&fixed)]);
    let published = client.diagnostics(&uri, |p| p.version == Some(2));
    assert_eq!(codes(&published), Vec::<String>::new(), "{fixed}");

    // With the response already held, the fix passes its field.
    let held = fixed.replace("person_id=search_person[\"results\"][0][\"id\"]", "");
    client.change(&uri, 3, vec![full_text(&held)]);
    let published = client.diagnostics(&uri, |p| p.version == Some(3));
    let missing: Vec<lsp::Diagnostic> =
        published.diagnostics.into_iter().filter(|d| code(d) == Some("missing-argument")).collect();
    let actions = client.code_actions(&uri, missing[0].range, missing.clone());
    let titles: Vec<String> = actions
        .iter()
        .filter_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) => Some(action.title.clone()),
            _ => None,
        })
        .collect();
    assert!(titles.contains(&"Pass `search_person[\"results\"][0][\"id\"]` as `person_id`".to_string()), "{titles:?}");
    client.shutdown();
}

/// "Plan a chain for this task" inserts the planner's best chain for the docstring's task (no
/// model anywhere), as an edit naming the version it was made for; the program it leaves checks
/// clean and keeps the document's one import.
#[test]
fn planning_a_chain_inserts_the_best_plan_for_the_version_it_was_made_for() {
    let mut client = tmdb().capabilities(json!({"workspace": {"workspaceEdit": {"documentChanges": true}}})).start();
    let text =
        "\"\"\"Find the director of the movie \"Lost in Translation\".\"\"\"\nfrom chainsmith.tools import tmdb\n";
    let uri = client.open("p.py", text);
    client.diagnostics(&uri, |p| p.version == Some(1));
    let actions = client.code_actions(&uri, range(pos(0, 3), pos(0, 3)), vec![]);
    let command = actions
        .iter()
        .find_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) if action.title == "Plan a chain for this task (no model)" => {
                action.command.clone()
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{actions:#?}"));
    assert_eq!(command.command, "chainsmith.plan");
    client.answer::<ApplyWorkspaceEdit>(lsp::ApplyWorkspaceEditResponse {
        applied: true,
        failure_reason: None,
        failed_change: None,
    });
    assert_eq!(client.execute_command(&command.command, command.arguments.clone().unwrap(), None), Ok(None));
    let ServerRequest { params: applied, .. } = client.await_request::<ApplyWorkspaceEdit>(|_| true);
    let Some(lsp::DocumentChanges::Edits(changes)) = applied.edit.document_changes else { panic!("{applied:#?}") };
    assert_eq!(changes[0].text_document.version, Some(1));
    let edits: Vec<lsp::TextEdit> = changes[0]
        .edits
        .iter()
        .map(|e| match e {
            lsp::OneOf::Left(edit) => edit.clone(),
            lsp::OneOf::Right(annotated) => annotated.text_edit.clone(),
        })
        .collect();
    let planned = apply_edits(text, &edits);
    assert_eq!(planned.matches("from chainsmith.tools import tmdb").count(), 1, "{planned}");
    assert!(planned.contains("search_movie = tmdb.search_movie(query=\"Lost in Translation\")\n"), "{planned}");
    let shown = client.await_notification::<ShowMessage>(|_| true);
    assert_eq!(shown.message, "chainsmith: planned GET /search/movie → GET /movie/{movie_id}/credits");
    client.change(&uri, 2, vec![full_text(&planned)]);
    let published = client.diagnostics(&uri, |p| p.version == Some(2));
    assert_eq!(codes(&published), Vec::<String>::new(), "{planned}");

    // A version the document no longer has plans nothing.
    let stale = command.arguments.unwrap();
    assert_eq!(client.execute_command("chainsmith.plan", stale, None), Ok(None));
    let shown = client.await_notification::<ShowMessage>(|_| true);
    assert!(shown.message.contains("changed since the action was offered"), "{}", shown.message);
    client.shutdown();
}
