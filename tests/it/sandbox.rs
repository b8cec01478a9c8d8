//! Confined runs ([runtime] sandbox): a program reaches its tools through chainsmith and nothing
//! else on the network, sees none of chainsmith's secrets, writes only in its scratch folder and
//! the folders `[runtime] writable` names, and every process it starts ends with the run, a
//! `setsid` daemon included. A blocked action says it was the sandbox.

use std::time::{Duration, Instant};

use crate::support::runtime::{TmdbServer, chainsmith, processes_with, text, workspace};

/// A program that calls a tool, then tries what a confined program may not.
fn probing_program(port: u16, marker: &str) -> String {
    format!(
        r#"import os, socket, subprocess
from chainsmith.tools import tmdb

print("tool:", tmdb.search_person(query="Sofia Coppola")["results"][0]["name"])
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5)
    print("connect: allowed")
except OSError as e:
    print("connect:", "chainsmith sandbox" in str(e))
for path in ["../outside.txt", "out/inside.txt", os.path.join(os.environ["TMPDIR"], "scratch.txt")]:
    try:
        with open(path, "w") as f:
            f.write("x")
        print("write", path, "allowed")
    except OSError as e:
        print("write", path, "chainsmith sandbox" in str(e))
print("secret:", os.environ.get("OPENAI_API_KEY"))
subprocess.Popen(["sh", "-c", "sleep 300 # {marker}"], start_new_session=True)
"#
    )
}

#[test]
fn a_confined_program_reaches_its_tools_and_nothing_else() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "[runtime]\nwritable = [\"out\"]\n");
    let root = ws.path().join("ws");
    // The workspace lives one folder down, so `../outside.txt` is outside it but inside the test's.
    std::fs::create_dir_all(root.join("out")).unwrap();
    for entry in ["chainsmith.toml", "specs"] {
        std::fs::rename(ws.path().join(entry), root.join(entry)).unwrap();
    }
    let marker = format!("chainsmith-sandbox-daemon-{}", std::process::id());
    std::fs::write(root.join("p.py"), probing_program(server.port, &marker)).unwrap();
    // Trusted with its writable folder (which a workspace may not give itself).
    let out = chainsmith(&root, &["--trust", "run", "p.py"], &[("OPENAI_API_KEY", "sk-must-not-leak")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("tool: Bradley Cooper"), "tool calls go through chainsmith: {stdout}");
    assert!(stdout.contains("connect: True"), "a port that is no tool is not reached: {stdout}");
    assert!(stdout.contains("write ../outside.txt True"), "{stdout}");
    assert!(!ws.path().join("outside.txt").exists());
    assert!(stdout.contains("write out/inside.txt allowed"), "[runtime] writable: {stdout}");
    assert!(root.join("out/inside.txt").exists());
    assert!(stdout.contains("scratch.txt allowed"), "the scratch folder (TMPDIR): {stdout}");
    assert!(stdout.contains("secret: None"), "{stdout}");
    assert_eq!(server.requests().as_array().unwrap().len(), 1, "only the tool call reached the server");
    // The daemon went with the run (its namespace ended with the program).
    let deadline = Instant::now() + Duration::from_secs(3);
    while !processes_with(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_with(&marker), Vec::<u32>::new(), "a setsid daemon outlived the run");
}

#[test]
fn sandbox_off_runs_unconfined_memory_is_capped_and_strict_runs_here() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "[runtime]\nsandbox = \"off\"\n");
    let marker = format!("chainsmith-unconfined-daemon-{}", std::process::id());
    std::fs::write(ws.path().join("p.py"), probing_program(server.port, &marker)).unwrap();
    // Only a workspace trusted with it turns the sandbox off.
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("connect: allowed"), "{stdout}");
    assert!(stdout.contains("write ../outside.txt allowed"), "{stdout}");
    assert!(stdout.contains("secret: None"), "the environment is minimal in every mode: {stdout}");
    for pid in processes_with(&marker) {
        // SAFETY: kill takes plain integers.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }

    // The address space is capped: a large allocation fails in the program, the run goes on.
    let ws = workspace(&server.base_url(), false, "[runtime]\nmax_memory_mb = 256\n");
    let program =
        "try:\n    b = bytearray(512 << 20)\n    print('allocated')\nexcept MemoryError:\n    print('MemoryError')\n";
    std::fs::write(ws.path().join("m.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "m.py"], &[]);
    assert_eq!(text(&out.stdout), "MemoryError\n", "{}", text(&out.stderr));

    // This machine grants every layer, so strict runs (elsewhere it refuses, saying why).
    let ws = workspace(&server.base_url(), false, "[runtime]\nsandbox = \"strict\"\n");
    std::fs::write(ws.path().join("q.py"), "import socket\nprint('ran')\n").unwrap();
    let out = chainsmith(ws.path(), &["run", "q.py"], &[]);
    assert_eq!(text(&out.stdout), "ran\n", "{}", text(&out.stderr));
}

#[test]
fn a_chain_sees_only_its_own_processes_and_shared_memory() {
    let ws = workspace("http://127.0.0.1:9", false, "");
    let marker = format!("chainsmith-shm-{}", std::process::id());
    let program = format!(
        r#"import multiprocessing, os
with open("/dev/shm/{marker}", "w") as f:
    f.write("left behind?")
lock = multiprocessing.Lock()  # a POSIX semaphore, in /dev/shm
with lock:
    print("semaphore: ok")
print("processes:", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
try:
    print("pid 1:", open("/proc/1/cmdline").read().split("\0")[0])
except OSError as e:
    print("pid 1:", e)
"#
    );
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("semaphore: ok"), "{stdout}");
    // The program is the init of its own PID namespace, and /proc shows that namespace only: no
    // other process' command line (the user's shell, editor, chainsmith itself).
    assert!(stdout.contains("processes: [1]\n"), "{stdout}");
    assert!(stdout.contains("pid 1: ") && stdout.contains("python"), "{stdout}");
    assert!(!std::path::Path::new("/dev/shm").join(&marker).exists(), "the run's /dev/shm outlived it");
}

/// A descriptor chainsmith was started with (a shell's `exec 9>>file`, a build tool's jobserver
/// pipe, an editor's socket) is not the program's: it could write outside or talk to anything
/// through it, past every check made at open and connect.
#[test]
fn a_descriptor_chainsmith_inherits_does_not_reach_the_program() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let ws = workspace("http://127.0.0.1:9", false, "");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("target.txt");
    std::fs::write(&target, "ORIGINAL\n").unwrap();
    let file = std::fs::OpenOptions::new().append(true).open(&target).unwrap();
    let program = r#"import os
for fd in (0, 9, 10):
    try:
        os.write(fd, b"WRITTEN BY THE CHAIN\n")
        print(fd, "written")
    except OSError as e:
        print(fd, e.strerror)
"#;
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let raw = file.as_raw_fd();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"));
    // Its stdin too, opened for writing as well (`0<>file`).
    let stdin = std::fs::OpenOptions::new().read(true).write(true).open(&target).unwrap();
    command.args(["run", "p.py"]).current_dir(ws.path()).stdin(stdin);
    // SAFETY: dup2 on descriptors this process holds, between fork and exec.
    unsafe {
        command.pre_exec(move || {
            for fd in [9, 10] {
                if libc::dup2(raw, fd) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout,
        "0 Bad file descriptor\n9 Bad file descriptor\n10 Bad file descriptor\n",
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "ORIGINAL\n");
}

/// Of the user's home folder a program reads what a run needs — the workspace, the interpreter,
/// user-site packages — and nothing else: no credential store, however it names it, none of the
/// user's other files (another project's `.env`, `.gitconfig`, notes). A workspace the user
/// never trusted could send them to a toolset of its choosing.
#[test]
fn a_program_reads_nothing_of_the_home_folder_but_what_a_run_needs() {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_str().unwrap();
    let env = [("HOME", home_path), ("XDG_CACHE_HOME", ""), ("XDG_CONFIG_HOME", "")];
    // The workspace lies in the home folder, beside another project.
    let ws = home.path().join("projects/chain");
    std::fs::create_dir_all(ws.parent().unwrap()).unwrap();
    std::fs::rename(workspace("http://127.0.0.1:9", false, "").path(), &ws).unwrap();
    let user_site = std::process::Command::new("python3")
        .args(["-c", "import site; print(site.getusersitepackages())"])
        .env("HOME", home_path)
        .output()
        .unwrap();
    let user_site = text(&user_site.stdout).trim().to_string();
    assert!(user_site.starts_with(home_path), "{user_site}");
    std::fs::create_dir_all(&user_site).unwrap();
    std::fs::write(std::path::Path::new(&user_site).join("usersite_probe.py"), "VALUE = 'from the user site'\n")
        .unwrap();
    for (file, text) in [
        (".ssh/id_ed25519", "PRIVATE KEY"),
        (".aws/credentials", "aws_secret_access_key=x"),
        (".config/gh/hosts.yml", "oauth_token: x"),
        (".cache/chainsmith/catalog.key", "sealing key"),
        (".databrickscfg", "token = dapi-x"),
        (".gitconfig", "[credential]\n\thelper = store"),
        ("projects/other/.env", "STRIPE_KEY=sk_live_x"),
        ("notes.txt", "the user's notes"),
        ("projects/chain/data.txt", "the workspace's data"),
    ] {
        let path = home.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::os::unix::fs::symlink(home.path().join(".ssh"), home.path().join("keys")).unwrap();
    std::os::unix::fs::symlink(home.path().join("projects/other"), ws.join("other")).unwrap();
    let program = r#"import os
home = os.path.expanduser("~")
for name in [".ssh/id_ed25519", "keys/id_ed25519", ".aws/credentials", ".config/gh/hosts.yml",
             ".cache/chainsmith/catalog.key", ".databrickscfg", ".gitconfig", "projects/other/.env",
             "projects/chain/other/.env", "notes.txt", "projects/chain/data.txt"]:
    try:
        open(os.path.join(home, name)).read()
        print(name, "read")
    except OSError as e:
        print(name, e.strerror)
import usersite_probe
print(usersite_probe.VALUE)
"#;
    std::fs::write(ws.join("p.py"), program).unwrap();
    let out = chainsmith(&ws, &["run", "p.py"], &env);
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout,
        ".ssh/id_ed25519 Permission denied\nkeys/id_ed25519 Permission denied\n.aws/credentials Permission denied\n\
         .config/gh/hosts.yml Permission denied\n.cache/chainsmith/catalog.key Permission denied\n\
         .databrickscfg Permission denied\n.gitconfig Permission denied\nprojects/other/.env Permission denied\n\
         projects/chain/other/.env Permission denied\nnotes.txt Permission denied\nprojects/chain/data.txt read\n\
         from the user site\n",
        "{}",
        text(&out.stderr)
    );

    // A program in the home folder itself, and chainsmith started there with `PYTHONPATH=.`,
    // open no more of it: the program's own file is read, the rest of the folder not.
    std::fs::write(
        home.path().join("try.py"),
        program.replace("import usersite_probe\nprint(usersite_probe.VALUE)\n", ""),
    )
    .unwrap();
    let try_py = home.path().join("try.py");
    let mut with_path = env.to_vec();
    with_path.push(("PYTHONPATH", "."));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(["--root", ws.to_str().unwrap(), "run", try_py.to_str().unwrap()])
        .current_dir(home.path())
        .envs(with_path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(stdout.contains("notes.txt Permission denied\n"), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("projects/other/.env Permission denied\n"), "{stdout}");

    // A workspace that is the home folder itself still hides the credential stores.
    std::fs::copy(ws.join("chainsmith.toml"), home.path().join("chainsmith.toml")).unwrap();
    std::fs::create_dir_all(home.path().join("specs")).unwrap();
    std::fs::copy(ws.join("specs/tmdb_oas.json"), home.path().join("specs/tmdb_oas.json")).unwrap();
    std::fs::write(home.path().join("p.py"), program).unwrap();
    let out = chainsmith(home.path(), &["run", "p.py"], &env);
    let stdout = text(&out.stdout);
    for store in [".ssh/id_ed25519", "keys/id_ed25519", ".aws/credentials", ".cache/chainsmith/catalog.key"] {
        assert!(stdout.contains(&format!("{store} Permission denied\n")), "{stdout}\n{}", text(&out.stderr));
    }
    assert!(stdout.contains("notes.txt read\n"), "{stdout}");
}

/// The system's secrets stay unread by a run of root's, which the file's mode alone would let.
#[test]
fn a_program_of_roots_reads_no_password_hash() {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/etc/shadow").exists() {
        eprintln!("skipped: only root may read /etc/shadow at all");
        return;
    }
    let ws = workspace("http://127.0.0.1:9", false, "");
    std::fs::write(
        ws.path().join("p.py"),
        "try:\n    open('/etc/shadow').read()\n    print('read')\nexcept OSError as e:\n    print(e.strerror)\nprint(len(open('/etc/passwd').read()) > 0)\n",
    )
    .unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    assert_eq!(text(&out.stdout), "Permission denied\nTrue\n", "{}", text(&out.stderr));
}

/// Of the system's folders a run of root's reads what every user may: root owns `/etc/ssl/private`,
/// a database's configuration, an administrator's files in `/opt`, and could read them all.
#[test]
fn a_program_of_roots_reads_what_every_user_may_and_no_more() {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root may plant files in /opt, and only root's run reads them anyway");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let planted = tempfile::Builder::new().prefix("chainsmith-test-").tempdir_in("/opt").unwrap();
    let mode = |path: &std::path::Path, bits: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits)).unwrap();
    };
    mode(planted.path(), 0o755);
    std::fs::create_dir(planted.path().join("private")).unwrap();
    for (file, bits) in [("private/site.key", 0o644), ("db.conf", 0o600), ("group.conf", 0o640), ("README", 0o644)] {
        std::fs::write(planted.path().join(file), file).unwrap();
        mode(&planted.path().join(file), bits);
    }
    mode(&planted.path().join("private"), 0o700);
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = format!(
        "import os\nfor name in ['private/site.key', 'db.conf', 'group.conf', 'README']:\n    try:\n        \
         print(name, open(os.path.join({:?}, name)).read())\n    except OSError as e:\n        print(name, e.strerror)\n",
        planted.path()
    );
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    assert_eq!(
        text(&out.stdout),
        "private/site.key Permission denied\ndb.conf Permission denied\ngroup.conf Permission denied\nREADME README\n",
        "{}",
        text(&out.stderr)
    );
    // A folder the run needs (here on `PYTHONPATH`) but may not read is named, not left to the
    // interpreter's `No module named` alone.
    let private = planted.path().join("private");
    std::fs::write(private.join("helper.py"), "X = 1\n").unwrap();
    std::fs::write(ws.path().join("q.py"), "import helper\n").unwrap();
    let out = chainsmith(ws.path(), &["run", "q.py"], &[("PYTHONPATH", private.to_str().unwrap())]);
    let said = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(said.contains(&format!("the run cannot read {}", private.display())), "{said}");
}

/// A workspace in a group-writable system folder of a group the run is not in (`/usr/local/src`
/// of `staff`) may not name a place of its own (`readable = ["sub"]`, no trust line) to have the
/// folder above it walked: a holder of the group could race that walk.
#[test]
fn a_workspace_names_no_place_that_opens_the_folder_above_it() {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root may give a folder in /opt to another group");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let shared = tempfile::Builder::new().prefix("chainsmith-test-").tempdir_in("/opt").unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o2775)).unwrap();
    std::os::unix::fs::chown(shared.path(), Some(0), Some(65533)).unwrap();
    std::fs::write(shared.path().join("top.txt"), "beside the workspace").unwrap();
    let ws = shared.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("chainsmith.toml"), "[runtime]\nreadable = [\"sub\"]\n").unwrap();
    std::fs::write(
        ws.join("p.py"),
        "try:\n    print(open('../top.txt').read())\nexcept OSError as e:\n    print(e.strerror)\n",
    )
    .unwrap();
    let out = chainsmith(&ws, &["run", "p.py"], &[]);
    assert_eq!(text(&out.stdout), "Permission denied\n", "{}", text(&out.stderr));
}

/// A program of the workspace that is a link out of it (to `~/.ssh/id_ed25519`) does not run: the
/// run would be granted the file it leads to, and a module the workspace ships could read it.
#[test]
fn a_program_linked_out_of_the_workspace_does_not_run() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("id_ed25519"), "PRIVATE KEY").unwrap();
    let ws = workspace("http://127.0.0.1:9", false, "");
    std::os::unix::fs::symlink(outside.path().join("id_ed25519"), ws.path().join("tool.py")).unwrap();
    let out = chainsmith(ws.path(), &["run", "tool.py"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert!(text(&out.stderr).contains("tool.py leads outside the workspace"), "{}", text(&out.stderr));
    // The root spelt another way, and `fix`, which hands the program's text to the run, refuse
    // it too (both read it before; `fix` ran it, and a `traceback.py` of the workspace sent it on).
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    let spelled = ws.path().join("sub/..").display().to_string();
    for args in [vec!["run", "--root", &spelled, "tool.py"], vec!["fix", "tool.py"]] {
        let out = chainsmith(ws.path(), &args, &[]);
        let refused = if args[0] == "fix" { 2 } else { 1 };
        assert_eq!((out.status.code(), text(&out.stdout)), (Some(refused), String::new()), "{args:?}");
        let said = text(&out.stderr);
        assert!(
            said.contains("tool.py leads outside the workspace") && !said.contains("PRIVATE KEY"),
            "{args:?}: {said}"
        );
    }
    // `..` after a link is read as the shell's `cd` reads it: `lnk/..` is the workspace, not the
    // folder above where `lnk` leads (which holds the file `tool.py` leads to, and would have
    // taken the run's trace).
    std::fs::create_dir(outside.path().join("project")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("project"), ws.path().join("lnk")).unwrap();
    let out = chainsmith(ws.path(), &["run", "--root", "lnk/..", "tool.py"], &[]);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(1), String::new()));
    assert!(text(&out.stderr).contains("tool.py leads outside the workspace"), "{}", text(&out.stderr));
    assert!(!outside.path().join(".chainsmith").exists(), "nothing is written where the link leads");
}

/// The temporary folders hold other programs' private files (a Kerberos ticket cache, another
/// run's folder): a program reads there only its own, and writes its scratch files.
#[test]
fn a_program_reads_nothing_of_the_temporary_folders_but_its_own() {
    let ticket = tempfile::Builder::new().prefix("krb5cc_").tempfile().unwrap();
    std::fs::write(ticket.path(), "a Kerberos ticket").unwrap();
    let beside = tempfile::tempdir().unwrap();
    std::fs::write(beside.path().join("notes.txt"), "another program's file").unwrap();
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = format!(
        "import tempfile\nfor path in [{:?}, {:?}]:\n    try:\n        print(open(path).read())\n    \
         except OSError as e:\n        print(e.strerror)\nwith tempfile.NamedTemporaryFile('w+') as f:\n    \
         f.write('scratch')\n    f.seek(0)\n    print(f.read())\n",
        ticket.path(),
        beside.path().join("notes.txt")
    );
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    assert_eq!(text(&out.stdout), "Permission denied\nPermission denied\nscratch\n", "{}", text(&out.stderr));
    // Uncaught, the refusal says how a run may read it.
    std::fs::write(ws.path().join("p.py"), format!("open({:?}).read()\n", ticket.path())).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    let said = text(&out.stderr);
    assert!(
        said.contains("Permission denied") && said.contains("list the path in [runtime] readable to read it"),
        "{said}"
    );
}

/// A device node planted in the workspace (an archive extracted by root carries them; only root
/// may make one) opens for nothing; the ones beneath `/dev` a program needs still work.
#[test]
fn a_device_node_outside_dev_opens_for_nothing() {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can make the device node a hostile archive would carry");
        return;
    }
    let ws = workspace("http://127.0.0.1:9", false, "");
    let node = std::ffi::CString::new(ws.path().join("planted-zero").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; the node is the zero device's (1, 5), harmless if it opened.
    let made = unsafe { libc::mknod(node.as_ptr(), libc::S_IFCHR | 0o644, libc::makedev(1, 5)) };
    assert_eq!(made, 0, "{}", std::io::Error::last_os_error());
    let program = r#"for path in ["planted-zero", "/dev/zero", "/dev/urandom"]:
    try:
        with open(path, "rb") as f:
            print(path, len(f.read(4)))
    except OSError as e:
        print(path, e.strerror)
with open("/dev/null", "w") as f:
    f.write("x")
    print("/dev/null writable")
# Root in the run's user namespace, the program may not take `nodev` back.
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("QQQQ", 0, 4, 0, 0))
rc = libc.syscall(442, -100, b"/", 0x8000, attr, 32)
print("mount_setattr", rc, ctypes.get_errno())
"#;
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("planted-zero Permission denied\n"), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("/dev/zero 4\n/dev/urandom 4\n/dev/null writable"), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains(&format!("mount_setattr -1 {}", libc::EPERM)), "{stdout}");
}

/// The scratch folder holds `[runtime] max_scratch_mb`: past it a write fails (`ENOSPC`) instead
/// of filling the disk; the file chainsmith reads back (where the program is, on a timeout) lies
/// outside it and stays readable.
#[test]
fn the_scratch_folder_is_capped() {
    let ws = workspace("http://127.0.0.1:9", false, "[runtime]\nmax_scratch_mb = 2\n");
    let program = r#"import os
path = os.path.join(os.environ["TMPDIR"], "big.bin")
with open(path, "wb") as f:
    f.write(b"x" * (1 << 20))
    f.flush()
    print("1 MiB: ok")
    try:
        f.write(b"x" * (4 << 20))
        f.flush()
        print("5 MiB: ok")
    except OSError as e:
        print("5 MiB:", e.strerror)
"#;
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("1 MiB: ok"), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("5 MiB: No space left on device"), "{stdout}\n{}", text(&out.stderr));
}

/// A pseudo-terminal: (the controlling side, the terminal a program is given).
fn pseudo_terminal() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut controller, mut terminal) = (0, 0);
    // SAFETY: openpty writes two descriptors into the integers it is given.
    let rc = unsafe {
        libc::openpty(&mut controller, &mut terminal, std::ptr::null_mut(), std::ptr::null(), std::ptr::null())
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // Neither end reaches a program but as the descriptor it is given: a chainsmith holding the
    // controlling side would wait on its own terminal forever.
    for fd in [controller, terminal] {
        // SAFETY: fcntl on a descriptor just opened.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both descriptors were just opened and are owned here.
    unsafe { (std::os::fd::OwnedFd::from_raw_fd(controller), std::os::fd::OwnedFd::from_raw_fd(terminal)) }
}

/// A read of another terminal takes its keystrokes (a password typed there while the chain runs):
/// the chain reads no device but the null device and the random sources.
#[test]
fn a_chain_cannot_read_another_terminal() {
    use std::os::fd::AsRawFd;
    let (_controller, terminal) = pseudo_terminal();
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: ttyname_r writes a NUL-terminated name into the buffer it is given.
    let rc = unsafe { libc::ttyname_r(terminal.as_raw_fd(), name.as_mut_ptr(), name.len()) };
    assert_eq!(rc, 0, "ttyname_r");
    // SAFETY: ttyname_r wrote a NUL-terminated string.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = format!(
        r#"import os
for path in ["{name}", "/dev/null", "/dev/urandom", "/etc/hostname"]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
        print(path, "opened")
    except OSError as e:
        print(path, "refused", e.strerror)
"#
    );
    std::fs::write(ws.path().join("pts.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "pts.py"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains(&format!("{name} refused")), "{stdout}");
    for readable in ["/dev/null", "/dev/urandom", "/etc/hostname"] {
        assert!(stdout.contains(&format!("{readable} opened")), "{stdout}");
    }
}

#[test]
fn a_chain_cannot_type_into_the_users_terminal() {
    use std::os::unix::process::CommandExt;
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = r#"import errno, fcntl, os, termios
def try_typing(name, open_it):
    try:
        fd = open_it()
        fcntl.ioctl(fd, termios.TIOCSTI, b"x")
        print(name, "typed")
    except OSError as e:
        print(name, "refused", errno.errorcode.get(e.errno))
try_typing("/dev/tty", lambda: os.open("/dev/tty", os.O_RDWR))
try_typing("stdin", lambda: 0)
import struct
for name, request, argument in [
    ("TIOCLINUX", termios.TIOCLINUX, b"\x02"),
    # What would outlive the run: the null line discipline, output stopped, exclusive mode,
    # the user's typed-ahead input discarded.
    ("TIOCSETD", termios.TIOCSETD, struct.pack("i", 27)),
    ("TCXONC", termios.TCXONC, termios.TCOOFF),
    ("TIOCEXCL", termios.TIOCEXCL, 0),
    ("TCFLSH", termios.TCFLSH, termios.TCIFLUSH),
    ("TIOCSWINSZ", termios.TIOCSWINSZ, struct.pack("HHHH", 5, 7, 0, 0)),
]:
    try:
        fcntl.ioctl(0, request, argument)
        print(name, "allowed")
    except OSError as e:
        print(name, "refused", errno.errorcode.get(e.errno))
"#;
    std::fs::write(ws.path().join("tty.py"), program).unwrap();
    // `chainsmith run` in a terminal it controls, as from a shell.
    let (_controller, terminal) = pseudo_terminal();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"));
    command.args(["run", "tty.py"]).current_dir(ws.path()).stdin(terminal);
    // SAFETY: setsid and ioctl are plain system calls in the child before exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("/dev/tty refused ENXIO"), "the chain has no controlling terminal: {stdout}");
    assert!(stdout.contains("stdin refused EPERM"), "the terminal it was given refuses keystrokes: {stdout}");
    for request in ["TIOCLINUX", "TIOCSETD", "TCXONC", "TIOCEXCL", "TCFLSH", "TIOCSWINSZ"] {
        assert!(stdout.contains(&format!("{request} refused EPERM")), "{request}: {stdout}");
    }
    assert!(!stdout.contains("typed"), "{stdout}");
}

/// A run started in the background (`chainsmith run p.py &`) gives its program no terminal: in a
/// session of its own it is beyond job control, and would read what the user types to the shell.
#[test]
fn a_run_in_the_background_reads_nothing_the_user_types() {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let ws = workspace("http://127.0.0.1:9", false, "");
    std::fs::write(ws.path().join("p.py"), "import sys\nprint('read:', repr(sys.stdin.readline()))\n").unwrap();
    let (controller, terminal) = pseudo_terminal();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"));
    command.args(["run", "p.py"]).current_dir(ws.path()).stdin(terminal);
    // SAFETY: system calls in the child before exec: chainsmith's terminal is given to another
    // process group (a shell's foreground job), which sleeps until the terminal hangs up.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let foreground = libc::fork();
            if foreground == 0 {
                libc::setpgid(0, 0);
                libc::sleep(20);
                libc::_exit(0);
            }
            libc::setpgid(foreground, foreground);
            if libc::tcsetpgrp(0, foreground) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut controller = std::fs::File::from(controller);
    controller.write_all(b"my-sudo-password\n").unwrap();
    let out = command.output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(stdout, "read: ''\n", "{}", text(&out.stderr));
}

/// `chainsmith run p.py` as a shell's foreground job in a pseudo-terminal, with the shell's job
/// control at hand: [`ShellJob::background`] is Ctrl-Z then `bg`, [`ShellJob::foreground`] is `fg`.
struct ShellJob {
    child: std::process::Child,
    pid: i32,
    lines: std::sync::mpsc::Receiver<String>,
    typed: std::fs::File,
    controller: std::os::fd::OwnedFd,
    job_control: Option<std::fs::File>,
    _workspace: tempfile::TempDir,
}

impl ShellJob {
    fn start(program: &str) -> ShellJob {
        use std::io::BufRead;
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        use std::os::unix::process::CommandExt;
        let ws = workspace("http://127.0.0.1:9", false, "");
        std::fs::write(ws.path().join("p.py"), program).unwrap();
        let (controller, terminal) = pseudo_terminal();
        // The shell's part: a process of its own group that takes the terminal's foreground at
        // the first byte on `job_control` (`bg`), gives it back to chainsmith at the second
        // (`fg`), and ends when the pipe closes.
        let mut pipe = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array it is given.
        assert_eq!(unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both were just opened and are owned here.
        let (job_control_read, job_control) = unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
        let shell_reads = job_control_read.as_raw_fd();
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"));
        command
            .args(["run", "p.py"])
            .current_dir(ws.path())
            .stdin(terminal)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // SAFETY: system calls in the child before exec, on integers and a stack byte.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::fork() == 0 {
                    // Only the terminal and its end of the pipe: `spawn` waits for the end of a
                    // descriptor every copy of this process holds, and the test for its output's.
                    for fd in 1..1024 {
                        if fd != shell_reads {
                            libc::close(fd);
                        }
                    }
                    libc::setpgid(0, 0);
                    libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                    let mut byte = 0u8;
                    let mut take = [libc::getpid(), libc::getppid()].into_iter();
                    while libc::read(shell_reads, (&raw mut byte).cast(), 1) == 1 {
                        if let Some(group) = take.next() {
                            libc::tcsetpgrp(0, group);
                        }
                    }
                    libc::_exit(0);
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        drop(job_control_read);
        let (lines_tx, lines) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        let typed = std::fs::File::from(controller.try_clone().unwrap());
        let pid = child.id() as i32;
        ShellJob {
            child,
            pid,
            lines,
            typed,
            controller,
            job_control: Some(std::fs::File::from(job_control)),
            _workspace: ws,
        }
    }

    fn expect(&self, wanted: &str) {
        let line = self.lines.recv_timeout(Duration::from_secs(30));
        assert_eq!(line.as_deref(), Ok(wanted));
    }

    fn type_line(&mut self, line: &str) {
        use std::io::Write;
        self.typed.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    fn state(&self) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next())
    }

    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let until = Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(Instant::now() < until, "{what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Ctrl-Z, then `bg`: the shell takes the terminal and continues chainsmith.
    fn background(&mut self) {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(self.pid, libc::SIGTSTP) };
        ShellJob::wait_for("chainsmith stops on Ctrl-Z", || self.state() == Some('T'));
        self.job_control.as_mut().unwrap().write_all(b"b").unwrap();
        let controller = self.controller.as_raw_fd();
        // SAFETY: tcgetpgrp only reads the terminal's foreground group.
        ShellJob::wait_for("the shell has the terminal", || unsafe { libc::tcgetpgrp(controller) } != self.pid);
        // SAFETY: as above.
        unsafe { libc::kill(self.pid, libc::SIGCONT) };
        ShellJob::wait_for("chainsmith goes on in the background", || self.state() != Some('T'));
    }

    /// `fg`: chainsmith has the terminal again.
    fn foreground(&mut self) {
        use std::io::Write;
        self.job_control.as_mut().unwrap().write_all(b"f").unwrap();
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(self.pid, libc::SIGCONT) };
    }

    /// Waits for chainsmith's end: its exit status and what it wrote to stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.job_control.take());
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut self.child.stderr.take().unwrap(), &mut stderr).unwrap();
        (status.code(), stderr)
    }
}

/// Ctrl-Z stops the run with chainsmith: continued in the background (`bg`), the program would
/// otherwise read what the user types to the shell. It goes on once chainsmith is in the
/// foreground again (`fg`), and reads what was typed for it.
#[test]
fn a_stopped_run_reads_nothing_until_it_is_in_the_foreground_again() {
    let mut job = ShellJob::start(
        "import sys\nprint('ready', flush=True)\nfor line in sys.stdin:\n    print('read:', line.strip(), flush=True)\n",
    );
    job.expect("ready");
    job.type_line("first");
    job.expect("read: first");
    job.background();
    job.type_line("my-sudo-password");
    assert!(
        job.lines.recv_timeout(Duration::from_secs(2)).is_err(),
        "the program read what was typed to the shell while chainsmith was in the background"
    );
    job.foreground();
    job.expect("read: my-sudo-password");
    // Ctrl-D: the end of the program's input.
    std::io::Write::write_all(&mut job.typed, &[4]).unwrap();
    let (status, stderr) = job.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("stays stopped while in the background"), "{stderr}");
}

/// A run whose processes keep continuing each other (`kill(-1, SIGCONT)` from sessions of their
/// own), or have the kernel continue them later, is stopped all the same, or ended: nothing of it
/// reads the terminal in the background.
#[test]
fn processes_continuing_each_other_do_not_outrun_ctrl_z() {
    let program = r#"import os, signal, sys, time
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGCONT, lambda *a: None)
    while True:
        try:
            print("read:", os.read(0, 100), flush=True)
        except InterruptedError:
            pass
for _ in range(8):
    if os.fork() == 0:
        os.setsid()
        while True:
            try:
                os.kill(-1, signal.SIGCONT)
            except OSError:
                pass
print("ready", flush=True)
time.sleep(60)
"#;
    // A process whose main thread ended shows as a zombie while another thread reads on.
    let exit_main_thread = r#"import ctypes, os, threading
def read():
    print("ready", flush=True)
    while True:
        print("read:", os.read(0, 100), flush=True)
threading.Thread(target=read).start()
ctypes.CDLL(None).syscall({"x86_64": 60, "aarch64": 93}[os.uname().machine], 0)
"#;
    // Readers the kernel itself would continue once every process is stopped: by a timer, and by
    // the terminal when the user types (`O_ASYNC` input signalling SIGCONT).
    let continued_by_the_kernel = r#"import ctypes, fcntl, os, signal, threading, time
libc = ctypes.CDLL(None, use_errno=True)
def reader():
    while True:
        try:
            print("read:", os.read(0, 100), flush=True)
        except InterruptedError:
            pass
if os.fork() == 0:
    os.setsid()
    class SigEvent(ctypes.Structure):
        _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int), ("pad", ctypes.c_byte * 48)]
    event, timer = SigEvent(signo=signal.SIGCONT, notify=0), ctypes.c_void_p()
    libc.timer_create(1, ctypes.byref(event), ctypes.byref(timer))
    def rearm():
        while True:
            libc.timer_settime(timer, 0, ctypes.byref((ctypes.c_long * 4)(0, 0, 1, 0)), None)
            time.sleep(0.05)
    threading.Thread(target=rearm, daemon=True).start()
    reader()
if os.fork() == 0:
    os.setsid()
    try:
        # O_ASYNC first: on a terminal it resets the owner to the foreground group.
        fcntl.fcntl(0, fcntl.F_SETFL, fcntl.fcntl(0, fcntl.F_GETFL) | os.O_ASYNC)
        fcntl.fcntl(0, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(0, 10, signal.SIGCONT)
    except OSError:
        pass
    reader()
time.sleep(0.5)
print("ready", flush=True)
time.sleep(60)
"#;
    for program in [program, program, program, exit_main_thread, continued_by_the_kernel] {
        let mut job = ShellJob::start(program);
        job.expect("ready");
        job.background();
        job.type_line("my-sudo-password");
        // Past the timer's second, the typed line is still unread.
        let read = job.lines.recv_timeout(Duration::from_secs(3));
        assert!(read.is_err(), "read in the background: {read:?}");
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(job.pid, libc::SIGTERM) };
        let (status, stderr) = job.finish();
        assert_ne!(status, Some(0), "{stderr}");
    }
}

/// What would have the kernel continue a stopped run fails with `EPERM`; a parent-death SIGKILL,
/// which Go and Chromium set on their children, still works.
#[test]
fn a_program_cannot_arm_the_kernel_to_continue_it() {
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = r#"import ctypes, fcntl, os, signal
libc = ctypes.CDLL(None, use_errno=True)
event = (ctypes.c_int * 16)(0, 0, signal.SIGCONT, 0)
timer = ctypes.c_void_p()
print("timer_create", libc.timer_create(1, event, ctypes.byref(timer)), ctypes.get_errno())
r, w = os.pipe()
for signo in (signal.SIGCONT, signal.SIGKILL, signal.SIGIO):
    try:
        fcntl.fcntl(r, 10, signo)
        print("F_SETSIG", signo, "ok")
    except OSError as e:
        print("F_SETSIG", signo, e.strerror)
for signo in (signal.SIGCONT, signal.SIGKILL):
    rc = libc.prctl(1, signo, 0, 0, 0)
    print("PDEATHSIG", signo, "ok" if rc == 0 else os.strerror(ctypes.get_errno()))
"#;
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    assert_eq!(
        text(&out.stdout),
        "timer_create -1 1\nF_SETSIG 18 Operation not permitted\nF_SETSIG 9 Operation not permitted\nF_SETSIG 29 ok\n\
         PDEATHSIG 18 Operation not permitted\nPDEATHSIG 9 ok\n",
        "{}",
        text(&out.stderr)
    );
}

/// The run shares chainsmith's session keyring (a Kerberos `KEYRING:` cache, a token stored with
/// `keyctl`): it may neither read it nor add to it.
#[test]
fn a_program_reaches_no_keyring() {
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = r#"import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
session = ctypes.c_long(-3)
print("keyctl", libc.syscall(keyctl, 0, session, 0), os.strerror(ctypes.get_errno()))
print("add_key", libc.syscall(add_key, b"user", b"planted", b"x", 1, session), os.strerror(ctypes.get_errno()))
"#;
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    assert_eq!(
        text(&out.stdout),
        "keyctl -1 Operation not permitted\nadd_key -1 Operation not permitted\n",
        "{}",
        text(&out.stderr)
    );
}

/// A program may make no user namespace of its own (every capability inside it, and the kernel
/// that only root could reach before): not with `unshare`, not with `clone`; `clone3`, whose flags
/// no filter can read, is absent, and threads and processes are still made (with `clone`).
#[test]
fn a_program_makes_no_user_namespace_but_threads_and_processes() {
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = r#"import ctypes, os, platform, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
print("unshare", libc.unshare(CLONE_NEWUSER), os.strerror(ctypes.get_errno()))
clone, clone3 = {"x86_64": (56, 435), "aarch64": (220, 435)}[platform.machine()]
pid = libc.syscall(clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
if pid == 0:
    os._exit(0)
print("clone", pid, os.strerror(ctypes.get_errno()))
print("clone3", libc.syscall(clone3, 0, 0), os.strerror(ctypes.get_errno()))
seen = []
thread = threading.Thread(target=lambda: seen.append("thread"))
thread.start()
thread.join()
print(*seen, subprocess.run(["echo", "process"], capture_output=True, text=True).stdout.strip())
"#;
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    let shown = text(&out.stdout);
    assert!(shown.ends_with("clone3 -1 Function not implemented\nthread process\n"), "{shown}{}", text(&out.stderr));
    // Where this machine lets no one make a user namespace, a refusal inside the run proves nothing.
    let here = std::process::Command::new("python3")
        .args(["-c", "import ctypes; print(ctypes.CDLL(None).unshare(0x10000000))"])
        .output()
        .unwrap();
    if text(&here.stdout).trim() != "0" {
        eprintln!("this machine refuses user namespaces to everyone: only clone3's answer shows the filter");
        return;
    }
    assert!(
        shown.starts_with("unshare -1 Operation not permitted\nclone -1 Operation not permitted\n"),
        "{shown}{}",
        text(&out.stderr)
    );
}

/// What a program prints reaches the user's terminal with its colours but without other escape
/// sequences: set the clipboard (OSC 52) or ask the terminal for a report it would answer by
/// typing into the shell's input, and it would act after the run. A pipe gets the output as written.
#[test]
fn a_programs_output_reaches_a_terminal_without_its_escape_sequences() {
    use std::io::Read;
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = "print('\\x1b[31mred\\x1b[0m \\x1b]52;c;Y3VybCBldmls\\x07 \\x1b[6n', flush=True)\n";
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let (controller, terminal) = pseudo_terminal();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(["run", "p.py"])
        .current_dir(ws.path())
        .stdin(std::process::Stdio::null())
        .stdout(terminal)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let mut shown = vec![0u8; 4096];
    let read = std::fs::File::from(controller).read(&mut shown).unwrap();
    let shown = String::from_utf8_lossy(&shown[..read]).into_owned();
    assert!(shown.starts_with("\x1b[31mred\x1b[0m \\u{1b}]52;c;Y3VybCBldmls\\u{7} \\u{1b}[6n"), "{shown:?}");
    let piped = chainsmith(ws.path(), &["run", "p.py"], &[]);
    assert!(text(&piped.stdout).contains("\x1b]52;c;"), "a pipe gets the output as written");
}

/// What a chain changes on the terminal it inherits — echo off, the descriptor non-blocking (the
/// shell's next read would fail) — is put back when the run ends.
#[test]
fn the_terminal_is_given_back_as_it_was() {
    use std::os::fd::AsRawFd;
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = r#"import fcntl, os, termios
modes = termios.tcgetattr(0)
modes[3] &= ~termios.ECHO
termios.tcsetattr(0, termios.TCSANOW, modes)
fcntl.fcntl(0, fcntl.F_SETFL, fcntl.fcntl(0, fcntl.F_GETFL) | os.O_NONBLOCK)
print("echo on:", bool(termios.tcgetattr(0)[3] & termios.ECHO), "non-blocking:", bool(fcntl.fcntl(0, fcntl.F_GETFL) & os.O_NONBLOCK))
try:
    os.write(0, b"\x1b]0;retitled\x07")
    print("wrote to the terminal")
except OSError as e:
    print("writing refused:", e.strerror)
"#;
    std::fs::write(ws.path().join("tamper.py"), program).unwrap();
    let (_controller, terminal) = pseudo_terminal();
    let fd = terminal.as_raw_fd();
    let echo_on = || {
        // SAFETY: tcgetattr reads the terminal's modes into a zeroed structure.
        let mut modes: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::tcgetattr(fd, &mut modes) }, 0);
        modes.c_lflag & libc::ECHO != 0
    };
    // SAFETY: fcntl(F_GETFL) reads the descriptor's flags.
    let non_blocking = || unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_NONBLOCK != 0;
    assert!(echo_on() && !non_blocking());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(["run", "tamper.py"])
        .current_dir(ws.path())
        .stdin(terminal.try_clone().unwrap())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("echo on: False non-blocking: True"), "the chain changed both: {stdout}");
    assert!(
        stdout.contains("writing refused: Bad file descriptor"),
        "stdin is the terminal for reading only: {stdout}"
    );
    assert!(echo_on(), "echo is back on");
    assert!(!non_blocking(), "the terminal blocks again");
}

#[test]
fn a_chain_reaches_no_unix_socket_but_its_host() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    // A listener as a desktop has them (a session bus, ssh-agent, docker.sock).
    let socket_path = ws.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let program = format!(
        r#"import errno, socket
from chainsmith.tools import tmdb
def attempt(name, make, connect):
    try:
        s = make()
        connect(s)
        print(name, "connected")
    except OSError as e:
        print(name, "refused", errno.errorcode.get(e.errno))
attempt("stream", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), lambda s: s.connect({path:?}))
attempt("datagram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM), lambda s: s.connect({path:?}))
attempt("datagram pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0], lambda s: s.sendto(b"x", {path:?}))
# Families no namespace confines: a virtual machine's host (vsock), raw packets, the kernel's
# own channels (netlink).
attempt("vsock", lambda: socket.socket(40, socket.SOCK_STREAM), lambda s: s.connect((2, 1024)))
attempt("packet", lambda: socket.socket(17, socket.SOCK_RAW), lambda s: None)
attempt("netlink", lambda: socket.socket(16, socket.SOCK_RAW), lambda s: None)
print("tool:", tmdb.search_person(query="Sofia Coppola")["results"][0]["name"])
import os
pid = os.fork()
if pid == 0:
    print("forked tool:", tmdb.search_person(query="Sofia Coppola")["results"][0]["name"], flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"#,
        path = socket_path.display().to_string()
    );
    std::fs::write(ws.path().join("unix.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "run", "unix.py"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    for attempt in ["stream", "datagram", "datagram pair", "vsock", "packet", "netlink"] {
        assert!(stdout.contains(&format!("{attempt} refused EPERM")), "{attempt}: {stdout}");
    }
    assert!(listener.accept().is_err(), "the listener was reached");
    assert!(stdout.contains("tool: Bradley Cooper"), "the host is still reached: {stdout}");
    assert!(stdout.contains("forked tool: Bradley Cooper"), "and from a forked process: {stdout}");
}

/// An API whose every answer is a JSON document of `size` bytes, sent whole but for its last
/// byte, which follows `pause` later: calls made together hold their answers at the same time.
fn slow_large_answers(size: usize, pause: Duration) -> u16 {
    use std::io::{BufRead, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let body = format!("{{\"a\": \"{}\"}}", "x".repeat(size - 9));
    assert_eq!(body.len(), size);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                let mut out = stream;
                let head =
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n");
                let _ = out.write_all(head.as_bytes()).and_then(|()| out.write_all(&body.as_bytes()[..size - 1]));
                std::thread::sleep(pause);
                let _ = out.write_all(b"}");
            });
        }
    });
    port
}

/// Each call's answer is held by chainsmith, outside the sandbox's memory limit, until the
/// program has it: calls made at once from many processes hold no more than twice
/// `max_response_mb` together. Past that a call fails, saying why, and the others go on.
#[test]
fn answers_held_at_once_stay_within_their_budget() {
    let port = slow_large_answers(1 << 20, Duration::from_secs(3));
    let ws = workspace(&format!("http://127.0.0.1:{port}"), false, "[runtime]\nmax_response_mb = 1\n");
    // Processes, each with its own connection to chainsmith (one process' calls take turns).
    let program = r#"import os
from chainsmith.tools import tmdb

children = []
for n in range(8):
    pid = os.fork()
    if pid == 0:
        try:
            print("answered %d" % len(tmdb.search_person(query="q%d" % n)["a"]), flush=True)
        except Exception as e:
            print("failed: %s" % e, flush=True)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"#;
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let stdout = text(&out.stdout);
    let answered = stdout.matches(&format!("answered {}", (1 << 20) - 9)).count();
    let refused = stdout.matches("MiB of answers held at once over all calls").count();
    // Two answers of 1 MiB fill the budget of 2 MiB, charged as they are read: a call whose read
    // goes past it fails, so at most two are read whole — one alone where the reads of several
    // interleaved (which the scheduler decides) — and every other fails saying why.
    assert!((1..=2).contains(&answered) && answered + refused == 8, "{stdout}\n{}", text(&out.stderr));
}

/// chainsmith serves the chain's connections outside the sandbox, where no memory or process
/// limit of the run's holds: a message without end is read only to its limit, and the host still
/// answers the chain's tool calls afterwards.
#[test]
fn a_message_without_end_is_refused_at_its_limit() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    let program = r#"import os, socket
from chainsmith.tools import tmdb
sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
with socket.socket(fileno=os.dup(int(os.environ["CHAINSMITH_HOST_FD"]))) as door:
    socket.send_fds(door, [b"c"], [theirs.fileno()])
theirs.close()
try:
    sock.sendall(b"x" * (40 << 20))
except OSError as e:
    print("sending stopped:", type(e).__name__)
print("host said:", sock.makefile("rb").readline().decode().strip())
print("tool:", tmdb.search_person(query="Sofia Coppola")["results"][0]["name"])
"#;
    std::fs::write(ws.path().join("flood.py"), program).unwrap();
    let out = chainsmith(ws.path(), &["--trust", "run", "flood.py"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("sending stopped: BrokenPipeError"), "{stdout}");
    assert!(stdout.contains("a message larger than 16 MiB; the connection is closed"), "{stdout}");
    assert!(stdout.contains("tool: Bradley Cooper"), "{stdout}");
}

#[test]
fn a_chain_cannot_use_another_runs_host() {
    // Run A: a trusted workspace whose toolset sends a key; its chain waits after one call.
    let server_a = TmdbServer::start(&[]);
    let ws_a = workspace(&server_a.base_url(), true, "");
    let release = ws_a.path().join("release");
    let waiting = format!(
        "import os, time\nfrom chainsmith.tools import tmdb\ntmdb.search_person(query='a')\nprint('started', flush=True)\nwhile not os.path.exists({:?}):\n    time.sleep(0.05)\n",
        release.display().to_string()
    );
    std::fs::write(ws_a.path().join("a.py"), waiting).unwrap();
    // Trusted with where its key goes: run A is the victim, not the suspect.
    let mut run_a = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(["--trust", "run", "a.py"])
        .current_dir(ws_a.path())
        .env("TMDB_TEST_KEY", "key-of-workspace-a")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(run_a.stdout.take().unwrap()));
    assert_eq!(lines.next().unwrap().unwrap(), "started");

    // Run B: a chain that looks for another run's host wherever it could be found.
    let server_b = TmdbServer::start(&[]);
    let ws_b = workspace(&server_b.base_url(), false, "");
    let hostile = r#"import ctypes, glob, json, os, socket, tempfile
call = json.dumps({"op": "call", "tool": "tmdb.search_person", "arguments": {"query": "stolen"}}).encode() + b"\n"
def ask(s):
    s.sendall(call)
    print("reached:", s.recv(65536)[:200])
places = set(glob.glob("/tmp/chainsmith-run-*/*"))
places |= set(glob.glob(os.path.join(os.path.dirname(tempfile.gettempdir()), "chainsmith-run-*", "*")))
for path in sorted(places):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        ask(s)
    except OSError as e:
        print("path", path, "refused", e)
# A door is a descriptor: take it from whichever process holds one.
libc = ctypes.CDLL(None, use_errno=True)
for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        continue
    pidfd = libc.syscall(434, int(pid), 0)
    if pidfd < 0:
        continue
    for fd in fds:
        got = libc.syscall(438, pidfd, int(fd), 0)
        if got >= 0:
            try:
                s = socket.socket(fileno=got)
                if s.family == socket.AF_UNIX:
                    ask(s)
            except OSError:
                pass
print("done")
"#;
    std::fs::write(ws_b.path().join("b.py"), hostile).unwrap();
    let out = chainsmith(ws_b.path(), &["run", "b.py"], &[]);
    std::fs::write(&release, "").unwrap();
    let _ = run_a.wait();
    let stdout = text(&out.stdout);
    assert!(stdout.contains("done"), "{stdout}\n{}", text(&out.stderr));
    assert!(!stdout.contains("reached:"), "run B's chain reached a host: {stdout}");
    assert!(!stdout.contains("key-of-workspace-a"), "{stdout}");
    assert_eq!(server_a.requests().as_array().unwrap().len(), 1, "only run A's own call reached A's server");
}

#[test]
fn a_planted_scratch_folder_is_never_used() {
    use std::os::unix::fs::PermissionsExt;
    let ws = workspace("http://127.0.0.1:9", false, "");
    let victim = ws.path().join("victim.txt");
    std::fs::write(&victim, "the user's file\n").unwrap();
    // Someone else made the folders a run of this process could pick by its number, open to all,
    // each with `source.py` leading to the victim.
    let planted: Vec<_> = (0..300)
        .map(|n| std::env::temp_dir().join(format!("chainsmith-run-{}-{n}", std::process::id())))
        .filter(|dir| std::fs::create_dir(dir).is_ok())
        .collect();
    for dir in &planted {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("source.py")).unwrap();
    }
    let (config, catalog) = chainsmith::cli::load_workspace(ws.path()).unwrap();
    let mut request = chainsmith::runtime::RunRequest::new(
        ws.path().join("p.py"),
        ws.path(),
        std::sync::Arc::new(config),
        std::sync::Arc::new(catalog),
    );
    request.source =
        Some("import os\nprint('from the buffer', oct(os.stat(os.environ['TMPDIR']).st_mode & 0o777))\n".into());
    let outcome =
        chainsmith::runtime::run(request, std::sync::Arc::new(chainsmith::runtime::Quiet), &Default::default());
    for dir in &planted {
        let _ = std::fs::remove_dir_all(dir);
    }
    assert_eq!(outcome.output, "from the buffer 0o700\n", "a private scratch folder: {:?}", outcome.start_error);
    assert!(outcome.stopped.is_none() && outcome.trace.ok, "{:?}", outcome.trace.error);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the user's file\n", "the planted link was written through");
}

/// What a failing test says about processes: each one's state, kernel wait channel and command line.
fn described(pids: &[u32]) -> String {
    let read = |pid: &u32, file: &str| std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
    let lines: Vec<String> = pids
        .iter()
        .map(|pid| {
            let state = read(pid, "stat")
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ");
            format!(
                "{pid}: state {state}, waiting in {:?}, {:?}",
                read(pid, "wchan"),
                read(pid, "cmdline").replace('\0', " ")
            )
        })
        .collect();
    format!("[{}]", lines.join("; "))
}

/// The start of a chain that leaves a child sleeping with `marker` on its command line. The child
/// is one process from its `exec` on, which `Popen` waits for: a shell (`sh -c 'sleep … # marker'`)
/// forks again, and on a loaded machine its fork carried the marker for seconds, two processes
/// where the test waited for one.
fn sleeping_child(marker: &str) -> String {
    format!(
        "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{marker}'])\n"
    )
}

/// Whether, within 20 s, exactly one process carries `marker`.
fn one_process_with(marker: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_with(marker).len() != 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    processes_with(marker).len() == 1
}

/// The processes carrying `marker` still there after 20 s — generous: the point is that they go,
/// not how fast — killed so that a failing test leaves nothing behind.
fn survivors(marker: &str) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !processes_with(marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = processes_with(marker);
    if !left.is_empty() {
        eprintln!("still there after 20 s: {}", described(&left));
    }
    for pid in &left {
        // SAFETY: kill takes plain integers.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    left
}

#[test]
fn a_run_ends_with_chainsmith_however_chainsmith_ends() {
    let ws = workspace("http://127.0.0.1:9", false, "");
    for (signal, name) in
        [(libc::SIGKILL, "SIGKILL"), (libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP"), (libc::SIGINT, "SIGINT")]
    {
        let marker = format!("chainsmith-outlives-{name}-{}", std::process::id());
        let program = format!("{}print('started', flush=True)\ntime.sleep(300)\n", sleeping_child(&marker));
        std::fs::write(ws.path().join("sleeper.py"), program).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"));
        command
            .args(["run", "sleeper.py"])
            .current_dir(ws.path())
            .env("TMPDIR", tmp.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // A test run started under `nohup` passes SIGHUP on ignored, and chainsmith would then
        // rightly not end on it: the signal's default is what this test is about.
        // SAFETY: `signal` is async-signal-safe and touches no memory of the parent.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::signal(libc::SIGHUP, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut run = command.spawn().unwrap();
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(run.stdout.take().unwrap()));
        assert_eq!(lines.next().unwrap().unwrap(), "started", "{name}");
        if !one_process_with(&marker) {
            let seen = described(&processes_with(&marker));
            let _ = run.kill();
            let rest: Vec<String> = lines.map_while(Result::ok).collect();
            let mut stderr = String::new();
            let _ = std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut stderr);
            panic!(
                "{name}: the chain's child does not run: {seen}; chainsmith ended {:?}, then printed {rest:?}, {stderr}",
                run.wait()
            );
        }
        // SAFETY: kill takes plain integers.
        unsafe { libc::kill(run.id() as i32, signal) };
        let left = survivors(&marker);
        if !left.is_empty() {
            let ended = run.try_wait();
            let _ = run.kill();
            let rest: Vec<String> = lines.map_while(Result::ok).collect();
            let mut stderr = String::new();
            let _ = std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut stderr);
            panic!("the chain {left:?} outlived chainsmith ended by {name} ({ended:?}); it printed {rest:?}, {stderr}");
        }
        let status = run.wait().unwrap();
        assert!(!status.success(), "{name}: {status}");
        if signal != libc::SIGKILL {
            // Ended as a cancel ends a run, then by the signal, as a shell expects; the scratch
            // folder gone.
            assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(signal), "{name}: {status}");
            let left: Vec<_> = std::fs::read_dir(tmp.path())
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("chainsmith-run-"))
                .collect();
            assert!(left.is_empty(), "{name} left {left:?}");
        }
    }
}

#[test]
fn the_servers_runs_end_with_the_server() {
    use crate::support::lsp::TestClient;
    for ending in ["exit", "shutdown then exit"] {
        let marker = format!("chainsmith-outlives-server-{}-{}", ending.len(), std::process::id());
        let program = format!("{}time.sleep(300)\n", sleeping_child(&marker));
        let mut client = TestClient::stdio(env!("CARGO_BIN_EXE_chainsmith"))
            .workspace(workspace("http://127.0.0.1:9", false, ""))
            .start();
        let uri = client.open("sleeper.py", &program);
        let answer = client.execute_command("chainsmith.run", vec![serde_json::json!({"uri": uri})], Some("run-1"));
        assert_eq!(answer, Ok(None), "{ending}");
        assert!(one_process_with(&marker), "{ending}: the run started: {:?}", processes_with(&marker));
        client.dismiss(|_| true);
        match ending {
            "exit" => drop(client.exit_without_shutdown()),
            _ => drop(client.shutdown()),
        }
        assert_eq!(survivors(&marker), Vec::<u32>::new(), "a run outlived the server's {ending}");
    }
}

/// A fork bomb stops at `[runtime] max_processes`, which counts the run's own processes only (the
/// machine may hold any number of the same user's). The kernel does not hold root to
/// `RLIMIT_NPROC`, so a run of root's is held by a cgroup of its own, removed after the run; where
/// the tests run as root, the bomb is also run as an unprivileged user (`nobody`, from a copy of
/// the binary that user can reach), whom `RLIMIT_NPROC` holds.
#[test]
fn a_fork_bomb_stops_at_the_process_limit() {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut numbers = release.trim().split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse::<u32>().ok());
    if (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0)) < (5, 14) {
        eprintln!("skipped: before Linux 5.14 the limit would count all of the user's processes, so it is not set");
        return;
    }
    // SAFETY: getuid cannot fail and touches no memory.
    let root = unsafe { libc::getuid() } == 0;
    fork_bomb(false);
    if root {
        fork_bomb(true);
    }
}

/// A process limit past what the kernel takes is the kernel's largest, not no limit at all (a
/// cgroup refuses a larger `pids.max`, which left root's run with none).
#[test]
fn a_huge_process_limit_is_clamped_not_dropped() {
    let ws = workspace("http://127.0.0.1:9", false, "[runtime]\nmax_processes = 9223372036854775807\n");
    std::fs::write(ws.path().join("p.py"), "import os\nprint('ran;', os.environ['CHAINSMITH_SANDBOX'])\n").unwrap();
    // Raised above the default, the limit needs trust.
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains(
            "[runtime] limits would raise the sandbox's limits above the defaults (max_processes = 9223372036854775807)"
        ),
        "{}",
        text(&out.stderr)
    );
    let out = chainsmith(ws.path(), &["--trust", "run", "p.py"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.starts_with("ran;"), "{stdout}\n{stderr}");
    if stderr.contains("a process limit (") && !stderr.contains("cannot set up the cgroup") {
        eprintln!("skipped: no process limit can be set here: {stderr}");
        return;
    }
    assert!(stdout.contains("processes capped"), "the run still has a process limit: {stdout}\n{stderr}");
}

/// Runs a bomb of 200 forks with `max_processes = 16`, as `nobody` when `as_nobody`, and checks
/// that it stopped short and that no cgroup of the run's is left.
fn fork_bomb(as_nobody: bool) {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;

    let dir = tempfile::tempdir().unwrap();
    let bomb = "import os, time\nn = 0\ntry:\n    for _ in range(200):\n        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n        n += 1\n    print('forked', n)\nexcept OSError as e:\n    print('stopped after', n, type(e).__name__)\n";
    std::fs::write(dir.path().join("bomb.py"), bomb).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), "[runtime]\nmax_processes = 16\n").unwrap();
    let mut binary = std::path::PathBuf::from(env!("CARGO_BIN_EXE_chainsmith"));
    if as_nobody {
        let copy = dir.path().join("chainsmith");
        std::fs::copy(&binary, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        for entry in [dir.path().to_path_buf(), dir.path().join("bomb.py"), dir.path().join("chainsmith.toml")] {
            std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
        }
        binary = copy;
    }
    let mut command = std::process::Command::new(&binary);
    command.args(["run", "bomb.py"]).current_dir(dir.path()).env("HOME", dir.path()).env("TMPDIR", dir.path());
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if as_nobody {
        command.uid(65534).gid(65534);
    }
    let child = command.spawn().expect("chainsmith runs");
    let chainsmith = child.id();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let who = if as_nobody { "nobody" } else { "this user" };
    // SAFETY: getuid cannot fail and touches no memory.
    let as_root = !as_nobody && unsafe { libc::getuid() } == 0;
    if stderr.contains("namespaces (") && !as_root {
        eprintln!("skipped: this kernel refuses the run a user namespace, where the limit is set: {stderr}");
        return;
    }
    if stderr.contains("a process limit (") && as_root {
        eprintln!("skipped for root: no cgroup with the pids controller can be made here: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{who}: {stdout}\n{stderr}");
    let forked: u32 = stdout
        .strip_prefix("stopped after ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{who}: the bomb was not stopped: {stdout}\n{stderr}"));
    assert!(forked < 16, "{who}: {stdout}");
    assert!(stdout.ends_with("BlockingIOError\n"), "{who}: {stdout}");
    let left = cgroups_named(std::path::Path::new("/sys/fs/cgroup"), &format!("chainsmith-run-{chainsmith}-"), 4);
    assert_eq!(left, Vec::<std::path::PathBuf>::new(), "{who}: the run's cgroup outlived it");
}

/// The folders beneath `folder`, `depth` levels down at most, whose names start with `prefix`.
fn cgroups_named(folder: &std::path::Path, prefix: &str, depth: usize) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            found.push(entry.path());
        } else if depth > 0 {
            found.extend(cgroups_named(&entry.path(), prefix, depth - 1));
        }
    }
    found
}
