/**
 * Where a file's proposals are drawn, from each card's hunks: an insertion is a dashed line under
 * the live line its new lines would follow (that is where they go), with the lines it adds after
 * the text; a replacement marks the live lines it replaces. When several proposals put lines at
 * the same place, the note says how many and the hover shows each on its own. Pure: the glue turns
 * these numbers into `vscode.Range`s.
 */

import type { Card, FileCard, Hunk } from './protocol';
import { sameFile } from './proposalUri';

const MAX_NOTE = 120;

export interface ProposalNote {
  /** 0-based line that carries the note. */
  line: number;
  /** `after.contentText`: one line of text. */
  text: string;
  /** Markdown for the hover. */
  hover: string;
  ids: string[];
}

export interface FileDecorations {
  /** 0-based lines whose bottom edge marks an insertion point, sorted, each once. */
  insertBelow: number[];
  /** 0-based lines marked as replaced (or deleted), sorted, each once. */
  replaced: number[];
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

/** The card's hunks, or one made of its older fields (a server without hunks). */
export function hunksOf(file: FileCard): Hunk[] {
  if (file.hunks && file.hunks.length > 0) {
    return file.hunks;
  }
  const at = file.changed_lines.length ? Math.min(...file.changed_lines) : file.line;
  return [{ after: at, removed: [], added: file.added }];
}

interface Spot {
  line: number;
  entries: { card: Card; hunk: Hunk }[];
}

export function decorationsFor(cards: Card[], fileUri: string, lineCount = Number.MAX_SAFE_INTEGER): FileDecorations {
  const insertBelow = new Set<number>();
  const replaced = new Set<number>();
  const spots = new Map<number, Spot>();
  const last = Math.max(lineCount - 1, 0);
  for (const card of cards) {
    if (!draws(card)) {
      continue;
    }
    for (const file of card.files ?? []) {
      if (file.created || !sameFile(file.uri, fileUri)) {
        continue;
      }
      for (const hunk of hunksOf(file)) {
        const removed = hunk.removed ?? [];
        let line: number;
        if (removed.length > 0) {
          removed.forEach((l) => replaced.add(Math.min(l, last)));
          line = Math.min(removed[0]!, last);
        } else {
          line = Math.min(Math.max(hunk.after, 0), last);
          insertBelow.add(line);
        }
        const spot = spots.get(line) ?? { line, entries: [] };
        spot.entries.push({ card, hunk });
        spots.set(line, spot);
      }
    }
  }
  const notes = [...spots.values()]
    .sort((a, b) => a.line - b.line)
    .map((spot) => {
      const ids = [...new Set(spot.entries.map((e) => e.card.id))];
      const hover = spot.entries
        .map(({ card, hunk }, i) =>
          `**kitsoki-miner proposal${spot.entries.length > 1 ? ` ${i + 1} of ${spot.entries.length}` : ''}**: ` +
          `${card.title} (${card.kind}, ${card.status})\n\n` +
          '```yaml\n' + (hunk.added ?? []).join('\n') + '\n```' +
          (card.impact_says ? `\n\n${card.moves_routes ? '**Impact (moves routes)**' : 'Impact'}: ${card.impact_says}` : '') +
          (card.failure ? `\n\nLast accept reverted: ${card.failure}` : ''),
        )
        .join('\n\n---\n\n');
      let text: string;
      if (ids.length > 1) {
        text = `  ⤵ ${ids.length} proposals add lines here (hover to see each)`;
      } else {
        const { card, hunk } = spot.entries[0]!;
        const held = card.status === 'held' ? 'held: ' : '';
        const verb = (hunk.removed ?? []).length > 0 ? '→' : '⤵';
        text = clip(`  ${verb} ${held}${addedText(hunk.added ?? [])}`);
      }
      return { line: spot.line, text, hover, ids };
    });
  return {
    insertBelow: [...insertBelow].sort((a, b) => a - b),
    replaced: [...replaced].sort((a, b) => a - b),
    notes,
  };
}
