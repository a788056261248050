/** What the client says and offers: decision messages, quick-pick items, error text. Pure. */

import type { Card, ProposalDecidedNotification, Question, QuestionNotification } from './protocol';

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
        text: `kitsoki-miner: kept "${title}": ${note.kept ?? 'flows green'}.`,
        details: summary,
      };
    case 'refine':
      return {
        level: 'info',
        text: `kitsoki-miner: refining "${title}": edit the staged draft, then accept it.`,
        details: note.draft_uri ? [note.draft_uri] : [],
      };
    case 'reject':
      return { level: 'info', text: `kitsoki-miner: rejected "${title}"; it will not be raised again.`, details: [] };
  }
}

export interface CardItem {
  label: string;
  description: string;
  detail: string;
  id: string;
}

export function cardItem(card: Card): CardItem {
  const files = (card.files ?? []).map((f) => f.path).join(', ') || 'a suggestion for dev-story (no file)';
  const held = card.status === 'held' && card.failure ? ` — last accept reverted: ${card.failure}` : '';
  return {
    label: card.title,
    description: `${card.kind} · ${card.status} · priority ${Number(card.priority.toFixed(2))}`,
    detail: `${files}${held}`,
    id: card.id,
  };
}

export type Action = 'accept' | 'refine' | 'reject' | 'diff' | 'open';

export interface ActionItem {
  label: string;
  description: string;
  action: Action;
}

export function actionItems(card: Card): ActionItem[] {
  const items: ActionItem[] = [];
  const hasFiles = (card.files ?? []).length > 0;
  if (card.status !== 'stale' && !card.suggestion_only) {
    items.push({
      label: card.status === 'held' ? 'Accept again' : 'Accept',
      description: 'apply through the flow gate; kept only while the flows stay green',
      action: 'accept',
    });
    items.push({ label: 'Refine', description: 'open the staged draft to edit before accepting', action: 'refine' });
  }
  items.push({ label: 'Reject', description: 'this recipe is not raised again', action: 'reject' });
  if (hasFiles) {
    items.push({ label: 'Show diff', description: 'the live file beside the staged draft', action: 'diff' });
    items.push({ label: 'Open file', description: 'at the first changed line', action: 'open' });
  }
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
