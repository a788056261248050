/** What the client says and offers: decision messages, quick-pick items, error text. Pure. */

import type {
  Card,
  DecidedCard,
  ProposalDecidedNotification,
  ProposalDetail,
  Question,
  QuestionNotification,
  TakenBackResult,
} from './protocol';

export type Level = 'info' | 'warning' | 'error';

export interface Message {
  level: Level;
  text: string;
  /** Longer lines for the output channel (the failing flow lines of a revert). */
  details: string[];
}

const SHOWN_FAILURES = 3;

export function decisionMessage(note: ProposalDecidedNotification, fallbackTitle: string): Message {
  const title = note.title || fallbackTitle;
  const failures = note.gate_failures ?? [];
  const summary = note.gate_summary ? [note.gate_summary] : [];
  switch (note.verdict) {
    case 'accept':
      if (note.reverted) {
        const shown = failures.slice(0, SHOWN_FAILURES).join('; ');
        const more = failures.length > SHOWN_FAILURES ? ` (+${failures.length - SHOWN_FAILURES} more)` : '';
        return {
          level: 'warning',
          text:
            `kitsoki-miner: reverted "${title}": ${note.failure ?? 'the flow gate was red'}. ` +
            `Every byte was restored; the proposal is held.` + (shown ? ` Failing: ${shown}${more}` : ''),
          details: [...summary, ...failures],
        };
      }
      return {
        level: 'info',
        text: `kitsoki-miner: kept "${title}": ${note.kept ?? 'flows green'}. Undo puts back what it replaced.`,
        details: summary,
      };
    case 'refine':
      return {
        level: 'info',
        text: `kitsoki-miner: refining "${title}": edit the staged draft, then accept it.`,
        details: note.draft_uri ? [note.draft_uri] : [],
      };
    case 'reject':
      return {
        level: 'info',
        text: `kitsoki-miner: rejected "${title}"; it is not raised again ("Show rejected proposals" restores it).`,
        details: [],
      };
  }
}

export function takenBackMessage(note: TakenBackResult): Message {
  const title = note.title || note.recipe_id;
  if (note.how === 'saved') {
    return {
      level: 'warning',
      text: `kitsoki-miner: the saved file no longer holds the accepted "${title}": recorded as undone; it is offered again.`,
      details: note.files ?? [],
    };
  }
  if (note.action === 'undo') {
    return {
      level: 'info',
      text: `kitsoki-miner: undid the accept of "${title}" (the bytes before it are back); it is offered again.`,
      details: note.restored ?? [],
    };
  }
  return { level: 'info', text: `kitsoki-miner: restored "${title}"; it is offered again.`, details: [] };
}

/**
 * A short name per workspace folder URI, to tell several apart: the folder's name, or
 * `parent/name` when two share a name. Empty when there is only one (nothing to tell apart).
 */
export function workspaceNames(workspaces: Iterable<string>): Map<string, string> {
  const uris = [...new Set(workspaces)];
  const names = new Map<string, string>();
  if (uris.length < 2) {
    return names;
  }
  const parts = (uri: string) => decodeURIComponent(uri.replace(/\/+$/, '')).split('/');
  const base = (uri: string) => parts(uri).at(-1) ?? uri;
  for (const uri of uris) {
    const shared = uris.filter((other) => base(other) === base(uri)).length > 1;
    names.set(uri, shared ? parts(uri).slice(-2).join('/') : base(uri));
  }
  return names;
}

export interface CardItem {
  label: string;
  description: string;
  detail: string;
  id: string;
}

/** `names` (workspaceNames): with several workspaces, each row says whose it is. */
export function cardItem(card: Card, names: Map<string, string> = new Map()): CardItem {
  const files = (card.files ?? []).map((f) => f.path).join(', ') || 'a suggestion for dev-story (no file)';
  const where = names.get(card.workspace);
  const held = card.status === 'held' && card.failure ? ` — last accept reverted: ${card.failure}` : '';
  const waits = card.waits ? ` — waiting: ${card.waits}` : '';
  return {
    label: card.title,
    description: `${where ? `${where} · ` : ''}${card.kind} · ${card.status} · priority ${Number(card.priority.toFixed(2))}`,
    detail: `${where ? `${where}: ` : ''}${files}${held}${waits}`,
    id: card.id,
  };
}

export function decidedItem(item: DecidedCard, names: Map<string, string> = new Map()): CardItem {
  const where = names.get(item.workspace);
  const files = (item.files ?? []).join(', ') || 'no file';
  const when = item.decided_at ? item.decided_at.slice(0, 16).replace('T', ' ') : '';
  return {
    label: item.title,
    description: `${where ? `${where} · ` : ''}${item.state}${when ? ` ${when}` : ''}`,
    detail: item.can ? `${where ? `${where}: ` : ''}${files}` : `cannot ${item.state === 'accepted' ? 'undo' : 'restore'}: ${item.why_not ?? '?'}`,
    id: item.id,
  };
}

export type Action = 'accept' | 'refine' | 'reject' | 'diff' | 'open';

export interface ActionItem {
  label: string;
  description: string;
  action: Action;
}

/**
 * What can be done with one proposal. The accept row says what the gate will do, from the
 * detail's `accept_brief` (the server renders the gate's own preview); Reject is last, apart from
 * Refine, and asks first.
 */
export function actionItems(card: Card, detail?: ProposalDetail): ActionItem[] {
  const items: ActionItem[] = [];
  const hasFiles = (card.files ?? []).length > 0;
  if (card.status !== 'stale' && !card.suggestion_only) {
    items.push({
      label: card.status === 'held' ? 'Accept again' : 'Accept',
      description: `${detail?.accept_brief ?? 'through the gate'} (asks first)`,
      action: 'accept',
    });
    items.push({ label: 'Refine', description: 'open the staged draft to edit before accepting', action: 'refine' });
  }
  if (hasFiles) {
    items.push({ label: 'Show diff', description: 'the live file beside the staged draft', action: 'diff' });
    items.push({ label: 'Open file', description: 'at the first changed line', action: 'open' });
  }
  items.push({ label: 'Reject…', description: 'not raised again (asks first; restorable)', action: 'reject' });
  return items;
}

export interface OptionItem {
  label: string;
  description: string;
}

export function optionItems(question: Question): OptionItem[] {
  return question.options.map((o) => ({ label: o.label, description: o.description ?? '' }));
}

export function questionItem(note: QuestionNotification): { label: string; description: string; id: string } {
  const first = note.questions[0];
  return {
    label: first?.question ?? note.question_id,
    description: first?.header ?? '',
    id: note.question_id,
  };
}

/** kitsoki's answers map: the question text to the picked label(s). */
export function answersOf(note: QuestionNotification, picks: (string | string[])[]): Record<string, string | string[]> {
  const answers: Record<string, string | string[]> = {};
  note.questions.forEach((question, i) => {
    const pick = picks[i];
    if (pick !== undefined) {
      answers[question.question] = pick;
    }
  });
  return answers;
}

/** A JSON-RPC error's message, or whatever was thrown, as one line. */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  if (typeof error === 'object' && error !== null && 'message' in error) {
    return String((error as { message: unknown }).message);
  }
  return String(error);
}
