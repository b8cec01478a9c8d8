pub mod openai;
pub mod runtime;
