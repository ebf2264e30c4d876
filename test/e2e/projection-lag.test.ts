// Tier 2 writes its projection tables in groups sealed at PROJECTION_GROUP_MS; a read that
// needs those tables asks for the open group to be sealed at once, so a long group age costs
// reads no wait. With groups held ten seconds: right after a trade the tables hold nothing
// of it, yet the tape and the audit trail answer with it (they would wait two seconds and
// answer 503 if only the age sealed groups), and afterwards the tables hold it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withClient } from '../support/database.ts';
import { stopAfter, storageUrl, submitBody, TOKENS, TRADER_B, VenueProcess } from '../support/venue-process.ts';

const INSTRUMENT = '7b000000-0000-4000-8000-000000000001';

test('a read that needs the projection tables seals the open group instead of waiting for its age', async () => {
  const dataDir = VenueProcess.makeDataDir();
  const venue = await VenueProcess.start({ DATA_DIR: dataDir, PROJECTION_GROUP_MS: '10000' });
  try {
    await stopAfter(
      () => venue,
      async () => {
        const url = await storageUrl(dataDir);
        const sell = submitBody({ instrumentId: INSTRUMENT, side: 'SELL', price: '100', quantity: '4', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId });
        assert.equal((await venue.order('/api/v1/orders/submit', sell, { token: TOKENS.traderB, mode: 'sync-result' })).status, 200);
        const buy = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '100', quantity: '4' });
        const bought = await venue.order('/api/v1/orders/submit', buy, { mode: 'sync-result' });
        assert.equal(bought.status, 200, bought.text);
        const tradeId = bought.json.trades[0].tradeId as string;

        const stored = () =>
          withClient(url, async (client) => ({
            trades: Number((await client.query('SELECT count(*) AS n FROM runtime.trades WHERE trade_id = $1', [tradeId])).rows[0].n),
            commands: Number((await client.query('SELECT count(*) AS n FROM runtime.command_log WHERE command_id = $1', [buy.commandId as string])).rows[0].n),
          }));
        assert.deepEqual(await stored(), { trades: 0, commands: 0 }, 'the group is held: nothing of the trade is in the tables yet');

        const tape = await venue.get(`/api/v1/market-data/trades/${INSTRUMENT}?limit=10`, TOKENS.viewer);
        assert.equal(tape.status, 200, tape.text);
        assert.deepEqual(
          tape.json.rows.map((row: { tradeId: string }) => row.tradeId),
          [tradeId],
        );
        assert.deepEqual(await stored(), { trades: 1, commands: 1 }, 'the tape read sealed and flushed the group');

        const resting = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '90', quantity: '1' });
        const rested = await venue.order('/api/v1/orders/submit', resting, { mode: 'sync-result' });
        assert.equal(rested.status, 200, rested.text);
        const commandId = resting.commandId as string;
        const audit = await venue.get(`/admin/v1/audit/commands/${commandId}`, TOKENS.operator);
        assert.equal(audit.status, 200, audit.text);
        assert.equal(audit.json.commandId, commandId);
      },
    );
  } finally {
    VenueProcess.removeDataDir(dataDir);
  }
});
