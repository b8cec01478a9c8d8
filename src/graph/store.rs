//! `.chainsmith/toolnet.json`: what ToolNet keeps between sessions.
//!
//! The store holds the graph's *inputs*, never derived weights: imported trajectory files (by the
//! path they were imported from, so importing a file again replaces it) and the runs learnt from
//! (by trace file name, with the run's successful-call trajectory and its evaluator scores). Weights
//! are recomputed on load, so the file never disagrees with the code that reads it.
//!
//! The file is meant to be committed: keys are sorted, every trajectory is one line, scores are
//! rounded to two decimals (whole numbers written as integers), and it is written atomically
//! (a temporary file in the same folder, then a rename). A file that is not valid JSON, or is not a
//! ToolNet store, is reported with its name and kept exactly as it is: it is never overwritten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Number, Value};

use super::Trajectory;

/// The store, relative to the workspace root.
pub const STORE_PATH: &str = ".chainsmith/toolnet.json";
/// The format marker and version (`"chainsmith": "toolnet/1"`), like the native toolset format's.
pub const FORMAT: &str = "toolnet/1";

/// One imported trajectory file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportedSet {
    /// `restbench`, `toolbench-dfsdt`, `jsonl`.
    pub kind: String,
    pub trajectories: Vec<Trajectory>,
}

/// One run learnt from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRecord {
    pub program: String,
    pub started: Option<String>,
    pub ok: bool,
    pub answered: Option<bool>,
    /// The tools of the run's successful calls, in order.
    pub tools: Vec<String>,
    /// The evaluator's score for each tool the run used.
    pub scores: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Store {
    /// Imported files by the path they were imported from (relative to the workspace root).
    pub imports: BTreeMap<String, ImportedSet>,
    /// Runs by trace file name; the names start with the run's time, so this is run order.
    pub runs: BTreeMap<String, RunRecord>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: cannot read the ToolNet store: {message}", file.display())]
    Unreadable { file: PathBuf, message: String },
    /// Not valid JSON, or a ToolNet store whose content is malformed. `offset` locates the problem.
    #[error("{}: the ToolNet store is corrupt ({message}); it is kept as it is and will not be overwritten", file.display())]
    Corrupt { file: PathBuf, message: String, offset: usize },
    /// Valid JSON that is not a ToolNet store this version reads.
    #[error("{}: not a ToolNet store ({message}); it is kept as it is and will not be overwritten", file.display())]
    Foreign { file: PathBuf, message: String },
    #[error("{}: cannot write the ToolNet store: {message}", file.display())]
    Unwritable { file: PathBuf, message: String },
}

impl StoreError {
    pub fn file(&self) -> &Path {
        match self {
            StoreError::Unreadable { file, .. }
            | StoreError::Corrupt { file, .. }
            | StoreError::Foreign { file, .. }
            | StoreError::Unwritable { file, .. } => file,
        }
    }
    /// Byte offset of the problem in the file (0 when it concerns the whole file).
    pub fn offset(&self) -> usize {
        match self {
            StoreError::Corrupt { offset, .. } => *offset,
            _ => 0,
        }
    }
}

impl Store {
    pub fn path(root: &Path) -> PathBuf {
        root.join(STORE_PATH)
    }

    /// The workspace's store; an empty one when there is no file yet. It is read as chainsmith's
    /// own state ([`crate::files::read_state`]): one that leads out of the workspace is refused.
    pub fn load(root: &Path) -> Result<Store, StoreError> {
        let file = Store::path(root);
        let read = crate::files::read_state(root, &file, crate::files::MAX_READ, crate::files::MAX_RECORD_VALUES);
        let text = match read {
            Ok(t) => t,
            Err(e) if e.not_found() => return Ok(Store::default()),
            Err(e) => return Err(StoreError::Unreadable { file: file.clone(), message: e.to_string() }),
        };
        Store::parse(&text).map_err(|problem| problem.into_error(&file))
    }

    /// Reads a store's text.
    pub fn parse(text: &str) -> Result<Store, Problem> {
        let doc: Value = serde_json::from_str(text)
            .map_err(|e| Problem::Syntax { message: e.to_string(), offset: offset_of(text, e.line(), e.column()) })?;
        let Some(object) = doc.as_object() else {
            return Err(Problem::Foreign("expected a JSON object with \"chainsmith\": \"toolnet/1\"".into()));
        };
        match object.get("chainsmith").and_then(Value::as_str) {
            Some(FORMAT) => {}
            Some(other) if other.starts_with("toolnet/") => {
                return Err(Problem::Foreign(format!("format `{other}`, this chainsmith reads `{FORMAT}`")));
            }
            Some(other) => return Err(Problem::Foreign(format!("its `chainsmith` marker is `{other}`"))),
            None => return Err(Problem::Foreign("no \"chainsmith\": \"toolnet/1\" marker".into())),
        }
        let malformed = |what: &str| Problem::Malformed(what.to_string());
        let mut store = Store::default();
        if let Some(imports) = object.get("imports") {
            let imports = imports.as_object().ok_or_else(|| malformed("`imports` must be an object"))?;
            for (file, set) in imports {
                let kind = set.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
                let list = set
                    .get("trajectories")
                    .and_then(Value::as_array)
                    .ok_or_else(|| malformed(&format!("imports[{file:?}] needs a `trajectories` array")))?;
                let mut trajectories = Vec::new();
                for t in list {
                    trajectories.push(trajectory(t).ok_or_else(|| {
                        malformed(&format!("imports[{file:?}]: a trajectory must be {{\"tools\": [ids]}}"))
                    })?);
                }
                store.imports.insert(file.clone(), ImportedSet { kind, trajectories });
            }
        }
        if let Some(runs) = object.get("runs") {
            let runs = runs.as_object().ok_or_else(|| malformed("`runs` must be an object"))?;
            for (name, run) in runs {
                let bad = || malformed(&format!("runs[{name:?}] is malformed"));
                let tools = strings(run.get("tools").unwrap_or(&Value::Array(vec![]))).ok_or_else(bad)?;
                let mut scores = BTreeMap::new();
                if let Some(s) = run.get("scores") {
                    for (tool, score) in s.as_object().ok_or_else(bad)? {
                        scores.insert(tool.clone(), score.as_f64().ok_or_else(bad)?);
                    }
                }
                store.runs.insert(
                    name.clone(),
                    RunRecord {
                        program: run.get("program").and_then(Value::as_str).unwrap_or("").to_string(),
                        started: run.get("started").and_then(Value::as_str).map(str::to_string),
                        ok: run.get("ok").and_then(Value::as_bool).unwrap_or(false),
                        answered: run.get("answered").and_then(Value::as_bool),
                        tools,
                        scores,
                    },
                );
            }
        }
        Ok(store)
    }

    /// The file's text: sorted, one trajectory per line, ending in a newline.
    pub fn to_text(&self) -> String {
        let mut top = Map::new();
        top.insert("chainsmith".into(), Value::String(FORMAT.into()));
        let mut imports = Map::new();
        for (file, set) in &self.imports {
            let mut entry = Map::new();
            entry.insert("kind".into(), Value::String(set.kind.clone()));
            entry.insert("trajectories".into(), Value::Array(set.trajectories.iter().map(trajectory_json).collect()));
            imports.insert(file.clone(), Value::Object(entry));
        }
        top.insert("imports".into(), Value::Object(imports));
        let mut runs = Map::new();
        for (name, run) in &self.runs {
            let mut entry = Map::new();
            entry.insert("program".into(), Value::String(run.program.clone()));
            if let Some(started) = &run.started {
                entry.insert("started".into(), Value::String(started.clone()));
            }
            entry.insert("ok".into(), Value::Bool(run.ok));
            if let Some(answered) = run.answered {
                entry.insert("answered".into(), Value::Bool(answered));
            }
            entry.insert("tools".into(), Value::Array(run.tools.iter().cloned().map(Value::String).collect()));
            let scores: Map<String, Value> = run.scores.iter().map(|(k, v)| (k.clone(), rounded(*v))).collect();
            entry.insert("scores".into(), Value::Object(scores));
            runs.insert(name.clone(), Value::Object(entry));
        }
        top.insert("runs".into(), Value::Object(runs));
        let mut out = String::new();
        write_value(&mut out, &Value::Object(top), 0);
        out.push('\n');
        out
    }

    /// Writes the store atomically. Refuses (and leaves the file alone) when the file on disk is
    /// not a readable ToolNet store — a link leading out of the workspace included, so learning
    /// stops there until the user removes it, rather than replace what someone planted.
    /// The file lies in the workspace, whose links may be planted: it is written only inside `root`.
    pub fn save(&self, root: &Path) -> Result<PathBuf, StoreError> {
        let file = Store::path(root);
        if file.symlink_metadata().is_ok() {
            Store::load(root)?;
        }
        crate::files::write_inside(root, &file, self.to_text().as_bytes())
            .map_err(|e| StoreError::Unwritable { file: file.clone(), message: e.to_string() })?;
        Ok(file)
    }
}

/// Why a store's text cannot be used (before it is tied to a file).
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    Syntax { message: String, offset: usize },
    Malformed(String),
    Foreign(String),
}

impl Problem {
    fn into_error(self, file: &Path) -> StoreError {
        let file = file.to_path_buf();
        match self {
            Problem::Syntax { message, offset } => StoreError::Corrupt { file, message, offset },
            Problem::Malformed(message) => StoreError::Corrupt { file, message, offset: 0 },
            Problem::Foreign(message) => StoreError::Foreign { file, message },
        }
    }
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array()?.iter().map(|s| s.as_str().map(str::to_string)).collect()
}

fn trajectory(v: &Value) -> Option<Trajectory> {
    match v {
        Value::Array(_) => Some(Trajectory { tools: strings(v)?, query: None }),
        Value::Object(o) => Some(Trajectory {
            tools: strings(o.get("tools")?)?,
            query: o.get("query").and_then(Value::as_str).map(str::to_string),
        }),
        _ => None,
    }
}

fn trajectory_json(t: &Trajectory) -> Value {
    let mut o = Map::new();
    if let Some(q) = &t.query {
        o.insert("query".into(), Value::String(q.clone()));
    }
    o.insert("tools".into(), Value::Array(t.tools.iter().cloned().map(Value::String).collect()));
    Value::Object(o)
}

/// Two decimals; whole numbers as integers (`2`, not `2.0`).
fn rounded(x: f64) -> Value {
    let r = (x * 100.0).round() / 100.0;
    if r.fract() == 0.0 && r.abs() < 1e15 {
        Value::Number(Number::from(r as i64))
    } else {
        Number::from_f64(r).map_or(Value::Null, Value::Number)
    }
}

/// 1-based line and column (as serde_json counts them) → byte offset.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return (offset + column.saturating_sub(1)).min(text.len());
        }
        offset += l.len();
    }
    text.len()
}

/// Whether a value is written on one line: it holds no objects, and arrays only of scalars.
fn is_flat(v: &Value) -> bool {
    match v {
        Value::Array(items) => items.iter().all(|i| !i.is_array() && !i.is_object()),
        Value::Object(map) => map.values().all(|i| !i.is_object() && (!i.is_array() || is_flat(i))),
        _ => true,
    }
}

/// Pretty JSON with flat containers on one line (a trajectory, a run's scores).
fn write_value(out: &mut String, v: &Value, indent: usize) {
    let scalar = |v: &Value| serde_json::to_string(v).expect("JSON values serialise");
    match v {
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Array(items) if is_flat(v) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&scalar(item));
            }
            out.push(']');
        }
        Value::Object(map) if is_flat(v) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&scalar(&Value::String(k.clone())));
                out.push_str(": ");
                write_value(out, item, indent);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&"  ".repeat(indent + 1));
                write_value(out, item, indent + 1);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&"  ".repeat(indent));
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("{\n");
            for (i, (k, item)) in map.iter().enumerate() {
                out.push_str(&"  ".repeat(indent + 1));
                out.push_str(&scalar(&Value::String(k.clone())));
                out.push_str(": ");
                write_value(out, item, indent + 1);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&"  ".repeat(indent));
            out.push('}');
        }
        other => out.push_str(&scalar(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Store {
        let mut store = Store::default();
        store.imports.insert(
            "data/tmdb.json".into(),
            ImportedSet {
                kind: "restbench".into(),
                trajectories: vec![
                    Trajectory { tools: vec!["t.a".into(), "t.b".into()], query: Some("q \"one\"".into()) },
                    Trajectory::new(["t.c"]),
                ],
            },
        );
        store.runs.insert(
            "20250101T000000-a.py.json".into(),
            RunRecord {
                program: "a.py".into(),
                started: Some("2025-01-01T00:00:00Z".into()),
                ok: false,
                answered: None,
                tools: vec!["t.a".into()],
                scores: [("t.a".to_string(), 0.0), ("t.b".to_string(), -2.0), ("t.c".to_string(), 1.0 / 3.0)]
                    .into_iter()
                    .collect(),
            },
        );
        store
    }

    #[test]
    fn the_text_is_sorted_flat_and_rounded() {
        let text = sample().to_text();
        assert_eq!(
            text,
            r#"{
  "chainsmith": "toolnet/1",
  "imports": {
    "data/tmdb.json": {
      "kind": "restbench",
      "trajectories": [
        {"query": "q \"one\"", "tools": ["t.a", "t.b"]},
        {"tools": ["t.c"]}
      ]
    }
  },
  "runs": {
    "20250101T000000-a.py.json": {
      "program": "a.py",
      "started": "2025-01-01T00:00:00Z",
      "ok": false,
      "tools": ["t.a"],
      "scores": {"t.a": 0, "t.b": -2, "t.c": 0.33}
    }
  }
}
"#
        );
        let back = Store::parse(&text).unwrap();
        assert_eq!(back.imports, sample().imports);
        assert_eq!(back.runs["20250101T000000-a.py.json"].scores["t.c"], 0.33);
        assert_eq!(back.to_text(), text, "a round trip changes nothing");
    }

    #[test]
    fn problems_are_told_apart() {
        assert!(matches!(Store::parse("{\"chainsmith\": \"toolnet/1\", "), Err(Problem::Syntax { .. })));
        assert!(matches!(Store::parse("[1, 2]"), Err(Problem::Foreign(_))));
        assert!(matches!(Store::parse("{\"openapi\": \"3.0.0\"}"), Err(Problem::Foreign(_))));
        assert!(
            matches!(Store::parse("{\"chainsmith\": \"toolnet/9\"}"), Err(Problem::Foreign(m)) if m.contains("toolnet/9"))
        );
        assert!(matches!(Store::parse("{\"chainsmith\": \"toolnet/1\", \"imports\": 3}"), Err(Problem::Malformed(_))));
        let Err(Problem::Syntax { offset, .. }) = Store::parse("{\n  \"chainsmith\": \"toolnet/1\",\n  oops\n}") else {
            panic!()
        };
        assert_eq!(offset, "{\n  \"chainsmith\": \"toolnet/1\",\n  ".len());
    }
}
