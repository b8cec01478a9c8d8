//! The arguments of every `chainsmith.*` command, in one place. Code lenses and code actions send
//! them, and so do entry points that know only the active document: VS Code's palette and status
//! bar and Neovim's `:Chainsmith*` commands send `[document URI]` with every command. So every
//! command accepts a document where it could mean something, and ignores it where it cannot.
//!
//! | command | arguments |
//! |---|---|
//! | `chainsmith.run` | `[document]` or `[{uri, replay?, mock?}]`: `replay` `"all"` answers every call identical to one the document's last run recorded from its trace; a number `n` answers so only the calls before the one with trace id `n` (re-running from that call); `mock: true` sends the HTTP tools' calls to chainsmith's mock of the APIs (`chainsmith run --mock`) |
//! | `chainsmith.generate` | `[document]` or `[{uri, version?, task?, tools?, allowWrites?}]` |
//! | `chainsmith.fix` | `[document]` or `[{uri, version?, allowWrites?}]` |
//! | `chainsmith.plan` | `[document]` or `[{uri, version?, task?}]` (the task defaults to the document's) |
//! | `chainsmith.probe` | tools and documents, any mix: a tool id (`"toolset.name"` or `{tool}`) names that tool; a document stands for the tools of unknown response it calls (a program) or declares (a protocol file) |
//! | `chainsmith.probeAll` | nothing (a document is ignored): every tool of unknown response |
//! | `chainsmith.graph` | nothing, `[tool id]` (the graph from that tool) or `[document]` (around its tools) |
//! | `chainsmith.trustWorkspace` | nothing (a document is ignored) |
//! | `chainsmith.acceptObserved` | `[tool id]` |
//! | `chainsmith.writeStubs` | nothing (a document is ignored) |
//!
//! A document is its URI, as a string or as `{uri}`; a tool id never holds a `:`, a URI always does.

use serde_json::Value;
use tower_lsp_server::lsp_types as lsp;

/// One argument: a document or a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Argument {
    Document(lsp::Uri),
    Tool(String),
}

/// Reads one argument; `None` for anything else (a number, an unparsable URI).
pub fn argument(value: &Value) -> Option<Argument> {
    let (text, keyed_tool) = match value {
        Value::String(s) => (s.as_str(), false),
        Value::Object(map) => match (map.get("uri").and_then(Value::as_str), map.get("tool").and_then(Value::as_str)) {
            (Some(uri), _) => (uri, false),
            (None, Some(tool)) => (tool, true),
            (None, None) => return None,
        },
        _ => return None,
    };
    if !keyed_tool && text.contains(':') {
        return text.parse().ok().map(Argument::Document);
    }
    Some(Argument::Tool(text.to_string()))
}

/// Which answers of the document's last run a re-run takes from its trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Every call identical to a recorded one (as `chainsmith run --replay`).
    All,
    /// Only those before the call with this trace id: the run goes live from that call on.
    Before(u32),
}

/// The `replay` of a `chainsmith.run`'s first argument (`{uri, replay}`), when it has one.
pub fn replay(arguments: &[Value]) -> Option<Replay> {
    match arguments.first()?.get("replay")? {
        Value::String(all) if all == "all" => Some(Replay::All),
        value => value.as_u64().and_then(|n| u32::try_from(n).ok()).map(Replay::Before),
    }
}

/// Whether a `chainsmith.run`'s first argument (`{uri, mock: true}`) asks for the mock of the APIs.
pub fn mock(arguments: &[Value]) -> bool {
    arguments.first().and_then(|a| a.get("mock")).and_then(Value::as_bool).unwrap_or(false)
}

/// The document a command's first argument names.
pub fn document(arguments: &[Value]) -> Option<lsp::Uri> {
    match argument(arguments.first()?)? {
        Argument::Document(uri) => Some(uri),
        Argument::Tool(_) => None,
    }
}

/// The tool a command's first argument names.
pub fn tool(arguments: &[Value]) -> Option<String> {
    match argument(arguments.first()?)? {
        Argument::Tool(id) => Some(id),
        Argument::Document(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_and_tools_are_told_apart_in_every_form_editors_send() {
        let uri: lsp::Uri = "file:///w/fail.py".parse().unwrap();
        assert_eq!(argument(&json!("file:///w/fail.py")), Some(Argument::Document(uri.clone())));
        assert_eq!(argument(&json!({"uri": "file:///w/fail.py", "version": 3})), Some(Argument::Document(uri)));
        assert_eq!(argument(&json!("tmdb.search_person")), Some(Argument::Tool("tmdb.search_person".into())));
        assert_eq!(argument(&json!({"tool": "tmdb.search_person"})), Some(Argument::Tool("tmdb.search_person".into())));
        assert_eq!(argument(&json!(3)), None);
        assert_eq!(document(&[json!("tmdb.person")]), None);
        assert_eq!(tool(&[json!("file:///w/fail.py")]), None);
        assert_eq!(tool(&[json!("search_person")]).as_deref(), Some("search_person"));
        assert_eq!(replay(&[json!({"uri": "file:///w/p.py", "replay": 3})]), Some(Replay::Before(3)));
        assert_eq!(replay(&[json!({"uri": "file:///w/p.py", "replay": "all"})]), Some(Replay::All));
        assert_eq!(replay(&[json!("file:///w/p.py")]), None);
        assert_eq!(replay(&[json!({"uri": "file:///w/p.py", "replay": -1})]), None);
    }
}
