-- soba.config: the plugin's options, their defaults, and how a user's table
-- is merged over them. Everything here is documented in doc/soba.txt
-- (|soba-config|); keep the two in step.
local M = {}

-- M.defaults are the options used when setup() is given none.
M.defaults = {
  -- Command that starts the language server (PROTOCOL.md "Process").
  cmd = { 'soba-lsp' },
  -- Sent as LSP initializationOptions: the same shape as .soba/config.json
  -- (model, summaryModel, compaction, tools, sessionDir).
  settings = {},
  -- Files or directories that mark a workspace root, searched upward from
  -- the buffer's file; the current directory is used when none is found.
  root_markers = { '.soba', '.git' },
  -- Attach every normal file buffer under a root to that root's server.
  autostart = true,
  -- Milliseconds a completion waits for soba.capsule.list/soba.session.list.
  completion_timeout_ms = 1500,
  statusline = {
    prefix = 'SOBA',
    -- Appended once the effective tokens reach the soft limit (R-S2).
    soft_marker = '!',
    -- Shown with the percentage while a compaction barrier runs (R-B3).
    compacting = 'compacting',
    -- Appended while the server ignores settings of the workspace's
    -- untrusted .soba/config.json (|soba-trust|).
    untrusted = 'untrusted',
  },
  -- Show result lines (R-B3) with vim.notify.
  notify_results = true,
  chat = {
    -- Command that opens the chat buffer window (:Soba chat).
    open = 'botright vsplit',
    -- Open the chat buffer when :Soba ask sends a prompt.
    open_on_ask = true,
    -- The prompt input: a small scratch buffer under the stream, opened
    -- and closed with it (|soba-chat-input|).
    input = {
      -- Open the input with the chat; false keeps the stream read-only.
      enabled = true,
      -- Lines of the input window.
      height = 3,
      -- Shown before the first line of the input, never sent.
      prefix = '> ',
      -- Keys that send the whole input; false leaves that mode unmapped.
      -- Insert-mode <CR> stays a line break, so a prompt can span lines.
      send_normal = '<CR>',
      send_insert = '<C-s>',
    },
  },
  -- Command that opens a window for :Soba capsule show.
  capsule_open = 'botright split',
  -- Called as on_attach(client, bufnr) after a buffer attaches.
  on_attach = nil,
}

-- is_list tells a non-empty list from a map; an empty table counts as a map
-- so that setup({}) keeps every default.
local function is_list(t)
  if next(t) == nil then
    return false
  end
  -- vim.islist (0.10+) replaced vim.tbl_islist, which warns from 0.12.
  if vim.islist then
    return vim.islist(t)
  end
  return vim.tbl_islist(t)
end

-- merge returns a deep copy of base with every key of override replacing
-- the base key; lists are replaced whole, not merged index by index.
local function merge(base, override)
  if override == nil then
    return vim.deepcopy(base)
  end
  if type(base) ~= 'table' or type(override) ~= 'table' or is_list(base) or is_list(override) then
    return vim.deepcopy(override)
  end
  local out = vim.deepcopy(base)
  for k, v in pairs(override) do
    out[k] = merge(out[k], v)
  end
  return out
end

-- unknown_key returns the dotted name of the first key of opts that has no
-- default, looking into nested option tables (chat.input.…), so that a typo
-- fails at setup() instead of being ignored. `settings` is the server's and
-- is checked there; on_attach has no default but is an option.
local function unknown_key(opts, defaults, path)
  for k, v in pairs(opts) do
    local name = path .. tostring(k)
    local d = defaults[k]
    if d == nil and name ~= 'on_attach' then
      return name
    end
    if name ~= 'settings' and type(d) == 'table' and not is_list(d) and type(v) == 'table' then
      local bad = unknown_key(v, d, name .. '.')
      if bad then
        return bad
      end
    end
  end
end

local function positive_integer(v)
  return type(v) == 'number' and v >= 1 and math.floor(v) == v
end

-- A send key is a key such as '<CR>', or false for no mapping.
local function key_or_false(v)
  return v == false or (type(v) == 'string' and v ~= '')
end

-- M.resolve merges opts over the defaults and checks the types, so that a
-- typo fails at setup() with the option's name rather than later.
function M.resolve(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then
    error('soba.setup: options must be a table, got ' .. type(opts), 2)
  end
  local bad = unknown_key(opts, M.defaults, '')
  if bad then
    error('soba.setup: unknown option "' .. bad .. '"', 2)
  end
  local c = merge(M.defaults, opts)
  if type(c.cmd) == 'string' then
    c.cmd = { c.cmd }
  end
  -- Tables are checked before their fields are read.
  vim.validate({
    cmd = { c.cmd, 'table' },
    settings = { c.settings, 'table' },
    root_markers = { c.root_markers, 'table' },
    autostart = { c.autostart, 'boolean' },
    completion_timeout_ms = { c.completion_timeout_ms, 'number' },
    statusline = { c.statusline, 'table' },
    notify_results = { c.notify_results, 'boolean' },
    chat = { c.chat, 'table' },
    capsule_open = { c.capsule_open, 'string' },
    on_attach = { c.on_attach, 'function', true },
  })
  vim.validate({
    ['statusline.prefix'] = { c.statusline.prefix, 'string' },
    ['statusline.soft_marker'] = { c.statusline.soft_marker, 'string' },
    ['statusline.compacting'] = { c.statusline.compacting, 'string' },
    ['statusline.untrusted'] = { c.statusline.untrusted, 'string' },
    ['chat.open'] = { c.chat.open, 'string' },
    ['chat.open_on_ask'] = { c.chat.open_on_ask, 'boolean' },
    ['chat.input'] = { c.chat.input, 'table' },
  })
  local input = c.chat.input
  vim.validate({
    ['chat.input.enabled'] = { input.enabled, 'boolean' },
    ['chat.input.height'] = { input.height, positive_integer, 'a positive whole number of lines' },
    ['chat.input.prefix'] = { input.prefix, 'string' },
    ['chat.input.send_normal'] = { input.send_normal, key_or_false, 'a key such as "<CR>", or false' },
    ['chat.input.send_insert'] = { input.send_insert, key_or_false, 'a key such as "<C-s>", or false' },
  })
  if #c.cmd == 0 then
    error('soba.setup: option "cmd" must name the soba-lsp executable', 2)
  end
  return c
end

-- M.json_ready returns a copy of t in which every empty table is an empty
-- JSON object: Neovim encodes a bare {} as [], which the server rejects for
-- object-valued settings such as "compaction".
function M.json_ready(t)
  if type(t) ~= 'table' or t == vim.NIL then
    return t
  end
  if next(t) == nil then
    return vim.empty_dict()
  end
  local out = {}
  for k, v in pairs(t) do
    out[k] = M.json_ready(v)
  end
  return out
end

M.current = M.resolve({})

return M
