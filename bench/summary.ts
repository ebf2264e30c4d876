// The Markdown summary of the latest results (bench/results/*.json): the targets with
// the figure measured against each, and the end-to-end runs as ratios to their
// ceilings. Written to bench/results/SUMMARY.md and between the README's
// `<!-- bench-summary -->` markers.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESULTS_DIR } from './lib/results.ts';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const START = '<!-- bench-summary:start -->';
const END = '<!-- bench-summary:end -->';

const load = (name: string): any => {
  const path = join(RESULTS_DIR, `${name}.json`);
  return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : null;
};
const ms = (us: number | undefined) => (us === undefined ? '—' : `${(us / 1000).toFixed(2)} ms`);
const k = (n: number | undefined) => (n === undefined ? '—' : n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : String(n));
const pct = (r: number | undefined) => (r === undefined ? '—' : `${(r * 100).toFixed(1)}%`);
/** How the crash starts rebuilt their books, from their "order books restored" log lines. */
const crashBooks = (starts: { steps?: { books?: string | null } }[] | undefined) =>
  starts !== undefined && starts.length > 0 && starts.every((start) => (start.steps?.books ?? '').includes('checkpoint at'))
    ? "each shard's last checkpoint and the journal after it"
    : 'the whole journals replayed (a start without a checkpoint)';
/** Where the starts after a crash took the key filters from: the last save and the intake records after it, or a scan of storage. */
const crashFilters = (starts: { steps?: { keyFilters?: string | null; takenAfter?: number | null } }[] | undefined) => {
  if (starts === undefined || starts.length === 0 || !starts.every((start) => (start.steps?.keyFilters ?? '').startsWith('saved at'))) return 'storage scanned for the key filters';
  const tails = starts.flatMap((start) => (typeof start.steps?.takenAfter === 'number' && start.steps.takenAfter >= 0 ? [k(start.steps.takenAfter)] : []));
  return `the key filters' last save and the intake records after it${tails.length === starts.length ? ` (${tails.join(', ')})` : ''}`;
};
/** How the crashes came: the venue and its PostgreSQL killed under an order load late in a checkpoint cycle, and the WAL PostgreSQL had to replay. */
const crashOf = (starts: { walMiB?: number; maxWalMiB?: number; loadMs?: number }[] | undefined) => {
  const wal = (starts ?? []).flatMap((start) => (start.walMiB === undefined ? [] : [start.walMiB]));
  const max = starts?.[0]?.maxWalMiB;
  const loads = (starts ?? []).flatMap((start) => (start.loadMs === undefined ? [] : [(start.loadMs / 1000).toFixed(0)]));
  return (
    `the venue and its PostgreSQL killed (kill -9) amid an order load${loads.length > 0 ? ` (${loads.join(', ')} s of it)` : ''}` +
    (wal.length > 0 ? `, PostgreSQL's WAL since its last checkpoint ${wal.join(', ')} MiB${max === undefined ? '' : ` of a ${max} MiB max_wal_size`}` : '')
  );
};
/** " (median of 3: 4.1, 3.9, 4.0 s)" when there were several starts. */
const startsOf = (starts: { readyMs: number }[] | undefined) =>
  starts && starts.length > 1 ? ` (median of ${starts.length}: ${starts.map((start) => (start.readyMs / 1000).toFixed(1)).join(', ')} s)` : '';
/** "; the machine: 1.95 busy, 0.02 in I/O wait, 0 stolen" (cores; whatever ran, this load's parts or not). */
const machineOf = (machine: { busyCores: number; iowaitCores: number; stealCores: number } | null | undefined) =>
  machine == null ? '' : `; the machine: ${machine.busyCores} busy, ${machine.iowaitCores} in I/O wait, ${machine.stealCores} stolen`;

/**
 * Where the two cores went in each 2/2 mode's median closed-loop run (CPU per answered
 * command from /proc, bench/load/cpu-use.ts, and how long each part waited for a core),
 * and what the cores would leave the venue and PostgreSQL at the mode's target ratio.
 */
function cpuBudgetLine(l: any): string | null {
  const modes = l?.cpuBudget?.modes;
  if (modes === undefined) return null;
  const us = (n: number | null | undefined) => (n == null ? '—' : `${n} µs`);
  const each = Object.entries(modes).flatMap(([mode, m]: [string, any]) => {
    if (m.measured === null) return [];
    const parts = Object.entries(m.measured.perCommandUs as Record<string, number>)
      .map(([part, n]) => `${part} ${us(n)}`)
      .join(', ');
    const waited = m.measured.waitUsPerCommand as Record<string, number> | undefined;
    const waits =
      waited === undefined
        ? ''
        : `; runnable but waiting for a core: ${Object.keys(m.measured.perCommandUs)
            .map((part) => `${part} ${us(waited[part] ?? 0)}`)
            .join(', ')}`;
    return [
      `${mode}: ${parts}; ${us(m.measured.totalUs)} in all (${m.measured.coresBusy} cores busy${machineOf(m.measured.machine)})${waits}. At ${pct(m.target)} of the ceiling (${k(m.targetRate)}/s) ${l.cpuBudget.cores} cores give ${us(m.cpuPerCommandAtTargetUs)} a command; ` +
        `less the generator's ${us(l.cpuBudget.generatorAtCeilingUs)} a request at the ceiling (its cheapest), ${us(m.leftForVenueAndPostgresUs)} would be left for the venue and PostgreSQL, which spent ${us(m.venueAndPostgresUs)}`,
    ];
  });
  if (each.length === 0) return null;
  return `Where the cores went (CPU per answered command over the median closed-loop run at 2 gateway threads and 2 shards, from \`/proc\`): ${each.join('. ')}.`;
}

/**
 * What one answered command cost in each mode (bench/durable-submit-bench.ts): CPU per
 * answer of each part and venue thread beside the bare server of the same rounds, medians.
 */
export function durableSubmitTable(d: any): string[] {
  const modes = d?.medians?.modes;
  if (modes === undefined) return [];
  const entries = Object.entries(modes) as [string, any][];
  const threads = [...new Set(entries.flatMap(([, m]) => Object.keys(m.threadsUs ?? {})))].sort((a, b) => threadRank(a) - threadRank(b) || a.localeCompare(b, 'en', { numeric: true }));
  const others = [...new Set(entries.flatMap(([, m]) => Object.keys(m.partsUs ?? {}).filter((part) => !VENUE_PARTS.has(part))))].sort();
  const columns = [...threads, ...others];
  const us = (n: number | undefined) => (n === undefined ? '—' : `${n}`);
  return [
    `CPU per answered command in µs, by mode (${d.venueRatePerSecond > 0 ? `open loop at ${k(d.venueRatePerSecond)}/s` : 'closed loop'}, ${d.connections} connections, 2 gateway threads, 2 shards; after ${d.warmupSeconds ?? 6} s of warm-up load; medians of ${d.rounds} rounds, each beside a bare uWebSockets.js server answering the same load: ${d.medians.bareServerUsPerAnswer} µs and ${k(d.medians.bareAnswersPerSecond)} answers/s; \`bench/durable-submit-bench.ts\`):`,
    '',
    `| mode | answered/s | / bare | venue + PostgreSQL | / bare | ${columns.join(' | ')} | verified |`,
    `|---|---|---|---|---|${columns.map(() => '---|').join('')}---|`,
    ...entries.map(([mode, m]) => {
      const cells = columns.map((column) => us(m.threadsUs?.[column] ?? m.partsUs?.[column]));
      return `| ${mode} | ${k(m.venueAnswersPerSecond)} | ${m.throughputRatio} | ${m.venueAndPostgresUsPerAnswer} | ${m.ratioToBare}× | ${cells.join(' | ')} | ${m.verified ? 'ok' : '**FAILED**'} |`;
    }),
  ];
}
/** Venue threads in the order a command meets them, then the rest. */
const threadRank = (name: string) =>
  name.startsWith('gateway-') ? 0 : name.startsWith('shard-') ? 1 : ['persistence', 'read', 'main'].includes(name) ? 2 + ['persistence', 'read', 'main'].indexOf(name) : 5;
/** The parts of the venue's own process, shown thread by thread instead. */
const VENUE_PARTS = new Set(['gateways', 'shards', 'persistence thread', 'read thread', 'main and V8']);

/** The sustained run (bench/sustained-bench.ts), window by window: the trend the 8 s runs cannot show. */
function sustainedSummary(s: any): string | null {
  const windows: any[] = s?.windows ?? [];
  if (windows.length === 0) return null;
  const range = (values: number[], format: (n: number) => string) => (values.length === 0 ? '—' : `${format(Math.min(...values))}–${format(Math.max(...values))}`);
  const kb = (n: number) => `${n.toFixed(1)} KB`;
  const fpi = (n: number) => n.toFixed(2);
  const vacuumed = new Map<string, number>();
  for (const w of windows) for (const [what, n] of Object.entries(w.autovacuum as Record<string, number>)) vacuumed.set(what, (vacuumed.get(what) ?? 0) + n);
  const first = windows[0];
  const last = windows.at(-1);
  return (
    `Sustained load (\`sustained.json\`${s.quick ? ', quick: too short for a trend' : ''}): one fresh venue, \`sync-result\` at 2 gateway threads and 2 shards, a closed loop of ${s.loadThreads} × ${s.connectionsPerThread} connections for ${(windows.length * s.windowMs) / 1000} s, in windows of ${s.windowMs / 1000} s. ` +
    `Answered/s per window: ${windows.map((w) => k(w.okPerSecond)).join(', ')} (the last ${last.okPerSecond >= first.okPerSecond ? '+' : ''}${pct(last.okPerSecond / first.okPerSecond - 1)} against the first). ` +
    `Projection lag p99 per window: ${windows.map((w) => ms(w.projectionLagUs.p99)).join(', ')}. ` +
    (windows.some((w) => w.projectorMsPerSecond != null)
      ? `The projection backend per window, ms a second running / runnable but waiting for a core: ${windows.map((w) => (w.projectorMsPerSecond == null ? '—' : `${w.projectorMsPerSecond.run} / ${w.projectorMsPerSecond.waitedForCore}`)).join(', ')}. `
      : '') +
    `PostgreSQL per command: WAL ${range(
      windows.flatMap((w) => (w.walKBPerCommand === null ? [] : [w.walKBPerCommand])),
      kb,
    )}, full-page images ${range(
      windows.flatMap((w) => (w.fullPageImagesPerCommand === null ? [] : [w.fullPageImagesPerCommand])),
      fpi,
    )}; ` +
    `${windows.reduce((sum, w) => sum + w.checkpoints, 0)} checkpoints; the database ${(s.databaseBytes / 2 ** 30).toFixed(2)} GiB at the end; ` +
    (vacuumed.size === 0 ? 'no autovacuum seen at work.' : `autovacuum seen at work (samples a second): ${[...vacuumed].map(([what, n]) => `${what} ${n}`).join(', ')}.`)
  );
}

const verdict = (ok: boolean | null) => (ok === null ? 'not measured' : ok ? 'met' : '**missed**');

/** `full`: everything (SUMMARY.md); otherwise the README's part: the targets and the CPU per command by mode. */
export function buildSummary(full = true): string {
  const compare = load('core-compare');
  const l = load('load');
  const rows: string[][] = [];
  const ours = compare?.ours?.opsPerSecond ?? compare?.ours?.opsPerSecondMedian;
  // Judged as the venue runs it (a shard prefetches each batch it drains); one command at a time beside it.
  const oursAsShard: number | undefined = compare?.oursAsShard?.opsPerSecondMedian;
  const prefetchBatch: number | undefined = compare?.prefetchBatch;
  const coreFigure = oursAsShard ?? ours;
  rows.push([
    'matching core, 1 thread, the 60/30/10 stream',
    '≥ 5 M commands/s',
    compare
      ? oursAsShard === undefined
        ? `${k(ours)} commands/s`
        : `${k(oursAsShard)} commands/s as a shard drains its rings (prefetch of ${prefetchBatch ?? '?'}, then each); ${k(ours)} one command at a time`
      : '—',
    verdict(compare ? coreFigure >= 5e6 : null),
  ]);
  rows.push([
    'matching core vs `nodejs-order-book`, same stream, same run',
    '≥ 50×',
    compare ? `${Number(compare.ratio).toFixed(1)}× (books equal: ${compare.booksEqual})` : '—',
    verdict(compare ? compare.ratio >= 50 : null),
  ]);
  const sync = l?.runs?.find((r: any) => r.mode === 'sync-result' && r.gatewayThreads === 2 && r.shards === 2);
  const asyncRun = l?.runs?.find((r: any) => r.mode === 'accepted-async' && r.gatewayThreads === 2 && r.shards === 2);
  rows.push([
    '`sync-result` submits / HTTP ceiling',
    '≥ 50%',
    l ? `${pct(l.ratios.syncToHttpCeiling)} (${k(sync?.closedLoop.okPerSecond)} of ${k(l.httpCeiling.okPerSecond)}/s)` : '—',
    verdict(l ? l.ratios.syncToHttpCeiling >= 0.5 : null),
  ]);
  rows.push(['`sync-result` p99 at 80% of its rate', '< 10 ms', l?.syncAt80Percent ? ms(l.syncAt80Percent.p99Us) : '—', verdict(l?.syncAt80Percent ? l.syncAt80Percent.p99Us < 10_000 : null)]);
  rows.push([
    '`accepted-async` / HTTP ceiling',
    '≥ 70%',
    l ? `${pct(l.ratios.asyncToHttpCeiling)} (${k(asyncRun?.closedLoop.okPerSecond)}/s)` : '—',
    verdict(l ? l.ratios.asyncToHttpCeiling >= 0.7 : null),
  ]);
  const half = l?.durableAckAtHalfLoad;
  // Beside it, what a command cost the venue and PostgreSQL there and at saturation: half the rate does not halve the cores' work.
  const halfCpu =
    half?.venueAndPostgresUs != null && half?.atSaturationUs != null
      ? `; CPU of the venue and PostgreSQL per command there ${half.venueAndPostgresUs} µs, at saturation ${half.atSaturationUs} µs`
      : '';
  // And the floor under it: the same answer, one request at a time onto the otherwise idle venue.
  const idle = l?.idleFloor;
  const idleOrders = idle?.orders ? `; one request at a time onto the idle venue: p50 ${ms(idle.orders.p50)}, p99 ${ms(idle.orders.p99)} (\`/healthz\` p50 ${ms(idle.reads?.healthz?.p50)})` : '';
  rows.push([
    'durable acknowledgement at half load (p50 / p99)',
    '< 2 ms / < 10 ms',
    half ? `${ms(half.p50Us)} / ${ms(half.p99Us)}${halfCpu}${idleOrders}` : '—',
    verdict(half ? half.p50Us < 2000 && half.p99Us < 10_000 : null),
  ]);
  const lag = l?.projectionLagUs;
  const lagRuns: any[] = lag?.runs ?? [];
  // The same target over minutes of load on one venue (sustained.json): a window's p99 over it is a miss as well.
  const sustained = load('sustained');
  const sustainedWindows: any[] = sustained?.windows ?? [];
  const sustainedOver: number = sustained?.windowsOverLagTarget ?? 0;
  const sustainedText =
    sustainedWindows.length > 0 && !sustained.quick
      ? `; over ${(sustainedWindows.length * sustained.windowMs) / 60_000} minutes of load on one venue, the p99 of each ${sustained.windowMs / 1000} s window: ${sustainedWindows.map((w) => ms(w.projectionLagUs.p99)).join(', ')} (${sustainedOver} of ${sustainedWindows.length} at or over 250 ms)`
      : '';
  rows.push([
    'projection lag p99 at full load (journal commit → projection commit)',
    '< 250 ms',
    lag ? `${ms(lag.p99)} (p50 ${ms(lag.p50)})${lagRuns.length > 1 ? `; each closed-loop run's own p99: ${lagRuns.map((run) => ms(run.p99)).join(', ')}` : ''}${sustainedText}` : '—',
    lag && lag.p99 < 250_000 && sustainedText !== '' && sustainedOver > 0 ? 'met in the 8 s runs, **missed** in the sustained windows' : verdict(lag ? lag.p99 < 250_000 : null),
  ]);
  const reads = l?.readsBeside;
  const snapshot = reads?.readLatencyUs?.snapshot?.p99;
  const depth = reads?.readLatencyUs?.depth?.p99;
  const floor = reads?.readLatencyUs?.healthz;
  rows.push([
    'snapshot / depth p99 under order load',
    '< 2 ms',
    reads
      ? `${ms(snapshot)} / ${ms(depth)} (p50 ${ms(reads.readLatencyUs?.snapshot?.p50)} / ${ms(reads.readLatencyUs?.depth?.p50)}; \`/healthz\`, which does nothing, p99 ${ms(floor?.p99)} beside the same load)` +
        (reads.readLatencyFromSendUs?.snapshot
          ? `; from the send instead of from when due, p99 ${ms(reads.readLatencyFromSendUs.snapshot.p99)} / ${ms(reads.readLatencyFromSendUs.depth?.p99)} (\`/healthz\` ${ms(reads.readLatencyFromSendUs.healthz?.p99)})`
          : '') +
        (idle?.reads?.snapshot ? `; one at a time onto the idle venue p99 ${ms(idle.reads.snapshot.p99)} / ${ms(idle.reads.depth?.p99)}` : '')
      : '—',
    verdict(reads ? snapshot < 2000 && depth < 2000 : null),
  ]);
  const readRuns: any[] = reads?.runs ?? [];
  rows.push([
    'order throughput drop beside reads',
    '< 10%',
    reads
      ? `${reads.dropPercent}% (${k(reads.ordersBesideReads)} against ${k(reads.ordersAlone)} orders/s; ${k(reads.readsPerSecond)} reads/s, an open loop due at ${k(reads.readsDuePerSecond)}/s, on and off in turn every ${reads.phaseMs / 1000} s through each order run)${readRuns.length > 1 ? `; the ${readRuns.length} runs: ${readRuns.map((run) => `${run.dropPercent}%`).join(', ')}` : ''}`
      : '—',
    verdict(reads ? reads.dropPercent < 10 : null),
  ]);
  // bench/restart-bench.ts measures the restarts alone; the newer of its figure and load.json's is shown.
  const restartAlone = load('restart');
  const restart = restartAlone !== null && (l === null || l.restart === undefined || restartAlone.measuredAt > l.measuredAt) ? restartAlone : l?.restart;
  rows.push([
    'restart with 1,000,000 resting orders to `/readyz`',
    '< 10 s',
    restart
      ? `${restart === restartAlone ? '(`restart.json`) ' : ''}${(restart.readyMs / 1000).toFixed(1)} s with ${k(restart.restingOrders)} resting orders, after a graceful stop${restart.booksRestored === false ? ' (books replayed: nothing saved was used)' : ''}${startsOf(restart.starts?.afterGracefulStop)}` +
        (restart.readyAfterCrashMs === undefined
          ? ''
          : `; after a crash under load (${crashOf(restart.starts?.afterCrash)}: ${crashBooks(restart.starts?.afterCrash)}, ${crashFilters(restart.starts?.afterCrash)}) ${(restart.readyAfterCrashMs / 1000).toFixed(1)} s${startsOf(restart.starts?.afterCrash)}`)
      : '—',
    restart && restart.restingOrders >= 1e6
      ? restart.readyMs < 10_000 && restart.readyAfterCrashMs !== undefined && restart.readyAfterCrashMs >= 10_000
        ? 'met after a graceful stop, **missed** after a crash'
        : verdict(restart.readyMs < 10_000)
      : restart
        ? `not measured at 1 M (${restart.restingOrders} resting orders${l?.quick ? ': a quick run' : ''})`
        : verdict(null),
  ]);

  const lines = [
    `Latest run: ${l?.measuredAt ?? compare?.measuredAt ?? 'none'}${l?.quick ? ' (quick)' : ''}, ${l?.machine?.cpus ?? '?'} cores, Node ${l?.machine?.node ?? process.version}. ${l?.quick ? 'Single runs (quick).' : "Every target's figure is a median of 3 runs or more (the ceilings are single runs, the best of their variants): the core of 5, the closed loops of 3 (the projection lag of those same 3 runs, each its own), the open-loop points at 50% and 80% of 3 each, the reads beside orders of 3 order runs (each comparing the on phases of the reads with their off phases), the restarts of 3 after a graceful stop and 3 after a crash; the sustained phase is one run of 4 minutes, judged window by window."}`,
    '',
    '| target | aim | measured | |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
  if (!full) {
    const perModeOnly = durableSubmitTable(load('durable-submit'));
    if (perModeOnly.length > 0) lines.push('', ...perModeOnly);
    lines.push('', 'The ceilings, the load table by thread count, the open loop, where the cores went and the sustained run: [bench/results/SUMMARY.md](bench/results/SUMMARY.md).');
    return lines.join('\n');
  }
  if (l) {
    lines.push(
      '',
      `Ceilings in the same run, same load generator: HTTP ${k(l.httpCeiling.okPerSecond)} requests/s (bare uWebSockets.js, ${l.answerBytes}-byte canned answer), storage ${k(l.storageCeiling.commandsPerSecond)} commands/s (tier 1's commit alone, synthetic commands).`,
      '',
      '| mode | gateway threads | shards | answered/s (closed loop, 64 connections) | / HTTP ceiling | / storage ceiling | p50 | p99 | start to ready | verified against the database |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...l.runs.map(
        (r: any) =>
          `| ${r.mode} | ${r.gatewayThreads} | ${r.shards} | ${k(r.closedLoop.okPerSecond)} | ${pct(r.closedLoop.okPerSecond / l.httpCeiling.okPerSecond)} | ${pct(r.closedLoop.okPerSecond / l.storageCeiling.commandsPerSecond)} | ${ms(r.closedLoop.latencyUs.p50)} | ${ms(r.closedLoop.latencyUs.p99)} | ${(r.readyMs / 1000).toFixed(1)} s | ${r.verification.ok ? `ok (${k(r.verification.commandsChecked)} commands, ${k(r.verification.tradesStored)} trades)` : '**FAILED**'} |`,
      ),
      '',
      `Open loop (2 gateway threads, 2 shards): ${l.runs
        .filter((r: any) => r.openLoop.length > 0)
        .map((r: any) => `${r.mode} ${r.openLoop.map((o: any) => `${k(o.ratePerSecond)}/s → p50 ${ms(o.latencyUs.p50)}, p99 ${ms(o.latencyUs.p99)}`).join('; ')}`)
        .join('. ')}. Plot: [bench/results/load.svg](bench/results/load.svg).`,
    );
    const budget = cpuBudgetLine(l);
    if (budget !== null) lines.push('', budget);
  }
  const perMode = durableSubmitTable(load('durable-submit'));
  if (perMode.length > 0) lines.push('', ...perMode);
  const sustainedLine = sustainedSummary(load('sustained'));
  if (sustainedLine !== null) lines.push('', sustainedLine);
  return lines.join('\n');
}

export function writeSummary(): void {
  const text = buildSummary();
  writeFileSync(join(RESULTS_DIR, 'SUMMARY.md'), `# Benchmark summary\n\n${text}\n`);
  const brief = buildSummary(false);
  const readme = readFileSync(README, 'utf8');
  const from = readme.indexOf(START);
  const to = readme.indexOf(END);
  if (from >= 0 && to > from) writeFileSync(README, `${readme.slice(0, from + START.length)}\n${brief}\n${readme.slice(to)}`);
  console.log(text);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeSummary();
