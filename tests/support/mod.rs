pub mod lsp;
pub mod openai;
pub mod runtime;
