// `npm run load` (bench/load/cli.ts) as a user runs it: a child process with real
// arguments, its exit status and output; end to end against a real venue (real sockets,
// threads and embedded PostgreSQL), whose own database must hold exactly what the CLI
// says it was answered, and whose status reads --check compares the answers with.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { answerProblem } from '../../bench/load/answer-check.ts';
import { LIMITS, parseCli, UsageError } from '../../bench/load/cli-options.ts';
import type { LoadSummary } from '../../bench/load/cli.ts';
import { waitForProjections } from '../../bench/load/verify.ts';
import { embeddedUrl } from '../../persistence/embedded-postgres.ts';
import { TOKENS, TRADER_A, VenueProcess } from '../support/venue-process.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ON_BOTH = ['c1000000-0000-4000-8000-000000000001', 'c1000000-0000-4000-8000-000000000002', 'c1000000-0000-4000-8000-000000000003'];
const ON_B = ['c2000000-0000-4000-8000-000000000001', 'c2000000-0000-4000-8000-000000000002'];

/** Runs the CLI as `npm run load` does (tsx), bounded at 120 s. */
function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/load/cli.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('--help prints every option with its default and exits 0', { timeout: 60_000 }, async () => {
  const { code, stdout, stderr } = await runCli(['--help']);
  assert.equal(code, 0, stderr);
  for (const option of [
    '--url',
    '--token',
    '--principals',
    '--instrument',
    '--mode',
    '--connections',
    '--threads',
    '--seconds',
    '--count',
    '--rate',
    '--burst',
    '--seed',
    '--json',
    '--check',
    '--check-sample',
    '--help',
  ]) {
    assert.match(stdout, new RegExp(`^  (-h, )?${option} `, 'm'), `${option} is listed`);
  }
  for (const text of [
    'default: sync-result',
    'default: 64, max 1024',
    'default: 1, max 16',
    'default: 10, or 600 with --count; max 3600',
    'max 10000000',
    'default: 1000, max 20000',
    'default: gateway/principals.dev.json',
  ]) {
    assert.ok(stdout.includes(text), `the usage says "${text}"`);
  }
});

test('a bad option or value exits 2 with a message naming it, and sends nothing', { timeout: 60_000 }, async () => {
  const unknown = await runCli(['--url', 'http://127.0.0.1:9', '--bogus']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /Unknown option '--bogus'/);
  const mode = await runCli(['--url', 'http://127.0.0.1:9', '--token', TOKENS.traderA, '--instrument', ON_B[0]!, '--mode', 'fast']);
  assert.equal(mode.code, 2);
  assert.match(mode.stderr, /--mode: expected one of sync-result, captured-ack, stream-ack, accepted-async, got "fast"/);
  assert.equal(mode.stdout, '');
});

test('every option value is checked and bounded, and the tokens resolve to their principals', () => {
  const base = ['--url', 'http://127.0.0.1:8080', '--token', TOKENS.traderA, '--instrument', ON_B[0]!];
  const refused: [string[], RegExp][] = [
    [[], /--url is required/],
    [['--url', 'https://venue:8443', '--token', TOKENS.traderA, '--instrument', ON_B[0]!], /only http:\/\//],
    [['--url', 'http://127.0.0.1:8080/api', '--token', TOKENS.traderA, '--instrument', ON_B[0]!], /only http:\/\/host:port/],
    [['--url', 'http://127.0.0.1:8080', '--instrument', ON_B[0]!], /--token is required/],
    [['--url', 'http://127.0.0.1:8080', '--token', TOKENS.traderA], /--instrument is required/],
    [[...base, '--instrument', 'not-a-uuid'], /not a UUID: "not-a-uuid"/],
    [[...base, '--token', 'dev-token-nobody'], /--token #2 is not in .*principals\.dev\.json/],
    [[...base, '--token', TOKENS.viewer], /--token #2 \(viewer\) is not a trader/],
    [[...base, '--token', 'tok:not-a-uuid:x'], /TOKEN:PARTICIPANT_UUID:ACCOUNT_UUID/],
    [[...base, '--seconds', '0'], /--seconds: expected a number from 0.1 to 3600, got "0"/],
    [[...base, '--seconds', '3601'], /--seconds: .* to 3600/],
    [[...base, '--count', String(LIMITS.count + 1)], /--count: expected a whole number from 1 to 10000000/],
    [[...base, '--count', '2.5'], /--count: expected a whole number/],
    [[...base, '--connections', '1025'], /--connections/],
    [[...base, '--threads', '4', '--count', '3'], /at least one command per thread \(4\)/],
    [[...base, '--rate', '-5'], /--rate/],
    [[...base, '--burst', '4'], /--burst is for an open loop/],
    [[...base, '--rate', '100', '--connections', '8', '--burst', '9'], /--burst: expected a whole number from 1 to 8/],
    [[...base, '--check-sample', '10'], /--check-sample is for --check/],
    [[...base, '--check', '--check-sample', '20001'], /--check-sample: .* to 20000/],
    [[...base, 'positional'], /Unexpected argument 'positional'/],
    [[...base, '--json=yes'], /--json/],
  ];
  for (const [args, message] of refused)
    assert.throws(
      () => parseCli(args),
      (error: unknown) => error instanceof UsageError && message.test(error.message),
      args.join(' '),
    );

  const options = parseCli([...base, '--token', `${TOKENS.traderB},tok-c:${ON_B[0]}:${ON_B[1]}`, '--instrument', ON_B[1]!.toUpperCase(), '--count', '500', '--check']);
  assert.deepEqual(options.traders, [
    { token: TOKENS.traderA, participantId: TRADER_A.participantId, accountId: TRADER_A.accountId },
    { token: TOKENS.traderB, participantId: 'b1000000-0000-4000-8000-000000000001', accountId: 'b2000000-0000-4000-8000-000000000001' },
    { token: 'tok-c', participantId: ON_B[0], accountId: ON_B[1] },
  ]);
  assert.deepEqual(options.instruments, [ON_B[0], ON_B[1]]);
  assert.deepEqual(
    [options.mode, options.connections, options.threads, options.seconds, options.count, options.rate, options.burst, options.checkSample],
    ['sync-result', 64, 1, 600, 500, 0, 1, 1000],
  );
  assert.equal(parseCli(base).seconds, 10, 'without --count a run is 10 s');
});

let venue: VenueProcess;
let client: pg.Client;
before(async () => {
  venue = await VenueProcess.start();
  client = new pg.Client({ connectionString: (await embeddedUrl(venue.dataDir))! });
  await client.connect();
});
after(async () => {
  await client?.end();
  await venue?.stop();
});

/** Commands the venue captured (its intake records) from the load's client id, on these instruments. */
async function captured(instruments: string[]): Promise<{ total: number; byPrincipal: Record<string, number> }> {
  const rows = await client.query<{ principal_id: string; n: number }>(
    `SELECT principal_id, count(*)::int AS n FROM runtime.command_log WHERE client_id = 'load' AND instrument_id = ANY($1::uuid[]) GROUP BY principal_id`,
    [instruments],
  );
  const byPrincipal = Object.fromEntries(rows.rows.map((row) => [row.principal_id, row.n]));
  return { total: Object.values(byPrincipal).reduce((a, b) => a + b, 0), byPrincipal };
}

test('a timed sync-result run: every command answered 200, the venue holds as many as answered, and --check finds every sampled answer in its reads', { timeout: 180_000 }, async () => {
  const { code, stdout, stderr } = await runCli([
    '--url',
    venue.baseUrl,
    '--token',
    `${TOKENS.traderA},${TOKENS.traderB}`,
    '--instrument',
    ON_BOTH.join(','),
    '--seconds',
    '2',
    '--connections',
    '8',
    '--json',
    '--check',
    '--check-sample',
    '300',
  ]);
  assert.equal(code, 0, `exit ${code}: ${stderr}`);
  const summary = JSON.parse(stdout) as LoadSummary;
  assert.ok(summary.answered > 100, `${summary.answered} answered in 2 s`);
  assert.deepEqual(summary.statuses, { 200: summary.answered }, 'every answer a 200');
  assert.equal(summary.sent, summary.answered);
  assert.deepEqual(summary.errors, { transport: 0, firstTransportError: null, dropped: 0, queuedBehind: 0 });
  assert.equal(
    Object.values(summary.kinds).reduce((a, b) => a + b, 0),
    summary.sent,
  );
  assert.ok(summary.kinds.rest! > 0 && summary.kinds.cross! > 0 && summary.kinds.cancel! > 0, JSON.stringify(summary.kinds));
  const l = summary.latencyUs;
  assert.ok(l.count === summary.sent && l.p50 > 0 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.max, JSON.stringify(l));
  assert.ok(summary.seconds >= 1.9 && summary.seconds <= 2.5, `a 2 s window (${summary.seconds} s)`);
  assert.equal(summary.answersPerSecond, Math.round(summary.answered / summary.seconds));
  assert.deepEqual(summary.check, { checked: 300, matched: 300, mismatches: 0, examples: [] });
  // The venue's own record: one intake record per command answered, for both traders.
  const venueSide = await captured(ON_BOTH);
  assert.equal(venueSide.total, summary.answered, `the venue captured ${venueSide.total}, the CLI was answered ${summary.answered}`);
  assert.deepEqual(Object.keys(venueSide.byPrincipal).sort(), ['trader-a', 'trader-b']);
});

test('a count-bounded captured-ack run as one trader: exactly the count sent and answered 202, all by that trader on its instruments, each reaching its outcome', { timeout: 180_000 }, async () => {
  const { code, stdout, stderr } = await runCli([
    '--url',
    venue.baseUrl,
    '--token',
    TOKENS.traderB,
    '--instrument',
    ON_B[0]!,
    '--instrument',
    ON_B[1]!,
    '--mode',
    'captured-ack',
    '--count',
    '301',
    '--threads',
    '2',
    '--connections',
    '4',
    '--json',
    '--check',
  ]);
  assert.equal(code, 0, `exit ${code}: ${stderr}`);
  const summary = JSON.parse(stdout) as LoadSummary;
  assert.equal(summary.sent, 301, 'exactly the count, shared out between 2 threads');
  assert.deepEqual(summary.statuses, { 202: 301 });
  assert.equal(summary.mode, 'captured-ack');
  assert.deepEqual(summary.check, { checked: 301, matched: 301, mismatches: 0, examples: [] });
  const venueSide = await captured(ON_B);
  assert.deepEqual(venueSide.byPrincipal, { 'trader-b': 301 }, 'only trader B, only on its two instruments');
  await waitForProjections(client); // the orders' rows are a projection of the journal
  const orders = await client.query<{ instrument_id: string; participant_id: string }>(
    'SELECT DISTINCT instrument_id, participant_id FROM runtime.order_lifecycle_state WHERE instrument_id = ANY($1::uuid[])',
    [ON_B],
  );
  assert.deepEqual(new Set(orders.rows.map((row) => row.participant_id)), new Set(['b1000000-0000-4000-8000-000000000001']));
  assert.deepEqual(new Set(orders.rows.map((row) => row.instrument_id)), new Set(ON_B));
});

test('the check flags an answer that differs from the venue status read: another body, status, mode or outcome', { timeout: 60_000 }, async () => {
  const orderId = crypto.randomUUID();
  const commandId = crypto.randomUUID();
  const body = {
    commandId,
    traceId: crypto.randomUUID(),
    causationId: crypto.randomUUID(),
    correlationId: crypto.randomUUID(),
    actorId: 'test',
    occurredAt: new Date().toISOString(),
    orderId,
    instrumentId: ON_BOTH[0],
    participantId: TRADER_A.participantId,
    accountId: TRADER_A.accountId,
    side: 'BUY',
    orderType: 'LIMIT',
    quantityUnits: '1',
    limitPrice: '1.00',
    currency: 'USD',
    timeInForce: 'DAY',
  };
  const answer = await venue.order('/api/v1/orders/submit', body, { key: commandId, clientId: 'check-test', mode: 'sync-result' });
  assert.equal(answer.status, 200);
  const view = (await venue.get(`/api/v1/commands/${commandId}`, TOKENS.traderA)).json;
  const sent = { commandId, token: TOKENS.traderA, path: '/api/v1/orders/submit', orderId, status: 200, body: answer.text };
  assert.equal(answerProblem(sent, 'sync-result', view), null, 'the answer as given matches');
  assert.match(answerProblem({ ...sent, body: answer.text.replace('"accepted"', '"Accepted"') }, 'sync-result', view)!, /not the answer byte for byte/);
  assert.match(answerProblem({ ...sent, status: 202 }, 'sync-result', view)!, /responseStatus is 200, the answer said 202/);
  assert.match(answerProblem(sent, 'captured-ack', view)!, /processingMode is "sync-result", the answer said "captured-ack"/);
  assert.match(answerProblem({ ...sent, orderId: crypto.randomUUID() }, 'sync-result', view)!, /orderId is/);
  assert.match(answerProblem(sent, 'sync-result', { ...view, status: 'REJECTED', resultStatus: 'rejected' })!, /status is "REJECTED\/rejected", the answer said "COMPLETED\/accepted"/);
});
