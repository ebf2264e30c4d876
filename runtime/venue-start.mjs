// `npm start`, and the venues the tests and benchmarks start: runs server.ts compiled to
// JavaScript (runtime/worker-build.ts, as the worker threads already are), so that this
// process runs no tsx loader. Under tsx the main thread resolved and compiled its
// TypeScript through tsx's loader-hooks thread: about 0.5 CPU-seconds and 11,000 page
// faults more per start on two cores, measured with the test venues
// (docs/decisions/0025-threads-compiled-at-start.md).
//
// The build is current when every file it was built from is unchanged (about 5 ms to
// check); otherwise `node --import tsx runtime/build-main.ts` builds it first (a second or
// so, once per change of the sources). Source maps are on, as in the worker threads, so
// stack traces name the TypeScript files.
import './compiler-flags.mjs'; // first: V8's inlining budgets, before any code is optimized
import './node-globals.mjs'; // before any package loads
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { currentBuild, MAIN_BUILD_NAME, MAIN_MODULE } from './current-build.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const MAIN_BUILD = path.join(ROOT, '.build', MAIN_BUILD_NAME); // runtime/worker-build.ts MAIN_BUILD

let build = currentBuild(MAIN_BUILD, [MAIN_MODULE]);
if (build === null) {
  execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'runtime', 'build-main.ts')], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  build = currentBuild(MAIN_BUILD, [MAIN_MODULE]);
  if (build === null) throw new Error(`runtime/build-main.ts ran, but ${MAIN_BUILD} names no current build of server.ts`);
}
process.setSourceMapsEnabled(true);
await import(pathToFileURL(path.join(build.dir, MAIN_MODULE)).href);
