// The real `chainsmith lsp` over stdio, spoken to as VS Code speaks to it: vscode-jsonrpc and
// vscode-languageserver-protocol (what vscode-languageclient is built on), VS Code's kind of client
// capabilities, and the initialization options and `workspace/configuration` answers the extension
// itself computes (src/settings.ts).
//
// The binary: $CHAINSMITH_BIN (tests/editors.rs passes the one cargo built), else
// target/debug/chainsmith of this repository.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
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
  const statuses: Array<{ toolsets: number; tools: number; unprobed: number }> = [];
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
    assert.deepEqual(Object.keys(status).sort(), ["tools", "toolsets", "unprobed"]);
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
