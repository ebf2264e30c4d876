// Checkpoints of the projector's open orders while running (persistence/open-orders-snapshot.ts):
// a start after a kill -9 loads the one the database names and replays onto it the
// journal after it (the orders' changes only), and ends with exactly the open orders of
// order_lifecycle_state (what a graceful stop then saves from the projector is compared
// row for row with the table). A file that fails its checksum costs the COPY, nothing else.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { formatUuid } from '../../core/uuid.ts';
import { openOrdersCheckpointPath, readOpenOrders, readOpenOrdersNote } from '../../persistence/open-orders-snapshot.ts';
import type { RestingOrder } from '../../persistence/resting-orders.ts';
import { mixedCommand, sendUntilKilled, type Sent } from '../support/crash-checks.ts';
import { withClient } from '../support/database.ts';
import { dataDirs, storageUrl, TOKENS, VenueProcess } from '../support/venue-process.ts';

const dataDir = dataDirs();

const STATES = ['', 'OPEN', 'PARTIALLY_FILLED'];

/** The open orders a graceful stop saved from the projector: id, state, price, quantity, filled. */
function savedOpenOrders(dir: string): string[] {
  const file = path.join(dir, 'open-orders.bin');
  const bytes = readFileSync(file);
  const header = JSON.parse(bytes.toString('utf8', 8, 8 + bytes.readUInt32LE(4))) as { token: string; watermarks: number[] };
  const rows: string[] = [];
  const why = readOpenOrders(file, header.token, header.watermarks, () => undefined, (order: RestingOrder) => {
    rows.push(`${formatUuid(order.ids, 0)} ${STATES[order.state]} ${order.priceNanos} ${order.quantity} ${order.filled}`);
  });
  assert.equal(why, null, 'the graceful stop saved the open orders');
  return rows.sort();
}

async function tableOpenOrders(url: string): Promise<string[]> {
  const rows = await withClient(url, (client) =>
    client.query<{ line: string }>(
      `SELECT order_id || ' ' || state || ' ' || limit_price_nanos || ' ' || original_quantity_units || ' ' || filled_quantity_units AS line
         FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')`,
    ),
  );
  return rows.rows.map((row) => row.line).sort();
}

const OPEN_ORDERS_LINE = /"openOrders":"checkpoint at ([\d,]+), then (\d+) commands of the journal after it \((\d+) changes of orders\)"/;

test('after a kill -9 the projector loads its last open-orders checkpoint, replays the journal after it onto it, and holds exactly the open rows', async (t) => {
  const dir = dataDir();
  const env = { DATA_DIR: dir, PROCESSING_MODE: 'sync-result', ENGINE_CHECKPOINT_COMMANDS: '150' };
  let venue = await VenueProcess.start(env);
  const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
  const random = new SeededRandom(8080);
  const sent: Sent[] = [];
  for (let i = 0; i < 900; i++) sent.push(mixedCommand(random, sent, session));
  const burst = await sendUntilKilled(venue, sent, { concurrency: 16, killAfterAnswers: 700 });
  assert.ok(burst.killedMidLoad, 'killed during the burst');
  const noted = (venue.log.match(/open orders checkpoint noted/g) ?? []).length;
  t.diagnostic(`open-orders checkpoints noted before the kill: ${noted}`);
  assert.ok(noted >= 2, `checkpoints were noted while the load ran (${noted})`);
  assert.match(venue.log, /"faultedAhead":true[^\n]*open orders checkpoint noted/, 'captures went into memory the main thread faulted in');
  const url = await storageUrl(dir);
  const note = await withClient(url, (client) => readOpenOrdersNote(client));
  assert.ok(note !== null, 'the database names a checkpoint');

  venue = await VenueProcess.start(env);
  assert.equal((await venue.get('/readyz')).status, 200);
  const line = OPEN_ORDERS_LINE.exec(venue.log);
  assert.ok(line !== null, `the start loaded the checkpoint: ${/"openOrders":"[^"]*"/.exec(venue.log)?.[0]}`);
  assert.equal(line[1], note.watermarks.join(), 'the checkpoint the database names');
  t.diagnostic(line[0]);
  assert.ok(Number(line[2]) > 0 && Number(line[3]) > 0, 'the journal after the checkpoint was replayed and changed orders');
  await venue.untilProjected();
  const table = await tableOpenOrders(await storageUrl(dir));
  assert.ok(table.length > 50, `orders rest (${table.length})`);
  assert.equal(await venue.stop(), 0);
  assert.deepEqual(savedOpenOrders(dir), table, "the projector's open orders are the table's");

  // The open orders the stop saved become the checkpoint the database names once loaded; then a
  // damaged checkpoint: the next start after a crash reads the open orders from storage instead.
  const savedBytes = readFileSync(path.join(dir, 'open-orders.bin'));
  const savedToken = (JSON.parse(savedBytes.toString('utf8', 8, 8 + savedBytes.readUInt32LE(4))) as { token: string }).token;
  venue = await VenueProcess.start(env);
  assert.match(venue.log, /"openOrders":"saved at the last stop"/);
  const adopted = (await withClient(await storageUrl(dir), (client) => readOpenOrdersNote(client)))!;
  assert.equal(adopted.token, savedToken, "the stop's file is the checkpoint named now");
  assert.deepEqual(readFileSync(openOrdersCheckpointPath(dir, adopted.slot)), savedBytes, 'moved, as it was');
  assert.ok(!existsSync(path.join(dir, 'open-orders.bin')), 'the stop file is gone');
  const more: Sent[] = [];
  for (let i = 0; i < 400; i++) more.push(mixedCommand(random, [...sent, ...more], session));
  await sendUntilKilled(venue, more, { concurrency: 16, killAfterAnswers: 350 });
  const named = (await withClient(await storageUrl(dir), (client) => readOpenOrdersNote(client)))!;
  assert.ok(named.token !== note.token, 'a new checkpoint was noted after the restart');
  const file = openOrdersCheckpointPath(dir, named.slot);
  const bytes = readFileSync(file);
  bytes[bytes.length - 10]! ^= 0x01;
  writeFileSync(file, bytes);
  venue = await VenueProcess.start(env);
  assert.match(venue.log, /"openOrders":"read from storage \(a checksum mismatch\)"/);
  await venue.untilProjected();
  const after = await tableOpenOrders(await storageUrl(dir));
  assert.equal(await venue.stop(), 0);
  assert.deepEqual(savedOpenOrders(dir), after, "the projector's open orders are the table's");
});
