/**
 * Staged drafts as `kitsoki-draft:` documents: a file system provider that reads and writes
 * through to the staged file on disk (same path), so a draft is edited and saved like a file but
 * is not a file of the workspace (the explorer never reveals `.artifacts/`, and nothing else
 * takes it for the live file). The language client's URI converters keep the server on `file:`.
 */

import * as vscode from 'vscode';

import { codeUriParts, DRAFT_SCHEME, isDraftPath, serverUriParts } from './proposalUri';

/** The staged file behind a `kitsoki-draft:` URI; only paths inside a staged draft are served. */
function fileOf(uri: vscode.Uri): vscode.Uri {
  if (uri.scheme !== DRAFT_SCHEME || !isDraftPath(uri.path)) {
    throw vscode.FileSystemError.FileNotFound(uri);
  }
  return vscode.Uri.file(uri.path);
}

function draftOf(file: vscode.Uri): vscode.Uri {
  return file.with({ scheme: DRAFT_SCHEME });
}

export class DraftFileSystem implements vscode.FileSystemProvider {
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;

  /** The server re-stages a draft when it re-drafts the proposal: an open draft follows it. */
  watch(uri: vscode.Uri): vscode.Disposable {
    const file = fileOf(uri);
    const folder = vscode.Uri.file(file.path.slice(0, file.path.lastIndexOf('/')));
    const watcher = vscode.workspace.createFileSystemWatcher(
      new vscode.RelativePattern(folder, file.path.slice(file.path.lastIndexOf('/') + 1)),
    );
    const fire = (type: vscode.FileChangeType) => (changed: vscode.Uri) =>
      this.changed.fire([{ type, uri: draftOf(changed) }]);
    return vscode.Disposable.from(
      watcher,
      watcher.onDidChange(fire(vscode.FileChangeType.Changed)),
      watcher.onDidCreate(fire(vscode.FileChangeType.Created)),
      watcher.onDidDelete(fire(vscode.FileChangeType.Deleted)),
    );
  }

  stat(uri: vscode.Uri): Thenable<vscode.FileStat> {
    return vscode.workspace.fs.stat(fileOf(uri));
  }

  readDirectory(uri: vscode.Uri): Thenable<[string, vscode.FileType][]> {
    return vscode.workspace.fs.readDirectory(fileOf(uri));
  }

  readFile(uri: vscode.Uri): Thenable<Uint8Array> {
    return vscode.workspace.fs.readFile(fileOf(uri));
  }

  /** Saving a draft rewrites the staged file (never the live one); no new files are made here. */
  async writeFile(uri: vscode.Uri, content: Uint8Array, options: { create: boolean; overwrite: boolean }): Promise<void> {
    const file = fileOf(uri);
    await vscode.workspace.fs.stat(file).then(
      () => undefined,
      () => {
        if (!options.create) {
          throw vscode.FileSystemError.FileNotFound(uri);
        }
        throw vscode.FileSystemError.NoPermissions('kitsoki-miner: a staged draft cannot be created from the editor');
      },
    );
    await vscode.workspace.fs.writeFile(file, content);
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export function registerDraftDocuments(): vscode.Disposable {
  const provider = new DraftFileSystem();
  return vscode.Disposable.from(
    provider,
    vscode.workspace.registerFileSystemProvider(DRAFT_SCHEME, provider, { isCaseSensitive: true }),
  );
}

/** vscode-languageclient's `uriConverters`: drafts are `kitsoki-draft:` here, `file:` to the server. */
export const draftUriConverters = {
  code2Protocol: (uri: vscode.Uri): string => uri.with({ scheme: serverUriParts(uri).scheme }).toString(),
  protocol2Code: (value: string): vscode.Uri => {
    const uri = vscode.Uri.parse(value);
    const scheme = codeUriParts(uri).scheme;
    return scheme === uri.scheme ? uri : uri.with({ scheme });
  },
};
