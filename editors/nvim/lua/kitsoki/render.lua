--- Proposals as extmarks, drawn where their lines would go: for each change block (the card's
--- hunks) a sign on the live line the new lines follow (or the last line they replace), and below
--- it, as virt_lines, one header per proposal and the lines it adds. Proposals that put lines at
--- the same place are numbered ("1/2", "2/2") and drawn one after the other, each with its own
--- header, so two never read as one YAML block. Replaced lines are marked DiffDelete. Nothing is
--- written to the buffer; while a diff split of the buffer is open, only the signs stay (the
--- previews would clash with the diff's filler lines).
local state = require('kitsoki.state')

local api = vim.api
local M = {}

M.ns = api.nvim_create_namespace('kitsoki.proposals')

local SIGNS = {
  pending = { 'K+', 'DiagnosticSignInfo' },
  refining = { 'K*', 'DiagnosticSignInfo' },
  held = { 'K!', 'DiagnosticSignWarn' },
  stale = { 'K~', 'DiagnosticSignHint' },
}

function M.define_highlights()
  api.nvim_set_hl(0, 'KitsokiProposal', { link = 'Comment', default = true })
  api.nvim_set_hl(0, 'KitsokiTitle', { link = 'Title', default = true })
  api.nvim_set_hl(0, 'KitsokiHeld', { link = 'DiagnosticWarn', default = true })
  api.nvim_set_hl(0, 'KitsokiAdded', { link = 'DiffAdd', default = true })
  api.nvim_set_hl(0, 'KitsokiReplaced', { link = 'DiffDelete', default = true })
end

--- The card's change blocks for this file (older servers sent only `line` and `added`).
function M.hunks_of(file)
  local hunks = state.val(file.hunks)
  if hunks and #hunks > 0 then
    return hunks
  end
  return { { after = file.line or 0, removed = {}, added = file.added or {} } }
end

--- Where a hunk is drawn: below the last line it replaces, else below the line its lines follow
--- (above the first line when they go before it). Returns row, above.
function M.anchor(hunk, last)
  local removed = state.val(hunk.removed) or {}
  if #removed > 0 then
    return math.min(removed[#removed], last), false
  end
  if (hunk.after or 0) < 0 then
    return 0, true
  end
  return math.min(hunk.after, last), false
end

--- Columns left of the text (number, sign, fold columns) in the window showing bufnr: the added
--- lines are drawn from the window's left edge with a gutter of that width, so they line up with
--- the buffer's own text, indentation and all.
local function text_offset(bufnr)
  local win = vim.fn.bufwinid(bufnr)
  local info = win ~= -1 and vim.fn.getwininfo(win)[1] or nil
  return info and info.textoff or 0
end

local function gutter(mark, width)
  if width < vim.fn.strdisplaywidth(mark) + 1 then
    return mark .. ' '
  end
  return mark .. string.rep(' ', width - vim.fn.strdisplaywidth(mark))
end

local function header(card, number, count, width)
  local title = ('kitsoki%s: %s'):format(count > 1 and (' %d/%d'):format(number, count) or '', card.title)
  local chunks = { { gutter(number == 1 and '┌' or '├', width), 'KitsokiProposal' }, { title, 'KitsokiTitle' } }
  if card.status == 'held' and state.val(card.failure) then
    table.insert(chunks, { '  held: its last accept was reverted', 'KitsokiHeld' })
  elseif card.status == 'stale' and state.val(card.waits) then
    table.insert(chunks, { '  waiting: ' .. card.waits, 'KitsokiHeld' })
  elseif card.status == 'stale' then
    table.insert(chunks, { '  stale: the file changed; re-drafting', 'KitsokiProposal' })
  elseif card.status == 'refining' then
    table.insert(chunks, { '  (refining: edit the staged draft, then accept)', 'KitsokiProposal' })
  end
  return chunks
end

--- Draw the cards (kitsoki/proposals) that touch this buffer's file; replaces what was drawn.
function M.show(bufnr, cards)
  if not api.nvim_buf_is_valid(bufnr) then
    return
  end
  api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local entries = {}
  state.marks[bufnr] = entries
  local uri = vim.uri_from_bufnr(bufnr)
  local last = math.max(api.nvim_buf_line_count(bufnr) - 1, 0)
  local previews = not vim.b[bufnr].kitsoki_diffing
  local width = text_offset(bufnr)

  -- Every hunk of every card, grouped by the row it is drawn at (cards come highest priority first).
  local spots, rows = {}, {}
  for _, card in ipairs(cards or {}) do
    for _, file in ipairs(card.files or {}) do
      if state.same_file(file.uri, uri) then
        for _, hunk in ipairs(M.hunks_of(file)) do
          local row, above = M.anchor(hunk, last)
          local key = row .. (above and '^' or '')
          if not spots[key] then
            spots[key] = { row = row, above = above, items = {} }
            table.insert(rows, key)
          end
          table.insert(spots[key].items, { card = card, file = file, hunk = hunk })
        end
      end
    end
  end

  -- One extmark per spot (Neovim would stack several marks' virt_lines in its own order).
  for _, key in ipairs(rows) do
    local spot = spots[key]
    local count = #spot.items
    local virt = previews and {} or nil
    for number, item in ipairs(spot.items) do
      local card, hunk = item.card, item.hunk
      if virt then
        table.insert(virt, header(card, number, count, width))
        for _, text in ipairs(state.val(hunk.added) or {}) do
          table.insert(virt, { { gutter(width >= 3 and '│+' or '+', width), 'KitsokiProposal' },
            { text, 'KitsokiAdded' } })
        end
      end
      for _, line in ipairs(state.val(hunk.removed) or {}) do
        if line <= last then
          api.nvim_buf_set_extmark(bufnr, M.ns, line, 0, { line_hl_group = 'KitsokiReplaced' })
        end
      end
    end
    if virt then
      local which = count > 1 and (' (asks which of %d)'):format(count) or ''
      table.insert(virt, { { gutter('└', width), 'KitsokiProposal' },
        { (':KitsokiMine accept | refine | diff | dismiss%s'):format(which), 'KitsokiProposal' } })
    end
    local first = spot.items[1].card
    local sign = SIGNS[first.status] or SIGNS.pending
    local mark = api.nvim_buf_set_extmark(bufnr, M.ns, spot.row, 0, {
      sign_text = sign[1],
      sign_hl_group = sign[2],
      virt_lines = virt,
      virt_lines_above = spot.above,
      virt_lines_leftcol = true,
    })
    for _, item in ipairs(spot.items) do
      table.insert(entries, { card = item.card, file = item.file, mark = mark, row = spot.row })
    end
  end
end

function M.clear(bufnr)
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
  state.marks[bufnr] = nil
end

--- Every buffer: the server is gone, and so is what it said.
function M.clear_all()
  for bufnr in pairs(state.marks) do
    M.clear(bufnr)
  end
end

--- Remove a decided proposal from every buffer at once: redraw each buffer it was drawn in from
--- the cards still there (a spot may hold other proposals too); the server's list follows.
--- `workspace` (a URI or path): only that workspace's proposal (the same recipe can be open in two).
function M.clear_card(id, workspace)
  local ws = workspace and state.ws_key(workspace)
  for bufnr, entries in pairs(state.marks) do
    local keep, hit, seen = {}, false, {}
    for _, entry in ipairs(entries) do
      if entry.card.id == id and (not ws or state.ws_key(entry.card.workspace) == ws) then
        hit = true
      elseif not seen[entry.card.id] then
        seen[entry.card.id] = true
        table.insert(keep, entry.card)
      end
    end
    if hit then
      M.show(bufnr, keep)
    end
  end
end

--- The cards drawn at this row (0-based): on the row they are drawn at or on a line they change.
function M.cards_at(bufnr, row)
  local out, seen = {}, {}
  for _, entry in ipairs(state.marks[bufnr] or {}) do
    local pos = api.nvim_buf_get_extmark_by_id(bufnr, M.ns, entry.mark, {})
    local hit = pos[1] == row
    for _, line in ipairs(entry.file.changed_lines or {}) do
      hit = hit or line == row
    end
    if hit and not seen[entry.card.id] then
      seen[entry.card.id] = true
      table.insert(out, entry.card)
    end
  end
  return out
end

--- Every card drawn anywhere, by id.
function M.known_cards()
  local out = {}
  for _, entries in pairs(state.marks) do
    for _, entry in ipairs(entries) do
      out[entry.card.id] = entry.card
    end
  end
  return out
end

-- -- refresh from the server -----------------------------------------------------------------------

local lens_timers = {}

--- The server's code lenses, when `codelens = true` (off by default: Neovim draws every lens of a
--- line at its end, cut at the window's edge, so the previews above carry the actions instead).
--- vim.lsp.codelens.refresh drops a refresh while one is in flight for the buffer; a short
--- trailing timer makes sure the last change is the one shown.
function M.refresh_lenses(bufnr)
  if not state.config.codelens then
    return
  end
  vim.lsp.codelens.refresh({ bufnr = bufnr })
  local timer = lens_timers[bufnr]
  if timer then
    timer:stop()
  else
    timer = assert(vim.uv.new_timer())
    lens_timers[bufnr] = timer
  end
  timer:start(150, 0, vim.schedule_wrap(function()
    if api.nvim_buf_is_valid(bufnr) then
      vim.lsp.codelens.refresh({ bufnr = bufnr })
    end
  end))
end

--- The proposal id of a staged draft file (`.artifacts/mining/<id>/<target>`), or nil.
function M.draft_id(bufnr)
  return api.nvim_buf_get_name(bufnr):match('/%.artifacts/mining/(%x+)/')
end

--- A staged draft must never pass for the live file: a banner above its first line says so.
local function show_draft(client, bufnr, id)
  client:request('kitsoki/proposal', { id = id }, function(err, card)
    if err or not card or not api.nvim_buf_is_valid(bufnr) then
      return -- decided meanwhile: the server's lens says it is an old draft
    end
    api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
    local target = (card.files or {})[1] and card.files[1].path or '?'
    api.nvim_buf_set_extmark(bufnr, M.ns, 0, 0, {
      virt_lines = {
        { { ('kitsoki: DRAFT of %s for "%s": not the live file'):format(target, card.title), 'KitsokiHeld' } },
        { { (':w saves the draft; :KitsokiMine accept accepts it (%s)'):format(state.val(card.accept_brief) or 'asks first'),
          'KitsokiProposal' } },
      },
      virt_lines_above = true,
    })
    vim.b[bufnr].kitsoki_proposal = card.id
    for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do -- lines above the first one show only as its top fill
      api.nvim_win_call(win, function()
        if vim.fn.line('w0') == 1 then
          vim.fn.winrestview({ topline = 1, topfill = 2 })
        end
      end)
    end
  end, bufnr)
end

--- Ask the server for this buffer's proposals and draw them (and the lenses).
function M.refresh_buffer(client, bufnr)
  if not api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return
  end
  local draft = M.draft_id(bufnr)
  if draft then
    return show_draft(client, bufnr, draft)
  end
  client:request('kitsoki/proposals', { uri = vim.uri_from_bufnr(bufnr) }, function(err, result)
    if err then
      return -- a file outside the served workspace: nothing to draw
    end
    M.show(bufnr, result and result.proposals or {})
    require('kitsoki.questions').drain()
  end, bufnr)
  M.refresh_lenses(bufnr)
end

--- Every buffer the client is attached to.
function M.refresh_client(client)
  for _, bufnr in ipairs(vim.lsp.get_buffers_by_client_id(client.id)) do
    M.refresh_buffer(client, bufnr)
  end
end

function M.refresh_all()
  for _, client in ipairs(state.clients()) do
    M.refresh_client(client)
  end
end

return M
