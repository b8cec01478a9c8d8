-- chainsmith for Neovim: starts `chainsmith lsp` for Python buffers inside a chainsmith workspace
-- (a folder holding chainsmith.toml or protocols/), one server per workspace, and adds the
-- :Chainsmith* commands. Works on Neovim 0.7 (vim.lsp.start_client + buf_attach_client) and on
-- 0.8+ (vim.lsp.start); inlay hints are turned on where Neovim has them (0.10+).
--
--   require("chainsmith").setup({
--     cmd = { "chainsmith", "lsp" },
--     settings = { llm = { model = "qwen2.5-coder:7b" }, runtime = { timeout_s = 30 } },
--   })
--
-- `settings` uses chainsmith.toml's keys and overrides the workspace's file key by key. It reaches
-- the server as initializationOptions and as the `chainsmith` section of workspace/configuration.

local M = {}

local uv = vim.loop or vim.uv

M.defaults = {
  -- The server command.
  cmd = { "chainsmith", "lsp" },
  -- chainsmith.toml keys ({ llm = {...}, runtime = {...}, generate = {...}, probe = {...},
  -- diagnostics = { severity = {...} } }). Name the API key's environment variable
  -- (llm.api_key_env), never the key.
  settings = {},
  filetypes = { "python" },
  -- A folder holding one of these is a chainsmith workspace.
  root_markers = { "chainsmith.toml", "protocols" },
  -- Turn on inlay hints for attached buffers (Neovim 0.10+, when the server provides them).
  inlay_hints = true,
  -- Show code lenses (▶ Run chain) and keep them fresh; :ChainsmithLens runs the one on the line.
  code_lenses = true,
  -- Define :ChainsmithRun and friends.
  user_commands = true,
  -- Passed through to the client.
  capabilities = nil,
  on_attach = nil,
  -- Extra environment for the server process.
  cmd_env = nil,
}

--- The server's editor commands (src/server/command_names.rs) and the user commands that run them.
M.commands = {
  { id = "chainsmith.run", user = "ChainsmithRun", title = "Run chain" },
  { id = "chainsmith.generate", user = "ChainsmithGenerate", title = "Generate chain" },
  { id = "chainsmith.fix", user = "ChainsmithFix", title = "Fix chain" },
  { id = "chainsmith.plan", user = "ChainsmithPlan", title = "Plan a chain (no model)" },
  { id = "chainsmith.probe", user = "ChainsmithProbe", title = "Probe tool" },
  { id = "chainsmith.probeAll", user = "ChainsmithProbeAll", title = "Probe all unprobed tools" },
  { id = "chainsmith.graph", user = "ChainsmithGraph", title = "Show tool graph" },
  -- Records trust for the workspace (as `chainsmith trust` does), so its MCP servers, command
  -- tools and interpreter run; the server reloads it.
  { id = "chainsmith.trustWorkspace", user = "ChainsmithTrust", title = "Trust this workspace" },
  -- typings/*.pyi, so pyright/basedpyright resolve `chainsmith.tools` (Python servers beside this one).
  { id = "chainsmith.writeStubs", user = "ChainsmithStubs", title = "Write type stubs" },
}

--- The last `chainsmith/status` ({toolsets, tools, unprobed}) per client id.
M.status = {}
--- The server's tasks at work (run, generate, fix, probe), from `$/progress`: per client id, per
--- token, { title, message, cancellable }. `:ChainsmithCancel` cancels them.
M.tasks = {}
--- The last finished command: { command, err, result }.
M.last_command = nil

local config = vim.deepcopy(M.defaults)
-- Neovim 0.7: client ids by workspace root (0.8+ lets vim.lsp.start find the client).
local clients_by_root = {}

local function notify(message, level)
  vim.notify("chainsmith: " .. message, level or vim.log.levels.INFO)
end

local function has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

local function is_dir_or_file(path)
  return uv.fs_stat(path) ~= nil
end

local function dirname(path)
  local parent = vim.fn.fnamemodify(path, ":h")
  return parent
end

--- The nearest folder at or above `path` holding one of the root markers, or nil.
function M.find_root(path)
  if not path or path == "" then
    return nil
  end
  local dir = vim.fn.fnamemodify(path, ":p")
  if vim.fn.isdirectory(dir) == 0 then
    dir = dirname(dir)
  end
  dir = dir:gsub("/$", "")
  if dir == "" then
    dir = "/"
  end
  while true do
    for _, marker in ipairs(config.root_markers) do
      if is_dir_or_file(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = dirname(dir)
    if parent == dir or parent == "" then
      return nil
    end
    dir = parent
  end
end

-- An empty Lua table would travel as a JSON array.
local function as_object(t)
  if t == nil or next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

--- Clients of this plugin attached to `bufnr`.
function M.clients(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = "chainsmith" })
  end
  local found = {}
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name == "chainsmith" then
      table.insert(found, client)
    end
  end
  return found
end

--- client.request across versions (0.11 prefers the method form).
function M.request(client, method, params, handler, bufnr)
  if has("0.11") then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function enable_inlay_hints(client, bufnr)
  if not config.inlay_hints then
    return
  end
  local caps = client.server_capabilities or client.resolved_capabilities or {}
  if not caps.inlayHintProvider then
    return
  end
  local ih = vim.lsp.inlay_hint
  if type(ih) == "table" and ih.enable then
    -- 0.10+: enable(enable, { bufnr = … }); a few 0.10 pre-releases took (bufnr, enable).
    if not pcall(ih.enable, true, { bufnr = bufnr }) then
      pcall(ih.enable, bufnr, true)
    end
  elseif type(ih) == "function" then
    pcall(ih, bufnr, true)
  end
end

--- The output buffer's name: what runs print, the server's log lines (a generated program it did
--- not apply included), newest last. `:ChainsmithOutput` shows it.
M.output_name = "chainsmith://output"
--- Lines the output buffer keeps.
local MAX_OUTPUT_LINES = 10000

--- The output buffer (made on first use): a scratch buffer no one saves.
function M.output_buffer()
  local bufnr = vim.fn.bufnr(M.output_name)
  if bufnr > 0 and vim.api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
  bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, M.output_name)
  vim.bo[bufnr].buftype = "nofile"
  vim.bo[bufnr].bufhidden = "hide"
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].modifiable = false
  return bufnr
end

--- Shows the output buffer in a window below (unless one shows it), keeping the cursor where it is.
function M.show_output()
  local bufnr = M.output_buffer()
  if vim.fn.bufwinid(bufnr) ~= -1 then
    return bufnr
  end
  local from = vim.api.nvim_get_current_win()
  vim.cmd("botright 10split")
  vim.api.nvim_win_set_buf(0, bufnr)
  vim.api.nvim_set_current_win(from)
  return bufnr
end

local function append_output(text)
  local bufnr = M.output_buffer()
  local lines = vim.split(text, "\n", { plain = true })
  vim.bo[bufnr].modifiable = true
  local count = vim.api.nvim_buf_line_count(bufnr)
  local empty = count == 1 and vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] == ""
  vim.api.nvim_buf_set_lines(bufnr, empty and 0 or -1, -1, false, lines)
  count = vim.api.nvim_buf_line_count(bufnr)
  if count > MAX_OUTPUT_LINES then
    vim.api.nvim_buf_set_lines(bufnr, 0, count - MAX_OUTPUT_LINES, false, {})
  end
  vim.bo[bufnr].modifiable = false
  local win = vim.fn.bufwinid(bufnr)
  if win ~= -1 then
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(bufnr), 0 })
  end
end

--- `window/logMessage`: into the output buffer, and on to Neovim's own handler (the LSP log).
local function on_log_message(err, result, ctx, cfg)
  if type(result) == "table" and type(result.message) == "string" then
    vim.schedule(function()
      append_output(result.message)
    end)
  end
  local default = vim.lsp.handlers["window/logMessage"]
  if default then
    return default(err, result, ctx, cfg)
  end
end

--- `window/showMessage`: on to Neovim's handler, which says "LSP[chainsmith]" already, without
--- the "chainsmith: " the server starts its messages with for editors that do not.
local function on_show_message(err, result, ctx, cfg)
  if type(result) == "table" and type(result.message) == "string" then
    result = vim.tbl_extend("force", result, { message = (result.message:gsub("^chainsmith: ", "")) })
  end
  return vim.lsp.handlers["window/showMessage"](err, result, ctx, cfg)
end

--- The files an edit changes, as paths.
local function edited_files(edit)
  local files = {}
  for uri, _ in pairs(edit.changes or {}) do
    table.insert(files, vim.uri_to_fname(uri))
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument and change.textDocument.uri then
      table.insert(files, vim.uri_to_fname(change.textDocument.uri))
    end
  end
  return files
end

--- The loaded buffer holding exactly `file`, if any (`bufnr()` would match names as patterns).
local function loaded_buffer(file)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_name(bufnr) == file then
      return bufnr
    end
  end
  return nil
end

--- `workspace/applyEdit`: applied as Neovim does; a file that was not open in a buffer before
--- (a probed schema written into a protocol file) is saved too, as VS Code's workspace edits of
--- closed files are, instead of being left in a hidden unsaved buffer and lost on `:qa!` — unless
--- it is a symbolic link, which a save would write through (the server never writes through one).
local function on_apply_edit(err, result, ctx, cfg)
  local closed = {}
  if type(result) == "table" and type(result.edit) == "table" then
    for _, file in ipairs(edited_files(result.edit)) do
      local stat = uv.fs_lstat(file)
      if not loaded_buffer(file) and not (stat and stat.type == "link") then
        table.insert(closed, file)
      end
    end
  end
  local answer = vim.lsp.handlers["workspace/applyEdit"](err, result, ctx, cfg)
  if type(answer) == "table" and answer.applied then
    for _, file in ipairs(closed) do
      local bufnr = loaded_buffer(file)
      if bufnr and vim.bo[bufnr].modified then
        vim.api.nvim_buf_call(bufnr, function()
          vim.cmd("silent noautocmd write")
        end)
      end
    end
  end
  return answer
end

--- Code lenses (Run chain) on `bufnr`, refreshed as the buffer changes, where the server offers them.
local function enable_code_lenses(client, bufnr)
  local caps = client.server_capabilities or client.resolved_capabilities or {}
  if not (caps.codeLensProvider or caps.code_lens) or not vim.lsp.codelens then
    return
  end
  local function refresh()
    -- 0.10+: refresh({ bufnr = … }); before, refresh() for the current buffer.
    if not pcall(vim.lsp.codelens.refresh, { bufnr = bufnr }) then
      pcall(vim.lsp.codelens.refresh)
    end
  end
  refresh()
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost", "TextChanged" }, {
    buffer = bufnr,
    group = vim.api.nvim_create_augroup("chainsmith_codelens_" .. bufnr, { clear = true }),
    callback = refresh,
    desc = "chainsmith: refresh the code lenses",
  })
end

local function notify_client(client, method, params)
  if has("0.11") then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

--- "Probing 1 tool: probing vault.search (round 1)" for each task at work, or "".
function M.progress_text(bufnr)
  local parts = {}
  for _, client in ipairs(M.clients(bufnr)) do
    for _, task in pairs(M.tasks[client.id] or {}) do
      table.insert(parts, task.title .. (task.message and (": " .. task.message) or ""))
    end
  end
  table.sort(parts)
  return table.concat(parts, " · ")
end

-- Work-done progress: kept for :ChainsmithCancel and shown on the echo area as it changes (one
-- line, not kept in :messages; the server says how a job ended with window/showMessage). Neovim's
-- own handler still runs (vim.lsp.status(), the LspProgress event).
local function on_progress(err, result, ctx, cfg)
  local value = type(result) == "table" and result.value
  if type(value) == "table" and result.token ~= nil then
    local tasks = M.tasks[ctx.client_id] or {}
    M.tasks[ctx.client_id] = tasks
    local token = result.token
    local task = tasks[token]
    if value.kind == "begin" then
      task = { title = value.title or "chainsmith", message = value.message, cancellable = value.cancellable }
      tasks[token] = task
    elseif task and value.kind == "report" then
      task.message = value.message or task.message
      if value.cancellable ~= nil then
        task.cancellable = value.cancellable
      end
    elseif task and value.kind == "end" then
      tasks[token] = nil
      task.message = value.message
    end
    -- The echo area exists only with a UI (headless, echo would write to stdout).
    if task and #vim.api.nvim_list_uis() > 0 then
      local line = "chainsmith: " .. task.title .. (task.message and (": " .. task.message) or "")
      vim.schedule(function()
        vim.api.nvim_echo({ { line } }, false, {})
      end)
    end
  end
  local default = vim.lsp.handlers["$/progress"]
  if default then
    return default(err, result, ctx, cfg)
  end
end

--- Cancels the tasks at work for `bufnr`'s workspace (window/workDoneProgress/cancel for each);
--- how many were asked to stop.
function M.cancel(bufnr)
  local asked = 0
  for _, client in ipairs(M.clients(bufnr)) do
    for token, task in pairs(M.tasks[client.id] or {}) do
      if task.cancellable ~= false then
        notify_client(client, "window/workDoneProgress/cancel", { token = token })
        asked = asked + 1
      end
    end
  end
  return asked
end

local function on_status(_, result, ctx)
  if type(result) == "table" then
    M.status[ctx.client_id] = result
    vim.cmd("doautocmd <nomodeline> User ChainsmithStatus")
  end
end

-- settings.llm.api_key_env must name an environment variable; a key pasted there is dropped
-- (and never repeated in the message).
local function checked_settings()
  local settings = vim.deepcopy(config.settings or {})
  local llm = type(settings.llm) == "table" and settings.llm or nil
  if llm and llm.api_key_env ~= nil then
    local name = llm.api_key_env
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
      llm.api_key_env = nil
      vim.schedule(function()
        notify(
          "settings.llm.api_key_env must be the NAME of an environment variable (like OPENAI_API_KEY), not the key itself; it is ignored",
          vim.log.levels.WARN
        )
      end)
    end
  end
  return settings
end

local function client_config(root)
  local settings = checked_settings()
  -- Sections are tables: one left empty (`llm = {}`, or a refused key removed) would travel as a
  -- JSON array and replace chainsmith.toml's section instead of adding nothing to it.
  for key, section in pairs(settings) do
    if type(section) == "table" then
      settings[key] = as_object(section)
    end
  end
  settings = as_object(settings)
  return {
    name = "chainsmith",
    cmd = config.cmd,
    cmd_env = config.cmd_env,
    root_dir = root,
    init_options = settings,
    settings = { chainsmith = settings },
    capabilities = config.capabilities or vim.lsp.protocol.make_client_capabilities(),
    commands = M.client_commands(),
    handlers = {
      ["chainsmith/status"] = on_status,
      ["window/showMessage"] = on_show_message,
      ["$/progress"] = on_progress,
      ["window/logMessage"] = on_log_message,
      ["workspace/applyEdit"] = on_apply_edit,
    },
    on_attach = function(client, bufnr)
      enable_inlay_hints(client, bufnr)
      if config.code_lenses then
        enable_code_lenses(client, bufnr)
      end
      if config.on_attach then
        config.on_attach(client, bufnr)
      end
    end,
    on_exit = function(code, _, client_id)
      M.status[client_id] = nil
      M.tasks[client_id] = nil
      if code ~= 0 then
        vim.schedule(function()
          notify("the language server exited with status " .. tostring(code), vim.log.levels.WARN)
        end)
      end
    end,
  }
end

--- Starts (or reuses) the server for `bufnr`'s workspace and attaches it. Returns the client id,
--- or nil when the buffer is not a file in a chainsmith workspace.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = M.find_root(name)
  if not root then
    return nil
  end
  if type(config.cmd) == "table" and vim.fn.executable(config.cmd[1]) ~= 1 then
    notify(
      "`" .. config.cmd[1] .. "` is not executable; install chainsmith or pass cmd = { '/path/to/chainsmith', 'lsp' } to setup()",
      vim.log.levels.ERROR
    )
    return nil
  end
  if vim.lsp.start then
    -- 0.8's vim.lsp.start attaches the current buffer (opts.bufnr came in 0.9): make it current.
    local id
    vim.api.nvim_buf_call(bufnr, function()
      id = vim.lsp.start(client_config(root), { bufnr = bufnr })
    end)
    return id
  end
  -- Neovim 0.7.
  local id = clients_by_root[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if not client or client.is_stopped() then
    id = vim.lsp.start_client(client_config(root))
    if not id then
      notify("could not start " .. table.concat(config.cmd, " "), vim.log.levels.ERROR)
      return nil
    end
    clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- Runs a server command on `bufnr` (its URI is the argument, unless `arguments` are given: a
--- code lens's or code action's own) through `client` (by default the buffer's chainsmith
--- client). `callback(err, result)` replaces the default report (an error notification, or the
--- result when there is one).
function M.execute(command, bufnr, callback, arguments, client)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  client = client or M.clients(bufnr)[1]
  local title = command
  for _, c in ipairs(M.commands) do
    if c.id == command then
      title = c.title
    end
  end
  if not client then
    notify(title .. ": no chainsmith server is attached to this buffer", vim.log.levels.WARN)
    return false
  end
  local params = { command = command, arguments = arguments or { vim.uri_from_bufnr(bufnr) } }
  if command == "chainsmith.run" then
    -- What the chain prints is what a run is for: in view while it runs.
    M.show_output()
  end
  return M.request(client, "workspace/executeCommand", params, function(err, result)
    M.last_command = { command = command, err = err, result = result }
    if callback then
      callback(err, result)
    elseif err then
      notify(title .. " failed: " .. tostring(err.message or err), vim.log.levels.ERROR)
    elseif result ~= nil and result ~= vim.NIL then
      notify(title .. ": " .. (type(result) == "string" and result or vim.inspect(result)))
    end
    vim.cmd("doautocmd <nomodeline> User ChainsmithCommandDone")
  end, bufnr)
end

--- "54 tools · 3 unprobed" for a statusline, or "" when no server is attached.
function M.statusline(bufnr)
  for _, client in ipairs(M.clients(bufnr)) do
    local s = M.status[client.id]
    if s then
      local text = ("%d tool%s"):format(s.tools, s.tools == 1 and "" or "s")
      if (s.unprobed or 0) > 0 then
        text = text .. (" · %d unprobed"):format(s.unprobed)
      end
      return text
    end
  end
  return ""
end

--- The SVG file the last `:ChainsmithGraph` wrote.
M.last_graph_file = nil

--- `chainsmith.graph`'s answer: the picture (the server lays it out) is written to an SVG file and
--- opened with the system's viewer where Neovim (0.10+) has `vim.ui.open` and a UI; its path and
--- the text's first line are said either way.
local function show_graph(err, result)
  if err then
    notify("Show tool graph failed: " .. tostring(err.message or err), vim.log.levels.ERROR)
    return
  end
  if type(result) ~= "table" then
    return
  end
  local summary = type(result.text) == "string" and vim.split(result.text, "\n", { plain = true })[1] or ""
  if type(result.svg) ~= "string" then
    notify("Show tool graph: " .. summary .. " (no picture: " .. tostring(result.svgError) .. ")")
    return
  end
  local path = vim.fn.tempname() .. "-toolnet.svg"
  local file = io.open(path, "w")
  if not file then
    notify("Show tool graph: cannot write " .. path, vim.log.levels.ERROR)
    return
  end
  file:write(result.svg)
  file:close()
  M.last_graph_file = path
  if vim.ui.open and #vim.api.nvim_list_uis() > 0 then
    vim.ui.open(path)
  end
  notify("Show tool graph: " .. summary .. "; the picture is " .. path)
end

--- The server's commands as a code lens or code action carries them, run as the user commands
--- run them (a run's output in view, the result reported, `User ChainsmithCommandDone` fired)
--- instead of by Neovim's bare workspace/executeCommand, which shows nothing of either.
function M.client_commands()
  local commands = {}
  for _, c in ipairs(M.commands) do
    commands[c.id] = function(command, ctx)
      ctx = type(ctx) == "table" and ctx or {}
      local callback = command.command == "chainsmith.graph" and show_graph or nil
      local client = ctx.client_id and vim.lsp.get_client_by_id(ctx.client_id) or nil
      M.execute(command.command, ctx.bufnr or 0, callback, command.arguments, client)
    end
  end
  return commands
end

local function define_user_commands()
  for _, c in ipairs(M.commands) do
    vim.api.nvim_create_user_command(c.user, function()
      M.execute(c.id, 0, c.id == "chainsmith.graph" and show_graph or nil)
    end, { desc = "chainsmith: " .. c.title })
  end
  -- The "Run against the mock" lens's command: HTTP calls answered from the protocols, no key sent.
  vim.api.nvim_create_user_command("ChainsmithRunMock", function()
    M.execute("chainsmith.run", 0, nil, { { uri = vim.uri_from_bufnr(0), mock = true } })
  end, { desc = "chainsmith: Run chain against the mock of its APIs (offline, no keys)" })
  vim.api.nvim_create_user_command("ChainsmithOutput", function()
    M.show_output()
  end, { desc = "chainsmith: show what runs printed and the server's log (a program not applied included)" })
  vim.api.nvim_create_user_command("ChainsmithLens", function()
    if vim.lsp.codelens then
      vim.lsp.codelens.run()
    end
  end, { desc = "chainsmith: run the code lens on this line (Run chain)" })
  vim.api.nvim_create_user_command("ChainsmithCancel", function()
    if M.cancel(0) == 0 then
      notify("nothing to cancel")
    end
  end, { desc = "chainsmith: cancel the running run, generation, fix or probe" })
  vim.api.nvim_create_user_command("ChainsmithStatus", function()
    local text = M.statusline(0)
    notify(text ~= "" and text or "no server attached to this buffer")
  end, { desc = "chainsmith: the workspace's tools" })
end

function M.setup(opts)
  config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  -- Lists are replaced, not merged.
  for _, key in ipairs({ "cmd", "filetypes", "root_markers" }) do
    if opts and opts[key] then
      config[key] = opts[key]
    end
  end
  local group = vim.api.nvim_create_augroup("chainsmith", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
    desc = "chainsmith: attach the language server",
  })
  if config.user_commands then
    define_user_commands()
  end
  -- Buffers opened before setup().
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(config.filetypes, vim.bo[bufnr].filetype) then
      M.attach(bufnr)
    end
  end
end

--- The configuration in force (after setup()).
function M.config()
  return config
end

return M
