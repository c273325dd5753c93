-- Unit tests that need no server: status-line formatting, the notification
-- handlers fed with recorded notifications, :Soba parsing and completion,
-- the mapping of subcommands onto PROTOCOL.md commands, what :Soba ask
-- sends (soba.run) and shows, approvals, help and health.
local H = require('harness')
local test, eq, ok, match = H.test, H.eq, H.ok, H.match

local plugin = os.getenv('SOBA_PLUGIN_DIR')
local config = require('soba.config')
local status = require('soba.status')
local client = require('soba.client')
local commands = require('soba.commands')
local chat = require('soba.chat')
local soba = require('soba')

local function read(path)
  local f = assert(io.open(path, 'r'))
  local s = f:read('*a')
  f:close()
  return s
end

local function budget(effective, hard, soft, state)
  return { effectiveTokens = effective, hardLimit = hard, softLimit = soft, state = state or 'idle' }
end

local function feed(method, params, client_id)
  return client.handlers[method](nil, params, { method = method, client_id = client_id or 1 })
end

local function autocmd_counter(pattern)
  local seen = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = pattern,
    callback = function(ev)
      seen[#seen + 1] = { data = ev.data, line = soba.statusline() }
    end,
  })
  return seen
end

test('TokenFormat_RO1', function()
  for _, c in ipairs({
    { 0, '0' }, { 950, '950' }, { 999, '999' }, { 1000, '1.0k' }, { 31234, '31.2k' },
    { 48808, '48.8k' }, { 999949, '999.9k' }, { 999950, '1.0M' }, { 1250000, '1.3M' },
  }) do
    eq(c[2], status.tokens(c[1]), 'tokens(' .. c[1] .. ')')
  end
end)

test('StatuslineFormat_RO1_RS2_RB3', function()
  local opts = config.defaults.statusline
  for _, c in ipairs({
    { 'no state yet', nil, '' },
    { 'below soft limit', { budget = budget(31234, 48808, 39046) }, 'SOBA 31.2k / 48.8k (63%)' },
    { 'one below soft limit', { budget = budget(39045, 48808, 39046) }, 'SOBA 39.0k / 48.8k (79%)' },
    { 'at soft limit', { budget = budget(39046, 48808, 39046) }, 'SOBA 39.0k / 48.8k (79%)!' },
    { 'past soft limit', { budget = budget(45210, 48808, 39046) }, 'SOBA 45.2k / 48.8k (92%)!' },
    { 'barrier with percentage', { budget = budget(45210, 48808, 39046, 'compacting'),
      compaction = { phase = 'progress', percentage = 82 } }, 'SOBA 45.2k / 48.8k (92%)! compacting 82%' },
    { 'barrier state without notification', { budget = budget(31234, 48808, 39046, 'compacting') },
      'SOBA 31.2k / 48.8k (63%) compacting' },
    { 'barrier before any budget', { compaction = { phase = 'start', percentage = 0 } }, 'SOBA compacting 0%' },
    { 'small counts', { budget = budget(950, 48808, 39046) }, 'SOBA 950 / 48.8k (1%)' },
    -- The server's text is shown as it is: one number format in both editors.
    { "the server's display", { budget = { effectiveTokens = 14030, hardLimit = 17000, softLimit = 13600,
      display = '14.0k / 17.0k (82%)', state = 'idle' } }, 'SOBA 14.0k / 17.0k (82%)!' },
  }) do
    eq(c[3], status.format(c[2], opts), c[1])
  end
  local custom = { prefix = 'S', soft_marker = ' ▲', compacting = '⟳' }
  eq('S 45.2k / 48.8k (92%) ▲ ⟳ 5%', status.format({ budget = budget(45210, 48808, 39046),
    compaction = { percentage = 5 } }, custom), 'custom statusline options')
end)

-- R-O1: the status text is coloured from the soft limit on, in a plain
-- 'statusline' (%{%...%}) as in lualine (the group name as `color`).
test('StatuslineColourFromSoftLimit_RO1', function()
  eq(1, vim.fn.hlexists('SobaSoftLimit'), 'SobaSoftLimit is defined')
  eq(1, vim.fn.hlexists('SobaStatus'), 'SobaStatus is defined')
  local expr = "%{%v:lua.require'soba'.statusline_hl()%}"
  for _, c in ipairs({
    { 'before any budget', nil, '', nil },
    { 'below the soft limit', budget(31234, 48808, 39046), 'SOBA 31.2k / 48.8k (63%)', 'SobaStatus' },
    { 'at the soft limit', budget(39046, 48808, 39046), 'SOBA 39.0k / 48.8k (79%)!', 'SobaSoftLimit' },
    { 'past the soft limit', budget(45210, 48808, 39046), 'SOBA 45.2k / 48.8k (92%)!', 'SobaSoftLimit' },
  }) do
    status.reset()
    if c[2] then
      feed('soba/budget', c[2], 5)
    end
    local r = vim.api.nvim_eval_statusline(expr, { highlights = true })
    eq(c[3], r.str, c[1] .. ': the text, its % kept')
    if c[4] then
      eq(c[4], soba.highlight(), c[1] .. ': highlight()')
      local groups = vim.tbl_map(function(h)
        return h.group
      end, r.highlights)
      ok(vim.tbl_contains(groups, c[4]), c[1] .. ': drawn in ' .. c[4] .. ', got ' .. vim.inspect(groups))
    end
  end
  status.reset()
end)

test('RecordedBarrierNotifications_RB3', function()
  status.reset()
  client._reset()
  local budgets = autocmd_counter('SobaBudget')
  local compactions = autocmd_counter('SobaCompaction')
  local seen, restore = H.capture_notify()
  local recorded = vim.json.decode(read(plugin .. '/tests/fixtures/barrier.json'))
  local lines = {}
  for _, n in ipairs(recorded) do
    feed(n.method, n.params, 7)
    lines[#lines + 1] = soba.statusline()
  end
  restore()
  eq({
    'SOBA 31.2k / 48.8k (63%)',
    'SOBA 45.2k / 48.8k (92%)!',
    'SOBA 45.2k / 48.8k (92%)! compacting 0%',
    'SOBA 45.2k / 48.8k (92%)! compacting 0%',
    'SOBA 45.2k / 48.8k (92%)! compacting 40%',
    'SOBA 45.2k / 48.8k (92%)! compacting 82%',
    -- the end of a completed barrier shows its measured size at once
    'SOBA 14.9k / 48.8k (30%)',
    'SOBA 14.9k / 48.8k (30%)',
  }, lines, 'status line after each notification')
  eq(4, #budgets, 'User SobaBudget count')
  eq(4, #compactions, 'User SobaCompaction count')
  eq('SOBA 45.2k / 48.8k (92%)! compacting 82%', compactions[3].line, 'status line seen by a SobaCompaction listener')
  if vim.fn.has('nvim-0.8') == 1 then
    eq('progress', compactions[3].data.event.phase, 'autocmd data carries the notification')
    eq(14870, budgets[4].data.budget.effectiveTokens, 'autocmd data carries the budget')
  end
  eq(1, #seen, 'one result line shown')
  match('^Compacted context · auto_threshold · 45,210 → 14,870', seen[1].msg, 'result line')
  eq(vim.log.levels.INFO, seen[1].level, 'a full capsule is info')
  -- The same result answered to soba.compact must not be shown twice.
  local again, restore2 = H.capture_notify()
  client.show_result(recorded[7].params)
  restore2()
  eq(0, #again, 'result line shown once per operation')
  eq('ck_8f2a1c', status.get(7).last.checkpointId, 'latest compaction kept')
end)

test('DegradedFallbackIsWarning_RF1', function()
  client._reset()
  local seen, restore = H.capture_notify()
  feed('soba/compaction', { phase = 'end', operationId = 'op_d', trigger = 'user', outcome = 'completed',
    quality = 'degraded', line = 'Compacted context · user · 9,000 → 3,000 tokens (67% reclaimed) · ck_2' })
  feed('window/showMessage', { type = 2, message = 'summary timed out; used the local fallback capsule' })
  restore()
  eq(2, #seen, 'two messages')
  eq(vim.log.levels.WARN, seen[1].level, 'degraded result line level')
  eq(vim.log.levels.WARN, seen[2].level, 'showMessage Warning level')
  match('fallback', seen[2].msg, 'fallback warning text')
end)

test('StatuslineNeverRequests_RO1', function()
  local orig_request, orig_sync = client.request, client.execute_sync
  local calls = 0
  client.request = function(...)
    calls = calls + 1
    return orig_request(...)
  end
  client.execute_sync = function(...)
    calls = calls + 1
    return orig_sync(...)
  end
  for _ = 1, 1000 do
    soba.statusline()
  end
  client.request, client.execute_sync = orig_request, orig_sync
  eq(0, calls, 'requests sent by statusline()')
end)

test('ParseSubcommands_RO3', function()
  for _, c in ipairs({
    { 'ask fix the failing test', 'ask', { text = 'fix the failing test' } },
    { 'cancel', 'cancel', {} },
    { '  budget  ', 'budget', {} },
    { 'compact', 'compact', {} },
    { 'compact keep the API notes', 'compact', { instructions = 'keep the API notes' } },
    { 'auto-compact off', 'auto-compact', { ['on|off'] = 'off' } },
    { 'milestone tests pass', 'milestone', { note = 'tests pass' } },
    { 'pivot use sqlite instead', 'pivot', { note = 'use sqlite instead' } },
    { 'capsule create "Auth refactor"', 'capsule create', { title = 'Auth refactor' } },
    { 'capsule export ck_8f2a1c ./handoff.capsule.md', 'capsule export',
      { checkpointId = 'ck_8f2a1c', path = './handoff.capsule.md' } },
    { 'capsule export ck_1 my notes/x.capsule.md', 'capsule export',
      { checkpointId = 'ck_1', path = 'my notes/x.capsule.md' } },
    { 'capsule load ./handoff.capsule.md', 'capsule load', { path = './handoff.capsule.md' } },
    { 'capsule show', 'capsule show', {} },
    { 'capsule show ck_1', 'capsule show', { checkpointId = 'ck_1' } },
    { 'session new', 'session new', {} },
    { 'session resume', 'session resume', {} },
    { 'session resume s_1', 'session resume', { sessionId = 's_1' } },
    { 'session info', 'session info', {} },
    { 'chat', 'chat', {} },
    { 'rewind e_42', 'rewind', { entryId = 'e_42' } },
  }) do
    local node, args, path = commands.parse(c[1])
    ok(node, c[1] .. ' parses (' .. tostring(args) .. ')')
    eq(c[2], path, c[1] .. ' path')
    eq(c[3], args, c[1] .. ' args')
  end
end)

test('ParseErrorsNameTheProblem_RO3', function()
  for _, c in ipairs({
    { '', 'needs a subcommand' },
    { 'compat', 'unknown subcommand "compat"' },
    { 'capsule', ':Soba capsule needs a subcommand: create, export, list, load, show' },
    { 'capsule burn', 'unknown subcommand "burn" of :Soba capsule' },
    { 'capsule export', 'missing {checkpointId}; usage: :Soba capsule export {checkpointId} {path}' },
    { 'capsule export ck_1', 'missing {path}' },
    { 'auto-compact maybe', '{on|off} must be one of on, off, got "maybe"' },
    { 'auto-compact', 'missing {on|off}' },
    { 'ask', 'missing {text}' },
    { 'budget now', 'unexpected "now"' },
    { 'session resume a b', 'unexpected "b"' },
    { 'rewind e_1 e_2', 'unexpected "e_2"' },
  }) do
    local node, err = commands.parse(c[1])
    eq(nil, node, c[1] .. ' must not parse')
    ok(err:find(c[2], 1, true), string.format('error for %q is %q, want it to contain %q', c[1], err, c[2]))
  end
end)

test('SubcommandsSendProtocolCommands_RO3', function()
  local sent
  local orig = client.execute
  client.execute = function(cmd, args, cb)
    -- A resume is followed by the chat's page of the session (soba.session.transcript).
    if cmd ~= 'soba.session.transcript' then
      sent = { cmd, args }
    end
    cb(nil, { checkpointId = 'ck_1', path = '/tmp/x', markdown = '## Goal\nship', cancelled = false,
      effectiveTokens = 1, hardLimit = 2, softLimit = 1, sessionId = 's_1' }, { id = 99 })
  end
  local _, restore = H.capture_notify()
  for _, c in ipairs({
    { 'ask hello', 'soba.run', { text = 'hello' } },
    { 'cancel', 'soba.cancel', {} },
    { 'budget', 'soba.budget', {} },
    { 'compact', 'soba.compact', {} },
    { 'compact keep notes', 'soba.compact', { instructions = 'keep notes' } },
    { 'auto-compact on', 'soba.autoCompact', { enabled = true } },
    { 'auto-compact off', 'soba.autoCompact', { enabled = false } },
    { 'milestone done', 'soba.checkpoint', { kind = 'milestone', note = 'done' } },
    { 'pivot new plan', 'soba.checkpoint', { kind = 'plan_pivot', note = 'new plan' } },
    { 'capsule create Title', 'soba.capsule.create', { title = 'Title' } },
    { 'capsule export ck_1 out.md', 'soba.capsule.export', { checkpointId = 'ck_1', path = 'out.md' } },
    { '!capsule export ck_1 out.md', 'soba.capsule.export', { checkpointId = 'ck_1', path = 'out.md', overwrite = true } },
    { 'capsule load in.md', 'soba.capsule.load', { path = 'in.md' } },
    { 'capsule list', 'soba.capsule.list', {} },
    { 'capsule show', 'soba.capsule.show', {} },
    { 'capsule show ck_1', 'soba.capsule.show', { checkpointId = 'ck_1' } },
    { 'session new', 'soba.session.new', {} },
    { 'session resume s_1', 'soba.session.resume', { sessionId = 's_1' } },
    { 'session info', 'soba.session.info', {} },
    { 'session list', 'soba.session.list', {} },
    { 'rewind e_42', 'soba.session.rewind', { entryId = 'e_42' } },
  }) do
    sent = nil
    local line, bang = c[1], false
    if line:sub(1, 1) == '!' then
      line, bang = line:sub(2), true
    end
    local done_err = 'not called'
    commands.run(line, bang, function(err)
      done_err = err
    end)
    eq(nil, done_err, c[1] .. ' outcome')
    eq({ c[2], c[3] }, sent, c[1] .. ' sends')
  end
  restore()
  client.execute = orig
  -- capsule show opened the Markdown in a split.
  eq({ '## Goal', 'ship' }, vim.api.nvim_buf_get_lines(0, 0, -1, false), 'capsule show buffer')
  eq('markdown', vim.bo.filetype, 'capsule show filetype')
  match('soba://capsule/ck_1$', vim.api.nvim_buf_get_name(0), 'capsule show buffer name')
  vim.cmd('only')
end)

test('CompleteSubcommandsAndCheckpointIds_RP1', function()
  local orig = client.execute_sync
  local asked = {}
  client.execute_sync = function(cmd)
    asked[#asked + 1] = cmd
    if cmd == 'soba.capsule.list' then
      return {
        { checkpointId = 'ck_8f2a1c', trigger = 'user', title = 'a', quality = 'full' },
        { checkpointId = 'ck_8f9b00', trigger = 'milestone', title = 'b', quality = 'full' },
        { checkpointId = 'ck_1234ab', trigger = 'user', title = 'c', quality = 'degraded' },
      }
    elseif cmd == 'soba.session.list' then
      return { { sessionId = 's_one' }, { sessionId = 's_two' } }
    end
  end
  local function cl(line)
    return vim.fn.getcompletion(line, 'cmdline')
  end
  eq({ 'ask', 'auto-compact', 'budget', 'cancel', 'capsule', 'chat', 'compact', 'milestone', 'pivot', 'rewind',
    'session', 'trust' },
    cl('Soba '), 'top level')
  eq({ 'capsule', 'chat', 'compact', 'cancel' }, (function()
    local r = cl('Soba c')
    table.sort(r, function(a, b)
      return ({ capsule = 1, chat = 2, compact = 3, cancel = 4 })[a] < ({ capsule = 1, chat = 2, compact = 3, cancel = 4 })[b]
    end)
    return r
  end)(), 'prefix c')
  eq({ 'create', 'export', 'list', 'load', 'show' }, cl('Soba capsule '), 'capsule subcommands')
  eq({ 'info', 'list', 'new', 'resume' }, cl('Soba session '), 'session subcommands')
  eq({ 'on', 'off' }, cl('Soba auto-compact '), 'auto-compact choices')
  eq({ 'off' }, cl('Soba auto-compact of'), 'auto-compact prefix')
  eq({ 'ck_8f2a1c', 'ck_8f9b00', 'ck_1234ab' }, cl('Soba capsule export '), 'checkpoint ids')
  eq({ 'ck_8f2a1c', 'ck_8f9b00' }, cl('Soba capsule export ck_8f'), 'checkpoint id prefix')
  eq({ 'ck_1234ab' }, cl('Soba capsule show ck_1'), 'capsule show ids')
  eq({ 's_one', 's_two' }, cl('Soba session resume '), 'session ids')
  eq({}, cl('Soba budget '), 'budget takes nothing')
  eq({}, cl('Soba nope '), 'unknown subcommand')
  eq('soba.capsule.list', asked[1], 'ids come from soba.capsule.list')
  -- The path of export completes files.
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  vim.fn.writefile({}, dir .. '/handoff.capsule.md')
  eq({ dir .. '/handoff.capsule.md' }, cl('Soba capsule export ck_8f2a1c ' .. dir .. '/hand'), 'export path')
  eq({ dir .. '/handoff.capsule.md' }, cl('Soba capsule load ' .. dir .. '/h'), 'load path')
  client.execute_sync = orig
end)

test('ConfigDefaultsAndErrors_RS1', function()
  local c = config.resolve({ cmd = '/opt/soba-lsp', statusline = { soft_marker = '*' } })
  eq({ '/opt/soba-lsp' }, c.cmd, 'cmd string becomes a list')
  eq('*', c.statusline.soft_marker, 'nested option')
  eq('SOBA', c.statusline.prefix, 'nested default kept')
  eq({ '.soba', '.git' }, c.root_markers, 'root markers default')
  local okk, err = pcall(config.resolve, { cmdd = { 'x' } })
  eq(false, okk, 'unknown option fails')
  match('unknown option "cmdd"', err, 'error names the option')
  okk, err = pcall(config.resolve, { autostart = 'yes' })
  eq(false, okk, 'bad type fails')
  match('autostart', err, 'error names the option')
  okk, err = pcall(config.resolve, { cmd = {} })
  eq(false, okk, 'empty cmd fails')
  match('"cmd"', err, 'error names cmd')
  -- Settings go to the server as JSON objects, never as [].
  local encode = vim.json and vim.json.encode or vim.fn.json_encode
  eq('{"compaction":{}}', encode(config.json_ready({ compaction = {} })), 'json_ready keeps objects')
  eq('{"model":{"name":"m"}}', encode(config.json_ready({ model = { name = 'm' } })), 'json_ready keeps values')
  eq('{}', encode(config.json_ready({})), 'empty settings')
end)

test('ChatRendersAgentStream', function()
  chat.clear()
  chat.clock = function()
    return '10:00'
  end
  for _, ev in ipairs({
    { turnId = 't1', type = 'turn_start' },
    { turnId = 't1', type = 'text', delta = 'Reading ' },
    { turnId = 't1', type = 'text', delta = 'the file.\nDone' },
    { turnId = 't1', type = 'tool_call', id = 'c1', name = 'read_file', arguments = { path = 'a.go' } },
    { turnId = 't1', type = 'tool_result', id = 'c1', ok = true, summary = '12 lines' },
    { turnId = 't1', type = 'turn_end', outcome = 'completed' },
    { turnId = 't2', type = 'queued' },
  }) do
    feed('soba/event', ev)
  end
  local _, restore = H.capture_notify()
  feed('soba/event', { turnId = 't3', type = 'turn_end', outcome = 'failed', error = 'model at http://127.0.0.1:1 unreachable' })
  restore()
  eq({ '# SOBA chat', '', '', '## 10:00', 'Reading the file.', 'Done', '', '→ read_file {"path":"a.go"}',
    '← 12 lines', '', '', '— completed', '', '(queued: runs after the current turn)', '',
    '— failed: model at http://127.0.0.1:1 unreachable' }, chat.lines(), 'chat buffer')
  local b = chat.open()
  local win = chat.window()
  ok(win, ':Soba chat shows the buffer in a window')
  eq(b, vim.api.nvim_win_get_buf(win), ':Soba chat shows the buffer')
  eq('soba://chat', vim.api.nvim_buf_get_name(b):match('soba://chat$'), 'chat buffer name')
  eq(false, vim.bo[b].modifiable, 'chat is read-only')
  vim.api.nvim_set_current_win(win)
  vim.cmd('only')
end)

-- ChatFoldsThinking_RC9: the model's thinking is written apart from the
-- answer, each line marked, and folded closed in the chat window; thinking
-- that first streamed as the answer (moved) is taken out of it.
test('ChatFoldsThinking_RC9', function()
  chat.clear()
  chat.clock = function()
    return '10:00'
  end
  for _, ev in ipairs({
    { turnId = 't1', type = 'turn_start' },
    { turnId = 't1', type = 'thinking', delta = 'The user wants ' },
    { turnId = 't1', type = 'thinking', delta = 'a file.\nRead it.' },
    { turnId = 't1', type = 'text', delta = 'Reading it.' },
    { turnId = 't1', type = 'tool_call', id = 'c1', name = 'read_file', arguments = { path = 'a.go' } },
    { turnId = 't1', type = 'tool_result', id = 'c1', ok = true, summary = '12 lines' },
    { turnId = 't1', type = 'text', delta = 'Hmm, short' },
    { turnId = 't1', type = 'text', delta = ' file.\n' },
    { turnId = 't1', type = 'thinking', delta = 'Hmm, short file.\n', moved = true },
    { turnId = 't1', type = 'text', delta = 'It is a.go.' },
    { turnId = 't1', type = 'turn_end', outcome = 'completed' },
  }) do
    feed('soba/event', ev)
  end
  local T = chat.THINK
  eq({ '# SOBA chat', '', '', '## 10:00', '', T .. 'Thinking (zo opens, zc closes)', T .. 'The user wants a file.', T .. 'Read it.', '',
    'Reading it.', '', '→ read_file {"path":"a.go"}', '← 12 lines', '', T .. 'Thinking (zo opens, zc closes)', T .. 'Hmm, short file.', T,
    '', 'It is a.go.', '', '— completed' }, chat.lines(), 'chat buffer')
  local b = chat.open()
  local win = chat.window()
  vim.api.nvim_set_current_win(win)
  local lines = chat.lines()
  for i, l in ipairs(lines) do
    local closed = vim.fn.foldclosed(i) ~= -1
    eq(l:sub(1, #T) == T, closed, 'line ' .. i .. ' folded: ' .. l)
  end
  eq(false, vim.bo[b].modifiable, 'chat is read-only')
  vim.cmd('only')
  chat.clear()
end)

local input = require('soba.input')

-- typed runs keys now as if the user typed them, mappings included.
local function typed(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'xt', false)
end

-- stub_execute answers every server command at once with result and
-- returns the list of {command, args} sent and a function that restores
-- client.execute.
local function stub_execute(result)
  local sent, orig = {}, client.execute
  client.execute = function(command, args, cb)
    sent[#sent + 1] = { command, args }
    if cb then
      cb(nil, result, { id = 97 })
    end
  end
  return sent, function()
    client.execute = orig
  end
end

-- one_window leaves a single window with an empty buffer, so that the
-- chat opens beside it as a user would see it.
local function one_window()
  vim.cmd('silent! only')
  vim.cmd('enew')
end

-- undo presses `u` without its "1 line less" message.
local function undo()
  vim.cmd('silent normal u')
end

local function input_lines()
  return vim.api.nvim_buf_get_lines(input.buffer(), 0, -1, false)
end

local function chat_tail(n)
  local lines = chat.lines()
  return vim.list_slice(lines, #lines - n + 1, #lines)
end

test('ChatInputTextIsTheLinesJoined', function()
  for _, c in ipairs({
    { 'one line', { 'fix the test' }, 'fix the test' },
    { 'lines joined with newlines', { 'fix the test', 'and the docs' }, 'fix the test\nand the docs' },
    { 'empty lines inside kept', { 'a', '', 'b' }, 'a\n\nb' },
    { 'blank lines around dropped', { '', '  ', 'a', '', '' }, 'a' },
    { 'blanks around dropped, inside kept', { '  /budget  ' }, '/budget' },
    { 'indentation after the first line kept', { 'code:', '    x = 1' }, 'code:\n    x = 1' },
    { 'an empty buffer sends nothing', { '' }, '' },
    { 'blank lines send nothing', { ' ', '\t', '' }, '' },
  }) do
    eq(c[3], input.text(c[2]), c[1])
  end
end)

test('ChatInputSignTextFitsTwoCells', function()
  for _, c in ipairs({
    { '> ', '>' }, { '>>', '>>' }, { '› ', '›' }, { 'soba> ', 'so' }, { ' ', '' }, { '', '' },
    { '世界', '世' },
  }) do
    eq(c[2], input.sign_text(c[1]), 'sign_text(' .. c[1] .. ')')
  end
end)

test('ChatUserMessageIsAQuotePerLine', function()
  eq({ '', '> fix the test' }, chat.user_lines('fix the test'), 'one line')
  eq({ '', '> fix the test', '> ', '> and the docs' }, chat.user_lines('fix the test\n\nand the docs'),
    'every line quoted')
end)

test('ChatInputConfigDefaultsAndErrors_RS1', function()
  local c = config.resolve({})
  eq({ enabled = true, height = 3, prefix = '> ', send_normal = '<CR>', send_insert = '<C-s>' }, c.chat.input,
    'input defaults')
  c = config.resolve({ chat = { input = { send_insert = false, prefix = '' } } })
  eq(false, c.chat.input.send_insert, 'a send key may be false')
  eq('<CR>', c.chat.input.send_normal, 'the other key keeps its default')
  eq('botright vsplit', c.chat.open, 'chat.open keeps its default')
  eq({ model = { anything = 1 } }, config.resolve({ settings = { model = { anything = 1 } } }).settings,
    'settings are the server\'s to check')
  for _, bad in ipairs({
    { { chat = { input = { heigth = 4 } } }, 'unknown option "chat.input.heigth"' },
    { { chat = { inptu = {} } }, 'unknown option "chat.inptu"' },
    { { statusline = { colour = 'red' } }, 'unknown option "statusline.colour"' },
    { { chat = 'vsplit' }, 'chat' },
    { { chat = { open = 1 } }, 'chat.open' },
    { { chat = { open_on_ask = 'yes' } }, 'chat.open_on_ask' },
    { { chat = { input = true } }, 'chat.input' },
    { { chat = { input = { enabled = 1 } } }, 'chat.input.enabled' },
    { { chat = { input = { height = 0 } } }, 'chat.input.height: expected a positive whole number' },
    { { chat = { input = { height = 2.5 } } }, 'chat.input.height' },
    { { chat = { input = { prefix = false } } }, 'chat.input.prefix' },
    { { chat = { input = { send_normal = true } } }, 'chat.input.send_normal: expected a key' },
    { { chat = { input = { send_insert = '' } } }, 'chat.input.send_insert' },
    { { statusline = { prefix = 1 } }, 'statusline.prefix' },
  }) do
    local okk, err = pcall(config.resolve, bad[1])
    eq(false, okk, vim.inspect(bad[1]) .. ' fails')
    ok(tostring(err):find(bad[2], 1, true), string.format('error %q names %q', tostring(err), bad[2]))
  end
end)

test('ChatInputOpensUnderTheStream', function()
  one_window()
  vim.cmd('Soba chat')
  local chat_win, input_win = chat.window(), vim.api.nvim_get_current_win()
  ok(chat_win, 'the chat is shown')
  eq(input.buffer(), vim.api.nvim_get_current_buf(), ':Soba chat focuses the input')
  eq('soba://prompt', vim.api.nvim_buf_get_name(0):match('soba://prompt$'), 'input buffer name')
  eq('sobaprompt', vim.bo.filetype, 'input filetype')
  eq('nofile', vim.bo.buftype, 'input is a scratch buffer')
  eq(3, vim.api.nvim_win_get_height(input_win), 'input height')
  eq(true, vim.wo[input_win].winfixheight, 'input keeps its height')
  local cpos, ipos = vim.api.nvim_win_get_position(chat_win), vim.api.nvim_win_get_position(input_win)
  eq(cpos[2], ipos[2], 'input in the chat\'s column')
  ok(ipos[1] > cpos[1], 'input under the stream')
  eq(3, #vim.api.nvim_list_wins(), 'the other window, the chat and the input')
  -- The prefix is a mark on the first line, never text.
  eq({ '' }, input_lines(), 'the input starts empty')
  local marks = input.prefix_marks()
  eq(1, #marks, 'one prefix mark')
  eq({ 0, 0 }, { marks[1].row, marks[1].col }, 'the prefix marks the first line')
  if vim.fn.has('nvim-0.10') == 1 then
    eq({ { '> ', 'SobaPromptPrefix' } }, marks[1].virt_text, 'inline prefix')
  end
  -- Opening again reuses both windows.
  vim.cmd('wincmd p')
  vim.cmd('Soba chat')
  eq(3, #vim.api.nvim_list_wins(), 'no new window')
  eq(input_win, vim.api.nvim_get_current_win(), 'the input focused again')
end)

-- stub_run answers soba.run as the server would for the texts in
-- answers (a prompt starting turn t1 otherwise), records what was sent,
-- and returns the list and a function that restores client.execute.
local function stub_run(answers)
  local sent, orig = {}, client.execute
  client.execute = function(command, args, cb)
    sent[#sent + 1] = { command, args }
    local r = { kind = 'prompt', turnId = 't1', queued = false }
    if command == 'soba.run' and answers[args.text] then
      r = answers[args.text]
    end
    if cb then
      cb(nil, r, { id = 98 })
    end
  end
  return sent, function()
    client.execute = orig
  end
end

local run_budget = { effectiveTokens = 1200, hardLimit = 48808, softLimit = 39046, state = 'idle' }
local run_answers = {
  ['/session info'] = { kind = 'command', command = 'soba.session.info', result = { sessionId = 's1' },
    lines = { 'session s1 · 3 entries · leaf e_9 · /w/.soba/sessions/s1.jsonl' } },
  ['/budget'] = { kind = 'command', command = 'soba.budget', result = run_budget,
    lines = { 'budget · 1,200 / 48,808 tokens · soft 39,046 · estimated · auto-compact on · idle' } },
  ['/capsule'] = { kind = 'command', command = 'soba.capsule.show',
    result = { checkpointId = 'ck_1', markdown = '## Goal\nship' }, lines = { 'capsule ck_1:', '## Goal', 'ship' } },
  ['/help'] = { kind = 'command', lines = { 'SOBA slash commands:', '  /help  lists these commands and their usage' } },
  ['/nope now'] = { kind = 'command', lines = { 'unknown command /nope · /help lists the commands' },
    error = 'unknown command /nope · /help lists the commands' },
}

-- What the user types to the agent goes to the server as typed through
-- soba.run (docs/slash-commands.md): a prompt starts a turn and shows in
-- the chat; a slash command's lines are shown; an error is an error.
test('AskSendsWhatWasTypedThroughSobaRun', function()
  chat.clear()
  local sent, restore = stub_run(run_answers)
  local function ask(text)
    local seen, unnotify = H.capture_notify()
    local got = { 'not called' }
    commands.run('ask ' .. text, false, function(e, r)
      got = { e, r }
    end)
    unnotify()
    return got[1], got[2], seen
  end
  local ok_, err = pcall(function()
    -- A prompt goes through soba.run and starts a turn.
    local e, r = ask('add a test for the parser')
    eq({ { 'soba.run', { text = 'add a test for the parser' } } }, sent, 'a prompt is sent through soba.run')
    eq(nil, e, 'prompt outcome')
    eq('t1', r.turnId, 'done gets the turn')
    eq({ '', '> add a test for the parser' }, chat_tail(2), 'the chat shows the user\'s message')
    vim.cmd('silent! only')
    -- A slash command goes through soba.run as typed; its lines are shown.
    local before = #chat.lines()
    local seen
    e, r, seen = ask('/session info')
    eq({ 'soba.run', { text = '/session info' } }, sent[2], 'a slash command is sent through soba.run as typed')
    eq(2, #sent, 'and nothing else')
    eq(nil, e, 'slash command outcome')
    eq('soba.session.info', r.command, 'done gets the answer')
    eq('session s1 · 3 entries · leaf e_9 · /w/.soba/sessions/s1.jsonl', seen[1] and seen[1].msg, 'its line is shown')
    eq(before, #chat.lines(), 'a slash command adds no user message')
    _, _, seen = ask('/help')
    eq('SOBA slash commands:\n  /help  lists these commands and their usage', seen[1] and seen[1].msg,
      'several lines are one notification')
    -- A budget also updates the status line; a capsule opens as Markdown.
    ask('/budget')
    eq(1200, status.get(98).budget.effectiveTokens, '/budget updates the status line')
    ask('/capsule')
    eq({ '## Goal', 'ship' }, vim.api.nvim_buf_get_lines(0, 0, -1, false), '/capsule opens the capsule')
    match('soba://capsule/ck_1$', vim.api.nvim_buf_get_name(0), 'as its buffer')
    vim.cmd('only')
    -- A slash command typed wrong: its error goes to done, or is shown as
    -- an error when typed.
    e = ask('/nope now')
    eq('soba: unknown command /nope · /help lists the commands', e and e.message, 'the error goes to done')
    local unnotify
    seen, unnotify = H.capture_notify()
    vim.cmd('Soba ask /nope now')
    unnotify()
    eq(1, #seen, 'one notification')
    eq(vim.log.levels.ERROR, seen[1].level, 'shown as an error')
    eq('soba: unknown command /nope · /help lists the commands', seen[1].msg, 'the server\'s message')
  end)
  restore()
  if not ok_ then
    error(err, 0)
  end
end)

test('ChatInputSendsLikeAsk', function()
  chat.clear()
  local sent, restore = stub_run(run_answers)
  local seen, unnotify = H.capture_notify()
  local ok_, err = pcall(function()
    vim.cmd('Soba chat')
    -- Insert-mode <CR> is a line break; <C-s> sends the whole input.
    typed('ifix the test<CR>and the docs<C-s>')
    eq({ { 'soba.run', { text = 'fix the test\nand the docs' } } }, sent, '<C-s> sends both lines through soba.run')
    eq({ '' }, input_lines(), 'the input clears after sending')
    eq({ '', '> fix the test', '> and the docs' }, chat_tail(3), 'the chat shows the user\'s message')
    eq(input.buffer(), vim.api.nvim_get_current_buf(), 'the input keeps the focus')
    local prefix = input.prefix_marks()
    eq({ 0, 0 }, { prefix[1].row, prefix[1].col }, 'the prefix is back on the first line')
    -- `u` brings the text back; <CR> in normal mode sends it.
    undo()
    eq({ 'fix the test', 'and the docs' }, input_lines(), 'u undoes the clearing')
    typed('<CR>')
    eq({ 'soba.run', { text = 'fix the test\nand the docs' } }, sent[2], 'normal-mode <CR> sends')
    -- An empty input sends nothing.
    typed('<CR>')
    typed('o  <C-s>')
    eq(2, #sent, 'an empty input sends nothing')
    -- A slash command goes the same way, as typed; its lines are shown,
    -- and it is not a user message.
    local before = #chat.lines()
    typed('ggdG')
    typed('i/budget<Esc><CR>')
    eq({ 'soba.run', { text = '/budget' } }, sent[3], '/budget is sent through soba.run')
    match('^budget · 1,200 / 48,808 tokens', seen[#seen].msg, '/budget shows the lines soba.run answers')
    eq(before, #chat.lines(), 'a slash command adds no user message')
    -- A slash command typed wrong is an error notification.
    local n = #seen
    typed('i/nope now<C-s>')
    eq({ 'soba.run', { text = '/nope now' } }, sent[4], '/nope now is sent as typed')
    eq(n + 1, #seen, 'one notification')
    eq(vim.log.levels.ERROR, seen[#seen].level, 'shown as an error')
    match('unknown command /nope', seen[#seen].msg, 'the error names the command')
    undo()
    eq({ '/nope now' }, input_lines(), 'u brings a mistyped command back to fix')
    typed('ggdG')
  end)
  unnotify()
  restore()
  if not ok_ then
    error(err, 0)
  end
end)

-- The server may stream a turn before soba.run answers, and a queued
-- prompt's turn starts after the running one: the user's message stands
-- before its turn either way.
test('ChatUserMessageBeforeItsTurn', function()
  chat.clear()
  local clock = 0
  chat.clock = function()
    clock = clock + 1
    return string.format('10:0%d', clock)
  end
  feed('soba/event', { turnId = 't1', type = 'turn_start' })
  feed('soba/event', { turnId = 't1', type = 'text', delta = 'Reading' })
  chat.user_message('t1', 'read a.go', false)
  feed('soba/event', { turnId = 't1', type = 'text', delta = ' a.go.' })
  chat.user_message('t2', 'then b.go', true)
  eq({ '# SOBA chat', '', '', '> read a.go', '', '## 10:01 · read a.go', 'Reading a.go.' }, chat.lines(),
    'before the turn that started; a queued message waits')
  feed('soba/event', { turnId = 't1', type = 'turn_end', outcome = 'completed' })
  feed('soba/event', { turnId = 't2', type = 'turn_start' })
  chat.user_message('t3', 'and c.go', false)
  feed('soba/event', { turnId = 't3', type = 'turn_start' })
  eq({ '', '— completed', '', '> then b.go', '', '## 10:02 · then b.go', '', '', '> and c.go', '', '## 10:03 · and c.go', '' },
    chat_tail(12), 'a queued message when its turn starts; an answer before its turn at the end')
end)

test('ChatInputSendReportsToDone', function()
  local sent, restore = stub_execute({ kind = 'prompt', turnId = 't7' })
  local got = 'not called'
  -- Quotes are the user's text here, not :Soba's command-line quoting.
  vim.api.nvim_buf_set_lines(input.buffer(), 0, -1, false, { '"hello"' })
  eq(true, input.send(function(err, r)
    got = { err, r and r.turnId }
  end), 'send says it sent')
  eq({ nil, 't7' }, got, 'done gets the answer')
  eq({ { 'soba.run', { text = '"hello"' } } }, sent, 'the quotes are sent')
  eq(false, input.send(), 'nothing to send')
  restore()
end)

test('ChatAndInputCloseTogether', function()
  one_window()
  vim.cmd('Soba chat')
  vim.cmd('close')
  ok(vim.wait(1000, function()
    return chat.window() == nil
  end, 10), 'closing the input closes the chat')
  eq(1, #vim.api.nvim_list_wins(), 'the other window stays')
  vim.cmd('Soba chat')
  vim.api.nvim_win_close(chat.window(), false)
  ok(vim.wait(1000, function()
    return vim.fn.bufwinid(input.buffer()) == -1
  end, 10), 'closing the chat closes the input')
  eq(1, #vim.api.nvim_list_wins(), 'the other window stays')
  -- The last window cannot close: closing the other one around it is
  -- harmless.
  vim.cmd('Soba chat')
  vim.cmd('only')
  vim.wait(50)
  eq(1, #vim.api.nvim_list_wins(), ':only in the input leaves it')
  one_window()
end)

test('ChatInputKeysPrefixAndDisable', function()
  local function fresh_input(opts)
    one_window()
    vim.cmd('silent! bwipeout! ' .. input.buffer())
    config.current = config.resolve(opts)
  end
  local ok_, err = pcall(function()
    fresh_input({ chat = { input = { send_normal = false, send_insert = '<C-g>', prefix = 'soba› ', height = 5 } } })
    vim.cmd('Soba chat')
    eq(5, vim.api.nvim_win_get_height(0), 'input height')
    eq({}, vim.fn.maparg('<CR>', 'n', false, true), 'send_normal = false maps nothing')
    eq(1, vim.fn.maparg('<C-g>', 'i', false, true).buffer, 'send_insert maps <C-g> in the input')
    if vim.fn.has('nvim-0.10') == 1 then
      eq({ { 'soba› ', 'SobaPromptPrefix' } }, input.prefix_marks()[1].virt_text, 'custom prefix')
    end
    -- A later setup() with other keys applies at the next open, without a
    -- new buffer: the old keys are unmapped.
    one_window()
    config.current = config.resolve({ chat = { input = { send_normal = 'gs', send_insert = false } } })
    vim.cmd('Soba chat')
    eq(1, vim.fn.maparg('gs', 'n', false, true).buffer, 'the new send_normal is mapped in the same buffer')
    eq({}, vim.fn.maparg('<C-g>', 'i', false, true), 'the old send_insert is unmapped')
    fresh_input({ chat = { input = { prefix = '' } } })
    vim.cmd('Soba chat')
    eq({}, input.prefix_marks(), 'an empty prefix shows nothing')
    fresh_input({ chat = { input = { enabled = false } } })
    vim.cmd('Soba chat')
    eq(chat.buffer(), vim.api.nvim_get_current_buf(), 'without the input the chat is focused')
    eq(-1, vim.fn.bufwinid(input.buffer()), 'no input window')
  end)
  fresh_input({})
  if not ok_ then
    error(err, 0)
  end
end)

-- The summary of a tool result says what the call did; a failure says so
-- first; a summary on several lines shows its first (a buffer line holds
-- no newline).
test('ChatToolResultLines', function()
  for _, c in ipairs({
    { { ok = true, summary = 'lines 11-30 of 250' }, '← lines 11-30 of 250' },
    { { ok = true, summary = '12 matches in 3 files' }, '← 12 matches in 3 files' },
    { { ok = false, summary = 'exit 1 · 38 lines · FAIL ./x' }, '← failed · exit 1 · 38 lines · FAIL ./x' },
    { { ok = false, summary = 'denied: the user did not allow this bash call' }, '← failed · denied: the user did not allow this bash call' },
    { { ok = false, summary = 'first\nsecond' }, '← failed · first …' },
    { { ok = true }, '← done' },
    { { ok = false }, '← failed' },
  }) do
    local ev = vim.tbl_extend('force', { turnId = 't', type = 'tool_result', id = 'c' }, c[1])
    eq({ c[2], '' }, (chat.render(ev)), 'tool_result ' .. vim.inspect(c[1]))
  end
end)

test('ApprovalThroughUiSelect', function()
  local params = { type = 3, message = 'Run bash: go test ./...?', actions = {
    { title = 'Allow once' }, { title = 'Allow for session' }, { title = 'Deny' } } }
  local orig = vim.ui.select
  local offered
  vim.ui.select = function(items, opts, cb)
    offered = vim.tbl_map(opts.format_item, items)
    cb(items[2])
  end
  eq({ title = 'Allow for session' }, feed('window/showMessageRequest', params), 'chosen action')
  eq({ 'Allow once', 'Allow for session', 'Deny' }, offered, 'actions offered')
  vim.ui.select = function(_, _, cb)
    cb(nil)
  end
  eq(vim.NIL, feed('window/showMessageRequest', params), 'dismissed')
  -- A picker that answers later from the event loop.
  vim.ui.select = function(items, _, cb)
    vim.defer_fn(function()
      cb(items[3])
    end, 50)
  end
  eq({ title = 'Deny' }, feed('window/showMessageRequest', params), 'asynchronous picker')
  -- The allow for the session names its scope: offered and answered as the server wrote it.
  local scoped = { type = 2, message = 'SOBA wants to run write_file\nwrite a.go (1 bytes):\nx',
    actions = { { title = 'Deny' }, { title = 'Allow once' }, { title = 'Allow file edits for this session' } },
    soba = { tool = 'write_file', scope = 'file edits' } }
  vim.ui.select = function(items, opts, cb)
    offered = vim.tbl_map(opts.format_item, items)
    cb(items[3])
  end
  eq({ title = 'Allow file edits for this session' }, feed('window/showMessageRequest', scoped), 'scoped action chosen')
  eq({ 'Deny', 'Allow once', 'Allow file edits for this session' }, offered, 'the scope is in the action offered')
  vim.ui.select = orig
end)

-- R-W3: a write is shown as a diff split of the file against the proposed
-- content while the question is asked; the split closes after the answer.
test('ApprovalDiffSplit_RW3', function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. '/src', 'p')
  vim.fn.writefile({ 'package a' }, dir .. '/src/a.go')
  local cwd = vim.fn.getcwd()
  vim.cmd('cd ' .. vim.fn.fnameescape(dir))
  local tabs_before = #vim.api.nvim_list_tabpages()
  local seen
  local orig = vim.ui.select
  vim.ui.select = function(items, opts, cb)
    local wins = vim.api.nvim_tabpage_list_wins(0)
    local diffed, texts = 0, {}
    for _, w in ipairs(wins) do
      if vim.api.nvim_win_get_option(w, 'diff') then
        diffed = diffed + 1
      end
      texts[#texts + 1] = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), '|')
    end
    seen = { diffed = diffed, texts = texts, prompt = opts.prompt }
    cb(items[1])
  end
  local params = { type = 2, message = 'SOBA wants to run write_file\nwrite src/a.go (23 bytes):\npackage a\n\nfunc A() {}',
    actions = { { title = 'Deny' }, { title = 'Allow once' }, { title = 'Allow for session' } },
    soba = { tool = 'write_file', path = 'src/a.go', proposed = 'package a\n\nfunc A() {}\n' } }
  local answer = feed('window/showMessageRequest', params)
  vim.ui.select = orig
  vim.cmd('cd ' .. vim.fn.fnameescape(cwd))
  eq({ title = 'Deny' }, answer, 'answer')
  eq(2, seen and seen.diffed, 'two windows in diff mode while asked')
  table.sort(seen.texts)
  eq({ 'package a', 'package a||func A() {}' }, seen.texts, 'the file beside the proposed content')
  eq(tabs_before, #vim.api.nvim_list_tabpages(), 'the diff tab closed after the answer')
end)

test('BudgetText_RO1', function()
  eq('45,210', commands.thousands(45210), 'thousands')
  eq('999', commands.thousands(999), 'small')
  eq('1,000,000', commands.thousands(1000000), 'million')
  local text = commands.format_budget({ effectiveTokens = 31234, hardLimit = 48808, softLimit = 39046,
    contextWindow = 65000, maxOutputTokens = 8000, safetyReserveTokens = 8192, source = 'estimated',
    autoCompact = true, pending = { 'milestone' }, state = 'idle', lastCompaction = vim.NIL })
  eq('SOBA budget: 31,234 / 48,808 tokens (hard limit) · soft limit 39,046\n'
    .. 'window 65,000 − output 8,000 − reserve 8,192 · source estimated · auto-compact on · state idle\n'
    .. 'pending: milestone', text, 'budget text')
  local cached = commands.format_budget({ effectiveTokens = 31234, hardLimit = 48808, softLimit = 39046,
    contextWindow = 65000, maxOutputTokens = 8000, safetyReserveTokens = 8192, source = 'provider_usage',
    autoCompact = true, pending = {}, state = 'idle', lastCompaction = vim.NIL, cachedTokens = 30720 })
  eq('SOBA budget: 31,234 / 48,808 tokens (hard limit) · soft limit 39,046\n'
    .. 'window 65,000 − output 8,000 − reserve 8,192 · source provider_usage · auto-compact on · state idle\n'
    .. 'prompt cache: 30,720 tokens of the last request', cached, 'budget text with a prompt cache')
end)

test('HelpTags', function()
  local rtp = vim.fn.tempname()
  vim.fn.mkdir(rtp .. '/doc', 'p')
  vim.fn.writefile(vim.fn.readfile(plugin .. '/doc/soba.txt'), rtp .. '/doc/soba.txt')
  vim.cmd('helptags ' .. vim.fn.fnameescape(rtp .. '/doc'))
  vim.opt.rtp:prepend(rtp)
  for _, tag in ipairs({ 'soba', 'soba.txt', ':Soba', 'soba-config', 'soba-statusline', 'soba-lualine',
    'soba-commands', 'soba-autocmds', 'SobaBudget', 'SobaCompaction', 'soba-health', 'soba-progress',
    'soba-chat', 'soba-approvals', 'soba.setup()', 'soba.statusline()', 'soba-slash', 'soba-chat-input',
    'soba.input.send()', 'soba-lsp-config', 'soba-highlights', 'soba-trust' }) do
    vim.cmd('help ' .. tag)
    eq('help', vim.bo.buftype, 'help ' .. tag .. ' opens help')
    match('soba%.txt$', vim.api.nvim_buf_get_name(0), 'help ' .. tag .. ' file')
    vim.cmd('helpclose')
  end
  vim.cmd('help soba')
  local line = vim.api.nvim_get_current_line()
  ok(line:find('*soba*', 1, true), ':help soba lands on the *soba* tag, got ' .. line)
  vim.cmd('helpclose')
end)

test('HealthReportsMissingBinary', function()
  local seen, restore = H.capture_notify()
  soba.setup({ cmd = { '/nonexistent/soba-lsp' }, autostart = false })
  restore()
  match('cannot run "/nonexistent/soba%-lsp"', seen[1] and seen[1].msg, 'setup warns about the binary')
  vim.cmd('silent checkhealth soba')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  match('"/nonexistent/soba%-lsp" is not executable', text, 'health names the binary')
  match('no soba%-lsp client', text, 'health reports no connection')
  vim.cmd('tabclose')
end)

-- An error names its command once: the server's argument errors already
-- start with it ("soba.capsule.export: path is required").
test('ErrorsNameTheCommandOnce', function()
  for _, c in ipairs({
    { 'soba.capsule.export', 'soba.capsule.export: path is required', 'soba.capsule.export: path is required' },
    { 'soba.capsule.export', 'soba.capsule.export: soba.capsule.export: ck_1 is not a capsule',
      'soba.capsule.export: ck_1 is not a capsule' },
    { 'soba.session.rewind', 'no entry "x" in this session; soba.session.history lists the points to rewind to',
      'soba.session.rewind: no entry "x" in this session; soba.session.history lists the points to rewind to' },
    { 'soba.run', 'soba: soba.run: text must not be empty', 'soba.run: text must not be empty' },
  }) do
    local got = client.describe_error(c[1], { code = -32803, message = c[2] })
    eq(c[3], got, c[2])
    local _, n = got:gsub(c[1]:gsub('%.', '%%.'), '')
    eq(1, n, 'the command is named once in ' .. got)
  end
end)

-- A completed compaction is marked in the chat where it happened, with
-- its figures and how to read its capsule; other outcomes change nothing
-- the model sees and add no marker.
test('ChatMarksCompactions_RB3', function()
  chat.clear()
  client._reset()
  local _, restore = H.capture_notify()
  feed('soba/compaction', { phase = 'end', operationId = 'op_s', trigger = 'turn_complete', outcome = 'skipped',
    reason = 'nothing old enough to compact', line = 'Skipped: nothing old enough to compact · turn_complete' })
  eq({ '# SOBA chat', '' }, chat.lines(), 'a skipped compaction adds no marker')
  feed('soba/compaction', { phase = 'end', operationId = 'op_c', trigger = 'user', outcome = 'completed',
    tokensBefore = 13460, tokensAfter = 820, checkpointId = 'ck_21267c', quality = 'full',
    line = 'Compacted context · user · 13,460 → 820 tokens (94% reclaimed) · ck_21267c' })
  feed('soba/compaction', { phase = 'end', operationId = 'op_d', trigger = 'hard_limit', outcome = 'completed',
    tokensBefore = 9000, tokensAfter = 3000, checkpointId = 'ck_2', quality = 'degraded', line = 'x' })
  restore()
  eq({ '', '── Context compacted · 13,460 → 820 tokens · :Soba capsule show ck_21267c ──', '', '',
    '── Context compacted · 9,000 → 3,000 tokens · degraded (fallback capsule) · :Soba capsule show ck_2 ──', '' },
    chat_tail(6), 'markers in the chat')
end)

-- Turn headings say when and what was asked, never the turn's id; a long
-- or multi-line request is one clipped line.
test('ChatHeadingsByTimeAndRequest', function()
  eq('fix the login bug', chat.title('\n  fix   the login bug\nand more'), 'first line, whitespace collapsed')
  eq(60, vim.fn.strchars(chat.title(string.rep('é', 100))), 'clipped to 60 characters')
  match('…$', chat.title(string.rep('x', 100)), 'a clipped title ends in …')
  chat.clear()
  chat.clock = function()
    return '09:41'
  end
  chat.user_message('turn_55c2aa', 'add a test for the parser', false)
  feed('soba/event', { turnId = 'turn_55c2aa', type = 'turn_start' })
  local text = table.concat(chat.lines(), '\n')
  match('## 09:41 · add a test for the parser', text, 'heading')
  ok(not text:find('turn_55c2aa', 1, true), 'no turn id in the chat: ' .. text)
end)

-- The times and sizes of the pickers.
test('PickerTimesAndSizes', function()
  local now = commands.epoch('2026-12-03T06:40:12Z')
  ok(now, 'epoch reads RFC 3339')
  eq(now - 12, commands.epoch('2026-12-03T06:40:00.123456789Z'), 'fractions')
  eq(now, commands.epoch('2026-12-03T07:40:12+01:00'), 'offsets')
  for _, c in ipairs({
    { '2026-12-03T06:40:12Z', '0 s ago' }, { '2026-12-03T06:40:00Z', '12 s ago' },
    { '2026-12-03T06:35:12Z', '5 min ago' }, { '2026-12-03T03:40:12Z', '3 h ago' },
    { '2026-12-02T06:40:12Z', '1 day ago' }, { '2026-11-30T06:40:12Z', '3 days ago' },
  }) do
    eq(c[2], commands.ago(c[1], now), c[1])
  end
  eq('ck_21267c · handoff · user · full · 12 s ago', commands.capsule_item({ checkpointId = 'ck_21267c', title = 'handoff',
    trigger = 'user', quality = 'full', createdAt = '2026-12-03T06:40:00.123456789Z' }, now), 'a capsule, no nanoseconds')
  eq('ck_1 · milestone · 3 h ago', commands.capsule_item({ checkpointId = 'ck_1', title = '', trigger = 'milestone',
    quality = '', createdAt = '2026-12-03T03:40:12Z' }, now), 'a checkpoint without title or quality')
  eq('900 B', commands.size(900), 'bytes')
  eq('12 KB', commands.size(12 * 1024), 'kilobytes')
  eq('3.4 MB', commands.size(3.4 * 1024 * 1024), 'megabytes')
end)

-- :Soba rewind without an id: the requests and checkpoints of the current
-- path, newest first, through vim.ui.select; the confirmation says which
-- files keep their content; the rewind goes to the point's rewindTo.
test('RewindPicker_RT4', function()
  chat.clear()
  local now = os.time()
  local iso = function(secs_ago)
    return os.date('!%Y-%m-%dT%H:%M:%SZ', now - secs_ago)
  end
  local points = {
    { entryId = 'e2', kind = 'user', text = 'fix the login bug', createdAt = iso(300), rewindTo = 'e1',
      filesModifiedAfter = { 'auth/login.go', 'auth/login_test.go' } },
    { entryId = 'e5', kind = 'checkpoint', text = 'milestone: tests pass', createdAt = iso(20), rewindTo = 'e5',
      filesModifiedAfter = {} },
  }
  local sent, orig = {}, client.execute
  client.execute = function(command, args, cb)
    sent[#sent + 1] = { command, args }
    cb(nil, command == 'soba.session.history' and points or { leafId = 'e1' }, { id = 97 })
  end
  local asked, orig_select = {}, vim.ui.select
  local answers = { 2, 1 } -- the older point, then "Rewind"
  vim.ui.select = function(items, opts, on_choice)
    local shown = {}
    for _, it in ipairs(items) do
      shown[#shown + 1] = opts.format_item and opts.format_item(it) or it
    end
    asked[#asked + 1] = { prompt = opts.prompt, items = shown }
    on_choice(items[table.remove(answers, 1)])
  end
  local seen, restore = H.capture_notify()
  local result = 'not called'
  commands.run('rewind', false, function(err, r)
    result = { err, r }
  end)
  restore()
  vim.ui.select = orig_select
  client.execute = orig
  eq({ { 'soba.session.history', {} }, { 'soba.session.rewind', { entryId = 'e1' } } }, sent, 'commands sent')
  eq(nil, result[1], 'no error')
  match('^%d+ s ago · checkpoint milestone: tests pass$', asked[1].items[1], 'newest first, with its kind')
  match('^5 min ago · fix the login bug$', asked[1].items[2], 'a request')
  match('Files are not reverted: 2 modified after it keep their content: auth/login.go, auth/login_test.go',
    asked[2].prompt, 'the confirmation lists the files')
  eq({ 'Rewind', 'Cancel' }, asked[2].items, 'confirmation choices')
  match('not reverted: auth/login.go, auth/login_test.go', seen[1] and seen[1].msg, 'the result says it again')
  match('Rewound to before "fix the login bug"', table.concat(chat.lines(), '\n'), 'the chat marks the rewind')
  eq('Rewind to before checkpoint "milestone: tests pass"? The conversation after it leaves the path (it stays in the file). No file was modified after it.',
    commands.rewind_question(points[2]), 'no files')
end)

-- R-T4: a rewind to an id, typed in the chat (`/rewind <id>`) or given to
-- :Soba rewind, keeps the conversation on screen and marks where the path
-- continues from, naming the request or checkpoint when the id is a point.
test('RewindByIdKeepsChat_RT4', function()
  local points = {
    { entryId = 'e2', kind = 'user', text = 'fix the login bug', createdAt = '2025-01-01T00:00:00Z', rewindTo = 'e1',
      filesModifiedAfter = {} },
    { entryId = 'e5', kind = 'checkpoint', text = 'milestone: tests pass', createdAt = '2025-01-01T00:00:10Z',
      rewindTo = 'e5', filesModifiedAfter = {} },
  }
  for _, c in ipairs({
    { 'typed', '/rewind e1', '── Rewound to before "fix the login bug"; what follows continues from there ──' },
    { 'typed', '  /rewind e5 ', '── Rewound to checkpoint "milestone: tests pass"; what follows continues from there ──' },
    { 'typed', '/rewind e77', '── Rewound to e77; what follows continues from there ──' },
    { 'typed', '/rewind e2', '── Rewound to e2; what follows continues from there ──' },
    { ':Soba', 'e1', '── Rewound to before "fix the login bug"; what follows continues from there ──' },
    { ':Soba', 'e77', '── Rewound to e77; what follows continues from there ──' },
  }) do
    chat.clear()
    chat.append({ '> fix the login bug', '', 'Fixed it.' })
    local sent, orig = {}, client.execute
    client.execute = function(command, args, cb)
      sent[#sent + 1] = command
      if command == 'soba.session.history' then
        return cb(nil, points, { id = 97 })
      elseif command == 'soba.run' then
        return cb(nil, { kind = 'command', command = 'soba.session.rewind', result = { leafId = 'e9' },
          lines = { 'rewound · leaf e9' } }, { id = 97 })
      end
      cb(nil, { leafId = 'e9' }, { id = 97 })
    end
    local _, restore = H.capture_notify()
    local result = 'not called'
    local done = function(err, r)
      result = { err, r }
    end
    if c[1] == 'typed' then
      commands.ask(c[2], done)
    else
      commands.run('rewind ' .. c[2], false, done)
    end
    restore()
    client.execute = orig
    eq(nil, result[1], c[2] .. ': no error')
    eq({ 'soba.session.history', c[1] == 'typed' and 'soba.run' or 'soba.session.rewind' }, sent, c[2] .. ': commands sent')
    eq({ '# SOBA chat', '', '> fix the login bug', '', 'Fixed it.', '', c[3], '' }, chat.lines(), c[2] .. ': the chat kept')
  end
end)

-- :Soba session resume without an id: a new session or one of the
-- workspace's sessions by first request, time and size.
test('SessionPicker', function()
  local now = os.time()
  local list = {
    { sessionId = 's_new', title = 'add retries', updatedAt = os.date('!%Y-%m-%dT%H:%M:%SZ', now - 30), entries = 12, bytes = 20480 },
    { sessionId = 's_old', title = '', updatedAt = os.date('!%Y-%m-%dT%H:%M:%SZ', now - 7200), entries = 1, bytes = 300 },
  }
  local sent, orig, orig_sync = {}, client.execute, client.execute_sync
  client.execute = function(command, args, cb)
    sent[#sent + 1] = { command, args }
    cb(nil, command == 'soba.session.list' and list or { sessionId = args.sessionId }, { id = 97 })
  end
  client.execute_sync = function()
    return { sessionId = 's_new' }
  end
  local shown, orig_select = nil, vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    shown = {}
    for _, it in ipairs(items) do
      shown[#shown + 1] = opts.format_item(it)
    end
    on_choice(items[3])
  end
  local _, restore = H.capture_notify()
  commands.run('session resume', false, function() end)
  restore()
  vim.ui.select, client.execute, client.execute_sync = orig_select, orig, orig_sync
  eq('New session', shown[1], 'a new session first')
  match('^add retries · %d+ s ago · 12 entries · 20 KB · current$', shown[2], 'title, time, size, current')
  match('^%(no request yet%) · 2 h ago · 1 entry · 300 B$', shown[3], 'a session without a request, one entry')
  eq({ 'soba.session.resume', { sessionId = 's_old' } }, sent[#sent - 1], 'resumes the one picked')
  eq({ 'soba.session.transcript', { limit = 60 } }, sent[#sent], 'then shows its conversation, the newest page')
end)

-- Only the workspace's files reach the server (autostart): a file under a
-- root marker or the current directory, not a help buffer or a file
-- elsewhere.
test('AttachOnlyWorkspaceFiles', function()
  local ws = vim.fn.tempname()
  vim.fn.mkdir(ws .. '/.soba', 'p')
  vim.fn.writefile({ 'x' }, ws .. '/a.txt')
  local outside = vim.fn.tempname() .. '-outside.txt'
  vim.fn.writefile({ 'y' }, outside)
  local cwd = vim.fn.getcwd()
  vim.cmd('cd ' .. vim.fn.fnameescape(vim.fn.fnamemodify(outside, ':h') .. '/..'))
  vim.cmd('edit ' .. vim.fn.fnameescape(ws .. '/a.txt'))
  eq(true, client.wants(vim.api.nvim_get_current_buf()), 'a file of a workspace with .soba')
  vim.cmd('edit ' .. vim.fn.fnameescape(outside))
  local other = vim.fn.tempname()
  vim.fn.mkdir(other, 'p')
  vim.cmd('cd ' .. vim.fn.fnameescape(other))
  eq(false, client.wants(vim.api.nvim_get_current_buf()), 'a file outside any workspace and the current directory')
  vim.cmd('help soba')
  eq(false, client.wants(vim.api.nvim_get_current_buf()), 'a help buffer')
  vim.cmd('helpclose')
  local scratch = vim.api.nvim_create_buf(false, true)
  eq(false, client.wants(scratch), 'a scratch buffer')
  vim.cmd('cd ' .. vim.fn.fnameescape(cwd))
  vim.cmd('silent! %bwipeout!')
end)

-- The workspace's .soba/config.json is trusted the way Neovim trusts a
-- repository's files (SPEC R-W5): the :trust database through vim.secure
-- (0.9+), never with a prompt while a server starts; an edit untrusts it;
-- ++deny refuses it. Before 0.9 it is untrusted and `soba-lsp trust` is
-- the way.
test('TrustIsTheTrustDatabase_RW5', function()
  local trust = require('soba.trust')
  local root = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(root .. '/.soba', 'p')
  eq({ false, 'missing' }, { trust.check(root) }, 'no file: nothing to trust')
  local file = root .. '/.soba/config.json'
  vim.fn.writefile({ '{"model": {"baseURL": "http://127.0.0.1:9/v1"}}' }, file)
  local s = trust.settings({ model = { name = 'mine' }, workspaceTrusted = true }, root)
  eq({ model = { name = 'mine' }, workspaceTrusted = false }, s, 'user settings kept; workspaceTrusted is never the user table\'s')
  if not trust.supported() then
    eq({ false, 'unsupported' }, { trust.check(root) }, 'Neovim < 0.9')
    match('soba%-lsp trust ' .. vim.pesc(root), trust.how(root), 'the way to trust here')
    return
  end
  -- vim.secure.read would ask about a file it does not know: check must never get there.
  local prompted = 0
  local orig_confirm = vim.fn.confirm
  vim.fn.confirm = function()
    prompted = prompted + 1
    return 1
  end
  eq({ false, 'unknown' }, { trust.check(root) }, 'never trusted')
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  vim.cmd('trust')
  eq({ true, 'trusted' }, { trust.check(root) }, ':trust of the file')
  vim.fn.writefile({ '{"model": {"baseURL": "http://127.0.0.1:10/v1"}}' }, file)
  eq({ false, 'changed' }, { trust.check(root) }, 'an edit untrusts it')
  vim.cmd('edit!')
  vim.cmd('trust')
  eq({ true, 'trusted' }, { trust.check(root) }, 'trusted again')
  vim.cmd('trust ++deny')
  eq({ false, 'denied' }, { trust.check(root) }, ':trust ++deny')
  vim.cmd('trust ++remove')
  eq({ false, 'unknown' }, { trust.check(root) }, ':trust ++remove')
  vim.fn.confirm = orig_confirm
  eq(0, prompted, 'no prompt')
  match('run :trust in its buffer', trust.how(root), 'the way to trust here')
  vim.cmd('silent! %bwipeout!')
end)

-- :Soba trust: from another buffer it opens the file for review; in the
-- file's buffer it is :trust of it, and the server is told at once (a
-- didChangeConfiguration with workspaceTrusted). Before 0.9 it runs
-- `soba-lsp trust ROOT`.
test('SobaTrustCommand_RW5', function()
  local trust = require('soba.trust')
  local root = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(root .. '/.soba', 'p')
  local file = root .. '/.soba/config.json'
  vim.fn.writefile({ '{}' }, file)
  vim.fn.writefile({ 'x' }, root .. '/a.txt')
  local rechecked = {}
  local orig_recheck = client.recheck
  client.recheck = function(r)
    local t, why = trust.check(r)
    rechecked[#rechecked + 1] = { r, t }
    return t, why
  end
  local notes, restore = H.capture_notify()
  local function run(line)
    local got
    commands.run(line, false, function(err, r)
      got = { err = err, r = r }
    end)
    return got
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/a.txt'))
  if not trust.supported() then
    local fake = vim.fn.tempname()
    vim.fn.writefile({ '#!/bin/sh', 'echo "trusted $2/.soba/config.json ($1)"' }, fake)
    vim.fn.setfperm(fake, 'rwx------')
    local orig_cmd = config.current.cmd
    config.current.cmd = { fake }
    local got = run('trust')
    config.current.cmd = orig_cmd
    restore()
    client.recheck = orig_recheck
    eq(nil, got.err, 'no error')
    eq({ { root, false } }, rechecked, 'the server is told')
    match('trusted ' .. vim.pesc(file) .. ' %(trust%)', notes[#notes].msg, 'soba-lsp trust ROOT ran')
    vim.cmd('silent! %bwipeout!')
    return
  end
  local got = run('trust')
  eq({ trusted = false, opened = true, file = file }, got.r, 'opens the file to review')
  eq(vim.fn.resolve(file), vim.fn.resolve(vim.api.nvim_buf_get_name(0)), 'the file is the current buffer')
  eq(0, #rechecked, 'nothing trusted yet')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { '{"tools": {"approval": "auto"}}' })
  got = run('trust')
  match('write .* first', got.err and got.err.message or '', 'unsaved content is not trusted')
  vim.cmd('silent write')
  got = run('trust')
  restore()
  client.recheck = orig_recheck
  eq({ trusted = true, file = file }, got.r, 'trusted in its buffer')
  eq({ { root, true } }, rechecked, 'the server is told')
  eq({ true, 'trusted' }, { trust.check(root) }, 'in the :trust database')
  vim.cmd('silent! %bwipeout!')
end)

-- The status line and :Soba budget say when the server ignores the
-- repository's settings (repositorySettingsIgnored, R-W5).
test('StatusShowsIgnoredRepositorySettings_RW5', function()
  local b = budget(12400, 48808, 39046)
  b.display = '12.4k / 48.8k (25%)'
  b.repositorySettingsIgnored = { 'model.baseURL', 'tools.approval' }
  eq('SOBA 12.4k / 48.8k (25%) untrusted', status.format({ budget = b }, config.current.statusline), 'marker')
  match('repository settings ignored until trusted: model.baseURL, tools.approval %(:Soba trust%)',
    commands.format_budget(b), ':Soba budget')
  b.repositorySettingsIgnored = {}
  eq('SOBA 12.4k / 48.8k (25%)', status.format({ budget = b }, config.current.statusline), 'no marker when none')
end)
