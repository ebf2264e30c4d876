// Database faults under a running venue on a PostgreSQL it does not own (DATABASE_URL),
// with a bounded concurrent order load in all four processing modes:
//  - PostgreSQL stopped (fast shutdown) for a while, then started again;
//  - PostgreSQL made slow: a transaction holds an ACCESS EXCLUSIVE lock on a tier-1 table
//    (journal_batches, then intake_batches) for seconds, under a burst of extra commands
//    and with a journal ring small enough that the shards fill it and wait;
//  - PostgreSQL restarted (stop, start at once) under load.
// The clients behave as real ones: a 503 is retried after its Retry-After with the same
// Idempotency-Key and body. Every request is answered within the venue's bound
// (DURABLE_WAIT_MS, plus scheduling slack), every 503 carries Retry-After and the error
// body, the venue resumes by itself, and afterwards nothing acknowledged is lost and
// nothing is duplicated: every command has one terminal outcome, equal to its answer and
// to its replay, is on the committed journal exactly once, the trades table holds exactly
// the journal's trades, and the books equal an independent replay of the journal.

import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import { EVENT_TRADE } from '../../core/codes.ts';
import { shardOf } from '../../core/shard-map.ts';
import { isUuid, uuidWords } from '../../core/uuid.ts';
import { TestDatabase, withClient } from '../support/database.ts';
import { committedHistory, replayHistory } from '../support/journal.ts';
import { assertShape } from '../support/response-schemas.ts';
import { cancelBody, submitBody, TOKENS, TRADER_A, TRADER_B, stopAfter, VenueProcess } from '../support/venue-process.ts';

const SHARDS = 2;
const MODES = ['sync-result', 'captured-ack', 'stream-ack', 'accepted-async'] as const;
type Mode = (typeof MODES)[number];
/** The venue's bound on how long an answer may wait for durability (then 503 + Retry-After). */
const DURABLE_WAIT_MS = 1000;
/** The bound every request is held to: the durable wait, its 50 ms check, and scheduling on a loaded 2-core machine. */
const ANSWER_BOUND_MS = DURABLE_WAIT_MS + 1500;
/** A request not answered by then counts as hung (and fails the test). */
const HANG_MS = 30_000;
const WORKERS = 12; // three clients per mode
const MAX_COMMANDS = 1500; // per fault, across workers (bounded load)
const TERMINAL = new Set(['COMPLETED', 'REJECTED']);

/** Two instruments on each shard. */
const INSTRUMENTS: string[] = (() => {
  const chosen: string[] = [];
  const perShard = new Array<number>(SHARDS).fill(0);
  for (let n = 1; chosen.length < 2 * SHARDS; n++) {
    const id = `d8000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
    const shard = shardOf(uuidWords(id), 0, SHARDS);
    if (perShard[shard]! < 2) {
      perShard[shard]!++;
      chosen.push(id);
    }
  }
  return chosen;
})();

interface Attempt {
  status: number; // 0: not answered within HANG_MS
  text: string;
  retryAfter: string | null;
  ms: number;
}

interface Command {
  path: string;
  body: Record<string, unknown>;
  key: string;
  token: string;
  mode: Mode;
  attempts: Attempt[];
  /** The acknowledgement (200/202) it ended with. */
  final: Attempt | null;
}

let database: TestDatabase;
before(async () => {
  database = await TestDatabase.start();
});
after(async () => {
  await database.remove();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function send(venue: VenueProcess, command: Command): Promise<Attempt> {
  const started = performance.now();
  let attempt: Attempt;
  try {
    const response = await fetch(`${venue.baseUrl}${command.path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${command.token}`,
        'content-type': 'application/json',
        'x-client-id': 'fault-client',
        'idempotency-key': command.key,
        'x-processing-mode': command.mode,
      },
      body: JSON.stringify(command.body),
      signal: AbortSignal.timeout(HANG_MS),
    });
    const text = await response.text();
    attempt = { status: response.status, text, retryAfter: response.headers.get('retry-after'), ms: performance.now() - started };
  } catch {
    attempt = { status: 0, text: '', retryAfter: null, ms: performance.now() - started };
  }
  command.attempts.push(attempt);
  if (attempt.status === 200 || attempt.status === 202) command.final = attempt;
  return attempt;
}

/** Sends a command and, like a client, retries its 503s after Retry-After with the same key and body, while `until` allows. */
async function sendWithRetries(venue: VenueProcess, command: Command, until: () => boolean): Promise<void> {
  for (;;) {
    const attempt = await send(venue, command);
    if (attempt.status !== 503 || !until()) return;
    await sleep(Number(attempt.retryAfter ?? '1') * 1000);
    if (!until()) return;
  }
}

const TRADERS = [
  { token: TOKENS.traderA, participantId: TRADER_A.participantId, accountId: TRADER_A.accountId },
  { token: TOKENS.traderB, participantId: TRADER_B.participantId, accountId: TRADER_B.accountId },
];

/** A random submit (prices cross, so trades happen), or a cancel of an order this load had acknowledged. */
function nextCommand(mode: Mode, placed: { orderId: string; instrumentId: string; trader: number }[]): Command {
  if (placed.length > 0 && Math.random() < 0.15) {
    const target = placed.splice(Math.floor(Math.random() * placed.length), 1)[0]!;
    const trader = TRADERS[target.trader]!;
    return {
      path: '/api/v1/orders/cancel',
      body: cancelBody({ orderId: target.orderId, instrumentId: target.instrumentId, participantId: trader.participantId, accountId: trader.accountId }),
      key: crypto.randomUUID(),
      token: trader.token,
      mode,
      attempts: [],
      final: null,
    };
  }
  const traderIndex = Math.floor(Math.random() * 2);
  const trader = TRADERS[traderIndex]!;
  const instrumentId = INSTRUMENTS[Math.floor(Math.random() * INSTRUMENTS.length)]!;
  const side = Math.random() < 0.5 ? 'BUY' : 'SELL';
  const price = (98 + Math.floor(Math.random() * 9) * 0.5).toFixed(1);
  const body = submitBody({
    instrumentId,
    side,
    price,
    quantity: String(1 + Math.floor(Math.random() * 10)),
    timeInForce: Math.random() < 0.1 ? 'IOC' : 'DAY',
    participantId: trader.participantId,
    accountId: trader.accountId,
  });
  return { path: '/api/v1/orders/submit', body, key: crypto.randomUUID(), token: trader.token, mode, attempts: [], final: null };
}

/** The order load: WORKERS clients, each with one command at a time, until stop() (or MAX_COMMANDS). */
class Load {
  readonly commands: Command[] = [];
  private running = true;
  private readonly done: Promise<void[]>;

  constructor(private readonly venue: VenueProcess) {
    this.done = Promise.all(Array.from({ length: WORKERS }, (_, k) => this.worker(MODES[k % MODES.length]!)));
  }

  private async worker(mode: Mode): Promise<void> {
    const placed: { orderId: string; instrumentId: string; trader: number }[] = [];
    while (this.running && this.commands.length < MAX_COMMANDS) {
      const command = nextCommand(mode, placed);
      this.commands.push(command);
      await sendWithRetries(this.venue, command, () => this.running);
      if (command.final !== null && command.path.endsWith('/submit')) {
        const body = command.body;
        placed.push({ orderId: body.orderId as string, instrumentId: body.instrumentId as string, trader: body.participantId === TRADER_A.participantId ? 0 : 1 });
      }
    }
  }

  /** A burst of distinct commands at once (bounded): what many clients arriving together look like. Their first answers. */
  burst(count: number): Promise<Attempt[]> {
    const commands = Array.from({ length: count }, (_, k) => nextCommand(MODES[k % MODES.length]!, []));
    this.commands.push(...commands);
    return Promise.all(commands.map((command) => send(this.venue, command)));
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

async function untilReady(venue: VenueProcess, timeoutMs = 30_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    if ((await venue.get('/readyz')).status === 200) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error('the venue did not become ready again');
    await sleep(50);
  }
}

/** One fresh command per mode, on its first attempt: the venue takes orders again. */
async function probe(venue: VenueProcess, commands: Command[]): Promise<void> {
  for (const mode of MODES) {
    const command = nextCommand(mode, []);
    commands.push(command);
    const answer = await send(venue, command);
    assert.equal(answer.status, mode === 'sync-result' ? 200 : 202, `a new ${mode} command is acknowledged after the fault: ${answer.text}`);
  }
}

interface Figures {
  commands: number;
  requests: number;
  answered503: number;
  maxWaitMs: number;
}

/**
 * After a fault: every request answered within the bound with a contract answer, every
 * command retried to one acknowledgement, and nothing lost or duplicated.
 */
async function verify(t: TestContext, venue: VenueProcess, url: string, commands: Command[], fault: string): Promise<Figures> {
  // Clients retry what is still unanswered with the same key, now that the venue is back.
  for (const command of commands) {
    for (let attempt = 0; command.final === null && attempt < 60; attempt++) {
      const answer = await send(venue, command);
      if (answer.status === 503) await sleep(250);
    }
  }
  const attempts = commands.flatMap((command) => command.attempts);
  let answered503 = 0;
  let maxWaitMs = 0;
  for (const command of commands) {
    for (const attempt of command.attempts) {
      maxWaitMs = Math.max(maxWaitMs, attempt.ms);
      assert.notEqual(attempt.status, 0, `${fault}: a ${command.mode} request was not answered within ${HANG_MS} ms`);
      assert.ok(attempt.ms <= ANSWER_BOUND_MS, `${fault}: a ${command.mode} request waited ${Math.round(attempt.ms)} ms (bound ${ANSWER_BOUND_MS}): ${attempt.status} ${attempt.text}`);
      if (attempt.status === 503) {
        answered503++;
        assert.match(attempt.retryAfter ?? '', /^[1-9][0-9]*$/, `${fault}: a 503 carries Retry-After`);
        const body = JSON.parse(attempt.text);
        assertShape('Error', body);
        assert.ok(['UNAVAILABLE', 'OVERLOADED'].includes(body.code), `${fault}: 503 code ${body.code}`);
        assert.deepEqual(
          Object.keys(body).filter((key) => !['error', 'code', 'details', 'requestId'].includes(key)),
          [],
        );
        assert.ok(isUuid(body.requestId), `${fault}: a 503 quotes the request id its cause is logged under: ${attempt.text}`);
        assert.equal(typeof body.error, 'string');
      } else {
        // Never a 409 for a retry, never a 500: either the acknowledgement of its mode or a 503.
        assert.equal(attempt.status, command.mode === 'sync-result' ? 200 : 202, `${fault}: ${command.mode} answered ${attempt.status} ${attempt.text}`);
        assertShape(attempt.status === 200 ? 'ResultEnvelope' : 'AcceptedPointer', JSON.parse(attempt.text));
      }
    }
    assert.ok(command.final !== null, `${fault}: a ${command.mode} command was acknowledged once retried`);
    // Exactly one acknowledgement per command: the retries stop at it.
    assert.equal(command.attempts.filter((attempt) => attempt.status !== 503).length, 1);
  }

  await venue.untilProjected(20_000);
  // Every acknowledged command: terminal, its answer recorded, and a replay repeats it byte for byte.
  for (const command of commands) {
    const final = command.final!;
    const view = (await venue.get(`/api/v1/commands/${command.body.commandId as string}`, TOKENS.operator)).json;
    assert.ok(TERMINAL.has(view.status), `${fault}: an acknowledged command is terminal (${view.status})`);
    assert.equal(view.canonicalMaterialized, true);
    assert.equal(view.responseStatus, final.status);
    assert.equal(view.responsePayloadJson, final.text, `${fault}: the recorded answer is the one the client got`);
    const replay = await send(venue, { ...command, attempts: [] });
    assert.equal(replay.status, final.status);
    assert.equal(replay.text, final.text, `${fault}: a replay repeats the acknowledgement byte for byte`);
  }

  await withClient(url, async (client) => {
    const history = await committedHistory(client, SHARDS);
    const journaled = history.flat();
    const ids = journaled.map((command) => command.commandId);
    assert.equal(new Set(ids).size, ids.length, `${fault}: every command is on the journal once (no duplicate)`);
    const sent = commands.map((command) => command.body.commandId as string);
    assert.deepEqual([...ids].sort(), [...sent].sort(), `${fault}: the journal holds exactly the commands sent (none lost, none extra)`);
    const logged = (await client.query<{ id: string }>('SELECT command_id AS id FROM runtime.command_log')).rows.map((row) => row.id);
    assert.deepEqual(logged.sort(), [...sent].sort(), `${fault}: the command log holds each command once`);

    // Trades: exactly the journal's, and every trade a sync-result answer reported.
    const journalTrades = journaled.flatMap((command) => command.events.filter((event) => event.kind === EVENT_TRADE));
    assert.ok(journalTrades.length > 0, 'the load traded');
    const stored = await client.query<{ n: string; distinct: string }>('SELECT count(*) AS n, count(DISTINCT trade_id) AS distinct FROM runtime.trades');
    assert.equal(Number(stored.rows[0]!.n), journalTrades.length, `${fault}: no trade lost or duplicated`);
    assert.equal(stored.rows[0]!.distinct, stored.rows[0]!.n);
    const tradeIds = new Set((await client.query<{ id: string }>('SELECT trade_id AS id FROM runtime.trades')).rows.map((row) => row.id));
    for (const command of commands) {
      if (command.final!.status !== 200) continue;
      for (const trade of JSON.parse(command.final!.text).trades) assert.ok(tradeIds.has(trade.tradeId), `${fault}: answered trade ${trade.tradeId} is stored`);
    }

    // The books: an independent replay of the committed journal, against the lifecycle projection and the venue's depth.
    const engines = replayHistory(history);
    const open = new Map(
      (
        await client.query<{ id: string; remaining: string }>(
          "SELECT order_id AS id, remaining_quantity_units AS remaining FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')",
        )
      ).rows.map((row) => [row.id, Number(row.remaining)]),
    );
    const expected = new Map<string, number>();
    for (const instrument of INSTRUMENTS) {
      const engine = engines[shardOf(uuidWords(instrument), 0, SHARDS)]!;
      const depth = (await venue.get(`/api/v1/market-data/depth/${instrument}?levels=50`, TOKENS.viewer)).json;
      for (const side of ['BUY', 'SELL'] as const) {
        const resting = engine.book(side, instrument);
        for (const order of resting) expected.set(order.orderId, order.leaves);
        const levels: [string, string, number][] = [];
        for (const order of resting) {
          const last = levels[levels.length - 1];
          if (last !== undefined && last[0] === String(order.priceNanos)) {
            last[1] = String(Number(last[1]) + order.leaves);
            last[2]++;
          } else levels.push([String(order.priceNanos), String(order.leaves), 1]);
        }
        const shown = (side === 'BUY' ? depth.bids : depth.asks).map((level: any) => [level.price.nanos, level.quantity.units, level.orderCount]);
        assert.deepEqual(shown, levels, `${fault}: the ${side} depth of ${instrument} equals the replayed book`);
      }
    }
    assert.ok(expected.size > 0, 'orders rest');
    assert.deepEqual(open, expected, `${fault}: order_lifecycle_state holds the replayed books`);
  });

  const figures = { commands: commands.length, requests: attempts.length, answered503, maxWaitMs: Math.round(maxWaitMs) };
  t.diagnostic(`${fault}: ${JSON.stringify(figures)}`);
  return figures;
}

test('the test instruments spread over both shards', () => {
  assert.equal(new Set(INSTRUMENTS.map((id) => shardOf(uuidWords(id), 0, SHARDS))).size, SHARDS);
});

/**
 * A fresh database and venue (with `env`), the load running, then `fault` (which ends
 * once the venue is serving again), then the load stopped, a probe per mode, and every
 * check of verify(); the clients must have seen the fault as 503s, or, where `brief`
 * (a restart can be over within DURABLE_WAIT_MS on a fast machine: every answer then
 * waits it out), the venue must have seen it as a failed commit.
 */
async function faultUnderLoad(t: TestContext, name: string, env: Record<string, string>, fault: (venue: VenueProcess, url: string, load: Load) => Promise<void>, brief = false): Promise<void> {
  const url = await database.freshDatabase();
  const venue = await VenueProcess.start({ DATABASE_URL: url, DURABLE_WAIT_MS: String(DURABLE_WAIT_MS), ...env });
  await stopAfter(
    () => venue,
    async () => {
      const load = new Load(venue);
      await sleep(700);
      await fault(venue, url, load);
      await load.stop();
      await probe(venue, load.commands);
      const figures = await verify(t, venue, url, load.commands, name);
      if (brief && figures.answered503 === 0) assert.match(venue.log, /journal commit failed; retrying/, `${name}: the venue saw the fault`);
      else assert.ok(figures.answered503 > 0, `${name}: the fault was seen by the clients as 503s`);
    },
  );
}

test('PostgreSQL stopped while orders flow, then started: 503 + Retry-After within the bound, resume without a restart, nothing lost or duplicated', (t) =>
  faultUnderLoad(t, 'stopped', {}, async (venue) => {
    await database.stopServer();
    // While it is away: not ready, and every order command is refused with a retry hint.
    await sleep(300);
    const ready = await venue.get('/readyz');
    assert.equal(ready.status, 503);
    assert.equal(ready.headers.get('retry-after'), '1');
    await sleep(2000);
    await database.startServer();
    await untilReady(venue);
    await sleep(700);
  }));

// A journal ring of 64 records: the shards fill it while the commit is stuck and wait for it.
test('PostgreSQL slow (a tier-1 table locked for seconds) under load and a burst, with full journal rings: answered within the bound, resumed after', (t) =>
  faultUnderLoad(t, 'locked', { JOURNAL_RING_SLOTS: '64' }, async (venue, url, load) => {
    for (const table of ['runtime.journal_batches', 'runtime.intake_batches']) {
      await withClient(url, async (client) => {
        await client.query('BEGIN');
        await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
        // The lock is held for 3 s and until every request of the burst is answered: an
        // answer that waited for the database would wait for ever (until HANG_MS fails it).
        // Nothing can become durable meanwhile, so each of them must be a 503.
        const [burst] = await Promise.all([load.burst(150), sleep(3000)]);
        await client.query('COMMIT');
        assert.deepEqual(
          burst.filter((answer) => answer.status !== 503).map((answer) => [answer.status, answer.text]),
          [],
          `${table} locked: nothing is acknowledged`,
        );
      });
      await sleep(500);
    }
    assert.equal((await venue.get('/readyz')).status, 200);
    await sleep(500);
  }));

test('PostgreSQL restarted (stop, start at once) under load: resume without a restart, nothing lost or duplicated', (t) =>
  faultUnderLoad(
    t,
    'restarted',
    {},
    async (venue) => {
      await database.stopServer();
      await database.startServer();
      await untilReady(venue);
      await sleep(700);
    },
    true,
  ));
