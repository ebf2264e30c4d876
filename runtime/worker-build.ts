// Compiles the venue's worker entries to JavaScript at start (when their sources changed),
// so that worker threads load plain modules instead of running tsx's loader each (for a
// TypeScript entry runtime/worker-bootstrap.mjs registers it per thread; runtime/worker-spawn.ts
// keeps the tsx preload a worker would inherit out of their flags).
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
//
// A start whose sources are unchanged does not run esbuild at all: each build leaves an
// index (`.build/inputs-<hash of the entries, the options, esbuild's version and
// tsconfig.json>.json`) naming its folder and the SHA-256 of every file it read; a start
// that finds the folder and the same hashes (about 5 ms for the sources' 0.6 MB) uses it.
// esbuild's run cost about 0.45 s of CPU per start on two cores (its service process,
// beside the embedded PostgreSQL's start), with nothing to show for it but the same bytes.

import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BuildOptions, Plugin } from 'esbuild';
import { currentBuild, MAIN_BUILD_NAME } from './current-build.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const BUILD_DIR = path.join(ROOT, '.build');
/** Folders of other builds older than this are removed at a build. */
const STALE_MS = 24 * 3600 * 1000;

/** How often a build ran esbuild, and how often it used an earlier build (for the tests). */
export const workerBuilds = { compiled: 0, reused: 0 };

const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Each TypeScript module's `import.meta.url` becomes its source file's URL; the hash of every file read goes to `read`. */
function keepModuleUrls(read: Map<string, string>): Plugin {
  return {
    name: 'keep-module-urls',
    setup(builder) {
      builder.onLoad({ filter: /\.ts$/ }, (args) => {
        const text = readFileSync(args.path, 'utf8');
        read.set(args.path, sha256(text));
        return { contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
      });
    },
  };
}

/** What a build leaves for the next start: its folder (a name under BUILD_DIR) and the hash of every source it read. */
interface BuildIndex {
  folder: string;
  inputs: Record<string, string>;
}

/** Writes a file whole or not at all (a start reading it meanwhile sees the old one or the new one). */
function writeAtomically(file: string, text: string): void {
  const temporary = `${file}.tmp-${process.pid}-${Date.now()}`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

/** Builds the entries; returns the built module's URL for each entry URL (by href). */
export async function buildWorkers(entries: readonly URL[]): Promise<Map<string, URL>> {
  return (await buildEntries(entries)).urls;
}

/** Builds the entries: the built module's URL for each entry URL (by href), and the hash of every file the build read. */
async function buildEntries(entries: readonly URL[]): Promise<{ urls: Map<string, URL>; inputs: Record<string, string> }> {
  const names = entries.map((entry) => path.basename(fileURLToPath(entry), '.ts'));
  if (new Set(names).size !== names.length) throw new Error(`worker entries need distinct file names: ${names.join(', ')}`);
  const urlsIn = (dir: string) => new Map(entries.map((entry, k) => [entry.href, pathToFileURL(path.join(dir, `${names[k]}.mjs`))]));
  const options: BuildOptions = {
    entryPoints: Object.fromEntries(entries.map((entry, k) => [names[k]!, fileURLToPath(entry)])),
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    // Inline maps name the TypeScript sources in stack traces (worker-bootstrap.mjs enables
    // them) without the sources' text, which would be most of each bundle and tens of ms of
    // parsing per thread at every start; a debugger reads the sources from their files.
    sourcemap: 'inline',
    sourcesContent: false,
    outdir: 'out',
    outExtension: { '.js': '.mjs' },
    logLevel: 'silent',
  };
  // Whatever else decides the output: the options, the compiler's version, and the
  // tsconfig.json esbuild reads for its TypeScript settings.
  const esbuildPackage = JSON.parse(readFileSync(path.join(ROOT, 'node_modules/esbuild/package.json'), 'utf8')) as { version: string };
  const key = sha256(JSON.stringify({ options, esbuild: esbuildPackage.version, tsconfig: sha256(readFileSync(path.join(ROOT, 'tsconfig.json'))) })).slice(0, 16);
  const indexFile = path.join(BUILD_DIR, `inputs-${key}.json`);
  // An earlier build of the same entries whose every source is unchanged (marked used).
  const earlier = currentBuild(
    indexFile,
    names.map((name) => `${name}.mjs`),
  );
  if (earlier !== null) {
    workerBuilds.reused++;
    return { urls: urlsIn(earlier.dir), inputs: earlier.inputs };
  }

  const read = new Map<string, string>();
  const { build } = await import('esbuild'); // loaded (and its service started) only when a build runs
  const result = await build({ ...options, plugins: [keepModuleUrls(read)], metafile: true, absWorkingDir: ROOT });
  workerBuilds.compiled++;
  const hash = createHash('sha256');
  for (const file of result.outputFiles!) hash.update(file.path).update(file.contents);
  const dir = path.join(BUILD_DIR, `workers-${hash.digest('hex').slice(0, 16)}`);
  // Every file the bundle holds (the .ts ones hashed as read; any other, as it is now).
  const inputs: Record<string, string> = {};
  for (const input of Object.keys(result.metafile!.inputs)) {
    const file = path.resolve(ROOT, input);
    inputs[file] = read.get(file) ?? sha256(readFileSync(file));
  }
  if (!exists(dir)) {
    const temporary = path.join(BUILD_DIR, `.tmp-${process.pid}-${Date.now()}`);
    mkdirSync(temporary, { recursive: true });
    for (const file of result.outputFiles!) writeFileSync(path.join(temporary, path.basename(file.path)), file.contents);
    try {
      renameSync(temporary, dir);
    } catch (error) {
      rmSync(temporary, { recursive: true, force: true });
      if (!exists(dir)) throw error; // another venue did not just write the same build
    }
  }
  writeAtomically(indexFile, JSON.stringify({ folder: path.basename(dir), inputs } satisfies BuildIndex));
  removeStale([dir, indexFile, MAIN_BUILD]);
  return { urls: urlsIn(dir), inputs };
}

/** The venue's main module (the main thread's entry), which runtime/venue-start.mjs runs. */
export const MAIN_ENTRY = new URL('../server.ts', import.meta.url);
/** Where runtime/venue-start.mjs finds the built main module: a BuildIndex whose inputs also hold what decides the build but is not in the bundle. */
export const MAIN_BUILD = path.join(BUILD_DIR, MAIN_BUILD_NAME);

/**
 * Builds server.ts (as the workers are, one bundle) and names it in MAIN_BUILD for
 * runtime/venue-start.mjs, which runs it when every input is unchanged and runs this (through
 * runtime/build-main.ts) otherwise. Besides the bundle's sources, the inputs hold tsconfig.json
 * and esbuild's package.json (a change of either builds again), and runtime/worker-build.ts
 * itself is among the sources (so a change of the build options is too).
 */
export async function buildMain(): Promise<URL> {
  const { urls, inputs } = await buildEntries([MAIN_ENTRY]);
  const main = urls.get(MAIN_ENTRY.href)!;
  const decides = [path.join(ROOT, 'tsconfig.json'), path.join(ROOT, 'node_modules/esbuild/package.json')];
  const all = { ...inputs, ...Object.fromEntries(decides.map((file) => [file, sha256(readFileSync(file))])) };
  writeAtomically(MAIN_BUILD, JSON.stringify({ folder: path.basename(path.dirname(fileURLToPath(main))), inputs: all } satisfies BuildIndex));
  return main;
}

function exists(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** Removes the folders and indexes of other builds not used for STALE_MS. */
function removeStale(keep: readonly string[]): void {
  const now = Date.now();
  for (const name of readdirSync(BUILD_DIR)) {
    const folder = path.join(BUILD_DIR, name);
    if (keep.includes(folder)) continue;
    try {
      if (now - statSync(folder).mtimeMs > STALE_MS) rmSync(folder, { recursive: true, force: true });
    } catch {
      // removed meanwhile by another venue
    }
  }
}
