// runtime/worker-build.ts: the venue's worker entries compiled to JavaScript at start.
// A built module must behave as its TypeScript did under tsx: paths computed from
// import.meta.url point at the sources' folders, stack traces name the TypeScript
// files, and venues building at the same time from one tree share one folder.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { BUILD_DIR, buildMain, buildWorkers, MAIN_BUILD, MAIN_ENTRY, workerBuilds } from '../../runtime/worker-build.ts';
import { currentBuild, MAIN_MODULE } from '../../runtime/current-build.mjs';
import { spawnWorker, withoutTsxPreload } from '../../runtime/worker-spawn.ts';
import { DEFAULT_PRINCIPALS_FILE } from '../../gateway/principals.ts';
import { MIGRATIONS_DIR } from '../../persistence/migrations.ts';

const ENTRY = new URL('./fixtures/module-urls.worker.ts', import.meta.url);

interface Report {
  self: string;
  principals: string;
  migrations: string;
  echo: number;
  stack: string;
  execArgv: string[];
}

async function run(entry: URL): Promise<Report> {
  const worker = spawnWorker(entry, { echo: 42 });
  const [report] = (await once(worker, 'message')) as [Report];
  await worker.terminate();
  return report;
}

test('a built worker computes the same paths from import.meta.url as under tsx, and its stack names the TypeScript source', async () => {
  const built = (await buildWorkers([ENTRY])).get(ENTRY.href)!;
  assert.match(fileURLToPath(built), new RegExp(`^${BUILD_DIR.replaceAll('/', '\\/')}\\/workers-[0-9a-f]{16}\\/module-urls\\.worker\\.mjs$`));
  const compiled = await run(built);
  const interpreted = await run(ENTRY); // the same module through tsx
  assert.equal(compiled.echo, 42);
  assert.equal(compiled.self, ENTRY.href);
  assert.equal(compiled.principals, DEFAULT_PRINCIPALS_FILE);
  assert.equal(compiled.migrations, MIGRATIONS_DIR);
  assert.deepEqual({ ...compiled, stack: '' }, { ...interpreted, stack: '' });
  assert.deepEqual(compiled.execArgv, withoutTsxPreload(process.execArgv));
  assert.match(compiled.stack, /fixtures\/module-urls\.worker\.ts:\d+/, compiled.stack);
  // The stack is mapped by the bundle's inline map, which names the sources but leaves their
  // text out (every thread's start reads the whole bundle: the text was two thirds of it).
  const bundle = readFileSync(built, 'utf8');
  const inline = /\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/.exec(bundle);
  assert.ok(inline !== null, 'the bundle ends with its inline source map');
  const map = JSON.parse(Buffer.from(inline[1]!, 'base64').toString('utf8')) as { sources: string[]; sourcesContent?: unknown };
  assert.ok(
    map.sources.some((source) => source.endsWith('fixtures/module-urls.worker.ts')),
    map.sources.join(', '),
  );
  assert.equal(map.sourcesContent, undefined, 'the map carries no copy of the sources');
});

test('builds of the same sources share one folder, also when they run at once', async () => {
  const urls = await Promise.all([buildWorkers([ENTRY]), buildWorkers([ENTRY]), buildWorkers([ENTRY])]);
  const hrefs = new Set(urls.map((map) => map.get(ENTRY.href)!.href));
  assert.equal(hrefs.size, 1);
  const folder = path.dirname(fileURLToPath([...hrefs][0]!));
  assert.deepEqual(readdirSync(folder), ['module-urls.worker.mjs']);
  assert.deepEqual(
    readdirSync(BUILD_DIR).filter((name) => name.startsWith(`.tmp-${process.pid}-`)),
    [],
    'a temporary folder was left behind',
  );
  assert.equal((await run(new URL([...hrefs][0]!))).echo, 42);
});

test('a start whose sources are unchanged uses the last build without compiling; a changed source, or a removed build, is compiled again', async (t) => {
  // Sources of their own (in a folder under the project, so that node_modules resolves), changed by the test.
  const dir = fileURLToPath(new URL(`./fixtures/.build-probe-${process.pid}/`, import.meta.url));
  mkdirSync(dir, { recursive: true });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const entry = new URL(`file://${dir}probe.worker.ts`);
  writeFileSync(fileURLToPath(entry), "import { parentPort } from 'node:worker_threads';\nimport { VALUE } from './value.ts';\nparentPort!.postMessage(VALUE);\n");
  const setValue = (value: number) => writeFileSync(`${dir}value.ts`, `export const VALUE: number = ${value};\n`);
  const valueOf = async (url: URL) => {
    const worker = new Worker(url);
    const [value] = (await once(worker, 'message')) as [number];
    await worker.terminate();
    return value;
  };
  const build = async () => {
    const before = { ...workerBuilds };
    const url = (await buildWorkers([entry])).get(entry.href)!;
    return { url, compiled: workerBuilds.compiled - before.compiled, reused: workerBuilds.reused - before.reused };
  };

  setValue(1);
  const first = await build();
  assert.deepEqual([first.compiled, first.reused], [1, 0]);
  assert.equal(await valueOf(first.url), 1);
  const again = await build();
  assert.deepEqual([again.compiled, again.reused], [0, 1], 'unchanged sources were compiled again');
  assert.equal(again.url.href, first.url.href);

  setValue(2); // an imported module changes: the bundle must follow
  const changed = await build();
  assert.deepEqual([changed.compiled, changed.reused], [1, 0], 'a changed source was not compiled again');
  assert.notEqual(changed.url.href, first.url.href);
  assert.equal(await valueOf(changed.url), 2);
  assert.deepEqual([(await build()).reused], [1]);

  rmSync(path.dirname(fileURLToPath(changed.url)), { recursive: true }); // the build's folder removed (as stale, or by hand)
  const rebuilt = await build();
  assert.deepEqual([rebuilt.compiled, rebuilt.reused], [1, 0]);
  assert.equal(rebuilt.url.href, changed.url.href);
  assert.equal(await valueOf(rebuilt.url), 2);
});

test('entries with the same file name are refused (their bundles would overwrite each other)', async () => {
  await assert.rejects(buildWorkers([ENTRY, new URL('./other/module-urls.worker.ts', ENTRY)]), /distinct file names/);
});

test('workers start without the tsx preload they would inherit, and keep every other node flag', async () => {
  // This file runs under `node --import tsx` (npm test): a worker would inherit that flag, and
  // every module it imports would then go through tsx's loader hooks.
  assert.ok(
    process.execArgv.some((flag) => /tsx/.test(flag)),
    `the test runs without a tsx preload: ${JSON.stringify(process.execArgv)}`,
  );
  const built = (await buildWorkers([ENTRY])).get(ENTRY.href)!;
  const report = await run(built);
  assert.equal(report.echo, 42);
  assert.deepEqual(
    report.execArgv.filter((flag) => /tsx/.test(flag)),
    [],
    `a tsx flag reached the worker: ${JSON.stringify(report.execArgv)}`,
  );

  assert.deepEqual(withoutTsxPreload(['--import', 'tsx']), []);
  assert.deepEqual(withoutTsxPreload(['--import=tsx', '--cpu-prof', '--max-old-space-size=4096']), ['--cpu-prof', '--max-old-space-size=4096']);
  // What the tsx command itself passes to node.
  assert.deepEqual(withoutTsxPreload(['--require', '/work/x/node_modules/tsx/dist/preflight.cjs', '--import', 'file:///work/x/node_modules/tsx/dist/loader.mjs', '--perf-basic-prof']), [
    '--perf-basic-prof',
  ]);
  assert.deepEqual(withoutTsxPreload(['--loader', 'tsx/esm']), []);
  // Other preloads, and packages whose names merely start with tsx, stay.
  assert.deepEqual(withoutTsxPreload(['--import', './telemetry.mjs', '--require', '/x/node_modules/tsx-extra/index.cjs']), [
    '--import',
    './telemetry.mjs',
    '--require',
    '/x/node_modules/tsx-extra/index.cjs',
  ]);
  assert.deepEqual(withoutTsxPreload(['--import']), ['--import']); // a flag without its value is left for node to refuse
});

test("a parent started with V8 flags (which Node refuses in a worker's explicit flags) still starts its workers, without the tsx preload", () => {
  // --max-old-space-size, --expose-gc and --perf-basic-prof act on the whole process: an inherited
  // list may hold them, an explicit one may not (ERR_WORKER_INVALID_EXEC_ARGV).
  const fixture = fileURLToPath(new URL('./fixtures/spawn-with-flags.ts', import.meta.url));
  for (const flags of [['--max-old-space-size=1024'], ['--expose-gc', '--perf-basic-prof', '--enable-source-maps']]) {
    const run = spawnSync(process.execPath, [...flags, '--import', 'tsx', fixture], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.status, 0, `with ${flags.join(' ')}: ${run.stderr.slice(-2000)}`);
    const report = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { echo: number; execArgv: string[] };
    assert.equal(report.echo, 7);
    assert.deepEqual(
      report.execArgv.filter((flag) => /tsx/.test(flag)),
      [],
      `with ${flags.join(' ')}: ${JSON.stringify(report.execArgv)}`,
    );
    // What a worker may be given is kept.
    if (flags.includes('--enable-source-maps')) assert.ok(report.execArgv.includes('--enable-source-maps'), JSON.stringify(report.execArgv));
  }
});

test('a build is used only while it is current: every input with its hash, the folder and modules there; one that is current is marked used', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'current-build-'));
  try {
    const folder = path.join(root, 'workers-0123456789abcdef');
    mkdirSync(folder);
    writeFileSync(path.join(folder, 'server.mjs'), 'export {};\n');
    writeFileSync(path.join(folder, 'shard.mjs'), 'export {};\n');
    const input = path.join(root, 'source.ts');
    writeFileSync(input, 'export const A = 1;\n');
    const index = path.join(root, 'main.json');
    const hash = '4ab3e2d1c5f0d9e1aa0c6a1bcb5d9f93d6c2c9b1d76b7b0f1c3bfa9c26a3c5a1'; // any hash
    const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
    const current = { folder: 'workers-0123456789abcdef', inputs: { [input]: sha(input) } };
    writeFileSync(index, JSON.stringify(current));
    const old = new Date(Date.now() - 3_600_000);
    for (const used of [folder, index]) utimesSync(used, old, old);
    assert.deepEqual(currentBuild(index, ['server.mjs', 'shard.mjs']), { dir: folder, inputs: current.inputs });
    for (const used of [folder, index]) assert.ok(statSync(used).mtimeMs > old.getTime() + 1000, `a current build's ${path.basename(used)} is marked used`);
    assert.equal(currentBuild(index, ['server.mjs', 'other.mjs']), null, 'a module the folder lacks');
    writeFileSync(input, 'export const A = 2;\n');
    assert.equal(currentBuild(index, ['server.mjs']), null, 'an input changed since the build');
    writeFileSync(index, JSON.stringify({ folder: current.folder, inputs: { [input]: sha(input), [path.join(root, 'gone.ts')]: hash } }));
    assert.equal(currentBuild(index, ['server.mjs']), null, 'an input gone');
    writeFileSync(index, JSON.stringify({ folder: current.folder, inputs: { [input]: sha(input) } }));
    assert.equal(currentBuild(index, ['server.mjs'])?.dir, folder);
    rmSync(folder, { recursive: true });
    assert.equal(currentBuild(index, ['server.mjs']), null, 'the folder removed');
    writeFileSync(index, '{"folder":');
    assert.equal(currentBuild(index, ['server.mjs']), null, 'an index cut short');
    assert.equal(currentBuild(path.join(root, 'none.json'), ['server.mjs']), null, 'no index');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("buildMain names the built server.ts for the launcher, with the sources, tsconfig.json and esbuild's version among its inputs", async () => {
  const main = await buildMain();
  assert.equal(path.join(currentBuild(MAIN_BUILD, [MAIN_MODULE])!.dir, MAIN_MODULE), fileURLToPath(main));
  const inputs = Object.keys((JSON.parse(readFileSync(MAIN_BUILD, 'utf8')) as { inputs: Record<string, string> }).inputs);
  const root = fileURLToPath(new URL('../../', import.meta.url));
  for (const file of [
    fileURLToPath(MAIN_ENTRY),
    path.join(root, 'runtime/worker-build.ts'),
    path.join(root, 'core/config.ts'),
    path.join(root, 'tsconfig.json'),
    path.join(root, 'node_modules/esbuild/package.json'),
  ]) {
    assert.ok(inputs.includes(file), `${file} is an input of the main build`);
  }
});
