//! One run: the interpreter in a session of its own and [sandbox](super::sandbox), its output
//! streamed and capped, the host serving its tool calls, the limits watched, and the trace
//! written at the end.
//!
//! The program's process group is killed when the run ends (normally too, so background processes
//! it left behind do not outlive it), when a limit is reached and when the run is cancelled. The
//! group leader is not reaped until the group has been killed, so its id cannot be reused in
//! between.

use std::io::{BufRead, BufReader, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::attribute::{self, Failure};
use super::host::{Host, HostSetup, McpPool};
use super::process::{self, has_exited, kill_group};
use super::sandbox::Sandbox;
use super::trace::{self, Replay, Secrets, Trace, TraceError};
use super::{Cancel, RunObserver, RunOutcome, RunRequest, Stop, Stream, package};
use crate::trust::{InterpreterPlace, interpreter, interpreter_places, on_path, workspace_interpreter};

/// How often the run checks its limits and the program's state.
const POLL: Duration = Duration::from_millis(10);
/// How long the output readers get after the program ended (a daemon it left may hold the pipes).
const DRAIN: Duration = Duration::from_secs(2);

/// How the run folders of chainsmith's begin, in the temporary folder.
const RUN_FOLDER_PREFIX: &str = "chainsmith-run-";

/// The file in a run folder that the process running it holds locked while the run goes on.
const IN_USE: &str = "in-use";

/// How old a run folder whose lock no one holds must be to be taken as left behind: one just made
/// is not locked yet.
const LEFT_AFTER: Duration = Duration::from_secs(60);

/// A run's private temporary folder, removed afterwards, and the lock that says it is in use.
struct RunFolder {
    dir: tempfile::TempDir,
    _in_use: std::fs::File,
}

impl RunFolder {
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A private temporary folder for the run's files: made with a random name and mode 0700 by
/// `mkdtemp`'s rule (a folder someone else made first is never used), and locked while the run
/// goes on. Those of runs whose chainsmith ended before it could remove them (killed, or a
/// server that exited mid-run) are removed first.
fn workdir() -> std::io::Result<RunFolder> {
    use std::os::unix::fs::PermissionsExt;
    remove_left_run_folders(&std::env::temp_dir());
    let dir = tempfile::Builder::new()
        .prefix(RUN_FOLDER_PREFIX)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    let in_use = std::fs::File::create_new(dir.path().join(IN_USE))?;
    // Where the file system has no locks, no one else's `try_lock` succeeds either: the folder
    // is kept, as if in use.
    let _ = in_use.lock();
    Ok(RunFolder { dir, _in_use: in_use })
}

/// The most folders named like run folders one run looks at (each costs a `stat`): another user
/// may make any number of them in a shared temporary folder.
const LEFT_LOOKED_AT: usize = 256;

/// Removes the run folders in `temp` that are the user's own and private, older than
/// [`LEFT_AFTER`], and whose lock no process holds (a lock ends with the process holding it).
/// Folders of another user, or without the lock file, are left alone, and so is all of `temp`
/// where another user may rename in it (a shared folder without the sticky bit): the folder
/// judged could be swapped for another before it is removed.
fn remove_left_run_folders(temp: &Path) {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let Ok(meta) = temp.metadata() else { return };
    let others_rename = meta.mode() & 0o022 != 0 && meta.mode() & libc::S_ISVTX == 0;
    if others_rename || !(meta.uid() == 0 || meta.uid() == crate::files::user_id()) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    let named = entries.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(RUN_FOLDER_PREFIX));
    for entry in named.take(LEFT_LOOKED_AT) {
        let folder = entry.path();
        let Ok(meta) = folder.symlink_metadata() else { continue };
        let old = meta.modified().ok().and_then(|at| at.elapsed().ok()).is_some_and(|age| age >= LEFT_AFTER);
        if !meta.is_dir() || !crate::files::is_private(&meta) || !old {
            continue;
        }
        // Not waiting on a FIFO planted as the lock (an archive unpacked there keeps one).
        let lock = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(folder.join(IN_USE))
            .ok()
            .filter(|lock| lock.metadata().is_ok_and(|meta| meta.is_file()));
        if lock.is_some_and(|lock| lock.try_lock().is_ok()) {
            let _ = std::fs::remove_dir_all(&folder);
        }
    }
}

/// The program's output: forwarded line by line (redacted), kept up to the limit.
struct Output {
    observer: Arc<dyn RunObserver>,
    secrets: Secrets,
    kept: Mutex<String>,
    total: AtomicUsize,
    limit: usize,
    host: Arc<Host>,
}

impl Output {
    fn line(&self, stream: Stream, bytes: &[u8]) {
        let total = self.total.fetch_add(bytes.len(), Ordering::SeqCst) + bytes.len();
        if total > self.limit {
            self.host.request_stop(Stop::OutputLimit { limit: self.limit });
            return;
        }
        let text = self.secrets.text(&String::from_utf8_lossy(bytes));
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).push_str(&text);
        self.observer.output(stream, &text);
    }
}

fn spawn_reader(source: impl Read + Send + 'static, stream: Stream, output: Arc<Output>, done: mpsc::Sender<()>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(16 * 1024, source);
        let mut line = Vec::new();
        // The end of a piece cut from a long line, held back so no secret is split across pieces.
        let mut carry: Vec<u8> = Vec::new();
        let hold = output.secrets.longest().saturating_sub(1);
        loop {
            line.clear();
            line.append(&mut carry);
            // Long lines are forwarded in pieces rather than buffered without bound.
            match (&mut reader).take(64 * 1024).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => {
                    if !line.is_empty() {
                        output.line(stream, &line);
                    }
                    break;
                }
                Ok(_) if line.ends_with(b"\n") || hold == 0 => output.line(stream, &line),
                Ok(_) => {
                    // Redacted before the cut, so a secret that straddles it is replaced whole;
                    // one still arriving lies within the held-back end, and is joined to its rest.
                    let mut redacted = output.secrets.bytes(&line);
                    let mut cut = redacted.len().saturating_sub(hold);
                    // Not inside a UTF-8 sequence (three steps back at most: output that is not
                    // UTF-8 must not keep the cut at the start and the carry growing).
                    let mut steps = 0;
                    while steps < 3 && cut > 0 && cut < redacted.len() && redacted[cut] & 0xC0 == 0x80 {
                        cut -= 1;
                        steps += 1;
                    }
                    carry = redacted.split_off(cut);
                    line = redacted;
                    if !line.is_empty() {
                        output.line(stream, &line);
                    }
                }
            }
        }
        let _ = done.send(());
    });
}

/// The label a trace gives the program: its path relative to the workspace root when inside it.
fn program_label(root: &Path, program: &Path) -> String {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    match absolute(program).strip_prefix(absolute(root)) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => program.display().to_string(),
    }
}

/// The folders the user's own interpreter (the default `python3` on `PATH`) reads from, for a
/// sandbox that hides the user's home folders but what a run needs.
///
/// It is asked, once per process and outside the sandbox, as the user's shell would start it (its
/// start runs none of the workspace's code): `sys.prefix`, `sys.base_prefix` and every `sys.path`
/// entry (user-site packages, `.pth` paths). A command that is not the interpreter itself (a
/// `pyenv` or `asdf` shim, a script) runs it from a folder of its tool: the folder above the
/// command's, `~/.pyenv` of `~/.pyenv/shims/python3`, short of a home folder or `~/.local`
/// themselves.
fn users_interpreter_folders(python: &Path) -> Vec<PathBuf> {
    static KNOWN: Mutex<Vec<(PathBuf, Vec<PathBuf>)>> = Mutex::new(Vec::new());
    if let Some((_, folders)) = KNOWN.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(p, _)| p == python) {
        return folders.clone();
    }
    let Some(command) = on_path(python) else { return Vec::new() };
    let homes = crate::files::private_folders();
    let tool_folder = |command: &Path| -> Option<PathBuf> {
        let folder = command.parent()?;
        let above = folder.parent().filter(|p| p.parent().is_some() && !p.ends_with(".local"));
        let above = above.filter(|p| p.canonicalize().is_ok_and(|real| !homes.contains(&real)));
        Some(above.unwrap_or(folder).to_path_buf())
    };
    let mut folders = Vec::new();
    let ask = "import sys; sys.stdout.write('\\0'.join([sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path))";
    let argv = [python.to_string_lossy().into_owned(), "-c".into(), ask.into()];
    let Ok((0, said, _)) = process::run_command(&argv, Path::new("/"), "", Duration::from_secs(10)) else {
        // Asked again at the next run: a failure here may pass (an interpreter being installed).
        tracing::warn!(
            "`{} -c …` did not say where its files are: a run reads none in the home folder",
            python.display()
        );
        return Vec::new();
    };
    let mut said = said.split('\0').map(PathBuf::from);
    let executable = said.next().and_then(|e| e.canonicalize().ok());
    folders.extend(said.filter(|p| p.is_absolute()));
    if command.canonicalize().ok() != executable {
        folders.extend(tool_folder(&command));
    }
    folders.sort();
    folders.dedup();
    KNOWN.lock().unwrap_or_else(|e| e.into_inner()).push((python.to_path_buf(), folders.clone()));
    folders
}

/// The folders a workspace's interpreter (`[runtime] python`, trusted) reads from. It runs
/// confined only, so it is not asked: the command, and a Python's parts of its
/// [places](interpreter_places). A part that is a link out of its prefix (`lib64 -> ~/projects`)
/// is left out, and a place in a home or temporary folder outside the workspace opens only where
/// `trusted` says the workspace is trusted with it (the line of
/// [`crate::trust::Command::interpreter_read`]): the workspace may change its `.venv` after trust.
fn workspace_interpreter_folders(
    command: &Path,
    root: &Path,
    trusted: impl Fn(&InterpreterPlace) -> bool,
) -> Vec<PathBuf> {
    let root = crate::files::real_root(root).unwrap_or_else(|| root.to_path_buf());
    let mut folders = Vec::new();
    for (command, place) in interpreter_places(command) {
        if place.needs_trust(&root) && !trusted(&place) {
            continue;
        }
        if let InterpreterPlace::Prefix(prefix) = &place {
            let parts = ["bin", "lib", "lib64", "pyvenv.cfg"].map(|part| prefix.join(part));
            folders.extend(parts.into_iter().filter(|part| part.canonicalize().is_ok_and(|r| r.starts_with(prefix))));
        }
        folders.push(command);
    }
    folders.sort();
    folders.dedup();
    folders
}

/// The program's stdin when it is given the user's: a terminal is opened afresh for reading only,
/// so the program can read what the user types but not write to the terminal through it (escape
/// sequences that retitle the window or rewrite what the user sees); anything else is inherited.
/// A run started in the background gets no terminal: its program, in a session of its own, is
/// beyond job control and would read what the user types to the foreground (a password). Any
/// other stdin reaches the program for reading only: a file opened for writing too (`0<>file`) is
/// reopened for reading, and a socket (a connection to a server no toolset names) is not given.
fn program_stdin() -> Stdio {
    // SAFETY: isatty only reads state.
    if unsafe { libc::isatty(0) } != 1 {
        // SAFETY: fstat and fcntl(F_GETFL) only read the descriptor's state into the zeroed stat.
        let (kind, access) = unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(0, &mut stat) != 0 {
                return Stdio::null();
            }
            (stat.st_mode & libc::S_IFMT, libc::fcntl(0, libc::F_GETFL) & libc::O_ACCMODE)
        };
        return if kind == libc::S_IFSOCK {
            Stdio::null()
        } else if access == libc::O_RDONLY {
            Stdio::inherit()
        } else {
            read_only_stdin().unwrap_or_else(Stdio::null)
        };
    }
    if in_the_background() {
        return Stdio::null();
    }
    read_only_stdin().unwrap_or_else(Stdio::inherit)
}

/// Whether chainsmith's stdin is a terminal whose foreground is another process group (the
/// shell's, `chainsmith run … &` or after `bg`). A terminal that is not chainsmith's controlling
/// one has no foreground to compare with: it was named on purpose, `< /dev/pts/3`.
pub fn in_the_background() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only read state.
    unsafe {
        let foreground = libc::tcgetpgrp(0);
        libc::isatty(0) == 1 && foreground >= 0 && foreground != libc::getpgrp()
    }
}

/// chainsmith's stdin opened afresh for reading only (and never as a controlling terminal).
fn read_only_stdin() -> Option<Stdio> {
    let reopened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOCTTY).open("/proc/self/fd/0");
    reopened.ok().map(Stdio::from)
}

/// The state of the terminals a run inherits (its standard streams, when they are terminals),
/// put back when it ends: the chain may turn echo off (as `getpass` does) or leave the shared
/// descriptor non-blocking (the shell's next read fails), and the user's shell would inherit
/// both. The window size is left alone: the user may have resized the window meanwhile.
struct TerminalState {
    saved: Vec<(libc::c_int, libc::termios, libc::c_int)>,
}

impl TerminalState {
    fn save() -> TerminalState {
        let mut saved = Vec::new();
        for fd in 0..3 {
            // SAFETY: isatty, tcgetattr, ioctl(TIOCGWINSZ) and fcntl(F_GETFL) only read the
            // descriptor's state into the zeroed structures given.
            unsafe {
                if libc::isatty(fd) != 1 {
                    continue;
                }
                let mut modes: libc::termios = std::mem::zeroed();
                let flags = libc::fcntl(fd, libc::F_GETFL);
                if libc::tcgetattr(fd, &mut modes) == 0 && flags >= 0 {
                    saved.push((fd, modes, flags));
                }
            }
        }
        TerminalState { saved }
    }

    fn restore(&self) {
        for (fd, modes, flags) in &self.saved {
            // SAFETY: the same calls, writing back what `save` read; tcgetpgrp and getpgrp only
            // read. Nothing is written from a background process group of the terminal
            // (`chainsmith run … &`): the kernel would stop it (SIGTTOU), and the foreground
            // program's state is not chainsmith's to change. Modes are written only when they
            // changed, and of the flags only `O_NONBLOCK`.
            unsafe {
                let foreground = libc::tcgetpgrp(*fd);
                if foreground >= 0 && foreground != libc::getpgrp() {
                    continue;
                }
                let mut now: libc::termios = std::mem::zeroed();
                if libc::tcgetattr(*fd, &mut now) == 0 && !same_modes(&now, modes) {
                    libc::tcsetattr(*fd, libc::TCSANOW, modes);
                }
                let flags_now = libc::fcntl(*fd, libc::F_GETFL);
                if flags_now >= 0 && (flags_now ^ flags) & libc::O_NONBLOCK != 0 {
                    libc::fcntl(*fd, libc::F_SETFL, (flags_now & !libc::O_NONBLOCK) | (flags & libc::O_NONBLOCK));
                }
            }
        }
    }
}

fn same_modes(a: &libc::termios, b: &libc::termios) -> bool {
    (a.c_iflag, a.c_oflag, a.c_cflag, a.c_lflag, a.c_cc) == (b.c_iflag, b.c_oflag, b.c_cflag, b.c_lflag, b.c_cc)
}

/// Runs a program to its end (or until a limit or `cancel` stops it).
pub fn run(request: RunRequest, observer: Arc<dyn RunObserver>, cancel: &Cancel) -> RunOutcome {
    let (started, stamp) = trace::timestamps(SystemTime::now());
    let label = program_label(&request.root, &request.program);
    // The program is read once, judged by the file opened ([`crate::files::read_program`]), and
    // run from the run's own copy of that text: a file swapped after the check is never read.
    let read = match &request.source {
        Some(text) => Ok(text.clone()),
        None => crate::files::read_program(&request.program, &request.root),
    };
    let (text, unread) = match read {
        Ok(text) => (text, None),
        Err(why) => (String::new(), Some(why)),
    };
    let secrets = Secrets::of(&request.catalog, &request.config);
    let mut outcome = RunOutcome {
        trace: Trace { program: label, started, ok: false, calls: Vec::new(), error: None },
        exit_code: None,
        stopped: None,
        start_error: None,
        diagnostics: Vec::new(),
        output: String::new(),
        trace_file: None,
        save_error: None,
        drift: Vec::new(),
    };
    // Only a run given the user's stdin can reach a terminal of theirs.
    let terminal = if request.inherit_stdin { TerminalState::save() } else { TerminalState { saved: Vec::new() } };
    let executed = match unread {
        Some(why) => Err(why),
        None => execute(&request, &text, &secrets, observer, cancel, &mut outcome),
    };
    terminal.restore();
    if let Err(message) = executed {
        outcome.start_error = Some(message.clone());
        outcome.trace.error =
            Some(TraceError { kind: "StartFailed".into(), message, line: None, attributed_call: None });
    }
    if request.save_trace {
        match trace::save(&request.root, &request.program, &stamp, &outcome.trace) {
            Ok(path) => outcome.trace_file = Some(path),
            Err(e) => outcome.save_error = Some(format!("{e:#}")),
        }
    }
    outcome
}

fn execute(
    request: &RunRequest,
    text: &str,
    secrets: &Secrets,
    observer: Arc<dyn RunObserver>,
    cancel: &Cancel,
    outcome: &mut RunOutcome,
) -> Result<(), String> {
    if let Some(why) = super::untrusted_runtime(&request.config, &request.catalog) {
        return Err(why);
    }
    // The places the workspace names, resolved once and judged by their trust lines again here
    // (re-linked since the check above, one would lead where no one trusted): the sandbox grants
    // these very paths, and only while they still lead to themselves.
    let trust = &request.catalog.trust;
    let writable_places = crate::trust::writable_places(&request.config.runtime, &request.root);
    let readable_places = crate::trust::readable_places(&request.config.runtime, &request.root);
    let lines = writable_places
        .iter()
        .map(|(_, line)| line)
        .chain(readable_places.iter().filter_map(|(_, line)| line.as_ref()));
    if let Some(line) = lines.into_iter().find(|line| !trust.allows(&line.command)) {
        return Err(trust.refusal(line));
    }
    let package = package::ensure().map_err(|e| format!("{e:#}"))?;
    let work = workdir().map_err(|e| format!("cannot create a temporary folder for the run: {e}"))?;
    let program = std::path::absolute(&request.program).map_err(|e| format!("{}: {e}", request.program.display()))?;
    let (door, program_door) =
        UnixStream::pair().map_err(|e| format!("cannot make the channel to the program: {e}"))?;
    // The run's folder holds what chainsmith gives the program (its source, the file it writes
    // where it is when asked); the program writes in `scratch`, a folder of capped size beneath.
    let fault_file = work.path().join("where.txt");
    // A FIFO: what the program writes there passes through a pipe's buffer and never fills the
    // disk, as a regular file outside the size-capped scratch folder could.
    crate::files::make_fifo(&fault_file).map_err(|e| format!("cannot make {}: {e}", fault_file.display()))?;
    let scratch = work.path().join("scratch");
    std::fs::create_dir(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    // Before the host starts: an error here has nothing to stop.
    let mut writable = Vec::new();
    for made in [&scratch, &fault_file] {
        writable.push(made.canonicalize().map_err(|e| format!("cannot resolve {}: {e}", made.display()))?);
    }
    writable.extend(writable_places.into_iter().map(|(place, _)| place));
    let run_start = Instant::now();
    let deadline = run_start + request.limits.timeout;
    let host = Arc::new(Host::new(HostSetup {
        catalog: request.catalog.clone(),
        config: request.config.clone(),
        root: request.root.clone(),
        secrets: secrets.clone(),
        replay: request.replay.as_ref().map(|trace| match request.replay_before {
            Some(first_live) => Replay::before(trace, first_live),
            None => Replay::new(trace),
        }),
        mcp: request.mcp.clone().unwrap_or_else(|| Arc::new(McpPool::new())),
        upstream: request.upstream.clone(),
        max_calls: request.limits.max_tool_calls,
        deadline,
        observer: observer.clone(),
    }));
    let accept = host.serve(door.try_clone().map_err(|e| format!("cannot make the channel to the program: {e}"))?);

    let limits = &request.config.runtime;
    let python = interpreter(&request.config.runtime.python, &request.root);
    // The run's own folder too: the copy of the program's text it runs lies there.
    let mut own = vec![request.root.clone(), package.clone(), work.path().to_path_buf()];
    // A program's folder in the workspace is the workspace's: granted as part of it, never on its
    // own (swapped for a link to the home folder after the program was read, it would grant that).
    // One the user named outside it is read with its folder, or alone where that folder is a
    // home or temporary folder (`open(__file__)`, multiprocessing's spawn read it again).
    let root_as_written = crate::files::normalize(&std::path::absolute(&request.root).unwrap_or_default());
    if !crate::files::normalize(&program).starts_with(&root_as_written) {
        own.extend(program.parent().map(Path::to_path_buf));
        own.push(program.clone());
    }
    let mut shared = if request.config.runtime.python == crate::config::RuntimeConfig::default().python {
        users_interpreter_folders(&python)
    } else {
        let trusted = |place: &InterpreterPlace| trust.allows(&crate::trust::Command::interpreter_read(place).command);
        workspace_interpreter(&request.config.runtime.python, &request.root)
            .map(|command| workspace_interpreter_folders(&command, &request.root, trusted))
            .unwrap_or_default()
    };
    // Relative entries are relative to the run's folder, which is not chainsmith's.
    shared.extend(std::env::var_os("PYTHONPATH").iter().flat_map(std::env::split_paths).filter(|p| p.is_absolute()));
    // None of them opens a home or temporary folder whole (a program or `sys.path` entry in the
    // home folder or `/tmp` itself): a program's own file, the workspace's root, what lies
    // beneath stay. Judged, and handed to the sandbox, as real paths resolved once: the sandbox
    // grants a path only while it still resolves there and is the same file.
    let real = |paths: Vec<PathBuf>| -> Vec<PathBuf> { paths.iter().filter_map(|p| p.canonicalize().ok()).collect() };
    let (mut own, mut shared) = (real(own), real(shared));
    let homes = crate::files::private_folders();
    let opens_a_home = |real: &Path| homes.iter().any(|home| home.starts_with(real));
    // The workspace's root may be a home folder the user opened as the workspace, not one
    // that is the root only because no chainsmith.toml lies above a program there.
    let chosen_root =
        request.root.join("chainsmith.toml").is_file().then(|| request.root.canonicalize().ok()).flatten();
    own.retain(|path| chosen_root.as_ref() == Some(path) || !opens_a_home(path));
    shared.retain(|path| !opens_a_home(path));
    // What the workspace names, trusted above: a home folder whole too.
    shared.extend(readable_places.into_iter().map(|(place, _)| place));
    let readable = super::sandbox::Readable { own, shared };
    let sandbox = match Sandbox::prepare(
        limits.sandbox,
        &writable,
        &readable,
        limits.max_memory_mb,
        limits.max_processes,
        limits.max_scratch_mb,
    ) {
        Ok(sandbox) => sandbox,
        Err(why) => {
            host.close(&door);
            let _ = accept.join();
            return Err(why);
        }
    };
    if !sandbox.missing.is_empty() {
        warn_once(&sandbox.missing);
    }
    let mut command = Command::new(&python);
    // What the program sees of chainsmith's environment: the basics, never its secrets.
    crate::trust::confine(&mut command, []);
    command
        .env("TMPDIR", &scratch)
        .env("CHAINSMITH_SANDBOX", &sandbox.summary)
        .env("CHAINSMITH_WRITABLE", sandbox.writable_list())
        .arg(package.join(package::BOOT_SCRIPT))
        .current_dir(program.parent().unwrap_or(Path::new("/")))
        .env("PYTHONPATH", python_path(&package))
        .env("CHAINSMITH_HOST_FD", program_door.as_raw_fd().to_string())
        .env("CHAINSMITH_PROGRAM", &program)
        .env("CHAINSMITH_FAULT_FILE", &fault_file)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONIOENCODING", "utf-8")
        .env_remove("CHAINSMITH_SOURCE")
        .stdin(if request.inherit_stdin { program_stdin() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    sandbox.apply(&mut command, program_door.as_raw_fd());
    // The program's file is never granted: the run reads the copy of the text chainsmith judged.
    let copy = work.path().join("source.py");
    std::fs::write(&copy, text).map_err(|e| format!("cannot write {}: {e}", copy.display()))?;
    command.env("CHAINSMITH_SOURCE", copy);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            host.close(&door);
            let _ = accept.join();
            return Err(format!(
                "cannot start the interpreter `{}` ([runtime] python): {e}",
                request.config.runtime.python
            ));
        }
    };
    // Only the program holds the door's other end now, so the door closes when the program ends.
    drop(program_door);
    let pid = child.id() as i32;
    let registered = process::register(pid);
    let output = Arc::new(Output {
        observer,
        secrets: secrets.clone(),
        kept: Mutex::new(String::new()),
        total: AtomicUsize::new(0),
        limit: request.limits.max_output_bytes,
        host: host.clone(),
    });
    let (done_tx, done_rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        spawn_reader(stdout, Stream::Stdout, output.clone(), done_tx.clone());
    }
    if let Some(stderr) = child.stderr.take() {
        spawn_reader(stderr, Stream::Stderr, output.clone(), done_tx.clone());
    }
    drop(done_tx);

    let mut stuck_at = None;
    loop {
        if has_exited(pid) {
            break;
        }
        if cancel.is_cancelled() {
            host.request_stop(Stop::Cancelled);
        }
        if Instant::now() >= deadline && host.stop_requested().is_none() {
            stuck_at = where_is(pid, &fault_file, &program);
            host.request_stop(Stop::Timeout { limit: request.limits.timeout });
        }
        if host.stop_requested().is_some() {
            break;
        }
        std::thread::sleep(POLL);
    }
    // The whole group goes, the leader included when it is still running; it is reaped after.
    kill_group(pid);
    drop(registered);
    let status = child.wait().ok();
    let drain_until = Instant::now() + DRAIN;
    while done_rx.recv_timeout(drain_until.saturating_duration_since(Instant::now())).is_ok() {}
    host.close(&door);
    let _ = accept.join();

    let (calls, report, stop, pending) = host.finish();
    outcome.drift = host.drift();
    outcome.exit_code = status.and_then(|s| s.code());
    outcome.output = output.kept.lock().unwrap_or_else(|e| e.into_inner()).clone();
    outcome.stopped = stop.clone();
    let failure = match (&stop, &report) {
        (Some(stop), _) => Some(Failure::Stopped { stop, at_line: stuck_at, pending: &pending }),
        (None, Some(report)) => Some(Failure::Exception(report)),
        (None, None) => None,
    };
    let redacted_report;
    let failure = match failure {
        Some(Failure::Exception(report)) => {
            let mut clean = report.clone();
            clean.message = secrets.text(&clean.message);
            redacted_report = clean;
            Some(Failure::Exception(&redacted_report))
        }
        other => other,
    };
    let error = match failure {
        Some(failure) => {
            let (error, diagnostics) = attribute::attribute(&request.program, text, &request.catalog, &calls, failure);
            outcome.diagnostics = diagnostics;
            Some(error)
        }
        None => match outcome.exit_code {
            Some(0) => None,
            Some(code) => Some(TraceError {
                kind: "SystemExit".into(),
                message: format!("the program exited with status {code}"),
                line: None,
                attributed_call: None,
            }),
            None => Some(TraceError {
                kind: "Killed".into(),
                message: "the program was killed by a signal".into(),
                line: None,
                attributed_call: None,
            }),
        },
    };
    outcome.trace.ok = error.is_none();
    outcome.trace.error = error;
    outcome.trace.calls = calls;
    Ok(())
}

/// Says once per process which sandbox layers this system refuses (`best-effort` runs without them).
fn warn_once(missing: &[String]) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "chainsmith sandbox: running without {} ([runtime] sandbox = \"best-effort\")",
            missing.join("; ")
        );
    });
}

fn python_path(package: &Path) -> std::ffi::OsString {
    let mut paths = vec![package.to_path_buf()];
    if let Some(existing) = std::env::var_os("PYTHONPATH") {
        paths.extend(std::env::split_paths(&existing));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| package.as_os_str().to_owned())
}

/// The largest stack dump read from the program's fault handler (a deep recursion's is ~100 KB).
const MAX_FAULT_DUMP: u64 = 1 << 20;

/// Where the program is: asks its fault handler for the main thread's stack, read from the fault
/// FIFO, and finds the innermost frame of the program file (a 1-based line).
fn where_is(pid: i32, fault_file: &Path, program: &Path) -> Option<u32> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    // Opened before the signal, without waiting for a writer; only the FIFO chainsmith made is
    // read (without Landlock the program could put a link or a file in its place).
    let mut fifo = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(fault_file)
        .ok()
        .filter(|f| f.metadata().is_ok_and(|m| m.file_type().is_fifo()))?;
    // SAFETY: sends a signal to our own child.
    unsafe {
        libc::kill(pid, libc::SIGUSR1);
    }
    let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let until = Instant::now() + Duration::from_millis(500);
    let mut dump = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut complete_after = None;
    while Instant::now() < until && dump.len() < MAX_FAULT_DUMP as usize {
        match fifo.read(&mut chunk) {
            Ok(n) if n > 0 => dump.extend_from_slice(&chunk[..n]),
            _ => {
                // Nothing more for now: once the dump has begun, a short quiet spell ends it.
                if complete_after.is_some_and(|at| Instant::now() >= at) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if complete_after.is_none() && dump.windows(6).any(|w| w == b"File \"") {
            complete_after = Some(Instant::now() + Duration::from_millis(20));
        }
    }
    innermost_program_line(&String::from_utf8_lossy(&dump), &program)
}

/// The first `File "<program>", line N` of a faulthandler dump (most recent call first).
fn innermost_program_line(dump: &str, program: &Path) -> Option<u32> {
    for line in dump.lines() {
        let Some(rest) = line.trim_start().strip_prefix("File \"") else { continue };
        let Some((file, after)) = rest.split_once('"') else { continue };
        let same = Path::new(file) == program || std::fs::canonicalize(file).is_ok_and(|f| f == program);
        if !same {
            continue;
        }
        let number = after.trim_start_matches(", line ").split(|c: char| !c.is_ascii_digit()).next()?;
        return number.parse().ok();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run folder a chainsmith that ended left behind (its lock held by no one) is removed by
    /// the next run; one in use, one just made, or one without the lock file stays.
    #[test]
    fn run_folders_left_behind_are_removed_and_those_in_use_kept() {
        use std::os::unix::fs::PermissionsExt;
        let temp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let long_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        let mut held = Vec::new();
        for (name, lock, held_by_a_run, old, mode) in [
            ("left", true, false, true, 0o700),
            ("running", true, true, true, 0o700),
            ("just-made", true, false, false, 0o700),
            ("without-lock", false, false, true, 0o700),
            ("open-to-others", true, false, true, 0o777),
            ("fifo-lock", false, false, true, 0o700),
        ] {
            let folder = temp.path().join(format!("{RUN_FOLDER_PREFIX}{name}"));
            std::fs::create_dir(&folder).unwrap();
            std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(mode)).unwrap();
            if lock {
                let file = std::fs::File::create(folder.join(IN_USE)).unwrap();
                if held_by_a_run {
                    file.lock().unwrap();
                    held.push(file);
                }
            }
            if name == "fifo-lock" {
                let fifo = std::ffi::CString::new(folder.join(IN_USE).into_os_string().into_encoded_bytes()).unwrap();
                // SAFETY: a NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
            }
            if old {
                std::fs::File::open(&folder).unwrap().set_modified(long_ago).unwrap();
            }
        }
        // A link named like a run folder, to a folder left behind elsewhere: neither is removed.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::set_permissions(elsewhere.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::File::create(elsewhere.path().join(IN_USE)).unwrap();
        std::fs::File::open(elsewhere.path()).unwrap().set_modified(long_ago).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), temp.path().join(format!("{RUN_FOLDER_PREFIX}link"))).unwrap();
        // In a temporary folder where others may rename (no sticky bit), nothing is removed.
        std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        remove_left_run_folders(temp.path());
        assert!(temp.path().join(format!("{RUN_FOLDER_PREFIX}left")).exists());
        std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        remove_left_run_folders(temp.path());
        assert!(elsewhere.path().join(IN_USE).exists(), "a link is not followed");
        let mut kept: Vec<String> = std::fs::read_dir(temp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        kept.sort();
        // A FIFO as the lock is no lock, and is not waited on.
        let expected: Vec<String> = ["fifo-lock", "just-made", "link", "open-to-others", "running", "without-lock"]
            .iter()
            .map(|n| format!("{RUN_FOLDER_PREFIX}{n}"))
            .collect();
        assert_eq!(kept, expected);
        drop(held);
    }

    /// A workspace's interpreter opens a Python's parts of its prefix and no more: not a part that
    /// links out of it (changed after trust), nor the parts of a temporary or home folder it
    /// lies in directly.
    #[test]
    fn a_workspace_interpreter_opens_only_its_own_pythons_parts() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("ws/.venv");
        for folder in ["bin", "lib/python3.11", "../../other"] {
            std::fs::create_dir_all(venv.join(folder)).unwrap();
        }
        std::fs::write(dir.path().join("secret.txt"), "x").unwrap();
        std::fs::write(venv.join("bin/python"), "").unwrap();
        std::os::unix::fs::symlink(dir.path().join("other"), venv.join("lib64")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), venv.join("pyvenv.cfg")).unwrap();
        let root = dir.path().join("ws");
        let trusted_with_none = |_: &InterpreterPlace| false;
        let folders = workspace_interpreter_folders(&venv.join("bin/python"), &root, trusted_with_none);
        let real = venv.canonicalize().unwrap();
        assert_eq!(folders, vec![real.join("bin"), venv.join("bin/python"), real.join("lib")]);

        // Directly in a temporary folder (as in a home folder), its prefix is that folder: the
        // command alone is its place, outside the workspace, and opens only where trusted.
        std::fs::write(dir.path().join("python3"), "").unwrap();
        let command = dir.path().join("python3");
        let place = InterpreterPlace::Command(command.canonicalize().unwrap());
        assert_eq!(interpreter_places(&command), vec![(command.clone(), place.clone()), (place.path().into(), place)]);
        assert_eq!(workspace_interpreter_folders(&command, &root, trusted_with_none), Vec::<PathBuf>::new());
        assert_eq!(workspace_interpreter_folders(&command, &root, |_| true), vec![command.clone()]);
    }

    #[test]
    fn the_innermost_program_frame_of_a_fault_dump() {
        let dump = "Current thread 0x00007f (most recent call first):\n  File \"/usr/lib/python3.11/socket.py\", line 706 in readinto\n  File \"/w/p.py\", line 12 in fetch\n  File \"/w/p.py\", line 20 in <module>\n";
        assert_eq!(innermost_program_line(dump, Path::new("/w/p.py")), Some(12));
        assert_eq!(innermost_program_line(dump, Path::new("/w/q.py")), None);
    }
}
