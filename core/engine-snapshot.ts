// A matching engine's whole state written to a file at a graceful stop and read back
// at the next start, instead of replaying the shard's journal (with a million resting
// orders that replay was about 5 CPU-seconds in the shards, 2.5 in the main thread
// parsing the journal's COPY, and PostgreSQL's work serving it, of a restart bound by
// two cores' CPU).
//
// Each part of the engine (order store, price levels, owners, books) names its scalars
// and typed arrays to a StateWriter and takes them back, in the same order, from a
// StateReader: raw memory, with the hash seed it was laid out with, so the restored
// engine is the same engine, not a rebuilt one (the retired orders' eviction order, the
// engine order numbers and the owner numbers are all in it, and decide future events).
// Only what is in use is written (the order records ever handed out, not the capacity).
//
// File: "VES1", u32 header length, the header (JSON: token, shard, sequence, the
// engine's shape, the scalars, and each section's name and length), the sections in
// that order, u32 crc32 of everything before it. Whether a file may be used (the
// database's note, the journal position) is the caller's decision
// (persistence/key-filter-snapshot.ts); this module checks that the file is whole and
// of this engine's shape.

import { closeSync, fstatSync, mkdirSync, openSync, readSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { MatchingEngine, type EngineShape } from './matching-engine.ts';

const MAGIC = 'VES1';
const HEADER_BYTES_MAX = 64 * 1024;
/** Bytes read or written per system call. */
const CHUNK_BYTES = 8 << 20;

/** Where a part of the engine writes its state: scalars, and views of its typed arrays (not copied). */
export interface StateWriter {
  number(name: string, value: number): void;
  array(name: string, view: ArrayBufferView): void;
}

/** Where a part reads it back, in the order it was written. */
export interface StateReader {
  number(name: string): number;
  /** The byte length of the next section, which must be `name`. */
  length(name: string): number;
  /** Fills `target` from the next section, which must be `name` and exactly as long. */
  into(name: string, target: ArrayBufferView): void;
}

interface SnapshotHeader {
  token: string;
  shard: number;
  sequence: number;
  shape: EngineShape;
  numbers: Record<string, number>;
  sections: [string, number][];
}

export function engineSnapshotPath(dataDir: string, shard: number): string {
  return path.join(dataDir, `shard-${shard}.bin`);
}

/** Writes the engine (idle: its shard stopped) to `file`, atomically (a partial file, then a rename). */
export function writeEngineSnapshot(file: string, engine: MatchingEngine, token: string, shard: number): { bytes: number; sequence: number } {
  const numbers: Record<string, number> = {};
  const views: [string, Uint8Array][] = [];
  engine.saveState({
    number: (name, value) => {
      if (!Number.isSafeInteger(value)) throw new Error(`engine state ${name} is not an integer: ${value}`);
      numbers[name] = value;
    },
    array: (name, view) => views.push([name, new Uint8Array(view.buffer, view.byteOffset, view.byteLength)]),
  });
  const header: SnapshotHeader = { token, shard, sequence: engine.sequence, shape: engine.shape, numbers, sections: views.map(([name, view]) => [name, view.byteLength]) };
  const headerBytes = Buffer.from(JSON.stringify(header));
  if (headerBytes.byteLength > HEADER_BYTES_MAX) throw new Error('engine snapshot header too large');
  const prefix = Buffer.alloc(8);
  prefix.write(MAGIC, 0, 'latin1');
  prefix.writeUInt32LE(headerBytes.byteLength, 4);
  mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.partial`;
  const fd = openSync(partial, 'w');
  let bytes = 0;
  try {
    let crc = 0;
    const write = (view: Uint8Array) => {
      for (let at = 0; at < view.byteLength; at += CHUNK_BYTES) {
        const chunk = view.subarray(at, Math.min(at + CHUNK_BYTES, view.byteLength));
        writeSync(fd, chunk);
        crc = crc32(chunk, crc);
      }
      bytes += view.byteLength;
    };
    write(prefix);
    write(headerBytes);
    for (const [, view] of views) write(view);
    const tail = Buffer.alloc(4);
    tail.writeUInt32LE(crc >>> 0, 0);
    writeSync(fd, tail);
    bytes += 4;
  } finally {
    closeSync(fd);
  }
  renameSync(partial, file);
  return { bytes, sequence: engine.sequence };
}

/** What the caller expects of the file: the token of the database's note, this shard, the journal's last sequence. */
export interface SnapshotExpectation {
  token: string;
  shard: number;
  sequence: number;
}

/**
 * A new engine of `shape` (its hash seed aside, which the file's layout needs) with the
 * state the file holds, prefaulted like a fresh one; or why the file cannot be used
 * (the caller then starts from a fresh engine and the journal).
 */
export function readEngineSnapshot(file: string, expected: SnapshotExpectation, shape: Omit<EngineShape, 'hashSeed'>): MatchingEngine | string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    return `no file: ${(error as Error).message}`;
  }
  try {
    const size = fstatSync(fd).size;
    const prefix = Buffer.alloc(8);
    if (size < 12 || readSync(fd, prefix, 0, 8, 0) !== 8 || prefix.toString('latin1', 0, 4) !== MAGIC) return 'not an engine snapshot';
    const headerLength = prefix.readUInt32LE(4);
    if (headerLength > HEADER_BYTES_MAX || 8 + headerLength + 4 > size) return 'a damaged header';
    const headerBytes = Buffer.alloc(headerLength);
    if (readSync(fd, headerBytes, 0, headerLength, 8) !== headerLength) return 'a short read';
    let header: SnapshotHeader;
    try {
      header = JSON.parse(headerBytes.toString('utf8')) as SnapshotHeader;
    } catch {
      return 'a damaged header';
    }
    if (!validHeader(header)) return 'a damaged header';
    if (header.token !== expected.token) return 'the file is not the one the database names';
    if (header.shard !== expected.shard) return `the file is shard ${header.shard}'s`;
    if (header.sequence !== expected.sequence) return `the file holds the book at sequence ${header.sequence}, the journal ends at ${expected.sequence}`;
    for (const key of ['orderCapacity', 'instrumentCapacity', 'ownerCapacity'] as const) {
      if (header.shape[key] !== shape[key]) return `the engine's shape changed (${key} ${header.shape[key]} then, ${shape[key]} now)`;
    }
    const sectionBytes = header.sections.reduce((sum, [, length]) => sum + length, 0);
    if (size !== 8 + headerLength + sectionBytes + 4) return 'a file of the wrong length';

    let crc = crc32(headerBytes, crc32(prefix));
    let at = 8 + headerLength;
    let next = 0;
    const section = (name: string): number => {
      const entry = header.sections[next];
      if (entry === undefined || entry[0] !== name) throw new SnapshotMismatch(`section ${name} expected, ${entry?.[0] ?? 'the end'} found`);
      return entry[1];
    };
    const engine = new MatchingEngine({ ...shape, hashSeed: header.shape.hashSeed });
    engine.prefault();
    try {
      engine.loadState({
        number: (name) => {
          const value = header.numbers[name];
          if (!Number.isSafeInteger(value)) throw new SnapshotMismatch(`no number ${name}`);
          return value!;
        },
        length: section,
        into: (name, target) => {
          const length = section(name);
          if (length !== target.byteLength) throw new SnapshotMismatch(`section ${name} holds ${length} bytes, ${target.byteLength} expected`);
          const view = new Uint8Array(target.buffer, target.byteOffset, target.byteLength);
          for (let done = 0; done < length; ) {
            const chunk = view.subarray(done, Math.min(done + CHUNK_BYTES, length));
            if (readSync(fd, chunk, 0, chunk.byteLength, at) !== chunk.byteLength) throw new SnapshotMismatch('a short read');
            crc = crc32(chunk, crc);
            at += chunk.byteLength;
            done += chunk.byteLength;
          }
          next++;
        },
      });
    } catch (error) {
      if (error instanceof SnapshotMismatch) return error.message;
      throw error;
    }
    if (next !== header.sections.length) return `${header.sections.length - next} sections left unread`;
    const tail = Buffer.alloc(4);
    if (readSync(fd, tail, 0, 4, at) !== 4 || tail.readUInt32LE(0) !== crc >>> 0) return 'a checksum mismatch';
    if (engine.sequence !== expected.sequence) return `the restored engine is at sequence ${engine.sequence}`;
    return engine;
  } catch (error) {
    return `the file could not be read: ${(error as Error).message}`;
  } finally {
    closeSync(fd);
  }
}

class SnapshotMismatch extends Error {}

function validHeader(header: unknown): header is SnapshotHeader {
  if (typeof header !== 'object' || header === null) return false;
  const h = header as Partial<SnapshotHeader>;
  return (
    typeof h.token === 'string' &&
    Number.isSafeInteger(h.shard) &&
    Number.isSafeInteger(h.sequence) &&
    typeof h.shape === 'object' && h.shape !== null && Number.isSafeInteger(h.shape.hashSeed) &&
    typeof h.numbers === 'object' && h.numbers !== null &&
    Array.isArray(h.sections) &&
    h.sections.every((entry) => Array.isArray(entry) && typeof entry[0] === 'string' && Number.isSafeInteger(entry[1]) && entry[1] >= 0)
  );
}
