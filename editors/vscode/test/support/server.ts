/** The real Python server over stdio, driven with vscode-jsonrpc (what vscode-languageclient uses). */

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';

import { PYTHON, REPO } from './paths';

export interface Demo {
  root: string;
  ws: string;
  transcripts: string;
}

/** A fresh demo workspace (core.demo.walkthrough.lay_out), in a folder whose name has a space. */
export function layOutDemo(): Demo {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'kitsoki vscode-'));
  const code = [
    'import json, sys',
    'from pathlib import Path',
    'from core.demo.walkthrough import lay_out',
    'print(json.dumps([str(p) for p in lay_out(Path(sys.argv[1]))]))',
  ].join('\n');
  const run = spawnSync(PYTHON, ['-c', code, path.join(parent, 'demo')], { cwd: REPO, encoding: 'utf-8' });
  if (run.error !== undefined || run.status !== 0) {
    fs.rmSync(parent, { recursive: true, force: true });
    throw new Error(`laying out the demo with ${PYTHON} failed (set KITSOKI_PYTHON to the project's Python): ` +
      `${run.error?.message ?? ''}\n${run.stdout}\n${run.stderr}`);
  }
  const [root, ws, transcripts] = JSON.parse(run.stdout.trim().split('\n').pop() ?? '[]') as string[];
  return { root: root!, ws: ws!, transcripts: transcripts! };
}

export interface Received {
  method: string;
  params: any;
}

export class ServerProcess {
  readonly proc: ChildProcess;
  readonly connection: MessageConnection;
  readonly notifications: Received[] = [];
  readonly requests: Received[] = [];
  stderr = '';
  exitCode: number | null | undefined = undefined;

  constructor() {
    this.proc = spawn(PYTHON, ['-m', 'server.cli', 'serve'], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr!.setEncoding('utf-8');
    this.proc.stderr!.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.proc.on('exit', (code) => {
      this.exitCode = code;
    });
    this.connection = createMessageConnection(
      new StreamMessageReader(this.proc.stdout!),
      new StreamMessageWriter(this.proc.stdin!),
    );
    this.connection.onNotification((method: string, params: any) => {
      this.notifications.push({ method, params });
    });
    // vscode-jsonrpc keeps $/progress for registered tokens; the server's own tokens land here.
    this.connection.onUnhandledProgress((params) => {
      this.notifications.push({ method: '$/progress', params });
    });
    this.connection.onRequest((method: string, params: any) => {
      this.requests.push({ method, params });
      switch (method) {
        case 'window/showDocument':
          return { success: true };
        case 'workspace/configuration':
          return [];
        default:
          return null;
      }
    });
    this.connection.listen();
  }

  of(method: string): any[] {
    return this.notifications.filter((n) => n.method === method).map((n) => n.params);
  }

  async waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value !== undefined && value !== false) {
        return value;
      }
      if (this.exitCode !== undefined) {
        throw new Error(`the server exited (${this.exitCode}) while waiting for ${what}\n${this.stderr}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\nserver stderr:\n${this.stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async close(): Promise<number | null> {
    if (this.exitCode === undefined) {
      try {
        await withTimeout(this.connection.sendRequest('shutdown'), 20_000, 'shutdown');
        await this.connection.sendNotification('exit');
      } catch {
        this.proc.kill();
      }
      await this.waitFor('the server to exit', () => this.exitCode !== undefined, 20_000).catch(() => this.proc.kill());
    }
    this.connection.dispose();
    return this.exitCode ?? null;
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string | (() => string)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${typeof what === 'string' ? what : what()}: no answer in ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** sha256 of every file under root, outside .artifacts/, by relative path. */
export function hashes(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== '.artifacts') {
          walk(full);
        }
      } else if (entry.isFile()) {
        out[path.relative(root, full)] = crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex');
      }
    }
  };
  walk(root);
  return out;
}
