-- soba.client: starts or attaches soba-lsp per workspace root and speaks to
-- it. Every Neovim API that changed between 0.7 and 0.11 is reached through
-- feature detection here, so the other modules never look at versions.
local config = require('soba.config')
local status = require('soba.status')
local trust = require('soba.trust')

local M = {}

local has = function(feature)
  return vim.fn.has(feature) == 1
end
-- 0.11 made the client an object: methods are called with ':'.
local method_calls = has('nvim-0.11')
local uv = vim.uv or vim.loop

-- by_root[root] = client_id of the server serving that workspace root.
local by_root = {}
-- ready[client_id] = true once `initialize` answered; queued[client_id] holds
-- requests made before that (LSP forbids sending them earlier).
local ready = {}
local queued = {}
-- notified[operationId] = true once that compaction's result line was shown,
-- so the end notification and the command's own result do not both show it.
local notified = {}
-- server_info[client_id] = the initialize result's serverInfo.
local server_info = {}
-- watchers[root] = the fs_event handle watching root's .soba directory, so a
-- change made outside Neovim (a git pull) is re-checked too.
local watchers = {}
-- told_ignored[client_id] = the ignored keys last told to the user.
local told_ignored = {}

local function call(client, name, ...)
  if method_calls then
    return client[name](client, ...)
  end
  return client[name](...)
end

-- M.notify shows a message with the plugin's title.
function M.notify(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO, { title = 'soba' })
end

local function exists(path)
  return uv.fs_stat(path) ~= nil
end

local function parent(dir)
  local p = vim.fn.fnamemodify(dir, ':h')
  if p == dir then
    return nil
  end
  return p
end

-- M.root returns the workspace root of a buffer: the nearest directory
-- upward from its file that holds one of the root markers, else the
-- current directory.
function M.root(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_buf_get_name(bufnr) or ''
  local dir
  if name ~= '' and vim.bo[bufnr].buftype == '' then
    dir = vim.fn.fnamemodify(name, ':p:h')
  else
    dir = vim.fn.getcwd()
  end
  local d = dir
  while d do
    for _, marker in ipairs(config.current.root_markers) do
      if exists(d .. '/' .. marker) then
        return d
      end
    end
    d = parent(d)
  end
  return vim.fn.getcwd()
end

-- is_file_buffer: a loaded buffer of a file. A buffer named on the command
-- line is not loaded yet while init.lua runs; vim.lsp.start (0.10) answers nil
-- for it, so the client starts unattached and BufEnter attaches the buffer.
local function is_file_buffer(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr)
    and vim.api.nvim_buf_is_loaded(bufnr)
    and vim.bo[bufnr].buftype == ''
    and vim.api.nvim_buf_get_name(bufnr) ~= ''
end

local function alive(id)
  local c = id and vim.lsp.get_client_by_id(id)
  if not c then
    return nil
  end
  if call(c, 'is_stopped') then
    return nil
  end
  return c
end

local function level_of(type_)
  -- LSP MessageType: 1 error, 2 warning, 3 info, 4 log.
  local l = vim.log.levels
  return ({ l.ERROR, l.WARN, l.INFO, l.DEBUG })[type_] or l.INFO
end

-- M.show_result shows a CompactionResult's line (the server's R-B3 line)
-- once per operation; a degraded fallback or a failure is a warning (R-F1).
function M.show_result(r)
  if type(r) ~= 'table' or not config.current.notify_results then
    return
  end
  if type(r.line) ~= 'string' or r.line == '' then
    return
  end
  if r.operationId and r.operationId ~= '' then
    if notified[r.operationId] then
      return
    end
    notified[r.operationId] = true
  end
  local level = vim.log.levels.INFO
  if r.quality == 'degraded' or r.outcome == 'failed' then
    level = vim.log.levels.WARN
  end
  M.notify(r.line, level)
end

-- M.handlers are the per-client handlers of the server's notifications
-- and requests (PROTOCOL.md "Notifications"). $/progress keeps Neovim's own
-- handler, which feeds LspProgressUpdate / LspProgress and vim.lsp.status().
M.handlers = {
  ['soba/budget'] = function(_, result, ctx)
    status.on_budget(ctx.client_id, result)
    M.tell_ignored(ctx.client_id, result)
  end,
  ['soba/compaction'] = function(_, result, ctx)
    status.on_compaction(ctx.client_id, result)
    if type(result) == 'table' and result.phase == 'end' then
      M.show_result(result)
      require('soba.chat').on_compaction(result)
    end
  end,
  ['soba/event'] = function(_, result, ctx)
    require('soba.chat').on_event(ctx.client_id, result)
  end,
  ['window/showMessage'] = function(_, result)
    if type(result) == 'table' then
      M.notify(tostring(result.message), level_of(result.type))
    end
  end,
  -- Tool approvals (tools.approval "ask"): the actions are offered through
  -- vim.ui.select, so any picker plugin can answer; the reply is the chosen
  -- action item or null when the user dismissed the choice.
  ['window/showMessageRequest'] = function(_, params, ctx)
    local actions = (type(params) == 'table' and params.actions) or {}
    if actions == vim.NIL or #actions == 0 then
      M.notify(tostring(params and params.message), level_of(params and params.type))
      return vim.NIL
    end
    -- R-W3: a write or an edit is shown as a diff split of the file against
    -- the content it would get, while the question is asked.
    local diff_tab = M.show_proposal(params.soba, ctx and ctx.client_id)
    local done, choice = false, nil
    vim.ui.select(actions, {
      prompt = tostring(params.message),
      format_item = function(a)
        return a.title
      end,
    }, function(item)
      choice = item
      done = true
    end)
    -- A picker may answer later from the event loop; wait for it.
    if not done then
      vim.wait(10 * 60 * 1000, function()
        return done
      end, 20)
    end
    if diff_tab and vim.api.nvim_tabpage_is_valid(diff_tab) and #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd('tabclose ' .. vim.api.nvim_tabpage_get_number(diff_tab))
    end
    if choice == nil then
      return vim.NIL
    end
    return choice
  end,
}

-- show_proposal opens a tab with a diff split: the workspace file (empty
-- when it does not exist yet) beside a scratch buffer holding the content a
-- write or an edit proposes. It returns the tab, or nil when the request
-- carries no proposal.
function M.show_proposal(soba, client_id)
  if type(soba) ~= 'table' or type(soba.path) ~= 'string' or type(soba.proposed) ~= 'string' then
    return nil
  end
  local c = client_id and vim.lsp.get_client_by_id(client_id)
  local root = (c and c.config and c.config.root_dir) or vim.fn.getcwd()
  local file = root .. '/' .. soba.path
  local ok = pcall(function()
    vim.cmd('tabnew')
    if vim.fn.filereadable(file) == 1 then
      vim.cmd('edit ' .. vim.fn.fnameescape(file))
    else
      vim.bo.buftype = 'nofile'
      vim.bo.bufhidden = 'wipe'
    end
    vim.cmd('diffthis')
    vim.cmd('vnew')
    local buf = vim.api.nvim_get_current_buf()
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    local lines = vim.split(soba.proposed, '\n', { plain = true })
    if lines[#lines] == '' then
      table.remove(lines)
    end
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    pcall(vim.api.nvim_buf_set_name, buf, 'soba://proposed/' .. soba.path)
    vim.bo[buf].modifiable = false
    vim.cmd('diffthis')
  end)
  if not ok then
    return nil
  end
  return vim.api.nvim_get_current_tabpage()
end

local function flush(client_id)
  local q = queued[client_id] or {}
  queued[client_id] = nil
  for _, fn in ipairs(q) do
    fn()
  end
end

-- M.on_init registers a client that answered `initialize`: the root it
-- serves, its serverInfo, the requests held until then, and a first budget
-- for the status line. A client started by vim.lsp.enable (lsp/soba.lua)
-- is registered here as well as one started by setup().
function M.on_init(client, result)
  server_info[client.id] = type(result) == 'table' and result.serverInfo or nil
  M.lean_sync(client)
  ready[client.id] = true
  local root = client.config and client.config.root_dir
  if root and not alive(by_root[root]) then
    by_root[root] = client.id
  end
  flush(client.id)
  if root then
    M.watch_trust(root)
  end
  -- The server may have reopened the workspace's newest session
  -- (sessionOnStart: resume): the chat shows its conversation.
  M.request(client, 'workspace/executeCommand',
    { command = 'soba.session.transcript', arguments = { { limit = require('soba.chat').page_entries } } },
    function(err, page)
      if not err and type(page) == 'table' and type(page.items) == 'table' and #page.items > 0 then
        require('soba.chat').show_history(page, false)
      end
    end)
  -- Seed the status line once; later updates come as notifications.
  M.request(client, 'workspace/executeCommand',
    { command = 'soba.budget', arguments = { vim.empty_dict() } },
    function(err, result_, ctx)
      if not err then
        status.on_budget(ctx.client_id, result_)
        M.tell_ignored(ctx.client_id, result_)
      end
    end)
end

-- M.tell_ignored says once, per client and set of keys, which of the
-- repository's settings the server ignores until the workspace's file is
-- trusted, and how to trust it here (the server's own warning names the
-- file and the keys too).
function M.tell_ignored(client_id, budget)
  local keys = type(budget) == 'table' and budget.repositorySettingsIgnored
  if type(keys) ~= 'table' or #keys == 0 then
    told_ignored[client_id] = nil
    return
  end
  local said = table.concat(keys, ', ')
  if told_ignored[client_id] == said then
    return
  end
  told_ignored[client_id] = said
  local c = alive(client_id)
  local root = c and c.config and c.config.root_dir
  if root then
    M.notify('soba: ignored until ' .. trust.file(root) .. ' is trusted: ' .. said .. '; ' .. trust.how(root),
      vim.log.levels.WARN)
  end
end

-- M.settings are the `soba` settings for a root's server: the user's
-- (setup's `settings`) with workspaceTrusted, which only the plugin sets.
function M.settings(root)
  return config.json_ready(trust.settings(config.current.settings, root))
end

-- M.recheck asks soba.trust again about root's .soba/config.json and
-- sends the answer to root's server as workspace/didChangeConfiguration
-- (`settings.soba.workspaceTrusted`). Returns trusted, why.
function M.recheck(root)
  local trusted, why = trust.check(root)
  local c = alive(by_root[root])
  if c then
    local s = M.settings(root)
    c.config.settings = { soba = s }
    call(c, 'notify', 'workspace/didChangeConfiguration', { settings = { soba = s } })
  end
  return trusted, why
end

-- M.recheck_all re-checks every root with a running server.
function M.recheck_all()
  for root, id in pairs(by_root) do
    if alive(id) then
      M.recheck(root)
    end
  end
end

local trust_group = nil

-- M.watch_trust re-checks root's trust whenever it may have changed: the
-- file written from Neovim (BufWritePost), `:trust` run on the command
-- line (CmdlineLeave: it runs right after), and any change on disk to the
-- .soba directory (an fs_event watcher).
function M.watch_trust(root)
  if not trust_group then
    trust_group = vim.api.nvim_create_augroup('soba_trust', { clear = true })
    vim.api.nvim_create_autocmd('BufWritePost', {
      group = trust_group,
      pattern = '*/.soba/config.json',
      callback = function()
        vim.schedule(M.recheck_all)
      end,
    })
    vim.api.nvim_create_autocmd('CmdlineLeave', {
      group = trust_group,
      pattern = ':',
      callback = function()
        local line = vim.fn.getcmdline()
        if not (vim.v.event and vim.v.event.abort) and line:match('^%s*tru') then
          vim.schedule(M.recheck_all)
        end
      end,
    })
  end
  if watchers[root] or not uv.new_fs_event then
    return
  end
  local dir = root .. '/.soba'
  if vim.fn.isdirectory(dir) ~= 1 then
    return
  end
  local w = uv.new_fs_event()
  local pending = false
  local ok = w and w:start(dir, {}, function(_, name)
    if name ~= 'config.json' or pending then
      return
    end
    pending = true
    -- Coalesce the several events of one save.
    vim.defer_fn(function()
      pending = false
      M.recheck(root)
    end, 100)
  end)
  if ok then
    watchers[root] = w
  elseif w then
    w:close()
  end
end

-- M.lean_sync stops Neovim from sending textDocument/didChange: the
-- server needs to know what was opened, saved and closed, and its file
-- watcher sees the rest, so every keystroke of every buffer need not
-- cross the pipe. The server still declares change sync (PROTOCOL.md); the
-- client side of it is turned off before any buffer is tracked.
function M.lean_sync(client)
  local none = vim.lsp.protocol.TextDocumentSyncKind.None
  local sync = client.server_capabilities and client.server_capabilities.textDocumentSync
  if type(sync) == 'table' then
    sync.change = none
  elseif type(sync) == 'number' and client.server_capabilities then
    client.server_capabilities.textDocumentSync = { openClose = true, change = none, save = true }
  end
  -- Neovim 0.7 reads its own resolved copy.
  if type(client.resolved_capabilities) == 'table' then
    client.resolved_capabilities.text_document_did_change = none
  end
end

-- M.on_exit forgets a client that exited.
function M.on_exit(_, _, client_id)
  vim.schedule(function()
    ready[client_id] = nil
    queued[client_id] = nil
    told_ignored[client_id] = nil
    for r, id in pairs(by_root) do
      if id == client_id then
        by_root[r] = nil
        if watchers[r] then
          watchers[r]:close()
          watchers[r] = nil
        end
      end
    end
    status.forget(client_id)
  end)
end

-- M.capabilities are the client's capabilities: Neovim's own, plus
-- work-done progress, which the server uses for compaction barriers only
-- when told so.
function M.capabilities()
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.window = capabilities.window or {}
  capabilities.window.workDoneProgress = true
  return capabilities
end

local function client_config(root)
  local c = config.current
  local settings = M.settings(root)
  local conf = {
    name = 'soba',
    cmd = c.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    capabilities = M.capabilities(),
    handlers = M.handlers,
    init_options = settings,
    settings = { soba = settings },
    on_init = M.on_init,
    on_exit = M.on_exit,
    on_attach = function(client, bufnr)
      if config.current.on_attach then
        config.current.on_attach(client, bufnr)
      end
    end,
  }
  return conf
end

-- M.lsp_config is the configuration lsp/soba.lua gives Neovim 0.11+'s
-- vim.lsp.config: the same server, handlers and capabilities as setup()
-- uses, and a root_dir that lets only the workspace's files start or join
-- the server (|soba-lsp-config|). Options of setup() (cmd, settings,
-- root_markers) apply when setup() ran before; vim.lsp.config('soba', …)
-- overrides any key.
function M.lsp_config()
  local c = config.current
  local conf = {
    cmd = c.cmd,
    root_markers = c.root_markers,
    root_dir = function(bufnr, on_dir)
      if M.wants(bufnr) then
        on_dir(M.root(bufnr))
      end
    end,
    capabilities = M.capabilities(),
    handlers = M.handlers,
    init_options = config.json_ready(c.settings),
    -- The root is known only now: workspaceTrusted is its file's.
    before_init = function(params, conf_)
      local s = M.settings(conf_.root_dir)
      params.initializationOptions = s
      conf_.settings = { soba = s }
    end,
    on_init = M.on_init,
    on_exit = M.on_exit,
  }
  if next(c.settings) then
    conf.settings = { soba = config.json_ready(c.settings) }
  end
  return conf
end

-- M.ensure returns the id of the client serving bufnr's workspace root,
-- starting soba-lsp if none runs, and attaches bufnr when it is a file
-- buffer. Returns nil and an error message when the server cannot start.
function M.ensure(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root = M.root(bufnr)
  local file = is_file_buffer(bufnr)
  local id = by_root[root]
  if alive(id) then
    if file and not vim.lsp.buf_is_attached(bufnr, id) then
      vim.lsp.buf_attach_client(bufnr, id)
    end
    return id
  end
  if vim.fn.executable(config.current.cmd[1]) ~= 1 then
    return nil, 'soba: cannot run "' .. config.current.cmd[1] .. '": not an executable (see :checkhealth soba)'
  end
  local conf = client_config(root)
  -- The client starts unattached, then the buffer attaches when it is a
  -- file. vim.lsp.start(conf, {bufnr}) of 0.8–0.10 answers nil when the
  -- buffer cannot attach yet (a file named on the command line is not
  -- loaded while init.lua runs) although the client started: that nil is
  -- not a failure, and a second client must not start for the same root.
  if has('nvim-0.11') then
    id = vim.lsp.start(conf, { attach = false })
  else
    id = vim.lsp.start_client(conf)
  end
  if not id then
    return nil, 'soba: could not start ' .. table.concat(config.current.cmd, ' ')
  end
  by_root[root] = id
  if file then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
end

-- M.wants reports whether a buffer opened in the editor should reach
-- soba-lsp (autostart): a loaded file buffer (no help, terminal, quickfix
-- or plugin buffer) inside a workspace, that is under a directory with a
-- root marker or under the current directory. A file elsewhere (a library
-- source, /etc/hosts) neither starts a server nor joins one.
function M.wants(bufnr)
  if not is_file_buffer(bufnr) then
    return false
  end
  local file = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':p')
  local root = M.root(bufnr)
  local inside = function(dir)
    dir = vim.fn.fnamemodify(dir, ':p')
    if dir:sub(-1) ~= '/' then
      dir = dir .. '/'
    end
    return file:sub(1, #dir) == dir
  end
  if not inside(root) then
    return false
  end
  if root ~= vim.fn.getcwd() then
    return true -- a marker was found
  end
  for _, marker in ipairs(config.current.root_markers) do
    if exists(root .. '/' .. marker) then
      return true
    end
  end
  return inside(vim.fn.getcwd())
end

-- M.current returns the client for the current buffer (starting it when
-- needed), or nil and an error message.
function M.current()
  local id, err = M.ensure()
  if not id then
    return nil, err
  end
  local c = alive(id)
  if not c then
    return nil, 'soba: the server exited (see :checkhealth soba and :LspLog)'
  end
  return c
end

-- M.find returns the running client for bufnr's root without starting one.
function M.find(bufnr)
  return alive(by_root[M.root(bufnr)])
end

-- M.clients returns every running soba client as a list.
function M.clients()
  local out = {}
  for _, id in pairs(by_root) do
    local c = alive(id)
    if c then
      out[#out + 1] = c
    end
  end
  return out
end

-- M.server_info returns the serverInfo ({name, version}) a client's server
-- gave in its initialize result, or nil.
function M.server_info(client)
  return server_info[client.id]
end

-- M.is_ready tells whether a client answered `initialize`.
function M.is_ready(client)
  return ready[client.id] == true
end

-- M.request sends a request, holding it until the client is initialized.
-- handler(err, result, ctx) is called on the main loop.
function M.request(client, method, params, handler)
  local send = function()
    local ok = call(client, 'request', method, params, handler)
    if not ok then
      handler({ code = -32099, message = 'the server is not running' }, nil, { client_id = client.id })
    end
  end
  if ready[client.id] then
    send()
  else
    queued[client.id] = queued[client.id] or {}
    table.insert(queued[client.id], send)
  end
end

local function command_params(command, args)
  if args == nil or (type(args) == 'table' and next(args) == nil) then
    args = vim.empty_dict()
  else
    args = config.json_ready(args)
  end
  return { command = command, arguments = { args } }
end

-- M.describe_error turns a JSON-RPC error into "command: what is wrong",
-- naming the command once: the server's messages already start with it,
-- and a "soba: " or the command said again after it is dropped.
function M.describe_error(command, err)
  local msg = tostring(type(err) == 'table' and err.message or err)
  local prefixes = { command .. ': ', 'soba: ' }
  local stripped = true
  while stripped do
    stripped = false
    for _, p in ipairs(prefixes) do
      if msg:sub(1, #p) == p then
        msg, stripped = msg:sub(#p + 1), true
      end
    end
  end
  return command .. ': ' .. msg
end

-- M.execute runs a server command (PROTOCOL.md "Commands") on the current
-- buffer's client; cb(err, result, client) gets the JSON-RPC error or the
-- result. Without cb, an error is shown with vim.notify.
function M.execute(command, args, cb)
  local client, err = M.current()
  if not client then
    if cb then
      cb({ code = -32099, message = err }, nil, nil)
    else
      M.notify(err, vim.log.levels.ERROR)
    end
    return
  end
  M.request(client, 'workspace/executeCommand', command_params(command, args), function(e, result)
    if cb then
      cb(e, result, client)
    elseif e then
      M.notify(M.describe_error(command, e), vim.log.levels.ERROR)
    end
  end)
end

-- M.execute_sync runs a server command and waits at most timeout_ms for
-- the answer; it returns result, or nil and an error message. Used by
-- command-line completion, which must answer synchronously.
function M.execute_sync(command, args, timeout_ms, client)
  timeout_ms = timeout_ms or config.current.completion_timeout_ms
  if not client then
    local err
    client, err = M.current()
    if not client then
      return nil, err
    end
  end
  local done, result, rerr = false, nil, nil
  M.request(client, 'workspace/executeCommand', command_params(command, args), function(e, r)
    done, result, rerr = true, r, e
  end)
  vim.wait(timeout_ms, function()
    return done
  end, 10)
  if not done then
    return nil, string.format('soba: %s: no answer within %d ms', command, timeout_ms)
  end
  if rerr then
    return nil, M.describe_error(command, rerr)
  end
  return result
end

-- M.stop stops every soba client (tests, :Soba stop).
function M.stop()
  for _, c in ipairs(M.clients()) do
    call(c, 'stop')
  end
end

-- M._reset forgets the caches (tests).
function M._reset()
  for _, w in pairs(watchers) do
    w:close()
  end
  by_root, ready, queued, notified, server_info, watchers, told_ignored = {}, {}, {}, {}, {}, {}, {}
end

return M
