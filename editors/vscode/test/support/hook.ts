/**
 * Points `require(name)` at a stand-in file (lsp-notes §4(c)): `vscode` exists only inside VS Code.
 * Call before the first require of a module that imports them.
 */

import Module = require('node:module');

const stand_ins = new Map<string, string>();
const resolver = Module as unknown as {
  _resolveFilename(request: string, parent: unknown, isMain: boolean, options?: unknown): string;
};
const original = resolver._resolveFilename;
resolver._resolveFilename = function (request, parent, isMain, options) {
  const stand_in = stand_ins.get(request);
  return stand_in ?? original.call(this, request, parent, isMain, options);
};

export function standIn(request: string, file: string): void {
  stand_ins.set(request, require.resolve(file));
}

/** `vscode` resolves to test/support/vscode-stub. */
export function stubVscode(): void {
  standIn('vscode', './vscode-stub');
}
