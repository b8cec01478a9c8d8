-- End-to-end test of the chainsmith Neovim plugin against the real server, in a real (headless)
-- Neovim. Runs on Neovim 0.7 (no `nvim -l` there):
--
--   CHAINSMITH_BIN=target/debug/chainsmith nvim --headless -u NONE -i NONE -n -c "luafile editors/neovim/test/e2e.lua"
--
-- It copies examples/tmdb to a temporary folder, opens the chain with the planted mistakes and
-- checks diagnostics, completion, hover, code actions, inlay hints and commands, then runs a chain
-- with :ChainsmithRun against the TMDB-like test server (tests/support/tmdb_server.py, started here
-- with jobstart and stopped at the end). Every step prints a line; a failed step makes Neovim exit
-- with status 1 (`cquit 1`), a hang with status 2.

local TIMEOUT_MS = tonumber(os.getenv("CHAINSMITH_E2E_TIMEOUT_MS") or "") or 60000
local WAIT_MS = 15000

local function out(line)
  io.stdout:write(line .. "\n")
  io.stdout:flush()
end

-- Whatever happens, never outlive the timeout (the timer fires while vim.wait() waits).
local watchdog = (vim.uv or vim.loop).new_timer()
watchdog:start(TIMEOUT_MS, 0, function()
  io.stdout:write(("FAIL: the test did not finish within %d ms\n"):format(TIMEOUT_MS))
  io.stdout:flush()
  vim.schedule(function()
    vim.cmd("cquit 2")
  end)
end)

local script = debug.getinfo(1, "S").source:sub(2)
local repo = vim.fn.fnamemodify(script, ":p:h:h:h:h")
local bin = os.getenv("CHAINSMITH_BIN")
if not bin or bin == "" then
  bin = repo .. "/target/debug/chainsmith"
end

local passed, failed = 0, 0

-- The TMDB-like test server: its job id, port, and whether it exited.
local tmdb = { job = nil, port = nil, exited = false, stderr = {} }
-- The key the test server demands and the server gets through TMDB_KEY (the toolset's auth).
local TMDB_TEST_KEY = "e2e-nvim-test-key"

local function stop_tmdb()
  if tmdb.job and not tmdb.exited then
    vim.fn.jobstop(tmdb.job)
    vim.wait(5000, function()
      return tmdb.exited
    end, 20)
  end
end

local function step(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passed = passed + 1
    out("ok   " .. name)
  else
    failed = failed + 1
    out("FAIL " .. name .. "\n     " .. tostring(err):gsub("\n", "\n     "))
  end
  return ok
end

local function finish()
  watchdog:stop()
  stop_tmdb()
  out(("nvim e2e: %d passed, %d failed"):format(passed, failed))
  if failed > 0 then
    vim.cmd("cquit 1")
  end
  -- 0.10 renamed get_active_clients to get_clients; 0.11 wants the method form of stop.
  local all_clients = vim.lsp.get_clients or vim.lsp.get_active_clients
  for _, client in ipairs(all_clients()) do
    if vim.fn.has("nvim-0.11") == 1 then
      client:stop()
    else
      client.stop()
    end
  end
  vim.wait(2000, function()
    return #all_clients() == 0
  end, 20)
  vim.cmd("qall!")
end

local function check(cond, message)
  if not cond then
    error(message, 2)
  end
end

local function wait_for(what, cond)
  local ok = vim.wait(WAIT_MS, cond, 20)
  check(ok, "timed out waiting for " .. what)
end

-- A raw request to the one chainsmith client, waited for: (err, result).
local function raw_request(client, bufnr, method, params)
  local done, err, result = false, nil, nil
  require("chainsmith").request(client, method, params, function(e, r)
    done, err, result = true, e, r
  end, bufnr)
  wait_for("the answer to " .. method, function()
    return done
  end)
  return err, result
end

-- vim.lsp.buf_request_sync, reduced to this client's answer.
local function buf_request(client, bufnr, method, params)
  local answers = vim.lsp.buf_request_sync(bufnr, method, params, WAIT_MS)
  check(answers and answers[client.id], "no answer to " .. method)
  local answer = answers[client.id]
  -- The field is `error` up to 0.8, `err` from 0.9 on.
  local err = answer.err or answer.error
  check(err == nil, method .. " failed: " .. vim.inspect(err))
  return answer.result
end

local function items_of(result)
  if result == nil or result == vim.NIL then
    return {}
  end
  return result.items or result
end

local function mentions(item, word)
  for _, s in ipairs({ item.label, item.insertText, item.filterText, item.textEdit and item.textEdit.newText }) do
    if type(s) == "string" and s:find(word, 1, true) then
      return true
    end
  end
  return false
end

local function labels(items)
  local names = {}
  for _, item in ipairs(items) do
    table.insert(names, item.label)
  end
  return table.concat(names, ", ")
end

-- The label of an inlay hint: a string or InlayHintLabelPart[].
local function hint_label(hint)
  if type(hint.label) == "string" then
    return hint.label
  end
  local parts = {}
  for _, part in ipairs(hint.label or {}) do
    table.insert(parts, part.value or "")
  end
  return table.concat(parts)
end

-- Starts tests/support/tmdb_server.py (on the workspace's copy of the spec, so that its command
-- line names this test's folder) and waits for its `PORT <n>` line.
local function start_tmdb(ws)
  local partial = ""
  tmdb.job = vim.fn.jobstart({
    "python3",
    repo .. "/tests/support/tmdb_server.py",
    "--spec",
    ws .. "/specs/tmdb_oas.json",
    "--api-key",
    TMDB_TEST_KEY,
  }, {
    on_stdout = function(_, data)
      -- data[1] continues the last partial line; the last element is the new partial line.
      partial = partial .. (data[1] or "")
      for i = 2, #data do
        local port = partial:match("^PORT (%d+)")
        if port and not tmdb.port then
          tmdb.port = tonumber(port)
        end
        partial = data[i]
      end
    end,
    on_stderr = function(_, data)
      for _, line in ipairs(data) do
        if line ~= "" then
          table.insert(tmdb.stderr, line)
        end
      end
    end,
    on_exit = function(_, code)
      tmdb.exited = true
      tmdb.code = code
    end,
  })
  check(tmdb.job > 0, "could not start python3 tests/support/tmdb_server.py (jobstart: " .. tostring(tmdb.job) .. ")")
  wait_for("the test server's PORT line", function()
    return tmdb.port ~= nil or tmdb.exited
  end)
  check(tmdb.port, "the test server exited without a port: " .. table.concat(tmdb.stderr, "\n"))
end

-- POST /__control on the test server: replaces its failure and delay rules.
local function tmdb_control(rules)
  local py = "import sys, urllib.request as u; "
    .. "r = u.Request(sys.argv[1], data=sys.argv[2].encode(), method='POST', headers={'Content-Type': 'application/json'}); "
    .. "print(u.urlopen(r, timeout=5).read().decode())"
  local url = ("http://127.0.0.1:%d/__control"):format(tmdb.port)
  local answer = vim.fn.system({ "python3", "-c", py, url, vim.fn.json_encode(rules) })
  check(vim.v.shell_error == 0, "POST /__control failed: " .. answer)
  return vim.fn.json_decode(answer)
end

-- A scripted OpenAI-compatible model on 127.0.0.1, served by libuv while vim.wait() waits: every
-- chat completion is a probe program for vault.search_vaults.
local llm = { port = nil, requests = 0 }
local function start_llm()
  local uv = vim.uv or vim.loop
  local content = 'Question: Which vaults are titled Archive?\n```python\nfrom chainsmith.tools import vault\nprint(vault.search_vaults(query="Archive"))\n```'
  local body = vim.fn.json_encode({
    id = "chatcmpl-e2e",
    object = "chat.completion",
    model = "m",
    choices = { { index = 0, message = { role = "assistant", content = content }, finish_reason = "stop" } },
    usage = { prompt_tokens = 100, completion_tokens = 20, total_tokens = 120 },
  })
  local reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
  local server = uv.new_tcp()
  server:bind("127.0.0.1", 0)
  server:listen(16, function()
    local socket = uv.new_tcp()
    server:accept(socket)
    local buffer = ""
    socket:read_start(function(err, chunk)
      if err or not chunk then
        socket:close()
        return
      end
      buffer = buffer .. chunk
      while true do
        local head_end = buffer:find("\r\n\r\n", 1, true)
        if not head_end then
          return
        end
        local length = tonumber(buffer:sub(1, head_end):lower():match("content%-length:%s*(%d+)")) or 0
        if #buffer < head_end + 3 + length then
          return
        end
        buffer = buffer:sub(head_end + 4 + length)
        llm.requests = llm.requests + 1
        socket:write(reply)
      end
    end)
  end)
  llm.port = server:getsockname().port
  llm.server = server
end

-- A toolset over the test server's undocumented vault search (its response unknown until probed).
local VAULT_TOOLSET = [[{
  "chainsmith": "toolset/1",
  "name": "vault",
  "tools": [
    {
      "name": "search_vaults",
      "description": "Searches vaults by title.",
      "http": {"method": "GET", "path": "/undocumented/vaults/search"},
      "parameters": {"query": {"type": "string", "required": true}}
    }
  ]
}]]

local main = function()
  out(("nvim %s, server %s"):format(tostring(vim.version and vim.version().minor and ("0." .. vim.version().minor .. "." .. vim.version().patch) or "?"), bin))
  check(vim.fn.executable(bin) == 1, "no chainsmith binary at " .. bin .. ": build it with `cargo build` (or set CHAINSMITH_BIN)")

  -- A copy of the example workspace: nothing the server might write lands in the repository.
  local ws = vim.fn.tempname() .. "-chainsmith-nvim"
  vim.fn.mkdir(ws, "p")
  vim.fn.system({ "cp", "-R", repo .. "/examples/tmdb/.", ws })
  check(vim.v.shell_error == 0, "copying examples/tmdb failed")

  vim.o.swapfile = false
  vim.o.shadafile = "NONE"
  vim.opt.runtimepath:prepend(repo .. "/editors/neovim")
  vim.cmd("filetype on")

  local messages = {}
  vim.lsp.handlers["window/showMessage"] = function(_, result)
    table.insert(messages, result)
  end

  local notes = {}
  vim.notify = function(message, level)
    table.insert(notes, { message = message, level = level })
  end

  -- The run's program output, and its work-done progress.
  local logs = {}
  vim.lsp.handlers["window/logMessage"] = function(_, result)
    table.insert(logs, result)
  end
  local progress = {}
  local default_progress = vim.lsp.handlers["$/progress"]
  vim.lsp.handlers["$/progress"] = function(err, result, ctx, cfg)
    if type(result) == "table" and type(result.value) == "table" then
      table.insert(progress, result)
    end
    if default_progress then
      pcall(default_progress, err, result, ctx, cfg)
    end
  end
  -- Counted, then passed on to Neovim's own handler (0.10+: it fetches the hints it shows);
  -- Neovim 0.7 does not know the request (it would answer MethodNotFound).
  local refreshes = 0
  local default_refresh = vim.lsp.handlers["workspace/inlayHint/refresh"]
  vim.lsp.handlers["workspace/inlayHint/refresh"] = function(err, result, ctx, cfg)
    refreshes = refreshes + 1
    if default_refresh then
      return default_refresh(err, result, ctx, cfg)
    end
    return vim.NIL
  end

  local chainsmith = require("chainsmith")
  chainsmith.setup({
    cmd = { bin, "lsp" },
    -- The toolset's auth reads the key from $TMDB_KEY; the test server demands this one.
    cmd_env = { TMDB_KEY = TMDB_TEST_KEY },
    settings = {
      -- Travels as initializationOptions and through workspace/configuration; observable below.
      diagnostics = { severity = { ["unknown-key"] = "hint" } },
      -- A key where a variable name belongs: refused.
      llm = { api_key_env = "sk-live-0123456789" },
    },
  })

  local file = ws .. "/mistakes/mistakes.py"
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(bufnr)
  local client

  local attached = step("the plugin starts the server and attaches it to a Python buffer of the workspace", function()
    check(vim.bo[bufnr].filetype == "python", "filetype is " .. vim.bo[bufnr].filetype)
    wait_for("a chainsmith client on the buffer", function()
      return #chainsmith.clients(bufnr) > 0
    end)
    client = chainsmith.clients(bufnr)[1]
    wait_for("initialization", function()
      return client.initialized or (client.server_capabilities ~= nil and next(client.server_capabilities) ~= nil)
    end)
    check(client.config.root_dir == vim.fn.resolve(ws) or client.config.root_dir == ws, "root_dir " .. tostring(client.config.root_dir))
    for _, c in ipairs(chainsmith.commands) do
      check(vim.fn.exists(":" .. c.user) == 2, ":" .. c.user .. " is defined")
    end
  end)
  if not attached then
    return
  end

  step("a key in llm.api_key_env is refused with a warning that does not repeat it", function()
    wait_for("the warning", function()
      return #notes > 0
    end)
    local found = false
    for _, n in ipairs(notes) do
      check(not n.message:find("sk-live", 1, true), "the key was repeated: " .. n.message)
      found = found or (n.level == vim.log.levels.WARN and n.message:find("api_key_env must be the NAME", 1, true) ~= nil)
    end
    check(found, vim.inspect(notes))
    check(client.config.init_options.llm.api_key_env == nil, vim.inspect(client.config.init_options))
  end)

  step("chainsmith/status reports the workspace's 54 tools", function()
    wait_for("chainsmith/status", function()
      return chainsmith.status[client.id] ~= nil
    end)
    local s = chainsmith.status[client.id]
    check(s.toolsets == 1 and s.tools == 54, vim.inspect(s))
    check(chainsmith.statusline(bufnr):match("^54 tools") ~= nil, chainsmith.statusline(bufnr))
  end)

  step(":checkhealth chainsmith reports on the user's buffer, not its own report", function()
    vim.cmd("checkhealth chainsmith")
    local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("bwipeout!")
    vim.api.nvim_set_current_buf(bufnr)
    check(report:find("attached (client " .. client.id, 1, true) ~= nil, report)
    check(report:find("is in the chainsmith workspace", 1, true) ~= nil, report)
    check(report:find("no chainsmith server attached", 1, true) == nil, report)
    -- Someone watches protocol files on disk: Neovim where it registers watchers, else the server.
    check(report:find("watched by the server", 1, true) ~= nil or report:find("watched by Neovim", 1, true) ~= nil, report)
  end)

  step("diagnostics: every planted mistake is reported at its line, with its code", function()
    local planted = {}
    for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
      local code = line:match("# mistake: ([%l-]+)%s*$")
      if code then
        table.insert(planted, ("%d:%s"):format(i - 1, code))
      end
    end
    check(#planted == 10, "mistakes.py plants ten mistakes, found " .. #planted)
    local expected = table.concat(planted, " ")
    local function current()
      local got = {}
      local ds = vim.diagnostic.get(bufnr)
      table.sort(ds, function(a, b)
        return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
      end)
      for _, d in ipairs(ds) do
        table.insert(got, ("%d:%s"):format(d.lnum, tostring(d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code))))
      end
      return table.concat(got, " ")
    end
    local ok = vim.wait(WAIT_MS, function()
      return current() == expected
    end, 20)
    check(ok, "expected " .. expected .. "\n got      " .. current())
    -- The setting chose the severity: the settings reached the server.
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == "unknown-key" then
        check(d.severity == vim.diagnostic.severity.HINT, "unknown-key severity " .. tostring(d.severity))
      end
    end
  end)

  step("hover on a tool call shows the tool", function()
    local result = buf_request(client, bufnr, "textDocument/hover", {
      textDocument = { uri = uri },
      position = { line = 13, character = 15 },
    })
    check(result and result ~= vim.NIL, "no hover")
    check(vim.inspect(result.contents):find("search_person", 1, true), vim.inspect(result.contents))
  end)

  step("code actions: the unknown-tool quick fix is listed", function()
    local line = 14 -- typo = tmdb.search_persn(...)
    local lsp_diagnostics = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr, { lnum = line })) do
      -- Back to the LSP shape, as the editor's own code-action request does.
      table.insert(lsp_diagnostics, {
        range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } },
        message = d.message,
        code = d.code,
        severity = d.severity,
        source = d.source,
      })
    end
    check(#lsp_diagnostics == 1, "one diagnostic on line 15, got " .. #lsp_diagnostics)
    local result = buf_request(client, bufnr, "textDocument/codeAction", {
      textDocument = { uri = uri },
      range = { start = { line = line, character = 12 }, ["end"] = { line = line, character = 24 } },
      context = { diagnostics = lsp_diagnostics, only = { "quickfix" } },
    })
    local titles = {}
    local found
    for _, action in ipairs(items_of(result)) do
      table.insert(titles, action.title)
      if action.title:find("search_person", 1, true) and action.kind == "quickfix" then
        found = action
      end
    end
    check(found, "no quick fix to search_person among: " .. table.concat(titles, " | "))
    check(found.edit and found.edit.changes or found.edit.documentChanges, "the quick fix carries an edit")
  end)

  step("completion after `tmdb.` offers the toolset's tools", function()
    vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { "tmdb." })
    local line = vim.api.nvim_buf_line_count(bufnr) - 1
    local items = items_of(buf_request(client, bufnr, "textDocument/completion", {
      textDocument = { uri = uri },
      position = { line = line, character = 5 },
      context = { triggerKind = 2, triggerCharacter = "." },
    }))
    local found = false
    for _, item in ipairs(items) do
      found = found or item.label == "search_person"
    end
    check(found, "search_person not among: " .. labels(items))
  end)

  step('completion inside a response subscript (`found["`) offers its keys', function()
    local line = vim.api.nvim_buf_line_count(bufnr) - 1
    vim.api.nvim_buf_set_lines(bufnr, line, line + 1, false, { 'found["' })
    local items = items_of(buf_request(client, bufnr, "textDocument/completion", {
      textDocument = { uri = uri },
      position = { line = line, character = 7 },
      context = { triggerKind = 2, triggerCharacter = '"' },
    }))
    local found = false
    for _, item in ipairs(items) do
      found = found or mentions(item, "results")
    end
    check(found, "results not among: " .. labels(items))
  end)

  step("inlay hints: a raw textDocument/inlayHint request round-trips", function()
    local last = vim.api.nvim_buf_line_count(bufnr)
    local err, result = raw_request(client, bufnr, "textDocument/inlayHint", {
      textDocument = { uri = uri },
      range = { start = { line = 0, character = 0 }, ["end"] = { line = last, character = 0 } },
    })
    local caps = client.server_capabilities or {}
    check(err == nil, "textDocument/inlayHint failed: " .. vim.inspect(err))
    check(result == nil or result == vim.NIL or type(result) == "table", "result " .. vim.inspect(result))
    check(caps.inlayHintProvider, "the request is answered, so inlayHintProvider should be advertised")
    local hints = type(result) == "table" and result or {}
    for _, hint in ipairs(hints) do
      check(hint.position and hint.label, "an inlay hint needs a position and a label: " .. vim.inspect(hint))
    end
    out(("     %d inlay hint(s)"):format(#hints))
  end)

  step(":ChainsmithGraph runs workspace/executeCommand with the buffer's URI; the server stays up", function()
    chainsmith.last_command = nil
    vim.cmd("ChainsmithGraph")
    wait_for("the answer to chainsmith.graph", function()
      return chainsmith.last_command ~= nil
    end)
    local last = chainsmith.last_command
    check(last.command == "chainsmith.graph", vim.inspect(last))
    check(last.err == nil, "chainsmith.graph failed: " .. vim.inspect(last.err))
    local picture = chainsmith.last_graph_file
    check(picture ~= nil, "no SVG file written for the graph")
    local file = io.open(picture, "r")
    local svg = file and file:read("*a") or ""
    if file then
      file:close()
    end
    check(svg:find("<svg", 1, true) and svg:find("</svg>", 1, true), "not an SVG picture: " .. svg:sub(1, 200))
    -- Still serving.
    local result = buf_request(client, bufnr, "textDocument/hover", {
      textDocument = { uri = uri },
      position = { line = 13, character = 15 },
    })
    check(result and result ~= vim.NIL, "no hover after the command")
    check(not client.is_stopped(), "the server stopped")
  end)

  step("an unknown command is an error", function()
    local done, err = false, nil
    chainsmith.execute("chainsmith.noSuchCommand", bufnr, function(e)
      done, err = true, e
    end)
    wait_for("the answer to an unknown command", function()
      return done
    end)
    check(err ~= nil and type(err.code) == "number", "expected an error, got " .. vim.inspect(err))
  end)

  -- "Run chain" against the test server, in a second copy of the example whose toolset points at
  -- it (the first keeps the real base URL: mistakes.py's unknown-endpoint is checked against it).
  -- The auth by query parameter from $TMDB_KEY stays as the example has it.
  local run_ws = vim.fn.tempname() .. "-chainsmith-nvim-run"
  local served = step("the TMDB-like test server starts; a workspace's chainsmith.toml points at it", function()
    vim.fn.mkdir(run_ws, "p")
    vim.fn.system({ "cp", "-R", repo .. "/examples/tmdb/.", run_ws })
    check(vim.v.shell_error == 0, "copying examples/tmdb failed")
    start_tmdb(run_ws)
    local toml = run_ws .. "/chainsmith.toml"
    local text = table.concat(vim.fn.readfile(toml), "\n")
    local base_url = ("http://127.0.0.1:%d/3"):format(tmdb.port)
    local replaced, n = text:gsub('base_url = "[^"]*"', 'base_url = "' .. base_url .. '"')
    check(n == 1, "chainsmith.toml has " .. n .. " base_url lines:\n" .. text)
    -- A toolset to probe, and the scripted model that probes it.
    start_llm()
    vim.fn.writefile(vim.split(VAULT_TOOLSET, "\n"), run_ws .. "/vault.toolset.json")
    replaced = replaced
      .. ('\n[[toolsets]]\nname = "vault"\nprotocol = "vault.toolset.json"\nbase_url = "%s"\nauth = { query = "api_key", value_env = "TMDB_KEY" }\n'):format(base_url)
      .. ('\n[llm]\nbase_url = "http://127.0.0.1:%d/v1"\nmodel = "m"\napi_key_env = "CHAINSMITH_E2E_UNSET"\n'):format(llm.port)
      .. "\n[probe]\nsamples = 1\nrounds = 1\n"
    vim.fn.writefile(vim.split(replaced, "\n"), toml)
    vim.fn.writefile({ "from chainsmith.tools import vault", "", 'print(vault.search_vaults(query="Archive"))' }, run_ws .. "/vaults.py")
    -- The toolsets send $TMDB_KEY to the test server: only a workspace trusted with that runs.
    local trusted = vim.fn.system({ "env", "TMDB_KEY=" .. TMDB_TEST_KEY, bin, "--root", run_ws, "trust" })
    check(vim.v.shell_error == 0, "chainsmith trust failed: " .. trusted)
  end)

  -- RestBench task #0: two calls (lines 8 and 10), run by the second workspace's server.
  local chain = run_ws .. "/chains/task000_sofia_coppola_directed.py"
  local chain_buf, chain_uri, run_client
  local CALL_LINES = { 7, 9 } -- 0-based: search_person, person_movie_credits

  -- The run's result hints (✓/✗) of the chain's buffer: { {line, label}... }, sorted by line.
  local function run_hints()
    local err, result = raw_request(run_client, chain_buf, "textDocument/inlayHint", {
      textDocument = { uri = chain_uri },
      range = { start = { line = 0, character = 0 }, ["end"] = { line = vim.api.nvim_buf_line_count(chain_buf), character = 0 } },
    })
    check(err == nil, "textDocument/inlayHint failed: " .. vim.inspect(err))
    local found = {}
    for _, hint in ipairs(type(result) == "table" and result or {}) do
      local label = hint_label(hint)
      if label:find("^✓") or label:find("^✗") then
        table.insert(found, { hint.position.line, label })
      end
    end
    table.sort(found, function(a, b)
      return a[1] < b[1]
    end)
    return found
  end

  local function show(hints)
    local parts = {}
    for _, h in ipairs(hints) do
      table.insert(parts, ("%d:%s"):format(h[1], h[2]))
    end
    return "[" .. table.concat(parts, " | ") .. "]"
  end

  -- :ChainsmithRun on the chain's buffer, waited for until its progress ends: that end's message.
  local function run_chain()
    vim.api.nvim_set_current_buf(chain_buf)
    local seen = #progress
    chainsmith.last_command = nil
    vim.cmd("ChainsmithRun")
    wait_for("the answer to chainsmith.run", function()
      return chainsmith.last_command ~= nil
    end)
    local last = chainsmith.last_command
    check(last.command == "chainsmith.run", vim.inspect(last))
    check(last.err == nil, "chainsmith.run failed: " .. vim.inspect(last.err))
    local ended
    wait_for("the run's $/progress end", function()
      for i = seen + 1, #progress do
        if progress[i].value.kind == "end" then
          ended = progress[i].value
          return true
        end
      end
      return false
    end)
    return ended.message or ""
  end

  local ran = served and step(":ChainsmithRun runs a chain against the test server: output as window/logMessage, ✓ 200 hints at the calls", function()
    vim.cmd("edit " .. vim.fn.fnameescape(chain))
    chain_buf = vim.api.nvim_get_current_buf()
    chain_uri = vim.uri_from_bufnr(chain_buf)
    wait_for("the client on the chain's buffer", function()
      return #chainsmith.clients(chain_buf) > 0
    end)
    run_client = chainsmith.clients(chain_buf)[1]
    check(run_client.id ~= client.id, "the second workspace shares the first one's server")
    check(run_client.config.root_dir == vim.fn.resolve(run_ws) or run_client.config.root_dir == run_ws, "root_dir " .. tostring(run_client.config.root_dir))
    logs = {}
    local ended = run_chain()
    check(ended:find("^✓") ~= nil, "the run did not succeed: " .. ended .. "\n" .. vim.inspect(logs) .. "\n" .. table.concat(tmdb.stderr, "\n"))
    local output
    wait_for("the program's output as window/logMessage", function()
      for _, m in ipairs(logs) do
        if type(m.message) == "string" and m.message:find("Bradley Cooper directed", 1, true) then
          output = m
          return true
        end
      end
      return false
    end)
    check(output.type == 4, "program output is logged (type 4), got " .. vim.inspect(output))
    -- The user sees it: in the output buffer, which :ChainsmithRun put in a window.
    local output_buf = vim.fn.bufnr(chainsmith.output_name)
    check(output_buf > 0, "no output buffer " .. chainsmith.output_name)
    wait_for("the program's output in the output buffer", function()
      local shown = table.concat(vim.api.nvim_buf_get_lines(output_buf, 0, -1, false), "\n")
      return shown:find("Bradley Cooper directed", 1, true) ~= nil
    end)
    check(vim.fn.bufwinid(output_buf) ~= -1, "the output buffer is not in a window")
    check(vim.api.nvim_get_current_buf() == chain_buf, "showing the output moved the cursor out of the chain")
    -- The Run chain code lens at the top of the chain (the plugin turns lenses on).
    if vim.lsp.codelens and vim.lsp.codelens.get then
      local titles
      local lensed = vim.wait(WAIT_MS, function()
        titles = {}
        for _, lens in ipairs(vim.lsp.codelens.get(chain_buf) or {}) do
          if lens.command then
            table.insert(titles, lens.range.start.line .. ":" .. lens.command.title)
          end
        end
        return vim.tbl_contains(titles, "0:▶ Run chain")
      end, 50)
      check(lensed, "code lenses on the chain: " .. vim.inspect(titles))
    end
    -- The hints come with the run's end (the server asks for a refresh); poll until both are there.
    local hints
    local ok = vim.wait(WAIT_MS, function()
      hints = run_hints()
      return #hints == #CALL_LINES
    end, 50)
    check(ok, "expected run hints at lines 7 and 9, got " .. show(hints))
    for i, h in ipairs(hints) do
      check(h[1] == CALL_LINES[i], "a hint at line " .. h[1] .. ": " .. show(hints))
      check(h[2]:match("^✓ 200 · %d+ ms$") ~= nil, "hint label " .. h[2])
    end
    -- Neovim 0.10+: the plugin turned inlay hints on, and Neovim itself shows the run's hints.
    local ih = vim.lsp.inlay_hint
    if type(ih) == "table" and ih.get and ih.is_enabled then
      check(ih.is_enabled({ bufnr = chain_buf }), "the plugin did not enable inlay hints on the chain's buffer")
      local shown
      local seen = vim.wait(WAIT_MS, function()
        -- Neovim asks for hints when it draws the window: headless, it draws on request.
        vim.cmd("redraw!")
        shown = {}
        for _, item in ipairs(ih.get({ bufnr = chain_buf })) do
          local label = hint_label(item.inlay_hint)
          if label:find("^✓ 200") then
            table.insert(shown, { item.inlay_hint.position.line, label })
          end
        end
        return #shown == #CALL_LINES
      end, 50)
      check(seen, "vim.lsp.inlay_hint.get shows " .. show(shown or {}))
      out(("     vim.lsp.inlay_hint shows %s"):format(show(shown)))
    end
    out(("     %s; output %q; hints %s; %d inlay hint refresh(es)"):format(ended, output.message, show(hints), refreshes))
  end)

  -- GET /__requests on the test server: how many requests it has had.
  local function tmdb_request_count()
    local py = "import sys, json, urllib.request as u; print(len(json.load(u.urlopen(sys.argv[1], timeout=5))))"
    local answer = vim.fn.system({ "python3", "-c", py, ("http://127.0.0.1:%d/__requests"):format(tmdb.port) })
    check(vim.v.shell_error == 0, "GET /__requests failed: " .. answer)
    return tonumber(vim.trim(answer))
  end

  -- Starts a run of the chain with `start()` as a user would, and waits for its end: { ended,
  -- output, done }, `output` what the output buffer gained, `done` how many `User
  -- ChainsmithCommandDone` fired. The output window is closed first: the run has to show it.
  local function run_by(start)
    vim.api.nvim_set_current_buf(chain_buf)
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    local output_buf = chainsmith.output_buffer()
    local win = vim.fn.bufwinid(output_buf)
    if win ~= -1 then
      vim.api.nvim_win_close(win, true)
    end
    local before = vim.api.nvim_buf_line_count(output_buf)
    local done = 0
    local group = vim.api.nvim_create_augroup("chainsmith_e2e_done", { clear = true })
    vim.api.nvim_create_autocmd("User", {
      group = group,
      pattern = "ChainsmithCommandDone",
      callback = function()
        done = done + 1
      end,
    })
    local seen = #progress
    start()
    local ended
    wait_for("the run's $/progress end", function()
      for i = seen + 1, #progress do
        if progress[i].value.kind == "end" then
          ended = progress[i].value.message or ""
          return true
        end
      end
      return false
    end)
    wait_for("User ChainsmithCommandDone", function()
      return done > 0
    end)
    vim.api.nvim_del_augroup_by_id(group)
    check(vim.fn.bufwinid(output_buf) ~= -1, "the run did not show the output buffer")
    check(vim.api.nvim_get_current_buf() == chain_buf, "showing the output moved the cursor out of the chain")
    local output
    wait_for("the run's output in the output buffer", function()
      output = table.concat(vim.api.nvim_buf_get_lines(output_buf, before, -1, false), "\n")
      return output:find("directed", 1, true) ~= nil
    end)
    return { ended = ended, output = output, done = done }
  end

  -- The code lens titled `title` on the chain's first line, run as a user does: :ChainsmithLens,
  -- choosing it when Neovim asks which.
  local function run_lens(title)
    return run_by(function()
      wait_for("the lens " .. title, function()
        for _, lens in ipairs(vim.lsp.codelens.get(chain_buf) or {}) do
          if lens.command and lens.command.title == title and lens.range.start.line == 0 then
            return true
          end
        end
        return false
      end)
      local offered = {}
      local select = vim.ui.select
      vim.ui.select = function(items, _, on_choice)
        for _, item in ipairs(items) do
          -- Neovim's picker items: { client, lens } (how it formats them differs by version).
          local shown = item.lens and item.lens.command and item.lens.command.title or tostring(item)
          table.insert(offered, shown)
          if shown == title then
            return on_choice(item)
          end
        end
        on_choice(nil)
      end
      local ran, err = pcall(vim.cmd, "ChainsmithLens")
      vim.ui.select = select
      check(ran, ":ChainsmithLens failed: " .. tostring(err))
      check(#offered == 0 or vim.tbl_contains(offered, title), "the lenses offered: " .. vim.inspect(offered))
    end)
  end

  if ran and vim.lsp.codelens and vim.lsp.codelens.get and vim.lsp.codelens.run then
    step("the ▶ Run chain lens runs the chain as :ChainsmithRun does: its output shown, ChainsmithCommandDone fired", function()
      local requests = tmdb_request_count()
      local run = run_lens("▶ Run chain")
      check(run.ended:find("^✓") ~= nil, "the run did not succeed: " .. run.ended)
      check(run.output:find("Bradley Cooper directed", 1, true) ~= nil, run.output)
      check(tmdb_request_count() > requests, "the lens's run never reached the test server")
      out(("     %s; User ChainsmithCommandDone fired %d time(s)"):format(run.ended, run.done))
    end)

    step("the ▶ Run against the mock lens and :ChainsmithRunMock run offline: the test server gets no request", function()
      local requests = tmdb_request_count()
      local run = run_lens("▶ Run against the mock")
      check(run.ended:find("^✓") ~= nil, "the mock run did not succeed: " .. run.ended)
      check(tmdb_request_count() == requests, "the mock run reached the test server")
      out(("     %s; %q"):format(run.ended, vim.split(run.output, "\n", { plain = true })[1]))
      run = run_by(function()
        vim.cmd("ChainsmithRunMock")
      end)
      check(run.ended:find("^✓") ~= nil, ":ChainsmithRunMock did not succeed: " .. run.ended)
      check(tmdb_request_count() == requests, ":ChainsmithRunMock reached the test server")
    end)
  end

  if served then
    step("a failing run (the test server answers 500 on /person/) publishes a diagnostic at the failing call", function()
      check(ran, "the successful run failed first")
      local rules = tmdb_control({ fail = { ["/person/"] = 500 } })
      check(rules.fail and rules.fail["/person/"] == 500, "control answer " .. vim.inspect(rules))
      local ended = run_chain()
      check(ended:find("^✗") ~= nil, "the run should fail: " .. ended)
      local line = CALL_LINES[2]
      local found
      wait_for("an error diagnostic at line " .. line, function()
        for _, d in ipairs(vim.diagnostic.get(chain_buf, { lnum = line })) do
          if d.severity == vim.diagnostic.severity.ERROR then
            found = d
            return true
          end
        end
        return false
      end)
      check(found.message:find("500", 1, true) ~= nil, "the diagnostic names the status: " .. found.message)
      local hints = run_hints()
      check(#hints >= 1 and hints[1][1] == CALL_LINES[1] and hints[1][2]:find("^✓ 200") ~= nil, "the first call still succeeded: " .. show(hints))
      out(("     %s; %s at %d:%d: %s; hints %s"):format(ended, tostring(found.code), found.lnum, found.col, found.message, show(hints)))
      tmdb_control({ fail = vim.empty_dict() })
    end)
  end

  -- The server's answer through window/showMessage after `since` whose text holds `needle`.
  local function shown_after(since, needle)
    local found
    wait_for("a message holding " .. needle, function()
      for i = since + 1, #messages do
        if messages[i].message:find(needle, 1, true) then
          found = messages[i]
          return true
        end
      end
      return false
    end)
    return found
  end

  if served then
    step(":ChainsmithProbe probes the tools of unknown response the buffer calls, and says what it learnt", function()
      vim.cmd("edit " .. vim.fn.fnameescape(run_ws .. "/vaults.py"))
      local probe_buf = vim.api.nvim_get_current_buf()
      wait_for("the client on vaults.py", function()
        return #chainsmith.clients(probe_buf) > 0
      end)
      local since = #messages
      vim.cmd("ChainsmithProbe")
      local told = shown_after(since, "vault.search_vaults")
      -- Neovim says "LSP[chainsmith]" already: the server's own "chainsmith: " is left out.
      check(told.message == "learnt 2 keys of vault.search_vaults, written to vault.toolset.json", told.message)
      for i = since + 1, #messages do
        check(not messages[i].message:find("file://", 1, true), "a URI taken for a tool: " .. messages[i].message)
      end
      check(llm.requests >= 1, "the model was never asked")
      -- The edit went into the toolset's buffer.
      local toolset_buf = vim.fn.bufnr(run_ws .. "/vault.toolset.json")
      check(toolset_buf > 0, "the probed schema was not applied to vault.toolset.json")
      local edited = table.concat(vim.api.nvim_buf_get_lines(toolset_buf, 0, -1, false), "\n")
      check(edited:find('"response"', 1, true) and edited:find('"results"', 1, true), edited)
      -- The file was not open, so the edit is saved: on disk, not in a hidden buffer lost on :qa!.
      check(not vim.bo[toolset_buf].modified, "vault.toolset.json was left unsaved")
      local on_disk = table.concat(vim.fn.readfile(run_ws .. "/vault.toolset.json"), "\n")
      check(on_disk:find('"results"', 1, true) ~= nil, "the probed schema is not on disk: " .. on_disk)
      out(("     %s (%d LLM request(s))"):format(told.message, llm.requests))

      since = #messages
      vim.cmd("ChainsmithProbeAll")
      told = shown_after(since, "schema")
      check(told.message == "every response schema is known", told.message)
    end)

    step(":ChainsmithCancel cancels a run at work: its progress is shown, and the server says cancelled", function()
      tmdb_control({ slow = { ["/search/person"] = 30 } })
      vim.api.nvim_set_current_buf(chain_buf)
      local since = #messages
      local seen = #progress
      vim.cmd("ChainsmithRun")
      wait_for("the run's progress", function()
        return chainsmith.progress_text(chain_buf):find("task000", 1, true) ~= nil
      end)
      local text = chainsmith.progress_text(chain_buf)
      -- Neovim 0.10+ keeps the progress for vim.lsp.status() (statuslines) too.
      local status = vim.lsp.status and vim.lsp.status() or nil
      check(status == nil or status:find("task000", 1, true), "vim.lsp.status(): " .. tostring(status))
      vim.cmd("ChainsmithCancel")
      local told = shown_after(since, "cancelled")
      check(told.message == "the run of task000_sofia_coppola_directed.py was cancelled", told.message)
      wait_for("the run's progress to end", function()
        return chainsmith.progress_text(chain_buf) == ""
      end)
      local ended
      for i = seen + 1, #progress do
        if progress[i].value.kind == "end" then
          ended = progress[i].value.message
        end
      end
      check(ended == "cancelled", "the progress ended with " .. tostring(ended))
      out(("     shown while running: %q; then %q"):format(text, told.message))
      tmdb_control({ slow = vim.empty_dict() })
    end)
  end

  step("the test server stops with the test", function()
    check(tmdb.job, "it never started")
    stop_tmdb()
    check(tmdb.exited, "the test server (job " .. tostring(tmdb.job) .. ") is still running")
  end)

  vim.fn.delete(ws, "rf")
  vim.fn.delete(run_ws, "rf")
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  failed = failed + 1
  out("FAIL the test script itself: " .. tostring(err))
end
finish()
