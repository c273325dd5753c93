-- soba.chat: the agent's stream (soba/event) written into a scratch buffer.
-- The buffer is created on the first event and kept hidden until :Soba chat
-- opens it, so nothing said before the window opened is lost.
local M = {}

local bufnr = nil
local NAME = 'soba://chat'
-- The user's message goes before its turn's stream: the server may stream
-- the turn before soba.run answers, and a queued prompt's turn starts
-- after the running one. headers[turnId] is an extmark on the first line
-- of a turn's header, until the user's message is put before it;
-- waiting[turnId] is the text of a queued prompt whose turn has not
-- started; shown[turnId] is set when the message came before its turn.
local ns = vim.api.nvim_create_namespace('soba_chat_turns')
local headers, waiting, shown = {}, {}, {}
-- titles[turnId] is the request of a turn, for its heading; started[turnId]
-- the time its heading shows.
local titles, started = {}, {}
-- The model's thinking is kept apart from its answer (R-C9): its lines start
-- with M.THINK and the chat windows fold them (M.fold_window), so a block
-- shows as one closed line until opened with zo. thinking is set while the
-- last lines written are thinking; answer_at is an extmark where the current
-- model call's answer text began, so text that turns out to have been
-- thinking (a `moved` event) can be taken out of the answer.
M.THINK = '┊ '
local thinking = false
local answer_at = nil

-- M.clock is the time a turn's heading shows (tests replace it).
M.clock = function()
  return os.date('%H:%M')
end

-- M.title is how a request reads in a heading: its first line that is not
-- blank, whitespace collapsed, at most 60 characters.
function M.title(text)
  for _, l in ipairs(vim.split(text or '', '\n', { plain = true })) do
    local t = vim.trim((l:gsub('%s+', ' ')))
    if t ~= '' then
      if vim.fn.strchars(t) > 60 then
        t = vim.fn.strcharpart(t, 0, 59) .. '…'
      end
      return t
    end
  end
  return ''
end

-- heading is a turn's heading: when it started and what was asked, never
-- its id.
local function heading(id)
  started[id] = started[id] or M.clock()
  local t = titles[id]
  if t and t ~= '' then
    return '## ' .. started[id] .. ' · ' .. t
  end
  return '## ' .. started[id]
end

-- M.scratch creates a named buffer that is no file, survives being hidden
-- and has no swap file: the chat's stream and its input.
function M.scratch(name)
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(b, name)
  vim.bo[b].buftype = 'nofile'
  vim.bo[b].bufhidden = 'hide'
  vim.bo[b].swapfile = false
  return b
end

-- M.buffer returns the chat buffer, creating it when needed.
function M.buffer()
  if bufnr and vim.api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
  bufnr = M.scratch(NAME)
  vim.bo[bufnr].filetype = 'markdown'
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, { '# SOBA chat', '' })
  vim.bo[bufnr].modifiable = false
  vim.api.nvim_create_autocmd('BufWinEnter', {
    buffer = bufnr,
    callback = function()
      M.fold_window(vim.api.nvim_get_current_win())
    end,
  })
  return bufnr
end

-- M.foldexpr is the chat windows' 'foldexpr': thinking lines fold.
M.foldexpr = "getline(v:lnum)=~'^" .. M.THINK .. "'?1:0"

-- M.fold_window makes win fold the chat's thinking, closed.
function M.fold_window(win)
  if not (win and vim.api.nvim_win_is_valid(win)) or vim.api.nvim_win_get_buf(win) ~= bufnr then
    return
  end
  vim.wo[win].foldmethod = 'expr'
  vim.wo[win].foldexpr = M.foldexpr
  vim.wo[win].foldlevel = 0
  vim.wo[win].foldenable = true
end

local function edit(fn)
  local b = M.buffer()
  vim.bo[b].modifiable = true
  fn(b)
  vim.bo[b].modifiable = false
  -- Keep the end in view in every window showing the chat.
  local last = vim.api.nvim_buf_line_count(b)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == b then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

-- M.append adds whole lines at the end of the chat.
function M.append(lines)
  edit(function(b)
    vim.api.nvim_buf_set_lines(b, -1, -1, false, lines)
  end)
end

-- M.append_text continues the last line with streamed text, splitting on
-- newlines.
function M.append_text(text)
  if text == nil or text == '' then
    return
  end
  edit(function(b)
    local n = vim.api.nvim_buf_line_count(b)
    local last = vim.api.nvim_buf_get_lines(b, n - 1, n, false)[1] or ''
    local pieces = vim.split(last .. text, '\n', { plain = true })
    vim.api.nvim_buf_set_lines(b, n - 1, n, false, pieces)
  end)
end

local function str(v)
  if v == nil or v == vim.NIL then
    return ''
  end
  if type(v) == 'table' then
    local json = vim.json and vim.json.encode(v) or vim.fn.json_encode(v)
    -- vim.json escapes every "/", which makes paths hard to read.
    return (json:gsub('\\/', '/'))
  end
  return tostring(v)
end

-- thinking_lines are the chat lines of a piece of thinking, each marked.
local function thinking_pieces(text)
  local out = {}
  for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
    out[#out + 1] = M.THINK .. l
  end
  return out
end

-- M.append_thinking writes a piece of thinking: a new block (its first
-- line says what it is) or the continuation of the open one.
function M.append_thinking(text)
  if text == nil or text == '' then
    return
  end
  edit(function(b)
    local pieces = thinking_pieces(text)
    local n = vim.api.nvim_buf_line_count(b)
    if not thinking then
      local last = vim.api.nvim_buf_get_lines(b, n - 1, n, false)[1] or ''
      local head = { M.THINK .. 'Thinking (zo opens, zc closes)' }
      if last ~= '' then
        table.insert(head, 1, '')
      end
      vim.api.nvim_buf_set_lines(b, -1, -1, false, head)
      vim.api.nvim_buf_set_lines(b, -1, -1, false, pieces)
    else
      local last = vim.api.nvim_buf_get_lines(b, n - 1, n, false)[1] or ''
      pieces[1] = last .. text:match('^[^\n]*')
      vim.api.nvim_buf_set_lines(b, n - 1, n, false, pieces)
    end
  end)
  thinking = true
end

-- M.take_back_answer removes the current model call's answer text: it
-- turned out to be thinking (the server's template had opened the block).
function M.take_back_answer()
  if not answer_at then
    return
  end
  local b = M.buffer()
  local pos = vim.api.nvim_buf_get_extmark_by_id(b, ns, answer_at, {})
  vim.api.nvim_buf_del_extmark(b, ns, answer_at)
  answer_at = nil
  if not pos[1] then
    return
  end
  edit(function()
    local row, col = pos[1], pos[2]
    local first = vim.api.nvim_buf_get_lines(b, row, row + 1, false)[1] or ''
    vim.api.nvim_buf_set_lines(b, row, -1, false, { first:sub(1, col) })
  end)
end

-- M.render turns one soba/event into the lines it adds; `text` events
-- return (nil, delta) because they continue the current line.
function M.render(ev)
  local t = ev.type
  if t == 'text' then
    return nil, str(ev.delta)
  elseif t == 'turn_start' then
    return { '', heading(str(ev.turnId)), '' }
  elseif t == 'tool_call' then
    return { '', string.format('→ %s %s', str(ev.name), str(ev.arguments)) }
  elseif t == 'tool_result' then
    -- The summary says what the call did ("lines 11-30 of 250", "12
    -- matches in 3 files", "exit 1 · 38 lines · FAIL ./x"); only a failure
    -- needs a word of its own. A buffer line holds no newline: one line.
    local summary = vim.split(str(ev.summary), '\n', { plain = true })
    local line = summary[1] .. (#summary > 1 and ' …' or '')
    if ev.ok ~= true then
      line = line == '' and 'failed' or ('failed · ' .. line)
    elseif line == '' then
      line = 'done'
    end
    return { '← ' .. line, '' }
  elseif t == 'turn_end' then
    local line = '— ' .. str(ev.outcome)
    if ev.error and ev.error ~= vim.NIL and ev.error ~= '' then
      line = line .. ': ' .. str(ev.error)
    end
    return { '', line }
  elseif t == 'queued' then
    local title = titles[str(ev.turnId)]
    return { '', title and ('(queued: ' .. title .. ')') or '(queued: runs after the current turn)' }
  end
  return { '[' .. str(t) .. '] ' .. str(ev) }
end

-- M.on_event handles a soba/event notification.
function M.on_event(_, ev)
  if type(ev) ~= 'table' then
    return
  end
  if ev.type == 'thinking' then
    if ev.moved == true then
      M.take_back_answer()
    end
    M.append_thinking(str(ev.delta))
    return
  end
  local lines, text = M.render(ev)
  if ev.type ~= 'text' then
    answer_at = nil
  elseif not answer_at then
    local b = M.buffer()
    if thinking then
      M.append({ '', '' }) -- the answer starts below the thinking, after a blank line
    end
    local n = vim.api.nvim_buf_line_count(b)
    local last = vim.api.nvim_buf_get_lines(b, n - 1, n, false)[1] or ''
    -- Left gravity: the answer streamed at the mark goes after it.
    answer_at = vim.api.nvim_buf_set_extmark(b, ns, n - 1, #last, { right_gravity = false })
  end
  thinking = false
  if ev.type == 'turn_start' then
    local id = str(ev.turnId)
    if waiting[id] then
      M.append(M.user_lines(waiting[id]))
      waiting[id], shown[id] = nil, true
    end
    local b = M.buffer()
    local first = vim.api.nvim_buf_line_count(b)
    M.append(lines)
    if shown[id] then
      shown[id] = nil
    else
      headers[id] = vim.api.nvim_buf_set_extmark(b, ns, first, 0, {})
    end
  elseif lines then
    M.append(lines)
  else
    M.append_text(text)
  end
  -- A failed turn is shown by the server itself (window/showMessage), for
  -- every client: the chat only writes it down.
end

-- M.marker is the chat line of a completed compaction: where the model's
-- view of the conversation was replaced by a capsule, and how to read it.
function M.marker(r)
  local thousands = require('soba.commands').thousands
  local line = string.format('── Context compacted · %s → %s tokens', thousands(r.tokensBefore), thousands(r.tokensAfter))
  if r.quality == 'degraded' then
    line = line .. ' · degraded (fallback capsule)'
  end
  local ck = str(r.checkpointId)
  if ck ~= '' then
    line = line .. ' · :Soba capsule show ' .. ck
  end
  return line .. ' ──'
end

-- M.on_compaction marks a completed compaction in the chat, at the place
-- it happened (its end notification); other outcomes change nothing the
-- model sees and are only notified.
function M.on_compaction(ev)
  if type(ev) ~= 'table' or ev.phase ~= 'end' or ev.outcome ~= 'completed' then
    return
  end
  M.append({ '', M.marker(ev), '' })
end

-- M.user_lines returns the lines the user's message adds to the chat: a
-- Markdown quote, one "> " line per line of the text.
function M.user_lines(text)
  local lines = { '' }
  for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
    lines[#lines + 1] = '> ' .. l
  end
  return lines
end

-- M.user_message shows what the user sent as the prompt of turn turn_id:
-- before that turn's stream when it has started, when the turn starts if
-- the prompt is queued, else at the end.
function M.user_message(turn_id, text, queued)
  local id = str(turn_id)
  titles[id] = M.title(text)
  local mark = headers[id]
  headers[id] = nil
  if mark then
    local b = M.buffer()
    local pos = vim.api.nvim_buf_get_extmark_by_id(b, ns, mark, {})
    vim.api.nvim_buf_del_extmark(b, ns, mark)
    if pos[1] then
      return edit(function()
        local quote = M.user_lines(text)
        vim.api.nvim_buf_set_lines(b, pos[1], pos[1], false, quote)
        -- The heading (after its blank line) now names the request.
        local at = pos[1] + #quote + 1
        vim.api.nvim_buf_set_lines(b, at, at + 1, false, { heading(id) })
      end)
    end
  elseif queued then
    waiting[id] = text
    return
  end
  shown[id] = true
  M.append(M.user_lines(text))
end

-- A reopened session's conversation (soba.session.transcript) is shown in
-- pages: the newest when the session is resumed, older ones when the
-- cursor reaches the top of the chat. older is the cursor of the next older
-- page ('' when the chat starts at the session's beginning); loading is set
-- while one is asked for.
local older, loading = '', false
local OLDER_LINE = '↑ Earlier messages: move to the top of the chat to load them'

-- M.page_entries is how many session entries a page covers.
M.page_entries = 60

local APPROVAL = { once = 'allowed once', session = 'allowed for the session', denied = 'denied by you' }

-- M.history_lines returns the lines of soba.session.transcript items, root
-- first: a user message as a quote, the answer as Markdown, a tool call and
-- its result (with the user's approval), a compaction marker, a checkpoint,
-- a failed inference.
function M.history_lines(items)
  local thousands = require('soba.commands').thousands
  local out = {}
  local function add(lines)
    for _, l in ipairs(lines) do
      out[#out + 1] = l
    end
  end
  for _, it in ipairs(items or {}) do
    local kind = str(it.kind)
    if kind == 'user' then
      add(M.user_lines(str(it.text)))
    elseif kind == 'assistant' then
      add({ '' })
      add(vim.split(str(it.text), '\n', { plain = true }))
    elseif kind == 'tool' and type(it.tool) == 'table' then
      local t = it.tool
      add({ '', string.format('→ %s %s', str(t.name), str(t.arguments)) })
      local summary = vim.split(str(t.summary), '\n', { plain = true })
      local line = summary[1] .. (#summary > 1 and ' …' or '')
      if t.ok == nil or t.ok == vim.NIL then
        line = 'no result recorded'
      elseif t.ok ~= true then
        line = line == '' and 'failed' or ('failed · ' .. line)
      elseif line == '' then
        line = 'done'
      end
      local asked = APPROVAL[str(t.approval)]
      add({ '← ' .. line .. (asked and (' · ' .. asked) or '') })
    elseif kind == 'compaction' then
      local c = type(it.compaction) == 'table' and it.compaction or {}
      local line = '── Earlier history compacted'
      if c.tokensBefore and c.tokensBefore ~= vim.NIL then
        line = line .. string.format(' · %s → %s tokens', thousands(c.tokensBefore), thousands(c.tokensAfter))
      end
      if str(c.checkpointId) ~= '' then
        line = line .. ' · View capsule: :Soba capsule show ' .. str(c.checkpointId)
      end
      add({ '', line .. ' ──' })
    elseif kind == 'checkpoint' then
      add({ '', '· ' .. str(it.text) })
    elseif kind == 'error' then
      add({ '', '— failed: ' .. str(it.text) })
    end
  end
  return out
end

-- M.show_history puts a page of soba.session.transcript in the chat: the
-- newest page replaces what the chat showed (older == false); an older
-- page goes on top, the cursor staying on the line it was on.
function M.show_history(page, is_older)
  if type(page) ~= 'table' then
    return
  end
  local lines = M.history_lines(page.items)
  local b = M.buffer()
  vim.bo[b].modifiable = true
  local top = vim.api.nvim_buf_get_lines(b, 0, 2, false)
  local has_older = top[2] == OLDER_LINE
  if not is_older then
    vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
    headers, waiting, shown, titles, started = {}, {}, {}, {}, {}
    vim.api.nvim_buf_set_lines(b, 0, -1, false, { '# SOBA chat' })
    vim.api.nvim_buf_set_lines(b, -1, -1, false, lines)
    vim.api.nvim_buf_set_lines(b, -1, -1, false, { '' })
    has_older = false
  else
    -- Below the heading (and the line that says there is more), above what was shown.
    vim.api.nvim_buf_set_lines(b, 1, has_older and 2 or 1, false, lines)
  end
  older, loading = str(page.before), false
  if older ~= '' then
    vim.api.nvim_buf_set_lines(b, 1, 1, false, { OLDER_LINE })
  end
  vim.bo[b].modifiable = false
  local added = #lines + (older ~= '' and 1 or 0) - (has_older and 1 or 0)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == b then
      if is_older then
        local cur = vim.api.nvim_win_get_cursor(win)
        pcall(vim.api.nvim_win_set_cursor, win, { cur[1] + added, cur[2] })
      else
        vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(b), 0 })
      end
    end
  end
end

-- M.has_older reports whether older pages are left to load.
function M.has_older()
  return older ~= ''
end

-- M.load_history shows the newest page of the current session's
-- conversation (after a resume); done(err) is called when it is shown.
function M.load_history(done)
  require('soba.client').execute('soba.session.transcript', { limit = M.page_entries }, function(err, page)
    if not err then
      M.show_history(page, false)
    end
    if done then
      done(err)
    end
  end)
end

-- M.load_older puts the next older page on top of the chat; nothing when
-- none is left or one is being loaded.
function M.load_older(done)
  if older == '' or loading then
    return done and done(nil)
  end
  loading = true
  require('soba.client').execute('soba.session.transcript', { before = older, limit = M.page_entries }, function(err, page)
    if err then
      -- The session moved on (a rewind, another session): nothing older of this chat.
      older, loading = '', false
      require('soba.client').notify('soba: earlier messages could not be loaded: ' .. str(err.message), vim.log.levels.WARN)
    else
      M.show_history(page, true)
    end
    if done then
      done(err)
    end
  end)
end

-- Moving the cursor to the top of the chat loads the next older page.
vim.api.nvim_create_autocmd('CursorMoved', {
  group = vim.api.nvim_create_augroup('soba_chat_history', { clear = true }),
  callback = function(a)
    if bufnr and a.buf == bufnr and older ~= '' and not loading and vim.api.nvim_win_get_cursor(0)[1] <= 2 then
      M.load_older()
    end
  end,
})

-- M.window returns a window showing the chat buffer (or nil).
function M.window()
  local b = M.buffer()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == b then
      return win
    end
  end
end

-- M.open shows the chat buffer in a window (reusing one that shows it)
-- with the prompt input under it (|soba-chat-input|), and focuses the
-- input; without the input, the chat window.
function M.open()
  local b = M.buffer()
  local win = M.window()
  if not win then
    vim.cmd(require('soba.config').current.chat.open)
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, b)
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(b), 0 })
  end
  M.fold_window(win)
  if require('soba.config').current.chat.input.enabled then
    win = require('soba.input').open(win)
  end
  vim.api.nvim_set_current_win(win)
  return b
end

-- M.clear empties the chat buffer.
function M.clear()
  local b = M.buffer()
  vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
  headers, waiting, shown, titles, started = {}, {}, {}, {}, {}
  thinking, answer_at = false, nil
  older, loading = '', false
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { '# SOBA chat', '' })
  vim.bo[b].modifiable = false
end

-- M.lines returns the chat's text (tests).
function M.lines()
  return vim.api.nvim_buf_get_lines(M.buffer(), 0, -1, false)
end

return M
