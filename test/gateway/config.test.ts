// Configuration bounds that involve two settings at once (each setting's own range is
// checked where it is read): the tape view's shared memory, the key filters' floor and maximum.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, TAPE_VIEW_TRADES_MAX } from '../../gateway/config.ts';

test('the tape view is bounded: MARKET_DATA_INSTRUMENTS × MARKET_DATA_TAPE_ROWS at most 2^24 trades, 0 rows turns it off', () => {
  const defaults = loadConfig({});
  assert.deepEqual([defaults.marketDataInstruments, defaults.marketDataTapeRows], [4096, 128]);
  assert.equal(loadConfig({ MARKET_DATA_INSTRUMENTS: String(Math.floor(TAPE_VIEW_TRADES_MAX / 500)), MARKET_DATA_TAPE_ROWS: '500' }).marketDataTapeRows, 500);
  assert.throws(() => loadConfig({ MARKET_DATA_INSTRUMENTS: String(Math.floor(TAPE_VIEW_TRADES_MAX / 500) + 1), MARKET_DATA_TAPE_ROWS: '500' }), /MARKET_DATA_INSTRUMENTS × MARKET_DATA_TAPE_ROWS must be at most 16777216/);
  assert.equal(loadConfig({ MARKET_DATA_INSTRUMENTS: String(1 << 20), MARKET_DATA_TAPE_ROWS: '0' }).marketDataTapeRows, 0);
  assert.throws(() => loadConfig({ MARKET_DATA_TAPE_ROWS: '501' }), /MARKET_DATA_TAPE_ROWS must be between 0 and 500/);
});

test('engine checkpoints: every 250,000 commands by default, 0 turns them off, bounded', () => {
  assert.equal(loadConfig({}).engineCheckpointCommands, 250_000);
  assert.equal(loadConfig({ ENGINE_CHECKPOINT_COMMANDS: '0' }).engineCheckpointCommands, 0);
  assert.throws(() => loadConfig({ ENGINE_CHECKPOINT_COMMANDS: '-1' }), /ENGINE_CHECKPOINT_COMMANDS must be an integer, got "-1"/);
  assert.throws(() => loadConfig({ ENGINE_CHECKPOINT_COMMANDS: String(2 ** 30 + 1) }), /ENGINE_CHECKPOINT_COMMANDS must be between 0 and 1073741824/);
  assert.throws(() => loadConfig({ ENGINE_CHECKPOINT_COMMANDS: 'often' }), /ENGINE_CHECKPOINT_COMMANDS/);
});

test('the key filters: KEY_FILTER_BITS is the floor, KEY_FILTER_BITS_MAX the most the start may size them to, and not below the floor', () => {
  const defaults = loadConfig({});
  assert.deepEqual([defaults.keyFilterBits, defaults.keyFilterBitsMax], [1 << 27, 1 << 30]);
  assert.deepEqual([loadConfig({ KEY_FILTER_BITS: '1024', KEY_FILTER_BITS_MAX: '1024' }).keyFilterBitsMax], [1024]);
  assert.throws(() => loadConfig({ KEY_FILTER_BITS_MAX: String(1 << 26) }), /KEY_FILTER_BITS_MAX must be at least KEY_FILTER_BITS \(134217728\), got 67108864/);
  assert.throws(() => loadConfig({ KEY_FILTER_BITS_MAX: String(3 << 20) }), /KEY_FILTER_BITS_MAX must be a power of two/);
  assert.throws(() => loadConfig({ KEY_FILTER_BITS_MAX: String(2 ** 31) }), /KEY_FILTER_BITS_MAX must be between 1024 and 1073741824/);
});
