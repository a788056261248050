/** The pure modules: URIs, status, state, decorations, messages, settings. */

import * as assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { addedText, decorationsFor } from '../src/decorations';
import { actionItems, answersOf, cardItem, decisionMessage, errorText, takenBackMessage, workspaceNames } from '../src/messages';
import {
  codeUriParts,
  DRAFT_SCHEME,
  fileUriOf,
  parseProposalUri,
  pathOf,
  PROPOSAL_SCHEME,
  proposalUriParts,
  sameFile,
  serverUriParts,
} from '../src/proposalUri';
import { DEFAULT_SERVER_COMMAND, DOCUMENT_SELECTOR, serverCommand } from '../src/settings';
import { ClientState } from '../src/state';
import { statusView } from '../src/status';
import { APP_URI, CONFIG_URI, decided, demoCards, question } from './support/cards';

describe('proposal URIs', () => {
  test('carry the live path and the id, and parse back', () => {
    const parts = proposalUriParts('file:///tmp/a%20b/.kitsoki.yaml', 'abc123');
    assert.deepEqual(parts, { scheme: PROPOSAL_SCHEME, path: '/tmp/a b/.kitsoki.yaml', query: 'id=abc123' });
    assert.deepEqual(parseProposalUri(parts), { id: 'abc123', fileUri: 'file:///tmp/a%20b/.kitsoki.yaml', empty: false });
    const empty = proposalUriParts('file:///ws/new.yaml', 'x', true);
    assert.equal(parseProposalUri(empty)?.empty, true);
  });
  test('refuse what is not theirs', () => {
    assert.equal(parseProposalUri({ scheme: 'file', path: '/ws/a', query: 'id=1' }), undefined);
    assert.equal(parseProposalUri({ scheme: PROPOSAL_SCHEME, path: '/ws/a', query: '' }), undefined);
    assert.throws(() => proposalUriParts('untitled:Untitled-1', 'x'), /not a file URI/);
    assert.throws(() => proposalUriParts(CONFIG_URI, ''), /needs the proposal id/);
  });
  test('a staged draft is a kitsoki-draft: document in VS Code and its file: to the server', () => {
    const staged = { scheme: 'file', path: '/ws/.artifacts/mining/b1/stories/a.yaml', query: '' };
    assert.deepEqual(codeUriParts(staged), { ...staged, scheme: DRAFT_SCHEME });
    assert.deepEqual(serverUriParts(codeUriParts(staged)), staged);
    const live = { scheme: 'file', path: '/ws/stories/a.yaml', query: '' };
    assert.equal(codeUriParts(live), live, 'a live file stays a file');
    assert.equal(serverUriParts(live), live);
  });
  test('compare files across encodings', () => {
    assert.equal(pathOf('file:///tmp/a%20b/x.yaml'), '/tmp/a b/x.yaml');
    assert.equal(fileUriOf('/tmp/a b/x.yaml'), 'file:///tmp/a%20b/x.yaml');
    assert.ok(sameFile('file:///tmp/a%20b/x.yaml', 'file:///tmp/a b/x.yaml'));
    assert.ok(!sameFile(CONFIG_URI, APP_URI));
    assert.ok(!sameFile('not a uri', CONFIG_URI));
  });
});

describe('status', () => {
  test('counts, and warns while a question waits', () => {
    assert.deepEqual(statusView(3, 0), {
      text: 'proposals: 3', tooltip: 'kitsoki-miner: 3 proposals open. Click to list them.', warning: false,
      error: false, command: 'kitsoki.client.showProposals',
    });
    const waiting = statusView(1, 2);
    assert.equal(waiting.text, '$(question) proposals: 1');
    assert.equal(waiting.warning, true);
    assert.equal(waiting.command, 'kitsoki.client.answerQuestion');
    assert.match(waiting.tooltip, /2 questions waiting/);
  });
  test('a dead server, Restricted Mode and an empty pass each say so', () => {
    const down = statusView(0, 0, { state: 'down', reason: '"kitsoki-miner serve" stopped 5 times in three minutes' });
    assert.equal(down.text, '$(error) kitsoki-miner: server stopped');
    assert.equal(down.error, true);
    assert.equal(down.command, 'kitsoki.client.showOutput', 'a click opens the output');
    assert.match(down.tooltip, /stopped 5 times/);
    const trust = statusView(0, 0, { state: 'waiting-for-trust' });
    assert.match(trust.text, /trust this folder to start/);
    assert.equal(trust.command, 'workbench.trust.manage');
    const empty = statusView(0, 0, { state: 'running', note: 'the last pass read 0 sessions; it looked in /a, /b' });
    assert.equal(empty.text, '$(info) proposals: 0');
    assert.match(empty.tooltip, /it looked in \/a, \/b/);
    // Never "proposals: 0" before the server has answered: loading.
    assert.equal(statusView(0, 0, { state: 'starting' }).text, '$(sync~spin) kitsoki-miner: loading…');
    assert.equal(statusView(0, 0, { state: 'running', loading: true }).text, '$(sync~spin) kitsoki-miner: loading…');
    const two = statusView(4, 0, { state: 'running' }, new Map([['app', 3], ['web', 1]]));
    assert.equal(two.text, 'proposals: 4');
    assert.match(two.tooltip, /app: 3 proposals\nweb: 1 proposal/);
  });
});

describe('client state', () => {
  test('pending follows notifications, then the card list', () => {
    const state = new ClientState();
    state.proposalsChanged('file:///ws', 3);
    state.proposalsChanged('file:///other', 2);
    assert.equal(state.pendingTotal(), 5);
    state.setCards(demoCards(), state.mark());
    assert.equal(state.pendingTotal(), 3, 'a workspace with no cards left counts 0');
  });
  test('questions wait until answered, decided, or gone from a later list', () => {
    const state = new ClientState();
    const seq = state.mark();
    state.question(question('w1', 'world'));
    state.question(question('b1', 'binding'));
    state.question(question('zz', 'withdrawn'));
    state.setCards(demoCards(), seq);
    assert.equal(state.questions().length, 3, 'a list asked for before the questions came prunes nothing');
    state.setCards(demoCards(), state.mark());
    assert.deepEqual(state.questions().map((q) => q.question_id), ['w1', 'b1']);
    state.answered('w1');
    state.decided(decided('b1', 'refine'));
    assert.deepEqual(state.questions(), []);
  });
  test('a kept or rejected card leaves at once; a held or refining one stays', () => {
    const state = new ClientState();
    state.setCards(demoCards(), state.mark());
    state.decided(decided('i1', 'accept', { reverted: true }));
    state.decided(decided('b1', 'refine'));
    assert.deepEqual(state.cards.map((c) => c.id), ['i1', 'w1', 'b1']);
    state.decided(decided('w1', 'accept'));
    state.decided(decided('b1', 'reject'));
    assert.deepEqual(state.cards.map((c) => c.id), ['i1']);
    assert.equal(state.titleOf('i1'), "Add 1 synonym to release-desk's deploy");
    assert.equal(state.titleOf('gone'), 'gone');
  });
});

describe('decorations', () => {
  test('an insertion is marked under the line its lines follow; two at one place share one note', () => {
    const found = decorationsFor(demoCards(), 'file:///ws/.kitsoki.yaml');
    assert.deepEqual(found.insertBelow, [22]);
    assert.deepEqual(found.replaced, []);
    assert.equal(found.notes.length, 1);
    assert.equal(found.notes[0]!.text, '  ⤵ 2 proposals add lines here (hover to see each)');
    assert.deepEqual(found.notes[0]!.ids, ['w1', 'b1']);
    assert.match(found.notes[0]!.hover, /proposal 1 of 2\*\*: Set world.test_cmd[^]*```yaml\n {6}test_cmd: pytest\n```/);
    assert.match(found.notes[0]!.hover, /proposal 2 of 2\*\*: Bind ticket/);
    assert.deepEqual(decorationsFor(demoCards(), 'file:///ws/elsewhere.yaml'), { insertBelow: [], replaced: [], notes: [] });
    const alone = decorationsFor(demoCards().slice(0, 2), 'file:///ws/.kitsoki.yaml');
    assert.equal(alone.notes[0]!.text, '  ⤵ + test_cmd: pytest');
  });
  test('a replacement marks the lines it replaces', () => {
    const cards = demoCards();
    cards[1]!.files![0]!.hunks = [{ after: 21, removed: [22], added: ['      base_branch: trunk'] }];
    const found = decorationsFor(cards.slice(1, 2), CONFIG_URI);
    assert.deepEqual(found.replaced, [22]);
    assert.deepEqual(found.insertBelow, []);
    assert.equal(found.notes[0]!.text, '  → + base_branch: trunk');
  });
  test('stale cards, suggestions and created files draw nothing; held ones say so', () => {
    const cards = demoCards();
    cards[1]!.status = 'stale';
    cards[2]!.suggestion_only = true;
    assert.deepEqual(decorationsFor(cards, CONFIG_URI), { insertBelow: [], replaced: [], notes: [] });
    cards[0]!.status = 'held';
    cards[0]!.failure = '1 of 3 flows failed';
    const held = decorationsFor(cards, APP_URI).notes[0]!;
    assert.match(held.text, /^ {2}⤵ held: \+ synonyms:/);
    assert.match(held.hover, /Last accept reverted: 1 of 3 flows failed/);
    cards[0]!.files![0]!.created = true;
    assert.deepEqual(decorationsFor(cards, APP_URI).insertBelow, []);
  });
  test('long notes are clipped', () => {
    assert.equal(addedText(['', '  ']), '(removes lines)');
    const cards = demoCards();
    cards[1]!.files![0]!.added = ['x'.repeat(500)];
    assert.ok(decorationsFor(cards.slice(1, 2), CONFIG_URI).notes[0]!.text.length <= 120);
  });
});

describe('messages', () => {
  test('a kept accept, a revert with its failing flows, a refine, a reject', () => {
    assert.deepEqual(decisionMessage(decided('w1', 'accept', { title: 'T' }), 'x'), {
      level: 'info', text: 'kitsoki-miner: kept "T": flows green. Undo puts back what it replaced.', details: [],
    });
    // the server says what kept it: a change no flow exercises never reads as green
    const ungated = decided('w1', 'accept', { title: 'T', gated: false, kept: 'structural checks passed, no flow exercises it' });
    assert.equal(decisionMessage(ungated, 'x').text,
      'kitsoki-miner: kept "T": structural checks passed, no flow exercises it. Undo puts back what it replaced.');
    const failures = ['FAIL a.yaml', '✗ turn 2: expected deploy', 'x', 'y'];
    const reverted = decisionMessage(decided('i1', 'accept', {
      reverted: true, failure: '1 of 3 flows failed', gate_summary: 'Summary: 2/3 flows pass', gate_failures: failures,
    }), 'Synonym');
    assert.equal(reverted.level, 'warning');
    assert.match(reverted.text, /reverted "Synonym": 1 of 3 flows failed\. Every byte was restored/);
    assert.match(reverted.text, /Failing: FAIL a\.yaml; ✗ turn 2: expected deploy; x \(\+1 more\)$/);
    assert.deepEqual(reverted.details, ['Summary: 2/3 flows pass', ...failures]);
    assert.match(decisionMessage(decided('b1', 'refine'), 'B').text, /refining "B"/);
    assert.match(decisionMessage(decided('b1', 'reject'), 'B').text, /rejected "B"; .*"Show rejected proposals" restores it/);
    const back = { recipe_id: 'w1', workspace: 'file:///ws', action: 'undo' as const, title: 'T', files: [], restored: [] };
    assert.match(takenBackMessage({ ...back, how: 'saved' }).text,
      /the saved file no longer holds the accepted "T": recorded as undone; it is offered again/);
    assert.match(takenBackMessage({ ...back, how: 'undo' }).text, /undid the accept of "T"/);
    assert.match(takenBackMessage({ ...back, action: 'restore', how: 'restore' }).text, /restored "T"; it is offered again/);
  });
  test('two workspaces are told apart: by folder name, or parent/name when they share one', () => {
    assert.equal(workspaceNames(['file:///a/app']).size, 0, 'one workspace: nothing to tell apart');
    assert.deepEqual([...workspaceNames(['file:///a/app', 'file:///b/web'])], [['file:///a/app', 'app'], ['file:///b/web', 'web']]);
    assert.deepEqual([...workspaceNames(['file:///a/app', 'file:///b/app']).values()], ['a/app', 'b/app']);
    const [intent] = demoCards();
    const names = new Map([[intent!.workspace, 'release-desk'], ['file:///other', 'other']]);
    assert.match(cardItem(intent!, names).description, /^release-desk · intent/);
    assert.match(cardItem(intent!, names).detail, /^release-desk: stories\/release-desk\/app\.yaml/);
  });
  test('quick-pick items', () => {
    const [intent] = demoCards();
    assert.deepEqual(cardItem(intent!), {
      label: "Add 1 synonym to release-desk's deploy", description: 'intent · pending · priority 4.2',
      detail: 'stories/release-desk/app.yaml', id: 'i1',
    });
    assert.deepEqual(actionItems(intent!).map((a) => a.action), ['accept', 'refine', 'diff', 'open', 'reject']);
    const detail = { accept_brief: 'runs 2 flow files' } as never;
    assert.equal(actionItems(intent!, detail)[0]!.description, 'runs 2 flow files (asks first)', 'the gate preview says it');
    intent!.status = 'stale';
    assert.deepEqual(actionItems(intent!).map((a) => a.action), ['diff', 'open', 'reject']);
    const note = question('w1', 'Set it');
    assert.deepEqual(answersOf(note, ['accept']), { 'Set it': 'accept' });
    assert.equal(errorText(new Error('boom')), 'boom');
    assert.equal(errorText({ message: 'rpc' }), 'rpc');
  });
});

describe('settings', () => {
  test('the server command: default, ${workspaceFolder}, refusals', () => {
    assert.deepEqual(serverCommand(undefined), { command: 'kitsoki-miner', args: ['serve'] });
    assert.deepEqual(DEFAULT_SERVER_COMMAND, ['kitsoki-miner', 'serve']);
    assert.deepEqual(serverCommand(['${workspaceFolder}/.venv/bin/kitsoki-miner', 'serve'], '/ws'),
      { command: '/ws/.venv/bin/kitsoki-miner', args: ['serve'] });
    assert.throws(() => serverCommand('kitsoki-miner serve'), /must be an array of strings/);
    assert.throws(() => serverCommand([]), /must be an array of strings/);
    assert.throws(() => serverCommand(['${workspaceFolder}/x']), /no folder is open/);
    assert.throws(() => serverCommand(['']), /is empty/);
  });
  test('the document selector: YAML files and staged drafts, never a language of our own', () => {
    for (const filter of DOCUMENT_SELECTOR) {
      assert.equal(filter.language, 'yaml');
    }
    assert.deepEqual(DOCUMENT_SELECTOR.map((f) => `${f.scheme}:${f.pattern ?? ''}`), [
      'file:**/.kitsoki.yaml', 'file:**/stories/**/*.{yaml,yml}', 'file:**/.kitsoki/stories/**/*.{yaml,yml}',
      `${DRAFT_SCHEME}:`,
    ]);
  });
});
