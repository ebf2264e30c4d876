// The checks a loaded engine state must pass (MatchingEngine.loadState and its parts'):
// a valid state is built and saved in memory, one field of it is corrupted, and the load
// must throw that check's message; through a snapshot file, the same state is refused
// with the message as its reason, and a damaged file still reports its checksum.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { crc32 } from 'node:zlib';
import type { StateReader } from '../../core/engine-state.ts';
import { MatchingEngine, type EngineOptions } from '../../core/matching-engine.ts';
import { ORDER_BOOK_WORD, ORDER_FILLED_WORD, ORDER_LEVEL_WORD, ORDER_PREV_WORD, ORDER_RECORD_BYTES, ORDER_STATE_BYTE, orderStoreBytes } from '../../core/order-store.ts';
import { LEVEL_COUNT_WORD, LEVEL_HEAP_POS_WORD, LEVEL_PRICE_FLOAT, LEVEL_QUANTITY_FLOAT, LEVEL_RECORD_BYTES, LEVEL_TAIL_WORD } from '../../core/price-levels.ts';
import { STATE_OPEN } from '../../core/codes.ts';
import { uuidWords } from '../../core/uuid.ts';
import { readEngineSnapshot, writeEngineSnapshot } from '../../persistence/engine-snapshot.ts';
import { ACCOUNT_2, EngineDriver, idOf, INSTRUMENT_B, PARTICIPANT_2 } from '../support/engine-driver.ts';

const OPTIONS: EngineOptions = { orderCapacity: 64, instrumentCapacity: 4, ownerCapacity: 4, hashSeed: 0x5eed };

const dir = mkdtempSync(path.join(os.tmpdir(), 'load-checks-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** An engine's saved state, held in memory: its scalars and a copy of each section. */
interface Saved {
  numbers: Map<string, number>;
  sections: [string, Uint8Array][];
}

function save(engine: MatchingEngine): Saved {
  const saved: Saved = { numbers: new Map(), sections: [] };
  engine.saveState({
    number: (name, value) => saved.numbers.set(name, value),
    array: (name, view) => saved.sections.push([name, new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice()]),
  });
  return saved;
}

function copy(saved: Saved): Saved {
  return { numbers: new Map(saved.numbers), sections: saved.sections.map(([name, bytes]) => [name, bytes.slice()]) };
}

function reader(saved: Saved): StateReader {
  let next = 0;
  const section = (name: string) => {
    const entry = saved.sections[next];
    if (entry?.[0] !== name) throw new Error(`section ${name} expected, ${entry?.[0]} found`);
    return entry[1];
  };
  return {
    number: (name, missing) => saved.numbers.get(name) ?? missing ?? Number.NaN,
    length: (name) => section(name).byteLength,
    into: (name, target) => {
      const bytes = section(name);
      if (bytes.byteLength !== target.byteLength) throw new Error(`section ${name} holds ${bytes.byteLength} bytes, ${target.byteLength} expected`);
      new Uint8Array(target.buffer, target.byteOffset, target.byteLength).set(bytes);
      next++;
    },
  };
}

function load(saved: Saved): MatchingEngine {
  const engine = new MatchingEngine(OPTIONS);
  engine.loadState(reader(saved));
  return engine;
}

function section(saved: Saved, name: string): Uint8Array {
  const found = saved.sections.find(([n]) => n === name);
  assert.ok(found, `no section ${name}`);
  return found[1];
}
const int32 = (saved: Saved, name: string) => new Int32Array(section(saved, name).buffer);
const float64 = (saved: Saved, name: string) => new Float64Array(section(saved, name).buffer);

const id = (n: number) => idOf(0x10ad, n);

/**
 * Two books, two owners, resting orders on both sides (a hidden one, a partly filled one,
 * a queue of two), three retired orders (two filled, one cancelled) and a freed level.
 */
function build(): { engine: MatchingEngine; slot: (n: number) => number } {
  const d = new EngineDriver(OPTIONS);
  d.submit({ orderId: id(1), side: 'BUY', price: 99, quantity: 10 });
  d.submit({ orderId: id(2), side: 'BUY', price: 99, quantity: 5 });
  d.submit({ orderId: id(3), side: 'BUY', price: 99, quantity: 7, hidden: true });
  d.submit({ orderId: id(4), side: 'BUY', price: 98, quantity: 3, participantId: PARTICIPANT_2, accountId: ACCOUNT_2 });
  d.submit({ orderId: id(5), side: 'SELL', price: 101, quantity: 4 });
  d.submit({ orderId: id(6), side: 'SELL', price: 102, quantity: 6, instrumentId: INSTRUMENT_B });
  // Fills order 1 and 2 units of order 2; the IOC itself is filled.
  d.submit({ orderId: id(7), side: 'SELL', price: 99, quantity: 12, ioc: true, participantId: PARTICIPANT_2, accountId: ACCOUNT_2 });
  d.submit({ orderId: id(8), side: 'BUY', price: 99, quantity: 8 });
  d.submit({ orderId: id(9), side: 'SELL', price: 105, quantity: 1 });
  d.cancel({ orderId: id(9) });
  const engine = d.engine;
  const slot = (n: number) => {
    const w = uuidWords(id(n));
    return engine.orders.find(w[0]!, w[1]!, w[2]!, w[3]!);
  };
  assert.equal(engine.orders.restingCount, 6);
  assert.equal(engine.orders.retainedTerminalCount, 3);
  return { engine, slot };
}

const built = build();
const valid = save(built.engine);
const slot = built.slot;
const level99 = built.engine.orders.word(slot(2), ORDER_LEVEL_WORD);
const orderWord = (s: number, field: number) => (s * ORDER_RECORD_BYTES) / 4 + field;
const levelWord = (level: number, field: number) => (level * LEVEL_RECORD_BYTES) / 4 + field;

/**
 * Copies the bucket (of `stride` words) whose last word is `entry` into the next empty
 * bucket after it, so that the original is met first and the copy is the second entry.
 */
function duplicateEntry(table: Int32Array, stride: number, entry: number): void {
  const buckets = table.length / stride;
  let bucket = 0;
  while (table[bucket * stride + stride - 1] !== entry) bucket++;
  let empty = bucket + 1;
  while (table[empty * stride + stride - 1] !== 0) empty++;
  assert.ok(empty < buckets, 'an empty bucket after the entry');
  table.copyWithin(empty * stride, bucket * stride, bucket * stride + stride);
}

test('the valid state loads, and the loaded engine trades as the one saved', () => {
  const engine = load(copy(valid));
  assert.equal(engine.orders.restingCount, 6);
  assert.equal(engine.sequence, built.engine.sequence);
  const events = new EngineDriver(engine).submit({ orderId: id(20), side: 'SELL', price: 99, quantity: 4 });
  assert.deepEqual(
    events.map((e) => e.kind),
    ['accepted', 'execution', 'execution', 'trade', 'execution', 'execution', 'trade'],
  );
});

const cases: { name: string; corrupt: (s: Saved) => void; message: RegExp }[] = [
  // The engine's own scalars and books.
  { name: 'a negative sequence', corrupt: (s) => s.numbers.set('sequence', -1), message: /^engine state holds sequence -1$/ },
  { name: 'a fractional sequence', corrupt: (s) => s.numbers.set('sequence', 2.5), message: /^engine state holds sequence 2.5$/ },
  { name: 'a negative session floor', corrupt: (s) => s.numbers.set('sessionFloor', -3), message: /^engine state holds session floor -3$/ },
  { name: 'more books than instruments', corrupt: (s) => s.numbers.set('books', 5), message: /^engine state holds 5 books of 4$/ },
  {
    name: 'a book without a currency',
    corrupt: (s) => {
      int32(s, 'books.currency')[1] = 0;
    },
    message: /^engine state: book 1 has currency 0$/,
  },
  {
    name: 'a book in the book table twice',
    corrupt: (s) => duplicateEntry(int32(s, 'books.table'), 1, 1),
    message: /^engine state: book 0 is in the book table twice$/,
  },
  // The order store.
  { name: 'more order slots in use than the capacity', corrupt: (s) => s.numbers.set('orders.used', 65), message: /^order store state holds 65 slots of 64$/ },
  {
    name: 'a slot retired twice',
    corrupt: (s) => {
      const retired = int32(s, 'orders.retired');
      retired[1] = retired[0]!;
    },
    message: /^order store state: slot \d+ is retired twice$/,
  },
  {
    name: 'a retired entry out of range',
    corrupt: (s) => {
      int32(s, 'orders.retired')[2] = 40;
    },
    message: /^order store state: retired entry 2 names slot 40 of \d+$/,
  },
  {
    name: 'a terminal order that is not retired',
    corrupt: (s) => {
      section(s, 'orders.records')[slot(9) * ORDER_RECORD_BYTES + ORDER_STATE_BYTE] = STATE_OPEN;
    },
    message: /^order store state: 2 terminal orders but 3 retired$/,
  },
  {
    name: 'a slot indexed twice',
    corrupt: (s) => duplicateEntry(int32(s, 'orders.table'), 2, slot(4) + 1),
    message: new RegExp(`^order store state: slot ${slot(4)} is indexed twice$`),
  },
  {
    name: "an index hash that is not the id's",
    corrupt: (s) => {
      const table = int32(s, 'orders.table');
      const at = table.findIndex((entry, k) => k % 2 === 1 && entry === slot(5) + 1);
      table[at - 1]! ^= 1;
    },
    message: new RegExp(`^order store state: index bucket \\d+ keeps a hash that is not slot ${slot(5)}'s id's$`),
  },
  // The price levels.
  {
    name: 'a level free twice',
    corrupt: (s) => {
      const free = int32(s, 'levels.free');
      free[3] = free[2]!;
    },
    message: /^price level state: level \d+ is free twice$/,
  },
  {
    name: 'a free entry out of range',
    corrupt: (s) => {
      int32(s, 'levels.free')[0] = 1 << 20;
    },
    message: /^price level state: free entry 0 names level 1048576 of \d+$/,
  },
  {
    name: 'a level at the wrong heap position',
    corrupt: (s) => {
      int32(s, 'levels.records')[levelWord(level99, LEVEL_HEAP_POS_WORD)] = 7;
    },
    message: new RegExp(`^price level state: level ${level99} is at heap position 0, not 7$`),
  },
  {
    name: 'a level whose price is not its key',
    corrupt: (s) => {
      float64(s, 'levels.records')[(level99 * LEVEL_RECORD_BYTES) / 8 + LEVEL_PRICE_FLOAT] = 97;
    },
    message: new RegExp(`^price level state: level ${level99} keeps a hash that is not its key's$`),
  },
  // The owners.
  {
    name: 'an owner index entry out of range',
    corrupt: (s) => {
      const table = int32(s, 'owners.table');
      table[table.findIndex((entry) => entry === 0)] = 4;
    },
    message: /^owner state: index bucket \d+ names owner 3 of 2$/,
  },
  {
    name: 'an owner indexed twice',
    corrupt: (s) => duplicateEntry(int32(s, 'owners.table'), 1, 2),
    message: /^owner state: owner 1 is indexed twice$/,
  },
  // Across the parts: orders against books, owners and levels.
  {
    name: 'an order of a book that does not exist',
    corrupt: (s) => {
      int32(s, 'orders.records')[orderWord(slot(6), ORDER_BOOK_WORD)] = 3;
    },
    message: new RegExp(`^engine state: order slot ${slot(6)} names book 3 of 2$`),
  },
  {
    name: 'an engine order number past the sequence',
    corrupt: (s) => {
      float64(s, 'orders.engineNo')[slot(5)] = 1e6;
    },
    message: new RegExp(`^engine state: order slot ${slot(5)} has engine order number 1000000, past sequence \\d+$`),
  },
  {
    name: 'a partly filled order in state OPEN',
    corrupt: (s) => {
      section(s, 'orders.records')[slot(2) * ORDER_RECORD_BYTES + ORDER_STATE_BYTE] = STATE_OPEN;
    },
    message: new RegExp(`^engine state: order slot ${slot(2)} rests in state 1 with 2 filled of 5$`),
  },
  {
    name: "a resting order without a predecessor that is not its queue's head",
    corrupt: (s) => {
      int32(s, 'orders.records')[orderWord(slot(8), ORDER_PREV_WORD)] = -1;
    },
    message: new RegExp(`^engine state: order slot ${slot(8)} starts queue 0 of level ${level99}, whose head is another$`),
  },
  {
    name: 'a resting order whose predecessor links elsewhere',
    corrupt: (s) => {
      int32(s, 'orders.records')[orderWord(slot(8), ORDER_PREV_WORD)] = slot(3);
    },
    message: new RegExp(`^engine state: order slot ${slot(8)}, in queue 0 of level ${level99}, has a predecessor that does not link back to it$`),
  },
  {
    name: 'a queue whose tail is not its last order',
    corrupt: (s) => {
      int32(s, 'levels.records')[levelWord(level99, LEVEL_TAIL_WORD)] = slot(2);
    },
    message: new RegExp(`^engine state: order slot ${slot(8)} ends queue 0 of level ${level99}, whose tail is another$`),
  },
  {
    name: 'a level counting more orders than rest in its queue',
    corrupt: (s) => {
      int32(s, 'levels.records')[levelWord(level99, LEVEL_COUNT_WORD)] = 3;
    },
    message: new RegExp(`^engine state: queue 0 of level ${level99} counts 3 orders, 2 rest in it$`),
  },
  {
    name: "a level whose open quantity is not its orders'",
    corrupt: (s) => {
      float64(s, 'levels.records')[(level99 * LEVEL_RECORD_BYTES) / 8 + LEVEL_QUANTITY_FLOAT + 1] = 6;
    },
    message: new RegExp(`^engine state: queue 1 of level ${level99} holds 6 open, its orders 7$`),
  },
  {
    name: 'a filled order with quantity left',
    corrupt: (s) => {
      int32(s, 'orders.records')[orderWord(slot(1), ORDER_FILLED_WORD)] = 9;
    },
    message: new RegExp(`^engine state: order slot ${slot(1)} in state 3 has 9 filled of 10$`),
  },
];

for (const { name, corrupt, message } of cases) {
  test(`a state with ${name} is refused`, () => {
    const state = copy(valid);
    corrupt(state);
    assert.throws(
      () => load(state),
      (error: Error) => {
        assert.match(error.message, message);
        return true;
      },
    );
  });
}

/** The file's byte offset of a section's first byte (the header names each section and its length). */
function sectionAt(bytes: Buffer, name: string): number {
  const headerLength = bytes.readUInt32LE(4);
  const header = JSON.parse(bytes.toString('utf8', 8, 8 + headerLength)) as { sections: [string, number][] };
  let at = 8 + headerLength;
  for (const [section, length] of header.sections) {
    if (section === name) return at;
    at += length;
  }
  throw new Error(`no section ${name}`);
}

test("a snapshot file whose state fails a check is refused with the check's message, its memory zeroed again; damaged, with a checksum mismatch", () => {
  const file = path.join(dir, 'valid.bin');
  const { sequence } = writeEngineSnapshot(file, built.engine, 'checks', 0, 1);
  const expect = { token: 'checks', shard: 0, sequence };
  const bytes = readFileSync(file);
  const retiredAt = sectionAt(bytes, 'orders.retired');
  const broken = Buffer.from(bytes);
  broken.writeInt32LE(broken.readInt32LE(retiredAt), retiredAt + 4);
  const whole = Buffer.from(broken);
  whole.writeUInt32LE(crc32(whole.subarray(0, whole.length - 4)) >>> 0, whole.length - 4);
  const target = path.join(dir, 'broken.bin');
  writeFileSync(target, whole);
  const memory = new SharedArrayBuffer(orderStoreBytes(OPTIONS.orderCapacity!));
  const refused = readEngineSnapshot(target, expect, built.engine.shape, memory);
  assert.equal(typeof refused, 'string');
  assert.match(refused as string, /^the file could not be read: order store state: slot \d+ is retired twice$/);
  assert.ok(
    new Uint8Array(memory).every((byte) => byte === 0),
    'the refused file left nothing in the memory',
  );
  // The same state with the file's checksum left as it was: the damage is the reason given.
  writeFileSync(target, broken);
  assert.equal(readEngineSnapshot(target, expect, built.engine.shape), 'a checksum mismatch');
  const restored = readEngineSnapshot(file, expect, built.engine.shape);
  assert.ok(typeof restored !== 'string', `the valid file loads: ${String(restored)}`);
});
