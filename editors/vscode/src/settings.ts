// VS Code settings (section `chainsmith`, camelCase keys) → the server's settings object (the keys of
// chainsmith.toml: `{ llm: { base_url, … }, runtime: { … }, … }`).
//
// Pure: no `vscode` import, so node's test runner can check it and the stdio test can send exactly
// what the extension sends.
//
// Only settings the user set explicitly (user, workspace or folder scope) are sent: the server merges
// editor settings over chainsmith.toml key by key, so sending a default would silently override the
// project's file.

/** How one VS Code setting travels to the server. */
export interface SettingSpec {
  /** Key inside the `chainsmith` section, as VS Code spells it (`llm.baseUrl`). */
  setting: string;
  /** chainsmith.toml section (`llm`). */
  section: string;
  /** Key inside that section (`base_url`). */
  key: string;
  kind: "string" | "integer" | "envName" | "severityMap" | "boolean";
  /** Smallest accepted integer. */
  minimum?: number;
}

/** Every setting the server understands. */
export const SERVER_SETTINGS: readonly SettingSpec[] = [
  { setting: "llm.baseUrl", section: "llm", key: "base_url", kind: "string" },
  { setting: "llm.model", section: "llm", key: "model", kind: "string" },
  { setting: "llm.apiKeyEnv", section: "llm", key: "api_key_env", kind: "envName" },
  { setting: "llm.timeoutS", section: "llm", key: "timeout_s", kind: "integer", minimum: 1 },
  { setting: "runtime.python", section: "runtime", key: "python", kind: "string" },
  { setting: "runtime.timeoutS", section: "runtime", key: "timeout_s", kind: "integer", minimum: 1 },
  { setting: "runtime.maxToolCalls", section: "runtime", key: "max_tool_calls", kind: "integer", minimum: 1 },
  { setting: "generate.candidates", section: "generate", key: "candidates", kind: "integer", minimum: 1 },
  { setting: "generate.reflections", section: "generate", key: "reflections", kind: "integer", minimum: 0 },
  { setting: "generate.maxLlmCalls", section: "generate", key: "max_llm_calls", kind: "integer", minimum: 1 },
  { setting: "generate.maxTokens", section: "generate", key: "max_tokens", kind: "integer", minimum: 1 },
  { setting: "probe.samples", section: "probe", key: "samples", kind: "integer", minimum: 1 },
  { setting: "probe.rounds", section: "probe", key: "rounds", kind: "integer", minimum: 1 },
  { setting: "diagnostics.severity", section: "diagnostics", key: "severity", kind: "severityMap" },
  // Not a chainsmith.toml key: the client also enforces it (see extension.ts), and a server that
  // produces inlay hints can skip the work.
  { setting: "inlayHints.enabled", section: "inlay_hints", key: "enabled", kind: "boolean" },
];

/** Settings only the extension reads (never sent). */
export const CLIENT_SETTINGS: readonly string[] = ["path", "trace.server"];

export const SEVERITIES = ["error", "warning", "information", "hint", "off"] as const;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type ServerSettings = Record<string, Record<string, unknown>>;

export interface Mapped {
  /** What the server gets as `initializationOptions` and as the `chainsmith` configuration section. */
  settings: ServerSettings;
  /** Settings that were set but cannot be used, in words (never quoting a value that may be secret). */
  problems: string[];
}

/** The shape of `WorkspaceConfiguration.inspect()`'s answer that matters here. */
export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The value the user set, most specific scope first; `undefined` when only the default applies. */
export function explicitValue(inspected: Inspected | undefined): unknown {
  if (!inspected) return undefined;
  for (const v of [inspected.workspaceFolderValue, inspected.workspaceValue, inspected.globalValue]) {
    if (v !== undefined) return v;
  }
  return undefined;
}

/**
 * Maps explicitly set settings (keyed as in {@link SettingSpec.setting}) to the server's object.
 * Empty strings and nulls mean "not set". Invalid values are dropped with a problem.
 */
export function toServerSettings(explicit: Record<string, unknown>): Mapped {
  const settings: ServerSettings = {};
  const problems: string[] = [];
  for (const spec of SERVER_SETTINGS) {
    const raw = explicit[spec.setting];
    if (raw === undefined || raw === null || raw === "") continue;
    const name = `chainsmith.${spec.setting}`;
    let value: unknown;
    switch (spec.kind) {
      case "string":
        if (typeof raw !== "string") {
          problems.push(`${name} must be a string; it is ignored`);
          continue;
        }
        value = raw.trim();
        if (value === "") continue;
        break;
      case "envName":
        // The key itself must never travel: accept only what can be an environment variable name.
        if (typeof raw !== "string" || !ENV_NAME.test(raw.trim())) {
          problems.push(
            `${name} must be the NAME of an environment variable (like OPENAI_API_KEY), not the key itself; it is ignored`,
          );
          continue;
        }
        value = raw.trim();
        break;
      case "integer": {
        const min = spec.minimum ?? 0;
        if (typeof raw !== "number" || !Number.isInteger(raw) || raw < min) {
          problems.push(`${name} must be an integer of at least ${min}; it is ignored`);
          continue;
        }
        value = raw;
        break;
      }
      case "boolean":
        if (typeof raw !== "boolean") {
          problems.push(`${name} must be true or false; it is ignored`);
          continue;
        }
        value = raw;
        break;
      case "severityMap": {
        if (typeof raw !== "object" || Array.isArray(raw)) {
          problems.push(`${name} must be an object of diagnostic code → severity; it is ignored`);
          continue;
        }
        const map: Record<string, string> = {};
        for (const [code, severity] of Object.entries(raw as Record<string, unknown>)) {
          if (typeof severity === "string" && (SEVERITIES as readonly string[]).includes(severity)) {
            map[code] = severity;
          } else {
            problems.push(`${name}: the severity of "${code}" must be one of ${SEVERITIES.join(", ")}; it is ignored`);
          }
        }
        if (Object.keys(map).length === 0) continue;
        value = map;
        break;
      }
    }
    (settings[spec.section] ??= {})[spec.key] = value;
  }
  return { settings, problems };
}

/** Reads every server setting through `inspect` (a `WorkspaceConfiguration` fits) and maps them. */
export function collect(inspect: (setting: string) => Inspected | undefined): Mapped {
  const explicit: Record<string, unknown> = {};
  for (const spec of SERVER_SETTINGS) {
    const v = explicitValue(inspect(spec.setting));
    if (v !== undefined) explicit[spec.setting] = v;
  }
  return toServerSettings(explicit);
}

/**
 * What the server gets: the settings and `trusted`, VS Code's workspace trust. The extension runs
 * only in trusted workspaces (package.json, `untrustedWorkspaces`), so the server may start the MCP
 * servers and commands the workspace names without a trust record of its own. `trusted` is never
 * read from the settings themselves: a workspace's settings.json cannot trust the workspace.
 */
export function withWorkspaceTrust(settings: ServerSettings, trusted: boolean): Record<string, unknown> {
  return { ...settings, trusted };
}

export interface ConfigurationItem {
  scopeUri?: string | null;
  section?: string | null;
}

/**
 * The answer to `workspace/configuration` for the items the server may ask about: the `chainsmith`
 * section (or one of its sections, `chainsmith.llm`) is answered from `settings`; anything else is
 * left to `other` (VS Code's own lookup).
 */
export function answerConfiguration(
  items: readonly ConfigurationItem[],
  settings: Readonly<Record<string, unknown>>,
  other: (item: ConfigurationItem) => unknown = () => null,
): unknown[] {
  return items.map((item) => {
    const section = item.section ?? "";
    if (section === "chainsmith") return settings;
    if (section.startsWith("chainsmith.")) {
      let value: unknown = settings;
      for (const part of section.slice("chainsmith.".length).split(".")) {
        value = value !== null && typeof value === "object" ? (value as Record<string, unknown>)[part] : undefined;
      }
      return value ?? null;
    }
    return other(item);
  });
}
