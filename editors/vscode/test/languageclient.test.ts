/**
 * The real vscode-languageclient/node (the version the extension ships) loads under the `vscode`
 * stub, and a LanguageClient builds from exactly the options the extension passes.
 */

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import { PKG } from './support/paths';

import { stubVscode } from './support/hook';

stubVscode();

/* eslint-disable @typescript-eslint/no-require-imports */
const languageclient = require('vscode-languageclient/node') as typeof import('vscode-languageclient/node');
const { Controller } = require('../src/controller') as typeof import('../src/controller');
const { DOCUMENT_SELECTOR, serverCommand } = require('../src/settings') as typeof import('../src/settings');
const vscode = require('./support/vscode-stub') as typeof import('./support/vscode-stub');

const manifest = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf-8'));

test('vscode-languageclient/node loads and builds the extension client', () => {
  assert.equal(typeof languageclient.LanguageClient, 'function');
  assert.equal(languageclient.TransportKind.stdio, 0);
  const output = vscode.window.createOutputChannel('kitsoki-miner');
  const controller = new Controller(output as never);
  const { command, args } = serverCommand(undefined);
  const build = () => new languageclient.LanguageClient('kitsoki', 'kitsoki-miner',
    { command, args, transport: languageclient.TransportKind.stdio },
    { documentSelector: DOCUMENT_SELECTOR, middleware: controller.middleware, outputChannel: output as never });
  // The oldest VS Code the manifest admits is one this vscode-languageclient runs on, and no older.
  const floor = /^\^(\d+)\.(\d+)\.\d+$/.exec(manifest.engines.vscode);
  assert.ok(floor, `engines.vscode is a caret range: ${manifest.engines.vscode}`);
  vscode.setVersion(`${floor[1]}.${Number(floor[2]) - 1}.0`);
  assert.throws(build, /requires VS Code version/);
  vscode.setVersion(manifest.engines.vscode.slice(1));
  const client = build();
  controller.attach(client);
  assert.equal(client.name, 'kitsoki-miner');
  assert.equal(client.clientOptions.middleware?.executeCommand, controller.middleware.executeCommand);
  assert.deepEqual(client.clientOptions.documentSelector, DOCUMENT_SELECTOR);
  assert.equal(client.isRunning(), false);
  controller.dispose();
});
