import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import {
  INTAKE_LAYOUT_PACKED,
  INTAKE_RECORD_BYTES,
  INTAKE_RECORD_BYTES_V1,
  intakeStride,
  packedIntakeBytes,
  packIntake,
  readIntake,
  storedIntake,
  writeIntake,
  type IntakeInput,
} from '../../core/intake-record.ts';
import { uuidWords } from '../../core/uuid.ts';

const hexOf = (bytes: Uint8Array | null) => (bytes === null ? null : Buffer.from(bytes).toString('hex'));
const uuidHex = (text: string) => text.replace(/-/g, '').toLowerCase();

test('an intake record reads back what was written: ids as their big-endian bytes, texts in UTF-8, nothing of the record before it', () => {
  const buffer = new SharedArrayBuffer(INTAKE_RECORD_BYTES * 3);
  const views = { words: new Int32Array(buffer), floats: new Float64Array(buffer), bytes: new Uint8Array(buffer) };
  const slot = new Uint8Array(128).map((_, k) => (k * 7 + 3) & 0xff);
  const texts: Array<[string, string, string | null]> = [
    ['desk-1', 'key-0001', null],
    ['x'.repeat(128), '!'.repeat(128), 'c'.repeat(64)], // every bound filled
    ['clïent☃', 'kéy😀', 'órder-☃-😀'], // not ASCII: encoded as UTF-8
    ['a', 'b', 'FFFFFFFF-ffff-4fff-8fff-ffffffffffff'],
    ['desk-2', 'key-0002', '𝄞'.repeat(64)], // 64 astral code points: 128 UTF-16 units, 256 bytes, kept whole
    ['desk-3', 'key-0003', `${'☃'.repeat(63)}😀`], // three-byte characters and one of four
  ];
  for (const [k, [clientId, idempotencyKey, clientOrderId]] of texts.entries()) {
    const ids = [randomUUID(), randomUUID(), k === 3 ? 'FFFFFFFF-FFFF-4FFF-8FFF-FFFFFFFFFFFF' : randomUUID()];
    const scope = new Uint8Array(32).map((_, i) => (i * 31 + k) & 0xff);
    const payload = new Uint8Array(32).map((_, i) => (i * 17 + k) & 0xff);
    const withIds = k % 2 === 0;
    const input: IntakeInput = {
      processingMode: k % 4,
      route: (k + 1) % 4,
      shard: k,
      principal: 10 + k,
      receivedAtUs: 1_795_316_400_000_000 + k,
      commandId: uuidWords(ids[0]!),
      scopeDigest: scope,
      payloadHash: payload,
      orderId: withIds ? uuidWords(ids[1]!) : null,
      instrumentId: withIds ? uuidWords(ids[2]!) : null,
      slot,
      clientId,
      idempotencyKey,
      clientOrderId,
      bodyLength: 100 + k,
    };
    const at = INTAKE_RECORD_BYTES * (k % 3);
    views.bytes.fill(0xab, at, at + INTAKE_RECORD_BYTES); // what a lap of the ring left there
    writeIntake(views, at, input);
    const read = readIntake(views, at);
    assert.equal(read.processingMode, input.processingMode);
    assert.equal(read.route, input.route);
    assert.equal(read.shard, k);
    assert.equal(read.principal, 10 + k);
    assert.equal(read.receivedAtUs, input.receivedAtUs);
    assert.equal(hexOf(read.commandId), uuidHex(ids[0]!));
    assert.equal(hexOf(read.orderId), withIds ? uuidHex(ids[1]!) : null);
    assert.equal(hexOf(read.instrumentId), withIds ? uuidHex(ids[2]!) : null);
    assert.equal(hexOf(read.scopeDigest), hexOf(scope.subarray(0, 16)));
    assert.equal(hexOf(read.payloadHash), hexOf(payload));
    assert.equal(hexOf(read.slot), hexOf(slot));
    assert.equal(read.clientId, clientId);
    assert.equal(read.idempotencyKey, idempotencyKey);
    assert.equal(read.clientOrderId, clientOrderId);
    assert.equal(read.bodyLength, 100 + k);
    // The unused bytes (132..192 and past each text) are zero, not the earlier lap's.
    assert.ok(views.bytes.subarray(at + 132, at + 192).every((b) => b === 0));
    if (Buffer.byteLength(clientId) < 128) assert.equal(views.bytes[at + 320 + Buffer.byteLength(clientId)], 0);
  }
});

const input = (clientOrderId: string | null): IntakeInput => ({
  processingMode: 0,
  route: 0,
  shard: 0,
  principal: 0,
  receivedAtUs: 0,
  commandId: uuidWords(randomUUID()),
  scopeDigest: new Uint8Array(16),
  payloadHash: new Uint8Array(32),
  orderId: null,
  instrumentId: null,
  slot: new Uint8Array(128),
  clientId: 'c',
  idempotencyKey: 'k',
  clientOrderId,
  bodyLength: 0,
});

test('a clientOrderId that does not fit its bytes is thrown, never stored cut', () => {
  const buffer = new ArrayBuffer(INTAKE_RECORD_BYTES);
  const views = { words: new Int32Array(buffer), floats: new Float64Array(buffer), bytes: new Uint8Array(buffer) };
  assert.throws(() => writeIntake(views, 0, input('𝄞'.repeat(65))), /does not fit its 256 bytes/);
  writeIntake(views, 0, input('𝄞'.repeat(64)));
  assert.equal(readIntake(views, 0).clientOrderId, '𝄞'.repeat(64));
});

test('a stored intake batch is read at its own record length: 832 bytes, or 640 for batches stored before the clientOrderId had 256', () => {
  assert.equal(intakeStride(3 * INTAKE_RECORD_BYTES, 3), 832);
  assert.equal(intakeStride(3 * INTAKE_RECORD_BYTES_V1, 3), 640);
  assert.throws(() => intakeStride(3 * INTAKE_RECORD_BYTES + 4, 3), /not whole records/);
  assert.throws(() => intakeStride(2 * 700, 2), /not whole records/);
});

test("a packed batch holds each record's header, slot and texts at their lengths, and reads back as the whole records", () => {
  const texts: Array<[string, string, string | null]> = [
    ['desk-1', 'key-0001', null],
    ['x'.repeat(128), '!'.repeat(128), '𝄞'.repeat(64)], // every bound filled: the packed record is as long as the whole one
    ['clïent☃', 'kéy😀', 'órder-☃-😀'],
    ['a', 'b', 'c'],
  ];
  const count = texts.length;
  const buffer = new ArrayBuffer(INTAKE_RECORD_BYTES * count);
  const views = { words: new Int32Array(buffer), floats: new Float64Array(buffer), bytes: new Uint8Array(buffer) };
  texts.forEach(([clientId, idempotencyKey, clientOrderId], k) => {
    writeIntake(views, k * INTAKE_RECORD_BYTES, { ...input(clientOrderId), clientId, idempotencyKey, shard: k, receivedAtUs: 1_795_316_400_000_000 + k, slot: new Uint8Array(128).fill(k + 1) });
  });
  const bytes = packedIntakeBytes(views.words, count);
  const expected = texts.reduce((sum, [a, b, c]) => sum + ((320 + Buffer.byteLength(a) + Buffer.byteLength(b) + Buffer.byteLength(c ?? '') + 7) & ~7), 0);
  assert.equal(bytes, expected);
  assert.ok(bytes < INTAKE_RECORD_BYTES * count, `packed ${bytes} bytes, whole ${INTAKE_RECORD_BYTES * count}`);
  const packed = new Uint8Array(bytes);
  assert.equal(packIntake(views.bytes, views.words, count, packed), bytes);

  const stored = storedIntake(packed, count, INTAKE_LAYOUT_PACKED);
  assert.equal(stored.stride, INTAKE_RECORD_BYTES);
  assert.deepEqual(Buffer.from(stored.bytes), Buffer.from(views.bytes), 'the whole records, byte for byte');
  const read = new Uint8Array(stored.bytes);
  const back = { words: new Int32Array(read.buffer), floats: new Float64Array(read.buffer), bytes: read };
  texts.forEach(([clientId, idempotencyKey, clientOrderId], k) => {
    const entry = readIntake(back, k * INTAKE_RECORD_BYTES);
    assert.deepEqual([entry.clientId, entry.idempotencyKey, entry.clientOrderId, entry.shard, entry.receivedAtUs], [clientId, idempotencyKey, clientOrderId, k, 1_795_316_400_000_000 + k]);
  });

  // Whole records (NULL layout) are read as they are; a damaged packed batch is refused, not misread.
  assert.equal(storedIntake(views.bytes, count, null).bytes, views.bytes);
  assert.throws(() => storedIntake(packed, count + 1, INTAKE_LAYOUT_PACKED), /ends in record 4/);
  assert.throws(() => storedIntake(packed.subarray(0, bytes - 8), count, INTAKE_LAYOUT_PACKED), /past its bounds|ends in record/);
  assert.throws(() => storedIntake(packed, count - 1, INTAKE_LAYOUT_PACKED), /has \d+ bytes, its records \d+/);
  const lying = packed.slice();
  new DataView(lying.buffer).setInt32(12, 129, true); // the first record's clientId length past its bound
  assert.throws(() => storedIntake(lying, count, INTAKE_LAYOUT_PACKED), /text of 129 bytes past its bounds/);
  assert.throws(() => storedIntake(packed, count, 2), /unknown layout 2/);
});
