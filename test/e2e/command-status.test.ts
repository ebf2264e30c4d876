// The command status view to the specification's letter, over HTTP against a real venue
// and PostgreSQL: a command that cannot be carried out ends FAILED with lastError; the
// view claims no more than storage holds; a cancel by clientOrderId is the normal cancel
// and reads the same from memory and from storage.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { commitCaptured } from '../support/captured-intake.ts';
import { cancelBody, cancelByClientOrderBody, dataDirs, stopAfter, storageUrl, submitBody, TOKENS, TRADER_B, VenueProcess } from '../support/venue-process.ts';

const INSTRUMENT = 'cb000000-0000-4000-8000-000000000001';
const SHARDS = 2; // test/support/venue-process.ts starts venues with MATCHING_SHARDS=2
const dataDir = dataDirs();

async function ready(venue: VenueProcess): Promise<void> {
  for (let k = 0; (await venue.get('/readyz')).status !== 200; k++) {
    assert.ok(k < 600, 'the venue never became ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('a submit of a session that ended before it was sequenced (re-driven after a crash) ends FAILED with lastError SESSION_ENDED; nothing of it trades', async () => {
  const dir = dataDir();
  let venue = await VenueProcess.start({ DATA_DIR: dir });
  await ready(venue);
  const rolled = await venue.request('POST', '/admin/v1/venue/sessions', { token: TOKENS.operator, body: '{"venueSessionId":"session-2"}' });
  assert.equal(rolled.status, 200, rolled.text);
  const resting = submitBody({ instrumentId: INSTRUMENT, side: 'SELL', price: '50', quantity: '6', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId });
  assert.equal((await venue.order('/api/v1/orders/submit', resting, { token: TOKENS.traderB })).status, 200);
  assert.equal(await venue.stop(), 0);

  // Captured (durably accepted, acknowledged) in session 1, never sequenced; session 1 has ended since.
  const late = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '50', quantity: '4' });
  await commitCaptured(dir, [{ submit: late, token: TOKENS.traderA, clientId: 'late', idempotencyKey: 'late-1', sessionNo: 1, shards: SHARDS }]);

  venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      const check = async (when: string) => {
        const view = await venue.get(`/api/v1/commands/${late.commandId as string}`, TOKENS.traderA);
        assert.equal(view.status, 200, view.text);
        assert.deepEqual([view.json.status, view.json.internalStatus, view.json.rejectCode, view.json.canonicalMaterialized], ['FAILED', 'FAILED', 'SESSION_ENDED', true], `${when}: ${view.text}`);
        assert.match(view.json.lastError, /^SESSION_ENDED: the venue session the order was stamped with ended before the order was sequenced/);
        assert.deepEqual(JSON.parse(view.json.resultPayloadJson).trades, [], 'nothing traded');
      };
      await check('from memory after the re-drive');
      const book = await venue.get(`/api/v1/market-data/depth/${INSTRUMENT}`, TOKENS.viewer);
      assert.deepEqual(
        book.json.asks.map((level: any) => level.quantity.units),
        ['6'],
        'the resting sell is whole',
      );
      const own = await venue.get(`/api/v1/orders/history?instrumentId=${INSTRUMENT}`, TOKENS.traderA);
      assert.deepEqual(own.json.rows, [], 'no order was created');
      await venue.untilProjected();
      assert.equal(await venue.stop(), 0);
      venue = await VenueProcess.start({ DATA_DIR: dir });
      await ready(venue);
      await check('from storage after a restart');
    },
  );
});

test('a status read claims no more than is durable: while storage holds nothing of a command the read waits, then answers 503; once durable it tells', async () => {
  const dir = dataDir();
  const venue = await VenueProcess.start({ DATA_DIR: dir, DURABLE_WAIT_MS: '1500' });
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT, price: '1' })); // the instrument exists
      const locker = new pg.Client({ connectionString: await storageUrl(dir) });
      await locker.connect();
      let released = false;
      try {
        // Tier 1 cannot commit: nothing new is durable.
        await locker.query('BEGIN; LOCK TABLE runtime.intake_batches IN SHARE MODE');
        const body = submitBody({ instrumentId: INSTRUMENT, price: '2' });
        const answer = venue.order('/api/v1/orders/submit', body, { mode: 'captured-ack' }); // answered once its intake record is committed
        await new Promise((resolve) => setTimeout(resolve, 200)); // taken, matched, not durable
        const started = Date.now();
        const early = await venue.get(`/api/v1/commands/${body.commandId as string}`, TOKENS.traderA);
        assert.equal(early.status, 503, `nothing durable yet, so no status word: ${early.text}`);
        assert.equal(early.json.error, 'the command is not durably accepted yet; retry shortly');
        assert.ok(Date.now() - started >= 1_000, 'the read waited for durability first');
        assert.equal((await answer).status, 503, 'its own answer was not given either');
        await locker.query('COMMIT');
        released = true;
        for (let k = 0; ; k++) {
          const view = await venue.get(`/api/v1/commands/${body.commandId as string}`, TOKENS.traderA);
          if (view.status === 200 && view.json.status === 'COMPLETED') {
            assert.equal(view.json.canonicalMaterialized, true);
            break;
          }
          assert.ok(k < 200 && (view.status === 503 || ['ACCEPTED', 'IN_FLIGHT'].includes(view.json.status)), view.text);
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      } finally {
        if (!released) await locker.query('ROLLBACK').catch(() => undefined);
        await locker.end();
      }
    },
  );
});

test('a cancel by clientOrderId is the normal cancel of the order it resolves to, and its status view reads the same from memory and from storage', async () => {
  const dir = dataDir();
  let venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      const placed = submitBody({ instrumentId: INSTRUMENT, price: '7', clientOrderId: 'resolve-me' });
      assert.equal((await venue.order('/api/v1/orders/submit', placed)).status, 200);
      const byClient = cancelByClientOrderBody('resolve-me');
      const answer = await venue.order('/api/v1/orders/cancel-by-client-order', byClient);
      assert.equal(answer.json.outcome.accepted?.orderId, placed.orderId, answer.text);
      const other = submitBody({ instrumentId: INSTRUMENT, price: '8' });
      assert.equal((await venue.order('/api/v1/orders/submit', other)).status, 200);
      const plain = cancelBody({ orderId: other.orderId as string, instrumentId: INSTRUMENT });
      assert.equal((await venue.order('/api/v1/orders/cancel', plain)).status, 200);

      const views = async () => Promise.all([byClient, plain].map(async (body) => (await venue.get(`/api/v1/commands/${body.commandId as string}`, TOKENS.traderA)).json));
      const [fromMemory, plainFromMemory] = await views();
      assert.equal(fromMemory.instrumentId, INSTRUMENT, 'the resolved instrument is known in memory');
      assert.equal(fromMemory.orderId, placed.orderId);
      // The same fields as the plain cancel's, but what names the command and its route.
      const routing = ({ commandId, route, commandType, idempotencyKey, payloadHash, orderId, responsePayloadJson, resultPayloadJson, streamSequence, batchId, ...rest }: any) => rest;
      assert.deepEqual(routing(fromMemory), routing(plainFromMemory));
      await venue.untilProjected();
      assert.equal(await venue.stop(), 0);
      venue = await VenueProcess.start({ DATA_DIR: dir });
      await ready(venue);
      const [fromStorage] = await views();
      assert.deepEqual(fromStorage, fromMemory, 'memory and storage give the same view');
    },
  );
});
