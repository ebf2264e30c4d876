// The one error serializer and the logger options every thread's pino logger is made with.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loggerOptions, serializeError } from '../../core/log-format.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

test('an Error is serialized with its type, message, stack, code and cause', () => {
  const error = Object.assign(new TypeError('outer', { cause: new RangeError('inner') }), { code: 'E_OUTER' });
  const serialized = serializeError(error);
  assert.equal(serialized.type, 'TypeError');
  assert.equal(serialized.message, 'outer');
  assert.equal(serialized.code, 'E_OUTER');
  assert.match(serialized.stack ?? '', /^TypeError: outer\n\s+at /);
  assert.equal(serialized.cause?.type, 'RangeError');
  assert.equal(serialized.cause?.message, 'inner');
});

test('an error serialized by another thread passes through unchanged; a thrown non-Error keeps its text', () => {
  const fromWorker = structuredClone(serializeError(new Error('in the read thread')));
  assert.equal(serializeError(fromWorker), fromWorker);
  assert.deepEqual(serializeError('a bare string'), { type: 'string', message: 'a bare string' });
  assert.deepEqual(serializeError(undefined), { type: 'undefined', message: 'undefined' });
});

test('a chain of causes is followed to a bound, so a cycle is one finite line', () => {
  const a = new Error('a');
  const b = new Error('b', { cause: a });
  a.cause = b;
  let depth = 0;
  for (let node = serializeError(a); node.cause !== undefined; node = node.cause) depth++;
  assert.equal(depth, 3);
});

test('a logger made with loggerOptions writes err through the serializer, with its thread name', () => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) });
  const logger = pino(loggerOptions('gateway-7', 'info'), sink);
  logger.error({ requestId: 'r-1', err: Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }) }, 'the read failed');
  logger.warn({ err: 'a message from a worker' }, 'halted');
  const [first, second] = lines.map((line) => JSON.parse(line));
  assert.equal(first.thread, 'gateway-7');
  assert.equal(first.requestId, 'r-1');
  assert.deepEqual([first.err.type, first.err.message, first.err.code], ['Error', 'relation "x" does not exist', '42P01']);
  assert.match(first.err.stack, /^Error: relation "x" does not exist\n/);
  assert.deepEqual(second.err, { type: 'string', message: 'a message from a worker' });
});

function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(path.join(dir, entry.name)) : /\.(ts|mjs)$/.test(entry.name) ? [path.join(dir, entry.name)] : [],
  );
}

test('every pino logger of the venue is made with loggerOptions (one serializer, one shape)', () => {
  const made: string[] = [];
  for (const file of [...['gateway', 'persistence', 'runtime', 'core'].flatMap(sources), 'server.ts']) {
    for (const match of readFileSync(path.join(ROOT, file), 'utf8').matchAll(/\bpino\(([^)]*\)?)/g)) made.push(`${file}: pino(${match[1]}`);
  }
  assert.equal(made.length, 4, made.join('\n')); // gateway, main, read and persistence threads
  for (const call of made) assert.match(call, /: pino\(loggerOptions\(/);
});
