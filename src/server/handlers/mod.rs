//! One file per request, notification and command.
//!
//! A request handler is a plain function of (snapshot, params): it runs on an immutable copy of
//! the state, never touches the session lock and never awaits, so the router can run it under
//! `catch_unwind` and answer concurrently with edits. Notification handlers ([`notifications`])
//! and command handlers ([`commands`]) are async functions of the server's `Context`;
//! [`initialize`] answers the handshake.

pub mod code_action;
pub mod code_lens;
pub mod completion;
pub mod completion_resolve;
pub mod definition;
pub mod document_symbol;
pub mod hover;
pub mod inlay_hint;
pub mod signature_help;
pub mod workspace_symbol;

pub mod commands;
pub mod initialize;
pub mod notifications;
