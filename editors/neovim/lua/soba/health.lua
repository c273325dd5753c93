-- soba.health: :checkhealth soba — the binary, its version and the
-- connection of the current buffer's root.
local M = {}

-- report picks the health API of the running Neovim: vim.health.start
-- (0.10+), vim.health.report_start (0.8, 0.9) or health#report_* (0.7).
local function reporter()
  local h = vim.health
  if h and h.start then
    return { start = h.start, ok = h.ok, warn = h.warn, error = h.error, info = h.info }
  end
  if h and h.report_start then
    return { start = h.report_start, ok = h.report_ok, warn = h.report_warn, error = h.report_error,
      info = h.report_info }
  end
  local fn = function(name)
    return function(msg, advice)
      if advice then
        vim.fn['health#report_' .. name](msg, advice)
      else
        vim.fn['health#report_' .. name](msg)
      end
    end
  end
  return { start = fn('start'), ok = fn('ok'), warn = fn('warn'), error = fn('error'), info = fn('info') }
end

-- M.check runs the health check.
function M.check()
  local r = reporter()
  local config = require('soba.config').current
  local client = require('soba.client')
  r.start('soba: binary')
  local exe = config.cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    r.error('"' .. exe .. '" is not executable', { 'Build it with `go build -o ~/.local/bin/soba-lsp ./cmd/soba-lsp`',
      'or set `cmd` in require("soba").setup({ cmd = { "/path/to/soba-lsp" } })' })
  else
    r.ok('found ' .. vim.fn.exepath(exe))
    local out = vim.fn.system({ exe, '--version' })
    if vim.v.shell_error == 0 then
      r.ok('version: ' .. vim.trim(out))
    else
      r.error('`' .. exe .. ' --version` failed: ' .. vim.trim(out))
    end
  end
  r.start('soba: connection')
  local root = client.root()
  r.info('workspace root: ' .. root)
  local c = client.find()
  if not c then
    r.warn('no soba-lsp client for this root', { 'call require("soba").setup() or run any :Soba command' })
    return
  end
  if not client.is_ready(c) then
    r.warn('client ' .. c.id .. ' is starting (initialize not answered yet)')
    return
  end
  local info = client.server_info(c) or {}
  r.ok(string.format('client %d connected to %s %s', c.id, tostring(info.name or '?'), tostring(info.version or '')))
  local budget, err = client.execute_sync('soba.budget', {}, 2000, c)
  if budget then
    r.ok('budget: ' .. require('soba.status').format({ budget = budget }, config.statusline))
  else
    r.warn('soba.budget failed: ' .. tostring(err))
  end
end

return M
