//! The layers of `src/`, enforced: a top-level module may use only modules of lower layers.
//! docs/ARCHITECTURE.md draws the same table; a new module must be placed in it here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first. A module may depend on modules of strictly lower layers only.
const LAYERS: &[&[&str]] = &[
    &["text", "names", "logging", "files", "cancel"],
    &["diagnostic", "textsearch"],
    &["config", "embedding"],
    &["trust"],
    &["mcp", "llm"],
    &["toolset"],
    &["analysis", "mock"],
    &["runtime"],
    &["graph"],
    &["plan"],
    &["generate"],
    &["probe"],
    &["jobs"],
    &["eval"],
    &["server", "cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without comments and string literals, so prose naming `crate::x` does not count.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(raw) = rest.strip_prefix("r#\"") {
            i += 3 + raw.find("\"#").map_or(raw.len(), |e| e + 2);
        } else if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if bytes[i] == b'\'' && rest.len() > 2 && (rest.as_bytes()[2] == b'\'' || rest.starts_with("'\\")) {
            // A char literal ('"', '\''): skip it; a lifetime has no closing quote there.
            let close = rest[1..].find('\'').map_or(1, |e| e + 2);
            i += close;
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The top-level modules a piece of code names through `crate::`.
fn crate_references(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded = rest[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
        rest = &rest[at + "crate::".len()..];
        if preceded {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::{c, d}, e}`: the first name of every top-level item.
            let mut depth = 0;
            let mut start = Some(0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = Some(i + 1),
                    c if depth == 0 && start.is_some() && (c.is_alphabetic() || c == '_') => {
                        let name: String =
                            group[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        found.insert(name);
                        start = None;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

#[test]
fn every_module_uses_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut upward = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let top =
            relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let Some(own) = layer_of(&top) else {
            panic!("src/{} belongs to module `{top}`, which has no layer in tests/it/layers.rs", relative.display());
        };
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        for used in crate_references(&code) {
            if used == top || used == "self" || used == "super" {
                continue;
            }
            match layer_of(&used) {
                Some(layer) if layer < own => {}
                Some(_) => upward.push(format!("src/{}: `{top}` uses `{used}`", relative.display())),
                None => panic!("src/{} uses `crate::{used}`, which has no layer", relative.display()),
            }
        }
    }
    assert!(upward.is_empty(), "uses of the same or a higher layer:\n{}", upward.join("\n"));
}

#[test]
fn every_top_level_module_has_a_layer() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(name) = line.strip_prefix("pub mod ").or_else(|| line.strip_prefix("mod ")) {
            let name = name.trim_end_matches(';');
            assert!(layer_of(name).is_some(), "module `{name}` has no layer in tests/it/layers.rs");
        }
    }
}

#[test]
fn the_reader_sees_every_form_of_use() {
    let code = code_only(
        "use crate::a::B;\nuse crate::{c, d::{E, F}, g::h};\nlet x = crate::i::j(\"crate::k\");\n// crate::l\nfn f<'a>(c: char) -> bool { c == '\"' && crate::m::n() }",
    );
    let found: Vec<String> = crate_references(&code).into_iter().collect();
    assert_eq!(found, ["a", "c", "d", "g", "i", "m"]);
}
