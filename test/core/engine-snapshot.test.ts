import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { STATE_OPEN, STATE_PARTIALLY_FILLED } from '../../core/codes.ts';
import { captureEngine, readEngineSnapshot, writeEngineCapture, writeEngineSnapshot } from '../../persistence/engine-snapshot.ts';
import { MatchingEngine, type EngineOptions } from '../../core/matching-engine.ts';
import { orderStoreBytes } from '../../core/order-store.ts';
import { uuidWords } from '../../core/uuid.ts';
import { EngineDriver, idOf, INSTRUMENT_A, INSTRUMENT_B, type DecodedEvent } from '../support/engine-driver.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-snapshot-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const INSTRUMENTS = [INSTRUMENT_A, INSTRUMENT_B, '33333333-3333-4333-8333-333333333333', '44444444-4444-4444-8444-444444444444'];
const OWNERS = Array.from({ length: 6 }, (_, k) => ({ participantId: idOf(0xa0, k % 3), accountId: idOf(0xb0, k) }));

interface StreamShape {
  prices: number;
  crossPct: number;
}

/** A random command stream for two drivers at once: both get every command, the events of each are returned. */
class Stream {
  private readonly random: SeededRandom;
  private readonly ids: string[] = [];
  /** Ids that may still rest (checked against the first driver's engine when picked). */
  private readonly live: string[] = [];
  /** The context each id was last submitted with. */
  private readonly context = new Map<string, { instrumentId: string; participantId: string; accountId: string }>();
  private next = 0;
  readonly counts = new Map<string, number>();

  constructor(
    seed: number,
    private readonly shape: StreamShape,
  ) {
    this.random = new SeededRandom(seed);
  }

  /** A random id of `live` that rests in the driver's engine now (those that do not are dropped), or null. */
  private resting(driver: EngineDriver): string | null {
    while (this.live.length > 0) {
      const at = this.random.below(this.live.length);
      const orderId = this.live[at]!;
      if (resting(driver.engine, orderId)) return orderId;
      this.live[at] = this.live[this.live.length - 1]!;
      this.live.pop();
    }
    return null;
  }

  run(drivers: EngineDriver[]): DecodedEvent[][] {
    const r = this.random;
    const roll = r.below(100);
    let run: (d: EngineDriver) => DecodedEvent[];
    if (roll < 60 || this.ids.length === 0) {
      // Some ids again: mostly recent ones (still indexed: a duplicate), some old (maybe evicted: accepted again).
      const reuse = r.chance(0.03) && this.ids.length > 0;
      const orderId = !reuse ? idOf(0x5eed, ++this.next) : r.chance(0.7) ? this.ids[this.ids.length - 1 - r.below(Math.min(300, this.ids.length))]! : r.pick(this.ids);
      this.ids.push(orderId);
      this.live.push(orderId);
      const instrument = r.below(INSTRUMENTS.length);
      const side = r.chance(0.5) ? 'BUY' : 'SELL';
      const crossing = r.below(100) < this.shape.crossPct;
      // Resting orders keep to their side of 1000 + prices / 2; crossing ones reach into the other side.
      const middle = 1000 + this.shape.prices / 2;
      const away = 1 + r.below(this.shape.prices / 2);
      const price = crossing ? (side === 'BUY' ? middle + away : middle - away) : side === 'BUY' ? middle - away : middle + away;
      const spec = {
        orderId,
        side,
        price,
        quantity: 1 + r.below(20),
        hidden: r.chance(0.15),
        ioc: crossing && r.chance(0.5),
        instrumentId: INSTRUMENTS[instrument]!,
        currency: r.chance(0.01) ? 'EUR' : 'USD',
        runNo: 1,
        sessionNo: 1,
        ...r.pick(OWNERS),
      } as const;
      this.context.set(orderId, { instrumentId: spec.instrumentId, participantId: spec.participantId, accountId: spec.accountId });
      run = (d) => d.submit(spec);
    } else {
      // Mostly a resting order (the live path), else any id ever sent (terminal, evicted) or an unknown one.
      const orderId = r.chance(0.05) ? idOf(0xdead, ++this.next) : r.chance(0.75) ? (this.resting(drivers[0]!) ?? r.pick(this.ids)) : r.pick(this.ids);
      // Cancels and modifies name the order's context; sometimes another one (a mismatch).
      const known = this.context.get(orderId);
      const context = known === undefined || r.chance(0.05) ? { instrumentId: r.pick(INSTRUMENTS), ...r.pick(OWNERS) } : known;
      const target = { orderId, ...context, runNo: 1, sessionNo: 1 };
      if (roll < 85) run = (d) => d.cancel(target);
      else {
        const price = 1000 + r.below(this.shape.prices);
        const quantity = 1 + r.below(25);
        run = (d) => d.modify(target, price, quantity);
      }
    }
    const results = drivers.map(run);
    for (const event of results[0]!) {
      const name = event.kind === 'rejected' ? event.code : event.kind;
      this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    }
    return results;
  }
}

function resting(engine: MatchingEngine, orderId: string): boolean {
  const w = uuidWords(orderId);
  const slot = engine.orders.find(w[0]!, w[1]!, w[2]!, w[3]!);
  return slot >= 0 && (engine.orders.state(slot) === STATE_OPEN || engine.orders.state(slot) === STATE_PARTIALLY_FILLED);
}

function books(driver: EngineDriver) {
  return INSTRUMENTS.map((instrument) => [driver.book('BUY', instrument), driver.book('SELL', instrument)]);
}

/**
 * Runs `before` commands through one engine, saves it, restores the file into a new
 * engine, then runs `afterwards` more commands through both: every event and the final
 * books must be equal.
 */
async function roundTrip(options: EngineOptions, shape: StreamShape, before: number, afterwards: number, check: (engine: MatchingEngine) => void) {
  const original = new EngineDriver(options);
  const stream = new Stream(options.hashSeed ?? 1, shape);
  for (let n = 0; n < before; n++) stream.run([original]);
  check(original.engine);
  const file = path.join(dir, `round-trip-${options.orderCapacity}.bin`);
  const { sequence } = writeEngineSnapshot(file, original.engine, 'token-1', 0, 4242);
  assert.equal(sequence, original.engine.sequence);
  // A checkpoint's copy, written later by another thread, is the same file byte for byte.
  const capture = captureEngine(original.engine, 'token-1', 0, 4242);
  const captured = path.join(dir, `captured-${options.orderCapacity}.bin`);
  await writeEngineCapture(captured, capture);
  assert.ok(readFileSync(captured).equals(readFileSync(file)), 'the capture writes the same file');
  const restored = readEngineSnapshot(captured, { token: 'token-1', shard: 0, sequence }, original.engine.shape);
  assert.ok(typeof restored !== 'string', `restored: ${String(restored)}`);
  assert.equal(restored.batch, 4242, 'the batch number is kept');
  const copy = new EngineDriver(restored.engine);
  assert.deepEqual(books(copy), books(original), 'books right after the restore');
  const seenBefore = new Map(stream.counts);
  for (let n = 0; n < afterwards; n++) {
    const [expected, actual] = stream.run([original, copy]);
    assert.deepEqual(actual, expected, `command ${before + n}`);
  }
  assert.deepEqual(books(copy), books(original), 'books at the end');
  assert.equal(copy.engine.sequence, original.engine.sequence);
  return { counts: stream.counts, seenBefore };
}

test('a restored engine gives the same events as the one saved, through evictions and every capacity', async () => {
  // 512 orders: the free slots run out before the save, so after it every new order evicts the
  // oldest retired one (a reused id of an evicted order is accepted again, of a retired one a duplicate).
  const { counts, seenBefore } = await roundTrip({ orderCapacity: 512, instrumentCapacity: 3, ownerCapacity: 4, hashSeed: 0x5eed }, { prices: 60, crossPct: 15 }, 8_000, 8_000, (engine) =>
    assert.equal(engine.orders.restingCount + engine.orders.retainedTerminalCount, 512, 'every slot was handed out before the save'),
  );
  for (const kind of [
    'accepted',
    'execution',
    'trade',
    'DUPLICATE_ORDER_ID',
    'ORDER_NOT_OPEN',
    'ORDER_NOT_FOUND',
    'ORDER_CONTEXT_MISMATCH',
    'CURRENCY_MISMATCH',
    'INSTRUMENT_CAPACITY_EXCEEDED',
    'ACCOUNT_CAPACITY_EXCEEDED',
    'INVALID_MODIFY',
  ]) {
    assert.ok((counts.get(kind) ?? 0) - (seenBefore.get(kind) ?? 0) > 5, `${kind} after the restore: ${(counts.get(kind) ?? 0) - (seenBefore.get(kind) ?? 0)}`);
  }
});

test('a restored engine keeps grown level pools and heaps (thousands of price levels)', async () => {
  await roundTrip({ orderCapacity: 16_384, hashSeed: 77 }, { prices: 12_000, crossPct: 3 }, 9_000, 6_000, (engine) =>
    assert.ok(engine.levels.capacity > 2048, `the level pool grew: ${engine.levels.capacity}`),
  );
});

test('an engine in memory given to it (a venue faults it in after ready) runs as one in its own, restored or fresh; a file refused after it was read leaves the memory zeroed again', () => {
  const options = { orderCapacity: 512, instrumentCapacity: 3, ownerCapacity: 4, hashSeed: 0xd1e7 };
  const zeroed = (memory: SharedArrayBuffer) => new Uint8Array(memory).every((byte) => byte === 0);
  // Restored into given memory: the same events and books as the engine saved.
  const original = new EngineDriver(options);
  const stream = new Stream(41, { prices: 60, crossPct: 15 });
  for (let n = 0; n < 4_000; n++) stream.run([original]);
  const file = path.join(dir, 'given-memory.bin');
  const { sequence } = writeEngineSnapshot(file, original.engine, 'given', 0, 7);
  const memory = new SharedArrayBuffer(orderStoreBytes(options.orderCapacity));
  const restored = readEngineSnapshot(file, { token: 'given', shard: 0, sequence }, original.engine.shape, memory);
  assert.ok(typeof restored !== 'string', `restored: ${String(restored)}`);
  assert.equal(restored.engine.orders.words.buffer, memory, 'the order store lives in the memory given');
  assert.ok(!zeroed(memory));
  const copy = new EngineDriver(restored.engine);
  assert.deepEqual(books(copy), books(original), 'books right after the restore');
  for (let n = 0; n < 4_000; n++) {
    const [expected, actual] = stream.run([original, copy]);
    assert.deepEqual(actual, expected, `command ${4_000 + n}`);
  }
  assert.deepEqual(books(copy), books(original), 'books at the end');
  // Saved from the given memory (a shard's checkpoint or stop), restored into an engine's own: the same again.
  const fromGiven = path.join(dir, 'from-given-memory.bin');
  writeEngineSnapshot(fromGiven, copy.engine, 'from-given', 0, 8);
  const back = readEngineSnapshot(fromGiven, { token: 'from-given', shard: 0, sequence: copy.engine.sequence }, copy.engine.shape);
  assert.ok(typeof back !== 'string', `restored: ${String(back)}`);
  const third = new EngineDriver(back.engine);
  assert.deepEqual(books(third), books(original));
  for (let n = 0; n < 2_000; n++) {
    const [expected, actual] = stream.run([original, third]);
    assert.deepEqual(actual, expected, `from the given memory, command ${n}`);
  }

  // A damaged file is refused only at its checksum, after every section was read into the memory: zeroed again.
  const damaged = path.join(dir, 'given-memory-damaged.bin');
  const bytes = readFileSync(file);
  bytes[bytes.length - 100]! ^= 0x10;
  writeFileSync(damaged, bytes);
  const refused = new SharedArrayBuffer(orderStoreBytes(options.orderCapacity));
  assert.equal(readEngineSnapshot(damaged, { token: 'given', shard: 0, sequence }, original.engine.shape, refused), 'a checksum mismatch');
  assert.ok(zeroed(refused), 'the refused file left nothing in the memory');

  // A fresh engine in that memory runs as a fresh engine of its own.
  const own = new EngineDriver(options);
  const given = new MatchingEngine({ ...options, orderMemory: refused });
  given.prefault();
  const fresh = new EngineDriver(given);
  const second = new Stream(43, { prices: 60, crossPct: 15 });
  for (let n = 0; n < 6_000; n++) {
    const [expected, actual] = second.run([own, fresh]);
    assert.deepEqual(actual, expected, `fresh, command ${n}`);
  }
  assert.deepEqual(books(fresh), books(own));
  assert.ok((second.counts.get('trade') ?? 0) > 100, 'the stream traded');

  assert.throws(() => new MatchingEngine({ ...options, orderMemory: new SharedArrayBuffer(orderStoreBytes(options.orderCapacity) - 8) }), /takes \d+ bytes, \d+ given/);
});

test('an empty engine saves and restores', () => {
  const engine = new MatchingEngine({ orderCapacity: 64, hashSeed: 3 });
  const file = path.join(dir, 'empty.bin');
  writeEngineSnapshot(file, engine, 'empty', 1, 0);
  const restored = readEngineSnapshot(file, { token: 'empty', shard: 1, sequence: 0 }, engine.shape);
  assert.ok(typeof restored !== 'string');
  const events = new EngineDriver(restored.engine).submit({ orderId: idOf(1, 1), side: 'BUY', price: 100, quantity: 1 });
  assert.equal(events[0]?.kind, 'accepted');
  assert.equal(events[0]?.sequence, 1);
});

test('a snapshot is refused unless it is whole, the one named, at the journal position and of the same shape', () => {
  const driver = new EngineDriver({ orderCapacity: 256, hashSeed: 9 });
  const stream = new Stream(9, { prices: 40, crossPct: 10 });
  for (let n = 0; n < 500; n++) stream.run([driver]);
  const file = path.join(dir, 'refusals.bin');
  const { sequence } = writeEngineSnapshot(file, driver.engine, 'good', 2, 1);
  const shape = driver.engine.shape;
  const expect = { token: 'good', shard: 2, sequence };
  const refusal = (target: string, expectation = expect, wanted = shape) => {
    const result = readEngineSnapshot(target, expectation, wanted);
    assert.equal(typeof result, 'string', 'refused');
    return result as string;
  };
  assert.equal(refusal(file, { ...expect, token: 'other' }), 'the file is not the one the database names');
  assert.equal(refusal(file, { ...expect, shard: 1 }), "the file is shard 2's");
  assert.match(refusal(file, { ...expect, sequence: sequence + 1 }), /journal ends at/);
  assert.match(refusal(file, expect, { ...shape, orderCapacity: 512 }), /orderCapacity 256 then, 512 now/);
  assert.match(refusal(path.join(dir, 'missing.bin')), /^no file/);

  const bytes = readFileSync(file);
  const damaged = path.join(dir, 'damaged.bin');
  const flipped = Buffer.from(bytes);
  flipped[bytes.length - 100]! ^= 0x10; // inside the last section
  writeFileSync(damaged, flipped);
  assert.equal(refusal(damaged), 'a checksum mismatch');
  writeFileSync(damaged, bytes.subarray(0, bytes.length - 1));
  assert.equal(refusal(damaged), 'a file of the wrong length');
  writeFileSync(damaged, Buffer.alloc(4096, 7));
  assert.equal(refusal(damaged), 'not an engine snapshot');
  const header = Buffer.from(bytes);
  header.write('null'.padEnd(header.readUInt32LE(4), ' '), 8, 'utf8');
  writeFileSync(damaged, header);
  assert.equal(refusal(damaged), 'a damaged header');
  // A file of the older level index layout (level numbers only, in a section named levels.table).
  const older = Buffer.from(bytes);
  const at = older.indexOf('"levels.index"');
  assert.ok(at > 8 && at < 8 + older.readUInt32LE(4), 'the header names the level index');
  older.write('"levels.table"', at, 'utf8');
  writeFileSync(damaged, older);
  assert.equal(refusal(damaged), 'section levels.index expected, levels.table found');

  const restored = readEngineSnapshot(file, expect, shape);
  assert.ok(typeof restored !== 'string', 'the good file still loads');
  assert.equal(restored.engine.orders.restingCount, driver.engine.orders.restingCount);
});
