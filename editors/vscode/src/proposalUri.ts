/**
 * The right side of a proposal diff: a `kitsoki-proposal:` URI with the live file's path and the
 * proposal id in its query (`kitsoki-proposal:/abs/path/.kitsoki.yaml?id=<recipe id>`). The
 * content provider turns it back into `{id, uri}` for `kitsoki/proposalContent`. `empty=1` marks
 * the left side of a diff for a file the proposal creates. Pure: no `vscode` import.
 */

export const PROPOSAL_SCHEME = 'kitsoki-proposal';

/** What `vscode.Uri.from()` takes, and what a `vscode.Uri` has. */
export interface UriParts {
  scheme: string;
  path: string;
  query: string;
}

export interface ProposalRef {
  id: string;
  /** The live file, as a `file:` URI. */
  fileUri: string;
  empty: boolean;
}

/** The decoded path of a `file:` URI (`/tmp/a b/x.yaml` for `file:///tmp/a%20b/x.yaml`). */
export function pathOf(fileUri: string): string {
  const url = new URL(fileUri);
  if (url.protocol !== 'file:') {
    throw new Error(`not a file URI: ${fileUri}`);
  }
  return decodeURIComponent(url.pathname);
}

/** A `file:` URI for a decoded path, percent-encoded the way the server and VS Code expect. */
export function fileUriOf(path: string): string {
  const url = new URL('file:///');
  url.pathname = path;
  return url.href;
}

/** Whether two `file:` URIs name the same file (encodings differ between clients and servers). */
export function sameFile(a: string, b: string): boolean {
  try {
    return pathOf(a) === pathOf(b);
  } catch {
    return false;
  }
}

export function proposalUriParts(fileUri: string, id: string, empty = false): UriParts {
  if (!id) {
    throw new Error('a proposal URI needs the proposal id');
  }
  const query = new URLSearchParams({ id });
  if (empty) {
    query.set('empty', '1');
  }
  return { scheme: PROPOSAL_SCHEME, path: pathOf(fileUri), query: query.toString() };
}

/** The proposal a `kitsoki-proposal:` URI stands for; undefined for any other URI. */
export function parseProposalUri(parts: UriParts): ProposalRef | undefined {
  if (parts.scheme !== PROPOSAL_SCHEME) {
    return undefined;
  }
  const query = new URLSearchParams(parts.query);
  const id = query.get('id');
  if (!id || !parts.path) {
    return undefined;
  }
  return { id, fileUri: fileUriOf(parts.path), empty: query.get('empty') === '1' };
}

/**
 * A staged draft (`<workspace>/.artifacts/mining/<id>/<target>`) is shown as a `kitsoki-draft:`
 * document with the same path, read and written through to that file (draftDocuments.ts). As a
 * `file:` document VS Code would reveal `.artifacts/` in the explorer and treat the draft like any
 * file of the project; the server still sees the `file:` URI (the client's URI converters).
 */
export const DRAFT_SCHEME = 'kitsoki-draft';
const DRAFTS = '/.artifacts/mining/';

/** Whether a path is inside a proposal's staged draft. */
export function isDraftPath(path: string): boolean {
  return path.includes(DRAFTS);
}

/** The URI a document has in VS Code for a URI the server sends (drafts move to `kitsoki-draft:`). */
export function codeUriParts(parts: UriParts): UriParts {
  return parts.scheme === 'file' && isDraftPath(parts.path) ? { ...parts, scheme: DRAFT_SCHEME } : parts;
}

/** The URI the server knows a VS Code document by (a `kitsoki-draft:` document is its `file:`). */
export function serverUriParts(parts: UriParts): UriParts {
  return parts.scheme === DRAFT_SCHEME ? { ...parts, scheme: 'file' } : parts;
}
