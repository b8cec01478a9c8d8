//! Trust covers where the user's secrets go and every loosening of the sandbox: a workspace that
//! would send an environment variable to an address of its choosing (a toolset's auth, the LLM's
//! key), turn the sandbox off or make a folder outside itself writable is warned about by `check`,
//! naming what would go where, and refused by `run` and `generate` until the user trusts it. Once
//! trusted, no secret header follows a redirect to another origin, a key meant for `https://` is
//! never sent over `http://`, and credentials written into a URL are never shown and never replace
//! the trusted header.
//!
//! Every server here is a real HTTP server on 127.0.0.1 recording what it received; every CLI runs
//! with its own `XDG_CONFIG_HOME`, so the user's real trust file is never read or written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::recorder::{Recorder, ok_json, redirect};

const SECRET: &str = "aws-secret-must-not-leak-7f3a";
const URL_PASSWORD: &str = "hunter2-in-the-url";

/// An API with one operation, `GET /echo` (the tool `api.get_echo`).
const SPEC: &str = r#"{"openapi": "3.0.0", "info": {"title": "api", "version": "1"},
  "paths": {"/echo": {"get": {"operationId": "echo", "responses": {"200": {"description": "ok",
    "content": {"application/json": {"schema": {"type": "object"}}}}}}}}}"#;

/// A workspace whose toolset `api` sends `$AWS_SECRET_ACCESS_KEY` as `X-Harmless` to `base_url`,
/// with `extra` appended to chainsmith.toml, the program `p.py` and a config folder of its own.
struct Workspace {
    dir: tempfile::TempDir,
    config: tempfile::TempDir,
}

impl Workspace {
    fn new(toml: &str, program: &str) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spec.json"), SPEC).unwrap();
        std::fs::write(dir.path().join("chainsmith.toml"), toml).unwrap();
        std::fs::write(dir.path().join("p.py"), program).unwrap();
        Workspace { dir, config: tempfile::tempdir().unwrap() }
    }

    fn with_api(base_url: &str, extra: &str, program: &str) -> Workspace {
        let toml = format!(
            "[[toolsets]]\nname = \"api\"\nopenapi = \"spec.json\"\nbase_url = \"{base_url}\"\nauth = {{ header = \"X-Harmless\", value_env = \"AWS_SECRET_ACCESS_KEY\" }}\n{extra}"
        );
        Workspace::new(&toml, program)
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn chainsmith(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_chainsmith"))
            .args(args)
            .current_dir(self.root())
            .env("XDG_CONFIG_HOME", self.config.path())
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("CHAINSMITH_TEST_LLM_KEY", SECRET)
            .stdin(Stdio::null())
            .output()
            .expect("chainsmith runs")
    }

    /// `check --format json`'s `workspace-untrusted` messages.
    fn untrusted(&self) -> Vec<String> {
        let out = self.chainsmith(&["check", "--format", "json"]);
        let all: Vec<Value> = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
        all.iter()
            .filter(|d| d["code"] == "workspace-untrusted")
            .map(|d| d["message"].as_str().unwrap().to_string())
            .collect()
    }

    fn trust_file(&self) -> String {
        std::fs::read_to_string(self.config.path().join("chainsmith/trust.json")).unwrap_or_default()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const CALL: &str = "from chainsmith.tools import api\n\nprint(api.echo())\n";

#[test]
fn a_toolsets_secret_goes_nowhere_before_trust_and_trust_is_bound_to_its_destination() {
    let server = Recorder::start(|_| ok_json(r#"{"echoed": true}"#));
    let ws = Workspace::with_api(&server.url(), "", CALL);
    let expected = format!("would send $AWS_SECRET_ACCESS_KEY to {} as header X-Harmless", server.url());
    let untrusted = ws.untrusted();
    assert!(untrusted.iter().any(|m| m.starts_with("toolset `api` (auth) ") && m.contains(&expected)), "{untrusted:?}");

    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains(&expected), "{}", text(&out.stderr));
    assert!(server.received().is_empty(), "nothing is sent before trust: {:?}", server.received());

    let trusted = ws.chainsmith(&["trust"]);
    assert!(
        text(&trusted.stdout).contains("toolset `api` (auth): send $AWS_SECRET_ACCESS_KEY to <"),
        "{}",
        text(&trusted.stdout)
    );
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let received = server.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert!(received[0].contains(&format!("x-harmless: {SECRET}")), "{received:?}");

    // The same secret to another address is asked for again, and not sent meanwhile.
    let elsewhere = Recorder::start(|_| ok_json("{}"));
    let toml = std::fs::read_to_string(ws.root().join("chainsmith.toml")).unwrap();
    std::fs::write(ws.root().join("chainsmith.toml"), toml.replace(&server.url(), &elsewhere.url())).unwrap();
    let untrusted = ws.untrusted();
    assert!(untrusted.iter().any(|m| m.contains(&elsewhere.url()) && m.contains("new or changed")), "{untrusted:?}");
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(elsewhere.received().is_empty(), "{:?}", elsewhere.received());

    // Spelt so a person reads the trusted host and the client another (`\` is `/` to it): the
    // warning names the host that would get the key, and the trust given before does not hold.
    let spelt = format!("{}\\\\@{}", elsewhere.url(), server.url().trim_start_matches("http://"));
    std::fs::write(ws.root().join("chainsmith.toml"), toml.replace(&server.url(), &spelt)).unwrap();
    let untrusted = ws.untrusted();
    let shown = format!("to {}/@{}", elsewhere.url(), server.url().trim_start_matches("http://"));
    assert!(untrusted.iter().any(|m| m.contains(&shown) && m.contains("new or changed")), "{untrusted:?}");
    assert_eq!(ws.chainsmith(&["run", "p.py"]).status.code(), Some(1));
    assert!(elsewhere.received().is_empty(), "{:?}", elsewhere.received());
}

/// A toolset on this machine or its private network (a container daemon's port, a cloud's metadata
/// address) is called only once the workspace is trusted to: by address however the program
/// builds the URL, through a name that resolves there, and never on through a redirect to another
/// local origin the workspace was not trusted with.
#[test]
fn a_service_on_this_machine_is_called_only_once_the_workspace_is_trusted_to() {
    let other = Recorder::start(|_| ok_json(r#"{"from": "elsewhere"}"#));
    let to = format!("{}/collect", other.url());
    let server = Recorder::start(move |path| if path == "/echo" { redirect(&to) } else { ok_json("{}") });
    let toml = |base: &str| format!("[[toolsets]]\nname = \"api\"\nopenapi = \"spec.json\"\nbase_url = \"{base}\"\n");
    let ws = Workspace::new(&toml(&server.url()), CALL);
    let expected = format!("toolset `api` (base URL) would call {}, on this machine", server.url());
    let untrusted = ws.untrusted();
    assert!(untrusted.iter().any(|m| m.starts_with(&expected)), "{untrusted:?}");

    // A call the analysis sees is refused before the program starts, one it cannot see by the host.
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains(&expected), "{}", text(&out.stderr));
    let built = format!(
        "import requests\nprint('started')\nprint(requests.get('http://127.0.0.1:%d/echo' % {}).text)\n",
        server.port
    );
    std::fs::write(ws.root().join("q.py"), built).unwrap();
    let out = ws.chainsmith(&["run", "q.py"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("started") && stderr.contains("would call"), "{stdout}{stderr}");
    assert!(server.received().is_empty(), "{:?}", server.received());

    // Through a name that resolves here (this machine's own name, where it does).
    let host = this_machines_name().unwrap_or_default();
    let local_name = !host.is_empty();
    if local_name {
        let named = format!("http://{host}:{}", server.port);
        std::fs::write(ws.root().join("chainsmith.toml"), toml(&named)).unwrap();
        let out = ws.chainsmith(&["run", "p.py"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&format!("{host} resolves to 127.")), "{stderr}");
        assert!(stderr.contains("on this machine or its private network"), "{stderr}");
        assert!(server.received().is_empty(), "{:?}", server.received());
        // Trusted for the session, the name is called, and so is where it redirects on this
        // machine: the user trusted all of it.
        let out = ws.chainsmith(&["--trust", "run", "p.py"]);
        assert_eq!(server.received().len(), 1, "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("elsewhere"), "{}", text(&out.stderr));
        assert_eq!(other.received().len(), 1, "{:?}", other.received());
    }

    // Trusted with its own address, the toolset is called; a redirect to another origin on this
    // machine is not followed.
    std::fs::write(ws.root().join("chainsmith.toml"), toml(&server.url())).unwrap();
    let trusted = ws.chainsmith(&["trust"]);
    assert!(text(&trusted.stdout).contains("toolset `api` (base URL): call <"), "{}", text(&trusted.stdout));
    let (before, elsewhere_before) = (server.received().len(), other.received().len());
    let out = ws.chainsmith(&["run", "p.py"]);
    let stderr = text(&out.stderr);
    assert_eq!(server.received().len(), before + 1, "{stderr}");
    assert_eq!(other.received().len(), elsewhere_before, "{stderr}");
    let undeclared =
        format!("{} is on this machine or its private network and no toolset's base URL names it", other.url());
    assert!(stderr.contains(&undeclared), "{stderr}");

    // Trusted with something else, a workspace still resolves no name here: `chainsmith trust`
    // looks the name up and records its origin, and a name so trusted is held to that origin.
    if local_name {
        let named = format!("http://{host}:{}", server.port);
        std::fs::write(ws.root().join("chainsmith.toml"), toml(&named)).unwrap();
        let before = server.received().len();
        let out = ws.chainsmith(&["run", "p.py"]);
        assert!(text(&out.stderr).contains(&format!("{host} resolves to 127.")), "{}", text(&out.stderr));
        assert_eq!(server.received().len(), before);
        let trusted = ws.chainsmith(&["trust"]);
        assert!(text(&trusted.stdout).contains(&format!("call <{named}>")), "{}", text(&trusted.stdout));
        let out = ws.chainsmith(&["run", "p.py"]);
        assert_eq!(server.received().len(), before + 1, "{}", text(&out.stderr));
        let other_port = format!("http://{host}:{}", other.port);
        std::fs::write(ws.root().join("chainsmith.toml"), toml(&other_port)).unwrap();
        let out = ws.chainsmith(&["run", "p.py"]);
        let stderr = text(&out.stderr);
        assert!(stderr.contains(&format!("would call {other_port}")), "{stderr}");
        assert_eq!(other.received().len(), elsewhere_before, "{stderr}");
    }
}

/// This machine's own name, where it resolves to loopback addresses alone (a name that resolves
/// here, as a planted `127.0.0.1.nip.io` would); `None` (and a note) where it does not.
fn this_machines_name() -> Option<String> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string();
    let local = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), 0))
        .map(|found| found.collect::<Vec<_>>())
        .is_ok_and(|found| !found.is_empty() && found.iter().all(|a| a.ip().is_loopback()));
    if !local {
        eprintln!("skipped the part with a name: this machine's name `{host}` resolves to no loopback address alone");
    }
    local.then_some(host)
}

/// Behind a proxy the environment names, the proxy resolves the names: the proxy's own name is the
/// user's and is looked up as it is; a toolset's name that resolves to this machine is still
/// refused, before anything reaches the proxy, and so is one that does not resolve here at all
/// (only the proxy knows where it leads: its own network, its own machine) until the workspace
/// is trusted to call it.
#[test]
fn behind_a_proxy_a_name_resolving_here_is_still_refused() {
    let Some(host) = this_machines_name() else { return };
    let proxy = Recorder::start(|_| ok_json(r#"{"via": "proxy"}"#));
    let toml = |base: &str| format!("[[toolsets]]\nname = \"api\"\nopenapi = \"spec.json\"\nbase_url = \"{base}\"\n");
    // The proxy named by its name (which resolves here) and by its address.
    for proxy_url in [format!("http://{host}:{}", proxy.port), proxy.url()] {
        let ws = Workspace::new(&toml("http://api.example.invalid"), CALL);
        let proxied = |ws: &Workspace, args: &[&str]| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_chainsmith"));
            command.args(args).current_dir(ws.root()).env("XDG_CONFIG_HOME", ws.config.path());
            command.env("HTTP_PROXY", &proxy_url).env("NO_PROXY", "").env_remove("http_proxy").env_remove("no_proxy");
            command.stdin(Stdio::null()).output().unwrap()
        };
        let before = proxy.received().len();
        let out = proxied(&ws, &["run", "p.py"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{proxy_url}: {stderr}");
        assert!(stderr.contains("api.example.invalid does not resolve on this machine"), "{proxy_url}: {stderr}");
        assert_eq!(proxy.received().len(), before, "{proxy_url}: {:?}", proxy.received());

        let trusted = proxied(&ws, &["trust"]);
        let listed = text(&trusted.stdout);
        assert!(listed.contains("toolset `api` (base URL): call <http://api.example.invalid>"), "{listed}");
        let out = proxied(&ws, &["run", "p.py"]);
        assert_eq!(out.status.code(), Some(0), "{proxy_url}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("proxy"), "{}", text(&out.stdout));
        let received = proxy.received();
        assert_eq!(received.len(), before + 1, "{proxy_url}: {received:?}");
        assert!(received[before].starts_with("GET http://api.example.invalid/echo"), "{received:?}");

        std::fs::write(ws.root().join("chainsmith.toml"), toml(&format!("http://{host}:9"))).unwrap();
        let out = proxied(&ws, &["run", "p.py"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{proxy_url}: {stderr}");
        assert!(stderr.contains(&format!("{host} resolves to 127.")), "{proxy_url}: {stderr}");
        assert_eq!(proxy.received().len(), before + 1, "{proxy_url}: {:?}", proxy.received());
    }
}

#[test]
fn no_secret_header_follows_a_redirect_to_another_origin() {
    let other = Recorder::start(|_| ok_json(r#"{"from": "elsewhere"}"#));
    let to = format!("{}/collect", other.url());
    let api = Recorder::start(move |path| match path {
        "/echo" => redirect(&to),
        "/same" => redirect("/final"),
        _ => ok_json(r#"{"from": "home"}"#),
    });
    let program = "from chainsmith.tools import api\nimport requests\n\nprint(api.echo())\nprint(requests.get(API + '/same', headers={'Authorization': 'Bearer own', 'X-Plain': '1'}).json())\n";
    let program = format!("API = {:?}\n{program}", api.url());
    let ws = Workspace::with_api(&api.url(), "", &program);
    let out = ws.chainsmith(&["--trust", "run", "p.py"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("'from': 'elsewhere'") && stdout.contains("'from': 'home'"), "{stdout}");
    let elsewhere = other.received();
    assert_eq!(elsewhere.len(), 1, "{elsewhere:?}");
    assert!(
        !elsewhere[0].contains(SECRET) && !elsewhere[0].to_ascii_lowercase().contains("x-harmless"),
        "{elsewhere:?}"
    );
    // Within the same origin the request keeps what it carried.
    let home = api.received();
    let last = home.last().unwrap();
    assert!(last.starts_with("GET /final"), "{home:?}");
    assert!(
        last.contains(SECRET) && last.contains("authorization: Bearer own") && last.contains("x-plain: 1"),
        "{last}"
    );
}

#[test]
fn a_key_for_https_is_not_sent_over_http() {
    let server = Recorder::start(|_| ok_json("{}"));
    let https = format!("https://127.0.0.1:{}", server.port);
    let program =
        format!("import requests\n\nr = requests.get({:?})\nprint(r.status_code)\n", format!("{}/echo", server.url()));
    let ws = Workspace::with_api(&https, "", &program);
    let out = ws.chainsmith(&["--trust", "run", "p.py"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(format!("{stdout}{stderr}").contains("sends its key only over https://"), "{stdout}{stderr}");
    assert!(server.received().iter().all(|r| !r.contains(SECRET)), "{:?}", server.received());
}

#[test]
fn credentials_in_a_url_are_never_shown_and_never_replace_the_trusted_header() {
    let server = Recorder::start(|_| ok_json("{}"));
    let with_credentials = format!("http://admin:{URL_PASSWORD}@127.0.0.1:{}", server.port);
    let toml = format!(
        "[[toolsets]]\nname = \"api\"\nopenapi = \"spec.json\"\nbase_url = \"{with_credentials}\"\nauth = {{ header = \"Authorization\", prefix = \"Bearer \", value_env = \"AWS_SECRET_ACCESS_KEY\" }}\n"
    );
    let ws = Workspace::new(&toml, CALL);
    let untrusted = ws.untrusted();
    let shown = format!("http://***@127.0.0.1:{}", server.port);
    assert!(untrusted.iter().any(|m| m.contains(&shown)), "{untrusted:?}");
    assert!(untrusted.iter().all(|m| !m.contains(URL_PASSWORD) && !m.contains("admin")), "{untrusted:?}");
    for format in ["text", "json"] {
        let listed = text(&ws.chainsmith(&["tools", "--format", format]).stdout);
        assert!(!listed.contains(URL_PASSWORD) && !listed.contains("admin"), "tools --format {format}: {listed}");
        assert!(listed.contains("api"), "tools --format {format} lists the toolset: {listed}");
    }
    assert!(text(&ws.chainsmith(&["tools"]).stdout).contains(&format!("({shown})")), "the text names the base URL");
    let trusted = ws.chainsmith(&["trust"]);
    assert!(!text(&trusted.stdout).contains(URL_PASSWORD), "{}", text(&trusted.stdout));
    assert!(ws.trust_file().contains(&shown) && !ws.trust_file().contains(URL_PASSWORD), "{}", ws.trust_file());
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let received = server.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert!(received[0].contains(&format!("authorization: Bearer {SECRET}")), "{received:?}");
    assert!(!received[0].to_ascii_lowercase().contains("basic"), "{received:?}");

    // Without a trusted header the URL's credentials are sent as Basic: an API echoing them (or
    // the header) hands neither to the program nor to the trace.
    let basic = data_encoding::BASE64.encode(format!("admin:{URL_PASSWORD}").as_bytes());
    let echoed = format!(r#"{{"password": "{URL_PASSWORD}", "header": "Basic {basic}"}}"#);
    let echo = Recorder::start(move |_| ok_json(&echoed));
    let toml = format!(
        "[[toolsets]]\nname = \"api\"\nopenapi = \"spec.json\"\nbase_url = \"http://admin:{URL_PASSWORD}@127.0.0.1:{}\"\n",
        echo.port
    );
    let ws = Workspace::new(&toml, CALL);
    let out = ws.chainsmith(&["--trust", "run", "p.py", "--trace-json", "trace.json"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(echo.received()[0].contains(&format!("authorization: Basic {basic}")), "{:?}", echo.received());
    let trace = std::fs::read_to_string(ws.root().join("trace.json")).unwrap();
    for place in [&stdout, &trace] {
        assert!(!place.contains(URL_PASSWORD) && !place.contains(&basic), "{place}");
    }
}

/// A file outside the workspace that runs do not see (the home folder's, another program's in
/// `/tmp`) is read once `[runtime] readable` names it and the workspace is trusted with it; a
/// credential store beneath stays hidden, and a path inside the workspace asks nothing.
#[test]
fn a_readable_path_outside_the_workspace_is_read_only_once_trusted() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("models/.ssh")).unwrap();
    std::fs::write(outside.path().join("models/weights.txt"), "the weights").unwrap();
    std::fs::write(outside.path().join("models/.ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    let program = format!(
        "for path in [{:?}, {:?}]:\n    try:\n        print(open(path).read())\n    except OSError as e:\n        \
         print(e.strerror)\n",
        outside.path().join("models/weights.txt"),
        outside.path().join("models/.ssh/id_ed25519")
    );
    let home = outside.path().join("models").display().to_string();
    let ws = Workspace::new(&format!("[runtime]\nreadable = [{home:?}, \"data\"]\n"), &program);
    let expected = format!(
        "[runtime] readable would let programs read {}, outside the workspace",
        outside.path().join("models").canonicalize().unwrap().display()
    );
    let untrusted = ws.untrusted();
    assert_eq!(untrusted.len(), 1, "the path inside asks nothing: {untrusted:?}");
    assert!(untrusted[0].starts_with(&expected), "{untrusted:?}");
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(1), String::new()), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&expected), "{}", text(&out.stderr));
    // Trusted, the file is read; `.ssh` beneath it is not, with `HOME` the folder holding it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chainsmith"))
        .args(["--trust", "run", "p.py"])
        .current_dir(ws.root())
        .env("XDG_CONFIG_HOME", ws.config.path())
        .env("HOME", outside.path().join("models"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "the weights\nPermission denied\n", "{}", text(&out.stderr));
}

/// A workspace's `.venv` that leads outside it, to a home or temporary folder, opens there only
/// what the user trusted: changed to lead elsewhere after trust, the run is refused (before, the
/// trusted `[runtime] python` line, the same text, let the run read the other folder's `lib`).
#[test]
fn a_workspace_interpreter_reads_outside_only_where_trusted() {
    let outside = tempfile::tempdir().unwrap();
    let python = Command::new("python3")
        .args(["-c", "import os, sys; sys.stdout.write(os.path.realpath(sys.executable))"])
        .output()
        .expect("python3 runs");
    let python = PathBuf::from(text(&python.stdout));
    for (env, note) in [("env1", "env1 lib"), ("env2", "env2 private")] {
        let prefix = outside.path().join(env);
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(prefix.join("lib")).unwrap();
        std::os::unix::fs::symlink(&python, prefix.join("bin/python")).unwrap();
        std::fs::write(prefix.join("pyvenv.cfg"), format!("home = {}\n", python.parent().unwrap().display())).unwrap();
        std::fs::write(prefix.join("lib/note.txt"), note).unwrap();
    }
    let program = format!(
        "for path in [{:?}, {:?}]:\n    try:\n        print(open(path).read())\n    except OSError as e:\n        \
         print(e.strerror)\n",
        outside.path().join("env1/lib/note.txt"),
        outside.path().join("env2/lib/note.txt")
    );
    let ws = Workspace::new("[runtime]\npython = \".venv/bin/python\"\n", &program);
    std::os::unix::fs::symlink(outside.path().join("env1"), ws.root().join(".venv")).unwrap();
    let line = |env: &str| {
        format!(
            "[runtime] python would let programs read the interpreter's files at {}, outside the workspace",
            outside.path().join(env).canonicalize().unwrap().display()
        )
    };
    let untrusted = ws.untrusted();
    assert!(untrusted.iter().any(|m| m.starts_with(&line("env1"))), "{untrusted:?}");
    let trusted = ws.chainsmith(&["trust"]);
    assert_eq!(trusted.status.code(), Some(0), "{}", text(&trusted.stderr));
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!(text(&out.stdout), "env1 lib\nPermission denied\n", "{}", text(&out.stderr));

    // The same `[runtime] python`, its `.venv` now another folder: not trusted.
    std::fs::remove_file(ws.root().join(".venv")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("env2"), ws.root().join(".venv")).unwrap();
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(1), String::new()), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&line("env2")), "{}", text(&out.stderr));
}

#[test]
fn the_sandbox_is_loosened_only_in_a_trusted_workspace() {
    let outside = tempfile::tempdir().unwrap();
    let program = format!(
        "open({:?}, 'w').write('written')\nprint('ran')\n",
        outside.path().join("planted").display().to_string()
    );
    for (setting, expected) in [
        ("sandbox = \"off\"".to_string(), "[runtime] sandbox would run programs with the sandbox off".to_string()),
        (
            format!("writable = [{:?}]", outside.path().display().to_string()),
            format!(
                "[runtime] writable would let programs write beneath {}",
                outside.path().canonicalize().unwrap().display()
            ),
        ),
    ] {
        let ws = Workspace::new(&format!("[runtime]\n{setting}\n"), &program);
        let untrusted = ws.untrusted();
        assert!(untrusted.iter().any(|m| m.starts_with(&expected)), "{setting}: {untrusted:?}");
        let out = ws.chainsmith(&["run", "p.py"]);
        assert_eq!(out.status.code(), Some(1), "{setting}: {}", text(&out.stdout));
        assert!(text(&out.stderr).contains(&expected), "{setting}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "", "{setting}: the program did not start");
        assert!(!outside.path().join("planted").exists(), "{setting}");
        let out = ws.chainsmith(&["--trust", "run", "p.py"]);
        assert_eq!(out.status.code(), Some(0), "{setting}: {}", text(&out.stderr));
        assert!(outside.path().join("planted").exists(), "{setting}: trusted, the setting holds");
        std::fs::remove_file(outside.path().join("planted")).unwrap();
    }
    // Limits below the defaults ask nothing.
    let ws = Workspace::new("[runtime]\nmax_processes = 8\n", "print('ran')\n");
    assert_eq!(ws.untrusted(), Vec::<String>::new());
    // A limit raised above its default gives the chain room to take the machine: it asks.
    let ws = Workspace::new("[runtime]\nmax_processes = 8\nmax_memory_mb = 100000\n", "print('ran')\n");
    let untrusted = ws.untrusted();
    let expected = "[runtime] limits would raise the sandbox's limits above the defaults (max_memory_mb = 100000)";
    assert!(untrusted.iter().any(|m| m.starts_with(expected)), "{untrusted:?}");
    let out = ws.chainsmith(&["run", "p.py"]);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(1), String::new()), "{}", text(&out.stderr));
    let out = ws.chainsmith(&["--trust", "run", "p.py"]);
    assert_eq!(text(&out.stdout), "ran\n", "{}", text(&out.stderr));
}

/// A writable folder inside the workspace is a loosening like a folder outside: there a chain
/// could plant (or make, in a folder that holds none yet) a `.git` whose hooks the user's next
/// `git checkout` runs unconfined. Each needs trust, keyed on the folder alone.
#[test]
fn a_writable_folder_inside_the_workspace_needs_trust() {
    let program = "import os\nos.makedirs('.git/hooks', exist_ok=True)\nopen('.git/hooks/post-checkout', 'w').write('#!/bin/sh\\ntouch HOOKED\\n')\nprint('planted')\n";
    for (writable, expected) in [
        (
            ".",
            "would let programs write anywhere in the workspace {root}, its .git, .chainsmith and chainsmith.toml included",
        ),
        (".git", "would let programs write beneath {root}/.git, inside the workspace"),
        (".git/hooks", "would let programs write beneath {root}/.git/hooks, inside the workspace"),
    ] {
        let ws = Workspace::new(&format!("[runtime]\nwritable = [{writable:?}]\n"), program);
        std::fs::create_dir_all(ws.root().join(".git/hooks")).unwrap();
        let root = ws.root().canonicalize().unwrap();
        let expected = format!("[runtime] writable {}", expected.replace("{root}", &root.display().to_string()));
        let untrusted = ws.untrusted();
        assert!(untrusted.iter().any(|m| m.starts_with(&expected)), "{writable}: {untrusted:?}");
        let out = ws.chainsmith(&["run", "p.py"]);
        assert_eq!(out.status.code(), Some(1), "{writable}: {}", text(&out.stdout));
        assert!(text(&out.stderr).contains(&expected), "{writable}: {}", text(&out.stderr));
        assert!(!ws.root().join(".git/hooks/post-checkout").exists(), "{writable}: the hook was planted");
        let out = ws.chainsmith(&["--trust", "run", "p.py"]);
        assert_eq!(text(&out.stdout), "planted\n", "{writable}: trusted, the setting holds: {}", text(&out.stderr));
    }
    // An empty output folder asks too (a chain could make a repository there), and trusted, the
    // sandbox still keeps the chain out of the workspace's own .git.
    let ws = Workspace::new("[runtime]\nwritable = [\"out\"]\n", program);
    std::fs::create_dir_all(ws.root().join("out")).unwrap();
    std::fs::create_dir_all(ws.root().join(".git/hooks")).unwrap();
    let root = ws.root().canonicalize().unwrap();
    let expected =
        format!("[runtime] writable would let programs write beneath {}/out, inside the workspace", root.display());
    assert!(ws.untrusted().iter().any(|m| m.starts_with(&expected)), "{:?}", ws.untrusted());
    let out = ws.chainsmith(&["--trust", "run", "p.py"]);
    assert_ne!(text(&out.stdout), "planted\n", "{}", text(&out.stderr));
    assert!(!ws.root().join(".git/hooks/post-checkout").exists());
}

#[test]
fn the_llms_key_goes_to_an_address_the_workspace_chose_only_once_trusted() {
    let llm = Recorder::start(|_| ok_json("{}"));
    let toml =
        format!("[llm]\nbase_url = \"{}/v1\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_LLM_KEY\"\n", llm.url());
    let ws = Workspace::new(&toml, "print('ran')\n");
    let expected = format!("[llm] would send $CHAINSMITH_TEST_LLM_KEY to {}/v1 as header Authorization", llm.url());
    let untrusted = ws.untrusted();
    assert!(untrusted.iter().any(|m| m.starts_with(&expected)), "{untrusted:?}");
    let out = ws.chainsmith(&["generate", "say hello"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains(&expected), "{}", text(&out.stderr));
    assert!(llm.received().is_empty(), "{:?}", llm.received());

    // Without a key, a server the workspace chose on this machine is still one of its services:
    // the conversation is not posted there before trust.
    let toml =
        format!("[llm]\nbase_url = \"{}/v1\"\nmodel = \"m\"\napi_key_env = \"CHAINSMITH_TEST_UNSET\"\n", llm.url());
    let ws = Workspace::new(&toml, "print('ran')\n");
    let expected = format!("[llm] base_url would call {}, on this machine", llm.url());
    assert!(ws.untrusted().iter().any(|m| m.starts_with(&expected)), "{:?}", ws.untrusted());
    let out = ws.chainsmith(&["generate", "say hello"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains(&expected), "{}", text(&out.stderr));
    assert!(llm.received().is_empty(), "{:?}", llm.received());
}

#[test]
fn a_key_an_api_echoes_never_reaches_the_program_or_the_trace() {
    let hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    // Escaped in the JSON text (as some servers write every non-ASCII or every character), and
    // in part as HTML: the raw body a `requests` call gets holds no plain key.
    let json_escaped: String = SECRET.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
    let first = SECRET.chars().next().unwrap();
    let html = format!("&#{};{}", first as u32, &SECRET[first.len_utf8()..]);
    let echoed = format!(
        r#"{{"echo": "{SECRET}", "hex": "{hex}", "{SECRET}": 1, "escaped": "{json_escaped}", "html": "{html}"}}"#
    );
    let server = Recorder::start(move |_| ok_json(&echoed));
    // Reversed, what the program received passes no output filter: only the host can redact it.
    let program = format!(
        "import json, requests\nfrom chainsmith.tools import api\n\nprint(json.dumps(api.echo(), sort_keys=True)[::-1])\nprint(requests.get({:?}).text[::-1])\n",
        format!("{}/echo", server.url())
    );
    let ws = Workspace::with_api(&server.url(), "", &program);
    let out = ws.chainsmith(&["--trust", "run", "p.py", "--trace-json", "trace.json"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let reversed = |s: &str| s.chars().rev().collect::<String>();
    for form in [SECRET, &hex, &json_escaped, &html] {
        assert!(!stdout.contains(&reversed(form)), "{form} reached the program: {stdout}");
    }
    assert_eq!(stdout.matches(&reversed("[redacted]")).count(), 10, "{stdout}");
    let trace = std::fs::read_to_string(ws.root().join("trace.json")).unwrap();
    assert!(!trace.contains(SECRET) && !trace.contains(&hex) && !trace.contains(&html), "{trace}");
}

/// A compressed answer is read as the API meant it, so a key it echoes is found and redacted
/// there; a coding chainsmith cannot read (and did not ask for) fails the call instead of handing
/// the program bytes no filter could check.
#[test]
fn a_compressed_answer_is_read_and_redacted_or_refused() {
    use std::io::Write;
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(format!(r#"{{"echo": "{SECRET}"}}"#).as_bytes()).unwrap();
    let gzipped = gzip.finish().unwrap();
    let server = Recorder::start(move |path| {
        let coding = if path.starts_with("/echo") { "gzip" } else { "br" };
        let mut answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\n\r\n",
            gzipped.len()
        )
        .into_bytes();
        answer.extend_from_slice(&gzipped);
        answer
    });
    let program = format!(
        "import requests\nfrom chainsmith.tools import api\n\nprint(api.echo())\ntry:\n    print(requests.get({:?}).content)\nexcept Exception as e:\n    print('failed:', e)\n",
        format!("{}/other", server.url())
    );
    let ws = Workspace::with_api(&server.url(), "", &program);
    let out = ws.chainsmith(&["--trust", "run", "p.py", "--trace-json", "trace.json"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("{'echo': '[redacted]'}"), "{stdout}");
    assert!(stdout.contains("failed: ") && stdout.contains("came encoded as `br`"), "{stdout}");
    assert!(!std::fs::read_to_string(ws.root().join("trace.json")).unwrap().contains(SECRET));
}

#[test]
fn a_remote_mcp_servers_headers_do_not_follow_a_redirect_to_another_origin() {
    use chainsmith::config::{HeaderValueConfig, McpConfig};
    let other = Recorder::start(|_| ok_json("{}"));
    let to = format!("{}/mcp", other.url());
    let server = Recorder::start(move |_| redirect(&to));
    let config = McpConfig {
        url: Some(format!("{}/mcp", server.url())),
        headers: [("X-Api-Key".to_string(), HeaderValueConfig::Literal(SECRET.into()))].into(),
        timeout_s: 5,
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let Err(refused) = chainsmith::mcp::McpClient::start_named("remote", &config, dir.path()) else {
        panic!("a session through a redirect to another origin");
    };
    assert!(format!("{refused:#}").contains("307"), "{refused:#}");
    assert!(server.received().iter().any(|r| r.contains(SECRET)), "the trusted address got its header");
    assert!(other.received().is_empty(), "{:?}", other.received());
}

/// A protocol file outside the workspace reached through folders inside it whose real path is
/// longer than the system can name is still outside: judged by the file opened, not by the path
/// as written.
#[test]
fn a_protocol_file_reached_deeper_than_a_path_can_name_is_still_outside() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("spec.json"), SPEC).unwrap();
    let ws = Workspace::new(
        "[[toolsets]]\nname = \"deep\"\nopenapi = \"L1/spec.json\"\nbase_url = \"https://api.example\"\n",
        CALL,
    );
    let level = |c: &str| c.repeat(200);
    let first: PathBuf = (0..12).map(|_| level("a")).collect();
    std::fs::create_dir_all(ws.root().join("n").join(&first)).unwrap();
    std::os::unix::fs::symlink(Path::new("n").join(&first), ws.root().join("L1")).unwrap();
    // Made through the link: its own path stays short, the folder's real one does not.
    let second: PathBuf = (0..12).map(|_| level("b")).collect();
    let deep = Path::new("L1").join(&second);
    std::fs::create_dir_all(ws.root().join(&deep)).unwrap();
    std::os::unix::fs::symlink(outside.path().join("spec.json"), ws.root().join(&deep).join("spec.json")).unwrap();
    let toml = std::fs::read_to_string(ws.root().join("chainsmith.toml")).unwrap();
    let toml = toml.replace("L1/spec.json", &deep.join("spec.json").display().to_string());
    std::fs::write(ws.root().join("chainsmith.toml"), toml).unwrap();
    assert!(ws.root().join("n").join(&first).join(&second).as_os_str().len() > libc::PATH_MAX as usize);

    let untrusted = ws.untrusted();
    let expected =
        format!("toolset `deep` would read {}", outside.path().join("spec.json").canonicalize().unwrap().display());
    assert!(untrusted.iter().any(|m| m.contains(&expected)), "{untrusted:?}");
    let tools = text(&ws.chainsmith(&["tools", "--format", "json"]).stdout);
    assert!(!tools.contains("deep.echo"), "{tools}");

    // A file whose own real path is too long to name, through a link to a deep folder outside,
    // is outside as well.
    let far: PathBuf = (0..12).map(|_| level("c")).collect();
    std::fs::create_dir_all(outside.path().join(&far)).unwrap();
    std::os::unix::fs::symlink(outside.path().join(&far), ws.root().join("L2")).unwrap();
    let deeper = Path::new("L2").join(&second);
    std::fs::create_dir_all(ws.root().join(&deeper)).unwrap();
    std::fs::write(ws.root().join(&deeper).join("spec.json"), SPEC).unwrap();
    let toml = std::fs::read_to_string(ws.root().join("chainsmith.toml")).unwrap();
    let toml = toml.replace(&deep.display().to_string(), &deeper.display().to_string());
    std::fs::write(ws.root().join("chainsmith.toml"), toml).unwrap();
    let untrusted = ws.untrusted();
    assert!(untrusted.iter().any(|m| m.contains("toolset `deep` would read")), "{untrusted:?}");
    let tools = text(&ws.chainsmith(&["tools", "--format", "json"]).stdout);
    assert!(!tools.contains("deep.echo"), "{tools}");
}

/// A file outside the workspace that its protocols name — by a `$ref`, as a toolset's file — is
/// not read before the workspace is trusted to read it: what it holds would enter the catalog,
/// and from there the prompts sent to a model's server the workspace may have chosen.
#[test]
fn a_protocol_reads_no_file_outside_the_workspace_before_trust() {
    let outside = tempfile::tempdir().unwrap();
    let operations = outside.path().join("operations.json");
    std::fs::write(
        &operations,
        r#"{"leak": {"get": {"operationId": "leak", "summary": "OUT-OF-WORKSPACE-7c1",
            "parameters": [{"$ref": "params.json#/q"}], "responses": {"200": {"description": "ok"}}}}}"#,
    )
    .unwrap();
    // A file further out, which only the first names.
    std::fs::write(
        outside.path().join("params.json"),
        r#"{"q": {"name": "nested_param_9d2", "in": "query", "schema": {"type": "string"}}}"#,
    )
    .unwrap();
    std::fs::write(outside.path().join("far.json"), SPEC.replace("\"echo\"", "\"far_echo\"")).unwrap();
    let ws = Workspace::new(
        "[[toolsets]]\nname = \"api\"\nopenapi = \"spec.json\"\nbase_url = \"https://api.example\"\n",
        CALL,
    );
    let spec = format!(
        r#"{{"openapi": "3.0.0", "info": {{"title": "api", "version": "1"}},
  "paths": {{"/echo": {{"get": {{"operationId": "echo", "responses": {{"200": {{"description": "ok"}}}}}}}},
             "/leak": {{"$ref": "{}#/leak"}}}}}}"#,
        operations.display()
    );
    std::fs::write(ws.root().join("spec.json"), spec).unwrap();
    // A link in the workspace to another process' deleted file, which still opens through it.
    let mut deleted = tempfile::tempfile().unwrap();
    std::io::Write::write_all(
        &mut deleted,
        br#"{"gone": {"get": {"operationId": "gone", "summary": "DELETED-5e0",
        "responses": {"200": {"description": "ok"}}}}}"#,
    )
    .unwrap();
    let through_proc = format!("/proc/{}/fd/{}", std::process::id(), std::os::fd::AsRawFd::as_raw_fd(&deleted));
    std::os::unix::fs::symlink(&through_proc, ws.root().join("gone.json")).unwrap();
    let spec = std::fs::read_to_string(ws.root().join("spec.json")).unwrap();
    std::fs::write(
        ws.root().join("spec.json"),
        spec.replacen("\"/leak\"", "\"/gone\": {\"$ref\": \"gone.json#/gone\"}, \"/leak\"", 1),
    )
    .unwrap();
    let far = format!("[[toolsets]]\nname = \"far\"\nopenapi = \"{}\"\n", outside.path().join("far.json").display());
    let toml = std::fs::read_to_string(ws.root().join("chainsmith.toml")).unwrap();
    std::fs::write(ws.root().join("chainsmith.toml"), format!("{toml}\n{far}")).unwrap();
    let real = |p: &Path| p.canonicalize().unwrap().display().to_string();

    let untrusted = ws.untrusted();
    for (who, file) in [("a `$ref` of spec.json", &operations), ("toolset `far`", &outside.path().join("far.json"))] {
        let expected = format!("{who} would read {}, outside the workspace", real(file));
        assert!(untrusted.iter().any(|m| m.contains(&expected)), "{expected}: {untrusted:?}");
    }
    let tools = text(&ws.chainsmith(&["tools", "--format", "json"]).stdout);
    assert!(
        tools.contains("api.echo")
            && !tools.contains("OUT-OF-WORKSPACE")
            && !tools.contains("far_echo")
            && !tools.contains("DELETED-5e0"),
        "{tools}"
    );
    assert!(
        untrusted.iter().any(|m| m.starts_with("`$ref` `gone.json#/gone`: cannot read")
            && m.contains("(deleted), outside the workspace")),
        "{through_proc}: {untrusted:?}"
    );
    // Warnings, not errors: the workspace is as it should be, only not trusted yet.
    let checked = ws.chainsmith(&["check"]);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stdout));

    let trusted = ws.chainsmith(&["trust"]);
    let listed = text(&trusted.stdout);
    assert!(listed.contains(&format!("read <{}>", real(&operations))), "{listed}");
    assert!(listed.contains(&format!("read <{}>", real(&outside.path().join("params.json")))), "{listed}");
    let tools = text(&ws.chainsmith(&["tools", "--format", "json"]).stdout);
    assert!(
        tools.contains("OUT-OF-WORKSPACE-7c1") && tools.contains("nested_param_9d2") && tools.contains("far_echo"),
        "{tools}"
    );
    assert!(ws.untrusted().is_empty(), "{:?}", ws.untrusted());
}

/// A toolset's size limit above the default is trusted for that toolset: another toolset with as
/// large a limit asks again.
#[test]
fn a_raised_protocol_size_limit_is_trusted_per_toolset() {
    let toolset = |name: &str| format!("[[toolsets]]\nname = \"{name}\"\nopenapi = \"spec.json\"\nmax_mb = 300\n");
    let ws = Workspace::new(&toolset("api"), CALL);
    let asks = |ws: &Workspace| ws.untrusted().into_iter().filter(|m| m.contains("(max_mb)")).collect::<Vec<_>>();
    assert_eq!(asks(&ws).len(), 1, "{:?}", ws.untrusted());
    assert!(ws.chainsmith(&["trust"]).status.success());
    assert_eq!(asks(&ws), Vec::<String>::new(), "trusted");
    std::fs::write(ws.root().join("chainsmith.toml"), format!("{}{}", toolset("api"), toolset("other"))).unwrap();
    let asked = asks(&ws);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].starts_with("toolset `other` (max_mb) would read its protocol files up to 300 MiB"), "{asked:?}");
}
