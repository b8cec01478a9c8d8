//! Write-back of probed schemas.
//!
//! - Native JSON toolset files are edited in place: the `response`, `examples` and `probed`
//!   members of the tool's entry are spliced in by byte range, the rest of the file untouched
//!   ([`native_edits`] gives the edits; the CLI writes them, the editor sends them as a
//!   `WorkspaceEdit`).
//! - Every other source (OpenAPI, ToolBench, MCP, and YAML native files) gets the overlay
//!   `.chainsmith/probed/<toolset>.json` (its format and merging live in
//!   [`crate::toolset::overlay`]):
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::text::ByteRange;
use crate::toolset::doc::{self, Node, NodeKind, Syntax};
use crate::toolset::overlay::{OVERLAY_FORMAT, OverlayEntry, ProbedMark, example_json, overlay_path};
use crate::toolset::{Catalog, SourceKind, Tool};

use super::discover::Probed;

/// The overlay entry of a probe's result.
pub fn entry_of(probed: &Probed) -> OverlayEntry {
    OverlayEntry {
        response: probed.response.clone(),
        examples: vec![example_json(&probed.example)],
        probed: ProbedMark { date: probed.date.clone(), samples: probed.samples.len() as u32 },
    }
}

/// Writes probe results back; the files written.
pub fn write_back(root: &Path, catalog: &Catalog, probed: &[&Probed]) -> Result<Vec<PathBuf>> {
    let mut overlays: BTreeMap<String, Vec<&Probed>> = BTreeMap::new();
    let mut natives: BTreeMap<PathBuf, Vec<&Probed>> = BTreeMap::new();
    for p in probed {
        let Some(tool) = catalog.tool(&p.toolset, &p.name) else { continue };
        if is_native_json(tool) {
            natives.entry(tool.source.file.clone()).or_default().push(p);
        } else {
            overlays.entry(p.toolset.clone()).or_default().push(p);
        }
    }
    let mut written = Vec::new();
    for (file, items) in natives {
        // The catalog names files relative to the root, not to the current directory.
        let path = if file.is_relative() { root.join(&file) } else { file.clone() };
        let text = crate::files::read_text(&path, crate::files::MAX_READ)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let edits = native_edits(&text, &items)?;
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            anyhow::bail!("refusing to write {}: it is a symbolic link", file.display());
        }
        crate::files::write_inside(root, &path, apply_edits(&text, &edits).as_bytes())?;
        written.push(file);
    }
    for (toolset, items) in overlays {
        let path = overlay_path(root, &toolset);
        let text = overlay_text(&path, &items)?;
        crate::files::write_inside(root, &path, text.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

/// Whether a tool's probed schema goes into its own file (a native JSON toolset).
pub fn is_native_json(tool: &Tool) -> bool {
    tool.source.kind == SourceKind::Native && Syntax::of_path(&tool.source.file) == Syntax::Json
}

/// The overlay's new text: the existing overlay (when readable) with these entries set.
pub fn overlay_text(path: &Path, items: &[&Probed]) -> Result<String> {
    let mut root = crate::files::read_text(path, crate::files::MAX_READ)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .filter(|v| v.get("tools").is_some_and(Value::is_object))
        .unwrap_or_else(|| json!({"chainsmith": OVERLAY_FORMAT, "tools": {}}));
    for p in items {
        let mut entry = entry_of(p);
        // Keep the examples an earlier probe left.
        if let Some(old) = root["tools"].get(&p.name).and_then(|e| e.get("examples")).and_then(Value::as_array) {
            let mut all = old.clone();
            all.extend(entry.examples);
            entry.examples = all;
        }
        root["tools"][&p.name] = serde_json::to_value(&entry)?;
    }
    Ok(serde_json::to_string_pretty(&root)? + "\n")
}

/// One replacement of a byte range.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    pub range: ByteRange,
    pub text: String,
}

/// Applies non-overlapping edits.
pub fn apply_edits(text: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for e in sorted {
        out.push_str(&text[at..e.range.start]);
        out.push_str(&e.text);
        at = e.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The edits that put probe results into a native JSON toolset's text: for each tool entry,
/// `response` and `probed` replaced or added, the example appended to `examples`.
pub fn native_edits(text: &str, items: &[&Probed]) -> Result<Vec<Edit>> {
    let node =
        doc::parse(text, Syntax::Json).map_err(|f| anyhow::anyhow!("the toolset does not parse: {}", f.message))?;
    let tools = node.get("tools").context("the toolset has no `tools`")?;
    let mut edits = Vec::new();
    for p in items {
        let entry = tools
            .items()
            .iter()
            .find(|e| e.get("name").and_then(Node::as_str) == Some(p.name.as_str()))
            .with_context(|| format!("no tool `{}` in the toolset", p.name))?;
        let indent = member_indent(text, entry);
        let e = entry_of(p);
        let probed = serde_json::to_value(&e.probed)?;
        let mut added = String::new();
        for (key, value) in [("response", &e.response), ("probed", &probed)] {
            match entry.get(key) {
                Some(old) => edits.push(Edit { range: old.range, text: render(value, &indent) }),
                None => added.push_str(&format!(",\n{indent}\"{key}\": {}", render(value, &indent))),
            }
        }
        let example = render(&e.examples[0], &format!("{indent}  "));
        match entry.get("examples") {
            Some(list) if matches!(list.kind, NodeKind::Array(_)) => {
                let close = list.range.end - 1;
                let insert = match list.items().last() {
                    Some(last) => Edit {
                        range: ByteRange::new(last.range.end, last.range.end),
                        text: format!(",\n{indent}  {example}"),
                    },
                    None => {
                        Edit { range: ByteRange::new(close, close), text: format!("\n{indent}  {example}\n{indent}") }
                    }
                };
                edits.push(insert);
            }
            Some(other) => edits.push(Edit { range: other.range, text: format!("[\n{indent}  {example}\n{indent}]") }),
            None => added.push_str(&format!(",\n{indent}\"examples\": [\n{indent}  {example}\n{indent}]")),
        }
        if !added.is_empty() {
            // After the entry's last member, so the entry's own closing line stays as written.
            let after = entry.members().last().map_or(entry.range.start + 1, |(_, _, v)| v.range.end);
            let added = if entry.members().is_empty() { added.trim_start_matches(',').to_string() } else { added };
            edits.push(Edit { range: ByteRange::new(after, after), text: added });
        }
    }
    Ok(edits)
}

/// The whitespace before the entry's first member on its line (two spaces more than the entry's
/// own indentation when the entry is on one line).
fn member_indent(text: &str, entry: &Node) -> String {
    let line_indent = |at: usize| {
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let prefix = &text[start..at];
        if prefix.trim().is_empty() { Some(prefix.to_string()) } else { None }
    };
    if let Some((_, key_range, _)) = entry.members().first()
        && let Some(indent) = line_indent(key_range.start)
    {
        return indent;
    }
    let start = text[..entry.range.start].rfind('\n').map_or(0, |i| i + 1);
    let own: String = text[start..entry.range.start].chars().take_while(|c| c.is_whitespace()).collect();
    format!("{own}  ")
}

/// Pretty JSON whose continuation lines carry `indent`.
fn render(value: &Value, indent: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    pretty.replace('\n', &format!("\n{indent}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolset::overlay::merge as merge_overlay;
    use crate::toolset::{Example, Provenance, Texts, Toolset};

    fn probed(name: &str) -> Probed {
        Probed {
            tool: format!("ts.{name}"),
            toolset: "ts".into(),
            name: name.into(),
            response: json!({"type": "object", "properties": {"id": {"type": "integer"}}}),
            samples: vec![json!({"id": 1})],
            example: Example {
                question: Some("Which?".into()),
                program: Some("print(1)".into()),
                arguments: Some(json!({})),
                response: Some(json!({"id": 1})),
            },
            date: "2026-11-21".into(),
            tries: 1,
        }
    }

    const NATIVE: &str = "{\n  // hand-written\n  \"chainsmith\": \"toolset/1\",\n  \"tools\": [\n    {\"name\": \"a\", \"description\": \"A.\"},\n    {\n      \"name\": \"b\",\n      \"description\": \"B.\",\n      \"examples\": [],\n      \"response\": null\n    }\n  ]\n}\n";

    #[test]
    fn native_entries_get_members_spliced_in_and_the_rest_stays() {
        let (a, b) = (probed("a"), probed("b"));
        let edits = native_edits(NATIVE, &[&a, &b]).unwrap();
        let out = apply_edits(NATIVE, &edits);
        assert!(out.starts_with("{\n  // hand-written\n  \"chainsmith\": \"toolset/1\",\n"), "{out}");
        let node = doc::parse(&out, Syntax::Json).unwrap();
        let loaded = crate::toolset::native::load(&node, &out, Path::new("t.toolset.json"), "ts");
        assert!(loaded.diagnostics.is_empty(), "{:?}\n{out}", loaded.diagnostics);
        for tool in &loaded.tools {
            assert_eq!(*tool.response, Some(a.response.clone()), "{out}");
            assert_eq!(tool.examples.len(), 1);
            assert!(matches!(tool.provenance, Provenance::Probed { samples: 1, .. }));
        }
        // Probing again appends an example and replaces the schema.
        let again = apply_edits(&out, &native_edits(&out, &[&b]).unwrap());
        let node = doc::parse(&again, Syntax::Json).unwrap();
        let loaded = crate::toolset::native::load(&node, &again, Path::new("t.toolset.json"), "ts");
        assert_eq!(loaded.tools[1].examples.len(), 2, "{again}");
    }

    #[test]
    fn overlays_merge_and_corrupt_ones_are_located() {
        let dir = tempfile::tempdir().unwrap();
        let mut toolset = Toolset {
            name: "ts".into(),
            kind: SourceKind::Mcp,
            files: vec![],
            description: String::new(),
            base_url: None,
            auth: None,
            tools: vec![],
            schemas: Default::default(),
            unlisted: None,
        };
        let path = overlay_path(dir.path(), "ts");
        let read = |path: &std::path::Path| {
            crate::files::read_json_text(path, crate::files::MAX_READ, crate::files::MAX_JSON_VALUES)
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, overlay_text(&path, &[&probed("gone")]).unwrap()).unwrap();
        let (mut texts, mut diagnostics) = (Texts::new(), Vec::new());
        merge_overlay(dir.path(), &mut toolset, read(&path), &mut texts, &mut diagnostics);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, "stale-overlay");
        std::fs::write(&path, "{\"tools\": {\"x\": ").unwrap();
        diagnostics.clear();
        merge_overlay(dir.path(), &mut toolset, read(&path), &mut texts, &mut diagnostics);
        assert_eq!(diagnostics[0].code, "invalid-overlay", "{diagnostics:?}");
        std::fs::write(&path, "{\"tools\": {\"x\": {\"response\": 3}}}").unwrap();
        diagnostics.clear();
        merge_overlay(dir.path(), &mut toolset, read(&path), &mut texts, &mut diagnostics);
        assert_eq!(diagnostics[0].code, "invalid-overlay", "{diagnostics:?}");
        assert!(diagnostics[0].range.start > 0);
    }
}
