import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";

import { SERVER_COMMANDS, TASK_COMMANDS, commandArguments, commandTitle, isTaskCommand } from "../src/commands";
import { isStatus, statusView } from "../src/status";
import { chooseRoot, findRootUpward, globUnder } from "../src/workspace";

describe("status bar item", () => {
  it("shows the catalog from chainsmith/status", () => {
    const v = statusView("running", { toolsets: 1, tools: 54, unprobed: 0 });
    assert.equal(v.text, "$(tools) 54 tools");
    assert.equal(v.tooltip, "chainsmith: 1 toolset, 54 tools, every response schema known.");
    assert.equal(v.command, "chainsmith.showOutput");
  });

  it("offers probing when response schemas are unknown", () => {
    const v = statusView("running", { toolsets: 2, tools: 1, unprobed: 1 });
    assert.equal(v.text, "$(tools) 1 tool · 1 unprobed");
    assert.match(v.tooltip, /2 toolsets, 1 tool; 1 tool has no known response schema/);
    assert.equal(v.command, "chainsmith.probeAll");
  });

  it("warns about an empty workspace and offers a restart when the server is down", () => {
    assert.equal(statusView("running", { toolsets: 0, tools: 0, unprobed: 0 }).severity, "warning");
    const failed = statusView("failed", undefined, "executable not found");
    assert.equal(failed.severity, "error");
    assert.equal(failed.command, "chainsmith.restart");
    assert.match(failed.tooltip, /executable not found/);
    assert.equal(statusView("starting").text, "$(sync~spin) chainsmith");
    assert.equal(statusView("running").text, "$(tools) chainsmith");
  });

  it("checks the notification's shape", () => {
    assert.ok(isStatus({ toolsets: 1, tools: 2, unprobed: 0 }));
    assert.ok(!isStatus({ toolsets: 1, tools: "2", unprobed: 0 }));
    assert.ok(!isStatus(null));
    assert.ok(!isStatus([1, 2, 3]));
  });
});

describe("commands", () => {
  it("sends the active document with a palette command and keeps a code lens's own arguments", () => {
    assert.deepEqual(commandArguments([], "file:///w/chain.py"), ["file:///w/chain.py"]);
    assert.deepEqual(commandArguments([], undefined), []);
    assert.deepEqual(commandArguments([{ uri: "file:///w/a.py", line: 3 }], "file:///w/b.py"), [
      { uri: "file:///w/a.py", line: 3 },
    ]);
  });

  it("gives the commands that start server tasks a cancellable notification", () => {
    assert.deepEqual(TASK_COMMANDS, ["chainsmith.run", "chainsmith.generate", "chainsmith.fix", "chainsmith.probe", "chainsmith.probeAll"]);
    assert.ok(TASK_COMMANDS.every((id) => SERVER_COMMANDS.some((c) => c.id === id)));
    assert.equal(isTaskCommand("chainsmith.graph"), false, "the graph answers at once");
  });

  it("names the design's six commands, plan, trustWorkspace, acceptObserved and writeStubs", () => {
    assert.deepEqual(
      SERVER_COMMANDS.map((c) => c.id),
      [
        "chainsmith.run",
        "chainsmith.generate",
        "chainsmith.fix",
        "chainsmith.plan",
        "chainsmith.probe",
        "chainsmith.probeAll",
        "chainsmith.graph",
        "chainsmith.trustWorkspace",
        "chainsmith.acceptObserved",
        "chainsmith.writeStubs",
      ],
    );
    assert.equal(commandTitle("chainsmith.run"), "Run chain");
    assert.equal(commandTitle("other.command"), "other.command");
  });
});

describe("workspace root", () => {
  const tree = new Set(["/w/repo/examples/tmdb/chainsmith.toml", "/w/repo/examples/tmdb", "/w/plain/protocols", "/w/repo/examples/mcp/chainsmith.toml"]);
  const exists = (p: string) => tree.has(p);

  it("is a folder with chainsmith.toml or protocols/", () => {
    assert.equal(chooseRoot(["/w/other", "/w/plain"], [], exists), "/w/plain");
    assert.equal(findRootUpward("/w/repo/examples/tmdb/chains", exists), "/w/repo/examples/tmdb");
    assert.equal(findRootUpward("/w/repo/examples/tmdb/chains", exists, "/w/repo/examples/tmdb/chains"), undefined);
    assert.equal(findRootUpward("/w/nothing/here", exists), undefined);
  });

  it("falls back to the shallowest chainsmith.toml inside the folders", () => {
    assert.equal(
      chooseRoot(["/w/repo"], ["/w/repo/examples/tmdb/chainsmith.toml", "/w/repo/examples/mcp/chainsmith.toml", "/w/repo/a/b/c/chainsmith.toml"], exists),
      path.dirname("/w/repo/examples/mcp/chainsmith.toml"),
    );
    assert.equal(chooseRoot(["/w/repo"], [], exists), undefined);
  });

  it("globs under the root with forward slashes", () => {
    assert.equal(globUnder("/w/repo/"), "/w/repo/**/*");
    assert.equal(globUnder("C:\\w\\repo", "**/chainsmith.toml"), "C:/w/repo/**/chainsmith.toml");
  });
});
