-- End-to-end test of the Neovim client against the REAL kitsoki-miner server on a freshly laid
-- out demo workspace (tests/test_nvim_client.py lays it out and runs this). Plain asserts; every
-- wait is vim.wait with a timeout on a condition. Prints "N passed, N failed"; exits 1 on failure.
--
--   KITSOKI_WS   the workspace (release-desk, with .kitsoki.yaml)
local ws = assert(vim.env.KITSOKI_WS, 'KITSOKI_WS is not set')

local kitsoki = require('kitsoki')
local state = require('kitsoki.state')
local render = require('kitsoki.render')
local api = vim.api

local passed, failed = 0, 0

local function log(text)
  io.stdout:write(text .. '\n')
  io.stdout:flush()
end

local function check(cond, msg)
  if not cond then
    error(msg or 'check failed', 2)
  end
end

local function eq(got, want, msg)
  if not vim.deep_equal(got, want) then
    error(('%s: expected %s, got %s'):format(msg or 'eq', vim.inspect(want), vim.inspect(got)), 2)
  end
end

local function wait(ms, pred, what)
  if not vim.wait(ms, pred, 20) then
    error(('timed out after %d ms waiting for %s'):format(ms, what), 2)
  end
end

local aborted = false

--- Runs one test; when an essential one fails, the rest are counted failed without running
--- (they would only wait out their timeouts).
local function test(name, fn, essential)
  if aborted then
    failed = failed + 1
    log(('FAIL %s (not run: an essential test failed)'):format(name))
    return
  end
  local started = vim.uv.hrtime()
  local ok, err = xpcall(fn, debug.traceback)
  local ms = (vim.uv.hrtime() - started) / 1e6
  if ok then
    passed = passed + 1
    log(('ok   %s (%.0f ms)'):format(name, ms))
  else
    failed = failed + 1
    log(('FAIL %s (%.0f ms)\n%s'):format(name, ms, err))
    aborted = aborted or essential == true
  end
end

local function read(path)
  local fh = io.open(path, 'rb')
  if not fh then
    return nil
  end
  local data = fh:read('*a')
  fh:close()
  return data
end

local function buf_text(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
end

-- What the plugin tells the person, on its own lines in the output.
vim.notify = function(msg, level)
  log(('  [%s] %s'):format(level == vim.log.levels.ERROR and 'error' or level == vim.log.levels.WARN and 'warn'
    or 'info', tostring(msg):gsub('\n', '\n    ')))
end

-- vim.ui.select, stubbed: every call is recorded; picks[kind] chooses (a function of the items),
-- 'hold' keeps the callback unanswered (a picker left open), nothing cancels.
local seen, picks, held = {}, {}, {}
vim.ui.select = function(items, opts, on_choice)
  local labels = {}
  for i, item in ipairs(items) do
    labels[i] = opts.format_item and opts.format_item(item) or tostring(item)
  end
  table.insert(seen, { kind = opts.kind, prompt = opts.prompt, items = items, labels = labels })
  local pick = picks[opts.kind]
  if pick == 'hold' then
    table.insert(held, on_choice)
    return
  end
  local choice = type(pick) == 'function' and pick(items, opts) or nil
  local index
  for i, item in ipairs(items) do
    if item == choice then
      index = i
    end
  end
  vim.schedule(function()
    on_choice(choice, index)
  end)
end

local function label(want)
  return function(items)
    for _, item in ipairs(items) do
      if item.label == want then
        return item
      end
    end
  end
end

local function seen_of(kind)
  local out = {}
  for _, s in ipairs(seen) do
    if s.kind == kind then
      table.insert(out, s)
    end
  end
  return out
end

local function has_message(pattern)
  for _, msg in ipairs(state.messages) do
    if msg:find(pattern) then
      return msg
    end
  end
end

local config_path = ws .. '/.kitsoki.yaml'
local app_path = ws .. '/stories/release-desk/app.yaml'
local config_buf, app_buf, client
local by_kind = {}

--- A request answered through the event loop (vim.wait), not request_sync.
local function ask(method, params)
  local done, result, err = false, nil, nil
  client:request(method, params or vim.empty_dict(), function(e, r)
    done, result, err = true, r, e
  end)
  wait(10000, function()
    return done
  end, method)
  check(not err, method .. ': ' .. vim.inspect(err))
  return result
end

local function marks(buf)
  return api.nvim_buf_get_extmarks(buf, render.ns, 0, -1, { details = true })
end

local function mark_of(buf, card_id)
  for _, entry in ipairs(state.marks[buf] or {}) do
    if entry.card.id == card_id then
      local pos = api.nvim_buf_get_extmark_by_id(buf, render.ns, entry.mark, { details = true })
      return entry, pos
    end
  end
end

local function file_of(card, uri)
  for _, file in ipairs(card.files) do
    if state.same_file(file.uri, uri) then
      return file
    end
  end
end

--- The extmarks drawn in buf show each card where its lines would go: its own header, then the
--- lines it adds (highlighted), at the row its first hunk follows.
local function check_marks_match(buf, cards)
  local uri = vim.uri_from_bufnr(buf)
  local got = marks(buf)
  local want_rows = {}
  for _, card in ipairs(cards) do
    local file = file_of(card, uri)
    if file then
      local hunk = file.hunks[1]
      want_rows[hunk.after] = true
      local found
      for _, m in ipairs(got) do
        for i, line in ipairs(m[4].virt_lines or {}) do
          local text = table.concat(vim.tbl_map(function(c) return c[1] end, line))
          if m[2] == hunk.after and text:find(card.title, 1, true) then
            found = { details = m[4], at = i }
          end
        end
      end
      check(found, ('a preview at row %d headed %q; got %s'):format(hunk.after, card.title, vim.inspect(got)))
      local lines = {}
      for i = found.at + 1, found.at + #hunk.added do
        local chunks = found.details.virt_lines[i]
        eq(chunks[#chunks][2], 'KitsokiAdded', 'added lines are highlighted')
        table.insert(lines, chunks[#chunks][1])
      end
      eq(lines, hunk.added, 'the lines it adds follow its header')
      check(vim.trim(found.details.sign_text or '') ~= '', 'a sign on the row')
    end
  end
  eq(#got, vim.tbl_count(want_rows), 'one extmark per place lines would go in ' .. vim.fs.basename(api.nvim_buf_get_name(buf)))
end

local function main()
  picks['kitsoki.question'] = 'hold'

  test('attaches to the kitsoki workspace, not to other YAML', function()
    vim.cmd.edit(vim.fn.fnameescape(config_path))
    config_buf = api.nvim_get_current_buf()
    eq(vim.bo[config_buf].filetype, 'yaml', 'filetype')
    wait(15000, function()
      client = state.clients(config_buf)[1]
      return client ~= nil and client.initialized
    end, 'the kitsoki client to attach and initialize')
    eq(client.name, 'kitsoki', 'client name')
    eq(client.root_dir, ws, 'root_dir is the folder holding .kitsoki.yaml')
    local outside = vim.fn.tempname() .. '.yaml'
    vim.fn.writefile({ 'a: 1' }, outside)
    vim.cmd.edit(vim.fn.fnameescape(outside))
    local other = api.nvim_get_current_buf()
    eq(#state.clients(other), 0, 'no kitsoki client on a YAML file outside a kitsoki workspace')
    vim.cmd.buffer(config_buf)
    vim.cmd.bwipeout(other)
  end, true)

  test('proposals render as extmarks at the cards\' lines after kitsoki/proposalsChanged', function()
    wait(30000, function()
      return (state.pending[state.ws_key(ws)] or 0) == 3 and #(state.marks[config_buf] or {}) == 2
    end, '3 pending proposals, 2 of them drawn on .kitsoki.yaml')
    local cards = ask('kitsoki/proposals').proposals
    for _, card in ipairs(cards) do
      by_kind[card.kind] = card
    end
    eq(vim.tbl_count(by_kind), 3, 'three kinds')
    check_marks_match(config_buf, cards)
    eq(api.nvim_buf_get_lines(config_buf, by_kind.world.files[1].hunks[1].after, by_kind.world.files[1].hunks[1].after + 1, false)[1],
      '      base_branch: main   # we release from main', 'the world proposal is drawn below the line it follows')
    local _, pos = mark_of(config_buf, by_kind.world.id)
    local _, pos2 = mark_of(config_buf, by_kind.binding.id)
    eq(pos[1], pos2[1], 'both insert at the same place: one spot, numbered 1/2 and 2/2')

    vim.cmd.edit(vim.fn.fnameescape(app_path))
    app_buf = api.nvim_get_current_buf()
    wait(10000, function()
      return #marks(app_buf) == 1
    end, 'the intent proposal on app.yaml')
    check_marks_match(app_buf, cards)
    wait(10000, function()
      return kitsoki.statusline() == 'kitsoki: 3 proposals [?3]'
    end, 'the statusline while questions wait (it says ' .. kitsoki.statusline() .. ')')
    vim.cmd.buffer(config_buf)
  end, true)

  test('the server\'s end-of-line lenses are off by default (the previews carry the actions)', function()
    vim.wait(300)
    eq(#vim.lsp.codelens.get(config_buf), 0, 'no lenses asked for')
  end)

  test('one question at a time, about the file in view, each asked once', function()
    wait(10000, function()
      return #held == 1
    end, 'the first question to be asked')
    local asked = seen_of('kitsoki.question')
    eq(#asked, 1, 'one question, not three in a row')
    check(asked[1].prompt:find("Capture as structure? Set world.test_cmd to 'pytest'", 1, true),
      'the highest-priority card of the file in view: ' .. asked[1].prompt)
    eq(vim.tbl_map(function(o)
      return o.label
    end, asked[1].items), { 'accept', 'refine', 'dismiss' }, 'the card\'s options')
    eq(#state.questions, 3, 'three waiting')
    table.remove(held, 1)(nil) -- "later"
    vim.wait(1000)
    eq(#seen_of('kitsoki.question'), 1, 'cancelling does not bring up the next one')
    eq(kitsoki.statusline(), 'kitsoki: 3 proposals [?3]', 'they wait in the statusline')
    vim.cmd.buffer(app_buf)
    wait(5000, function()
      return #held == 1
    end, 'the question about app.yaml once it is in view')
    check(seen_of('kitsoki.question')[2].prompt:find('Add 1 synonym', 1, true), 'the app.yaml card')
    table.remove(held, 1)(nil)
    vim.cmd.buffer(config_buf)
    wait(5000, function()
      return #held == 1
    end, 'back on .kitsoki.yaml: its other card')
    local third = seen_of('kitsoki.question')[3]
    check(third.prompt:find('Bind ticket', 1, true), 'the binding card, not the world one again: ' .. third.prompt)
    table.remove(held, 1)(nil)
    vim.wait(800)
    eq(#seen_of('kitsoki.question'), 3, 'each card asked once')
    picks['kitsoki.question'] = nil
  end)

  test('the Accept lens asks first (a client-side command), and cancel changes nothing', function()
    local before = read(config_path)
    local lens = { title = 'Accept', command = 'kitsoki.accept', arguments = { { id = by_kind.world.id } } }
    picks['kitsoki.confirm'] = label('cancel')
    client:exec_cmd(lens, { bufnr = config_buf })
    wait(5000, function()
      return has_message('cancelled')
    end, 'the cancelled accept')
    local confirm = seen_of('kitsoki.confirm')
    eq(#confirm, 1, 'asked once')
    check(confirm[1].prompt:find("Set world.test_cmd to 'pytest'", 1, true), confirm[1].prompt)
    check(confirm[1].labels[1]:find('no flow exercises this change: kept after the structural checks', 1, true),
      'the confirmation says no flow exercises a root override here: ' .. confirm[1].labels[1])
    eq(read(config_path), before, 'nothing written')
  end)

  test('diff: the staged draft beside the live file, in diff mode', function()
    local world = by_kind.world
    vim.cmd('KitsokiMine diff ' .. world.id)
    local scratch_win
    wait(5000, function()
      for _, win in ipairs(api.nvim_list_wins()) do
        if vim.b[api.nvim_win_get_buf(win)].kitsoki_proposal == world.id then
          scratch_win = win
          return true
        end
      end
    end, 'the diff split')
    eq(#api.nvim_list_wins(), 2, 'a vertical split')
    local scratch = api.nvim_win_get_buf(scratch_win)
    eq(vim.bo[scratch].buftype, 'nofile', 'a scratch buffer')
    check(vim.wo[scratch_win].diff, 'diff on in the draft window')
    local live_win = vim.fn.bufwinid(config_buf)
    check(live_win ~= -1 and vim.wo[live_win].diff, 'diff on in the live window')
    local text = buf_text(scratch)
    eq(text, read(config_path):gsub('# we release from main\n', '# we release from main\n      test_cmd: pytest\n'),
      'the draft is the live file plus the proposal')
    api.nvim_win_close(scratch_win, true)
    check(not vim.wo[live_win].diff, 'diff off again when the draft is closed')
  end)

  test('accept that keeps: asks, runs the gate, the buffer shows the new text', function()
    local world = by_kind.world
    local before = read(config_path)
    api.nvim_set_current_buf(config_buf)
    api.nvim_win_set_cursor(0, { world.files[1].line + 1, 0 })
    picks['kitsoki.proposal'] = function(items)
      for _, entry in ipairs(items) do
        if entry.card.id == world.id then
          return entry
        end
      end
    end
    picks['kitsoki.confirm'] = label('accept')
    vim.cmd('KitsokiMine accept')
    wait(60000, function() -- the verdict's answer (the proposalDecided notification comes first)
      return has_message('kept "Set world.test_cmd')
    end, 'the accept of the world proposal')
    eq(state.last_decision.recipe_id, world.id, 'the decision')
    eq(state.last_decision.reverted, false, 'kept')
    eq(state.last_decision.flows_green, true, 'flows green')
    local want = before:gsub('# we release from main\n', '# we release from main\n      test_cmd: pytest\n')
    eq(read(config_path), want, 'on disk')
    wait(5000, function()
      return buf_text(config_buf) == want
    end, 'the buffer to be reloaded (:checktime)')
    check(not vim.bo[config_buf].modified, 'not modified')
    local pickers = seen_of('kitsoki.proposal')
    eq(#pickers[#pickers].items, 2, 'two proposals under the cursor: picked one')
    eq(#seen_of('kitsoki.confirm'), 2, 'asked before applying')
    wait(5000, function()
      return mark_of(config_buf, world.id) == nil
    end, 'the kept proposal\'s extmark to go')
  end)

  test('the binding proposal, stale after that accept, is re-drafted and redrawn at its new line', function()
    -- (also lets the server's own re-draft finish: an accept while it stages gets "busy")
    local binding = by_kind.binding
    wait(30000, function()
      local entry = mark_of(config_buf, binding.id)
      return entry and entry.card.status == 'pending' and entry.file.line ~= binding.files[1].line
    end, 'the binding proposal re-drafted against the new .kitsoki.yaml')
    local _, pos = mark_of(config_buf, binding.id)
    local fresh = ask('kitsoki/proposals', { uri = vim.uri_from_bufnr(config_buf) }).proposals
    eq(#fresh, 1, 'one proposal left on .kitsoki.yaml')
    eq(fresh[1].id, binding.id, 'the binding')
    eq(pos[1], fresh[1].files[1].line, 'the mark is at the re-drafted card\'s line')
    check_marks_match(config_buf, fresh)
  end)

  test('accept that reverts: the buffer and the bytes on disk are unchanged, the card is held', function()
    local intent = by_kind.intent
    api.nvim_set_current_buf(app_buf)
    local lines = api.nvim_buf_get_lines(app_buf, 0, -1, false)
    local disk, config_disk = read(app_path), read(config_path)
    local asked = #seen_of('kitsoki.confirm')
    vim.cmd('KitsokiMine accept ' .. intent.id)
    wait(60000, function()
      return has_message('reverted "Add 1 synonym')
    end, 'the accept of the intent proposal')
    eq(state.last_decision.recipe_id, intent.id, 'the decision')
    eq(#seen_of('kitsoki.confirm'), asked + 1, 'asked first')
    eq(state.last_decision.reverted, true, 'reverted')
    eq(state.last_decision.flows_green, false, 'a flow went red')
    eq(read(app_path), disk, 'app.yaml bytes restored')
    eq(read(config_path), config_disk, '.kitsoki.yaml untouched')
    eq(api.nvim_buf_get_lines(app_buf, 0, -1, false), lines, 'the buffer is unchanged')
    wait(10000, function()
      local entry, pos = mark_of(app_buf, intent.id)
      return entry and entry.card.status == 'held' and vim.trim(pos[3].sign_text) == 'K!'
    end, 'the held proposal to be drawn with the held sign')
  end)

  test('dismiss: the re-drafted proposal under the cursor is rejected, its marks and lenses go', function()
    local binding = by_kind.binding
    local entry = mark_of(config_buf, binding.id)
    check(entry, 'the binding proposal is drawn')
    api.nvim_set_current_buf(config_buf)
    api.nvim_win_set_cursor(0, { entry.file.line + 1, 0 })
    local before = read(config_path)
    local asked = #seen_of('kitsoki.confirm')
    picks['kitsoki.confirm'] = label('dismiss')
    vim.cmd('KitsokiMine dismiss')
    wait(10000, function()
      return has_message('dismissed "Bind ticket')
    end, 'the dismissal')
    local confirm = seen_of('kitsoki.confirm')
    eq(#confirm, asked + 1, 'a dismissal asks first')
    check(confirm[#confirm].labels[1]:find('KitsokiMine rejected restores it', 1, true), confirm[#confirm].labels[1])
    eq(state.last_decision.recipe_id, binding.id, 'the decision')
    eq(state.last_decision.verdict, 'reject', 'dismiss is reject')
    eq(read(config_path), before, 'nothing written')
    wait(10000, function()
      return #marks(config_buf) == 0 and #vim.lsp.codelens.get(config_buf) == 0
    end, 'no extmarks and no lenses left on .kitsoki.yaml')
    local left = ask('kitsoki/proposals').proposals
    eq(#left, 1, 'only the held one is left')
    eq(left[1].id, by_kind.intent.id, 'the intent')
  end)

  test(':KitsokiMine status, pause and resume', function()
    vim.cmd('KitsokiMine status')
    wait(5000, function()
      return has_message('kitsoki release%-desk: mining')
    end, 'the status message')
    local msg = has_message('kitsoki release%-desk: mining')
    check(msg:find('1 pending', 1, true), msg)
    check(msg:find('last pass (seed): 4 sessions', 1, true), msg)
    wait(5000, function()
      return kitsoki.statusline() == 'kitsoki: 1 proposal'
    end, 'the statusline to count 1 proposal; it says ' .. kitsoki.statusline())
    vim.cmd('KitsokiMine pause')
    wait(5000, function()
      return state.last_status and state.last_status.workspaces[1].paused == true
    end, 'paused')
    vim.cmd('KitsokiMine resume')
    wait(5000, function()
      return state.last_status and state.last_status.workspaces[1].paused == false
    end, 'resumed')
  end)

  test(':KitsokiMine queue lists the open proposals; scope; completion', function()
    local intent = by_kind.intent
    api.nvim_set_current_buf(config_buf)
    picks['kitsoki.proposal'] = function(items)
      return items[1]
    end
    picks['kitsoki.action'] = label('open')
    local before = #seen_of('kitsoki.proposal')
    vim.cmd('KitsokiMine queue')
    wait(5000, function()
      return api.nvim_get_current_buf() == app_buf
    end, 'the queue to open the held proposal\'s file')
    local queue = seen_of('kitsoki.proposal')[before + 1]
    eq(#queue.items, 1, 'one open proposal')
    check(queue.labels[1]:find('[held] ' .. intent.title, 1, true), queue.labels[1])
    eq(api.nvim_win_get_cursor(0)[1], intent.files[1].line + 1, 'the cursor on the line it changes')

    eq(vim.fn.getcompletion('KitsokiMine a', 'cmdline'), { 'accept' }, 'verbs complete')
    eq(vim.fn.getcompletion('KitsokiMine diff ' .. intent.id:sub(1, 3), 'cmdline'), { intent.id }, 'ids complete')

    local folder = vim.fn.tempname()
    vim.fn.mkdir(folder, 'p')
    vim.cmd('KitsokiMine scope ' .. vim.fn.fnameescape(folder))
    local dirs
    wait(5000, function()
      dirs = state.last_status and state.last_status.workspaces[1].transcript_dirs
      return dirs and vim.tbl_contains(dirs, folder)
    end, 'the scope to be set')
    check(not vim.tbl_contains(dirs, vim.env.KITSOKI_TRANSCRIPTS), 'the folder replaces the extra folders')
    vim.cmd('KitsokiMine scope /no/such/folder')
    wait(5000, function()
      return has_message('not a folder: /no/such/folder')
    end, 'the server\'s refusal, shown')
  end)

  test(':KitsokiMine rejected lists the dismissal; picking it restores the proposal', function()
    local binding = by_kind.binding
    picks['kitsoki.decided'] = function(items)
      return items[1]
    end
    local asked = #seen_of('kitsoki.decided')
    vim.cmd('KitsokiMine rejected')
    wait(10000, function()
      return has_message('restored "Bind ticket')
    end, 'the restore')
    local list = seen_of('kitsoki.decided')[asked + 1]
    check(list.labels[1]:find('rejected Bind ticket to host.gh.ticket', 1, true), list.labels[1])
    wait(10000, function()
      return mark_of(config_buf, binding.id) ~= nil
    end, 'the restored proposal drawn again')
  end)

  test(':KitsokiMine undo takes the kept accept back: the bytes before it, and the proposal again', function()
    local world = by_kind.world
    local kept = read(config_path)
    check(kept:find('test_cmd: pytest', 1, true), 'the kept accept is on disk')
    picks['kitsoki.decided'] = function(items)
      for _, entry in ipairs(items) do
        if entry.item.id == world.id then
          return entry
        end
      end
    end
    vim.cmd('KitsokiMine undo')
    wait(10000, function()
      return has_message('undid the accept of "Set world.test_cmd')
    end, 'the undo')
    check(not read(config_path):find('test_cmd: pytest', 1, true), 'the bytes before the accept are back')
    wait(5000, function()
      return not buf_text(config_buf):find('test_cmd: pytest', 1, true)
    end, 'the buffer reloaded')
    local open = {}
    for _, card in ipairs(ask('kitsoki/proposals').proposals) do
      open[card.id] = card.status
    end
    check(open[world.id] ~= nil, 'the world proposal is offered again')
  end)

  test('a staged draft opened in Neovim belongs to the workspace: no second server', function()
    local draft = ws .. '/.artifacts/mining/' .. by_kind.intent.id .. '/stories/release-desk/app.yaml'
    check(vim.uv.fs_stat(ws .. '/.artifacts/mining/' .. by_kind.intent.id .. '/.kitsoki.yaml') == nil
      or true, 'a draft may carry a .kitsoki.yaml of its own')
    vim.cmd.edit(vim.fn.fnameescape(draft))
    local buf = api.nvim_get_current_buf()
    wait(10000, function()
      return #state.clients(buf) == 1
    end, 'the draft attached to the workspace\'s client')
    eq(state.clients(buf)[1].root_dir, ws, 'the workspace is the root, never the draft')
    eq(#state.clients(), 1, 'one server')
    vim.cmd.buffer(config_buf)
  end)

  test('a server that dies is said, restarted with a back-off, and said again when back', function()
    local old = state.clients()[1]
    local nvim_pid = vim.fn.getpid()
    local children = io.open(('/proc/%d/task/%d/children'):format(nvim_pid, nvim_pid)):read('*a')
    local killed = false
    for pid in children:gmatch('%d+') do
      local cmdline = io.open('/proc/' .. pid .. '/cmdline'):read('*a')
      if cmdline:find('serve', 1, true) then
        vim.uv.kill(tonumber(pid), 'sigkill')
        killed = true
      end
    end
    check(killed, 'found the server among ' .. children)
    wait(10000, function()
      return has_message('the server stopped %(killed by signal 9%); restarting it in 1 s')
    end, 'the death, said')
    check(kitsoki.statusline():find('server stopped', 1, true), kitsoki.statusline())
    wait(30000, function()
      local now = state.clients(config_buf)[1]
      return now ~= nil and now.id ~= old.id and now.initialized and has_message('the server was restarted')
    end, 'a new server, and the message that it is back')
    wait(10000, function()
      return #(state.marks[config_buf] or {}) > 0 and kitsoki.statusline():find('proposal', 1, true)
    end, 'the previews back')
  end)
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  failed = failed + 1
  log('FAIL the test script itself\n' .. err)
end
log(('%d passed, %d failed'):format(passed, failed))
if failed > 0 then
  log('messages:\n  ' .. table.concat(state.messages, '\n  '))
  vim.cmd('cquit 1')
else
  vim.cmd('qall!')
end
