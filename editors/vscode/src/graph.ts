// The page of the "Show tool graph" webview: the SVG picture the server answers `chainsmith.graph`
// with (laid out by the server), under a policy that lets nothing run or load. Pure.

/** The webview's HTML for a `chainsmith.graph` answer; `undefined` when it holds no picture. */
export function graphPage(answer: unknown): string | undefined {
  if (answer === null || typeof answer !== "object") return undefined;
  const { svg, highlighted } = answer as { svg?: unknown; highlighted?: unknown };
  if (typeof svg !== "string" || !svg.includes("<svg")) return undefined;
  // The server's own drawing; an XML prolog is not HTML.
  const picture = svg.slice(svg.indexOf("<svg"));
  const tools = Array.isArray(highlighted) ? highlighted.filter((t): t is string => typeof t === "string") : [];
  const caption =
    tools.length > 0
      ? `The tools this program calls (filled) and what came next after them in the workspace's programs, runs and imported trajectories; red dashed: failing lately.`
      : `What came next after each tool in the workspace's programs, runs and imported trajectories; red dashed: failing lately.`;
  return [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline';">`,
    // Drawn at its own size and scrolled, never shrunk to the panel: labels stay readable.
    "<style>body{background:#fff;color:#263238;font-family:sans-serif;margin:8px;overflow:auto} svg{display:block;max-width:none}</style>",
    "</head><body>",
    `<p>${escapeHtml(caption)}</p>`,
    picture,
    "</body></html>",
  ].join("\n");
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
