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
  --- A server that stops is started again after 1, 2, 4, 8, 16 s; after this many stops in three
  --- minutes it is left stopped (`:KitsokiMine restart` starts it again).
  max_restarts = 5,
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
  questions.drop(params.recipe_id, ctx.client_id)
  if params.verdict == 'reject' or (params.verdict == 'accept' and not params.reverted) then
    render.clear_card(params.recipe_id, params.workspace)
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
  state.reload(params.files)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    render.refresh_client(client)
  end
end

handlers['kitsoki/question'] = function(_, params, ctx)
  questions.push(ctx.client_id, params)
end

handlers['kitsoki/questionWithdrawn'] = function(_, params, ctx)
  for _, id in ipairs(params.question_ids or {}) do
    questions.drop(id, ctx.client_id)
  end
end

handlers['kitsoki/proposalTakenBack'] = function(_, params, ctx)
  questions.drop(params.recipe_id, ctx.client_id)
  local title = (params.title and params.title ~= '') and params.title or params.recipe_id
  local msg
  if params.how == 'saved' then
    msg = ('kitsoki: the saved file no longer holds the accepted "%s": recorded as undone; it is offered again'):format(title)
  elseif params.action == 'undo' then
    msg = ('kitsoki: undid the accept of "%s" (the bytes before it are back); it is offered again'):format(title)
  else
    msg = ('kitsoki: restored "%s"; it is offered again'):format(title)
  end
  state.notify(msg, levels.WARN)
  state.reload(params.restored)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    render.refresh_client(client)
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
  local down = state.down
  if down and down.restarting then -- a restart we started: say it is back
    state.down = nil
    state.notify(('kitsoki: the server was restarted (it had stopped: %s)'):format(down.why))
    state.changed()
  end
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
--- pass or a gated accept runs. With several workspaces served, the count is the current buffer's
--- workspace's, named, and the others' follow ("kitsoki app-a: 3 proposals, app-b: 1"). While the
--- server is down: "kitsoki: server stopped" (or "restarting"). Empty when no server was started.
function M.statusline()
  local down = state.down
  if down then
    return down.restarting and 'kitsoki: server stopped, restarting…' or 'kitsoki: server stopped (:KitsokiMine restart)'
  end
  if #state.clients() == 0 then
    return ''
  end
  local here = state.workspace_of(api.nvim_get_current_buf())
  local names = state.workspace_names()
  local keys = vim.tbl_keys(state.pending)
  table.sort(keys)
  local text
  if #keys <= 1 then
    local n = keys[1] and state.pending[keys[1]] or 0
    text = ('kitsoki: %d proposal%s'):format(n, n == 1 and '' or 's')
  else
    local first = here and state.pending[here] ~= nil and here or keys[1]
    local n = state.pending[first] or 0
    local parts = { ('kitsoki %s: %d proposal%s'):format(names[first] or '?', n, n == 1 and '' or 's') }
    for _, key in ipairs(keys) do
      if key ~= first then
        table.insert(parts, ('%s: %d'):format(names[key] or '?', state.pending[key]))
      end
    end
    text = table.concat(parts, ', ')
  end
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

-- -- root: never a staged draft ------------------------------------------------------------------------

--- The folder holding `.kitsoki.yaml` above the buffer's file, skipping kitsoki-miner's own state: a
--- staged draft (`.artifacts/mining/<id>/`) has a `.kitsoki.yaml` of its own, and is never a
--- workspace (a draft opened for refine belongs to the workspace above it).
function M.root_dir(bufnr, on_dir)
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' then
    return
  end
  local path = vim.fs.normalize(name)
  local state_at = path:find('/.artifacts/', 1, true)
  local start = state_at and path:sub(1, state_at - 1) or vim.fs.dirname(path)
  local markers = state.config.root_markers or { '.kitsoki.yaml' }
  local marker = vim.fs.find(markers, { path = start, upward = true, type = 'file' })[1]
  if marker and not marker:find('/.artifacts/', 1, true) then
    on_dir(vim.fs.dirname(marker))
  end
end

-- -- a server that stops -----------------------------------------------------------------------------

local restarts = {} -- times (seconds) of the automatic restarts in the last three minutes

--- Start the server again for every buffer it served (the same FileType path as at start).
function M.restart(why)
  state.down = state.down or { why = why or 'asked for' }
  state.down.restarting = true
  state.changed()
  for _, client in ipairs(state.clients()) do
    state.stopping[client.id] = true
    client:stop()
  end
  vim.defer_fn(function()
    pcall(vim.cmd.doautoall, 'nvim.lsp.enable FileType')
    vim.defer_fn(function() -- nothing attached (no kitsoki buffer open): not down, just not needed
      if state.down and state.down.restarting and #state.clients() == 0 then
        state.down = nil
        state.changed()
      end
    end, 15000)
  end, 100)
end

local function on_exit(code, signal, client_id)
  vim.schedule(function()
    if state.stopping[client_id] or vim.v.exiting ~= vim.NIL then
      state.stopping[client_id] = nil
      return -- we stopped it (a restart, :KitsokiMine restart) or Neovim is quitting
    end
    local why = signal ~= 0 and ('killed by signal %d'):format(signal) or ('exit code %d'):format(code)
    local now = vim.uv.now() / 1000
    while restarts[1] and now - restarts[1] > 180 do
      table.remove(restarts, 1)
    end
    render.clear_all()
    if #restarts >= (state.config.max_restarts or 5) then
      state.down = { why = why }
      state.notify(('kitsoki: the server stopped again (%s), %d times in three minutes: not restarted. '
        .. ':KitsokiMine restart starts it, :KitsokiMine log shows what was said'):format(why, #restarts), levels.ERROR)
      state.changed()
      return
    end
    local delay = 2 ^ #restarts -- 1, 2, 4, 8, 16 s
    table.insert(restarts, now)
    state.down = { why = why, restarting = true }
    state.notify(('kitsoki: the server stopped (%s); restarting it in %d s (:KitsokiMine restart: now)'):format(why, delay),
      levels.WARN)
    state.changed()
    vim.defer_fn(function()
      if state.down and state.down.restarting and #state.clients() == 0 then
        pcall(vim.cmd.doautoall, 'nvim.lsp.enable FileType')
      end
    end, delay * 1000)
  end)
end

M.on_exit = on_exit

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
    root_dir = M.root_dir, -- the folder with .kitsoki.yaml, never a staged draft under .artifacts/
    workspace_required = true, -- never start on a YAML file outside a kitsoki workspace
    init_options = config.init_options,
    handlers = handlers,
    on_exit = on_exit,
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

  -- Neovim's own word on a server that died ("Client kitsoki quit with exit code ... Check log for
  -- errors: <path>") wraps past the command line and stops at Press ENTER; on_exit above says it on
  -- one line (and what happens next), so that one goes to :KitsokiMine log only.
  local notify = vim.notify
  vim.notify = function(msg, level, opts)
    if type(msg) == 'string' and msg:find('^Client ' .. vim.pesc(state.name) .. ' quit with exit code') then
      table.insert(state.messages, msg)
      return
    end
    return notify(msg, level, opts)
  end

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
