/**
 * A stand-in for the `vscode` module (which exists only inside VS Code), enough for the
 * extension's glue and for vscode-languageclient to load. It records what the extension does
 * (commands, messages, quick picks, decorations, the status bar) in `stub`, and answers message
 * buttons and quick picks from queues the tests fill. hook.ts points `require('vscode')` here.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */

import * as nodeFs from 'node:fs';

type Listener<T> = (event: T) => unknown;

/** VS Code's version; vscode-languageclient checks it against its own engine range. */
export let version = '1.82.0';
export function setVersion(value: string): void {
  version = value;
}

export class Disposable {
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((item) => item.dispose()));
  }
  constructor(private readonly callOnDispose: () => unknown) {}
  dispose(): void {
    this.callOnDispose();
  }
}

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(event: T): void {
    for (const listener of [...this.listeners]) {
      listener(event);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

/** Encodes like VS Code's Uri.toString(): unreserved characters only (so `=` in a query is %3D). */
function encode(part: string, keepSlash: boolean): string {
  return part.replace(/[^A-Za-z0-9\-._~/]/g, (c) => encodeURIComponent(c)).replace(/\//g, keepSlash ? '/' : '%2F');
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
    readonly query: string,
    readonly fragment: string,
  ) {}

  static parse(value: string): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (m === null) {
      throw new Error(`stub Uri.parse: not a URI: ${value}`);
    }
    const d = (s: string | undefined) => decodeURIComponent(s ?? '');
    return new Uri(m[1]!, d(m[2]), d(m[3]), d(m[4]), d(m[5]));
  }

  static file(path: string): Uri {
    return new Uri('file', '', path, '', '');
  }

  static from(c: { scheme: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(c.scheme, c.authority ?? '', c.path ?? '', c.query ?? '', c.fragment ?? '');
  }

  with(c: { scheme?: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(c.scheme ?? this.scheme, c.authority ?? this.authority, c.path ?? this.path,
      c.query ?? this.query, c.fragment ?? this.fragment);
  }

  get fsPath(): string {
    return this.path;
  }

  toString(): string {
    const authority = this.authority || this.scheme === 'file' ? `//${this.authority}` : '';
    return `${this.scheme}:${authority}${encode(this.path, true)}` +
      (this.query ? `?${encode(this.query, false)}` : '') + (this.fragment ? `#${encode(this.fragment, false)}` : '');
  }

  toJSON(): string {
    return this.toString();
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    if (typeof a === 'number' && typeof b === 'number') {
      this.start = new Position(a, b);
      this.end = new Position(c ?? a, d ?? b);
    } else {
      this.start = a as Position;
      this.end = b as Position;
    }
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class MarkdownString {
  constructor(public value = '') {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export class TabInputText {
  constructor(readonly uri: Uri) {}
}

export enum FileChangeType {
  Changed = 1,
  Created = 2,
  Deleted = 3,
}

export class FileSystemError extends Error {
  static FileNotFound(what?: unknown): FileSystemError {
    return new FileSystemError(`FileNotFound: ${String(what)}`);
  }
  static NoPermissions(what?: unknown): FileSystemError {
    return new FileSystemError(`NoPermissions: ${String(what)}`);
  }
}

export class RelativePattern {
  constructor(readonly base: Uri, readonly pattern: string) {}
}

export enum OverviewRulerLane {
  Left = 1,
  Center = 2,
  Right = 4,
  Full = 7,
}

// What vscode-languageclient reads when it loads (it subclasses these) or constructs a client.
export class CompletionItem {}
export class CodeLens {}
export class DocumentLink {}
export class CodeAction {}
export class Diagnostic {}
export class CallHierarchyItem {}
export class TypeHierarchyItem {}
export class SymbolInformation {}
export class InlayHint {}
export class CancellationError extends Error {}
export class CodeActionKind {
  static readonly Empty = new CodeActionKind('');
  static readonly QuickFix = new CodeActionKind('quickfix');
  static readonly Refactor = new CodeActionKind('refactor');
  static readonly RefactorExtract = new CodeActionKind('refactor.extract');
  static readonly RefactorInline = new CodeActionKind('refactor.inline');
  static readonly RefactorRewrite = new CodeActionKind('refactor.rewrite');
  static readonly Source = new CodeActionKind('source');
  static readonly SourceOrganizeImports = new CodeActionKind('source.organizeImports');
  static readonly SourceFixAll = new CodeActionKind('source.fixAll');
  constructor(readonly value: string) {}
}

// -- recording ------------------------------------------------------------------------------------

export interface ShownMessage {
  level: 'info' | 'warning' | 'error';
  text: string;
  items: string[];
}

export interface QuickPickCall {
  items: any[];
  options: any;
}

export interface FakeEditor {
  document: FakeDocument;
  decorations: Map<string, any[]>;
  setDecorations(type: { key: string }, ranges: any[]): void;
}

export interface FakeDocument {
  uri: Uri;
  lineCount: number;
  isDirty: boolean;
  lineAt(line: number): { text: string; range: Range };
  getText(): string;
}

/** A picker answers a quick pick: a label to pick, a function, or undefined (dismissed). */
type Picker = string | string[] | ((items: any[], options: any) => any) | undefined;
/** A button to press on the next message, or undefined (closed). */
type Button = string | undefined;

export const stub = {
  commands: new Map<string, (...args: any[]) => unknown>(),
  executed: [] as { command: string; args: any[] }[],
  messages: [] as ShownMessage[],
  buttons: [] as Button[],
  quickPicks: [] as QuickPickCall[],
  pickers: [] as Picker[],
  statusBarItems: [] as any[],
  outputChannels: [] as any[],
  decorationTypes: [] as { key: string; options: any; disposed: boolean }[],
  contentProviders: new Map<string, any>(),
  shownDocuments: [] as { target: any; options: any }[],
  config: {} as Record<string, unknown>,
  workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
  visibleTextEditors: [] as FakeEditor[],
  textDocuments: [] as FakeDocument[],
  visibleEditorsChanged: new EventEmitter<FakeEditor[]>(),
  trusted: true,
  trustGranted: new EventEmitter<void>(),
  configurationChanged: new EventEmitter<unknown>(),
  fileSystems: new Map<string, any>(),
  /** Progress notifications (question cards): title, message, and whether they were closed. */
  progress: [] as { options: any; messages: string[]; closed: boolean; cancel(): void }[],
  /** Modal messages (the accept confirmation): text, detail. */
  modals: [] as { text: string; detail: string }[],
  tabs: [] as { input: unknown; isDirty: boolean; closed?: boolean }[],

  reset(): void {
    this.commands.clear();
    this.executed = [];
    this.messages = [];
    this.buttons = [];
    this.quickPicks = [];
    this.pickers = [];
    this.statusBarItems = [];
    this.outputChannels = [];
    this.decorationTypes = [];
    this.contentProviders.clear();
    this.shownDocuments = [];
    this.config = {};
    this.workspaceFolders = undefined;
    this.visibleTextEditors = [];
    this.textDocuments = [];
    this.trusted = true;
    this.trustGranted = new EventEmitter<void>();
    this.configurationChanged = new EventEmitter<unknown>();
    this.fileSystems.clear();
    this.progress = [];
    this.modals = [];
    this.tabs = [];
  },

  document(uri: Uri, text: string): FakeDocument {
    const lines = text.split('\n');
    return {
      uri,
      lineCount: lines.length,
      isDirty: false,
      lineAt: (line: number) => ({ text: lines[line] ?? '', range: new Range(line, 0, line, (lines[line] ?? '').length) }),
      getText: () => text,
    };
  },

  editor(document: FakeDocument): FakeEditor {
    const decorations = new Map<string, any[]>();
    return {
      document,
      decorations,
      setDecorations: (type, ranges) => {
        decorations.set(type.key, ranges);
      },
    };
  },
};

function show(level: ShownMessage['level']) {
  return (text: string, ...rest: any[]): Promise<string | undefined> => {
    const items = rest.filter((item): item is string => typeof item === 'string');
    const options = rest.find((item) => typeof item === 'object' && item !== null);
    if (options?.modal) {
      stub.modals.push({ text, detail: options.detail ?? '' });
    } else {
      stub.messages.push({ level, text, items });
    }
    const button = stub.buttons.shift();
    return Promise.resolve(button !== undefined && items.includes(button) ? button : undefined);
  };
}

function pick(items: any[], options: any): any {
  const picker = stub.pickers.shift();
  if (picker === undefined) {
    return undefined;
  }
  if (typeof picker === 'function') {
    return picker(items, options);
  }
  if (Array.isArray(picker)) {
    return items.filter((item) => picker.includes(item.label));
  }
  const found = items.find((item) => item.label === picker);
  if (found === undefined) {
    throw new Error(`stub quick pick: no item "${picker}" among ${items.map((i) => i.label).join(', ')}`);
  }
  return found;
}

export const window = {
  createStatusBarItem(alignment?: StatusBarAlignment, priority?: number) {
    const item = {
      alignment,
      priority,
      name: undefined as string | undefined,
      text: '',
      tooltip: undefined as unknown,
      command: undefined as unknown,
      backgroundColor: undefined as ThemeColor | undefined,
      visible: false,
      disposed: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.disposed = true;
      },
    };
    stub.statusBarItems.push(item);
    return item;
  },
  createOutputChannel(name: string) {
    const channel = {
      name,
      lines: [] as string[],
      shown: false,
      append(text: string) {
        channel.lines.push(text);
      },
      appendLine(text: string) {
        channel.lines.push(text);
      },
      clear() {
        channel.lines = [];
      },
      replace(text: string) {
        channel.lines = [text];
      },
      show() {
        channel.shown = true;
      },
      hide() {
        channel.shown = false;
      },
      dispose() {},
    };
    stub.outputChannels.push(channel);
    return channel;
  },
  createTextEditorDecorationType(options: any) {
    const type = {
      key: `decoration-${stub.decorationTypes.length}`,
      options,
      disposed: false,
      dispose() {
        type.disposed = true;
      },
    };
    stub.decorationTypes.push(type);
    return type;
  },
  showInformationMessage: show('info'),
  showWarningMessage: show('warning'),
  showErrorMessage: show('error'),
  showQuickPick(items: any[] | Promise<any[]>, options?: any): Promise<any> {
    return Promise.resolve(items).then((resolved) => {
      stub.quickPicks.push({ items: resolved, options });
      return pick(resolved, options);
    });
  },
  showTextDocument(target: any, options?: any): Promise<FakeEditor> {
    stub.shownDocuments.push({ target, options });
    return Promise.resolve(stub.editor(stub.document(target instanceof Uri ? target : target.uri, '')));
  },
  get visibleTextEditors(): FakeEditor[] {
    return stub.visibleTextEditors;
  },
  onDidChangeVisibleTextEditors: (listener: Listener<FakeEditor[]>) => stub.visibleEditorsChanged.event(listener),
  withProgress(options: any, task: (progress: any, token: any) => Promise<unknown>): Promise<unknown> {
    const cancelled = new EventEmitter<void>();
    const entry = { options, messages: [] as string[], closed: false, cancel: () => cancelled.fire() };
    stub.progress.push(entry);
    const result = task({ report: (value: { message?: string }) => entry.messages.push(value.message ?? '') },
      { isCancellationRequested: false, onCancellationRequested: cancelled.event });
    return Promise.resolve(result).finally(() => {
      entry.closed = true;
    });
  },
  tabGroups: {
    get all() {
      return [{ tabs: stub.tabs.filter((t) => !t.closed) }];
    },
    close(tabs: any[]): Promise<boolean> {
      for (const tab of tabs) {
        tab.closed = true;
      }
      return Promise.resolve(true);
    },
  },
};

/** An event nobody fires (what vscode-languageclient subscribes to while it builds a client). */
const never = (_listener: unknown): Disposable => new Disposable(() => undefined);

export const workspace = {
  onDidOpenTextDocument: never,
  onDidCloseTextDocument: never,
  onDidChangeTextDocument: never,
  onDidSaveTextDocument: never,
  onWillSaveTextDocument: never,
  onDidOpenNotebookDocument: never,
  onDidSaveNotebookDocument: never,
  onDidCloseNotebookDocument: never,
  onDidChangeNotebookDocument: never,
  onDidChangeConfiguration: (listener: Listener<unknown>) => stub.configurationChanged.event(listener),
  onDidChangeWorkspaceFolders: never,
  notebookDocuments: [] as unknown[],
  getConfiguration(section?: string) {
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const full = section ? `${section}.${key}` : key;
        return (full in stub.config ? stub.config[full] : fallback) as T | undefined;
      },
      has(key: string): boolean {
        return `${section}.${key}` in stub.config;
      },
      inspect<T>(key: string): { globalValue?: T } | undefined {
        const full = section ? `${section}.${key}` : key;
        return full in stub.config ? { globalValue: stub.config[full] as T } : {};
      },
    };
  },
  get workspaceFolders() {
    return stub.workspaceFolders;
  },
  get isTrusted(): boolean {
    return stub.trusted;
  },
  onDidGrantWorkspaceTrust: (listener: Listener<void>) => stub.trustGranted.event(listener),
  get textDocuments(): FakeDocument[] {
    return stub.textDocuments;
  },
  registerFileSystemProvider(scheme: string, provider: any): Disposable {
    if (stub.fileSystems.has(scheme)) {
      throw new Error(`stub: a file system provider for ${scheme} is already registered`);
    }
    stub.fileSystems.set(scheme, provider);
    return new Disposable(() => stub.fileSystems.delete(scheme));
  },
  /** The real disk, as `vscode.workspace.fs` is for `file:` URIs. */
  fs: {
    async stat(uri: Uri) {
      const st = await nodeFs.promises.stat(uri.path);
      return { type: st.isDirectory() ? 2 : 1, ctime: st.ctimeMs, mtime: st.mtimeMs, size: st.size };
    },
    async readFile(uri: Uri): Promise<Uint8Array> {
      return nodeFs.promises.readFile(uri.path);
    },
    async writeFile(uri: Uri, content: Uint8Array): Promise<void> {
      await nodeFs.promises.writeFile(uri.path, content);
    },
    async readDirectory(uri: Uri): Promise<[string, number][]> {
      return (await nodeFs.promises.readdir(uri.path, { withFileTypes: true })).map((e) => [e.name, e.isDirectory() ? 2 : 1]);
    },
  },
  registerTextDocumentContentProvider(scheme: string, provider: any): Disposable {
    if (stub.contentProviders.has(scheme)) {
      throw new Error(`stub: a content provider for ${scheme} is already registered`);
    }
    stub.contentProviders.set(scheme, provider);
    return new Disposable(() => stub.contentProviders.delete(scheme));
  },
};

export const commands = {
  registerCommand(command: string, callback: (...args: any[]) => unknown): Disposable {
    if (stub.commands.has(command)) {
      throw new Error(`command '${command}' already exists`);
    }
    stub.commands.set(command, callback);
    return new Disposable(() => stub.commands.delete(command));
  },
  executeCommand(command: string, ...args: any[]): Promise<unknown> {
    stub.executed.push({ command, args });
    const callback = stub.commands.get(command);
    return Promise.resolve(callback?.(...args));
  },
};
