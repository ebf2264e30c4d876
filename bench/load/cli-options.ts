// The options of `npm run load` (cli.ts): parsed strictly with node:util parseArgs, every
// value checked and bounded (a load always ends, in time and in count), and the usage text
// with each option's default. A bad option is a UsageError: the CLI prints it and exits 2.

import { parseArgs } from 'node:util';
import { PROCESSING_MODES, type ProcessingMode } from '../../core/config.ts';
import { isUuid } from '../../core/uuid.ts';
import { DEFAULT_PRINCIPALS_FILE, Principals } from '../../gateway/principals.ts';
import type { Trader } from './flow.ts';

export class UsageError extends Error {}

export const LIMITS = {
  tokens: 64,
  instruments: 1_024,
  connections: 1_024,
  threads: 16,
  seconds: 3_600,
  count: 10_000_000,
  rate: 1_000_000,
  checkSample: 20_000,
} as const;

export const DEFAULTS = {
  mode: 'sync-result' as ProcessingMode,
  connections: 64,
  threads: 1,
  seconds: 10,
  /** With --count and no --seconds: the count ends the run, this bounds it all the same. */
  secondsWithCount: 600,
  seed: 1,
  checkSample: 1_000,
} as const;

/** DEFAULT_PRINCIPALS_FILE as the usage shows it: the development principals, from the repository's root. */
const DEV_PRINCIPALS = 'gateway/principals.dev.json';

export const USAGE = `Usage: npm run load -- --url URL --token TOKEN --instrument UUID [options]

Drives a running venue with an order flow (60% resting limits, 15% crossing orders,
20% cancels and 5% modifies of its own resting orders, around a moving mid) for a
bounded time or count, and reports what it was answered.

Options:
  --url URL            the venue's base URL, http://host:port (required)
  --token TOKEN        a trader's bearer token the load acts as; repeatable or a comma
                       list (1 to ${LIMITS.tokens}). TOKEN alone takes its first participant and
                       account from --principals; TOKEN:PARTICIPANT:ACCOUNT names them
  --principals FILE    the venue's PRINCIPALS_FILE, to look the tokens up in
                       (default: ${DEV_PRINCIPALS})
  --instrument UUID    an instrument to trade; repeatable or a comma list (1 to ${LIMITS.instruments});
                       required: the venue has no route that lists its instruments
  --mode MODE          X-Processing-Mode: ${PROCESSING_MODES.join(', ')}
                       (default: ${DEFAULTS.mode})
  --connections N      connections per thread, one request in flight on each
                       (default: ${DEFAULTS.connections}, max ${LIMITS.connections})
  --threads N          generator threads (default: ${DEFAULTS.threads}, max ${LIMITS.threads})
  --seconds S          how long to send (default: ${DEFAULTS.seconds}, or ${DEFAULTS.secondsWithCount} with --count; max ${LIMITS.seconds})
  --count N            stop after N commands in all (default: none, the time ends the run;
                       max ${LIMITS.count})
  --rate R             open loop: R commands a second in all, latency counted from when
                       each was due (default: closed loop, each connection sends its next
                       command when answered; max ${LIMITS.rate})
  --burst N            with --rate: commands fall due N at a time, the rate unchanged
                       (default: 1; at most --connections)
  --seed N             the flow's seed (default: ${DEFAULTS.seed})
  --json               print a JSON summary on stdout instead of a line of text
  --check              afterwards, read a sample of the 2xx answers' commands back
                       (GET /api/v1/commands/{commandId}, with the token that sent each)
                       and compare them with what was answered; exit 1 on a mismatch
  --check-sample N     how many answers --check reads back (default: ${DEFAULTS.checkSample}, max ${LIMITS.checkSample})
  -h, --help           print this and exit

Exit status: 0 done; 1 the run failed or --check found a mismatch; 2 a bad option.
`;

export interface CliOptions {
  help: boolean;
  baseUrl: string;
  traders: Trader[];
  instruments: string[];
  mode: ProcessingMode;
  connections: number;
  threads: number;
  seconds: number;
  /** 0: no count bound (the time ends the run). */
  count: number;
  /** 0: closed loop. */
  rate: number;
  /** Open loop: commands due together (1: each on its own). */
  burst: number;
  seed: number;
  json: boolean;
  /** 0: no check. */
  checkSample: number;
}

/** RFC 6750 b64token: no ':' or ',', so both can separate. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Values of a repeatable option, each possibly a comma list, trimmed, empties refused. */
function listOf(values: string[] | undefined, name: string, max: number): string[] {
  const items = (values ?? []).flatMap((value) => value.split(',')).map((item) => item.trim());
  if (items.some((item) => item === '')) throw new UsageError(`--${name}: an empty item in the list`);
  if (items.length > max) throw new UsageError(`--${name}: at most ${max}, got ${items.length}`);
  return items;
}

function numberOf(value: string | undefined, name: string, fallback: number, min: number, max: number, integer: boolean): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
    throw new UsageError(`--${name}: expected ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}, got "${value}"`);
  }
  return n;
}

function baseUrlOf(value: string | undefined): string {
  if (value === undefined) throw new UsageError('--url is required (the venue, e.g. http://127.0.0.1:8080)');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--url: not a URL: "${value}"`);
  }
  // The generator's client speaks plain HTTP/1.1 to host:port, every path absolute from the root.
  if (url.protocol !== 'http:') throw new UsageError(`--url: only http:// is supported, got "${url.protocol}"`);
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '') throw new UsageError(`--url: give only http://host:port, got "${value}"`);
  return url.origin;
}

/** Each token's participant and account: named after it, or the first of its principal in the principals file. */
function tradersOf(tokens: string[], principalsFile: string): Trader[] {
  if (tokens.length === 0) throw new UsageError('--token is required (a trader principal the load acts as)');
  let principals: Principals | null = null;
  return tokens.map((item, k) => {
    const [token = '', participantId, accountId, ...rest] = item.split(':');
    const which = `--token #${k + 1}`;
    if (!BEARER_TOKEN.test(token)) throw new UsageError(`${which}: not a bearer token`);
    if (participantId !== undefined) {
      if (accountId === undefined || rest.length > 0 || !isUuid(participantId) || !isUuid(accountId)) {
        throw new UsageError(`${which}: expected TOKEN or TOKEN:PARTICIPANT_UUID:ACCOUNT_UUID`);
      }
      return { token, participantId, accountId };
    }
    try {
      principals ??= Principals.load(principalsFile);
    } catch (error) {
      throw new UsageError(`--principals: ${(error as Error).message}`);
    }
    const principal = principals.authenticate(`Bearer ${token}`);
    if (principal === null) throw new UsageError(`${which} is not in ${principalsFile}: pass the venue's file with --principals, or give TOKEN:PARTICIPANT:ACCOUNT`);
    if (!principal.roles.has('trader')) throw new UsageError(`${which} (${principal.principalId}) is not a trader`);
    for (const [participant, accounts] of principal.participants) {
      for (const account of accounts) return { token, participantId: participant, accountId: account };
    }
    throw new UsageError(`${which} (${principal.principalId}) has no participant with an account`);
  });
}

export function parseCli(args: string[]): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        url: { type: 'string' },
        token: { type: 'string', multiple: true },
        principals: { type: 'string' },
        instrument: { type: 'string', multiple: true },
        mode: { type: 'string' },
        connections: { type: 'string' },
        threads: { type: 'string' },
        seconds: { type: 'string' },
        count: { type: 'string' },
        rate: { type: 'string' },
        burst: { type: 'string' },
        seed: { type: 'string' },
        json: { type: 'boolean' },
        check: { type: 'boolean' },
        'check-sample': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const v = parsed.values;
  const help = v.help === true;
  if (help) return { help, baseUrl: '', traders: [], instruments: [], mode: DEFAULTS.mode, connections: 0, threads: 0, seconds: 0, count: 0, rate: 0, burst: 1, seed: 0, json: false, checkSample: 0 };
  const baseUrl = baseUrlOf(v.url);
  const traders = tradersOf(listOf(v.token, 'token', LIMITS.tokens), v.principals ?? DEFAULT_PRINCIPALS_FILE);
  const instruments = listOf(v.instrument, 'instrument', LIMITS.instruments);
  if (instruments.length === 0) throw new UsageError('--instrument is required: the venue has no route that lists its instruments');
  const notUuid = instruments.find((id) => !isUuid(id));
  if (notUuid !== undefined) throw new UsageError(`--instrument: not a UUID: "${notUuid}"`);
  const mode = v.mode ?? DEFAULTS.mode;
  if (!(PROCESSING_MODES as readonly string[]).includes(mode)) throw new UsageError(`--mode: expected one of ${PROCESSING_MODES.join(', ')}, got "${mode}"`);
  const threads = numberOf(v.threads, 'threads', DEFAULTS.threads, 1, LIMITS.threads, true);
  const count = numberOf(v.count, 'count', 0, 1, LIMITS.count, true);
  if (count > 0 && count < threads) throw new UsageError(`--count: at least one command per thread (${threads}), got ${count}`);
  const connections = numberOf(v.connections, 'connections', DEFAULTS.connections, 1, LIMITS.connections, true);
  const rate = numberOf(v.rate, 'rate', 0, 0.001, LIMITS.rate, false);
  if (v.burst !== undefined && rate === 0) throw new UsageError('--burst is for an open loop (--rate)');
  const burst = numberOf(v.burst, 'burst', 1, 1, connections, true);
  if (v['check-sample'] !== undefined && v.check !== true) throw new UsageError('--check-sample is for --check');
  return {
    help,
    baseUrl,
    traders,
    instruments: instruments.map((id) => id.toLowerCase()),
    mode: mode as ProcessingMode,
    connections,
    threads,
    seconds: numberOf(v.seconds, 'seconds', count > 0 ? DEFAULTS.secondsWithCount : DEFAULTS.seconds, 0.1, LIMITS.seconds, false),
    count,
    rate,
    burst,
    seed: numberOf(v.seed, 'seed', DEFAULTS.seed, 0, 2 ** 31 - 1, true),
    json: v.json === true,
    checkSample: v.check === true ? numberOf(v['check-sample'], 'check-sample', DEFAULTS.checkSample, 1, LIMITS.checkSample, true) : 0,
  };
}
