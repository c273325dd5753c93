-- soba.slash: slash commands in the text the user sends to the agent
-- (docs/slash-commands.md). M.parse is a pure function of the text: it
-- decides whether the text goes to the model or names a :Soba subcommand,
-- and with which arguments; soba.commands runs the result, so a slash
-- command shows its result exactly as the :Soba subcommand does.
local M = {}

-- A parameter has the `name` of the :Soba subcommand's parameter it fills
-- (so the parsed arguments can be handed to that subcommand unchanged);
-- `rest` takes the rest of the line as free text; `choices` lists the only
-- accepted words. `flags` are unquoted words that set the :Soba bang.
local function leaf(run, about, params, flags)
  return { run = run, about = about, params = params or {}, flags = flags }
end

local function word(name, optional)
  return { name = name, optional = optional }
end

local function text(name, optional)
  return { name = name, rest = true, optional = optional }
end

-- M.commands: the slash commands in the order /help lists them. A command
-- with `sub` takes a subcommand word; `default` is the subcommand of the
-- bare command (`/capsule` is `/capsule show`).
M.commands = {
  { word = 'help', help = true, about = 'list these commands and their usage' },
  { word = 'budget', leaf = leaf('budget', 'show the context budget') },
  { word = 'compact', leaf = leaf('compact', 'compact the context now (trigger user)', { text('instructions', true) }) },
  { word = 'auto-compact', leaf = leaf('auto-compact', 'turn the soft triggers on or off',
    { { name = 'on|off', choices = { 'on', 'off' } } }) },
  { word = 'milestone', leaf = leaf('milestone', 'record a milestone checkpoint', { text('note') }) },
  { word = 'pivot', leaf = leaf('pivot', 'record a change of plan', { text('note') }) },
  { word = 'capsule', default = 'show', sub = {
    { word = 'show', leaf = leaf('capsule show', 'open a capsule (default: the newest): what the model now sees',
      { word('checkpointId', true) }) },
    { word = 'list', leaf = leaf('capsule list', 'list the checkpoints') },
    { word = 'create', leaf = leaf('capsule create', 'make a portable capsule of the session', { text('title') }) },
    { word = 'export', leaf = leaf('capsule export', 'write a capsule to a .capsule.md file',
      { word('checkpointId'), word('path') }, { '--overwrite' }) },
    { word = 'load', leaf = leaf('capsule load', 'load a .capsule.md into this session', { word('path') }) },
  } },
  { word = 'cancel', leaf = leaf('cancel', 'cancel the running turn or compaction') },
  { word = 'session', sub = {
    { word = 'new', leaf = leaf('session new', 'start a new session') },
    { word = 'info', leaf = leaf('session info', 'show the session id, files and leaf') },
    { word = 'list', leaf = leaf('session list', 'list the sessions') },
    { word = 'resume', leaf = leaf('session resume', 'resume a session (asks when the id is left out)',
      { word('sessionId', true) }) },
  } },
  { word = 'rewind', leaf = leaf('rewind', 'move the session back to an earlier entry', { word('entryId') }) },
}

local function contains(list, value)
  for _, v in ipairs(list or {}) do
    if v == value then
      return true
    end
  end
  return false
end

local function find(list, w)
  for _, c in ipairs(list) do
    if c.word == w then
      return c
    end
  end
end

-- usage renders `/capsule export <checkpointId> <path> [--overwrite]`.
local function usage(name, node)
  local words = { name }
  for _, p in ipairs(node.params or {}) do
    local shown = p.choices and table.concat(p.choices, '|') or p.name
    if p.rest then
      shown = shown .. '…'
    end
    if p.optional then
      words[#words + 1] = '[' .. shown .. ']'
    elseif p.choices then
      words[#words + 1] = shown
    else
      words[#words + 1] = '<' .. shown .. '>'
    end
  end
  for _, flag in ipairs(node.flags or {}) do
    words[#words + 1] = '[' .. flag .. ']'
  end
  return table.concat(words, ' ')
end

-- M.usages returns {usage, about} for every slash command, in order.
function M.usages()
  local out = {}
  for _, c in ipairs(M.commands) do
    local name = '/' .. c.word
    if c.help then
      out[#out + 1] = { name, c.about }
    elseif c.sub then
      if c.default then
        out[#out + 1] = { name, 'the same as ' .. name .. ' ' .. c.default }
      end
      for _, s in ipairs(c.sub) do
        out[#out + 1] = { usage(name .. ' ' .. s.word, s.leaf), s.leaf.about }
      end
    else
      out[#out + 1] = { usage(name, c.leaf), c.leaf.about }
    end
  end
  return out
end

-- chars counts the characters of a UTF-8 string (the usages hold "…").
local function chars(s)
  return select(2, s:gsub('[^\128-\191]', ''))
end

-- M.help returns the text /help shows.
function M.help()
  local rows = M.usages()
  local width = 0
  for _, r in ipairs(rows) do
    width = math.max(width, chars(r[1]))
  end
  local lines = { 'SOBA slash commands (start with // to send a leading / to the model):' }
  for _, r in ipairs(rows) do
    lines[#lines + 1] = '  ' .. r[1] .. string.rep(' ', width - chars(r[1]) + 2) .. r[2]
  end
  return table.concat(lines, '\n')
end

local function fail(msg)
  return { kind = 'error', message = 'soba: ' .. msg }
end

local function subcommand_usages(name, c)
  local out = {}
  if c.default then
    out[#out + 1] = name
  end
  for _, s in ipairs(c.sub) do
    out[#out + 1] = usage(name .. ' ' .. s.word, s.leaf)
  end
  return table.concat(out, ' | ')
end

local function trim(s)
  return (s:gsub('^%s+', ''):gsub('%s+$', ''))
end

-- read_word reads the argument starting at s[i] (not a blank): a run of
-- non-blanks, or a double-quoted word that may hold blanks and \" for a
-- quote. It returns the word, whether it was quoted, and the index after
-- it; or nil and what is wrong.
local function read_word(s, i)
  if s:sub(i, i) ~= '"' then
    local j = s:find('%s', i) or (#s + 1)
    return s:sub(i, j - 1), false, j
  end
  local out, k = {}, i + 1
  while k <= #s do
    local c = s:sub(k, k)
    if c == '\\' and s:sub(k + 1, k + 1) == '"' then
      out[#out + 1] = '"'
      k = k + 2
    elseif c == '"' then
      if k < #s and not s:sub(k + 1, k + 1):match('%s') then
        return nil, 'a closing quote must end the word'
      end
      return table.concat(out), true, k + 1
    else
      out[#out + 1] = c
      k = k + 1
    end
  end
  return nil, 'a quote is not closed'
end

-- free_text is a free-text last argument: the rest of the line, without
-- the one pair of quotes around it when it is one quoted word.
local function free_text(s)
  s = trim(s)
  if s:sub(1, 1) == '"' then
    local value, _, after = read_word(s, 1)
    if value and after > #s then
      return value
    end
  end
  return s
end

-- parse_args fills node's parameters from s; it returns args and bang, or
-- nil and an error message naming the command and its usage.
local function parse_args(name, node, s)
  local params, args, bang = node.params, {}, false
  local function bad(what)
    return nil, string.format('%s: %s; usage: %s', name, what, usage(name, node))
  end
  -- set stores a parameter's value; false when a required one is empty.
  local function set(p, value)
    if value ~= '' then
      args[p.name] = value
      return true
    end
    return p.optional
  end
  local i, n = 1, 1
  while true do
    i = s:find('%S', i) or (#s + 1)
    local p = params[n]
    if p and p.rest then
      if not set(p, free_text(s:sub(i))) then
        return bad('missing <' .. p.name .. '>')
      end
      n = n + 1
      break
    end
    if i > #s then
      break
    end
    local value, quoted, after = read_word(s, i)
    if not value then
      return bad(quoted) -- read_word's second result says what is wrong
    end
    i = after
    if not quoted and contains(node.flags, value) then
      bang = true
    elseif not p then
      return bad('unexpected "' .. value .. '"')
    else
      if p.choices and not contains(p.choices, value) then
        return bad(string.format('expected %s, got "%s"', table.concat(p.choices, ' or '), value))
      end
      if not set(p, value) then
        return bad('missing <' .. p.name .. '>')
      end
      n = n + 1
    end
  end
  for k = n, #params do
    if not params[k].optional then
      local p = params[k]
      return bad('missing ' .. (p.choices and table.concat(p.choices, '|') or ('<' .. p.name .. '>')))
    end
  end
  return args, bang
end

local function command_words()
  local out = {}
  for _, c in ipairs(M.commands) do
    out[#out + 1] = '/' .. c.word
  end
  return table.concat(out, ' ')
end

-- M.parse reads the text the user sends to the agent and returns what to
-- do with it, one of:
--   { kind = 'prompt', text = … }    send text to the model (soba.prompt)
--   { kind = 'command', path = 'capsule export', args = {…}, bang = … }
--                                    run that :Soba subcommand
--   { kind = 'help', text = … }      show the list of slash commands
--   { kind = 'error', message = … }  show the message; send nothing
-- It uses no Neovim API and has no side effects.
function M.parse(input)
  input = input or ''
  local lead, body = input:match('^(%s*)(.*)$')
  if body:sub(1, 2) == '//' then
    return { kind = 'prompt', text = lead .. body:sub(2) }
  end
  local w, after = body:match('^/([a-z%-]+)(.*)$')
  if not w or (after ~= '' and not after:match('^%s')) then
    return { kind = 'prompt', text = input }
  end
  local c = find(M.commands, w)
  local name = '/' .. w
  if not c then
    return fail(string.format('unknown command %s; commands: %s (start with // to send a leading / to the model)',
      name, command_words()))
  end
  if c.help then
    if trim(after) ~= '' then
      return fail(string.format('%s: unexpected "%s"; usage: %s', name, trim(after), name))
    end
    return { kind = 'help', text = M.help() }
  end
  local node = c.leaf
  if c.sub then
    local s, rest = after:match('^%s*(%S+)(.*)$')
    if not s and c.default then
      s, rest = c.default, ''
    end
    if not s then
      return fail(string.format('%s needs a subcommand; usage: %s', name, subcommand_usages(name, c)))
    end
    local sc = find(c.sub, s)
    if not sc then
      return fail(string.format('unknown command %s %s; usage: %s', name, s, subcommand_usages(name, c)))
    end
    name, node, after = name .. ' ' .. s, sc.leaf, rest
  end
  local args, bang = parse_args(name, node, after)
  if not args then
    return fail(bang)
  end
  return { kind = 'command', path = node.run, args = args, bang = bang }
end

return M
