/** The status bar item's look, from the pending count and the questions waiting. Pure. */

import { CLIENT_COMMANDS } from './clientCommands';

export interface StatusView {
  text: string;
  tooltip: string;
  /** Draw with `statusBarItem.warningBackground`: a question waits for an answer. */
  warning: boolean;
  /** What a click runs. */
  command: string;
}

export function statusView(pending: number, waiting: number): StatusView {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (waiting > 0) {
    return {
      text: `$(question) proposals: ${pending}`,
      tooltip: `kitsoki-miner: ${plural(waiting, 'question')} waiting for an answer, ${plural(pending, 'proposal')} open. Click to answer.`,
      warning: true,
      command: CLIENT_COMMANDS.answerQuestion,
    };
  }
  return {
    text: `proposals: ${pending}`,
    tooltip: `kitsoki-miner: ${plural(pending, 'proposal')} open. Click to list them.`,
    warning: false,
    command: CLIENT_COMMANDS.showProposals,
  };
}
