//! `chainsmith.toml` and editor settings → [`Config`].
//!
//! The file is read tolerantly: a syntax error is a diagnostic on the file and chainsmith falls back
//! to discovering `protocols/`; a bad `[[toolsets]]` entry disables only that toolset; a bad section
//! keeps that section's defaults. Editor settings (section `chainsmith`, same keys) override the file
//! key by key; the settings' own layers (initialization options, then `workspace/configuration`)
//! are put together by the same rule ([`layer_settings`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::Spanned;

use crate::diagnostic::{Diagnostic, Severity};
use crate::text::ByteRange;

pub const CONFIG_FILE: &str = "chainsmith.toml";

/// The largest chainsmith.toml read (1 MiB: it is written by hand). Parsed, TOML takes up to ~90
/// times its size, and a folder's file is read before the user trusts it: on opening it in the
/// editor, by every command.
pub const MAX_CONFIG: u64 = 1 << 20;

/// The folder whose protocol files make up the catalog when chainsmith.toml names no toolsets.
pub const PROTOCOLS_DIR: &str = "protocols";

#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The workspace root, as given (relative paths stay relative so messages match the user's words).
    pub root: PathBuf,
    /// The chainsmith.toml that was read, if any.
    pub file: Option<PathBuf>,
    pub toolsets: Vec<ToolsetConfig>,
    pub llm: LlmConfig,
    pub runtime: RuntimeConfig,
    pub generate: GenerateConfig,
    pub probe: ProbeConfig,
    pub toolnet: ToolnetConfig,
    pub retrieval: RetrievalConfig,
    pub diagnostics: DiagnosticsConfig,
    /// Problems found in chainsmith.toml or in the editor settings.
    pub problems: Vec<Diagnostic>,
    /// Where the `[runtime]` section is in chainsmith.toml (empty when it has none).
    pub runtime_range: ByteRange,
    /// Where the `[llm]` section is in chainsmith.toml (empty when it has none).
    pub llm_range: ByteRange,
    /// The user trusts this workspace for this session without recording it (`chainsmith
    /// --trust`; the editor setting `trusted`, from editors with their own workspace trust). Never
    /// read from chainsmith.toml: a workspace cannot trust itself. See [`crate::trust`].
    pub trusted: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolsetConfig {
    pub name: String,
    pub source: ToolsetSource,
    pub base_url: Option<String>,
    pub auth: Option<AuthConfig>,
    /// The largest file of this toolset read, in bytes (`max_mb`; default
    /// [`crate::files::MAX_READ`]).
    pub max_bytes: u64,
    /// Where the entry is in chainsmith.toml.
    pub range: ByteRange,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolsetSource {
    OpenApi(String),
    /// A protocol file of any kind, detected by content.
    Protocol(String),
    ToolBench(Vec<String>),
    Mcp(McpConfig),
}

/// An MCP server: a command chainsmith starts (stdio), or a remote server's Streamable HTTP
/// endpoint (`url`, with `headers`). Exactly one of `command` and `url`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A remote server's endpoint (`https://…/mcp`), spoken to over Streamable HTTP.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent to a remote server: a literal value, or one read from the environment.
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderValueConfig>,
    /// Seconds the server gets to start and list its tools (default 10).
    #[serde(default = "McpConfig::default_timeout_s")]
    pub timeout_s: u64,
}

impl McpConfig {
    pub const DEFAULT_TIMEOUT_S: u64 = 10;
    fn default_timeout_s() -> u64 {
        Self::DEFAULT_TIMEOUT_S
    }

    /// What is wrong with the entry's shape, if anything (said on the toolset's entry).
    fn problem(&self) -> Option<String> {
        match &self.url {
            None if self.command.is_empty() => {
                Some("`mcp` needs a `command` (a local server) or a `url` (a remote one)".into())
            }
            None if !self.headers.is_empty() => {
                Some("`headers` go with a remote server's `url`, not a `command`".into())
            }
            None => None,
            Some(_) if !self.command.is_empty() => Some("`mcp` takes a `command` or a `url`, not both".into()),
            Some(_) if !self.args.is_empty() || !self.env.is_empty() => {
                Some("`args` and `env` go with a `command`; a remote server gets `headers`".into())
            }
            Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Some(format!("`url` must be an http:// or https:// address, not `{url}`"))
            }
            Some(_) => None,
        }
    }
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            command: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            headers: BTreeMap::new(),
            timeout_s: Self::DEFAULT_TIMEOUT_S,
        }
    }
}

/// A header's value for a remote MCP server: written out, or `{ value_env = "VAR", prefix = "Bearer " }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum HeaderValueConfig {
    Literal(String),
    FromEnv(HeaderFromEnv),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderFromEnv {
    pub value_env: String,
    #[serde(default)]
    pub prefix: String,
}

impl HeaderValueConfig {
    /// The value to send; `None` when its variable is unset.
    pub fn value(&self) -> Option<String> {
        match self {
            HeaderValueConfig::Literal(value) => Some(value.clone()),
            HeaderValueConfig::FromEnv(from) => {
                std::env::var(&from.value_env).ok().map(|v| format!("{}{v}", from.prefix))
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    pub query: Option<String>,
    pub header: Option<String>,
    #[serde(default)]
    pub prefix: String,
    pub value_env: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolset {
    name: Option<String>,
    openapi: Option<String>,
    protocol: Option<String>,
    toolbench: Option<OneOrMany>,
    mcp: Option<McpConfig>,
    base_url: Option<String>,
    auth: Option<AuthConfig>,
    max_mb: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    pub timeout_s: u64,
    /// The model's context window in tokens, when known: a conversation that would not fit is
    /// trimmed before it is sent (a small local model's server refuses it otherwise).
    pub context_tokens: Option<u32>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "qwen2.5-coder:7b".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_s: 120,
            context_tokens: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeConfig {
    pub python: String,
    pub timeout_s: u64,
    pub max_tool_calls: u32,
    /// How runs are confined (see `runtime::sandbox`).
    pub sandbox: SandboxMode,
    /// Folders (relative to the workspace root) a confined run may write beneath, besides its
    /// scratch folder.
    pub writable: Vec<String>,
    /// Files and folders (relative to the workspace root, `~/…`, or absolute) a confined run may read
    /// besides what every run reads: a model cache or a dataset in the home folder, which runs
    /// otherwise do not see. The credential stores stay hidden beneath them.
    pub readable: Vec<String>,
    /// The address space a confined program may use, in MiB.
    pub max_memory_mb: u64,
    /// How many processes and threads a confined run may have at once, in its user namespace, or
    /// for root in a cgroup of its own (see `runtime::sandbox`; not set before Linux 5.14).
    pub max_processes: u64,
    /// The largest body an HTTP tool's answer may have, in MiB (64 by default, as an MCP message).
    pub max_response_mb: u64,
    /// What a confined run may write in its scratch folder (`TMPDIR`), in MiB: the folder is a
    /// memory-backed file system of that size in the run's mount namespace (see `runtime::sandbox`).
    pub max_scratch_mb: u64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            python: "python3".into(),
            timeout_s: 60,
            max_tool_calls: 200,
            sandbox: SandboxMode::BestEffort,
            writable: Vec::new(),
            readable: Vec::new(),
            max_memory_mb: 4096,
            max_processes: 256,
            max_response_mb: 64,
            max_scratch_mb: 256,
        }
    }
}

/// `[runtime] sandbox`: every layer or no run (`strict`), what the system grants (`best-effort`),
/// or none (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    Strict,
    BestEffort,
    Off,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenerateConfig {
    pub candidates: usize,
    pub reflections: u32,
    pub max_llm_calls: u32,
    pub max_tokens: u64,
    /// DFSDT: children per attempt (revision + distinct alternatives).
    pub width: usize,
    /// DFSDT: longest path of attempts.
    pub depth: usize,
    /// The planner's chains shown to the model with the tools (0: none, the model plans alone).
    pub plans: usize,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            candidates: 20,
            reflections: 3,
            max_llm_calls: 12,
            max_tokens: 60000,
            width: 2,
            depth: 3,
            plans: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProbeConfig {
    pub samples: u32,
    pub rounds: u32,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig { samples: 3, rounds: 3 }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolnetConfig {
    pub alpha: f64,
    pub beta: f64,
    /// Where the editor shows ToolNet's successor hints.
    pub hints: SuccessorHints,
}

impl Default for ToolnetConfig {
    fn default() -> Self {
        ToolnetConfig { alpha: 0.5, beta: 0.5, hints: SuccessorHints::All }
    }
}

/// `[retrieval]`: how candidate tools are found for a task.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalConfig {
    /// A sentence-embedding model's folder (sentence-transformers layout: `config.json`,
    /// `tokenizer.json`, `model.safetensors`), relative to the workspace root or absolute; its
    /// ranking is fused with BM25's. Without it, BM25 alone.
    pub embedding_model: Option<String>,
}

/// `[toolnet] hints`: after each tool's first call and "what next" after the last call (`all`),
/// only "what next" (`last`), or none (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuccessorHints {
    All,
    Last,
    Off,
}

/// `[diagnostics] severity = { "unknown-key" = "error", "argument-type-mismatch" = "off" }`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiagnosticsConfig {
    /// Code → severity; `None` turns the code off.
    pub severity: HashMap<String, Option<Severity>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RawDiagnostics {
    severity: BTreeMap<String, String>,
}

impl DiagnosticsConfig {
    /// The severity to report a diagnostic with, or `None` when its code is turned off.
    pub fn severity_of(&self, code: &str, default: Severity) -> Option<Severity> {
        match self.severity.get(code) {
            Some(configured) => *configured,
            None => Some(default),
        }
    }
}

#[derive(Debug, Deserialize)]
struct RawConfig {
    #[serde(default)]
    toolsets: Vec<Spanned<toml::Value>>,
    llm: Option<Spanned<toml::Value>>,
    runtime: Option<Spanned<toml::Value>>,
    generate: Option<Spanned<toml::Value>>,
    probe: Option<Spanned<toml::Value>>,
    toolnet: Option<Spanned<toml::Value>>,
    retrieval: Option<Spanned<toml::Value>>,
    diagnostics: Option<Spanned<toml::Value>>,
    #[serde(flatten)]
    other: BTreeMap<String, Spanned<toml::Value>>,
}

impl Config {
    /// The chainsmith.toml that was read, else where it would be: what diagnostics on the
    /// configuration (a toolset's entry, an MCP server) are located in.
    pub fn config_file(&self) -> PathBuf {
        self.file.clone().unwrap_or_else(|| self.root.join(CONFIG_FILE))
    }

    /// Reads `<root>/chainsmith.toml` (when present, at most [`MAX_CONFIG`]) and applies
    /// editor-setting overrides.
    pub fn load(root: &Path, overrides: Option<&serde_json::Value>) -> Config {
        let path = root.join(CONFIG_FILE);
        match crate::files::read_text(&path, MAX_CONFIG) {
            Ok(text) => Self::from_text(root, Some((path.as_path(), &text)), overrides),
            Err(e) if e.not_found() => Self::from_text(root, None, overrides),
            // Unreadable (not UTF-8, a FIFO …): said on the file, and the workspace goes on without it.
            Err(e) => {
                let mut config = Self::from_text(root, None, overrides);
                config.file = Some(path.clone());
                let message = format!("{CONFIG_FILE} cannot be read: {e}");
                config.problems.push(Diagnostic::error(&path, ByteRange::default(), "invalid-config", message));
                config
            }
        }
    }

    pub fn from_text(root: &Path, file: Option<(&Path, &str)>, overrides: Option<&serde_json::Value>) -> Config {
        let mut config = Config { root: root.to_path_buf(), ..Default::default() };
        let overrides = overrides.and_then(|o| o.as_object());
        let override_of = |key: &str| overrides.and_then(|o| o.get(key)).filter(|v| !v.is_null());
        let (file_path, raw) = match file {
            Some((path, text)) => {
                config.file = Some(path.to_path_buf());
                match toml::from_str::<RawConfig>(text) {
                    Ok(raw) => (path.to_path_buf(), Some(raw)),
                    Err(e) => {
                        let span = e.span().unwrap_or(0..0);
                        config.problems.push(Diagnostic::error(
                            path,
                            ByteRange::new(span.start, span.end),
                            "invalid-config",
                            format!("{CONFIG_FILE} is not valid TOML: {}", e.message()),
                        ));
                        (path.to_path_buf(), None)
                    }
                }
            }
            None => (root.join(CONFIG_FILE), None),
        };
        let mut problems = Vec::new();
        let mut section = |name: &str, value: Option<&Spanned<toml::Value>>| -> (Option<toml::Value>, ByteRange) {
            let range = value.map(|v| table_extent(file.map(|f| f.1).unwrap_or(""), v.span())).unwrap_or_default();
            let mut merged = value.map(|v| v.get_ref().clone());
            if let Some(o) = override_of(name) {
                match json_to_toml(o) {
                    Some(o) => merged = Some(merge(merged, o)),
                    None => problems.push(Diagnostic::error(
                        &file_path,
                        range,
                        "invalid-config",
                        format!("editor setting `chainsmith.{name}` cannot be used: it holds a null"),
                    )),
                }
            }
            (merged, range)
        };
        let raw_ref = raw.as_ref();
        let sections = [
            ("llm", section("llm", raw_ref.and_then(|r| r.llm.as_ref()))),
            ("runtime", section("runtime", raw_ref.and_then(|r| r.runtime.as_ref()))),
            ("generate", section("generate", raw_ref.and_then(|r| r.generate.as_ref()))),
            ("probe", section("probe", raw_ref.and_then(|r| r.probe.as_ref()))),
            ("toolnet", section("toolnet", raw_ref.and_then(|r| r.toolnet.as_ref()))),
            ("retrieval", section("retrieval", raw_ref.and_then(|r| r.retrieval.as_ref()))),
            ("diagnostics", section("diagnostics", raw_ref.and_then(|r| r.diagnostics.as_ref()))),
        ];
        config.problems.append(&mut problems);
        config.trusted = override_of("trusted").and_then(serde_json::Value::as_bool).unwrap_or(false);
        for (name, (value, range)) in sections {
            match name {
                "runtime" => config.runtime_range = range,
                "llm" => config.llm_range = range,
                _ => {}
            }
            let Some(value) = value else { continue };
            let problems = &mut config.problems;
            match name {
                "llm" => config.llm = typed(value, name, range, &file_path, problems).unwrap_or_default(),
                "runtime" => config.runtime = typed(value, name, range, &file_path, problems).unwrap_or_default(),
                "generate" => config.generate = typed(value, name, range, &file_path, problems).unwrap_or_default(),
                "probe" => config.probe = typed(value, name, range, &file_path, problems).unwrap_or_default(),
                "toolnet" => config.toolnet = typed(value, name, range, &file_path, problems).unwrap_or_default(),
                "retrieval" => config.retrieval = typed(value, name, range, &file_path, problems).unwrap_or_default(),
                _ => {
                    let raw: RawDiagnostics = typed(value, name, range, &file_path, problems).unwrap_or_default();
                    for (code, severity) in raw.severity {
                        let parsed = match severity.as_str() {
                            "off" | "ignore" | "none" => Some(None),
                            other => Severity::parse(other).map(Some),
                        };
                        match parsed {
                            Some(s) => {
                                config.diagnostics.severity.insert(code, s);
                            }
                            None => problems.push(Diagnostic::error(
                                &file_path,
                                range,
                                "invalid-config",
                                format!(
                                    "[diagnostics] severity `{severity}` for `{code}`: use error, warning, information, hint or off"
                                ),
                            )),
                        }
                    }
                }
            }
        }
        if let Some(raw) = raw_ref {
            for (key, value) in &raw.other {
                let span = value.span();
                config.problems.push(Diagnostic::warning(
                    &file_path,
                    ByteRange::new(span.start, span.end),
                    "invalid-config",
                    format!(
                        "unknown section `{key}` in {CONFIG_FILE} (known: toolsets, llm, runtime, generate, probe, toolnet, retrieval, diagnostics)"
                    ),
                ));
            }
        }
        let toolset_entries: Vec<(toml::Value, ByteRange)> = match override_of("toolsets").and_then(json_to_toml) {
            Some(toml::Value::Array(items)) => items.into_iter().map(|v| (v, ByteRange::default())).collect(),
            _ => raw_ref
                .map(|r| {
                    r.toolsets
                        .iter()
                        .map(|t| (t.get_ref().clone(), table_extent(file.map(|f| f.1).unwrap_or(""), t.span())))
                        .collect()
                })
                .unwrap_or_default(),
        };
        for (value, range) in toolset_entries {
            if let Some(raw) = typed::<RawToolset>(value, "toolsets", range, &file_path, &mut config.problems)
                && let Some(toolset) = toolset_config(raw, range, &file_path, &mut config.problems)
            {
                if config.toolsets.iter().any(|t| t.name == toolset.name) {
                    config.problems.push(Diagnostic::error(
                        &file_path,
                        range,
                        "invalid-config",
                        format!("toolset `{}` is declared twice; the second one is ignored", toolset.name),
                    ));
                    continue;
                }
                config.toolsets.push(toolset);
            }
        }
        bound_timeouts(&mut config, &file_path);
        config
    }
}

/// The longest timeout a setting may give, in seconds (a week): longer ones are read as this, so
/// no deadline computed from one overflows.
pub const MAX_TIMEOUT_S: u64 = 7 * 24 * 3600;

/// A `timeout_s` as a duration: at least a second, at most [`MAX_TIMEOUT_S`].
pub fn timeout(seconds: u64) -> std::time::Duration {
    std::time::Duration::from_secs(seconds.clamp(1, MAX_TIMEOUT_S))
}

/// Reads every `timeout_s` longer than [`MAX_TIMEOUT_S`] as that, with a warning where it is set.
fn bound_timeouts(config: &mut Config, file: &Path) {
    let mut settings: Vec<(String, &mut u64, ByteRange)> = vec![
        ("[runtime] timeout_s".into(), &mut config.runtime.timeout_s, config.runtime_range),
        ("[llm] timeout_s".into(), &mut config.llm.timeout_s, config.llm_range),
    ];
    for toolset in &mut config.toolsets {
        if let ToolsetSource::Mcp(mcp) = &mut toolset.source {
            settings.push((format!("toolset `{}`: timeout_s", toolset.name), &mut mcp.timeout_s, toolset.range));
        }
    }
    for (name, value, range) in settings {
        if *value > MAX_TIMEOUT_S {
            config.problems.push(Diagnostic::warning(
                file,
                range,
                "invalid-config",
                format!(
                    "{name} = {value} is out of range: the longest is {MAX_TIMEOUT_S} (a week), which is used instead"
                ),
            ));
            *value = MAX_TIMEOUT_S;
        }
    }
}

/// toml spans an array-of-tables entry by its `[[header]]` only; a diagnostic on the entry should
/// cover its keys too, up to the next table header.
fn table_extent(text: &str, span: std::ops::Range<usize>) -> ByteRange {
    let mut end = span.end.min(text.len());
    if text.get(span.start..end).is_some_and(|h| h.starts_with('[')) {
        let rest = &text[end..];
        let next_header =
            rest.match_indices('\n').map(|(i, _)| i + 1).find(|&i| rest[i..].trim_start().starts_with('['));
        end += next_header.unwrap_or(rest.len());
        while end > span.start && text[..end].ends_with(char::is_whitespace) {
            end -= 1;
        }
    }
    ByteRange::new(span.start, end)
}

fn toolset_config(
    raw: RawToolset,
    range: ByteRange,
    file: &Path,
    problems: &mut Vec<Diagnostic>,
) -> Option<ToolsetConfig> {
    let mut sources = Vec::new();
    if let Some(p) = raw.openapi {
        sources.push(ToolsetSource::OpenApi(p));
    }
    if let Some(p) = raw.protocol {
        sources.push(ToolsetSource::Protocol(p));
    }
    match raw.toolbench {
        Some(OneOrMany::One(p)) => sources.push(ToolsetSource::ToolBench(vec![p])),
        Some(OneOrMany::Many(ps)) => sources.push(ToolsetSource::ToolBench(ps)),
        None => {}
    }
    if let Some(m) = raw.mcp {
        sources.push(ToolsetSource::Mcp(m));
    }
    let Some(name) = raw.name.filter(|n| !n.is_empty()) else {
        problems.push(Diagnostic::error(file, range, "invalid-config", "a [[toolsets]] entry needs a `name`"));
        return None;
    };
    if !crate::names::is_identifier(&name) {
        problems.push(Diagnostic::error(
            file,
            range,
            "invalid-config",
            format!("toolset name `{name}` is not a Python identifier (it becomes module chainsmith.tools.{name})"),
        ));
        return None;
    }
    if sources.len() != 1 {
        problems.push(Diagnostic::error(
            file,
            range,
            "invalid-config",
            format!("toolset `{name}` needs exactly one of `openapi`, `protocol`, `toolbench` or `mcp`"),
        ));
        return None;
    }
    if let Some(ToolsetSource::Mcp(mcp)) = sources.first()
        && let Some(problem) = mcp.problem()
    {
        problems.push(Diagnostic::error(file, range, "invalid-config", format!("toolset `{name}`: {problem}")));
        return None;
    }
    if let Some(auth) = &raw.auth
        && auth.query.is_some() == auth.header.is_some()
    {
        problems.push(Diagnostic::error(
            file,
            range,
            "invalid-config",
            format!("toolset `{name}`: `auth` needs exactly one of `query` or `header`"),
        ));
        return None;
    }
    let max_bytes = match raw.max_mb {
        None => crate::files::MAX_READ,
        Some(mb @ 1..=65_536) => mb << 20,
        Some(mb) => {
            problems.push(Diagnostic::error(
                file,
                range,
                "invalid-config",
                format!("toolset `{name}`: `max_mb` must be between 1 and 65536 (MiB), not {mb}"),
            ));
            return None;
        }
    };
    Some(ToolsetConfig {
        name,
        source: sources.pop().expect("exactly one source"),
        base_url: raw.base_url,
        auth: raw.auth,
        max_bytes,
        range,
    })
}

fn typed<T: DeserializeOwned>(
    value: toml::Value,
    section: &str,
    range: ByteRange,
    file: &Path,
    problems: &mut Vec<Diagnostic>,
) -> Option<T> {
    match value.try_into::<T>() {
        Ok(v) => Some(v),
        Err(e) => {
            problems.push(Diagnostic::error(
                file,
                range,
                "invalid-config",
                format!("[{section}] in {CONFIG_FILE}: {}; its defaults are used", e.message().trim()),
            ));
            None
        }
    }
}

/// The one rule for putting a layer of settings over another (editor settings over chainsmith.toml,
/// `workspace/configuration` over initialization options): tables key by key, anything else —
/// arrays, `toolsets` among them — replaced whole. Settings arrive as JSON and reach it through
/// [`json_to_toml`], so a null is a setting not given and leaves the value below it.
fn merge(base: Option<toml::Value>, over: toml::Value) -> toml::Value {
    match (base, over) {
        (Some(toml::Value::Table(mut base)), toml::Value::Table(over)) => {
            for (k, v) in over {
                let merged = merge(base.remove(&k), v);
                base.insert(k, merged);
            }
            toml::Value::Table(base)
        }
        (_, over) => over,
    }
}

/// Editor settings that arrive in two layers, `earlier` (initialization options) and `later` (what
/// `workspace/configuration` answers), as the one override [`Config::load`] takes: `later` over
/// `earlier` by [`merge`], so a setting means the same whichever way the editor sends it.
pub fn layer_settings(
    earlier: Option<&serde_json::Value>,
    later: Option<&serde_json::Value>,
) -> Option<serde_json::Value> {
    match (earlier, later) {
        (None, None) => None,
        (Some(one), None) | (None, Some(one)) => Some(one.clone()),
        (Some(earlier), Some(later)) => {
            let Some(later) = json_to_toml(later) else { return Some(earlier.clone()) };
            serde_json::to_value(merge(json_to_toml(earlier), later)).ok()
        }
    }
}

fn json_to_toml(value: &serde_json::Value) -> Option<toml::Value> {
    Some(match value {
        serde_json::Value::Null => return None,
        serde_json::Value::Bool(b) => toml::Value::Boolean(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        serde_json::Value::String(s) => toml::Value::String(s.clone()),
        serde_json::Value::Array(items) => toml::Value::Array(items.iter().filter_map(json_to_toml).collect()),
        serde_json::Value::Object(map) => {
            toml::Value::Table(map.iter().filter_map(|(k, v)| Some((k.clone(), json_to_toml(v)?))).collect())
        }
    })
}

/// The workspace `start` belongs to: the nearest folder at or above it (above its folder, when
/// `start` is a file) that holds chainsmith.toml or `protocols/`. The command line (from the paths
/// it is given) and the language server (for a program opened without a workspace folder) must
/// agree on which folder that is, so both ask here. A relative `start` is walked up to the current
/// folder and no further.
///
/// A folder found so is taken only when it is the user's own ([`NotYours`] otherwise): a
/// chainsmith.toml planted in `/tmp` or in another user's folder above the program would have the
/// user's runs keep their traces there and read state someone else wrote. A folder the user names
/// (`--root`, the editor's workspace folder) is theirs to choose and is not judged.
pub fn discover_root(start: &Path) -> Option<Result<PathBuf, NotYours>> {
    let dir = if start.is_file() { start.parent()? } else { start };
    let (root, marker) = dir.ancestors().find_map(|d| {
        let config = d.join(CONFIG_FILE);
        let protocols = d.join(PROTOCOLS_DIR);
        if config.is_file() {
            Some((d, config))
        } else if protocols.is_dir() {
            Some((d, protocols))
        } else {
            None
        }
    })?;
    let judged = [(root, std::fs::metadata(root)), (marker.as_path(), std::fs::symlink_metadata(&marker))];
    for (path, meta) in judged {
        let why = match meta {
            Ok(meta) => crate::files::not_the_users(&meta),
            Err(e) => Some(format!("it cannot be read ({e})")),
        };
        if let Some(why) = why {
            return Some(Err(NotYours { root: root.to_path_buf(), judged: path.to_path_buf(), why }));
        }
    }
    Some(Ok(root.to_path_buf()))
}

/// A workspace found above a program that the user does not own (see [`discover_root`]).
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{root} looks like the workspace here, but chainsmith does not use it: {judged}: {why}; whoever can write there could choose what your runs load and where their traces go",
    root = crate::text::printable(&root.display().to_string()),
    judged = crate::text::printable(&judged.display().to_string())
)]
pub struct NotYours {
    pub root: PathBuf,
    pub judged: PathBuf,
    pub why: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TEXT: &str = r#"
[[toolsets]]
name = "tmdb"
openapi = "specs/tmdb_oas.json"
base_url = "https://api.themoviedb.org/3"
auth = { query = "api_key", value_env = "TMDB_KEY" }

[[toolsets]]
name = "rapid"
toolbench = ["a.json", "b.json"]

[[toolsets]]
name = "broken"
openapi = "x.json"
protocol = "y.json"

[llm]
model = "m1"

[runtime]
timeout_s = "soon"

[diagnostics]
severity = { "unknown-key" = "error", "argument-type-mismatch" = "off" }
"#;

    #[test]
    fn reads_the_design_keys_tolerantly() {
        let c = Config::from_text(Path::new("ws"), Some((Path::new("ws/chainsmith.toml"), TEXT)), None);
        assert_eq!(c.toolsets.len(), 2, "{:?}", c.problems);
        assert_eq!(c.toolsets[0].source, ToolsetSource::OpenApi("specs/tmdb_oas.json".into()));
        assert_eq!(c.toolsets[0].auth.as_ref().unwrap().query.as_deref(), Some("api_key"));
        assert_eq!(c.toolsets[1].source, ToolsetSource::ToolBench(vec!["a.json".into(), "b.json".into()]));
        assert_eq!(c.llm.model, "m1");
        assert_eq!(c.llm.timeout_s, 120);
        assert_eq!(c.runtime, RuntimeConfig::default());
        assert_eq!(c.diagnostics.severity_of("unknown-key", Severity::Warning), Some(Severity::Error));
        assert_eq!(c.diagnostics.severity_of("argument-type-mismatch", Severity::Warning), None);
        let messages: Vec<&str> = c.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(c.problems.len(), 2, "{messages:?}");
        let broken = c.problems.iter().find(|p| p.message.contains("broken")).unwrap();
        assert!(
            TEXT[broken.range.start..broken.range.end].contains("name = \"broken\""),
            "{:?}",
            &TEXT[broken.range.start..broken.range.end]
        );
        let runtime = c.problems.iter().find(|p| p.message.contains("[runtime]")).unwrap();
        assert!(TEXT[runtime.range.start..runtime.range.end].contains("soon"));
    }

    #[test]
    fn editor_settings_override_key_by_key() {
        let overrides = json!({"llm": {"base_url": "http://127.0.0.1:9/v1"}, "runtime": {"timeout_s": 5}});
        let c = Config::from_text(Path::new("ws"), Some((Path::new("ws/chainsmith.toml"), TEXT)), Some(&overrides));
        assert_eq!(c.llm.model, "m1");
        assert_eq!(c.llm.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(c.runtime.timeout_s, 5);
        assert!(!c.trusted);
        let trusted = Config::from_text(Path::new("ws"), None, Some(&json!({"trusted": true})));
        assert!(trusted.trusted, "an editor with its own workspace trust says so");
    }

    #[test]
    fn settings_layers_merge_by_the_rule_that_puts_them_over_the_file() {
        let init = json!({"llm": {"model": "a", "timeout_s": 5}, "x": 1, "toolsets": [{"name": "a"}, {"name": "b"}]});
        let pulled = json!({"llm": {"model": "b"}, "y": 2, "toolsets": [{"name": "c"}]});
        assert_eq!(
            layer_settings(Some(&init), Some(&pulled)),
            Some(json!({"llm": {"model": "b", "timeout_s": 5}, "x": 1, "y": 2, "toolsets": [{"name": "c"}]})),
            "tables key by key, a list replaced whole"
        );
        assert_eq!(layer_settings(Some(&init), None), Some(init.clone()));
        assert_eq!(layer_settings(None, Some(&pulled)), Some(pulled.clone()));
        assert_eq!(layer_settings(None, None), None);
        // A null is a setting not given, in either layer, as it is over the file.
        let unset = json!({"llm": {"model": null}, "x": null});
        assert_eq!(layer_settings(Some(&init), Some(&unset)), Some(init.clone()));
        let over_file = Config::from_text(Path::new("ws"), Some((Path::new("ws/chainsmith.toml"), TEXT)), Some(&unset));
        assert_eq!(over_file.llm.model, "m1");
    }

    #[test]
    fn toolsets_in_settings_replace_the_files_list() {
        let overrides = json!({"toolsets": [{"name": "mine", "openapi": "mine.json"}]});
        let c = Config::from_text(Path::new("ws"), Some((Path::new("ws/chainsmith.toml"), TEXT)), Some(&overrides));
        let names: Vec<&str> = c.toolsets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mine"]);
        // The file's other sections still apply.
        assert_eq!(c.llm.model, "m1");
    }

    #[test]
    fn an_mcp_entry_is_a_command_or_a_url_with_headers() {
        let load = |mcp: &str| {
            let text = format!("[[toolsets]]\nname = \"m\"\nmcp = {mcp}\n");
            Config::from_text(Path::new("ws"), Some((Path::new("ws/chainsmith.toml"), &text)), None)
        };
        let remote = load(
            r#"{ url = "https://x.example/mcp", headers = { A = "lit", B = { value_env = "V", prefix = "Bearer " } } }"#,
        );
        assert!(remote.problems.is_empty(), "{:?}", remote.problems);
        let ToolsetSource::Mcp(mcp) = &remote.toolsets[0].source else { panic!("{:?}", remote.toolsets) };
        assert_eq!(mcp.headers["A"], HeaderValueConfig::Literal("lit".into()));
        assert_eq!(
            mcp.headers["B"],
            HeaderValueConfig::FromEnv(HeaderFromEnv { value_env: "V".into(), prefix: "Bearer ".into() })
        );
        for (mcp, problem) in [
            ("{ timeout_s = 3 }", "needs a `command`"),
            (r#"{ command = "x", url = "https://x/mcp" }"#, "not both"),
            (r#"{ url = "ftp://x/mcp" }"#, "http:// or https://"),
            (r#"{ url = "https://x/mcp", args = ["a"] }"#, "`args` and `env` go with a `command`"),
            (r#"{ command = "x", headers = { A = "b" } }"#, "`headers` go with a remote server's `url`"),
        ] {
            let c = load(mcp);
            assert!(c.toolsets.is_empty(), "{mcp}");
            assert!(c.problems.iter().any(|p| p.message.contains(problem)), "{mcp}: {:?}", c.problems);
        }
    }

    #[test]
    fn a_workspace_cannot_trust_itself() {
        for text in ["trusted = true\n", "[trusted]\nyes = true\n"] {
            let c = Config::from_text(Path::new("ws"), Some((Path::new("ws/chainsmith.toml"), text)), None);
            assert!(!c.trusted, "{text}");
            assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        }
        let text = "[runtime]\npython = \".venv/bin/python\"\n";
        let c = Config::from_text(Path::new("ws"), Some((Path::new("ws/chainsmith.toml"), text)), None);
        assert_eq!(&text[c.runtime_range.start..c.runtime_range.end], text.trim_end());
    }

    #[test]
    fn a_syntax_error_is_located_and_nothing_else_breaks() {
        let text = "[[toolsets]]\nname = \"a\nopenapi = 1\n";
        let c = Config::from_text(Path::new("."), Some((Path::new("chainsmith.toml"), text)), None);
        assert_eq!(c.problems.len(), 1);
        assert_eq!(c.problems[0].code, "invalid-config");
        assert!(c.toolsets.is_empty());
        assert_eq!(c.runtime.timeout_s, 60);
    }

    #[test]
    fn the_workspace_is_the_nearest_folder_with_the_file_or_protocols() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::write(top.join(CONFIG_FILE), "").unwrap();
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::write(top.join("a/b/p.py"), "").unwrap();
        let found = |start: &str| discover_root(&top.join(start)).map(|r| r.unwrap());
        assert_eq!(found("a/b/p.py").as_deref(), Some(top));
        assert_eq!(found("a/b").as_deref(), Some(top));
        // A program not saved yet is walked from where it will be.
        assert_eq!(found("a/b/new.py").as_deref(), Some(top));
        // `protocols/` alone marks a workspace, and the nearer one wins.
        std::fs::create_dir_all(top.join("a/protocols")).unwrap();
        assert_eq!(found("a/b/p.py").as_deref(), Some(top.join("a").as_path()));
        // A file named `protocols` does not.
        std::fs::create_dir_all(top.join("c")).unwrap();
        std::fs::write(top.join("c/protocols"), "").unwrap();
        assert_eq!(found("c").as_deref(), Some(top));
    }

    #[test]
    fn a_config_past_its_limit_is_a_diagnostic_not_gigabytes() {
        let dir = tempfile::tempdir().unwrap();
        let arrays = "[],".repeat((MAX_CONFIG as usize) / 3 + 1);
        std::fs::write(dir.path().join(CONFIG_FILE), format!("x = [{arrays}]\n")).unwrap();
        let config = Config::load(dir.path(), None);
        let messages: Vec<&str> = config.problems.iter().map(|p| p.message.as_str()).collect();
        assert!(messages.iter().any(|m| m.contains("larger than the 1 MiB limit")), "{messages:?}");
    }

    #[test]
    fn a_workspace_anyone_may_write_is_not_taken_as_the_users() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir_all(shared.join("mine")).unwrap();
        std::fs::write(shared.join(CONFIG_FILE), "").unwrap();
        // Like /tmp: a folder where anyone may plant a chainsmith.toml.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let refused = discover_root(&shared.join("mine/p.py")).unwrap().unwrap_err();
        assert_eq!(refused.root, shared);
        assert_eq!(refused.why, "anyone may write it");
        assert!(refused.to_string().contains("does not use it"), "{refused}");
        // A chainsmith.toml anyone may rewrite is refused the same way, in a folder of the user's.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(shared.join(CONFIG_FILE), std::fs::Permissions::from_mode(0o666)).unwrap();
        let refused = discover_root(&shared.join("mine/p.py")).unwrap().unwrap_err();
        assert_eq!(refused.judged, shared.join(CONFIG_FILE));
        std::fs::set_permissions(shared.join(CONFIG_FILE), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(discover_root(&shared.join("mine/p.py")).unwrap().unwrap(), shared);
    }
}
