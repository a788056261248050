/**
 * The VS Code side: status bar, commands, quick picks, the proposal diff, decorations, messages.
 * It talks to the server only through `Rpc` (the language client), so tests drive it with a fake.
 * Every verdict goes to the server (`workspace/executeCommand` or `kitsoki/answerQuestion`): the
 * editor never applies a proposal as a text edit.
 */

import * as vscode from 'vscode';

import { CLIENT_COMMANDS } from './clientCommands';
import { confirmAccept, confirmReject, pickDecided } from './confirmations';
import { decorationsFor } from './decorations';
import {
  actionItems,
  answersOf,
  cardItem,
  decisionMessage,
  errorText,
  type Message,
  optionItems,
  questionItem,
  takenBackMessage,
  workspaceNames,
} from './messages';
import * as P from './protocol';
import { codeUriParts, parseProposalUri, PROPOSAL_SCHEME, proposalUriParts, sameFile } from './proposalUri';
import { ClientState } from './state';
import { type ServerView, statusView } from './status';

export const EXECUTE_COMMAND = 'workspace/executeCommand';

/** The part of vscode-languageclient's LanguageClient this uses. */
export interface Rpc {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): { dispose(): void };
}

type Next = (command: string, args: any[]) => vscode.ProviderResult<any>;

type Verdict = typeof P.CMD_ACCEPT | typeof P.CMD_REFINE | typeof P.CMD_REJECT;

/** A `file:` URI inside a proposal's staged draft (`.artifacts/mining/<id>/...`). */
export function isDraftOf(uriPath: string, id: string): boolean {
  return uriPath.includes(`/.artifacts/mining/${id}/`);
}

function idOf(arg: unknown): string | undefined {
  if (typeof arg === 'string' && arg) {
    return arg;
  }
  if (typeof arg === 'object' && arg !== null && typeof (arg as { id?: unknown }).id === 'string') {
    return (arg as { id: string }).id || undefined;
  }
  return undefined;
}

function uriOf(arg: unknown): string | undefined {
  if (typeof arg === 'object' && arg !== null && typeof (arg as { uri?: unknown }).uri === 'string') {
    return (arg as { uri: string }).uri;
  }
  return undefined;
}

export class Controller implements vscode.Disposable {
  readonly state = new ClientState();
  readonly status: vscode.StatusBarItem;
  readonly insertDecoration: vscode.TextEditorDecorationType;
  readonly replacedDecoration: vscode.TextEditorDecorationType;
  readonly noteDecoration: vscode.TextEditorDecorationType;
  private server: ServerView = { state: 'starting' };
  /** The question card on screen (a closable progress notification), if any. */
  private shownQuestion: { id: string; close: () => void } | undefined;
  private rpc: Rpc | undefined;
  private readonly contentChanged = new vscode.EventEmitter<vscode.Uri>();
  private readonly disposables: vscode.Disposable[] = [];
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;

  /** vscode-languageclient's middleware: the lenses' server commands land here first. */
  readonly middleware = {
    executeCommand: (command: string, args: any[], next: Next): vscode.ProviderResult<any> =>
      this.executeCommand(command, args, next),
  };

  constructor(readonly output: vscode.OutputChannel) {
    this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
    this.status.name = 'kitsoki-miner proposals';
    // An insertion goes between two lines: a dashed edge under the line the new lines follow.
    this.insertDecoration = vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      borderStyle: 'dashed',
      borderWidth: '0 0 2px 0',
      borderColor: new vscode.ThemeColor('editorGutter.addedBackground'),
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    this.replacedDecoration = vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.modifiedForeground'),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    this.noteDecoration = vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      after: {
        color: new vscode.ThemeColor('editorCodeLens.foreground'),
        fontStyle: 'italic',
        margin: '0 0 0 2em',
      },
    });
    const commands: [string, (...args: any[]) => unknown][] = [
      [CLIENT_COMMANDS.showProposals, (arg?: unknown) => this.showProposals(uriOf(arg))],
      [CLIENT_COMMANDS.answerQuestion, (arg?: unknown) => this.answerQuestion(idOf(arg))],
      [CLIENT_COMMANDS.accept, (arg?: unknown) => this.verdict(P.CMD_ACCEPT, arg)],
      [CLIENT_COMMANDS.refine, (arg?: unknown) => this.verdict(P.CMD_REFINE, arg)],
      [CLIENT_COMMANDS.reject, (arg?: unknown) => this.verdict(P.CMD_REJECT, arg)],
      [CLIENT_COMMANDS.showDiff, (arg?: unknown) => this.showDiff(arg)],
      [CLIENT_COMMANDS.mineNow, () => this.mineControl('now')],
      [CLIENT_COMMANDS.pause, () => this.mineControl('pause')],
      [CLIENT_COMMANDS.resume, () => this.mineControl('resume')],
      [CLIENT_COMMANDS.showOutput, () => this.output.show(true)],
      [CLIENT_COMMANDS.showRejected, () => this.takeBack('restore')],
      [CLIENT_COMMANDS.undoAccept, (arg?: unknown) => this.takeBack('undo', idOf(arg))],
    ];
    this.disposables.push(
      this.status,
      this.insertDecoration,
      this.replacedDecoration,
      this.noteDecoration,
      this.contentChanged,
      vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, {
        onDidChange: this.contentChanged.event,
        provideTextDocumentContent: (uri) => this.proposalContent(uri),
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.renderDecorations()),
      ...commands.map(([name, run]) => vscode.commands.registerCommand(name, run)),
    );
    this.renderStatus();
    this.status.show();
  }

  /** Listen to the server's notifications (before the client starts: they are queued). */
  attach(rpc: Rpc): void {
    this.rpc = rpc;
    this.disposables.push(
      rpc.onNotification(P.PASS_RAN, (note: P.PassRanNotification) => this.onPassRan(note)),
      rpc.onNotification(P.PROPOSALS_CHANGED, (note: P.ProposalsChangedNotification) =>
        this.onProposalsChanged(note),
      ),
      rpc.onNotification(P.PROPOSAL_DECIDED, (note: P.ProposalDecidedNotification) => this.onDecided(note)),
      rpc.onNotification(P.QUESTION, (note: P.QuestionNotification) => this.onQuestion(note)),
      rpc.onNotification(P.QUESTION_WITHDRAWN, (note: P.QuestionWithdrawnNotification) => this.onWithdrawn(note)),
      rpc.onNotification(P.TAKEN_BACK, (note: P.TakenBackResult) => this.onTakenBack(note)),
    );
  }

  // -- the server's life -----------------------------------------------------------------------------

  /** Restricted Mode: nothing starts until the folder is trusted; the status item says so. */
  waitForTrust(): void {
    this.server = { state: 'waiting-for-trust' };
    this.renderStatus();
  }

  /** The folder is a staged draft (under .artifacts/): nothing starts; the status says what to open. */
  notAWorkspace(top: string): void {
    this.server = { state: 'not-a-workspace', reason: top };
    this.renderStatus();
  }

  /** The server stopped (or never started): say so where a person looks, and how to find out why. */
  serverDown(reason: string): void {
    this.server = { state: 'down', reason };
    this.output.appendLine(`the server is down: ${reason}`);
    this.renderStatus();
  }

  /** Running (again): the proposals are asked for; until they answer, the status says "loading". */
  /** The client says the server stopped: down, unless a reason (a crash, a restart) was given first. */
  serverStopped(reason: string): void {
    if (this.server.state === 'running' && !this.server.restarting) {
      this.serverDown(reason);
    }
  }

  async serverUp(): Promise<void> {
    const wasDown = this.server.state === 'down' || this.server.restarting ? this.server.reason : undefined;
    this.server = { state: 'running', note: this.server.note, loading: true };
    this.renderStatus();
    if (wasDown !== undefined) { // a restart: say it is back, and why it had stopped
      this.output.appendLine(`the server is running again (it had stopped: ${wasDown})`);
      void vscode.window.showInformationMessage(`kitsoki-miner: the server was restarted (${wasDown}).`);
    }
    await Promise.all([this.refresh(), this.refreshNote()]);
  }

  /** Loading again (a restart asked for): the status says so until the server answers. */
  serverRestarting(): void {
    this.server = { state: 'starting', note: this.server.note, loading: true, restarting: true,
      reason: this.server.reason };
    this.renderStatus();
  }

  /** What mining has to say (where a pass that read 0 sessions looked), for the status item. */
  async refreshNote(): Promise<void> {
    try {
      const result = await this.request(P.MINE_STATUS, {});
      const notes = result.workspaces.map((w) => w.note).filter((n): n is string => typeof n === 'string' && n !== '');
      if (this.server.state === 'running' || this.server.state === 'starting') {
        this.server = { ...this.server, note: notes.length ? notes.join('\n') : undefined };
      }
      for (const note of notes) {
        this.output.appendLine(`mining: ${note}`);
      }
      this.renderStatus();
    } catch (error) {
      this.output.appendLine(`${P.MINE_STATUS} failed: ${errorText(error)}`);
    }
  }

  dispose(): void {
    for (const disposable of this.disposables.splice(0)) {
      disposable.dispose();
    }
  }

  // -- talking to the server ----------------------------------------------------------------------

  private request<M extends P.RequestMethod>(method: M, params: P.RequestMap[M]['params']): Promise<P.RequestMap[M]['result']> {
    if (this.rpc === undefined) {
      return Promise.reject(new Error('the kitsoki-miner server is not running'));
    }
    return this.rpc.sendRequest<P.RequestMap[M]['result']>(method, params);
  }

  /** A server command; a refusal or failure is shown as it came, and yields undefined. */
  async serverCommand<C extends P.ServerCommand>(
    command: C,
    args: P.CommandMap[C]['args'],
  ): Promise<P.CommandMap[C]['result'] | undefined> {
    if (this.rpc === undefined) {
      void vscode.window.showErrorMessage('kitsoki-miner: the server is not running');
      return undefined;
    }
    try {
      return await this.rpc.sendRequest<P.CommandMap[C]['result']>(EXECUTE_COMMAND, { command, arguments: args });
    } catch (error) {
      this.output.appendLine(`${command} failed: ${errorText(error)}`);
      void vscode.window.showErrorMessage(`kitsoki-miner: ${errorText(error)}`);
      return undefined;
    }
  }

  private executeCommand(command: string, args: any[], next: Next): vscode.ProviderResult<any> {
    switch (command) {
      case P.CMD_DIFF:
        return this.showDiff(args[0]);
      case P.CMD_SHOW:
        return this.showProposals(uriOf(args[0]));
      case P.CMD_ACCEPT:
      case P.CMD_REFINE:
      case P.CMD_REJECT:
        return this.verdict(command, args[0]);
      case P.CMD_CHOOSE:
        return this.choose(idOf(args[0]), uriOf(args[0]));
      default:
        if ((P.COMMANDS as readonly string[]).includes(command)) {
          return this.serverCommand(command as P.ServerCommand, args as never);
        }
        return next(command, args);
    }
  }

  // -- notifications ------------------------------------------------------------------------------

  private onPassRan(note: P.PassRanNotification): void {
    const report = note.report;
    this.output.appendLine(
      `mining pass (${report.trigger}) for ${note.workspace}: ${report.sessions} sessions, ` +
        `${report.recipes} recipes, ${(note.raised ?? []).length} proposals raised`,
    );
    if (note.proposer_error) {
      void vscode.window.showWarningMessage(`kitsoki-miner: the proposer failed: ${note.proposer_error}`);
    }
    void this.refreshNote();
  }

  private onProposalsChanged(note: P.ProposalsChangedNotification): void {
    this.state.proposalsChanged(note.workspace, note.pending);
    this.renderStatus();
    for (const document of vscode.workspace.textDocuments) {
      const ref = parseProposalUri(document.uri);
      if (ref !== undefined && note.uris.some((uri) => sameFile(uri, ref.fileUri))) {
        this.contentChanged.fire(document.uri);
      }
    }
    void this.refresh();
  }

  private onDecided(note: P.ProposalDecidedNotification): void {
    const title = this.state.titleOf(note.recipe_id);
    this.state.decided(note);
    this.withdrawQuestion(note.recipe_id);
    this.renderStatus();
    this.renderDecorations();
    // An open diff of this proposal now says what became of it.
    for (const document of vscode.workspace.textDocuments) {
      if (parseProposalUri(document.uri)?.id === note.recipe_id) {
        this.contentChanged.fire(document.uri);
      }
    }
    const gone = note.verdict === 'reject' || (note.verdict === 'accept' && !note.reverted);
    if (gone) {
      void this.closeDraftTabs(note.recipe_id);
    }
    void this.say(decisionMessage(note, title), note.verdict === 'accept' && !note.reverted ? note.recipe_id : undefined);
  }

  private onTakenBack(note: P.TakenBackResult): void {
    this.state.answered(note.recipe_id);
    for (const document of vscode.workspace.textDocuments) {
      if (parseProposalUri(document.uri)?.id === note.recipe_id) {
        this.contentChanged.fire(document.uri);
      }
    }
    void this.refresh();
    void this.say(takenBackMessage(note));
  }

  /** A kept or rejected proposal's staged draft is closed (unless it has unsaved edits). */
  private async closeDraftTabs(id: string): Promise<void> {
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputText && !tab.isDirty && isDraftOf(tab.input.uri.path, id));
    if (tabs.length > 0) {
      await vscode.window.tabGroups.close(tabs, true);
    }
  }

  /**
   * A question is shown once, when it arrives and no other is on screen: a notification that
   * closes itself when the question is answered or withdrawn. Closing it means "later": the
   * question still waits behind the status item.
   */
  private onQuestion(note: P.QuestionNotification): void {
    this.state.question(note);
    this.renderStatus();
    const mode = vscode.workspace.getConfiguration('kitsoki').get<string>('questions', 'notify');
    if (this.shownQuestion !== undefined || mode === 'statusBar') {
      return;
    }
    const first = note.questions[0];
    let close: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => {
      close = resolve;
    });
    const shown = { id: note.question_id, close };
    this.shownQuestion = shown;
    const link = `command:${CLIENT_COMMANDS.answerQuestion}?${encodeURIComponent(JSON.stringify([note.question_id]))}`;
    void Promise.resolve(
      vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `kitsoki-miner${this.whereOf(note.workspace)}: ${first?.header ?? P.QUESTION_HEADER} ` +
            `"${first?.question ?? note.question_id}"`,
          cancellable: true,
        },
        (progress, token) => {
          progress.report({ message: `[Answer…](${link}) (Cancel: later, from the status bar)` });
          token.onCancellationRequested(() => close());
          return closed;
        },
      ),
    ).finally(() => {
      if (this.shownQuestion === shown) {
        this.shownQuestion = undefined;
      }
    });
  }

  /** " (<workspace>)" when several workspaces are served, else nothing. */
  private whereOf(workspace: string | null | undefined): string {
    const names = workspaceNames(this.state.workspaces());
    return workspace && names.size > 1 ? ` (${names.get(workspace) ?? workspace})` : '';
  }

  private withdrawQuestion(id: string): void {
    this.state.answered(id);
    if (this.shownQuestion?.id === id) {
      this.shownQuestion.close();
      this.shownQuestion = undefined;
    }
  }

  private onWithdrawn(note: P.QuestionWithdrawnNotification): void {
    for (const id of note.question_ids) {
      this.withdrawQuestion(id);
    }
    this.renderStatus();
  }

  /** `undoable`: a kept accept's id; the message then offers to undo it. */
  private async say(message: Message, undoable?: string): Promise<void> {
    for (const line of message.details) {
      this.output.appendLine(`  ${line}`);
    }
    this.output.appendLine(message.text);
    if (message.level === 'info') {
      const pick = await vscode.window.showInformationMessage(message.text, ...(undoable ? ['Undo'] : []));
      if (pick === 'Undo' && undoable) {
        await this.takeBack('undo', undoable);
      }
      return;
    }
    const show = message.level === 'warning' ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
    const pick = await show(message.text, ...(message.details.length ? ['Show flow failures'] : []));
    if (pick === 'Show flow failures') {
      this.output.show(true);
    }
  }

  // -- state -> screen ----------------------------------------------------------------------------

  /** Ask for every open card again (serialised: a burst of changes gives at most two requests). */
  refresh(): Promise<void> {
    if (this.refreshing !== undefined) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    const run = async () => {
      do {
        this.refreshAgain = false;
        const seq = this.state.mark();
        try {
          const result = await this.request(P.PROPOSALS, {});
          this.state.setCards(result.proposals, seq);
          if (this.server.loading) {
            this.server = { ...this.server, loading: false };
          }
        } catch (error) {
          this.output.appendLine(`${P.PROPOSALS} failed: ${errorText(error)}`);
        }
      } while (this.refreshAgain);
      this.refreshing = undefined;
      this.renderStatus();
      this.renderDecorations();
    };
    this.refreshing = run();
    return this.refreshing;
  }

  renderStatus(): void {
    const view = statusView(this.state.pendingTotal(), this.state.questions().length, this.server,
      this.state.pendingByWorkspace(workspaceNames(this.state.workspaces())));
    this.status.text = view.text;
    this.status.tooltip = view.tooltip;
    this.status.command = view.command;
    this.status.backgroundColor = view.error
      ? new vscode.ThemeColor('statusBarItem.errorBackground')
      : view.warning
        ? new vscode.ThemeColor('statusBarItem.warningBackground')
        : undefined;
  }

  renderDecorations(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const document = editor.document;
      if (document.uri.scheme !== 'file') {
        continue;
      }
      const found = decorationsFor(this.state.cards, document.uri.toString(), document.lineCount);
      const inside = (line: number) => line >= 0 && line < document.lineCount;
      const ranges = (lines: number[]) => lines.filter(inside).map((line) => new vscode.Range(line, 0, line, 0));
      editor.setDecorations(this.insertDecoration, ranges(found.insertBelow));
      editor.setDecorations(this.replacedDecoration, ranges(found.replaced));
      editor.setDecorations(
        this.noteDecoration,
        found.notes
          .filter((note) => inside(note.line))
          .map((note) => ({
            range: document.lineAt(note.line).range,
            hoverMessage: new vscode.MarkdownString(note.hover),
            renderOptions: { after: { contentText: note.text } },
          })),
      );
    }
  }

  // -- the proposal diff --------------------------------------------------------------------------

  private async proposalContent(uri: vscode.Uri): Promise<string> {
    const ref = parseProposalUri(uri);
    if (ref === undefined || ref.empty) {
      return '';
    }
    try {
      return (await this.request(P.PROPOSAL_CONTENT, { id: ref.id, uri: ref.fileUri })).text;
    } catch (error) {
      return `# kitsoki-miner: ${errorText(error)}\n`;
    }
  }

  async showDiff(arg?: unknown): Promise<void> {
    const card = await this.cardFor(idOf(arg), 'Show the diff of which proposal?', (c) => (c.files ?? []).length > 0);
    if (card === undefined) {
      return;
    }
    const files = card.files ?? [];
    const wanted = uriOf(arg);
    let file = wanted !== undefined ? files.find((f) => sameFile(f.uri, wanted)) : files.length === 1 ? files[0] : undefined;
    if (file === undefined && files.length > 0) {
      const pick = await vscode.window.showQuickPick(
        files.map((f) => ({ label: f.path, file: f })),
        { title: card.title, placeHolder: 'Which file?' },
      );
      file = pick?.file;
    }
    if (file === undefined) {
      if (files.length === 0) {
        void vscode.window.showInformationMessage(`kitsoki-miner: "${card.title}" changes no file (a suggestion).`);
      }
      return;
    }
    const right = vscode.Uri.from(proposalUriParts(file.uri, card.id));
    const left = file.created ? vscode.Uri.from(proposalUriParts(file.uri, card.id, true)) : vscode.Uri.parse(file.uri);
    await vscode.commands.executeCommand('vscode.diff', left, right, `${file.path} ↔ proposal: ${card.title}`, {
      preview: true,
    });
  }

  // -- verdicts and quick picks -------------------------------------------------------------------

  private async cards(): Promise<P.Card[]> {
    if (this.state.cards.length === 0) {
      await this.refresh();
    }
    return this.state.cards;
  }

  /** The card with this id, or the one a person picks (optionally among those that pass `filter`). */
  private async cardFor(id: string | undefined, placeHolder: string, filter?: (card: P.Card) => boolean): Promise<P.Card | undefined> {
    if (id !== undefined) {
      let card = this.state.card(id);
      if (card === undefined) {
        await this.refresh();
        card = this.state.card(id);
      }
      if (card === undefined) {
        void vscode.window.showErrorMessage(`kitsoki-miner: no open proposal ${id}`);
      }
      return card;
    }
    const cards = (await this.cards()).filter(filter ?? (() => true));
    if (cards.length === 0) {
      void vscode.window.showInformationMessage('kitsoki-miner: no open proposals.');
      return undefined;
    }
    const names = workspaceNames(this.state.workspaces());
    const pick = await vscode.window.showQuickPick(cards.map((c) => cardItem(c, names)), {
      title: 'kitsoki-miner proposals',
      placeHolder,
      matchOnDetail: true,
    });
    return pick === undefined ? undefined : this.state.card(pick.id);
  }

  async verdict(command: Verdict, arg?: unknown): Promise<P.DecisionResult | undefined> {
    let id = idOf(arg);
    if (id === undefined) {
      const open = (c: P.Card) => command === P.CMD_REJECT || (c.status !== 'stale' && !c.suggestion_only);
      const card = await this.cardFor(undefined, `${command.slice('kitsoki.'.length)} which proposal?`, open);
      id = card?.id;
    }
    if (id === undefined) {
      return undefined;
    }
    if (command === P.CMD_ACCEPT && !(await this.confirmAccept(id))) {
      return undefined;
    }
    if (command === P.CMD_REJECT && !(await this.confirmReject(id))) {
      return undefined;
    }
    const result = await this.serverCommand(command, [{ id }]);
    if (result !== undefined) {
      this.state.answered(id);
      this.renderStatus();
      await this.openDraft(result);
    }
    return result;
  }

  /** An accept asks first (confirmations.ts), with what the server says it will do for this proposal. */
  async confirmAccept(id: string): Promise<boolean> {
    let detail: P.ProposalDetail | undefined;
    try {
      detail = await this.request(P.PROPOSAL, { id });
    } catch (error) {
      void vscode.window.showErrorMessage(`kitsoki-miner: ${errorText(error)}`);
      return false;
    }
    return confirmAccept(detail);
  }

  async confirmReject(id: string): Promise<boolean> {
    return confirmReject(this.state.titleOf(id));
  }

  /** Undo a kept accept, or restore a rejection: by id, or picked from those that can be. */
  async takeBack(action: 'undo' | 'restore', id?: string): Promise<P.TakenBackResult | undefined> {
    let decided: P.DecidedCard[];
    try {
      decided = (await this.request(P.DECIDED, { state: action === 'undo' ? 'accepted' : 'rejected' })).decided;
    } catch (error) {
      void vscode.window.showErrorMessage(`kitsoki-miner: ${errorText(error)}`);
      return undefined;
    }
    const target = await pickDecided(action, decided, id);
    return target === undefined ? undefined : this.serverCommand(action === 'undo' ? P.CMD_UNDO : P.CMD_RESTORE, [{ id: target.id }]);
  }

  /** The lens of a proposal that shares its line: what to do with it. */
  async choose(id: string | undefined, uri?: string): Promise<void> {
    const card = await this.cardFor(id, 'Which proposal?');
    if (card === undefined) {
      return;
    }
    const action = await vscode.window.showQuickPick(actionItems(card, await this.detailOf(card.id)), {
      title: card.title,
      placeHolder: 'What now?',
    });
    await this.act(card, action?.action, uri);
  }

  private async detailOf(id: string): Promise<P.ProposalDetail | undefined> {
    try {
      return await this.request(P.PROPOSAL, { id });
    } catch {
      return undefined;
    }
  }

  private async act(card: P.Card, action: string | undefined, uri?: string): Promise<void> {
    switch (action) {
      case 'accept':
        await this.verdict(P.CMD_ACCEPT, card.id);
        break;
      case 'refine':
        await this.verdict(P.CMD_REFINE, card.id);
        break;
      case 'reject':
        await this.verdict(P.CMD_REJECT, card.id);
        break;
      case 'diff':
        await this.showDiff(uri !== undefined ? { id: card.id, uri } : card.id);
        break;
      case 'open': {
        const file = (card.files ?? [])[0];
        if (file !== undefined) {
          const position = new vscode.Position(file.line, 0);
          await vscode.window.showTextDocument(vscode.Uri.parse(file.uri), {
            selection: new vscode.Range(position, position),
          });
        }
        break;
      }
      default:
        break;
    }
  }

  private async openDraft(result: P.DecisionResult): Promise<void> {
    if (result.verdict === 'refine' && result.draft_uri) {
      const uri = vscode.Uri.parse(result.draft_uri); // a kitsoki-draft: document (draftDocuments.ts)
      await vscode.window.showTextDocument(uri.with({ scheme: codeUriParts(uri).scheme }), { preview: false });
    }
  }

  async showProposals(uri?: string): Promise<void> {
    let cards = await this.cards();
    if (uri !== undefined) {
      cards = cards.filter((c) => (c.files ?? []).some((f) => sameFile(f.uri, uri)));
    }
    if (cards.length === 0) {
      void vscode.window.showInformationMessage('kitsoki-miner: no open proposals.');
      return;
    }
    const names = workspaceNames(this.state.workspaces());
    const pick = await vscode.window.showQuickPick(cards.map((c) => cardItem(c, names)), {
      title: 'kitsoki-miner proposals',
      placeHolder: 'Pick a proposal',
      matchOnDetail: true,
    });
    const card = pick && this.state.card(pick.id);
    if (!card) {
      return;
    }
    const action = await vscode.window.showQuickPick(actionItems(card, await this.detailOf(card.id)), {
      title: card.title,
      placeHolder: 'What now?',
    });
    await this.act(card, action?.action);
  }

  async answerQuestion(questionId?: string): Promise<P.DecisionResult | undefined> {
    const waiting = this.state.questions();
    let note = questionId !== undefined ? waiting.find((q) => q.question_id === questionId) : undefined;
    if (note === undefined) {
      if (waiting.length === 0) {
        void vscode.window.showInformationMessage('kitsoki-miner: no question is waiting.');
        return undefined;
      }
      const pick =
        waiting.length === 1
          ? questionItem(waiting[0]!)
          : await vscode.window.showQuickPick(waiting.map(questionItem), {
              title: 'kitsoki-miner questions',
              placeHolder: 'Which one?',
            });
      note = pick && waiting.find((q) => q.question_id === pick.id);
      if (note === undefined) {
        return undefined;
      }
    }
    const picks: (string | string[])[] = [];
    for (const question of note.questions) {
      const items = optionItems(question);
      const options = {
        title: `${question.header ?? P.QUESTION_HEADER} ${question.question}`,
        placeHolder: question.question,
        ignoreFocusOut: true,
      };
      if (question.multiSelect) {
        const chosen = await vscode.window.showQuickPick(items, { ...options, canPickMany: true });
        if (chosen === undefined) {
          return undefined;
        }
        picks.push(chosen.map((item) => item.label));
      } else {
        const chosen = await vscode.window.showQuickPick(items, options);
        if (chosen === undefined) {
          return undefined;
        }
        picks.push(chosen.label);
      }
    }
    if (note.kind !== 'learnings' && picks[0] === 'accept' && !(await this.confirmAccept(note.question_id))) {
      return undefined;
    }
    let result: P.DecisionResult;
    try {
      result = await this.request(P.ANSWER_QUESTION, { question_id: note.question_id, answers: answersOf(note, picks) });
    } catch (error) {
      this.output.appendLine(`${P.ANSWER_QUESTION} failed: ${errorText(error)}`);
      void vscode.window.showErrorMessage(`kitsoki-miner: ${errorText(error)}`);
      return undefined;
    }
    this.withdrawQuestion(note.question_id);
    this.renderStatus();
    await this.openDraft(result);
    return result;
  }

  async mineControl(action: 'now' | 'pause' | 'resume'): Promise<P.MineStatusResult | undefined> {
    try {
      const result = await this.request(P.MINE_CONTROL, { action });
      const said = { now: 'a mining pass was asked for', pause: 'mining paused', resume: 'mining resumed' }[action];
      void vscode.window.showInformationMessage(`kitsoki-miner: ${said} (${result.workspaces.length} workspace(s)).`);
      return result;
    } catch (error) {
      void vscode.window.showErrorMessage(`kitsoki-miner: ${errorText(error)}`);
      return undefined;
    }
  }
}
