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
  },
  -- Show result lines (R-B3) with vim.notify.
  notify_results = true,
  chat = {
    -- Command that opens the chat buffer window (:Soba chat).
    open = 'botright vsplit',
    -- Open the chat buffer when :Soba ask sends a prompt.
    open_on_ask = true,
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
  if vim.tbl_islist then
    return vim.tbl_islist(t)
  end
  return vim.islist(t)
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

-- M.resolve merges opts over the defaults and checks the types, so that a
-- typo fails at setup() with the option's name rather than later.
function M.resolve(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then
    error('soba.setup: options must be a table, got ' .. type(opts), 2)
  end
  for k in pairs(opts) do
    if M.defaults[k] == nil and k ~= 'on_attach' then
      error('soba.setup: unknown option "' .. tostring(k) .. '"', 2)
    end
  end
  local c = merge(M.defaults, opts)
  if type(c.cmd) == 'string' then
    c.cmd = { c.cmd }
  end
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
