-- A small test harness for headless Neovim: test(name, fn) runs fn under
-- xpcall and records PASS/FAIL lines in $SOBA_TEST_RESULTS, which
-- test.sh counts. Test names cite the rule they check (R-…).
local H = { passed = 0, failed = 0 }

local results_path = os.getenv('SOBA_TEST_RESULTS')
local label = os.getenv('SOBA_TEST_LABEL') or ''

local function record(ok, name, err)
  local line = string.format('%s %s%s', ok and 'PASS' or 'FAIL', label ~= '' and (label .. ': ') or '', name)
  io.stdout:write(line .. '\n')
  if not ok then
    io.stdout:write('    ' .. tostring(err):gsub('\n', '\n    ') .. '\n')
  end
  if results_path then
    local f = assert(io.open(results_path, 'a'))
    f:write(line .. '\n')
    f:close()
  end
end

-- H.test runs one test.
function H.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    H.passed = H.passed + 1
  else
    H.failed = H.failed + 1
  end
  record(ok, name, err)
  return ok
end

-- H.skip says why a test did not run and records it as a SKIP line, which
-- test.sh counts apart from passes and failures.
function H.skip(name, why)
  local line = string.format('SKIP %s%s: %s', label ~= '' and (label .. ': ') or '', name, why)
  io.stdout:write(line .. '\n')
  if results_path then
    local f = assert(io.open(results_path, 'a'))
    f:write(line .. '\n')
    f:close()
  end
end

-- H.crash records the whole run as one failure (a Lua error outside test()).
function H.crash(err)
  H.failed = H.failed + 1
  record(false, 'run did not finish', err)
end

local function show(v)
  if type(v) == 'string' then
    return string.format('%q', v)
  end
  return vim.inspect(v)
end

-- H.eq fails unless got deep-equals want.
function H.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(string.format('%s: want %s, got %s', what or 'value', show(want), show(got)), 2)
  end
end

-- H.ok fails unless v is truthy.
function H.ok(v, what)
  if not v then
    error((what or 'expected a true value') .. ', got ' .. show(v), 2)
  end
  return v
end

-- H.match fails unless s matches the Lua pattern.
function H.match(pattern, s, what)
  if type(s) ~= 'string' or not s:match(pattern) then
    error(string.format('%s: %s does not match %q', what or 'string', show(s), pattern), 2)
  end
  return s
end

-- H.wait waits up to ms for cond() to become true, failing with what.
function H.wait(ms, cond, what)
  local ok = vim.wait(ms, cond, 20)
  if not ok then
    error('timed out after ' .. ms .. ' ms waiting for ' .. (what or 'a condition'), 2)
  end
end

-- H.capture_notify replaces vim.notify and returns the list it fills with
-- {msg, level}; the original is restored by the returned function.
function H.capture_notify()
  local seen = {}
  local orig = vim.notify
  vim.notify = function(msg, level)
    seen[#seen + 1] = { msg = msg, level = level }
  end
  return seen, function()
    vim.notify = orig
  end
end

return H
