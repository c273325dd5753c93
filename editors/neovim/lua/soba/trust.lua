-- soba.trust: whether a workspace's own .soba/config.json is trusted, the
-- way Neovim already trusts a repository's files (SPEC R-W5): through
-- vim.secure, the `:trust` database of Neovim 0.9+. A trusted file is one
-- whose content the user allowed with `:trust`; editing it changes its
-- hash, so it is untrusted again until trusted again. The answer goes to
-- soba-lsp as `workspaceTrusted` (|soba-trust|). Neovim before 0.9 has no
-- vim.secure: the file counts as untrusted here, and `soba-lsp trust`
-- (which the server checks itself) is the way to trust it.
local M = {}

local uv = vim.uv or vim.loop

-- M.file is the repository's configuration file of a workspace root.
function M.file(root)
  return root .. '/.soba/config.json'
end

-- M.supported tells whether this Neovim has vim.secure (0.9+).
function M.supported()
  return type(vim.secure) == 'table' and type(vim.secure.read) == 'function' and type(vim.secure.trust) == 'function'
end

-- known_hash is what the :trust database holds for a file ("!" when
-- denied, nil when it is not there). Read only to decide whether
-- vim.secure.read may be asked without a prompt: vim.secure.read asks the
-- user about any file it does not know yet, which must never happen while
-- a server starts (it would block a headless Neovim).
local function known_hash(real)
  local f = io.open(vim.fn.stdpath('state') .. '/trust', 'r')
  if not f then
    return nil
  end
  local contents = f:read('*a') or ''
  f:close()
  for line in vim.gsplit(contents, '\n', true) do
    local hash, file = line:match('^(%S+) (.+)$')
    if file == real then
      return hash
    end
  end
  return nil
end

-- M.check returns whether root's .soba/config.json is trusted, and why in
-- one word: "trusted", "missing" (no file: nothing of the repository's to
-- trust), "unknown" (never trusted), "changed" (edited since it was
-- trusted), "denied" (`:trust ++deny`), or "unsupported" (Neovim < 0.9).
-- It never prompts.
function M.check(root)
  if not root then
    return false, 'missing'
  end
  local real = uv.fs_realpath(M.file(root))
  if not real or vim.fn.filereadable(real) ~= 1 then
    return false, 'missing'
  end
  if not M.supported() then
    return false, 'unsupported'
  end
  local f = io.open(real, 'rb')
  local contents = f and f:read('*a')
  if f then
    f:close()
  end
  if not contents then
    return false, 'missing'
  end
  local known = known_hash(real)
  if known == '!' then
    return false, 'denied'
  end
  if known ~= vim.fn.sha256(contents) then
    return false, known and 'changed' or 'unknown'
  end
  -- The database holds this very content: vim.secure.read answers without
  -- a prompt, and its answer is the one that counts.
  return vim.secure.read(real) ~= nil, 'trusted'
end

-- M.how says how to trust root's file on this Neovim.
function M.how(root)
  local file = M.file(root)
  if M.supported() then
    return 'review ' .. file .. ' and run :trust in its buffer (:Soba trust opens it)'
  end
  return 'run `soba-lsp trust ' .. root .. '` (:Soba trust runs it; Neovim < 0.9 has no :trust)'
end

-- M.settings returns the `soba` settings the server gets for root: the
-- user's own (setup's `settings`) and workspaceTrusted, which only the
-- plugin sets.
function M.settings(user, root)
  local s = vim.deepcopy(user or {})
  s.workspaceTrusted = (M.check(root))
  return s
end

return M
