import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { readOpenOrders, writeOpenOrders, writeOpenOrdersInBackground } from '../../persistence/open-orders-snapshot.ts';
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
    priceNanos: (1 + random.below(1e9)) * 1e6,
    quantity: 1e6 + random.below(1e9),
    filled: random.below(1e6),
    currency: random.nextUint32() & 0xffffff,
    shard: random.below(2),
  }));
}

const plain = (order: RestingOrder) => ({ ...order, ids: [...order.ids] });
/** An order's fields by name (a StoredOrder's are getters, which a spread does not copy). */
const fields = (order: RestingOrder) => {
  const { runNo, sessionNo, side, orderType, timeInForce, state, priceNanos, quantity, filled, currency, shard } = order;
  return { ids: [...order.ids], runNo, sessionNo, side, orderType, timeInForce, state, priceNanos, quantity, filled, currency, shard };
};

function saved(file: string, list: RestingOrder[], token = 'token', watermarks = [7, 9]): void {
  writeOpenOrders(file, token, watermarks, list.length, (visit) => list.forEach(visit));
}

function load(file: string, token = 'token', watermarks = [7, 9]): { why: string | null; store: RestingOrders; added: number } {
  const read = readOpenOrders(file, token, watermarks);
  if (typeof read === 'string') return { why: read, store: new RestingOrders(), added: 0 };
  return { why: null, store: read, added: read.size };
}

/** The store's orders as plain objects, in the order they were added. */
function listed(store: RestingOrders): RestingOrder[] {
  const back: RestingOrder[] = [];
  store.forEach((order) => back.push(plain(order) as unknown as RestingOrder));
  return back;
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
  assert.deepEqual(
    back.sort((a, b) => key(a).localeCompare(key(b))),
    list.map(plain).sort((a, b) => key(a).localeCompare(key(b))),
  );
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
  const read = readOpenOrders(file, 'token', accept);
  assert.ok(typeof read !== 'string', String(read));
  assert.deepEqual(seen, [5, 8]);
  assert.deepEqual(listed(read), list.map(plain), 'field for field, in order');
  assert.equal(
    readOpenOrders(file, 'token', () => 'ahead of storage'),
    'ahead of storage',
  );
});

test('a loaded store finds, takes and adds orders as one filled by adds does, with room for the extra asked', () => {
  const list = orders(5_000);
  const file = path.join(dir, 'room.bin');
  saved(file, list);
  const read = readOpenOrders(file, 'token', [7, 9], 3_000);
  assert.ok(typeof read !== 'string', String(read));
  const store: RestingOrders = read;
  for (const order of [list[0]!, list[2_500]!, list[4_999]!]) {
    const found = store.stored(order.ids, 0, 0);
    assert.ok(found !== undefined, 'every loaded order is found by its id');
    assert.deepEqual(fields(found), fields(order));
  }
  assert.deepEqual(fields(store.take(list[1]!.ids, 0)!), fields(list[1]!));
  assert.equal(store.take(list[1]!.ids, 0), null, 'taken once');
  const more = orders(3_000 + 1).slice(1); // ids of their own
  const columns = store.ids;
  for (const order of more) store.add(order);
  store.indexAdds();
  assert.equal(store.ids, columns, 'the extra room held the adds: the columns were not grown');
  assert.equal(store.size, list.length - 1 + more.length);
  assert.deepEqual(fields(store.stored(more[2_999]!.ids, 0, 0)!), fields(more[2_999]!));
  assert.deepEqual(fields(store.stored(list[4_998]!.ids, 0, 0)!), fields(list[4_998]!));
});

test('a frozen store is written in the background as it was when frozen, whatever is taken or added after', async () => {
  const list = orders(40_000); // more than one slice of the background write
  const store = new RestingOrders(16);
  for (const order of list) store.add(order);
  store.take(list[5]!.ids, 0); // taken before: not in the checkpoint
  const frozen = store.freeze();
  for (const order of [list[0]!, list[20_000]!, list[39_999]!]) store.take(order.ids, 0); // after: still in it
  for (const order of orders(70_000).slice(0, 30_000)) store.add(order); // grows the columns
  const file = path.join(dir, 'frozen.bin');
  const written = await writeOpenOrdersInBackground(file, 'token', [3, 4], frozen);
  assert.equal(written.count, list.length - 1);
  const read = readOpenOrders(file, 'token', [3, 4]);
  assert.ok(typeof read !== 'string', String(read));
  assert.deepEqual(listed(read), list.filter((_, n) => n !== 5).map(plain), 'field for field, in order');
});

test('a file with an order twice is refused by a throw, as adds refuse one', () => {
  const list = orders(600);
  list[450] = { ...list[450]!, ids: list[17]!.ids };
  const file = path.join(dir, 'twice.bin');
  saved(file, list);
  assert.throws(() => readOpenOrders(file, 'token', [7, 9]), /a resting order loaded twice/);
});

test('a whole file holding an order that cannot be open is refused, naming it', () => {
  for (const [change, reason] of [
    [{ filled: 5, quantity: 5 }, 'open order 2 has 5 of 5 filled'],
    [{ priceNanos: 0 }, 'open order 2 has price 0 nanos'],
    [{ state: 3 }, 'open order 2 is in state 3, not open'],
    [{ side: 2 }, 'open order 2 has side 2'],
  ] as const) {
    const list = orders(5);
    Object.assign(list[2]!, change);
    const file = path.join(dir, 'broken.bin');
    saved(file, list);
    assert.deepEqual([load(file).why, load(file).added], [reason, 0]);
  }
});
