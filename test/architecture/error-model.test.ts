// One error model: threads and core refuse with a code (core/error-codes.ts) and the
// gateway alone turns a code into an HTTP status and an error body
// (gateway/error-catalog.ts). A source scan of persistence/ and core/ for HTTP error
// statuses and the error body's JSON shape keeps it so.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES } from '../../core/error-codes.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCANNED = ['core', 'persistence'];

/** What writes an HTTP error status or an error body; each names what it found. */
const HTTP_ERROR_PATTERNS: [RegExp, string][] = [
  [/status\w*\s*[:=]\s*[45]\d\d\b/i, 'an error status as a value'],
  [new RegExp(`\\b(${ERROR_CODES.join('|')})['"]?\\s*:\\s*[45]\\d\\d\\b`), 'an error code mapped to a status'],
  [/\?\s*[45]\d\d\s*:/, 'an error status chosen in a conditional'],
  [/\b\w+\(\s*[45]\d\d\s*,/, 'an error status passed to a call'],
  [/\{\s*\\?['"]?error\\?['"]?\s*:/, 'the error body { error: ... }'],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(rel);
    return /\.(ts|mts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.mts') ? [rel] : [];
  });
}

/** The lines of `text` that write an HTTP error, comments left out (they may name a status the gateway answers). */
function httpErrorsIn(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' ')).replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  code.split('\n').forEach((line, index) => {
    for (const [pattern, what] of HTTP_ERROR_PATTERNS) if (pattern.test(line)) found.push(`${index + 1}: ${what}: ${line.trim().slice(0, 120)}`);
  });
  return found;
}

test('the scan finds the ways a thread could write an HTTP error, and passes what is not one', () => {
  const written = [
    "return { status: 503, body: JSON.stringify({ error: 'more instruments than the view holds', code: 'OVERLOADED' }) };",
    "const notFound = (message: string) => ({ status: 404, body: '' });",
    "if (error instanceof SettlementError) return fail(error.code === 'NOT_FOUND' ? 404 : 409, error.code, error.message);",
    "return typeof conflict === 'string' ? fail(409, 'FACT_CONFLICT', conflict) : ok(conflict);",
    'body: JSON.stringify({ error: message, code }),',
    'const body = \'{"error":"no such run","code":"NOT_FOUND"}\';',
    'answer.responseStatus = 409;',
    'const STATUS = { NOT_FOUND: 404, FACT_CONFLICT: 409 };',
  ];
  for (const line of written) assert.equal(httpErrorsIn(line).length > 0, true, line);
  const fine = [
    '  SESSION_ENDED: 401, // a reject code, not an HTTP status',
    'return code >= 400 && code < 500;',
    '(error: unknown) => port.postMessage({ id, ok: false, ...failureOf(error, message) }),',
    'responseStatus: syncResult ? 200 : 202,',
    "return refusal('NOT_FOUND', `obligation ${obligationId} is not in the run`);",
    '// a read past its bound answers 503 { error, code }',
    '/** 409 when the { error: ... } names a taken id */',
  ];
  for (const line of fine) assert.deepEqual(httpErrorsIn(line), [], line);
});

test('no module under core/ or persistence/ writes an HTTP error status or an error body', () => {
  const files = SCANNED.flatMap((dir) => sourceFiles(dir));
  assert.ok(files.includes(path.join('persistence', 'read-thread.ts')) && files.includes(path.join('core', 'settlement', 'workflow.ts')), 'the scan reaches the modules that answer refusals');
  const wrong = files.flatMap((file) => httpErrorsIn(readFileSync(path.join(ROOT, file), 'utf8')).map((finding) => `${file}:${finding}`));
  assert.deepEqual(wrong, [], 'threads refuse with a code; gateway/error-catalog.ts gives it its status and body');
});
