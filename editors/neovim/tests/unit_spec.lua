-- Unit tests that need no server: status-line formatting, the notification
-- handlers fed with recorded notifications, :Soba parsing and completion,
-- the mapping of subcommands onto PROTOCOL.md commands, slash commands in
-- :Soba ask (docs/slash-commands.md), approvals, help and health.
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
    { 'below soft limit', { budget = budget(31234, 48808, 39046) }, 'SOBA 31.2k/48.8k' },
    { 'one below soft limit', { budget = budget(39045, 48808, 39046) }, 'SOBA 39.0k/48.8k' },
    { 'at soft limit', { budget = budget(39046, 48808, 39046) }, 'SOBA 39.0k/48.8k!' },
    { 'past soft limit', { budget = budget(45210, 48808, 39046) }, 'SOBA 45.2k/48.8k!' },
    { 'barrier with percentage', { budget = budget(45210, 48808, 39046, 'compacting'),
      compaction = { phase = 'progress', percentage = 82 } }, 'SOBA 45.2k/48.8k! compacting 82%' },
    { 'barrier state without notification', { budget = budget(31234, 48808, 39046, 'compacting') },
      'SOBA 31.2k/48.8k compacting' },
    { 'barrier before any budget', { compaction = { phase = 'start', percentage = 0 } }, 'SOBA compacting 0%' },
    { 'small counts', { budget = budget(950, 48808, 39046) }, 'SOBA 950/48.8k' },
  }) do
    eq(c[3], status.format(c[2], opts), c[1])
  end
  local custom = { prefix = 'S', soft_marker = ' ▲', compacting = '⟳' }
  eq('S 45.2k/48.8k ▲ ⟳ 5%', status.format({ budget = budget(45210, 48808, 39046),
    compaction = { percentage = 5 } }, custom), 'custom statusline options')
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
    'SOBA 31.2k/48.8k',
    'SOBA 45.2k/48.8k!',
    'SOBA 45.2k/48.8k! compacting 0%',
    'SOBA 45.2k/48.8k! compacting 0%',
    'SOBA 45.2k/48.8k! compacting 40%',
    'SOBA 45.2k/48.8k! compacting 82%',
    -- the end of a completed barrier shows its measured size at once
    'SOBA 14.9k/48.8k',
    'SOBA 14.9k/48.8k',
  }, lines, 'status line after each notification')
  eq(4, #budgets, 'User SobaBudget count')
  eq(4, #compactions, 'User SobaCompaction count')
  eq('SOBA 45.2k/48.8k! compacting 82%', compactions[3].line, 'status line seen by a SobaCompaction listener')
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
    { 'rewind', 'missing {entryId}; usage: :Soba rewind {entryId}' },
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
    sent = { cmd, args }
    cb(nil, { checkpointId = 'ck_1', path = '/tmp/x', markdown = '## Goal\nship', cancelled = false,
      effectiveTokens = 1, hardLimit = 2, softLimit = 1, sessionId = 's_1' }, { id = 99 })
  end
  local _, restore = H.capture_notify()
  for _, c in ipairs({
    { 'ask hello', 'soba.prompt', { text = 'hello' } },
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
    'session' },
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

local slash = require('soba.slash')

local function cmd(path, args, bang)
  return { kind = 'command', path = path, args = args or {}, bang = bang or false }
end

local function prompt(text)
  return { kind = 'prompt', text = text }
end

-- One case per rule of docs/slash-commands.md "Grammar".
test('SlashGrammarRules', function()
  for _, c in ipairs({
    { 'a slash and a command word is a command', '/budget', cmd('budget') },
    { 'leading blanks are skipped', '  \t/budget', cmd('budget') },
    { 'the word ends at a blank', '/compact keep notes', cmd('compact', { instructions = 'keep notes' }) },
    { 'the word ends at a tab', '/compact\tkeep', cmd('compact', { instructions = 'keep' }) },
    { 'command words hold "-"', '/auto-compact off', cmd('auto-compact', { ['on|off'] = 'off' }) },
    { 'a path is a prompt', '/usr/bin is missing', prompt('/usr/bin is missing') },
    { 'a file path is a prompt', '/tmp/x.go fails', prompt('/tmp/x.go fails') },
    { 'a comment is a prompt', '/*comment*/', prompt('/*comment*/') },
    { 'a slash and a blank is a prompt', '/ x', prompt('/ x') },
    { 'a lone slash is a prompt', '/', prompt('/') },
    { 'upper case is not a command word', '/Budget', prompt('/Budget') },
    { 'a digit does not end a command word', '/budget2', prompt('/budget2') },
    { 'text without a leading slash is a prompt', 'fix a/b /budget', prompt('fix a/b /budget') },
    { 'a prompt is sent as typed', '  plain text  ', prompt('  plain text  ') },
    { '// sends the rest with one / removed', '//compact means…', prompt('/compact means…') },
    { '// before an unknown word', '//nope', prompt('/nope') },
    { '// after leading blanks', '  //x', prompt('  /x') },
    { '/// keeps two', '///x', prompt('//x') },
    { 'words are separated by blanks', '/capsule   export  ck_1   a.md',
      cmd('capsule export', { checkpointId = 'ck_1', path = 'a.md' }) },
    { 'a quoted word holds blanks', '/capsule export ck_1 "my notes/x.md"',
      cmd('capsule export', { checkpointId = 'ck_1', path = 'my notes/x.md' }) },
    { '\\" inside quotes is a quote', '/capsule load "a \\"b\\".md"', cmd('capsule load', { path = 'a "b".md' }) },
    { 'quotes inside an unquoted word are kept', '/capsule load a"b', cmd('capsule load', { path = 'a"b' }) },
    { 'free text is the rest of the line', '/milestone parser done, lexer next',
      cmd('milestone', { note = 'parser done, lexer next' }) },
    { 'free text loses one pair of surrounding quotes', '/capsule create "handoff auth work"',
      cmd('capsule create', { title = 'handoff auth work' }) },
    { 'quoted free text reads \\"', '/pivot "say \\"no\\" to globals"', cmd('pivot', { note = 'say "no" to globals' }) },
    { 'quotes inside free text are kept', '/compact keep "x" and "y"',
      cmd('compact', { instructions = 'keep "x" and "y"' }) },
    { 'free text that only starts and ends with quotes is kept', '/pivot "a" or "b"', cmd('pivot', { note = '"a" or "b"' }) },
    { 'trailing blanks are not arguments', '/budget  ', cmd('budget') },
  }) do
    eq(c[3], slash.parse(c[2]), c[1] .. ' (' .. c[2] .. ')')
  end
end)

-- Every command of docs/slash-commands.md "Commands" and the :Soba
-- subcommand it runs.
test('SlashCommandsMapToSobaSubcommands', function()
  for _, c in ipairs({
    { '/budget', cmd('budget') },
    { '/compact', cmd('compact') },
    { '/compact keep the API notes', cmd('compact', { instructions = 'keep the API notes' }) },
    { '/auto-compact on', cmd('auto-compact', { ['on|off'] = 'on' }) },
    { '/auto-compact off', cmd('auto-compact', { ['on|off'] = 'off' }) },
    { '/milestone tests pass', cmd('milestone', { note = 'tests pass' }) },
    { '/pivot use sqlite', cmd('pivot', { note = 'use sqlite' }) },
    { '/capsule', cmd('capsule show') },
    { '/capsule show', cmd('capsule show') },
    { '/capsule show ck_1', cmd('capsule show', { checkpointId = 'ck_1' }) },
    { '/capsule list', cmd('capsule list') },
    { '/capsule create handoff auth work', cmd('capsule create', { title = 'handoff auth work' }) },
    { '/capsule export ck_abc ./handoff.capsule.md',
      cmd('capsule export', { checkpointId = 'ck_abc', path = './handoff.capsule.md' }) },
    { '/capsule export ck_abc ./handoff.capsule.md --overwrite',
      cmd('capsule export', { checkpointId = 'ck_abc', path = './handoff.capsule.md' }, true) },
    { '/capsule export ck_abc "--overwrite"', cmd('capsule export', { checkpointId = 'ck_abc', path = '--overwrite' }) },
    { '/capsule load ./handoff.capsule.md', cmd('capsule load', { path = './handoff.capsule.md' }) },
    { '/cancel', cmd('cancel') },
    { '/session new', cmd('session new') },
    { '/session info', cmd('session info') },
    { '/session list', cmd('session list') },
    { '/session resume', cmd('session resume') },
    { '/session resume s_1', cmd('session resume', { sessionId = 's_1' }) },
    { '/rewind e_42', cmd('rewind', { entryId = 'e_42' }) },
  }) do
    eq(c[2], slash.parse(c[1]), c[1])
  end
  local help = slash.parse('/help')
  eq('help', help.kind, '/help')
  for _, u in ipairs({ '/budget', '/compact [instructions…]', '/auto-compact on|off', '/milestone <note…>',
    '/pivot <note…>', '/capsule show [checkpointId]', '/capsule list', '/capsule create <title…>',
    '/capsule export <checkpointId> <path> [--overwrite]', '/capsule load <path>', '/cancel', '/session new',
    '/session info', '/session list', '/session resume [sessionId]', '/rewind <entryId>', '/help' }) do
    ok(help.text:find('\n  ' .. u .. ' ', 1, true), '/help lists ' .. u .. ':\n' .. help.text)
  end
end)

test('SlashErrorsNameCommandAndUsage', function()
  for _, c in ipairs({
    { '/nope', 'unknown command /nope; commands: /help /budget' },
    { '/compat keep notes', 'unknown command /compat' },
    { '/capsule burn', 'unknown command /capsule burn; usage: /capsule | /capsule show [checkpointId] |' },
    { '/session', '/session needs a subcommand; usage: /session new | /session info' },
    { '/session old', 'unknown command /session old; usage: /session new' },
    { '/help me', '/help: unexpected "me"; usage: /help' },
    { '/budget now', '/budget: unexpected "now"; usage: /budget' },
    { '/cancel it', '/cancel: unexpected "it"; usage: /cancel' },
    { '/auto-compact', '/auto-compact: missing on|off; usage: /auto-compact on|off' },
    { '/auto-compact maybe', '/auto-compact: expected on or off, got "maybe"; usage: /auto-compact on|off' },
    { '/auto-compact on off', '/auto-compact: unexpected "off"' },
    { '/milestone', '/milestone: missing <note>; usage: /milestone <note…>' },
    { '/pivot ""', '/pivot: missing <note>; usage: /pivot <note…>' },
    { '/capsule create', '/capsule create: missing <title>; usage: /capsule create <title…>' },
    { '/capsule show ck_1 ck_2', '/capsule show: unexpected "ck_2"; usage: /capsule show [checkpointId]' },
    { '/capsule list all', '/capsule list: unexpected "all"' },
    { '/capsule export', '/capsule export: missing <checkpointId>; usage: /capsule export <checkpointId> <path> [--overwrite]' },
    { '/capsule export ck_1', '/capsule export: missing <path>; usage: /capsule export <checkpointId> <path> [--overwrite]' },
    { '/capsule export ck_1 --overwrite', '/capsule export: missing <path>' },
    { '/capsule export ck_1 a.md --force', '/capsule export: unexpected "--force"' },
    { '/capsule export ck_1 my notes.md', '/capsule export: unexpected "notes.md"' },
    { '/capsule load', '/capsule load: missing <path>; usage: /capsule load <path>' },
    { '/capsule load ""', '/capsule load: missing <path>' },
    { '/capsule load "a.md', '/capsule load: a quote is not closed; usage: /capsule load <path>' },
    { '/capsule load "a"b', '/capsule load: a closing quote must end the word' },
    { '/session new now', '/session new: unexpected "now"; usage: /session new' },
    { '/session resume a b', '/session resume: unexpected "b"; usage: /session resume [sessionId]' },
    { '/rewind', '/rewind: missing <entryId>; usage: /rewind <entryId>' },
    { '/rewind e_1 e_2', '/rewind: unexpected "e_2"' },
  }) do
    local r = slash.parse(c[1])
    eq('error', r.kind, c[1] .. ' is an error')
    ok(r.message:find('soba: ' .. c[2], 1, true),
      string.format('error for %q is %q, want it to contain %q', c[1], r.message, c[2]))
  end
end)

-- The parsed arguments go to the :Soba subcommands unchanged, so each
-- slash command must name an existing subcommand and its parameters.
test('SlashCommandsAreSobaSubcommands', function()
  local function check(name, leaf)
    local node = { sub = commands.spec }
    for w in leaf.run:gmatch('%S+') do
      node = node.sub and node.sub[w]
    end
    ok(node and node.run, name .. ' runs :Soba ' .. leaf.run)
    local names = {}
    for _, p in ipairs(node.params or {}) do
      names[p.name] = true
    end
    for _, p in ipairs(leaf.params) do
      ok(names[p.name], name .. ': :Soba ' .. leaf.run .. ' has a parameter ' .. p.name)
    end
  end
  for _, c in ipairs(slash.commands) do
    if c.leaf then
      check('/' .. c.word, c.leaf)
    end
    for _, s in ipairs(c.sub or {}) do
      check('/' .. c.word .. ' ' .. s.word, s.leaf)
    end
  end
end)

test('AskRunsSlashCommandsInsteadOfPrompts', function()
  local sent = {}
  local orig = client.execute
  client.execute = function(command, args, cb)
    sent[#sent + 1] = { command, args }
    cb(nil, { checkpointId = 'ck_1', path = '/tmp/x', markdown = '## Goal\nship', effectiveTokens = 1,
      hardLimit = 2, softLimit = 1, contextWindow = 3, turnId = 't1', leafId = 'e_9' }, { id = 98 })
  end
  local function ask(text)
    sent = {}
    local seen, restore = H.capture_notify()
    local err = 'not called'
    commands.run('ask ' .. text, false, function(e)
      err = e
    end)
    restore()
    return sent, err, seen
  end
  for _, c in ipairs({
    { '/budget', { { 'soba.budget', {} } } },
    { '  /compact keep notes', { { 'soba.compact', { instructions = 'keep notes' } } } },
    { '/capsule export ck_1 "a b.md" --overwrite',
      { { 'soba.capsule.export', { checkpointId = 'ck_1', path = 'a b.md', overwrite = true } } } },
    { '/capsule create "handoff auth work"', { { 'soba.capsule.create', { title = 'handoff auth work' } } } },
    { '/rewind e_9', { { 'soba.session.rewind', { entryId = 'e_9' } } } },
    { '//compact x', { { 'soba.prompt', { text = '/compact x' } } } },
    { '/usr/bin is missing', { { 'soba.prompt', { text = '/usr/bin is missing' } } } },
  }) do
    local got, err = ask(c[1])
    eq(nil, err, ':Soba ask ' .. c[1] .. ' outcome')
    eq(c[2], got, ':Soba ask ' .. c[1] .. ' sends')
  end
  -- The result shows as :Soba budget shows it.
  local _, _, via_slash = ask('/budget')
  local direct, restore = H.capture_notify()
  commands.run('budget', false)
  restore()
  match('^SOBA budget: ', direct[1] and direct[1].msg, ':Soba budget shows the budget')
  eq(direct, via_slash, '/budget shows what :Soba budget shows')
  -- /capsule opens the newest capsule like :Soba capsule show.
  eq({ { 'soba.capsule.show', {} } }, ask('/capsule'), '/capsule sends')
  eq({ '## Goal', 'ship' }, vim.api.nvim_buf_get_lines(0, 0, -1, false), '/capsule opened the capsule')
  vim.cmd('only')
  -- Help and errors send nothing.
  local none, err, seen = ask('/help')
  eq({}, none, '/help sends nothing')
  eq(nil, err, '/help outcome')
  match('^SOBA slash commands', seen[1] and seen[1].msg, '/help shows the list')
  none, err = ask('/capsule export ck_1')
  eq({}, none, 'a bad slash command sends nothing')
  match('usage: /capsule export <checkpointId> <path> %[%-%-overwrite%]', err and err.message, 'error to done')
  -- Without a callback (typed :Soba ask) the error is an ERROR notification.
  sent = {}
  seen, restore = H.capture_notify()
  vim.cmd('Soba ask /nope now')
  restore()
  eq({}, sent, ':Soba ask /nope sends nothing')
  eq(1, #seen, 'one notification')
  eq(vim.log.levels.ERROR, seen[1].level, 'shown as an error')
  match('unknown command /nope', seen[1].msg, 'error names the command')
  client.execute = orig
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
  eq({ '# SOBA chat', '', '', '## Turn t1', 'Reading the file.', 'Done', '', '→ read_file {"path":"a.go"}',
    '← ok 12 lines', '', '', '— completed', '', '(queued: turn t2)', '',
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

test('ChatInputSendsLikeAsk', function()
  chat.clear()
  local sent, restore = stub_execute({ turnId = 't1', effectiveTokens = 1, hardLimit = 2, softLimit = 1,
    contextWindow = 3 })
  local seen, unnotify = H.capture_notify()
  local ok_, err = pcall(function()
    vim.cmd('Soba chat')
    -- Insert-mode <CR> is a line break; <C-s> sends the whole input.
    typed('ifix the test<CR>and the docs<C-s>')
    eq({ { 'soba.prompt', { text = 'fix the test\nand the docs' } } }, sent, '<C-s> sends both lines')
    eq({ '' }, input_lines(), 'the input clears after sending')
    eq({ '', '> fix the test', '> and the docs' }, chat_tail(3), 'the chat shows the user\'s message')
    eq(input.buffer(), vim.api.nvim_get_current_buf(), 'the input keeps the focus')
    local prefix = input.prefix_marks()
    eq({ 0, 0 }, { prefix[1].row, prefix[1].col }, 'the prefix is back on the first line')
    -- `u` brings the text back; <CR> in normal mode sends it.
    undo()
    eq({ 'fix the test', 'and the docs' }, input_lines(), 'u undoes the clearing')
    typed('<CR>')
    eq({ 'soba.prompt', { text = 'fix the test\nand the docs' } }, sent[2], 'normal-mode <CR> sends')
    -- An empty input sends nothing.
    typed('<CR>')
    typed('o  <C-s>')
    eq(2, #sent, 'an empty input sends nothing')
    -- A slash command runs as :Soba ask runs it: /budget is soba.budget,
    -- shown as :Soba budget shows it, and not a user message.
    local before = #chat.lines()
    typed('ggdG')
    typed('i/budget<Esc><CR>')
    eq({ 'soba.budget', {} }, sent[3], '/budget sends soba.budget')
    eq(3, #sent, 'and no soba.prompt')
    match('^SOBA budget: ', seen[#seen].msg, '/budget shows the budget')
    eq(before, #chat.lines(), 'a slash command adds no user message')
    typed('i//compact x<C-s>')
    eq({ 'soba.prompt', { text = '/compact x' } }, sent[4], '// sends the text with one / removed')
    -- A bad slash command sends nothing and is an error notification.
    local n = #seen
    typed('i/nope now<C-s>')
    eq(4, #sent, '/nope sends nothing')
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

test('ChatInputSendReportsToDone', function()
  local sent, restore = stub_execute({ turnId = 't7' })
  local got = 'not called'
  -- Quotes are the user's text here, not :Soba's command-line quoting.
  vim.api.nvim_buf_set_lines(input.buffer(), 0, -1, false, { '"hello"' })
  eq(true, input.send(function(err, r)
    got = { err, r and r.turnId }
  end), 'send says it sent')
  eq({ nil, 't7' }, got, 'done gets the answer')
  eq({ { 'soba.prompt', { text = '"hello"' } } }, sent, 'the quotes are sent')
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
  vim.ui.select = orig
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
    'soba.input.send()' }) do
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

-- The shared cases of docs/slash-commands.md that both front ends must pass
-- (testdata/slash-commands.json; the VS Code unit tests read it too).
test('SharedSlashCommandCases', function()
  local file = plugin .. '/../../testdata/slash-commands.json'
  local cases = vim.fn.json_decode(table.concat(vim.fn.readfile(file), '\n')).cases
  ok(#cases > 20, 'the shared table has cases')
  local sent
  local orig = client.execute
  client.execute = function(command, args, cb)
    sent[#sent + 1] = { command = command, args = args }
    cb(nil, { checkpointId = 'ck_1', path = '/tmp/x', markdown = '## Goal\nship', effectiveTokens = 1,
      hardLimit = 2, softLimit = 1, contextWindow = 3, turnId = 't1', leafId = 'e_9', sessionId = 's1' }, { id = 97 })
  end
  for _, c in ipairs(cases) do
    sent = {}
    local err = 'not called'
    local _, restore = H.capture_notify()
    require('soba.commands').dispatch('ask', { text = c.text }, false, function(e)
      err = e
    end)
    restore()
    vim.cmd('silent! only')
    if c.error then
      eq({}, sent, c.text .. ': sends nothing')
      ok(err ~= nil and err ~= 'not called', c.text .. ': is an error')
    elseif c.prompt ~= nil then
      eq({ command = 'soba.prompt', args = { text = c.prompt } }, sent[1], c.text .. ': prompt')
    else
      eq(c.sends, sent[1], c.text .. ': sends')
    end
  end
  client.execute = orig
end)
