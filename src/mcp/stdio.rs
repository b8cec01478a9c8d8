//! The stdio transport: the server as a process of chainsmith's, started in its own process group
//! with a confined environment, one JSON-RPC message per line on its pipes (a writer, a reader and
//! a stderr thread), and ended as a whole group when the client is dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{MAX_MESSAGE_BYTES, McpClient, McpError, McpErrorKind, STDERR_LINES, Shared, spawn_thread};
use crate::config::McpConfig;

impl McpClient {
    /// Starts the server of `config` in its own process group in `root`, with the threads that
    /// serve its pipes, and performs the handshake.
    pub(super) fn spawn(name: &str, config: &McpConfig, root: &Path) -> anyhow::Result<McpClient> {
        let timeout = crate::config::timeout(config.timeout_s);
        let mut command = Command::new(&config.command);
        // A cleared environment with what a program needs to find its way and what the entry
        // declares: the server never sees chainsmith's API keys.
        crate::trust::confine(&mut command, &config.env)
            .args(&config.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !root.as_os_str().is_empty() {
            command.current_dir(root);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let command_line = std::iter::once(config.command.as_str())
            .chain(config.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let mut child = command.spawn().map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound if !root.as_os_str().is_empty() && !root.is_dir() => {
                    format!("the workspace root {} is not a folder", root.display())
                }
                std::io::ErrorKind::NotFound => {
                    format!("command `{}` not found (is it installed and on PATH?)", config.command)
                }
                std::io::ErrorKind::PermissionDenied => format!("command `{}` is not executable", config.command),
                _ => e.to_string(),
            };
            McpError {
                kind: McpErrorKind::Spawn,
                server: name.to_string(),
                message: format!("cannot start MCP server `{name}` (`{command_line}`): {why}"),
            }
        })?;
        let pid = child.id();
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("stdin is piped"),
            child.stdout.take().expect("stdout is piped"),
            child.stderr.take().expect("stderr is piped"),
        );
        let (outbox, inbox) = mpsc::channel::<Vec<u8>>();
        let shared = Arc::new(Shared::new(name, outbox, root, None));
        let client = McpClient {
            shared: shared.clone(),
            child: Some(Mutex::new(child)),
            pid,
            next_id: AtomicU64::new(1),
            listed_at: AtomicU64::new(0),
            timeout,
            protocol_version: String::new(),
            server_info: Value::Null,
            capabilities: Value::Null,
            instructions: None,
        };
        let spawned = spawn_thread(format!("mcp-{name}-writer"), move || {
            let mut stdin = stdin;
            for bytes in inbox {
                if stdin.write_all(&bytes).and_then(|()| stdin.flush()).is_err() {
                    break;
                }
            }
            // Dropping stdin here tells the server that the session is over.
        })
        .and_then(|()| {
            let shared = shared.clone();
            spawn_thread(format!("mcp-{name}-stderr"), move || {
                let mut reader = BufReader::new(stderr);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match reader.by_ref().take(64 * 1024).read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let text = String::from_utf8_lossy(&line);
                            tracing::debug!(server = %shared.server, "stderr: {}", text.trim_end());
                            Shared::keep(&shared.stderr, &text, STDERR_LINES);
                        }
                    }
                }
                shared.stderr_done.store(true, Ordering::SeqCst);
            })
        })
        .and_then(|()| {
            let shared = shared.clone();
            spawn_thread(format!("mcp-{name}-reader"), move || {
                let mut reader = BufReader::new(stdout);
                let mut line = Vec::new();
                let reason = loop {
                    line.clear();
                    match reader.by_ref().take(MAX_MESSAGE_BYTES + 1).read_until(b'\n', &mut line) {
                        Ok(0) => break "closed its output".to_string(),
                        Ok(n) if n as u64 > MAX_MESSAGE_BYTES => {
                            break format!("sent a message larger than {} MiB", MAX_MESSAGE_BYTES >> 20);
                        }
                        Ok(_) => shared.dispatch_line(&line),
                        Err(e) => break format!("could not be read ({e})"),
                    }
                };
                shared.close(reason);
            })
        });
        if let Err(e) = spawned {
            return Err(McpError {
                kind: McpErrorKind::Spawn,
                server: name.to_string(),
                message: format!("cannot start MCP server `{name}`: {e}"),
            }
            .into());
        }
        client.handshake()
    }
}

impl McpClient {
    /// Gives a server whose stdin was closed a moment to exit, then ends its process group.
    pub(super) fn end_process(&mut self) {
        let Some(child) = self.child.as_mut() else { return };
        let child = child.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        let exited = |child: &mut Child, within: Duration| {
            let deadline = Instant::now() + within;
            loop {
                if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
                    return true;
                }
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        if !exited(child, Duration::from_millis(200)) {
            signal_group(self.pid, Signal::Term);
            if !exited(child, Duration::from_millis(300)) {
                signal_group(self.pid, Signal::Kill);
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        // Whatever the server started in its group (helpers, a wrapped interpreter) goes with it.
        signal_group(self.pid, Signal::Kill);
    }
}

enum Signal {
    Term,
    Kill,
}

#[cfg(unix)]
fn signal_group(pgid: u32, signal: Signal) {
    let signal = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    if let Ok(pgid) = libc::pid_t::try_from(pgid)
        && pgid > 1
    {
        // SAFETY: killpg only sends a signal; the group is the one the server was started in
        // (process_group(0) made its pid the group id). An already empty group yields ESRCH.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

#[cfg(not(unix))]
fn signal_group(_pgid: u32, _signal: Signal) {}
