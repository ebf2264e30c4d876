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
// File (persistence/snapshot-file.ts): "VES1", the header (JSON: token, shard, sequence, the
// engine's shape, the scalars, and each section's name and length), the sections in
// that order, crc32. Whether a file may be used (the
// database's note, the journal position) is the caller's decision
// (persistence/key-filter-snapshot.ts); this module checks that the file is whole and
// of this engine's shape.

import path from 'node:path';
import type { EngineCapture, EngineShape, SnapshotHeader } from '../core/engine-state.ts';
import { MatchingEngine } from '../core/matching-engine.ts';
import { bytesOf, SnapshotFileReader, writeSnapshotFile, writeSnapshotFileAsync } from './snapshot-file.ts';

const MAGIC = 'VES1';
const HEADER_BYTES_MAX = 64 * 1024;

export function engineSnapshotPath(dataDir: string, shard: number): string {
  return path.join(dataDir, `shard-${shard}.bin`);
}

/** The file's header and its sections: views of the engine's memory, valid until the engine runs again. */
function engineSections(engine: MatchingEngine, token: string, shard: number, batch: number): { header: SnapshotHeader; sections: Uint8Array[] } {
  const numbers: Record<string, number> = {};
  const views: [string, Uint8Array][] = [];
  engine.saveState({
    number: (name, value) => {
      if (!Number.isSafeInteger(value)) throw new Error(`engine state ${name} is not an integer: ${value}`);
      numbers[name] = value;
    },
    array: (name, view) => views.push([name, bytesOf(view)]),
  });
  const header: SnapshotHeader = { token, shard, sequence: engine.sequence, batch, shape: engine.shape, numbers, sections: views.map(([name, view]) => [name, view.byteLength]) };
  return { header, sections: views.map(([, view]) => view) };
}

/** The bytes a copy of the engine's state takes now (captureEngine). */
export function engineStateBytes(engine: MatchingEngine): number {
  return engineSections(engine, '', 0, 0).sections.reduce((sum, section) => sum + section.byteLength, 0);
}

/** Writes the engine (idle: its shard stopped) to `file`, atomically (a partial file, then a rename). */
export function writeEngineSnapshot(file: string, engine: MatchingEngine, token: string, shard: number, batch: number): { bytes: number; sequence: number } {
  const { header, sections } = engineSections(engine, token, shard, batch);
  const bytes = writeSnapshotFile(file, MAGIC, header, sections);
  return { bytes, sequence: engine.sequence };
}

/**
 * Copies the engine's state (only what is in use: about 70 bytes per order slot ever
 * used plus the index) into the buffer `bufferFor` gives for its length (a fresh one by
 * default). A buffer reused from the last copy costs only the copy (about 4 ms for
 * 78 MB here); a fresh one also its page faults (30-160 ms for 78 MB here).
 */
export function captureEngine(
  engine: MatchingEngine,
  token: string,
  shard: number,
  batch: number,
  bufferFor: (bytes: number) => ArrayBuffer | SharedArrayBuffer = (bytes) => new ArrayBuffer(bytes),
): EngineCapture {
  const { header, sections } = engineSections(engine, token, shard, batch);
  const bytes = sections.reduce((sum, section) => sum + section.byteLength, 0);
  const body = bufferFor(bytes);
  if (body.byteLength < bytes) throw new RangeError(`a capture of ${bytes} bytes was given ${body.byteLength}`);
  const target = new Uint8Array(body, 0, bytes);
  let at = 0;
  for (const section of sections) {
    target.set(section, at);
    at += section.byteLength;
  }
  return { header, body, bytes };
}

/** Writes a capture to `file` in the same format as writeEngineSnapshot, without blocking the thread that calls it. */
export function writeEngineCapture(file: string, capture: EngineCapture): Promise<number> {
  return writeSnapshotFileAsync(file, MAGIC, capture.header, [new Uint8Array(capture.body, 0, capture.bytes)]);
}

/** What the caller expects of the file: the token of the database's note, this shard, the journal's last sequence. */
export interface SnapshotExpectation {
  token: string;
  shard: number;
  sequence: number;
}

/**
 * A new engine of `shape` (its hash seed aside, which the file's layout needs) with the
 * state the file holds, prefaulted like a fresh one; or why the file cannot be used (the
 * caller then starts from a fresh engine and the journal). `orderMemory`: the order
 * store's memory (all zero), as for a fresh engine; a file refused after its orders were
 * read into it leaves it zeroed again, for that fresh engine.
 */
export function readEngineSnapshot(
  file: string,
  expected: SnapshotExpectation,
  shape: Omit<EngineShape, 'hashSeed'>,
  orderMemory?: SharedArrayBuffer,
): { engine: MatchingEngine; batch: number } | string {
  const written = { yes: false };
  const result = readSnapshotInto(file, expected, shape, orderMemory, written);
  if (typeof result === 'string' && written.yes && orderMemory !== undefined) new Uint8Array(orderMemory).fill(0);
  return result;
}

function readSnapshotInto(
  file: string,
  expected: SnapshotExpectation,
  shape: Omit<EngineShape, 'hashSeed'>,
  orderMemory: SharedArrayBuffer | undefined,
  written: { yes: boolean },
): { engine: MatchingEngine; batch: number } | string {
  const reader = SnapshotFileReader.open(file, MAGIC, 'an engine snapshot', HEADER_BYTES_MAX);
  if (typeof reader === 'string') return reader;
  try {
    const header = reader.header;
    if (!validHeader(header)) return 'a damaged header';
    if (header.token !== expected.token) return 'the file is not the one the database names';
    if (header.shard !== expected.shard) return `the file is shard ${header.shard}'s`;
    if (header.sequence !== expected.sequence) return `the file holds the book at sequence ${header.sequence}, the journal ends at ${expected.sequence}`;
    for (const key of ['orderCapacity', 'instrumentCapacity', 'ownerCapacity'] as const) {
      if (header.shape[key] !== shape[key]) return `the engine's shape changed (${key} ${header.shape[key]} then, ${shape[key]} now)`;
    }
    if (!reader.holds(header.sections.reduce((sum, [, length]) => sum + length, 0))) return 'a file of the wrong length';
    let next = 0;
    const section = (name: string): number => {
      const entry = header.sections[next];
      if (entry === undefined || entry[0] !== name) throw new SnapshotMismatch(`section ${name} expected, ${entry?.[0] ?? 'the end'} found`);
      return entry[1];
    };
    const engine = new MatchingEngine({ ...shape, hashSeed: header.shape.hashSeed, orderMemory });
    engine.prefault();
    written.yes = true;
    try {
      engine.loadState({
        number: (name, missing) => {
          const value = header.numbers[name];
          if (value === undefined && missing !== undefined) return missing;
          if (!Number.isSafeInteger(value)) throw new SnapshotMismatch(`no number ${name}`);
          return value!;
        },
        length: section,
        into: (name, target) => {
          const length = section(name);
          if (length !== target.byteLength) throw new SnapshotMismatch(`section ${name} holds ${length} bytes, ${target.byteLength} expected`);
          if (!reader.read(bytesOf(target))) throw new SnapshotMismatch('a short read');
          next++;
        },
      });
    } catch (error) {
      if (error instanceof SnapshotMismatch) return error.message;
      // The state broke one of its checks (core/assert.ts). A damaged file breaks them too:
      // then its checksum, read to the end, is the reason given.
      if (!reader.verifyRest()) return 'a checksum mismatch';
      throw error;
    }
    if (next !== header.sections.length) return `${header.sections.length - next} sections left unread`;
    if (!reader.verify()) return 'a checksum mismatch';
    if (engine.sequence !== expected.sequence) return `the restored engine is at sequence ${engine.sequence}`;
    return { engine, batch: header.batch };
  } catch (error) {
    return `the file could not be read: ${(error as Error).message}`;
  } finally {
    reader.close();
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
    Number.isSafeInteger(h.batch) &&
    typeof h.shape === 'object' &&
    h.shape !== null &&
    Number.isSafeInteger(h.shape.hashSeed) &&
    typeof h.numbers === 'object' &&
    h.numbers !== null &&
    Array.isArray(h.sections) &&
    h.sections.every((entry) => Array.isArray(entry) && typeof entry[0] === 'string' && Number.isSafeInteger(entry[1]) && entry[1] >= 0)
  );
}
