// The market-data stream across a restart: the socket closes when the venue stops; after a
// kill -9 and a start on the same data, a client that subscribes again gets a snapshot
// equal to the recovered REST depth, and the updates after it continue its seq and keep
// the two equal.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamClient, type StreamMessage } from '../support/stream-client.ts';
import { dataDirs, stopAfter, submitBody, TOKENS, TRADER_B, VenueProcess } from '../support/venue-process.ts';

const R = '5e200000-0000-4000-8000-000000000001';
const B = { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId };
const newDataDir = dataDirs();

async function submit(venue: VenueProcess, body: Record<string, unknown>, token: string = TOKENS.traderA): Promise<void> {
  const answer = await venue.order('/api/v1/orders/submit', body, { token, mode: 'sync-result' });
  assert.equal(answer.status, 200, answer.text);
}

const levels = (message: StreamMessage) => ({ bids: message.bids, asks: message.asks });

test('after a kill -9 and a start on the same data, a resubscribe gets the recovered book and consistent updates', async () => {
  const dataDir = newDataDir();
  let venue = await VenueProcess.start({ DATA_DIR: dataDir });
  await stopAfter(
    () => venue,
    async () => {
      const client = await StreamClient.connect(venue.baseUrl, TOKENS.viewer);
      client.subscribe('depth', R);
      await client.next((m) => m.type === 'depth-snapshot');
      for (let k = 0; k < 10; k++) await submit(venue, submitBody({ instrumentId: R, side: 'BUY', price: String(90 + k), quantity: String(k + 1) }));
      await submit(venue, submitBody({ instrumentId: R, side: 'SELL', price: '99', quantity: '4', ...B }), TOKENS.traderB); // takes 4 of the 10 at 99
      await client.next((m) => m.type === 'depth-update' && m.seq === '11');
      await venue.kill();
      const deadline = Date.now() + 10_000;
      while (client.closed === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.notEqual(client.closed, null, 'the socket closes with the venue');

      venue = await VenueProcess.start({ DATA_DIR: dataDir });
      const again = await StreamClient.connect(venue.baseUrl, TOKENS.viewer);
      again.subscribe('depth', R);
      const snapshot = await again.next((m) => m.type === 'depth-snapshot');
      const rest = await venue.get(`/api/v1/market-data/depth/${R}?levels=50`, TOKENS.viewer);
      assert.deepEqual(levels(snapshot), { bids: rest.json.bids, asks: rest.json.asks });
      assert.equal(snapshot.bids.length, 10);
      assert.deepEqual(snapshot.bids[0].quantity, { units: '6' }, 'the trade before the kill is in the recovered book');
      await submit(venue, submitBody({ instrumentId: R, side: 'BUY', price: '99.5', quantity: '2' }));
      const update = await again.next((m) => m.type === 'depth-update');
      assert.equal(update.seq, String(Number(snapshot.seq) + 1));
      assert.deepEqual(update.changes, [{ side: 'bid', price: { nanos: '99500000000', currency: 'USD' }, quantity: { units: '2' }, orderCount: 1 }]);
      await again.close();
    },
  );
});
