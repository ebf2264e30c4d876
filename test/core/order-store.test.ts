import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OrderState } from '../../core/codes.ts';
import { ORDER_BYTE_SHIFT, ORDER_STATE_BYTE, OrderStore } from '../../core/order-store.ts';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';

/** Writes id words and indexes a fresh slot the way the engine does. */
function add(store: OrderStore, key: readonly number[]): number {
  assert.equal(store.find(key[0]!, key[1]!, key[2]!, key[3]!), -1);
  const slot = store.allocate();
  if (slot < 0) return slot;
  store.words.set(key, store.idAt(slot));
  store.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE] = OrderState.OPEN;
  store.index(slot);
  return slot;
}

test('the order index agrees with a Map through inserts, retirements and evictions', () => {
  const capacity = 1024;
  const store = new OrderStore(capacity);
  const random = new SeededRandom(99);
  const reference = new Map<string, number>(); // key -> slot, for indexed orders
  const live: string[] = [];
  const retiredFifo: string[] = [];
  // Few distinct high words: many ids share hash prefixes, so probe chains form.
  const keyOf = (n: number) => [n & 3, 0x5a5a, (n >>> 2) & 7, n];
  for (let n = 1; n <= 50_000; n++) {
    if (live.length > 0 && random.chance(0.5)) {
      const victim = live.splice(random.below(live.length), 1)[0]!;
      store.retire(reference.get(victim)!);
      retiredFifo.push(victim);
    } else if (store.canAllocate()) {
      const key = keyOf(n);
      // An allocation with no free record evicts the oldest retired order.
      if (store.restingCount + store.retainedTerminalCount === capacity) reference.delete(retiredFifo.shift()!);
      const slot = add(store, key);
      assert.ok(slot >= 0);
      reference.set(String(n), slot);
      live.push(String(n));
    }
    if (n % 997 === 0) {
      for (const [name, slot] of reference) {
        const k = keyOf(Number(name));
        assert.equal(store.find(k[0]!, k[1]!, k[2]!, k[3]!), slot, `order ${name}`);
      }
      const gone = keyOf(n + 1_000_000);
      assert.equal(store.find(gone[0]!, gone[1]!, gone[2]!, gone[3]!), -1);
    }
  }
  assert.equal(store.restingCount, live.length);
});

test('allocate answers -1 only when every record holds a resting order', () => {
  const store = new OrderStore(2);
  assert.ok(add(store, [1, 1, 1, 1]) >= 0);
  assert.ok(add(store, [2, 2, 2, 2]) >= 0);
  assert.equal(store.canAllocate(), false);
  assert.equal(store.allocate(), -1);
});

test('order capacity outside 1..2^26 is refused at construction', () => {
  assert.throws(() => new OrderStore(0), RangeError);
  assert.throws(() => new OrderStore(1.5), RangeError);
  assert.throws(() => new OrderStore(2 ** 26 + 1), RangeError);
});
