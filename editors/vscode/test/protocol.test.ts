/**
 * src/protocol.ts cannot drift from the server: every $def of schemas/protocol.schema.json is an
 * interface there with the same fields, the same optionality and the same types (read from the
 * TypeScript source with the compiler API), the method maps use the schema's shapes, and every
 * constant has the value server/protocol.py gives it.
 */

import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import * as ts from 'typescript';

import * as P from '../src/protocol';
import { PKG, PYTHON, REPO } from './support/paths';

type Schema = {
  type?: string;
  $ref?: string;
  anyOf?: Schema[];
  enum?: unknown[];
  items?: Schema;
  prefixItems?: Schema[];
  additionalProperties?: boolean | Schema;
  properties?: Record<string, Schema>;
  required?: string[];
};

const schema = JSON.parse(fs.readFileSync(path.join(REPO, 'schemas', 'protocol.schema.json'), 'utf-8')) as Schema & {
  $defs: Record<string, Schema>;
};

/** Interfaces of protocol.ts the schema does not carry, and why. */
const CLIENT_ONLY = new Set([
  'RequestMap',
  'NotificationMap',
  'CommandMap',
]);

const refName = (ref: string) => ref.replace('#/$defs/', '');

/** The TypeScript spelling of a JSON Schema type, as protocol.ts writes it. */
function tsType(s: Schema): string {
  if (s.$ref) {
    return refName(s.$ref);
  }
  if (s.anyOf) {
    return s.anyOf.map(tsType).join(' | ');
  }
  if (s.enum) {
    return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  }
  switch (s.type) {
    case 'string':
    case 'boolean':
    case 'null':
      return s.type;
    case 'integer':
    case 'number':
      return 'number';
    case 'array': {
      if (s.prefixItems) {
        return `[${s.prefixItems.map(tsType).join(', ')}]`;
      }
      const item = tsType(s.items ?? {});
      return item.includes('|') ? `(${item})[]` : `${item}[]`;
    }
    case 'object':
      if (s.additionalProperties === true || s.additionalProperties === undefined) {
        return 'Record<string, unknown>';
      }
      if (s.additionalProperties === false) {
        return '{}';
      }
      return `Record<string, ${tsType(s.additionalProperties)}>`;
    default:
      return 'unknown';
  }
}

const normal = (text: string) => text.replace(/\s+/g, '').replace(/'/g, '"');

interface Field {
  type: string;
  optional: boolean;
}

let parsed: Map<string, Map<string, Field>> | undefined;

/** Every interface of src/protocol.ts: its fields (inherited ones too) as declared. */
function readProtocolTs(): { interfaces: Map<string, Map<string, Field>> } {
  parsed ??= parseProtocolTs();
  return { interfaces: parsed };
}

function parseProtocolTs(): Map<string, Map<string, Field>> {
  const file = path.join(PKG, 'src', 'protocol.ts');
  const program = ts.createProgram([file], { strict: true, noEmit: true, skipLibCheck: true });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  assert.ok(source, 'src/protocol.ts parses');
  const interfaces = new Map<string, Map<string, Field>>();
  ts.forEachChild(source, (node) => {
    if (!ts.isInterfaceDeclaration(node)) {
      return;
    }
    const symbol = checker.getSymbolAtLocation(node.name)!;
    const fields = new Map<string, Field>();
    for (const property of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))) {
      const declaration = property.valueDeclaration;
      assert.ok(declaration && ts.isPropertySignature(declaration) && declaration.type,
        `${node.name.text}.${property.name} has a declared type`);
      fields.set(property.name, { type: declaration.type.getText(), optional: declaration.questionToken !== undefined });
    }
    interfaces.set(node.name.text, fields);
  });
  return interfaces;
}

test('every schema $def is an interface of protocol.ts with the same fields and types', () => {
  const { interfaces } = readProtocolTs();
  const problems: string[] = [];
  for (const [name, def] of Object.entries(schema.$defs)) {
    const fields = interfaces.get(name);
    if (fields === undefined) {
      problems.push(`${name}: no interface in src/protocol.ts`);
      continue;
    }
    const required = new Set(def.required ?? []);
    const properties = def.properties ?? {};
    for (const [field, spec] of Object.entries(properties)) {
      const mine = fields.get(field);
      if (mine === undefined) {
        problems.push(`${name}.${field}: missing in src/protocol.ts`);
        continue;
      }
      if (mine.optional !== !required.has(field)) {
        problems.push(`${name}.${field}: ${required.has(field) ? 'required' : 'optional'} in the schema, ` +
          `${mine.optional ? 'optional' : 'required'} in src/protocol.ts`);
      }
      if (normal(mine.type) !== normal(tsType(spec))) {
        problems.push(`${name}.${field}: the schema says ${tsType(spec)}, src/protocol.ts says ${mine.type}`);
      }
    }
    for (const field of fields.keys()) {
      if (!(field in properties)) {
        problems.push(`${name}.${field}: in src/protocol.ts, not in the schema`);
      }
    }
  }
  for (const name of interfaces.keys()) {
    if (!(name in schema.$defs) && !CLIENT_ONLY.has(name)) {
      problems.push(`${name}: an interface of src/protocol.ts the schema does not have`);
    }
  }
  assert.deepEqual(problems, []);
});

test('the method maps use the shapes the schema names for them', () => {
  const { interfaces } = readProtocolTs();
  const roles = schema.properties ?? {};
  const shapeOf = (role: string) => (roles[role]?.$ref ? refName(roles[role]!.$ref!) : undefined);
  const methodRole = (method: string) =>
    Object.entries(P).find(([, value]) => value === method)![0].toLowerCase(); // MINE_STATUS -> mine_status
  const requests = interfaces.get('RequestMap')!;
  const notifications = interfaces.get('NotificationMap')!;
  const used = new Set<string>();
  for (const [method, field] of requests) {
    const role = methodRole(method);
    const shape = Object.fromEntries(
      [...field.type.matchAll(/(params|result):\s*(\w+)/g)].map((m) => [m[1], m[2]]),
    ) as { params: string; result: string };
    used.add(shape.params).add(shape.result);
    if (shapeOf(`${role}_params`) !== undefined) {
      assert.equal(shape.params, shapeOf(`${role}_params`), `${method} params`);
    }
    if (shapeOf(`${role}_result`) !== undefined) {
      assert.equal(shape.result, shapeOf(`${role}_result`), `${method} result`);
    }
  }
  assert.equal(requests.get(P.ANSWER_QUESTION)!.type.includes(`result: ${shapeOf('decision_result')}`), true);
  for (const [method, field] of notifications) {
    const role = methodRole(method);
    assert.equal(field.type, shapeOf(role), `${method} carries the schema's ${role}`);
    used.add(field.type);
  }
  // Command arguments and results (kitsoki.* executeCommand) are shapes of the schema too.
  for (const [, field] of interfaces.get('CommandMap')!) {
    for (const m of field.type.matchAll(/\b([A-Z]\w+)\b/g)) used.add(m[1]!);
  }
  const everyRole = new Set(Object.keys(roles).map((role) => shapeOf(role)!));
  assert.deepEqual([...everyRole].filter((shape) => !used.has(shape)), [], 'every message of the schema has a method');
});

test('every constant has the value server/protocol.py gives it', () => {
  const code = [
    'import json',
    'import server.protocol as P',
    'names = {k: v for k, v in vars(P).items() if k.isupper() and isinstance(v, (str, tuple))}',
    'print(json.dumps(names))',
  ].join('\n');
  const run = spawnSync(PYTHON, ['-c', code], { cwd: REPO, encoding: 'utf-8' });
  assert.equal(run.status, 0, `${PYTHON} could not import server.protocol (set KITSOKI_PYTHON)\n${run.stderr}`);
  const python = JSON.parse(run.stdout) as Record<string, string | string[]>;
  const mine = Object.fromEntries(
    Object.entries(P).filter(([key, value]) => /^[A-Z_]+$/.test(key) && (typeof value === 'string' || Array.isArray(value))),
  );
  assert.deepEqual(mine, python);
});
