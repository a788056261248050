/**
 * Activation wiring only: start `kitsoki-miner serve` through vscode-languageclient and hand the
 * client to the controller. Everything the editor shows lives in controller.ts and the pure
 * modules beside it.
 *
 * The server is a program named by the settings that runs the project's flows on accept, so it
 * starts only in a trusted folder: in Restricted Mode the status item says it waits for trust,
 * and the server starts the moment the folder is trusted.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';
import {
  CloseAction,
  type CloseHandlerResult,
  ErrorAction,
  type ErrorHandlerResult,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';

import { CLIENT_COMMANDS } from './clientCommands';
import { Controller } from './controller';
import { draftUriConverters, registerDraftDocuments } from './draftDocuments';
import { errorText } from './messages';
import { defaultServerCommand, DOCUMENT_SELECTOR, type Executable, serverCommand } from './settings';

/** vscode-languageclient's own rule: at most this many restarts in three minutes. */
const MAX_RESTARTS = 4;
/** How long a trust grant waits for the workspace settings it unlocks. */
const TRUSTED_SETTINGS_WAIT_MS = 1000;

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<Controller | undefined> {
  const output = vscode.window.createOutputChannel('kitsoki-miner');
  const controller = new Controller(output);
  context.subscriptions.push(output, controller, registerDraftDocuments(),
    vscode.commands.registerCommand(CLIENT_COMMANDS.restartServer, () => restartServer(controller)));

  // The server serves folders with a .kitsoki.yaml at the top; YAML elsewhere starts nothing. A
  // staged draft (.artifacts/mining/<id>/) has a .kitsoki.yaml of its own and is never a workspace.
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const marked = folders.filter((f) => fs.existsSync(path.join(f, '.kitsoki.yaml')));
  const folder = marked.find((f) => !isStagedDraft(f));
  if (folder === undefined && marked.length > 0) {
    const draft = marked[0]!;
    const top = draft.slice(0, draft.indexOf(`${path.sep}.artifacts`));
    output.appendLine(`${draft} is a staged draft (under .artifacts/), not a workspace: the server is not started; open ${top}`);
    controller.notAWorkspace(top);
    return controller;
  }
  if (folder === undefined) {
    output.appendLine('no workspace folder has a .kitsoki.yaml at its top: the server is not started');
    controller.status.hide();
    return controller;
  }
  if (vscode.workspace.isTrusted === false) {
    output.appendLine(`${folder} is not trusted (Restricted Mode): the server starts once you trust it`);
    controller.waitForTrust();
    context.subscriptions.push(
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        output.appendLine(`${folder} is trusted now: starting the server`);
        afterTrustedSettings(() => void start(context, controller, folder));
      }),
    );
    return controller;
  }
  await start(context, controller, folder);
  return controller;
}

/** A folder inside kitsoki-miner's own state (`.artifacts/`), where drafts are staged. */
export function isStagedDraft(folder: string): boolean {
  return folder.split(path.sep).includes('.artifacts');
}

/**
 * The grant reaches the extension host before the settings it unlocks (`kitsoki.serverCommand`
 * is a restricted setting, ignored in Restricted Mode): run on the configuration change that
 * follows, or after a second when nothing changes.
 */
function afterTrustedSettings(run: () => void): void {
  let done = false;
  const once = () => {
    if (!done) {
      done = true;
      changed.dispose();
      clearTimeout(timer);
      run();
    }
  };
  const changed = vscode.workspace.onDidChangeConfiguration(once);
  const timer = setTimeout(once, TRUSTED_SETTINGS_WAIT_MS);
}

function executableFor(folder: string): Executable {
  const config = vscode.workspace.getConfiguration('kitsoki');
  const inspected = config.inspect<unknown>('serverCommand');
  const set = [inspected?.globalValue, inspected?.workspaceValue, inspected?.workspaceFolderValue].some(
    (value) => value !== undefined,
  );
  if (set) {
    return serverCommand(config.get<unknown>('serverCommand'), folder);
  }
  const pathDirs = (process.env['PATH'] ?? '').split(path.delimiter);
  return defaultServerCommand(folder, (file) => fs.existsSync(file), pathDirs);
}

async function start(context: vscode.ExtensionContext, controller: Controller, folder: string): Promise<void> {
  if (client !== undefined) {
    return;
  }
  const config = vscode.workspace.getConfiguration('kitsoki');
  let executable: Executable;
  try {
    executable = executableFor(folder);
  } catch (error) {
    controller.serverDown(errorText(error));
    void vscode.window.showErrorMessage(`kitsoki-miner: ${errorText(error)}`);
    return;
  }
  const line = [executable.command, ...executable.args].join(' ');
  const serverOptions: ServerOptions = {
    command: executable.command,
    args: executable.args,
    transport: TransportKind.stdio, // the client appends --stdio; `kitsoki-miner serve` takes it
    options: { cwd: folder },
  };
  const restarts: number[] = [];
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    initializationOptions: config.get<Record<string, unknown>>('initializationOptions') ?? {},
    middleware: controller.middleware,
    uriConverters: draftUriConverters,
    outputChannel: controller.output,
    errorHandler: {
      error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue }),
      closed: (): CloseHandlerResult => {
        const now = Date.now();
        restarts.push(now);
        while (restarts.length > 0 && now - restarts[0]! > 3 * 60 * 1000) {
          restarts.shift();
        }
        if (restarts.length > MAX_RESTARTS) {
          controller.serverDown(`"${line}" stopped ${restarts.length} times in three minutes`);
          return {
            action: CloseAction.DoNotRestart,
            message: `kitsoki-miner: the server "${line}" keeps stopping; it is not restarted. The kitsoki-miner output says why.`,
          };
        }
        controller.serverDown('it stopped unexpectedly; the kitsoki-miner output may say why');
        return { action: CloseAction.Restart, handled: true };
      },
    },
  };
  const languageClient = new LanguageClient('kitsoki', 'kitsoki-miner', serverOptions, clientOptions);
  let started = false; // the first start is awaited below; later changes are restarts and stops
  client = languageClient;
  controller.attach(languageClient);

  context.subscriptions.push(
    languageClient.onDidChangeState((event) => {
      if (event.newState === State.Running && started) {
        void controller.serverUp();
      } else if (event.newState === State.Stopped && client === languageClient) {
        controller.serverStopped(`"${line}" is not running`);
      }
    }),
  );
  try {
    await languageClient.start();
  } catch (error) {
    controller.serverDown(`could not start "${line}": ${errorText(error)}`);
    void vscode.window
      .showErrorMessage(
        `kitsoki-miner: could not start "${line}": ${errorText(error)}. Set kitsoki.serverCommand ` +
          `(e.g. ["<venv>/bin/kitsoki-miner", "serve"]) and reload the window.`,
        'Show output',
      )
      .then((pick) => pick === 'Show output' && controller.output.show(true));
    return;
  }
  started = true;
  await controller.serverUp();
}

/** "Restart the server": stop and start it again (also after it stopped for good); the status says
 * loading until it answers, and a message says when it runs again. */
async function restartServer(controller: Controller): Promise<void> {
  const running = client;
  if (running === undefined) {
    void vscode.window.showInformationMessage(
      'kitsoki-miner: no server to restart (no trusted workspace folder with a .kitsoki.yaml at its top).');
    return;
  }
  controller.serverDown('you asked for a restart');
  controller.serverRestarting();
  try {
    await running.restart();
  } catch (error) {
    controller.serverDown(`could not restart it: ${errorText(error)}`);
  }
}

export async function deactivate(): Promise<void> {
  const running = client;
  client = undefined;
  if (running !== undefined && running.state !== State.Stopped) {
    await running.stop().catch(() => undefined); // a server that never started has nothing to stop
  }
}
