// The real `chainsmith lsp` over stdio, spoken to as VS Code speaks to it: vscode-jsonrpc and
// vscode-languageserver-protocol (what vscode-languageclient is built on), VS Code's kind of client
// capabilities, and the initialization options and `workspace/configuration` answers the extension
// itself computes (src/settings.ts).
//
// The binary: $CHAINSMITH_BIN (tests/it/editors.rs passes the one cargo built), else
// target/debug/chainsmith of this repository. The `chainsmith.run` round trip runs a chain against
// the TMDB-like test server (tests/support/tmdb_server.py, started here with python3).

import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as readline from "node:readline";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";
import {
  type CompletionItem,
  type CompletionList,
  type Diagnostic,
  type InitializeResult,
  type ProtocolConnection,
  type PublishDiagnosticsParams,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  createProtocolConnection,
} from "vscode-languageserver-protocol/node";

import { SERVER_COMMANDS } from "../src/commands";
import { type ConfigurationItem, type ServerSettings, answerConfiguration, toServerSettings } from "../src/settings";

const repo = path.resolve(__dirname, "..", "..", "..", "..");
const binary = process.env.CHAINSMITH_BIN || path.join(repo, "target", "debug", process.platform === "win32" ? "chainsmith.exe" : "chainsmith");
const WAIT_MS = 10_000;

/** The settings a user might have set in VS Code, as the extension maps them. */
const userSettings = {
  "llm.model": "qwen2.5-coder:7b",
  "llm.apiKeyEnv": "CHAINSMITH_TEST_KEY",
  "runtime.timeoutS": 30,
  "diagnostics.severity": { "unknown-key": "hint" },
  "inlayHints.enabled": true,
};

const uriOf = (file: string) => pathToFileURL(file).toString();

/** Waits for a condition over what the server has sent so far. */
async function until<T>(what: string, probe: () => T | undefined, describeLast?: () => string): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      throw new Error(`no ${what} within ${WAIT_MS} ms${describeLast ? `; last seen: ${describeLast()}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** `[0-based line, code]` for every line marked `# mistake: <code>`. */
function plantedMistakes(text: string): Array<[number, string]> {
  return text.split("\n").flatMap((line, i): Array<[number, string]> => {
    const m = /# mistake: ([a-z-]+)\s*$/.exec(line);
    return m ? [[i, m[1]]] : [];
  });
}

const labels = (result: CompletionItem[] | CompletionList | null): CompletionItem[] =>
  result === null ? [] : Array.isArray(result) ? result : result.items;

const mentions = (item: CompletionItem, word: string) =>
  [item.label, item.insertText, item.filterText, item.textEdit?.newText].some((s) => typeof s === "string" && s.includes(word));

describe("chainsmith lsp over stdio, as VS Code speaks to it", () => {
  let workspace: string;
  let child: ChildProcess;
  let connection: ProtocolConnection;
  let stderr = "";
  let initialized: InitializeResult;
  let settings: ServerSettings = toServerSettings(userSettings).settings;
  const configurationRequests: ConfigurationItem[][] = [];
  const diagnostics = new Map<string, PublishDiagnosticsParams[]>();
  const statuses: Array<{ toolsets: number; tools: number; unprobed: number; file_watching: string }> = [];
  const messages: Array<{ type: number; message: string }> = [];
  let exited: { code: number | null; signal: string | null } | undefined;

  const latest = (uri: string) => diagnostics.get(uri)?.at(-1)?.diagnostics;

  before(async () => {
    assert.ok(
      fs.existsSync(binary),
      `no chainsmith binary at ${binary}: build it with \`cargo build\` (or set CHAINSMITH_BIN)`,
    );
    // A copy of the example workspace: nothing the server might write lands in the repository.
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), "chainsmith-vscode-"));
    fs.cpSync(path.join(repo, "examples", "tmdb"), workspace, { recursive: true });

    child = spawn(binary, ["lsp"], { cwd: workspace, stdio: ["pipe", "pipe", "pipe"] });
    child.stderr!.on("data", (d) => (stderr += d.toString()));
    child.on("exit", (code, signal) => (exited = { code, signal }));
    connection = createProtocolConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));

    // What vscode-languageclient does with the server's requests, with the extension's middleware.
    connection.onRequest("workspace/configuration", (params: { items: ConfigurationItem[] }) => {
      configurationRequests.push(params.items);
      return answerConfiguration(params.items, settings);
    });
    connection.onRequest("client/registerCapability", () => null);
    connection.onRequest("client/unregisterCapability", () => null);
    connection.onRequest("window/workDoneProgress/create", () => null);
    // Any other request gets vscode-jsonrpc's MethodNotFound answer.
    connection.onNotification("textDocument/publishDiagnostics", (p: PublishDiagnosticsParams) => {
      const list = diagnostics.get(p.uri) ?? [];
      list.push(p);
      diagnostics.set(p.uri, list);
    });
    connection.onNotification("chainsmith/status", (p) => {
      statuses.push(p);
    });
    connection.onNotification("window/showMessage", (p) => {
      messages.push(p);
    });
    connection.onNotification("window/logMessage", () => {});
    connection.onNotification("$/progress", () => {});
    connection.listen();

    const root = uriOf(workspace);
    initialized = await connection.sendRequest("initialize", {
      processId: process.pid,
      clientInfo: { name: "Visual Studio Code", version: "1.91.0" },
      locale: "en",
      rootPath: workspace,
      rootUri: root,
      workspaceFolders: [{ uri: root, name: path.basename(workspace) }],
      initializationOptions: settings,
      capabilities: {
        general: { positionEncodings: ["utf-16"] },
        window: { workDoneProgress: true, showMessage: { messageActionItem: { additionalPropertiesSupport: true } } },
        workspace: {
          configuration: true,
          workspaceFolders: true,
          didChangeConfiguration: { dynamicRegistration: true },
          didChangeWatchedFiles: { dynamicRegistration: true, relativePatternSupport: true },
          executeCommand: { dynamicRegistration: true },
          symbol: { dynamicRegistration: true },
          inlayHint: { refreshSupport: true },
          codeLens: { refreshSupport: true },
          diagnostics: { refreshSupport: true },
        },
        textDocument: {
          synchronization: { dynamicRegistration: true, willSave: true, willSaveWaitUntil: true, didSave: true },
          completion: {
            dynamicRegistration: true,
            contextSupport: true,
            completionItem: {
              snippetSupport: true,
              commitCharactersSupport: true,
              documentationFormat: ["markdown", "plaintext"],
              deprecatedSupport: true,
              preselectSupport: true,
              insertReplaceSupport: true,
              labelDetailsSupport: true,
              resolveSupport: { properties: ["documentation", "detail", "additionalTextEdits"] },
            },
          },
          hover: { dynamicRegistration: true, contentFormat: ["markdown", "plaintext"] },
          signatureHelp: {
            dynamicRegistration: true,
            signatureInformation: {
              documentationFormat: ["markdown", "plaintext"],
              parameterInformation: { labelOffsetSupport: true },
              activeParameterSupport: true,
            },
            contextSupport: true,
          },
          definition: { dynamicRegistration: true, linkSupport: true },
          documentSymbol: { dynamicRegistration: true, hierarchicalDocumentSymbolSupport: true },
          codeAction: {
            dynamicRegistration: true,
            isPreferredSupport: true,
            codeActionLiteralSupport: {
              codeActionKind: { valueSet: ["", "quickfix", "refactor", "refactor.extract", "source", "source.organizeImports"] },
            },
            dataSupport: true,
            resolveSupport: { properties: ["edit"] },
          },
          codeLens: { dynamicRegistration: true },
          inlayHint: { dynamicRegistration: true, resolveSupport: { properties: ["tooltip", "textEdits", "label.tooltip"] } },
          publishDiagnostics: { relatedInformation: true, versionSupport: false, codeDescriptionSupport: true, dataSupport: true },
        },
      },
    });
    await connection.sendNotification("initialized", {});
  });

  after(async () => {
    if (exited === undefined && child) {
      try {
        await connection.sendRequest("shutdown");
        await connection.sendNotification("exit");
      } catch {
        /* reported by the test that failed */
      }
      const deadline = Date.now() + 5000;
      while (exited === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      if (exited === undefined) child.kill("SIGKILL");
    }
    connection?.dispose();
    if (workspace) fs.rmSync(workspace, { recursive: true, force: true });
  });

  it("advertises what the extension relies on", () => {
    const caps = initialized.capabilities;
    assert.equal(caps.positionEncoding, "utf-16");
    assert.deepEqual([...(caps.executeCommandProvider?.commands ?? [])].sort(), SERVER_COMMANDS.map((c) => c.id).sort());
    for (const trigger of [".", '"', "["]) assert.ok(caps.completionProvider?.triggerCharacters?.includes(trigger), trigger);
    assert.equal(initialized.serverInfo?.name, "chainsmith");
  });

  it("sends chainsmith/status and pulls the chainsmith configuration section", async () => {
    const status = await until("chainsmith/status", () => statuses.at(-1));
    assert.deepEqual(Object.keys(status).sort(), ["file_watching", "tools", "toolsets", "unprobed"]);
    // This client registers file watchers for the server, as VS Code does.
    assert.equal(status.file_watching, "editor");
    assert.equal(status.toolsets, 1);
    assert.equal(status.tools, 54);
    assert.ok(status.unprobed >= 0 && status.unprobed <= status.tools);
    const items = await until("workspace/configuration", () => configurationRequests.at(0));
    assert.ok(items.some((i) => i.section === "chainsmith"), JSON.stringify(items));
  });

  it("reports the planted mistakes of mistakes.py at their lines, with the configured severity", async () => {
    const file = path.join(workspace, "mistakes", "mistakes.py");
    const text = fs.readFileSync(file, "utf8");
    const uri = uriOf(file);
    const planted = plantedMistakes(text);
    assert.equal(planted.length, 10, "mistakes.py plants ten mistakes");
    await connection.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "python", version: 1, text } });
    const key = (d: Diagnostic): [number, string] => [d.range.start.line, String(d.code)];
    const found = await until(
      "diagnostics matching the planted mistakes",
      () => {
        const ds = latest(uri);
        return ds && JSON.stringify(ds.map(key)) === JSON.stringify(planted) ? ds : undefined;
      },
      () => JSON.stringify(latest(uri)?.map(key)),
    );
    // chainsmith.diagnostics.severity {"unknown-key": "hint"} travelled through the mapping.
    const unknownKey = found.find((d) => d.code === "unknown-key");
    assert.equal(unknownKey?.severity, 4, "unknown-key is a hint, as the settings say");
    for (const d of found.filter((d) => d.code !== "unknown-key")) {
      assert.ok(d.severity === 1 || d.severity === 2, `${d.code} is an error or a warning`);
    }
    assert.ok(found.every((d) => d.source === "chainsmith" || d.source === undefined));
  });

  it("re-reads the settings when they change (didChangeConfiguration, then the pull)", async () => {
    const file = path.join(workspace, "mistakes", "mistakes.py");
    const uri = uriOf(file);
    const before = configurationRequests.length;
    settings = toServerSettings({ ...userSettings, "diagnostics.severity": { "unknown-key": "off" } }).settings;
    await connection.sendNotification("workspace/didChangeConfiguration", { settings: { chainsmith: settings } });
    await until("a new workspace/configuration request", () => (configurationRequests.length > before ? true : undefined));
    const codes = await until(
      "diagnostics without unknown-key",
      () => {
        const ds = latest(uri);
        return ds && ds.length === 9 && !ds.some((d) => d.code === "unknown-key") ? ds.map((d) => d.code) : undefined;
      },
      () => JSON.stringify(latest(uri)?.map((d) => d.code)),
    );
    assert.equal(codes.length, 9);
  });

  it("completes tools after `tmdb.` and response keys inside `found[\"`", async () => {
    const file = path.join(workspace, "chains", "scratch_from_vscode.py"); // never written to disk
    const uri = uriOf(file);
    const text = 'from chainsmith.tools import tmdb\n\nfound = tmdb.search_person(query="Sofia Coppola")\ntmdb.\n';
    await connection.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "python", version: 1, text } });
    const tools = labels(
      await connection.sendRequest("textDocument/completion", {
        textDocument: { uri },
        position: { line: 3, character: 5 },
        context: { triggerKind: 2, triggerCharacter: "." },
      }),
    );
    assert.ok(tools.some((i) => i.label === "search_person"), `tools offered: ${tools.map((i) => i.label).join(", ")}`);
    assert.ok(tools.some((i) => i.label === "person_movie_credits"));

    // Typing, as VS Code sends it: an incremental change replacing `tmdb.` with `found["`.
    await connection.sendNotification("textDocument/didChange", {
      textDocument: { uri, version: 2 },
      contentChanges: [{ range: { start: { line: 3, character: 0 }, end: { line: 3, character: 5 } }, rangeLength: 5, text: 'found["' }],
    });
    const keys = labels(
      await connection.sendRequest("textDocument/completion", {
        textDocument: { uri },
        position: { line: 3, character: 7 },
        context: { triggerKind: 2, triggerCharacter: '"' },
      }),
    );
    assert.ok(keys.some((i) => mentions(i, "results")), `keys offered: ${keys.map((i) => i.label).join(", ")}`);
    assert.ok(keys.some((i) => mentions(i, "total_results")));
    await connection.sendNotification("textDocument/didClose", { textDocument: { uri } });
  });

  it("answers a command round trip and stays alive; an unknown command is an error", async () => {
    const uri = uriOf(path.join(workspace, "mistakes", "mistakes.py"));
    // chainsmith.graph is not implemented in every build (today: a showMessage and null); what is
    // stable is that the request is answered without an error.
    const result = await connection.sendRequest("workspace/executeCommand", { command: "chainsmith.graph", arguments: [uri] });
    assert.ok(result === null || typeof result === "object" || typeof result === "string", `result: ${JSON.stringify(result)}`);

    await assert.rejects(
      connection.sendRequest("workspace/executeCommand", { command: "chainsmith.noSuchCommand", arguments: [uri] }),
      (e: unknown) => e instanceof ResponseError && typeof e.code === "number" && /noSuchCommand/.test(e.message),
    );

    // Still serving: a hover on `search_person` in the open program.
    const hover = (await connection.sendRequest("textDocument/hover", {
      textDocument: { uri },
      position: { line: 13, character: 15 },
    })) as { contents: unknown } | null;
    assert.ok(hover && JSON.stringify(hover.contents).includes("search_person"), JSON.stringify(hover));
    assert.equal(exited, undefined, `the server exited: ${stderr}`);
  });

  it("shuts down cleanly", async () => {
    assert.equal(await connection.sendRequest("shutdown"), null);
    await connection.sendNotification("exit");
    const code = await until("the server's exit", () => exited);
    assert.deepEqual(code, { code: 0, signal: null }, stderr);
    assert.ok(!messages.some((m) => m.type === 1), `no error messages: ${JSON.stringify(messages)}`);
  });
});

/** Starts tests/support/tmdb_server.py on `spec` and resolves with its process and port. */
function startTmdbServer(spec: string, apiKey: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn("python3", [path.join(repo, "tests", "support", "tmdb_server.py"), "--spec", spec, "--api-key", apiKey], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the test server did not print its port within ${WAIT_MS} ms`));
    }, WAIT_MS);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the test server exited (${code}) before printing its port`));
    });
    readline.createInterface({ input: child.stdout! }).once("line", (line) => {
      clearTimeout(timer);
      const m = /^PORT (\d+)$/.exec(line.trim());
      if (m) resolve({ child, port: Number(m[1]) });
      else {
        child.kill("SIGKILL");
        reject(new Error(`the test server's first line: ${JSON.stringify(line)}`));
      }
    });
  });
}

/** `POST /__control` on the test server: replaces its failure and delay rules. */
async function tmdbControl(port: number, rules: object): Promise<unknown> {
  const answer = await fetch(`http://127.0.0.1:${port}/__control`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(rules),
  });
  assert.equal(answer.status, 200);
  return answer.json();
}

describe("chainsmith.run over stdio, against the TMDB-like test server", () => {
  const KEY = "vscode-test-key";
  let workspace: string;
  let tmdb: { child: ChildProcess; port: number } | undefined;
  let child: ChildProcess;
  let connection: ProtocolConnection;
  let stderr = "";
  let exited: { code: number | null; signal: string | null } | undefined;
  const logs: Array<{ type: number; message: string }> = [];
  const progress: Array<{ token: string | number; value: { kind: string; message?: string; title?: string } }> = [];
  const diagnostics: PublishDiagnosticsParams[] = [];

  before(async () => {
    assert.ok(fs.existsSync(binary), `no chainsmith binary at ${binary}: build it with \`cargo build\` (or set CHAINSMITH_BIN)`);
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), "chainsmith-vscode-run-"));
    fs.cpSync(path.join(repo, "examples", "tmdb"), workspace, { recursive: true });
    tmdb = await startTmdbServer(path.join(workspace, "specs", "tmdb_oas.json"), KEY);
    // The toolset at the test server; its auth (query api_key from $TMDB_KEY) as the example has it.
    const toml = path.join(workspace, "chainsmith.toml");
    const text = fs.readFileSync(toml, "utf8");
    const replaced = text.replace(/base_url = "[^"]*"/, `base_url = "http://127.0.0.1:${tmdb.port}/3"`);
    assert.notEqual(replaced, text, "chainsmith.toml has a base_url");
    fs.writeFileSync(toml, replaced);
    // The toolset sends $TMDB_KEY to an address the workspace names: only a trusted workspace does.
    execFileSync(binary, ["trust"], { cwd: workspace, env: { ...process.env, TMDB_KEY: KEY } });

    child = spawn(binary, ["lsp"], { cwd: workspace, stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, TMDB_KEY: KEY } });
    child.stderr!.on("data", (d) => (stderr += d.toString()));
    child.on("exit", (code, signal) => (exited = { code, signal }));
    connection = createProtocolConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    connection.onRequest("workspace/configuration", (params: { items: ConfigurationItem[] }) =>
      answerConfiguration(params.items, toServerSettings({}).settings),
    );
    connection.onRequest("client/registerCapability", () => null);
    connection.onRequest("client/unregisterCapability", () => null);
    connection.onRequest("window/workDoneProgress/create", () => null);
    connection.onRequest("workspace/inlayHint/refresh", () => null);
    connection.onRequest("workspace/codeLens/refresh", () => null);
    connection.onRequest("workspace/diagnostic/refresh", () => null);
    connection.onNotification("textDocument/publishDiagnostics", (p: PublishDiagnosticsParams) => {
      diagnostics.push(p);
    });
    connection.onNotification("window/logMessage", (p: { type: number; message: string }) => {
      logs.push(p);
    });
    connection.onNotification("$/progress", (p) => {
      progress.push(p);
    });
    connection.onNotification("window/showMessage", () => {});
    connection.onNotification("chainsmith/status", () => {});
    connection.listen();
    const root = uriOf(workspace);
    await connection.sendRequest("initialize", {
      processId: process.pid,
      clientInfo: { name: "Visual Studio Code", version: "1.91.0" },
      rootUri: root,
      workspaceFolders: [{ uri: root, name: path.basename(workspace) }],
      initializationOptions: {},
      capabilities: {
        general: { positionEncodings: ["utf-16"] },
        window: { workDoneProgress: true },
        workspace: { configuration: true, workspaceFolders: true, inlayHint: { refreshSupport: true }, codeLens: { refreshSupport: true } },
        textDocument: {
          codeLens: { dynamicRegistration: true },
          inlayHint: { dynamicRegistration: true },
          publishDiagnostics: { relatedInformation: true, versionSupport: false, codeDescriptionSupport: true, dataSupport: true },
        },
      },
    });
    await connection.sendNotification("initialized", {});
  });

  after(async () => {
    if (exited === undefined && child) {
      try {
        await connection.sendRequest("shutdown");
        await connection.sendNotification("exit");
      } catch {
        /* reported by the test that failed */
      }
      const deadline = Date.now() + 5000;
      while (exited === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      if (exited === undefined) child.kill("SIGKILL");
    }
    connection?.dispose();
    if (tmdb && tmdb.child.exitCode === null && tmdb.child.signalCode === null) {
      const gone = new Promise((r) => tmdb!.child.once("exit", r));
      tmdb.child.kill("SIGTERM");
      await Promise.race([gone, new Promise((r) => setTimeout(r, 3000))]);
      if (tmdb.child.exitCode === null && tmdb.child.signalCode === null) tmdb.child.kill("SIGKILL");
    }
    if (workspace) fs.rmSync(workspace, { recursive: true, force: true });
  });

  /** Runs chainsmith.run on `uri` and waits for the end of its work-done progress: its message. */
  async function run(uri: string): Promise<string> {
    const seen = progress.length;
    const result = await connection.sendRequest("workspace/executeCommand", { command: "chainsmith.run", arguments: [uri] });
    assert.equal(result, null);
    const end = await until(
      "the run's $/progress end",
      () => progress.slice(seen).find((p) => p.value.kind === "end"),
      () => JSON.stringify(progress.slice(seen)),
    );
    return end.value.message ?? "";
  }

  /** The run's `✓`/`✗` inlay hints: `[line, label]`. */
  async function runHints(uri: string): Promise<Array<[number, string]>> {
    const hints = (await connection.sendRequest("textDocument/inlayHint", {
      textDocument: { uri },
      range: { start: { line: 0, character: 0 }, end: { line: 100, character: 0 } },
    })) as Array<{ position: { line: number }; label: string | Array<{ value: string }> }> | null;
    return (hints ?? [])
      .map((h): [number, string] => [h.position.line, typeof h.label === "string" ? h.label : h.label.map((p) => p.value).join("")])
      .filter(([, label]) => label.startsWith("✓") || label.startsWith("✗"))
      .sort((a, b) => a[0] - b[0]);
  }

  it("runs a chain: its output as window/logMessage, ✓ 200 hints at the calls; a 500 is a diagnostic at the call", async () => {
    const file = path.join(workspace, "chains", "task000_sofia_coppola_directed.py");
    const uri = uriOf(file);
    await connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri, languageId: "python", version: 1, text: fs.readFileSync(file, "utf8") },
    });

    const ended = await run(uri);
    assert.equal(ended, "✓ 2 calls", `stderr: ${stderr}`);
    const output = await until(
      "the program's output as window/logMessage",
      () => logs.find((m) => m.message.includes("Bradley Cooper directed")),
      () => JSON.stringify(logs),
    );
    assert.equal(output.type, 4, "program output is logged");
    // Lines 8 and 10 (0-based 7 and 9): search_person, person_movie_credits.
    const hints = await runHints(uri);
    assert.deepEqual(hints.map(([line]) => line), [7, 9], JSON.stringify(hints));
    for (const [, label] of hints) assert.match(label, /^✓ 200 · \d+ ms$/);

    // The test server fails /person/…: the run fails at the second call, with a diagnostic there.
    await tmdbControl(tmdb!.port, { fail: { "/person/": 500 } });
    const seen = diagnostics.length;
    assert.match(await run(uri), /^✗/);
    const failing = await until(
      "an error diagnostic at line 9",
      () => diagnostics.slice(seen).filter((p) => p.uri === uri).flatMap((p) => p.diagnostics).find((d) => d.range.start.line === 9 && d.severity === 1),
      () => JSON.stringify(diagnostics.slice(seen)),
    );
    assert.match(typeof failing.message === "string" ? failing.message : failing.message.value, /500/);
    await tmdbControl(tmdb!.port, { fail: {} });
    assert.equal(exited, undefined, `the server exited: ${stderr}`);
  });
});
