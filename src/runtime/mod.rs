//! Running tool-chain programs against real tools.
//!
//! [`run::run`] starts the program with the configured interpreter and the embedded `chainsmith`
//! Python package ([`package`]) on its `PYTHONPATH`. Each tool call — a module-dialect call or an
//! HTTP-dialect `requests` / `httpx` request to a toolset's base URL — travels to the [`host`] over a
//! Unix domain socket; the host executes it ([`http`], MCP over [`crate::mcp`], local commands), enforces
//! the run's limits and records the [`trace`]. A failed run is turned into located diagnostics by
//! [`attribute`]; `chainsmith stubs` writes type stubs for the toolset modules ([`stubs`]). The
//! program itself runs confined ([`sandbox`]): its tools are its only way out.

pub mod attribute;
pub mod cgroup;
pub mod drift;
mod escapes;
pub mod host;
pub mod http;
pub mod package;
pub mod process;
pub mod run;
pub mod sandbox;
pub mod stubs;
pub mod trace;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::config::{Config, RuntimeConfig};
use crate::diagnostic::Diagnostic;
use crate::text::ByteRange;
use crate::toolset::{Catalog, SourceKind, Transport};

pub use host::McpPool;
pub use run::run;
pub use trace::{Trace, TraceCall, TraceError};

/// Without a configured cap, a program may print this much before it is stopped.
pub const MAX_OUTPUT_BYTES: usize = 4 << 20;

/// A process-wide counter for unique names (temporary folders).
pub(crate) fn unique_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

pub use crate::cancel::Cancel;

/// Why the host stopped a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    Timeout {
        limit: Duration,
    },
    /// A call beyond the limit was attempted (at `line`, of `tool`).
    ToolCallLimit {
        limit: u32,
        line: Option<u32>,
        tool: String,
    },
    OutputLimit {
        limit: usize,
    },
    Cancelled,
}

impl Stop {
    /// The trace's `error.type` for this stop.
    pub fn kind(&self) -> &'static str {
        match self {
            Stop::Timeout { .. } => "Timeout",
            Stop::ToolCallLimit { .. } => "ToolCallLimit",
            Stop::OutputLimit { .. } => "OutputLimit",
            Stop::Cancelled => "Cancelled",
        }
    }

    pub fn message(&self) -> String {
        match self {
            Stop::Timeout { limit } => {
                format!("the run took longer than {} ([runtime] timeout_s) and was stopped", seconds(*limit))
            }
            Stop::ToolCallLimit { limit, tool, .. } => format!(
                "the run tried more than {limit} tool calls ([runtime] max_tool_calls) and was stopped at a call to {tool}"
            ),
            Stop::OutputLimit { limit } => {
                format!("the program printed more than {limit} bytes of output and was stopped")
            }
            Stop::Cancelled => "the run was cancelled".into(),
        }
    }
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 { format!("{} s", d.as_secs()) } else { format!("{:.1} s", d.as_secs_f64()) }
}

/// The run's limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub timeout: Duration,
    pub max_tool_calls: u32,
    pub max_output_bytes: usize,
}

impl Limits {
    pub fn from_config(runtime: &RuntimeConfig) -> Limits {
        Limits {
            timeout: crate::config::timeout(runtime.timeout_s),
            max_tool_calls: runtime.max_tool_calls,
            max_output_bytes: MAX_OUTPUT_BYTES,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Hears about a run while it happens (the CLI prints, the editor streams `window/logMessage` and
/// progress). Output arrives line by line, already redacted.
pub trait RunObserver: Send + Sync {
    fn output(&self, _stream: Stream, _line: &str) {}
    fn call_started(&self, _call: &TraceCall) {}
    fn call_finished(&self, _call: &TraceCall) {}
}

/// An observer that ignores everything.
pub struct Quiet;

impl RunObserver for Quiet {}

/// What to run, and how.
pub struct RunRequest {
    /// The program file (its folder is the working directory; relative paths are relative to the
    /// current directory).
    pub program: PathBuf,
    /// The text to run instead of the file's content (an editor's unsaved buffer).
    pub source: Option<String>,
    /// The workspace root: `.chainsmith/runs/` and MCP servers live there.
    pub root: PathBuf,
    pub config: Arc<Config>,
    pub catalog: Arc<Catalog>,
    /// A recorded trace whose identical calls are answered from it.
    pub replay: Option<Trace>,
    /// With `replay`: answer only its calls before the one with this id, and no call after them.
    pub replay_before: Option<u32>,
    pub limits: Limits,
    /// Give the program this process's standard input (else none).
    pub inherit_stdin: bool,
    /// Write the trace to `.chainsmith/runs/`.
    pub save_trace: bool,
    /// MCP sessions to use (and keep); a fresh pool, dropped after the run, when `None`.
    pub mcp: Option<Arc<McpPool>>,
    /// (toolset base URL, stand-in URL): HTTP calls under a base URL are sent to the stand-in
    /// (`chainsmith run --mock`, `chainsmith eval`).
    pub upstream: Vec<(String, String)>,
}

impl RunRequest {
    pub fn new(
        program: impl Into<PathBuf>,
        root: impl Into<PathBuf>,
        config: Arc<Config>,
        catalog: Arc<Catalog>,
    ) -> Self {
        let limits = Limits::from_config(&config.runtime);
        RunRequest {
            program: program.into(),
            source: None,
            root: root.into(),
            config,
            catalog,
            replay: None,
            replay_before: None,
            limits,
            inherit_stdin: false,
            save_trace: true,
            mcp: None,
            upstream: Vec::new(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub trace: Trace,
    /// The interpreter's exit code; `None` when it was killed or never started.
    pub exit_code: Option<i32>,
    /// Why the host stopped the run, if it did.
    pub stopped: Option<Stop>,
    /// The interpreter could not be started (or the run could not be set up).
    pub start_error: Option<String>,
    /// Diagnostics on the program: the failing line and the call the failure is attributed to.
    pub diagnostics: Vec<Diagnostic>,
    /// The program's output as it was shown (redacted; capped at the output limit).
    pub output: String,
    /// Where the trace was saved under `.chainsmith/runs/`.
    pub trace_file: Option<PathBuf>,
    pub save_error: Option<String>,
    /// Responses that contradicted their tools' declared schemas, the first per tool.
    pub drift: Vec<drift::Drift>,
}

impl RunOutcome {
    /// The exit status for `chainsmith run`: the program's, or 1 on a tool or runtime failure.
    pub fn exit_status(&self) -> u8 {
        let tool_failure = self.trace.error.as_ref().is_some_and(|e| e.kind == "ToolError");
        if self.start_error.is_some() || self.stopped.is_some() || tool_failure {
            return 1;
        }
        match self.exit_code {
            Some(code) => u8::try_from(code).unwrap_or(1),
            None => 1,
        }
    }
}

/// Why no program may run as the workspace configures runs: a `[runtime] python` other than the
/// default, `sandbox = "off"`, limits above the defaults, a `writable` folder that loosens it (see
/// [`crate::trust::Command::writable`]) or a `readable` path outside the workspace, in a
/// workspace not trusted with it ([`crate::trust`]);
/// `None` when programs may run.
pub fn untrusted_runtime(config: &Config, catalog: &Catalog) -> Option<String> {
    let trust = &catalog.trust;
    crate::trust::Command::runtime(&config.runtime, &config.root)
        .into_iter()
        .find(|line| !trust.allows(&line.command))
        .map(|line| trust.refusal(&line))
}

/// Where a stand-in answers `url` (`stand_ins`: an API's base URL → the stand-in's, as
/// chainsmith's mock lists them), if one does: the URL with the stand-in's base in place of the
/// API's. Both are read as the HTTP client reads URLs (lower-case scheme and host, no default
/// port); the longest base that holds `url` wins, the first of equals (toolsets sharing a base URL
/// keep their order). The host routes calls by it and the check before a run exempts by it, so the
/// two cannot disagree about which calls go without a key.
pub fn stand_in(stand_ins: &[(String, String)], url: &str) -> Option<String> {
    let as_read = |text: &str| reqwest::Url::parse(text).map(String::from).unwrap_or_else(|_| text.to_string());
    let url = as_read(url);
    stand_ins
        .iter()
        .filter_map(|(base, to)| {
            let base = as_read(base);
            let base = base.trim_end_matches('/');
            let rest = url.strip_prefix(base)?;
            (rest.is_empty() || rest.starts_with(['/', '?']))
                .then(|| (base.len(), format!("{}{rest}", to.trim_end_matches('/'))))
        })
        .fold(None, |best: Option<(usize, String)>, found| match best {
            Some(best) if best.0 >= found.0 => Some(best),
            _ => Some(found),
        })
        .map(|(_, url)| url)
}

/// What the analysis can tell will not run: run settings the workspace is not trusted with (on
/// the program's first line), calls of a toolset whose auth would send a secret the workspace is
/// not trusted to send or whose base URL is on this machine or its private network and not
/// trusted, imports of MCP toolsets whose server it is not trusted with, tools
/// without a transport (ToolBench tools of a toolset without `base_url`, native tools without one),
/// HTTP tools of a toolset without a base URL, and command tools the workspace is not trusted
/// with. `chainsmith run` refuses such a program before starting it. HTTP calls to a base URL a
/// stand-in answers (`stand_ins`, chainsmith's mock: base URL → the mock's) carry no key and go
/// to the mock, so they need neither trust.
pub fn unrunnable_calls(
    file: &Path,
    text: &str,
    config: &Config,
    catalog: &Catalog,
    stand_ins: &[(String, String)],
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(why) = untrusted_runtime(config, catalog) {
        out.push(Diagnostic::error(file, ByteRange::default(), crate::trust::UNTRUSTED, why));
    }
    let tree = crate::analysis::parse::parse(text);
    let analysis = crate::analysis::analyze(file, text, &tree, catalog, &Default::default());
    // An MCP toolset whose server the workspace is not trusted with has no tools to call.
    for import in &analysis.imports {
        let server = config.toolsets.iter().find_map(|t| match &t.source {
            crate::config::ToolsetSource::Mcp(mcp) if t.name == import.toolset => Some(mcp),
            _ => None,
        });
        if let Some(server) = server {
            let command = crate::trust::Command::mcp(&import.toolset, server);
            if !catalog.trust.allows(&command.command) {
                let why = catalog.trust.refusal(&command);
                out.push(Diagnostic::error(file, import.range, crate::trust::UNTRUSTED, why));
            }
        }
    }
    for call in &analysis.calls {
        let Some(tool) = call.tool else { continue };
        let Some(toolset) = catalog.toolset(&tool.toolset) else { continue };
        let stood_in = matches!(tool.transport, Transport::Http { .. })
            && toolset.base_url.as_deref().is_some_and(|url| stand_in(stand_ins, url).is_some());
        let untrusted: Vec<_> = toolset
            .trust_lines()
            .into_iter()
            .filter(|line| !stood_in && !catalog.trust.allows(&line.command))
            .map(|line| Diagnostic::error(file, call.name_range, crate::trust::UNTRUSTED, catalog.trust.refusal(&line)))
            .collect();
        if !untrusted.is_empty() {
            out.extend(untrusted);
            continue;
        }
        let message = match &tool.transport {
            Transport::None if tool.source.kind == SourceKind::ToolBench && toolset.base_url.is_some() => None,
            Transport::None => Some(http::no_transport(toolset, tool)),
            Transport::Http { .. } if toolset.base_url.is_none() => Some(format!(
                "{} cannot run: toolset `{}` has no base URL (its spec names no server); set `base_url` for it in chainsmith.toml",
                tool.id(),
                toolset.name
            )),
            Transport::Command { argv } => {
                let command = crate::trust::Command::tool(&tool.id(), argv);
                if !catalog.trust.allows(&command.command) {
                    let why = catalog.trust.refusal(&command);
                    out.push(Diagnostic::error(file, call.name_range, crate::trust::UNTRUSTED, why));
                }
                None
            }
            _ => None,
        };
        if let Some(message) = message {
            out.push(Diagnostic::error(file, call.name_range, "no-transport", message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::stand_in;

    #[test]
    fn a_stand_in_answers_the_urls_under_its_base_however_the_base_is_written() {
        let mock = |name: &str| format!("http://127.0.0.1:9/{name}");
        let stand_ins = vec![
            ("HTTPS://API.Example.com:443/3".to_string(), mock("tmdb")),
            ("https://api.example.com/3/person".to_string(), mock("people")),
            ("https://api.example.com/3".to_string(), mock("second")),
        ];
        let at = |url: &str| stand_in(&stand_ins, url);
        assert_eq!(at("https://api.example.com/3/search/movie?q=x"), Some(mock("tmdb") + "/search/movie?q=x"));
        // The toolset's own base URL, as the check before a run asks.
        assert_eq!(at("https://api.example.com/3"), Some(mock("tmdb")));
        // The longest base wins; of equal ones, the first.
        assert_eq!(at("https://api.example.com/3/person/7"), Some(mock("people") + "/7"));
        // Only what lies under a base: not a longer segment, another port, scheme or host.
        for elsewhere in [
            "https://api.example.com/30/x",
            "https://api.example.com:8443/3/x",
            "http://api.example.com/3/x",
            "https://api.example.com.evil/3/x",
        ] {
            assert_eq!(at(elsewhere), None, "{elsewhere}");
        }
    }
}
