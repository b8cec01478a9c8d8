-- :checkhealth chainsmith
local M = {}

local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error

function M.check()
  local chainsmith = require("chainsmith")
  local config = chainsmith.config()
  start("chainsmith")
  if vim.fn.has("nvim-0.7") == 0 then
    error("Neovim 0.7 or newer is needed")
  end
  local cmd = type(config.cmd) == "table" and config.cmd[1] or nil
  if cmd and vim.fn.executable(cmd) == 1 then
    local version = vim.fn.system({ cmd, "--version" })
    ok(("`%s` found: %s"):format(vim.fn.exepath(cmd), (version:gsub("%s+$", ""))))
  elseif cmd then
    error(("`%s` is not executable"):format(cmd), {
      "install chainsmith (cargo install --path . in its repository)",
      "or pass cmd = { '/path/to/chainsmith', 'lsp' } to require('chainsmith').setup()",
    })
  end
  -- :checkhealth shows its report in a buffer of its own: the buffer to check is the file the user
  -- was in, the most recently used one holding a file.
  local bufnr = M.user_buffer()
  if not bufnr then
    warn("no file buffer is open: open a program of the workspace and run :checkhealth chainsmith again")
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = chainsmith.find_root(name)
  if root then
    ok(("%s is in the chainsmith workspace %s"):format(vim.fn.fnamemodify(name, ":~:."), root))
  else
    warn(("%s is not inside a folder with chainsmith.toml or protocols/"):format(vim.fn.fnamemodify(name, ":~:.")))
  end
  local clients = chainsmith.clients(bufnr)
  if #clients > 0 then
    local status = chainsmith.statusline(bufnr)
    ok(("attached (client %d)%s"):format(clients[1].id, status ~= "" and (": " .. status) or ""))
    local watching = (chainsmith.status[clients[1].id] or {}).file_watching
    if watching == "editor" then
      ok("changes on disk to chainsmith.toml and protocol files: watched by Neovim for the server")
    elseif watching == "server" then
      ok("changes on disk to chainsmith.toml and protocol files: watched by the server (this Neovim registers no file watchers)")
    else
      warn("changes on disk to chainsmith.toml and protocol files are not watched: save them from Neovim, or restart the server", {
        "the server could not watch the files itself; see its log",
      })
    end
  else
    warn(("no chainsmith server attached to %s"):format(vim.fn.fnamemodify(name, ":t")))
  end
  if config.inlay_hints and not vim.lsp.inlay_hint then
    warn("inlay hints need Neovim 0.10 or newer")
  end
end

--- The most recently used buffer holding a file (not the health report, help or a scratch buffer).
function M.user_buffer()
  local best, last = nil, -1
  for _, info in ipairs(vim.fn.getbufinfo({ buflisted = 1 })) do
    if vim.bo[info.bufnr].buftype == "" and info.name ~= "" and (info.lastused or 0) > last then
      best, last = info.bufnr, info.lastused or 0
    end
  end
  return best
end

return M
