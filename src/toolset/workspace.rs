//! Workspace loading (in progress).
