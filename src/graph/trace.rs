//! Run traces as ToolNet reads them, and the evaluators that score a run's tools.
//!
//! The runtime writes one trace per run to `.chainsmith/runs/<time>-<file>.json`, in the shape
//! DESIGN.md fixes: `{program, started, ok, calls: [{id, tool, arguments, ok, status, response,
//! error, duration_ms, line}], error?: {type, message, line, attributed_call}}`. [`TraceSummary`] reads
//! that shape tolerantly: unknown fields are ignored, missing ones take defaults, and the heavy
//! parts (`arguments`, `response`) are skipped without being kept.
//!
//! An [`Evaluator`] turns a run into one score per used tool in [-3, 3] (ToolNet's evaluator).
//! [`TraceEvaluator`] is the deterministic default; an LLM evaluator plugs in through the same trait.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One run of a program, as recorded by the runtime, read back without its heavy parts: a summary
/// of the runtime's [`crate::runtime::Trace`] (the full record a run writes), named apart from it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TraceSummary {
    #[serde(default)]
    pub program: String,
    #[serde(default)]
    pub started: Option<Value>,
    #[serde(default)]
    pub ok: Option<bool>,
    #[serde(default)]
    pub calls: Vec<SummaryCall>,
    #[serde(default)]
    pub error: Option<SummaryError>,
    /// Whether the run answered its task: set by whoever judged the output (the user, `generate`,
    /// an LLM judge). Absent means "not judged".
    #[serde(default, alias = "answers_task", alias = "task_answered")]
    pub answered: Option<bool>,
}

/// One tool call of a run, as the summary keeps it (the runtime's full record is
/// [`crate::runtime::TraceCall`]).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SummaryCall {
    #[serde(default)]
    pub id: Value,
    /// `toolset.name`.
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub ok: Option<bool>,
    #[serde(default)]
    pub status: Value,
    #[serde(default)]
    pub error: Value,
    #[serde(default)]
    pub duration_ms: Value,
    /// The program line of the call.
    #[serde(default)]
    pub line: Option<u64>,
}

/// Why a run failed, and the call it is attributed to.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SummaryError {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub attributed_call: Value,
}

impl SummaryCall {
    /// Whether the call succeeded: its `ok`, else no error and no 4xx/5xx status.
    pub fn succeeded(&self) -> bool {
        if let Some(ok) = self.ok {
            return ok;
        }
        let error =
            !(self.error.is_null() || self.error == Value::Bool(false) || self.error == Value::String(String::new()));
        let bad_status = self.status.as_u64().is_some_and(|s| s >= 400);
        !error && !bad_status
    }
}

impl TraceSummary {
    /// Whether the run succeeded: its `ok`, else no `error`.
    pub fn succeeded(&self) -> bool {
        self.ok.unwrap_or(self.error.is_none())
    }

    /// The tools of the calls that succeeded, in order: the run's trajectory.
    pub fn trajectory(&self) -> Vec<String> {
        self.calls.iter().filter(|c| c.succeeded() && !c.tool.is_empty()).map(|c| c.tool.clone()).collect()
    }

    /// The index of the call the run's error is attributed to: `attributed_call` naming a call's
    /// `id` (or, when calls carry no ids, its index), else the last call on the error's line.
    pub fn attributed_call(&self) -> Option<usize> {
        let error = self.error.as_ref()?;
        let attributed = &error.attributed_call;
        if !attributed.is_null() {
            if let Some(i) = self.calls.iter().position(|c| !c.id.is_null() && ids_match(&c.id, attributed)) {
                return Some(i);
            }
            if self.calls.iter().all(|c| c.id.is_null()) {
                return attributed.as_u64().map(|i| i as usize).filter(|&i| i < self.calls.len());
            }
            return None;
        }
        let line = error.line?;
        self.calls.iter().rposition(|c| c.line == Some(line))
    }
}

/// `3` and `"3"` name the same call.
fn ids_match(a: &Value, b: &Value) -> bool {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    a == b || text(a) == text(b)
}

/// ToolNet's evaluator: scores each tool a run used, in [-3, 3].
pub trait Evaluator {
    fn evaluate(&self, trace: &TraceSummary) -> BTreeMap<String, f64>;
}

/// The default, deterministic evaluator. Per call: an error −2; a success in a run that failed at
/// a line attributed to that call −1; a success in a successful run +1; otherwise 0. A tool called
/// several times keeps its worst call's score. When the run is marked as answering its task, every
/// tool it used gets +1 more.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceEvaluator;

impl Evaluator for TraceEvaluator {
    fn evaluate(&self, trace: &TraceSummary) -> BTreeMap<String, f64> {
        let run_ok = trace.succeeded();
        let attributed = if run_ok { None } else { trace.attributed_call() };
        let mut scores: BTreeMap<String, f64> = BTreeMap::new();
        for (i, call) in trace.calls.iter().enumerate() {
            if call.tool.is_empty() {
                continue;
            }
            let score = if !call.succeeded() {
                -2.0
            } else if attributed == Some(i) {
                -1.0
            } else if run_ok {
                1.0
            } else {
                0.0
            };
            scores.entry(call.tool.clone()).and_modify(|s| *s = s.min(score)).or_insert(score);
        }
        if trace.answered == Some(true) {
            for s in scores.values_mut() {
                *s += 1.0;
            }
        }
        for s in scores.values_mut() {
            *s = s.clamp(-3.0, 3.0);
        }
        scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn trace(v: Value) -> TraceSummary {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn reads_the_design_shape_and_ignores_the_rest() {
        let t = trace(json!({
            "program": "chains/a.py", "started": "2025-01-01T00:00:00Z", "ok": false, "extra": [1, 2],
            "calls": [
                {"id": 1, "tool": "tmdb.search_person", "arguments": {"query": "x"}, "ok": true, "status": 200,
                 "response": {"results": [{"id": 5}]}, "error": null, "duration_ms": 12, "line": 3, "new": true},
                {"id": 2, "tool": "tmdb.person", "arguments": {}, "ok": false, "status": 500,
                 "response": null, "error": "HTTP 500", "duration_ms": 4, "line": 4}
            ],
            "error": {"type": "ToolError", "message": "HTTP 500", "line": 4, "attributed_call": 2}
        }));
        assert_eq!(t.program, "chains/a.py");
        assert!(!t.succeeded());
        assert_eq!(t.trajectory(), ["tmdb.search_person"]);
        assert_eq!(t.attributed_call(), Some(1));
        let scores = TraceEvaluator.evaluate(&t);
        assert_eq!(scores["tmdb.search_person"], 0.0);
        assert_eq!(scores["tmdb.person"], -2.0);
    }

    #[test]
    fn the_default_evaluator_follows_its_rules() {
        // A successful call on the failing line, attributed: −1; the others 0.
        let failed = trace(json!({
            "ok": false,
            "calls": [
                {"id": "a", "tool": "t.a", "ok": true, "line": 1},
                {"id": "b", "tool": "t.b", "ok": true, "line": 2}
            ],
            "error": {"type": "KeyError", "message": "'x'", "line": 5, "attributed_call": "b"}
        }));
        let s = TraceEvaluator.evaluate(&failed);
        assert_eq!((s["t.a"], s["t.b"]), (0.0, -1.0));

        // Without attributed_call, the call on the error's line is the one.
        let by_line = trace(json!({
            "ok": false,
            "calls": [{"tool": "t.a", "ok": true, "line": 1}, {"tool": "t.b", "ok": true, "line": 2}],
            "error": {"type": "KeyError", "message": "'x'", "line": 1}
        }));
        let s = TraceEvaluator.evaluate(&by_line);
        assert_eq!((s["t.a"], s["t.b"]), (-1.0, 0.0));

        // A successful run: +1 each; answering its task: +1 more; a tool's worst call counts.
        let answered = trace(json!({
            "ok": true, "answered": true,
            "calls": [{"tool": "t.a", "ok": true}, {"tool": "t.b", "ok": false, "status": 500},
                      {"tool": "t.b", "ok": true}]
        }));
        let s = TraceEvaluator.evaluate(&answered);
        assert_eq!((s["t.a"], s["t.b"]), (2.0, -1.0));
        assert_eq!(answered.trajectory(), ["t.a", "t.b"]);
    }

    #[test]
    fn missing_fields_are_inferred() {
        let t = trace(json!({"calls": [{"tool": "t.a", "status": 404}, {"tool": "t.b"}]}));
        assert!(t.succeeded(), "no error: the run succeeded");
        assert!(!t.calls[0].succeeded() && t.calls[1].succeeded());
        let s = TraceEvaluator.evaluate(&t);
        assert_eq!((s["t.a"], s["t.b"]), (-2.0, 1.0));
    }
}
