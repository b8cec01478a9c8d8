//! The built `chainsmith lsp` binary over real pipes, through the test client's stdio transport:
//! Content-Length framed JSON-RPC on stdin and stdout, diagnostics for a program with planted
//! mistakes, a clean `shutdown` + `exit` (status 0, promptly, even though the client keeps stdin
//! open) and nothing on stdout but LSP frames (the client's strict frame reader fails the test on
//! anything else, debug logs included).

use std::path::Path;

use serde_json::{Value, json};
use tower_lsp_server::lsp_types::{self as lsp, NumberOrString};

use crate::support::lsp::{Message, TestClient};

fn chainsmith_lsp(workspace: tempfile::TempDir) -> TestClient {
    TestClient::stdio(env!("CARGO_BIN_EXE_chainsmith"))
        .workspace(workspace)
        .capabilities(json!({}))
        // Verbose logs must go to stderr, never into the protocol stream.
        .env("CHAINSMITH_LOG", "debug")
        .start()
}

#[test]
fn stdio_server_publishes_diagnostics_and_exits_cleanly() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tmdb");
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("specs")).unwrap();
    std::fs::copy(examples.join("chainsmith.toml"), workspace.path().join("chainsmith.toml")).unwrap();
    std::fs::copy(examples.join("specs/tmdb_oas.json"), workspace.path().join("specs/tmdb_oas.json")).unwrap();
    let text = std::fs::read_to_string(examples.join("mistakes/mistakes.py")).unwrap();

    let mut client = chainsmith_lsp(workspace);
    assert_eq!(client.initialize_result()["capabilities"]["positionEncoding"], "utf-16");
    let uri = client.open("mistakes.py", &text);
    let published = client.diagnostics(&uri, |_| true);
    let found: Vec<(u32, &str)> = published
        .diagnostics
        .iter()
        .map(|d| match &d.code {
            Some(NumberOrString::String(code)) => (d.range.start.line, code.as_str()),
            other => panic!("a diagnostic without a code: {other:?}"),
        })
        .collect();
    // Each planted mistake, on its (0-based) line: see examples/tmdb/mistakes/EXPECTED.md.
    let expected: Vec<(u32, &str)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| Some((i as u32, line.split_once("# mistake: ")?.1.trim())))
        .collect();
    assert_eq!(expected.len(), 10);
    assert_eq!(found, expected);

    // Exit status 0 within 5 s of `exit` while stdin stays open; stdout held only LSP frames.
    let exit = client.shutdown();
    assert!(exit.messages >= 3, "initialize response, diagnostics, shutdown response: {exit:?}");
}

/// Malformed client input is answered with a JSON-RPC error and the server goes on serving:
/// invalid JSON, `{}`, a non-integer id, a lower-case header with LF line ends, a frame without
/// Content-Length, `$/setTrace` sent as a request. (The framework alone stopped at the first.)
#[test]
fn malformed_frames_are_answered_and_the_server_keeps_serving() {
    let mut client = chainsmith_lsp(tempfile::tempdir().unwrap());

    let set_trace = br#"{"jsonrpc":"2.0","id":7,"method":"$/setTrace","params":{"value":"off"}}"#;
    client.send_bytes(b"Content-Length: 5\r\n\r\n{oops");
    client.send_bytes(b"Content-Length: 2\r\n\r\n{}");
    let bad_id = br#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#;
    client.send_bytes(format!("Content-Length: {}\r\n\r\n", bad_id.len()).as_bytes());
    client.send_bytes(bad_id);
    client.send_bytes(b"X-Whatever: 1\r\n\r\n");
    client.send_bytes(format!("content-length: {}\n\n", set_trace.len()).as_bytes());
    client.send_bytes(set_trace);
    let mut codes = Vec::new();
    for what in ["a parse error", "an invalid request", "an invalid id", "a frame without length", "$/setTrace"] {
        match client.await_message(what, |m| matches!(m, Message::Response { result: Err(_), .. })) {
            Message::Response { id, result: Err(error) } => codes.push((id, error.code.code())),
            _ => unreachable!(),
        }
    }
    assert_eq!(
        codes,
        [
            (Value::Null, -32700),
            (Value::Null, -32600),
            (Value::Null, -32600),
            (Value::Null, -32700),
            (json!(7), -32601)
        ]
    );
    // Still serving: a request after all that is answered.
    let symbols = client.workspace_symbols("x");
    assert_eq!(symbols, Some(lsp::WorkspaceSymbolResponse::Flat(vec![])), "no tools, no symbols");
    client.shutdown();
}

/// Messages that are JSON but not JSON-RPC 2.0 — another version, none, an id that is not an
/// integer the server can hold — are answered (or, as notifications, dropped), and the server
/// answers the next valid request each time. (Each of them used to end the server.)
#[test]
fn messages_that_are_not_json_rpc_2_are_answered_and_the_server_keeps_serving() {
    let mut client = chainsmith_lsp(tempfile::tempdir().unwrap());
    let requests: [(&str, Value); 4] = [
        (r#"{"jsonrpc":"1.0","id":41,"method":"workspace/symbol","params":{"query":"x"}}"#, json!(41)),
        (r#"{"id":42,"method":"workspace/symbol","params":{"query":"x"}}"#, json!(42)),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"workspace/symbol","params":{"query":"x"}}"#, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"workspace/symbol","params":{"query":"x"}}"#,
            Value::Null,
        ),
    ];
    for (body, answered_id) in requests {
        client.send_bytes(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
        match client.await_message(body, |m| matches!(m, Message::Response { result: Err(_), .. })) {
            Message::Response { id, result: Err(error) } => {
                assert_eq!((id, error.code.code()), (answered_id, -32600), "{body}");
            }
            _ => unreachable!(),
        }
        let symbols = client.workspace_symbols("x");
        assert_eq!(symbols, Some(lsp::WorkspaceSymbolResponse::Flat(vec![])), "still serving after {body}");
    }
    for notification in [r#"{"jsonrpc":"1.0","method":"initialized","params":{}}"#, r#"{"method":"exit"}"#] {
        client.send_bytes(format!("Content-Length: {}\r\n\r\n{notification}", notification.len()).as_bytes());
        let symbols = client.workspace_symbols("x");
        assert_eq!(symbols, Some(lsp::WorkspaceSymbolResponse::Flat(vec![])), "dropped: {notification}");
    }
    client.shutdown();
}
