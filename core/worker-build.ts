// Compiles the venue's worker entries to JavaScript once per start, so that worker
// threads load plain modules instead of registering tsx's loader each (Node 20 does not
// carry `--import tsx` into workers; core/worker-bootstrap.mjs does it per thread).
//
// Why: with tsx, every worker thread resolved and compiled its TypeScript through a
// loader-hooks thread of its own, about 0.6-1.1 s of its start plus a second of the
// hooks thread's CPU, six times per start on two cores. esbuild (the compiler tsx runs
// on) bundles the four entries with their own modules in one call; packages stay
// imports, resolved from node_modules as before.
//
// Each module keeps its own `import.meta.url` (replaced by the source file's URL), so
// paths computed from it (the migrations folder, the development principals) are the
// same as under tsx. The bundles go to `.build/workers-<hash of their text>/` under the
// project root (node_modules must be reachable from them): written once per content
// through a temporary folder and a rename, so venues starting at the same time from
// one tree share it, and a folder is never seen half written.

import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const BUILD_DIR = path.join(ROOT, '.build');
/** Folders of other builds older than this are removed at a build. */
const STALE_MS = 24 * 3600 * 1000;

/** Each TypeScript module's `import.meta.url` becomes its source file's URL. */
const keepModuleUrls: Plugin = {
  name: 'keep-module-urls',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      return { contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
    });
  },
};

/** Builds the entries; returns the built module's URL for each entry URL (by href). */
export async function buildWorkers(entries: readonly URL[]): Promise<Map<string, URL>> {
  const names = entries.map((entry) => path.basename(fileURLToPath(entry), '.ts'));
  if (new Set(names).size !== names.length) throw new Error(`worker entries need distinct file names: ${names.join(', ')}`);
  const result = await build({
    entryPoints: Object.fromEntries(entries.map((entry, k) => [names[k]!, fileURLToPath(entry)])),
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    outdir: 'out',
    outExtension: { '.js': '.mjs' },
    logLevel: 'silent',
    plugins: [keepModuleUrls],
  });
  const hash = createHash('sha256');
  for (const file of result.outputFiles) hash.update(file.path).update(file.contents);
  const dir = path.join(BUILD_DIR, `workers-${hash.digest('hex').slice(0, 16)}`);
  if (!exists(dir)) {
    const temporary = path.join(BUILD_DIR, `.tmp-${process.pid}-${Date.now()}`);
    mkdirSync(temporary, { recursive: true });
    for (const file of result.outputFiles) writeFileSync(path.join(temporary, path.basename(file.path)), file.contents);
    try {
      renameSync(temporary, dir);
    } catch (error) {
      rmSync(temporary, { recursive: true, force: true });
      if (!exists(dir)) throw error; // another venue did not just write the same build
    }
  }
  removeStale(dir);
  return new Map(entries.map((entry, k) => [entry.href, pathToFileURL(path.join(dir, `${names[k]}.mjs`))]));
}

function exists(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function removeStale(keep: string): void {
  const now = Date.now();
  for (const name of readdirSync(BUILD_DIR)) {
    const folder = path.join(BUILD_DIR, name);
    if (folder === keep) continue;
    try {
      if (now - statSync(folder).mtimeMs > STALE_MS) rmSync(folder, { recursive: true, force: true });
    } catch {
      // removed meanwhile by another venue
    }
  }
}
