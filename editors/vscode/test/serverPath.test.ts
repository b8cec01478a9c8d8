import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { type Environment, resolveServerPath } from "../src/serverPath";

function posix(files: string[], extra: Partial<Environment> = {}): Environment {
  const set = new Set(files);
  return {
    platform: "linux",
    pathVariable: "/usr/local/bin:/usr/bin:/home/me/.cargo/bin",
    home: "/home/me",
    workspaceFolder: "/work/project",
    isExecutable: (f) => set.has(f),
    ...extra,
  };
}

describe("server path resolution", () => {
  it("finds chainsmith on PATH, first directory first", () => {
    assert.deepEqual(resolveServerPath(undefined, posix(["/home/me/.cargo/bin/chainsmith"])), {
      ok: true,
      command: "/home/me/.cargo/bin/chainsmith",
      source: "PATH",
    });
    assert.deepEqual(resolveServerPath("", posix(["/usr/bin/chainsmith", "/home/me/.cargo/bin/chainsmith"])), {
      ok: true,
      command: "/usr/bin/chainsmith",
      source: "PATH",
    });
  });

  it("says how to fix a missing executable", () => {
    const r = resolveServerPath("", posix([]));
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.message : "", /not found on PATH.*chainsmith\.path/s);
  });

  it("prefers the setting: absolute, ~, ${workspaceFolder} and relative to the workspace", () => {
    const env = posix([
      "/opt/chainsmith/bin/chainsmith",
      "/home/me/src/chainsmith/target/release/chainsmith",
      "/work/project/tools/chainsmith",
      "/usr/bin/chainsmith",
    ]);
    const ok = (command: string) => ({ ok: true, command, source: "setting" });
    assert.deepEqual(resolveServerPath("/opt/chainsmith/bin/chainsmith", env), ok("/opt/chainsmith/bin/chainsmith"));
    assert.deepEqual(
      resolveServerPath("~/src/chainsmith/target/release/chainsmith", env),
      ok("/home/me/src/chainsmith/target/release/chainsmith"),
    );
    assert.deepEqual(resolveServerPath("${workspaceFolder}/tools/chainsmith", env), ok("/work/project/tools/chainsmith"));
    assert.deepEqual(resolveServerPath("./tools/chainsmith", env), ok("/work/project/tools/chainsmith"));
    assert.deepEqual(resolveServerPath(" tools/chainsmith ", env), ok("/work/project/tools/chainsmith"));
  });

  it("looks a bare name up on PATH", () => {
    const env = posix(["/usr/local/bin/chainsmith-nightly"]);
    assert.deepEqual(resolveServerPath("chainsmith-nightly", env), {
      ok: true,
      command: "/usr/local/bin/chainsmith-nightly",
      source: "setting",
    });
    assert.equal(resolveServerPath("chainsmith-beta", env).ok, false);
  });

  it("reports a setting that points nowhere instead of falling back to PATH", () => {
    const r = resolveServerPath("/nope/chainsmith", posix(["/usr/bin/chainsmith"]));
    assert.deepEqual(r, { ok: false, message: "chainsmith.path points to /nope/chainsmith, which is not an executable file." });
    const relative = resolveServerPath("bin/chainsmith", posix([], { workspaceFolder: undefined }));
    assert.equal(relative.ok, false);
  });

  it("uses PATHEXT and ; on Windows", () => {
    const env: Environment = {
      platform: "win32",
      pathVariable: 'C:\\Windows;"C:\\Users\\me\\.cargo\\bin"',
      pathExt: ".COM;.EXE",
      home: "C:\\Users\\me",
      workspaceFolder: "C:\\work",
      isExecutable: (f) => f === "C:\\Users\\me\\.cargo\\bin\\chainsmith.exe" || f === "C:\\work\\bin\\chainsmith.exe",
    };
    assert.deepEqual(resolveServerPath(undefined, env), {
      ok: true,
      command: "C:\\Users\\me\\.cargo\\bin\\chainsmith.exe",
      source: "PATH",
    });
    assert.deepEqual(resolveServerPath("bin\\chainsmith", env), {
      ok: true,
      command: "C:\\work\\bin\\chainsmith.exe",
      source: "setting",
    });
  });
});
