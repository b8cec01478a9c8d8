// Which folder is the chainsmith workspace (the server's root): a folder holding chainsmith.toml or
// protocols/, as the CLI decides (README, "Without --root …"). Pure: existence checks come in.

import * as path from "node:path";

export const MARKERS = ["chainsmith.toml", "protocols"] as const;

export function isChainsmithRoot(dir: string, exists: (p: string) => boolean): boolean {
  return MARKERS.some((m) => exists(path.join(dir, m)));
}

/** The nearest folder at or above `start` that is a chainsmith workspace, not going above `stop`. */
export function findRootUpward(start: string, exists: (p: string) => boolean, stop?: string): string | undefined {
  let dir = path.resolve(start);
  const limit = stop === undefined ? undefined : path.resolve(stop);
  for (;;) {
    if (isChainsmithRoot(dir, exists)) return dir;
    const parent = path.dirname(dir);
    if (parent === dir || dir === limit) return undefined;
    dir = parent;
  }
}

/**
 * The root for a window: the first workspace folder that is a chainsmith workspace, else the folder
 * of the shallowest chainsmith.toml found inside the folders (`configFiles`, absolute paths).
 */
export function chooseRoot(
  folders: readonly string[],
  configFiles: readonly string[],
  exists: (p: string) => boolean,
): string | undefined {
  const direct = folders.find((f) => isChainsmithRoot(f, exists));
  if (direct !== undefined) return direct;
  const depth = (f: string) => path.resolve(f).split(path.sep).length;
  const sorted = [...configFiles].sort((a, b) => depth(a) - depth(b) || a.localeCompare(b));
  return sorted.length > 0 ? path.dirname(sorted[0]) : undefined;
}

/** A glob matching every file under `root`, in the form VS Code's document selectors take. */
export function globUnder(root: string, tail = "**/*"): string {
  return `${root.replace(/\\/g, "/").replace(/\/$/, "")}/${tail}`;
}
