-- Asks the real soba-lsp for soba.budget once and exits with 0 when it
-- answers, 3 when the server says the command is not available yet
-- (-32803 / -32601), 4 on any other failure. test.sh uses it to decide
-- whether the end-to-end tests can run.
local code, why = 4, 'unknown'
local ok, err = xpcall(function()
  vim.opt.rtp:prepend(os.getenv('SOBA_PLUGIN_DIR'))
  vim.cmd('cd ' .. vim.fn.fnameescape(os.getenv('SOBA_WORKSPACE')))
  require('soba').setup({ cmd = { os.getenv('SOBA_LSP') }, autostart = false })
  local client = require('soba.client')
  local c = assert(client.current())
  local ready = vim.wait(15000, function()
    return client.is_ready(c)
  end, 20)
  if not ready then
    why = 'initialize not answered within 15 s'
    return
  end
  local done, rerr, result = false, nil, nil
  client.request(c, 'workspace/executeCommand', { command = 'soba.budget', arguments = { vim.empty_dict() } },
    function(e, r)
      done, rerr, result = true, e, r
    end)
  vim.wait(10000, function()
    return done
  end, 20)
  if not done then
    why = 'soba.budget not answered within 10 s'
  elseif rerr then
    why = string.format('soba.budget answered error %s: %s', tostring(rerr.code), tostring(rerr.message))
    if rerr.code == -32803 or rerr.code == -32601 then
      code = 3
    end
  elseif type(result) == 'table' and result.hardLimit then
    code, why = 0, 'soba.budget answered hardLimit ' .. tostring(result.hardLimit)
  else
    why = 'soba.budget answered ' .. vim.inspect(result)
  end
end, debug.traceback)
if not ok then
  why = err
end
io.stdout:write('probe: ' .. why:gsub('\n', ' ') .. '\n')
pcall(require('soba.client').stop)
vim.wait(2000, function()
  return #require('soba.client').clients() == 0
end, 20)
vim.cmd('cquit ' .. code)
