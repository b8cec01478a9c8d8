pub mod external;
pub mod lsp;
pub mod openai;
pub mod probe;
pub mod runtime;
