//! `chainsmith probe-eval`: how well response-schema inference recovers declared schemas.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::probe::schema_recovery;

pub fn probe_eval(openapi: &[PathBuf], answers: Option<&PathBuf>, queries: &[PathBuf]) -> Result<u8> {
    if openapi.is_empty() && answers.is_none() {
        bail!("give --openapi SPEC and/or --answers DIR --queries FILE...");
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for spec in openapi {
        let (agreement, operations) = schema_recovery::openapi_examples(spec)?;
        writeln!(
            out,
            "[{}] {operations} operations with a response example, inferred from the example vs declared",
            spec.display()
        )?;
        for line in agreement.lines() {
            writeln!(out, "{line}")?;
        }
    }
    if let Some(dir) = answers {
        let files: Vec<&std::path::Path> = queries.iter().map(PathBuf::as_path).collect();
        let report = schema_recovery::toolbench_answers(dir, &files)?;
        writeln!(
            out,
            "[{}] {} tools with recorded responses ({} samples, {} tools with several); {} compared with template_response",
            dir.display(),
            report.tools_with_responses,
            report.samples,
            report.multi_sample_tools,
            report.compared
        )?;
        for line in report.agreement.lines() {
            writeln!(out, "{line}")?;
        }
    }
    Ok(0)
}
