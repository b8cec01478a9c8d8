// A stand-in for the `vscode` module, just enough for the extension and vscode-languageclient to
// start the real server outside VS Code (which cannot be installed here). What the extension uses is
// modelled and recorded; everything else answers with inert stubs (callable, constructible,
// disposable), so the client's many feature registrations go through.
//
// Install it before requiring the extension: `installFakeVscode()`.

import Module from "node:module";
import { pathToFileURL } from "node:url";

type Listener<T> = (e: T) => unknown;

const inert = (name: string): unknown => {
  const fn = function () {
    return inert(`${name}()`);
  };
  return new Proxy(fn, {
    get(_t, p) {
      if (p === "then") return undefined; // not a promise
      if (p === Symbol.iterator) return function* () {};
      if (p === Symbol.toPrimitive) return () => name;
      if (p === "dispose") return () => {};
      return inert(`${name}.${String(p)}`);
    },
    construct() {
      return inert(`new ${name}`) as object;
    },
  });
};

/** `obj` with inert stubs for the members it does not model. */
function withFallback<T extends object>(obj: T, name: string): T {
  return new Proxy(obj, {
    get(t, p) {
      if (p in t) return (t as Record<string | symbol, unknown>)[p];
      if (p === "then" || typeof p === "symbol") return undefined;
      return inert(`${name}.${p}`);
    },
  });
}

export class Uri {
  readonly scheme = "file";
  readonly authority = "";
  readonly query = "";
  readonly fragment = "";
  private constructor(readonly fsPath: string) {}
  get path(): string {
    return this.fsPath;
  }
  static file(p: string): Uri {
    return new Uri(p);
  }
  static parse(s: string): Uri {
    return new Uri(decodeURIComponent(s.replace(/^file:\/\//, "")));
  }
  with(): Uri {
    return this;
  }
  toString(): string {
    return pathToFileURL(this.fsPath).toString();
  }
  toJSON(): unknown {
    return { scheme: "file", path: this.fsPath };
  }
}

class EventEmitter<T> {
  private listeners: Array<Listener<T>> = [];
  readonly event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(e: T): void {
    for (const l of this.listeners) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export interface Shown {
  kind: "error" | "warning" | "information";
  message: string;
  actions: string[];
}

/** A `window.withProgress` as shown: its options, its reports, and Cancel to click. */
export interface ShownProgress {
  title?: string;
  location?: number;
  cancellable?: boolean;
  messages: string[];
  done: boolean;
  cancel(): void;
}

export class FakeVscode {
  folders: string[] = [];
  /** Explicitly set `chainsmith.*` settings, by key inside the section. */
  settings: Record<string, unknown> = {};
  foundFiles: string[] = [];
  readonly shown: Shown[] = [];
  readonly progress: ShownProgress[] = [];
  readonly log: string[] = [];
  readonly commands = new Map<string, (...args: unknown[]) => unknown>();
  readonly contexts = new Map<string, unknown>();
  readonly statusItem: { text?: string; tooltip?: string; command?: string; visible?: boolean } = {};
  activeDocument: string | undefined;
  /** `env.remoteName`: set for a remote window (Remote-SSH, WSL, Dev Containers). */
  remoteName: string | undefined;
  /** The button the user clicks on the messages shown from now on (none: they are dismissed). */
  click: string | undefined;
  /** The workbench's own commands the extension ran (`workbench.action.openSettings`, …). */
  readonly workbench: Array<{ id: string; args: unknown[] }> = [];
  /** Workbench commands this VS Code lacks (running one throws, as VS Code does). */
  readonly lacking = new Set<string>();
  private readonly configurationChanged = new EventEmitter<{ affectsConfiguration: (s: string) => boolean }>();

  reset(folders: string[], settings: Record<string, unknown>): void {
    this.folders = folders;
    this.settings = settings;
    this.foundFiles = [];
    this.shown.length = 0;
    this.progress.length = 0;
    this.remoteName = undefined;
    this.click = undefined;
    this.workbench.length = 0;
    this.lacking.clear();
    this.log.length = 0;
    for (const k of Object.keys(this.statusItem)) delete (this.statusItem as Record<string, unknown>)[k];
  }

  /** Changes settings as the Settings editor would, firing onDidChangeConfiguration. */
  changeSettings(settings: Record<string, unknown>): void {
    const changed = Object.keys({ ...this.settings, ...settings }).filter((k) => this.settings[k] !== settings[k]);
    this.settings = settings;
    this.configurationChanged.fire({
      affectsConfiguration: (s: string) =>
        s === "chainsmith" || changed.some((k) => `chainsmith.${k}` === s || `chainsmith.${k}`.startsWith(`${s}.`)),
    });
  }

  readonly module = (() => {
    const fake = this;
    const show =
      (kind: Shown["kind"]) =>
      async (message: string, ...rest: unknown[]) => {
        const actions = rest.filter((r): r is string => typeof r === "string");
        fake.shown.push({ kind, message, actions });
        return fake.click !== undefined && actions.includes(fake.click) ? fake.click : undefined;
      };
    const channel = withFallback(
      {
        name: "chainsmith",
        logLevel: 2,
        onDidChangeLogLevel: () => ({ dispose() {} }),
        info: (m: string) => fake.log.push(`info ${m}`),
        warn: (m: string) => fake.log.push(`warn ${m}`),
        error: (m: string) => fake.log.push(`error ${m}`),
        debug: () => {},
        trace: () => {},
        append: () => {},
        appendLine: (m: string) => fake.log.push(m),
        show: () => {},
        hide: () => {},
        clear: () => {},
        replace: () => {},
        dispose: () => {},
      },
      "outputChannel",
    );
    return withFallback(
      {
        version: "1.91.0",
        Uri,
        EventEmitter,
        Disposable: class {
          constructor(private readonly f?: () => void) {}
          dispose() {
            this.f?.();
          }
          static from() {
            return { dispose() {} };
          }
        },
        StatusBarAlignment: { Left: 1, Right: 2 },
        ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
        ThemeColor: class {
          constructor(readonly id: string) {}
        },
        CancellationError: class extends Error {},
        env: withFallback(
          {
            appName: "Visual Studio Code",
            language: "en",
            machineId: "test",
            sessionId: "test",
            uiKind: 1,
            get remoteName() {
              return fake.remoteName;
            },
          },
          "env",
        ),
        workspace: withFallback(
          {
            get workspaceFolders() {
              return fake.folders.map((f, index) => ({ uri: Uri.file(f), name: f, index }));
            },
            textDocuments: [],
            isTrusted: true,
            getConfiguration: (section?: string) => {
              const key = (k: string) => (section === "chainsmith" ? k : `${section}.${k}`.replace(/^chainsmith\./, ""));
              return {
                get: (k: string, d?: unknown) => (key(k) in fake.settings ? fake.settings[key(k)] : d),
                inspect: (k: string) => (key(k) in fake.settings ? { key: k, globalValue: fake.settings[key(k)] } : { key: k }),
                has: (k: string) => key(k) in fake.settings,
                update: async () => {},
              };
            },
            findFiles: async () => fake.foundFiles.map((f) => Uri.file(f)),
            onDidChangeConfiguration: fake.configurationChanged.event,
          },
          "workspace",
        ),
        window: withFallback(
          {
            createOutputChannel: () => channel,
            createStatusBarItem: () =>
              new Proxy(fake.statusItem, {
                get(t, p) {
                  if (p === "show") return () => (t.visible = true);
                  if (p === "hide") return () => (t.visible = false);
                  if (p === "dispose") return () => {};
                  return (t as Record<string | symbol, unknown>)[p];
                },
                set(t, p, v) {
                  (t as Record<string | symbol, unknown>)[p] = v;
                  return true;
                },
              }),
            showErrorMessage: show("error"),
            showWarningMessage: show("warning"),
            showInformationMessage: show("information"),
            withProgress: async (
              options: { title?: string; location?: number; cancellable?: boolean },
              task: (p: unknown, t: unknown) => unknown,
            ) => {
              const listeners: Array<() => unknown> = [];
              const cancellation = {
                isCancellationRequested: false,
                onCancellationRequested: (f: () => unknown) => {
                  listeners.push(f);
                  return { dispose() {} };
                },
              };
              const shown: ShownProgress = {
                ...options,
                messages: [],
                done: false,
                cancel() {
                  cancellation.isCancellationRequested = true;
                  for (const f of listeners) f();
                },
              };
              fake.progress.push(shown);
              try {
                return await task({ report: (v: { message?: string }) => v.message && shown.messages.push(v.message) }, cancellation);
              } finally {
                shown.done = true;
              }
            },
            get activeTextEditor() {
              return fake.activeDocument === undefined ? undefined : { document: { uri: Uri.file(fake.activeDocument) } };
            },
          },
          "window",
        ),
        commands: withFallback(
          {
            registerCommand(id: string, f: (...args: unknown[]) => unknown) {
              if (fake.commands.has(id)) throw new Error(`command '${id}' already exists`);
              fake.commands.set(id, f);
              return { dispose: () => fake.commands.delete(id) };
            },
            async executeCommand(id: string, ...args: unknown[]) {
              if (id === "setContext") {
                fake.contexts.set(String(args[0]), args[1]);
                return undefined;
              }
              if (id.startsWith("workbench.")) {
                if (fake.lacking.has(id)) throw new Error(`command '${id}' not found`);
                fake.workbench.push({ id, args });
                return undefined;
              }
              const f = fake.commands.get(id);
              if (!f) throw new Error(`command '${id}' not found`);
              return f(...args);
            },
          },
          "commands",
        ),
      },
      "vscode",
    );
  })();
}

/** Makes `require("vscode")` answer the fake, for this process. */
export function installFakeVscode(): FakeVscode {
  const fake = new FakeVscode();
  const mod = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = mod._load;
  mod._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") return fake.module;
    return load.call(this, request, ...rest);
  };
  return fake;
}
