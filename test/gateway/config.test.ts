// Configuration bounds that involve two settings at once (each setting's own range is
// checked where it is read): the tape view's shared memory.

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
