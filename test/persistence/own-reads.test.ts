// The in-memory own orders and fills (persistence/own-reads.ts) against a plain model:
// every order as it is now and every fill, sorted as the API orders them. Whenever the
// model answers, its answer equals the plain sort; it declines (null) only when what it
// lacks could be in the answer: trimmed off its windows, or from before the start.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { STATE_CANCELLED, STATE_FILLED, STATE_OPEN, STATE_PARTIALLY_FILLED } from '../../core/codes.ts';
import { formatUuid, idKey, uuidWords } from '../../core/uuid.ts';
import { OwnReads, type OwnOrderChange } from '../../persistence/own-reads.ts';
import { ownReadsPath, readOwnReads, writeOwnReads } from '../../persistence/own-reads-snapshot.ts';

const PARTICIPANTS = ['a1000000-0000-4000-8000-00000000000a', 'b1000000-0000-4000-8000-00000000000b', 'c1000000-0000-4000-8000-00000000000c'];
const INSTRUMENTS = ['10000000-0000-4000-8000-000000000001', '10000000-0000-4000-8000-000000000002'];
const ACCOUNT = 'ac000000-0000-4000-8000-0000000000ac';
const sessionNames = (runNo: number, sessionNo: number): [string, string] => [`run-${runNo}`, `session-${sessionNo}`];

/** A seeded generator, so that a failure repeats. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 4294967296;
  };
}

function orderIds(n: number, participant: number, instrument: number): Int32Array {
  const ids = new Int32Array(16);
  // Order ids out of step with their numbers, so that ties by orderId are not ties by arrival.
  ids.set(uuidWords(`${((n * 2654435761) >>> 0).toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`), 0);
  ids.set(uuidWords(INSTRUMENTS[instrument]!), 4);
  ids.set(uuidWords(PARTICIPANTS[participant]!), 8);
  ids.set(uuidWords(ACCOUNT), 12);
  return ids;
}

interface Plain extends OwnOrderChange {
  key: string;
}

interface PlainFill {
  participant: string;
  instrument: string;
  orderId: string;
  shard: number;
  sequence: number;
  occurredAtUs: number;
}

const isOpen = (state: number) => state === STATE_OPEN || state === STATE_PARTIALLY_FILLED;

function plainOrders(orders: Map<string, Plain>, view: 'current' | 'history', participants: string[], instrument: string | null, limit: number): string[] {
  return [...orders.values()]
    .filter((o) => participants.includes(formatUuid(o.ids, 8)) && (instrument === null || formatUuid(o.ids, 4) === instrument) && (view === 'history' || isOpen(o.state)))
    .sort((a, b) => b.updatedAtUs - a.updatedAtUs || (formatUuid(a.ids, 0) < formatUuid(b.ids, 0) ? -1 : 1))
    .slice(0, limit)
    .map((o) => `${formatUuid(o.ids, 0)} ${o.state} ${o.filled} ${o.updatedAtUs}`);
}

function plainFills(fills: PlainFill[], participants: string[], instrument: string | null, limit: number): string[] {
  return fills
    .filter((f) => participants.includes(f.participant) && (instrument === null || f.instrument === instrument))
    .sort((a, b) => b.occurredAtUs - a.occurredAtUs || a.shard - b.shard || b.sequence - a.sequence)
    .slice(0, limit)
    .map((f) => `${f.orderId} ${f.shard}/${f.sequence}`);
}

/**
 * Drives `reads` and the plain model with the same random orders, changes and fills;
 * after each step compares every kind of read. Returns how many reads the model
 * answered and how many it declined.
 */
function drive(reads: OwnReads, seed: number, steps: number, startUs: number, known: { orders: Map<string, Plain>; fills: PlainFill[] }): { answered: number; declined: number } {
  const next = random(seed);
  const { orders, fills } = known;
  let clockUs = startUs;
  let n = orders.size;
  let sequence = 1000 * seed;
  let answered = 0;
  let declined = 0;
  for (let step = 0; step < steps; step++) {
    // Time moves on mostly, stands still often (ties), and now and then steps back a little (two shards' clocks).
    const r = next();
    clockUs += r < 0.4 ? 0 : r < 0.9 ? 1 + Math.floor(next() * 5) : -Math.floor(next() * 3);
    const open = [...orders.values()].filter((o) => isOpen(o.state));
    if (open.length === 0 || next() < 0.45) {
      const order: Plain = {
        key: '',
        ids: orderIds(n++, Math.floor(next() * PARTICIPANTS.length), Math.floor(next() * INSTRUMENTS.length)),
        runNo: 1,
        sessionNo: 1,
        side: next() < 0.5 ? 0 : 1,
        orderType: 0,
        timeInForce: 0,
        state: STATE_OPEN,
        priceNanos: 1_000_000_000 + Math.floor(next() * 10) * 1_000_000,
        quantity: 10,
        filled: 0,
        currency: 0x555344,
        updatedAtUs: clockUs,
        clientOrderId: next() < 0.8 ? new TextEncoder().encode(`c-${n}-\u{1F600}`) : null,
      };
      order.key = idKey(order.ids, 0);
      orders.set(order.key, order);
      reads.changed(order.key, order, true);
    } else {
      const order = open[Math.floor(next() * open.length)]!;
      if (next() < 0.3) order.state = STATE_CANCELLED;
      else {
        const quantity = 1 + Math.floor(next() * (order.quantity - order.filled));
        order.filled += quantity;
        order.state = order.filled === order.quantity ? STATE_FILLED : STATE_PARTIALLY_FILLED;
        sequence++;
        fills.push({ participant: formatUuid(order.ids, 8), instrument: formatUuid(order.ids, 4), orderId: formatUuid(order.ids, 0), shard: sequence % 2, sequence, occurredAtUs: clockUs });
        reads.filled(order.ids, order.side, sequence % 2, sequence, sequence + 1, quantity, order.priceNanos, order.currency, clockUs);
      }
      order.updatedAtUs = clockUs;
      reads.changed(order.key, order, true);
    }
    if (step % 7 !== 0) continue;
    for (const participants of [[PARTICIPANTS[0]!], [PARTICIPANTS[1]!, PARTICIPANTS[2]!], [PARTICIPANTS[0]!, 'f0000000-0000-4000-8000-00000000000f']]) {
      for (const instrument of [null, INSTRUMENTS[1]!]) {
        for (const limit of [1, 3, 10, 40]) {
          for (const view of ['current', 'history'] as const) {
            const rows = reads.orders(view, participants, instrument, limit);
            if (rows === null) {
              declined++;
              continue;
            }
            answered++;
            const got = rows.map(
              (row) =>
                `${row.orderId} ${['FREE', 'OPEN', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED'].indexOf(row.state)} ${row.filledQuantity.units} ${Date.parse(row.updatedAt) * 1000 + Number(row.updatedAt.slice(23, 26))}`,
            );
            assert.deepEqual(got, plainOrders(orders, view, participants, instrument, limit), `${view} of ${participants.join()} in ${instrument}, limit ${limit}, step ${step}`);
          }
          const fillRows = reads.fills(participants, instrument, limit);
          if (fillRows === null) {
            declined++;
            continue;
          }
          answered++;
          const byExecution = new Map(fills.map((f) => [`${f.shard}/${f.sequence}`, f]));
          const got = fillRows.map((row) => {
            const words = uuidWords(row.executionId);
            const shard = words[0]! & 0xffff;
            const execution = words[3]! >>> 0;
            assert.ok(byExecution.has(`${shard}/${execution}`));
            return `${row.orderId} ${shard}/${execution}`;
          });
          assert.deepEqual(got, plainFills(fills, participants, instrument, limit), `fills of ${participants.join()} in ${instrument}, limit ${limit}, step ${step}`);
        }
      }
    }
  }
  return { answered, declined };
}

test('own reads: every answer equals a sort of every order and fill; with nothing trimmed, it always answers', () => {
  const reads = new OwnReads(1_000_000, sessionNames);
  const { answered, declined } = drive(reads, 1, 700, 1_700_000_000_000_000, { orders: new Map(), fills: [] });
  assert.equal(declined, 0);
  assert.ok(answered > 5_000, `${answered} answers`);
});

test('own reads: small windows trim, and a read that could need what was trimmed is declined, never answered short', () => {
  const reads = new OwnReads(6, sessionNames);
  const { answered, declined } = drive(reads, 2, 700, 1_700_000_000_000_000, { orders: new Map(), fills: [] });
  assert.ok(answered > 1_000, `${answered} answered`);
  assert.ok(declined > 1_000, `${declined} declined`);
  // Open orders are never trimmed: a participant's current orders always answer.
  assert.notEqual(reads.orders('current', [PARTICIPANTS[0]!], null, 40), null);
});

test('own reads: after a start on a database that holds orders, reads answer once enough lies above what storage held', () => {
  const startUs = 1_700_000_000_000_000;
  // Before the start: orders and fills the model never saw.
  const known = { orders: new Map<string, Plain>(), fills: [] as PlainFill[] };
  drive(new OwnReads(1_000_000, sessionNames), 3, 200, startUs, known);
  const storedThroughUs = Math.max(...[...known.orders.values()].map((o) => o.updatedAtUs));
  const reads = new OwnReads(1_000_000, sessionNames);
  reads.lacksHistoryThrough(true, true, storedThroughUs);
  assert.equal(reads.orders('history', [PARTICIPANTS[0]!], null, 1), null, 'nothing seen yet');
  assert.equal(reads.fills([PARTICIPANTS[0]!], null, 1), null);
  // The orders from before are in the plain model (as in storage), so every answer covers them too.
  const { answered, declined } = drive(reads, 4, 700, storedThroughUs + 1, known);
  assert.ok(answered > 1_000, `${answered} answered`);
  assert.ok(declined > 100, `${declined} declined`);
});

test('own reads: rows render as the API does, a clientOrderId the model was not told is left for a lookup', () => {
  const reads = new OwnReads(10, sessionNames);
  const ids = orderIds(7, 0, 1);
  const order: OwnOrderChange = {
    ids,
    runNo: 2,
    sessionNo: 3,
    side: 1,
    orderType: 1,
    timeInForce: 1,
    state: STATE_PARTIALLY_FILLED,
    priceNanos: 123_456_789_000,
    quantity: 9_007_199_254_740_991,
    filled: 4,
    currency: 0x455552,
    updatedAtUs: 1_700_000_000_123_456,
    clientOrderId: null,
  };
  reads.changed(idKey(ids, 0), order, false);
  assert.deepEqual(reads.orders('current', [PARTICIPANTS[0]!], INSTRUMENTS[1]!, 5), [
    {
      orderId: formatUuid(ids, 0),
      clientOrderId: undefined,
      runId: 'run-2',
      venueSessionId: 'session-3',
      instrumentId: INSTRUMENTS[1],
      participantId: PARTICIPANTS[0],
      accountId: ACCOUNT,
      side: 'SELL',
      orderType: 'LIMIT_HIDDEN',
      timeInForce: 'IOC',
      state: 'PARTIALLY_FILLED',
      limitPrice: { nanos: '123456789000', currency: 'EUR' },
      originalQuantity: { units: '9007199254740991' },
      remainingQuantity: { units: '9007199254740987' },
      filledQuantity: { units: '4' },
      updatedAt: '2023-11-14T22:13:20.123456Z',
    },
  ]);
  reads.changed(idKey(ids, 0), { ...order, state: STATE_CANCELLED, updatedAtUs: order.updatedAtUs + 1 }, false);
  const [closed] = reads.orders('history', [PARTICIPANTS[0]!], null, 5)!;
  assert.equal(closed!.state, 'CANCELLED');
  assert.equal(closed!.remainingQuantity.units, '0');
  assert.deepEqual(reads.orders('current', [PARTICIPANTS[0]!], null, 5), []);
});

test('own reads kept across a graceful stop: the file restores every answer, and the restored model goes on as the original would', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'own-reads-'));
  try {
    const startUs = 1_700_000_000_000_000;
    const known = { orders: new Map<string, Plain>(), fills: [] as PlainFill[] };
    const before = new OwnReads(6, sessionNames); // small windows: trimmed lists, raised floors
    before.lacksHistoryThrough(true, false, startUs - 10); // and a floor from a start on stored orders
    drive(before, 5, 600, startUs, known);
    const file = ownReadsPath(dir);
    const watermarks = [120, 340];
    assert.ok(writeOwnReads(file, 'token-1', watermarks, before.image()) > 0);

    const image = readOwnReads(file, 'token-1', watermarks, 6);
    assert.ok(typeof image !== 'string', String(image));
    const after = new OwnReads(6, sessionNames);
    after.restore(image);
    const asked = (reads: OwnReads) =>
      [[PARTICIPANTS[0]!], [PARTICIPANTS[1]!, PARTICIPANTS[2]!], ['f0000000-0000-4000-8000-00000000000f']].flatMap((participants) =>
        [null, INSTRUMENTS[1]!].flatMap((instrument) =>
          [1, 4, 40].flatMap((limit) => [
            reads.orders('current', participants, instrument, limit),
            reads.orders('history', participants, instrument, limit),
            reads.fills(participants, instrument, limit),
          ]),
        ),
      );
    // Whatever the restored model answers is what the stopped one answered; it declines more only where it cut an open list.
    const answers = asked(before);
    const restored = asked(after);
    const compared = restored.filter((rows) => rows !== null && rows.length > 0).length;
    assert.ok(compared > 10, `${compared} answers compared`);
    restored.forEach((rows, k) => rows !== null && assert.deepEqual(rows, answers[k]));
    assert.ok(after.ordersHeld <= before.ordersHeld);
    // The same orders change on: each is found again by its key (no order twice), the floors trim on.
    const { answered } = drive(after, 6, 300, startUs + 10_000, known);
    assert.ok(answered > 500, `${answered} answered after the restore`);

    // Refused whole: another stop's file, other watermarks, another window, a damaged byte; the model is kept as it was.
    assert.equal(readOwnReads(file, 'token-2', watermarks, 6), 'the file is not the one the database names');
    assert.match(String(readOwnReads(file, 'token-1', [120, 341], 6)), /true at projections 120,340, storage holds 120,341/);
    assert.match(String(readOwnReads(file, 'token-1', watermarks, 7)), /OWN_READS_WINDOW is 7/);
    const bytes = readFileSync(file);
    bytes[bytes.length - 9]! ^= 1;
    writeFileSync(file, bytes);
    assert.equal(readOwnReads(file, 'token-1', watermarks, 6), 'a checksum mismatch');
    assert.match(String(readOwnReads(path.join(dir, 'none.bin'), 'token-1', watermarks, 6)), /^no file/);
    // An open list longer than the window is kept to its most recent orders, its floor raised to the first left out.
    const many = new OwnReads(3, sessionNames);
    for (let n = 0; n < 10; n++) {
      const ids = orderIds(900 + n, 0, 0);
      many.changed(
        idKey(ids, 0),
        {
          ids,
          runNo: 1,
          sessionNo: 1,
          side: 0,
          orderType: 0,
          timeInForce: 0,
          state: STATE_OPEN,
          priceNanos: 1,
          quantity: 1,
          filled: 0,
          currency: 0x555344,
          updatedAtUs: startUs + n,
          clientOrderId: null,
        },
        true,
      );
    }
    const cut = new OwnReads(3, sessionNames);
    cut.restore(many.image());
    assert.equal(cut.ordersHeld, 3);
    assert.deepEqual(cut.orders('current', [PARTICIPANTS[0]!], null, 3), many.orders('current', [PARTICIPANTS[0]!], null, 3));
    assert.equal(many.orders('current', [PARTICIPANTS[0]!], null, 4)?.length, 4);
    assert.equal(cut.orders('current', [PARTICIPANTS[0]!], null, 4), null, 'a deeper read goes to storage');

    const held = after.ordersHeld;
    const twice = after.image();
    assert.ok(twice.orderIds.length >= 32);
    twice.orderIds.copyWithin(16, 0, 16); // the second order of the image is the first again
    assert.throws(() => new OwnReads(6, sessionNames).restore(twice), /twice|out of order|wrong list|a participant/);
    // Another participant's order among one participant's: it would show in the wrong participant's reads.
    const mixed = many.image();
    mixed.orderIds.set(orderIds(999, 1, 0), 16);
    assert.throws(() => new OwnReads(3, sessionNames).restore(mixed), /under another participant/);
    assert.throws(() => new OwnReads(2, sessionNames).restore(many.image()), /more than the window of 2/);
    const short = { ...after.image(), orderNumbers: new Float64Array(4) };
    assert.throws(() => after.restore(short), /orderNumbers holds 4 values/);
    assert.equal(after.ordersHeld, held);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
