//! Confined runs: the program an LLM or a workspace wrote runs with no network, no secrets, writes
//! only in its scratch folder (and the paths `[runtime] writable` names), and every process it
//! starts dies with the run.
//!
//! Tools need none of that: each call travels to the host over the one descriptor the program
//! inherits (see [`super::host`]), and the host (outside the sandbox) reaches the network. On Linux, kernel
//! features do the confining:
//! - user, network, PID and mount namespaces (`unshare`): the new network namespace has no
//!   interface but a downed loopback, so no connection leaves the program; the program is the init
//!   of its own PID namespace, so when it ends or is killed the kernel kills every process it
//!   started, a `setsid` daemon included; it mounts its own `/proc` (only its processes) and
//!   `/dev/shm` (gone with the run), and a device node opens only beneath `/dev`. An
//!   intermediate process outside the namespace waits for it, forwards the signals chainsmith
//!   sends (`SIGUSR1` asks where the program is), and dies with it;
//! - Landlock (the `landlock` crate): reads anywhere but in `/dev` (the null device and random
//!   sources excepted: another terminal's keystrokes are no one's to read), the system's
//!   secrets, what of the system's folders not every user may read (root's run too), and the
//!   user's home and temporary folders, of which only what a run needs (the workspace, the
//!   interpreter's folders) and never a credential store; writes only beneath the allowed
//!   folders, no TCP connect or bind (a second wall when namespaces are refused);
//! - seccomp (the `seccompiler` crate): no `ioctl(TIOCSTI)`/`TIOCLINUX` (typing into a terminal)
//!   nor the terminal requests whose effect outlives the run (line discipline, output stopped,
//!   exclusive mode, input discarded), no mount calls (root's program could undo `nodev`), no
//!   user namespace of its own (`clone3`, whose flags it cannot read, answers `ENOSYS`),
//!   no new Unix socket (`socket(AF_UNIX)`, datagram `socketpair`: a pathname socket is reachable
//!   whatever the namespaces, and Landlock cannot yet tell one from another), no socket of any
//!   other family but the internet's (vsock, packet, netlink: no namespace confines them), no
//!   `io_uring` (whose operations would pass the filter by), no keyring call (the session
//!   keyring is chainsmith's), and nothing that has the kernel
//!   continue a run stopped by Ctrl-Z (a timer's or message queue's signal, `F_SETSIG` of
//!   SIGCONT or SIGKILL, a parent-death SIGCONT);
//! - an address-space limit (`[runtime] max_memory_mb`): an allocation past it fails in the program
//!   (`MemoryError`) instead of taking the machine's memory;
//! - a process limit (`[runtime] max_processes`): `RLIMIT_NPROC` inside the user namespace, where
//!   it counts the run's own processes and threads alone; for root, whom the kernel does not hold
//!   to `RLIMIT_NPROC`, a cgroup of the run's own (see [`super::cgroup`]);
//! - a scratch folder of capped size (`[runtime] max_scratch_mb`): a tmpfs over it in the run's
//!   mount namespace.
//!
//! In every mode, `off` included, the program starts a session of its own (`setsid`: no
//! controlling terminal, so `/dev/tty` cannot be opened), dies with chainsmith (a parent-death
//! signal) and keeps one inherited descriptor, the host's door (see [`super::host`]): its only
//! way to the host, which no other process can find.
//!
//! `[runtime] sandbox`: `"best-effort"` (the default) uses what the kernel grants and says once
//! what it could not; `"strict"` refuses to run without every layer; `"off"` runs unconfined.
//! The environment is the minimal one of [`crate::trust::confine`] in every mode.
//!
//! Everything the child does between `fork` and `exec` is a plain system call on buffers made
//! before the fork: the server is multi-threaded, so the child must not allocate or lock.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use super::cgroup::{self, ProcessCgroup};
use crate::config::SandboxMode;

/// The Landlock ABI asked for: filesystem rules with truncate and device ioctls, TCP rules, and
/// scoping of abstract Unix sockets and signals to the run.
const LANDLOCK_ABI: ABI = ABI::V6;

/// What a run's sandbox will apply, prepared before the program is started.
pub struct Sandbox {
    namespaces: Option<IdMaps>,
    /// `RLIMIT_AS` in bytes.
    memory: Option<u64>,
    /// `RLIMIT_NPROC`, set only inside the run's user namespace: there the kernel (5.14 and later)
    /// counts the run's own processes and threads alone — the waiting intermediate process among
    /// them —, where outside one it would count every process of the user. The kernel does not
    /// hold root to it, so it is not set for root. See [`process_limit`].
    processes: Option<u64>,
    /// Root's process limit instead.
    process_cgroup: Option<ProcessCgroup>,
    landlock: Option<OwnedFd>,
    /// The Landlock rights the run's own `/dev/shm` and scratch folder are given once they are
    /// mounted (its own `/proc` the reading ones): a rule made before the fork names the host's
    /// folders, which the run's mounts hide.
    shm_access: Option<u64>,
    /// The scratch folder's own size-capped file system, with private mounts.
    scratch: Option<ScratchMount>,
    /// The filters of [`seccomp_filters`], applied in order.
    seccomp: Option<Vec<BpfProgram>>,
    /// What the kernel refused, in words (best-effort mode runs without it).
    pub missing: Vec<String>,
    /// One line for the program's environment (`CHAINSMITH_SANDBOX`), naming what applies, so
    /// a blocked action can say it was the sandbox.
    pub summary: String,
    writable: Vec<PathBuf>,
}

/// `uid_map`/`gid_map` lines mapping the user to itself inside the user namespace, so files keep
/// their owners; and whether the run gets mounts of its own (see [`enter_namespaces`]).
#[derive(Clone)]
struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    private_mounts: bool,
}

impl IdMaps {
    fn of_this_user(private_mounts: bool) -> IdMaps {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        IdMaps {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            private_mounts,
        }
    }
}

/// What a run reads beyond what any user's program may (see [`readable`]).
pub struct Readable {
    /// The workspace, the run's own folder, chainsmith's package, a program named outside the
    /// workspace and its folder: read whole,
    /// what only their owner may read included (the workspace's `.env`).
    pub own: Vec<PathBuf>,
    /// The interpreter's folders, `PYTHONPATH`, `[runtime] readable`: in the system's folders
    /// read as any user may, so a `.venv` the workspace points there after trust opens no
    /// root-only file; in a home folder read whole (the user's or a trusted choice).
    pub shared: Vec<PathBuf>,
}

impl Sandbox {
    /// Prepares the sandbox of one run that may write beneath `writable` (real paths, the scratch
    /// folder first, holding at most `max_scratch_mb`: each granted only while it still leads to
    /// itself) and read, of the user's home and temporary folders, what
    /// lies beneath `readable`. In strict mode a missing layer is an error.
    pub fn prepare(
        mode: SandboxMode,
        writable: &[PathBuf],
        readable: &Readable,
        max_memory_mb: u64,
        max_processes: u64,
        max_scratch_mb: u64,
    ) -> Result<Sandbox, String> {
        if mode == SandboxMode::Off {
            return Ok(Sandbox {
                namespaces: None,
                memory: None,
                processes: None,
                process_cgroup: None,
                landlock: None,
                shm_access: None,
                scratch: None,
                seccomp: None,
                missing: Vec::new(),
                summary: String::new(),
                writable: Vec::new(),
            });
        }
        let scratch_folder = writable.first().cloned();
        let mut writable = writable.to_vec();
        // What any program may write: the null device, its controlling terminal (it has none, so
        // opening it fails as it would outside a terminal), shared memory. Not the user's other
        // terminals, whose answers to escape sequences would be typed there.
        writable.extend(["/dev/null", "/dev/tty", "/dev/shm"].iter().filter_map(|p| Path::new(p).canonicalize().ok()));
        writable.retain(|p| p.exists());
        let mut missing = Vec::new();
        let support = namespace_support();
        // A run whose scratch folder (or a writable folder) lies in /dev/shm (`TMPDIR=/dev/shm`)
        // needs the host's: a /dev/shm of its own would hide it.
        let shm = &Path::new("/dev/shm").canonicalize().unwrap_or_else(|_| PathBuf::from("/dev/shm"));
        let needs_hosts_shm = writable.iter().filter(|p| p != &shm).any(|p| p.starts_with(shm));
        let namespaces = match &support.namespaces {
            Ok(()) => Some(IdMaps::of_this_user(support.private_mounts.is_ok() && !needs_hosts_shm)),
            Err(why) => {
                missing.push(format!("namespaces ({why}): the network and the program's processes are not isolated"));
                None
            }
        };
        if let (Ok(()), Err(why)) = (&support.namespaces, &support.private_mounts) {
            missing.push(format!(
                "a mount namespace ({why}): the program sees every process in /proc, shares /dev/shm, and its scratch folder's size is not capped"
            ));
        }
        let private_mounts = namespaces.as_ref().is_some_and(|n| n.private_mounts);
        let ruled: Vec<PathBuf> = writable.iter().filter(|p| !(private_mounts && p == &shm)).cloned().collect();
        let landlock = match landlock_ruleset(mode, &ruled, readable) {
            Ok(fd) => fd,
            Err(why) => {
                missing.push(format!("Landlock ({why}): writes outside the scratch folder are not blocked"));
                None
            }
        };
        if landlock.is_none() && !missing.iter().any(|m| m.starts_with("Landlock")) {
            missing.push(
                "Landlock (not supported by this kernel): writes outside the scratch folder are not blocked".into(),
            );
        }
        // SAFETY: getuid cannot fail and touches no memory.
        let root = unsafe { libc::getuid() } == 0;
        let (processes, process_cgroup) = if root {
            match ProcessCgroup::new(max_processes) {
                Ok(cgroup) => (None, Some(cgroup)),
                Err(why) => {
                    missing.push(format!(
                        "a process limit (the kernel does not hold root to RLIMIT_NPROC, and {why}): a fork bomb is not stopped"
                    ));
                    (None, None)
                }
            }
        } else if namespaces.is_some() {
            match process_limit(max_processes) {
                Some(count) => (Some(count), None),
                None => {
                    missing.push(
                        "a process limit (before Linux 5.14 it would count every process of the user): a fork bomb is not stopped"
                            .into(),
                    );
                    (None, None)
                }
            }
        } else {
            // Without namespaces the limit would count every process of the user, and the line
            // about namespaces already says the program's processes are not isolated.
            (None, None)
        };
        let seccomp = match seccomp_filters() {
            Ok(program) => Some(program),
            Err(why) => {
                missing.push(format!(
                    "seccomp ({why}): Unix sockets other than chainsmith's, typing into a terminal and new user namespaces are not blocked"
                ));
                None
            }
        };
        if mode == SandboxMode::Strict && !missing.is_empty() {
            return Err(format!(
                "[runtime] sandbox = \"strict\", but this system refuses part of it: {}",
                missing.join("; ")
            ));
        }
        let mut applies = Vec::new();
        if namespaces.is_some() || landlock.is_some() {
            applies.push("no network (tools are reached through chainsmith)");
        }
        if landlock.is_some() {
            applies.push("writes only in the scratch folder and [runtime] writable");
        }
        if namespaces.is_some() {
            applies.push("every process ends with the run");
        }
        let scratch =
            scratch_folder.filter(|_| private_mounts).and_then(|folder| ScratchMount::new(&folder, max_scratch_mb));
        if private_mounts {
            applies.push(if scratch.is_some() {
                "its own /proc and /dev/shm, and a scratch folder of limited size"
            } else {
                "its own /proc and /dev/shm"
            });
        }
        if seccomp.is_some() {
            applies.push("no Unix socket but chainsmith's, no typing into a terminal, no user namespace");
        }
        applies.push("memory capped");
        if processes.is_some() || process_cgroup.is_some() {
            applies.push("processes capped");
        }
        let shm_access = (private_mounts && landlock.is_some()).then(handled_fs_access);
        Ok(Sandbox {
            namespaces,
            memory: Some(memory_limit(max_memory_mb)),
            processes,
            process_cgroup,
            landlock,
            shm_access,
            scratch,
            seccomp,
            missing,
            summary: applies.join("; "),
            writable,
        })
    }

    /// The folders the program may write beneath, as a `PATH`-style list for the program's own
    /// check (empty when writes are not confined).
    pub fn writable_list(&self) -> std::ffi::OsString {
        if self.landlock.is_none() {
            return Default::default();
        }
        let canonical = self.writable.iter().filter_map(|p| p.canonicalize().ok());
        std::env::join_paths(canonical).unwrap_or_default()
    }

    /// Makes `command` start in a session of its own, die with chainsmith, keep `door` (the host's
    /// channel, see [`super::host`]) open across `exec`, and run inside the sandbox.
    pub fn apply(&self, command: &mut Command, door: RawFd) {
        let maps = self.namespaces.clone();
        let landlock = self.landlock.as_ref().map(|fd| fd.as_raw_fd());
        let shm_rule = landlock.zip(self.shm_access);
        let scratch = self.scratch.clone();
        let memory = self.memory;
        let processes = self.processes;
        let process_cgroup = self.process_cgroup.as_ref().map(ProcessCgroup::procs);
        let seccomp = self.seccomp.clone();
        // SAFETY: getpid cannot fail.
        let chainsmith = unsafe { libc::getpid() };
        // SAFETY: the closure runs in the forked child before exec and only makes system calls
        // on memory prepared here (see the module documentation).
        unsafe {
            command.pre_exec(move || {
                // No controlling terminal: `/dev/tty` fails to open, and the terminal the program
                // may hold as stdin refuses TIOCSTI to a process outside its session. The session
                // is also the process group the run kills at its end.
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Dies when chainsmith does, however it ends; if it already has, stop here.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != chainsmith {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                if libc::fcntl(door, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Nothing else chainsmith was started with reaches the program: a descriptor its
                // parent left open (a file outside, a socket, a jobserver pipe) passes every
                // check made at open or connect.
                close_on_exec_all_but(door);
                // Before the namespaces: the intermediate process that waits for the program
                // counts too, as under `RLIMIT_NPROC`.
                if let Some(procs) = process_cgroup {
                    cgroup::enter(procs)?;
                }
                if let Some(maps) = &maps {
                    enter_namespaces(maps, shm_rule, scratch.as_ref())?;
                }
                if let Some(bytes) = memory {
                    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                    if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                // Inside the namespaces, so that only the run's own processes count.
                if let Some(count) = processes {
                    let limit = libc::rlimit { rlim_cur: count, rlim_max: count };
                    if libc::setrlimit(libc::RLIMIT_NPROC, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(fd) = landlock {
                    restrict_self(fd)?;
                }
                // Last: they forbid nothing the steps before need. The crate's error carries no
                // more than errno, which is still set.
                for program in seccomp.iter().flatten() {
                    if seccompiler::apply_filter(program).is_err() {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

/// The seccomp filters of a run: everything is allowed but what would leave the sandbox by a path
/// the other layers leave open, which fails with `EPERM`; and `clone3`, whose flags a filter
/// cannot read (they are behind a pointer), fails with `ENOSYS`, so that the C library creates
/// threads and processes with `clone`, whose flags it can (as container runtimes do).
fn seccomp_filters() -> Result<Vec<BpfProgram>, String> {
    // SAFETY: PR_GET_SECCOMP takes no pointer; it fails with EINVAL where seccomp is missing.
    if unsafe { libc::prctl(libc::PR_GET_SECCOMP) } < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let when = |conditions: &[(u8, SeccompCmpOp, u64)]| {
        let conditions = conditions
            .iter()
            .map(|(arg, op, value)| SeccompCondition::new(*arg, SeccompCmpArgLen::Dword, op.clone(), *value))
            .collect::<Result<Vec<_>, _>>()?;
        SeccompRule::new(conditions)
    };
    let (unix, inet, inet6) = (libc::AF_UNIX as u64, libc::AF_INET as u64, libc::AF_INET6 as u64);
    // Request numbers are `c_ulong` with glibc and `c_int` with musl.
    #[allow(clippy::unnecessary_cast)]
    let terminal_requests = [
        // Typing into a terminal, and the console's equivalent.
        libc::TIOCSTI as u64,
        libc::TIOCLINUX as u64,
        // What outlives the run on the terminal the program reads (the user's, given back after
        // it): another line discipline (N_NULL: the terminal takes no more input), output stopped
        // (the shell hangs writing), exclusive mode (no one else may open it: sudo's prompt), and
        // discarding what the user typed ahead.
        libc::TIOCSETD as u64,
        libc::TCXONC as u64,
        libc::TIOCEXCL as u64,
        libc::TCFLSH as u64,
        // The window size the shell reads after the run, which chainsmith cannot put back (the
        // user may have resized the window meanwhile). The program can open no terminal of its
        // own (`/dev/ptmx` is a device it may not open), so only the user's has a size to set.
        libc::TIOCSWINSZ as u64,
    ];
    let socket_type = SeccompCmpOp::MaskedEq(0xf);
    // `fcntl`'s request naming the signal an `O_ASYNC` descriptor sends (Linux's, not in `libc`).
    const F_SETSIG: u64 = 10;
    let new_user_namespace =
        || when(&[(0, SeccompCmpOp::MaskedEq(libc::CLONE_NEWUSER as u64), libc::CLONE_NEWUSER as u64)]);
    let rules = vec![
        // A user namespace of its own: every capability inside it, so the whole of the kernel
        // that only root could reach before (new mounts, network devices) to look for a flaw in.
        // The run needs none: it is given its namespaces when it starts.
        (libc::SYS_unshare, vec![new_user_namespace()]),
        (libc::SYS_clone, vec![new_user_namespace()]),
        (libc::SYS_ioctl, terminal_requests.iter().map(|request| when(&[(1, SeccompCmpOp::Eq, *request)])).collect()),
        // A new Unix socket could connect to any pathname socket the user can reach (a desktop's
        // session bus, ssh-agent, docker.sock, another run's files). A stream pair is harmless
        // and is how the program opens connections to the host; a datagram pair could send to
        // any address.
        // Nor a socket of any family but the internet's (which the network namespace and
        // Landlock confine): no namespace confines vsock (a virtual machine's host), raw packets
        // or the kernel's netlink channels, and the program needs none of them.
        (libc::SYS_socket, vec![when(&[(0, SeccompCmpOp::Ne, inet), (0, SeccompCmpOp::Ne, inet6)])]),
        (
            libc::SYS_socketpair,
            vec![
                when(&[(0, SeccompCmpOp::Eq, unix), (1, socket_type.clone(), libc::SOCK_DGRAM as u64)]),
                when(&[(0, SeccompCmpOp::Eq, unix), (1, socket_type, libc::SOCK_RAW as u64)]),
            ],
        ),
        // Its operations (socket, connect) are not system calls the filter sees.
        (libc::SYS_io_uring_setup, Vec::new()),
        // What has the kernel continue a run stopped by Ctrl-Z, when no process of it runs to
        // do so, so that it reads what the user types to the shell: a timer or a message queue
        // signalling SIGCONT (or SIGKILL, whose death continues an orphaned process group),
        // input on the terminal signalling it (`O_ASYNC` with `F_SETSIG`), a parent's death.
        (libc::SYS_timer_create, Vec::new()),
        (libc::SYS_mq_notify, Vec::new()),
        (
            libc::SYS_fcntl,
            [libc::SIGCONT, libc::SIGKILL]
                .iter()
                .map(|signal| when(&[(1, SeccompCmpOp::Eq, F_SETSIG), (2, SeccompCmpOp::Eq, *signal as u64)]))
                .collect(),
        ),
        // (A parent-death SIGKILL stays allowed — Go and Chromium set it on their children —: a
        // parent of a stopped run dies only by a SIGKILL the rules above leave no way to send.)
        (
            libc::SYS_prctl,
            vec![when(&[
                (0, SeccompCmpOp::Eq, libc::PR_SET_PDEATHSIG as u64),
                (1, SeccompCmpOp::Eq, libc::SIGCONT as u64),
            ])],
        ),
        // The kernel's keyrings: the run shares chainsmith's session keyring (a Kerberos
        // `KEYRING:` cache, tokens a tool stored with `keyctl`), which it could read, change
        // and add to, outliving the run.
        (libc::SYS_add_key, Vec::new()),
        (libc::SYS_request_key, Vec::new()),
        (libc::SYS_keyctl, Vec::new()),
        // A program run by root holds every capability in its user namespace: it could take the
        // run's `nodev` back, or mount over what Landlock's rules name.
        (libc::SYS_mount, Vec::new()),
        (libc::SYS_umount2, Vec::new()),
        (libc::SYS_mount_setattr, Vec::new()),
        (libc::SYS_open_tree, Vec::new()),
        (libc::SYS_move_mount, Vec::new()),
        (libc::SYS_fsopen, Vec::new()),
        (libc::SYS_fsmount, Vec::new()),
        (libc::SYS_fsconfig, Vec::new()),
        (libc::SYS_fspick, Vec::new()),
        (libc::SYS_pivot_root, Vec::new()),
    ];
    let filter = |rules: Vec<(i64, Vec<Result<SeccompRule, _>>)>, errno: i32| {
        let rules: Result<Vec<(i64, Vec<SeccompRule>)>, _> = rules
            .into_iter()
            .map(|(call, rules)| rules.into_iter().collect::<Result<Vec<_>, _>>().map(|r| (call, r)))
            .collect();
        let filter = SeccompFilter::new(
            for_every_convention(rules.map_err(|e: seccompiler::BackendError| e.to_string())?, arch)
                .into_iter()
                .collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(|e| e.to_string())?;
        BpfProgram::try_from(filter).map_err(|e| e.to_string())
    };
    Ok(vec![filter(rules, libc::EPERM)?, filter(vec![(libc::SYS_clone3, Vec::new())], libc::ENOSYS)?])
}

/// `rules` with the same rules for the x32 calling convention's numbers, on x86_64.
fn for_every_convention(mut rules: Vec<(i64, Vec<SeccompRule>)>, arch: TargetArch) -> Vec<(i64, Vec<SeccompRule>)> {
    if arch == TargetArch::x86_64 {
        // The x32 calling convention reaches the same calls with this bit set, under the same
        // architecture tag the filter checks (its `ioctl` has a number of its own).
        const X32: i64 = 0x4000_0000;
        // Calls taking a structure whose layout differs have numbers of their own there.
        const X32_OWN: [(i64, i64); 3] =
            [(libc::SYS_ioctl, 514), (libc::SYS_timer_create, 526), (libc::SYS_mq_notify, 527)];
        let x32: Vec<_> = rules
            .iter()
            .map(|(call, rules)| {
                let number = X32_OWN.iter().find(|(native, _)| native == call).map_or(*call, |(_, own)| *own);
                (number | X32, rules.clone())
            })
            .collect();
        rules.extend(x32);
    }
    rules
}

/// What the kernel grants a run: namespaces, and mounts of its own inside them.
struct NamespaceSupport {
    namespaces: Result<(), String>,
    private_mounts: Result<(), String>,
}

/// Found once, by starting `true` the way a run starts: with private mounts, else without.
fn namespace_support() -> &'static NamespaceSupport {
    static SUPPORT: OnceLock<NamespaceSupport> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        let try_with = |maps: IdMaps| {
            let mut probe = Command::new("true");
            probe.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
            // SAFETY: enter_namespaces makes plain system calls on the buffers moved in here.
            unsafe {
                probe.pre_exec(move || enter_namespaces(&maps, None, None));
            }
            match probe.status() {
                Ok(status) if status.success() => Ok(()),
                Ok(status) => Err(format!("a test process ended with {status}")),
                Err(e) => Err(e.to_string()),
            }
        };
        match try_with(IdMaps::of_this_user(true)) {
            Ok(()) => NamespaceSupport { namespaces: Ok(()), private_mounts: Ok(()) },
            Err(why) => {
                NamespaceSupport { namespaces: try_with(IdMaps::of_this_user(false)), private_mounts: Err(why) }
            }
        }
    })
}

/// Device nodes a program may read: the data sources every runtime uses. No other device — the
/// user's other terminals (`/dev/pts/N`, `/dev/ttyN`), input devices, the console —, where a read
/// would take keystrokes meant for someone else (a password typed while the chain runs).
const READABLE_DEVICES: [&str; 5] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// Where the user's credentials live, beneath their home folder: the stores of ssh, gpg, cloud and
/// container tools, git's and package registries' tokens, password managers, browsers, shell
/// histories. A program of a workspace the user never trusted could otherwise read them and send
/// them to a toolset of the workspace's choosing.
const CREDENTIAL_STORES: [&str; 54] = [
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    ".mozilla",
    ".vault-token",
    ".terraform.d",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".local/share/fish/fish_history",
    ".pgpass",
    ".my.cnf",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".gem/credentials",
    ".cache/huggingface/token",
    ".kaggle",
    ".terraformrc",
    ".Xauthority",
    ".local/share/jupyter/runtime",
    // Round 6's: cloud, data-platform and deploy tools' logins, and key files.
    ".local/share/containers",
    ".local/share/password-store",
    ".s3cfg",
    ".boto",
    ".databrickscfg",
    ".pulumi",
    ".huggingface",
    ".snowsql",
    ".dbt",
    ".mc",
    ".fly",
    ".vercel",
    ".netlify",
    ".cloudflared",
    ".ngrok2",
    ".sbt",
    ".ivy2",
    ".composer",
    ".age",
    ".oci",
    ".env",
];

/// The system's own secrets: the password hashes, which only root may read (and a run of root's
/// could), and the secrets a container is given (`/run/secrets`, readable by every user of the
/// container: Docker's and Kubernetes' service-account tokens). [`ssh_host_keys`] adds the host's
/// private SSH keys, [`not_for_every_user`] whatever else only some users may read.
const SYSTEM_SECRETS: [&str; 6] =
    ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/run/secrets", "/var/run/secrets"];

/// The system's folders, where files only some users may read (`/etc/ssl/private`, a database's
/// `pg_hba.conf`, root's logs) lie among what every program needs. `/usr` is left out: a package
/// manager installs it for every user to read, and it is too large to walk before a run
/// (`/usr/local`, where an administrator installs by hand, is walked).
const SYSTEM_FOLDERS: [&str; 9] = ["/etc", "/var", "/boot", "/opt", "/srv", "/run", "/usr/local", "/mnt", "/media"];

/// The entries looked at, at most, in `/etc` and again in the other [`SYSTEM_FOLDERS`]: a few
/// thousand on an ordinary system, so only a folder of data planted there (`/opt` holding a
/// dataset) is left partly unwalked (and hidden).
const SYSTEM_WALK_BUDGET: usize = 100_000;

/// What a run may read and execute, as the paths of Landlock rules: everything beneath `/` but
/// what [`unreadable`] names, what of the system's folders not every user may read, and the
/// [`crate::files::private_folders`], of which only the parts of `allowed` (the workspace, a
/// program named outside it, the interpreter's folders) — and [`READABLE_DEVICES`]. A home folder is read by an allow list
/// because no list of its secrets is ever complete (another project's `.env`, a tool's login no
/// one listed). Where rules nest, the longest
/// path decides, and at the same path refusing does: a workspace that is the home folder itself
/// still hides the credential stores. A link is judged by where it leads (a link to `/`, into
/// `/dev` or to `~/.ssh` would grant what it leads to).
fn readable(allowed: &Readable) -> Vec<(PathBuf, Option<FileId>)> {
    // Real paths as given, still leading where they did when the caller judged them: one a link
    // now (a folder swapped for a link to the home folder meanwhile) is left out.
    let real = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths.iter().filter(|p| p.canonicalize().is_ok_and(|real| &real == *p)).cloned().collect()
    };
    let (own, mut shared) = (real(&allowed.own), real(&allowed.shared));
    let unreadable = unreadable();
    // Nothing a workspace can point elsewhere opens a credential store (a `.venv/bin/python`
    // linked to `~/.ssh/id_ed25519`, `readable = [".ssh"]` in a workspace that is the home folder).
    shared.retain(|path| !unreadable.iter().any(|hidden| path.starts_with(hidden)));
    let mut rules: Vec<(PathBuf, bool)> = unreadable.into_iter().map(|p| (p, false)).collect();
    let private = crate::files::private_folders();
    // Places beneath the run's own folders are the workspace's to name (an untrusted `readable =
    // ["sub"]`): they make no folder above them needed.
    let needed: Vec<PathBuf> = shared.iter().filter(|p| !own.iter().any(|o| p.starts_with(o))).cloned().collect();
    let hidden = not_for_every_user(&own, &private, &needed);
    let system_folders: Vec<PathBuf> = SYSTEM_FOLDERS.iter().filter_map(|f| Path::new(f).canonicalize().ok()).collect();
    warn_hidden(shared.iter().chain(&system_folders).filter(|path| hidden.paths.contains(path)));
    rules.extend(hidden.paths.iter().map(|p| (p.clone(), false)));
    let root = std::path::Path::new("/");
    let allowed: Vec<PathBuf> = own.into_iter().chain(shared).collect();
    rules.extend(private.into_iter().filter(|h| h != root && !allowed.contains(h)).map(|h| (h, false)));
    rules.extend(allowed.into_iter().map(|p| (p, true)));
    let mut readable = Vec::new();
    readable_beneath(root, &Rules::new(rules), &hidden, &mut readable);
    readable.extend(READABLE_DEVICES.iter().filter_map(|p| PathBuf::from(p).canonicalize().ok()).map(|p| {
        let id = file_id(&p);
        (p, id)
    }));
    readable
}

/// Tells the user, once a process for each, of an interpreter's folder, a `PYTHONPATH` entry, a
/// trusted `readable` place or a whole system folder (`/usr/local` of a group the run is not in)
/// the walk hid: a run needing it fails with the interpreter's own words (`No module named
/// 'encodings'`), which name no folder.
fn warn_hidden<'a>(paths: impl Iterator<Item = &'a PathBuf>) {
    static WARNED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    for path in paths {
        if !warned.contains(path) {
            tracing::warn!(
                "chainsmith sandbox: the run cannot read {}: only some users may read it, a user other than you \
                 and root may change what it holds, or it lies past the entries the sandbox looks at; \
                 `[runtime] readable` (trusted) names a place the run needs there",
                crate::text::printable(&path.display().to_string())
            );
            warned.push(path.clone());
        }
    }
}

/// A file's identity, which a rename keeps: its device and inode.
type FileId = (u64, u64);

fn file_id(path: &std::path::Path) -> Option<FileId> {
    std::fs::metadata(path).ok().map(|meta| id_of(&meta))
}

fn id_of(meta: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Landlock rules granting `access` beneath each of `paths`, real paths [`readable`] judged: each
/// opened once, and granted only where the file opened lies at that very path and is the file
/// judged (where its identity was taken), so no link re-pointed, folder swapped for a link or
/// other file renamed there since the judgement grants another place — and what is renamed
/// afterwards keeps the rule on the file judged.
fn judged_rules(
    paths: Vec<(PathBuf, Option<FileId>)>,
    access: landlock::BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<landlock::PathBeneath<std::fs::File>, landlock::RulesetError>> {
    use std::os::unix::fs::OpenOptionsExt;
    paths.into_iter().filter_map(move |(path, judged)| {
        let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(&path).ok()?;
        let meta = file.metadata().ok()?;
        if crate::files::real_path_of(&file).ok()? != path || judged != Some(id_of(&meta)) {
            return None;
        }
        // A file takes only the rights a file has (Landlock refuses a folder's on it).
        let is_folder = meta.is_dir();
        let access = if is_folder { access } else { access & AccessFs::from_file(LANDLOCK_ABI) };
        Some(Ok(landlock::PathBeneath::new(file, access)))
    })
}

/// The read rules of a run, indexed by path: each path's verdict (refusing at a tie), and for
/// each folder holding rules beneath it, whether one of them grants and one refuses. Asking costs
/// the path's depth, not the number of rules (thousands where `/var/log` holds root-only logs).
struct Rules {
    at: std::collections::HashMap<PathBuf, bool>,
    beneath: std::collections::HashMap<PathBuf, (bool, bool)>,
}

impl Rules {
    fn new(rules: impl IntoIterator<Item = (PathBuf, bool)>) -> Rules {
        let mut at = std::collections::HashMap::new();
        let mut beneath: std::collections::HashMap<PathBuf, (bool, bool)> = std::collections::HashMap::new();
        for (path, may) in rules {
            for folder in path.ancestors().skip(1) {
                let kinds = beneath.entry(folder.to_path_buf()).or_default();
                if may {
                    kinds.0 = true;
                } else {
                    kinds.1 = true;
                }
            }
            at.entry(path).and_modify(|verdict: &mut bool| *verdict &= may).or_insert(may);
        }
        Rules { at, beneath }
    }

    /// Whether a run may read `real`: the rule of the longest path holding it decides; with
    /// none, it may.
    fn may_read(&self, real: &std::path::Path) -> bool {
        real.ancestors().find_map(|folder| self.at.get(folder).copied()).unwrap_or(true)
    }

    /// Whether a rule beneath `real` (not at it) decides otherwise than `may` does for `real`.
    fn mixed(&self, real: &std::path::Path, may: bool) -> bool {
        self.beneath.get(real).is_some_and(|&(grants, refuses)| if may { refuses } else { grants })
    }
}

/// What no run reads (as real paths): `/dev` (another terminal's keystrokes), the system's
/// secrets, the user's [`CREDENTIAL_STORES`] (also where a workspace or the interpreter lies in
/// the home folder), and chainsmith's own secrets wherever the user's folders are (the key
/// that seals the catalog cache; the trust records).
fn unreadable() -> Vec<PathBuf> {
    let mut excluded = vec![PathBuf::from("/dev")];
    excluded.extend(SYSTEM_SECRETS.iter().map(PathBuf::from));
    excluded.extend(ssh_host_keys());
    for home in crate::files::home_folders() {
        excluded.extend(CREDENTIAL_STORES.iter().map(|store| home.join(store)));
    }
    // The user's runtime folder: container registries' logins (`containers/auth.json`), session
    // cookies.
    excluded.extend(std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|d| d.is_absolute()));
    excluded.extend(crate::files::user_cache_dir().map(|dir| dir.join("catalog.key")));
    excluded.extend(crate::trust::Store::open().ok().and_then(|store| store.path.parent().map(PathBuf::from)));
    excluded.into_iter().map(|p| p.canonicalize().unwrap_or(p)).collect()
}

/// The host's private SSH keys (`/etc/ssh/ssh_host_*_key`; their `.pub` halves stay readable).
fn ssh_host_keys() -> Vec<PathBuf> {
    let entries = std::fs::read_dir("/etc/ssh").into_iter().flatten().flatten();
    entries
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("ssh_host_") && name.ends_with("_key")
        })
        .collect()
}

/// What of the [`SYSTEM_FOLDERS`] not every user may read: a file others may not read, a folder
/// others may not list or enter. A run reads what any user may: root's run would otherwise read
/// all of them (root owns most), another user's what its account or groups may. (Another user's
/// file a run of root's reads not at all: the run's user namespace maps no one but its user, and
/// root's powers there reach only files of users it maps.) Not beneath the run's `own` folders
/// (a workspace in `/srv` keeps its `.env`) nor the `private` ones; `needed`, the places the
/// run reads from beside them (the interpreter's folders), are judged as [`Reader::needs`] says.
/// Walked again only when the last walk is a minute old or was of other folders (the server runs
/// many).
fn not_for_every_user(own: &[PathBuf], private: &[PathBuf], needed: &[PathBuf]) -> std::sync::Arc<Hidden> {
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    type Walk = ((Vec<PathBuf>, Vec<PathBuf>), Instant, Arc<Hidden>);
    static LAST: Mutex<Option<Walk>> = Mutex::new(None);
    let mut skipped: Vec<PathBuf> = private.iter().chain(own).cloned().collect();
    skipped.sort();
    skipped.dedup();
    let mut needed = needed.to_vec();
    needed.sort();
    needed.dedup();
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, found)) = last.as_ref().filter(|((was_skipped, was_needed), when, _)| {
        *was_skipped == skipped && *was_needed == needed && when.elapsed() < Duration::from_secs(60)
    }) {
        return found.clone();
    }
    let mut folders: Vec<PathBuf> =
        SYSTEM_FOLDERS.iter().filter_map(|f| std::path::Path::new(f).canonicalize().ok()).collect();
    folders.sort();
    folders.dedup();
    // Once each: `/opt` may be `/var/opt`.
    let nested: Vec<PathBuf> =
        folders.iter().filter(|f| folders.iter().any(|other| other != *f && f.starts_with(other))).cloned().collect();
    folders.retain(|f| !nested.contains(f));
    // `/etc` first and on a budget of its own: what every program reads (certificates, the
    // resolver's files) stays readable whatever a large tree elsewhere leaves unwalked.
    let (etc, rest): (Vec<PathBuf>, Vec<PathBuf>) =
        folders.into_iter().partition(|f| f.as_path() == std::path::Path::new("/etc"));
    let reader = Reader { needs: needed.clone(), ..Reader::this_process() };
    let mut found = hidden_from_others(&reader, &etc, &skipped, SYSTEM_WALK_BUDGET);
    found.merge(hidden_from_others(&reader, &rest, &skipped, SYSTEM_WALK_BUDGET));
    let found = Arc::new(found);
    *last = Some(((skipped, needed), Instant::now(), found.clone()));
    found
}

/// The entries beneath `folders` that others may not read ([`not_for_every_user`]), walking
/// breadth first the folders they may but `skipped`. A file system of another machine (NFS, SMB,
/// FUSE) mounted there is not walked: a data share can hold millions of files. Past `budget`
/// entries what is not walked yet is hidden whole: a large tree planted in `/srv` must not leave
/// `/var/log` unwalked and readable.
fn hidden_from_others(reader: &Reader, folders: &[PathBuf], skipped: &[PathBuf], budget: usize) -> Hidden {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut found: Vec<(PathBuf, FileId)> = Vec::new();
    // Every folder walked, by path, for the identities of the folders holding what is hidden.
    let mut walked: std::collections::HashMap<PathBuf, FileId> = std::collections::HashMap::new();
    let mut left = budget;
    let mut pending = std::collections::VecDeque::new();
    for folder in folders {
        let Ok(meta) = folder.symlink_metadata() else { continue };
        let id = id_of(&meta);
        match judge_folder(folder, &meta, meta.dev(), reader) {
            Folder::Hidden => found.push((folder.clone(), id)),
            Folder::Walked => pending.push_back((folder.clone(), id)),
            Folder::Left => {}
        }
    }
    'walk: while let Some((folder, folder_id)) = pending.pop_front() {
        walked.insert(folder.clone(), folder_id);
        // Listed through the folder opened, and only if it is the folder judged: one renamed in
        // its place meanwhile, or one the run could list but this walk cannot (a path past the
        // length the kernel takes), is hidden, not left unjudged.
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(&folder)
            .ok()
            .filter(|dir| dir.metadata().is_ok_and(|meta| id_of(&meta) == folder_id));
        let entries = opened.and_then(|dir| {
            // Kept open while it is listed: the listing reads through this descriptor.
            let listing = std::fs::read_dir(crate::files::fd_path(&dir)).ok()?;
            Some((dir, listing))
        });
        let Some((_dir, entries)) = entries else {
            found.push((folder, folder_id));
            continue;
        };
        for entry in entries.flatten() {
            if left == 0 {
                found.push((folder, folder_id));
                found.extend(pending.drain(..));
                break 'walk;
            }
            left -= 1;
            // Not followed: a link is judged where it leads, if that is walked.
            let Ok(meta) = entry.metadata() else { continue };
            let path = folder.join(entry.file_name());
            if meta.file_type().is_symlink() || skipped.contains(&path) {
                continue;
            }
            let id = id_of(&meta);
            if meta.is_dir() {
                match judge_folder(&path, &meta, folder_id.0, reader) {
                    Folder::Hidden => found.push((path, id)),
                    Folder::Walked => pending.push_back((path, id)),
                    Folder::Left => {}
                }
            } else if meta.mode() & 0o004 == 0 && reader.may_read(&meta) {
                // What the run could not read anyway needs no rule.
                found.push((path, id));
            }
        }
    }
    let around = found
        .iter()
        .flat_map(|(path, _)| path.ancestors().skip(1).filter_map(|folder| walked.get(folder).copied()))
        .collect();
    let ids = found.iter().map(|(_, id)| *id).collect();
    Hidden { paths: found.into_iter().map(|(path, _)| path).collect(), ids, around }
}

/// What of the system's folders a run may not read ([`not_for_every_user`]): the paths, and the
/// identities of what they name and of the folders holding them, so that a rename after the
/// walk moves no hidden file out of sight of the rules.
#[derive(Default)]
struct Hidden {
    paths: Vec<PathBuf>,
    ids: std::collections::HashSet<FileId>,
    around: std::collections::HashSet<FileId>,
}

impl Hidden {
    /// Adds what another walk hid.
    fn merge(&mut self, more: Hidden) {
        self.paths.extend(more.paths);
        self.ids.extend(more.ids);
        self.around.extend(more.around);
    }
}

/// What [`hidden_from_others`] does with a folder.
enum Folder {
    Hidden,
    Walked,
    Left,
}

/// A folder others may not list and enter hides all it holds (where the run could list or enter
/// it; else it needs no rule); one anyone may fill (`/run/lock`, `/var/crash`) is hidden whole,
/// not walked, so no user can spend the budget there and no crash dump of root's is read; so is
/// one where another user may rename what it holds, or change its mode
/// ([`Reader::others_may_rename_in`]), whatever its mode is now; one of another machine's file
/// systems, mounted beneath one on `device`, is left unwalked.
fn judge_folder(path: &std::path::Path, meta: &std::fs::Metadata, device: u64, reader: &Reader) -> Folder {
    use std::os::unix::fs::MetadataExt;
    let others = meta.mode() & 0o007;
    // First: another user's folder is theirs to open to the run after the walk (`chmod 755`
    // once the walk has left it unwalked as one the run could not enter).
    if others & 0o002 != 0 || reader.others_may_rename_in(path, meta) {
        Folder::Hidden
    } else if others & 0o005 != 0o005 {
        // One the run may enter but not list (`0711`) hides too: names known in advance open.
        if reader.may_read(meta) || others & 0o001 != 0 { Folder::Hidden } else { Folder::Left }
    } else if meta.dev() == device || !another_machines(path) {
        Folder::Walked
    } else {
        Folder::Left
    }
}

/// Whom a run reads as: its user and groups, mapped to themselves in its user namespace.
struct Reader {
    uid: u32,
    groups: Vec<u32>,
    /// The groups holding a user other than root and this one ([`groups_with_others`]).
    shared_groups: std::collections::HashSet<u32>,
    /// The places the run reads from outside its own folders, which the user or a trust line
    /// chose: the user's interpreter's folders (`/usr/local` on a Debian long upgraded, `2775
    /// root:staff`), `PYTHONPATH`, trusted `readable` places outside the workspace. A folder holding one, or held by one, is not hidden for a group the run
    /// is not in ([`Reader::others_may_rename_in`]): the run would not start.
    needs: Vec<PathBuf>,
}

impl Reader {
    fn this_process() -> Reader {
        // SAFETY: getuid/getgid cannot fail; getgroups writes at most the count it is given.
        unsafe {
            let mut groups = vec![libc::getgid()];
            let count = libc::getgroups(0, std::ptr::null_mut());
            if count > 0 {
                let mut more = vec![0; count as usize];
                let got = libc::getgroups(count, more.as_mut_ptr());
                more.truncate(got.max(0) as usize);
                groups.extend(more);
            }
            let uid = libc::getuid();
            let account = |path: &str| crate::files::read_text(Path::new(path), 64 << 20).unwrap_or_default();
            let accounts = Accounts {
                passwd: account("/etc/passwd"),
                group: account("/etc/group"),
                // Readable by root (and the `shadow` group) only: other users' runs go without.
                gshadow: account("/etc/gshadow"),
            };
            let shared_groups = groups_with_others(&accounts, uid);
            Reader { uid, groups, shared_groups, needs: Vec::new() }
        }
    }

    /// Whether a user other than the run's and root may add, remove or rename the entries of
    /// the folder `meta` describes: its owner (who may give itself the right), or a member of its
    /// group where the group may write. What such a user swaps while the walk lists the folder (a
    /// folder of root's private files renamed under a name the walk has just judged, another name
    /// the walk has not reached yet) is never seen by the walk, so nothing the walk found there
    /// is sure: the folder is hidden whole (`/etc/postgresql` of user `postgres`, a user's folder
    /// in `/srv`, `/var/local` of group `staff`).
    ///
    /// A group the run's user is not in may be held by anyone in ways no account file shows
    /// (`newgrp`, a service's `SupplementaryGroups=`, `docker --group-add`, `sudo -g`, a directory
    /// service): its folders are hidden, but one at, above or beneath a place the run
    /// [needs](Reader::needs) (`/usr/local`, and its `bin` of the interpreter's executable).
    /// That one, and one of the run's own groups, is hidden where the accounts show another member
    /// ([`groups_with_others`]); root's and the run's user's own renames are no one else's doing,
    /// so a conda in `/opt` of the user's own group (Jupyter's images, a private group's `umask
    /// 002`) is walked.
    fn others_may_rename_in(&self, path: &Path, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        let group_may_write = meta.mode() & 0o020 != 0;
        let needed = self.needs.iter().any(|n| n.starts_with(path) || path.starts_with(n));
        let unseen_holders = !self.groups.contains(&meta.gid()) && !needed;
        (meta.uid() != 0 && meta.uid() != self.uid)
            || (group_may_write && (unseen_holders || self.shared_groups.contains(&meta.gid())))
    }

    /// Whether the run could read (or list) what `meta` describes by its owner's or group's
    /// permissions: root's run reads every file of root's and root's group whatever its mode
    /// (its powers reach the files of the users its namespace maps).
    fn may_read(&self, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (owner, group) = if meta.is_dir() { (0o500, 0o050) } else { (0o400, 0o040) };
        (self.uid == 0 && meta.uid() == 0 && meta.gid() == 0)
            || (meta.uid() == self.uid && meta.mode() & owner != 0)
            || (self.groups.contains(&meta.gid()) && meta.mode() & group != 0)
    }
}

/// The account files of this machine, as read: `/etc/passwd`, `/etc/group`, `/etc/gshadow` (empty
/// where unreadable).
struct Accounts {
    passwd: String,
    group: String,
    gshadow: String,
}

/// The groups that hold a user other than root and the user `uid`, by the accounts of this machine:
/// a member named in the group's list or in its `gshadow` members or administrators (one no
/// account names counts), an account whose own group it is, or a group with a password in
/// `group` or `gshadow` (anyone who knows it may `newgrp` into it). Accounts only a directory service (LDAP)
/// knows are not seen.
fn groups_with_others(accounts: &Accounts, uid: u32) -> std::collections::HashSet<u32> {
    let fields = |line: &str| -> Vec<String> { line.split(':').map(str::to_string).collect() };
    let users: Vec<Vec<String>> = accounts.passwd.lines().map(fields).filter(|f| f.len() >= 4).collect();
    let ours = |account: &[String]| account[2].parse::<u32>().is_ok_and(|id| id == 0 || id == uid);
    let our_names: std::collections::HashSet<&str> = users.iter().filter(|a| ours(a)).map(|a| a[0].as_str()).collect();
    let others_in =
        |list: &str| list.split(',').map(str::trim).any(|member| !member.is_empty() && !our_names.contains(member));
    let mut shared: std::collections::HashSet<u32> =
        users.iter().filter(|a| !ours(a)).filter_map(|a| a[3].parse().ok()).collect();
    // `!`, `*` or empty: no password, so only the listed members may `newgrp` into the group;
    // `x` in `/etc/group` sends `newgrp` to `gshadow`.
    let password = |field: &str| !(field.is_empty() || field == "x" || field.starts_with(['!', '*']));
    let mut gid_of = std::collections::HashMap::new();
    for entry in accounts.group.lines().map(fields).filter(|f| f.len() >= 4) {
        let Ok(gid) = entry[2].parse::<u32>() else { continue };
        gid_of.insert(entry[0].clone(), gid);
        if password(&entry[1]) || others_in(&entry[3]) {
            shared.insert(gid);
        }
    }
    for entry in accounts.gshadow.lines().map(fields).filter(|f| f.len() >= 4) {
        let Some(&gid) = gid_of.get(&entry[0]) else { continue };
        if password(&entry[1]) || others_in(&entry[2]) || others_in(&entry[3]) {
            shared.insert(gid);
        }
    }
    shared
}

/// Whether the file system mounted at `folder` is another machine's (a network share), a
/// user-space one (FUSE) or an automounter's, whose walk could take minutes.
fn another_machines(folder: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const REMOTE: [u64; 10] = [
        0x0187,      // autofs: walking it would mount what it stands for
        0x6969,      // NFS
        0x517B,      // SMB
        0xFF53_4D42, // CIFS
        0xFE53_4D42, // SMB2
        0x6573_5546, // FUSE
        0x0102_1997, // 9P
        0x00C3_6400, // Ceph
        0x5346_414F, // AFS
        0x7375_7245, // Coda
    ];
    let Ok(path) = std::ffi::CString::new(folder.as_os_str().as_bytes()) else { return true };
    // SAFETY: a plain C struct, all integers, for which zero is a valid value.
    let mut info: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a struct of the size statfs writes.
    if unsafe { libc::statfs(path.as_ptr(), &mut info) } != 0 {
        return true;
    }
    REMOTE.contains(&(info.f_type as u64))
}

/// Adds to `out` what beneath `folder` a run may read ([`Rules::may_read`]): whole entries where no rule
/// beneath decides otherwise, the entries of a real folder where one does.
fn readable_beneath(
    folder: &std::path::Path,
    rules: &Rules,
    hidden: &Hidden,
    out: &mut Vec<(PathBuf, Option<FileId>)>,
) {
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(real) = path.canonicalize() else { continue };
        // Judged by path and by identity: what the walk hid, or held hidden entries, renamed
        // since (a folder of root's private files swapped with a readable one's name) is still
        // hidden, or walked.
        let id = file_id(&real);
        let may = rules.may_read(&real) && !id.is_some_and(|id| hidden.ids.contains(&id));
        let mixed = rules.mixed(&real, may) || (may && id.is_some_and(|id| hidden.around.contains(&id)));
        if !mixed {
            if may {
                // Granted where it was judged: a link's rule would follow the link anew.
                out.push((real, id));
            }
        } else if entry.file_type().is_ok_and(|t| t.is_dir()) && real == path {
            readable_beneath(&path, rules, hidden, out);
        }
        // A link to a folder holding rules of both kinds (`/`, the home folder) grants nothing:
        // the folder itself is walked under its own path.
    }
}

/// The Landlock ruleset of a run: read and execute what [`readable`] grants (`allowed` of the home
/// folders), everything beneath `writable`, no TCP.
fn landlock_ruleset(mode: SandboxMode, writable: &[PathBuf], allowed: &Readable) -> Result<Option<OwnedFd>, String> {
    let level = if mode == SandboxMode::Strict { CompatLevel::HardRequirement } else { CompatLevel::BestEffort };
    let all = AccessFs::from_all(LANDLOCK_ABI);
    let read = AccessFs::from_read(LANDLOCK_ABI);
    let ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(all)
        .and_then(|r| r.handle_access(AccessNet::from_all(LANDLOCK_ABI)))
        .and_then(|r| r.scope(Scope::from_all(LANDLOCK_ABI)))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(judged_rules(readable(allowed), read)))
        .and_then(|r| r.add_rules(judged_rules(writable.iter().map(|p| (p.clone(), file_id(p))).collect(), all)))
        .map_err(|e| e.to_string())?;
    let fd: Option<OwnedFd> = ruleset.into();
    Ok(fd)
}

/// The `RLIMIT_AS` a run gets: `max_memory_mb`, but never above the limit chainsmith itself was
/// given (a shell's `ulimit -v`), which an unprivileged process may not raise: asking more would
/// fail every run with a bare "Operation not permitted".
fn memory_limit(max_memory_mb: u64) -> u64 {
    let wanted = max_memory_mb.saturating_mul(1 << 20);
    hard_limit(libc::RLIMIT_AS).map_or(wanted, |hard| wanted.min(hard))
}

/// The hard limit chainsmith was given on `resource`, which the run's limit may not pass.
fn hard_limit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given.
    (unsafe { libc::getrlimit(resource, &mut current) } == 0).then_some(current.rlim_max)
}

/// The `RLIMIT_NPROC` a run in its own user namespace gets: `max_processes`, but never above the
/// user's hard limit (which only a privileged process may raise, so asking more would fail every
/// run), and none before Linux 5.14, which counted the limit against all of the user's processes,
/// namespaces or not (a desktop session past it would fail every fork of the run).
fn process_limit(max_processes: u64) -> Option<u64> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let mut numbers = release.trim().split(|c: char| !c.is_ascii_digit()).map(|n| n.parse::<u64>().ok());
    let (major, minor) = (numbers.next()??, numbers.next()??);
    if (major, minor) < (5, 14) {
        return None;
    }
    Some(max_processes.max(1).min(hard_limit(libc::RLIMIT_NPROC)?))
}

/// The child of the intermediate process, for forwarding signals to it.
static CONFINED_CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(signal: libc::c_int) {
    let child = CONFINED_CHILD.load(Ordering::Relaxed);
    if child > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe {
            libc::kill(child, signal);
        }
    }
}

/// The size of a run's own `/dev/shm` (tmpfs pages are not counted in `RLIMIT_AS`).
const SHM_OPTIONS: &CStr = c"size=64m,mode=1777";

/// In the forked child: new user, network and PID namespaces (and a mount namespace when
/// `maps.private_mounts`); then a fork whose child is the namespace's init and goes on to exec the
/// program, while this process waits for it and exits as it did (it never returns).
///
/// With private mounts, the init mounts a fresh `/proc` (only the run's own processes: no other
/// process' command line or environment) and a fresh, size-capped `/dev/shm` (gone with the run;
/// nothing written there outlives it or reaches another process). Mount events do not propagate
/// back: `/` is made private first.
///
/// `shm_rule` (a Landlock ruleset and rights) makes the run's own `/dev/shm` (and `scratch`, a
/// size-capped file system over the scratch folder) writable under it.
fn enter_namespaces(
    maps: &IdMaps,
    shm_rule: Option<(RawFd, u64)>,
    scratch: Option<&ScratchMount>,
) -> std::io::Result<()> {
    let mounts = if maps.private_mounts { libc::CLONE_NEWNS } else { 0 };
    // SAFETY: system calls on stack data and the buffers prepared before the fork.
    unsafe {
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET | libc::CLONE_NEWPID | mounts) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        write_proc(c"/proc/self/setgroups", b"deny")?;
        write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
        write_proc(c"/proc/self/gid_map", &maps.gid_map)?;
        let child = libc::fork();
        if child < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if child == 0 {
            // The namespace's init: killed when the intermediate process dies, however it dies
            // (its parent is outside the namespace, so `getppid` cannot tell; should the
            // intermediate die before this line, it died by the group kill that also reaches here).
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if maps.private_mounts {
                mount_own_proc_and_shm(shm_rule, scratch)?;
            }
            return Ok(());
        }
        // The intermediate process holds no descriptor but stdio, so the parent sees the exec
        // succeed (its status pipe closes) and the program's pipes end with the program.
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            // Kernels before 5.9: close them one by one.
            for fd in 3..1024 {
                libc::close(fd);
            }
        }
        CONFINED_CHILD.store(child, Ordering::Relaxed);
        for signal in [libc::SIGUSR1, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::signal(signal, forward_signal as *const () as libc::sighandler_t);
        }
        let mut status = 0;
        loop {
            let rc = libc::waitpid(child, &mut status, 0);
            if rc == child {
                break;
            }
            if rc < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(1);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        let signal = libc::WTERMSIG(status);
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal);
    }
}

/// Marks every descriptor above stderr but `kept` close-on-exec.
///
/// # Safety
/// Runs between fork and exec: system calls on integers alone.
unsafe fn close_on_exec_all_but(kept: RawFd) {
    let kept = kept as u32;
    let mark = |first: u32, last: u32| {
        // SAFETY: close_range and fcntl take plain integers.
        unsafe {
            if first <= last && libc::syscall(libc::SYS_close_range, first, last, libc::CLOSE_RANGE_CLOEXEC) != 0 {
                // Kernels before 5.11: one by one, as far as descriptors usually go.
                for fd in first..=last.min(4095) {
                    libc::fcntl(fd as RawFd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
        }
    };
    if kept > 3 {
        mark(3, kept - 1);
    }
    mark(kept.max(2) + 1, u32::MAX);
}

/// The Landlock ABI's `struct landlock_path_beneath_attr` (packed).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The filesystem rights the run's ruleset handles: those of [`LANDLOCK_ABI`] this kernel knows
/// (a rule may grant no right the ruleset does not handle).
fn handled_fs_access() -> u64 {
    // SAFETY: asks for the ABI version; no pointer is read.
    let version = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32 /* VERSION */)
    };
    let kernel = AccessFs::from_all(ABI::from(version as i32));
    (kernel & AccessFs::from_all(LANDLOCK_ABI)).bits()
}

/// In the init of a new PID and mount namespace: see [`enter_namespaces`].
fn mount_own_proc_and_shm(shm_rule: Option<(RawFd, u64)>, scratch: Option<&ScratchMount>) -> std::io::Result<()> {
    let nothing = std::ptr::null();
    // SAFETY: mount takes NUL-terminated strings made before the fork and null pointers.
    unsafe {
        if libc::mount(nothing, c"/".as_ptr(), nothing, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        devices_open_only_in_dev()?;
        let flags = libc::MS_NOSUID | libc::MS_NODEV;
        if libc::mount(c"tmpfs".as_ptr(), c"/dev/shm".as_ptr(), c"tmpfs".as_ptr(), flags, SHM_OPTIONS.as_ptr().cast())
            != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(scratch) = scratch
            && libc::mount(
                c"tmpfs".as_ptr(),
                scratch.folder.as_ptr(),
                c"tmpfs".as_ptr(),
                flags,
                scratch.options.as_ptr().cast(),
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        if libc::mount(c"proc".as_ptr(), c"/proc".as_ptr(), c"proc".as_ptr(), flags | libc::MS_NOEXEC, std::ptr::null())
            != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        if let Some((ruleset, allowed_access)) = shm_rule {
            allow_beneath(ruleset, allowed_access, c"/dev/shm")?;
            if let Some(scratch) = scratch {
                allow_beneath(ruleset, allowed_access, &scratch.folder)?;
            }
            // The rule made before the fork for `/proc` names the host's, hidden now; the run's
            // own is read like the rest. (Plain bit arithmetic: no allocation.)
            allow_beneath(ruleset, allowed_access & AccessFs::from_read(LANDLOCK_ABI).bits(), c"/proc")?;
        }
    }
    Ok(())
}

/// In the run's mount namespace, a device node opens only beneath `/dev`: one planted in the
/// workspace or anywhere else (`mknod` by root, as an extracted archive carries them) reads as
/// nothing but `EACCES`, which Landlock alone cannot give, having no rule by file type.
///
/// `/dev` is bound onto itself first, so it is a mount of its own even where it is a plain folder
/// of `/`; then every mount gets `nodev`, and everything beneath `/dev` gets it taken back.
/// Taking it back fails (`EPERM`) only where the host's own mount had it already, so that is no
/// loss. Where `nodev` cannot be set (kernels before 5.12 lack `mount_setattr`) the run goes on
/// without this layer. seccomp keeps the program from taking it back.
///
/// # Safety
/// Runs between fork and exec: system calls on constant strings and stack data alone.
unsafe fn devices_open_only_in_dev() -> std::io::Result<()> {
    let nothing = std::ptr::null();
    let set_attr = |path: &CStr, flags: libc::c_int, attr: libc::mount_attr| {
        // SAFETY: a NUL-terminated path and a live `mount_attr` of the size given.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                path.as_ptr(),
                flags,
                &attr,
                std::mem::size_of::<libc::mount_attr>(),
            )
        };
        if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
    };
    let nodev = libc::MOUNT_ATTR_NODEV;
    // SAFETY: mount on constant NUL-terminated strings and null pointers.
    if unsafe { libc::mount(c"/dev".as_ptr(), c"/dev".as_ptr(), nothing, libc::MS_BIND | libc::MS_REC, nothing.cast()) }
        != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    let everywhere = libc::mount_attr { attr_set: nodev, attr_clr: 0, propagation: 0, userns_fd: 0 };
    if set_attr(c"/", libc::AT_RECURSIVE, everywhere).is_err() {
        // Nothing changed: the run goes on without this layer.
        return Ok(());
    }
    let back = libc::mount_attr { attr_set: 0, attr_clr: nodev, propagation: 0, userns_fd: 0 };
    if set_attr(c"/dev", libc::AT_RECURSIVE, back).is_err() {
        // A mount beneath `/dev` had `nodev` in the host (so it keeps it: `EPERM`): taken back one
        // by one, as device nodes may be mounts of their own (containers bind them), each failing
        // only where it had `nodev` already or is no mount at all.
        for device in [c"/dev", c"/dev/pts", c"/dev/null", c"/dev/zero", c"/dev/full", c"/dev/random", c"/dev/urandom"]
        {
            let _ = set_attr(device, 0, back);
        }
    }
    Ok(())
}

/// Adds a Landlock rule to `ruleset`: `allowed_access` beneath `folder` (as mounted now).
///
/// # Safety
/// Runs between fork and exec: system calls on `folder`, made before the fork, alone.
unsafe fn allow_beneath(ruleset: RawFd, allowed_access: u64, folder: &CStr) -> std::io::Result<()> {
    // SAFETY: open/close and the Landlock system call on a NUL-terminated path and stack data.
    unsafe {
        let dir = libc::open(folder.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        if dir < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let rule = PathBeneathAttr { allowed_access, parent_fd: dir };
        let added = libc::syscall(libc::SYS_landlock_add_rule, ruleset, 1u32 /* PATH_BENEATH */, &rule, 0u32);
        let error = std::io::Error::last_os_error();
        libc::close(dir);
        if added != 0 {
            return Err(error);
        }
    }
    Ok(())
}

/// A memory-backed file system of a capped size over the run's scratch folder, in its mount
/// namespace: what the program writes there counts against the cap (`ENOSPC` past it), is private
/// to the run, and is gone with it. Made before the fork.
#[derive(Clone)]
struct ScratchMount {
    folder: std::ffi::CString,
    options: std::ffi::CString,
}

impl ScratchMount {
    fn new(folder: &std::path::Path, max_mb: u64) -> Option<ScratchMount> {
        use std::os::unix::ffi::OsStrExt;
        let folder = std::ffi::CString::new(folder.canonicalize().ok()?.as_os_str().as_bytes()).ok()?;
        let options = std::ffi::CString::new(format!("size={}m,mode=0700", max_mb.max(1))).ok()?;
        Some(ScratchMount { folder, options })
    }
}

fn write_proc(path: &CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if written != data.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn restrict_self(ruleset: i32) -> std::io::Result<()> {
    // SAFETY: prctl and the Landlock system call take plain integers.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    /// A folder to walk, of mode 0755 whatever the umask (under `umask 002` a group-writable root
    /// of a group with other members would be hidden whole).
    fn walked_root() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    #[test]
    fn the_longest_rule_decides_and_refusing_wins_a_tie() {
        let rules = Rules::new([
            (PathBuf::from("/home/u"), false),
            (PathBuf::from("/home/u/ws"), true),
            (PathBuf::from("/home/u/ws/.ssh"), false),
            (PathBuf::from("/srv/x"), true),
            (PathBuf::from("/srv/x"), false),
        ]);
        assert!(rules.may_read(Path::new("/etc/passwd")), "no rule: readable");
        assert!(!rules.may_read(Path::new("/home/u/.bashrc")));
        assert!(rules.may_read(Path::new("/home/u/ws/p.py")));
        assert!(!rules.may_read(Path::new("/home/u/ws/.ssh/id_ed25519")));
        // A path that only shares a prefix of characters is not beneath the rule.
        assert!(rules.may_read(Path::new("/home/u2/notes")));
        assert!(!rules.may_read(Path::new("/srv/x/y")));
        // Where rules of the other kind lie beneath, a folder is walked, not granted whole.
        assert!(rules.mixed(Path::new("/home"), true));
        assert!(rules.mixed(Path::new("/home/u"), false));
        assert!(rules.mixed(Path::new("/home/u/ws"), true));
        assert!(!rules.mixed(Path::new("/home/u/ws/.ssh"), false));
        assert!(!rules.mixed(Path::new("/etc"), true));
    }

    #[test]
    fn what_others_may_not_read_is_found_and_what_they_may_is_walked() {
        let dir = walked_root();
        let root = dir.path();
        let mode =
            |path: &Path, mode: u32| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        std::fs::create_dir_all(root.join("ssl/private")).unwrap();
        std::fs::create_dir_all(root.join("ssl/certs")).unwrap();
        std::fs::create_dir_all(root.join("skipped")).unwrap();
        for (file, bits) in [
            ("ssl/private/host.key", 0o600),
            ("ssl/certs/ca.pem", 0o644),
            ("group-only.conf", 0o640),
            ("passwd", 0o644),
            ("skipped/secret", 0o600),
        ] {
            std::fs::write(root.join(file), "x").unwrap();
            mode(&root.join(file), bits);
        }
        mode(&root.join("ssl/private"), 0o700);
        for folder in ["ssl", "ssl/certs", "skipped"] {
            mode(&root.join(folder), 0o755);
        }
        std::fs::create_dir(root.join("lock")).unwrap();
        std::fs::write(root.join("lock/planted"), "x").unwrap();
        mode(&root.join("lock"), 0o1777);
        std::os::unix::fs::symlink(root.join("ssl/private/host.key"), root.join("link-to-key")).unwrap();
        let mut found =
            hidden_from_others(&Reader::this_process(), &[root.to_path_buf()], &[root.join("skipped")], 100).paths;
        found.sort();
        // The private folder is hidden whole, not walked, and so is one anyone may fill; a link
        // is judged where it leads.
        assert_eq!(found, vec![root.join("group-only.conf"), root.join("lock"), root.join("ssl/private")]);

        // Past the budget, what is not walked yet is hidden whole.
        let found = hidden_from_others(&Reader::this_process(), &[root.to_path_buf(), root.join("ssl")], &[], 0).paths;
        assert_eq!(found, vec![root.to_path_buf(), root.join("ssl")]);
    }

    /// A folder where another user may rename entries is hidden whole: swapped while the walk
    /// lists it, a private folder or file there would never be seen. One of the run's own user
    /// or group is walked.
    #[test]
    fn what_another_user_may_rename_in_is_hidden_whole() {
        let dir = walked_root();
        let root = dir.path();
        for folder in ["own-group", "own/inner"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
            std::fs::write(root.join(folder).join("readme"), "x").unwrap();
        }
        for (folder, mode) in [("own-group", 0o775), ("own", 0o755), ("own/inner", 0o755)] {
            std::fs::set_permissions(root.join(folder), std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let mut reader = Reader::this_process();
        let own_group = std::os::unix::fs::MetadataExt::gid(&std::fs::metadata(root.join("own-group")).unwrap());
        reader.shared_groups.remove(&own_group);
        let mut expected = Vec::new();
        // Another user's folder, one of the run's groups with other members, and one of a group
        // the run is not in (held by no one the accounts show): only root may give one away.
        if crate::files::user_id() == 0 {
            // Closed now, another user's folder is theirs to open after the walk.
            for (folder, owner, group, mode) in [
                ("bobs", 65534, 0, 0o775),
                ("bobs-closed", 65534, 65534, 0o700),
                ("shared-group", 0, 65534, 0o775),
                ("not-our-group", 0, 65533, 0o2775),
                ("needed", 0, 65533, 0o2775),
            ] {
                std::fs::create_dir(root.join(folder)).unwrap();
                std::fs::set_permissions(root.join(folder), std::fs::Permissions::from_mode(mode)).unwrap();
                std::os::unix::fs::chown(root.join(folder), Some(owner), Some(group)).unwrap();
                expected.push(root.join(folder));
            }
            reader.groups.push(65534);
            reader.shared_groups.insert(65534);
            reader.shared_groups.remove(&65533);
            // Where the run's interpreter lies (`/usr/local` of `staff`, its `bin` beside the
            // folder the run needs), the accounts decide.
            std::fs::create_dir(root.join("needed/bin")).unwrap();
            std::fs::set_permissions(root.join("needed/bin"), std::fs::Permissions::from_mode(0o2775)).unwrap();
            std::os::unix::fs::chown(root.join("needed/bin"), Some(0), Some(65533)).unwrap();
            reader.needs.push(root.join("needed"));
            expected.retain(|folder| !folder.ends_with("needed"));
        } else {
            eprintln!("not root: another user's folder is not tried");
        }
        let mut found = hidden_from_others(&reader, &[root.to_path_buf()], &[], 100).paths;
        found.sort();
        expected.sort();
        assert_eq!(found, expected, "the run's own and root's folders are walked");

        // The same group-writable folder, for a run not in its group: whoever holds the group
        // in a way no account file shows may rename there.
        let outsider = Reader { groups: Vec::new(), ..Reader::this_process() };
        assert!(
            hidden_from_others(&outsider, &[root.to_path_buf()], &[], 100).paths.contains(&root.join("own-group")),
            "a group the run is not in hides its folder"
        );
    }

    /// The groups holding another user: by the members a group lists, by the accounts whose
    /// own group it is; root and the run's own user are no others.
    #[test]
    fn groups_with_others_are_read_from_the_accounts() {
        let accounts = Accounts {
            passwd: "root:x:0:0:root:/root:/bin/bash\nme:x:1000:1000::/home/me:/bin/bash\n\
                     postgres:x:105:111::/var/lib/postgresql:/bin/bash\nbroken line\n"
                .into(),
            group: "root:x:0:\nme:x:1000:\nusers:x:100:me,root\nstaff:x:50:me,bob\nadm:x:4:syslog\npostgres:x:111:\n\
                    games:x:60:me\nsrc:x:40:me\nvideo:x:44:me\naudio:$1$salt$hash:29:me\n"
                .into(),
            // `games` may be joined with its password, `src` has another member and `video`
            // another administrator only here; `users` none; `audio` has its password in `group`.
            gshadow: "users:!::me,root\ngames:$6$salt$hash::me\nsrc:*::me,eve\nvideo:!*:bob:me\n".into(),
        };
        let mut shared: Vec<u32> = groups_with_others(&accounts, 1000).into_iter().collect();
        shared.sort();
        assert_eq!(shared, vec![4, 29, 40, 44, 50, 60, 111]);
    }

    /// A rename after the walk (a folder of private files swapped with a readable one's name)
    /// moves nothing hidden into what the rules grant: the hidden entries and the folders
    /// holding them are known by identity too.
    #[test]
    fn what_the_walk_hid_stays_hidden_under_another_name() {
        let dir = walked_root();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/priv")).unwrap();
        std::fs::create_dir_all(root.join("b")).unwrap();
        std::fs::write(root.join("a/priv/secret"), "x").unwrap();
        std::fs::write(root.join("b/readme"), "x").unwrap();
        for (folder, mode) in [("a", 0o755), ("a/priv", 0o700), ("b", 0o755)] {
            std::fs::set_permissions(root.join(folder), std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let hidden = hidden_from_others(&Reader::this_process(), &[root.to_path_buf()], &[], 100);
        assert_eq!(hidden.paths, vec![root.join("a/priv")]);
        std::fs::rename(root.join("a"), root.join("swap")).unwrap();
        std::fs::rename(root.join("b"), root.join("a")).unwrap();
        std::fs::rename(root.join("swap"), root.join("b")).unwrap();
        let rules = Rules::new(hidden.paths.iter().map(|p| (p.clone(), false)));
        let mut granted = Vec::new();
        readable_beneath(root, &rules, &hidden, &mut granted);
        let granted: Vec<PathBuf> = granted.into_iter().map(|(path, _)| path).collect();
        let real = root.canonicalize().unwrap();
        assert!(granted.contains(&real.join("a/readme")), "{granted:?}");
        assert!(!granted.iter().any(|p| real.join("b/priv/secret").starts_with(p)), "{granted:?}");
    }

    /// A writable folder re-linked after it was judged (`[runtime] writable = ["out"]`, trusted,
    /// `out` then pointed at the home folder) gets no rule: the rule is made on the path judged
    /// only while it still leads to itself and is the folder judged.
    #[test]
    fn a_rule_holds_only_on_the_place_judged() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for folder in ["out", "kept", "elsewhere"] {
            std::fs::create_dir(root.join(folder)).unwrap();
        }
        let judged: Vec<(PathBuf, Option<FileId>)> =
            ["out", "kept"].iter().map(|f| root.join(f)).map(|p| (p.clone(), file_id(&p))).collect();
        std::fs::rename(root.join("out"), root.join("out.old")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("out")).unwrap();
        let all = AccessFs::from_all(LANDLOCK_ABI);
        assert_eq!(judged_rules(judged.clone(), all).count(), 1, "only `kept` still leads to itself");
        // Another folder renamed to the judged name is not the folder judged either.
        std::fs::remove_file(root.join("out")).unwrap();
        std::fs::rename(root.join("elsewhere"), root.join("out")).unwrap();
        assert_eq!(judged_rules(judged, all).count(), 1);
    }
}
