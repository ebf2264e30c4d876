import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { readOpenOrders, writeOpenOrders } from '../../persistence/open-orders-snapshot.ts';
import { RestingOrders, type RestingOrder } from '../../persistence/resting-orders.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'open-orders-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function orders(count: number): RestingOrder[] {
  const random = new SeededRandom(count);
  return Array.from({ length: count }, () => ({
    ids: Int32Array.from({ length: 16 }, () => random.nextUint32() | 0),
    runNo: random.below(4),
    sessionNo: random.below(9),
    side: random.below(2),
    orderType: random.below(2),
    timeInForce: random.below(2),
    state: 1 + random.below(2),
    priceNanos: random.below(1e9) * 1e6,
    quantity: 1 + random.below(1e9),
    filled: random.below(1e6),
    currency: random.nextUint32() & 0xffffff,
    shard: random.below(2),
  }));
}

const plain = (order: RestingOrder) => ({ ...order, ids: [...order.ids] });

function saved(file: string, list: RestingOrder[], token = 'token', watermarks = [7, 9]): void {
  writeOpenOrders(file, token, watermarks, list.length, (visit) => list.forEach(visit));
}

function load(file: string, token = 'token', watermarks = [7, 9]): { why: string | null; store: RestingOrders; added: number } {
  let store = new RestingOrders();
  let added = 0;
  const why = readOpenOrders(file, token, watermarks, (count) => (store = new RestingOrders(count)), (order) => {
    store.add(order);
    added++;
  });
  return { why, store, added };
}

test('the open orders come back field for field', () => {
  const list = orders(5_000);
  const file = path.join(dir, 'all.bin');
  saved(file, list);
  const { why, store } = load(file);
  assert.equal(why, null);
  assert.equal(store.size, list.length);
  const back: RestingOrder[] = [];
  store.forEach((order) => back.push(plain(order) as unknown as RestingOrder));
  const key = (order: { ids: ArrayLike<number> }) => Array.from(order.ids).join();
  assert.deepEqual(back.sort((a, b) => key(a).localeCompare(key(b))), list.map(plain).sort((a, b) => key(a).localeCompare(key(b))));
  saved(file, []);
  assert.equal(load(file).store.size, 0, 'none open');
});

test('refused, nothing added: another save, other watermarks, a damaged or cut file', () => {
  const file = path.join(dir, 'refused.bin');
  saved(file, orders(300));
  const refused = (result: ReturnType<typeof load>, reason: string | RegExp) => {
    assert.equal(result.added, 0);
    if (typeof reason === 'string') assert.equal(result.why, reason);
    else assert.match(result.why ?? '', reason);
  };
  refused(load(file, 'other'), 'the file is not the one the database names');
  refused(load(file, 'token', [7, 10]), 'the file is true at projections 7,9, storage holds 7,10');
  refused(load(path.join(dir, 'missing.bin')), /^no file/);
  const bytes = readFileSync(file);
  const damaged = path.join(dir, 'damaged.bin');
  const flipped = Buffer.from(bytes);
  flipped[bytes.length - 40]! ^= 0x04;
  writeFileSync(damaged, flipped);
  refused(load(damaged), 'a checksum mismatch');
  writeFileSync(damaged, bytes.subarray(0, bytes.length - 8));
  refused(load(damaged), 'a file of the wrong length');
  writeFileSync(damaged, Buffer.alloc(100));
  refused(load(damaged), 'not an open-orders file');
  assert.equal(load(file).added, 300, 'the good file still loads');
});

test('a save refuses a count that is not the orders given', () => {
  const list = orders(3);
  assert.throws(() => writeOpenOrders(path.join(dir, 'count.bin'), 't', [0], 2, (visit) => list.forEach(visit)), /more than the 2 open orders counted/);
  assert.throws(() => writeOpenOrders(path.join(dir, 'count.bin'), 't', [0], 4, (visit) => list.forEach(visit)), /3 open orders, 4 counted/);
});

test('a checkpoint loads only at watermarks its caller accepts, which it is given', () => {
  const list = orders(2_000);
  const file = path.join(dir, 'checkpoint.bin');
  saved(file, list, 'token', [5, 8]);
  let seen: readonly number[] = [];
  const accept = (held: readonly number[]) => {
    seen = held;
    return held.every((mark, shard) => mark <= [7, 9][shard]!) ? null : `ahead of storage (${held.join()})`;
  };
  const back: unknown[] = [];
  assert.equal(readOpenOrders(file, 'token', accept, () => undefined, (order) => back.push(plain(order))), null);
  assert.deepEqual(seen, [5, 8]);
  assert.deepEqual(back, list.map(plain), 'field for field, in order');
  let added = 0;
  assert.equal(readOpenOrders(file, 'token', () => 'ahead of storage', () => undefined, () => added++), 'ahead of storage');
  assert.equal(added, 0, 'nothing added when refused');
});
