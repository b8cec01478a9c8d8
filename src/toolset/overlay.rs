//! The probed overlay `.chainsmith/probed/<toolset>.json`: its format, and its merging into a
//! loaded toolset. Probing (`crate::probe::write`) builds and writes entries; loading applies them.
//!
//! ```json
//! {"chainsmith": "probed/1",
//!  "tools": {"git_status": {"response": {"type": "string"},
//!                           "examples": [{"question": "…", "program": "…", "arguments": {…}, "response": "…"}],
//!                           "probed": {"date": "2026-11-21", "samples": 1}}}}
//! ```
//!
//! Keys of `tools` are the tools' Python names in that toolset. On load an overlay entry replaces
//! the tool's response schema, adds its examples and marks it probed. A corrupt overlay is a
//! located diagnostic, never a failed load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::Texts;
use super::doc::{self, Syntax};
use super::{Example, Provenance, Tool, Toolset};
use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;

/// The overlay format marker.
pub const OVERLAY_FORMAT: &str = "probed/1";

/// One tool's entry in an overlay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverlayEntry {
    pub response: Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Value>,
    pub probed: ProbedMark,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbedMark {
    pub date: String,
    pub samples: u32,
}

/// `.chainsmith/probed/<toolset>.json` under the root.
pub fn overlay_path(root: &Path, toolset: &str) -> PathBuf {
    root.join(".chainsmith").join("probed").join(format!("{toolset}.json"))
}

pub fn example_json(example: &Example) -> Value {
    let mut out = Map::new();
    if let Some(q) = &example.question {
        out.insert("question".into(), json!(q));
    }
    if let Some(p) = &example.program {
        out.insert("program".into(), json!(p));
    }
    if let Some(a) = &example.arguments {
        out.insert("arguments".into(), a.clone());
    }
    if let Some(r) = &example.response {
        out.insert("response".into(), r.clone());
    }
    Value::Object(out)
}

/// Puts an entry's schema, examples and provenance on a tool.
pub fn apply(tool: &mut Tool, entry: &OverlayEntry) {
    *tool.response = Some(entry.response.clone());
    for e in &entry.examples {
        tool.examples.push(Example {
            question: e.get("question").and_then(Value::as_str).map(str::to_string),
            program: e.get("program").and_then(Value::as_str).map(str::to_string),
            arguments: e.get("arguments").cloned(),
            response: e.get("response").cloned(),
        });
    }
    tool.provenance = Provenance::Probed { date: entry.probed.date.clone(), samples: entry.probed.samples };
}

/// Applies `.chainsmith/probed/<toolset>.json`, when there is one, to a loaded toolset: `read` is
/// its text as the loader read it, through the file it judged (see `loader::Boundary`). Problems
/// are diagnostics on the overlay file; a broken entry is skipped.
pub fn merge(
    root: &Path,
    toolset: &mut Toolset,
    read: Result<String, crate::files::ReadError>,
    texts: &mut Texts,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let path = overlay_path(root, &toolset.name);
    let text: Arc<str> = match read {
        Ok(text) => text.into(),
        Err(e) if e.not_found() => return,
        Err(e) => {
            let message = format!("the probed overlay cannot be read: {e}");
            diagnostics.push(Diagnostic::error(&path, ByteRange::default(), "invalid-overlay", message));
            return;
        }
    };
    texts.insert(path.clone(), text.clone());
    let node = match doc::parse(&text, Syntax::Json) {
        Ok(n) => n,
        Err(failure) => {
            diagnostics.push(Diagnostic::error(
                &path,
                failure.range,
                "invalid-overlay",
                format!("the probed overlay is not valid JSON: {}", failure.message),
            ));
            return;
        }
    };
    let Some(tools) = node.get("tools").filter(|t| t.is_object()) else {
        diagnostics.push(Diagnostic::error(
            &path,
            ByteRange::new(node.range.start, (node.range.start + 1).min(node.range.end)),
            "invalid-overlay",
            "a probed overlay is {\"chainsmith\": \"probed/1\", \"tools\": {\"<tool>\": {response, examples, probed}}}",
        ));
        return;
    };
    for (name, key_range, value) in tools.members() {
        let entry: Result<OverlayEntry, _> = serde_json::from_value(value.to_json());
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                diagnostics.push(Diagnostic::error(
                    &path,
                    value.range,
                    "invalid-overlay",
                    format!(
                        "overlay entry `{name}`: {e} (expected {{response, examples?, probed: {{date, samples}}}})"
                    ),
                ));
                continue;
            }
        };
        match toolset.tools.iter_mut().find(|t| &t.name == name) {
            Some(tool) => apply(tool, &entry),
            None => diagnostics.push(Diagnostic::warning(
                &path,
                *key_range,
                "stale-overlay",
                format!("the probed overlay names `{name}`, which toolset `{}` no longer has", toolset.name),
            )),
        }
    }
}
