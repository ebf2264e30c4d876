// `npm run load -- --url … --token … --instrument …`: the load generator pointed at any
// running venue, as the principals and instruments given (cli-options.ts lists every
// option; --help prints them). It prints a summary (a line, or JSON with --json) and with
// --check reads a sample of its answers back from the venue (answer-check.ts).

import { checkAnswers, type CheckReport } from './answer-check.ts';
import { parseCli, USAGE, UsageError, type CliOptions } from './cli-options.ts';
import { describe, runLoad, type LoadResult } from './load-generator.ts';

export interface LoadSummary {
  url: string;
  mode: string;
  threads: number;
  connections: number;
  /** Open-loop commands a second; null: closed loop. */
  rate: number | null;
  /** The measured window. */
  seconds: number;
  /** Commands sent in the window, and those answered (with any HTTP status). */
  sent: number;
  answered: number;
  statuses: Record<string, number>;
  kinds: Record<string, number>;
  answersPerSecond: number;
  okPerSecond: number;
  /** Client latency (open loop: from when each command was due), from an HDR histogram. */
  latencyUs: { count: number; p50: number; p90: number; p99: number; p999: number; max: number };
  errors: { transport: number; firstTransportError: string | null; dropped: number; queuedBehind: number };
  check: CheckReport | null;
}

/** The session the cancels and modifies quote, read with every token (a token the venue refuses fails here, before any load). */
async function venueSession(options: CliOptions): Promise<{ runId: string; venueSessionId: string }> {
  let session: { runId: string; venueSessionId: string } | null = null;
  for (const [k, trader] of options.traders.entries()) {
    const url = `${options.baseUrl}/api/v1/venue/session`;
    const answer = await fetch(url, { headers: { authorization: `Bearer ${trader.token}` } }).catch((error: unknown) => {
      throw new Error(`cannot reach ${url}: ${(error as Error).cause ?? (error as Error).message}`);
    });
    const text = await answer.text();
    if (answer.status !== 200) throw new Error(`GET /api/v1/venue/session with --token #${k + 1} answered ${answer.status}: ${text.slice(0, 300)}`);
    session ??= JSON.parse(text) as { runId: string; venueSessionId: string };
  }
  return session!;
}

export function summarize(options: CliOptions, result: LoadResult, check: CheckReport | null): LoadSummary {
  const sent = Object.values(result.statuses).reduce((a, b) => a + b, 0);
  const answered = sent - (result.statuses['0'] ?? 0); // status 0: no answer (a transport error)
  const { count, p50, p90, p99, p999, max } = result.latencyUs;
  return {
    url: options.baseUrl,
    mode: options.mode,
    threads: options.threads,
    connections: options.connections,
    rate: options.rate > 0 ? options.rate : null,
    seconds: result.seconds,
    sent,
    answered,
    statuses: result.statuses,
    kinds: result.kinds,
    answersPerSecond: result.seconds > 0 ? Math.round(answered / result.seconds) : 0,
    okPerSecond: result.okPerSecond,
    latencyUs: { count, p50, p90, p99, p999, max },
    errors: { transport: result.transportErrors, firstTransportError: result.firstTransportError, dropped: result.dropped, queuedBehind: result.queuedBehind },
    check,
  };
}

async function main(args: string[]): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`load: ${error.message}\nRun with --help for the options.\n`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const session = await venueSession(options);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort()); // Ctrl-C ends the run early and still reports it
  const result = await runLoad({
    baseUrl: options.baseUrl,
    mode: options.mode,
    threads: options.threads,
    connections: options.connections,
    warmupMs: 0, // every command sent is counted, so --count and the summary's sent agree
    durationMs: Math.round(options.seconds * 1000),
    ratePerSecond: options.rate,
    burst: options.burst,
    maxRequests: options.count,
    seed: options.seed,
    record: false,
    traders: options.traders,
    instruments: options.instruments,
    session,
    checkSample: options.checkSample,
    label: 'load',
    quiet: options.json,
    signal: stop.signal,
  });
  const check = options.checkSample > 0 ? await checkAnswers(options.baseUrl, options.mode, result.sample) : null;
  const summary = summarize(options, result, check);
  if (options.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    process.stdout.write(`${describe(result)}\n`);
    if (check !== null) {
      process.stdout.write(`check: ${check.matched} of ${check.checked} answers match the venue's command status reads${check.mismatches > 0 ? `, ${check.mismatches} do not` : ''}\n`);
      for (const example of check.examples) process.stdout.write(`  ${example.commandId}: ${example.problem}\n`);
    }
  }
  return check !== null && check.mismatches > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`load: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
