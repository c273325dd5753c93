-- soba: the Neovim front end of soba-lsp, SOBA's agent and context
-- compaction engine. See :help soba.
local config = require('soba.config')
local status = require('soba.status')

local M = {}

local group = nil

-- M.setup applies the options (see |soba-config|), starts or attaches
-- soba-lsp for the current buffer's workspace root and, with `autostart`,
-- for every file buffer opened later.
function M.setup(opts)
  config.current = config.resolve(opts)
  local client = require('soba.client')
  group = vim.api.nvim_create_augroup('soba', { clear = true })
  if config.current.autostart then
    vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
      group = group,
      callback = function(ev)
        -- One server per workspace; only the workspace's files join it.
        if not client.wants(ev.buf) then
          return
        end
        local id, err = client.ensure(ev.buf)
        if not id then
          client.notify(err, vim.log.levels.WARN)
        end
      end,
    })
  end
  local id, err = client.ensure(vim.api.nvim_get_current_buf())
  if not id then
    client.notify(err, vim.log.levels.WARN)
  end
  return id
end

-- M.client returns the soba-lsp client of the current buffer's root, or nil
-- when none runs (it never starts one).
function M.client()
  return require('soba.client').find(vim.api.nvim_get_current_buf())
end

local function current_state()
  local c = M.client()
  local s = c and status.get(c.id)
  if s then
    return s
  end
  local _, latest = status.latest()
  return latest
end

-- M.statusline returns the short cached status string, e.g.
-- "SOBA 31.2k / 48.8k (63%)", "SOBA 40.1k / 48.8k (82%)!" past the soft
-- limit, or "SOBA 46.0k / 48.8k (94%)! compacting 82%" during a barrier
-- (the figures are the server's `display`); "" before the first
-- budget arrives. It never sends a request.
function M.statusline()
  return status.format(current_state(), config.current.statusline)
end

-- M.highlight returns the highlight group of the status text:
-- "SobaSoftLimit" from the soft limit on, else "SobaStatus" (a lualine
-- component's `color`).
function M.highlight()
  return status.highlight(current_state())
end

-- M.statusline_hl returns the status text drawn in its highlight group, for
-- a plain 'statusline' through `%{%...%}`; "" before the first budget.
function M.statusline_hl()
  local text = M.statusline()
  if text == '' then
    return ''
  end
  return '%#' .. M.highlight() .. '#' .. (text:gsub('%%', '%%%%')) .. '%*'
end

-- M.budget returns the latest cached Budget table (or nil).
function M.budget()
  local s = current_state()
  return s and s.budget
end

-- M.active tells whether a soba-lsp client serves the current buffer
-- (useful as a lualine `cond`).
function M.active()
  return M.client() ~= nil
end

-- M.command runs a :Soba subcommand from Lua, e.g.
-- require('soba').command('capsule export ck_1 ./x.capsule.md', false, cb).
function M.command(line, bang, done)
  return require('soba.commands').run(line, bang, done)
end

return M
