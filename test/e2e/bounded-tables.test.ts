// The shared idempotency and commandId tables are bounded (they forget their oldest
// entries). Once they have forgotten anything, or were reloaded after a restart with
// less than storage holds, storage decides: an old key still replays its original
// answer and an old commandId is still a conflict, before and after a restart.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { embeddedUrl, startEmbeddedPostgres } from '../../persistence/embedded-postgres.ts';
import { withClient } from '../support/database.ts';
import { createKeyFilter, KeyFilter } from '../../core/key-filter.ts';
import { intakeCommit, loadKeyFilters } from '../../persistence/key-filter-snapshot.ts';
import { intakeKeysSince, storedCommandKeys, storedOrderIds } from '../../persistence/recovery.ts';
import { shardOf } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';
import { clientOrderDigest, wordsOf } from '../../gateway/keys.ts';
import { cancelBody, cancelByClientOrderBody, submitBody, TOKENS, stopAfter, VenueProcess, type HttpAnswer } from '../support/venue-process.ts';
import { assertShape } from '../support/response-schemas.ts';
import { inParallel } from '../support/crash-checks.ts';

const INSTRUMENT = '8d000000-0000-4000-8000-000000000001';
const dir = VenueProcess.makeDataDir();
after(() => VenueProcess.removeDataDir(dir));
const FILTER_BITS = 1 << 20;
/**
 * Requests in flight at once where their order does not matter: a durable answer waits
 * for its group commit, so one at a time paid a commit per command (these tests took a
 * minute each); sixteen share them.
 */
const IN_FLIGHT = 16;
/** 0, 1, … n-1. */
const upTo = (n: number): number[] => Array.from({ length: n }, (_, k) => k);

/**
 * The key filters the last save wrote (a graceful stop, or a checkpoint while running),
 * with the keys of the intake records after its mark, hold every key storage holds: the
 * keys evicted into them, the keys the tables held at the save, and those taken after it.
 * Reads them as the next start would (the database's note stays). Returns the saved mark
 * and how many records came after it.
 */
async function everyStoredKeyIsSaved(dataDir: string): Promise<{ mark: string; takenAfter: number }> {
  const server = await startEmbeddedPostgres(dataDir, () => undefined); // the venue stopped its own
  try {
    return await withClient(server.url, async (client) => {
      const buffers = { idempotency: createKeyFilter(FILTER_BITS), commandIds: createKeyFilter(FILTER_BITS), orderDirectory: createKeyFilter(FILTER_BITS), clientOrders: createKeyFilter(FILTER_BITS) };
      const loaded = await loadKeyFilters(dataDir, client, buffers);
      assert.equal(typeof loaded, 'object', `the saved filters load (${String(loaded)})`);
      const { mark } = loaded as { mark: string };
      const [scopes, commandIds, orders, clientOrders] = [buffers.idempotency, buffers.commandIds, buffers.orderDirectory, buffers.clientOrders].map((buffer) => new KeyFilter(buffer));
      const takenAfter = await intakeKeysSince(client, intakeCommit(mark), (keys) => {
        scopes!.add(keys.scope, 0);
        commandIds!.add(keys.commandId, 0);
        if (keys.orderId !== null) orders!.add(keys.orderId, 0);
        if (keys.clientOrder !== null) clientOrders!.add(wordsOf(clientOrderDigest(keys.clientOrder.participantId, keys.clientOrder.clientOrderId)), 0);
      });
      let missing = 0;
      const commands = await storedCommandKeys(client, (scope, commandId) => {
        if (!scopes!.mightContain(scope, 0) || !commandIds!.mightContain(commandId, 0)) missing++;
      });
      const orderCount = await storedOrderIds(
        client,
        (orderId) => {
          if (!orders!.mightContain(orderId, 0)) missing++;
        },
        (participantId, clientOrderId) => {
          if (!clientOrders!.mightContain(wordsOf(clientOrderDigest(participantId, clientOrderId)), 0)) missing++;
        },
      );
      assert.ok(commands > 0 && orderCount > 0);
      assert.equal(missing, 0, `every stored key is in the saved filters or after their mark (${commands} commands, ${orderCount} orders; ${takenAfter} records after ${mark})`);
      return { mark, takenAfter };
    });
  } finally {
    await server.stop();
  }
}

test('a tiny table forgets, storage remembers: replays and conflicts hold across evictions and restarts', async () => {
  const env = { DATA_DIR: dir, SHARED_TABLE_BUCKETS: '16', KEY_FILTER_BITS: String(FILTER_BITS) }; // 128 entries per table
  let venue = await VenueProcess.start(env);
  const sent: { body: Record<string, unknown>; key: string; answer: HttpAnswer }[] = [];
  await stopAfter(
    () => venue,
    async () => {
      await inParallel(upTo(300), IN_FLIGHT, async (k) => {
        const body = submitBody({ instrumentId: INSTRUMENT, side: k % 2 === 0 ? 'BUY' : 'SELL', price: k % 2 === 0 ? '10' : '11', quantity: '1' });
        const key = `bounded-${k}`;
        const answer = await venue.order('/api/v1/orders/submit', body, { key });
        assert.equal(answer.status, 200);
        sent[k] = { body, key, answer };
      });
      const checkOld = async (label: string) => {
        // Every command: the two tables forget independently, so some keys are forgotten while
        // their commandId is still remembered (a replay must not turn into a commandId conflict).
        await inParallel(sent, IN_FLIGHT, async ({ body, key, answer }) => {
          const replay = await venue.order('/api/v1/orders/submit', body, { key });
          assert.deepEqual([replay.status, replay.text], [200, answer.text], `${label}: command ${key} replays its original answer`);
          const other = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT }), { key });
          assert.equal(other.status, 409, `${label}: its key with another payload is a conflict`);
          const reusedId = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT }), commandId: body.commandId }, { key: `${key}-again` });
          assert.equal(reusedId.status, 409, `${label}: its commandId under another key is a conflict`);
          assert.match(reusedId.json.error, /commandId/);
        });
        const fresh = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT, price: '5' }));
        assert.equal(fresh.status, 200, `${label}: new commands are still taken`);
      };
      await checkOld('after evictions');
      assert.equal(await venue.stop(), 0);
      assert.match(venue.log, /key filters saved for the next start/);
      const stop = await everyStoredKeyIsSaved(dir);
      assert.equal(stop.takenAfter, 0, "nothing after a graceful stop's mark");

      // The filters saved at the stop, not a scan of storage; the commands the tables held
      // at the stop (all but 32 of them forgotten by this start) replay from storage too.
      venue = await VenueProcess.start(env);
      assert.ok(
        venue.log.includes(`"remembered":32,"storedKeys":-1,"storedOrders":-1,"takenAfter":0,"keyFilters":"saved at ${stop.mark}"`),
        'the tables hold the most recent, the key filters every stored command',
      );
      await checkOld('after a restart');
      await venue.untilProjected();
      await withClient((await embeddedUrl(dir))!, async (client) => {
        const rows = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM runtime.command_log');
        assert.equal(rows.rows[0]!.n, 302, 'the 300 commands and the two fresh ones, each once');
      });

      // After a crash the filters saved at the stop still serve, with the keys of every command taken after it.
      const crashed: { body: Record<string, unknown>; key: string; answer: HttpAnswer }[] = [];
      await inParallel(upTo(150), IN_FLIGHT, async (k) => {
        const body = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '3', quantity: '1' });
        const key = `crashed-${k}`;
        const answer = await venue.order('/api/v1/orders/submit', body, { key });
        assert.equal(answer.status, 200);
        crashed.push({ body, key, answer });
      });
      await venue.kill();
      const crash = await everyStoredKeyIsSaved(dir);
      assert.deepEqual(crash, { mark: stop.mark, takenAfter: 151 }, "the stop's mark; after it the fresh command and the 150 of the crashed run");
      venue = await VenueProcess.start(env);
      assert.ok(venue.log.includes(`"storedKeys":-1,"storedOrders":-1,"takenAfter":151,"keyFilters":"saved at ${stop.mark}"`), 'no scan of storage');
      await inParallel(crashed, IN_FLIGHT, async ({ body, key, answer }) => {
        const replay = await venue.order('/api/v1/orders/submit', body, { key });
        assert.deepEqual([replay.status, replay.text], [200, answer.text], 'a command of the crashed run replays its original answer');
      });
    },
  );
});

test('the order directory forgets, storage remembers: a reused orderId on another shard is a duplicate, a misquoted cancel is a context mismatch', async () => {
  const tinyDir = VenueProcess.makeDataDir();
  const venue = await VenueProcess.start({ DATA_DIR: tinyDir, SHARED_TABLE_BUCKETS: '16' }); // 128 orderIds remembered
  await stopAfter(
    () => venue,
    async () => {
      const home = instrumentOn(0);
      const elsewhere = instrumentOn(1);
      const first = submitBody({ instrumentId: home, side: 'BUY', price: '10', quantity: '1' });
      assert.equal((await venue.order('/api/v1/orders/submit', first)).status, 200);
      await inParallel(upTo(300), IN_FLIGHT, async () => {
        const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: home, side: 'BUY', price: '9', quantity: '1' }));
        assert.equal(answer.status, 200);
      });
      // The first orderId left the directory long ago; the shard of `elsewhere` never saw it.
      const reused = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: elsewhere, side: 'SELL', price: '11', quantity: '1' }), orderId: first.orderId });
      assert.equal(reused.status, 200);
      assert.equal(reused.json.outcome.rejected?.code, 'DUPLICATE_ORDER_ID', reused.text);
      // A cancel quoting the wrong instrument still reaches the order's shard: a mismatch, not "not found".
      const misquoted = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: first.orderId as string, instrumentId: elsewhere }));
      assert.equal(misquoted.json.outcome.rejected?.code, 'ORDER_CONTEXT_MISMATCH', misquoted.text);
      const cancel = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: first.orderId as string, instrumentId: home }));
      assert.ok(cancel.json.outcome.accepted !== undefined, cancel.text);
    },
    { after: () => VenueProcess.removeDataDir(tinyDir) },
  );
});

/** The key filters as GET /admin/v1/persistence/status shows them. */
async function filterReport(venue: VenueProcess): Promise<{ name: string; bits: number; ratedKeys: number; keys: number }[]> {
  const status = await venue.get('/admin/v1/persistence/status', TOKENS.operator);
  assert.equal(status.status, 200, status.text);
  assertShape('PersistenceStatus', status.json);
  return status.json.keyFilters;
}

/** A fresh instrument on the wanted shard of two. */
function instrumentOn(shard: number): string {
  for (;;) {
    const id = crypto.randomUUID();
    if (shardOf(uuidWords(id), 0, 2) === shard) return id;
  }
}

test("the clientOrderId table forgets, storage remembers: an open order's clientOrderId stays taken and cancel-by-client-order finds the newest order holding it, before and after a restart and a crash", async () => {
  const tinyDir = VenueProcess.makeDataDir();
  const env = { DATA_DIR: tinyDir, SHARED_TABLE_BUCKETS: '16' }; // 128 claims remembered
  let venue = await VenueProcess.start(env);
  await stopAfter(
    () => venue,
    async () => {
      const instrumentId = instrumentOn(0);
      const resting: Record<string, unknown>[] = [];
      await inParallel(upTo(300), IN_FLIGHT, async (k) => {
        const body = submitBody({ instrumentId, side: 'BUY', price: '9', quantity: '1', clientOrderId: `held-${k}` });
        const answer = await venue.order('/api/v1/orders/submit', body);
        assert.ok(answer.json.outcome.accepted !== undefined, answer.text);
        resting[k] = body;
      });
      const check = async (label: string, k: number) => {
        // The claims of the first orders left the table long ago; the orders are still open.
        const reused = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId, side: 'BUY', price: '8', quantity: '1', clientOrderId: `held-${k}` }));
        assert.equal(reused.json.outcome.rejected?.code, 'DUPLICATE_CLIENT_ORDER_ID', `${label}: ${reused.text}`);
        const cancelled = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody(`held-${k}`));
        assert.equal(cancelled.json.outcome.accepted?.orderId, resting[k]!.orderId, `${label}: ${cancelled.text}`);
        // Once that order is closed its clientOrderId is free again.
        const again = submitBody({ instrumentId, side: 'BUY', price: '8', quantity: '1', clientOrderId: `held-${k}` });
        const taken = await venue.order('/api/v1/orders/submit', again);
        assert.ok(taken.json.outcome.accepted !== undefined, `${label}: ${taken.text}`);
        return again.orderId;
      };
      const reused = await check('after evictions', 0);
      await check('after evictions', 1);
      assert.equal(await venue.stop(), 0);
      venue = await VenueProcess.start(env);
      await check('after a restart', 100); // the start reloads 32 open orders' claims, the first ones it reads
      await venue.kill();
      venue = await VenueProcess.start(env);
      await check('after a crash', 200);
      // Two orders of held-0 are stored, the first cancelled: the resolver follows the newest.
      const newest = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody('held-0'));
      assert.equal(newest.json.outcome.accepted?.orderId, reused, newest.text);
      const unknown = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody('never-used'));
      assert.equal(unknown.json.outcome.rejected?.code, 'ORDER_NOT_FOUND', unknown.text);
    },
    { after: () => VenueProcess.removeDataDir(tinyDir) },
  );
});

test('past their rated load the key filters still give no wrong answer (old commands replay, an old orderId is a duplicate, new ones are taken), and each warns once; the next start sizes them for the stored keys, up to KEY_FILTER_BITS_MAX', async () => {
  const tinyDir = VenueProcess.makeDataDir();
  // 128 entries per table and filters of 1024 bits, rated for 102 keys each: 300 commands
  // push each filter past its rated load, where its false positives grow (core/key-filter.ts).
  const venue = await VenueProcess.start({ DATA_DIR: tinyDir, SHARED_TABLE_BUCKETS: '16', KEY_FILTER_BITS: '1024' });
  const sent: { body: Record<string, unknown>; key: string; answer: HttpAnswer }[] = [];
  await stopAfter(
    () => venue,
    async () => {
      await inParallel(upTo(300), IN_FLIGHT, async (k) => {
        const body = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '7', quantity: '1' });
        const key = `overload-${k}`;
        const answer = await venue.order('/api/v1/orders/submit', body, { key });
        assert.equal(answer.status, 200, answer.text);
        sent[k] = { body, key, answer };
      });
      const warnings = async () => {
        for (let waited = 0; ; waited += 50) {
          const found = venue.log.split('\n').filter((line) => line.includes('a key filter holds more keys than it is rated for'));
          if (found.length >= 3 || waited >= 2000) return found.map((line) => JSON.parse(line) as { filter: string; added: number; ratedKeys: number });
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      const first = await warnings();
      assert.deepEqual(first.map((w) => w.filter).sort(), ['commandIds', 'idempotency', 'orderIds'], 'each filter says it once');
      for (const warning of first) assert.ok(warning.ratedKeys === 102 && warning.added > 102, JSON.stringify(warning));
      await inParallel(sent, IN_FLIGHT, async ({ body, key, answer }) => {
        const replay = await venue.order('/api/v1/orders/submit', body, { key });
        assert.deepEqual([replay.status, replay.text], [200, answer.text], `${key} replays its original answer`);
      });
      const reused = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '7', quantity: '1' }), orderId: sent[0]!.body.orderId });
      assert.equal(reused.json.outcome.rejected?.code, 'DUPLICATE_ORDER_ID', reused.text);
      const fresh = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '7', quantity: '1' }));
      assert.ok(fresh.status === 200 && fresh.json.outcome.accepted !== undefined, fresh.text);
      assert.equal((await warnings()).length, 3, 'and only once');
      // Operators see the filters' size, rating and load.
      const overloaded = await filterReport(venue);
      assert.deepEqual(
        overloaded.map((f) => [f.name, f.bits, f.ratedKeys]),
        [
          ['idempotency', 1024, 102],
          ['commandIds', 1024, 102],
          ['orderIds', 1024, 102],
          ['clientOrderIds', 1024, 102],
        ],
      );
      for (const filter of overloaded.slice(0, 3)) assert.ok(filter.keys > 102 && filter.keys <= 303, JSON.stringify(filter));
      assert.equal(overloaded[3]!.keys, 0, 'no order had a clientOrderId');
    },
  );
  // The next start sizes the filters for what storage holds (302 commands and orders: 8192
  // bits, rated for 819 keys), up to KEY_FILTER_BITS_MAX, and scans storage into them.
  const sizedStart = async (env: Record<string, string>) => {
    const restarted = await VenueProcess.start({ DATA_DIR: tinyDir, SHARED_TABLE_BUCKETS: '16', KEY_FILTER_BITS: '1024', ...env });
    const sized = restarted.log.split('\n').find((line) => line.includes('"keyFilterBits":'));
    assert.ok(sized !== undefined, restarted.log);
    assert.match(sized, /"storedKeys":302,/, 'sized for the 300 commands and the two after them');
    assert.match(restarted.log, /"keyFilters":"scanned \(the filters' shape changed/, 'the filters saved at the stop are of another size');
    return { restarted, sized: JSON.parse(sized) as { keyFilterBits: number; msg: string } };
  };
  const capped = await sizedStart({ KEY_FILTER_BITS_MAX: '2048' });
  await stopAfter(
    () => capped.restarted,
    async () => {
      assert.equal(capped.sized.keyFilterBits, 2048);
      assert.match(capped.sized.msg, /at KEY_FILTER_BITS_MAX and rated for less than twice the stored keys/);
    },
  );
  const { restarted, sized } = await sizedStart({});
  await stopAfter(
    () => restarted,
    async () => {
      assert.equal(sized.keyFilterBits, 8192);
      assert.match(sized.msg, /key filters sized for the stored keys/);
      await inParallel(sent, IN_FLIGHT, async ({ body, key, answer }) => {
        const replay = await restarted.order('/api/v1/orders/submit', body, { key });
        assert.deepEqual([replay.status, replay.text], [200, answer.text], `${key} replays its original answer after the restart`);
      });
      // 300 replays take far longer than the 50 ms between the watch's looks: filters of 1024
      // bits holding these keys would have warned by now.
      assert.doesNotMatch(restarted.log, /a key filter holds more keys than it is rated for/);
      for (const filter of await filterReport(restarted)) {
        const keys = filter.name === 'clientOrderIds' ? filter.keys === 0 : filter.keys >= 300 && filter.keys <= 819; // no order had a clientOrderId
        assert.ok(filter.bits === 8192 && filter.ratedKeys === 819 && keys, JSON.stringify(filter));
      }
    },
    { after: () => VenueProcess.removeDataDir(tinyDir) },
  );
});

// A crash with the projections behind the journal: the start materializes what they lack
// while it reads storage (beside the replay), and then the tables learn those commands by
// id (a second pass over all of storage cost 1.5 s with a million stored orders; holding
// the one pass until the catch-up, 2.5-4 s more).
test('after a crash with the projections behind the journal, the commands the start projects are learned by id after its one pass over storage: each replays its answer', async () => {
  const crashDir = VenueProcess.makeDataDir();
  const env = { DATA_DIR: crashDir, SHARED_TABLE_BUCKETS: '16', KEY_FILTER_BITS: String(FILTER_BITS) }; // the tables keep 32
  let venue = await VenueProcess.start(env);
  await stopAfter(
    () => venue,
    async () => {
      for (let k = 0; k < 20; k++) {
        const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT, side: 'SELL', price: '50', quantity: '1' }), { key: `projected-${k}` });
        assert.equal(answer.status, 200);
      }
      await venue.untilProjected();
      // The command log locked: the journal takes the commands (and they are answered), the projections wait.
      const locker = new (await import('pg')).default.Client({ connectionString: (await embeddedUrl(crashDir))! });
      locker.on('error', () => undefined); // the next start shuts the orphaned server down, and this session with it
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE runtime.command_log IN ACCESS EXCLUSIVE MODE');
      const behind: { body: Record<string, unknown>; key: string; answer: HttpAnswer }[] = [];
      await inParallel(upTo(100), IN_FLIGHT, async (k) => {
        const body = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '3', quantity: '1' });
        const key = `behind-${k}`;
        const answer = await venue.order('/api/v1/orders/submit', body, { key });
        assert.equal(answer.status, 200, answer.text);
        behind.push({ body, key, answer });
      });
      const lag = await venue.get('/admin/v1/persistence/status', TOKENS.operator);
      assert.ok(
        (lag.json as { shards: { projectionLag: number }[] }).shards.some((shard) => shard.projectionLag > 0),
        'the projections are behind at the crash',
      );
      await venue.kill();
      await locker.end().catch(() => undefined);

      venue = await VenueProcess.start(env);
      const loaded = /"projectedBatches":(\d+)/.exec(venue.log);
      assert.ok(loaded !== null && Number(loaded[1]) > 0, 'the start projected what the crash left');
      const passes = venue.log.match(/the key filters hold every stored one/g) ?? [];
      assert.equal(passes.length, 1, 'one pass over storage');
      assert.match(venue.log, /"remembered":\d+,"storedKeys":\d+,"storedOrders":\d+,"takenAfter":-1,"keyFilters":"scanned \(no saved key filters noted in the database\)"/);
      assert.match(venue.log, /"commands":100,"orders":100,"msg":"the commands the start put in storage, and their orders, learned by the shared tables"/);
      await inParallel(behind, IN_FLIGHT, async ({ body, key, answer }) => {
        const replay = await venue.order('/api/v1/orders/submit', body, { key });
        assert.deepEqual([replay.status, replay.text], [200, answer.text], `${key} replays its original answer`);
        const reusedId = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT }), commandId: body.commandId }, { key: `${key}-again` });
        assert.equal(reusedId.status, 409, `${key}: its commandId under another key is a conflict`);
      });
      await venue.untilProjected();
      await withClient((await embeddedUrl(crashDir))!, async (client) => {
        const rows = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM runtime.command_log');
        assert.equal(rows.rows[0]!.n, 120, 'each command once: none ran again');
      });
    },
    { after: () => VenueProcess.removeDataDir(crashDir) },
  );
});

test('while running, the key filters are saved every KEY_FILTER_CHECKPOINT_COMMANDS commands: after a crash the last save and the intake records after it hold every stored key, with no scan of storage', async () => {
  const checkpointDir = VenueProcess.makeDataDir();
  // The tables keep 128 entries each, and forget the rest into the filters; a save every 60 commands.
  const env = { DATA_DIR: checkpointDir, SHARED_TABLE_BUCKETS: '16', KEY_FILTER_BITS: String(FILTER_BITS), KEY_FILTER_CHECKPOINT_COMMANDS: '60' };
  let venue = await VenueProcess.start(env);
  await stopAfter(
    () => venue,
    async () => {
      const sent: { body: Record<string, unknown>; key: string; answer: HttpAnswer }[] = [];
      const saves = () => venue.log.match(/key filters saved \(a checkpoint while running\)/g)?.length ?? 0;
      const send = async (k: number) => {
        // Resting orders, some with a clientOrderId (its claim is in the fourth table and filter).
        const body = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '2', quantity: '1', ...(k % 3 === 0 ? { clientOrderId: `kept-${k}` } : {}) });
        const key = `checkpointed-${k}`;
        const answer = await venue.order('/api/v1/orders/submit', body, { key });
        assert.equal(answer.status, 200, answer.text);
        sent[k] = { body, key, answer };
      };
      // Batches of 60 until three saves were seen, at most ten: a save begins at most once every
      // 60 commands and not while the one before runs, so how many 300 commands at once saw
      // depended on the machine's speed (two, at times, and then none came while the test waited).
      let sentCount = 0;
      for (let batch = 0; batch < 10 && saves() < 3; batch++) {
        const before = saves();
        await inParallel(
          upTo(60).map((n) => sentCount + n),
          IN_FLIGHT,
          send,
        );
        sentCount += 60;
        const deadline = Date.now() + 5_000;
        while (saves() === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(saves() >= 3, `saved while running (${saves()} times)`);
      await inParallel(
        upTo(100).map((n) => sentCount + n),
        IN_FLIGHT,
        send,
      ); // the intake after the last save
      await venue.kill();
      const saved = await everyStoredKeyIsSaved(checkpointDir);
      assert.ok(intakeCommit(saved.mark) > 0 && saved.takenAfter > 0 && saved.takenAfter < 400, `a save while running, the intake after it (${saved.takenAfter} records after ${saved.mark})`);

      // Restarted with saves 8 times as far apart as the tail is long: the tail is an eighth of
      // the interval, which makes a save at once (before any command: a crash now would not
      // read it again), though it is far from a save's count.
      venue = await VenueProcess.start({ ...env, KEY_FILTER_CHECKPOINT_COMMANDS: String(8 * saved.takenAfter) });
      assert.ok(venue.log.includes(`"storedKeys":-1,"storedOrders":-1,"takenAfter":${saved.takenAfter},"keyFilters":"saved at ${saved.mark}"`), 'the save and the records after it, no scan');
      await venue.untilLogged(/key filters saved \(a checkpoint while running\)/);
      const resaved = /"mark":"([^"]*)"[^\n]*key filters saved \(a checkpoint while running\)/.exec(venue.log)![1]!;
      assert.ok(intakeCommit(resaved) > intakeCommit(saved.mark), `saved past the tail the start read (at ${resaved}, the last save at ${saved.mark})`);
      await inParallel(sent, IN_FLIGHT, async ({ body, key, answer }) => {
        const replay = await venue.order('/api/v1/orders/submit', body, { key });
        assert.deepEqual([replay.status, replay.text], [200, answer.text], `${key} replays its original answer`);
        const reusedId = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT }), commandId: body.commandId }, { key: `${key}-again` });
        assert.equal(reusedId.status, 409, `${key}: its commandId under another key is a conflict`);
        const reusedOrder = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT }), orderId: body.orderId });
        assert.equal(reusedOrder.json.outcome.rejected?.code, 'DUPLICATE_ORDER_ID', `${key}: its orderId is taken`);
        if (body.clientOrderId !== undefined) {
          const reusedClientOrder = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT }), clientOrderId: body.clientOrderId });
          assert.equal(reusedClientOrder.json.outcome.rejected?.code, 'DUPLICATE_CLIENT_ORDER_ID', `${key}: its clientOrderId is held by an open order`);
        }
      });
    },
    { after: () => VenueProcess.removeDataDir(checkpointDir) },
  );
});
