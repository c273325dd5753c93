-- Defines :Soba. Nothing else loads until the command or setup() is used.
if vim.g.loaded_soba then
  return
end
vim.g.loaded_soba = true

-- The status text's colours (|soba-highlights|), kept across colour
-- schemes, which clear highlight groups.
local function highlights()
  vim.cmd('highlight default link SobaStatus StatusLine')
  vim.cmd('highlight default link SobaSoftLimit WarningMsg')
end
highlights()
vim.api.nvim_create_autocmd('ColorScheme', {
  group = vim.api.nvim_create_augroup('soba_highlights', { clear = true }),
  callback = highlights,
})

vim.api.nvim_create_user_command('Soba', function(opts)
  require('soba.commands').run(opts.args, opts.bang)
end, {
  nargs = '*',
  bang = true,
  desc = 'SOBA agent and context compaction (see :help soba)',
  complete = function(arglead, cmdline, cursorpos)
    return require('soba.commands').complete(arglead, cmdline, cursorpos)
  end,
})
