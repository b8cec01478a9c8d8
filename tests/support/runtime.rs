//! For the runtime tests: the TMDB-like test server (`tmdb_server.py`), workspaces pointing
//! at it, the `chainsmith` binary, and a look at the processes still alive.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::Duration;

pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A copy of the TMDB example workspace (`examples/tmdb`, every file) in `to`.
pub fn copy_example(to: &Path) {
    let from = repo("examples/tmdb");
    for entry in walkdir::WalkDir::new(&from).into_iter().filter_map(Result::ok) {
        let rel = entry.path().strip_prefix(&from).unwrap();
        let target = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

pub fn spec_path() -> PathBuf {
    repo("examples/tmdb/specs/tmdb_oas.json")
}

/// The test server on 127.0.0.1; stopped when dropped (and when this process dies: it watches its
/// standard input).
pub struct TmdbServer {
    child: Child,
    _stdin: ChildStdin,
    pub port: u16,
}

impl TmdbServer {
    pub fn start(args: &[&str]) -> TmdbServer {
        let mut child = Command::new("python3")
            .arg(repo("tests/support/tmdb_server.py"))
            .arg("--spec")
            .arg(spec_path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the test server");
        let stdin = child.stdin.take().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let port = first.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).unwrap_or_else(|| {
            panic!("the test server did not announce its port: {first:?}");
        });
        TmdbServer { child, _stdin: stdin, port }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/3", self.port)
    }

    /// `GET /__requests`: what the server received, as JSON.
    pub fn requests(&self) -> serde_json::Value {
        let body = http_get(self.port, "/__requests");
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for TmdbServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.0 GET on 127.0.0.1 (no client library needed): the body.
pub fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
}

/// A workspace whose `tmdb` toolset is the test server's, with `extra` appended to chainsmith.toml.
pub fn workspace(base_url: &str, auth: bool, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("specs")).unwrap();
    std::fs::copy(spec_path(), dir.path().join("specs/tmdb_oas.json")).unwrap();
    let auth = if auth { "auth = { query = \"api_key\", value_env = \"TMDB_TEST_KEY\" }\n" } else { "" };
    let toml = format!(
        "[[toolsets]]\nname = \"tmdb\"\nopenapi = \"specs/tmdb_oas.json\"\nbase_url = \"{base_url}\"\n{auth}\n{extra}"
    );
    std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
    dir
}

/// Runs the chainsmith binary in `dir` with extra environment variables.
pub fn chainsmith(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chainsmith"));
    command.args(args).current_dir(dir).stdin(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("chainsmith runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The ids of live processes whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        // A zombie has an empty command line and is no longer running anything.
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

/// The single trace under `.chainsmith/runs/` of a workspace.
pub fn saved_traces(dir: &Path) -> Vec<PathBuf> {
    let runs = dir.join(".chainsmith/runs");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&runs).map(|entries| entries.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    files
}
