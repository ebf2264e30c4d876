import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BinaryCopy } from '../../persistence/copy-binary.ts';

// PostgreSQL's binary COPY layout, written here with Buffer's own checked writers: what
// BinaryCopy's byte stores must produce, field by field. (The database tests load what
// BinaryCopy writes; this one pins every byte, negative and wide values included.)
class Reference {
  parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), int32(0), int32(0)];
  add(...buffers: Buffer[]): void {
    this.parts.push(...buffers);
  }
  finish(): Buffer {
    return Buffer.concat([...this.parts, int16(-1)]);
  }
}
function int16(value: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(value);
  return b;
}
function int32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(value);
  return b;
}
function int64(value: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(value));
  return b;
}

test('BinaryCopy writes every field type byte for byte as the binary COPY format has it, across buffer growth', () => {
  const copy = new BinaryCopy(16); // grows many times
  const expected = new Reference();
  const words = Int32Array.of(0x01234567, -1, -0x80000000, 0x7fffffff);
  const source = new Uint8Array(600).map((_, k) => (k * 37 + 11) & 0xff);
  // Short ASCII (written in a loop), short with Latin-1 only (é, ÿ: two bytes each), long, and the 32/33-unit edge.
  const texts = ['', 'trader-a', 'désk ☃ 😀', 'x'.repeat(1000), '\u0000nul', 'café', 'ÿ', 'a'.repeat(32), 'b'.repeat(33), 'PARTIALLY_FILLED'];
  const bigints = [0, 1, -1, 2 ** 32, -(2 ** 32), 2 ** 32 - 1, 2 ** 53 - 1, -(2 ** 53 - 1), 1_795_316_400_000_000, -946_684_800_000_000];
  for (let row = 0; row < 40; row++) {
    const text = texts[row % texts.length]!;
    const big = bigints[row % bigints.length]!;
    const rangeStart = row * 3;
    const rangeLength = [0, 1, 16, 32, 64, 65, 200][row % 7]!;
    copy
      .row(10)
      .uuidWords(words, 0)
      .text(text)
      .smallint(row % 2 === 0 ? -2 : 32767)
      .integer(row % 3 === 0 ? -2_000_000_000 : 2_147_483_647)
      .bigint(big)
      .range(source, rangeStart, rangeLength)
      .timestampUs(1_795_316_400_000_000 + row)
      .null()
      .uuid(row % 2 === 0 ? null : source.subarray(0, 16))
      .bytea(source.subarray(5, 5 + row));
    const uuid = Buffer.alloc(16);
    for (let k = 0; k < 4; k++) uuid.writeInt32BE(words[k]!, k * 4);
    const textBytes = Buffer.from(text, 'utf8');
    expected.add(
      int16(10),
      int32(16),
      uuid,
      int32(textBytes.length),
      textBytes,
      int32(2),
      int16(row % 2 === 0 ? -2 : 32767),
      int32(4),
      int32(row % 3 === 0 ? -2_000_000_000 : 2_147_483_647),
      int32(8),
      int64(big),
      int32(rangeLength),
      Buffer.from(source.subarray(rangeStart, rangeStart + rangeLength)),
      int32(8),
      int64(1_795_316_400_000_000 + row - 946_684_800_000_000),
      int32(-1),
      ...(row % 2 === 0 ? [int32(-1)] : [int32(16), Buffer.from(source.subarray(0, 16))]),
      int32(row),
      Buffer.from(source.subarray(5, 5 + row)),
    );
  }
  assert.equal(copy.rows, 40);
  const written = copy.finish();
  const reference = expected.finish();
  const first = written.findIndex((b, k) => b !== reference[k]);
  assert.ok(
    written.equals(reference),
    `first difference at byte ${first} of ${written.length} (expected ${reference.length}): ${written.subarray(first - 8, first + 8).toString('hex')} against ${reference.subarray(first - 8, first + 8).toString('hex')}`,
  );
});
