--- Operator-question cards (kitsoki/question, kitsoki's AskUserQuestion shape), asked one at a
--- time through vim.ui.select. They are queued, never asked from inside the notification handler,
--- and only in Normal mode, so a card never interrupts typing. The answer goes back as
--- kitsoki/answerQuestion {question_id, answers: {"<question>": "<label>"}}.
local state = require('kitsoki.state')

local api = vim.api
local M = {}

local waiting_for_normal = false

function M.push(client_id, card)
  for _, entry in ipairs(state.questions) do
    if entry.card.question_id == card.question_id then
      return -- already waiting
    end
  end
  table.insert(state.questions, { client_id = client_id, card = card })
  state.changed()
  M.drain()
end

--- A proposal was decided some other way: its question no longer waits.
function M.drop(question_id)
  for i = #state.questions, 1, -1 do
    local entry = state.questions[i]
    if entry.card.question_id == question_id then
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
  state.request(client, 'kitsoki/answerQuestion', { question_id = entry.card.question_id, answers = answers },
    function(result)
      require('kitsoki.commands').after_decision(client, result, title)
    end)
end

--- Ask each question of the card in turn; cb(answers) with all of them, or cb(nil) when one is cancelled.
local function ask(questions, i, answers, cb)
  local q = questions[i]
  if not q then
    return cb(answers)
  end
  local header = state.val(q.header) or 'kitsoki'
  vim.ui.select(q.options or {}, {
    prompt = ('%s %s'):format(header, q.question),
    kind = 'kitsoki.question',
    format_item = format_option,
  }, function(option)
    if not option then
      return cb(nil)
    end
    answers[q.question] = q.multiSelect and { option.label } or option.label
    ask(questions, i + 1, answers, cb)
  end)
end

local function ready()
  local mode = api.nvim_get_mode()
  return mode.mode == 'n' and not mode.blocking
end

function M.drain()
  if state.asking or #state.questions == 0 or state.config.questions ~= 'ask' then
    return
  end
  if not ready() then
    if not waiting_for_normal then
      waiting_for_normal = true
      api.nvim_create_autocmd('ModeChanged', {
        pattern = '*:n',
        once = true,
        callback = function()
          waiting_for_normal = false
          vim.schedule(M.drain)
        end,
      })
    end
    return
  end
  state.asking = true
  vim.schedule(function()
    local entry = state.questions[1]
    if not entry then
      state.asking = false
      return
    end
    entry.asking = true
    ask(entry.card.questions or {}, 1, {}, function(answers)
      state.asking = false
      entry.asking = false
      remove(entry)
      if answers and not entry.answered and next(answers) ~= nil then
        answer(entry, answers)
      end
      vim.schedule(M.drain)
    end)
  end)
end

return M
