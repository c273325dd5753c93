-- soba.status: the cached budget and compaction state of each soba-lsp
-- client, and the status-line string made from it.
--
-- The cache is written only by notifications (soba/budget, soba/compaction)
-- and by results the user asked for; statusline() never sends a request, so
-- a status line redrawn on every keystroke costs a table lookup (R-O1).
local M = {}

-- states[client_id] = { budget = Budget|nil, compaction = {phase, percentage,
-- operationId, trigger}|nil, last = CompactionResult|nil, updated = n }
local states = {}
local clock = 0

local function state(client_id)
  local s = states[client_id]
  if not s then
    s = {}
    states[client_id] = s
  end
  return s
end

local function touch(s)
  clock = clock + 1
  s.updated = clock
end

-- M.tokens formats a token count briefly with one decimal: 950 → "950",
-- 31234 → "31.2k", 1250000 → "1.3M".
function M.tokens(n)
  n = tonumber(n) or 0
  if n < 1000 then
    return string.format('%d', n)
  end
  if n < 999950 then
    return string.format('%.1fk', n / 1000)
  end
  return string.format('%.1fM', n / 1000000)
end

-- M.display is the budget's status text: the server's `display` field
-- ("14.0k / 17.0k (82%)", docs/protocol.md), so both editors show the same
-- numbers; for a server that sends none, the same format made here.
function M.display(b)
  if type(b.display) == 'string' and b.display ~= '' then
    return b.display
  end
  local eff, hard = tonumber(b.effectiveTokens) or 0, tonumber(b.hardLimit) or 0
  if hard <= 0 then
    return M.tokens(eff)
  end
  return string.format('%s / %s (%d%%)', M.tokens(eff), M.tokens(hard), math.floor(eff * 100 / hard))
end

-- M.format builds the status-line string from a state table s; opts is the
-- `statusline` option table. It is a pure function so it can be tested on
-- recorded notifications.
-- past_soft tells whether a Budget is at or past its soft limit.
local function past_soft(b)
  local soft = b and tonumber(b.softLimit)
  return soft ~= nil and soft > 0 and (tonumber(b.effectiveTokens) or 0) >= soft
end

-- M.highlight is the highlight group the status text is drawn in:
-- SobaSoftLimit from the soft limit on (VS Code colours its item there),
-- else SobaStatus. Both are linked by default (|soba-highlights|).
function M.highlight(s)
  if s and past_soft(s.budget) then
    return 'SobaSoftLimit'
  end
  return 'SobaStatus'
end

function M.format(s, opts)
  opts = opts or require('soba.config').current.statusline
  if not s or (not s.budget and not s.compaction) then
    return ''
  end
  local parts = { opts.prefix }
  local b = s.budget
  if b then
    local used = M.display(b)
    if past_soft(b) then
      used = used .. opts.soft_marker
    end
    parts[#parts + 1] = used
  end
  local c = s.compaction
  if c then
    local pct = tonumber(c.percentage)
    if pct then
      parts[#parts + 1] = string.format('%s %d%%', opts.compacting, math.floor(pct))
    else
      parts[#parts + 1] = opts.compacting
    end
  elseif b and b.state == 'compacting' and not s.ended then
    parts[#parts + 1] = opts.compacting
  end
  -- The repository's settings the server ignores until trusted (R-W5).
  local ignored = b and b.repositorySettingsIgnored
  if type(ignored) == 'table' and #ignored > 0 and (opts.untrusted or '') ~= '' then
    parts[#parts + 1] = opts.untrusted
  end
  return table.concat(parts, ' ')
end

local function fire(pattern, data)
  if vim.fn.exists('#User#' .. pattern) == 0 then
    return
  end
  local opts = { pattern = pattern, modeline = false }
  if vim.fn.has('nvim-0.8') == 1 then
    opts.data = data
  end
  vim.api.nvim_exec_autocmds('User', opts)
end

local function redraw()
  -- A notification can arrive while a prompt or the command line is busy;
  -- redrawstatus is safe there and cheap.
  pcall(vim.cmd, 'redrawstatus!')
end

-- M.on_budget stores a Budget (from soba/budget or a soba.budget result)
-- and fires `User SobaBudget`.
function M.on_budget(client_id, budget)
  if type(budget) ~= 'table' then
    return
  end
  local s = state(client_id)
  s.budget = budget
  if budget.lastCompaction and budget.lastCompaction ~= vim.NIL then
    s.last = budget.lastCompaction
  end
  -- Budgets are coalesced and may lag the compaction notifications, so a
  -- budget never ends a barrier; it only supplies the state shown when no
  -- soba/compaction notification is in force.
  s.ended = false
  touch(s)
  fire('SobaBudget', { client_id = client_id, budget = budget })
  redraw()
end

-- M.on_compaction stores a soba/compaction notification and fires
-- `User SobaCompaction`. On phase "end" the barrier is over and the result
-- is kept as the latest compaction.
function M.on_compaction(client_id, ev)
  if type(ev) ~= 'table' then
    return
  end
  local s = state(client_id)
  if ev.phase == 'end' then
    s.compaction = nil
    s.last = ev
    -- The budget cached before the end may still say "compacting".
    s.ended = true
    -- A completed compaction's measured size is the new effective figure
    -- until the next (coalesced) soba/budget arrives.
    if ev.outcome == 'completed' and type(ev.tokensAfter) == 'number' and s.budget then
      s.budget = vim.tbl_extend('force', s.budget, { effectiveTokens = ev.tokensAfter, source = 'estimated' })
      -- The server's text is of the old figure; M.display writes the new.
      s.budget.display = nil
    end
  else
    local pct = ev.percentage
    if pct == vim.NIL then
      pct = nil
    end
    if pct == nil and s.compaction and s.compaction.operationId == ev.operationId then
      pct = s.compaction.percentage
    end
    s.compaction = {
      phase = ev.phase,
      operationId = ev.operationId,
      trigger = ev.trigger,
      percentage = pct or (ev.phase == 'start' and 0 or nil),
    }
  end
  touch(s)
  fire('SobaCompaction', { client_id = client_id, event = ev })
  redraw()
end

-- M.forget drops a client's state when it exits.
function M.forget(client_id)
  states[client_id] = nil
  redraw()
end

-- M.get returns the cached state of a client (nil when nothing arrived).
function M.get(client_id)
  return states[client_id]
end

-- M.latest returns the id and state of the most recently updated client.
function M.latest()
  local best_id, best
  for id, s in pairs(states) do
    if not best or (s.updated or 0) > (best.updated or 0) then
      best_id, best = id, s
    end
  end
  return best_id, best
end

-- M.reset clears every cached state (tests).
function M.reset()
  states = {}
end

return M
