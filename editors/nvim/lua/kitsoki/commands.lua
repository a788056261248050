--- The /mine verbs (:KitsokiMine ...) and the client-side lens commands. Every verdict goes to
--- the server (workspace/executeCommand kitsoki.accept|refine|reject), which runs the apply gate;
--- the client never edits a target file itself.
local state = require('kitsoki.state')
local render = require('kitsoki.render')

local api = vim.api
local levels = vim.log.levels
local val = state.val
local M = {}

M.verbs = { 'status', 'pause', 'resume', 'now', 'scope', 'queue', 'accept', 'refine', 'dismiss', 'diff', 'undo',
  'rejected', 'restore', 'restart', 'log' }

local VERDICT = { accept = 'accept', refine = 'refine', dismiss = 'reject', reject = 'reject' }

-- -- helpers -------------------------------------------------------------------------------------

local function where(card)
  local paths = {}
  for _, file in ipairs(card.files or {}) do
    table.insert(paths, file.path)
  end
  return #paths > 0 and table.concat(paths, ', ') or 'dev-story (a suggestion)'
end

local function describe(card)
  local file = (card.files or {})[1]
  local at = file and ('%s:%d'):format(file.path, (file.line or 0) + 1) or 'suggestion'
  if state.several_workspaces() then -- two workspaces: say whose row it is
    at = state.workspace_name(card.workspace) .. '/' .. at
  end
  return ('[%s] %s  (%s, %s)'):format(card.status, card.title, card.kind, at)
end

local function client_by_id(id)
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- Every open proposal of every kitsoki client: cb({ {client=, card=} ... }).
local function all_cards(cb)
  state.gather('kitsoki/proposals', vim.empty_dict(), 'proposals', function(entries)
    cb(vim.tbl_map(function(e)
      return { client = e.client, card = e.item }
    end, entries))
  end)
end

local function pick_card(entries, prompt, cb)
  if #entries == 0 then
    state.notify('kitsoki: no open proposals')
    return
  end
  if #entries == 1 then
    return cb(entries[1])
  end
  vim.ui.select(entries, {
    prompt = prompt,
    kind = 'kitsoki.proposal',
    format_item = function(entry)
      return describe(entry.card)
    end,
  }, function(entry)
    if entry then
      cb(entry)
    end
  end)
end

--- The proposal an id names, or the one under the cursor, or one picked: cb(client, card).
function M.resolve(id, cb)
  local bufnr = api.nvim_get_current_buf()
  if id and id ~= '' then
    return all_cards(function(entries)
      local exact, prefixed = {}, {}
      for _, entry in ipairs(entries) do
        if entry.card.id == id then
          table.insert(exact, entry)
        elseif vim.startswith(entry.card.id, id) then
          table.insert(prefixed, entry)
        end
      end
      local found = #exact == 1 and exact[1] or (#exact == 0 and #prefixed == 1 and prefixed[1]) or nil
      if not found then
        state.notify(('kitsoki: no single open proposal %q (:KitsokiMine queue lists them)'):format(id), levels.ERROR)
        return
      end
      cb(found.client, found.card)
    end)
  end
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local here = {}
  for _, card in ipairs(render.cards_at(bufnr, row)) do
    table.insert(here, { client = state.client(bufnr), card = card })
  end
  local scratch = vim.b[bufnr].kitsoki_proposal -- the diff split's draft buffer
  if #here == 0 and scratch then
    return M.resolve(scratch, cb)
  end
  if #here > 0 then
    return pick_card(here, 'Which proposal?', function(entry)
      cb(entry.client, entry.card)
    end)
  end
  all_cards(function(entries)
    pick_card(entries, 'Which proposal?', function(entry)
      cb(entry.client, entry.card)
    end)
  end)
end

-- -- verdicts --------------------------------------------------------------------------------------

--- What the person sees after a verdict; then the buffers show what stayed on disk.
function M.after_decision(client, result, title)
  if not result then
    return
  end
  state.last_decision = result
  title = title or result.recipe_id
  local msg, level
  if result.verdict == 'accept' then
    if result.reverted then
      msg = ('kitsoki: reverted "%s" (every byte restored; held): %s'):format(
        title, val(result.failure) or 'the flow gate was red')
      level = levels.WARN
    else
      msg = ('kitsoki: kept "%s" (:KitsokiMine undo takes it back): %s'):format(title, val(result.kept) or 'flows green')
      render.clear_card(result.recipe_id, client and client.root_dir)
    end
  elseif result.verdict == 'refine' then
    msg = ('kitsoki: refining "%s": edit the staged draft, then accept'):format(title)
  else
    msg = ('kitsoki: dismissed "%s"; it is not raised again (:KitsokiMine rejected restores it)'):format(title)
    render.clear_card(result.recipe_id, client and client.root_dir)
  end
  state.notify(msg, level)
  require('kitsoki.questions').drop(result.recipe_id, client and client.id)
  state.reload(result.files)
  if client then
    render.refresh_client(client)
  end
end

--- Target buffers with unsaved edits (the server refuses an accept over those): { {buf=, path=} }.
--- The staged draft's own buffers count too: an accept takes the draft as saved.
local function unsaved(card)
  local out = {}
  local root = card.workspace and vim.uri_to_fname(card.workspace)
  for _, file in ipairs(card.files or {}) do
    local buf = state.buf_of(file.uri)
    if buf and vim.bo[buf].modified then
      table.insert(out, { buf = buf, path = file.path })
    end
    local draft = root and state.buf_of(vim.uri_from_fname(('%s/.artifacts/mining/%s/%s'):format(root, card.id, file.path)))
    if draft and vim.bo[draft].modified then
      table.insert(out, { buf = draft, path = 'the draft of ' .. file.path })
    end
  end
  return out
end

local function paths_of(dirty)
  return table.concat(vim.tbl_map(function(d)
    return d.path
  end, dirty), ', ')
end

--- Write the buffers (the save an accept needs first); false when one cannot be written.
local function save(dirty)
  for _, d in ipairs(dirty) do
    local ok, err = pcall(api.nvim_buf_call, d.buf, function()
      vim.cmd('silent write')
    end)
    if not ok then
      state.notify(('kitsoki: %s could not be saved: %s'):format(d.path, err), levels.ERROR)
      return false
    end
  end
  return true
end

--- Send a verdict (accept|refine|reject) to the server; no question asked here.
function M.send(client, card, verdict, done)
  if verdict == 'accept' then
    local dirty = unsaved(card)
    if #dirty > 0 then
      state.notify(('kitsoki: %s has unsaved changes; :write or :edit! it before accepting'):format(paths_of(dirty)),
        levels.ERROR)
      return
    end
    -- No message that waits for Enter: a note on the command line and the statusline while it runs.
    state.progress(('kitsoki: accepting "%s": %s…'):format(card.title, val(card.accept_brief) or 'running the gate'))
  end
  state.request(client, 'workspace/executeCommand', {
    command = 'kitsoki.' .. verdict,
    arguments = { { id = card.id } },
  }, function(result)
    M.after_decision(client, result, card.title)
    if done then
      done(result)
    end
  end)
end

--- Neovim applies workspace edits without asking (it ignores needsConfirmation), so an accept
--- always asks here first: the proposal, the files it changes and what the gate will do, as the
--- server says it from the gate's own preview (`accept_says`; `confirm_accept = false` in setup()
--- skips the question). A target with unsaved edits is offered "save and accept" up front.
function M.confirm_accept(card, cb)
  local dirty = unsaved(card)
  if state.config.confirm_accept == false and #dirty == 0 then
    return cb()
  end
  local says = val(card.accept_says) or 'the flow gate decides whether it is kept'
  local items = {}
  if #dirty > 0 then
    table.insert(items, { label = 'save and accept', description = ('%s %s unsaved edits: saved first. %s'):format(
      paths_of(dirty), #dirty == 1 and 'has' or 'have', says) })
  else
    table.insert(items, { label = 'accept', description = says })
  end
  table.insert(items, { label = 'cancel', description = 'change nothing' })
  vim.ui.select(items, {
    prompt = ('Accept "%s"?'):format(card.title),
    kind = 'kitsoki.confirm',
    format_item = function(item)
      return ('%s: %s'):format(item.label, item.description)
    end,
  }, function(item)
    if item and item.label == 'save and accept' then
      if save(dirty) then
        -- The save may have made the proposal stale (its file changed): the server says so.
        vim.defer_fn(cb, 100)
      end
    elseif item and item.label == 'accept' then
      cb()
    else
      state.notify(('kitsoki: accept of "%s" cancelled'):format(card.title))
    end
  end)
end

--- A rejection throws a proposal away (it can be restored): asked first, like an accept.
function M.confirm_reject(card, cb)
  if state.config.confirm_dismiss == false then
    return cb()
  end
  vim.ui.select({
    { label = 'dismiss', description = 'reject it; not raised again (:KitsokiMine rejected restores it)' },
    { label = 'cancel', description = 'keep it' },
  }, {
    prompt = ('Dismiss "%s"?'):format(card.title),
    kind = 'kitsoki.confirm',
    format_item = function(item)
      return ('%s: %s'):format(item.label, item.description)
    end,
  }, function(item)
    if item and item.label == 'dismiss' then
      cb()
    end
  end)
end

--- The confirmation for a proposal known by id only (a question card's answer): cb() once confirmed.
function M.confirm_id(client, id, cb)
  state.request(client, 'kitsoki/proposal', { id = id }, function(card)
    if card then
      M.confirm_accept(card, cb)
    end
  end)
end

--- The card with its detail (what the gate will do): cb(full).
local function detailed(client, card, cb)
  if val(card.accept_says) ~= nil then
    return cb(card)
  end
  state.request(client, 'kitsoki/proposal', { id = card.id }, function(full)
    if full then
      cb(full)
    end
  end)
end

function M.accept(client, card)
  if card.status == 'stale' then
    local why = val(card.waits) or 'its file changed; it is being re-drafted'
    state.notify(('kitsoki: "%s" is stale: %s'):format(card.title, why), levels.WARN)
    return
  end
  detailed(client, card, function(full)
    M.confirm_accept(full, function()
      M.send(client, full, 'accept')
    end)
  end)
end

function M.dismiss(client, card)
  M.confirm_reject(card, function()
    M.send(client, card, 'reject')
  end)
end

-- -- diff --------------------------------------------------------------------------------------------

local function show_unified(card, text)
  vim.cmd('botright vertical new')
  local buf = api.nvim_get_current_buf()
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'nofile', 'wipe', false
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n', { plain = true }))
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'diff'
  vim.b[buf].kitsoki_proposal = card.id
  pcall(api.nvim_buf_set_name, buf, ('kitsoki://%s.diff'):format(card.id))
end

--- The live file beside the staged draft, in diff mode: a vertical split with a scratch buffer.
function M.diff(client, card, uri)
  local file
  for _, f in ipairs(card.files or {}) do
    if (uri and state.same_file(f.uri, uri)) or (not uri and state.same_file(f.uri, vim.uri_from_bufnr(0))) then
      file = f
    end
  end
  file = file or (card.files or {})[1]
  if not file then -- a suggestion for dev-story: no file here, show the server's diff text
    return state.request(client, 'kitsoki/proposal', { id = card.id }, function(detail)
      if detail then
        show_unified(card, detail.diff ~= '' and detail.diff or detail.summary_markdown)
      end
    end)
  end
  state.request(client, 'kitsoki/proposalContent', { id = card.id, uri = file.uri }, function(result)
    if not result then
      return
    end
    local fname = vim.uri_to_fname(file.uri)
    local live = state.buf_of(file.uri)
    local render_live = function(diffing)
      local buf = state.buf_of(file.uri)
      if buf then
        vim.b[buf].kitsoki_diffing = diffing or nil
        render.refresh_buffer(client, buf)
      end
    end
    if live and vim.fn.bufwinid(live) ~= -1 then
      api.nvim_set_current_win(vim.fn.bufwinid(live))
    else
      vim.cmd.edit(vim.fn.fnameescape(fname))
    end
    local live_win = api.nvim_get_current_win()
    vim.cmd('rightbelow vertical new')
    local buf = api.nvim_get_current_buf()
    vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'nofile', 'wipe', false
    local lines = vim.split(result.text, '\n', { plain = true })
    if lines[#lines] == '' then
      table.remove(lines)
    end
    api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modifiable = false
    vim.b[buf].kitsoki_proposal = card.id
    pcall(api.nvim_buf_set_name, buf, ('kitsoki://%s/%s'):format(card.id, file.path))
    vim.bo[buf].filetype = vim.bo[api.nvim_win_get_buf(live_win)].filetype
    vim.cmd.diffthis()
    api.nvim_win_call(live_win, function()
      vim.cmd.diffthis()
    end)
    render_live(true) -- the previews would clash with the diff's filler lines: only the signs stay
    api.nvim_create_autocmd('BufWipeout', {
      buffer = buf,
      once = true,
      callback = function()
        if api.nvim_win_is_valid(live_win) then
          api.nvim_win_call(live_win, function()
            vim.cmd.diffoff()
          end)
        end
        vim.schedule(function()
          render_live(false)
        end)
      end,
    })
  end)
end

-- -- one proposal: what to do with it ---------------------------------------------------------------

--- What can be done with one proposal; the accept row says what the gate will do (the detail's
--- `accept_brief`, from the gate's own preview). Dismiss last: it throws the proposal away.
local function actions_for(card)
  return {
    { label = 'accept', description = ('%s (asks first)'):format(val(card.accept_brief) or 'through the gate') },
    { label = 'refine', description = 'open the staged draft to edit' },
    { label = 'diff', description = 'the live file beside the staged draft' },
    { label = 'open', description = 'go to the line it changes' },
    { label = 'dismiss', description = 'reject; not raised again (asks first; restorable)' },
  }
end

function M.act(client, card, action, uri)
  if action == 'accept' then
    M.accept(client, card)
  elseif action == 'diff' then
    M.diff(client, card, uri)
  elseif action == 'open' then
    local file = (card.files or {})[1]
    if file then
      vim.cmd.edit(vim.fn.fnameescape(vim.uri_to_fname(file.uri)))
      pcall(api.nvim_win_set_cursor, 0, { (file.line or 0) + 1, 0 })
    end
  elseif action == 'dismiss' or action == 'reject' then
    M.dismiss(client, card)
  elseif VERDICT[action] then
    M.send(client, card, VERDICT[action])
  end
end

function M.choose_action(client, card, uri)
  detailed(client, card, function(full)
    M.choose_action_of(client, full, uri)
  end)
end

function M.choose_action_of(client, card, uri)
  vim.ui.select(actions_for(card), {
    prompt = describe(card),
    kind = 'kitsoki.action',
    format_item = function(item)
      return ('%s: %s'):format(item.label, item.description)
    end,
  }, function(item)
    if item then
      M.act(client, card, item.label, uri)
    end
  end)
end

-- -- status --------------------------------------------------------------------------------------------

local function status_line(ws)
  local name = vim.fs.basename(ws.workspace or '?')
  local mode = not ws.enabled and 'off' or ws.paused and 'paused' or ws.running and 'running a pass' or 'on'
  local parts = { ('kitsoki %s: mining %s, %d pending'):format(name, mode, ws.pending or 0) }
  local last = val(ws.last_pass)
  if last then
    table.insert(parts, ('last pass (%s): %d sessions, %d recipes'):format(last.trigger, last.sessions, last.recipes))
  else
    table.insert(parts, 'no pass yet')
  end
  if ws.transcript_dirs and #ws.transcript_dirs > 0 then
    table.insert(parts, 'transcripts: ' .. table.concat(ws.transcript_dirs, ', '))
  end
  for _, key in ipairs({ 'note', 'last_error', 'proposer_error' }) do
    if val(ws[key]) then
      table.insert(parts, key:gsub('_', ' ') .. ': ' .. ws[key])
    end
  end
  return table.concat(parts, '; ')
end

local function status_lines(result)
  local lines = {}
  for _, ws in ipairs(result.workspaces or {}) do
    state.pending[state.ws_key(ws.workspace)] = ws.pending or 0
    table.insert(lines, status_line(ws))
    for _, problem in ipairs(ws.problems or {}) do
      table.insert(lines, ('  does not load: %s:%d:%d: %s'):format(problem.file, problem.line, problem.column,
        problem.message))
    end
  end
  return lines
end

--- One float for every server's answer (two workspaces: two servers), shown once all have
--- answered; each call replaces the last float, so asking twice never lands in an empty one.
local function show_status(lines)
  state.changed()
  if #lines == 0 then
    return state.notify('kitsoki: no kitsoki workspace is served')
  end
  table.insert(state.messages, table.concat(lines, '\n'))
  local shown = {}
  for _, line in ipairs(lines) do
    vim.list_extend(shown, vim.split(line, '; ', { plain = true }))
  end
  state.float(shown)
end

local function each_client(fn)
  local clients = state.clients()
  if #clients == 0 then
    local down = state.down
    state.notify(down and ('kitsoki: the server is not running (%s); :KitsokiMine restart starts it'):format(down.why)
      or 'kitsoki: no kitsoki-miner server is running (open a file of a kitsoki workspace)', levels.WARN)
  end
  for _, client in ipairs(clients) do
    fn(client)
  end
end

function M.status()
  local clients = state.clients()
  if #clients == 0 then
    return each_client(function() end)
  end
  local lines, left = {}, #clients
  for _, client in ipairs(clients) do
    state.request(client, 'kitsoki/mineStatus', vim.empty_dict(), function(result)
      if result then
        state.last_status = result
        vim.list_extend(lines, status_lines(result))
      end
      left = left - 1
      if left == 0 then
        show_status(lines)
      end
    end)
  end
end

function M.control(action, dirs)
  local params = { action = action }
  if dirs then
    params.dirs = dirs
  end
  local client = state.client(api.nvim_get_current_buf())
  if not client then
    return each_client(function() end)
  end
  state.request(client, 'kitsoki/mineControl', params, function(result)
    if result then
      state.last_status = result
      show_status(status_lines(result))
    end
  end)
end

-- -- :KitsokiMine -----------------------------------------------------------------------------------

function M.run(args)
  local verb, rest = args[1], vim.list_slice(args, 2)
  if verb == nil or verb == 'status' then
    return M.status()
  elseif verb == 'pause' or verb == 'resume' or verb == 'now' then
    return M.control(verb)
  elseif verb == 'scope' then
    if #rest == 0 then
      return state.notify('kitsoki: :KitsokiMine scope <dir> [<dir> ...]', levels.ERROR)
    end
    local dirs = {}
    for _, dir in ipairs(rest) do
      table.insert(dirs, (vim.fn.fnamemodify(vim.fn.expand(dir), ':p'):gsub('/$', '')))
    end
    return M.control('scope', dirs)
  elseif verb == 'queue' then
    return all_cards(function(entries)
      if #entries == 0 then
        return state.notify('kitsoki: no open proposals')
      end
      vim.ui.select(entries, {
        prompt = ('kitsoki: %d open proposal%s'):format(#entries, #entries == 1 and '' or 's'),
        kind = 'kitsoki.proposal',
        format_item = function(entry)
          return describe(entry.card)
        end,
      }, function(entry)
        if entry then
          M.choose_action(entry.client, entry.card)
        end
      end)
    end)
  elseif verb == 'log' then
    return M.show_log()
  elseif verb == 'undo' or verb == 'restore' then
    return require('kitsoki.takeback').take_back(verb, rest[1])
  elseif verb == 'rejected' then
    return require('kitsoki.takeback').rejected()
  elseif verb == 'restart' then
    return require('kitsoki').restart('asked for with :KitsokiMine restart')
  elseif verb == 'accept' or verb == 'refine' or verb == 'dismiss' or verb == 'reject' or verb == 'diff' then
    return M.resolve(rest[1], function(client, card)
      M.act(client, card, verb == 'reject' and 'dismiss' or verb)
    end)
  end
  state.notify(('kitsoki: unknown verb %q; one of %s'):format(verb, table.concat(M.verbs, ' ')), levels.ERROR)
end

--- Every message of this session, in full (the command line shows each on one line).
function M.show_log()
  vim.cmd('botright new')
  local buf = api.nvim_get_current_buf()
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'nofile', 'wipe', false
  local lines = {}
  for _, msg in ipairs(state.messages) do
    vim.list_extend(lines, vim.split(msg, '\n', { plain = true }))
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, #lines > 0 and lines or { 'kitsoki: nothing said yet' })
  vim.bo[buf].modifiable = false
  pcall(api.nvim_buf_set_name, buf, 'kitsoki://log')
end

function M.complete(arglead, cmdline)
  local words = vim.split(cmdline, '%s+', { trimempty = true })
  local n = #words + (cmdline:match('%s$') and 1 or 0)
  if n <= 2 then
    return vim.tbl_filter(function(v)
      return vim.startswith(v, arglead)
    end, M.verbs)
  end
  local verb = words[2]
  if verb == 'scope' then
    return vim.fn.getcompletion(arglead, 'dir')
  end
  if vim.tbl_contains({ 'accept', 'refine', 'dismiss', 'diff' }, verb) then
    local ids = vim.tbl_keys(render.known_cards())
    table.sort(ids)
    return vim.tbl_filter(function(id)
      return vim.startswith(id, arglead)
    end, ids)
  end
  return {}
end

function M.create_user_command()
  api.nvim_create_user_command('KitsokiMine', function(opts)
    M.run(opts.fargs)
  end, {
    nargs = '*',
    complete = M.complete,
    desc = 'kitsoki-miner: status|pause|resume|now|scope <dir>|queue|accept|refine|dismiss|diff|undo|restore [id]|rejected|restart|log',
    force = true,
  })
end

-- -- client-side lens commands ----------------------------------------------------------------------

local function first_arg(command)
  local arg = (command.arguments or {})[1]
  if type(arg) == 'string' then
    return { id = arg }
  end
  return type(arg) == 'table' and arg or {}
end

--- Looks the card up on the server (lens arguments carry only the id).
local function with_card(ctx, id, cb)
  local client = client_by_id(ctx.client_id) or state.client(ctx.bufnr)
  if not client or not id then
    return
  end
  state.request(client, 'kitsoki/proposal', { id = id }, function(card)
    if card then
      cb(client, card)
    end
  end)
end

--- client:exec_cmd looks in vim.lsp.commands before asking the server.
function M.register_lsp_commands()
  vim.lsp.commands['kitsoki.accept'] = function(command, ctx)
    with_card(ctx, first_arg(command).id, M.accept)
  end
  vim.lsp.commands['kitsoki.refine'] = function(command, ctx)
    with_card(ctx, first_arg(command).id, function(client, card)
      M.send(client, card, 'refine')
    end)
  end
  vim.lsp.commands['kitsoki.reject'] = function(command, ctx)
    with_card(ctx, first_arg(command).id, M.dismiss)
  end
  vim.lsp.commands['kitsoki.diff'] = function(command, ctx)
    local arg = first_arg(command)
    with_card(ctx, arg.id, function(client, card)
      M.diff(client, card, arg.uri)
    end)
  end
  -- the one lens of a proposal that shares its line with others
  vim.lsp.commands['kitsoki.choose'] = function(command, ctx)
    local arg = first_arg(command)
    with_card(ctx, arg.id, function(client, card)
      M.choose_action(client, card, arg.uri)
    end)
  end
  vim.lsp.commands['kitsoki.showProposals'] = function(command, ctx)
    local client = client_by_id(ctx.client_id) or state.client(ctx.bufnr)
    if not client then
      return
    end
    local uri = first_arg(command).uri
    state.request(client, 'kitsoki/proposals', uri and { uri = uri } or vim.empty_dict(), function(result)
      local entries = {}
      for _, card in ipairs(result and result.proposals or {}) do
        table.insert(entries, { client = client, card = card })
      end
      pick_card(entries, 'kitsoki: proposals for this file', function(entry)
        M.choose_action(client, entry.card, uri)
      end)
    end)
  end
end

return M
