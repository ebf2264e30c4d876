// What the venue's threads allocate per answered order, by thread and by function: V8's
// sampling heap profiler in every thread (bench/lib/allocation-sampler.mjs) counts what a
// closed loop of the realistic order flow (sync-result, 64 connections) allocates during
// its measured window, collected garbage included. Issue 58 asks the gateway path for no
// allocation beyond the parsed body; this is the figure a change to it is held to, before
// and after in the same hour. Sampling slows the venue, so answers/s here mean nothing.
//
//   npx tsx bench/allocation-bench.ts [--seconds 6] [--top 12]
//
// Result: bench/results/allocation.json: bytes per answered command per thread kind, and
// the functions that allocate most in the gateways and the persistence thread.

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { writeResult } from './lib/results.ts';
import { scratchFolder } from './lib/leftovers.ts';
import { runLoad } from './load/load-generator.ts';
import { startBenchVenue } from './load/venue.ts';

const SAMPLER = fileURLToPath(new URL('./lib/allocation-sampler.mjs', import.meta.url));
const TOP_AT = process.argv.indexOf('--top');
const TOP_FUNCTIONS = TOP_AT > 0 ? Number(process.argv[TOP_AT + 1]) : 12;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: ProfileNode[];
}

export interface ThreadAllocation {
  thread: string;
  bytesPerCommand: number;
  top: { fn: string; bytesPerCommand: number }[];
}

/** The thread a profile came from, by the bundle its functions run in (the main thread runs server.mjs). */
export function threadKind(head: ProfileNode): string {
  const counts = new Map<string, number>();
  const walk = (node: ProfileNode) => {
    const match = /(gateway|persistence|read|shard)-thread\.mjs$|\/(server)\.mjs$/.exec(node.callFrame.url);
    if (match !== null) {
      const kind = match[1] ?? 'main';
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
    }
    for (const child of node.children ?? []) walk(child);
  };
  walk(head);
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'other';
}

/** Bytes per command of one profile, in all and by function (self size; a function's name and bundle line). */
export function allocationOf(head: ProfileNode, commands: number): { bytesPerCommand: number; byFunction: Map<string, number> } {
  const byFunction = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode) => {
    if (node.selfSize > 0) {
      total += node.selfSize;
      const name = `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.split('/').pop() ?? ''}:${node.callFrame.lineNumber + 1}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
    }
    for (const child of node.children ?? []) walk(child);
  };
  walk(head);
  for (const [name, bytes] of byFunction) byFunction.set(name, bytes / commands);
  return { bytesPerCommand: total / commands, byFunction };
}

/** Profiles of the same kind (the gateways) add up: each took its share of the commands. */
export function summarize(heads: ProfileNode[], commands: number): ThreadAllocation[] {
  const kinds = new Map<string, { bytes: number; byFunction: Map<string, number> }>();
  for (const head of heads) {
    const kind = threadKind(head);
    const one = allocationOf(head, commands);
    const into = kinds.get(kind) ?? { bytes: 0, byFunction: new Map() };
    into.bytes += one.bytesPerCommand;
    for (const [name, bytes] of one.byFunction) into.byFunction.set(name, (into.byFunction.get(name) ?? 0) + bytes);
    kinds.set(kind, into);
  }
  return [...kinds]
    .map(([thread, { bytes, byFunction }]) => ({
      thread,
      bytesPerCommand: Math.round(bytes),
      top: [...byFunction]
        .sort((a, b) => b[1] - a[1])
        .slice(0, TOP_FUNCTIONS)
        .map(([fn, b]) => ({ fn, bytesPerCommand: Math.round(b) })),
    }))
    .sort((a, b) => b.bytesPerCommand - a.bytesPerCommand);
}

/** Shard threads wait on their rings, not on an event loop: the sampler's poll never runs there (their steady state allocates next to nothing). */
const SAMPLED_THREADS = 5;

/** One sampled run; `inlining: false` keeps every function in its own frame (attribution), at the cost of the allocations inlining removes. */
async function sampledRun(seconds: number, inlining: boolean): Promise<{ commands: number; profiles: number; byThread: ThreadAllocation[] }> {
  const samples = scratchFolder('venue-bench-allocation-');
  mkdirSync(samples, { recursive: true });
  const args = inlining ? ['--import', SAMPLER] : ['--no-turbo-inlining', '--import', SAMPLER];
  const venue = await startBenchVenue({ PROCESSING_MODE: 'sync-result', VENUE_ALLOCATION_SAMPLES: samples }, undefined, args);
  try {
    const base = { baseUrl: venue.baseUrl, mode: 'sync-result', threads: 1, connections: 64, ratePerSecond: 0, record: false, quiet: true };
    await runLoad({ ...base, label: 'allocation, warm-up', seed: 3, warmupMs: 1000, durationMs: 3000 });
    const run = await runLoad({
      ...base,
      label: 'allocation, sampled',
      seed: 7,
      warmupMs: 500,
      durationMs: seconds * 1000,
      window: { opened: () => writeFileSync(`${samples}/start`, ''), closed: () => writeFileSync(`${samples}/stop`, '') },
    });
    const commands = Object.values(run.statuses).reduce((sum, n) => sum + n, 0);
    for (let waited = 0; readdirSync(samples).filter((f) => f.endsWith('.heapprofile')).length < SAMPLED_THREADS && waited < 5000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const profiles = readdirSync(samples)
      .filter((f) => f.endsWith('.heapprofile'))
      .map((f) => JSON.parse(readFileSync(`${samples}/${f}`, 'utf8')) as { head?: ProfileNode; error?: string });
    // A thread missing or failed would make the figure short, not wrong-looking: refused instead.
    const failed = profiles.filter((p) => p.head === undefined).map((p) => p.error ?? 'no profile');
    if (profiles.length < SAMPLED_THREADS || failed.length > 0) {
      throw new Error(`allocation samples from ${profiles.length} of ${SAMPLED_THREADS} threads${failed.length > 0 ? `; failed: ${failed.join('; ')}` : ''}`);
    }
    const heads = profiles.map((p) => p.head!);
    const byThread = summarize(heads, commands);
    for (const t of byThread) console.log(`  ${inlining ? 'as run' : 'without inlining'}: ${t.thread} ${t.bytesPerCommand} bytes per command`);
    return { commands, profiles: heads.length, byThread };
  } finally {
    await venue.stop();
    if (existsSync(samples)) rmSync(samples, { recursive: true, force: true });
  }
}

export async function runAllocationBench(seconds: number): Promise<Record<string, unknown>> {
  const asRun = await sampledRun(seconds, true);
  const attribution = await sampledRun(seconds, false);
  return {
    note: 'closed loop, sync-result, 64 connections, the realistic order flow; V8 sampling heap profiler (2 KiB interval) in the main, gateway, persistence and read threads, collected objects included; bytes per answered command, the gateways added up. asRun is the figure; attribution runs without inlining so each function allocates in its own frame (more in all: inlining lets V8 remove some allocations)',
    asRun,
    attribution,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--seconds');
  writeResult('allocation', await runAllocationBench(at > 0 ? Number(process.argv[at + 1]) : 6));
}
