/**
 * What the client knows between notifications: the open cards (from `kitsoki/proposals`), the
 * pending count per workspace (from `kitsoki/proposalsChanged`) and the operator questions that
 * wait for an answer (from `kitsoki/question`). Pure: the glue renders it.
 */

import type { Card, ProposalDecidedNotification, QuestionNotification } from './protocol';

interface Waiting {
  note: QuestionNotification;
  seq: number;
}

export class ClientState {
  cards: Card[] = [];
  private readonly pending = new Map<string, number>();
  private readonly waiting = new Map<string, Waiting>();
  private seq = 0;

  /** A counter to take before asking for the cards, handed back to `setCards`. */
  mark(): number {
    return ++this.seq;
  }

  proposalsChanged(workspace: string, pending: number): void {
    this.pending.set(workspace, pending);
  }

  /**
   * The cards as `kitsoki/proposals` listed them, asked for after `mark()` returned `seq`.
   * A question that arrived before that and has no card any more was settled elsewhere (the
   * CLI, another editor, a withdrawal): it no longer waits.
   */
  setCards(cards: Card[], seq: number): void {
    this.cards = cards;
    const counts = new Map<string, number>();
    for (const card of cards) {
      counts.set(card.workspace, (counts.get(card.workspace) ?? 0) + 1);
    }
    for (const workspace of this.pending.keys()) {
      this.pending.set(workspace, counts.get(workspace) ?? 0);
    }
    for (const [workspace, count] of counts) {
      this.pending.set(workspace, count);
    }
    const open = new Set(cards.map((card) => card.question_id));
    for (const [id, waiting] of this.waiting) {
      if (waiting.seq < seq && !open.has(id)) {
        this.waiting.delete(id);
      }
    }
  }

  question(note: QuestionNotification): void {
    this.waiting.set(note.question_id, { note, seq: ++this.seq });
  }

  answered(questionId: string): void {
    this.waiting.delete(questionId);
  }

  /**
   * A verdict landed. Its question is settled; a card that is gone for good (kept, or rejected)
   * leaves the list at once, so its decorations clear before the next `kitsoki/proposals`.
   * A reverted accept (held) or a refine keeps its card. The pending count is left alone: the
   * server sends `kitsoki/proposalsChanged` with the new count before this notification.
   */
  decided(note: ProposalDecidedNotification): void {
    this.waiting.delete(note.recipe_id);
    const gone = note.verdict === 'reject' || (note.verdict === 'accept' && !note.reverted);
    if (!gone) {
      return;
    }
    this.cards = this.cards.filter((c) => c.id !== note.recipe_id);
  }

  card(id: string): Card | undefined {
    return this.cards.find((c) => c.id === id || c.question_id === id);
  }

  /** Every workspace folder URI heard of (cards and counts). */
  workspaces(): string[] {
    return [...new Set([...this.pending.keys(), ...this.cards.map((c) => c.workspace)])];
  }

  /** name -> pending count, by the short names given (workspaceNames); empty with one workspace. */
  pendingByWorkspace(names: Map<string, string>): Map<string, number> {
    const out = new Map<string, number>();
    for (const [workspace, count] of this.pending) {
      out.set(names.get(workspace) ?? workspace, count);
    }
    return names.size > 1 ? out : new Map();
  }

  pendingTotal(): number {
    let total = 0;
    for (const count of this.pending.values()) {
      total += count;
    }
    return total;
  }

  questions(): QuestionNotification[] {
    return [...this.waiting.values()].map((w) => w.note);
  }

  titleOf(id: string): string {
    const card = this.card(id);
    if (card !== undefined) {
      return card.title;
    }
    const question = this.waiting.get(id)?.note.questions[0]?.question;
    return question ?? id;
  }
}
