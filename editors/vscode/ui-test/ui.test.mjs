// The VS Code extension in a real VS Code (code-server) driven in a real browser (Chromium through
// playwright-core): what a user sees in a copy of examples/tmdb. Run by tests/it/editors.rs
// (`vscode_in_a_real_browser`), which names what it needs in the environment:
//   CHAINSMITH_BIN   the chainsmith binary (the extension's `chainsmith.path`, Machine-scoped)
//   CHAINSMITH_VSIX  the packaged extension, installed with `code-server --install-extension`
//   CODE_SERVER      code-server's entry script (run with this Node, which must be Node 24)
//   CHROMIUM         the browser (Debian's chromium)
//   EXAMPLE          examples/tmdb, copied into a temporary workspace
//   ARTIFACTS        where a failure's screenshot and code-server's log are kept
// Nothing is downloaded here and nothing outside temporary folders is written.

import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const need = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (tests/it/editors.rs sets it)`);
  return value;
};
const bin = need("CHAINSMITH_BIN");
const vsix = need("CHAINSMITH_VSIX");
const codeServer = need("CODE_SERVER");
const browserPath = need("CHROMIUM");
const example = need("EXAMPLE");
const artifacts = need("ARTIFACTS");
mkdirSync(artifacts, { recursive: true });

const home = mkdtempSync(join(tmpdir(), "chainsmith-ui-"));
const children = [];
const log = createWriteStream(join(artifacts, "code-server.log"));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function start(command, args, env, label) {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  child.stdout.on("data", (d) => log.write(`[${label}] ${d}`));
  child.stderr.on("data", (d) => log.write(`[${label}] ${d}`));
  return child;
}

function finished(child) {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** Waits for `predicate` (async) to hold, polling; fails with `what` after `ms`. */
async function until(what, predicate, ms = 60_000) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await predicate();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}${last instanceof Error ? ` (${last.message})` : ""}`);
}

const steps = [];
function step(name) {
  steps.push(name);
  console.log(`# ${name}`);
}

let page;
let browser;
try {
  // The workspace: examples/tmdb with its API answered by `chainsmith mock` on 127.0.0.1.
  const workspace = join(home, "tmdb");
  cpSync(example, workspace, { recursive: true });
  const mock = start(bin, ["--root", workspace, "mock", "--port", "0"], {}, "mock");
  const mockUrl = await new Promise((resolve, reject) => {
    mock.stdout.on("data", (d) => {
      const found = /http:\/\/127\.0\.0\.1:\d+\/tmdb/.exec(String(d));
      if (found) resolve(found[0]);
    });
    mock.once("exit", (code) => reject(new Error(`chainsmith mock exited (${code})`)));
  });
  const toml = readFileSync(join(workspace, "chainsmith.toml"), "utf8").replace(
    'base_url = "https://api.themoviedb.org/3"',
    `base_url = "${mockUrl}"`,
  );
  // Runs may last as long as the slow one below sleeps (the default is 60 s): only Cancel ends it.
  writeFileSync(join(workspace, "chainsmith.toml"), `${toml}\n[runtime]\ntimeout_s = 600\n`);
  writeFileSync(join(workspace, "typing.py"), "from chainsmith.tools import tmdb\n\n");
  // The example's chains call TMDB's own address with requests; this one calls the toolset, which
  // the workspace now points at the mock. (mistakes.py's unknown-endpoint is about TMDB's address
  // too, so it is not expected here.)
  writeFileSync(
    join(workspace, "run_me.py"),
    [
      "from chainsmith.tools import tmdb",
      "",
      'found = tmdb.search_person(query="Sofia Coppola")',
      'credits = tmdb.person_movie_credits(person_id=found["results"][0]["id"])',
      'print(len(credits["crew"]))',
      "",
    ].join("\n"),
  );

  // A run that would take five minutes: for Cancel.
  writeFileSync(
    join(workspace, "slow_run.py"),
    [
      "import time",
      "",
      "from chainsmith.tools import tmdb",
      "",
      'found = tmdb.search_person(query="Sofia Coppola")',
      "time.sleep(300)",
      'print(found["results"][0]["name"])',
      "",
    ].join("\n"),
  );

  // code-server's profile: chainsmith.path is machine-scoped, so it goes in Machine/settings.json.
  const userData = join(home, "user-data");
  const extensions = join(home, "extensions");
  mkdirSync(join(userData, "Machine"), { recursive: true });
  mkdirSync(join(userData, "User"), { recursive: true });
  writeFileSync(join(userData, "Machine", "settings.json"), JSON.stringify({ "chainsmith.path": bin }));
  writeFileSync(
    join(userData, "User", "settings.json"),
    JSON.stringify({
      "workbench.startupEditor": "none",
      "security.workspace.trust.enabled": false,
      "telemetry.telemetryLevel": "off",
      "workbench.tips.enabled": false,
      "extensions.ignoreRecommendations": true,
      "editor.inlayHints.enabled": "on",
      "editor.hover.delay": 100,
      "chat.disableAIFeatures": true,
      "workbench.secondarySideBar.defaultVisibility": "hidden",
    }),
  );
  const env = {
    XDG_CONFIG_HOME: join(home, "config"),
    XDG_DATA_HOME: join(home, "data"),
    XDG_CACHE_HOME: join(home, "cache"),
    TMDB_KEY: "ui-test-key",
  };
  step("install the .vsix");
  const install = start(
    process.execPath,
    [codeServer, "--user-data-dir", userData, "--extensions-dir", extensions, "--install-extension", vsix],
    env,
    "install",
  );
  const installed = await finished(install);
  if (installed !== 0) throw new Error(`code-server --install-extension exited with ${installed}`);

  const port = await freePort();
  start(
    process.execPath,
    [
      codeServer,
      "--auth", "none",
      "--bind-addr", `127.0.0.1:${port}`,
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--user-data-dir", userData,
      "--extensions-dir", extensions,
    ],
    env,
    "code-server",
  );
  await until("code-server to listen", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 90_000);

  browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox", "--disable-gpu"] });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: 90_000 });
  const keyboard = page.keyboard;

  // Quick Open, whatever mode the browser's key binding opened it in: its text decides the mode
  // (a file's path, `:line:column`).
  async function quickOpen(text) {
    await keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible" });
    await input.fill(text);
  }

  async function open(file) {
    await quickOpen(file);
    await until(`${file} in Quick Open`, async () =>
      (await page.locator(".quick-input-list .monaco-list-row").first().textContent())?.includes(file.split("/").pop()),
    );
    await keyboard.press("Enter");
    // Once the graph opened beside, each editor group has an active tab.
    await until(`${file} open`, async () =>
      (await page.locator(".tab.active").allTextContents()).some((t) => t.includes(file.split("/").pop())),
    );
    // The editor of the group the file opened in (once the graph opened beside, there are two).
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  }

  /** Runs a command by its title from the Command Palette (browsers keep some key bindings). */
  async function command(title) {
    await quickOpen(`>${title}`);
    await until(`"${title}" in the Command Palette`, async () =>
      (await page.locator(".quick-input-list .monaco-list-row").first().textContent())?.includes(title),
    );
    await keyboard.press("Enter");
  }

  /** Moves the cursor and waits until the status bar shows it there: on a busy machine an Enter
   *  pressed before Quick Open has read `:line:col` leaves the cursor where it was. */
  async function goTo(line, column) {
    const at = `Ln ${line}, Col ${column}`;
    const cursorThere = async () => (await page.locator(".statusbar").innerText()).includes(at);
    for (let attempt = 1; ; attempt++) {
      await quickOpen(`:${line}:${column}`);
      await keyboard.press("Enter");
      try {
        await until(`the cursor at ${at}`, cursorThere, 10_000);
        return;
      } catch (e) {
        if (attempt === 3) throw e;
        await keyboard.press("Escape");
      }
    }
  }

  const editorText = async () => (await page.locator(".monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");

  step("the server starts and loads the workspace's tools");
  await until(
    "the status bar to show the workspace's tools",
    async () => /\b\d+ tools\b/.test((await page.locator(".statusbar").innerText()) ?? ""),
    120_000,
  );

  step("squiggles and Problems rows for the planted mistakes");
  await open("mistakes/mistakes.py");
  await until("error squiggles", async () => (await page.locator('.monaco-editor [class*="squiggly-error"]').count()) >= 7);
  await keyboard.press("Control+Shift+M");
  const problems = await until("the Problems panel to list chainsmith's diagnostics", async () => {
    const rows = await page.locator(".markers-panel .monaco-list-row").allInnerTexts();
    return rows.filter((r) => r.includes("chainsmith")).length >= 8 ? rows : null;
  });
  const expected = [
    ["unknown-tool", "Ln 15, Col 13"],
    ["unknown-argument", "Ln 16, Col 54"],
    ["missing-argument", "Ln 17, Col 17"],
    ["not-in-enum", "Ln 19, Col 37"],
    ["unknown-key", "Ln 20, Col 18"],
  ];
  for (const [code, at] of expected) {
    if (!problems.some((row) => row.includes(code) && row.includes(at))) {
      throw new Error(`no Problems row with ${code} at ${at}:\n${problems.join("\n")}`);
    }
  }

  step("a quick fix applied through the UI");
  const fix = page.locator(".action-widget .monaco-list-row", { hasText: "Change to `search_person`" });
  // The menu lists what the server answered when it opened; asked again if that answer was still empty.
  for (let attempt = 1; ; attempt++) {
    await goTo(15, 15);
    await command("Quick Fix...");
    try {
      await fix.first().waitFor({ state: "visible", timeout: 20_000 });
      break;
    } catch (e) {
      if (attempt === 3) throw e;
      await keyboard.press("Escape");
    }
  }
  await fix.first().click();
  await until("the typo replaced", async () => {
    const text = await editorText();
    return !text.includes("search_persn") && text.includes('typo = tmdb.search_person(query="Sofia Coppola")');
  });

  step("hover shows the tool's description");
  await goTo(14, 16);
  await command("Show or Focus Hover");
  await until("a hover naming the tool and its description", async () => {
    const hover = await page.locator(".monaco-hover").first().innerText();
    return hover.includes("search_person") && hover.includes("Search for people") ? hover : null;
  });
  await keyboard.press("Escape");

  step("completion after `tmdb.` lists TMDB tools");
  await open("typing.py");
  await goTo(2, 1);
  await keyboard.type("found = tmdb.");
  const suggestions = await until("the suggest widget with TMDB tools", async () => {
    const rows = await page.locator(".suggest-widget .monaco-list-row").allInnerTexts();
    return rows.some((r) => r.includes("search_person")) ? rows : null;
  });
  await keyboard.type("movie_cred");
  await until("the list to narrow to movie_credits", async () => {
    const rows = await page.locator(".suggest-widget .monaco-list-row").allInnerTexts();
    return rows.length > 0 && rows[0].includes("movie_credits");
  });
  await keyboard.press("Escape");
  console.log(`# ${suggestions.length} suggestions shown after tmdb.`);

  step("Run chain from its code lens: ✓ hints from the mock's answers");
  await open("run_me.py");
  // The lens stands above line 1: at the top of the file, where a user scrolls to find it (the
  // click that focused the editor may have put the cursor, and the view, past the last line).
  await goTo(1, 1);
  const lens = page.locator(".contentWidgets a, .codelens-decoration a", { hasText: "Run chain" });
  await lens.first().waitFor({ state: "visible", timeout: 60_000 });
  await lens.first().click();
  // Inlay hints are drawn as CSS content of injected spans, not as text.
  const hints = await until(
    "✓ 200 inlay hints after the run",
    async () => {
      const shown = await page.evaluate(() =>
        [...document.querySelectorAll(".monaco-editor .view-lines span")]
          .flatMap((span) => [getComputedStyle(span, "::before").content, getComputedStyle(span, "::after").content, span.textContent])
          .filter((text) => text && text.includes("✓")),
      );
      return shown.length >= 2 ? shown : null;
    },
    120_000,
  );
  if (!hints.some((h) => h.includes("200"))) throw new Error(`hints without a 200: ${hints.join(" | ")}`);
  await page.screenshot({ path: join(artifacts, "run-chain.png") });
  console.log(`# ${hints.length} ✓ hints`);

  step("Show tool graph draws the program's neighbourhood in a webview, its tools filled");
  await command("chainsmith: Show tool graph");
  const drawn = await until("the graph's picture in a webview", async () => {
    for (const frame of page.frames()) {
      const found = await frame
        .evaluate(() => {
          const svg = document.querySelector("svg");
          if (!svg) return null;
          // The size a label is drawn at on the screen: its font size times the picture's scale.
          const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          const sizes = [...svg.querySelectorAll("text")].map((t) => parseFloat(getComputedStyle(t).fontSize) * scale);
          return {
            text: svg.textContent ?? "",
            fills: [...svg.querySelectorAll("[fill]")].map((e) => e.getAttribute("fill")),
            smallest: Math.min(...sizes),
          };
        })
        .catch(() => null);
      if (found?.text.includes("tmdb.person_movie_credits")) return found;
    }
    return null;
  });
  if (!drawn.fills.includes("#bbdefbff")) throw new Error(`the program's tools are not filled: ${drawn.fills.join(" ")}`);
  if (!(drawn.smallest >= 11)) throw new Error(`graph labels drawn at ${drawn.smallest.toFixed(1)} px, under 11 px`);
  console.log(`# graph labels at ${drawn.smallest.toFixed(1)} px or more`);
  await page.screenshot({ path: join(artifacts, "tool-graph.png") });

  // Notifications' text, the toasts VS Code shows bottom right.
  const toasts = async () => (await page.locator(".notification-toast").allInnerTexts()).join("\n");

  step("Probe all from the palette (what the status bar runs) answers; the document is not taken for a tool");
  await command("chainsmith: Probe all unprobed tools");
  await until("the server's answer to Probe all", async () => (await toasts()).includes("every response schema is known"));
  if ((await toasts()).includes("no tool")) throw new Error(`a URI was taken for a tool: ${await toasts()}`);

  step("Cancel on a run's progress notification stops it: the server says it was cancelled");
  await open("slow_run.py");
  await goTo(1, 1);
  // The lens of the editor slow_run.py opened in (run_me.py's may be open in the other group, or
  // hidden behind it in this one).
  const slowLens = page
    .locator(".editor-group-container.active")
    .locator(".contentWidgets a:visible, .codelens-decoration a:visible", { hasText: "Run chain" });
  await slowLens.first().waitFor({ state: "visible", timeout: 60_000 });
  await slowLens.first().click();
  const running = page.locator(".notification-toast", { hasText: "Run chain" });
  await running.first().waitFor({ state: "visible", timeout: 60_000 });
  // The run is under way (its first call made) before it is cancelled: its notification stays.
  await until("the run's progress past its start", async () => (await running.first().innerText()).includes("search_person"));
  const cancel = running.first().getByRole("button", { name: "Cancel" });
  await cancel.waitFor({ state: "visible", timeout: 10_000 });
  const clicked = Date.now();
  await cancel.click();
  // The program sleeps for five minutes: only a cancelled run ends within this wait.
  await until("the server to say the run was cancelled", async () => (await toasts()).includes("slow_run.py was cancelled"), 60_000);
  console.log(`# "cancelled" shown ${Date.now() - clicked} ms after the click`);
  await until("the run's progress notification to close", async () => (await running.count()) === 0, 30_000);

  console.log(`ok ${steps.length} steps`);
} catch (error) {
  console.error(`not ok: ${steps.at(-1) ?? "setup"}: ${error instanceof Error ? error.stack : error}`);
  if (page) {
    await page.screenshot({ path: join(artifacts, "failure.png") }).catch(() => {});
  }
  process.exitCode = 1;
} finally {
  await browser?.close().catch(() => {});
  for (const child of children) child.kill("SIGKILL");
  log.end();
  rmSync(home, { recursive: true, force: true, maxRetries: 3 });
}
