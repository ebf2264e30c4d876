// Whether a build named by an index file (runtime/worker-build.ts: { folder, inputs }) is
// current: its folder and modules there, and every input file with the hash it had when
// built. Plain JavaScript: runtime/venue-start.mjs asks it before anything loads tsx, and
// runtime/worker-build.ts asks it before it would build again.
import { createHash } from 'node:crypto';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';

/** The index of the venue's main module's build, in the build folder (runtime/worker-build.ts MAIN_BUILD). */
export const MAIN_BUILD_NAME = 'main.json';
/** The main module's file in its build's folder (the bundle of server.ts). */
export const MAIN_MODULE = 'server.mjs';

/**
 * The build `indexFile` names ({ dir, inputs }) if it is current, else null (no index, an
 * unreadable one, its folder or one of `modules` gone, an input changed or gone). A current
 * build's folder and index are marked used: builds remove those of others unused for a day,
 * and one removed meanwhile is not current.
 */
export function currentBuild(indexFile, modules) {
  try {
    const index = JSON.parse(readFileSync(indexFile, 'utf8'));
    if (typeof index.folder !== 'string' || typeof index.inputs !== 'object' || index.inputs === null) return null;
    const dir = path.join(path.dirname(indexFile), path.basename(index.folder));
    for (const module of modules) if (!statSync(path.join(dir, module)).isFile()) return null;
    for (const [input, hash] of Object.entries(index.inputs)) {
      if (createHash('sha256').update(readFileSync(input)).digest('hex') !== hash) return null;
    }
    const now = new Date();
    for (const used of [dir, indexFile]) utimesSync(used, now, now);
    return { dir, inputs: index.inputs };
  } catch {
    return null;
  }
}
