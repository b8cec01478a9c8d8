//! What a hostile folder or chain plants where chainsmith reads and writes: links to `/dev/zero`,
//! FIFOs, links out of the workspace, an endless HTTP answer. Each is refused with a located
//! reason; nothing hangs, nothing grows without bound, nothing is written outside.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::runtime::{TmdbServer, text, workspace};

/// Runs chainsmith in `dir`; `None` when it has not ended after `limit` (then it is killed).
fn ended_within(dir: &Path, args: &[&str], limit: Duration) -> Option<Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chainsmith starts");
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(child.wait_with_output().unwrap())
}

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

#[test]
fn planted_state_files_neither_hang_nor_exhaust_memory() {
    let ws = workspace("http://127.0.0.1:9", false, "");
    let state = ws.path().join(".chainsmith");
    std::fs::create_dir_all(state.join("probed")).unwrap();
    std::fs::create_dir_all(state.join("runs")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", state.join("toolnet.json")).unwrap();
    mkfifo(&state.join("probed/tmdb.json"));
    std::os::unix::fs::symlink("/dev/zero", state.join("runs/20261126-000000-p.json")).unwrap();
    std::fs::write(ws.path().join("p.py"), "from chainsmith.tools import tmdb\nprint(tmdb.search_person(query='x'))\n")
        .unwrap();

    let check = ended_within(ws.path(), &["check", "p.py"], Duration::from_secs(60)).expect("check ended");
    let said = text(&check.stdout) + &text(&check.stderr);
    assert!(
        said.contains("probed/tmdb.json")
            && said.contains("invalid-overlay")
            && said.contains("not a regular file (a FIFO)"),
        "the FIFO overlay is a diagnostic on itself:\n{said}"
    );

    let show = ended_within(ws.path(), &["graph", "show"], Duration::from_secs(60)).expect("graph show ended");
    let said = text(&show.stdout) + &text(&show.stderr);
    assert!(said.contains("toolnet.json") && said.contains("leads outside the workspace"), "{said}");

    // Inside the workspace, a FIFO in its place is read as nothing: not a regular file.
    std::fs::remove_file(state.join("toolnet.json")).unwrap();
    mkfifo(&state.join("toolnet.json"));
    let show = ended_within(ws.path(), &["graph", "show"], Duration::from_secs(60)).expect("graph show ended");
    let said = text(&show.stdout) + &text(&show.stderr);
    assert!(said.contains("toolnet.json") && said.contains("not a regular file (a FIFO)"), "{said}");

    // Well under the size limit, but made of millions of tiny values (3 bytes each): parsed, it
    // would take gigabytes. It is refused, as a diagnostic on itself.
    std::fs::remove_file(state.join("probed/tmdb.json")).unwrap();
    let tiny_values = format!("{{\"tools\": {{\"x\": [{}[]]}}}}", "[],".repeat(1_100_000));
    std::fs::write(state.join("probed/tmdb.json"), tiny_values).unwrap();
    let check = ended_within(ws.path(), &["check", "p.py"], Duration::from_secs(60)).expect("check ended");
    let said = text(&check.stdout) + &text(&check.stderr);
    assert!(
        said.contains("probed/tmdb.json") && said.contains("JSON of more than 1000000 values"),
        "the overlay of tiny values is a diagnostic on itself:\n{said}"
    );
}

/// chainsmith's own state is never a link (it writes none there): a ToolNet store or a run's
/// trace linked to another workspace's, or `.chainsmith` itself linked to another's, is not read
/// as this workspace's, and nothing of it is shown.
#[test]
fn state_linked_out_of_the_workspace_is_not_read_as_its_own() {
    let tasks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/datasets/restbench/tmdb.json");
    let other = workspace("http://127.0.0.1:9", false, "");
    let import = ended_within(other.path(), &["graph", "import", tasks], Duration::from_secs(60)).expect("imported");
    assert!(import.status.success(), "{}", text(&import.stderr));
    let learnt = "tmdb.search_person → person_movie_credits";
    let shown = ended_within(other.path(), &["graph", "show"], Duration::from_secs(60)).expect("shown");
    assert!(text(&shown.stdout).contains(learnt), "where it lies, the store is read:\n{}", text(&shown.stdout));

    let linked_store = workspace("http://127.0.0.1:9", false, "");
    std::fs::create_dir_all(linked_store.path().join(".chainsmith")).unwrap();
    std::os::unix::fs::symlink(
        other.path().join(".chainsmith/toolnet.json"),
        linked_store.path().join(".chainsmith/toolnet.json"),
    )
    .unwrap();
    let linked_state = workspace("http://127.0.0.1:9", false, "");
    std::os::unix::fs::symlink(other.path().join(".chainsmith"), linked_state.path().join(".chainsmith")).unwrap();
    for ws in [&linked_store, &linked_state] {
        let show = ended_within(ws.path(), &["graph", "show"], Duration::from_secs(60)).expect("graph show ended");
        let said = text(&show.stdout) + &text(&show.stderr);
        assert!(!said.contains(learnt), "another workspace's store was read as this one's:\n{said}");
        assert!(said.contains("toolnet.json") && said.contains("leads outside the workspace"), "{said}");
    }
}

#[test]
fn a_trace_is_not_written_through_a_link_out_of_the_workspace() {
    let server = TmdbServer::start(&[]);
    let ws = workspace(&server.base_url(), false, "");
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".chainsmith")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join(".chainsmith/runs")).unwrap();
    std::fs::write(
        ws.path().join("p.py"),
        "from chainsmith.tools import tmdb\nprint(tmdb.search_person(query='Sofia Coppola')['results'][0]['name'])\n",
    )
    .unwrap();

    let run = ended_within(ws.path(), &["--trust", "run", "p.py"], Duration::from_secs(120)).expect("run ended");
    let said = text(&run.stdout) + &text(&run.stderr);
    assert!(said.contains("Sofia Coppola"), "the run itself goes on:\n{said}");
    assert!(said.contains("outside"), "the refused trace is reported:\n{said}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "a trace was written through the link");
}

#[test]
fn a_chain_that_replaces_its_fault_file_still_times_out() {
    let ws = workspace("http://127.0.0.1:9", false, "[runtime]\ntimeout_s = 2\n");
    // The fault handler's file becomes a FIFO (reading it would wait for a writer forever) and
    // then a link to /dev/zero (reading it would never end); the program then spins. (Where
    // Landlock confines writes, the file cannot even be removed: it lies outside the scratch
    // folder.)
    for plant in ["os.mkfifo(path)", "os.symlink('/dev/zero', path)"] {
        std::fs::write(
            ws.path().join("p.py"),
            format!(
                "import os\npath = os.environ['CHAINSMITH_FAULT_FILE']\ntry:\n    os.remove(path)\n    {plant}\nexcept OSError as e:\n    print('refused:', e)\nwhile True:\n    pass\n"
            ),
        )
        .unwrap();
        let started = Instant::now();
        let run = ended_within(ws.path(), &["run", "p.py"], Duration::from_secs(60)).expect("the run ended");
        let said = text(&run.stdout) + &text(&run.stderr);
        assert!(said.contains("timed out") || said.contains("timeout"), "{plant}: {said}");
        assert!(started.elapsed() < Duration::from_secs(60), "{plant}");
    }
}

/// The fault file lies outside the size-capped scratch folder: a chain writing there could fill
/// the disk. It is a FIFO, so what the chain writes waits in a pipe's buffer (a MiB at most).
#[test]
fn the_fault_file_holds_no_more_than_a_pipe() {
    let ws = workspace("http://127.0.0.1:9", false, "");
    let program = r#"import os
fd = os.open(os.environ["CHAINSMITH_FAULT_FILE"], os.O_WRONLY | os.O_NONBLOCK)
block, wrote = b"x" * 65536, 0
try:
    while wrote < (64 << 20):
        wrote += os.write(fd, block)
except BlockingIOError:
    pass
print("wrote", wrote)
"#;
    std::fs::write(ws.path().join("p.py"), program).unwrap();
    let run = ended_within(ws.path(), &["run", "p.py"], Duration::from_secs(60)).expect("the run ended");
    let stdout = text(&run.stdout);
    let wrote: u64 = stdout.trim().strip_prefix("wrote ").and_then(|n| n.parse().ok()).unwrap_or_else(|| {
        panic!("{stdout}\n{}", text(&run.stderr));
    });
    assert!(wrote <= 1 << 20, "{wrote} bytes went into the fault file");
}

#[test]
fn an_endless_answer_is_read_only_to_the_limit() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = format!("{:x}\r\n{}\r\n", 64 << 10, "[".repeat(64 << 10));
                // Endless, until the reader hangs up.
                while stream.write_all(chunk.as_bytes()).is_ok() {}
            });
        }
    });
    let ws = workspace(&format!("http://127.0.0.1:{port}"), false, "[runtime]\nmax_response_mb = 1\n");
    std::fs::write(ws.path().join("p.py"), "from chainsmith.tools import tmdb\nprint(tmdb.search_person(query='x'))\n")
        .unwrap();
    let run = ended_within(ws.path(), &["--trust", "run", "p.py"], Duration::from_secs(60)).expect("the run ended");
    let said = text(&run.stdout) + &text(&run.stderr);
    assert!(said.contains("larger than 1 MiB ([runtime] max_response_mb)"), "{said}");
    assert_ne!(run.status.code(), Some(0));
}

/// Without a home folder the Python package goes to the temp folder, which every user shares: a
/// package folder another user made there first (with a boot script of theirs, which would run
/// holding the run's door) is refused, and one of the user's own is used.
#[test]
fn a_package_folder_planted_in_the_shared_temp_folder_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let run = |tmp: &Path, dir: &Path| {
        Command::new(env!("CARGO_BIN_EXE_chainsmith"))
            .args(["run", "ok.py"])
            .current_dir(dir)
            .env_remove("HOME")
            .env_remove("XDG_CACHE_HOME")
            .env("TMPDIR", tmp)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ok.py"), "print('the program ran')\n").unwrap();
    // SAFETY: getuid cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    let own = tempfile::tempdir().unwrap();
    let out = run(own.path(), dir.path());
    assert_eq!(text(&out.stdout), "the program ran\n", "{}", text(&out.stderr));
    let cache = own.path().join(format!("chainsmith-cache-{uid}"));
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the user's own cache folder is private");
    let version =
        std::fs::read_dir(&cache).unwrap().flatten().find(|e| e.file_name().to_string_lossy().starts_with("py-"));
    let version = version.expect("the package was written").file_name();

    // Another user got there first (as a folder only they own, or as one anyone may write).
    let shared = tempfile::tempdir().unwrap();
    for name in [format!("chainsmith-cache-{uid}"), "chainsmith-cache".to_string()] {
        let planted = shared.path().join(name).join(&version);
        std::fs::create_dir_all(&planted).unwrap();
        std::fs::write(planted.join("chainsmith_run.py"), "print('PLANTED boot script ran')\n").unwrap();
        let folder = planted.parent().unwrap();
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o777)).unwrap();
        if uid == 0 {
            std::os::unix::fs::chown(folder, Some(65534), Some(65534)).unwrap();
        }
    }
    let out = run(shared.path(), dir.path());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!stdout.contains("PLANTED"), "{stdout}");
    assert_ne!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("refusing to use") && stderr.contains("setting HOME or XDG_CACHE_HOME"), "{stderr}");
}

/// A chainsmith.toml planted above the program — in a folder anyone may write, like `/tmp`, or one
/// another user owns — would make that folder the workspace: its toolsets loaded, the user's traces
/// kept in its `.chainsmith/`. chainsmith passes it over with a warning naming it (the program runs
/// in its own private folder) and writes nothing there; naming the workspace with `--root` is the
/// way to use it anyway.
#[test]
fn a_workspace_planted_above_the_program_is_not_adopted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    let mine = shared.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(mine.join("p.py"), "print('the program ran')\n").unwrap();
    // Its toolset would point the program's calls at a server of the planter's.
    std::fs::write(shared.join("chainsmith.toml"), "[runtime]\ntimeout_s = 5\n").unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_chainsmith"))
            .args(args)
            .current_dir(&mine)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let passed_over = |out: &Output, why: &str| {
        let stderr = text(&out.stderr);
        assert_eq!(text(&out.stdout), "the program ran\n", "{stderr}");
        assert!(stderr.contains("does not use it") && stderr.contains(why) && stderr.contains("--root"), "{stderr}");
        assert!(!shared.join(".chainsmith").exists(), "nothing is written in the planted workspace");
        assert!(mine.join(".chainsmith/runs").is_dir(), "the program's own folder keeps the trace");
    };

    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    passed_over(&run(&["run", "p.py"]), "anyone may write it");
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } == 0 {
        // Root can plant as another user: a folder and file of `nobody`'s, no one else may write.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::chown(&shared, Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::chown(shared.join("chainsmith.toml"), Some(65534), Some(65534)).unwrap();
        passed_over(&run(&["run", "p.py"]), "belongs to user 65534");
        std::os::unix::fs::chown(&shared, Some(0), Some(0)).unwrap();
        passed_over(&run(&["run", "p.py"]), "belongs to user 65534");
        std::os::unix::fs::chown(shared.join("chainsmith.toml"), Some(0), Some(0)).unwrap();
    }
    // Named by the user, the same folder is theirs to choose.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    let chosen = run(&["run", "--root", shared.to_str().unwrap(), "p.py"]);
    assert_eq!(text(&chosen.stdout), "the program ran\n", "{}", text(&chosen.stderr));
    assert!(shared.join(".chainsmith/runs").is_dir(), "the chosen workspace keeps the trace");
    // And once it is the user's own, it is found without naming it, and without a warning.
    let found = run(&["run", "p.py"]);
    assert_eq!(text(&found.stdout), "the program ran\n", "{}", text(&found.stderr));
    assert!(!text(&found.stderr).contains("does not use it"), "{}", text(&found.stderr));
}
