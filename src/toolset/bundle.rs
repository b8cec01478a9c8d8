//! Multi-file protocols: `$ref`s to other files (`./schemas/pet.yaml#/Pet`, an operation kept in
//! `resources/get.yml`, as DigitalOcean writes its spec) are bundled into the main document before
//! it is loaded, so one resolver and one schema store serve them like local references.
//!
//! Each referenced (file, pointer) is copied once under `x-chainsmith-bundled/<Name>-<n>` (its last
//! pointer segment, so stubs name it) and every reference to it rewritten to point there, the
//! copy's own references followed
//! relative to its file. Copied nodes carry the byte range of the main file's `$ref` that brought
//! them in, so what is reported about them (and a definition inside them) is located in the file
//! the user opened. Remote references (`https://…`) are never fetched; a file that cannot be read
//! or parsed, or a pointer it lacks, is a located error on the `$ref`.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::doc::{self, Node, NodeKind, Syntax};
use super::refs::BuildBudget;
use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;

/// The root key the bundled copies live under.
pub const BUNDLED: &str = "x-chainsmith-bundled";

/// Schema keywords whose values are data, not schemas.
const DATA_KEYWORDS: [&str; 5] = ["example", "examples", "default", "enum", "const"];

/// Files one protocol may pull in: a guard against a reference maze, not a limit a spec meets.
const MAX_FILES: usize = 2_000;

/// How a file is read (the editor's unsaved text first, then the disk).
pub type Reader<'r> = dyn Fn(&Path) -> Result<String, String> + 'r;

/// A document with the other files it refers to bundled in.
pub struct Bundled {
    pub doc: Node,
    /// What the copies took out of what the document's tools may be built of, sized by the
    /// document and every file read: its tools are built out of what is left (each copy would
    /// otherwise raise the bound eight times its own weight).
    pub budget: BuildBudget,
}

/// The document with its references to other files bundled in, and the problems met; `None` (the
/// document itself, no copy) when it refers to no other file.
pub fn bundle(
    doc: &Node,
    file: &Path,
    read: &Reader<'_>,
    aliases: &doc::ParseBudget,
) -> (Option<Bundled>, Vec<Diagnostic>) {
    if !refers_to_files(doc) {
        return (None, Vec::new());
    }
    let mut bundler = Bundler {
        main: crate::files::normalize(file),
        read,
        aliases,
        docs: HashMap::new(),
        by_identity: HashMap::new(),
        names: HashMap::new(),
        copies: Vec::new(),
        budget: BuildBudget::for_weight(doc.weight()).sized_by("the file and those its `$ref`s name hold"),
        diagnostics: Vec::new(),
    };
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut out = bundler.rewrite(doc, &Context { base: &base, this: None, anchor: None });
    // Copies are rewritten as they are made; a copy can bring in more.
    let mut bundled = Vec::new();
    let mut next = 0;
    while next < bundler.copies.len() {
        let (path, pointer, anchor) = bundler.copies[next].clone();
        next += 1;
        let read = bundler.docs.get(&path).cloned();
        let Some(node) = read.as_deref().and_then(|d| d.as_ref().ok()).and_then(|d| d.pointer(&pointer)) else {
            continue;
        };
        // Nested pointers (`/a`, `/a/b`, `/a/b/c`, …) each copy what the next one copies again.
        let copy = if bundler.budget.take_node(node, anchor) {
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            bundler.rewrite(node, &Context { base: &base, this: Some(&path), anchor: Some(anchor) })
        } else {
            Node { kind: NodeKind::Object(Vec::new()), range: anchor }
        };
        bundled.push((next - 1, copy));
    }
    if let NodeKind::Object(members) = &mut out.kind {
        let range = doc.range;
        let copies = bundled.into_iter().map(|(n, node)| (bundler.copy_key(n), range, node)).collect();
        members.push((BUNDLED.to_string(), range, Node { kind: NodeKind::Object(copies), range }));
    }
    (Some(Bundled { doc: out, budget: bundler.budget }), bundler.diagnostics)
}

fn refers_to_files(node: &Node) -> bool {
    match &node.kind {
        NodeKind::Object(members) => members.iter().any(|(key, _, value)| {
            (key == "$ref" && value.as_str().is_some_and(|r| !r.starts_with('#'))) || refers_to_files(value)
        }),
        NodeKind::Array(items) => items.iter().any(refers_to_files),
        _ => false,
    }
}

struct Bundler<'r> {
    main: PathBuf,
    read: &'r Reader<'r>,
    /// What the YAML files read may expand to, shared with the files loaded beside them.
    aliases: &'r doc::ParseBudget,
    /// Every file read, parsed (or why not).
    docs: HashMap<PathBuf, Rc<Result<Node, String>>>,
    /// The files read, by device and inode: one reached again under another name (a link `d ->
    /// .` spells it `d/ext.json`, `d/d/ext.json`, …; a hard link) is the same document, read,
    /// parsed and counted in what the copies may weigh once.
    by_identity: HashMap<(u64, u64), Rc<Result<Node, String>>>,
    /// (file, pointer) → its copy's number.
    names: HashMap<(PathBuf, String), usize>,
    /// What each number copies, with the range its copy carries.
    copies: Vec<(PathBuf, String, ByteRange)>,
    /// What the copies may weigh, sized by the main document and every file read.
    budget: BuildBudget,
    diagnostics: Vec<Diagnostic>,
}

/// Where the node being rewritten lives.
struct Context<'c> {
    /// The folder its relative references start from.
    base: &'c Path,
    /// Its file when it is not the main document (its local references point into it).
    this: Option<&'c Path>,
    /// The main file's range every node of another file carries.
    anchor: Option<ByteRange>,
}

impl Bundler<'_> {
    fn rewrite(&mut self, node: &Node, cx: &Context<'_>) -> Node {
        let range = cx.anchor.unwrap_or(node.range);
        let kind = match &node.kind {
            NodeKind::Object(members) => NodeKind::Object(
                members
                    .iter()
                    .map(|(key, key_range, value)| {
                        let value = match (key.as_str(), value.as_str()) {
                            ("$ref", Some(reference)) => self.reference(reference, value.range, cx),
                            // Examples and defaults are data: a `$ref` in them is no reference.
                            _ if DATA_KEYWORDS.contains(&key.as_str()) => self.copy(value, cx),
                            _ => self.rewrite(value, cx),
                        };
                        (key.clone(), cx.anchor.unwrap_or(*key_range), value)
                    })
                    .collect(),
            ),
            NodeKind::Array(items) => NodeKind::Array(items.iter().map(|item| self.rewrite(item, cx)).collect()),
            other => other.clone(),
        };
        Node { kind, range }
    }

    /// A data value as it is, carrying the anchor's range when it comes from another file.
    fn copy(&self, node: &Node, cx: &Context<'_>) -> Node {
        let Some(anchor) = cx.anchor else { return node.clone() };
        let kind = match &node.kind {
            NodeKind::Object(members) => {
                NodeKind::Object(members.iter().map(|(k, _, v)| (k.clone(), anchor, self.copy(v, cx))).collect())
            }
            NodeKind::Array(items) => NodeKind::Array(items.iter().map(|v| self.copy(v, cx)).collect()),
            other => other.clone(),
        };
        Node { kind, range: anchor }
    }

    /// A `$ref`'s new text: local ones of the main document stay; everything else points at a copy.
    fn reference(&mut self, reference: &str, range: ByteRange, cx: &Context<'_>) -> Node {
        let at = cx.anchor.unwrap_or(range);
        // A reference that cannot be bundled: as written in the main document; from another
        // file, one that resolves nowhere (as written it would point into the main document).
        let keep = match cx.this {
            None => Node { kind: NodeKind::String(reference.to_string()), range: at },
            Some(_) => Node { kind: NodeKind::String(format!("#/{BUNDLED}/unresolved")), range: at },
        };
        let (file_part, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        if file_part.contains("://") || file_part.starts_with("//") {
            // Never fetched: the loader says so on a main-document reference, this on another's.
            if cx.this.is_some() {
                self.error(
                    at,
                    format!("`$ref` `{reference}` is remote; chainsmith never fetches protocols over the network"),
                );
            }
            return keep;
        }
        let path = match (file_part.is_empty(), cx.this) {
            (true, None) => return keep,
            (true, Some(this)) => this.to_path_buf(),
            (false, _) => crate::files::normalize(&cx.base.join(file_part)),
        };
        if path == self.main {
            return Node { kind: NodeKind::String(format!("#{fragment}")), range: at };
        }
        let pointer = percent_encoding::percent_decode_str(fragment).decode_utf8_lossy().into_owned();
        let key = (path.clone(), pointer.clone());
        if let Some(n) = self.names.get(&key) {
            return Node { kind: NodeKind::String(format!("#/{BUNDLED}/{}", self.copy_key(*n))), range: at };
        }
        if !self.docs.contains_key(&path) {
            if self.docs.len() >= MAX_FILES {
                self.error(at, format!("`$ref` `{reference}`: more than {MAX_FILES} files are referenced; not read"));
                return keep;
            }
            let identity = std::fs::metadata(&path).ok().map(|m| (m.dev(), m.ino()));
            let parsed = match identity.and_then(|id| self.by_identity.get(&id)) {
                Some(known) => known.clone(),
                None => {
                    let parsed = Rc::new((self.read)(&path).and_then(|text| {
                        doc::parse_within(&text, Syntax::of_path(&path), self.aliases).map_err(|f| f.message)
                    }));
                    if let Ok(read) = parsed.as_ref() {
                        self.budget.add_written(read.weight());
                    }
                    if let Some(id) = identity {
                        self.by_identity.insert(id, parsed.clone());
                    }
                    parsed
                }
            };
            self.docs.insert(path.clone(), parsed);
        }
        let found = match self.docs[&path].as_ref() {
            Err(why) => Err(format!("cannot read {}: {why}", path.display())),
            Ok(doc) if doc.pointer(&pointer).is_none() => {
                Err(format!("{} has nothing at `{fragment}`", path.display()))
            }
            Ok(_) => Ok(()),
        };
        if let Err(why) = found {
            self.error(at, format!("`$ref` `{reference}`: {why}"));
            return keep;
        }
        let n = self.copies.len();
        self.names.insert(key, n);
        self.copies.push((path, pointer, at));
        Node { kind: NodeKind::String(format!("#/{BUNDLED}/{}", self.copy_key(n))), range: at }
    }

    /// The key copy `n` is kept under: the name of what it copies (the pointer's last segment, else
    /// the file's stem), made safe for a JSON pointer, and its number.
    fn copy_key(&self, n: usize) -> String {
        let (path, pointer, _) = &self.copies[n];
        let last = pointer.rsplit('/').next().filter(|s| !s.is_empty());
        let name = last
            .map(str::to_string)
            .unwrap_or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
        let safe: String = name.chars().map(|c| if c.is_alphanumeric() || c == '_' { c } else { '_' }).collect();
        format!("{safe}-{n}")
    }

    fn error(&mut self, range: ByteRange, message: String) {
        self.diagnostics.push(Diagnostic::error(&self.main, range, "unresolved-ref", message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_without_other_files_is_not_copied() {
        let doc = doc::parse(
            "openapi: 3.0.0\npaths: {}\ncomponents: {schemas: {A: {$ref: '#/components/schemas/B'}}}\n",
            Syntax::Yaml,
        )
        .unwrap();
        let (bundled, problems) = bundle(&doc, Path::new("x.yaml"), &|_| Err("not read".into()), &Default::default());
        assert!(bundled.is_none() && problems.is_empty());
    }

    /// One file under many names (`d -> .` spells `ext.json` as `d/ext.json`, `d/d/ext.json`, …)
    /// is one document: read and counted once in what the copies may weigh, so twenty names do
    /// not allow twenty times as much.
    #[test]
    fn a_file_under_many_names_is_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let big = serde_json::json!({"big": "x".repeat(4 << 20)}).to_string();
        std::fs::write(dir.path().join("ext.json"), &big).unwrap();
        std::os::unix::fs::symlink(".", dir.path().join("d")).unwrap();
        let schemas: serde_json::Map<String, serde_json::Value> = (0..20)
            .map(|n| (format!("S{n}"), serde_json::json!({"$ref": format!("{}ext.json#/big", "d/".repeat(n))})))
            .collect();
        let main = serde_json::json!({"openapi": "3.0.0", "paths": {}, "components": {"schemas": schemas}}).to_string();
        let doc = doc::parse(&main, Syntax::Json).unwrap();
        let read = |path: &Path| std::fs::read_to_string(path).map_err(|e| e.to_string());
        let (bundled, problems) = bundle(&doc, &dir.path().join("main.json"), &read, &Default::default());
        assert!(problems.is_empty(), "{problems:?}");
        let bundled = bundled.expect("bundled");
        let copies = bundled.doc.get(BUNDLED).expect("the copies");
        assert!(copies.weight() <= 1 << 20, "copies weighing {}", copies.weight());
        assert!(bundled.budget.diagnostic(Path::new("main.json")).is_some(), "the twentieth copy is past the bound");
    }

    /// `ext.json#/a`, `ext.json#/a/a`, … each copy the 1 MB text at the bottom again: 100 levels
    /// would copy 100 MB out of a 1 MB file.
    #[test]
    fn nested_pointers_copy_to_a_bound() {
        let mut ext = serde_json::json!({"leaf": "x".repeat(1 << 20)});
        for _ in 0..100 {
            ext = serde_json::json!({ "a": ext });
        }
        let ext = ext.to_string();
        let schemas: serde_json::Map<String, serde_json::Value> = (1..=100)
            .map(|depth| (format!("S{depth}"), serde_json::json!({"$ref": format!("ext.json#{}", "/a".repeat(depth))})))
            .collect();
        let main = serde_json::json!({"openapi": "3.0.0", "paths": {}, "components": {"schemas": schemas}}).to_string();
        let doc = doc::parse(&main, Syntax::Json).unwrap();
        let (bundled, problems) = bundle(&doc, Path::new("main.json"), &|_| Ok(ext.clone()), &Default::default());
        let bundled = bundled.expect("bundled");
        let copies = bundled.doc.get(BUNDLED).expect("the copies");
        assert!(copies.weight() <= 1 << 20, "copies weighing {}", copies.weight());
        assert!(copies.to_json().to_string().contains(&"x".repeat(1 << 20)), "what fits is copied");
        assert!(problems.is_empty(), "{problems:?}");
        let too_large = bundled.budget.diagnostic(Path::new("main.json")).expect("an error for what was not copied");
        assert!(too_large.message.contains("the file and those its `$ref`s name hold"), "{}", too_large.message);
    }
}
