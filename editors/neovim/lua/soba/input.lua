-- soba.input: the chat's prompt input (|soba-chat-input|), a small scratch
-- buffer in a window under the stream. The whole buffer is the prompt, so
-- it may span lines and be edited with every normal command; a send key
-- hands its text to the function :Soba ask runs and empties the buffer.
-- The input window and the chat window are a pair: closing one closes the
-- other.
local config = require('soba.config')

local M = {}

local NAME = 'soba://prompt'
local ns = vim.api.nvim_create_namespace('soba_prompt')
local bufnr = nil
-- pair = { chat = winid, input = winid } of the windows opened together.
local pair = {}
local group = nil

-- M.text returns what the input's lines send: the lines joined with
-- newlines, without the blanks and empty lines around them ('' when there
-- is nothing to send). Blanks inside are kept as typed.
function M.text(lines)
  local text = table.concat(lines or {}, '\n')
  return (text:gsub('^%s+', ''):gsub('%s+$', ''))
end

-- M.sign_text returns the prefix as a sign: the sign column holds at most
-- two cells, so blanks are dropped and a longer prefix is cut to its first
-- two characters.
function M.sign_text(prefix)
  local s = prefix:gsub('%s', '')
  local n = vim.fn.strchars(s)
  while n > 0 and vim.fn.strdisplaywidth(s) > 2 do
    n = n - 1
    s = vim.fn.strcharpart(s, 0, n)
  end
  return s
end

-- show_prefix marks the first line with the prefix. Virtual text is never
-- part of the text, so what is sent is exactly what was typed. Neovim 0.10
-- shows virtual text inline before the line; older versions reject the
-- 'inline' position, and there the sign column shows it.
local function show_prefix(b)
  vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
  local prefix = config.current.chat.input.prefix
  if prefix == '' then
    return
  end
  vim.cmd('highlight default link SobaPromptPrefix Special')
  -- right_gravity = false keeps the mark on the first line, before text
  -- typed or restored at column 0.
  local inline = pcall(vim.api.nvim_buf_set_extmark, b, ns, 0, 0, {
    virt_text = { { prefix, 'SobaPromptPrefix' } },
    virt_text_pos = 'inline',
    right_gravity = false,
  })
  local sign = M.sign_text(prefix)
  if not inline and sign ~= '' then
    vim.api.nvim_buf_set_extmark(b, ns, 0, 0,
      { sign_text = sign, sign_hl_group = 'SobaPromptPrefix', right_gravity = false })
  end
end

-- M.prefix_marks returns the prefix marks of the input as
-- { {virt_text or sign_text} } (tests).
function M.prefix_marks()
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(M.buffer(), ns, 0, -1, { details = true })) do
    local d = m[4] or {}
    out[#out + 1] = { row = m[2], col = m[3], virt_text = d.virt_text, sign_text = d.sign_text }
  end
  return out
end

-- mapped is what map_send_keys last set: the buffer and the key per mode.
local mapped = { buf = nil, n = false, i = false }

-- map_send_keys maps the configured send keys in b, replacing those of an
-- earlier configuration, so a later setup() applies at the next open.
local function map_send_keys(b)
  local keys = config.current.chat.input
  local want = { n = keys.send_normal or false, i = keys.send_insert or false }
  local send = function()
    M.send()
  end
  for _, mode in ipairs({ 'n', 'i' }) do
    local old = mapped.buf == b and mapped[mode]
    if old and old ~= want[mode] then
      pcall(vim.keymap.del, mode, old, { buffer = b })
    end
    if want[mode] then
      vim.keymap.set(mode, want[mode], send, { buffer = b, desc = 'soba: send the prompt' })
    end
  end
  mapped = { buf = b, n = want.n, i = want.i }
end

-- M.buffer returns the input buffer, creating it when needed.
function M.buffer()
  if bufnr and vim.api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
  bufnr = require('soba.chat').scratch(NAME)
  -- Its own filetype, so FileType sobaprompt can add mappings; prompts
  -- are Markdown to the model, so they are highlighted as such.
  vim.bo[bufnr].filetype = 'sobaprompt'
  vim.bo[bufnr].syntax = 'markdown'
  map_send_keys(bufnr)
  show_prefix(bufnr)
  -- Edits such as `dd` or an undo may move the mark off the first line.
  vim.api.nvim_create_autocmd('TextChanged', {
    buffer = bufnr,
    callback = function(ev)
      show_prefix(ev.buf)
    end,
  })
  return bufnr
end

-- M.send sends the input's text as `:Soba ask` does (through soba.run,
-- slash commands included) and empties the input; `u` brings the text
-- back. An empty input sends nothing. done(err, result), when given, gets the outcome
-- instead of an error notification (tests).
function M.send(done)
  local b = M.buffer()
  local text = M.text(vim.api.nvim_buf_get_lines(b, 0, -1, false))
  if text == '' then
    return false
  end
  vim.api.nvim_buf_call(b, function()
    -- Setting 'undolevels' closes the undo block, so that `u` undoes the
    -- emptying alone, even when insert mode typed the text.
    vim.cmd('let &l:undolevels = &l:undolevels')
  end)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { '' })
  show_prefix(b)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == b then
      vim.api.nvim_win_set_cursor(win, { 1, 0 })
    end
  end
  require('soba.commands').ask(text, done)
  return true
end

local function valid(win)
  return win and vim.api.nvim_win_is_valid(win)
end

-- close_partner closes the other window of the pair when one is closed.
-- It runs scheduled, as the layout must not change inside WinClosed, and
-- only if that window still shows its buffer: the user may have put
-- another one there since. The last window of Neovim cannot close; it then
-- stays.
local function close_partner(closed)
  local other, shows
  if closed == pair.chat then
    other, shows = pair.input, M.buffer()
  elseif closed == pair.input then
    other, shows = pair.chat, require('soba.chat').buffer()
  else
    return
  end
  pair = {}
  vim.schedule(function()
    if valid(other) and vim.api.nvim_win_get_buf(other) == shows then
      pcall(vim.api.nvim_win_close, other, false)
    end
  end)
end

local function watch_pair()
  if group then
    return
  end
  group = vim.api.nvim_create_augroup('soba_chat_input', { clear = true })
  vim.api.nvim_create_autocmd('WinClosed', {
    group = group,
    callback = function(ev)
      close_partner(tonumber(ev.match))
    end,
  })
end

-- M.window returns the input window paired with chat_win, or nil.
function M.window(chat_win)
  if pair.chat == chat_win and valid(pair.input) and vim.api.nvim_win_get_buf(pair.input) == M.buffer() then
    return pair.input
  end
end

-- M.open opens the input under chat_win (or returns the one already
-- there) and returns its window, leaving the current window unchanged.
function M.open(chat_win)
  local win = M.window(chat_win)
  if win then
    return win
  end
  local b = M.buffer()
  map_send_keys(b)
  local from = vim.api.nvim_get_current_win()
  vim.api.nvim_set_current_win(chat_win)
  vim.cmd('belowright ' .. config.current.chat.input.height .. 'split')
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, b)
  -- The input keeps its height when the stream's window is resized.
  vim.wo[win].winfixheight = true
  vim.api.nvim_set_current_win(from)
  watch_pair()
  pair = { chat = chat_win, input = win }
  return win
end

return M
