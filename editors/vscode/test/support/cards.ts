/** Cards shaped like the demo's, in a workspace at /ws (see test/server.test.ts for the real ones). */

import type * as P from '../../src/protocol';

export const WS = '/ws';
export const CONFIG_URI = 'file:///ws/.kitsoki.yaml';
export const APP_URI = 'file:///ws/stories/release-desk/app.yaml';

function card(id: string, kind: string, title: string, files: P.FileCard[], status = 'pending'): P.Card {
  return {
    id, workspace: 'file:///ws', title, kind, rung: kind === 'intent' ? 2 : 1, target: '', priority: 4.2, status,
    classification: 'GAP', score: 0, reason: 'r', failure: null, suggestion_only: false, files, question_id: id,
  };
}

export function demoCards(): P.Card[] {
  return [
    card('i1', 'intent', "Add 1 synonym to release-desk's deploy", [{
      uri: APP_URI, path: 'stories/release-desk/app.yaml', line: 13, changed_lines: [13],
      added: ['    synonyms:', '      - take the build live'], created: false,
      hunks: [{ after: 13, removed: [], added: ['    synonyms:', '      - take the build live'] }],
    }]),
    card('w1', 'world', "Set world.test_cmd to 'pytest'", [{
      uri: CONFIG_URI, path: '.kitsoki.yaml', line: 22, changed_lines: [22], added: ['      test_cmd: pytest'],
      created: false, hunks: [{ after: 22, removed: [], added: ['      test_cmd: pytest'] }],
    }]),
    card('b1', 'binding', 'Bind ticket to host.gh.ticket', [{
      uri: CONFIG_URI, path: '.kitsoki.yaml', line: 22, changed_lines: [22],
      added: ['    bindings:', '      ticket: host.gh.ticket'], created: false,
      hunks: [{ after: 22, removed: [], added: ['    bindings:', '      ticket: host.gh.ticket'] }],
    }]),
  ];
}

export function question(id: string, title: string): P.QuestionNotification {
  return {
    question_id: id,
    questions: [{
      question: title, header: 'Capture as structure?', multiSelect: false,
      options: [
        { label: 'accept', description: 'apply' }, { label: 'refine', description: 'edit' },
        { label: 'dismiss', description: 'reject' },
      ],
    }],
  };
}

export function decided(id: string, verdict: P.DecisionResult['verdict'], extra: Partial<P.ProposalDecidedNotification> = {}):
  P.ProposalDecidedNotification {
  return {
    recipe_id: id, verdict, flows_green: verdict === 'accept' && !extra.reverted, reverted: false, failure: null,
    draft_uri: null, files: [], workspace: 'file:///ws', title: '', gate_summary: null, gate_failures: [], ...extra,
  };
}
