// The venue's settings read from this process's environment (core/config.ts holds the
// table, the parsing and the checks); an unset PRINCIPALS_FILE names the development file.

import os from 'node:os';
import { parseConfig, type VenueConfig } from '../core/config.ts';
import { DEFAULT_PRINCIPALS_FILE } from '../gateway/principals.ts';

export function loadConfig(): VenueConfig {
  const config = parseConfig(process.env, os.availableParallelism());
  if (config.principalsFile === '') config.principalsFile = DEFAULT_PRINCIPALS_FILE;
  return config;
}
