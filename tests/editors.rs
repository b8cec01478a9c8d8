//! The editor clients against the built server, from `cargo test`:
//!
//! - `npm test` in editors/vscode: the extension's pure logic (settings mapping, server path,
//!   status item, package.json) and a stdio session with `chainsmith lsp` spoken through
//!   vscode-languageserver-protocol, as the VS Code extension speaks to it;
//! - the headless Neovim end-to-end test (editors/neovim/test/e2e.lua) with the Lua plugin.
//!
//! Both need tools that `.ci/run` installs (`npm ci` in editors/vscode, Debian's `neovim`). When one
//! is missing these tests fail and name the install step: they never skip silently.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn server() -> &'static str {
    env!("CARGO_BIN_EXE_chainsmith")
}

struct Finished {
    success: bool,
    status: String,
    output: String,
}

/// Runs `command` to the end (killing its whole process group after [`TIMEOUT`]) and returns its
/// status and interleaved-by-stream output.
fn run(mut command: Command, what: &str) -> Finished {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command.spawn().unwrap_or_else(|e| panic!("{what}: could not start {command:?}: {e}"));
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + TIMEOUT;
    let (success, status) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (status.success(), status.to_string());
        }
        if Instant::now() > deadline {
            #[cfg(unix)]
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            break (false, format!("killed after {TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default()
    );
    Finished { success, status, output }
}

fn require_tool(program: &str, args: &[&str], install: &str) {
    let found = Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status();
    if !found.is_ok_and(|s| s.success()) {
        panic!("`{program}` is not available: install it first ({install}; .ci/run does this on a fresh machine)");
    }
}

#[test]
fn vscode_extension_node_tests() {
    let dir = repo().join("editors/vscode");
    require_tool("node", &["--version"], "Node.js 20 comes with the machine");
    require_tool("npm", &["--version"], "npm comes with Node.js");
    if !dir.join("node_modules/.package-lock.json").exists() {
        panic!(
            "editors/vscode/node_modules is missing: run `(cd editors/vscode && npm ci --no-audit --no-fund)` first \
             (.ci/run does this on a fresh machine)"
        );
    }
    let mut npm = Command::new("npm");
    npm.args(["test", "--silent"])
        .current_dir(&dir)
        .env("CHAINSMITH_BIN", server())
        .env("NO_UPDATE_NOTIFIER", "1")
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false");
    let finished = run(npm, "npm test");
    assert!(finished.success, "`npm test` in editors/vscode failed ({}):\n{}", finished.status, finished.output);
    // The runner's summary: something ran and nothing failed.
    assert!(finished.output.contains("# fail 0"), "no test summary from node's runner:\n{}", finished.output);
    assert!(!finished.output.contains("# pass 0\n"), "node's runner ran no test:\n{}", finished.output);
}

#[test]
fn neovim_plugin_end_to_end() {
    require_tool("nvim", &["--version"], "`apt-get update && apt-get install -y neovim`");
    let script = repo().join("editors/neovim/test/e2e.lua");
    assert!(Path::new(&script).exists());
    let mut nvim = Command::new("nvim");
    nvim.args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-c"])
        .arg(format!("luafile {}", script.display().to_string().replace(' ', "\\ ")))
        .current_dir(repo())
        .env("CHAINSMITH_BIN", server());
    let finished = run(nvim, "nvim");
    assert!(finished.success, "the Neovim end-to-end test failed ({}):\n{}", finished.status, finished.output);
    assert!(finished.output.contains(", 0 failed"), "no summary from the Neovim test:\n{}", finished.output);
    // Shown with `cargo test -- --nocapture`: the steps, the pending TODO and the skipped step.
    println!("{}", finished.output);
}
