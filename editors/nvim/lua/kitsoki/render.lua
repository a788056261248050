--- Proposals as extmarks: a sign on the first changed row and the lines the proposal would add,
--- as virt_lines (DiffAdd) below it. Their own namespace; nothing is written to the buffer.
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
  api.nvim_set_hl(0, 'KitsokiHeld', { link = 'DiagnosticWarn', default = true })
end

local function header(card)
  local text = ('  kitsoki: %s [%s]'):format(card.title, card.status)
  if card.status == 'held' and state.val(card.failure) then
    return { { text, 'KitsokiProposal' }, { '  last accept reverted: ' .. card.failure, 'KitsokiHeld' } }
  elseif card.status == 'stale' then
    return { { text .. ' (the file changed; re-drafting)', 'KitsokiProposal' } }
  end
  return { { text, 'KitsokiProposal' } }
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
  for _, card in ipairs(cards or {}) do
    for _, file in ipairs(card.files or {}) do
      if state.same_file(file.uri, uri) then
        local row = math.min(math.max(file.line or 0, 0), last)
        local virt = { header(card) }
        for _, text in ipairs(file.added or {}) do
          table.insert(virt, { { text, 'DiffAdd' } })
        end
        local sign = SIGNS[card.status] or SIGNS.pending
        local mark = api.nvim_buf_set_extmark(bufnr, M.ns, row, 0, {
          sign_text = sign[1],
          sign_hl_group = sign[2],
          virt_lines = virt,
        })
        table.insert(entries, { card = card, file = file, mark = mark })
      end
    end
  end
end

function M.clear(bufnr)
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
  state.marks[bufnr] = nil
end

--- Remove a decided proposal's marks from every buffer.
function M.clear_card(id)
  for bufnr, entries in pairs(state.marks) do
    local keep = {}
    for _, entry in ipairs(entries) do
      if entry.card.id == id then
        if api.nvim_buf_is_valid(bufnr) then
          pcall(api.nvim_buf_del_extmark, bufnr, M.ns, entry.mark)
        end
      else
        table.insert(keep, entry)
      end
    end
    state.marks[bufnr] = keep
  end
end

--- The cards drawn at this row (0-based): on the sign's row or on a line they change.
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

--- vim.lsp.codelens.refresh drops a refresh while one is in flight for the buffer; a short
--- trailing timer makes sure the last change is the one shown. (Neovim 0.11 does not advertise
--- codeLens refreshSupport, so the server never asks for this itself.)
function M.refresh_lenses(bufnr)
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

--- Ask the server for this buffer's proposals and draw them (and the lenses).
function M.refresh_buffer(client, bufnr)
  if not api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return
  end
  client:request('kitsoki/proposals', { uri = vim.uri_from_bufnr(bufnr) }, function(err, result)
    if err then
      return -- a file outside the served workspace: nothing to draw
    end
    M.show(bufnr, result and result.proposals or {})
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
