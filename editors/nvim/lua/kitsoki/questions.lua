--- Operator-question cards (kitsoki/question, kitsoki's AskUserQuestion shape). A person sees at
--- most one at a time, each at most once, and never before they can use the buffer:
---
--- - a card waits until Neovim is idle in Normal mode (no new card for a moment, nothing typed);
--- - only a card about the file in the current window is asked (the others wait in the statusline's
---   `[?N]` and `:KitsokiMine queue` until their file is entered);
--- - one card is asked per burst, through vim.ui.select; cancelling means "later", and that card
---   is not asked again (it stays in the queue);
--- - a card is dropped when its proposal is decided or withdrawn (kitsoki/questionWithdrawn).
---
--- The answer goes back as kitsoki/answerQuestion {question_id, answers: {"<question>": "<label>"}}.
--- `questions = 'quiet'` never asks: the cards only wait in the statusline and the queue.
local state = require('kitsoki.state')

local api = vim.api
local M = {}

local timer = nil

function M.push(client_id, card)
  for _, entry in ipairs(state.questions) do
    if entry.card.question_id == card.question_id and entry.client_id == client_id then
      return -- already waiting
    end
  end
  table.insert(state.questions, { client_id = client_id, card = card })
  state.changed()
  M.drain()
end

--- A proposal was decided or withdrawn: its question no longer waits.
--- `client_id`: only that server's question (the same recipe can be open in two workspaces).
function M.drop(question_id, client_id)
  for i = #state.questions, 1, -1 do
    local entry = state.questions[i]
    if entry.card.question_id == question_id and (client_id == nil or entry.client_id == client_id) then
      if entry.asking then
        entry.answered = true -- the picker is open; its answer will be ignored
      else
        table.remove(state.questions, i)
      end
    end
  end
  state.changed()
end

local function remove(entry)
  for i, e in ipairs(state.questions) do
    if e == entry then
      table.remove(state.questions, i)
      break
    end
  end
  state.changed()
end

local function format_option(option)
  local desc = state.val(option.description)
  return (desc and desc ~= '') and ('%s: %s'):format(option.label, desc) or option.label
end

local function answer(entry, answers)
  local client = vim.lsp.get_client_by_id(entry.client_id)
  if not client then
    return
  end
  local title = entry.card.questions[1] and entry.card.questions[1].question
  local commands = require('kitsoki.commands')
  local send = function()
    state.request(client, 'kitsoki/answerQuestion', { question_id = entry.card.question_id, answers = answers },
      function(result)
        commands.after_decision(client, result, title)
      end)
  end
  local first = next(answers) and answers[next(answers)]
  if first == 'accept' and entry.card.kind ~= 'learnings' then
    return commands.confirm_id(client, entry.card.question_id, send) -- an accept asks first, always
  end
  send()
end

--- Ask each question of the card in turn; cb(answers) with all of them, or cb(nil) when one is cancelled.
--- `where`: the workspace's name when several are served (else nil).
local function ask(questions, i, answers, cb, where)
  local q = questions[i]
  if not q then
    return cb(answers)
  end
  local header = (state.val(q.header) or 'kitsoki') .. (where and (' (%s)'):format(where) or '')
  vim.ui.select(q.options or {}, {
    prompt = ('%s %s'):format(header, q.question),
    kind = 'kitsoki.question',
    format_item = format_option,
  }, function(option)
    if not option then
      return cb(nil)
    end
    answers[q.question] = q.multiSelect and { option.label } or option.label
    ask(questions, i + 1, answers, cb, where)
  end)
end

local function idle()
  local mode = api.nvim_get_mode()
  return mode.mode == 'n' and not mode.blocking and vim.fn.getcmdtype() == ''
end

--- Whether a question's proposal changes the file in the current window. Proposals are matched
--- by id and workspace: the same recipe (same id) can be open in two workspaces.
local function about_here(entry, here)
  local ws = state.val(entry.card.workspace)
  for _, marks in pairs(state.marks) do
    for _, mark in ipairs(marks) do
      local card = mark.card
      if card.id == entry.card.question_id and (not ws or state.same_file(card.workspace, ws))
        and state.same_file(mark.file.uri, here) then
        return true
      end
    end
  end
  return false
end

--- The waiting card to ask now: never asked, about the file in the current window (learnings
--- cards are about no file: they are asked wherever you are).
local function next_entry()
  local here = vim.uri_from_bufnr(api.nvim_get_current_buf())
  for _, entry in ipairs(state.questions) do
    if not entry.asked then
      if entry.card.kind == 'learnings' or about_here(entry, here) then
        return entry
      end
    end
  end
end

local function ask_now()
  if state.asking or not idle() then
    return
  end
  local entry = next_entry()
  if not entry then
    return
  end
  state.asking = true
  entry.asking, entry.asked = true, true
  local ws = state.val(entry.card.workspace)
  local where = ws and state.several_workspaces() and state.workspace_name(ws) or nil
  ask(entry.card.questions or {}, 1, {}, function(answers)
    state.asking = false
    entry.asking = false
    if answers and not entry.answered and next(answers) ~= nil then
      remove(entry)
      vim.cmd.redraw()
      answer(entry, answers)
    elseif entry.answered then
      remove(entry)
    end
    state.changed()
  end, where)
end

--- Ask (at most) one waiting card once Neovim has been idle for `question_delay` ms.
function M.drain()
  if state.config.questions ~= 'ask' or #state.questions == 0 then
    return
  end
  if not timer then
    timer = assert(vim.uv.new_timer())
  end
  timer:stop()
  timer:start(state.config.question_delay or 1500, 0, vim.schedule_wrap(function()
    if idle() then
      ask_now()
    else
      M.drain() -- typing, a prompt or a picker is open: try again later
    end
  end))
end

return M
