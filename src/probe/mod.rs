//! Black-box probing: decoding tool outputs, inferring response schemas from them, and measuring
//! how well inference recovers declared schemas.

pub mod decode;
pub mod eval;
pub mod infer;
