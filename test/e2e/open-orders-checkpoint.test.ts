// The open orders a graceful stop saved are, once a start loaded them, the checkpoint the
// database names (persistence/open-orders-snapshot.ts): a start after a kill -9 loads it
// and replays onto it the journal after it (the orders' changes only), and ends with
// exactly the open orders of order_lifecycle_state (what a graceful stop then saves from
// the projector is compared row for row with the table). A file that fails its checksum
// costs the COPY, nothing else.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { openOrdersCheckpointPath, readOpenOrdersNote } from '../../persistence/open-orders-snapshot.ts';
import { mixedCommand, sendUntilKilled, type Sent } from '../support/crash-checks.ts';
import { withClient } from '../support/database.ts';
import { OPEN_ORDERS_LINE, savedOpenOrders, tableOpenOrders } from '../support/open-orders.ts';
import { dataDirs, storageUrl, TOKENS, VenueProcess } from '../support/venue-process.ts';

const dataDir = dataDirs();

const tokenOf = (bytes: Buffer) => (JSON.parse(bytes.toString('utf8', 8, 8 + bytes.readUInt32LE(4))) as { token: string }).token;

test('the open orders a stop saved become the named checkpoint; after a kill -9 the start replays the journal onto it and holds exactly the open rows', async (t) => {
  const dir = dataDir();
  const env = { DATA_DIR: dir, PROCESSING_MODE: 'sync-result' };
  let venue = await VenueProcess.start(env);
  t.after(() => venue.kill().catch(() => undefined)); // a failed check leaves no venue behind
  const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
  const random = new SeededRandom(8080);
  const sent: Sent[] = [];
  for (let i = 0; i < 300; i++) sent.push(mixedCommand(random, sent, session));
  let next = 0;
  const sender = async () => {
    while (next < sent.length) {
      const command = sent[next++]!;
      const answer = await venue.order(command.path, command.body, { key: command.key, token: command.token });
      command.answer = { status: answer.status, text: answer.text };
    }
  };
  await Promise.all(Array.from({ length: 16 }, sender));
  assert.equal(await venue.stop(), 0);

  // The stop's file, once loaded, is moved to a checkpoint slot and named.
  const savedBytes = readFileSync(path.join(dir, 'open-orders.bin'));
  venue = await VenueProcess.start(env);
  assert.match(venue.log, /"openOrders":"saved at the last stop"/);
  const note = (await withClient(await storageUrl(dir), (client) => readOpenOrdersNote(client)))!;
  assert.ok(note !== null, 'the database names a checkpoint');
  assert.equal(note.token, tokenOf(savedBytes), "the stop's file is the checkpoint named now");
  assert.deepEqual(readFileSync(openOrdersCheckpointPath(dir, note.slot)), savedBytes, 'moved, as it was');
  assert.ok(!existsSync(path.join(dir, 'open-orders.bin')), 'the stop file is gone');

  /** A burst of `count` commands, the venue killed after `killAfter` answers, then a start: its log's line of the checkpoint it loaded. */
  const killedThenStarted = async (count: number, killAfter: number): Promise<RegExpExecArray> => {
    const burst: Sent[] = [];
    for (let i = 0; i < count; i++) burst.push(mixedCommand(random, [...sent, ...burst], session));
    assert.ok((await sendUntilKilled(venue, burst, { concurrency: 16, killAfterAnswers: killAfter })).killedMidLoad, 'killed during the burst');
    sent.push(...burst);
    venue = await VenueProcess.start(env);
    assert.equal((await venue.get('/readyz')).status, 200);
    const loaded = OPEN_ORDERS_LINE.exec(venue.log);
    assert.ok(loaded !== null, `the start loaded a checkpoint: ${/"openOrders":"[^"]*"/.exec(venue.log)?.[0]}`);
    t.diagnostic(loaded[0]);
    return loaded;
  };

  // Load, killed mid-burst: the next start loads the checkpoint and replays the journal after it.
  const line = await killedThenStarted(900, 700);
  assert.equal(line[1], note.watermarks.join(), 'the checkpoint the database names');
  assert.ok(Number(line[2]) >= 500 && Number(line[3]) > 0, 'the journal after the checkpoint was replayed and changed orders');

  // That start writes what it loaded as the next checkpoint, at the projections storage
  // held then: a second crash replays only the journal after it, not all since the stop.
  await venue.untilLogged(/open orders checkpoint written after the start/);
  const rewritten = (await withClient(await storageUrl(dir), (client) => readOpenOrdersNote(client)))!;
  assert.notEqual(rewritten.token, note.token, 'a checkpoint of its own is named');
  assert.notEqual(rewritten.slot, note.slot, 'in the other slot: the one named before stays whole until then');
  assert.ok(
    rewritten.watermarks.every((mark, shard) => mark >= note.watermarks[shard]!) && rewritten.watermarks.some((mark, shard) => mark > note.watermarks[shard]!),
    `past the checkpoint before (${rewritten.watermarks.join()} against ${note.watermarks.join()})`,
  );
  const again = await killedThenStarted(300, 200);
  assert.equal(again[1], rewritten.watermarks.join(), 'the checkpoint the start after the first crash wrote');
  assert.ok(Number(again[2]) > 0 && Number(again[2]) < Number(line[2]), `only the journal since that start was replayed (${again[2]} commands, ${line[2]} the time before)`);
  await venue.untilProjected();
  const table = await tableOpenOrders(await storageUrl(dir));
  assert.ok(table.length > 50, `orders rest (${table.length})`);
  await venue.untilLogged(/open orders checkpoint written after the start/);
  const before = (await withClient(await storageUrl(dir), (client) => readOpenOrdersNote(client)))!;
  assert.equal(await venue.stop(), 0);
  assert.deepEqual(savedOpenOrders(dir), table, "the projector's open orders are the table's");

  // A damaged checkpoint: the next start after a crash reads the open orders from storage instead.
  venue = await VenueProcess.start(env);
  const more: Sent[] = [];
  for (let i = 0; i < 400; i++) more.push(mixedCommand(random, [...sent, ...more], session));
  await sendUntilKilled(venue, more, { concurrency: 16, killAfterAnswers: 350 });
  const named = (await withClient(await storageUrl(dir), (client) => readOpenOrdersNote(client)))!;
  assert.ok(named.token !== before.token && named.slot !== before.slot, 'the new stop file is named, in the other slot');
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
