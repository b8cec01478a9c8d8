//! Loading a workspace's toolsets: from `chainsmith.toml` when present, else every protocol file
//! under `protocols/` (its `schema/` folder, the native format's own JSON Schema, excepted).
//! Each file is parsed once into a position-keeping tree and handed to the loader its content
//! calls for; every problem becomes a diagnostic on the file it is in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::doc::{self, Node, Syntax};
use super::{Auth, Catalog, Loaded, SourceKind, Texts, Toolset, Transport, mcp, native, openapi, toolbench};
use crate::config::{AuthConfig, Config, PROTOCOLS_DIR, ToolsetSource};
use crate::diagnostic::Diagnostic;
use crate::names;
use crate::text::ByteRange;
use crate::trust::{self, Trust};

/// What kind of protocol a parsed document is, judged by its content.
pub fn detect(doc: &Node) -> Option<SourceKind> {
    if doc.get("openapi").is_some() || doc.get("swagger").is_some() {
        return Some(SourceKind::OpenApi);
    }
    if doc.get("chainsmith").is_some() {
        return Some(SourceKind::Native);
    }
    let looks_toolbench = |n: &Node| {
        n.get("api_list").is_some()
            || n.get("api_name").is_some()
            || n.get("available_tools").is_some()
            || n.get("answer_generation").is_some_and(|a| a.get("function").is_some())
            || (n.get("name").is_some() && n.get("parameters").is_some())
            || n.get("function").is_some_and(|f| f.get("parameters").is_some())
    };
    if doc.is_object() && (looks_toolbench(doc) || doc.members().first().is_some_and(|(_, _, v)| looks_toolbench(v))) {
        return Some(SourceKind::ToolBench);
    }
    if doc.items().first().is_some_and(looks_toolbench) {
        return Some(SourceKind::ToolBench);
    }
    // A `tools` array alone is not enough (an OpenAI request body has one): the entries must look
    // like native tools.
    if doc
        .get("tools")
        .is_some_and(|t| t.items().first().is_some_and(|e| e.get("name").is_some() && e.get("type").is_none()))
    {
        return Some(SourceKind::Native);
    }
    None
}

/// Loads every toolset of the workspace described by `config`.
pub fn load(config: &Config) -> Catalog {
    load_with_texts(config, &HashMap::new())
}

/// [`load`], reading the given files from `unsaved` instead of the disk: protocol files edited in
/// the editor (a probe's write-back applied as a WorkspaceEdit) count before they are saved.
pub fn load_with_texts(config: &Config, unsaved: &HashMap<PathBuf, String>) -> Catalog {
    load_as(config, unsaved, Trust::of(config))
}

/// Every command the workspace names, with where it is declared: MCP servers, a non-default
/// interpreter and command tools, and every loosening of the sandbox and secret it would send
/// ([`trust`]) — what `chainsmith trust` shows and records. Nothing is started to find them.
pub fn commands(config: &Config) -> Vec<trust::Command> {
    // A file outside the workspace can name more (a `$ref` of its own, a command tool): read what
    // each load found outside, nothing else, until a load finds nothing new. Listing sends
    // nothing anywhere and starts nothing.
    let mut outside_reads: Vec<trust::Command> = Vec::new();
    let mut catalog = load_as(config, &HashMap::new(), Trust::Untrusted);
    for _ in 0..MAX_OUTSIDE_DEPTH {
        let new: Vec<trust::Command> =
            catalog.outside_reads.iter().filter(|line| !outside_reads.contains(line)).cloned().collect();
        if new.is_empty() {
            break;
        }
        outside_reads.extend(new);
        let reads = outside_reads.iter().map(|line| line.command.clone()).collect();
        catalog = load_as(config, &HashMap::new(), Trust::Recorded(reads));
    }
    let mut out = trust::config_commands(config);
    out.extend(catalog.tools().filter_map(|tool| match &tool.transport {
        Transport::Command { argv } => Some(trust::Command::tool(&tool.id(), argv)),
        _ => None,
    }));
    out.extend(catalog.toolsets.iter().flat_map(Toolset::trust_lines));
    out.extend(outside_reads);
    // A toolset (or model server) whose base URL names a host resolving to this machine or its
    // private network (or behind a proxy, one that does not resolve here) is a line too. Names
    // are looked up here only, when the user trusts the workspace, each once, at once, and a
    // bounded number of them (a folder of thousands of toolsets asks no thousand lookups).
    let mut bases: Vec<(String, &str)> = catalog
        .toolsets
        .iter()
        .filter_map(|t| Some((format!("toolset `{}` (base URL)", t.name), t.base_url.as_deref()?)))
        .collect();
    if config.llm.base_url != crate::config::LlmConfig::default().base_url {
        bases.push(("[llm] base_url".into(), config.llm.base_url.as_str()));
    }
    let named: Vec<(String, reqwest::Url, String)> = bases
        .into_iter()
        .filter_map(|(from, base)| {
            let url = reqwest::Url::parse(base.trim()).ok()?;
            let name = trust::host_name(&url).filter(|name| !trust::is_local_name(name))?;
            Some((from, url, name))
        })
        .collect();
    let mut names: Vec<&str> = named.iter().map(|(_, _, name)| name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.truncate(MAX_NAMES_LOOKED_UP);
    let with_trust = names_reached_only_with_trust(&names);
    out.extend(
        named
            .iter()
            .filter(|(_, _, name)| with_trust.contains(name.as_str()))
            .map(|(from, url, _)| trust::Command::reach(from.clone(), url)),
    );
    out
}

/// Which of `names` programs reach only once trusted ([`trust::reached_only_with_trust`]: they
/// resolve to this machine or its private network, or behind a proxy, not here at all), looked
/// up at once; a name whose lookup takes longer than [`LOOKUP_DEADLINE`] counts as not (its lookup
/// is left to end), but behind a proxy as one only the proxy resolves.
fn names_reached_only_with_trust<'n>(names: &[&'n str]) -> std::collections::HashSet<&'n str> {
    let (found, answers) = std::sync::mpsc::channel();
    for (index, name) in names.iter().enumerate() {
        let (found, name) = (found.clone(), name.to_string());
        std::thread::spawn(move || found.send((index, trust::reached_only_with_trust(&name))));
    }
    drop(found);
    let deadline = std::time::Instant::now() + LOOKUP_DEADLINE;
    let mut with_trust = std::collections::HashSet::new();
    let mut answered = vec![false; names.len()];
    while let Ok((index, only_with_trust)) =
        answers.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
    {
        answered[index] = true;
        if only_with_trust {
            with_trust.insert(names[index]);
        }
    }
    // Behind a proxy, where this machine's lookups of outside names often go unanswered (egress
    // through the proxy alone), a name without an answer is one only the proxy resolves.
    if trust::proxied() {
        with_trust.extend(names.iter().zip(&answered).filter(|(_, answered)| !**answered).map(|(name, _)| *name));
    }
    with_trust
}

/// How many times `chainsmith trust` reads further out: files outside the workspace naming
/// files further out (a maze of them is cut here; what lies past it is refused when loaded).
const MAX_OUTSIDE_DEPTH: usize = 8;

/// How long `chainsmith trust` waits for its name lookups.
const LOOKUP_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// The most host names `chainsmith trust` looks up to find the toolsets that resolve to this
/// machine; a name past them resolves only to public addresses for the workspace's programs.
const MAX_NAMES_LOOKED_UP: usize = 64;

/// [`load_with_texts`] under a given trust: MCP servers start only when it allows their command
/// lines; what it does not allow is a `workspace-untrusted` warning where it is declared.
fn load_as(config: &Config, unsaved: &HashMap<PathBuf, String>, trust: Trust) -> Catalog {
    let unsaved: Unsaved = unsaved.iter().map(|(p, t)| (absolute(p), t.clone())).collect();
    let mut diagnostics = config.problems.clone();
    let mut texts: Texts = HashMap::new();
    let mut toolsets = Vec::new();
    let cache = super::cache::Cache::open(&config.root);
    // Files of a toolset trusted with a larger size limit may hold more values in this load.
    let aliases = &doc::ParseBudget::for_load(
        config
            .toolsets
            .iter()
            .flat_map(|ts| std::iter::repeat_n(read_limit(ts, &trust), protocol_files(&ts.source).1.len())),
    );
    let boundary = &Boundary::new(&config.root, &trust);
    let load_files = |jobs: &[FileJob<'_>]| -> Vec<FileLoad> {
        let load = |job: &FileJob<'_>| load_file(job, &unsaved, cache.as_ref());
        match loading_pool() {
            Some(pool) => pool.install(|| jobs.par_iter().map(load).collect()),
            None => jobs.iter().map(load).collect(),
        }
    };
    if config.toolsets.is_empty() {
        let jobs: Vec<FileJob<'_>> = discover(&config.root.join(PROTOCOLS_DIR))
            .into_iter()
            .map(|file| FileJob {
                file,
                toolset: None,
                kind: None,
                max_bytes: crate::files::MAX_READ,
                named_in: None,
                aliases,
                boundary,
            })
            .collect();
        for (job, load) in jobs.iter().zip(load_files(&jobs)) {
            if let Some((kind, name, loaded)) = load.take_into(&mut texts, &mut diagnostics, &job.file) {
                merge_into(&mut toolsets, name, kind, job.file.clone(), loaded, &mut diagnostics);
            }
        }
    } else {
        let config_file = config.config_file();
        let mut mcp_listed = list_mcp_servers(config, &config_file, &trust, &mut texts);
        // Every file of every toolset at once; merged below in the order the configuration gives.
        let jobs: Vec<FileJob<'_>> = config
            .toolsets
            .iter()
            .flat_map(|ts| {
                let (kind, files) = protocol_files(&ts.source);
                let named_in = Some((config_file.as_path(), ts.range));
                let max_bytes = read_limit(ts, &trust);
                files.iter().map(move |rel| FileJob {
                    file: config.root.join(rel),
                    toolset: Some(&ts.name),
                    kind,
                    max_bytes,
                    named_in,
                    aliases,
                    boundary,
                })
            })
            .collect();
        let mut loads = jobs.iter().zip(load_files(&jobs));
        for ts in &config.toolsets {
            let (kind, files) = protocol_files(&ts.source);
            if let ToolsetSource::Mcp(server) = &ts.source {
                // Listed by the running server (all servers were started at once, above); a
                // server that is untrusted or unavailable leaves the module importable,
                // without tools.
                let command = trust::Command::mcp(&ts.name, server);
                let (mut loaded, unlisted) = match mcp_listed.remove(&ts.name) {
                    Some(loaded) => {
                        let failed = loaded.diagnostics.iter().find(|d| d.code == "mcp-unavailable");
                        let unlisted = failed.map(|d| d.message.lines().next().unwrap_or_default().to_string());
                        (loaded, unlisted)
                    }
                    None => {
                        let why = trust.refusal(&command);
                        let untrusted = Diagnostic::warning(&config_file, ts.range, trust::UNTRUSTED, &why);
                        (Loaded { diagnostics: vec![untrusted], ..Default::default() }, Some(why))
                    }
                };
                diagnostics.append(&mut loaded.diagnostics);
                toolsets.push(Toolset {
                    name: ts.name.clone(),
                    kind: SourceKind::Mcp,
                    files: vec![],
                    description: String::new(),
                    base_url: None,
                    auth: None,
                    tools: loaded.tools,
                    schemas: Default::default(),
                    unlisted,
                });
                continue;
            }
            let start = toolsets.len();
            for (job, load) in loads.by_ref().take(files.len()) {
                if let Some((kind, name, loaded)) = load.take_into(&mut texts, &mut diagnostics, &job.file) {
                    merge_into(&mut toolsets, name, kind, job.file.clone(), loaded, &mut diagnostics);
                }
            }
            if let Some(toolset) = toolsets.get_mut(start) {
                if let Some(url) = &ts.base_url {
                    toolset.base_url = Some(url.trim_end_matches('/').to_string());
                }
                if let Some(auth) = &ts.auth {
                    toolset.auth = Some(auth_from_config(auth));
                }
            } else {
                // Keep the module importable even when every file failed: the file diagnostics say why.
                toolsets.push(Toolset {
                    name: ts.name.clone(),
                    kind: kind.unwrap_or(SourceKind::Native),
                    files: vec![],
                    description: String::new(),
                    base_url: ts.base_url.clone(),
                    auth: ts.auth.as_ref().map(auth_from_config),
                    tools: vec![],
                    schemas: Default::default(),
                    unlisted: None,
                });
            }
        }
    }
    // Probed schemas of sources chainsmith does not rewrite (`.chainsmith/probed/<toolset>.json`).
    for toolset in &mut toolsets {
        let overlay = super::overlay::overlay_path(&config.root, &toolset.name);
        match boundary.admit(&overlay, || format!("the probed overlay of `{}`", toolset.name)) {
            Ok(admitted) => {
                let read = admitted.read(&overlay, |path| {
                    crate::files::read_json_text(path, crate::files::MAX_READ, crate::files::MAX_JSON_VALUES)
                });
                super::overlay::merge(&config.root, toolset, read, &mut texts, &mut diagnostics)
            }
            Err(why) => diagnostics.push(Diagnostic::warning(&overlay, ByteRange::default(), trust::UNTRUSTED, why)),
        }
    }
    // What would run later (a run's interpreter, command tools), loosen a run's sandbox or send a
    // secret, and is not trusted: said where it is declared, so the user learns it before running
    // anything.
    let config_file = config.config_file();
    let loosenings = trust::Command::runtime(&config.runtime, &config.root)
        .into_iter()
        .map(|line| (line, config.runtime_range))
        .chain(trust::Command::llm_reach(&config.llm).map(|line| (line, config.llm_range)))
        .chain(trust::Command::llm(&config.llm).map(|line| (line, config.llm_range)))
        .chain(config.toolsets.iter().filter_map(|ts| trust::Command::max_read(ts).map(|line| (line, ts.range))));
    for (line, range) in loosenings {
        if !trust.allows(&line.command) {
            diagnostics.push(Diagnostic::warning(&config_file, range, trust::UNTRUSTED, trust.refusal(&line)));
        }
    }
    for toolset in &toolsets {
        // Where the base URL and auth are declared: the toolset's entry in chainsmith.toml, else
        // its protocol file.
        let (file, range) = match config.toolsets.iter().find(|t| t.name == toolset.name) {
            Some(entry) => (config_file.clone(), entry.range),
            None => (toolset.files.first().cloned().unwrap_or_else(|| config_file.clone()), ByteRange::default()),
        };
        for line in toolset.trust_lines().into_iter().filter(|line| !trust.allows(&line.command)) {
            diagnostics.push(Diagnostic::warning(&file, range, trust::UNTRUSTED, trust.refusal(&line)));
        }
    }
    for tool in toolsets.iter().flat_map(|t| &t.tools) {
        if let Transport::Command { argv } = &tool.transport {
            let command = trust::Command::tool(&tool.id(), argv);
            if !trust.allows(&command.command) {
                let why = trust.refusal(&command);
                diagnostics.push(Diagnostic::warning(&tool.source.file, tool.source.name_range, trust::UNTRUSTED, why));
            }
        }
    }
    let mut outside_reads = boundary.refused.lock().unwrap_or_else(|e| e.into_inner()).clone();
    outside_reads.sort();
    let mut catalog = Catalog::new(toolsets, diagnostics);
    catalog.texts = texts;
    catalog.outside_reads = outside_reads;
    catalog.trust = trust;
    catalog
}

/// Starts every MCP server of the workspace that `trust` allows at once (each within its own
/// timeout), lists its tools and shuts it down; toolset name → what it listed (the others are
/// absent). The text of chainsmith.toml, where these tools are declared, joins the catalog's texts
/// for their positions.
fn list_mcp_servers(config: &Config, config_file: &Path, trust: &Trust, texts: &mut Texts) -> HashMap<String, Loaded> {
    let declared = config.toolsets.iter().any(|ts| matches!(ts.source, ToolsetSource::Mcp(_)));
    if declared && let Ok(text) = crate::files::read_text(config_file, crate::config::MAX_CONFIG) {
        texts.entry(config_file.to_path_buf()).or_insert_with(|| text.into());
    }
    let servers: Vec<(&str, &crate::config::McpConfig, ByteRange)> = config
        .toolsets
        .iter()
        .filter_map(|ts| match &ts.source {
            ToolsetSource::Mcp(mcp) if trust.allows(&trust::mcp_line(mcp)) => Some((ts.name.as_str(), mcp, ts.range)),
            _ => None,
        })
        .collect();
    if servers.is_empty() {
        return HashMap::new();
    }
    std::thread::scope(|scope| {
        let running: Vec<_> = servers
            .iter()
            .map(|&(name, mcp, range)| {
                (name, scope.spawn(move || mcp::load_server(name, mcp, &config.root, config_file, range)))
            })
            .collect();
        running.into_iter().map(|(name, handle)| (name.to_string(), handle.join().unwrap_or_default())).collect()
    })
}

fn auth_from_config(auth: &AuthConfig) -> Auth {
    Auth {
        query: auth.query.clone(),
        header: auth.header.clone(),
        prefix: auth.prefix.clone(),
        value_env: auth.value_env.clone(),
    }
}

fn load_doc(
    kind: SourceKind,
    doc: &Node,
    text: &str,
    file: &Path,
    toolset: &str,
    read: &super::bundle::Reader<'_>,
    aliases: &doc::ParseBudget,
) -> Loaded {
    let loaded = match kind {
        SourceKind::OpenApi => {
            let (bundled, mut problems) = super::bundle::bundle(doc, file, read, aliases);
            let mut loaded = match bundled {
                Some(bundled) => openapi::load_within(&bundled.doc, text, file, toolset, Some(bundled.budget)),
                None => openapi::load(doc, text, file, toolset),
            };
            loaded.diagnostics.append(&mut problems);
            loaded
        }
        SourceKind::Native => native::load(doc, text, file, toolset),
        SourceKind::ToolBench | SourceKind::Mcp => toolbench::load(doc, text, file, toolset),
    };
    loaded.without_overlong_names(file)
}

/// The threads protocol files load on: the parsers recurse with a document's nesting, so they get
/// the main thread's 8 MiB of stack rather than a pool's default 2 MiB.
fn loading_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new().stack_size(8 << 20).thread_name(|i| format!("chainsmith-load-{i}")).build().ok()
    })
    .as_ref()
}

/// The protocol kind a toolset's entry imposes, and its files (none for an MCP server).
fn protocol_files(source: &ToolsetSource) -> (Option<SourceKind>, &[String]) {
    match source {
        ToolsetSource::OpenApi(f) => (Some(SourceKind::OpenApi), std::slice::from_ref(f)),
        ToolsetSource::Protocol(f) => (None, std::slice::from_ref(f)),
        ToolsetSource::ToolBench(fs) => (Some(SourceKind::ToolBench), fs.as_slice()),
        ToolsetSource::Mcp(_) => (None, &[]),
    }
}

/// One protocol file to load, and what the configuration says of it.
struct FileJob<'c> {
    file: PathBuf,
    /// The toolset named for it; `None` for a file found under `protocols/`, named by its stem
    /// (or, for a native toolset, by the name it declares).
    toolset: Option<&'c str>,
    kind: Option<SourceKind>,
    max_bytes: u64,
    /// The configuration entry naming it, where a file that cannot be read is reported.
    named_in: Option<(&'c Path, ByteRange)>,
    /// What its YAML aliases may expand to, shared by every file of the load.
    aliases: &'c doc::ParseBudget,
    /// Where it and the files it refers to may be read.
    boundary: &'c Boundary<'c>,
}

/// Where one load reads protocol files: inside the workspace, by real path (a link is judged by
/// where it leads), and outside it only as far as the workspace is trusted to (a `read <…>`
/// line): what such a file holds enters the catalog, and from there the prompts sent to a model
/// server the workspace may have chosen (`~/.kube/config` by a `$ref`). The reads refused are
/// kept for `chainsmith trust` to list.
struct Boundary<'t> {
    root: PathBuf,
    trust: &'t Trust,
    refused: Mutex<Vec<trust::Command>>,
}

impl<'t> Boundary<'t> {
    fn new(root: &Path, trust: &'t Trust) -> Boundary<'t> {
        let root = root.canonicalize().unwrap_or_else(|_| absolute(root));
        Boundary { root, trust, refused: Mutex::new(Vec::new()) }
    }

    /// Whether `path` may be read (`from` names who asks), and the file judged, to read. The file
    /// is opened and judged by where the opened file lies, so a link swapped after the check
    /// leads the read nowhere else, and a path the kernel resolves beyond the length it can name
    /// counts as outside. A path that does not open is judged as written: inside, its read says
    /// what is wrong; outside, it may still open (a `/proc/PID/fd/N` link to another process'
    /// deleted file).
    fn admit(&self, path: &Path, from: impl FnOnce() -> String) -> Result<Admitted, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let opened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path);
        let by_path = || path.canonicalize().unwrap_or_else(|_| trust::resolved_path(&absolute(path)));
        let (real, named, opened) = match opened {
            Ok(file) => match crate::files::real_path_of(&file) {
                Ok(real) => (real, true, Admitted::Opened(file)),
                Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => {
                    (absolute(path), false, Admitted::Opened(file))
                }
                // No `/proc` to ask.
                Err(_) => (by_path(), true, Admitted::ByPath),
            },
            // Not read later by the path either: what appears there meanwhile was not judged.
            Err(e) => (by_path(), true, Admitted::Failed(e)),
        };
        if named && real.starts_with(&self.root) {
            return Ok(opened);
        }
        let line = trust::Command::read_outside(from(), &real);
        if self.trust.allows(&line.command) {
            return Ok(opened);
        }
        let why = self.trust.refusal(&line);
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if !refused.contains(&line) {
            refused.push(line);
        }
        Err(why)
    }

    /// A file's name as the user knows it: relative to the workspace root when inside.
    fn shown(&self, path: &Path) -> String {
        let path = absolute(path);
        path.strip_prefix(&self.root).unwrap_or(&path).display().to_string()
    }
}

/// A protocol file [`Boundary::admit`] let through: held open (`O_PATH`) where it opened, the
/// reason where it did not, or, with no `/proc` to judge an open file by, its path.
enum Admitted {
    Opened(std::fs::File),
    Failed(std::io::Error),
    ByPath,
}

impl Admitted {
    /// What `read` gives of the file judged (at `path`).
    fn read<T>(
        self,
        path: &Path,
        read: impl FnOnce(&Path) -> Result<T, crate::files::ReadError>,
    ) -> Result<T, crate::files::ReadError> {
        match self {
            Admitted::Opened(file) => read(&crate::files::fd_path(&file)),
            Admitted::Failed(e) => Err(e.into()),
            Admitted::ByPath => read(path),
        }
    }
}

/// What loading one file gave: its text, its read and parse problems, and its load (kind,
/// toolset name, tools) unless it could not be read, parsed or recognised.
struct FileLoad {
    text: Option<Arc<str>>,
    diagnostics: Vec<Diagnostic>,
    loaded: Option<(SourceKind, String, Loaded)>,
}

impl FileLoad {
    /// Keeps the text and problems in the workspace's collections and hands on the load.
    fn take_into(
        self,
        texts: &mut Texts,
        diagnostics: &mut Vec<Diagnostic>,
        file: &Path,
    ) -> Option<(SourceKind, String, Loaded)> {
        if let Some(text) = self.text {
            texts.insert(file.to_path_buf(), text);
        }
        diagnostics.extend(self.diagnostics);
        self.loaded
    }
}

/// The size limit a toolset's protocol files are read with: its `max_mb`, past the default only
/// once trusted (said on the entry, where it is not).
fn read_limit(toolset: &crate::config::ToolsetConfig, trust: &Trust) -> u64 {
    match trust::Command::max_read(toolset) {
        Some(line) if !trust.allows(&line.command) => crate::files::MAX_READ,
        _ => toolset.max_bytes,
    }
}

/// Reads, parses and loads one protocol file (from the catalog cache when it holds this text);
/// every problem becomes a diagnostic on the file, or, when the file cannot be read, on the
/// configuration entry naming it.
fn load_file(job: &FileJob<'_>, unsaved: &Unsaved, cache: Option<&super::cache::Cache>) -> FileLoad {
    let mut out = FileLoad { text: None, diagnostics: Vec::new(), loaded: None };
    let file = job.file.as_path();
    let boundary = job.boundary;
    let from_file = || match job.toolset {
        Some(toolset) => format!("toolset `{toolset}`"),
        None => format!("protocol file {}", boundary.shown(file)),
    };
    let admitted = match boundary.admit(file, from_file) {
        Ok(admitted) => admitted,
        Err(why) => {
            let (at, range) =
                job.named_in.map(|(f, r)| (f.to_path_buf(), r)).unwrap_or((file.to_path_buf(), ByteRange::default()));
            out.diagnostics.push(Diagnostic::warning(at, range, trust::UNTRUSTED, why));
            return out;
        }
    };
    let edited = unsaved.get(&absolute(file)).cloned();
    let from_editor = edited.is_some();
    let from_disk = || admitted.read(file, |path| crate::files::read_text(path, job.max_bytes));
    let text: Arc<str> = match edited.map(Ok).unwrap_or_else(from_disk) {
        Ok(text) => text.into(),
        Err(e) => {
            let (at, range) =
                job.named_in.map(|(f, r)| (f.to_path_buf(), r)).unwrap_or((file.to_path_buf(), ByteRange::default()));
            let message = format!("cannot read protocol file {}: {}", file.display(), read_failure(&e));
            out.diagnostics.push(Diagnostic::error(at, range, "unreadable-protocol", message));
            return out;
        }
    };
    out.text = Some(text.clone());
    // Other files a protocol refers to are read as the editor holds them.
    let refusals = std::cell::RefCell::new(Vec::new());
    let read = |path: &Path| {
        let admitted = boundary
            .admit(path, || format!("a `$ref` of {}", boundary.shown(file)))
            .inspect_err(|why| refusals.borrow_mut().push(why.clone()))?;
        match unsaved.get(&absolute(path)) {
            Some(text) => Ok(text.clone()),
            None => admitted.read(path, |at| crate::files::read_text(at, job.max_bytes)).map_err(|e| read_failure(&e)),
        }
    };
    let id = super::cache::Identity {
        file,
        toolset: job.toolset.unwrap_or_default(),
        kind: job.kind,
        max_bytes: job.max_bytes,
        text: &text,
    };
    let aliases = job.aliases.share(job.max_bytes);
    // A load read back takes from the shared budget what it took when parsed: otherwise every
    // reload would admit the budget's worth again beside what the cache already holds. When that
    // no longer fits, it is parsed, and refused, as it would be without a cache.
    if let Some(hit) = cache.and_then(|cache| cache.get(&id, &read)) {
        if aliases.draw_again(hit.values) {
            tracing::debug!("catalog cache: {} read from the cache", file.display());
            out.loaded = Some((hit.kind, hit.name, hit.loaded));
            return out;
        }
        tracing::debug!("catalog cache: {} not read back: the files loaded with it leave it no room", file.display());
    }
    let doc = match doc::parse_within(&text, Syntax::of_path(file), &aliases) {
        Ok(doc) => doc,
        Err(failure) => {
            out.diagnostics.push(Diagnostic::error(file, failure.range, "invalid-protocol", failure.message));
            return out;
        }
    };
    let kind = match (job.kind, detect(&doc)) {
        (Some(kind), _) | (None, Some(kind)) => kind,
        (None, None) => {
            // Unrecognised JSON under protocols/ is not necessarily a mistake (fixtures, notes);
            // a file the configuration names is.
            if job.toolset.is_some() {
                out.diagnostics.push(Diagnostic::error(
                    file,
                    ByteRange::new(0, 0),
                    "unknown-protocol",
                    "not a recognised protocol: expected an OpenAPI 3 document, a chainsmith toolset or ToolBench api_list records",
                ));
            }
            return out;
        }
    };
    let name = match job.toolset {
        Some(name) => name.to_string(),
        None => discovered_name(file, kind, &doc),
    };
    let pulled_in = std::cell::RefCell::new(Vec::new());
    let recording = |path: &Path| {
        let read = read(path);
        pulled_in.borrow_mut().push((path.to_path_buf(), super::cache::pulled_in(&read)));
        read
    };
    let mut loaded = load_doc(kind, &doc, &text, file, &name, &recording, &aliases);
    // A `$ref` left unread for want of trust says so as trust's warning, which the editor
    // offers to act on.
    // So does what the unread reference disables (`` `$ref` `X` leads to a file that could not
    // be read; operation … is disabled``).
    let refusals = refusals.borrow();
    let mut unread = Vec::new();
    for problem in &mut loaded.diagnostics {
        if problem.code == "unresolved-ref" && refusals.iter().any(|why| problem.message.ends_with(why.as_str())) {
            problem.code = trust::UNTRUSTED;
            problem.severity = crate::diagnostic::Severity::Warning;
            unread.extend(problem.message.split_once("`: ").map(|(reference, _)| format!("{reference}` ")));
        }
    }
    for problem in &mut loaded.diagnostics {
        if problem.code == "unresolved-ref"
            && unread.iter().any(|reference| problem.message.starts_with(reference.as_str()))
        {
            problem.code = trust::UNTRUSTED;
            problem.severity = crate::diagnostic::Severity::Warning;
        }
    }
    // A load that drew on the alias budget is not kept: read back, it would take nothing (a
    // folder's planted files would each load once more with every reload), and a file it pulled
    // in that the budget refused would stay refused once there is room.
    if !from_editor
        && !aliases.asked()
        && let Some(cache) = cache
    {
        cache.put(&id, kind, &name, &loaded, pulled_in.into_inner(), aliases.drawn());
    }
    out.loaded = Some((kind, name, loaded));
    out
}

/// The toolset name of a file found under `protocols/`: its stem, or the identifier a native
/// toolset declares.
fn discovered_name(file: &Path, kind: SourceKind, doc: &Node) -> String {
    let stem = file.file_name().and_then(|s| s.to_str()).unwrap_or("tools");
    let stem = stem.split('.').next().unwrap_or(stem);
    if kind == SourceKind::Native
        && let Some(declared) = doc.get("name").and_then(Node::as_str)
        && names::is_identifier(declared)
    {
        return declared.to_string();
    }
    names::toolset_from_stem(stem)
}

/// Adds a file's tools to the toolset of that name; several files of one toolset are a union
/// (ToolBench's `toolbench = [..]`), the first declaration of a name winning.
fn merge_into(
    toolsets: &mut Vec<Toolset>,
    name: String,
    kind: SourceKind,
    file: PathBuf,
    mut loaded: Loaded,
    diagnostics: &mut Vec<Diagnostic>,
) {
    diagnostics.append(&mut loaded.diagnostics);
    let Some(existing) = toolsets.iter_mut().find(|t| t.name == name) else {
        toolsets.push(Toolset {
            name,
            kind,
            files: vec![file],
            description: loaded.description,
            base_url: loaded.base_url,
            auth: loaded.auth,
            tools: loaded.tools,
            schemas: loaded.schemas,
            unlisted: None,
        });
        return;
    };
    existing.files.push(file);
    if !loaded.schemas.is_empty() {
        std::sync::Arc::make_mut(&mut existing.schemas).extend((*loaded.schemas).clone());
    }
    let known: std::collections::HashSet<String> = existing.tools.iter().map(|t| t.name.clone()).collect();
    existing.tools.extend(loaded.tools.into_iter().filter(|t| !known.contains(&t.name)));
    if existing.base_url.is_none() {
        existing.base_url = loaded.base_url;
    }
}

/// Texts replacing files on disk, by absolute path.
type Unsaved = HashMap<PathBuf, String>;

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Why a protocol file was not read, with the way out when it is only too large.
fn read_failure(e: &crate::files::ReadError) -> String {
    match e {
        crate::files::ReadError::TooLarge { .. } => format!("{e}; a [[toolsets]] entry's `max_mb` raises the limit"),
        _ => e.to_string(),
    }
}

/// Protocol files under `dir`, sorted, skipping the native format's schema folder.
fn discover(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.file_name() == "schema" && e.depth() == 1))
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "yaml" | "yml")))
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    //! Loading a whole workspace: what the files a protocol file pulls in (`bundle`) become once
    //! loaded, and where their problems are reported.

    use crate::config::Config;
    use crate::toolset::schema::{self, KeyLookup};

    const MAIN: &str = r#"openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pets:
    get: {$ref: "paths/pets_list.yaml"}
  /pets/{id}:
    get:
      parameters: [{$ref: "parameters.yaml#/id"}]
      responses:
        "200":
          description: one pet
          content: {application/json: {schema: {$ref: "schemas/pet.yaml#/Pet"}}}
  /remote:
    get:
      responses:
        "200":
          description: from afar
          content: {application/json: {schema: {$ref: "https://example.com/schemas.yaml#/Thing"}}}
  /missing:
    get:
      responses:
        "200":
          description: gone
          content: {application/json: {schema: {$ref: "schemas/gone.yaml#/Gone"}}}
components:
  schemas:
    Error: {type: object, properties: {message: {type: string}}}
"#;

    /// An operation in its own file (DigitalOcean's layout), referring back to the main file and
    /// on to a sibling folder.
    const LIST: &str = r#"operationId: listPets
summary: List pets
responses:
  "200":
    description: pets
    content: {application/json: {schema: {type: array, items: {$ref: "../schemas/pet.yaml#/Pet"}}}}
  default:
    description: error
    content: {application/json: {schema: {$ref: "../openapi.yaml#/components/schemas/Error"}}}
"#;

    /// Recursive across the file: a pet's parent is a pet.
    const PET: &str = r##"Pet:
  type: object
  properties:
    name: {type: string}
    owner: {$ref: "#/Owner"}
    parent: {$ref: "#/Pet"}
Owner:
  type: object
  properties:
    login: {type: string}
"##;

    /// A workspace's protocol files, and the files they refer to, share one alias budget: of a
    /// folder of planted YAML files that each expand well past eight times their size, as many
    /// load as the budget holds, the rest being errors on their files (which of them depends on
    /// the order they are read in; how many does not).
    #[test]
    fn the_files_of_one_load_share_what_their_yaml_aliases_may_expand_to() {
        let dir = tempfile::tempdir().unwrap();
        let mut planted = format!("s: &s \"{}\"\ncopies: [{}]\n", "A".repeat(1 << 20), vec!["*s"; 26].join(", "));
        std::fs::create_dir_all(dir.path().join("protocols")).unwrap();
        for n in 0..5 {
            planted.push_str(&format!("n{n}: {n}\n"));
            std::fs::write(dir.path().join(format!("protocols/p{n}.yaml")), &planted).unwrap();
        }
        // Loaded again, as every reload does: what loaded is not read back from the catalog cache
        // for free, which would let one more file load each time.
        for _ in 0..2 {
            let catalog = super::load(&Config::load(dir.path(), None));
            let refused: Vec<_> =
                catalog.diagnostics.iter().filter(|d| d.message.contains("its aliases expand it to")).collect();
            assert_eq!(refused.len(), 2, "{:?}", catalog.diagnostics);
            assert!(refused.iter().all(|d| d.code == "invalid-protocol" && d.file.starts_with(dir.path())));
        }
    }

    /// A parameter named longer than a word (here 2,000 bytes) is left out of its tool, with one
    /// warning on the operation, and the rest of the tool loads; a shared one is weighed as a
    /// copy for each operation using it (a 1 MB name shared by 4,000 operations aborted at 3.7 GB).
    #[test]
    fn a_parameter_named_past_a_word_is_left_out_and_a_shared_name_is_weighed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("protocols")).unwrap();
        let long = format!("p{}", "a".repeat(2000));
        let spec = serde_json::json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "servers": [{"url": "https://t.example"}],
            "paths": {"/x": {"get": {"parameters": [
                {"name": long, "in": "query", "required": true, "schema": {"type": "string"}},
                {"name": "q", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}}}}}});
        std::fs::write(dir.path().join("protocols/t.json"), spec.to_string()).unwrap();
        let catalog = super::load(&Config::load(dir.path(), None));
        let tool = catalog.tool("t", "x").expect("the tool loads");
        assert_eq!(tool.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["q"]);
        let warned: Vec<_> = catalog.diagnostics.iter().filter(|d| d.code == "invalid-operation").collect();
        assert_eq!(warned.len(), 1, "{:?}", catalog.diagnostics);
        assert!(warned[0].message.contains("longer than 1024 bytes"), "{}", warned[0].message);

        let shared = serde_json::json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "components": {"parameters": {"big": {"name": "a".repeat(200_000), "in": "query", "schema": {"type": "integer"}}}},
            "paths": (0..2000).map(|i| (format!("/o{i}"), serde_json::json!({"get": {
                "parameters": [{"$ref": "#/components/parameters/big"}], "responses": {"200": {"description": "ok"}}}})))
                .collect::<serde_json::Map<_, _>>()});
        let doc = super::doc::parse(&shared.to_string(), super::doc::Syntax::Json).unwrap();
        let loaded = super::super::openapi::load(&doc, "", std::path::Path::new("s.json"), "s");
        assert_eq!(loaded.tools.len(), 2000);
        assert_eq!(loaded.diagnostics.iter().filter(|d| d.code == "protocol-too-large").count(), 1);
        let copied: usize = loaded.tools.iter().flat_map(|t| &t.params).map(|p| p.name.len() + p.wire_name.len()).sum();
        assert!(copied <= 128 << 20, "{copied} bytes of names");
    }

    /// What the bundler copies and what the operations then copy come out of one bound sized by
    /// what was written: nested pointers (`ext.json#/a/a/…`) make the bundled document far
    /// heavier than the files, and a bound of eight times the bundled document let 60 operations
    /// copy a shared 20,000-property parameter 60 times, with no error.
    #[test]
    fn bundled_copies_and_operations_share_one_bound() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let properties = |n: usize, prefix: &str| -> serde_json::Map<String, serde_json::Value> {
            (0..n).map(|i| (format!("{prefix}{i}"), serde_json::json!({"type": "integer"}))).collect()
        };
        let mut level = serde_json::Value::Null;
        for k in (0..100).rev() {
            let mut node = serde_json::json!({"name": format!("c{k}"), "in": "query", "schema": {"type": "object", "properties": properties(100, "y")}});
            if !level.is_null() {
                node["a"] = level;
            }
            level = node;
        }
        let ext = serde_json::json!({
            "big": {"name": "big", "in": "query", "schema": {"type": "object", "properties": properties(20_000, "x")}},
            "a": level,
        });
        let operations: serde_json::Map<String, serde_json::Value> = (0..60)
            .map(|i| {
                (
                    format!("/o{i}"),
                    serde_json::json!({"get": {"operationId": format!("o{i}"),
                "parameters": [{"$ref": "ext.json#/big"}], "responses": {"200": {"description": "ok"}}}}),
                )
            })
            .collect();
        let levels: serde_json::Map<String, serde_json::Value> = (1..=100)
            .map(|k| (format!("c{k}"), serde_json::json!({"$ref": format!("ext.json#{}", "/a".repeat(k))})))
            .collect();
        let main = serde_json::json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "paths": operations, "components": {"parameters": levels}});
        std::fs::write(root.join("ext.json"), ext.to_string()).unwrap();
        std::fs::write(root.join("main.json"), main.to_string()).unwrap();
        std::fs::write(root.join("chainsmith.toml"), "[[toolsets]]\nname = \"t\"\nopenapi = \"main.json\"\n").unwrap();
        let catalog = super::load(&Config::load(root, None));
        let too_large: Vec<_> = catalog.diagnostics.iter().filter(|d| d.code == "protocol-too-large").collect();
        assert_eq!(too_large.len(), 1, "{:?}", catalog.diagnostics);
        assert!(too_large[0].message.contains("the file and those its `$ref`s name hold"), "{}", too_large[0].message);
        assert_eq!(catalog.toolsets[0].tools.len(), 60, "every operation still loads");
    }

    #[test]
    fn other_files_are_bundled_and_problems_located_in_the_main_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            ("openapi.yaml", MAIN),
            ("paths/pets_list.yaml", LIST),
            ("schemas/pet.yaml", PET),
            ("parameters.yaml", "id: {name: id, in: path, required: true, schema: {type: integer}}\n"),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        std::fs::write(root.join("chainsmith.toml"), "[[toolsets]]\nname = \"pets\"\nopenapi = \"openapi.yaml\"\n")
            .unwrap();
        let catalog = super::load(&Config::load(root, None));

        let list = catalog.tool("pets", "pets").expect("the operation kept in its own file");
        assert_eq!(list.description, "List pets");
        let item = schema::items(list, list.response.as_ref().unwrap()).unwrap();
        let KeyLookup::Declared(parent) = schema::property(list, item, "parent") else { panic!() };
        let KeyLookup::Declared(owner) = schema::property(list, parent, "owner") else { panic!() };
        assert!(matches!(schema::property(list, owner, "login"), KeyLookup::Declared(_)));
        assert_eq!(schema::property(list, owner, "logn"), KeyLookup::Missing);
        assert_eq!(catalog.alias_of(list), Some("list_pets"));

        let one = catalog.tool("pets", "pets_by_id").expect("GET /pets/{id}");
        assert_eq!(schema::types(one, &one.param("id").expect("a parameter from another file").schema), ["integer"]);

        // A remote reference and an unreadable file: errors on their `$ref` in openapi.yaml, and
        // only their operations are disabled.
        assert!(catalog.tool("pets", "remote").is_none() && catalog.tool("pets", "missing").is_none());
        let text = std::fs::read_to_string(root.join("openapi.yaml")).unwrap();
        let mut problems: Vec<(String, &str)> = catalog
            .diagnostics
            .iter()
            .map(|d| {
                assert!(d.file.ends_with("openapi.yaml"), "{d:?}");
                (d.message.clone(), &text[d.range.start..d.range.end])
            })
            .collect();
        problems.sort();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].0.contains("is remote; chainsmith never fetches"), "{problems:?}");
        assert_eq!(problems[0].1, "\"https://example.com/schemas.yaml#/Thing\"");
        assert!(
            problems[1].0.contains("leads to a file that could not be read; operation GET /missing is disabled"),
            "{problems:?}"
        );
        assert!(problems[2].0.starts_with("`$ref` `schemas/gone.yaml#/Gone`: cannot read"), "{problems:?}");
        assert_eq!(problems[2].1, "\"schemas/gone.yaml#/Gone\"");
    }
}
