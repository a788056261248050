/** The status bar item's look, from the server's state, the pending count and the questions waiting. Pure. */

import { CLIENT_COMMANDS } from './clientCommands';

export interface StatusView {
  text: string;
  tooltip: string;
  /** Draw with `statusBarItem.warningBackground`: a question waits for an answer, or trust. */
  warning: boolean;
  /** Draw with `statusBarItem.errorBackground`: the server is not running. */
  error: boolean;
  /** What a click runs. */
  command: string;
}

export interface ServerView {
  /** 'waiting-for-trust': Restricted Mode; 'down': the server stopped or never started. */
  state: 'starting' | 'running' | 'down' | 'waiting-for-trust' | 'not-a-workspace';
  /** Why it is down. */
  reason?: string | undefined;
  /** What mining has to say (e.g. where a pass that read 0 sessions looked). */
  note?: string | undefined;
  /** Started (or restarted), and the proposals not answered yet: the count would read 0. */
  loading?: boolean | undefined;
  /** A restart is under way (asked for): say so once it runs again. */
  restarting?: boolean | undefined;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** `perWorkspace`: name -> pending, when several workspaces are served (the tooltip lists each). */
export function statusView(
  pending: number,
  waiting: number,
  server: ServerView = { state: 'running' },
  perWorkspace: Map<string, number> = new Map(),
): StatusView {
  if (server.state === 'waiting-for-trust') {
    return {
      text: '$(shield) kitsoki-miner: trust this folder to start',
      tooltip:
        'kitsoki-miner waits: in Restricted Mode it does not start its server (a program from your settings ' +
        'that runs the project\'s flows on accept). Click to manage workspace trust.',
      warning: true,
      error: false,
      command: 'workbench.trust.manage',
    };
  }
  if (server.state === 'not-a-workspace') {
    return {
      text: '$(info) kitsoki-miner: a staged draft, not a workspace',
      tooltip: `kitsoki-miner: this folder is a proposal's staged draft (under .artifacts/), never a workspace: ` +
        `nothing is mined or proposed here. Open ${server.reason ?? 'the folder above .artifacts'} instead.`,
      warning: false,
      error: false,
      command: CLIENT_COMMANDS.showOutput,
    };
  }
  if (server.state === 'down') {
    return {
      text: '$(error) kitsoki-miner: server stopped',
      tooltip: `kitsoki-miner: ${server.reason ?? 'the server is not running'}. Click to open the kitsoki-miner output.`,
      warning: false,
      error: true,
      command: CLIENT_COMMANDS.showOutput,
    };
  }
  if (server.state === 'starting' || server.loading) {
    return {
      text: '$(sync~spin) kitsoki-miner: loading…',
      tooltip: 'kitsoki-miner: the server is starting and reading the proposals.',
      warning: false,
      error: false,
      command: CLIENT_COMMANDS.showOutput,
    };
  }
  const note = server.note ? `\n\n${server.note}` : '';
  const each = perWorkspace.size > 1
    ? `\n\n${[...perWorkspace].map(([name, n]) => `${name}: ${plural(n, 'proposal')}`).join('\n')}`
    : '';
  if (waiting > 0) {
    return {
      text: `$(question) proposals: ${pending}`,
      tooltip: `kitsoki-miner: ${plural(waiting, 'question')} waiting for an answer, ${plural(pending, 'proposal')} open. Click to answer.${each}${note}`,
      warning: true,
      error: false,
      command: CLIENT_COMMANDS.answerQuestion,
    };
  }
  return {
    text: `${server.note && pending === 0 ? '$(info) ' : ''}proposals: ${pending}`,
    tooltip: `kitsoki-miner: ${plural(pending, 'proposal')} open. Click to list them.${each}${note}`,
    warning: false,
    error: false,
    command: CLIENT_COMMANDS.showProposals,
  };
}
