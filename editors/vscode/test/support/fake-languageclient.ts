/**
 * A stand-in for `vscode-languageclient/node` in the glue tests: it records how the extension
 * builds the client and lets a test deliver notifications and answer requests.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */

export enum TransportKind {
  stdio = 0,
  ipc = 1,
  pipe = 2,
  socket = 3,
}

export enum State {
  Stopped = 1,
  Starting = 3,
  Running = 2,
}

export enum ErrorAction {
  Continue = 1,
  Shutdown = 2,
}

export enum CloseAction {
  DoNotRestart = 1,
  Restart = 2,
}

export type Responder = (method: string, params: any) => unknown;

export class LanguageClient {
  static instances: LanguageClient[] = [];
  readonly handlers = new Map<string, (params: any) => void>();
  readonly requests: { method: string; params: any }[] = [];
  responder: Responder = () => undefined;
  started = false;
  stopped = false;
  state: State = State.Stopped;
  /** start() rejects with this, when set (a server that cannot be started). */
  failStart: Error | undefined;
  readonly stateListeners: ((event: { oldState: State; newState: State }) => void)[] = [];

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: any,
    readonly clientOptions: any,
  ) {
    LanguageClient.instances.push(this);
  }

  onNotification(method: string, handler: (params: any) => void): { dispose(): void } {
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }

  async sendRequest(method: string, params: any): Promise<any> {
    this.requests.push({ method, params });
    return this.responder(method, params);
  }

  onDidChangeState(listener: (event: { oldState: State; newState: State }) => void): { dispose(): void } {
    this.stateListeners.push(listener);
    return { dispose: () => undefined };
  }

  setState(newState: State): void {
    const oldState = this.state;
    this.state = newState;
    for (const listener of this.stateListeners) {
      listener({ oldState, newState });
    }
  }

  async start(): Promise<void> {
    this.started = true;
    if (this.failStart !== undefined) {
      throw this.failStart;
    }
    this.setState(State.Running);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.setState(State.Stopped);
  }

  /** Deliver a server notification as the real client would. */
  notify(method: string, params: unknown): void {
    const handler = this.handlers.get(method);
    if (handler === undefined) {
      throw new Error(`no handler for ${method}`);
    }
    handler(params);
  }
}
