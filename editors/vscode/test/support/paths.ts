import * as path from 'node:path';

/** editors/vscode (this file runs from out/test/support/). */
export const PKG = path.resolve(__dirname, '..', '..', '..');
/** The repository root. */
export const REPO = path.resolve(PKG, '..', '..');
/** The Python that runs the server: $KITSOKI_PYTHON, else the repo's .venv. */
export const PYTHON = path.resolve(PKG, process.env.KITSOKI_PYTHON || '../../.venv/bin/python');
