-- Headless test init: only $VIMRUNTIME and this plugin; the REAL server, started from the env:
--   KITSOKI_SERVER_CMD   JSON list, e.g. ["/repo/.venv/bin/python", "-m", "server.cli", "serve"]
--   KITSOKI_SERVER_CWD   where to start it (the repo, for `-m server.cli`)
--   KITSOKI_TRANSCRIPTS  the fixture's transcript folder
local here = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2))
local plugin = vim.fs.dirname(here)

vim.opt.rtp = { plugin, vim.env.VIMRUNTIME }
vim.opt.packpath = {}
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.opt.more = false
vim.opt.signcolumn = 'yes'

local cmd = vim.json.decode((assert(vim.env.KITSOKI_SERVER_CMD, 'KITSOKI_SERVER_CMD is not set')))
require('kitsoki').setup({
  cmd = cmd,
  cmd_cwd = vim.env.KITSOKI_SERVER_CWD,
  init_options = {
    mining = true,
    transcriptDirs = { (assert(vim.env.KITSOKI_TRANSCRIPTS, 'KITSOKI_TRANSCRIPTS is not set')) },
    watch = true,
  },
  question_delay = 200,
})
vim.o.statusline = "%f %{v:lua.require'kitsoki'.statusline()}"
