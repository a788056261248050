/** The server's command line and the files it serves. Pure. */

export interface Executable {
  command: string;
  args: string[];
}

export const DEFAULT_SERVER_COMMAND = ['kitsoki-miner', 'serve'];

/**
 * `kitsoki.serverCommand` (an array, program first) with `${workspaceFolder}` replaced (by the
 * first workspace folder that has a `.kitsoki.yaml`).
 * Anything else is refused with a message that says what to write.
 */
export function serverCommand(setting: unknown, workspaceFolder?: string): Executable {
  const value = setting === undefined || setting === null ? DEFAULT_SERVER_COMMAND : setting;
  if (!Array.isArray(value) || value.length === 0 || !value.every((part) => typeof part === 'string')) {
    throw new Error(
      `kitsoki.serverCommand must be an array of strings, program first, e.g. ["kitsoki-miner", "serve"]; ` +
        `got ${JSON.stringify(value)}`,
    );
  }
  const parts = (value as string[]).map((part) => {
    if (!part.includes('${workspaceFolder}')) {
      return part;
    }
    if (workspaceFolder === undefined) {
      throw new Error(`kitsoki.serverCommand uses \${workspaceFolder} but no folder is open`);
    }
    return part.split('${workspaceFolder}').join(workspaceFolder);
  });
  const [command, ...args] = parts;
  if (!command) {
    throw new Error('kitsoki.serverCommand: the program (the first element) is empty');
  }
  return { command, args };
}

/**
 * The server to start when `kitsoki.serverCommand` is not set anywhere: `kitsoki-miner` when it
 * is on PATH, else the workspace's own `.venv/bin/kitsoki-miner` (a clone after `make venv`),
 * else the plain default (whose failure to start then says what to set).
 */
export function defaultServerCommand(
  folder: string | undefined,
  exists: (path: string) => boolean,
  pathDirs: string[],
): Executable {
  const [program, ...args] = DEFAULT_SERVER_COMMAND as [string, ...string[]];
  if (pathDirs.some((dir) => dir !== '' && exists(`${dir}/${program}`))) {
    return { command: program, args };
  }
  if (folder !== undefined && exists(`${folder}/.venv/bin/${program}`)) {
    return { command: `${folder}/.venv/bin/${program}`, args };
  }
  return { command: program, args };
}

export interface FileFilter {
  scheme: 'file' | 'kitsoki-draft';
  language: 'yaml';
  pattern?: string;
}

/**
 * `.kitsoki.yaml`, and story and flow files under `stories/` and `.kitsoki/stories/`. YAML stays
 * YAML: no language is contributed, so other YAML extensions keep serving these files. A staged
 * draft is a `kitsoki-draft:` document (proposalUri.ts) and is served too.
 */
export const DOCUMENT_SELECTOR: FileFilter[] = [
  { scheme: 'file', language: 'yaml', pattern: '**/.kitsoki.yaml' },
  { scheme: 'file', language: 'yaml', pattern: '**/stories/**/*.{yaml,yml}' },
  { scheme: 'file', language: 'yaml', pattern: '**/.kitsoki/stories/**/*.{yaml,yml}' },
  { scheme: 'kitsoki-draft', language: 'yaml' },
];
