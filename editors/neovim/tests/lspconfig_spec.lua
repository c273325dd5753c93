-- Neovim 0.11+: lsp/soba.lua with vim.lsp.enable('soba') and no setup():
-- the workspace's first file starts soba-lsp and attaches, the plugin's
-- :Soba, status line and chat work with that client, a second file joins
-- it, and a file outside any workspace neither starts nor joins a server.
local H = require('harness')
local test, eq, ok, match, wait = H.test, H.eq, H.ok, H.match, H.wait

local ws = assert(os.getenv('SOBA_WORKSPACE'), 'SOBA_WORKSPACE')
local lsp = assert(os.getenv('SOBA_LSP'), 'SOBA_LSP')
local soba = require('soba')
local client = require('soba.client')
local _ = H.capture_notify()

if vim.fn.has('nvim-0.11') == 0 then
  H.skip('LspConfigEnable', 'vim.lsp.config needs Neovim 0.11')
  return
end

local function soba_clients(bufnr)
  return vim.lsp.get_clients({ name = 'soba', bufnr = bufnr })
end

test('LspConfigEnable', function()
  local conf = dofile(os.getenv('SOBA_PLUGIN_DIR') .. '/lsp/soba.lua')
  eq({ 'soba-lsp' }, conf.cmd, 'lsp/soba.lua starts soba-lsp by default')
  eq(true, conf.capabilities.window.workDoneProgress, 'work-done progress announced')
  -- vim.lsp.enable attaches on FileType, which -u NONE leaves off.
  vim.cmd('filetype on')
  vim.lsp.config('soba', { cmd = { lsp } })
  vim.lsp.enable('soba')
  vim.cmd('cd ' .. vim.fn.fnameescape(ws))
  vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/notes.md'))
  local b = vim.api.nvim_get_current_buf()
  wait(15000, function()
    return #soba_clients(b) == 1 and client.is_ready(soba_clients(b)[1])
  end, 'soba-lsp to start and attach notes.md')
  local c = soba_clients(b)[1]
  eq(vim.fn.resolve(ws), vim.fn.resolve(c.config.root_dir), 'root dir')
  -- before_init decided workspaceTrusted for this root: its file was never :trust-ed (R-W5).
  eq(false, c.config.settings.soba.workspaceTrusted, 'workspaceTrusted sent for the root')
  wait(10000, function()
    return soba.statusline() ~= ''
  end, 'the status line')
  match('^SOBA [%d.]+k? / [%d.]+k %(%d+%%%)', soba.statusline(), 'status line from the server')
  -- :Soba knows the client vim.lsp.enable started.
  local done, err, result = false, nil, nil
  soba.command('session info', false, function(e, r)
    done, err, result = true, e, r
  end)
  wait(10000, function()
    return done
  end, ':Soba session info')
  eq(nil, err, ':Soba session info error')
  ok(result and result.sessionId, 'a session id')
  eq(1, #client.clients(), 'the plugin sees one client')
  -- A second file of the workspace joins the same client.
  vim.fn.writefile({ 'x' }, ws .. '/second.txt')
  vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/second.txt'))
  wait(10000, function()
    return #soba_clients(0) == 1
  end, 'second.txt to attach')
  eq(c.id, soba_clients(0)[1].id, 'the same client')
  -- A file outside any workspace and the current directory: no server.
  local other = vim.fn.tempname()
  vim.fn.mkdir(other, 'p')
  local outside = vim.fn.tempname() .. '.txt'
  vim.fn.writefile({ 'y' }, outside)
  vim.cmd('cd ' .. vim.fn.fnameescape(other))
  vim.cmd('edit ' .. vim.fn.fnameescape(outside))
  vim.wait(500)
  eq(0, #soba_clients(0), 'a file outside the workspace is not attached')
  eq(1, #vim.lsp.get_clients({ name = 'soba' }), 'and started no server')
end)

test('LspConfigStopsCleanly', function()
  client.stop()
  wait(10000, function()
    return #vim.lsp.get_clients({ name = 'soba' }) == 0
  end, 'the server to exit')
end)
