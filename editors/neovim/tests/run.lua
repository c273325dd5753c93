-- Entry point of every headless run: `nvim --headless -u NONE -i NONE -n
-- -c 'luafile tests/run.lua'` with SOBA_PLUGIN_DIR and SOBA_TEST_FILE set.
-- A Lua error outside a test would leave headless Neovim waiting forever,
-- so everything runs under xpcall and ends with qall!/cquit.
local plugin = os.getenv('SOBA_PLUGIN_DIR')
package.path = plugin .. '/tests/?.lua;' .. package.path
local H = require('harness')
local ok, err = xpcall(function()
  vim.opt.rtp:prepend(plugin)
  vim.cmd('runtime plugin/soba.lua')
  dofile(os.getenv('SOBA_TEST_FILE'))
end, debug.traceback)
if not ok then
  H.crash(err)
  io.stdout:write('run crashed\n')
  vim.cmd('cquit 2')
end
io.stdout:write(string.format('%d passed, %d failed\n', H.passed, H.failed))
if H.failed > 0 then
  vim.cmd('cquit 1')
end
vim.cmd('qall!')
