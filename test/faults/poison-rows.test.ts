// A row storage still refuses never wedges the projections (API contract, "Text that
// storage must hold"). The edge keeps out what PostgreSQL cannot hold, so a refusal is
// injected below it: CHECK constraints added to the running venue's tables (NOT VALID:
// only new rows are checked) refuse one order's rows, or one group's UPDATE. The refused
// rows are quarantined with their journal position, counted and logged; the rows behind
// them go on; a graceful stop, a restart and a start after kill -9 all finish.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { withClient } from '../support/database.ts';
import { dataDirs, stopAfter, storageUrl, submitBody, TOKENS, TRADER_B, VenueProcess } from '../support/venue-process.ts';

const INSTRUMENT = 'c8000000-0000-4000-8000-000000000001';
const dataDir = dataDirs();
let venue: VenueProcess;

after(async () => {
  if (venue?.child.exitCode === null) await venue.stop();
});

async function start(dir: string): Promise<void> {
  venue = await VenueProcess.start({ DATA_DIR: dir });
  for (let k = 0; (await venue.get('/readyz')).status !== 200; k++) {
    assert.ok(k < 600, 'the venue never became ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function place(options: Parameters<typeof submitBody>[0]): Promise<{ orderId: string; commandId: string }> {
  const body = submitBody(options);
  const answer = await venue.order('/api/v1/orders/submit', body, options.participantId === TRADER_B.participantId ? { token: TOKENS.traderB } : {});
  assert.equal(answer.status, 200, answer.text);
  assert.ok(answer.json.outcome.accepted, answer.text);
  return { orderId: body.orderId as string, commandId: body.commandId as string };
}

/** The orders of the test instrument in the lifecycle table (the API answers recent ones from memory, which holds what the journal holds). */
async function storedOrderIds(url: string): Promise<string[]> {
  return withClient(url, async (client) =>
    (await client.query<{ id: string }>('SELECT order_id::text AS id FROM runtime.order_lifecycle_state WHERE instrument_id = $1', [INSTRUMENT])).rows.map((row) => row.id),
  );
}

async function projections(): Promise<{ quarantinedRows: number; quarantinedGroups: number }> {
  const status = await venue.get('/admin/v1/persistence/status', TOKENS.operator);
  assert.equal(status.status, 200, status.text);
  return status.json.projections;
}

interface Quarantined {
  target: string;
  shard_id: number | null;
  stream_sequence: string | null;
  row_key: string | null;
  journal_position: string;
  sqlstate: string;
  message: string;
  bytes: number;
}

async function quarantined(url: string): Promise<Quarantined[]> {
  return withClient(
    url,
    async (client) =>
      (
        await client.query<Quarantined>(
          'SELECT target, shard_id, stream_sequence, row_key, journal_position, sqlstate, message, length(data) AS bytes FROM runtime.quarantined_rows ORDER BY quarantine_id',
        )
      ).rows,
  );
}

const REFUSE_POISON = `
  ALTER TABLE runtime.command_log ADD CONSTRAINT poison_command CHECK (client_order_id IS DISTINCT FROM 'poison') NOT VALID;
  ALTER TABLE runtime.order_lifecycle_state ADD CONSTRAINT poison_order CHECK (client_order_id IS DISTINCT FROM 'poison') NOT VALID`;

test('a projection row storage refuses is quarantined with its journal position; the rows behind it, a stop and a restart go on', async () => {
  const dir = dataDir();
  await start(dir);
  await stopAfter(
    () => venue,
    async () => {
      const url = await storageUrl(dir);
      await withClient(url, (client) => client.query(REFUSE_POISON));
      const poison = await place({ instrumentId: INSTRUMENT, price: '1', clientOrderId: 'poison' });
      const behind = await place({ instrumentId: INSTRUMENT, price: '2' });
      await venue.untilProjected(); // the pipeline is not wedged: it reaches the journal's end
      assert.deepEqual(await projections(), { ...(await projections()), quarantinedRows: 2, quarantinedGroups: 0 });

      const status = await venue.get(`/api/v1/commands/${poison.commandId}`, TOKENS.traderA);
      const rows = await quarantined(url);
      assert.deepEqual(
        rows.map((row) => [row.target, row.shard_id, Number(row.stream_sequence), row.row_key, row.sqlstate]),
        [
          ['command_log', Number(status.json.shardId), status.json.streamSequence, poison.commandId, '23514'],
          ['order_lifecycle_state', Number(status.json.shardId), status.json.streamSequence, poison.orderId, '23514'],
        ],
      );
      for (const row of rows) {
        assert.equal(row.journal_position, `shard ${status.json.shardId} sequence ${status.json.streamSequence}`);
        assert.match(row.message, /violates check constraint "poison_(command|order)"/);
        assert.ok(row.bytes > 100, 'the refused row is kept');
      }
      assert.match(venue.log, new RegExp(`"key":"${poison.orderId}"[^\\n]*storage refused a projection row: it is quarantined`));
      const visible = await storedOrderIds(url);
      assert.ok(visible.includes(behind.orderId), 'the order behind the refused one is in storage');
      assert.ok(!visible.includes(poison.orderId));
      const history = await venue.get(`/api/v1/orders/history?instrumentId=${INSTRUMENT}&limit=1000`, TOKENS.traderA);
      assert.ok(
        (history.json.rows as { orderId: string }[]).some((row) => row.orderId === poison.orderId),
        'the journal holds it: the in-memory own orders show it',
      );

      // A graceful stop and a restart finish; the venue goes on.
      assert.equal(await venue.stop(), 0);
      await start(dir);
      const later = await place({ instrumentId: INSTRUMENT, price: '3' });
      await venue.untilProjected();
      assert.ok((await storedOrderIds(await storageUrl(dir))).includes(later.orderId));
      assert.equal((await quarantined(await storageUrl(dir))).length, 2, 'the restart projected nothing twice');
    },
  );
});

test('a start after kill -9 projects a refused row from the journal: it is quarantined and the start finishes', async () => {
  const dir = dataDir();
  await start(dir);
  const url = await storageUrl(dir);
  await withClient(url, (client) => client.query(REFUSE_POISON));
  // The lifecycle table held locked: the answers go on (they wait for the journal only), the projection cannot.
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  locker.on('error', () => undefined); // the kill below takes its server down
  await locker.query('BEGIN; LOCK TABLE runtime.order_lifecycle_state IN ACCESS EXCLUSIVE MODE');
  const poison = await place({ instrumentId: INSTRUMENT, price: '1', clientOrderId: 'poison' });
  const behind = await place({ instrumentId: INSTRUMENT, price: '2' });
  assert.equal(
    (await venue.get('/admin/v1/persistence/status', TOKENS.operator)).json.shards.some((shard: { projectionLag: number }) => shard.projectionLag > 0),
    true,
  );
  await venue.kill({ database: true });
  await locker.end().catch(() => undefined);

  await start(dir);
  await stopAfter(
    () => venue,
    async () => {
      assert.equal((await projections()).quarantinedRows, 2, "the start's catch-up quarantined the refused rows");
      const visible = await storedOrderIds(await storageUrl(dir));
      assert.ok(visible.includes(behind.orderId));
      assert.ok(!visible.includes(poison.orderId));
      assert.deepEqual((await quarantined(await storageUrl(dir))).map((row) => row.row_key).sort(), [poison.commandId, poison.orderId].sort());
    },
  );
});

test('a refusal no row explains quarantines the group whole: its data kept, the watermarks moved, the groups behind it projected', async () => {
  const dir = dataDir();
  await start(dir);
  await stopAfter(
    () => venue,
    async () => {
      const url = await storageUrl(dir);
      const resting = await place({ instrumentId: INSTRUMENT, price: '5', quantity: '5' });
      await venue.untilProjected();
      // The UPDATE of the resting order's row (remaining 5 -> 3) is refused: no COPY row to blame.
      await withClient(url, (client) => client.query('ALTER TABLE runtime.order_lifecycle_state ADD CONSTRAINT poison_update CHECK (remaining_quantity_units <> 3) NOT VALID'));
      await place({ instrumentId: INSTRUMENT, side: 'SELL', price: '5', quantity: '2', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId });
      await venue.untilProjected();
      const counts = await projections();
      assert.equal(counts.quarantinedGroups, 1);
      const rows = await quarantined(url);
      assert.ok(rows.length >= 3, 'every COPY of the group is kept');
      for (const row of rows) {
        assert.match(row.target, / \(whole group\)$/);
        assert.equal(row.sqlstate, '23514');
        assert.match(row.journal_position, /^shard \d sequences \d+-\d+/);
      }
      assert.equal(counts.quarantinedRows, rows.length);
      const behind = await place({ instrumentId: INSTRUMENT, price: '4' });
      await venue.untilProjected();
      const visible = await storedOrderIds(url);
      assert.ok(visible.includes(behind.orderId) && visible.includes(resting.orderId));
    },
  );
});
