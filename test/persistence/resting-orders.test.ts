// The projector's compact store of resting orders (persistence/resting-orders.ts):
// found by id while there, taken once, growing without losing any.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { STATE_FILLED } from '../../core/codes.ts';
import { RestingOrders, type RestingOrder } from '../../persistence/resting-orders.ts';

function order(n: number): RestingOrder {
  const ids = new Int32Array(16);
  for (let k = 0; k < 16; k++) ids[k] = Math.imul(n + 1, 0x9e3779b1) ^ (k * 0x1234567);
  return {
    ids,
    runNo: 1,
    sessionNo: n % 3,
    side: n % 2,
    orderType: 0,
    timeInForce: 0,
    state: 1 + (n % 2),
    priceNanos: 1_000_000_000 + n,
    quantity: 10 + n,
    filled: n % 5,
    currency: 0x555344,
    shard: n % 2,
  };
}

test('every order added is taken back once with its values; others are not there', () => {
  const store = new RestingOrders(100); // grows past its first size
  const count = 5_000;
  for (let n = 0; n < count; n++) store.add(order(n));
  assert.equal(store.size, count);
  for (let n = 0; n < count; n += 2) {
    const taken = store.take(order(n).ids, 0);
    const { ids, ...values } = order(n);
    assert.ok(taken !== null, `order ${n}`);
    assert.deepEqual([...taken.ids], [...ids]);
    assert.deepEqual({ ...taken, ids: undefined }, { ...values, ids: undefined });
    assert.equal(store.take(order(n).ids, 0), null, 'taken once');
  }
  assert.equal(store.size, count / 2);
  assert.equal(store.take(order(count + 1).ids, 0), null);
  let left = 0;
  store.forEach((o) => {
    left++;
    assert.equal(o.priceNanos % 2, 1, 'only the odd ones are left');
  });
  assert.equal(left, count / 2);
});

test("the same order loaded twice is refused when the adds are indexed: in one group, across groups, and at a group's last add", () => {
  const store = new RestingOrders();
  store.add(order(1));
  store.add(order(1));
  assert.throws(() => store.indexAdds(), /loaded twice/, 'both in one group');
  const across = new RestingOrders();
  for (let n = 0; n < 300; n++) across.add(order(n)); // a group of 256 indexed, 44 waiting
  across.add(order(7));
  assert.throws(() => across.indexAdds(), /loaded twice/, 'its first in an earlier group');
  const last = new RestingOrders();
  for (let n = 0; n < 255; n++) last.add(order(n));
  assert.throws(() => last.add(order(3)), /loaded twice/, 'the 256th add indexes its group');
});

test('an order just added (not yet indexed) is found by a take, and counted', () => {
  const store = new RestingOrders();
  for (let n = 0; n < 10; n++) store.add(order(n));
  assert.equal(store.size, 10);
  assert.equal(store.take(order(4).ids, 0)?.quantity, 14);
  store.add(order(20));
  assert.equal(store.take(order(20).ids, 0)?.quantity, 30);
  assert.equal(store.take(order(4).ids, 0), null);
  assert.equal(store.size, 9);
});

test('takes between adds, across growth of the columns and the index: the orders left are exactly those not taken, each with its values', () => {
  const store = new RestingOrders(10);
  const left = new Set<number>();
  let next = 0;
  for (let round = 0; round < 6; round++) {
    for (let k = 0; k < 1500; k++) {
      store.add(order(next));
      left.add(next++);
    }
    // Take every third order still here, and one that is not.
    for (const n of [...left].filter((n) => n % 3 === round % 3)) {
      const taken = store.take(order(n).ids, 0);
      assert.ok(taken !== null, `order ${n}`);
      assert.equal(taken.quantity, 10 + n);
      left.delete(n);
    }
    assert.equal(store.take(order(next + 1).ids, 0), null);
    assert.equal(store.size, left.size);
  }
  // An order taken can be added again.
  const again = [...Array(next).keys()].find((n) => !left.has(n))!;
  store.add(order(again));
  left.add(again);
  const seen = new Set<number>();
  store.forEach((o) => {
    const n = o.quantity - 10;
    assert.ok(left.has(n) && !seen.has(n), `order ${n} once, and not taken`);
    const { ids, ...values } = order(n);
    assert.deepEqual([...o.ids], [...ids]);
    assert.deepEqual({ ...o, ids: undefined }, { ...values, ids: undefined });
    seen.add(n);
  });
  assert.equal(seen.size, left.size);
  for (const n of left) assert.ok(store.take(order(n).ids, 0) !== null, `order ${n} still found`);
  assert.equal(store.size, 0);
});

test('an order seen in place (stored): its fields read and write the store, closing it removes it, others stay', () => {
  const store = new RestingOrders(16);
  for (let n = 0; n < 40; n++) store.add(order(n));
  const seen = store.stored(order(7).ids, 0, 0)!;
  assert.ok(seen !== undefined);
  assert.deepEqual([seen.priceNanos, seen.quantity, seen.filled, seen.state, seen.side, seen.shard, seen.runNo, seen.sessionNo], [1_000_000_007, 17, 2, 2, 1, 1, 1, 1]);
  seen.filled += 5;
  seen.priceNanos = 2_000_000_000;
  const maker = store.stored(order(8).ids, 0, 1)!;
  maker.state = STATE_FILLED; // closed: out of the store
  assert.equal(store.size, 39);
  assert.equal(store.take(order(8).ids, 0), null, 'a closed order is gone');
  assert.equal(store.stored(order(99).ids, 0, 0), undefined, 'an order never added');
  const back = store.take(order(7).ids, 0)!;
  assert.deepEqual([back.priceNanos, back.filled, back.state], [2_000_000_000, 7, 2], 'the writes are in the store');
  assert.equal(store.size, 38);
});
