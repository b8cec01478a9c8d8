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
    let out = chainsmith(&root, &["run", "p.py"], &[("OPENAI_API_KEY", "sk-must-not-leak")]);
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
    let out = chainsmith(ws.path(), &["run", "p.py"], &[]);
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
