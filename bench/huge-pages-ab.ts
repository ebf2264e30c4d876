// Huge pages A/B for the matching core: the issue-7 stream (1,000,000 commands, 60% resting
// limits, 30% cancels, 10% crossing IOC, our engine only) run by two processes side by
// side, one pinned to each core, one with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (what
// `npm start` and `npm run bench` set) and one without. Run at the same moment, both see
// the same machine: this host's speed drifts by up to 2x across an hour, so runs one after
// the other could not show a 10% effect. Each pair swaps the cores. Writes
// bench/results/huge-pages.json.
//
//   node --import tsx bench/huge-pages-ab.ts [--pairs 7]

import { spawn } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { buildCompareStream, newOurEngine, runOurs } from './lib/engine-compare.ts';
import { reapAtExit } from './lib/leftovers.ts';
import { writeResult } from './lib/results.ts';

const HUGE = 'glibc.malloc.hugetlb=1';
const SEED = 20261123;
const RUNS_PER_CHILD = 7;
const CHILD_TIMEOUT_MS = 300_000;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Child: times our engine on the stream RUNS_PER_CHILD times (fresh engine each) and prints the median commands/s. */
function child(): void {
  const stream = buildCompareStream({ seed: SEED, restingOrders: 10_000, commands: 1_000_000 });
  const runs: number[] = [];
  for (let r = 0; r < RUNS_PER_CHILD; r++) {
    const engine = newOurEngine();
    runOurs(engine, stream, 0, stream.warmup);
    const started = performance.now();
    runOurs(engine, stream, stream.warmup, stream.total);
    runs.push(Math.round(((stream.total - stream.warmup) / (performance.now() - started)) * 1000));
  }
  process.stdout.write(`${JSON.stringify({ median: median(runs), runs })}\n`);
}

function runChild(cpu: number, hugePages: boolean): Promise<{ median: number; runs: number[] }> {
  const env = { ...process.env };
  if (hugePages) env.GLIBC_TUNABLES = HUGE;
  else delete env.GLIBC_TUNABLES;
  const proc = reapAtExit(spawn('taskset', ['-c', String(cpu), process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), '--child'], { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  let out = '';
  proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const timer = setTimeout(() => proc.kill('SIGKILL'), CHILD_TIMEOUT_MS);
  return new Promise((resolve, reject) =>
    proc.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').pop()!) as { median: number; runs: number[] });
      else reject(new Error(`child on cpu ${cpu} exited with ${code}`));
    }),
  );
}

async function main(): Promise<void> {
  if (os.cpus().length < 2) throw new Error('needs two cores: the two variants run side by side');
  const at = process.argv.indexOf('--pairs');
  const pairs = at > 0 ? Number(process.argv[at + 1]) : 7;
  const results: { hugeOnCpu: number; defaultPerSecond: number; hugePerSecond: number; gainPct: number }[] = [];
  for (let p = 0; p < pairs; p++) {
    const hugeCpu = p % 2;
    const [plain, huge] = await Promise.all([runChild(1 - hugeCpu, false), runChild(hugeCpu, true)]);
    const gainPct = Number(((huge.median / plain.median - 1) * 100).toFixed(1));
    results.push({ hugeOnCpu: hugeCpu, defaultPerSecond: plain.median, hugePerSecond: huge.median, gainPct });
    console.log(`pair ${p + 1}: default ${plain.median.toLocaleString('en-US')}/s, huge pages ${huge.median.toLocaleString('en-US')}/s (${gainPct > 0 ? '+' : ''}${gainPct}%)`);
  }
  const gain = median(results.map((r) => r.gainPct));
  console.log(`median gain over ${pairs} pairs: ${gain}%`);
  writeResult('huge-pages', {
    description: 'our matching core on the issue-7 stream, with and without glibc.malloc.hugetlb=1, two processes side by side (one per core, cores swapped each pair)',
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    runsPerProcess: RUNS_PER_CHILD,
    pairs: results,
    medianGainPct: gain,
  });
}

if (process.argv.includes('--child')) child();
else await main();
