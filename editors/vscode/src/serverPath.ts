// Which `chainsmith` executable to start: the `chainsmith.path` setting, else `chainsmith` on PATH.
// Pure (the file system and environment come in as arguments), so it is tested without VS Code.

import * as path from "node:path";

export interface Environment {
  /** process.platform */
  platform: string;
  /** The PATH (or Path) variable. */
  pathVariable?: string;
  /** PATHEXT on Windows. */
  pathExt?: string;
  /** The user's home folder, for `~/…`. */
  home?: string;
  /** The workspace folder, for relative paths and `${workspaceFolder}`. */
  workspaceFolder?: string;
  /** Whether a regular, executable file exists at this absolute path. */
  isExecutable: (file: string) => boolean;
}

export type Resolution =
  | { ok: true; command: string; source: "setting" | "PATH" }
  | { ok: false; message: string };

export const EXECUTABLE = "chainsmith";

export function resolveServerPath(setting: string | undefined, env: Environment): Resolution {
  const p = env.platform === "win32" ? path.win32 : path.posix;
  const configured = (setting ?? "").trim();
  if (configured !== "") {
    let file = configured;
    if (env.workspaceFolder !== undefined) {
      file = file.split("${workspaceFolder}").join(env.workspaceFolder);
    }
    if ((file === "~" || file.startsWith("~/") || file.startsWith("~\\")) && env.home) {
      file = p.join(env.home, file.slice(1));
    }
    if (!p.isAbsolute(file)) {
      // A bare name ("chainsmith-dev") is looked up on PATH; anything with a separator is relative.
      if (!/[\\/]/.test(file)) {
        const found = searchPath(file, env);
        if (found) return { ok: true, command: found, source: "setting" };
        return {
          ok: false,
          message: `chainsmith.path is "${configured}", which is not an executable on PATH.`,
        };
      }
      if (env.workspaceFolder === undefined) {
        return {
          ok: false,
          message: `chainsmith.path "${configured}" is relative, but no workspace folder is open to resolve it against.`,
        };
      }
      file = p.resolve(env.workspaceFolder, file);
    }
    for (const candidate of withExtensions(file, env)) {
      if (env.isExecutable(candidate)) return { ok: true, command: candidate, source: "setting" };
    }
    return { ok: false, message: `chainsmith.path points to ${file}, which is not an executable file.` };
  }
  const found = searchPath(EXECUTABLE, env);
  if (found) return { ok: true, command: found, source: "PATH" };
  return {
    ok: false,
    message:
      "chainsmith was not found on PATH. Install it (cargo install --path . in the chainsmith repository) " +
      "or set chainsmith.path to the executable (in a remote window — Remote-SSH, WSL, a container, " +
      "code-server — in the Remote settings: chainsmith.path is a machine setting).",
  };
}

function searchPath(name: string, env: Environment): string | undefined {
  const p = env.platform === "win32" ? path.win32 : path.posix;
  const separator = env.platform === "win32" ? ";" : ":";
  for (const dir of (env.pathVariable ?? "").split(separator)) {
    if (dir.trim() === "") continue;
    const unquoted = dir.replace(/^"(.*)"$/, "$1");
    for (const candidate of withExtensions(p.join(unquoted, name), env)) {
      if (p.isAbsolute(candidate) && env.isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

/** The file itself; on Windows, when it has no extension, first the file with each PATHEXT extension. */
function withExtensions(file: string, env: Environment): string[] {
  if (env.platform !== "win32" || path.win32.extname(file) !== "") return [file];
  const exts = (env.pathExt ?? ".COM;.EXE;.BAT;.CMD").split(";").filter((e) => e !== "");
  return [...exts.map((e) => file + e.toLowerCase()), file];
}
