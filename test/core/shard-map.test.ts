import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shardOf, SHARD_MAP_VECTORS, verifyShardMap } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';

test('the shard map keeps its fixed vectors', () => {
  verifyShardMap();
  for (const [instrumentId, shards, shard] of SHARD_MAP_VECTORS) assert.equal(shardOf(uuidWords(instrumentId), 0, shards), shard);
});

test('instruments spread over the shards', () => {
  const counts = [0, 0, 0, 0];
  for (let n = 0; n < 4000; n++) {
    counts[shardOf(Int32Array.of(n, 0x4000, 0x80000000 | 0, n * 7), 0, 4)]!++;
  }
  for (const count of counts) assert.ok(count > 850 && count < 1150, `counts ${counts.join(',')}`);
});
