//! chainsmith's integration tests, one test binary (`cargo test --test it`): one module per area,
//! the shared support code in `tests/support/` (the LSP test client, the scripted LLM, the TMDB-like
//! test server) and the benchmark data the tests read in `tests/fixtures/`.

mod catalog_cache;
mod check_cli;
mod editors;
mod eval_cli;
mod fuzz;
mod generate_cli;
mod generate_draft;
mod generate_lsp;
mod generate_search;
mod graph_cli;
mod graph_figure4_generated_traces;
mod graph_figure4_runtime;
mod graph_import;
mod graph_store;
mod jobs;
mod layers;
mod llm_client;
mod lsp_in_process;
mod lsp_run;
mod lsp_stdio;
mod lsp_toolnet;
mod mcp_servers;
mod patterns;
mod plan_cli;
mod planted;
mod probe_cli;
mod probe_eval;
mod probe_lsp;
mod real_specs;
mod retrieve_cli;
mod runtime;
mod sandbox;
mod secrets;
#[path = "../support/mod.rs"]
mod support;
mod trust;
