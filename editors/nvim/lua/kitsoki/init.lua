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
  --- 'ask': an operator-question card about the file in the current window is asked (vim.ui.select)
  --- once Neovim has been idle in Normal mode for question_delay ms; one at a time, each once.
  --- 'quiet': they only show in the statusline ([?N]) and :KitsokiMine queue.
  questions = 'ask',
  question_delay = 1500,
  --- Ask before an accept (it changes files and runs the flows); false skips the question.
  confirm_accept = true,
  --- Also show the server's code lenses (at the end of the line; the previews carry the same actions).
  codelens = false,
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
    -- The failing flows in a float by the cursor: a message that long would wait for Enter.
    local known = render.known_cards()[params.recipe_id]
    local title = (params.title and params.title ~= '') and params.title or (known and known.title) or params.recipe_id
    local lines = { ('kitsoki: reverted "%s"; every byte restored. Failing:'):format(title) }
    for _, failure in ipairs(params.gate_failures) do
      table.insert(lines, '  ' .. failure)
    end
    table.insert(state.messages, table.concat(lines, '\n'))
    state.float(lines)
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

handlers['kitsoki/questionWithdrawn'] = function(_, params, _)
  for _, id in ipairs(params.question_ids or {}) do
    questions.drop(id)
  end
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
      if ev.event == 'BufEnter' then
        questions.drain() -- a card about this file may be waiting
      end
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
  local waiting = 0
  for _, entry in ipairs(state.questions) do
    waiting = waiting + (entry.answered and 0 or 1)
  end
  if waiting > 0 then
    text = text .. (' [?%d]'):format(waiting)
  end
  local _, busy = next(state.busy)
  if busy then
    text = text .. (type(busy) == 'string' and busy:find('^Accepting') and ' (running the flows)' or ' (busy)')
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
