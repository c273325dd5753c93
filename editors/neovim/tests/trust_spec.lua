-- Workspace trust end to end (SPEC R-W5): a real soba-lsp in a workspace
-- (SOBA_WORKSPACE) whose .soba/config.json names the fake model server.
-- Untrusted, the server ignores the file's model settings and says so
-- (repositorySettingsIgnored, the status line); `:trust` of the file
-- applies it and a prompt reaches the fake model; editing the file
-- untrusts it again. The same for `soba-lsp trust` (on Neovim < 0.9 the
-- only way, through :Soba trust).
local H = require('harness')
local test, eq, ok, match, wait = H.test, H.eq, H.ok, H.match, H.wait

local ws = assert(os.getenv('SOBA_WORKSPACE'), 'SOBA_WORKSPACE')
local lsp = assert(os.getenv('SOBA_LSP'), 'SOBA_LSP')
local soba = require('soba')
local client = require('soba.client')
local trust = require('soba.trust')
local chat = require('soba.chat')
local notes = H.capture_notify()
local file = ws .. '/.soba/config.json'

-- budget asks the server for its budget now.
local function budget()
  local done, result = false, nil
  soba.command('budget', false, function(_, r)
    done, result = true, r
  end)
  wait(10000, function()
    return done
  end, ':Soba budget')
  return result or {}
end

local function ignored()
  return table.concat(budget().repositorySettingsIgnored or {}, ' ')
end

-- until_ignored waits until the server's ignored keys match pattern.
local function until_ignored(pattern, what)
  local last
  wait(10000, function()
    last = ignored()
    return last:find(pattern) ~= nil
  end, what)
  return last
end

-- edit_file changes the file in Neovim and writes it, as a user would.
local function edit_file(name)
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local text = table.concat(lines, '\n'):gsub('"fake%-model[^"]*"', '"' .. name .. '"')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(text, '\n'))
  vim.cmd('silent write')
end

vim.cmd('cd ' .. vim.fn.fnameescape(ws))
vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/notes.md'))
local id

test('UntrustedFileIsIgnored_RW5', function()
  id = soba.setup({ cmd = { lsp } })
  local c = vim.lsp.get_client_by_id(id)
  wait(15000, function()
    return client.is_ready(c)
  end, 'initialize')
  eq(false, c.config.settings.soba.workspaceTrusted, 'workspaceTrusted sent as false')
  local keys = until_ignored('model%.baseURL', 'model.baseURL ignored')
  match('model%.provider', keys, 'the provider too')
  wait(5000, function()
    return soba.statusline():find('untrusted', 1, true) ~= nil
  end, 'the status line says untrusted')
  local warned
  for _, n in ipairs(notes) do
    if tostring(n.msg):find('not trusted', 1, true) and tostring(n.msg):find(vim.fn.resolve(file), 1, true)
      or tostring(n.msg):find('ignored until ' .. file, 1, true) then
      warned = n.msg
    end
  end
  ok(warned, 'a warning names the file: ' .. vim.inspect(vim.tbl_map(function(n)
    return n.msg
  end, notes)))
end)

if trust.supported() then
  test('TrustCommandAppliesTheFile_RW5', function()
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
    vim.cmd('trust')
    -- CmdlineLeave does not fire for a command run from Lua: what a user types is `:trust`, which does.
    client.recheck(client.root(0))
    eq('', until_ignored('^$', 'nothing ignored once trusted'), 'nothing ignored')
    eq(true, client.find(0).config.settings.soba.workspaceTrusted, 'workspaceTrusted sent as true')
    ok(not soba.statusline():find('untrusted', 1, true), 'no untrusted marker: ' .. soba.statusline())
    vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/notes.md'))
    local done, err = false, nil
    soba.command('ask Say which model answers.', false, function(e)
      done, err = true, e
    end)
    wait(20000, function()
      return done
    end, ':Soba ask')
    eq(nil, err, 'the prompt was accepted')
    wait(30000, function()
      return table.concat(chat.lines(), '\n'):find('Turn one answered.', 1, true) ~= nil
    end, 'the fake model of .soba/config.json answers')
  end)

  test('EditingTheFileUntrustsIt_RW5', function()
    edit_file('fake-model-edited')
    eq({ false, 'changed' }, { trust.check(client.root(0)) }, 'vim.secure: changed')
    until_ignored('model%.baseURL', 'ignored again after the edit')
    eq(false, client.find(0).config.settings.soba.workspaceTrusted, 'workspaceTrusted sent as false')
    -- :Soba trust in the file's buffer trusts what was written.
    local done, err, r = false, nil, nil
    soba.command('trust', false, function(e, res)
      done, err, r = true, e, res
    end)
    wait(5000, function()
      return done
    end, ':Soba trust')
    eq(nil, err, ':Soba trust error')
    eq(true, r and r.trusted, ':Soba trust result')
    eq('', until_ignored('^$', 'applied again'), 'nothing ignored')
    vim.cmd('trust ++remove')
    client.recheck(client.root(0))
    until_ignored('model%.baseURL', 'ignored after :trust ++remove')
  end)
else
  H.skip('TrustCommandAppliesTheFile_RW5', 'Neovim < 0.9 has no :trust (vim.secure)')
  H.skip('EditingTheFileUntrustsIt_RW5', 'Neovim < 0.9 has no :trust (vim.secure)')
end

-- soba-lsp trust records the file's hash for the server itself: the way on
-- Neovim < 0.9 (:Soba trust runs it there) and for any other client.
test('SobaLspTrust_RW5', function()
  vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/notes.md'))
  if trust.supported() then
    local out = vim.fn.system({ lsp, 'trust', ws })
    eq(0, vim.v.shell_error, 'soba-lsp trust: ' .. out)
    client.recheck(ws)
  else
    local done, err = false, nil
    soba.command('trust', false, function(e)
      done, err = true, e
    end)
    wait(10000, function()
      return done
    end, ':Soba trust (soba-lsp trust)')
    eq(nil, err, ':Soba trust error')
  end
  eq('', until_ignored('^$', 'applied by soba-lsp trust'), 'nothing ignored')
  eq(false, client.find(0).config.settings.soba.workspaceTrusted, 'the editor did not trust it: the server did')
  edit_file('fake-model-again')
  until_ignored('model%.baseURL', 'ignored again after an edit')
end)

test('TrustStopsCleanly', function()
  client.stop()
  wait(10000, function()
    return #client.clients() == 0
  end, 'the server to exit')
end)
