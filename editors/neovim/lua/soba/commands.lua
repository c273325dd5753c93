-- soba.commands: the :Soba command — its subcommands, their parsing and
-- their command-line completion. Each subcommand maps onto one server
-- command of PROTOCOL.md; results are shown with vim.notify.
local client = require('soba.client')
local config = require('soba.config')
local status = require('soba.status')

local M = {}

local levels = vim.log.levels
local uv = vim.uv or vim.loop

local function trim(s)
  return (s:gsub('^%s+', ''):gsub('%s+$', ''))
end

-- unquote strips one pair of matching quotes around a whole argument, so
-- `:Soba capsule create "Auth refactor"` gives the title without quotes.
local function unquote(s)
  local q = s:sub(1, 1)
  if #s >= 2 and (q == '"' or q == "'") and s:sub(-1) == q then
    return s:sub(2, -2)
  end
  return s
end

-- M.thousands formats 45210 as "45,210".
function M.thousands(n)
  local s = tostring(math.floor(tonumber(n) or 0))
  local sign, digits = s:match('^(-?)(%d+)$')
  if not digits then
    return s
  end
  digits = digits:reverse():gsub('(%d%d%d)', '%1,'):reverse():gsub('^,', '')
  return sign .. digits
end

local function str(v)
  if v == nil or v == vim.NIL then
    return ''
  end
  return tostring(v)
end

-- M.format_budget renders a Budget for :Soba budget (R-O1): effective
-- tokens against the hard limit, the soft threshold, the measurement
-- source and the latest compaction.
function M.format_budget(b)
  local lines = {
    string.format('SOBA budget: %s / %s tokens (hard limit) · soft limit %s', M.thousands(b.effectiveTokens),
      M.thousands(b.hardLimit), M.thousands(b.softLimit)),
    string.format('window %s − output %s − reserve %s · source %s · auto-compact %s · state %s',
      M.thousands(b.contextWindow), M.thousands(b.maxOutputTokens), M.thousands(b.safetyReserveTokens),
      str(b.source), b.autoCompact and 'on' or 'off', str(b.state)),
  }
  local cached = tonumber(b.cachedTokens)
  if cached and cached > 0 then
    lines[#lines + 1] = 'prompt cache: ' .. M.thousands(cached) .. ' tokens of the last request'
  end
  if type(b.pending) == 'table' and #b.pending > 0 then
    lines[#lines + 1] = 'pending: ' .. table.concat(b.pending, ', ')
  end
  local last = b.lastCompaction
  if type(last) == 'table' then
    lines[#lines + 1] = 'last: ' .. (str(last.line) ~= '' and str(last.line) or str(last.outcome))
  end
  local ignored = b.repositorySettingsIgnored
  if type(ignored) == 'table' and #ignored > 0 then
    lines[#lines + 1] = 'repository settings ignored until trusted: ' .. table.concat(ignored, ', ')
      .. ' (:Soba trust)'
  end
  return table.concat(lines, '\n')
end

-- Completion sources. Each returns candidate words; the caller filters by
-- the typed prefix.
local function checkpoint_ids()
  local list = client.execute_sync('soba.capsule.list', {})
  local out = {}
  if type(list) == 'table' then
    for _, c in ipairs(list) do
      if type(c) == 'table' and c.checkpointId then
        out[#out + 1] = c.checkpointId
      end
    end
  end
  return out
end

local function session_ids()
  local list = client.execute_sync('soba.session.list', {})
  local out = {}
  if type(list) == 'table' then
    for _, s in ipairs(list) do
      if type(s) == 'table' and s.sessionId then
        out[#out + 1] = s.sessionId
      end
    end
  end
  return out
end

-- M.epoch reads an RFC 3339 time of the wire ("2026-12-03T06:40:12Z",
-- fractions and offsets allowed) as seconds since the epoch, or nil.
function M.epoch(iso)
  local y, mo, d, h, mi, sec, rest = tostring(iso or ''):match('^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)(.*)$')
  if not y then
    return nil
  end
  -- os.time reads a table as local time; the offset makes it UTC.
  local t = os.time({ year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h),
    min = tonumber(mi), sec = tonumber(sec), isdst = false })
  local now = os.time()
  local utc_offset = os.difftime(now, os.time(os.date('!*t', now)))
  t = t + utc_offset
  local sign, oh, om = rest:match('([+-])(%d%d):?(%d%d)$')
  if sign then
    local off = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == '+' and 1 or -1)
    t = t - off
  end
  return t
end

-- M.ago says how long ago an RFC 3339 time was, to the second: "12 s ago",
-- "5 min ago", "3 h ago", "2 days ago".
function M.ago(iso, now)
  local t = M.epoch(iso)
  if not t then
    return str(iso)
  end
  local d = math.max(0, (now or os.time()) - t)
  if d < 60 then
    return string.format('%d s ago', d)
  elseif d < 3600 then
    return string.format('%d min ago', math.floor(d / 60))
  elseif d < 86400 then
    return string.format('%d h ago', math.floor(d / 3600))
  end
  local days = math.floor(d / 86400)
  return string.format('%d day%s ago', days, days == 1 and '' or 's')
end

-- M.size writes a byte count briefly: 900 B, 12 KB, 3.4 MB.
function M.size(n)
  n = tonumber(n) or 0
  if n < 1024 then
    return string.format('%d B', n)
  elseif n < 1024 * 1024 then
    return string.format('%d KB', math.floor(n / 1024 + 0.5))
  end
  return string.format('%.1f MB', n / (1024 * 1024))
end

-- M.history_item is how a soba.session.history point reads in the rewind
-- picker: when, what kind, the request or the checkpoint's note.
function M.history_item(p, now)
  local chat = require('soba.chat')
  local what = p.kind == 'checkpoint' and ('checkpoint ' .. chat.title(str(p.text))) or chat.title(str(p.text))
  return string.format('%s · %s', M.ago(p.createdAt, now), what)
end

-- M.session_item is how a soba.session.list entry reads in the session
-- picker: its first request, when it was last updated, its size.
function M.session_item(sess, current, now)
  local title = str(sess.title)
  if title == '' then
    title = '(no request yet)'
  end
  local mark = sess.sessionId == current and ' · current' or ''
  local n = tonumber(sess.entries) or 0
  return string.format('%s · %s · %d %s · %s%s', title, M.ago(sess.updatedAt, now), n, n == 1 and 'entry' or 'entries',
    M.size(sess.bytes), mark)
end

-- M.capsule_item is how a soba.capsule.list entry reads: its id, title,
-- trigger, quality and how long ago it was made.
function M.capsule_item(c, now)
  local parts = { str(c.checkpointId) }
  if str(c.title) ~= '' then
    parts[#parts + 1] = str(c.title)
  end
  parts[#parts + 1] = str(c.trigger)
  if str(c.quality) ~= '' then
    parts[#parts + 1] = str(c.quality)
  end
  parts[#parts + 1] = M.ago(c.createdAt, now)
  return table.concat(parts, ' · ')
end

-- M.rewind_question is the confirmation of a rewind: what goes, and that
-- the files modified after the point keep their content.
function M.rewind_question(p)
  local chat = require('soba.chat')
  local q = string.format('Rewind to before %s"%s"? The conversation after it leaves the path (it stays in the file).',
    p.kind == 'checkpoint' and 'checkpoint ' or '', chat.title(str(p.text)))
  local files = type(p.filesModifiedAfter) == 'table' and p.filesModifiedAfter or {}
  if #files == 0 then
    return q .. ' No file was modified after it.'
  end
  return q .. string.format(' Files are not reverted: %d modified after it keep their content: %s.', #files,
    table.concat(files, ', '))
end

local function files(arglead)
  return vim.fn.getcompletion(arglead, 'file')
end

-- done reports the outcome of a subcommand: to the caller's callback when
-- given (tests, scripts), else as a notification on error.
local function finish(cmd, done, err, result)
  if err and not done then
    local msg = client.describe_error(cmd, err)
    if cmd == 'soba.capsule.export' and tostring(err.message):match('exist') then
      msg = msg .. ' (use :Soba! capsule export … to overwrite)'
    end
    client.notify(msg, levels.ERROR)
  end
  if done then
    done(err, result)
  end
end

-- run sends one server command and calls on_result(result, client) on
-- success before reporting to done.
local function run(cmd, args, done, on_result)
  client.execute(cmd, args, function(err, result, c)
    if not err and on_result then
      local ok, e = pcall(on_result, result, c)
      if not ok then
        err = { message = e }
      end
    end
    finish(cmd, done, err, result)
  end)
end

local function open_scratch(name, lines, filetype)
  vim.cmd(require('soba.config').current.capsule_open)
  local b = vim.fn.bufnr(name)
  if b == -1 or not vim.api.nvim_buf_is_valid(b) then
    b = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(b, name)
  end
  vim.bo[b].modifiable = true
  vim.bo[b].buftype = 'nofile'
  vim.bo[b].bufhidden = 'hide'
  vim.bo[b].swapfile = false
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
  vim.api.nvim_win_set_buf(0, b)
  vim.bo[b].filetype = filetype
  return b
end

-- show_run shows what soba.run answered (|soba-slash|). A prompt shows in
-- the chat as the user's message; a slash command's lines are shown with
-- vim.notify, except where the plugin has a view of its own: a capsule
-- opens as Markdown, a budget updates the status line, a compaction's
-- result line is shown once with its end notification. `/session resume`
-- without an id answers the session list and how to resume one, shown like
-- any other lines (`:Soba session resume` keeps its picker).
local send_run

local function show_run(text, r, c, point)
  if r.kind == 'prompt' then
    local chat = require('soba.chat')
    chat.user_message(r.turnId, r.text or text, r.queued == true)
    if require('soba.config').current.chat.open_on_ask then
      local win = vim.api.nvim_get_current_win()
      chat.open()
      pcall(vim.api.nvim_set_current_win, win)
    end
    if r.queued then
      client.notify('soba: prompt queued; it runs after the current turn')
    end
    return
  end
  local cmd = r.command
  if cmd == 'soba.capsule.show' then
    open_scratch('soba://capsule/' .. str(r.result.checkpointId), vim.split(str(r.result.markdown), '\n', { plain = true }),
      'markdown')
    return
  elseif cmd == 'soba.compact' then
    return client.show_result(r.result)
  elseif cmd == 'soba.budget' or cmd == 'soba.autoCompact' then
    status.on_budget(c.id, r.result)
  elseif cmd == 'soba.session.rewind' then
    M.mark_rewind(point, M.rewind_id(text))
  elseif cmd == 'soba.session.resume' then
    require('soba.chat').load_history()
  end
  if type(r.lines) == 'table' and #r.lines > 0 then
    client.notify(table.concat(r.lines, '\n'))
  end
end

-- M.ask sends what the user typed to the agent (`:Soba ask`, the chat's
-- input) through soba.run as typed: the server reads it as a prompt or a
-- slash command. A slash command typed wrong runs nothing; its message is
-- an error, shown or passed to done(err, result) like :Soba's own errors.
function M.ask(text, done)
  -- A typed `/rewind <id>`: the point it names, from the path before the
  -- rewind, so the chat's mark says what was asked then.
  local id = M.rewind_id(text)
  if id then
    return client.execute('soba.session.history', {}, function(_, points)
      send_run(text, done, M.point_of(points, id))
    end)
  end
  send_run(text, done)
end

-- M.rewind_id is the entry id of a typed `/rewind <id>`, or nil (`/rewind`
-- alone lists the points).
function M.rewind_id(text)
  return type(text) == 'string' and text:match('^%s*/rewind%s+(%S+)%s*$') or nil
end

-- M.point_of finds the soba.session.history point a rewind to id stands
-- just before (a request's parent, a checkpoint itself); a request's own id
-- keeps the request and is no such point.
function M.point_of(points, id)
  for _, p in ipairs(type(points) == 'table' and points or {}) do
    if p.rewindTo == id then
      return p
    end
  end
end

-- M.mark_rewind marks a rewind in the chat, after the conversation it
-- keeps on screen: what follows continues from the point (the request or
-- checkpoint when known, else the entry id).
function M.mark_rewind(p, id)
  local chat = require('soba.chat')
  local what = str(id)
  if p then
    -- A checkpoint is itself kept; a request is rewound to just before it.
    what = string.format(p.kind == 'checkpoint' and 'checkpoint "%s"' or 'before "%s"', chat.title(str(p.text)))
  end
  chat.append({ '', '── Rewound to ' .. what .. '; what follows continues from there ──', '' })
end

-- send_run sends text through soba.run and shows what it answered; point
-- is the history point of a typed `/rewind <id>`.
send_run = function(text, done, point)
  client.execute('soba.run', { text = text }, function(err, r, c)
    if not err and type(r) == 'table' and r.error ~= nil and r.error ~= vim.NIL then
      local msg = 'soba: ' .. str(r.error)
      if done then
        return done({ message = msg }, r)
      end
      return client.notify(msg, levels.ERROR)
    end
    if not err and type(r) == 'table' then
      local ok, e = pcall(show_run, text, r, c, point)
      if not ok then
        err = { message = e }
      end
    end
    finish('soba.run', done, err, r)
  end)
end

-- M.spec describes every subcommand: `params` are taken in order, a
-- `word` is one blank-separated word, `rest` is the rest of the line.
-- `run(args, ctx)` gets the parsed arguments and ctx = {bang, done}.
M.spec = {
  ask = {
    params = { { name = 'text', kind = 'rest' } },
    run = function(a, ctx)
      M.ask(a.text, ctx.done)
    end,
  },
  cancel = {
    run = function(_, ctx)
      run('soba.cancel', {}, ctx.done, function(r)
        if r and r.cancelled then
          client.notify('soba: cancelled the ' .. str(r.what))
        else
          client.notify('soba: nothing to cancel')
        end
      end)
    end,
  },
  budget = {
    run = function(_, ctx)
      run('soba.budget', {}, ctx.done, function(r, c)
        status.on_budget(c.id, r)
        client.notify(M.format_budget(r))
      end)
    end,
  },
  compact = {
    params = { { name = 'instructions', kind = 'rest', optional = true } },
    run = function(a, ctx)
      local args = {}
      if a.instructions and a.instructions ~= '' then
        args.instructions = a.instructions
      end
      run('soba.compact', args, ctx.done, function(r)
        client.show_result(r)
      end)
    end,
  },
  ['auto-compact'] = {
    params = { { name = 'on|off', kind = 'word', choices = { 'on', 'off' } } },
    run = function(a, ctx)
      run('soba.autoCompact', { enabled = a['on|off'] == 'on' }, ctx.done, function(r, c)
        status.on_budget(c.id, r)
        client.notify('soba: auto-compact ' .. a['on|off'])
      end)
    end,
  },
  milestone = {
    params = { { name = 'note', kind = 'rest' } },
    run = function(a, ctx)
      run('soba.checkpoint', { kind = 'milestone', note = a.note }, ctx.done, function(r)
        client.notify('soba: milestone ' .. str(r and r.checkpointId))
      end)
    end,
  },
  pivot = {
    params = { { name = 'note', kind = 'rest' } },
    run = function(a, ctx)
      run('soba.checkpoint', { kind = 'plan_pivot', note = a.note }, ctx.done, function(r)
        client.notify('soba: plan pivot ' .. str(r and r.checkpointId))
      end)
    end,
  },
  trust = {
    run = function(_, ctx)
      M.trust(ctx.done)
    end,
  },
  chat = {
    run = function(_, ctx)
      require('soba.chat').open()
      if ctx.done then
        ctx.done(nil, nil)
      end
    end,
  },
  capsule = {
    sub = {
      create = {
        params = { { name = 'title', kind = 'rest' } },
        run = function(a, ctx)
          run('soba.capsule.create', { title = a.title }, ctx.done, function(r)
            client.notify(string.format('soba: capsule %s → %s', str(r.checkpointId), str(r.path)))
          end)
        end,
      },
      export = {
        params = {
          { name = 'checkpointId', kind = 'word', complete = checkpoint_ids },
          { name = 'path', kind = 'rest', complete = files },
        },
        run = function(a, ctx)
          local args = { checkpointId = a.checkpointId, path = a.path }
          if ctx.bang then
            args.overwrite = true
          end
          run('soba.capsule.export', args, ctx.done, function(r)
            client.notify('soba: exported ' .. a.checkpointId .. ' → ' .. str(r.path))
          end)
        end,
      },
      load = {
        params = { { name = 'path', kind = 'rest', complete = files } },
        run = function(a, ctx)
          run('soba.capsule.load', { path = a.path }, ctx.done, function(r)
            client.notify(string.format('soba: loaded %s (%s)', str(r.checkpointId), str(r.title)))
            if type(r.warnings) == 'table' then
              for _, w in ipairs(r.warnings) do
                client.notify('soba: ' .. str(w), levels.WARN)
              end
            end
          end)
        end,
      },
      list = {
        run = function(_, ctx)
          run('soba.capsule.list', {}, ctx.done, function(r)
            local lines = {}
            local now = os.time()
            for _, c in ipairs(r or {}) do
              lines[#lines + 1] = M.capsule_item(c, now)
            end
            client.notify(#lines > 0 and table.concat(lines, '\n') or 'soba: no capsules yet')
          end)
        end,
      },
      show = {
        params = { { name = 'checkpointId', kind = 'word', optional = true, complete = checkpoint_ids } },
        run = function(a, ctx)
          local args = {}
          if a.checkpointId then
            args.checkpointId = a.checkpointId
          end
          run('soba.capsule.show', args, ctx.done, function(r)
            local lines = vim.split(str(r.markdown), '\n', { plain = true })
            open_scratch('soba://capsule/' .. str(r.checkpointId), lines, 'markdown')
          end)
        end,
      },
    },
  },
  session = {
    sub = {
      new = {
        run = function(_, ctx)
          run('soba.session.new', {}, ctx.done, function(r)
            client.notify('soba: new session ' .. str(r.sessionId))
          end)
        end,
      },
      resume = {
        params = { { name = 'sessionId', kind = 'word', optional = true, complete = session_ids } },
        run = function(a, ctx)
          local resume = function(id)
            run('soba.session.resume', { sessionId = id }, ctx.done, function(r)
              client.notify('soba: resumed session ' .. str(r.sessionId))
              -- The chat shows the session's conversation, its newest page first.
              require('soba.chat').load_history()
            end)
          end
          if a.sessionId then
            return resume(a.sessionId)
          end
          M.pick_session(resume, ctx.done)
        end,
      },
      info = {
        run = function(_, ctx)
          run('soba.session.info', {}, ctx.done, function(r)
            client.notify(string.format('soba: session %s · %s entries · leaf %s\n%s\n%s', str(r.sessionId),
              str(r.entries), str(r.leafId), str(r.path), str(r.flightPath)))
          end)
        end,
      },
      list = {
        run = function(_, ctx)
          run('soba.session.list', {}, ctx.done, function(r)
            local lines = {}
            local now = os.time()
            for _, sess in ipairs(r or {}) do
              lines[#lines + 1] = str(sess.sessionId) .. '  ' .. M.session_item(sess, nil, now)
            end
            client.notify(#lines > 0 and table.concat(lines, '\n') or 'soba: no sessions yet')
          end)
        end,
      },
    },
  },
  rewind = {
    params = { { name = 'entryId', kind = 'word', optional = true } },
    run = function(a, ctx)
      if a.entryId then
        return client.execute('soba.session.history', {}, function(_, points)
          run('soba.session.rewind', { entryId = a.entryId }, ctx.done, function(r)
            M.mark_rewind(M.point_of(points, a.entryId), a.entryId)
            client.notify('soba: rewound to ' .. a.entryId .. ' · leaf ' .. str(r and r.leafId))
          end)
        end)
      end
      M.pick_rewind(ctx.done)
    end,
  },
}

-- M.pick_session offers the workspace's sessions (newest first) and a new
-- one through vim.ui.select; resume(id) resumes the one picked.
function M.pick_session(resume, done)
  local info = client.execute_sync('soba.session.info', {}) or {}
  client.execute('soba.session.list', {}, function(err, list)
    if err then
      return finish('soba.session.list', done, err)
    end
    local items = { { new = true } }
    for _, sess in ipairs(type(list) == 'table' and list or {}) do
      items[#items + 1] = sess
    end
    local now = os.time()
    vim.ui.select(items, {
      prompt = 'SOBA session',
      format_item = function(it)
        if it.new then
          return 'New session'
        end
        return M.session_item(it, info.sessionId, now)
      end,
    }, function(it)
      if not it then
        return done and done(nil, nil)
      end
      if it.new then
        return run('soba.session.new', {}, done, function(r)
          client.notify('soba: new session ' .. str(r.sessionId))
        end)
      end
      resume(it.sessionId)
    end)
  end)
end

-- M.pick_rewind offers the requests and checkpoints of the current path
-- (soba.session.history, newest first) through vim.ui.select, asks for a
-- confirmation that says which files keep their content, and rewinds.
function M.pick_rewind(done)
  client.execute('soba.session.history', {}, function(err, points)
    if err then
      return finish('soba.session.history', done, err)
    end
    local items = {}
    for i = #(points or {}), 1, -1 do
      items[#items + 1] = points[i]
    end
    if #items == 0 then
      return finish('soba.session.history', done, { message = 'nothing to rewind to: the session has no request yet' })
    end
    local now = os.time()
    vim.ui.select(items, {
      prompt = 'Rewind SOBA session to before',
      format_item = function(p)
        return M.history_item(p, now)
      end,
    }, function(p)
      if not p then
        return done and done(nil, nil)
      end
      vim.ui.select({ 'Rewind', 'Cancel' }, { prompt = M.rewind_question(p) }, function(answer)
        if answer ~= 'Rewind' then
          return done and done(nil, nil)
        end
        run('soba.session.rewind', { entryId = p.rewindTo }, done, function()
          local title = require('soba.chat').title(str(p.text))
          M.mark_rewind(p)
          local files = type(p.filesModifiedAfter) == 'table' and p.filesModifiedAfter or {}
          local note = #files > 0 and string.format('; %d modified files were not reverted: %s', #files,
            table.concat(files, ', ')) or ''
          client.notify('soba: rewound to before "' .. title .. '"' .. note)
        end)
      end)
    end)
  end)
end

-- M.trust trusts the workspace's .soba/config.json the way this Neovim
-- does (|soba-trust|). With vim.secure (0.9+): run in the file's own
-- buffer, it is `:trust` of that buffer; anywhere else it opens the file to
-- be reviewed first, as Neovim's exrc prompt does ("view, then :trust").
-- Before 0.9 it runs `soba-lsp trust ROOT`, which records the file's
-- SHA-256 for the server. Either way the server is told at once.
function M.trust(done)
  local trust = require('soba.trust')
  local buf = vim.api.nvim_get_current_buf()
  local root = client.root(buf)
  local file = trust.file(root)
  local reply = function(err, r)
    if err then
      client.notify(err.message, levels.ERROR)
    end
    if done then
      done(err, r)
    end
  end
  if vim.fn.filereadable(file) ~= 1 then
    return reply({ message = 'soba: ' .. file .. ' does not exist: the workspace has no settings of its own to trust' })
  end
  if not trust.supported() then
    local out = vim.fn.system({ config.current.cmd[1], 'trust', root })
    if vim.v.shell_error ~= 0 then
      return reply({ message = 'soba: soba-lsp trust ' .. root .. ' failed: ' .. vim.trim(out) })
    end
    local trusted = client.recheck(root)
    client.notify('soba: ' .. vim.trim(out))
    return reply(nil, { trusted = trusted, file = file })
  end
  local name = vim.api.nvim_buf_get_name(buf)
  local same = name ~= '' and uv.fs_realpath(name) == uv.fs_realpath(file)
  if not same then
    vim.cmd('split ' .. vim.fn.fnameescape(file))
    client.notify('soba: review ' .. file .. ', then run :trust (or :Soba trust) in its buffer to apply it')
    return reply(nil, { trusted = false, opened = true, file = file })
  end
  if vim.bo[buf].modified then
    return reply({ message = 'soba: write ' .. file .. ' first: what is trusted is the file as saved' })
  end
  local ok, msg = vim.secure.trust({ action = 'allow', bufnr = buf })
  if not ok then
    return reply({ message = 'soba: could not trust ' .. file .. ': ' .. tostring(msg) })
  end
  local trusted, why = client.recheck(root)
  client.notify('soba: trusted ' .. file .. (trusted and '; its settings apply' or (' (' .. why .. ')')))
  reply(nil, { trusted = trusted, file = file })
end

local function names(t)
  local out = vim.tbl_keys(t)
  table.sort(out)
  return out
end

local function usage(path, node)
  local words = { ':Soba', path }
  for _, p in ipairs(node.params or {}) do
    words[#words + 1] = p.optional and ('[' .. p.name .. ']') or ('{' .. p.name .. '}')
  end
  return table.concat(words, ' ')
end

-- M.parse splits the argument string of :Soba into the subcommand path
-- (e.g. "capsule export") and its arguments. It returns node, args, path
-- or nil and an error message naming what is wrong.
function M.parse(line)
  local rest = trim(line or '')
  if rest == '' then
    return nil, 'soba: :Soba needs a subcommand: ' .. table.concat(names(M.spec), ', ')
  end
  local node, path = { sub = M.spec }, {}
  while node.sub do
    local word, after = rest:match('^(%S+)%s*(.*)$')
    if not word then
      return nil, string.format('soba: :Soba %s needs a subcommand: %s', table.concat(path, ' '),
        table.concat(names(node.sub), ', '))
    end
    local nxt = node.sub[word]
    if not nxt then
      local where = #path > 0 and (':Soba ' .. table.concat(path, ' ')) or ':Soba'
      return nil, string.format('soba: unknown subcommand "%s" of %s (expected one of: %s)', word, where,
        table.concat(names(node.sub), ', '))
    end
    path[#path + 1] = word
    node, rest = nxt, after
  end
  local args = {}
  local p = table.concat(path, ' ')
  for _, param in ipairs(node.params or {}) do
    local value
    if param.kind == 'rest' then
      value = unquote(trim(rest))
      rest = ''
    else
      value, rest = rest:match('^(%S+)%s*(.*)$')
      rest = rest or ''
    end
    if value == nil or value == '' then
      if not param.optional then
        return nil, string.format('soba: missing {%s}; usage: %s', param.name, usage(p, node))
      end
      value = nil
    elseif param.choices and not vim.tbl_contains(param.choices, value) then
      return nil, string.format('soba: {%s} must be one of %s, got "%s"', param.name,
        table.concat(param.choices, ', '), value)
    end
    args[param.name] = value
  end
  if trim(rest) ~= '' then
    return nil, string.format('soba: unexpected "%s"; usage: %s', trim(rest), usage(p, node))
  end
  return node, args, p
end

-- M.run parses and runs one :Soba invocation. done(err, result), when
-- given, receives the server's answer (tests and scripts wait on it).
function M.run(line, bang, done)
  local node, args = M.parse(line)
  if not node then
    if done then
      return done({ message = args }, nil)
    end
    return client.notify(args, levels.ERROR)
  end
  node.run(args, { bang = bang, done = done })
end

local function filter(items, prefix)
  local out = {}
  for _, it in ipairs(items) do
    if vim.startswith(it, prefix) then
      out[#out + 1] = it
    end
  end
  return out
end

-- M.complete is the :Soba completion function (customlist): subcommand
-- names, then each parameter's candidates, e.g. checkpoint ids from
-- soba.capsule.list for `capsule export` and `capsule show`.
function M.complete(arglead, cmdline, cursorpos)
  local before = cmdline:sub(1, cursorpos or #cmdline)
  -- Drop the command name itself (and a bang).
  before = before:gsub('^%s*%S-Soba!?%s*', '', 1)
  local words = vim.split(before, '%s+', { trimempty = false })
  -- The last word is the one being typed ('' after a blank).
  local typing = table.remove(words) or ''
  if words[1] == '' then
    table.remove(words, 1)
  end
  local node = { sub = M.spec }
  local i = 1
  while node.sub do
    if i > #words then
      return filter(names(node.sub), typing)
    end
    node = node.sub[words[i]]
    if not node then
      return {}
    end
    i = i + 1
  end
  local index = #words - i + 2
  local param = (node.params or {})[index]
  if not param then
    -- Inside a `rest` parameter every further word belongs to it.
    local first = (node.params or {})[#(node.params or {})]
    if first and first.kind == 'rest' and first.complete then
      param = first
    else
      return {}
    end
  end
  if param.choices then
    return filter(param.choices, typing)
  end
  if param.complete then
    return filter(param.complete(arglead or typing), typing)
  end
  return {}
end

return M
