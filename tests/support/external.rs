//! What a test needs from outside the repository (a program, a package, a downloaded model, all
//! installed by `scripts/test-deps.sh`) and the one rule for when it is missing.
//!
//! A test asks [`available`] (or one of the checks built on it) first and returns at once when it
//! answers `false`. On a developer's fresh clone that is a skip, announced by one line on stderr
//! (`skipped: <test> needs <what> — <how to install it>`), so `cargo test` passes and says what
//! it did not run. With `CHAINSMITH_REQUIRE_EXTERNAL=1`, as CI sets it, a missing need panics with
//! the same hint instead: CI runs every test and fails on any it could not run.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The hint for everything `scripts/test-deps.sh` installs.
pub const TEST_DEPS: &str = "scripts/test-deps.sh installs it";

/// Whether the test may go on with `what`, given whether it is `present`; see the module docs for
/// what happens when it is not.
pub fn available(what: &str, how_to_install: &str, present: bool) -> bool {
    if present {
        return true;
    }
    // libtest names each test's thread after the test.
    let current = std::thread::current();
    let test = current.name().filter(|n| *n != "main").unwrap_or("this test");
    if required() {
        panic!("{test} needs {what}, which is missing: {how_to_install} (CHAINSMITH_REQUIRE_EXTERNAL=1: not skipped)");
    }
    // Straight to the process's stderr: libtest captures `eprintln!` of passing tests, and a skip
    // nobody sees would pass for a run test. One write, so parallel tests do not interleave it.
    let line = format!("skipped: {test} needs {what} — {how_to_install}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

/// Whether a missing need fails the test instead of skipping it.
fn required() -> bool {
    std::env::var_os("CHAINSMITH_REQUIRE_EXTERNAL").is_some_and(|v| v == "1")
}

/// Whether `program args` starts and exits with status 0.
pub fn runs(program: impl AsRef<OsStr>, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A Python package that `python3` must import (`module`), as PyPI names it (`package`).
pub fn python_package(module: &str, package: &str) -> bool {
    let imports = runs("python3", &["-c", &format!("import {module}")]);
    available(&format!("the Python package {package}"), TEST_DEPS, imports)
}

/// The basedpyright type checker on PATH.
pub fn basedpyright() -> bool {
    available("basedpyright (PyPI)", TEST_DEPS, runs("basedpyright", &["--version"]))
}

/// Node.js and npm on PATH.
pub fn node_and_npm() -> bool {
    let present = runs("node", &["--version"]) && runs("npm", &["--version"]);
    // Not from `scripts/test-deps.sh`, which runs npm itself.
    available("Node.js 20 or newer with npm", "the system's package manager installs them", present)
}

/// The entry script of an npm MCP server installed for the tests in `tests/mcp/node_modules`
/// (`server-memory`, `server-everything`), with `node` to run it.
pub fn npm_mcp_server(package: &str) -> Option<String> {
    let entry = repo().join("tests/mcp/node_modules/@modelcontextprotocol").join(package).join("dist/index.js");
    let what = format!("the npm MCP server @modelcontextprotocol/{package} in tests/mcp/node_modules");
    (node_and_npm() && available(&what, TEST_DEPS, entry.is_file())).then(|| entry.display().to_string())
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `path` relative to the repository, or `$variable` where it is set (for a copy kept elsewhere).
pub fn repo_path_or_env(variable: &str, path: &str) -> PathBuf {
    std::env::var_os(variable).map(PathBuf::from).unwrap_or_else(|| repo().join(path))
}
