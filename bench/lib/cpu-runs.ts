// Load runs with the CPU each part of the machine spent per answer, and the bare
// uWebSockets.js server they are compared with: shared by the benchmarks that ask what a
// command costs (bench/load-bench.ts, bench/durable-submit-bench.ts).

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EVENT_ACCEPTED, STATE_OPEN } from '../../core/codes.ts';
import { renderEnvelope } from '../../core/outcome-format.ts';
import { cpuPerCommand, sampleCpu, sampleThreadCpu, sampleMachine, sampleSleeps, sampleWaits, sleepsPerCommand, waitsPerCommand, type CpuSample, type CpuTargets, type CpuUse, type MachineSample } from '../load/cpu-use.ts';
import { runLoad, type LoadOptions, type LoadResult } from '../load/load-generator.ts';
import { reapAtExit } from './leftovers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The size of the venue's answer to a submit, for the bare server's canned envelope. */
export function answerBytes(): number {
  const header = { token: 1, eventCount: 1, currency: 0x555344, queryState: -1, timestampUs: Date.now() * 1000, engineOrderId: 123_456, batch: 1 };
  const accepted = { kind: EVENT_ACCEPTED, state: STATE_OPEN, aggressor: 0, side: 0, code: 0, orderA: crypto.randomUUID(), orderB: crypto.randomUUID(), sequence: 123_456, quantity: 0, price: 0 };
  return renderEnvelope({ shard: 0, instrumentId: crypto.randomUUID(), currency: 'USD' }, header, [accepted]).json.length;
}

export async function startBareServer(threads: number, bytes: number): Promise<{ baseUrl: string; pid: number; stop: () => Promise<void> }> {
  const child = reapAtExit(spawn(process.execPath, ['--import', 'tsx', 'bench/load/bare-server.ts', '--threads', String(threads), '--bytes', String(bytes)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] }));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(seen);
      if (match !== null) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the bare server exited with ${code}`)));
  });
  return {
    baseUrl,
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * A load run and the CPU each part of the machine used over its measured window
 * (bench/load/cpu-use.ts), per 2xx answer, with the times each part's threads slept and
 * the µs they waited for a core per answer; null if the window did not open and close (a
 * run stopped in its warm-up) or nothing was answered.
 */
export async function runLoadWithCpu(options: LoadOptions, targets: CpuTargets): Promise<{ run: LoadResult; cpu: CpuUse | null }> {
  type Edge = { parts: CpuSample; threads: CpuSample | null; sleeps: CpuSample; waits: CpuSample; machine: MachineSample | null; at: number };
  const sample = (): Edge => ({
    parts: sampleCpu(targets), threads: targets.venuePid === undefined ? null : sampleThreadCpu(targets.venuePid),
    sleeps: sampleSleeps(targets), waits: sampleWaits(targets), machine: sampleMachine(), at: performance.now(),
  });
  const edges: { opened?: Edge; closed?: Edge } = {};
  const run = await runLoad({ ...options, window: { opened: () => (edges.opened = sample()), closed: () => (edges.closed = sample()) } });
  const answered = Object.entries(run.statuses).reduce((sum, [code, n]) => sum + (code.startsWith('2') ? n : 0), 0);
  const { opened, closed } = edges;
  if (opened === undefined || closed === undefined || answered === 0) return { run, cpu: null };
  const cpu = cpuPerCommand(opened.parts, closed.parts, answered, closed.at - opened.at, { before: opened.machine, after: closed.machine });
  const threadsUs = opened.threads !== null && closed.threads !== null ? cpuPerCommand(opened.threads, closed.threads, answered, closed.at - opened.at).perCommandUs : undefined;
  return {
    run,
    cpu: { ...cpu, sleepsPerCommand: sleepsPerCommand(opened.sleeps, closed.sleeps, answered), waitUsPerCommand: waitsPerCommand(opened.waits, closed.waits, answered), ...(threadsUs === undefined ? {} : { threadsUs }) },
  };
}

/** "; CPU per answer: gateways 51 µs, ... (197 µs in all, 1.9 cores busy); sleeps per answer: gateways 0.05, ...; waited for a core per answer: gateways 80 µs, ..." for the progress output. */
export function cpuLine(cpu: CpuUse | null): string {
  if (cpu === null) return '';
  const parts = Object.entries(cpu.perCommandUs).map(([part, us]) => `${part} ${us} µs`);
  const machine = cpu.machine === null ? '' : `; the machine: ${cpu.machine.busyCores} cores busy, ${cpu.machine.iowaitCores} in I/O wait, ${cpu.machine.stealCores} stolen, ${cpu.machine.idleCores} idle`;
  const slept = cpu.sleepsPerCommand;
  const sleeps = slept === undefined ? '' : `; sleeps per answer: ${Object.keys(cpu.perCommandUs).map((part) => `${part} ${slept[part] ?? 0}`).join(', ')}`;
  const waited = cpu.waitUsPerCommand;
  const waits = waited === undefined ? '' : `; waited for a core per answer: ${Object.keys(cpu.perCommandUs).map((part) => `${part} ${waited[part] ?? 0} µs`).join(', ')}`;
  return `; CPU per answer: ${parts.join(', ')} (${cpu.totalUs} µs in all, ${cpu.coresBusy} cores busy${machine})${sleeps}${waits}`;
}

