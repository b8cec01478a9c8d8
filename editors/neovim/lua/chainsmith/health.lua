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
  local root = chainsmith.find_root(vim.api.nvim_buf_get_name(0))
  if root then
    ok("the current buffer is in the chainsmith workspace " .. root)
  else
    warn("the current buffer is not inside a folder with chainsmith.toml or protocols/")
  end
  local clients = chainsmith.clients(0)
  if #clients > 0 then
    ok(("attached (client %d)%s"):format(clients[1].id, chainsmith.statusline(0) ~= "" and (": " .. chainsmith.statusline(0)) or ""))
  else
    warn("no chainsmith server attached to the current buffer")
  end
  if config.inlay_hints and not vim.lsp.inlay_hint then
    warn("inlay hints need Neovim 0.10 or newer")
  end
end

return M
