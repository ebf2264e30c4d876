// Which shard owns an instrument: a stable function of the instrument id and the
// shard count, the same in every thread, every process and every release (recovery
// and any future multi-process split rely on it). verifyShardMap() checks fixed
// vectors at start-up, so a change to the hash cannot silently move instruments.

import { hashWords } from './hash.ts';
import { uuidWords } from './uuid.ts';

export function shardOf(words: Int32Array, at: number, shardCount: number): number {
  return (hashWords(words[at]!, words[at + 1]!, words[at + 2]!, words[at + 3]!) >>> 0) % shardCount;
}

/** (instrumentId, shard count, shard) triples that must never change. */
export const SHARD_MAP_VECTORS: ReadonlyArray<readonly [string, number, number]> = [
  ['11111111-1111-4111-8111-111111111111', 2, 1],
  ['22222222-2222-4222-8222-222222222222', 2, 1],
  ['33333333-3333-4333-8333-333333333333', 2, 0],
  ['00000000-0000-4000-8000-000000000000', 2, 0],
  ['11111111-1111-4111-8111-111111111111', 7, 5],
  ['9b2f6c1e-0d4a-4f7e-9a51-3c8e2b7d6f10', 4, 3],
];

export function verifyShardMap(): void {
  for (const [instrumentId, shardCount, expected] of SHARD_MAP_VECTORS) {
    const actual = shardOf(uuidWords(instrumentId), 0, shardCount);
    if (actual !== expected) {
      throw new Error(`shard map changed: ${instrumentId} with ${shardCount} shards maps to ${actual}, not ${expected}`);
    }
  }
}
