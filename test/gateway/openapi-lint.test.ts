// The OpenAPI document under Redocly's recommended rules: zero errors and zero warnings,
// which includes the `struct` rule (the OpenAPI 3.1 structure). @redocly/cli 2 bundles
// its openapi-core into hashed chunks with no public module API, so the test runs the
// CLI itself with its JSON report, as CI would.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildOpenApi } from '../../gateway/openapi.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
const dir = mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}
interface Report {
  totals: { errors: number; warnings: number; ignored: number };
  problems: Problem[];
}

/** Lints `doc` with the recommended ruleset and nothing else (no config file, no telemetry). */
async function lint(doc: unknown, name: string): Promise<Report> {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(doc));
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
  // The CLI exits 1 when it finds errors; its report is on stdout either way.
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'lint', '--extends', 'recommended', '--format', 'json', file], { cwd: dir, env, maxBuffer: 16 << 20 }).catch(
    (failed: { stdout?: string }) => ({ stdout: failed.stdout ?? '' }),
  );
  return JSON.parse(stdout.slice(stdout.indexOf('{'))) as Report;
}

const summary = (report: Report) => report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);

test('the generated document has no error and no warning under the recommended rules', async () => {
  const report = await lint(buildOpenApi(), 'venue');
  assert.deepEqual(summary(report), []);
  assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
});

test('the lint catches what the document must keep: an operationId removed, and a response without its description', async () => {
  const doc = structuredClone(buildOpenApi()) as any;
  delete doc.paths['/api/v1/orders/submit'].post.operationId;
  delete doc.paths['/healthz'].get.responses['200'].description;
  const report = await lint(doc, 'broken');
  const found = report.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}`);
  assert.ok(found.includes('operation-operationId #/paths/~1api~1v1~1orders~1submit/post/operationId'), found.join('\n'));
  assert.ok(found.includes('struct #/paths/~1healthz/get/responses/200'), found.join('\n'));
  assert.ok(report.totals.errors + report.totals.warnings >= 2);
});
