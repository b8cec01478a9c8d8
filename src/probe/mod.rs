//! Black-box probing: decoding tool outputs, inferring response schemas from them, and measuring
//! how well inference recovers declared schemas; instance discovery (LLM-written programs run
//! against the tool), the chain of probing for tools that need IDs from others, and write-back
//! (native files in place, `.chainsmith/probed/<toolset>.json` overlays for other sources).

pub mod chain;
pub mod decode;
pub mod discover;
pub mod infer;
pub mod schema_recovery;
pub mod write;
