//! chainsmith: a language server and CLI for tool-chain programs.
//!
//! The pipeline runs left to right: `toolset` reads the workspace's tool protocols into one
//! catalog, `analysis` understands programs against it, and `server` / the CLI present the result.
//! Only `server` speaks LSP types; everything else speaks the core's own.

pub mod config;
pub mod diagnostic;
pub mod text;
pub mod toolset;
