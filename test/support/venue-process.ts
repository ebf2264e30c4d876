// Starts the real venue (`server.ts`) as a child process on a free port, talks to it
// over real HTTP, and stops it. End-to-end tests use one per file.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { postmasterIn, running } from '../../bench/lib/leftovers.ts';
import { embeddedUrl } from '../../persistence/embedded-postgres.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const TOKENS = {
  traderA: 'dev-token-trader-a',
  traderB: 'dev-token-trader-b',
  operator: 'dev-token-operator',
  viewer: 'dev-token-viewer',
} as const;

export const TRADER_A = {
  participantId: 'a1000000-0000-4000-8000-000000000001',
  accountId: 'a2000000-0000-4000-8000-000000000001',
  otherAccountId: 'a2000000-0000-4000-8000-000000000002',
};
export const TRADER_B = { participantId: 'b1000000-0000-4000-8000-000000000001', accountId: 'b2000000-0000-4000-8000-000000000001' };

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export class VenueProcess {
  readonly child: ChildProcess;
  readonly baseUrl: string;
  /** Where the embedded database keeps its data (a fresh temporary folder unless given). */
  readonly dataDir: string;
  private readonly output: string[];
  private readonly ownsDataDir: boolean;
  /**
   * Keep-alive connections for request(). node:http rather than fetch: fetch (undici) took
   * 370-920 µs of this process's CPU per request against 100-220 µs (8 at a time, a GET
   * of the session), and the suite, CPU-bound on two cores, sends tens of thousands. An
   * idle connection is closed after 4 s (fetch's own default), well before the gateway's
   * 10 s idle timeout could close one under a request sent on it.
   */
  private readonly agent = new http.Agent({ keepAlive: true, timeout: 4_000 });

  private constructor(child: ChildProcess, baseUrl: string, output: string[], dataDir: string, ownsDataDir: boolean) {
    this.child = child;
    this.baseUrl = baseUrl;
    this.output = output;
    this.dataDir = dataDir;
    this.ownsDataDir = ownsDataDir;
  }

  /** A temporary data folder for venues a test starts and restarts itself; remove it with removeDataDir. */
  static makeDataDir(): string {
    return mkdtempSync(path.join(os.tmpdir(), 'venue-test-'));
  }

  static removeDataDir(dir: string): void {
    rmSync(dir, { recursive: true, force: true });
  }

  /**
   * Starts a venue; without DATA_DIR in env it gets a fresh one, removed by stop().
   * `fileLimit` lowers its limit on open files (the shell's `ulimit -n`, then exec: the
   * venue keeps the shell's pid).
   */
  static async start(env: Record<string, string> = {}, options: { fileLimit?: number } = {}): Promise<VenueProcess> {
    const ownsDataDir = env.DATA_DIR === undefined && env.DATABASE_URL === undefined;
    const dataDir = env.DATA_DIR ?? (ownsDataDir ? VenueProcess.makeDataDir() : '');
    const venueArgs = ['runtime/venue-start.mjs']; // as npm start runs it: server.ts compiled, no tsx in the venue's process
    const [command, args] = options.fileLimit === undefined ? [process.execPath, venueArgs] : ['/bin/sh', ['-c', `ulimit -n ${options.fileLimit} && exec "$0" "$@"`, process.execPath, ...venueArgs]];
    const child = spawn(command, args, {
      cwd: ROOT,
      env: {
        ...process.env,
        GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1', // as npm start runs the venue
        HOST: '127.0.0.1',
        PORT: '0',
        GATEWAY_THREADS: '2',
        MATCHING_SHARDS: '2',
        ORDER_CAPACITY: '65536',
        COMMAND_STORE_RECORDS: '65536',
        COMMAND_STORE_ARENA_BYTES: String(32 * 1024 * 1024),
        SHARED_TABLE_BUCKETS: '65536',
        // 256 KiB per key filter, rated for 209,715 keys (the default 16 MiB each): every
        // graceful stop adds the tables' keys to the filters and saves them to DATA_DIR, which
        // took 0.35 s of each test venue's stop and 0.3 s of CPU with the default's 64 MiB.
        KEY_FILTER_BITS: String(1 << 21),
        LOG_LEVEL: 'info',
        DATA_DIR: dataDir,
        EMBEDDED_POSTGRES_TEMPLATE: 'true', // a fresh cluster copied, not initdb'd: 0.6-1 s less per start
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    const listening = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`venue did not start:\n${output.join('')}`)), 120_000);
      const onLine = (chunk: Buffer) => {
        const text = chunk.toString();
        output.push(text);
        const match = /venue listening on http:\/\/[^:]+:(\d+)/.exec(text);
        if (match !== null) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      };
      child.stdout!.on('data', onLine);
      child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`venue exited with ${code}:\n${output.join('')}`));
      });
    });
    let port: number;
    try {
      port = await listening;
    } catch (error) {
      // A venue that did not start (tests of refused settings expect it) leaves no folder behind.
      if (child.exitCode === null && child.signalCode === null) {
        // It did not listen in time: a graceful stop (which stops its embedded PostgreSQL), bounded.
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
      if (ownsDataDir) VenueProcess.removeDataDir(dataDir);
      throw error;
    }
    return new VenueProcess(child, `http://127.0.0.1:${port}`, output, dataDir, ownsDataDir);
  }

  get log(): string {
    return this.output.join('');
  }

  /**
   * One request on a kept-alive connection. Headers as fetch sends them where the tests
   * rely on it: a string body without a content-type is `text/plain;charset=UTF-8`, and a
   * POST, PUT or PATCH always states its length (0 without a body).
   */
  async request(method: string, path: string, options: { token?: string; headers?: Record<string, string>; body?: string } = {}): Promise<HttpAnswer> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    const named = new Set(Object.keys(headers).map((name) => name.toLowerCase()));
    if (options.body !== undefined && !named.has('content-type')) headers['content-type'] = 'text/plain;charset=UTF-8';
    if (options.body !== undefined || ['POST', 'PUT', 'PATCH'].includes(method)) headers['content-length'] = String(Buffer.byteLength(options.body ?? ''));
    const { status, responseHeaders, text } = await new Promise<{ status: number; responseHeaders: Headers; text: string }>((resolve, reject) => {
      const request = http.request(`${this.baseUrl}${path}`, { method, headers, agent: this.agent }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('error', reject);
        response.on('end', () => {
          const answered = new Headers();
          for (let k = 0; k < response.rawHeaders.length; k += 2) answered.append(response.rawHeaders[k]!, response.rawHeaders[k + 1]!);
          resolve({ status: response.statusCode ?? 0, responseHeaders: answered, text: body });
        });
      });
      request.on('error', reject);
      request.end(options.body);
    });
    let json: unknown = undefined;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: leave undefined, tests assert on text
    }
    return { status, headers: responseHeaders, text, json };
  }

  get(path: string, token?: string): Promise<HttpAnswer> {
    return this.request('GET', path, token === undefined ? {} : { token });
  }

  /** POST an order command with the headers the contract requires. */
  order(path: string, body: unknown, options: { token?: string; key?: string; clientId?: string; mode?: string } = {}): Promise<HttpAnswer> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-client-id': options.clientId ?? 'test-client',
      'idempotency-key': options.key ?? crypto.randomUUID(),
    };
    if (options.mode !== undefined) headers['x-processing-mode'] = options.mode;
    return this.request('POST', path, { token: options.token ?? TOKENS.traderA, headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  }

  /** POSTs a submit on a connection of its own (no keep-alive): the kernel spreads such connections over the gateway threads. */
  postOnNewConnection(body: unknown, key: string, clientId = 'fresh-connection'): Promise<{ status: number; retryAfter: string | undefined; text: string }> {
    return new Promise((resolve, reject) => {
      const request = http.request(
        new URL('/api/v1/orders/submit', this.baseUrl),
        {
          method: 'POST',
          agent: false,
          headers: { authorization: `Bearer ${TOKENS.traderA}`, 'x-client-id': clientId, 'idempotency-key': key, 'content-type': 'application/json' },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] as string | undefined, text }));
        },
      );
      request.on('error', reject);
      request.end(JSON.stringify(body));
    });
  }

  /**
   * Waits until the projections (command_log, trades, order lifecycle…) hold every
   * command the journal holds now: tests that read those tables directly call it after
   * their commands were answered (the answer waits for the journal, not the projections).
   */
  async untilProjected(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await this.get('/admin/v1/persistence/status', TOKENS.operator);
      const shards = (status.json as { shards?: { projectionLag: number }[] } | undefined)?.shards;
      if (status.status === 200 && shards !== undefined && shards.every((shard) => shard.projectionLag === 0)) return;
      if (Date.now() > deadline) throw new Error(`the projections did not catch up with the journal: ${status.status} ${status.text}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Waits until the venue's log matches `pattern` (what it logs after ready, in the background). */
  async untilLogged(pattern: RegExp, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.log)) {
      if (Date.now() > deadline) throw new Error(`the venue did not log ${pattern} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** SIGTERM and the exit code; removes the data folder it made. */
  async stop(): Promise<number | null> {
    let code = this.child.exitCode;
    if (code === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      [code] = (await once(this.child, 'exit')) as [number | null];
    }
    this.agent.destroy();
    if (this.ownsDataDir) VenueProcess.removeDataDir(this.dataDir);
    return code;
  }

  /**
   * kill -9: no shutdown at all. The embedded database is left running (the next start on this
   * data stops it cleanly), or with `database` killed too: its postmaster's process group, every
   * backend at once, as a power cut would (the next start recovers it from its WAL).
   */
  async kill(options: { database?: boolean } = {}): Promise<void> {
    const postmaster = options.database === true ? postmasterIn(this.dataDir) : 0;
    if (options.database === true) assert.ok(postmaster > 0 && running(postmaster), `an embedded PostgreSQL runs on ${this.dataDir}`);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL'); // with the requests in flight still open: they die with the venue
      await once(this.child, 'exit');
    }
    if (postmaster > 0) process.kill(-postmaster, 'SIGKILL'); // the server started its own process group
    for (let waited = 0; postmaster > 0 && running(postmaster); waited += 10) {
      assert.ok(waited < 10_000, 'the killed PostgreSQL exits');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    this.agent.destroy();
  }
}

/** What stopAfter stops: a venue, or anything with its stop() and log. */
interface Stoppable {
  stop(): Promise<number | null>;
  readonly log: string;
}

/**
 * Runs a test's body, then stops the venue (named by a getter: bodies restart venues) and
 * asserts that it exited cleanly. A failing body's own error is what the test reports (the
 * venue's exit code added to its message), never replaced by the assertion on the stop,
 * as `try { body } finally { assert.equal(await venue.stop(), 0) }` would. `before` runs
 * ahead of the stop (to release a lock the venue would wait for), `after` once it exited.
 */
export async function stopAfter(venue: () => Stoppable, body: () => Promise<void>, steps: { before?: () => unknown; after?: () => unknown } = {}): Promise<void> {
  let failure: { error: unknown } | undefined;
  try {
    await body();
  } catch (error) {
    failure = { error };
  }
  let code: number | null | undefined;
  let log = '';
  let stopFailure: { error: unknown } | undefined;
  for (const step of [
    async () => steps.before?.(),
    async () => {
      const stopped = venue();
      code = await stopped.stop();
      log = stopped.log;
    },
    async () => steps.after?.(),
  ]) {
    try {
      await step();
    } catch (error) {
      stopFailure ??= { error };
    }
  }
  if (failure !== undefined) {
    if (failure.error instanceof Error) failure.error.message += ` (the venue then stopped with exit code ${code})`;
    throw failure.error;
  }
  if (stopFailure !== undefined) throw stopFailure.error;
  assert.equal(code, 0, `the venue stops cleanly; its log ends:\n${log.slice(-2000)}`);
}

// ---- bodies ----

export interface SubmitOptions {
  orderId?: string;
  instrumentId: string;
  side?: 'BUY' | 'SELL';
  price?: string;
  quantity?: string;
  orderType?: 'LIMIT' | 'LIMIT_HIDDEN';
  timeInForce?: 'DAY' | 'IOC';
  currency?: string;
  participantId?: string;
  accountId?: string;
  clientOrderId?: string;
}

function common() {
  return {
    commandId: crypto.randomUUID(),
    traceId: crypto.randomUUID(),
    causationId: crypto.randomUUID(),
    correlationId: crypto.randomUUID(),
    actorId: 'test-bot',
    occurredAt: new Date().toISOString(),
  };
}

export function submitBody(o: SubmitOptions): Record<string, unknown> {
  return {
    ...common(),
    orderId: o.orderId ?? crypto.randomUUID(),
    instrumentId: o.instrumentId,
    participantId: o.participantId ?? TRADER_A.participantId,
    accountId: o.accountId ?? TRADER_A.accountId,
    side: o.side ?? 'BUY',
    orderType: o.orderType ?? 'LIMIT',
    quantityUnits: o.quantity ?? '10',
    limitPrice: o.price ?? '100',
    currency: o.currency ?? 'USD',
    timeInForce: o.timeInForce ?? 'DAY',
    ...(o.clientOrderId === undefined ? {} : { clientOrderId: o.clientOrderId }),
  };
}

export interface TargetOptions {
  orderId: string;
  instrumentId: string;
  runId?: string;
  venueSessionId?: string;
  participantId?: string;
  accountId?: string;
}

export function cancelBody(o: TargetOptions): Record<string, unknown> {
  return {
    ...common(),
    orderId: o.orderId,
    runId: o.runId ?? 'run-local',
    venueSessionId: o.venueSessionId ?? 'session-1',
    instrumentId: o.instrumentId,
    participantId: o.participantId ?? TRADER_A.participantId,
    accountId: o.accountId ?? TRADER_A.accountId,
    reason: 'test',
  };
}

export function modifyBody(o: TargetOptions & { price: string; quantity: string }): Record<string, unknown> {
  const { reason: _reason, ...rest } = cancelBody(o);
  return { ...rest, limitPrice: o.price, quantityUnits: o.quantity };
}

export function cancelByClientOrderBody(clientOrderId: string, participantId = TRADER_A.participantId): Record<string, unknown> {
  return { ...common(), participantId, clientOrderId, reason: 'test' };
}

/**
 * A maker of data folders for a test file's venues, which outlive one venue (restarts on
 * the same data); every folder it made is removed when the file's tests end, unless
 * KEEP_TEST_DATA is set.
 */
export function dataDirs(): () => string {
  const made: string[] = [];
  after(() => {
    if (process.env.KEEP_TEST_DATA === undefined) for (const dir of made) VenueProcess.removeDataDir(dir);
  });
  return () => {
    const dir = VenueProcess.makeDataDir();
    made.push(dir);
    return dir;
  };
}

/** The URL of the embedded PostgreSQL the venue on `dir` runs (a new one at each start). */
export async function storageUrl(dir: string): Promise<string> {
  const url = await embeddedUrl(dir);
  if (url === null) throw new Error(`no embedded PostgreSQL runs on ${dir}`);
  return url;
}
