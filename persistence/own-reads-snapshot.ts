// The own-reads model (persistence/own-reads.ts) kept across a graceful stop, beside the
// open orders (open-orders-snapshot.ts), under the same token and projection watermarks:
// without it a restarted venue answered own-order and fill reads from PostgreSQL (a
// sequential scan per read, no index serves them: decision 0038) until each participant
// had `limit` new rows. The file is read only at the start right after the stop that
// wrote it (the snapshot note is consumed); after a crash the model starts lacking, as
// before.
//
// File (persistence/snapshot-file.ts): "VOR1", the header (JSON: token, watermarks, window,
// floors, per participant its floors and counts), then the image's seven columns, crc32.

import path from 'node:path';
import { bytesOf, SnapshotFileReader, writeSnapshotFile } from './snapshot-file.ts';
import { imageLengths, type OwnReadsImage } from './own-reads.ts';

const MAGIC = 'VOR1';
/** The header lists every participant held (about 100 bytes each). */
const HEADER_BYTES_MAX = 16 << 20;

interface OwnReadsHeader {
  token: string;
  watermarks: number[];
  window: number;
  floors: OwnReadsImage['floors'];
  participants: OwnReadsImage['participants'];
  clientOrderIdBytes: number;
}

export function ownReadsPath(dataDir: string): string {
  return path.join(dataDir, 'own-reads.bin');
}

const sectionsOf = (image: OwnReadsImage) =>
  [image.orderIds, image.orderSmall, image.orderNumbers, image.clientOrderIds, image.fillIds, image.fillSmall, image.fillNumbers].map((column) => bytesOf(column));

/** Writes the image as true at the projection `watermarks`; returns the file's bytes. */
export function writeOwnReads(file: string, token: string, watermarks: readonly number[], image: OwnReadsImage): number {
  const header: OwnReadsHeader = {
    token,
    watermarks: [...watermarks],
    window: image.window,
    floors: image.floors,
    participants: image.participants,
    clientOrderIdBytes: image.clientOrderIds.byteLength,
  };
  return writeSnapshotFile(file, MAGIC, header, sectionsOf(image));
}

const validFloor = (floor: unknown) => floor === null || Number.isFinite(floor);
const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;

/**
 * The image in the file, if it is the one `token` names, true at `watermarks` and kept
 * with the same `window`; else why not (a damaged file is refused whole).
 */
export function readOwnReads(file: string, token: string, watermarks: readonly number[], window: number): OwnReadsImage | string {
  const reader = SnapshotFileReader.open(file, MAGIC, 'an own-reads file', HEADER_BYTES_MAX);
  if (typeof reader === 'string') return reader;
  try {
    const header = reader.header as Partial<OwnReadsHeader> | null;
    if (
      typeof header !== 'object' ||
      header === null ||
      typeof header.token !== 'string' ||
      !Array.isArray(header.watermarks) ||
      !Array.isArray(header.participants) ||
      !count(header.clientOrderIdBytes) ||
      typeof header.floors !== 'object' ||
      header.floors === null ||
      !validFloor(header.floors.orders) ||
      !validFloor(header.floors.fills) ||
      !header.participants.every(
        (p) => typeof p === 'object' && p !== null && validFloor(p.open) && validFloor(p.closed) && validFloor(p.fills) && Array.isArray(p.counts) && p.counts.length === 3 && p.counts.every(count),
      )
    ) {
      return 'a damaged header';
    }
    if (header.token !== token) return 'the file is not the one the database names';
    if (header.watermarks.join() !== watermarks.join()) return `the file is true at projections ${header.watermarks.join()}, storage holds ${watermarks.join()}`;
    if (header.window !== window) return `the file keeps ${header.window} orders and fills a participant, OWN_READS_WINDOW is ${window}`;
    const participants = header.participants;
    const lengths = imageLengths(
      participants.reduce((sum, p) => sum + p.counts[0] + p.counts[1], 0),
      participants.reduce((sum, p) => sum + p.counts[2], 0),
    );
    const image: OwnReadsImage = {
      window,
      floors: header.floors,
      participants,
      orderIds: new Int32Array(lengths.orderIds),
      orderSmall: new Int32Array(lengths.orderSmall),
      orderNumbers: new Float64Array(lengths.orderNumbers),
      clientOrderIds: new Uint8Array(header.clientOrderIdBytes!),
      fillIds: new Int32Array(lengths.fillIds),
      fillSmall: new Int32Array(lengths.fillSmall),
      fillNumbers: new Float64Array(lengths.fillNumbers),
    };
    const sections = sectionsOf(image);
    if (!reader.holds(sections.reduce((sum, section) => sum + section.byteLength, 0))) return 'a file of the wrong length';
    for (const section of sections) if (!reader.read(section)) return 'a short read';
    return reader.verify() ? image : 'a checksum mismatch';
  } finally {
    reader.close();
  }
}
