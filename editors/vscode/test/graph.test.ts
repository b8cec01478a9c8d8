import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { graphPage } from "../src/graph";

describe("tool graph webview", () => {
  it("shows the server's SVG without its XML prolog, under a policy that runs nothing", () => {
    const page = graphPage({
      text: "…",
      svg: '<?xml version="1.0"?><svg width="10"><text>tmdb.search_person</text></svg>',
      highlighted: ["tmdb.search_person"],
    });
    assert.ok(page);
    assert.ok(!page.includes("<?xml"));
    assert.match(page, /<svg width="10"><text>tmdb\.search_person<\/text><\/svg>/);
    assert.match(page, /default-src 'none'/);
    assert.match(page, /The tools this program calls \(filled\)/);
  });

  it("has nothing to show without a picture", () => {
    assert.equal(graphPage(null), undefined);
    assert.equal(graphPage({ text: "ToolNet: 0 edges", svg: null, svgError: "could not be laid out" }), undefined);
  });
});
