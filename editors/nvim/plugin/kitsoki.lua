-- :KitsokiMine exists as soon as the plugin is on the runtimepath; the server starts only after
-- require('kitsoki').setup({...}) (see editors/nvim/README.md).
if vim.g.loaded_kitsoki or vim.fn.has('nvim-0.11') == 0 then
  return
end
vim.g.loaded_kitsoki = true

vim.api.nvim_create_user_command('KitsokiMine', function(opts)
  require('kitsoki.commands').run(opts.fargs)
end, {
  nargs = '*',
  complete = function(...)
    return require('kitsoki.commands').complete(...)
  end,
  desc = 'kitsoki-miner: status|pause|resume|now|scope <dir>|queue|accept|refine|dismiss|diff|undo|restore [id]|rejected|restart|log',
})
