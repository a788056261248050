--- Taking a verdict back: undo a kept accept (the server puts back the bytes it replaced, through
--- its apply journal), list the rejected proposals and restore one. What can be taken back comes
--- from the server (kitsoki/decided); the server's kitsoki/proposalTakenBack says it on screen.
local state = require('kitsoki.state')
local render = require('kitsoki.render')

local levels = vim.log.levels
local val = state.val
local M = {}

local function describe(item)
  local where = table.concat(item.files or {}, ', ')
  if state.several_workspaces() then
    where = state.workspace_name(item.workspace) .. ': ' .. where
  end
  local can = val(item.can) and '' or ('  (cannot: %s)'):format(val(item.why_not) or '?')
  return ('%s %s  (%s, %s)%s'):format(item.state, item.title, where, (item.decided_at or ''):sub(1, 16), can)
end

--- undo | restore a decided proposal: by id (or a prefix), or picked from those that can be.
function M.take_back(action, id)
  local wanted = action == 'undo' and 'accepted' or 'rejected'
  state.gather('kitsoki/decided', { state = wanted }, 'decided', function(entries)
    local usable = vim.tbl_filter(function(e)
      return val(e.item.can) == action and (not id or id == '' or vim.startswith(e.item.id, id))
    end, entries)
    if #usable == 0 then
      local why = #entries > 0 and val(entries[1].item.why_not)
      return state.notify(('kitsoki: nothing to %s%s'):format(action, why and (': ' .. why) or ''), levels.WARN)
    end
    local function go(entry)
      state.request(entry.client, 'workspace/executeCommand', {
        command = 'kitsoki.' .. action,
        arguments = { { id = entry.item.id } },
      }, function(result)
        if result then
          render.refresh_client(entry.client)
        end
      end)
    end
    if id and id ~= '' and #usable == 1 then
      return go(usable[1])
    end
    vim.ui.select(usable, {
      prompt = action == 'undo' and 'Undo which accept? (its bytes from before are put back)'
        or 'Restore which rejected proposal?',
      kind = 'kitsoki.decided',
      format_item = function(entry)
        return describe(entry.item)
      end,
    }, function(entry)
      if entry then
        go(entry)
      end
    end)
  end)
end

--- :KitsokiMine rejected: the rejected proposals; picking one restores it.
function M.rejected()
  M.take_back('restore')
end

return M
