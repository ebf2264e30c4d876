import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { INTAKE_RECORD_BYTES, readIntake, writeIntake, type IntakeInput } from '../../core/intake-record.ts';
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
  ];
  for (const [k, [clientId, idempotencyKey, clientOrderId]] of texts.entries()) {
    const ids = [randomUUID(), randomUUID(), k === 3 ? 'FFFFFFFF-FFFF-4FFF-8FFF-FFFFFFFFFFFF' : randomUUID()];
    const scope = new Uint8Array(32).map((_, i) => (i * 31 + k) & 0xff);
    const payload = new Uint8Array(32).map((_, i) => (i * 17 + k) & 0xff);
    const withIds = k % 2 === 0;
    const input: IntakeInput = {
      processingMode: k % 4, route: (k + 1) % 4, shard: k, principal: 10 + k, receivedAtUs: 1_795_316_400_000_000 + k,
      commandId: uuidWords(ids[0]!), scopeDigest: scope, payloadHash: payload,
      orderId: withIds ? uuidWords(ids[1]!) : null, instrumentId: withIds ? uuidWords(ids[2]!) : null,
      slot, clientId, idempotencyKey, clientOrderId,
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
    // The unused bytes (128..192 and past each text) are zero, not the earlier lap's.
    assert.ok(views.bytes.subarray(at + 128, at + 192).every((b) => b === 0));
    if (Buffer.byteLength(clientId) < 128) assert.equal(views.bytes[at + 320 + Buffer.byteLength(clientId)], 0);
  }
});
