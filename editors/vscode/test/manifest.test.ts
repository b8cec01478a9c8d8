// package.json against the pure modules: every setting the extension contributes is either sent to
// the server or read by the extension, every server command is in the palette, and packaging with
// vsce has what it needs so it never stops at a prompt.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { CLIENT_COMMANDS, SERVER_COMMANDS } from "../src/commands";
import { CLIENT_SETTINGS, SERVER_SETTINGS } from "../src/settings";

const extensionDir = path.resolve(__dirname, "..", "..");
const manifest = JSON.parse(fs.readFileSync(path.join(extensionDir, "package.json"), "utf8"));

describe("package.json", () => {
  it("contributes exactly the settings the extension maps or reads", () => {
    const contributed = Object.keys(manifest.contributes.configuration.properties).sort();
    const known = [...SERVER_SETTINGS.map((s) => s.setting), ...CLIENT_SETTINGS].map((s) => `chainsmith.${s}`).sort();
    assert.deepEqual(contributed, known);
    const apiKey = manifest.contributes.configuration.properties["chainsmith.llm.apiKeyEnv"];
    assert.ok(new RegExp(apiKey.pattern).test("OPENAI_API_KEY"));
    assert.ok(!new RegExp(apiKey.pattern).test("sk-abc-123"), "the setting takes a variable name, not a key");
  });

  it("puts every server command and the extension's own in the palette", () => {
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(contributed, [...SERVER_COMMANDS.map((c) => c.id), ...CLIENT_COMMANDS].sort());
    for (const c of manifest.contributes.commands) assert.equal(c.category, "chainsmith");
  });

  it("activates in workspaces with chainsmith.toml or protocols/", () => {
    assert.ok(manifest.activationEvents.includes("workspaceContains:chainsmith.toml"));
    assert.ok(manifest.activationEvents.includes("workspaceContains:protocols/**"));
    assert.ok(!manifest.activationEvents.includes("*"));
  });

  it("has what vsce package asks for, so packaging never prompts", () => {
    assert.ok(manifest.publisher);
    assert.equal(manifest.license, "MIT");
    assert.ok(manifest.repository?.url, "a repository field");
    for (const file of ["LICENSE", "README.md", ".vscodeignore", "package-lock.json"]) {
      assert.ok(fs.existsSync(path.join(extensionDir, file)), `${file} is present`);
    }
    assert.match(manifest.devDependencies["@vscode/vsce"], /^3\./, "vsce 3.x (4.x needs Node 22)");
    // vsce refuses @types/vscode newer than engines.vscode.
    const engine = manifest.engines.vscode.replace(/^\^/, "");
    assert.equal(manifest.devDependencies["@types/vscode"], engine);
    assert.ok(fs.existsSync(path.join(extensionDir, manifest.main)), `${manifest.main} is built`);
  });
});
