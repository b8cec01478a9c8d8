// The server's editor commands (DESIGN.md, "Shapes other tools read") and the arguments the
// extension sends with them. Pure.

export interface ServerCommand {
  id: string;
  /** What the progress indicator and error messages call it. */
  title: string;
}

export const SERVER_COMMANDS: readonly ServerCommand[] = [
  { id: "chainsmith.run", title: "Run chain" },
  { id: "chainsmith.generate", title: "Generate chain" },
  { id: "chainsmith.fix", title: "Fix chain" },
  { id: "chainsmith.plan", title: "Plan a chain (no model)" },
  { id: "chainsmith.probe", title: "Probe tool" },
  { id: "chainsmith.probeAll", title: "Probe all unprobed tools" },
  { id: "chainsmith.graph", title: "Show tool graph" },
  { id: "chainsmith.trustWorkspace", title: "Trust this workspace" },
  { id: "chainsmith.acceptObserved", title: "Take the observed response as the tool's schema" },
  { id: "chainsmith.writeStubs", title: "Write type stubs for Python language servers" },
];

/**
 * Commands that start a server task (a run, a generation, a fix, probing): the extension gives each
 * a progress token of its own and shows that progress as a notification with Cancel.
 */
export const TASK_COMMANDS: readonly string[] = [
  "chainsmith.run",
  "chainsmith.generate",
  "chainsmith.fix",
  "chainsmith.probe",
  "chainsmith.probeAll",
];

export function isTaskCommand(id: string): boolean {
  return TASK_COMMANDS.includes(id);
}

/** Commands the extension itself provides. */
export const CLIENT_COMMANDS: readonly string[] = ["chainsmith.restart", "chainsmith.showOutput"];

export function commandTitle(id: string): string {
  return SERVER_COMMANDS.find((c) => c.id === id)?.title ?? id;
}

/**
 * Arguments for a command run from the palette or the status bar (no arguments of its own): the
 * active document's URI, the same convention as the Neovim plugin; every command accepts it (the
 * server's `commands/arguments.rs` says what each makes of it). Arguments that came with the
 * command (a code lens, a code action) are kept as they are.
 */
export function commandArguments(args: readonly unknown[], activeDocumentUri: string | undefined): unknown[] {
  if (args.length > 0) return [...args];
  return activeDocumentUri === undefined ? [] : [activeDocumentUri];
}
