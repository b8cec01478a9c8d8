// The status bar item's words, from the server's `chainsmith/status` notification
// (`{toolsets, tools, unprobed}`, sent after every (re)load of the workspace). Pure.

export interface Status {
  toolsets: number;
  tools: number;
  /** Tools whose response schema is unknown (probing fills it). */
  unprobed: number;
}

export type ServerState = "starting" | "running" | "stopped" | "failed";

export interface StatusView {
  text: string;
  tooltip: string;
  /** The command a click runs. */
  command: string;
  /** Whether to paint the item as a warning/error. */
  severity: "normal" | "warning" | "error";
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function isStatus(value: unknown): value is Status {
  if (value === null || typeof value !== "object") return false;
  const v = value as Record<string, unknown>;
  return ["toolsets", "tools", "unprobed"].every((k) => typeof v[k] === "number" && Number.isFinite(v[k]));
}

export function statusView(state: ServerState, status?: Status, detail?: string): StatusView {
  switch (state) {
    case "starting":
      return { text: "$(sync~spin) chainsmith", tooltip: "chainsmith: starting the language server…", command: "chainsmith.showOutput", severity: "normal" };
    case "stopped":
      return { text: "$(debug-stop) chainsmith", tooltip: "chainsmith: the language server is stopped. Click to restart.", command: "chainsmith.restart", severity: "warning" };
    case "failed":
      return {
        text: "$(error) chainsmith",
        tooltip: `chainsmith: the language server is not running${detail ? ` (${detail})` : ""}. Click to restart.`,
        command: "chainsmith.restart",
        severity: "error",
      };
    case "running":
      break;
  }
  if (!status) {
    return { text: "$(tools) chainsmith", tooltip: "chainsmith: loading the workspace's tools…", command: "chainsmith.showOutput", severity: "normal" };
  }
  const summary = `${plural(status.toolsets, "toolset")}, ${plural(status.tools, "tool")}`;
  if (status.tools === 0) {
    return {
      text: "$(tools) 0 tools",
      tooltip: `chainsmith: ${summary}. Add protocols under protocols/ or toolsets to chainsmith.toml.`,
      command: "chainsmith.showOutput",
      severity: "warning",
    };
  }
  if (status.unprobed > 0) {
    return {
      text: `$(tools) ${plural(status.tools, "tool")} · ${status.unprobed} unprobed`,
      tooltip: `chainsmith: ${summary}; ${plural(status.unprobed, "tool has", "tools have")} no known response schema. Click to probe them.`,
      command: "chainsmith.probeAll",
      severity: "normal",
    };
  }
  return {
    text: `$(tools) ${plural(status.tools, "tool")}`,
    tooltip: `chainsmith: ${summary}, every response schema known.`,
    command: "chainsmith.showOutput",
    severity: "normal",
  };
}
