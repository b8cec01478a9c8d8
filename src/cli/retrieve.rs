//! `chainsmith retrieve`: candidate tools for a task, and retrieval quality against benchmark files.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::generate::retrieve::{self, CatalogIndex, Options};

/// The queries of benchmark task files (RestBench, ToolBench, StableToolBench; the format detected
/// per item) with their gold tools in this catalog, and how many gold entries it does not have.
pub fn read_task_files(files: &[PathBuf], catalog: &crate::toolset::Catalog) -> Result<(Vec<retrieve::Query>, usize)> {
    let mut queries = Vec::new();
    let mut unmapped = 0;
    for file in files {
        let text = crate::files::read_text(file, crate::files::MAX_READ)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
        let (q, u) = retrieve::read_queries(&value, catalog);
        queries.extend(q);
        unmapped += u;
    }
    Ok((queries, unmapped))
}

pub fn retrieve(root: Option<&Path>, task: Option<&str>, k: Option<usize>, eval: &[PathBuf]) -> Result<u8> {
    let root = super::workspace_root(root, &[])?;
    let (config, catalog) = super::load_workspace(&root)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if !eval.is_empty() {
        let (queries, unmapped) = read_task_files(eval, &catalog)?;
        if queries.is_empty() {
            bail!("no query in {} has a gold tool of this workspace (is --root the right workspace?)", eval.len());
        }
        writeln!(
            out,
            "corpus {} tools; {} queries; {} gold entries not in the corpus",
            catalog.tool_count(),
            queries.len(),
            unmapped
        )?;
        let steps = [
            ("plain BM25", Options::PLAIN),
            ("+ identifier/path tokens", Options { split_identifiers: true, ..Options::PLAIN }),
            ("+ field weights", Options { split_identifiers: true, field_weights: true, ..Options::PLAIN }),
            ("+ tool-level aggregation", Options::BEST),
            (
                "+ query decomposition (reciprocal rank fusion; off by default)",
                Options { decompose: true, ..Options::BEST },
            ),
        ];
        let mut print = |name: &str, s: retrieve::Scores| -> std::io::Result<()> {
            writeln!(out, "[{name}]")?;
            writeln!(out, "ndcg@1 {:.3}", s.ndcg1)?;
            writeln!(out, "ndcg@3 {:.3}", s.ndcg3)?;
            writeln!(out, "ndcg@5 {:.3}", s.ndcg5)?;
            writeln!(out, "recall@20 {:.3}", s.recall20)?;
            if s.ms_p99 > 0.0 {
                writeln!(out, "ms/query p50 {:.2} p99 {:.2}", s.ms_p50, s.ms_p99)?;
            }
            Ok(())
        };
        for (name, options) in steps {
            let index = CatalogIndex::with_options(&catalog, options);
            print(name, retrieve::evaluate(&index, &queries))?;
        }
        let started = std::time::Instant::now();
        let index = super::retrieval_index(&catalog, &config);
        match index.dense() {
            Some(dense) => {
                eprintln!(
                    "chainsmith: {} tools embedded (or read from the cache) in {:.1} s",
                    dense.len(),
                    started.elapsed().as_secs_f64()
                );
                let ids: Vec<String> = catalog.tools().map(|t| t.id()).collect();
                let ranked = |hits: Result<Vec<(usize, f32)>>| -> Vec<String> {
                    hits.unwrap_or_default().into_iter().map(|(doc, _)| ids[doc].clone()).collect()
                };
                let alone = retrieve::evaluate_ranking(&queries, |text| ranked(dense.search_documents(text, 20)));
                print("dense retrieval alone (the embedding model)", alone)?;
                let grouped = retrieve::evaluate_ranking(&queries, |text| ranked(dense.search(text, 20)));
                print("dense retrieval + tool-level aggregation", grouped)?;
                print(
                    "+ dense retrieval (reciprocal rank fusion with the tool-level BM25)",
                    retrieve::evaluate(&index, &queries),
                )?;
            }
            None => eprintln!("chainsmith: no [retrieval] embedding_model in the workspace: BM25 rows only"),
        }
        if let Some(s) = retrieve::evaluate_with_graph(&index, &queries, 5, &config.toolnet) {
            print("+ ToolNet expansion (graph from the other 4 of 5 folds)", s)?;
        }
        return Ok(0);
    }
    let Some(task) = task.filter(|t| !t.trim().is_empty()) else {
        bail!("give a task (`chainsmith retrieve \"TASK\"`) or --eval FILE...");
    };
    let k = k.unwrap_or(config.generate.candidates);
    let index = super::retrieval_index(&catalog, &config);
    for (tool, score) in index.search_tools(&catalog, task, k) {
        let first_line = tool.description.lines().next().unwrap_or("");
        let short: String = first_line.chars().take(80).collect();
        writeln!(out, "{score:7.3}  {}  {}", crate::text::printable(&tool.id()), crate::text::printable(&short))?;
    }
    Ok(0)
}
