import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashPrice } from '../../core/hash.ts';
import { PriceLevels } from '../../core/price-levels.ts';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';

function bestFirst(levels: PriceLevels, bookSide: number): number[] {
  const prices: number[] = [];
  levels.walkBestFirst(bookSide, (level) => {
    prices.push(levels.price(level));
    return true;
  });
  return prices;
}

test('bids come out highest first and asks lowest first through random creates and destroys', () => {
  const levels = new PriceLevels(4096, 4);
  const random = new SeededRandom(5);
  // Book sides 0..3 are (book 0, bid), (book 0, ask), (book 1, bid), (book 1, ask).
  const reference = [new Map<number, number>(), new Map<number, number>(), new Map<number, number>(), new Map<number, number>()];
  for (let step = 0; step < 20_000; step++) {
    const bookSide = random.below(4);
    const side = reference[bookSide]!;
    const price = 1 + random.below(3000);
    const existing = levels.find(bookSide, price);
    assert.equal(existing, side.get(price) ?? -1);
    if (existing >= 0) {
      levels.destroy(existing);
      side.delete(price);
    } else if (levels.liveCount < levels.capacityMax) {
      side.set(price, levels.findOrCreate(bookSide, price));
    }
    if (step % 1000 === 0 || step === 19_999) {
      for (let s = 0; s < 4; s++) {
        const sorted = [...reference[s]!.keys()].sort((a, b) => ((s & 1) === 0 ? b - a : a - b));
        assert.deepEqual(bestFirst(levels, s), sorted);
        assert.equal(levels.best(s), sorted.length === 0 ? -1 : reference[s]!.get(sorted[0]!));
        assert.equal(levels.levelCount(s), sorted.length);
      }
    }
  }
});

test('findOrCreate finds a level or creates it, through growth and removals', () => {
  const levels = new PriceLevels(20_000, 4, 11);
  const random = new SeededRandom(8);
  const reference = [new Map<number, number>(), new Map<number, number>(), new Map<number, number>(), new Map<number, number>()];
  const live = new Set<number>();
  // The first 20,000 steps grow the index from 4096 buckets to 65,536 by findOrCreate alone; the rest mix in removals.
  for (let step = 0; step < 60_000; step++) {
    const bookSide = random.below(4);
    const side = reference[bookSide]!;
    const price = 1 + random.below(step < 20_000 ? 1_000_000 : 3000);
    const known = side.get(price);
    if (step >= 20_000 && known !== undefined && random.below(2) === 0) {
      levels.destroy(known);
      side.delete(price);
      live.delete(known);
      continue;
    }
    if (known === undefined && levels.liveCount === levels.capacityMax) continue;
    const level = levels.findOrCreate(bookSide, price);
    if (known === undefined) {
      assert.ok(!live.has(level), `step ${step}: a created level is a free record`);
      live.add(level);
      assert.equal(levels.price(level), price);
      assert.equal(levels.count(level, 0) + levels.count(level, 1), 0, 'created empty');
      side.set(price, level);
    } else {
      assert.equal(level, known, `step ${step}: the level at ${price} is found, not created again`);
    }
    assert.equal(
      levels.liveCount,
      reference.reduce((sum, s) => sum + s.size, 0),
    );
  }
  for (let s = 0; s < 4; s++) {
    for (const [price, level] of reference[s]!) assert.equal(levels.find(s, price), level);
    const sorted = [...reference[s]!.keys()].sort((a, b) => ((s & 1) === 0 ? b - a : a - b));
    assert.deepEqual(bestFirst(levels, s), sorted);
  }
});

test('two prices whose keys hash alike are two levels', () => {
  // Found by a search: 551.952 and 1375.313 units in nanos hash alike on bid side 0 with seed 0.
  const [a, b] = [551_952_000_000, 1_375_313_000_000];
  assert.equal(hashPrice(a, 0), hashPrice(b, 0), 'the two keys collide');
  const levels = new PriceLevels(16, 2);
  const first = levels.findOrCreate(0, a);
  const second = levels.findOrCreate(0, b);
  assert.notEqual(second, first);
  assert.equal(levels.find(0, a), first);
  assert.equal(levels.find(0, b), second);
  assert.equal(levels.findOrCreate(0, b), second);
  levels.destroy(first);
  assert.equal(levels.find(0, a), -1);
  assert.equal(levels.find(0, b), second);
});

test('the level index grows past its initial size and still finds every level', () => {
  const levels = new PriceLevels(20_000, 2);
  for (let price = 1; price <= 10_000; price++) levels.findOrCreate(1, price * 7);
  for (let price = 1; price <= 10_000; price++) assert.notEqual(levels.find(1, price * 7), -1);
  assert.equal(levels.find(0, 7), -1, 'the same price on the other side is another level');
  assert.deepEqual(bestFirst(levels, 1).slice(0, 3), [7, 14, 21]);
});

test('a walk stops when the visitor says so', () => {
  const levels = new PriceLevels(16, 2);
  for (const price of [5, 3, 9, 1]) levels.findOrCreate(0, price);
  const seen: number[] = [];
  levels.walkBestFirst(0, (level) => {
    seen.push(levels.price(level));
    return seen.length < 2;
  });
  assert.deepEqual(seen, [9, 5]);
});
