// The README's per-mode CPU table (bench/summary.ts durableSubmitTable) from a
// durable-submit result: one row per mode, the venue's threads by name, PostgreSQL and the
// generator as parts, ratios to the bare server of the same rounds.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { durableSubmitTable } from '../../bench/summary.ts';

const result = {
  rounds: 3,
  connections: 64,
  venueRatePerSecond: 0,
  medians: {
    bareServerUsPerAnswer: 7.5,
    bareAnswersPerSecond: 90_000,
    modes: {
      'sync-result': {
        venueAndPostgresUsPerAnswer: 120,
        venueAnswersPerSecond: 12_000,
        ratioToBare: 16,
        throughputRatio: 0.133,
        verified: true,
        partsUs: { PostgreSQL: 50, gateways: 40, generator: 20, 'persistence thread': 15, shards: 5, 'main and V8': 10 },
        threadsUs: { persistence: 15, 'gateway-1': 19, 'gateway-0': 21, 'V8 and libuv helpers': 8, main: 2, 'shard-0': 3, 'shard-1': 2 },
      },
      'accepted-async': {
        venueAndPostgresUsPerAnswer: 100,
        venueAnswersPerSecond: 14_000,
        ratioToBare: 13.3,
        throughputRatio: 0.156,
        verified: false,
        partsUs: { PostgreSQL: 45, gateways: 35, generator: 20 },
        threadsUs: { 'gateway-0': 18, 'gateway-1': 17 },
      },
    },
  },
};

test('the per-mode table: a row per mode, threads by name, PostgreSQL and the generator as parts, a failed verification said', () => {
  const lines = durableSubmitTable(result);
  const table = lines.filter((line) => line.startsWith('|'));
  const header = table[0]!
    .split('|')
    .map((cell) => cell.trim())
    .filter(Boolean);
  assert.deepEqual(header, [
    'mode',
    'answered/s',
    '/ bare',
    'venue + PostgreSQL',
    '/ bare',
    'gateway-0',
    'gateway-1',
    'shard-0',
    'shard-1',
    'persistence',
    'main',
    'V8 and libuv helpers',
    'PostgreSQL',
    'generator',
    'verified',
  ]);
  assert.equal(table.length, 4, 'header, rule, two modes');
  assert.equal(table[2], '| sync-result | 12.0 k | 0.133 | 120 | 16× | 21 | 19 | 3 | 2 | 15 | 2 | 8 | 50 | 20 | ok |');
  assert.equal(table[3], '| accepted-async | 14.0 k | 0.156 | 100 | 13.3× | 18 | 17 | — | — | — | — | — | 45 | 20 | **FAILED** |');
  assert.match(lines[0]!, /closed loop, 64 connections.*medians of 3 rounds.*7\.5 µs and 90\.0 k answers\/s/);
  assert.deepEqual(durableSubmitTable(null), []);
});
