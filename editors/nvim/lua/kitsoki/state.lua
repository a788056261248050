--- Shared state of the kitsoki client: what the server last told us, and small helpers.
--- Nothing here decides anything; the server owns the proposals.
local M = {
  name = 'kitsoki', -- the vim.lsp.config name, and so every client's name
  config = {},
  pending = {}, -- workspace uri -> pending count (kitsoki/proposalsChanged, kitsoki/mineStatus)
  marks = {}, -- bufnr -> { {card=, file=, mark=} } rendered in that buffer
  questions = {}, -- operator-question cards waiting to be answered, oldest first
  asking = false, -- a question picker is open
  busy = {}, -- $/progress token -> title, while a pass or an accept runs
  floats = {}, -- the floating window showing the last revert's failing flows
  messages = {}, -- the last messages shown (newest last)
  last_status = nil, -- the last kitsoki/mineStatus (or mineControl) result
  last_decision = nil, -- the last DecisionResult (from a verdict we sent or kitsoki/proposalDecided)
  down = nil, -- { why =, restarting = } while the server is stopped
  stopping = {}, -- client id -> true: stopped by us (a restart), not a crash
}

local levels = vim.log.levels

--- JSON null may come through as vim.NIL.
function M.val(x)
  if x == vim.NIL then
    return nil
  end
  return x
end

--- Tell the person something, on one line that fits the command line: a longer message would
--- stop Neovim at "Press ENTER" (the whole text stays in M.messages, and :KitsokiMine log shows it).
--- Shown after a redraw, so text left on screen by a picker never makes it scroll.
function M.notify(msg, level)
  table.insert(M.messages, msg)
  if #M.messages > 100 then
    table.remove(M.messages, 1)
  end
  vim.schedule(function()
    pcall(vim.cmd.redraw)
    local line = msg:gsub('%s*\n%s*', ' · ')
    local room = math.max((vim.v.echospace or 80) - 1, 20)
    if vim.fn.strdisplaywidth(line) > room then
      line = vim.fn.strcharpart(line, 0, room - 1) .. '…'
    end
    vim.notify(line, level or levels.INFO, { title = 'kitsoki' })
  end)
end

--- Lines in a floating window by the cursor (it closes when the cursor moves): for what is too
--- long for one message line, like the flows a revert failed or :KitsokiMine status.
function M.float(lines)
  vim.schedule(function()
    -- A float still open from the last call is closed, never focused into (open_floating_preview
    -- with a focus_id would jump into it and show the old text): every call shows its own lines.
    local last = M.floats.last
    if last and vim.api.nvim_win_is_valid(last) then
      pcall(vim.api.nvim_win_close, last, true)
    end
    pcall(vim.cmd.redraw)
    local ok, _, win = pcall(vim.lsp.util.open_floating_preview, lines, 'text', {
      border = 'rounded', focus = false, max_width = math.max(math.floor(vim.o.columns * 0.9), 40),
      close_events = { 'CursorMoved', 'CursorMovedI', 'BufLeave', 'InsertEnter' },
    })
    M.floats.last = ok and win or nil
  end)
end

--- A note that stays out of the message history (what is running now); the statusline carries it too.
function M.progress(msg)
  vim.schedule(function()
    pcall(vim.cmd.redraw)
    local room = math.max((vim.v.echospace or 80) - 1, 20)
    vim.api.nvim_echo({ { vim.fn.strcharpart(msg, 0, room), 'Comment' } }, false, {})
  end)
end

--- kitsoki clients, optionally only those attached to bufnr.
function M.clients(bufnr)
  return vim.lsp.get_clients({ name = M.name, bufnr = bufnr })
end

--- The client of bufnr, else the first one running.
function M.client(bufnr)
  local attached = bufnr and M.clients(bufnr)[1]
  return attached or M.clients()[1]
end

local function real(path)
  return vim.uv.fs_realpath(path) or vim.fs.normalize(path)
end

--- Whether two file URIs (or paths) name the same file.
function M.same_file(a, b)
  if not a or not b then
    return false
  end
  if a == b then
    return true
  end
  local fa = a:match('^%a[%w+.-]*://') and vim.uri_to_fname(a) or a
  local fb = b:match('^%a[%w+.-]*://') and vim.uri_to_fname(b) or b
  return real(fa) == real(fb)
end

--- A workspace's key in M.pending, from its URI (kitsoki/proposalsChanged) or path (kitsoki/mineStatus).
function M.ws_key(uri_or_path)
  local path = uri_or_path:match('^%a[%w+.-]*://') and vim.uri_to_fname(uri_or_path) or uri_or_path
  return real(path)
end

--- The workspace (its key in M.pending) whose server serves bufnr, if any.
function M.workspace_of(bufnr)
  local client = M.clients(bufnr)[1]
  return client and client.root_dir and M.ws_key(client.root_dir) or nil
end

--- key -> a short name a person tells workspaces apart by: the folder's name, or parent/name when
--- two served workspaces share a name.
function M.workspace_names()
  local keys = {}
  for key in pairs(M.pending) do
    keys[key] = true
  end
  for _, client in ipairs(M.clients()) do
    if client.root_dir then
      keys[M.ws_key(client.root_dir)] = true
    end
  end
  local count, names = {}, {}
  for key in pairs(keys) do
    local base = vim.fs.basename(key)
    count[base] = (count[base] or 0) + 1
  end
  for key in pairs(keys) do
    local base = vim.fs.basename(key)
    names[key] = count[base] > 1 and (vim.fs.basename(vim.fs.dirname(key)) .. '/' .. base) or base
  end
  return names
end

--- The name of the workspace a card (or any `workspace` URI) belongs to.
function M.workspace_name(uri)
  return uri and M.workspace_names()[M.ws_key(uri)] or '?'
end

--- More than one workspace served: lists then name the workspace of each row.
function M.several_workspaces()
  return vim.tbl_count(M.workspace_names()) > 1
end

--- The loaded buffer showing this URI, if any.
function M.buf_of(uri)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= '' and M.same_file(vim.uri_from_bufnr(buf), uri) then
        return buf
      end
    end
  end
end

--- The server changed files on disk: reload their buffers now, shown or hidden (a hidden buffer
--- would otherwise wait to be entered before it notices).
function M.reload(uris)
  pcall(vim.cmd, 'silent! checktime')
  for _, uri in ipairs(uris or {}) do
    local buf = M.buf_of(uri)
    if buf and not vim.bo[buf].modified then
      pcall(vim.cmd, ('silent! checktime %d'):format(buf))
    end
  end
end

--- Something the statusline shows changed.
function M.changed()
  pcall(vim.cmd, 'redrawstatus!')
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'KitsokiChanged', modeline = false })
end

--- Ask every kitsoki server (one per workspace) and gather result[key]: cb({ {client=, item=} ... })
--- once all have answered (an error is shown, and that server adds nothing).
function M.gather(method, params, key, cb)
  local clients = M.clients()
  if #clients == 0 then
    local down = M.down
    M.notify(down and ('kitsoki: the server is not running (%s); :KitsokiMine restart starts it'):format(down.why)
      or 'kitsoki: no kitsoki-miner server is running (open a file of a kitsoki workspace)', levels.WARN)
    return cb({})
  end
  local out, left = {}, #clients
  for _, client in ipairs(clients) do
    client:request(method, params, function(err, result)
      if err then
        M.notify(('kitsoki: %s'):format(err.message or (method .. ' failed')), levels.ERROR)
      else
        for _, item in ipairs(result and result[key] or {}) do
          table.insert(out, { client = client, item = item })
        end
      end
      left = left - 1
      if left == 0 then
        cb(out)
      end
    end)
  end
end

--- client:request with errors shown to the person; cb(result) on success, cb(nil, err) on error.
function M.request(client, method, params, cb, bufnr)
  local ok = client:request(method, params, function(err, result)
    if err then
      M.notify(('kitsoki: %s'):format(err.message or vim.inspect(err)), levels.ERROR)
      if cb then
        cb(nil, err)
      end
      return
    end
    if cb then
      cb(result)
    end
  end, bufnr)
  if not ok then
    M.notify('kitsoki: the server is not running', levels.ERROR)
    if cb then
      cb(nil, { message = 'not running' })
    end
  end
end

return M
