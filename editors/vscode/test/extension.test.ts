/**
 * (b) The extension's glue under a stubbed `vscode` and a fake language client: activation
 * registers the commands and builds the client as configured, the status bar follows the
 * notifications, lens commands are intercepted (Diff opens vscode.diff on a kitsoki-proposal: URI
 * served by kitsoki/proposalContent), decorations are set and cleared, verdicts go to the server.
 */

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';

import { standIn, stubVscode } from './support/hook';

stubVscode();
standIn('vscode-languageclient/node', './fake-languageclient');

/* eslint-disable @typescript-eslint/no-require-imports */
const vscode = require('./support/vscode-stub') as typeof import('./support/vscode-stub');
const fake = require('./support/fake-languageclient') as typeof import('./support/fake-languageclient');
const extension = require('../src/extension') as typeof import('../src/extension');
const P = require('../src/protocol') as typeof import('../src/protocol');
const { CLIENT_COMMANDS } = require('../src/clientCommands') as typeof import('../src/clientCommands');
const { DOCUMENT_SELECTOR } = require('../src/settings') as typeof import('../src/settings');
import type { Controller } from '../src/controller';
import { APP_URI, CONFIG_URI, decided, demoCards, question } from './support/cards';
import { PKG } from './support/paths';

const { stub } = vscode;
const manifest = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf-8'));
const CONFIG_TEXT = Array.from({ length: 30 }, (_, i) => (i === 22 ? '      base_branch: main' : `line ${i}`)).join('\n');

let context: { subscriptions: { dispose(): unknown }[] };
let client: InstanceType<typeof fake.LanguageClient>;
let controller: Controller;
let cards = demoCards();

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A workspace folder with a .kitsoki.yaml (the cards themselves name /ws: only their URIs matter). */
const FOLDER = fs.mkdtempSync(path.join(os.tmpdir(), 'kitsoki-ext-'));
fs.writeFileSync(path.join(FOLDER, '.kitsoki.yaml'), 'root:\n  import: dev-story\n');
const PLAIN = fs.mkdtempSync(path.join(os.tmpdir(), 'kitsoki-plain-'));
process.on('exit', () => {
  fs.rmSync(FOLDER, { recursive: true, force: true });
  fs.rmSync(PLAIN, { recursive: true, force: true });
});

async function activate(): Promise<void> {
  stub.reset();
  fake.LanguageClient.instances = [];
  cards = demoCards();
  stub.workspaceFolders = [
    { uri: vscode.Uri.file(PLAIN), name: 'plain', index: 0 },
    { uri: vscode.Uri.file(FOLDER), name: 'ws', index: 1 },
  ];
  stub.config = {
    'kitsoki.serverCommand': ['${workspaceFolder}/.venv/bin/kitsoki-miner', 'serve'],
    'kitsoki.initializationOptions': { mining: true, transcriptDirs: ['/t'] },
  };
  context = { subscriptions: [] };
  const activating = extension.activate(context as never);
  client = fake.LanguageClient.instances[0]!;
  client.responder = (method, params) => {
    switch (method) {
      case P.PROPOSALS:
        return { proposals: cards };
      case P.PROPOSAL_CONTENT:
        return { text: `draft of ${params.uri} for ${params.id}` };
      default:
        return undefined;
    }
  };
  controller = (await activating)!;
}

function status() {
  return stub.statusBarItems[0];
}

function configEditor() {
  return stub.editor(stub.document(vscode.Uri.parse(CONFIG_URI), CONFIG_TEXT));
}

beforeEach(activate);

afterEach(async () => {
  await extension.deactivate();
  for (const disposable of context.subscriptions) {
    disposable.dispose();
  }
});

test('activation registers the contributed commands, none of them a server command', () => {
  const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual([...stub.commands.keys()].sort(), contributed);
  assert.deepEqual(Object.values(CLIENT_COMMANDS).sort(), contributed);
  for (const name of contributed) {
    assert.ok(!(P.COMMANDS as readonly string[]).includes(name), `${name} collides with a server command`);
  }
  assert.deepEqual(manifest.activationEvents, ['workspaceContains:.kitsoki.yaml', 'onLanguage:yaml']);
  assert.equal(manifest.contributes.languages, undefined, 'YAML is never taken away from other extensions');
  assert.ok(stub.contentProviders.has('kitsoki-proposal'));
});

test('the client is built from the settings and started', () => {
  assert.equal(client.id, 'kitsoki');
  assert.deepEqual(client.serverOptions, {
    command: `${FOLDER}/.venv/bin/kitsoki-miner`, args: ['serve'], transport: fake.TransportKind.stdio,
    options: { cwd: FOLDER },
  });
  assert.deepEqual(client.clientOptions.documentSelector, DOCUMENT_SELECTOR);
  assert.deepEqual(client.clientOptions.initializationOptions, { mining: true, transcriptDirs: ['/t'] });
  assert.equal(typeof client.clientOptions.middleware.executeCommand, 'function');
  assert.equal(client.clientOptions.outputChannel, stub.outputChannels[0]);
  assert.ok(client.started);
  assert.deepEqual([...client.handlers.keys()].sort(),
    [P.PASS_RAN, P.PROPOSALS_CHANGED, P.PROPOSAL_DECIDED, P.QUESTION, P.QUESTION_WITHDRAWN, P.TAKEN_BACK].sort());
  assert.deepEqual(client.requests.map((r) => r.method), [P.PROPOSALS, P.MINE_STATUS],
    'the cards and what mining has to say are asked for once started');
});

async function activateAgain(folders: string[], config: Record<string, unknown>): Promise<void> {
  await extension.deactivate();
  for (const disposable of context.subscriptions.splice(0)) {
    disposable.dispose();
  }
  stub.reset();
  fake.LanguageClient.instances = [];
  stub.workspaceFolders = folders.map((f, index) => ({ uri: vscode.Uri.file(f), name: path.basename(f), index }));
  stub.config = config;
  await extension.activate(context as never);
}

test('a bad serverCommand is refused with a message, and no client starts', async () => {
  await activateAgain([FOLDER], { 'kitsoki.serverCommand': 'kitsoki-miner serve' });
  assert.equal(fake.LanguageClient.instances.length, 0);
  assert.match(stub.messages[0]!.text, /kitsoki\.serverCommand must be an array of strings/);
});

test('YAML outside a kitsoki workspace starts no server and shows no status', async () => {
  await activateAgain([PLAIN], {});
  assert.equal(fake.LanguageClient.instances.length, 0);
  assert.equal(status().visible, false);
  assert.deepEqual(stub.messages, []);
  assert.match(stub.outputChannels[0].lines.join('\n'), /no workspace folder has a \.kitsoki\.yaml/);
  assert.equal(stub.commands.size, Object.keys(CLIENT_COMMANDS).length, 'the commands are there all the same');
});

test('the status bar follows proposalsChanged, kitsoki/proposals and questions', async () => {
  assert.equal(status().text, 'proposals: 3');
  assert.equal(status().backgroundColor, undefined);
  assert.ok(status().visible);
  cards = cards.slice(0, 2);
  client.notify(P.PROPOSALS_CHANGED, { workspace: 'file:///ws', uris: [CONFIG_URI], pending: 2 });
  assert.equal(status().text, 'proposals: 2', 'at once, from the notification');
  await controller.refresh();
  assert.equal(status().text, 'proposals: 2');

  client.notify(P.QUESTION, question('w1', "Set world.test_cmd to 'pytest'"));
  client.notify(P.QUESTION, question('b1', 'Bind ticket to host.gh.ticket'));
  assert.equal(status().backgroundColor?.id, 'statusBarItem.warningBackground');
  assert.equal(status().command, CLIENT_COMMANDS.answerQuestion);
  assert.match(status().text, /proposals: 2$/);
  assert.equal(stub.progress.length, 1, 'one question card on screen; the second waits behind the status item');
  assert.match(stub.progress[0]!.options.title, /Capture as structure\? "Set world\.test_cmd to 'pytest'"/);
  assert.match(stub.progress[0]!.messages[0]!, /^\[Answer…\]\(command:kitsoki\.client\.answerQuestion\?/);

  client.notify(P.PROPOSAL_DECIDED, decided('w1', 'accept', { title: "Set world.test_cmd to 'pytest'" }));
  await tick();
  assert.equal(stub.progress[0]!.closed, true, 'the card of a decided proposal closes itself');
  client.notify(P.QUESTION_WITHDRAWN, { workspace: 'file:///ws', question_ids: ['b1'], reason: 'no longer open' });
  assert.equal(status().backgroundColor, undefined, 'no question waits any more');
  assert.equal(status().command, CLIENT_COMMANDS.showProposals);
  assert.equal(stub.progress.length, 1, 'nothing else popped up');
});

test('a question answered from the quick pick goes to kitsoki/answerQuestion', async () => {
  client.notify(P.QUESTION, question('i1', "Add 1 synonym to release-desk's deploy"));
  client.responder = () => decided('i1', 'accept', { reverted: true, failure: 'red' });
  stub.pickers.push('accept');
  stub.buttons.push('Accept'); // the confirmation an accept asks first
  const result = await stub.commands.get(CLIENT_COMMANDS.answerQuestion)!();
  assert.deepEqual(client.requests.at(-1), {
    method: P.ANSWER_QUESTION,
    params: { question_id: 'i1', answers: { "Add 1 synonym to release-desk's deploy": 'accept' } },
  });
  assert.deepEqual(stub.quickPicks.at(-1)!.items.map((i: { label: string }) => i.label), ['accept', 'refine', 'dismiss']);
  assert.equal((result as { reverted: boolean }).reverted, true);
  assert.equal(status().backgroundColor, undefined);
});

test('decorations mark where the lines would go and clear when decided', async () => {
  const editor = configEditor();
  const other = stub.editor(stub.document(vscode.Uri.file('/ws/README.md'), 'x'));
  stub.visibleTextEditors = [editor, other];
  stub.visibleEditorsChanged.fire(stub.visibleTextEditors);
  const [lineType, noteType] = [controller.insertDecoration as unknown as { key: string }, controller.noteDecoration as unknown as { key: string }];
  const lineOptions = stub.decorationTypes.find((t) => t.key === lineType.key)!.options;
  assert.equal(lineOptions.borderWidth, '0 0 2px 0', 'an edge under the line the new lines follow');
  assert.equal(lineOptions.backgroundColor, undefined, 'the unchanged line itself is not painted as added');
  assert.equal(lineOptions.isWholeLine, true);
  assert.deepEqual(editor.decorations.get(lineType.key)!.map((r) => r.start.line), [22]);
  const notes = editor.decorations.get(noteType.key)!;
  assert.equal(notes.length, 1);
  assert.equal(notes[0].range.start.line, 22);
  assert.equal(notes[0].range.end.character, '      base_branch: main'.length, 'the note sits after the line text');
  assert.equal(notes[0].renderOptions.after.contentText, '  ⤵ 2 proposals add lines here (hover to see each)');
  assert.deepEqual(other.decorations.get(lineType.key), []);

  client.notify(P.PROPOSAL_DECIDED, decided('w1', 'accept', { title: 'World' }));
  assert.equal(editor.decorations.get(noteType.key)![0].renderOptions.after.contentText,
    '  ⤵ + bindings: ⏎ ticket: host.gh.ticket');
  assert.deepEqual(stub.messages.at(-1), {
    level: 'info', text: 'kitsoki-miner: kept "World": flows green. Undo puts back what it replaced.', items: ['Undo'],
  });
  client.notify(P.PROPOSAL_DECIDED, decided('b1', 'reject'));
  assert.deepEqual(editor.decorations.get(lineType.key), []);
  assert.deepEqual(editor.decorations.get(noteType.key), []);
});

test('a reverted accept warns with the failing flows and keeps the held card drawn', async () => {
  const app = stub.editor(stub.document(vscode.Uri.parse(APP_URI), Array(20).fill('x').join('\n')));
  stub.visibleTextEditors = [app];
  stub.buttons.push('Show flow failures');
  client.notify(P.PROPOSAL_DECIDED, decided('i1', 'accept', {
    reverted: true, failure: '1 of 3 flows failed', gate_failures: ['FAIL routing.yaml', '✗ turn 1: expected preview, got deploy'],
  }));
  const warning = stub.messages.at(-1)!;
  assert.equal(warning.level, 'warning');
  assert.match(warning.text, /reverted "Add 1 synonym to release-desk's deploy": 1 of 3 flows failed/);
  assert.match(warning.text, /✗ turn 1: expected preview, got deploy/);
  assert.deepEqual(warning.items, ['Show flow failures']);
  await tick();
  const output = stub.outputChannels[0];
  assert.ok(output.shown, 'the button opens the output');
  assert.ok(output.lines.some((l: string) => l.includes('FAIL routing.yaml')));
  assert.equal(app.decorations.get((controller.insertDecoration as unknown as { key: string }).key)!.length, 1);
});

test('the Diff lens opens vscode.diff on a kitsoki-proposal: URI served by kitsoki/proposalContent', async () => {
  let nextCalled = false;
  const next = () => {
    nextCalled = true;
  };
  await client.clientOptions.middleware.executeCommand(P.CMD_DIFF, [{ id: 'w1', uri: CONFIG_URI }], next);
  assert.equal(nextCalled, false, 'the client acts; the server is not asked for a diff');
  const diff = stub.executed.find((e) => e.command === 'vscode.diff')!;
  const [left, right, title] = diff.args as [import("./support/vscode-stub").Uri, import("./support/vscode-stub").Uri, string];
  assert.equal(left.toString(), CONFIG_URI);
  assert.equal(right.scheme, 'kitsoki-proposal');
  assert.equal(right.path, '/ws/.kitsoki.yaml');
  assert.equal(right.query, 'id=w1');
  assert.equal(right.toString(), 'kitsoki-proposal:/ws/.kitsoki.yaml?id%3Dw1');
  assert.equal(title, ".kitsoki.yaml ↔ proposal: Set world.test_cmd to 'pytest'");
  const provider = stub.contentProviders.get('kitsoki-proposal');
  assert.equal(await provider.provideTextDocumentContent(right), `draft of ${CONFIG_URI} for w1`);
  assert.deepEqual(client.requests.at(-1), { method: P.PROPOSAL_CONTENT, params: { id: 'w1', uri: CONFIG_URI } });

  // The content provider is told to re-read an open proposal document when its file's proposals change.
  stub.textDocuments = [stub.document(right, '')];
  const changed: string[] = [];
  provider.onDidChange((uri: { toString(): string }) => changed.push(uri.toString()));
  client.notify(P.PROPOSALS_CHANGED, { workspace: 'file:///ws', uris: [CONFIG_URI], pending: 3 });
  assert.deepEqual(changed, [right.toString()]);

  client.responder = () => Promise.reject(new Error("no open proposal 'gone'"));
  const gone = vscode.Uri.from({ scheme: 'kitsoki-proposal', path: '/ws/.kitsoki.yaml', query: 'id=gone' });
  assert.match(await provider.provideTextDocumentContent(gone), /^# kitsoki-miner: no open proposal 'gone'/);
});

test('lens verdicts go to the server as workspace/executeCommand; refusals are shown as they came', async () => {
  client.responder = (_method, params) =>
    params.command === P.CMD_ACCEPT
      ? Promise.reject(new Error('refused: .kitsoki.yaml has unsaved edits in the editor; save or revert them first'))
      : decided('b1', 'refine', { draft_uri: 'file:///ws/.artifacts/mining/b1/.kitsoki.yaml' });
  const next = () => assert.fail('server commands are not left to the default handler');
  stub.buttons.push('Accept');
  await client.clientOptions.middleware.executeCommand(P.CMD_ACCEPT, [{ id: 'w1' }], next);
  assert.deepEqual(client.requests.at(-1), {
    method: 'workspace/executeCommand', params: { command: P.CMD_ACCEPT, arguments: [{ id: 'w1' }] },
  });
  assert.deepEqual(stub.messages.at(-1), {
    level: 'error', text: 'kitsoki-miner: refused: .kitsoki.yaml has unsaved edits in the editor; save or revert them first', items: [],
  });
  const result = await client.clientOptions.middleware.executeCommand(P.CMD_REFINE, [{ id: 'b1' }], next);
  assert.equal(result.verdict, 'refine');
  // the draft opens as a kitsoki-draft: document, not as a file of the workspace
  assert.equal(stub.shownDocuments.at(-1)!.target.toString(), 'kitsoki-draft:/ws/.artifacts/mining/b1/.kitsoki.yaml');
  let passed: unknown;
  await client.clientOptions.middleware.executeCommand('other.command', [1], (command: string, args: unknown[]) => {
    passed = [command, args];
  });
  assert.deepEqual(passed, ['other.command', [1]]);
});

test('the file lens and the proposals command: pick a card, then an action', async () => {
  client.responder = (method, params) => (method === P.PROPOSALS ? { proposals: cards } : decided(params.arguments[0].id, 'reject'));
  stub.pickers.push('Bind ticket to host.gh.ticket', 'Reject…');
  stub.buttons.push('Reject');
  await client.clientOptions.middleware.executeCommand(P.CMD_SHOW, [{ uri: CONFIG_URI }], () => assert.fail());
  assert.deepEqual(stub.quickPicks[0]!.items.map((i: { label: string }) => i.label),
    ["Set world.test_cmd to 'pytest'", 'Bind ticket to host.gh.ticket'], 'only the cards of that file');
  assert.deepEqual(client.requests.at(-1), {
    method: 'workspace/executeCommand', params: { command: P.CMD_REJECT, arguments: [{ id: 'b1' }] },
  });
});

test('client commands: accept picks a card, mining controls call kitsoki/mineControl', async () => {
  client.responder = (method) => (method === P.MINE_CONTROL ? { workspaces: [{ workspace: '/ws', enabled: true, paused: true, running: false }] } : decided('w1', 'accept'));
  stub.pickers.push("Set world.test_cmd to 'pytest'");
  stub.buttons.push('Accept');
  await stub.commands.get(CLIENT_COMMANDS.accept)!();
  assert.deepEqual(client.requests.at(-1)!.params, { command: P.CMD_ACCEPT, arguments: [{ id: 'w1' }] });
  const before = client.requests.length;
  await stub.commands.get(CLIENT_COMMANDS.reject)!('b1');
  assert.equal(client.requests.length, before, 'a reject asks first: no answer, nothing sent');
  assert.match(stub.modals.at(-1)!.text, /^Reject "Bind ticket to host\.gh\.ticket"\?$/);
  assert.match(stub.modals.at(-1)!.detail, /Show rejected proposals" restores it/);
  stub.buttons.push('Reject');
  await stub.commands.get(CLIENT_COMMANDS.reject)!('b1');
  assert.deepEqual(client.requests.at(-1)!.params, { command: P.CMD_REJECT, arguments: [{ id: 'b1' }] });
  for (const [name, action] of [[CLIENT_COMMANDS.mineNow, 'now'], [CLIENT_COMMANDS.pause, 'pause'], [CLIENT_COMMANDS.resume, 'resume']] as const) {
    await stub.commands.get(name)!();
    assert.deepEqual(client.requests.at(-1), { method: P.MINE_CONTROL, params: { action } });
  }
  assert.match(stub.messages.at(-1)!.text, /mining resumed/);
  await stub.commands.get(CLIENT_COMMANDS.showDiff)!({ id: 'i1' });
  assert.equal(stub.executed.at(-1)!.args[1].toString(), 'kitsoki-proposal:/ws/stories/release-desk/app.yaml?id%3Di1');
});

test('deactivate stops the client; disposing the subscriptions unregisters everything', async () => {
  await extension.deactivate();
  assert.ok(client.stopped);
  for (const disposable of context.subscriptions) {
    disposable.dispose();
  }
  context.subscriptions = [];
  assert.equal(stub.commands.size, 0);
  assert.equal(stub.contentProviders.size, 0);
  assert.ok(status().disposed);
  assert.ok(stub.decorationTypes.every((t) => t.disposed));
});

test('an accept asks first, naming the proposal and the flows; cancelling sends nothing', async () => {
  client.responder = (method) => (method === P.PROPOSAL
    ? { ...cards[1], diff: '', summary_markdown: '', evidence: {}, draft_uris: [],
        gate: { kind: 'builtin', runs: ['stories/release-desk/flows/preview.yaml'] },
        accept_says: 'This changes .kitsoki.yaml, then runs the flows in 1 flow file ' +
          '(stories/release-desk/flows/preview.yaml). The change is kept only if they all pass; otherwise every byte is restored.' }
    : decided('w1', 'accept'));
  const sent = () => client.requests.filter((r) => r.method === 'workspace/executeCommand').length;
  await client.clientOptions.middleware.executeCommand(P.CMD_ACCEPT, [{ id: 'w1' }], () => assert.fail());
  assert.deepEqual(stub.modals.at(-1), {
    text: "Accept \"Set world.test_cmd to 'pytest'\"?",
    detail: 'This changes .kitsoki.yaml, then runs the flows in 1 flow file (stories/release-desk/flows/preview.yaml). ' +
      'The change is kept only if they all pass; otherwise every byte is restored.',
  });
  assert.equal(sent(), 0, 'no answer, no accept');
  stub.config['kitsoki.confirmAccept'] = false;
  await client.clientOptions.middleware.executeCommand(P.CMD_ACCEPT, [{ id: 'w1' }], () => assert.fail());
  assert.equal(sent(), 1, 'the setting skips the question');
  assert.equal(stub.modals.length, 1);
});

test('the lens of a proposal sharing its line asks what to do with that proposal', async () => {
  client.responder = (method, params) => (method === P.PROPOSALS ? { proposals: cards } : decided(params.arguments[0].id, 'reject'));
  stub.pickers.push('Reject…');
  stub.buttons.push('Reject');
  await client.clientOptions.middleware.executeCommand(P.CMD_CHOOSE, [{ id: 'b1', uri: CONFIG_URI }], () => assert.fail());
  assert.deepEqual(stub.quickPicks.at(-1)!.items.map((i: { label: string }) => i.label),
    ['Accept', 'Refine', 'Show diff', 'Open file', 'Reject…'], 'the one that throws a proposal away is last');
  assert.equal(stub.quickPicks.at(-1)!.options.title, 'Bind ticket to host.gh.ticket');
  assert.deepEqual(client.requests.at(-1)!.params, { command: P.CMD_REJECT, arguments: [{ id: 'b1' }] });
});

test('a kept proposal closes its staged draft tab; a dirty one stays', async () => {
  const draft = { input: new vscode.TabInputText(vscode.Uri.file('/ws/.artifacts/mining/w1/.kitsoki.yaml')), isDirty: false };
  const dirty = { input: new vscode.TabInputText(vscode.Uri.file('/ws/.artifacts/mining/b1/.kitsoki.yaml')), isDirty: true };
  const live = { input: new vscode.TabInputText(vscode.Uri.file('/ws/.kitsoki.yaml')), isDirty: false };
  stub.tabs = [draft, dirty, live];
  client.notify(P.PROPOSAL_DECIDED, decided('w1', 'accept'));
  client.notify(P.PROPOSAL_DECIDED, decided('b1', 'reject'));
  await tick();
  assert.deepEqual(stub.tabs.map((t) => Boolean(t.closed)), [true, false, false]);
});

test('in Restricted Mode nothing starts until the folder is trusted, and the status says why', async () => {
  await extension.deactivate();
  for (const disposable of context.subscriptions.splice(0)) {
    disposable.dispose();
  }
  stub.reset();
  fake.LanguageClient.instances = [];
  stub.workspaceFolders = [{ uri: vscode.Uri.file(FOLDER), name: 'ws', index: 0 }];
  stub.trusted = false;
  await extension.activate(context as never);
  assert.equal(fake.LanguageClient.instances.length, 0);
  assert.match(status().text, /trust this folder to start/);
  assert.equal(status().command, 'workbench.trust.manage');
  stub.trusted = true;
  stub.trustGranted.fire();
  await tick();
  // kitsoki.serverCommand is a restricted setting: it reaches the extension just after the grant
  assert.equal(fake.LanguageClient.instances.length, 0, 'the server waits for the settings trust unlocks');
  stub.config = { 'kitsoki.serverCommand': ['/venv/bin/kitsoki-miner', 'serve'] };
  stub.configurationChanged.fire({});
  await tick();
  assert.equal(fake.LanguageClient.instances.length, 1, 'trusting the folder starts the server');
  assert.equal(fake.LanguageClient.instances[0]!.serverOptions.command, '/venv/bin/kitsoki-miner');
  assert.ok(fake.LanguageClient.instances[0]!.started);
});

test('a staged draft is a kitsoki-draft: document: read and saved through to the staged file, file: to the server', async () => {
  const drafts = stub.fileSystems.get('kitsoki-draft');
  assert.ok(drafts, 'the draft file system is registered');
  const staged = path.join(FOLDER, '.artifacts', 'mining', 'b1', '.kitsoki.yaml');
  fs.mkdirSync(path.dirname(staged), { recursive: true });
  fs.writeFileSync(staged, 'root: {}\n');
  const draft = vscode.Uri.from({ scheme: 'kitsoki-draft', path: staged });
  assert.equal(Buffer.from(await drafts.readFile(draft)).toString(), 'root: {}\n');
  await drafts.writeFile(draft, Buffer.from('root: {import: x}\n'), { create: false, overwrite: true });
  assert.equal(fs.readFileSync(staged, 'utf-8'), 'root: {import: x}\n', 'saving the draft rewrites the staged file');
  assert.equal(fs.readFileSync(path.join(FOLDER, '.kitsoki.yaml'), 'utf-8'), 'root:\n  import: dev-story\n',
    'never the live file');
  const live = vscode.Uri.from({ scheme: 'kitsoki-draft', path: path.join(FOLDER, '.kitsoki.yaml') });
  await assert.rejects(async () => drafts.readFile(live), /FileNotFound/, 'only staged drafts are served');
  await assert.rejects(async () => drafts.writeFile(vscode.Uri.from({ scheme: 'kitsoki-draft', path: `${staged}.new` }),
    Buffer.from('x'), { create: true, overwrite: false }), /NoPermissions/);
  const converters = client.clientOptions.uriConverters;
  assert.equal(converters.code2Protocol(draft), vscode.Uri.file(staged).toString());
  assert.equal(converters.protocol2Code(vscode.Uri.file(staged).toString()).toString(), draft.toString());
  assert.equal(converters.protocol2Code(CONFIG_URI).toString(), CONFIG_URI, 'live files stay file:');
  assert.equal(converters.code2Protocol(vscode.Uri.parse(CONFIG_URI)), CONFIG_URI);
});

test('a server that cannot start turns the status red and offers the output', async () => {
  await extension.deactivate();
  for (const disposable of context.subscriptions.splice(0)) {
    disposable.dispose();
  }
  stub.reset();
  fake.LanguageClient.instances = [];
  stub.workspaceFolders = [{ uri: vscode.Uri.file(FOLDER), name: 'ws', index: 0 }];
  stub.config = { 'kitsoki.serverCommand': ['/nowhere/kitsoki-miner', 'serve'] };
  const original = fake.LanguageClient.prototype.start;
  fake.LanguageClient.prototype.start = async function () {
    throw new Error('spawn /nowhere/kitsoki-miner ENOENT');
  };
  try {
    await extension.activate(context as never);
  } finally {
    fake.LanguageClient.prototype.start = original;
  }
  assert.equal(status().text, '$(error) kitsoki-miner: server stopped');
  assert.equal(status().backgroundColor?.id, 'statusBarItem.errorBackground');
  assert.equal(status().command, CLIENT_COMMANDS.showOutput);
  assert.match(status().tooltip, /could not start "\/nowhere\/kitsoki-miner serve": spawn \/nowhere\/kitsoki-miner ENOENT/);
  assert.match(stub.messages.at(-1)!.text, /Set kitsoki\.serverCommand/);
  assert.deepEqual(stub.messages.at(-1)!.items, ['Show output']);
  // the closed handler gives up after vscode-languageclient's five restarts, and says so
  const handler = fake.LanguageClient.instances[0]!.clientOptions.errorHandler;
  const actions = Array.from({ length: 5 }, () => handler.closed().action);
  assert.deepEqual(actions, [2, 2, 2, 2, 1]);
});

test('the default server: kitsoki-miner on PATH, else the workspace venv', () => {
  const { defaultServerCommand } = require('../src/settings') as typeof import('../src/settings');
  const has = (files: string[]) => (file: string) => files.includes(file);
  assert.deepEqual(defaultServerCommand('/ws', has(['/usr/bin/kitsoki-miner']), ['/usr/bin']),
    { command: 'kitsoki-miner', args: ['serve'] });
  assert.deepEqual(defaultServerCommand('/ws', has(['/ws/.venv/bin/kitsoki-miner']), ['/usr/bin']),
    { command: '/ws/.venv/bin/kitsoki-miner', args: ['serve'] });
  assert.deepEqual(defaultServerCommand('/ws', has([]), ['/usr/bin']), { command: 'kitsoki-miner', args: ['serve'] });
});
