pub mod external;
pub mod lsp;
pub mod openai;
pub mod probe;
pub mod recorder;
pub mod runtime;
