//! Terminal commands over the core: `check` and `tools`, in the shapes DESIGN.md fixes; the
//! others in their own modules.

pub mod eval;
mod generate;
pub mod graph;
pub mod plan;
mod probe;
mod probe_eval;
pub mod retrieve;
mod run;
mod trust;

pub use generate::{fix, generate};
pub use plan::plan;
pub use probe::probe;
pub use probe_eval::probe_eval;
pub use retrieve::retrieve;
pub use run::{mock, run, stubs};
pub use trust::trust;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::analysis::{self, parse};
use crate::config::{self, Config};
use crate::diagnostic::{Diagnostic, Severity};
use crate::text::{Encoding, LineIndex, printable};
use crate::toolset::{Catalog, Tool, loader};

/// The workspace for a command: `--root`, else found from the first path, else that path's folder
/// (the current folder when no path is given). A workspace found that is not the user's own
/// ([`config::NotYours`]) is passed over with a warning, as if none were found: one planted in
/// `/tmp` must neither be used nor stop the user's programs below it.
///
/// A `--root` spelled with `..` is read lexically, from the current folder's real path: `lnk/..`
/// is the folder holding `lnk`, as `cd lnk/..` would take the user there, not the one above
/// where `lnk` leads (which would make files outside the workspace as written count as inside
/// it, and put its traces there).
pub fn workspace_root(root: Option<&Path>, paths: &[PathBuf]) -> Result<PathBuf> {
    if let Some(r) = root {
        if r.components().any(|c| c == std::path::Component::ParentDir) {
            let absolute = std::path::absolute(r).with_context(|| format!("cannot resolve --root {}", r.display()))?;
            return Ok(relative_to_cwd(&crate::files::normalize(&absolute)));
        }
        return Ok(r.to_path_buf());
    }
    let start = paths.first().map(PathBuf::as_path).unwrap_or(Path::new("."));
    // Absolute, so the walk goes above the current folder; then relative again, so
    // messages name files as the user would.
    let absolute = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    match config::discover_root(&absolute) {
        Some(Ok(found)) => return Ok(relative_to_cwd(&found)),
        Some(Err(not_yours)) => eprintln!(
            "chainsmith: warning: {not_yours}. Name a workspace of your own with --root (or `--root {}` if you trust it)",
            printable(&not_yours.root.display().to_string())
        ),
        None => {}
    }
    // A program's own folder stands in only when it is the user's alone: in a shared one
    // (`/tmp`) the workspace's `.chainsmith/` would be another user's to plant or read.
    Ok(match start.parent().map(|f| if f.as_os_str().is_empty() { Path::new(".") } else { f }) {
        Some(folder) if start.is_file() && is_private_folder(folder) => folder.to_path_buf(),
        _ => start.to_path_buf(),
    })
}

/// A diagnostic as the text output prints it on a terminal (`path:line:col: severity[code]:
/// message`), with what the workspace wrote in it shown, not obeyed ([`printable`]).
pub(crate) fn diagnostic_line(d: &Diagnostic, line: usize, col: usize) -> String {
    let file = d.file.display().to_string();
    format!("{}:{line}:{col}: {}[{}]: {}", printable(&file), d.severity.as_str(), d.code, printable(&d.message))
}

/// Whether `folder` is the user's own and no one else may write it.
fn is_private_folder(folder: &Path) -> bool {
    std::fs::metadata(folder).is_ok_and(|m| m.is_dir() && crate::files::is_private(&m))
}

fn relative_to_cwd(path: &Path) -> PathBuf {
    let Ok(cwd) = std::env::current_dir() else { return path.to_path_buf() };
    match path.strip_prefix(&cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_path_buf(),
        Err(_) => path.to_path_buf(),
    }
}

/// `chainsmith --trust`: every command of this invocation trusts its workspace, recording nothing.
static TRUSTED_FOR_THIS_RUN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Trusts the workspace for the rest of this process (the `--trust` flag, for CI): its MCP
/// servers, command tools and interpreter run without a record in the user's trust file.
pub fn trust_for_this_run() {
    TRUSTED_FOR_THIS_RUN.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// The catalog's retrieval index as the workspace configures it (dense retrieval fused in when it
/// names an embedding model); a model that cannot be used is said once on stderr.
pub fn retrieval_index(catalog: &Catalog, config: &Config) -> crate::toolset::index::CatalogIndex {
    let (index, note) = crate::toolset::index::CatalogIndex::for_workspace(catalog, config);
    if let Some(note) = note {
        eprintln!("chainsmith: {note}");
    }
    index
}

pub fn load_workspace(root: &Path) -> Result<(Config, Catalog)> {
    if root.is_file() {
        bail!(
            "no workspace holds {} (no chainsmith.toml or protocols folder above it), and its folder is not yours alone, so chainsmith does not keep its runs there: move it to a folder of your own, or name a workspace with --root",
            root.display()
        );
    }
    if !root.is_dir() {
        bail!("workspace root {} is not a folder", root.display());
    }
    let mut config = Config::load(root, None);
    config.trusted = TRUSTED_FOR_THIS_RUN.load(std::sync::atomic::Ordering::SeqCst);
    let catalog = loader::load(&config);
    Ok((config, catalog))
}

/// `chainsmith check`: exit 1 if any error (in programs or protocol files), else 0.
pub fn check(root: Option<&Path>, paths: &[PathBuf], json_format: bool) -> Result<u8> {
    let root = workspace_root(root, paths)?;
    let (config, catalog) = load_workspace(&root)?;
    let targets = if paths.is_empty() { vec![root.clone()] } else { paths.to_vec() };
    let mut files = Vec::new();
    for target in &targets {
        if target.is_dir() {
            files.extend(crate::analysis::python_files(target));
        } else if target.is_file() {
            files.push(target.clone());
        } else {
            bail!("{}: no such file or folder", target.display());
        }
    }
    // One text and line index per file, shared by its diagnostics: output stays linear in their count.
    type Indexed = std::sync::Arc<(std::sync::Arc<str>, LineIndex)>;
    let mut by_file: std::collections::HashMap<PathBuf, Indexed> = std::collections::HashMap::new();
    let mut reports: Vec<(Diagnostic, Indexed)> = Vec::new();
    for d in &catalog.diagnostics {
        let indexed = by_file
            .entry(d.file.clone())
            .or_insert_with(|| {
                let text: std::sync::Arc<str> = catalog
                    .texts
                    .get(&d.file)
                    .cloned()
                    .or_else(|| crate::files::read_text(&d.file, crate::files::MAX_READ).ok().map(Into::into))
                    .unwrap_or_else(|| "".into());
                let index = LineIndex::new(&text);
                std::sync::Arc::new((text, index))
            })
            .clone();
        reports.push((d.clone(), indexed));
    }
    let mut parser = parse::parser();
    for file in &files {
        // A file that cannot be read or decoded is reported on itself; the others are checked.
        let decoded = crate::files::read_python(file);
        let text = match decoded {
            Ok(text) => text,
            Err(why) => {
                let message = format!("cannot check {}: {why}", file.display());
                let unread = Diagnostic::error(file, crate::text::ByteRange::default(), "unreadable-source", message);
                reports.push((unread, std::sync::Arc::new(("".into(), LineIndex::new("")))));
                continue;
            }
        };
        let Some(tree) = parser.parse(&text, None) else { continue };
        let result = analysis::analyze(file, &text, &tree, &catalog, &config.diagnostics);
        let index = LineIndex::new(&text);
        let shared: Indexed = std::sync::Arc::new((text.into(), index));
        for d in result.diagnostics {
            reports.push((d, shared.clone()));
        }
    }
    let has_error = reports.iter().any(|(d, _)| d.severity == Severity::Error);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json_format {
        let items: Vec<serde_json::Value> = reports
            .iter()
            .map(|(d, indexed)| {
                let (text, index) = &**indexed;
                let start = index.position(text, d.range.start, Encoding::Utf16);
                let end = index.position(text, d.range.end, Encoding::Utf16);
                json!({
                    "file": d.file.display().to_string(),
                    "range": {
                        "start": {"line": start.line, "character": start.character},
                        "end": {"line": end.line, "character": end.character},
                    },
                    "severity": d.severity.as_str(),
                    "code": d.code,
                    "message": d.message,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&items)?)?;
    } else {
        for (d, indexed) in &reports {
            let (text, index) = &**indexed;
            let (line, col) = index.line_col_1based(text, d.range.start);
            writeln!(out, "{}", diagnostic_line(d, line, col))?;
        }
        let errors = reports.iter().filter(|(d, _)| d.severity == Severity::Error).count();
        let warnings = reports.iter().filter(|(d, _)| d.severity == Severity::Warning).count();
        eprintln!(
            "checked {} program{} against {} tools: {errors} error{}, {warnings} warning{}",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            catalog.tool_count(),
            if errors == 1 { "" } else { "s" },
            if warnings == 1 { "" } else { "s" },
        );
    }
    Ok(if has_error { 1 } else { 0 })
}

pub fn tool_json(catalog: &Catalog, tool: &Tool) -> serde_json::Value {
    let mut source = json!({
        "kind": tool.source.kind.as_str(),
        "file": tool.source.file.display().to_string(),
    });
    let fields = [
        ("method", &tool.source.method),
        ("path", &tool.source.path),
        ("tool", &tool.source.tool),
        ("api", &tool.source.api),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            source[key] = json!(v);
        }
    }
    json!({
        "toolset": tool.toolset,
        "name": tool.name,
        "id": tool.id(),
        "category": tool.category,
        "description": tool.description,
        "source": source,
        "required": tool.required().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        "optional": tool.optional().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        "response_known": tool.response.is_some(),
        "aliases": catalog.alias_of(tool).into_iter().collect::<Vec<_>>(),
    })
}

/// `chainsmith tools`: every tool of the workspace; protocol problems go to stderr.
pub fn tools(root: Option<&Path>, json_format: bool) -> Result<u8> {
    let root = workspace_root(root, &[])?;
    let (_, catalog) = load_workspace(&root)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json_format {
        let items: Vec<serde_json::Value> = catalog.tools().map(|tool| tool_json(&catalog, tool)).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&items)?)?;
    } else {
        for toolset in &catalog.toolsets {
            let base =
                toolset.base_url.as_deref().map(|b| format!(" ({})", crate::trust::redact_url(b))).unwrap_or_default();
            writeln!(out, "{} — {} tools{}", printable(&toolset.name), toolset.tools.len(), printable(&base))?;
            for tool in &toolset.tools {
                let params: Vec<String> = tool
                    .params
                    .iter()
                    .map(|p| if p.required { p.name.clone() } else { format!("{}?", p.name) })
                    .collect();
                let endpoint = tool.endpoint().map(|e| format!("  [{e}]")).unwrap_or_default();
                let response = if tool.response.is_some() { "" } else { "  (response unknown)" };
                let line = format!("  {}.{}({}){endpoint}{response}", toolset.name, tool.name, params.join(", "));
                writeln!(out, "{}", printable(&line))?;
            }
        }
    }
    // One line index per file: a spec's text can be megabytes, and it may carry many diagnostics.
    let mut indexes: std::collections::HashMap<&Path, (std::sync::Arc<str>, LineIndex)> = Default::default();
    for d in &catalog.diagnostics {
        let (text, index) = indexes.entry(d.file.as_path()).or_insert_with(|| {
            let text = catalog.texts.get(&d.file).cloned().unwrap_or_else(|| "".into());
            let index = LineIndex::new(&text);
            (text, index)
        });
        let (line, col) = index.line_col_1based(text, d.range.start);
        eprintln!("{}", diagnostic_line(d, line, col));
    }
    Ok(if catalog.diagnostics.iter().any(|d| d.severity == Severity::Error) { 1 } else { 0 })
}

/// Whether two paths name the same file (the same once resolved; as written where one does not
/// exist).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
