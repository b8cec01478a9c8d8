//! One file per notification. Each handler is an async function of (context, params): it changes
//! the session under its lock before its first `.await` and never holds the lock across one.

pub mod did_change;
pub mod did_change_configuration;
pub mod did_change_watched_files;
pub mod did_close;
pub mod did_open;
pub mod did_save;
pub mod initialized;
