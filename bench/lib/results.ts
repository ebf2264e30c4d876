// Benchmark results: one JSON file per benchmark under bench/results/.

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');

export function writeResult(name: string, body: Record<string, unknown>): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${name}.json`);
  writeFileSync(path, `${JSON.stringify({ benchmark: name, measuredAt: new Date().toISOString(), ...body }, null, 2)}\n`);
  console.log(`wrote ${path}`);
  return path;
}
