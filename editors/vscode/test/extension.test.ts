// The compiled extension itself (out/src/extension.js), with the real vscode-languageclient and the
// real server, under a stand-in `vscode` module (test/fakeVscode.ts): activation, the status bar
// item fed by chainsmith/status, the server's commands in the palette, and the VS Code-style errors
// when there is no workspace or no executable.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";

import { installFakeVscode } from "./fakeVscode";

const fake = installFakeVscode();
const extension: { activate(c: unknown): Promise<void>; deactivate(): Promise<void> } = require("../src/extension");

const repo = path.resolve(__dirname, "..", "..", "..", "..");
const binary = process.env.CHAINSMITH_BIN || path.join(repo, "target", "debug", "chainsmith");
const SERVER_COMMAND_IDS = ["chainsmith.run", "chainsmith.generate", "chainsmith.fix", "chainsmith.probe", "chainsmith.probeAll", "chainsmith.graph"];

const temp = fs.mkdtempSync(path.join(os.tmpdir(), "chainsmith-extension-"));
after(() => fs.rmSync(temp, { recursive: true, force: true }));

/** Activates as VS Code does; returns a function that deactivates and disposes as VS Code does. */
async function activate(): Promise<() => Promise<void>> {
  const context = { subscriptions: [] as Array<{ dispose(): unknown }> };
  await extension.activate(context);
  return async () => {
    await extension.deactivate();
    for (const d of context.subscriptions) d.dispose();
  };
}

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; log:\n${fake.log.join("\n")}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("the extension under a stand-in VS Code", () => {
  it("outside a chainsmith workspace starts nothing and says so when a command is used", async () => {
    const plain = path.join(temp, "plain");
    fs.mkdirSync(plain);
    fake.reset([plain], {});
    const deactivate = await activate();
    try {
      assert.ok(fake.commands.has("chainsmith.run"), "the palette entry answers");
      await fake.module.commands.executeCommand("chainsmith.run");
      assert.equal(fake.shown.length, 1);
      assert.equal(fake.shown[0].kind, "error");
      assert.match(fake.shown[0].message, /^chainsmith: Run chain: Open a folder that holds chainsmith\.toml or protocols\//);
    } finally {
      await deactivate();
    }
    assert.equal(fake.commands.size, 0, "everything registered is disposed");
  });

  it("reports a chainsmith.path that points nowhere, the VS Code way", async () => {
    const ws = path.join(temp, "missing-binary");
    fs.mkdirSync(ws);
    fs.writeFileSync(path.join(ws, "chainsmith.toml"), "");
    fake.reset([ws], { path: "/nonexistent/chainsmith" });
    const deactivate = await activate();
    try {
      const error = fake.shown.find((s) => s.kind === "error");
      assert.ok(error, JSON.stringify(fake.shown));
      assert.equal(error.message, "chainsmith: chainsmith.path points to /nonexistent/chainsmith, which is not an executable file.");
      assert.deepEqual(error.actions, ["Open Settings"]);
      assert.equal(fake.statusItem.text, "$(error) chainsmith");
      assert.equal(fake.statusItem.command, "chainsmith.restart");
    } finally {
      await deactivate();
    }
  });

  it("opens the settings where chainsmith.path can be set: the Remote tab in a remote window", async () => {
    const ws = path.join(temp, "missing-binary-settings");
    fs.mkdirSync(ws);
    fs.writeFileSync(path.join(ws, "chainsmith.toml"), "");
    for (const [remoteName, lacking, expected] of [
      [undefined, undefined, { id: "workbench.action.openSettings", args: ["chainsmith.path"] }],
      ["ssh-remote", undefined, { id: "workbench.action.openRemoteSettings", args: [{ query: "chainsmith.path" }] }],
      // A workbench without Open Remote Settings: the User tab, at least at the setting.
      ["ssh-remote", "workbench.action.openRemoteSettings", { id: "workbench.action.openSettings", args: ["chainsmith.path"] }],
    ] as const) {
      fake.reset([ws], { path: "/nonexistent/chainsmith" });
      fake.remoteName = remoteName;
      if (lacking) fake.lacking.add(lacking);
      fake.click = "Open Settings";
      const deactivate = await activate();
      try {
        await until("the settings to open", () => fake.workbench.length > 0);
        assert.deepEqual(fake.workbench, [expected], `remote window: ${remoteName ?? "none"}`);
      } finally {
        await deactivate();
      }
    }
  });

  it("starts the server for a nested workspace, shows its tools and runs its commands", async () => {
    assert.ok(fs.existsSync(binary), `no chainsmith binary at ${binary}: build it with \`cargo build\``);
    const folder = path.join(temp, "repo");
    const ws = path.join(folder, "examples", "tmdb");
    fs.mkdirSync(ws, { recursive: true });
    fs.cpSync(path.join(repo, "examples", "tmdb"), ws, { recursive: true });
    fake.reset([folder], {
      path: binary,
      "diagnostics.severity": { "unknown-key": "hint" },
      "llm.apiKeyEnv": "sk-live-0123456789", // a key where a variable name belongs
    });
    fake.foundFiles = [path.join(ws, "chainsmith.toml")];
    const deactivate = await activate();
    try {
      await until("the status item to show the catalog", () => fake.statusItem.text === "$(tools) 54 tools");
      assert.equal(fake.statusItem.tooltip, "chainsmith: 1 toolset, 54 tools, every response schema known.");
      assert.equal(fake.statusItem.visible, true);
      assert.equal(fake.contexts.get("chainsmith.active"), true);
      for (const id of SERVER_COMMAND_IDS) assert.ok(fake.commands.has(id), `${id} is registered by the client`);

      // The misplaced key was refused with a warning that does not repeat it.
      const warning = fake.shown.find((s) => s.kind === "warning" && s.message.includes("apiKeyEnv"));
      assert.ok(warning, JSON.stringify(fake.shown));
      assert.ok(!fake.shown.some((s) => s.message.includes("sk-live")), "the key never appears");

      // A command from the palette, on the active chain: answered, no error shown.
      fake.activeDocument = path.join(ws, "chains", "task000_sofia_coppola_directed.py");
      const errorsBefore = fake.shown.filter((s) => s.kind === "error").length;
      const result = await fake.module.commands.executeCommand("chainsmith.graph");
      assert.ok(result === null || result === undefined || typeof result === "object", String(result));
      assert.equal(fake.shown.filter((s) => s.kind === "error").length, errorsBefore, JSON.stringify(fake.shown));

      // A settings change reaches the running server without restarting it.
      fake.changeSettings({ path: binary, "diagnostics.severity": { "unknown-key": "off" } });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(fake.statusItem.text, "$(tools) 54 tools");
    } finally {
      await deactivate();
    }
    assert.equal(fake.contexts.get("chainsmith.active"), false);
    assert.equal(fake.commands.size, 0, "the client's commands are gone with it");
  });

  it("probes from the palette and the status bar, and cancels a task from its notification", async () => {
    assert.ok(fs.existsSync(binary), `no chainsmith binary at ${binary}: build it with \`cargo build\``);
    const ws = path.join(temp, "tasks");
    fs.cpSync(path.join(repo, "examples", "tmdb"), ws, { recursive: true });
    fs.writeFileSync(path.join(ws, "sleepy.py"), "import time\ntime.sleep(60)\n");
    fake.reset([ws], { path: binary });
    const deactivate = await activate();
    try {
      await until("the status item to show the catalog", () => fake.statusItem.text === "$(tools) 54 tools");
      const errors = () => fake.shown.filter((s) => s.kind === "error").map((s) => s.message);

      // The palette's "Probe tool" and "Probe all" (the status bar item's command when tools are
      // unprobed) send the active document; the server reads it as the contract says.
      fake.activeDocument = path.join(ws, "chains", "task000_sofia_coppola_directed.py");
      await fake.module.commands.executeCommand("chainsmith.probe");
      await until("the answer to Probe tool", () =>
        fake.shown.some((s) => s.message.includes("task000_sofia_coppola_directed.py uses no tool whose response is unknown")),
      );
      await fake.module.commands.executeCommand("chainsmith.probeAll");
      await until("the answer to Probe all", () => fake.shown.some((s) => s.message === "chainsmith: every response schema is known"));
      assert.deepEqual(errors(), [], "no command failed");
      assert.ok(!fake.shown.some((s) => s.message.includes("file://")), JSON.stringify(fake.shown));

      // A run at work shows a notification with Cancel; Cancel stops it and the user is told.
      fake.activeDocument = path.join(ws, "sleepy.py");
      await fake.module.commands.executeCommand("chainsmith.run");
      await until("the run's notification", () => fake.progress.some((p) => p.title === "chainsmith: Run chain"));
      const shown = fake.progress.find((p) => p.title === "chainsmith: Run chain")!;
      assert.equal(shown.location, 15, "ProgressLocation.Notification");
      assert.equal(shown.cancellable, true);
      shown.cancel();
      await until("cancelled to be said", () => fake.shown.some((s) => s.message === "chainsmith: the run of sleepy.py was cancelled"));
      await until("the notification to close", () => shown.done);
      assert.deepEqual(errors(), [], "no command failed");
    } finally {
      await deactivate();
    }
  });
});
