// PostgreSQL's binary COPY format, written straight into one growing buffer: no text
// escaping of bytea or uuid, and one COPY per table per transaction (pg-copy-streams).
// https://www.postgresql.org/docs/17/sql-copy.html#id-1.9.3.55.9.4

import type pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { asciiInto, copyRange, putInt32 } from '../core/byte-stores.ts';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** Microseconds between the Unix epoch and PostgreSQL's (2000-01-01T00:00:00Z). */
const POSTGRES_EPOCH_US = 946_684_800_000_000;
/** Texts up to this many UTF-16 units are tried as ASCII in a loop first (BinaryCopy.text). */
const SHORT_TEXT = 32;

export class BinaryCopy {
  private buffer: Buffer;
  private length = 0;
  rows = 0;

  constructor(initialBytes = 64 * 1024) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
    this.bytes(SIGNATURE);
    this.int32(0); // flags
    this.int32(0); // header extension
  }

  /** Bytes written so far. */
  get byteLength(): number {
    return this.length;
  }

  row(fieldCount: number): this {
    this.rows++;
    return this.int16(fieldCount);
  }

  uuid(value: Uint8Array | null): this {
    if (value === null) return this.null();
    this.int32(16);
    return this.bytes(value);
  }

  bytea(value: Uint8Array): this {
    this.int32(value.byteLength);
    return this.bytes(value);
  }

  text(value: string | null): this {
    if (value === null) return this.null();
    // Written first, its length after: UTF-8 takes at most 3 bytes per UTF-16 unit, so
    // room for that is room enough, and the text is scanned once.
    this.ensure(4 + value.length * 3);
    const buffer = this.buffer;
    const at = this.length + 4;
    // Names, states, codes and ids: ASCII by plain stores beats the native call's overhead; any other character goes native.
    let written = value.length <= SHORT_TEXT ? asciiInto(buffer, at, value) : -1;
    if (written < 0) written = buffer.write(value, at, 'utf8');
    this.int32(written);
    this.length += written;
    return this;
  }

  smallint(value: number): this {
    this.int32(2);
    return this.int16(value);
  }

  integer(value: number): this {
    this.int32(4);
    return this.int32(value);
  }

  /** An int8 from an integer number (|value| < 2^53), without a BigInt. */
  bigint(value: number): this {
    this.ensure(12);
    const high = Math.floor(value / 4_294_967_296);
    const at = this.length;
    putInt32(this.buffer, at, 8);
    putInt32(this.buffer, at + 4, high);
    putInt32(this.buffer, at + 8, value - high * 4_294_967_296);
    this.length = at + 12;
    return this;
  }

  /** A uuid from four words as the threads carry them (core/uuid.ts: most significant word first). */
  uuidWords(words: Int32Array, at: number): this {
    this.ensure(20);
    const buffer = this.buffer;
    const to = this.length;
    putInt32(buffer, to, 16);
    putInt32(buffer, to + 4, words[at]!);
    putInt32(buffer, to + 8, words[at + 1]!);
    putInt32(buffer, to + 12, words[at + 2]!);
    putInt32(buffer, to + 16, words[at + 3]!);
    this.length = to + 20;
    return this;
  }

  /** A bytea (or uuid, or text, whose binary form is its bytes) from a range of bytes. */
  range(source: Uint8Array, start: number, length: number): this {
    this.int32(length);
    this.ensure(length);
    const buffer = this.buffer;
    const to = this.length;
    copyRange(buffer, to, source, start, length); // ids, digests, keys: no subarray
    this.length = to + length;
    return this;
  }

  /** A timestamptz from integer microseconds since the Unix epoch. */
  timestampUs(microseconds: number): this {
    return this.bigint(microseconds - POSTGRES_EPOCH_US);
  }

  null(): this {
    return this.int32(-1);
  }

  /** The complete COPY data, trailer included. */
  finish(): Buffer {
    this.int16(-1);
    return this.buffer.subarray(0, this.length);
  }

  private int16(value: number): this {
    this.ensure(2);
    const at = this.length;
    this.buffer[at] = value >> 8;
    this.buffer[at + 1] = value;
    this.length = at + 2;
    return this;
  }

  private int32(value: number): this {
    this.ensure(4);
    putInt32(this.buffer, this.length, value);
    this.length += 4;
    return this;
  }

  private bytes(value: Uint8Array): this {
    this.ensure(value.byteLength);
    this.buffer.set(value, this.length);
    this.length += value.byteLength;
    return this;
  }

  private ensure(more: number): void {
    if (this.length + more <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + more) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }
}

/** The part of pg-copy-streams' query object that `copyInto` reaches into. */
interface CopyQuery {
  connection?: { stream: { cork(): void; uncork(): void } } | null;
  handleCopyInResponse(connection: { stream: { cork(): void; uncork(): void; writableNeedDrain?: boolean } }): void;
  _final(callback: (error?: Error | null) => void): void;
}

/**
 * Runs `COPY <target> FROM STDIN (FORMAT binary)` with the data of `copy`.
 *
 * pg-copy-streams writes a COPY's data as three socket writes (the CopyData header, the
 * data, then CopyDone a tick later). Each write to the loopback socket wakes the
 * PostgreSQL backend, and on a 2-core machine that wake-up preempts the writer: the
 * profile of the persistence thread under load showed 27% of its time in those writes.
 * Corking the socket from the server's CopyInResponse until CopyDone is queued sends
 * the three as one writev: one wake-up per COPY instead of three.
 */
export async function copyInto(client: pg.ClientBase, target: string, copy: BinaryCopy): Promise<void> {
  if (copy.rows === 0) return;
  const query = copyStreams.from(`COPY ${target} FROM STDIN (FORMAT binary)`);
  const hooks = query as unknown as CopyQuery;
  const onCopyInResponse = hooks.handleCopyInResponse.bind(query);
  const final = hooks._final.bind(query);
  hooks.handleCopyInResponse = (connection) => {
    const socket = connection.stream as { cork(): void; uncork(): void; writableNeedDrain?: boolean };
    socket.cork();
    onCopyInResponse(connection);
    // Past the socket's high-water mark the library waits for 'drain' before it ends the
    // COPY, and a corked socket never drains: send now, CopyDone follows on its own.
    if (socket.writableNeedDrain) socket.uncork();
  };
  hooks._final = (callback) => {
    const socket = hooks.connection?.stream;
    final(callback); // queues CopyDone (the data went out with the response)
    socket?.uncork();
  };
  const stream = client.query(query);
  await new Promise<void>((resolve, reject) => {
    stream.once('error', reject);
    stream.once('finish', resolve); // after the server's CommandComplete
    stream.end(copy.finish());
  });
}

/**
 * One row of a binary COPY stream, read in place: field k is data[start(k), start(k) +
 * length(k)) (length -1: NULL). Valid only during the onRow call that receives it.
 */
export class CopyRow {
  data: Buffer = Buffer.alloc(0);
  count = 0;
  readonly starts = new Int32Array(64);
  readonly lengths = new Int32Array(64);

  isNull(k: number): boolean {
    return this.lengths[k]! < 0;
  }

  int16(k: number): number {
    return this.data.readInt16BE(this.starts[k]!);
  }

  int32(k: number): number {
    return this.data.readInt32BE(this.starts[k]!);
  }

  /** An int8 (|value| < 2^53) as a number. */
  int8(k: number): number {
    const at = this.starts[k]!;
    return this.data.readInt32BE(at) * 4_294_967_296 + this.data.readUInt32BE(at + 4);
  }

  /** A 16-byte field (uuid, digest) as four words (most significant first) at target[at..]. */
  words(k: number, target: Int32Array, at: number): void {
    const from = this.starts[k]!;
    const data = this.data;
    target[at] = data.readInt32BE(from);
    target[at + 1] = data.readInt32BE(from + 4);
    target[at + 2] = data.readInt32BE(from + 8);
    target[at + 3] = data.readInt32BE(from + 12);
  }

  byte(k: number, index: number): number {
    return this.data[this.starts[k]! + index]!;
  }

  /** The field's bytes (a view into the stream's buffer: copy it to keep it). */
  bytes(k: number): Buffer {
    return this.data.subarray(this.starts[k]!, this.starts[k]! + this.lengths[k]!);
  }

  text(k: number): string {
    return this.data.toString('utf8', this.starts[k]!, this.starts[k]! + this.lengths[k]!);
  }

  /** Whether the field's bytes equal `bytes` (no allocation). */
  equals(k: number, bytes: Buffer): boolean {
    return this.lengths[k] === bytes.byteLength && this.data.compare(bytes, 0, bytes.byteLength, this.starts[k]!, this.starts[k]! + this.lengths[k]!) === 0;
  }
}

/**
 * Runs `COPY (<query>) TO STDOUT (FORMAT binary)` and calls `onRow` with each row, read
 * in place (CopyRow: no object or buffer per field). Bulk reads at start-up use it: no
 * text encoding of bytea, uuids or numbers. Returns the rows read. `onRow` may return a
 * promise (then the stream waits for it).
 */
export async function copyOut(client: pg.ClientBase, query: string, onRow: (row: CopyRow) => void | Promise<void>): Promise<number> {
  const stream = client.query(copyStreams.to(`COPY (${query}) TO STDOUT (FORMAT binary)`));
  // Bytes not parsed yet: kept as a list until the row being cut can be whole (a large
  // bytea spans many chunks; joining at every chunk would copy it over and over).
  let waiting: Buffer[] = [];
  let waitingBytes = 0;
  let needed = 19;
  let headerDone = false;
  let rows = 0;
  const row = new CopyRow();
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    waiting.push(chunk);
    waitingBytes += chunk.byteLength;
    if (waitingBytes < needed) continue;
    const data: Buffer = waiting.length === 1 ? waiting[0]! : Buffer.concat(waiting, waitingBytes);
    let at = 0;
    needed = 0;
    if (!headerDone) {
      if (data.byteLength < 19 || data.byteLength < 19 + data.readInt32BE(15)) needed = data.byteLength < 19 ? 19 : 19 + data.readInt32BE(15);
      else {
        if (!data.subarray(0, 11).equals(SIGNATURE)) throw new Error('not a binary COPY stream');
        at = 19 + data.readInt32BE(15); // signature (11), flags (4), header extension length (4) and its bytes
        headerDone = true;
      }
    }
    row.data = data;
    while (headerDone) {
      if (data.byteLength - at < 2) {
        needed = 2;
        break;
      }
      const count = data.readInt16BE(at);
      if (count === -1) {
        at = data.byteLength; // trailer
        break;
      }
      if (count > row.starts.length) throw new Error(`a COPY row of ${count} fields`);
      // Is the whole row here? If not, how much of it must be before the next try.
      let end = at + 2;
      let complete = true;
      for (let k = 0; k < count; k++) {
        if (data.byteLength - end < 4) {
          complete = false;
          end += 4;
          break;
        }
        const length = data.readInt32BE(end);
        row.starts[k] = end + 4;
        row.lengths[k] = length;
        end += 4 + (length < 0 ? 0 : length);
        if (end > data.byteLength) {
          complete = false;
          break;
        }
      }
      if (!complete) {
        needed = end - at;
        break;
      }
      row.count = count;
      const pending = onRow(row);
      if (pending !== undefined) await pending;
      rows++;
      at = end;
    }
    const rest = data.subarray(at);
    waiting = rest.byteLength === 0 ? [] : [rest];
    waitingBytes = rest.byteLength;
  }
  return rows;
}
