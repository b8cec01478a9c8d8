//! config (in progress)
