//! chainsmith: a language server and CLI for tool-chain programs.
//!
//! The pipeline runs left to right: `toolset` reads the workspace's tool protocols into one
//! catalog, `analysis` understands programs against it, and `server` / `cli` present the result.
//! Only `server` speaks LSP types; everything else speaks the core's own.

pub mod analysis;
pub mod cancel;
pub mod cli;
pub mod config;
pub mod diagnostic;
pub mod embedding;
pub mod eval;
pub mod files;
pub mod generate;
pub mod graph;
pub mod jobs;
pub mod llm;
pub mod logging;
pub mod mcp;
pub mod mock;
pub mod names;
pub mod plan;
pub mod probe;
pub mod runtime;
pub mod server;
pub mod text;
pub mod textsearch;
pub mod toolset;
pub mod trust;
