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

/// A module path (`["analysis", "dialect"]`) and the file that holds it, for every file of `src/`.
fn modules(src: &Path) -> Vec<(Vec<String>, PathBuf)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(src).unwrap().with_extension("");
            let mut path: Vec<String> =
                relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            if path.last().is_some_and(|last| last == "mod") || path == ["lib"] || path == ["main"] {
                path.pop();
            }
            (path, file)
        })
        .collect()
}

/// Every path that starts at `crate::`, `super::` or `self::`, as written (a use tree's groups
/// expanded: `super::{a::B, c}` is `super::a::B` and `super::c`), with where it starts.
fn module_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    fn is_word(c: char) -> bool {
        c.is_alphanumeric() || c == '_'
    }
    /// One use tree from `at`, every path in it appended to `out`; where the tree ends.
    fn tree(code: &str, mut at: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        loop {
            let rest = &code[at..];
            if let Some(group) = rest.strip_prefix('{') {
                at = code.len() - group.len();
                loop {
                    at +=
                        code[at..].len() - code[at..].trim_start_matches(|c: char| c.is_whitespace() || c == ',').len();
                    if code[at..].is_empty() || code[at..].starts_with('}') {
                        return (at + 1).min(code.len());
                    }
                    at = tree(code, at, prefix.clone(), out);
                    // What follows an item in a group (` as name`) up to the next item or the end.
                    at += code[at..].find([',', '}']).unwrap_or(code.len() - at);
                }
            }
            let word: String = rest.chars().take_while(|c| is_word(*c)).collect();
            if word.is_empty() {
                out.push(prefix);
                return at;
            }
            at += word.len();
            prefix.push(word);
            match code[at..].strip_prefix("::") {
                Some(_) => at += 2,
                None => {
                    out.push(prefix);
                    return at;
                }
            }
        }
    }
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let starts = ["crate::", "super::", "self::"].iter().any(|s| rest.starts_with(s));
        let preceded = code[..at].chars().next_back().is_some_and(|c| is_word(c) || c == ':' || c == '$');
        if starts && !preceded {
            let mut paths = Vec::new();
            let end = tree(code, at, Vec::new(), &mut paths);
            found.extend(paths.into_iter().filter(|p| !p.is_empty()).map(|p| (at, p)));
            at = end.max(at + 1);
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    found
}

/// The inline modules of a file (`mod tests { … }`): their names and the byte ranges of their
/// bodies, so a `super::` inside one is read from where it stands.
fn inline_modules(code: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("mod ").map(|i| from + i) {
        from = at + 4;
        if code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = code[from..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let after = code[from..].trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let mut depth = 0;
        let close = code[open..]
            .char_indices()
            .find_map(|(i, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(open + i)
            })
            .unwrap_or(code.len());
        found.push((name, open..close));
    }
    found
}

/// Inside a folder, the files (and sub-folders) must not use each other in a cycle either: one
/// of them is the lower, and the shared item belongs there or in a small file of its own. A
/// folder's `mod.rs` is its face to the rest of the crate and is not counted; a re-export through
/// it (`crate::toolset::Texts`) is not seen. `#[cfg(test)]` modules count as the code they test.
#[test]
fn no_cycles_among_the_files_of_a_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let known: BTreeSet<&[String]> = modules.iter().map(|(path, _)| path.as_slice()).collect();
    // (folder, from, to) → the first use that makes the edge, as `file: path`.
    let mut edges: std::collections::BTreeMap<(Vec<String>, String, String), String> = Default::default();
    for (own, file) in &modules {
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        let inline = inline_modules(&code);
        for (at, path) in module_paths(&code) {
            let mut here = own.clone();
            here.extend(inline.iter().filter(|(_, body)| body.contains(&at)).map(|(name, _)| name.clone()));
            let mut segments = path.iter().peekable();
            let mut resolved = match segments.peek().map(|s| s.as_str()) {
                Some("crate") => {
                    segments.next();
                    Vec::new()
                }
                Some("self") => {
                    segments.next();
                    here
                }
                _ => here,
            };
            while segments.next_if(|s| *s == "super").is_some() {
                resolved.pop();
            }
            resolved.extend(segments.cloned());
            let Some(target) = (1..=resolved.len()).rev().map(|n| &resolved[..n]).find(|p| known.contains(p)) else {
                continue;
            };
            let common = own.iter().zip(target).take_while(|(a, b)| a == b).count();
            // The top level is the layers' business; a file and its own folder are one thing.
            if common == 0 || common == own.len() || common == target.len() {
                continue;
            }
            let key = (own[..common].to_vec(), own[common].clone(), target[common].clone());
            let relative = file.strip_prefix(&src).unwrap().display().to_string();
            edges.entry(key).or_insert_with(|| format!("src/{relative} uses `{}`", path.join("::")));
        }
    }
    let reaches = |folder: &Vec<String>, from: &str, to: &str| {
        let mut seen = BTreeSet::from([from.to_string()]);
        let mut stack = vec![from.to_string()];
        while let Some(node) = stack.pop() {
            for (f, a, b) in edges.keys() {
                if f == folder && *a == node && seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        seen.contains(to)
    };
    let cyclic: Vec<String> = edges
        .iter()
        .filter(|((folder, from, to), _)| reaches(folder, to, from))
        .map(|((folder, from, to), why)| format!("src/{}: {from} → {to}: {why}", folder.join("/")))
        .collect();
    assert!(
        cyclic.is_empty(),
        "files of one folder that use each other in a cycle (move what they share into the lower one, or a small file of its own):\n{}",
        cyclic.join("\n")
    );
}

#[test]
fn the_path_reader_expands_groups_and_sees_inline_modules() {
    let code = code_only(
        "use super::{a::B, c as d, e::{self, F}};\nuse crate::g::h;\nfn f() { self::i::j(); super::super::k(); }\nmod tests { use super::*; }",
    );
    let paths: Vec<String> = module_paths(&code).into_iter().map(|(_, p)| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "super::a::B",
            "super::c",
            "super::e::self",
            "super::e::F",
            "crate::g::h",
            "self::i::j",
            "super::super::k",
            "super"
        ]
        .map(String::from)
    );
    let inline = inline_modules(&code);
    assert_eq!(inline.len(), 1);
    assert_eq!(inline[0].0, "tests");
    assert!(inline[0].1.contains(&code.find("super::*").unwrap()));
}
