/**
 * Where a file's proposals are drawn: the lines they change get an added-line background, and the
 * first changed line of each card shows the lines it would add after the text. Pure: the glue turns
 * these numbers into `vscode.Range`s.
 */

import type { Card } from './protocol';
import { sameFile } from './proposalUri';

const MAX_NOTE = 160;

export interface ProposalNote {
  /** 0-based line that carries the note (a card's first changed line). */
  line: number;
  /** `after.contentText`: the added lines, one line of text. */
  text: string;
  /** Markdown for the hover. */
  hover: string;
  ids: string[];
}

export interface FileDecorations {
  /** 0-based lines with the added-line background, sorted, each once. */
  lines: number[];
  notes: ProposalNote[];
}

/** Cards that draw: open, with a draft (a stale one is being re-drafted; a suggestion has no file). */
function draws(card: Card): boolean {
  return card.status !== 'stale' && !card.suggestion_only;
}

export function addedText(added: string[]): string {
  const lines = added.map((line) => line.trim()).filter((line) => line.length > 0);
  return lines.length ? `+ ${lines.join(' ⏎ ')}` : '(removes lines)';
}

function clip(text: string): string {
  return text.length > MAX_NOTE ? `${text.slice(0, MAX_NOTE - 1)}…` : text;
}

export function decorationsFor(cards: Card[], fileUri: string): FileDecorations {
  const lines = new Set<number>();
  const notes = new Map<number, { texts: string[]; hovers: string[]; ids: string[] }>();
  for (const card of cards) {
    if (!draws(card)) {
      continue;
    }
    for (const file of card.files ?? []) {
      if (file.created || !sameFile(file.uri, fileUri)) {
        continue;
      }
      const changed = file.changed_lines.length ? file.changed_lines : [file.line];
      for (const line of changed) {
        if (line >= 0) {
          lines.add(line);
        }
      }
      const at = Math.max(Math.min(...changed), 0);
      const note = notes.get(at) ?? { texts: [], hovers: [], ids: [] };
      const held = card.status === 'held' ? 'held: ' : '';
      note.texts.push(`${held}${addedText(file.added)}`);
      note.hovers.push(
        `**kitsoki-miner proposal** (${card.kind}, ${card.status}): ${card.title}\n\n` +
          '```yaml\n' + file.added.join('\n') + '\n```' +
          (card.failure ? `\n\nLast accept reverted: ${card.failure}` : ''),
      );
      note.ids.push(card.id);
      notes.set(at, note);
    }
  }
  return {
    lines: [...lines].sort((a, b) => a - b),
    notes: [...notes.entries()]
      .sort(([a], [b]) => a - b)
      .map(([line, note]) => ({
        line,
        text: clip(`  ${note.texts.join('   │   ')}`),
        hover: note.hovers.join('\n\n---\n\n'),
        ids: note.ids,
      })),
  };
}
