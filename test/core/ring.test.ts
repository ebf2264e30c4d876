import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Doorbell } from '../../core/doorbell.ts';
import { createRingBuffer, RingConsumer, RingProducer, ringMarks } from '../../core/ring.ts';
import { spawnWorker } from '../../runtime/worker-spawn.ts';

const SLOT = 16;

function pair(capacity: number): { producer: RingProducer; consumer: RingConsumer } {
  const buffer = createRingBuffer(SLOT, capacity);
  return { producer: new RingProducer(buffer, SLOT), consumer: new RingConsumer(buffer, SLOT) };
}

function write(producer: RingProducer, values: number[]): void {
  values.forEach((value, k) => {
    producer.words[producer.slotOffset(producer.nextIndex + k) >> 2] = value;
  });
  producer.publish(values.length);
}

function read(consumer: RingConsumer, count: number): number[] {
  assert.ok(consumer.available() >= count);
  const out: number[] = [];
  for (let k = 0; k < count; k++) out.push(consumer.words[consumer.slotOffset(consumer.nextIndex + k) >> 2]!);
  consumer.release(count);
  return out;
}

test('an empty ring has nothing available and every slot free', () => {
  const { producer, consumer } = pair(8);
  assert.equal(consumer.available(), 0);
  assert.equal(producer.freeSlots(), 8);
});

test('a full ring answers 0 free slots until the consumer releases one', () => {
  const { producer, consumer } = pair(4);
  write(producer, [1, 2, 3, 4]);
  assert.equal(producer.freeSlots(), 0);
  assert.equal(consumer.available(), 4);
  assert.deepEqual(read(consumer, 1), [1]);
  assert.equal(producer.freeSlots(), 1);
  write(producer, [5]);
  assert.equal(producer.freeSlots(), 0);
  assert.deepEqual(read(consumer, 4), [2, 3, 4, 5]);
  assert.equal(consumer.available(), 0);
  assert.throws(() => consumer.release(1), /beyond the available/);
  write(producer, [6, 7, 8, 9]);
  assert.throws(() => producer.publish(1), /beyond the free/);
});

test('slots wrap around the end of the buffer in order', () => {
  const { producer, consumer } = pair(4);
  const seen: number[] = [];
  let next = 0;
  for (let round = 0; round < 25; round++) {
    const batch = 1 + (round % 3);
    write(
      producer,
      Array.from({ length: batch }, () => next++),
    );
    seen.push(...read(consumer, consumer.available()));
  }
  assert.deepEqual(
    seen,
    Array.from({ length: next }, (_, i) => i),
  );
});

test('indices wrap at 2^32 without losing or repeating a slot', () => {
  const buffer = createRingBuffer(SLOT, 8);
  const control = new Int32Array(buffer);
  control[0] = 0xfffffffa | 0; // write index, six slots before the wrap
  control[16] = 0xfffffffa | 0; // read index
  const producer = new RingProducer(buffer, SLOT);
  const consumer = new RingConsumer(buffer, SLOT);
  const seen: number[] = [];
  for (let n = 0; n < 40; n += 5) {
    write(producer, [n, n + 1, n + 2, n + 3, n + 4]);
    assert.equal(consumer.available(), 5);
    seen.push(...read(consumer, 5));
  }
  assert.deepEqual(
    seen,
    Array.from({ length: 40 }, (_, i) => i),
  );
  assert.ok(consumer.nextIndex < 100, 'the read index wrapped');
});

test('three producer threads into one consumer: every sequence arrives once, in order', async () => {
  const producers = 3;
  const count = 100_000;
  const doorbell = Doorbell.create();
  const bell = new Doorbell(doorbell);
  const rings = Array.from({ length: producers }, () => createRingBuffer(SLOT, 256));
  const consumers = rings.map((ring) => new RingConsumer(ring, SLOT));
  const workers = rings.map((ring, producer) =>
    spawnWorker(new URL('./fixtures/ring-producer.worker.ts', import.meta.url), {
      ring,
      doorbell,
      producer,
      count,
      seed: 100 + producer,
    }),
  );
  const exited = workers.map(
    (w) =>
      new Promise<number>((resolve, reject) => {
        w.on('error', reject);
        w.on('exit', resolve);
      }),
  );
  const expected = new Array<number>(producers).fill(0);
  const deadline = Date.now() + 60_000;
  while (expected.some((n) => n < count)) {
    assert.ok(Date.now() < deadline, `stalled at ${expected.join(',')}`);
    let any = false;
    for (const consumer of consumers) {
      const available = consumer.available();
      if (available === 0) continue;
      any = true;
      for (let k = 0; k < available; k++) {
        const at = consumer.slotOffset(consumer.nextIndex + k);
        const producer = consumer.words[at >> 2]!;
        const sequence = consumer.words[(at >> 2) + 1]!;
        if (sequence !== expected[producer] || consumer.floats[(at >> 3) + 1] !== sequence * 7) {
          assert.fail(`producer ${producer}: got ${sequence}, expected ${expected[producer]}`);
        }
        expected[producer]!++;
      }
      consumer.release(available);
    }
    if (!any) {
      const seen = bell.prepareSleep();
      if (consumers.every((c) => c.available() === 0)) await bell.sleepAsync(seen, 50);
      else bell.wake();
    }
  }
  assert.deepEqual(await Promise.all(exited), [0, 0, 0]);
  assert.deepEqual(expected, [count, count, count]);
});

test('the high-water mark is the most slots ever filled at once, readable from the buffer by any thread', () => {
  const buffer = createRingBuffer(SLOT, 8);
  const producer = new RingProducer(buffer, SLOT);
  const consumer = new RingConsumer(buffer, SLOT);
  assert.deepEqual(ringMarks(buffer, SLOT), { capacity: 8, now: 0, highWater: 0 });
  write(producer, [1, 2, 3]);
  read(consumer, 2);
  write(producer, [4, 5, 6, 7]); // 1 + 4 = 5 filled
  assert.deepEqual(ringMarks(buffer, SLOT), { capacity: 8, now: 5, highWater: 5 });
  read(consumer, 5);
  write(producer, [8]);
  assert.deepEqual(ringMarks(buffer, SLOT), { capacity: 8, now: 1, highWater: 5 }, 'the mark stays after the ring drained');
  assert.equal(consumer.highWater(), 5);
  write(producer, [9, 10, 11, 12, 13, 14, 15]); // full
  assert.equal(producer.freeSlots(), 0);
  assert.deepEqual(ringMarks(buffer, SLOT), { capacity: 8, now: 8, highWater: 8 });
  assert.equal(new RingProducer(buffer, SLOT).highWater(), 8, 'a new producer on the same ring keeps the mark');
});
