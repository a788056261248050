--- kitsoki-miner for Neovim >= 0.11: a thin client. It renders what the server sends (proposal
--- extmarks, code lenses, diagnostics, operator questions) and sends the person's verdicts back;
--- the server owns mining, drafting and the apply gate.
---
---   require('kitsoki').setup({ cmd = { 'kitsoki-miner', 'serve' }, init_options = { mining = true } })
local state = require('kitsoki.state')
local render = require('kitsoki.render')
local commands = require('kitsoki.commands')
local questions = require('kitsoki.questions')

local api = vim.api
local levels = vim.log.levels
local M = {}

M.state = state

M.defaults = {
  cmd = { 'kitsoki-miner', 'serve' },
  cmd_cwd = nil,
  cmd_env = nil,
  filetypes = { 'yaml' },
  root_markers = { '.kitsoki.yaml' },
  init_options = { mining = true, watch = true },
  --- 'ask': operator-question cards pop up (vim.ui.select) when Neovim is in Normal mode;
  --- 'quiet': they only show in the statusline and :KitsokiMine queue.
  questions = 'ask',
  --- extra vim.lsp.config fields (capabilities, settings, on_attach ...)
  lsp = {},
}

-- -- handlers for the server's notifications ----------------------------------------------------------

local handlers = {}

handlers['kitsoki/proposalsChanged'] = function(_, params, ctx)
  state.pending[state.ws_key(params.workspace)] = params.pending or 0
  state.changed()
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    render.refresh_client(client)
  end
end

handlers['kitsoki/proposalDecided'] = function(_, params, ctx)
  state.last_decision = params
  questions.drop(params.recipe_id)
  if params.verdict == 'reject' or (params.verdict == 'accept' and not params.reverted) then
    render.clear_card(params.recipe_id)
  end
  if params.verdict == 'accept' and params.reverted and params.gate_failures and #params.gate_failures > 0 then
    local known = render.known_cards()[params.recipe_id]
    local title = (params.title and params.title ~= '') and params.title or (known and known.title) or params.recipe_id
    state.notify(('kitsoki: flow gate failures for "%s":\n  %s'):format(title, table.concat(params.gate_failures, '\n  ')),
      levels.WARN)
  end
  pcall(vim.cmd, 'silent! checktime')
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    render.refresh_client(client)
  end
end

handlers['kitsoki/question'] = function(_, params, ctx)
  questions.push(ctx.client_id, params)
end

handlers['kitsoki/passRan'] = function(_, params, _)
  state.last_pass = params
  local err = state.val(params.proposer_error)
  if err then
    state.notify('kitsoki: the proposer did not run: ' .. err, levels.WARN)
  end
end

M.handlers = handlers

-- -- attach -------------------------------------------------------------------------------------------

local group = api.nvim_create_augroup('kitsoki', { clear = true })

local function on_attach(client, bufnr)
  render.refresh_buffer(client, bufnr)
  -- Proposals already pending from an earlier session are not announced again: ask for the count.
  client:request('kitsoki/mineStatus', vim.empty_dict(), function(err, result)
    if not err and result then
      state.last_status = result
      for _, ws in ipairs(result.workspaces or {}) do
        state.pending[state.ws_key(ws.workspace)] = ws.pending or 0
      end
      state.changed()
    end
  end, bufnr)
  api.nvim_clear_autocmds({ group = group, buffer = bufnr })
  api.nvim_create_autocmd({ 'BufEnter', 'BufWritePost', 'InsertLeave' }, {
    group = group,
    buffer = bufnr,
    callback = function(ev)
      render.refresh_lenses(ev.buf)
    end,
  })
end

-- -- statusline ---------------------------------------------------------------------------------------

--- "kitsoki: N proposals", plus "[?K]" while K operator questions wait and "(busy)" while a
--- pass or a gated accept runs. Empty when no kitsoki server is running.
function M.statusline()
  if #state.clients() == 0 then
    return ''
  end
  local n = 0
  for _, count in pairs(state.pending) do
    n = n + count
  end
  local text = ('kitsoki: %d proposal%s'):format(n, n == 1 and '' or 's')
  if #state.questions > 0 then
    text = text .. (' [?%d]'):format(#state.questions)
  end
  if next(state.busy) then
    text = text .. ' (busy)'
  end
  return text
end

-- -- setup --------------------------------------------------------------------------------------------

function M.setup(opts)
  if vim.fn.has('nvim-0.11') == 0 then
    vim.notify('kitsoki: Neovim 0.11 or later is needed (vim.lsp.config)', levels.ERROR)
    return
  end
  local config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  state.config = config

  local lsp = vim.tbl_deep_extend('force', {
    cmd = config.cmd,
    cmd_cwd = config.cmd_cwd,
    cmd_env = config.cmd_env,
    filetypes = config.filetypes,
    root_markers = config.root_markers,
    workspace_required = true, -- never start on a YAML file outside a kitsoki workspace
    init_options = config.init_options,
    handlers = handlers,
  }, config.lsp or {})
  local user_on_attach = lsp.on_attach
  lsp.on_attach = function(client, bufnr)
    on_attach(client, bufnr)
    if user_on_attach then
      user_on_attach(client, bufnr)
    end
  end
  vim.lsp.config(state.name, lsp)
  vim.lsp.enable(state.name)

  render.define_highlights()
  commands.register_lsp_commands()
  commands.create_user_command()

  api.nvim_create_autocmd('ColorScheme', { group = group, callback = render.define_highlights })
  api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if not client or client.name ~= state.name then
        return
      end
      local value = ev.data.params.value or {}
      local token = ev.data.params.token
      if value.kind == 'begin' then
        state.busy[token] = value.title or true
      elseif value.kind == 'end' then
        state.busy[token] = nil
      end
      state.changed()
    end,
  })
  api.nvim_create_autocmd('LspDetach', {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == state.name then
        render.clear(ev.buf)
      end
    end,
  })
end

--- Re-read every buffer's proposals from the server.
M.refresh = render.refresh_all

return M
