//! Loader (in progress).

use std::path::Path;

use super::Loaded;
use super::doc::Node;

pub fn load(_doc: &Node, _text: &str, _file: &Path, _toolset: &str) -> Loaded {
    Loaded::default()
}
