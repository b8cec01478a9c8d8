//! A run's process limit where `RLIMIT_NPROC` does not hold: a cgroup of its own with the `pids`
//! controller.
//!
//! The kernel exempts root from `RLIMIT_NPROC` (namespaces or not), so when chainsmith runs as
//! root a fork bomb would otherwise fill the machine's process table. A cgroup's `pids.max` holds
//! every user, root included, and counts the processes and threads inside it alone. Making one
//! needs write access to a cgroup file system, which root has where the hierarchy is mounted
//! writable (cgroup v2, or v1's `pids` hierarchy); elsewhere the run goes without, and the sandbox
//! says so.
//!
//! The cgroup is made before the run's fork, the run's first process enters it between fork and
//! exec (a write of `0` — "this process" — to a `cgroup.procs` opened beforehand), and it is
//! removed when the run is over, every process still in it killed first (a daemon the run left). One left behind by a chainsmith that was killed is removed by the
//! next run beside it.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The name every run's cgroup starts with; the rest is `<chainsmith's pid>-<n>`.
const PREFIX: &str = "chainsmith-run-";

/// The largest `pids.max` the kernel takes (its `PID_MAX_LIMIT`); a larger value is refused with
/// `EINVAL`, which would leave the run with no limit at all.
const PID_MAX_LIMIT: u64 = 4 * 1024 * 1024;

/// How long removal waits for the kernel to let go of the run's exited processes.
const REMOVAL_GRACE: Duration = Duration::from_secs(2);

/// A cgroup holding one run's processes to `pids.max`; removed when dropped.
pub struct ProcessCgroup {
    folder: PathBuf,
    /// The cgroup's `cgroup.procs`, open for the child to write itself into.
    procs: OwnedFd,
}

impl ProcessCgroup {
    /// Makes a cgroup for one run allowing `max_processes` processes and threads, beneath this
    /// process' own cgroup where the `pids` controller is available there (see [`pids_parent`]).
    pub fn new(max_processes: u64) -> Result<ProcessCgroup, String> {
        let parent = pids_parent().ok_or("no cgroup file system with the pids controller is mounted")?;
        remove_abandoned(&parent);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let folder = loop {
            let folder =
                parent.join(format!("{PREFIX}{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
            match std::fs::create_dir(&folder) {
                Ok(()) => break folder,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("cannot make a cgroup in {}: {e}", parent.display())),
            }
        };
        let made = (|| {
            std::fs::write(folder.join("pids.max"), max_processes.clamp(1, PID_MAX_LIMIT).to_string())?;
            let procs = std::fs::OpenOptions::new().write(true).open(folder.join("cgroup.procs"))?;
            Ok::<_, std::io::Error>(OwnedFd::from(procs))
        })();
        match made {
            Ok(procs) => Ok(ProcessCgroup { folder, procs }),
            Err(e) => {
                let _ = std::fs::remove_dir(&folder);
                Err(format!("cannot set up the cgroup {}: {e}", folder.display()))
            }
        }
    }

    /// The descriptor [`enter`] writes to.
    pub fn procs(&self) -> RawFd {
        self.procs.as_raw_fd()
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `procs`.
///
/// # Safety
/// Runs between fork and exec: one `write` of a static buffer.
pub unsafe fn enter(procs: RawFd) -> std::io::Result<()> {
    // SAFETY: write on an open descriptor and a static buffer.
    if unsafe { libc::write(procs, b"0".as_ptr().cast(), 1) } != 1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl ProcessCgroup {
    /// Kills every process still in the cgroup: what a run left behind when it ended — a daemon
    /// that `setsid` and a double fork took out of its process group, where no PID namespace ends
    /// it with the run's first process. cgroup v2's `cgroup.kill` does it at once; on v1 the
    /// members are killed until none is left (`pids.max` keeps them from forking faster than that).
    fn kill_remaining(&self) {
        if std::fs::write(self.folder.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        let until = Instant::now() + REMOVAL_GRACE;
        while Instant::now() < until {
            let Ok(members) = std::fs::read_to_string(self.folder.join("cgroup.procs")) else { return };
            let pids: Vec<libc::pid_t> = members.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids.into_iter().filter(|&p| p > 0) {
                // SAFETY: kill takes plain integers; the pid was read from the run's own cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ProcessCgroup {
    fn drop(&mut self) {
        self.kill_remaining();
        // The run has been reaped, but the kernel may count an exiting task a moment longer
        // (`EBUSY`).
        let until = Instant::now() + REMOVAL_GRACE;
        while let Err(e) = std::fs::remove_dir(&self.folder) {
            if e.raw_os_error() != Some(libc::EBUSY) || Instant::now() >= until {
                tracing::debug!("cannot remove the run's cgroup {}: {e}", self.folder.display());
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Removes the cgroups beneath `parent` of chainsmith processes that no longer exist (an empty
/// cgroup is all they can be: their runs died with them).
fn remove_abandoned(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)).and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if owner.parse::<u32>().is_ok() && !Path::new("/proc").join(owner).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The cgroup folder a run's cgroup is made in: on cgroup v2, this process' cgroup when it hands
/// the `pids` controller to its children (the top of a hierarchy, since v2 lets no other cgroup
/// with processes do so); on v1, this process' cgroup in the `pids` hierarchy.
fn pids_parent() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = cgroup_mounts(&mountinfo);
    let own = |hierarchy: &dyn Fn(&str) -> bool| {
        membership.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            hierarchy(controllers).then(|| path.to_string())
        })
    };
    // On v2, only chainsmith's own cgroup, and only where it hands `pids` down: a cgroup made
    // higher up would take the run out of what holds chainsmith (a service's memory and task
    // limits, `systemctl stop`).
    if let Some(mount) = mounts.iter().find(|m| m.version2)
        && let Some(path) = own(&|controllers| controllers.is_empty())
    {
        let folder = mount.folder_of(&path)?;
        let delegated = std::fs::read_to_string(folder.join("cgroup.subtree_control")).unwrap_or_default();
        if delegated.split_whitespace().any(|c| c == "pids") {
            return Some(folder);
        }
    }
    let mount = mounts.iter().find(|m| !m.version2 && m.options.split(',').any(|o| o == "pids"))?;
    let path = own(&|controllers| controllers.split(',').any(|c| c == "pids"))?;
    mount.folder_of(&path)
}

/// One mounted cgroup hierarchy, from `/proc/self/mountinfo`.
struct CgroupMount {
    /// The cgroup the mount shows at its root (`/` unless a namespace or bind mount narrows it).
    root: String,
    point: PathBuf,
    version2: bool,
    /// The super-block options (v1: the controllers of the hierarchy).
    options: String,
}

impl CgroupMount {
    /// The folder of the cgroup at `path` (as `/proc/self/cgroup` writes it) under this mount.
    fn folder_of(&self, path: &str) -> Option<PathBuf> {
        let inside = match self.root.as_str() {
            "/" => path,
            root => path.strip_prefix(root).filter(|rest| rest.is_empty() || rest.starts_with('/'))?,
        };
        let folder = self.point.join(inside.trim_start_matches('/'));
        folder.is_dir().then_some(folder)
    }
}

/// The cgroup mounts in `mountinfo`: `ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS…] - TYPE SOURCE
/// SUPER_OPTIONS` per line, with spaces in paths written `\040`.
fn cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let mut after = after.split(' ');
            let (kind, _source, options) = (after.next()?, after.next()?, after.next().unwrap_or(""));
            let version2 = match kind {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(CgroupMount {
                root: unescape(fields.get(3)?),
                point: PathBuf::from(unescape(fields.get(4)?)),
                version2,
                options: options.to_string(),
            })
        })
        .collect()
}

/// A mountinfo path with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_mounts_are_read_from_mountinfo() {
        let mountinfo = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 /docker/abc /sys/fs/cgroup/my\\040unified rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate
";
        let mounts = cgroup_mounts(mountinfo);
        assert_eq!(mounts.len(), 2);
        assert!(!mounts[0].version2);
        assert_eq!(mounts[0].options, "rw,pids");
        assert_eq!(mounts[0].point, Path::new("/sys/fs/cgroup/pids"));
        assert!(mounts[1].version2);
        assert_eq!(mounts[1].root, "/docker/abc");
        assert_eq!(mounts[1].point, Path::new("/sys/fs/cgroup/my unified"));
    }

    #[test]
    fn a_cgroup_path_outside_a_narrowed_mount_has_no_folder() {
        let mount = CgroupMount {
            root: "/docker/abc".into(),
            point: PathBuf::from("/"),
            version2: true,
            options: String::new(),
        };
        assert_eq!(mount.folder_of("/elsewhere"), None);
        assert_eq!(mount.folder_of("/docker/abcdef"), None);
        assert_eq!(mount.folder_of("/docker/abc"), Some(PathBuf::from("/")));
    }

    /// A daemon a run left behind (`setsid` and a double fork: out of the run's process group,
    /// parented to init) dies with the run's cgroup.
    #[test]
    fn a_daemon_left_in_the_cgroup_dies_with_it() {
        use std::os::unix::process::CommandExt;
        let cgroup = match ProcessCgroup::new(64) {
            Ok(cgroup) => cgroup,
            Err(why) => {
                eprintln!("skipped: no cgroup of its own can be made here ({why})");
                return;
            }
        };
        let procs = cgroup.procs();
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "setsid sh -c 'sleep 300 >/dev/null 2>&1 & echo $!' </dev/null"]);
        // SAFETY: `enter` is one write, safe between fork and exec.
        unsafe { command.pre_exec(move || enter(procs)) };
        let out = command.output().unwrap();
        let daemon: libc::pid_t = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let alive = || Path::new("/proc").join(daemon.to_string()).exists();
        assert!(alive(), "the daemon outlived the command that started it");
        drop(cgroup);
        let until = Instant::now() + Duration::from_secs(5);
        while alive() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(), "the daemon {daemon} outlived its run's cgroup");
    }
}
