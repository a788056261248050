/**
 * The sidecar's own protocol, mirrored from server/protocol.py: `kitsoki/*` methods and
 * notifications, `workspace/executeCommand` names, and every payload shape.
 *
 * test/protocol.test.ts compares this file with schemas/protocol.schema.json (every interface,
 * field, optionality and type) and with the constants of server/protocol.py, so the two cannot
 * drift. Field names are the server's (snake_case) on purpose: they are the wire format.
 * A field the schema does not require is optional here.
 */

// -- methods --------------------------------------------------------------------------------------

export const MINE_STATUS = 'kitsoki/mineStatus';
export const MINE_CONTROL = 'kitsoki/mineControl';
export const PROPOSALS = 'kitsoki/proposals';
export const PROPOSAL = 'kitsoki/proposal';
export const PROPOSAL_CONTENT = 'kitsoki/proposalContent';
export const ANSWER_QUESTION = 'kitsoki/answerQuestion';
export const PASS_RAN = 'kitsoki/passRan';
export const PROPOSALS_CHANGED = 'kitsoki/proposalsChanged';
export const PROPOSAL_DECIDED = 'kitsoki/proposalDecided';
export const QUESTION = 'kitsoki/question';
export const QUESTION_WITHDRAWN = 'kitsoki/questionWithdrawn';
export const EVOLVE = 'kitsoki/evolve';
export const RUNS = 'kitsoki/runs';
/** Accepted and rejected proposals, and whether each can be undone or restored. */
export const DECIDED = 'kitsoki/decided';
/** A verdict taken back (an undo, a restore, or a saved file that dropped a kept accept). */
export const TAKEN_BACK = 'kitsoki/proposalTakenBack';

// -- workspace/executeCommand ---------------------------------------------------------------------

export const CMD_ACCEPT = 'kitsoki.accept';
export const CMD_REFINE = 'kitsoki.refine';
export const CMD_REJECT = 'kitsoki.reject';
export const CMD_DIFF = 'kitsoki.diff';
export const CMD_MINE_NOW = 'kitsoki.mineNow';
export const CMD_PAUSE = 'kitsoki.pause';
export const CMD_RESUME = 'kitsoki.resume';
export const CMD_PROPOSE = 'kitsoki.propose';
export const CMD_SHOW = 'kitsoki.showProposals';
/** The one lens of a proposal that shares its line with others: asks what to do with it. */
export const CMD_CHOOSE = 'kitsoki.choose';
/** Undo a kept accept: the bytes it replaced are put back (through the apply journal). */
export const CMD_UNDO = 'kitsoki.undo';
/** Take a rejection back: the proposal is offered again. */
export const CMD_RESTORE = 'kitsoki.restore';
/** An accept left unsettled: `[{}]` lists them, `[{id, choice: 'restore' | 'keep'}]` settles one. */
export const CMD_RESOLVE = 'kitsoki.resolve';
export const COMMANDS = [
  CMD_ACCEPT, CMD_REFINE, CMD_REJECT, CMD_DIFF, CMD_MINE_NOW, CMD_PAUSE, CMD_RESUME, CMD_PROPOSE, CMD_SHOW,
  CMD_CHOOSE, CMD_UNDO, CMD_RESTORE, CMD_RESOLVE,
] as const;
export type ServerCommand = (typeof COMMANDS)[number];

/** kitsoki's TUI card header for a mining proposal. */
export const QUESTION_HEADER = 'Capture as structure?';
export const ANSWERS = ['accept', 'refine', 'dismiss'] as const;
export type Answer = (typeof ANSWERS)[number];

// -- shapes (the $defs of schemas/protocol.schema.json) -------------------------------------------

export interface MineStatusParams {
  /** A workspace folder or a file inside one; all served workspaces when absent. */
  uri?: string | null;
}

export interface PassReport {
  trigger: 'seed' | 'live';
  slug: string;
  sessions: number;
  recipes: number;
  job_id: string;
  files_seen?: number;
  files_read?: number;
  bytes_read?: number;
  mined_through?: number;
  recipes_path?: string;
  /** Sessions under the folders looked in that belong to other projects (left out unless read on purpose). */
  other_projects?: number;
  /** `mining.other_projects` was on: those sessions were read, for suggestions only. */
  reads_other_projects?: boolean;
}

export interface MineStatus {
  workspace: string;
  enabled: boolean;
  paused: boolean;
  running: boolean;
  last_pass?: PassReport | null;
  last_error?: string | null;
  transcript_dirs?: string[];
  mined_through?: number;
  pending?: number;
  proposer_error?: string | null;
  dev_story?: DevStorySource | null;
  /** What a person should know about mining here, e.g. where a pass that read 0 sessions looked. */
  note?: string | null;
  /** Why the workspace does not load (file, line, column): proposals wait until it does. */
  problems?: ConfigIssue[];
  /** Whether the accepted changes stuck, after the last pass (core.proposals.outcomes). */
  outcomes?: string | null;
  /** What a person must read first: an unusable signing key, an accept left unsettled (how to fix each). */
  attention?: string[];
}

/** Where the root instance's dev-story came from (kitsoki-repo, checkout, library or missing). */
export interface ConfigIssue {
  file: string;
  line: number;
  column: number;
  key?: string;
  message: string;
}

export interface DevStorySource {
  kind: string;
  path?: string;
  kitsoki_commit?: string;
  message?: string;
}

export interface MineStatusResult {
  workspaces: MineStatus[];
}

export interface MineControlParams {
  action: 'pause' | 'resume' | 'now' | 'scope';
  /** scope: the transcript folders to mine (absolute paths). */
  dirs?: string[] | null;
  uri?: string | null;
}

export interface ProposalsParams {
  /** Only proposals that change this file (or, for a folder, that workspace). */
  uri?: string | null;
}

/** One change block of a file. */
export interface Hunk {
  /** 0-based live line the added lines follow; -1 when they go before the first line. */
  after: number;
  /** 0-based live lines the block replaces or deletes. */
  removed?: number[];
  /** The lines the block puts there. */
  added?: string[];
}

export interface FileCard {
  uri: string;
  /** Workspace-relative. */
  path: string;
  /** 0-based line of the first change in the live file (where the lens goes). */
  line: number;
  /** 0-based lines the change touches. */
  changed_lines: number[];
  added: string[];
  created?: boolean;
  /** Each change block: the live lines it removes and the live line its new lines follow. */
  hunks?: Hunk[];
}

/** A proposal as an editor shows it. */
export interface Card {
  id: string;
  workspace: string;
  title: string;
  kind: string;
  rung: number;
  target: string;
  priority: number;
  status: string;
  classification: string;
  score: number;
  reason: string;
  failure?: string | null;
  suggestion_only?: boolean;
  files?: FileCard[];
  question_id: string;
  /** What proves the change: the proposal's new flow fixture, its claims, what no flow can show. */
  proof?: Record<string, unknown> | null;
  /** A stale proposal that cannot be re-drafted yet: why (the workspace does not load, file:line:col). */
  waits?: string | null;
  /** What it would have done to past prompts and fixtures: replayed, gained, moved (text, from, to, source), reads. */
  impact?: Record<string, unknown> | null;
  /** `impact` in a sentence or two, as the hover and the confirmation say it. */
  impact_says?: string | null;
  /** The draft moves an input from the intent it routes to today. */
  moves_routes?: boolean;
}

export interface ProposalsResult {
  proposals: Card[];
}

export interface ProposalParams {
  id: string;
}

export interface Evidence {
  sessions: number;
  phrasings: [string, number][];
  action_signature: string[];
  cites: Record<string, unknown>[];
  value?: string | null;
}

export interface ProposalDetail extends Card {
  diff: string;
  summary_markdown: string;
  evidence: Evidence;
  /** The staged draft files (what refine opens). */
  draft_uris: string[];
  /** What an accept will run (the flows), for the confirmation asked before it. */
  gate?: GatePreview | null;
  /** `gate` in a few words (`runs 2 flow files`, `no flow runs: kept after checks`). */
  accept_brief?: string | null;
  /** `gate` as the confirmation says it: the files changed, what judges the change, what a failure does. */
  accept_says?: string | null;
}

/** What the flow gate of an accept runs: its kind and the flow files (or the command). */
export interface GatePreview {
  kind: string;
  /** Workspace-relative flow files, or the command line for a command gate. */
  runs: string[];
  note?: string | null;
  /** `<app.yaml> (<why>): <n> flows` per app the change reaches. */
  apps?: string[];
  /** Apps the change reaches that miner.flow_gate.skip leaves ungated. */
  skipped?: string[];
  /** Nothing would judge the change: an accept is held unless miner.ungated: allow. */
  held?: boolean;
  /** False when no flow exercises the change. */
  gated?: boolean;
  /** When no flow exercises the change: what would. */
  would_exercise?: string[];
}

/** What the gate did with one app the change reaches (or with the root flows, app `<root>`). */
export interface FlowRun {
  app: string;
  why?: string;
  flows?: string;
  status: 'passed' | 'failed' | 'not run' | 'error';
  passed?: string[];
  failed?: string[];
  /** `<flow>: <why>` for each flow that did not run. */
  not_run?: string[];
  summary?: string;
  duration_s?: number;
}

export interface ProposalContentParams {
  id: string;
  /** The live file; the result is the staged draft of that file. */
  uri: string;
}

export interface ProposalContentResult {
  text: string;
  /** Set when the proposal is no longer open (accepted, rejected, withdrawn). */
  state?: string | null;
}

/** kitsoki's answer_question shape: {question_id, answers: {"<question>": "<label>"}}. */
export interface AnswerQuestionParams {
  question_id: string;
  answers: Record<string, string | string[]>;
}

export interface DecisionResult {
  recipe_id: string;
  verdict: 'accept' | 'refine' | 'reject';
  flows_green: boolean;
  reverted: boolean;
  failure: string | null;
  draft_uri?: string | null;
  /** URIs of the files the verdict touched (accept) or proposes to change. */
  files?: string[];
  /** accept: false when no flow judged the change (held, or kept under miner.ungated: allow). */
  gated?: boolean;
  /** accept: not kept because nothing judged it; `failure` says what would. */
  held?: boolean;
  /** accept: per app, the flows that passed, failed or did not run (and why). */
  flows?: FlowRun[];
  /** accept: apps miner.flow_gate.skip leaves ungated. */
  skipped?: string[];
  /** accept, kept: what kept it, in words ("flows green", or that no flow exercises it). */
  kept?: string | null;
  /** accept: neither kept nor reverted (an edit made while it ran); `failure` says how to settle it. */
  unresolved?: boolean;
  /** What else to know: a cancel that came after the verdict began (it was carried out). */
  note?: string | null;
}

export interface PassRanNotification {
  workspace: string;
  report: PassReport;
  raised?: string[];
  proposer_error?: string | null;
}

export interface ProposalsChangedNotification {
  workspace: string;
  /** Files whose proposals changed. */
  uris: string[];
  pending: number;
}

export interface ProposalDecidedNotification extends DecisionResult {
  workspace: string;
  title?: string;
  gate_summary?: string | null;
  gate_failures?: string[];
}

export interface QuestionOption {
  label: string;
  description?: string;
}

export interface Question {
  question: string;
  header?: string;
  options: QuestionOption[];
  multiSelect?: boolean;
}

/** An operator-question card (kitsoki's AskUserQuestion shape). */
export interface QuestionNotification {
  question_id: string;
  questions: Question[];
  /** What answers it: a proposal (accept/refine/dismiss) or learnings (a multi-select). */
  kind?: 'proposal' | 'learnings';
  /** The workspace folder (URI) the proposal belongs to. */
  workspace?: string | null;
}

/** Questions that no longer wait: their proposal was decided, or left the inbox. */
export interface QuestionWithdrawnNotification {
  workspace: string;
  question_ids: string[];
  reason: string;
}

// -- command arguments (server/protocol.py IdArgs, and what server/lsp.py's lenses pass) -----------

/** kitsoki.accept | refine | reject | propose: `[{id}]` or `[id]`. */
export interface IdArgs {
  id: string;
}

/** kitsoki.diff as the Diff lens sends it. */
export interface DiffArgs {
  id: string;
  uri?: string | null;
}

/** kitsoki.showProposals | mineNow | pause | resume: an optional file or workspace. */
export interface UriArgs {
  uri?: string | null;
}

export interface DiffResult {
  id: string;
  diff: string;
}

// -- learnings and prepared analysis runs (served for other faces; this client does not use them) --

export interface EvolveParams {
  action: 'analyze' | 'list' | 'confirm' | 'prune';
  uri?: string | null;
  select?: string[];
  transcriptDirs?: string[];
  sessionsJsonl?: string | null;
  hostClass?: string | null;
  all?: boolean;
  apply?: boolean;
}

/** The other keys are the operation's own arguments (see server/protocol.py RunsParams). */
export interface RunsParams {
  action: 'projects' | 'coverage' | 'confirm' | 'prepare' | 'list' | 'status' | 'reuse' | 'resume'
    | 'finish' | 'cancel' | 'delete' | 'groups' | 'workdir';
  [argument: string]: unknown;
}

export interface DecidedParams {
  uri?: string | null;
  state?: 'accepted' | 'rejected' | null;
}

/** A proposal a person decided, and whether that can be taken back now. */
export interface DecidedCard {
  id: string;
  workspace: string;
  title: string;
  kind: string;
  state: 'accepted' | 'rejected';
  decided_at: string;
  /** Workspace-relative. */
  files?: string[];
  can?: 'undo' | 'restore' | null;
  why_not?: string | null;
}

export interface DecidedResult {
  decided: DecidedCard[];
}

/** kitsoki.undo | kitsoki.restore, and the kitsoki/proposalTakenBack notification. */
export interface TakenBackResult {
  recipe_id: string;
  workspace: string;
  action: 'undo' | 'restore';
  how: 'undo' | 'saved' | 'restore';
  title?: string;
  /** URIs of the files the proposal changes. */
  files?: string[];
  /** undo: URIs of the files whose bytes from before the accept were put back. */
  restored?: string[];
}

// -- which shape goes with which method ----------------------------------------------------------

export interface RequestMap {
  [MINE_STATUS]: { params: MineStatusParams; result: MineStatusResult };
  [MINE_CONTROL]: { params: MineControlParams; result: MineStatusResult };
  [PROPOSALS]: { params: ProposalsParams; result: ProposalsResult };
  [PROPOSAL]: { params: ProposalParams; result: ProposalDetail };
  [PROPOSAL_CONTENT]: { params: ProposalContentParams; result: ProposalContentResult };
  [ANSWER_QUESTION]: { params: AnswerQuestionParams; result: DecisionResult };
  [EVOLVE]: { params: EvolveParams; result: Record<string, unknown> };
  [RUNS]: { params: RunsParams; result: Record<string, unknown> };
  [DECIDED]: { params: DecidedParams; result: DecidedResult };
}

export interface NotificationMap {
  [PASS_RAN]: PassRanNotification;
  [PROPOSALS_CHANGED]: ProposalsChangedNotification;
  [PROPOSAL_DECIDED]: ProposalDecidedNotification;
  [QUESTION]: QuestionNotification;
  [QUESTION_WITHDRAWN]: QuestionWithdrawnNotification;
  [TAKEN_BACK]: TakenBackResult;
}

export interface CommandMap {
  [CMD_ACCEPT]: { args: [IdArgs | string]; result: DecisionResult };
  [CMD_REFINE]: { args: [IdArgs | string]; result: DecisionResult };
  [CMD_REJECT]: { args: [IdArgs | string]; result: DecisionResult };
  [CMD_DIFF]: { args: [DiffArgs | string]; result: DiffResult };
  [CMD_MINE_NOW]: { args: [UriArgs] | []; result: MineStatusResult };
  [CMD_PAUSE]: { args: [UriArgs] | []; result: MineStatusResult };
  [CMD_RESUME]: { args: [UriArgs] | []; result: MineStatusResult };
  [CMD_PROPOSE]: { args: unknown[]; result: { reports: Record<string, unknown>[] } };
  [CMD_SHOW]: { args: [UriArgs] | []; result: ProposalsResult };
  [CMD_CHOOSE]: { args: [DiffArgs | string]; result: DecisionResult | null };
  [CMD_UNDO]: { args: [IdArgs | string]; result: TakenBackResult };
  [CMD_RESTORE]: { args: [IdArgs | string]; result: TakenBackResult };
  [CMD_RESOLVE]: { args: [ResolveArgs] | []; result: ResolveListResult | Resolution };
}

/** kitsoki.resolve: no id lists the accepts left unsettled; an id and a choice settles one. */
export interface ResolveArgs {
  id?: string | null;
  choice?: 'restore' | 'keep' | null;
  uri?: string | null;
}

export interface UnsettledFile {
  path: string;
  before_sha256: string | null;
  after_sha256: string;
  now_sha256: string | null;
  now_is: 'before' | 'after' | 'other' | 'absent';
}

/** An accept left for a person: what it changed, what is there now, what a restore would change. */
export interface UnsettledAccept {
  recipe_id: string;
  journal: string;
  verified: boolean;
  why: string;
  accept_id?: string | null;
  started_at?: number | null;
  files?: UnsettledFile[];
  restore_diff?: string;
  gate?: string | null;
  workspace: string;
}

export interface ResolveListResult {
  unsettled: UnsettledAccept[];
}

/** kitsoki.resolve with a choice: what was done. */
export interface Resolution {
  recipe_id: string;
  choice: 'restore' | 'keep';
  restored?: string[];
  removed?: string[];
  saved?: Record<string, string>;
  kept?: string[];
  gate?: string | null;
}

export type RequestMethod = keyof RequestMap;
export type NotificationMethod = keyof NotificationMap;
