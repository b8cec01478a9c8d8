//! Schema drift seen in runs: a real response that contradicts the schema its protocol declares
//! (a required key missing, a wrong type, a value outside an enum, a key a closed object does not
//! declare) is reported on the tool's protocol entry — the place a user fixes it — with what was
//! observed, and can be written into the probed overlay as the tool's shape from then on.

use std::path::Path;

use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::toolset::{Catalog, Tool, schema};

/// How many contradictions one response reports.
const MAX_FINDINGS: usize = 5;

/// One tool's response that contradicted its declared schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// `toolset.name`.
    pub tool: String,
    /// The call of the run that answered it.
    pub call: u32,
    pub arguments: Value,
    /// `(path, what)`: `results[0].gender`, "expected integer, got null".
    pub findings: Vec<(String, String)>,
    /// The response as it came (before the trace's size cap, so the shape is whole).
    pub observed: Value,
}

impl Drift {
    /// The drift of a successful response, if it contradicts the tool's declared schema.
    pub fn of(tool: &Tool, call: u32, arguments: &Value, response: &Value) -> Option<Drift> {
        let declared = tool.response.as_ref()?;
        let findings = schema::contradictions(tool, declared, response, MAX_FINDINGS);
        (!findings.is_empty()).then(|| Drift {
            tool: tool.id(),
            call,
            arguments: arguments.clone(),
            findings,
            observed: response.clone(),
        })
    }

    /// A `schema-drift` warning on the tool's entry in its protocol file.
    pub fn diagnostic(&self, catalog: &Catalog, program: &Path) -> Option<Diagnostic> {
        let tool = catalog.find(&self.tool).ok()?;
        let findings: Vec<String> = self
            .findings
            .iter()
            .map(|(path, what)| if path.is_empty() { what.clone() } else { format!("`{path}`: {what}") })
            .collect();
        let program = program.file_name().map_or_else(|| program.display().to_string(), |n| n.to_string_lossy().into());
        let message = format!(
            "`{}` answered outside its declared response schema in a run of {program} (call #{}): {}",
            self.tool,
            self.call,
            findings.join("; ")
        );
        Some(Diagnostic::warning(&tool.source.file, tool.source.name_range, "schema-drift", message))
    }
}
