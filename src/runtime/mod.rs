//! Running tool-chain programs: the MCP stdio client (the runtime proper lands with the runtime issue).

pub mod mcp;
