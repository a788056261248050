/**
 * Activation wiring only: start `kitsoki-miner serve` through vscode-languageclient and hand the
 * client to the controller. Everything the editor shows lives in controller.ts and the pure
 * modules beside it.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';
import { LanguageClient, type LanguageClientOptions, type ServerOptions, TransportKind } from 'vscode-languageclient/node';

import { Controller } from './controller';
import { errorText } from './messages';
import { DOCUMENT_SELECTOR, serverCommand } from './settings';

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<Controller | undefined> {
  const output = vscode.window.createOutputChannel('kitsoki-miner');
  const controller = new Controller(output);
  context.subscriptions.push(output, controller);

  // The server serves folders with a .kitsoki.yaml at the top; YAML elsewhere starts nothing.
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const folder = folders.find((f) => fs.existsSync(path.join(f, '.kitsoki.yaml')));
  if (folder === undefined) {
    output.appendLine('no workspace folder has a .kitsoki.yaml at its top: the server is not started');
    controller.status.hide();
    return controller;
  }
  const config = vscode.workspace.getConfiguration('kitsoki');
  let executable;
  try {
    executable = serverCommand(config.get<unknown>('serverCommand'), folder);
  } catch (error) {
    void vscode.window.showErrorMessage(`kitsoki-miner: ${errorText(error)}`);
    return controller;
  }
  const serverOptions: ServerOptions = {
    command: executable.command,
    args: executable.args,
    transport: TransportKind.stdio,
    options: { cwd: folder },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    initializationOptions: config.get<Record<string, unknown>>('initializationOptions') ?? {},
    middleware: controller.middleware,
    outputChannel: output,
  };
  client = new LanguageClient('kitsoki', 'kitsoki-miner', serverOptions, clientOptions);
  controller.attach(client);
  try {
    await client.start();
  } catch (error) {
    const line = [executable.command, ...executable.args].join(' ');
    void vscode.window.showErrorMessage(
      `kitsoki-miner: could not start "${line}": ${errorText(error)}. Set kitsoki.serverCommand ` +
        `(e.g. ["<venv>/bin/kitsoki-miner", "serve"]) and reload the window.`,
    );
    return controller;
  }
  await controller.refresh();
  return controller;
}

export async function deactivate(): Promise<void> {
  const running = client;
  client = undefined;
  await running?.stop();
}
