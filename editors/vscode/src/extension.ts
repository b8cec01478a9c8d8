// The VS Code side of chainsmith: starts `chainsmith lsp` for the window's chainsmith workspace and
// wires it into VS Code. Everything that can be decided without VS Code lives in the pure modules
// (settings, serverPath, workspace, status, commands), which node's test runner checks.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  type Executable,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  State,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
} from "vscode-languageclient/node";

import { SERVER_COMMANDS, commandArguments, commandTitle, isTaskCommand } from "./commands";
import { graphPage } from "./graph";
import { resolveServerPath } from "./serverPath";
import { type Mapped, answerConfiguration, collect, withWorkspaceTrust } from "./settings";
import { type ServerState, type Status, isStatus, statusView } from "./status";
import { chooseRoot, globUnder } from "./workspace";

const SECTION = "chainsmith";
const STATUS_NOTIFICATION = "chainsmith/status";
/** How long after the server's answer a task's progress may still begin (see `startTask`). */
const BEGIN_GRACE_MS = 2000;

let extension: Extension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extension = new Extension();
  context.subscriptions.push(extension);
  await extension.start();
}

export async function deactivate(): Promise<void> {
  await extension?.stop();
  extension = undefined;
}

class Extension implements vscode.Disposable {
  private readonly output: vscode.LogOutputChannel;
  private readonly statusItem: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  /** Placeholders for the server's commands while no server provides them. */
  private placeholders: vscode.Disposable[] = [];
  private client: LanguageClient | undefined;
  private root: string | undefined;
  private lastStatus: Status | undefined;
  private reportedProblems = "";
  private graphPanel: vscode.WebviewPanel | undefined;
  private tasksStarted = 0;

  constructor() {
    this.output = vscode.window.createOutputChannel("chainsmith", { log: true });
    this.statusItem = vscode.window.createStatusBarItem("chainsmith.status", vscode.StatusBarAlignment.Left, 10);
    this.statusItem.name = "chainsmith";
    this.disposables.push(
      this.output,
      this.statusItem,
      // The extension's own commands (commands.ts, CLIENT_COMMANDS).
      vscode.commands.registerCommand("chainsmith.restart", () => this.restart()),
      vscode.commands.registerCommand("chainsmith.showOutput", () => this.output.show()),
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
    );
  }

  dispose(): void {
    for (const d of [...this.placeholders, ...this.disposables]) d.dispose();
    this.placeholders = [];
  }

  async start(): Promise<void> {
    this.root = await findRoot();
    if (this.root === undefined) {
      this.output.info("No folder with chainsmith.toml or protocols/ in this window; the server is not started.");
      this.installPlaceholders("Open a folder that holds chainsmith.toml or protocols/ to use chainsmith.");
      return;
    }
    const config = vscode.workspace.getConfiguration(SECTION, vscode.Uri.file(this.root));
    const resolution = resolveServerPath(config.get<string>("path"), {
      platform: process.platform,
      pathVariable: process.env.PATH ?? process.env.Path,
      pathExt: process.env.PATHEXT,
      home: os.homedir(),
      workspaceFolder: this.root,
      isExecutable,
    });
    if (!resolution.ok) {
      this.showState("failed", "executable not found");
      this.installPlaceholders(resolution.message);
      void this.showError(resolution.message, "Open Settings", "path");
      return;
    }
    this.output.info(`Starting ${resolution.command} lsp (from ${resolution.source}) in ${this.root}`);
    this.disposePlaceholders();
    const client = this.createClient(resolution.command, this.root);
    this.client = client;
    this.showState("starting");
    try {
      await client.start();
      await vscode.commands.executeCommand("setContext", "chainsmith.active", true);
    } catch (error) {
      // Already shown by the client as an error notification; the status item keeps it visible.
      this.showState("failed", messageOf(error));
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client?.needsStop()) {
      try {
        await client.stop(2000);
      } catch (error) {
        this.output.warn(`stopping the server: ${messageOf(error)}`);
      }
    }
    await vscode.commands.executeCommand("setContext", "chainsmith.active", false);
  }

  private async restart(): Promise<void> {
    await this.stop();
    this.lastStatus = undefined;
    await this.start();
  }

  private createClient(command: string, root: string): LanguageClient {
    const executable: Executable = { command, args: ["lsp"], options: { cwd: root, env: process.env } };
    const rootUri = vscode.Uri.file(root);
    const options: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "python", pattern: globUnder(root) },
        // Protocol files and chainsmith.toml: their diagnostics come as published, their quick
        // fixes through codeAction.
        { scheme: "file", language: "json", pattern: globUnder(root) },
        { scheme: "file", language: "jsonc", pattern: globUnder(root) },
        { scheme: "file", language: "yaml", pattern: globUnder(root) },
        { scheme: "file", pattern: globUnder(root, "**/chainsmith.toml") },
      ],
      workspaceFolder: { uri: rootUri, name: path.basename(root), index: 0 },
      outputChannel: this.output,
      // Failures are shown once, by the middleware below, with a way to the output.
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: () => this.sentSettings(),
      // The client reports a failed start itself (an error notification with "Go to output").
      initializationFailedHandler: (error) => {
        this.output.error(`initializing the language server failed: ${messageOf(error)}`);
        return false;
      },
      middleware: {
        workspace: {
          configuration: (params) =>
            answerConfiguration(params.items, this.sentSettings(), (item) =>
              vscode.workspace
                .getConfiguration(undefined, item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined)
                .get(item.section ?? ""),
            ),
        },
        executeCommand: (command, args, next) => this.executeCommand(command, args, next),
        provideInlayHints: (document, range, token, next) =>
          vscode.workspace.getConfiguration(SECTION, document.uri).get<boolean>("inlayHints.enabled", true)
            ? next(document, range, token)
            : [],
      },
    };
    const client = new LanguageClient("chainsmith", "chainsmith", executable, options);
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) this.showState("running");
      else if (e.newState === State.Starting) this.showState("starting");
      else if (e.newState === State.StartFailed) this.showState("failed");
      else if (e.newState === State.Stopped) this.showState("stopped");
    });
    client.onNotification(STATUS_NOTIFICATION, (params: unknown) => {
      if (isStatus(params)) {
        this.lastStatus = params;
        this.showState("running");
      } else {
        this.output.warn(`ignoring a malformed ${STATUS_NOTIFICATION}: ${JSON.stringify(params)}`);
      }
    });
    return client;
  }

  /** The palette runs a server command: the active document goes along, progress shows meanwhile. */
  private async executeCommand(
    command: string,
    args: unknown[],
    next: (command: string, args: unknown[]) => vscode.ProviderResult<unknown>,
  ): Promise<unknown> {
    const active = vscode.window.activeTextEditor?.document.uri;
    const title = commandTitle(command);
    const sent = commandArguments(args, active?.toString());
    const client = this.client;
    try {
      if (client !== undefined && isTaskCommand(command)) return await this.startTask(client, command, title, sent);
      const answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: `chainsmith: ${title}…` },
        async () => await next(command, sent),
      );
      if (command === "chainsmith.graph") this.showGraph(answer);
      return answer;
    } catch (error) {
      if (error instanceof vscode.CancellationError) return undefined;
      void this.showError(`${title} failed: ${messageOf(error)}`, "Show Output");
      return undefined;
    }
  }

  /**
   * A command that starts a server task, sent with a progress token of the extension's own: the
   * language client draws server progress in the status bar, where Cancel is one click away;
   * this shows it as a notification with Cancel, which sends `window/workDoneProgress/cancel`.
   */
  private async startTask(client: LanguageClient, command: string, title: string, args: unknown[]): Promise<unknown> {
    this.tasksStarted += 1;
    const token = `chainsmith-vscode-${this.tasksStarted}`;
    let settle = () => {};
    const ended = new Promise<void>((resolve) => (settle = resolve));
    let begun = false;
    let report: (message: string) => void = () => {};
    const listener = client.onProgress(WorkDoneProgress.type, token, (value) => {
      if (value.kind === "end") settle();
      else {
        begun = true;
        if (value.message) report(value.message);
      }
    });
    void ended.then(() => listener.dispose());
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `chainsmith: ${title}`, cancellable: true },
      async (progress, cancellation) => {
        report = (message) => progress.report({ message });
        const cancelling = cancellation.onCancellationRequested(
          () => void client.sendNotification(WorkDoneProgressCancelNotification.type, { token }),
        );
        await ended;
        cancelling.dispose();
      },
    );
    try {
      const answer = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args, workDoneToken: token });
      // The server begins a task's progress before it answers, but the two travel separately and
      // the answer may come first: only a begin that has not come shortly after means no task
      // (nothing to do, or one already at work), and nothing to show. Closing at once hid the
      // notification, and its Cancel, of runs that went on.
      if (!begun) setTimeout(() => begun || settle(), BEGIN_GRACE_MS);
      return answer;
    } catch (error) {
      settle();
      throw error;
    }
  }

  /** "Show tool graph": the server's picture in a webview (one panel, reused); else its text. */
  private showGraph(answer: unknown): void {
    const page = graphPage(answer);
    if (page === undefined) {
      const text = (answer as { text?: unknown } | null)?.text;
      if (typeof text === "string") this.output.appendLine(text);
      this.output.show(true);
      return;
    }
    if (this.graphPanel === undefined) {
      this.graphPanel = vscode.window.createWebviewPanel("chainsmith.graph", "ToolNet graph", vscode.ViewColumn.Beside, {
        enableScripts: false,
      });
      this.graphPanel.onDidDispose(() => (this.graphPanel = undefined));
    }
    this.graphPanel.webview.html = page;
    this.graphPanel.reveal(vscode.ViewColumn.Beside, true);
  }

  private serverSettings(): Mapped {
    const scope = this.root === undefined ? undefined : vscode.Uri.file(this.root);
    const config = vscode.workspace.getConfiguration(SECTION, scope);
    const mapped = collect((setting) => config.inspect(setting));
    const problems = mapped.problems.join("\n");
    if (problems !== "" && problems !== this.reportedProblems) {
      for (const p of mapped.problems) this.output.warn(p);
      void this.showWarning(mapped.problems[0] + (mapped.problems.length > 1 ? ` (and ${mapped.problems.length - 1} more)` : ""));
    }
    this.reportedProblems = problems;
    return mapped;
  }

  /** The settings with VS Code's workspace trust (see settings.ts, withWorkspaceTrust). */
  private sentSettings(): Record<string, unknown> {
    return withWorkspaceTrust(this.serverSettings().settings, vscode.workspace.isTrusted === true);
  }

  private async onConfigurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!e.affectsConfiguration(SECTION)) return;
    if (e.affectsConfiguration(`${SECTION}.path`)) {
      await this.restart();
      return;
    }
    const client = this.client;
    if (client?.state === State.Running) {
      // The server pulls the section again through workspace/configuration (answered above); a
      // server that cannot pull reads the pushed object.
      await client.sendNotification("workspace/didChangeConfiguration", {
        settings: { [SECTION]: this.sentSettings() },
      });
    }
  }

  private showState(state: ServerState, detail?: string): void {
    const view = statusView(state, this.lastStatus, detail);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.command = view.command;
    this.statusItem.backgroundColor =
      view.severity === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.severity === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
    this.statusItem.show();
  }

  private installPlaceholders(message: string): void {
    this.disposePlaceholders();
    this.placeholders = SERVER_COMMANDS.map((c) =>
      vscode.commands.registerCommand(c.id, () => void this.showError(`${c.title}: ${message}`, "Open Settings", "path")),
    );
  }

  private disposePlaceholders(): void {
    for (const d of this.placeholders) d.dispose();
    this.placeholders = [];
  }

  /** `setting`: the machine setting the message is about, which "Open Settings" shows. */
  private async showError(message: string, action: "Show Output" | "Open Settings", setting?: "path"): Promise<void> {
    const choice = await vscode.window.showErrorMessage(`chainsmith: ${message}`, action);
    if (choice === "Show Output") this.output.show();
    if (choice === "Open Settings") await openSettings(setting);
  }

  private async showWarning(message: string): Promise<void> {
    const choice = await vscode.window.showWarningMessage(`chainsmith: ${message}`, "Open Settings");
    if (choice) await openSettings();
  }
}

/**
 * Opens the Settings editor at `chainsmith.<setting>` (or the whole section). `path` is a machine
 * setting: in a remote window (Remote-SSH, WSL, Dev Containers) only the Remote tab can set it, so
 * it opens there; the User tab, where VS Code would open, ignores it.
 */
async function openSettings(setting?: "path"): Promise<void> {
  const query = setting ? `${SECTION}.${setting}` : SECTION;
  if (setting && vscode.env.remoteName) {
    try {
      await vscode.commands.executeCommand("workbench.action.openRemoteSettings", { query });
      return;
    } catch {
      // A workbench without that command: the User tab, whose description of the setting says where it belongs.
    }
  }
  await vscode.commands.executeCommand("workbench.action.openSettings", query);
}

/** The window's chainsmith workspace (see workspace.ts). */
async function findRoot(): Promise<string | undefined> {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  if (folders.length === 0) return undefined;
  const exists = (p: string) => fs.existsSync(p);
  const direct = chooseRoot(folders, [], exists);
  if (direct !== undefined) return direct;
  const found = await vscode.workspace.findFiles("**/chainsmith.toml", "**/{node_modules,.git,target,.venv}/**", 20);
  return chooseRoot(folders, found.map((u) => u.fsPath), exists);
}

function isExecutable(file: string): boolean {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) return false;
    if (process.platform === "win32") return true;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error !== null && typeof error === "object" && "message" in error) return String((error as { message: unknown }).message);
  return String(error);
}
