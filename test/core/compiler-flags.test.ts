// runtime/compiler-flags.mjs: the venue's V8 inlining budgets, set by the module that
// runtime/venue-start.mjs and bench/run.ts import first. V8 has no call that reads a flag
// back, so the probe is what the flags are for: a child node inlines a callee whose
// bytecode is over V8's default budget for one function only when the module ran (its
// --trace-turbo-inlining output says so), and not when node's command line names the
// budget itself.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { COMPILER_FLAGS, compilerFlagsToSet } from '../../runtime/compiler-flags.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROBE = fileURLToPath(new URL('./fixtures/inlining-probe.mjs', import.meta.url));
const MODULE = fileURLToPath(new URL('../../runtime/compiler-flags.mjs', import.meta.url));

/** The probe's trace lines about `callee`: inlined into `caller`, and the bytecode size V8 saw. */
function probe(nodeArgs: string[]): { inlined: boolean; trace: string } {
  const child = spawnSync(process.execPath, [...nodeArgs, '--allow-natives-syntax', '--trace-turbo-inlining', PROBE], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  assert.equal(child.status, 0, child.stderr);
  const trace = child.stdout
    .split('\n')
    .filter((line) => line.includes('SharedFunctionInfo callee'))
    .join('\n');
  return { inlined: /Inlining .*SharedFunctionInfo callee>.* into .*SharedFunctionInfo caller>/.test(trace), trace };
}

test('the budgets are options this node knows', () => {
  const options = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8' }).stdout;
  assert.equal(COMPILER_FLAGS.length, 3);
  for (const flag of COMPILER_FLAGS) {
    const [name, value] = flag.split('=');
    assert.match(options, new RegExp(`^  ${name} \\(`, 'm'), `${name} is not a V8 option here`);
    assert.ok(Number(value) > 0, flag);
  }
});

test('a budget named on the command line is left to it, in either spelling; others are set', () => {
  assert.deepEqual(compilerFlagsToSet([]), [...COMPILER_FLAGS]);
  assert.deepEqual(compilerFlagsToSet(['--import', 'tsx', '--max-old-space-size=4096']), [...COMPILER_FLAGS]);
  assert.deepEqual(
    compilerFlagsToSet(['--max-inlined-bytecode-size-cumulative=920']),
    COMPILER_FLAGS.filter((flag) => !flag.startsWith('--max-inlined-bytecode-size-cumulative=')),
  );
  assert.deepEqual(
    compilerFlagsToSet(['--max_inlined_bytecode_size=460', '--max-inlined-bytecode-size-absolute=4600']),
    COMPILER_FLAGS.filter((flag) => flag.startsWith('--max-inlined-bytecode-size-cumulative=')),
  );
});

test('with the module imported first, V8 inlines a function over its default budget; without it, or with the budget on the command line, it does not', () => {
  const plain = probe([]);
  assert.equal(plain.inlined, false, `inlined without the module:\n${plain.trace}`);
  const withFlags = probe(['--import', MODULE]);
  assert.equal(withFlags.inlined, true, `not inlined with the module:\n${withFlags.trace}`);
  const size = Number(/bytecode size: (\d+)/.exec(withFlags.trace)?.[1]);
  assert.ok(size > 460, `the probe's callee has ${size} bytes of bytecode, not over V8's default of 460 for one function`);
  const overridden = probe(['--max-inlined-bytecode-size=460', '--import', MODULE]);
  assert.equal(overridden.inlined, false, `inlined although the command line set the default budget:\n${overridden.trace}`);
});

test('the venue and the benchmarks import the module before anything else', () => {
  const firstImport = (file: string) => /^import [^\n]*$/m.exec(readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8'))?.[0];
  assert.match(firstImport('runtime/venue-start.mjs') ?? '', /^import '\.\/compiler-flags\.mjs';/);
  assert.match(firstImport('bench/run.ts') ?? '', /^import '\.\.\/runtime\/compiler-flags\.mjs';/);
});
