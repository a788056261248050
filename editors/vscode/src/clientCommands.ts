/**
 * The extension's own command ids. They must not collide with the server's executeCommand names
 * (protocol.COMMANDS), which vscode-languageclient registers as VS Code commands by itself.
 */
export const CLIENT_COMMANDS = {
  showProposals: 'kitsoki.client.showProposals',
  answerQuestion: 'kitsoki.client.answerQuestion',
  accept: 'kitsoki.client.accept',
  refine: 'kitsoki.client.refine',
  reject: 'kitsoki.client.reject',
  showDiff: 'kitsoki.client.showDiff',
  mineNow: 'kitsoki.client.mineNow',
  pause: 'kitsoki.client.pause',
  resume: 'kitsoki.client.resume',
  showOutput: 'kitsoki.client.showOutput',
  showRejected: 'kitsoki.client.showRejected',
  undoAccept: 'kitsoki.client.undoAccept',
  restartServer: 'kitsoki.client.restartServer',
} as const;
