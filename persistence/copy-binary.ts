// PostgreSQL's binary COPY format, written straight into one growing buffer: no text
// escaping of bytea or uuid, and one COPY per table per transaction (sent by pg-script.ts,
// or in bounded pieces through pg-copy-streams by copy-stream.ts).
// https://www.postgresql.org/docs/17/sql-copy.html#id-1.9.3.55.9.4

import type pg from 'pg';
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

  /**
   * The bytes written so far, handed over to be sent; the copy goes on in a new buffer of
   * the same size. A COPY's data is one byte stream however it is cut into messages, so a
   * bulk COPY sends its rows in pieces of bounded size (persistence/copy-stream.ts).
   */
  take(): Buffer {
    const taken = this.buffer.subarray(0, this.length);
    this.buffer = Buffer.allocUnsafe(this.buffer.length);
    this.length = 0;
    return taken;
  }

  /** The complete COPY data (what take() left), trailer included. */
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
 * promise: the connection's socket is paused until it settles. A throw or rejection of
 * `onRow` rejects at once; the rest of the COPY is read and dropped, and the client
 * stays usable.
 *
 * The protocol's CopyData messages are cut from the socket's bytes here (BinaryCopyOut,
 * a pg submittable that takes the socket's data for the length of the COPY, as
 * pg-copy-streams' readable does), and rows are read where they lie: pg-copy-streams
 * takes each message out of its buffer list and joins a socket read's messages into a
 * new buffer (about 1 µs a row: 0.9 of 1.0 s of the venue's CPU for the million open
 * orders a start after a crash reads, with nothing done with the rows), and pg's own
 * parser makes an object and an event of each (1.7 s).
 */
export function copyOut(client: pg.ClientBase, query: string, onRow: (row: CopyRow) => void | Promise<void>): Promise<number> {
  const reader = new BinaryCopyOut(`COPY (${query}) TO STDOUT (FORMAT binary)`, onRow);
  client.query(reader);
  return reader.done;
}

/** The connection pg hands a submittable: what BinaryCopyOut uses of it. */
interface CopyConnection {
  query(text: string): void;
  stream: NodeJS.ReadableStream;
}

const EMPTY: Buffer = Buffer.alloc(0);

/** Cuts a binary COPY stream, given in pieces, into rows (CopyRow, read in place). */
class RowCutter {
  private data = EMPTY;
  private at = 0;
  private end = 0;
  /** The bytes of a row (or the header) not whole yet, and how many it needs at least before the next try. */
  private kept: Buffer[] = [];
  private keptBytes = 0;
  private needed = 0;
  private headerDone = false;
  /** The trailer was read: nothing may follow. */
  finished = false;

  /** Whether bytes are held that are not a whole row. */
  get holding(): boolean {
    return this.keptBytes > 0 || this.at < this.end;
  }

  /** The next piece, data[start, end) (kept by reference: socket reads are not reused). */
  load(data: Buffer, start: number, end: number): void {
    if (this.keptBytes === 0) {
      this.data = data;
      this.at = start;
      this.end = end;
      return;
    }
    this.kept.push(data.subarray(start, end));
    this.keptBytes += end - start;
    if (this.keptBytes < this.needed) return;
    this.data = Buffer.concat(this.kept, this.keptBytes); // once per row that spans pieces, not once per piece
    this.at = 0;
    this.end = this.data.byteLength;
    this.kept = [];
    this.keptBytes = 0;
  }

  /** Cuts the next whole row into `row` (true), or keeps what is left for the next piece (false). */
  next(row: CopyRow): boolean {
    const data = this.data;
    const end = this.end;
    let at = this.at;
    if (at === end) return false;
    if (this.finished) throw new Error('bytes after the binary COPY trailer');
    if (!this.headerDone) {
      if (end - at < 19) return this.keep(19);
      const header = 19 + data.readInt32BE(at + 15); // signature (11), flags (4), header extension length (4) and its bytes
      if (end - at < header) return this.keep(header);
      if (!data.subarray(at, at + 11).equals(SIGNATURE)) throw new Error('not a binary COPY stream');
      at += header;
      this.at = at;
      this.headerDone = true;
      if (at === end) return false;
    }
    if (end - at < 2) return this.keep(2);
    const count = data.readInt16BE(at);
    if (count === -1) {
      this.finished = true;
      this.at = at + 2;
      return this.at < end ? this.next(row) : false; // bytes after the trailer throw
    }
    if (count < 0 || count > row.starts.length) throw new Error(`a COPY row of ${count} fields`);
    let cut = at + 2;
    for (let k = 0; k < count; k++) {
      if (end - cut < 4) return this.keep(cut + 4 - at);
      const length = data.readInt32BE(cut);
      row.starts[k] = cut + 4;
      row.lengths[k] = length;
      cut += 4 + (length < 0 ? 0 : length);
      if (cut > end) return this.keep(cut - at);
    }
    row.data = data;
    row.count = count;
    this.at = cut;
    return true;
  }

  private keep(needed: number): false {
    this.kept = [this.data.subarray(this.at, this.end)];
    this.keptBytes = this.end - this.at;
    this.needed = needed;
    this.at = this.end;
    return false;
  }
}

const COPY_DATA = 0x64; // 'd'
const COPY_DONE = 0x63; // 'c'
/** Messages the server may send during a COPY besides its data: CopyOutResponse, NoticeResponse, ParameterStatus, NotificationResponse. */
const SKIPPED = new Set([0x48, 0x4e, 0x53, 0x41]);

/**
 * A binary COPY TO as a pg submittable: it takes the socket's data from pg's parser
 * from the query until CopyDone (or an ErrorResponse, or any message it does not know),
 * cuts the CopyData messages' payloads into rows (RowCutter), and gives pg the bytes
 * from there on (CommandComplete and ReadyForQuery, or the error), as pg-copy-streams
 * does.
 */
class BinaryCopyOut {
  readonly done: Promise<number>;
  private resolve!: (rows: number) => void;
  private reject!: (error: unknown) => void;
  private stream: NodeJS.ReadableStream | null = null;
  private pgData: ((chunk: Buffer) => void) | null = null;
  private readonly onData = (chunk: Buffer) => this.take(chunk);
  private readonly cutter = new RowCutter();
  private readonly row = new CopyRow();
  /** Socket reads not framed yet (more than one only while an onRow promise is pending: the socket is paused then), and where the first one is. */
  private readonly chunks: Buffer[] = [];
  private at = 0;
  /** The current message: its type and the bytes of it not read yet. */
  private type = 0;
  private remaining = 0;
  /** A message's 5-byte header split across socket reads. */
  private readonly header = Buffer.alloc(5);
  private headerBytes = 0;
  private waiting = false;
  private paused = false;
  private attached = false;
  private settled = false;
  private rows = 0;

  constructor(
    private readonly text: string,
    private readonly onRow: (row: CopyRow) => void | Promise<void>,
  ) {
    this.done = new Promise<number>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** pg calls it when the query's turn comes; an error returned fails the query. */
  submit(connection: CopyConnection): Error | undefined {
    const stream = connection.stream;
    const listeners = stream.listeners('data');
    if (listeners.length !== 1) return new Error(`pg's connection has ${listeners.length} data listeners, not 1`);
    this.stream = stream;
    this.pgData = listeners[0] as (chunk: Buffer) => void;
    stream.removeListener('data', this.pgData);
    stream.on('data', this.onData);
    this.attached = true;
    connection.query(this.text);
    return undefined;
  }

  handleCommandComplete(): void {}

  handleReadyForQuery(): void {
    if (this.settled) return;
    if (!this.cutter.finished || this.cutter.holding) this.fail(new Error('the binary COPY stream ended without its trailer'));
    else this.settle(() => this.resolve(this.rows));
  }

  handleError(error: unknown): void {
    this.fail(error);
  }

  handleCopyData(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}

  private take(chunk: Buffer): void {
    this.chunks.push(chunk);
    if (!this.waiting) this.run();
  }

  /** Rows first, then the next message's bytes, until the socket's bytes run out, an onRow promise is pending, or the COPY is over. */
  private run(): void {
    try {
      for (;;) {
        while (!this.settled && this.cutter.next(this.row)) {
          this.rows++;
          const pending = this.onRow(this.row);
          if (pending !== undefined) {
            this.waiting = true;
            this.pause(true);
            pending.then(
              () => {
                this.waiting = false;
                if (this.attached) this.run();
              },
              (error: unknown) => {
                this.waiting = false;
                this.fail(error);
                if (this.attached) this.run();
              },
            );
            return;
          }
        }
        if (!this.frame()) break;
      }
    } catch (error) {
      this.fail(error); // a damaged row: the rest of the COPY is read and dropped
      if (this.attached) this.run();
      return;
    }
    if (this.attached) this.pause(false);
  }

  /** Moves to the cutter the next piece of a CopyData payload, skips other bytes, or hands the socket back at the COPY's end; false when the bytes ran out or were handed back. */
  private frame(): boolean {
    const chunk = this.chunks[0];
    if (chunk === undefined) return false;
    if (this.at === chunk.byteLength) {
      this.chunks.shift();
      this.at = 0;
      return true;
    }
    if (this.remaining > 0) {
      const n = Math.min(this.remaining, chunk.byteLength - this.at);
      if (this.type === COPY_DATA && !this.settled) this.cutter.load(chunk, this.at, this.at + n);
      this.at += n;
      this.remaining -= n;
      return true;
    }
    if (this.headerBytes === 0 && chunk.byteLength - this.at >= 5) {
      const type = chunk[this.at]!;
      const length = chunk.readInt32BE(this.at + 1);
      if (type === COPY_DATA && !this.settled && chunk.byteLength - this.at > length) {
        // The usual case: the whole message (one row) in this read.
        this.cutter.load(chunk, this.at + 5, this.at + 1 + length);
        this.at += 1 + length;
        return true;
      }
      if (type === COPY_DATA || SKIPPED.has(type)) return this.begin(type, length, 5);
      this.handBack(type === COPY_DONE ? 5 : 0, null);
      return false;
    }
    // A header split across socket reads: gathered in this.header.
    const n = Math.min(5 - this.headerBytes, chunk.byteLength - this.at);
    chunk.copy(this.header, this.headerBytes, this.at, this.at + n);
    this.headerBytes += n;
    this.at += n;
    if (this.headerBytes < 5) return true;
    this.headerBytes = 0;
    const type = this.header[0]!;
    if (type === COPY_DATA || SKIPPED.has(type)) return this.begin(type, this.header.readInt32BE(1), 0);
    this.handBack(0, type === COPY_DONE ? null : this.header);
    return false;
  }

  private begin(type: number, length: number, headerHere: number): true {
    this.type = type;
    this.remaining = length - 4;
    this.at += headerHere;
    return true;
  }

  /**
   * pg's parser takes the socket again: the bytes from the first chunk's position plus
   * `skip` (past CopyDone), after `prefix` (a message header gathered across reads).
   */
  private handBack(skip: number, prefix: Buffer | null): void {
    const stream = this.stream!;
    const pgData = this.pgData!;
    const chunks = this.chunks.splice(0);
    if (chunks.length > 0) chunks[0] = chunks[0]!.subarray(this.at + skip);
    if (prefix !== null) chunks.unshift(Buffer.from(prefix));
    const bytes = Buffer.concat(chunks);
    this.at = 0;
    this.attached = false;
    stream.removeListener('data', this.onData);
    stream.on('data', pgData);
    this.pause(false);
    if (bytes.byteLength > 0) pgData(bytes);
  }

  private fail(error: unknown): void {
    this.settle(() => this.reject(error));
  }

  private pause(paused: boolean): void {
    if (this.paused === paused || this.stream === null) return;
    this.paused = paused;
    if (paused) this.stream.pause();
    else this.stream.resume();
  }

  private settle(action: () => void): void {
    if (this.settled) return;
    this.settled = true;
    action();
  }
}
