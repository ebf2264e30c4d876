// Whether a build named by an index file (core/worker-build.ts: { folder, inputs }) is
// current: its folder and module there, and every input file with the hash it had when
// built. Plain JavaScript: core/venue-start.mjs asks it before anything loads tsx.
import { createHash } from 'node:crypto';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';

/**
 * The path of `module` in the build `indexFile` names if the build is current, else null (no
 * index, an unreadable one, the folder or module gone, an input changed or gone). A current
 * build's folder is marked used: builds remove the folders of others unused for a day.
 */
export function currentBuild(indexFile, module) {
  try {
    const index = JSON.parse(readFileSync(indexFile, 'utf8'));
    if (typeof index.folder !== 'string' || typeof index.inputs !== 'object' || index.inputs === null) return null;
    const dir = path.join(path.dirname(indexFile), path.basename(index.folder));
    const file = path.join(dir, module);
    if (!statSync(file).isFile()) return null;
    for (const [input, hash] of Object.entries(index.inputs)) {
      if (createHash('sha256').update(readFileSync(input)).digest('hex') !== hash) return null;
    }
    const now = new Date();
    utimesSync(dir, now, now);
    return file;
  } catch {
    return null;
  }
}
