// The file of what a graceful stop saves for the next start (the shards' engines, the
// projector's open orders, the key filters): a 4-byte magic, a u32 header length, the
// header (JSON), sections of raw bytes in the order the header's owner knows, and a u32
// crc32 of everything before it. Written to a partial file and renamed, so a file is
// whole or absent; read section by section straight into its target memory, the crc
// checked at the end (the caller throws away what it read if the check fails).

import { closeSync, fstatSync, mkdirSync, openSync, readSync, renameSync, writeSync } from 'node:fs';
import { mkdir, open, rename } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';

/** Bytes read or written per system call. */
const CHUNK_BYTES = 8 << 20;
/**
 * writeSnapshotFileAsync (the saves while running) hands its bytes to the disk after every
 * this many (fdatasync), instead of leaving them dirty in the page cache: the kernel would
 * write a 40-64 MiB file back in one go about 30 s later, and PostgreSQL's WAL flushes, which
 * every durable answer waits for, would queue behind it on the device (60 ms here at 1.1 GB/s).
 * 8 MiB (about 7 ms of the device) rather than 1: each fdatasync waits for the filesystem's
 * journal and the device's cache flush, which PostgreSQL's WAL and checkpointer keep busy
 * under load, and at 1 MiB an engine checkpoint of 40-80 MB took 0.4-1.8 s to write under a
 * closed loop (up to 5.6 s in a fill of a million orders); 8 MiB halved that, with the latencies of
 * an open loop beside frequent saves unchanged (docs/decisions/0011-saves-flushed-every-8-mib.md).
 */
export const SNAPSHOT_FLUSH_BYTES = 8 << 20;

/** The magic, the header's length and the header. */
function filePrefix(magic: string, header: object): Buffer {
  const headerBytes = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8 + headerBytes.byteLength);
  prefix.write(magic, 0, 4, 'latin1');
  prefix.writeUInt32LE(headerBytes.byteLength, 4);
  headerBytes.copy(prefix, 8);
  return prefix;
}

/**
 * writeSnapshotFile on the thread pool, for the saves while running: the calling thread
 * computes the crc between writes of SNAPSHOT_FLUSH_BYTES, each handed to the disk (fdatasync) before
 * the next, so that the save never leaves a burst of dirty pages behind (SNAPSHOT_FLUSH_BYTES). Not
 * for durability: a file lost or torn by a power loss is refused by its length or crc at
 * the next start, which then does without it (nor is the rename synced). `changing`: other
 * threads may write the sections meanwhile (only ever setting bits, say), so each chunk
 * is copied first and its crc and write are of that copy (else the crc and the bytes on
 * disk could disagree); the file then holds each chunk as it was when copied.
 */
export async function writeSnapshotFileAsync(file: string, magic: string, header: object, sections: readonly Uint8Array[], changing = false): Promise<number> {
  await mkdir(path.dirname(file), { recursive: true });
  const partial = `${file}.partial`;
  const handle = await open(partial, 'w');
  const scratch = changing ? Buffer.allocUnsafe(SNAPSHOT_FLUSH_BYTES) : null;
  let bytes = 0;
  try {
    let crc = 0;
    let unflushed = 0;
    const write = async (view: Uint8Array) => {
      for (let at = 0; at < view.byteLength; at += SNAPSHOT_FLUSH_BYTES) {
        let chunk = view.subarray(at, Math.min(at + SNAPSHOT_FLUSH_BYTES, view.byteLength));
        if (scratch !== null) {
          scratch.set(chunk);
          chunk = scratch.subarray(0, chunk.byteLength);
        }
        for (let done = 0; done < chunk.byteLength;) done += (await handle.write(chunk, done)).bytesWritten;
        crc = crc32(chunk, crc);
        unflushed += chunk.byteLength;
        if (unflushed >= SNAPSHOT_FLUSH_BYTES) {
          await handle.datasync();
          unflushed = 0;
        }
      }
      bytes += view.byteLength;
    };
    await write(filePrefix(magic, header));
    for (const section of sections) await write(section);
    const tail = Buffer.alloc(4);
    tail.writeUInt32LE(crc >>> 0, 0);
    await write(tail);
  } finally {
    await handle.close();
  }
  await rename(partial, file);
  return bytes;
}

/** Writes the file atomically; returns its length in bytes. */
export function writeSnapshotFile(file: string, magic: string, header: object, sections: readonly Uint8Array[]): number {
  mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.partial`;
  const fd = openSync(partial, 'w');
  let bytes = 0;
  try {
    let crc = 0;
    const write = (view: Uint8Array) => {
      for (let at = 0; at < view.byteLength; at += CHUNK_BYTES) {
        const chunk = view.subarray(at, Math.min(at + CHUNK_BYTES, view.byteLength));
        for (let done = 0; done < chunk.byteLength;) done += writeSync(fd, chunk, done); // a short write goes on where it stopped
        crc = crc32(chunk, crc);
      }
      bytes += view.byteLength;
    };
    write(filePrefix(magic, header));
    for (const section of sections) write(section);
    const tail = Buffer.alloc(4);
    tail.writeUInt32LE(crc >>> 0, 0);
    write(tail);
  } finally {
    closeSync(fd);
  }
  renameSync(partial, file);
  return bytes;
}

/** A snapshot file opened for reading; `close()` it. */
export class SnapshotFileReader {
  private crc: number;
  private at: number;

  private constructor(
    private readonly fd: number,
    readonly header: unknown,
    private readonly size: number,
    prefix: Buffer,
    headerBytes: Buffer,
  ) {
    this.crc = crc32(headerBytes, crc32(prefix));
    this.at = 8 + headerBytes.byteLength;
  }

  /** Opens `file` and parses its header; or why not (`kind` names the file in the answer, e.g. "a key filter file"). */
  static open(file: string, magic: string, kind: string, headerBytesMax: number): SnapshotFileReader | string {
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch (error) {
      return `no file: ${(error as Error).message}`;
    }
    try {
      const size = fstatSync(fd).size;
      const prefix = Buffer.alloc(8);
      if (size < 12 || readSync(fd, prefix, 0, 8, 0) !== 8 || prefix.toString('latin1', 0, 4) !== magic) throw new Refusal(`not ${kind}`);
      const headerLength = prefix.readUInt32LE(4);
      if (headerLength > headerBytesMax || 8 + headerLength + 4 > size) throw new Refusal('a damaged header');
      const headerBytes = Buffer.alloc(headerLength);
      if (readSync(fd, headerBytes, 0, headerLength, 8) !== headerLength) throw new Refusal('a short read');
      let header: unknown;
      try {
        header = JSON.parse(headerBytes.toString('utf8'));
      } catch {
        throw new Refusal('a damaged header');
      }
      return new SnapshotFileReader(fd, header, size, prefix, headerBytes);
    } catch (error) {
      closeSync(fd);
      if (error instanceof Refusal) return error.message;
      return `the file could not be read: ${(error as Error).message}`;
    }
  }

  /** True when the sections, of `bytes` in all, fill the file exactly. */
  holds(bytes: number): boolean {
    return this.size === this.at + bytes + 4;
  }

  /** Fills `target` from the next section's bytes; false on a short read. */
  read(target: Uint8Array): boolean {
    for (let done = 0; done < target.byteLength;) {
      const chunk = target.subarray(done, Math.min(done + CHUNK_BYTES, target.byteLength));
      if (readSync(this.fd, chunk, 0, chunk.byteLength, this.at) !== chunk.byteLength) return false;
      this.crc = crc32(chunk, this.crc);
      this.at += chunk.byteLength;
      done += chunk.byteLength;
    }
    return true;
  }

  /** True when the crc32 at the end is of everything read: call after the last section. */
  verify(): boolean {
    const tail = Buffer.alloc(4);
    return readSync(this.fd, tail, 0, 4, this.at) === 4 && tail.readUInt32LE(0) === this.crc >>> 0;
  }

  /** verify() for a caller that stopped reading early: reads what is left of the sections first. */
  verifyRest(): boolean {
    const end = this.size - 4;
    const scratch = Buffer.allocUnsafe(Math.max(0, Math.min(CHUNK_BYTES, end - this.at)));
    while (this.at < end) {
      if (!this.read(scratch.subarray(0, Math.min(scratch.byteLength, end - this.at)))) return false;
    }
    return this.verify();
  }

  close(): void {
    closeSync(this.fd);
  }
}

class Refusal extends Error {}

/** A typed array's bytes. */
export function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}
