//! How well inference recovers declared schemas: key-path precision/recall and type agreement of
//! schemas inferred from response examples (OpenAPI) or from recorded real responses (ToolBench
//! DFSDT answers) against the schemas the protocols declare.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::{decode, infer};
use crate::toolset::schema::{NoRefs, Refs};
use crate::toolset::{doc, openapi, schema, toolbench};

/// Key paths of a schema (`results[].id`) with the non-null types each admits.
pub fn key_paths(refs: &dyn Refs, schema_value: &Value) -> BTreeMap<String, BTreeSet<&'static str>> {
    let mut out = BTreeMap::new();
    walk(refs, schema_value, String::new(), &mut out, 0, &mut 5_000);
    out
}

fn walk(
    refs: &dyn Refs,
    s: &Value,
    path: String,
    out: &mut BTreeMap<String, BTreeSet<&'static str>>,
    depth: usize,
    budget: &mut usize,
) {
    // Bounded in schemas visited too: recursive references would otherwise multiply the walk.
    if depth > 12 || *budget == 0 {
        return;
    }
    *budget -= 1;
    let types: BTreeSet<&'static str> = schema::types(refs, s).into_iter().filter(|t| *t != "null").collect();
    if !path.is_empty() {
        out.insert(path.clone(), types.clone());
    }
    for (k, sub) in schema::keys(refs, s) {
        let p = if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
        walk(refs, sub, p, out, depth + 1, budget);
    }
    if let Some(items) = schema::items(refs, s) {
        walk(refs, items, format!("{path}[]"), out, depth + 1, budget);
    }
}

/// Sums over compared (inferred, declared) pairs.
#[derive(Debug, Default, Clone, Copy)]
pub struct Agreement {
    pub pairs: usize,
    pub inferred_paths: usize,
    pub declared_paths: usize,
    pub common_paths: usize,
    /// Common paths whose types are equal.
    pub same_type: usize,
    /// Common paths whose types agree up to integer ⊂ number.
    pub compatible_type: usize,
}

impl Agreement {
    /// `refs`: where the declared schema's references lead (an inferred schema has none).
    pub fn add(&mut self, inferred: &Value, refs: &dyn Refs, declared: &Value) {
        let a = key_paths(&NoRefs, inferred);
        let b = key_paths(refs, declared);
        self.pairs += 1;
        self.inferred_paths += a.len();
        self.declared_paths += b.len();
        for (path, ta) in &a {
            let Some(tb) = b.get(path) else { continue };
            self.common_paths += 1;
            if ta == tb || tb.is_empty() {
                self.same_type += 1;
                self.compatible_type += 1;
            } else if ta.iter().all(|t| tb.contains(t) || (*t == "integer" && tb.contains("number"))) {
                self.compatible_type += 1;
            }
        }
    }

    pub fn precision(&self) -> f64 {
        ratio(self.common_paths, self.inferred_paths)
    }
    pub fn recall(&self) -> f64 {
        ratio(self.common_paths, self.declared_paths)
    }
    pub fn type_agreement(&self) -> f64 {
        ratio(self.same_type, self.common_paths)
    }
    pub fn type_compatibility(&self) -> f64 {
        ratio(self.compatible_type, self.common_paths)
    }

    pub fn lines(&self) -> Vec<String> {
        vec![
            format!("keypath precision {:.3}", self.precision()),
            format!("keypath recall {:.3}", self.recall()),
            format!("type agreement {:.3}", self.type_agreement()),
            format!("type agreement (integer within number) {:.3}", self.type_compatibility()),
        ]
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// (a): every OpenAPI operation with a response example: the schema inferred from its examples
/// against the declared response schema.
pub fn openapi_examples(file: &Path) -> anyhow::Result<(Agreement, usize)> {
    let text = crate::files::read_text(file, crate::files::MAX_READ)?;
    let node = doc::parse(&text, doc::Syntax::of_path(file))
        .map_err(|e| anyhow::anyhow!("{}: {}", file.display(), e.message))?;
    let loaded = openapi::load(&node, &text, file, "eval");
    let mut agreement = Agreement::default();
    let mut operations = 0;
    for tool in &loaded.tools {
        let examples: Vec<&Value> = tool.examples.iter().filter_map(|e| e.response.as_ref()).collect();
        let (Some(declared), false) = (&*tool.response, examples.is_empty()) else { continue };
        operations += 1;
        agreement.add(&infer::infer(examples), tool, declared);
    }
    Ok((agreement, operations))
}

/// Recorded responses in DFSDT answer files: function name → decoded responses.
pub fn recorded_responses(answers_dir: &Path) -> anyhow::Result<BTreeMap<String, Vec<Value>>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut files: Vec<_> = walkdir::WalkDir::new(answers_dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| e.into_path())
        .collect();
    files.sort();
    for file in files {
        let Ok(value) = serde_json::from_str::<Value>(&crate::files::read_text(&file, crate::files::MAX_READ)?) else {
            continue;
        };
        // The DFSDT tree holds every call of the search, pruned branches included: an `Action`
        // node names the function, its `Action Input` child has the arguments and the observation.
        let Some(root) = value.pointer("/tree/tree") else { continue };
        let mut seen = BTreeSet::new();
        let mut stack = vec![(root, None::<&str>)];
        while let Some((node, action)) = stack.pop() {
            let kind = node.get("node_type").and_then(Value::as_str).unwrap_or("");
            let description = node.get("description").and_then(Value::as_str).unwrap_or("");
            if kind == "Action Input"
                && let Some(name) = action.filter(|n| *n != "Finish")
                && let Some(observation) = node.get("observation").and_then(Value::as_str)
                && let Ok(envelope) = serde_json::from_str::<Value>(observation)
            {
                let failed = envelope.get("error").and_then(Value::as_str).is_some_and(|e| !e.is_empty());
                if let Some(raw) = envelope.get("response").and_then(Value::as_str)
                    && !failed
                    && !raw.trim().is_empty()
                    && seen.insert((name.to_string(), description.to_string(), raw.to_string()))
                {
                    let (decoded, _) = decode::decode(raw);
                    if decoded.is_object() || decoded.is_array() {
                        out.entry(name.to_string()).or_default().push(decoded);
                    }
                }
            }
            let next_action = if kind == "Action" { Some(description) } else { None };
            for child in node.get("children").and_then(Value::as_array).into_iter().flatten() {
                stack.push((child, next_action));
            }
        }
    }
    Ok(out)
}

/// (b): schemas inferred from recorded responses (several per tool where the tree called it more
/// than once) against `template_response` from the query files, where one is given.
pub struct ToolBenchReport {
    pub agreement: Agreement,
    pub tools_with_responses: usize,
    pub samples: usize,
    pub multi_sample_tools: usize,
    pub compared: usize,
}

pub fn toolbench_answers(answers_dir: &Path, query_files: &[&Path]) -> anyhow::Result<ToolBenchReport> {
    let recorded = recorded_responses(answers_dir)?;
    let mut declared: BTreeMap<String, Value> = BTreeMap::new();
    for file in query_files {
        let text = crate::files::read_text(file, crate::files::MAX_READ)?;
        let Ok(node) = doc::parse(&text, doc::Syntax::Json) else { continue };
        for mut tool in toolbench::load(&node, &text, file, "eval").tools {
            if let Some(r) = tool.response.take() {
                declared.entry(tool.name).or_insert(r);
            }
        }
    }
    let mut report = ToolBenchReport {
        agreement: Agreement::default(),
        tools_with_responses: recorded.len(),
        samples: recorded.values().map(Vec::len).sum(),
        multi_sample_tools: recorded.values().filter(|v| v.len() > 1).count(),
        compared: 0,
    };
    for (name, samples) in &recorded {
        // ToolBench cut function names at 64 characters.
        let schema = declared.get(name).or_else(|| {
            (name.len() >= 64)
                .then(|| declared.iter().find(|(k, _)| k.starts_with(name.as_str())).map(|(_, v)| v))
                .flatten()
        });
        if let Some(schema) = schema {
            report.compared += 1;
            report.agreement.add(&infer::infer(samples.iter()), &NoRefs, schema);
        }
    }
    Ok(report)
}
