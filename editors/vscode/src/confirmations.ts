/**
 * The questions asked before a verdict changes anything: an accept (with the server's own sentence
 * for that proposal, and "Save and accept" up front when a target or the staged draft has unsaved
 * edits), a reject (it can be restored), and which decided proposal to take back.
 */

import * as vscode from 'vscode';

import { decidedItem, workspaceNames } from './messages';
import type * as P from './protocol';
import { sameFile } from './proposalUri';

/**
 * An accept changes files and runs the gate: ask first, naming the proposal, the files and what the
 * gate will do, as the server says it from the gate's own preview (`accept_says`;
 * `kitsoki.confirmAccept: false` skips the question unless something is unsaved).
 */
export async function confirmAccept(detail: P.ProposalDetail): Promise<boolean> {
  const dirty = unsavedOf(detail);
  const ask = vscode.workspace.getConfiguration('kitsoki').get<boolean>('confirmAccept', true);
  if (!ask && dirty.length === 0) {
    return true;
  }
  const says = detail.accept_says ?? 'The flow gate decides whether it is kept.';
  const button = dirty.length > 0 ? 'Save and accept' : 'Accept';
  const unsaved = dirty.length > 0
    ? `${dirty.map((d) => labelOf(d.uri)).join(', ')} ${dirty.length === 1 ? 'has' : 'have'} unsaved edits: ` +
      'they are saved first. '
    : '';
  const pick = await vscode.window.showWarningMessage(`Accept "${detail.title}"?`, { modal: true, detail: unsaved + says },
    button);
  if (pick !== button) {
    return false;
  }
  for (const document of dirty) {
    if (!(await document.save())) {
      void vscode.window.showErrorMessage(`kitsoki-miner: ${labelOf(document.uri)} could not be saved; nothing accepted.`);
      return false;
    }
  }
  return true;
}

/** Open documents with unsaved edits that an accept of this proposal reads: its targets and its staged draft. */
export function unsavedOf(detail: P.ProposalDetail): vscode.TextDocument[] {
  const wanted = [...(detail.files ?? []).map((f) => f.uri), ...(detail.draft_uris ?? [])];
  return vscode.workspace.textDocuments.filter(
    (document) => document.isDirty && wanted.some((uri) => sameFile(uri, vscode.Uri.file(document.uri.path).toString())),
  );
}

function labelOf(uri: vscode.Uri): string {
  return uri.scheme === 'file' ? vscode.workspace.asRelativePath(uri) : `the draft of ${uri.path.split('/').pop()}`;
}

/** A rejection throws the proposal away (it can be restored): asked first, and says how to undo it. */
export async function confirmReject(title: string): Promise<boolean> {
  const pick = await vscode.window.showWarningMessage(
    `Reject "${title}"?`,
    { modal: true, detail: 'It is not raised again. "kitsoki-miner: Show rejected proposals" restores it.' },
    'Reject',
  );
  return pick === 'Reject';
}

/** The decided proposal to undo or restore: the one `id` names, or the one picked; undefined (said) when none can be. */
export async function pickDecided(
  action: 'undo' | 'restore',
  decided: P.DecidedCard[],
  id?: string,
): Promise<P.DecidedCard | undefined> {
  let target = id !== undefined ? decided.find((d) => d.id === id || d.id.startsWith(id)) : undefined;
  if (target === undefined) {
    if (decided.length === 0) {
      void vscode.window.showInformationMessage(
        `kitsoki-miner: ${action === 'undo' ? 'no kept accept to undo' : 'no rejected proposal'}.`);
      return undefined;
    }
    const names = workspaceNames(decided.map((d) => d.workspace));
    const pick = await vscode.window.showQuickPick(decided.map((d) => decidedItem(d, names)), {
      title: action === 'undo' ? 'kitsoki-miner: undo a kept accept' : 'kitsoki-miner: rejected proposals',
      placeHolder: action === 'undo' ? 'Undo which accept? (the bytes it replaced are put back)' : 'Restore which one?',
      matchOnDetail: true,
    });
    target = pick && decided.find((d) => d.id === pick.id);
    if (target === undefined) {
      return undefined;
    }
  }
  if (target.can !== action) {
    void vscode.window.showWarningMessage(`kitsoki-miner: cannot ${action} "${target.title}": ${target.why_not ?? '?'}`);
    return undefined;
  }
  return target;
}
