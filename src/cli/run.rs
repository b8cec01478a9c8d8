//! `chainsmith run` and `chainsmith stubs`.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};

use super::{load_workspace, workspace_root};
use crate::diagnostic::Diagnostic;
use crate::jobs;
use crate::mock::MockServer;
use crate::runtime::{self, Cancel, RunObserver, RunRequest, Stream, trace};
use crate::text::LineIndex;

/// Prints the program's output as it comes, on the stream it was written to.
struct Terminal;

impl RunObserver for Terminal {
    fn output(&self, stream: Stream, line: &str) {
        let _ = match stream {
            Stream::Stdout => show(std::io::stdout().lock(), line),
            Stream::Stderr => show(std::io::stderr().lock(), line),
        };
    }
}

/// A program's output as it wrote it, but to a terminal without escape sequences other than
/// colours ([`crate::text::for_terminal`]); a file or pipe gets it unchanged.
fn show(mut to: impl Write + std::io::IsTerminal, line: &str) -> std::io::Result<()> {
    let shown = if to.is_terminal() { crate::text::for_terminal(line) } else { line.into() };
    to.write_all(shown.as_bytes()).and_then(|()| to.flush())
}

fn print_diagnostics(diagnostics: &[Diagnostic], text: &str) {
    let index = LineIndex::new(text);
    for d in diagnostics {
        let (line, col) = index.line_col_1based(text, d.range.start);
        eprintln!("{}", super::diagnostic_line(d, line, col));
    }
}

/// `chainsmith run FILE [--trace-json PATH] [--replay TRACE] [--mock]`: exit status = the
/// program's, or 1 on a tool or runtime failure. With `mock`, HTTP calls go to a mock of the APIs
/// built from their protocols ([`crate::mock`]) instead of the real ones.
pub fn run(
    root: Option<&Path>,
    file: &Path,
    trace_json: Option<&Path>,
    replay: Option<&Path>,
    mock: bool,
) -> Result<u8> {
    if !file.is_file() {
        bail!("{}: no such file", file.display());
    }
    let root = workspace_root(root, &[file.to_path_buf()])?;
    let (config, catalog) = load_workspace(&root)?;
    let text = match crate::files::read_program(file, &root) {
        Ok(text) => text,
        Err(why) => {
            eprintln!("chainsmith: not running {}: {why}", file.display());
            return Ok(1);
        }
    };
    let catalog = Arc::new(catalog);
    let mut request = RunRequest::new(file, &root, Arc::new(config), catalog.clone());
    // The run reads the text judged here, never the file again (it may be swapped meanwhile).
    request.source = Some(text.clone());
    request.inherit_stdin = true;
    let mut ready = match jobs::run::prepare(request, &text, mock) {
        Ok(ready) => ready,
        Err(refused) => {
            print_diagnostics(&refused, &text);
            let why = if refused.iter().any(|d| d.code == jobs::run::MOCK_FAILED) {
                "the mock did not start"
            } else if refused.iter().any(|d| d.code == crate::trust::UNTRUSTED) {
                "the workspace is not trusted to run what it needs (`chainsmith trust` records trust, `chainsmith --trust run` trusts it this once)"
            } else {
                "it calls tools that cannot run"
            };
            eprintln!("chainsmith: not running {}: {why}", file.display());
            return Ok(1);
        }
    };
    if let Some(path) = replay {
        ready.replay(trace::load(path)?, None);
    }
    let cancel = Cancel::new();
    let signals = EndOnSignal::install(&cancel);
    let outcome = ready.run(Arc::new(Terminal), &cancel);
    let ended_by = signals.map(EndOnSignal::close).unwrap_or_default();

    let report = || -> Result<()> {
        let stderr = std::io::stderr();
        let mut err = stderr.lock();
        let calls = &outcome.trace.calls;
        let saved = outcome
            .trace_file
            .as_ref()
            .map(|p| format!(" → {}", crate::text::printable(&p.strip_prefix(".").unwrap_or(p).display().to_string())))
            .unwrap_or_default();
        writeln!(err, "── trace: {} call{}{saved}", calls.len(), if calls.len() == 1 { "" } else { "s" })?;
        for call in calls {
            writeln!(err, "  {}", crate::text::printable(&call.summary()))?;
        }
        if let Some(e) = &outcome.save_error {
            writeln!(err, "chainsmith: the trace was not saved: {e}")?;
        }
        if let Some(path) = trace_json {
            trace::write(path, &outcome.trace)?;
        }
        // Where the API answered outside its protocol: said on the protocol, whatever the run's end.
        for drift in &outcome.drift {
            if let Some(d) = drift.diagnostic(&catalog, file) {
                let text = catalog.texts.get(&d.file).cloned().unwrap_or_default();
                print_diagnostics(std::slice::from_ref(&d), &text);
            }
        }
        if let Some(error) = &outcome.trace.error {
            let attributed = error
                .attributed_call
                .and_then(|id| calls.iter().find(|c| c.id == id))
                .map(|c| format!(" (attributed to call #{} {})", c.id, c.tool))
                .unwrap_or_default();
            // The program chose the error's kind and message: shown, not obeyed by the terminal.
            let (kind, message) = (crate::text::printable(&error.kind), crate::text::printable(&error.message));
            writeln!(err, "── failed: {kind}: {message}{attributed}")?;
            drop(err);
            print_diagnostics(&outcome.diagnostics, &text);
        }
        Ok(())
    };
    let reported = report();
    if let Some(signal) = ended_by {
        // Ended by a signal, chainsmith ends by it too, as a shell expects of a command the signal
        // ended (a loop of commands stops at Ctrl-C); what could not be said (a terminal hung up)
        // is let go.
        let _ = std::io::stderr().flush();
        let _ = signal_hook::low_level::emulate_default_handler(signal);
        return Ok(128u8.saturating_add(signal as u8));
    }
    reported?;
    Ok(outcome.exit_status())
}

/// `SIGINT`, `SIGTERM` and `SIGHUP` end the run as a cancel does, so chainsmith still records the
/// trace and removes the run's scratch folder (killed outright, it would leave the folder in the
/// temp folder; the run itself dies with chainsmith either way). A second signal ends chainsmith
/// at once.
///
/// `SIGTSTP` (Ctrl-Z) stops the run's processes with chainsmith (see
/// [`crate::runtime::process::stop_runs`]). They go on when chainsmith is continued in the
/// terminal's foreground (`fg`); continued in the background (`bg`), where the program would read
/// what the user types to the shell, they stay stopped until chainsmith is in the foreground
/// again, and a signal above still ends the run.
struct EndOnSignal {
    handle: signal_hook::iterator::Handle,
    thread: std::thread::JoinHandle<Option<i32>>,
}

impl EndOnSignal {
    fn install(cancel: &Cancel) -> Option<EndOnSignal> {
        use crate::runtime::process::{continue_runs, stop_runs};
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGTSTP};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGTSTP]).ok()?;
        let handle = signals.handle();
        let cancel = cancel.clone();
        let thread = std::thread::spawn(move || {
            let mut first = None;
            let mut stopped = false;
            loop {
                let arrived: Vec<i32> = if stopped {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    signals.pending().collect()
                } else {
                    match signals.forever().next() {
                        Some(signal) => vec![signal],
                        None => break,
                    }
                };
                if signals.is_closed() {
                    break;
                }
                for signal in arrived {
                    if signal == SIGTSTP {
                        stop_runs();
                        stopped = true;
                        // Stops chainsmith until it is continued.
                        let _ = signal_hook::low_level::emulate_default_handler(SIGTSTP);
                        if runtime::run::in_the_background() {
                            eprintln!("chainsmith: the run stays stopped while in the background; `fg` continues it");
                        }
                        continue;
                    }
                    if first.is_some() {
                        std::process::exit(128 + signal);
                    }
                    first = Some(signal);
                    // A stopped run ends as it is: killed, never first continued.
                    stopped = false;
                    cancel.cancel();
                }
                if stopped && first.is_none() && !runtime::run::in_the_background() {
                    continue_runs();
                    stopped = false;
                }
            }
            first
        });
        Some(EndOnSignal { handle, thread })
    }

    /// Stops listening; the signal that ended the run, if one did.
    fn close(self) -> Option<i32> {
        self.handle.close();
        self.thread.join().ok().flatten()
    }
}

/// `chainsmith mock [--port P]`: serves the workspace's HTTP APIs from their protocols until
/// interrupted, printing each toolset's stand-in base URL.
pub fn mock(root: Option<&Path>, port: u16) -> Result<u8> {
    let root = workspace_root(root, &[])?;
    let (_, catalog) = load_workspace(&root)?;
    let mock = MockServer::start(Arc::new(catalog), ([127, 0, 0, 1], port).into())
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let upstream = mock.upstream();
    if upstream.is_empty() {
        bail!("the workspace has no HTTP toolset with a base URL to mock");
    }
    for (real, stand_in) in &upstream {
        println!("{stand_in}  (for {real})");
    }
    eprintln!("chainsmith: mocking {} API(s) on {}; Ctrl-C stops", upstream.len(), mock.address());
    loop {
        std::thread::park();
    }
}

/// `chainsmith stubs [--out DIR]`: `.pyi` stubs of every toolset module (default: `typings/` under
/// the workspace root, where pyright and basedpyright look for stubs, and only inside the root).
pub fn stubs(root: Option<&Path>, out: Option<&Path>) -> Result<u8> {
    let root = workspace_root(root, &[])?;
    let (_, catalog) = load_workspace(&root)?;
    let (out, boundary) = match out {
        Some(out) => {
            std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
            (out.to_path_buf(), out.to_path_buf())
        }
        None => (root.join(runtime::stubs::STUB_DIR), root.clone()),
    };
    let written = runtime::stubs::write(&catalog, &out, &boundary)?;
    eprintln!(
        "wrote stubs for {} toolset{} ({} files) to {}",
        catalog.toolsets.len(),
        if catalog.toolsets.len() == 1 { "" } else { "s" },
        written.len(),
        out.display()
    );
    Ok(0)
}
