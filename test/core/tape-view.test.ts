// The tape view in shared memory (core/tape-view.ts): what a read answers, when it must
// leave the read to storage (older than the ring, an instrument the full view does not
// hold, before the start's load), its bounds, and a reader beside a writer thread.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TapeBatch, TapeView, type TapeRow } from '../../core/tape-view.ts';
import { readBesideWriter } from '../support/reader-beside-writer.ts';

const id = (n: number) => Int32Array.of(n, 0x11, 0x22, 0x33);
const USD = 0x555344;

/** A view of `instruments` instruments and `rows` rows each, loaded (storage had nothing). */
function view(instruments: number, rows: number): TapeView {
  const tape = new TapeView(TapeView.create(instruments, rows));
  tape.markLoaded();
  return tape;
}

/** Appends trades with these sequences to `instrument` (price 10 s, quantity s, µs 100 s). */
function append(tape: TapeView, instrument: number, sequences: number[]): boolean {
  const batch = new TapeBatch();
  for (const s of sequences) batch.add(id(instrument), 0, Int32Array.of(s, -s, s, -s), 0, 10 * s, s, 100 * s, s, USD);
  return tape.publish(batch);
}

const sequencesOf = (rows: TapeRow[] | null) => (rows === null ? null : rows.map((row) => row.sequence));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => from + k);

test('a read answers the most recent trades first, `before` pages strictly older, and each row as appended', () => {
  const tape = view(4, 8);
  assert.equal(append(tape, 1, [3, 5, 9]), true);
  assert.equal(append(tape, 2, [4]), true);
  assert.equal(append(tape, 1, [12]), true);
  assert.deepEqual(sequencesOf(tape.read(id(1), 10, null)), [12, 9, 5, 3], 'the whole history: fewer rows than asked is the answer');
  assert.deepEqual(sequencesOf(tape.read(id(1), 2, null)), [12, 9]);
  assert.deepEqual(sequencesOf(tape.read(id(1), 2, 9)), [5, 3]);
  assert.deepEqual(sequencesOf(tape.read(id(1), 2, 10)), [9, 5]);
  assert.deepEqual(sequencesOf(tape.read(id(1), 5, 3)), [], 'nothing older than the first trade');
  assert.deepEqual(sequencesOf(tape.read(id(2), 5, null)), [4]);
  assert.deepEqual(tape.read(id(1), 1, null), [{ tradeId: Int32Array.of(12, -12, 12, -12), priceNanos: 120, quantity: 12, occurredAtUs: 1200, sequence: 12, currency: USD }]);
  assert.deepEqual(tape.read(id(3), 5, null), [], 'an instrument without trades (the view is not full)');
  assert.equal(tape.used, 2);
});

test('a ring holds the last rows: pages within it are answered, pages reaching older trades are left to storage', () => {
  const tape = view(2, 4);
  append(tape, 1, range(1, 10));
  assert.deepEqual(sequencesOf(tape.read(id(1), 4, null)), [10, 9, 8, 7]);
  assert.deepEqual(sequencesOf(tape.read(id(1), 2, 9)), [8, 7]);
  assert.equal(tape.read(id(1), 5, null), null, 'a fifth row is beyond the ring');
  assert.equal(tape.read(id(1), 1, 7), null, 'older than the ring');
  assert.equal(tape.read(id(1), 3, 9), null, 'part in the ring, part older');
});

test('loaded at start: complete or not decides whether fewer rows than asked is the whole answer', () => {
  const buffer = TapeView.create(4, 4);
  const tape = new TapeView(buffer);
  const row = (s: number): TapeRow => ({ tradeId: Int32Array.of(s, 0, 0, s), priceNanos: s, quantity: 1, occurredAtUs: s, sequence: s, currency: USD });
  assert.equal(tape.load(id(1), [row(7), row(8)], true), true);
  assert.equal(tape.load(id(2), [row(5), row(6)], false), true);
  assert.equal(tape.read(id(1), 2, null), null, 'not marked loaded: every read goes to storage');
  assert.equal(tape.read(id(3), 2, null), null);
  tape.markLoaded();
  assert.deepEqual(sequencesOf(tape.read(id(1), 10, null)), [8, 7], 'complete: all it has');
  assert.equal(tape.read(id(2), 10, null), null, 'not complete: storage holds older trades');
  assert.deepEqual(sequencesOf(tape.read(id(2), 2, null)), [6, 5], 'a page the ring holds whole');
  append(tape, 2, [9, 10]);
  assert.deepEqual(sequencesOf(tape.read(id(2), 4, null)), [10, 9, 6, 5], 'appended after the loaded rows');
  assert.equal(tape.read(id(2), 4, 6), null);
  append(tape, 1, [11, 12, 13]);
  assert.deepEqual(sequencesOf(tape.read(id(1), 4, null)), [13, 12, 11, 8]);
  assert.equal(tape.read(id(1), 5, null), null, 'complete, but the ring dropped its oldest (7)');
});

test('bounded: an instrument past the bound is refused, marks the view full, and its reads go to storage', () => {
  const tape = view(2, 4);
  assert.equal(append(tape, 1, [1]), true);
  assert.equal(append(tape, 2, [2]), true);
  assert.equal(tape.full, false);
  assert.equal(append(tape, 3, [3, 4]), false);
  assert.equal(tape.full, true);
  assert.equal(tape.read(id(3), 5, null), null, 'not held, and the view is full: it cannot tell');
  assert.equal(tape.read(id(4), 5, null), null);
  assert.deepEqual(sequencesOf(tape.read(id(1), 5, null)), [1], 'the held ones still answer');
  assert.equal(append(tape, 2, [5]), true);
  assert.deepEqual(sequencesOf(tape.read(id(2), 5, null)), [5, 2]);
  const off = view(8, 0);
  assert.equal(append(off, 1, [1]), false, '0 rows: a view that holds nothing');
  assert.equal(off.read(id(1), 1, null), null);
  assert.throws(() => TapeView.create(4, 501), /0-500/);
  assert.throws(() => TapeView.create(4, -1), /0-500/);
});

test('a reader beside a writer thread sees whole rows in tape order, never a torn or misplaced one', async () => {
  const buffer = TapeView.create(4, 64);
  const tape = new TapeView(buffer);
  tape.markLoaded();
  const count = 300_000;
  const { reads, exitCode } = await readBesideWriter(new URL('./fixtures/tape-writer.worker.ts', import.meta.url), { view: buffer, count }, () => {
    const rows = tape.read(Int32Array.of(1, 2, 3, 4), 64, null);
    if (rows === null || rows.length === 0) return false;
    const newest = rows[0]!.sequence;
    assert.equal(rows.length, Math.min(64, newest), `read at ${newest}: the whole ring (or the whole history)`);
    rows.forEach((row, k) => {
      const n = newest - k;
      assert.deepEqual([row.sequence, row.priceNanos, row.quantity, row.occurredAtUs, [...row.tradeId]], [n, 1000 * n, n, 1_700_000_000_000_000 + n, [n, n, n, n]]);
    });
    return true;
  });
  assert.equal(exitCode, 0);
  assert.ok(reads > 10, `reads ${reads}`);
  assert.deepEqual(sequencesOf(tape.read(Int32Array.of(1, 2, 3, 4), 3, null)), [count, count - 1, count - 2]);
});
