// The settings table (core/config.ts): each setting parsed and refused by its own range,
// the bounds that involve two settings, and the reference docs written from the table.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { parseConfig, SETTINGS, TAPE_VIEW_TRADES_MAX } from '../../core/config.ts';
import { CONFIG_DOC, currentDocs, README } from '../../runtime/config-docs.ts';

const loadConfig = (env: Record<string, string>) => parseConfig(env, 2);

test('the tape view is bounded: MARKET_DATA_INSTRUMENTS × MARKET_DATA_TAPE_ROWS at most 2^24 trades, 0 rows turns it off', () => {
  const defaults = loadConfig({});
  assert.deepEqual([defaults.marketDataInstruments, defaults.marketDataTapeRows], [4096, 128]);
  assert.equal(loadConfig({ MARKET_DATA_INSTRUMENTS: String(Math.floor(TAPE_VIEW_TRADES_MAX / 500)), MARKET_DATA_TAPE_ROWS: '500' }).marketDataTapeRows, 500);
  assert.throws(
    () => loadConfig({ MARKET_DATA_INSTRUMENTS: String(Math.floor(TAPE_VIEW_TRADES_MAX / 500) + 1), MARKET_DATA_TAPE_ROWS: '500' }),
    /MARKET_DATA_INSTRUMENTS × MARKET_DATA_TAPE_ROWS must be at most 16777216/,
  );
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

test('every setting has its own variable and key, and the defaults parse', () => {
  const envs = SETTINGS.map((setting) => setting.env);
  const keys = SETTINGS.map((setting) => setting.key);
  assert.equal(new Set(envs).size, envs.length);
  assert.equal(new Set(keys).size, keys.length);
  const defaults = loadConfig({});
  assert.deepEqual(Object.keys(defaults).sort(), [...keys].sort());
  assert.equal(defaults.gatewayThreads, 2);
  assert.equal(parseConfig({}, 200).gatewayThreads, 64);
  assert.equal(defaults.principalsFile, '');
  assert.equal(defaults.projectionGroupMs, 50);
});

test('a bad choice or pattern stops the start, naming the variable', () => {
  assert.throws(() => loadConfig({ LOG_LEVEL: 'loud' }), /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"/);
  assert.throws(() => loadConfig({ PROCESSING_MODE: 'fast' }), /PROCESSING_MODE must be one of/);
  assert.throws(() => loadConfig({ VENUE_SESSION_ID: 'a b' }), /VENUE_SESSION_ID must match/);
  assert.throws(() => loadConfig({ VENUE_RUN_ID: '' }), /VENUE_RUN_ID must match/);
  assert.throws(() => loadConfig({ COMPETITION_PROFILE: 'x/y' }), /COMPETITION_PROFILE must match/);
  assert.throws(() => loadConfig({ MARKET_DATA_PROJECTOR_ENABLED: 'yes' }), /MARKET_DATA_PROJECTOR_ENABLED must be true or false/);
  assert.equal(loadConfig({ COMPETITION_PROFILE: '' }).competitionProfile, '');
});

test('docs/configuration.md and the README hold the tables the settings write now (node --import tsx runtime/config-docs.ts)', () => {
  const { configDoc, readme } = currentDocs();
  assert.equal(readFileSync(CONFIG_DOC, 'utf8'), configDoc);
  assert.equal(readFileSync(README, 'utf8'), readme);
  for (const setting of SETTINGS) assert.ok(configDoc.includes(`| \`${setting.env}\` |`), setting.env);
});
