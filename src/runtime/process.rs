//! Processes in a group of their own: whether one has ended (without reaping it), killing the
//! group, stopping and continuing the runs going on (Ctrl-Z), and running a command tool to its
//! end or its timeout. The run (the interpreter) and the host (command tools) both start such
//! processes; this is the lower file both use.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a command tool is looked at while it runs.
const POLL: Duration = Duration::from_millis(10);

/// Whether the process has ended, without reaping it.
pub(super) fn has_exited(pid: i32) -> bool {
    // SAFETY: waitid only writes into the zeroed siginfo it is given.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
        rc != 0 || info.si_pid() != 0
    }
}

/// Kills the whole process group.
pub(super) fn kill_group(pgid: i32) {
    // SAFETY: killpg has no memory effects; a group that is gone is ESRCH, ignored.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// The runs going on in this process: each group leader, and, while they are stopped (Ctrl-Z),
/// the processes [`stop_runs`] stopped.
static RUNS: Mutex<Runs> = Mutex::new(Runs { leaders: Vec::new(), stopped: None });

struct Runs {
    leaders: Vec<i32>,
    stopped: Option<Vec<i32>>,
}

/// A run's place in [`RUNS`], given up when dropped. Drop it before the leader is reaped: from
/// then on its id may name another process, which [`stop_runs`] must not stop.
pub(super) struct Registered(i32);

impl Drop for Registered {
    fn drop(&mut self) {
        RUNS.lock().unwrap_or_else(|e| e.into_inner()).leaders.retain(|&leader| leader != self.0);
    }
}

/// Counts the run led by `leader` among those [`stop_runs`] stops; one that starts while the
/// others are stopped is stopped at once.
pub(super) fn register(leader: i32) -> Registered {
    let mut runs = RUNS.lock().unwrap_or_else(|e| e.into_inner());
    runs.leaders.push(leader);
    if let Some(stopped) = runs.stopped.as_mut() {
        stopped.extend(stop_tree(leader));
    }
    Registered(leader)
}

/// Stops every process of every run going on (`SIGSTOP`), as the shell stops a job on Ctrl-Z.
///
/// A run is in a session of its own, beyond the terminal's job control: stopped with chainsmith
/// alone, it would go on, reading what the user types to the shell once chainsmith is in the
/// background (a password). See [`stop_tree`]; a run whose processes keep continuing each other
/// (`kill(-1, SIGCONT)`) past it is ended instead: no run goes on unstopped.
pub fn stop_runs() {
    let mut runs = RUNS.lock().unwrap_or_else(|e| e.into_inner());
    let mut stopped = runs.stopped.take().unwrap_or_default();
    for &leader in &runs.leaders {
        stopped.extend(stop_tree(leader));
    }
    runs.stopped = Some(stopped);
}

/// Continues the processes [`stop_runs`] stopped, and the runs' process groups.
pub fn continue_runs() {
    let mut runs = RUNS.lock().unwrap_or_else(|e| e.into_inner());
    for pid in runs.stopped.take().unwrap_or_default() {
        // SAFETY: kill has no memory effects; a process gone is ESRCH, ignored.
        unsafe { libc::kill(pid, libc::SIGCONT) };
    }
    // What the group's stop reached as it started.
    for &leader in &runs.leaders {
        // SAFETY: as above.
        unsafe { libc::killpg(leader, libc::SIGCONT) };
    }
}

/// How many times [`stop_tree`] looks for a process still running before it gives up (each look
/// waits at most 200 ms for the stops to be taken: the user waits at most 2 s for the prompt).
const STOP_ROUNDS: usize = 10;

/// Stops the run led by `leader` and returns the processes it stopped: the process group at
/// once, then every process descended from the leader (one in a session of its own included),
/// again and again until one look finds every one stopped — a stopped process starts no other,
/// but one still running may continue another (`SIGCONT` also drops a stop not yet taken). After
/// [`STOP_ROUNDS`] looks the run is killed.
fn stop_tree(leader: i32) -> Vec<i32> {
    let running = || -> Vec<i32> { descendants(leader).into_iter().filter(|&pid| !all_threads_stopped(pid)).collect() };
    let mut stopped = running();
    // SAFETY: killpg and kill have no memory effects; a process gone is ESRCH, ignored.
    unsafe { libc::killpg(leader, libc::SIGSTOP) };
    for _ in 0..STOP_ROUNDS {
        let running = running();
        if running.is_empty() {
            return stopped;
        }
        for &pid in &running {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            if !stopped.contains(&pid) {
                stopped.push(pid);
            }
        }
        wait_until_stopped(&running);
    }
    tracing::warn!("the run's processes kept continuing each other after Ctrl-Z: ending the run");
    for pid in descendants(leader) {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    kill_group(leader);
    Vec::new()
}

/// Stopped (`T`), stopped by a tracer (`t`), or ended.
fn is_stopped(state: u8) -> bool {
    matches!(state, b'T' | b't' | b'Z' | b'X')
}

/// Whether every thread of the process is stopped or gone: a process whose main thread ended
/// shows as a zombie while its other threads run on.
fn all_threads_stopped(pid: i32) -> bool {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return true };
    threads.flatten().all(|thread| stat_of(&thread.path().join("stat")).is_none_or(|(state, _)| is_stopped(state)))
}

/// `leader` and every process descended from it, from the parents `/proc` names (a process whose
/// parent ended belongs to the init of the run's PID namespace, itself a descendant).
fn descendants(leader: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if let Some((_, parent)) = stat_of(&entry.path().join("stat")) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut found = vec![leader];
    let mut next = 0;
    while next < found.len() {
        found.extend(children.get(&found[next]).into_iter().flatten().copied());
        next += 1;
    }
    found
}

/// A process' or thread's state letter and parent, from its `stat` file in `/proc` (the command
/// name, in parentheses, may hold any character: the fields after its last `)` are read).
fn stat_of(path: &Path) -> Option<(u8, i32)> {
    let stat = std::fs::read(path).ok()?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.bytes().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// Waits (a little) until each of `pids` is stopped or gone, so that what they started before
/// the stop reached them is in `/proc` at the next look.
fn wait_until_stopped(pids: &[i32]) {
    let until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < until {
        if pids.iter().all(|&pid| all_threads_stopped(pid)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Runs a command tool: `input` on its standard input; (exit code, stdout, stderr). It runs in its
/// own process group, killed on timeout, with the minimal environment of [`crate::trust::confine`].
pub fn run_command(
    argv: &[String],
    cwd: &Path,
    input: &str,
    timeout: Duration,
) -> Result<(i32, String, String), String> {
    let Some((program, args)) = argv.split_first() else {
        return Err("the command is empty".into());
    };
    let mut command = Command::new(program);
    let mut child: Child = crate::trust::confine(&mut command, [])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let pid = child.id() as i32;
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_string();
        std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
    }
    let read = |source: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut s) = source {
                let _ = s.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = read(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let stderr = read(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let deadline = Instant::now() + timeout;
    while !has_exited(pid) {
        if Instant::now() >= deadline {
            kill_group(pid);
            let _ = child.wait();
            return Err(format!("`{program}` did not finish within {} s", timeout.as_secs()));
        }
        std::thread::sleep(POLL);
    }
    kill_group(pid);
    let status = child.wait().map_err(|e| e.to_string())?;
    Ok((status.code().unwrap_or(1), stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_get_their_input_and_time_out() {
        let argv = vec!["sh".to_string(), "-c".to_string(), "cat; echo err >&2; exit 3".to_string()];
        let (code, out, err) = run_command(&argv, Path::new("."), "{\"a\":1}", Duration::from_secs(5)).unwrap();
        assert_eq!((code, out.as_str(), err.trim()), (3, "{\"a\":1}", "err"));
        let slow = vec!["sleep".to_string(), "5".to_string()];
        let started = Instant::now();
        let e = run_command(&slow, Path::new("."), "", Duration::from_millis(200)).unwrap_err();
        assert!(e.contains("did not finish"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
