//! Processes in a group of their own: whether one has ended (without reaping it), killing the
//! group, and running a command tool to its end or its timeout. The run (the interpreter) and the
//! host (command tools) both start such processes; this is the lower file both use.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
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
