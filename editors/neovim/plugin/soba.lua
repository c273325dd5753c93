-- Defines :Soba. Nothing else loads until the command or setup() is used.
if vim.g.loaded_soba then
  return
end
vim.g.loaded_soba = true

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
