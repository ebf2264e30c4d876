// The shared idempotency and commandId tables are bounded (they forget their oldest
// entries). Once they have forgotten anything, or were reloaded after a restart with
// less than storage holds, storage decides: an old key still replays its original
// answer and an old commandId is still a conflict, before and after a restart.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { embeddedUrl } from '../../persistence/embedded-postgres.ts';
import { withClient } from '../support/database.ts';
import { shardOf } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';
import { cancelBody, submitBody, VenueProcess, type HttpAnswer } from '../support/venue-process.ts';

const INSTRUMENT = '8d000000-0000-4000-8000-000000000001';
const dir = VenueProcess.makeDataDir();
after(() => VenueProcess.removeDataDir(dir));

test('a tiny table forgets, storage remembers: replays and conflicts hold across evictions and restarts', async () => {
  const env = { DATA_DIR: dir, SHARED_TABLE_BUCKETS: '16' }; // 128 entries per table
  let venue = await VenueProcess.start(env);
  const sent: { body: Record<string, unknown>; key: string; answer: HttpAnswer }[] = [];
  try {
    for (let k = 0; k < 300; k++) {
      const body = submitBody({ instrumentId: INSTRUMENT, side: k % 2 === 0 ? 'BUY' : 'SELL', price: k % 2 === 0 ? '10' : '11', quantity: '1' });
      const key = `bounded-${k}`;
      const answer = await venue.order('/api/v1/orders/submit', body, { key });
      assert.equal(answer.status, 200);
      sent.push({ body, key, answer });
    }
    const checkOld = async (label: string) => {
      // Every command: the two tables forget independently, so some keys are forgotten while
      // their commandId is still remembered (a replay must not turn into a commandId conflict).
      for (let k = 0; k < 300; k++) {
        const { body, key, answer } = sent[k]!;
        const replay = await venue.order('/api/v1/orders/submit', body, { key });
        assert.deepEqual([replay.status, replay.text], [200, answer.text], `${label}: command ${k} replays its original answer`);
        const other = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT }), { key });
        assert.equal(other.status, 409, `${label}: its key with another payload is a conflict`);
        const reusedId = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT }), commandId: body.commandId }, { key: `${key}-again` });
        assert.equal(reusedId.status, 409, `${label}: its commandId under another key is a conflict`);
        assert.match(reusedId.json.error, /commandId/);
      }
      const fresh = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT, price: '5' }));
      assert.equal(fresh.status, 200, `${label}: new commands are still taken`);
    };
    await checkOld('after evictions');
    assert.equal(await venue.stop(), 0);

    venue = await VenueProcess.start(env);
    assert.match(venue.log, /"remembered":32,"storedKeys":301,/, 'the tables hold the most recent, the key filters every stored command');
    await checkOld('after a restart');
    await venue.untilProjected();
    await withClient((await embeddedUrl(dir))!, async (client) => {
      const rows = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM runtime.command_log');
      assert.equal(rows.rows[0]!.n, 302, 'the 300 commands and the two fresh ones, each once');
    });
  } finally {
    assert.equal(await venue.stop(), 0);
  }
});

test('the order directory forgets, storage remembers: a reused orderId on another shard is a duplicate, a misquoted cancel is a context mismatch', async () => {
  const tinyDir = VenueProcess.makeDataDir();
  const venue = await VenueProcess.start({ DATA_DIR: tinyDir, SHARED_TABLE_BUCKETS: '16' }); // 128 orderIds remembered
  try {
    const home = instrumentOn(0);
    const elsewhere = instrumentOn(1);
    const first = submitBody({ instrumentId: home, side: 'BUY', price: '10', quantity: '1' });
    assert.equal((await venue.order('/api/v1/orders/submit', first)).status, 200);
    for (let k = 0; k < 300; k++) {
      const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: home, side: 'BUY', price: '9', quantity: '1' }));
      assert.equal(answer.status, 200);
    }
    // The first orderId left the directory long ago; the shard of `elsewhere` never saw it.
    const reused = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: elsewhere, side: 'SELL', price: '11', quantity: '1' }), orderId: first.orderId });
    assert.equal(reused.status, 200);
    assert.equal(reused.json.outcome.rejected?.code, 'DUPLICATE_ORDER_ID', reused.text);
    // A cancel quoting the wrong instrument still reaches the order's shard: a mismatch, not "not found".
    const misquoted = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: first.orderId as string, instrumentId: elsewhere }));
    assert.equal(misquoted.json.outcome.rejected?.code, 'ORDER_CONTEXT_MISMATCH', misquoted.text);
    const cancel = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: first.orderId as string, instrumentId: home }));
    assert.ok(cancel.json.outcome.accepted !== undefined, cancel.text);
  } finally {
    assert.equal(await venue.stop(), 0);
    VenueProcess.removeDataDir(tinyDir);
  }
});

/** A fresh instrument on the wanted shard of two. */
function instrumentOn(shard: number): string {
  for (;;) {
    const id = crypto.randomUUID();
    if (shardOf(uuidWords(id), 0, 2) === shard) return id;
  }
}
