/**
 * (a) The real Python server, driven over stdio with vscode-jsonrpc and the extension's own
 * src/protocol.ts: a fresh demo workspace is mined, four proposals arrive as notifications, one
 * accept keeps (the file on disk becomes the staged draft), one reverts (every byte as before).
 */

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { ResponseError } from 'vscode-jsonrpc/node';

import { decorationsFor } from '../src/decorations';
import { decisionMessage } from '../src/messages';
import * as P from '../src/protocol';
import { parseProposalUri, proposalUriParts, sameFile } from '../src/proposalUri';
import { type Demo, hashes, layOutDemo, ServerProcess, withTimeout } from './support/server';

let demo: Demo;
let server: ServerProcess;

const fileUri = (p: string) => pathToFileURL(p).href;

async function request<M extends P.RequestMethod>(method: M, params: P.RequestMap[M]['params']): Promise<P.RequestMap[M]['result']> {
  return server.connection.sendRequest(method, params) as Promise<P.RequestMap[M]['result']>;
}

async function command<C extends P.ServerCommand>(name: C, ...args: P.CommandMap[C]['args']): Promise<P.CommandMap[C]['result']> {
  return server.connection.sendRequest('workspace/executeCommand', { command: name, arguments: args }) as Promise<
    P.CommandMap[C]['result']
  >;
}

before(async () => {
  demo = layOutDemo();
  server = new ServerProcess();
  const init: any = await withTimeout(server.connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: fileUri(demo.ws),
    workspaceFolders: [{ uri: fileUri(demo.ws), name: 'release-desk' }],
    capabilities: {
      window: { workDoneProgress: true, showDocument: { support: true } },
      workspace: { codeLens: { refreshSupport: true }, workspaceFolders: true },
    },
    initializationOptions: { mining: true, transcriptDirs: [demo.transcripts], watch: true },
  }), 60_000, () => `initialize (server stderr so far:\n${server.stderr})`);
  assert.deepEqual([...init.capabilities.executeCommandProvider.commands].sort(), [...P.COMMANDS].sort(),
    'the server advertises exactly the commands of src/protocol.ts');
  await server.connection.sendNotification('initialized', {});
});

after(async () => {
  if (server !== undefined) {
    const code = await server.close();
    assert.equal(code, 0, `the server exits cleanly after shutdown/exit\n${server.stderr}`);
  }
  if (demo !== undefined) {
    fs.rmSync(path.dirname(demo.root), { recursive: true, force: true });
  }
});

test('the whole loop against the real server', { timeout: 300_000 }, async (t) => {
  const configUri = fileUri(path.join(demo.ws, '.kitsoki.yaml'));
  const appUri = fileUri(path.join(demo.ws, 'stories/release-desk/app.yaml'));
  let cards: P.Card[] = [];
  const byKind = (kind: string) => {
    const card = cards.find((c) => c.kind === kind);
    assert.ok(card, `a ${kind} card among ${cards.map((c) => c.kind).join(', ')}`);
    return card;
  };

  await t.test('a seed pass raises four proposals, each with a question', async () => {
    const ran: P.PassRanNotification = await server.waitFor(P.PASS_RAN, () => server.of(P.PASS_RAN)[0]);
    assert.equal(ran.report.trigger, 'seed');
    assert.equal(ran.report.sessions, 4);
    assert.equal(ran.raised?.length, 4);
    const changed: P.ProposalsChangedNotification = await server.waitFor(P.PROPOSALS_CHANGED,
      () => server.of(P.PROPOSALS_CHANGED).find((n: P.ProposalsChangedNotification) => n.pending === 4));
    assert.ok(changed.uris.some((u) => sameFile(u, configUri)) && changed.uris.some((u) => sameFile(u, appUri)),
      `proposalsChanged names both files: ${changed.uris.join(', ')}`);
    const questions: P.QuestionNotification[] = await server.waitFor('four kitsoki/question cards',
      () => server.of(P.QUESTION).length >= 4 && server.of(P.QUESTION));
    for (const q of questions) {
      assert.equal(q.questions[0]?.header, P.QUESTION_HEADER);
      assert.deepEqual(q.questions[0]?.options.map((o) => o.label), [...P.ANSWERS]);
    }
    cards = (await request(P.PROPOSALS, {})).proposals;
    assert.deepEqual(cards.map((c) => c.kind).sort(), ['binding', 'gate', 'intent', 'world']);
    // the synonym's impact moves a route: labelled, and ranked after the others
    assert.equal(byKind('intent').moves_routes, true);
    assert.equal(cards.at(-1)?.kind, 'intent');
    assert.deepEqual(new Set(cards.map((c) => c.question_id)), new Set(questions.map((q) => q.question_id)));
    const forApp = (await request(P.PROPOSALS, { uri: appUri })).proposals;
    assert.deepEqual(forApp.map((c) => c.id), [byKind('intent').id]);
  });

  await t.test('decorations land on the line the lens names', () => {
    const world = byKind('world');
    const file = world.files![0]!;
    const lines = fs.readFileSync(path.join(demo.ws, '.kitsoki.yaml'), 'utf-8').split('\n');
    assert.equal(lines[file.line]?.trim(), 'base_branch: main   # we release from main');
    const found = decorationsFor(cards, configUri);
    assert.deepEqual(found.insertBelow, [file.line], 'both insert right under that line');
    assert.equal(found.notes.length, 1, 'world and binding share one insertion point');
    assert.match(found.notes[0]!.text, /2 proposals add lines here/);
    assert.match(found.notes[0]!.hover, /test_cmd: pytest[^]*bindings:\n {6}ticket: host\.gh\.ticket/);
    assert.deepEqual(decorationsFor(cards, appUri).notes.map((n) => n.ids), [[byKind('intent').id]]);
  });

  let worldDraft = '';
  await t.test('the diff URI round-trips to kitsoki/proposalContent', async () => {
    const world = byKind('world');
    const ref = parseProposalUri(proposalUriParts(world.files![0]!.uri, world.id));
    assert.ok(ref && !ref.empty);
    worldDraft = (await request(P.PROPOSAL_CONTENT, { id: ref.id, uri: ref.fileUri })).text;
    assert.match(worldDraft, /\n {6}test_cmd: pytest\n/);
    const detail = await request(P.PROPOSAL, { id: world.id });
    assert.match(detail.diff, /\+ {6}test_cmd: pytest/);
  });

  await t.test('an accept that keeps: the file becomes the staged draft, flows green', async () => {
    const world = byKind('world');
    const configPath = path.join(demo.ws, '.kitsoki.yaml');
    const before = fs.readFileSync(configPath, 'utf-8');
    const others = hashes(demo.ws);
    delete others['.kitsoki.yaml'];
    const result = await command(P.CMD_ACCEPT, { id: world.id });
    assert.equal(result.verdict, 'accept');
    assert.equal(result.flows_green, true);
    assert.equal(result.reverted, false);
    assert.equal(result.failure, null);
    const after = fs.readFileSync(configPath, 'utf-8');
    assert.notEqual(after, before);
    assert.equal(after, worldDraft, 'the bytes on disk are the staged draft');
    assert.equal(after, before.replace('# we release from main\n', '# we release from main\n      test_cmd: pytest\n'));
    const rest = hashes(demo.ws);
    delete rest['.kitsoki.yaml'];
    assert.deepEqual(rest, others, 'no other file changed');
    const decided: P.ProposalDecidedNotification = await server.waitFor(P.PROPOSAL_DECIDED,
      () => server.of(P.PROPOSAL_DECIDED).find((n: P.ProposalDecidedNotification) => n.recipe_id === world.id));
    assert.equal(decided.flows_green, true);
    assert.equal(decisionMessage(decided, world.title).level, 'info');
    const progress = server.of('$/progress').map((p) => p.value);
    assert.ok(progress.some((v) => v.kind === 'begin' && String(v.title).startsWith('Accepting')), 'accept progress began');
    assert.ok(progress.some((v) => v.kind === 'end' && String(v.message).startsWith('kept')), 'accept progress ended kept');
  });

  await t.test('an accept that reverts: every byte as before, the failing flow reported', async () => {
    // a person decides at rollout: ship.yaml expects a deploy to go live by itself (red, as in kitsoki)
    const intent = byKind('gate');
    const deskUri = fileUri(path.join(demo.ws, 'stories/release-desk/rooms/desk.yaml'));
    const before = hashes(demo.ws);
    const result = await request(P.ANSWER_QUESTION, {
      question_id: intent.question_id,
      answers: { [intent.title]: 'accept' },
    });
    assert.equal(result.verdict, 'accept');
    assert.equal(result.reverted, true);
    assert.equal(result.flows_green, false);
    assert.match(result.failure ?? '', /1 of 5 flows failed/);
    assert.deepEqual(hashes(demo.ws), before, 'every byte restored');
    const decided: P.ProposalDecidedNotification = await server.waitFor(P.PROPOSAL_DECIDED,
      () => server.of(P.PROPOSAL_DECIDED).find((n: P.ProposalDecidedNotification) => n.recipe_id === intent.id));
    assert.equal(decided.reverted, true);
    assert.ok((decided.gate_failures ?? []).length > 0, 'the failing flow lines come with the notification');
    const message = decisionMessage(decided, intent.title);
    assert.equal(message.level, 'warning');
    assert.match(message.text, /reverted/);
    assert.deepEqual(message.details.slice(-decided.gate_failures!.length), decided.gate_failures);
    const held = (await request(P.PROPOSALS, { uri: deskUri })).proposals;
    assert.deepEqual(held.map((c) => [c.id, c.status]), [[intent.id, 'held']]);
  });

  await t.test('the binding, stale after the world accept, is re-drafted; refine opens its draft', async () => {
    const binding = byKind('binding');
    let draft = '';
    const deadline = Date.now() + 60_000;
    for (;;) {
      const card = (await request(P.PROPOSALS, {})).proposals.find((c) => c.id === binding.id);
      if (card?.status === 'pending') {
        draft = (await request(P.PROPOSAL_CONTENT, { id: binding.id, uri: configUri })).text;
        if (draft.includes('test_cmd: pytest')) {
          break;
        }
      }
      assert.ok(Date.now() < deadline, `the binding was not re-drafted against the new bytes (status ${card?.status})`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.match(draft, /ticket: host\.gh\.ticket/);
    const result = await command(P.CMD_REFINE, binding.id);
    assert.equal(result.verdict, 'refine');
    assert.ok(result.draft_uri?.endsWith(`${binding.id}/.kitsoki.yaml`), result.draft_uri ?? 'no draft_uri');
    const shown = await server.waitFor('window/showDocument', () =>
      server.requests.find((r) => r.method === 'window/showDocument'));
    assert.ok(sameFile(shown.params.uri, result.draft_uri!), 'the server opens the staged draft');
    const rejected = await command(P.CMD_REJECT, { id: binding.id });
    assert.equal(rejected.verdict, 'reject');
  });

  await t.test('bad params get a JSON-RPC error a person can act on', async () => {
    await assert.rejects(request(P.PROPOSAL_CONTENT, { id: 'nope', uri: configUri }), (error: unknown) => {
      assert.ok(error instanceof ResponseError);
      assert.equal(error.code, -32602);
      assert.match(error.message, /no open proposal 'nope'/);
      return true;
    });
    const status = (await request(P.MINE_STATUS, {})).workspaces[0]!;
    assert.equal(status.enabled, true);
    assert.equal(status.pending, 2, 'the held gate and the synonym are left');
  });
});
