import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  SERVER_SETTINGS,
  answerConfiguration,
  collect,
  explicitValue,
  toServerSettings,
  withWorkspaceTrust,
} from "../src/settings";

describe("settings → server configuration", () => {
  it("maps camelCase settings to chainsmith.toml's sections and keys", () => {
    const { settings, problems } = toServerSettings({
      "llm.baseUrl": "http://127.0.0.1:8000/v1",
      "llm.model": "qwen2.5-coder:7b",
      "llm.apiKeyEnv": "VLLM_KEY",
      "llm.timeoutS": 30,
      "runtime.python": ".venv/bin/python",
      "runtime.timeoutS": 10,
      "runtime.maxToolCalls": 50,
      "generate.candidates": 8,
      "generate.reflections": 0,
      "generate.maxLlmCalls": 4,
      "generate.maxTokens": 9000,
      "probe.samples": 2,
      "probe.rounds": 1,
      "diagnostics.severity": { "unknown-key": "error", "argument-type-mismatch": "off" },
      "inlayHints.enabled": false,
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(settings, {
      llm: { base_url: "http://127.0.0.1:8000/v1", model: "qwen2.5-coder:7b", api_key_env: "VLLM_KEY", timeout_s: 30 },
      runtime: { python: ".venv/bin/python", timeout_s: 10, max_tool_calls: 50 },
      generate: { candidates: 8, reflections: 0, max_llm_calls: 4, max_tokens: 9000 },
      probe: { samples: 2, rounds: 1 },
      diagnostics: { severity: { "unknown-key": "error", "argument-type-mismatch": "off" } },
      inlay_hints: { enabled: false },
    });
  });

  it("sends nothing for unset, empty or null settings, so chainsmith.toml keeps its values", () => {
    assert.deepEqual(toServerSettings({}), { settings: {}, problems: [] });
    assert.deepEqual(
      toServerSettings({ "llm.model": "", "llm.baseUrl": "   ", "runtime.timeoutS": null, "diagnostics.severity": {} }),
      { settings: {}, problems: [] },
    );
  });

  it("takes only explicitly set values, the most specific scope first", () => {
    assert.equal(explicitValue(undefined), undefined);
    assert.equal(explicitValue({}), undefined);
    assert.equal(explicitValue({ globalValue: "g" }), "g");
    assert.equal(explicitValue({ globalValue: "g", workspaceValue: "w" }), "w");
    assert.equal(explicitValue({ globalValue: "g", workspaceValue: "w", workspaceFolderValue: "f" }), "f");
    // What WorkspaceConfiguration.inspect answers: defaults never travel.
    const inspected: Record<string, object> = {
      "llm.model": { key: "chainsmith.llm.model", defaultValue: "", globalValue: "m" },
      "runtime.timeoutS": { key: "chainsmith.runtime.timeoutS", defaultValue: null },
      "inlayHints.enabled": { key: "chainsmith.inlayHints.enabled", defaultValue: true },
    };
    assert.deepEqual(collect((s) => inspected[s]), { settings: { llm: { model: "m" } }, problems: [] });
  });

  it("accepts only a variable NAME for the API key and never repeats the rejected value", () => {
    const secret = "sk-proj-abc123-very-secret";
    const { settings, problems } = toServerSettings({ "llm.apiKeyEnv": secret, "llm.model": "m" });
    assert.deepEqual(settings, { llm: { model: "m" } });
    assert.equal(problems.length, 1);
    assert.match(problems[0], /chainsmith\.llm\.apiKeyEnv must be the NAME of an environment variable/);
    assert.ok(!problems[0].includes(secret), "the rejected value must not appear in messages");
    assert.deepEqual(toServerSettings({ "llm.apiKeyEnv": " OPENAI_API_KEY " }).settings, {
      llm: { api_key_env: "OPENAI_API_KEY" },
    });
  });

  it("drops ill-typed values with a problem each and keeps the rest", () => {
    const { settings, problems } = toServerSettings({
      "runtime.timeoutS": 0,
      "runtime.maxToolCalls": 2.5,
      "llm.timeoutS": "60",
      "llm.model": 7,
      "inlayHints.enabled": "yes",
      "diagnostics.severity": { "unknown-key": "fatal", "bad-index": "warning" },
      "probe.rounds": 2,
    });
    assert.deepEqual(settings, { diagnostics: { severity: { "bad-index": "warning" } }, probe: { rounds: 2 } });
    assert.equal(problems.length, 6);
    assert.ok(problems.some((p) => p.startsWith("chainsmith.runtime.timeoutS must be an integer of at least 1")));
    assert.ok(problems.some((p) => p.includes(`"unknown-key"`)));
  });

  it("answers workspace/configuration for the chainsmith section and its parts", () => {
    const settings = { llm: { model: "m" }, runtime: { timeout_s: 5 } };
    const other = (item: { section?: string | null }) => `other:${item.section}`;
    assert.deepEqual(
      answerConfiguration(
        [
          { section: "chainsmith" },
          { section: "chainsmith.llm" },
          { section: "chainsmith.llm.model" },
          { section: "chainsmith.probe" },
          { section: "python" },
          {},
        ],
        settings,
        other,
      ),
      [settings, { model: "m" }, "m", null, "other:python", "other:undefined"],
    );
  });

  it("sends VS Code's workspace trust as `trusted`, never a setting of that name", () => {
    const { settings } = toServerSettings({ trusted: true, "llm.model": "m" } as Record<string, unknown>);
    assert.deepEqual(settings, { llm: { model: "m" } }, "a `chainsmith.trusted` setting is not sent");
    assert.deepEqual(withWorkspaceTrust(settings, true), { llm: { model: "m" }, trusted: true });
    assert.deepEqual(withWorkspaceTrust(settings, false), { llm: { model: "m" }, trusted: false });
  });

  it("lists each server setting once", () => {
    const keys = SERVER_SETTINGS.map((s) => s.setting);
    assert.equal(new Set(keys).size, keys.length);
    const targets = SERVER_SETTINGS.map((s) => `${s.section}.${s.key}`);
    assert.equal(new Set(targets).size, targets.length);
  });
});
