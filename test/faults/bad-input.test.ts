// Bad input (issue 8): a seeded fuzz of more than 10,000 malformed requests over every
// route of the venue, sent over raw TCP sockets (node:net) so that every fault can be
// expressed: broken JSON, wrong types, huge numbers, unicode in ids, invalid values and
// query parameters, missing, invalid and duplicated headers, huge headers and bodies,
// wrong methods and unknown routes, truncated bodies (a Content-Length larger than what
// is sent), slow bodies and headers, invalid chunked encoding, framing uWebSockets.js
// refuses, and requests it cannot parse at all.
//
// Every answer must be a 4xx whose body is the contract's error `{ error, code,
// details? }` with the code matching the status; no 5xx, ever. Where uWebSockets.js's
// own parser refuses a request before any venue code runs, the only acceptable outcome
// is the one it has (README "API decisions"): the connection closed at once without an
// answer (invalid framing headers, header blocks past its limit), or closed after its
// idle timeout (a request it cannot parse). Those categories are asserted exactly so.
//
// Beside the fuzz, a valid order load (300 sync-result submits and cancels, with
// trades) must get its exact answers; afterwards the venue is alive (/healthz, the
// child process), no malformed request was captured (the intake count is exactly the
// valid load's), nothing was logged at error level, and it stops cleanly (exit 0).
//
// Replay: the seed is printed (test diagnostic and every failure message);
// FUZZ_SEED=<seed> node --import tsx --test test/faults/bad-input.test.ts generates the
// very same requests again.

import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { isUuid } from '../../core/uuid.ts';
import { cancelByClientOrderSchema, cancelOrderSchema, modifyOrderSchema, submitOrderSchema } from '../../gateway/order-schemas.ts';
import { SETTLEMENT_BODY_SCHEMAS } from '../../gateway/settlement-schemas.ts';
import { RawConnection, rawExchange, rawRequest, type RawAnswer, type RawPart, type RawResult } from '../support/raw-http.ts';
import { assertShape } from '../support/response-schemas.ts';
import { cancelBody, submitBody, TOKENS, TRADER_A, TRADER_B, VenueProcess } from '../support/venue-process.ts';

const SEED = process.env.FUZZ_SEED === undefined || process.env.FUZZ_SEED === '' ? randomInt(2 ** 31) : Number(process.env.FUZZ_SEED);
if (!Number.isSafeInteger(SEED)) throw new Error(`FUZZ_SEED must be an integer, got "${process.env.FUZZ_SEED}"`);
const ORDER_MAX_BODY = 16_384; // MAX_BODY_BYTES default
const ADMIN_MAX_BODY = 65_536; // ADMIN_MAX_BODY_BYTES set below
const FUZZ_INSTRUMENT = 'f0220000-0000-4000-8000-00000000000f';
const RUN_ID = 'run-local';

/** The contract's codes and their statuses (README "API decisions", API contract "Errors"). */
const CODE_STATUS: Record<string, number> = {
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  IDEMPOTENCY_CONFLICT: 409,
  FACT_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
};

// ---- a seeded generator ----

class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    // mulberry32
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }
  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  uuid(): string {
    const hex = Array.from({ length: 32 }, () => '0123456789abcdef'[this.int(16)]!);
    hex[12] = '4';
    hex[16] = '89ab'[this.int(4)]!;
    const h = hex.join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

/** A JSON value written as is (numbers JSON.stringify cannot produce: 1e400, 30-digit integers). */
class Raw {
  constructor(readonly text: string) {}
}

function render(body: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(body, (_key, value: unknown) => (value instanceof Raw ? `\u0000RAW${raws.push(value.text) - 1}\u0000` : value));
  return text.replace(/"\\u0000RAW(\d+)\\u0000"/g, (_match, index: string) => raws[Number(index)]!);
}

// ---- the routes ----

type Role = 'trader' | 'operator' | 'viewer';
const AUTH: Record<Role, string> = { trader: `Bearer ${TOKENS.traderA}`, operator: `Bearer ${TOKENS.operator}`, viewer: `Bearer ${TOKENS.viewer}` };

type Kind = 'uuid' | 'text64' | 'text128' | 'text256' | 'text500' | 'session' | 'qty' | 'price' | 'datetime' | 'currency' | 'nanos' | 'units' | 'factType' | 'object' | 'array' | readonly string[];

interface BodyRoute {
  name: string;
  path: string;
  /** Who may use it; the roles that may not (403). */
  role: Role;
  denied: Role[];
  order: boolean;
  maxBody: number;
  base: (r: Rng) => Record<string, unknown>;
  fields: Record<string, Kind>;
  required: readonly string[];
}

const SIDE = ['BUY', 'SELL'] as const;
const PROFILE = ['instant-post-trade-v1', 'ops-realistic-v1'] as const;

function common(r: Rng): Record<string, unknown> {
  return { commandId: r.uuid(), traceId: r.uuid(), causationId: r.uuid(), correlationId: r.uuid(), actorId: 'fuzz-bot', occurredAt: '2026-01-02T03:04:05.678Z' };
}
const COMMON_FIELDS: Record<string, Kind> = { commandId: 'uuid', traceId: 'uuid', causationId: 'uuid', correlationId: 'uuid', actorId: 'text128', occurredAt: 'datetime' };
const TARGET_FIELDS: Record<string, Kind> = { ...COMMON_FIELDS, orderId: 'uuid', runId: 'session', venueSessionId: 'session', instrumentId: 'uuid', participantId: 'uuid', accountId: 'uuid' };
const target = (r: Rng) => ({
  ...common(r),
  orderId: r.uuid(),
  runId: RUN_ID,
  venueSessionId: 'session-1',
  instrumentId: FUZZ_INSTRUMENT,
  participantId: TRADER_A.participantId,
  accountId: TRADER_A.accountId,
});

const ORDER_ROUTES: BodyRoute[] = [
  {
    name: 'submit',
    path: '/api/v1/orders/submit',
    role: 'trader',
    denied: ['operator', 'viewer'],
    order: true,
    maxBody: ORDER_MAX_BODY,
    base: (r) => ({
      ...common(r),
      orderId: r.uuid(),
      instrumentId: FUZZ_INSTRUMENT,
      participantId: TRADER_A.participantId,
      accountId: TRADER_A.accountId,
      side: r.pick(SIDE),
      orderType: 'LIMIT',
      quantityUnits: '10',
      limitPrice: '1.5',
      currency: 'USD',
      timeInForce: 'DAY',
      clientOrderId: `fuzz-${r.int(1e9)}`,
    }),
    fields: {
      ...COMMON_FIELDS,
      orderId: 'uuid',
      instrumentId: 'uuid',
      participantId: 'uuid',
      accountId: 'uuid',
      side: SIDE,
      orderType: ['LIMIT', 'LIMIT_HIDDEN'],
      quantityUnits: 'qty',
      limitPrice: 'price',
      currency: 'currency',
      timeInForce: ['DAY', 'IOC'],
      clientOrderId: 'text64',
    },
    required: submitOrderSchema.required,
  },
  {
    name: 'cancel',
    path: '/api/v1/orders/cancel',
    role: 'trader',
    denied: ['operator', 'viewer'],
    order: true,
    maxBody: ORDER_MAX_BODY,
    base: (r) => ({ ...target(r), reason: 'fuzz' }),
    fields: { ...TARGET_FIELDS, reason: 'text256' },
    required: cancelOrderSchema.required,
  },
  {
    name: 'modify',
    path: '/api/v1/orders/modify',
    role: 'trader',
    denied: ['operator', 'viewer'],
    order: true,
    maxBody: ORDER_MAX_BODY,
    base: (r) => ({ ...target(r), quantityUnits: '5', limitPrice: '2' }),
    fields: { ...TARGET_FIELDS, quantityUnits: 'qty', limitPrice: 'price' },
    required: modifyOrderSchema.required,
  },
  {
    name: 'cancel-by-client-order',
    path: '/api/v1/orders/cancel-by-client-order',
    role: 'trader',
    denied: ['operator', 'viewer'],
    order: true,
    maxBody: ORDER_MAX_BODY,
    base: (r) => ({ ...common(r), participantId: TRADER_A.participantId, clientOrderId: `fuzz-${r.int(1e9)}`, reason: 'fuzz' }),
    fields: { ...COMMON_FIELDS, participantId: 'uuid', clientOrderId: 'text64', reason: 'text256' },
    required: cancelByClientOrderSchema.required,
  },
];

const settlementRoute = (name: keyof typeof SETTLEMENT_BODY_SCHEMAS, path: string, base: BodyRoute['base'], fields: Record<string, Kind>): BodyRoute => ({
  name: `admin ${name}`,
  path,
  role: 'operator',
  denied: ['trader', 'viewer'],
  order: false,
  maxBody: ADMIN_MAX_BODY,
  base,
  fields,
  required: SETTLEMENT_BODY_SCHEMAS[name].required,
});

const ADMIN_BODY_ROUTES: BodyRoute[] = [
  settlementRoute(
    'facts',
    '/admin/v1/settlement/facts',
    (r) => ({ scenarioRunId: RUN_ID, facts: [{ factId: r.uuid(), factType: 'SettlementFuzzFact', occurredAt: '2026-01-02T03:04:05Z', causationId: r.uuid(), payload: { n: 1 } }] }),
    {
      scenarioRunId: 'session',
      facts: 'array',
      'facts.0.factId': 'uuid',
      'facts.0.factType': 'factType',
      'facts.0.occurredAt': 'datetime',
      'facts.0.causationId': 'uuid',
      'facts.0.payload': 'object',
    },
  ),
  settlementRoute('materialize', '/admin/v1/settlement/obligations/materialize', () => ({ scenarioRunId: RUN_ID, profile: 'instant-post-trade-v1' }), { scenarioRunId: 'session', profile: PROFILE }),
  settlementRoute('repair-cash', '/admin/v1/settlement/repairs/cash', (r) => ({ scenarioRunId: RUN_ID, obligationId: r.uuid(), amountNanos: '100', currency: 'USD' }), {
    scenarioRunId: 'session',
    obligationId: 'uuid',
    amountNanos: 'nanos',
    currency: 'currency',
  }),
  settlementRoute('repair-security', '/admin/v1/settlement/repairs/security', (r) => ({ scenarioRunId: RUN_ID, obligationId: r.uuid(), quantityUnits: '10' }), {
    scenarioRunId: 'session',
    obligationId: 'uuid',
    quantityUnits: 'units',
  }),
  settlementRoute('force-settle', '/admin/v1/settlement/force-settle', (r) => ({ scenarioRunId: RUN_ID, obligationId: r.uuid(), reason: 'fuzz' }), {
    scenarioRunId: 'session',
    obligationId: 'uuid',
    reason: 'text500',
  }),
  settlementRoute('reverse-ledger-entry', '/admin/v1/settlement/reverse-ledger-entry', (r) => ({ scenarioRunId: RUN_ID, ledgerEntryId: r.uuid(), reason: 'fuzz' }), {
    scenarioRunId: 'session',
    ledgerEntryId: 'uuid',
    reason: 'text500',
  }),
  settlementRoute('profiles', '/admin/v1/settlement/profiles', () => ({ scope: 'platform', profile: 'instant-post-trade-v1' }), {
    scope: ['platform', 'venueSession', 'scenarioRun'],
    profile: PROFILE,
    scopeId: 'session',
  }),
];
const BODY_ROUTES = [...ORDER_ROUTES, ...ADMIN_BODY_ROUTES];

/** A GET (or the refresh POST) route whose input is its path parameter and query. */
interface ReadRoute {
  name: string;
  method: 'GET' | 'POST';
  /** The path with a valid parameter, or with the one given. */
  path: (param?: string) => string;
  roles: Role[];
  denied: Role[];
  /** What a malformed path parameter is answered with (null: no parameter). */
  paramStatus: 400 | 404 | null;
  /** Query parameters and invalid values of each; null: the route takes none (any is 400); undefined: ignored. */
  query: Record<string, readonly string[]> | null | undefined;
  /** Values beyond a bound. */
  huge?: Record<string, readonly string[]>;
}

const BAD_DATES = ['', 'yesterday', '2026-11-22T03:00:00', '2024-13-01T00:00:00Z', '2024-02-30T00:00:00Z', '2024-01-01T24:00:00Z', '2024-01-01', '1700000000', '２０２４-01-01T00:00:00Z'];
/** Date-times the schema lets through but the venue cannot place (400 since the fuzz found them answered 503 / read as "now"). */
const UNPLACEABLE_DATES = ['2016-12-31T23:59:60Z', '2024-06-30T23:59:60+00:00', '2024-01-01T00:00:00+01', '2024-01-01T00:00:00-00'];
const COUNT_BAD = ['0', '-1', '1.5', '', 'abc', '５', '0x10', '1e3'];
const PROJECTION_BAD = ['', 'UPPER', '-x', 'x'.repeat(65), 'a b', 'ü', 'a/b', '☃'];
const instrumentPath = (prefix: string) => (param?: string) => `${prefix}/${param ?? FUZZ_INSTRUMENT}`;

const READ_ROUTES: ReadRoute[] = [
  {
    name: 'snapshot',
    method: 'GET',
    path: instrumentPath('/api/v1/market-data/snapshots'),
    roles: ['trader', 'viewer', 'operator'],
    denied: [],
    paramStatus: 400,
    query: { projectionName: PROJECTION_BAD },
  },
  {
    name: 'snapshot refresh',
    method: 'POST',
    path: () => '/api/v1/market-data/snapshots',
    roles: ['trader', 'viewer', 'operator'],
    denied: [],
    paramStatus: null,
    query: { projectionName: PROJECTION_BAD, sourceProjectionName: ['x', '', 'runtime-normalized-venue-outcome'], instrumentId: ['x', '', '12345', '☃'] },
  },
  {
    name: 'depth',
    method: 'GET',
    path: instrumentPath('/api/v1/market-data/depth'),
    roles: ['trader', 'viewer', 'operator'],
    denied: [],
    paramStatus: 400,
    query: { levels: [...COUNT_BAD, '51'], projectionName: ['x', 'market-data', ''], sourceProjectionName: ['x', ''] },
    huge: { levels: ['51', '999999999', '99999999999', '9'.repeat(400), '1e9'] },
  },
  {
    name: 'tape',
    method: 'GET',
    path: instrumentPath('/api/v1/market-data/trades'),
    roles: ['trader', 'viewer', 'operator'],
    denied: [],
    paramStatus: 400,
    query: { limit: [...COUNT_BAD, '501'], before: ['0', 'x', '', '-5'] },
    huge: { limit: ['501', '999999999', '99999999999', '9'.repeat(400)], before: ['99999999999', '9'.repeat(100)] },
  },
  {
    name: 'bars',
    method: 'GET',
    path: instrumentPath('/api/v1/market-data/bars'),
    roles: ['trader', 'viewer', 'operator'],
    denied: [],
    paramStatus: 400,
    query: { interval: ['2m', '', '1M', '1H', '60s'], start: [...BAD_DATES, ...UNPLACEABLE_DATES], end: [...BAD_DATES, ...UNPLACEABLE_DATES] },
  },
  ...(['current', 'history', 'fills'] as const).map((view): ReadRoute => ({
    name: `own ${view}`,
    method: 'GET',
    path: () => `/api/v1/orders/${view}`,
    roles: ['trader'],
    denied: ['viewer', 'operator'],
    paramStatus: null,
    query: { instrumentId: ['x', '', '12345', '☃'], limit: [...COUNT_BAD, '1001'] },
    huge: { limit: ['1001', '999999999', '99999999999', '9'.repeat(400)] },
  })),
  { name: 'availability', method: 'GET', path: () => '/api/v1/data/availability', roles: ['trader', 'viewer', 'operator'], denied: [], paramStatus: null, query: null },
  { name: 'projector status', method: 'GET', path: () => '/internal/market-data/projector/status', roles: ['trader', 'viewer', 'operator'], denied: [], paramStatus: null, query: null },
  {
    name: 'command status',
    method: 'GET',
    path: (param) => `/api/v1/commands/${param ?? 'not-a-command'}`,
    roles: ['trader', 'operator'],
    denied: ['viewer'],
    paramStatus: 404,
    query: undefined,
  },
  ...(['facts', 'obligations', 'ledger', 'exceptions', 'proof'] as const).map((view): ReadRoute => ({
    name: `settlement ${view}`,
    method: 'GET',
    path: (param) => `/api/v1/settlement/${view}/${param ?? RUN_ID}`,
    roles: ['operator', 'trader'],
    denied: ['viewer'],
    paramStatus: 400,
    query: null,
  })),
  ...(['score', 'leaderboard'] as const).map((view): ReadRoute => ({
    name: `settlement ${view}`,
    method: 'GET',
    path: (param) => `/api/v1/settlement/${view}/${param ?? RUN_ID}`,
    roles: view === 'score' ? ['operator', 'trader'] : ['operator', 'trader', 'viewer'],
    denied: view === 'score' ? ['viewer'] : [],
    paramStatus: 400,
    query: { asOf: [...BAD_DATES, ...UNPLACEABLE_DATES, '2024-01-01t00:00:00Z'], agedFailAfterSeconds: ['-1', 'abc', '', '1.5'] },
    huge: { agedFailAfterSeconds: ['9999999999', '99999999999999', '9'.repeat(400)] },
  })),
  // Routes whose only input is the caller: a bad token (401) or role (403) is all that can be wrong.
  { name: 'venue session', method: 'GET', path: () => '/api/v1/venue/session', roles: ['trader', 'viewer', 'operator'], denied: [], paramStatus: null, query: undefined },
  { name: 'openapi', method: 'GET', path: () => '/api/v1/openapi.json', roles: ['trader', 'viewer', 'operator'], denied: [], paramStatus: null, query: undefined },
  { name: 'metrics', method: 'GET', path: () => '/metrics', roles: ['viewer', 'operator'], denied: ['trader'], paramStatus: null, query: undefined },
  { name: 'persistence status', method: 'GET', path: () => '/admin/v1/persistence/status', roles: ['operator'], denied: ['trader', 'viewer'], paramStatus: null, query: undefined },
  { name: 'lifecycle rebuild', method: 'POST', path: () => '/admin/v1/projections/order-lifecycle/rebuild', roles: ['operator'], denied: ['trader', 'viewer'], paramStatus: null, query: undefined },
];

/** Every route that authenticates (all but /healthz and /readyz). */
const AUTH_ROUTES: Array<{ name: string; method: 'GET' | 'POST'; path: string; denied: Role[] }> = [
  ...BODY_ROUTES.map((route) => ({ name: route.name, method: 'POST' as const, path: route.path, denied: route.denied })),
  ...READ_ROUTES.map((route) => ({ name: route.name, method: route.method, path: route.path(), denied: route.denied })),
];

// ---- invalid values ----

const WRONG_TYPES: unknown[] = [0, -1, 1.5, true, false, null, [], {}, ['x'], { a: 1 }, new Raw('1e400'), new Raw('-1e400'), new Raw('123456789012345678901234567890'), new Raw('1e-400')];
const HUGE_NUMBERS: unknown[] = [
  new Raw('1e400'),
  new Raw('-1e400'),
  new Raw('123456789012345678901234567890'),
  new Raw('9007199254740993'),
  new Raw('1e-400'),
  new Raw(`1${'0'.repeat(400)}`),
  new Raw(`-${'9'.repeat(300)}.5`),
];
const HUGE_STRINGS: Partial<Record<string, readonly string[]>> = {
  qty: ['99999999999999999999', '1000000001', '9'.repeat(32), `1${'0'.repeat(31)}`, '1e308', 'Infinity', '9'.repeat(33), '9'.repeat(5000)],
  price: ['99999999999999999999', '9000001', '9000000.000000001', '9'.repeat(32), '1e308', `1${'0'.repeat(31)}`, `0.${'0'.repeat(30)}1`],
  nanos: [`1${'0'.repeat(30)}`, '9'.repeat(31), '1e30', '9'.repeat(5000)],
  units: [`1${'0'.repeat(19)}`, '9'.repeat(20), '1e19'],
};

function badUuids(r: Rng): string[] {
  const u = r.uuid();
  return [
    '',
    'order-1',
    '12345',
    u.replace(/-/g, ''),
    `{${u}}`,
    `urn:uuid:${u}`,
    `${u} `,
    ` ${u}`,
    u.slice(0, 35),
    `${u}0`,
    u.replace('-', '_'),
    `g${u.slice(1)}`,
    '00000000-0000-0000-0000-00000000000',
  ];
}

/** UUIDs with unicode in them: look-alike digits and letters, invisible and control characters, emoji, lone surrogates. */
function unicodeUuids(r: Rng): string[] {
  const u = r.uuid();
  const letter = u.search(/[a-f]/);
  return [
    u.replace(/[0-9]/, (d) => String.fromCharCode(0xff10 + Number(d))), // a fullwidth digit
    letter < 0 ? `${u.slice(0, 35)}а` : `${u.slice(0, letter)}${{ a: 'а', b: 'Ь', c: 'с', d: 'ԁ', e: 'е', f: 'ƒ' }[u[letter] as 'a']}${u.slice(letter + 1)}`, // Cyrillic look-alike
    `${u.slice(0, 8)}\u200b${u.slice(8)}`, // zero-width space
    `${u.slice(0, 35)}\u0301`, // a combining accent
    `\u202e${u.slice(1)}`, // right-to-left override
    `${u.slice(0, 34)}😀`,
    `${u.slice(0, 35)}\ud800`, // a lone surrogate
    `\u0000${u.slice(1)}`,
    u.replace(/-/g, '\u2010'), // unicode hyphens
    'ｕｕｉｄ',
    '☃'.repeat(36),
  ];
}

function invalidFor(r: Rng, kind: Kind, flavour: 'wrong-types' | 'huge-numbers' | 'unicode-ids' | 'invalid-values'): unknown {
  if (flavour === 'wrong-types') {
    if (kind === 'object') return r.pick([0, 'x', true, null, [], [1], new Raw('1e400')]);
    if (kind === 'array') return r.pick(['x', 0, {}, null, true, new Raw('1e400')]);
    return r.pick(WRONG_TYPES);
  }
  if (flavour === 'huge-numbers') {
    const strings = typeof kind === 'string' ? HUGE_STRINGS[kind] : undefined;
    return strings !== undefined && r.chance(0.6) ? r.pick(strings) : r.pick(HUGE_NUMBERS);
  }
  if (flavour === 'unicode-ids') {
    if (kind === 'uuid') return r.pick(unicodeUuids(r));
    if (kind === 'session') return r.pick(['rün-1', '☃', 'ｒｕｎ', 'run\u200b1', 'рун', 'run😀']);
    if (kind === 'currency') return r.pick(['ＵＳＤ', 'ÜSD', 'US\u0301D', 'УСД']);
    if (kind === 'qty') return r.pick(['１０', '1\u200b0', '١٠', '𝟏𝟎']);
    if (kind === 'price') return r.pick(['１', '1.５', '١', '𝟏']);
    if (kind === 'datetime') return r.pick(['２０２４-01-01T00:00:00Z', '2024-01-01T00:00:00Ｚ', '2024‐01‐01T00:00:00Z']);
    if (kind === 'factType') return r.pick(['Settlement☃', 'Settlementü', 'Sеttlement']);
    if (kind === 'nanos' || kind === 'units') return r.pick(['１０', '١٠', '𝟏𝟎']);
    if (Array.isArray(kind)) return `${kind[0]}\u0301`;
    if (typeof kind === 'string' && kind.startsWith('text')) return '☃'.repeat(Number(kind.slice(4)) + 1); // unicode within the length would be valid text
    return '☃'; // object, array: a string is the wrong type
  }
  switch (kind) {
    case 'uuid':
      return r.pick(badUuids(r));
    case 'text64':
    case 'text128':
    case 'text256':
    case 'text500': {
      const max = Number(kind.slice(4));
      return r.pick(['', 'x'.repeat(max + 1), '☃'.repeat(max + 1 + r.int(50))]);
    }
    case 'session':
      return r.pick(['', 'run local', 'x'.repeat(65), 'a/b', 'run\n1', 'run#1']);
    case 'qty':
      return r.pick(['0', '-5', '1.5', '1e3', '', 'NaN', 'Infinity', '0x10', 'ten', ' 1', '1 ', '+1', '1_000', '00']);
    case 'price':
      return r.pick(['0', '-1', '1.0000000001', '1e3', '', 'NaN', '1,5', '.5', '5.', '0.000000000', ' 1', '+1', '1.2.3']);
    case 'datetime':
      return r.pick(BAD_DATES);
    case 'currency':
      return r.pick(['usd', 'US', 'USDD', 'U$D', '', 'us d', '123']);
    case 'nanos':
      return r.pick(['0', '-1', '01', '1.5', '', ' 1', 'abc']);
    case 'units':
      return r.pick(['0', '-1', '', '1.0', '01', 'abc']);
    case 'factType':
      return r.pick(['Settlement', 'settlementX', 'SettlementX1', '', 'Settlement x', `Settlement${'x'.repeat(65)}`]);
    case 'object':
      return r.pick([0, 'x', true, null, [], [1]]);
    case 'array':
      return r.pick([[], 'x', 0, {}, null]);
    default:
      return r.pick(['', `${kind[0]}x`, `x${kind[0]}`, 'X', 'NOT_AN_OPTION', kind[0]!.toUpperCase() === kind[0] ? kind[0]!.toLowerCase() : kind[0]!.toUpperCase()]);
  }
}

/** Percent-encodes the UTF-8 bytes of a value (a lone surrogate becomes U+FFFD), unreserved characters as they are. */
function percentEncode(value: string): string {
  return [...Buffer.from(value, 'utf8')]
    .map((byte) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

function setPath(body: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let at: any = body;
  for (const key of keys.slice(0, -1)) at = at[key];
  at[keys[keys.length - 1]!] = value;
}

// ---- the cases ----

const CATEGORIES = [
  'broken-json',
  'wrong-types',
  'huge-numbers',
  'unicode-ids',
  'invalid-values',
  'bad-query-or-path',
  'missing-or-invalid-headers',
  'bad-auth-or-role',
  'duplicated-headers',
  'huge-headers',
  'huge-bodies',
  'wrong-method-or-route',
  'truncated-bodies',
  'slow-bodies',
  'slow-headers',
  'invalid-chunked',
  'framing-refused-by-uws',
  'unparsable-by-uws',
  'header-block-beyond-limit',
  'pipelined',
] as const;
type Category = (typeof CATEGORIES)[number];

interface Case {
  id: number;
  category: Category;
  route: string;
  what: string;
  /** keep-alive: one request on a shared connection; fresh: its own connection. */
  transport: 'keep-alive' | 'fresh';
  parts: RawPart[];
  /** The statuses the (first) answer may have. */
  expect: number[];
  /** Answers expected on the connection (pipelined requests). */
  answers?: number;
  /** HEAD: the answer has no body. */
  noBody?: boolean;
  /** uWebSockets.js refuses before the venue's code: the connection is closed without an answer (at once, or after its idle timeout). */
  closed?: 'at-once' | 'idle-timeout';
  /** Either our answer or uWS's close (a header block that may or may not arrive in one read). */
  orClosed?: boolean;
}

type Header = [string, string | Buffer];
const host: Header = ['Host', '127.0.0.1'];

function bodyHeaders(auth: string | null, route: BodyRoute, r: Rng, body: string | Buffer, extra: Header[] = []): Header[] {
  const headers: Header[] = [host];
  if (auth !== null) headers.push(['Authorization', auth]);
  if (route.order) headers.push(['X-Client-Id', 'fuzz-client'], ['Idempotency-Key', `fuzz-${r.uuid()}`]);
  headers.push(['Content-Type', 'application/json'], ['Content-Length', String(Buffer.byteLength(body))], ...extra);
  return headers;
}

function readRequest(method: string, target: string, auth: string | null, extra: Header[] = []): Buffer {
  return rawRequest(method, target, [host, ...(auth === null ? [] : ([['Authorization', auth]] as Header[])), ...extra]);
}

/** Malformed JSON texts made from a valid body. */
function brokenJson(r: Rng, valid: string): { text: string | Buffer; what: string } {
  const cut = () => valid.slice(0, r.int(valid.length));
  const variants: Array<() => { text: string | Buffer; what: string }> = [
    () => ({ text: cut(), what: 'truncated JSON' }),
    () => ({ text: `${valid.slice(0, -1)},}`, what: 'trailing comma' }),
    () => ({ text: valid.replace(',', ',,'), what: 'double comma' }),
    () => ({ text: valid.replace('":', '"'), what: 'missing colon' }),
    () => ({ text: valid.replace(/"/g, "'"), what: 'single quotes' }),
    () => ({ text: valid.replace(/"([A-Za-z]+)":/g, '$1:'), what: 'unquoted keys' }),
    () => ({ text: valid.replace(/:"[^"]*"/, ':NaN'), what: 'NaN literal' }),
    () => ({ text: valid.replace(/:"[^"]*"/, ':undefined'), what: 'undefined literal' }),
    () => ({ text: `/* c */${valid}`, what: 'comment' }),
    () => ({ text: `\ufeff${valid}`, what: 'byte order mark' }),
    () => ({ text: `${valid}${valid}`, what: 'two objects' }),
    () => ({ text: `${valid}garbage`, what: 'trailing garbage' }),
    () => ({ text: valid.replace(/:"/, ':"\n'), what: 'raw newline in a string' }),
    () => ({ text: valid.replace(/:"/, ':"\\x41'), what: 'invalid escape' }),
    () => ({ text: Buffer.concat([Buffer.from([0xff, 0xfe, 0x00]), Buffer.from(valid)]), what: 'binary prefix' }),
    () => ({ text: Buffer.from(Array.from({ length: r.between(1, 300) }, (_, k) => (k === 0 ? 0x01 : r.int(256)))), what: 'random bytes' }),
    () => ({ text: r.pick(['', ' ', '{', '}', '[', '"', '{"a":', 'nul', 'tru', '-', '{"a" 1}', '{,}', '[,]', '01', '{"a":01}']), what: 'fragment' }),
    () => ({ text: `${'['.repeat(4000)}${']'.repeat(3999)}`, what: 'deep unbalanced nesting' }),
    () => ({ text: valid.replace('{', '{"a":'.repeat(2000)), what: 'deep nesting, unclosed' }),
  ];
  return r.pick(variants)();
}

class Generator {
  private next = 0;
  readonly cases: Case[] = [];
  constructor(private readonly r: Rng) {}

  private add(c: Omit<Case, 'id'>): void {
    this.cases.push({ ...c, id: this.next++ });
  }

  private keepAlive(category: Category, route: string, what: string, request: Buffer, expect: number[], extra: Partial<Case> = {}): void {
    this.add({ category, route, what, transport: 'keep-alive', parts: [{ data: request }], expect, ...extra });
  }

  private validBody(route: BodyRoute): Record<string, unknown> {
    return route.base(this.r);
  }

  // -- body faults on the order and operator routes (400 unless the caller is refused first) --

  bodyFault(category: 'broken-json' | 'wrong-types' | 'huge-numbers' | 'unicode-ids' | 'invalid-values'): void {
    const r = this.r;
    const route = r.pick(BODY_ROUTES);
    const body = this.validBody(route);
    let text: string | Buffer;
    let what: string;
    if (category === 'broken-json') {
      ({ text, what } = brokenJson(r, render(body)));
    } else if (category === 'wrong-types' && r.chance(0.25)) {
      const shape = r.int(4);
      if (shape === 0) {
        text = r.pick(['null', '[]', '"text"', '42', 'true', '[{}]', render([body])]);
        what = 'a body that is not an object';
      } else if (shape === 1) {
        const field = r.pick(route.required);
        delete body[field];
        text = render(body);
        what = `required ${field} missing`;
      } else if (shape === 2) {
        const key = r.pick(['leverage', '__proto__', 'constructor', 'extra', 'commandid', 'Side']);
        const value = r.pick(WRONG_TYPES);
        // Assigning __proto__ would set the prototype (and JSON.stringify would drop it): write it into the text.
        if (key === '__proto__') text = `{"__proto__":${render(value)},${render(body).slice(1)}`;
        else {
          body[key] = value;
          text = render(body);
        }
        what = `an unknown field ${key}`;
      } else {
        text = '{}';
        what = 'an empty object';
      }
    } else {
      const fields = Object.entries(route.fields).filter(([, kind]) => category !== 'unicode-ids' || kind === 'uuid' || kind === 'session' || r.chance(0.3));
      const [field, kind] = r.pick(fields);
      const value = invalidFor(r, kind, category);
      if (typeof value === 'string' && kind === 'uuid' && isUuid(value)) throw new Error(`generator bug: ${value} is a UUID`);
      setPath(body, field, value);
      text = render(body);
      what = `${field} = ${(value instanceof Raw ? value.text : (JSON.stringify(value) ?? 'undefined')).slice(0, 60)}`;
    }
    // A body may stay under its bound; one past it is 413 before it is parsed.
    const size = Buffer.byteLength(text);
    const expect = size > route.maxBody ? [413] : [400];
    this.keepAlive(category, route.name, what, rawRequest('POST', route.path, bodyHeaders(AUTH[route.role], route, r, text), text), expect);
  }

  // -- query strings and path parameters of the read routes --

  queryFault(category: 'bad-query-or-path' | 'huge-numbers' | 'unicode-ids'): void {
    const r = this.r;
    const candidates = READ_ROUTES.filter((route) =>
      category === 'huge-numbers'
        ? route.huge !== undefined || route.name === 'bars'
        : category === 'unicode-ids'
          ? route.paramStatus !== null || (route.query ?? {}).instrumentId !== undefined
          : route.query !== undefined || route.paramStatus !== null,
    );
    const route = r.pick(candidates);
    const auth = AUTH[r.pick(route.roles)];
    // eslint-disable-next-line no-control-regex -- control characters are the hostile input under test
    const encode = (value: string) => (r.chance(0.3) && /^[^\x00-\x20#%&+?/\\]*$/.test(value) && /[^\x00-\x7f]/.test(value) ? value : percentEncode(value));
    let pathParam: string | undefined;
    let query: string[] = [];
    let what: string;
    let expect: number = 400;
    if (category === 'huge-numbers') {
      if (route.name === 'bars') {
        query = [
          `start=${percentEncode(r.pick(['0001-01-01T00:00:00Z', '1970-01-01T00:00:00Z', '2000-01-01T00:00:00Z']))}`,
          `end=${percentEncode(r.pick(['9999-12-31T23:59:59Z', '2999-01-01T00:00:00Z']))}`,
        ];
        if (r.chance(0.5)) query.push(`interval=${r.pick(['1m', '5m', '15m', '1h'])}`);
        what = 'a bar range past 1,440 bars';
      } else {
        const [name, values] = r.pick(Object.entries(route.huge!));
        const value = r.pick(values);
        query = [`${name}=${value}`];
        what = `${name}=${value.slice(0, 40)}`;
      }
    } else if (category === 'unicode-ids') {
      const value = r.pick(unicodeUuids(r));
      if (route.paramStatus !== null && (route.query?.instrumentId === undefined || r.chance(0.5))) {
        pathParam = encode(value);
        expect = route.paramStatus;
        what = `path id ${JSON.stringify(value)}`;
      } else {
        query = [`instrumentId=${encode(value)}`];
        what = `instrumentId=${JSON.stringify(value)}`;
      }
    } else {
      const shape = r.int(10);
      if (route.paramStatus !== null && (shape < 3 || route.query === undefined)) {
        const value = r.pick([...badUuids(r), 'x'.repeat(r.between(37, 2000)), '%ZZ', '..', '%2e%2e', 'null', 'undefined', '-1']);
        pathParam = value === '%ZZ' || value.startsWith('%2e') ? value : percentEncode(value);
        if (pathParam === '') pathParam = undefined;
        expect = route.paramStatus;
        what = `path id ${JSON.stringify(value.slice(0, 40))}`;
        if (pathParam === undefined) {
          // An empty segment matches no route.
          pathParam = '';
          expect = 404;
        } else if (route.name.startsWith('settlement') && /^[A-Za-z0-9._:-]{1,64}$/.test(pathParam)) {
          // A well-formed run id (the parameter is not percent-decoded) is not bad input; make it one.
          pathParam = `${pathParam}%20`;
        }
      } else if (route.query === null) {
        query = [`${r.pick(['limit', 'x', 'instrumentId', 'asOf', ''])}=${r.pick(['1', '', 'x'])}`];
        what = 'a query on a route that takes none';
      } else {
        const params = Object.entries(route.query!);
        if (shape === 3) {
          query = [`${percentEncode(r.pick(['foo', 'LIMIT', 'limit ', 'instrument_id', 'x'.repeat(300), 'lïmit']))}=1`];
          what = 'an unknown parameter';
        } else if (shape === 4) {
          const [name, values] = r.pick(params);
          query = [`${name}=${percentEncode(values[0]!)}`, `${name}=${percentEncode(values[0]!)}`];
          what = `${name} repeated`;
        } else {
          const [name, values] = r.pick(params);
          const value = r.pick(values);
          query = [`${name}=${encode(value)}`];
          what = `${name}=${JSON.stringify(value.slice(0, 40))}`;
        }
      }
    }
    let target = route.path(pathParam);
    if (query.length > 0) target += `?${query.join('&')}`;
    this.keepAlive(category, route.name, what, readRequest(route.method, target, auth), [expect]);
  }

  // -- headers --

  missingHeaders(): void {
    const r = this.r;
    const shape = r.int(10);
    if (shape < 4) {
      const route = r.pick(AUTH_ROUTES);
      const body = route.method === 'POST' ? '{"a":' : '';
      this.keepAlive('missing-or-invalid-headers', route.name, 'no Authorization', rawRequest(route.method, route.path, [host, ['Content-Length', String(body.length)]], body), [401]);
      return;
    }
    const route = r.pick(ORDER_ROUTES);
    const text = render(this.validBody(route));
    const headers = bodyHeaders(AUTH.trader, route, r, text);
    let what: string;
    if (shape < 8) {
      const drop = r.pick([['x-client-id'], ['idempotency-key'], ['x-client-id', 'idempotency-key']]);
      const blank = r.chance(0.3);
      for (const header of headers) if (drop.includes(header[0].toLowerCase()) && blank) header[1] = '';
      const kept = blank ? headers : headers.filter(([name]) => !drop.includes(name.toLowerCase()));
      what = `${blank ? 'empty' : 'no'} ${drop.join(' and ')} (valid body)`;
      this.keepAlive('missing-or-invalid-headers', route.name, what, rawRequest('POST', route.path, kept, text), [400]);
    } else if (shape === 8) {
      const mode = r.pick(['fast', 'SYNC-RESULT', 'sync_result', 'syñc-result', 'sync result', 'captured', '*', 'accepted-async,sync-result']);
      this.keepAlive('missing-or-invalid-headers', route.name, `X-Processing-Mode ${mode}`, rawRequest('POST', route.path, [...headers, ['X-Processing-Mode', mode]], text), [400]);
    } else {
      const target = r.pick(BODY_ROUTES);
      const noLength = r.chance(0.5);
      const request = rawRequest('POST', target.path, [
        host,
        ['Authorization', AUTH[target.role]],
        ...(target.order
          ? ([
              ['X-Client-Id', 'c'],
              ['Idempotency-Key', 'k'],
            ] as Header[])
          : []),
        ...(noLength ? [] : ([['Content-Length', '0']] as Header[])),
      ]);
      this.keepAlive('missing-or-invalid-headers', target.name, noLength ? 'no Content-Length and no body' : 'Content-Length: 0', request, [400]);
    }
  }

  /** Unicode in header values (bytes on the wire are UTF-8). */
  unicodeHeaders(): void {
    const r = this.r;
    // Non-ASCII inside the value: uWS drops leading and trailing bytes outside 0x21-0x7f before the venue sees them (see the test below).
    const value = r.pick(['clïent', 'a☃b', 'xＫy', 'key\u200bx', 'a😀b', 'kлючk', 'a\u0301b', 'c\u00a0d']);
    if (r.chance(0.4)) {
      const route = r.pick(AUTH_ROUTES);
      this.keepAlive('unicode-ids', route.name, `Authorization: Bearer ${value}`, rawRequest(route.method, route.path, [host, ['Authorization', `Bearer ${value}`], ['Content-Length', '0']]), [401]);
      return;
    }
    const route = r.pick(ORDER_ROUTES);
    const text = render(this.validBody(route));
    const header = r.pick(['X-Client-Id', 'Idempotency-Key']);
    const headers = bodyHeaders(AUTH.trader, route, r, text).map(([name, v]): Header => [name, name === header ? value : v]);
    this.keepAlive('unicode-ids', route.name, `${header}: ${value}`, rawRequest('POST', route.path, headers, text), [400]);
  }

  badAuth(): void {
    const r = this.r;
    const route = r.pick(AUTH_ROUTES);
    const body = route.method === 'POST' ? render({ not: 'checked' }) : '';
    if (route.denied.length > 0 && r.chance(0.4)) {
      const role = r.pick(route.denied);
      this.keepAlive('bad-auth-or-role', route.name, `role ${role}`, rawRequest(route.method, route.path, [host, ['Authorization', AUTH[role]], ['Content-Length', String(body.length)]], body), [403]);
      return;
    }
    const token = r.pick(Object.values(TOKENS));
    const authorization = r.pick([
      'Bearer nope',
      'Basic ZGV2OnRva2Vu',
      'Bearer',
      'Bearer ',
      `bearer${token}`,
      `Bearer ${token.toUpperCase()}`,
      `Bearer ${token}x`,
      `Bearer x${token}`,
      `Token ${token}`,
      `Bearer ${'x'.repeat(600)}`,
      `Bearer ${token.slice(0, -1)}`,
      token,
      `Bearer\t${token}x`,
      `Bearer ${token};${token}`,
    ]);
    this.keepAlive(
      'bad-auth-or-role',
      route.name,
      `Authorization: ${authorization.slice(0, 40)}`,
      rawRequest(route.method, route.path, [host, ['Authorization', authorization], ['Content-Length', String(body.length)]], body),
      [401],
    );
  }

  duplicatedHeaders(): void {
    const r = this.r;
    const route = r.pick(ORDER_ROUTES);
    const validText = render(this.validBody(route));
    const base = bodyHeaders(AUTH.trader, route, r, validText).filter(([name]) => name !== 'Authorization' && name !== 'X-Client-Id' && name !== 'Idempotency-Key');
    const shape = r.int(8);
    // The first occurrence counts (uWebSockets.js getHeader): an invalid first value is refused even though the second is valid.
    if (shape === 0) {
      const bad = r.pick(['Bearer nope', 'Basic x', '', `Bearer ${TOKENS.traderA}x`]);
      this.keepAlive(
        'duplicated-headers',
        route.name,
        'Authorization: invalid, then valid',
        rawRequest('POST', route.path, [['Authorization', bad], ['Authorization', AUTH.trader], ['X-Client-Id', 'c'], ['Idempotency-Key', `k-${r.uuid()}`], ...base], validText),
        [401],
      );
    } else if (shape === 1) {
      const first = r.pick(['viewer', 'operator'] as const);
      this.keepAlive(
        'duplicated-headers',
        route.name,
        `Authorization: ${first}, then trader`,
        rawRequest('POST', route.path, [['Authorization', AUTH[first]], ['Authorization', AUTH.trader], ['X-Client-Id', 'c'], ['Idempotency-Key', `k-${r.uuid()}`], ...base], validText),
        [403],
      );
    } else if (shape === 2) {
      const name = r.pick(['X-Client-Id', 'Idempotency-Key']);
      const bad = r.pick(['', 'x'.repeat(129 + r.int(500)), 'has space', 'ü', '"quoted"x'.repeat(20)]);
      const other = name === 'X-Client-Id' ? 'Idempotency-Key' : 'X-Client-Id';
      this.keepAlive(
        'duplicated-headers',
        route.name,
        `${name}: invalid, then valid`,
        rawRequest('POST', route.path, [['Authorization', AUTH.trader], [name, bad], [name, 'good-value'], [other, `v-${r.uuid()}`], ...base], validText),
        [400],
      );
    } else if (shape === 3) {
      this.keepAlive(
        'duplicated-headers',
        route.name,
        'X-Processing-Mode: invalid, then valid',
        rawRequest(
          'POST',
          route.path,
          [['Authorization', AUTH.trader], ['X-Client-Id', 'c'], ['Idempotency-Key', `k-${r.uuid()}`], ['X-Processing-Mode', 'bogus'], ['X-Processing-Mode', 'sync-result'], ...base],
          validText,
        ),
        [400],
      );
    } else {
      // Valid first, anything second, and a malformed body: still refused, as the body says.
      const { text } = brokenJson(r, validText);
      const name = r.pick(['Authorization', 'X-Client-Id', 'Idempotency-Key', 'Content-Type', 'Host', 'Content-Length', 'X-Processing-Mode']);
      const headers: Header[] = [
        host,
        ['Authorization', AUTH.trader],
        ['X-Client-Id', 'c'],
        ['Idempotency-Key', `k-${r.uuid()}`],
        ['Content-Type', 'application/json'],
        ['Content-Length', String(Buffer.byteLength(text))],
      ];
      const index = headers.findIndex(([n]) => n === name);
      const second: Header = index < 0 ? [name, 'sync-result'] : name === 'Content-Length' ? [name, headers[index]![1]] : [name, r.pick(['other', '', 'Bearer nope', 'x'.repeat(100)])];
      if (index < 0) headers.push(second, [name, 'bogus']);
      else headers.splice(index + 1, 0, second);
      this.keepAlive(
        'duplicated-headers',
        route.name,
        `${name} twice, malformed body`,
        rawRequest('POST', route.path, headers, text),
        index < 0 ? [400] : [400, 413].slice(0, Buffer.byteLength(text) > route.maxBody ? 2 : 1),
      );
    }
  }

  /** Header values past the venue's own bounds, in a header block uWS accepts (under 4 KB). */
  hugeHeaders(): void {
    const r = this.r;
    const shape = r.int(4);
    if (shape === 0) {
      const route = r.pick(AUTH_ROUTES);
      const token = `Bearer ${'t'.repeat(r.between(506, 3500))}`;
      this.keepAlive('huge-headers', route.name, `Authorization of ${token.length} characters`, rawRequest(route.method, route.path, [host, ['Authorization', token], ['Content-Length', '0']]), [401]);
      return;
    }
    const route = r.pick(ORDER_ROUTES);
    if (shape === 1) {
      const text = render(this.validBody(route));
      const name = r.pick(['X-Client-Id', 'Idempotency-Key']);
      const value = 'v'.repeat(r.between(129, 3000));
      const headers = bodyHeaders(AUTH.trader, route, r, text).map(([n, v]): Header => [n, n === name ? value : v]);
      this.keepAlive('huge-headers', route.name, `${name} of ${value.length} characters (valid body)`, rawRequest('POST', route.path, headers, text), [400]);
    } else {
      const { text } = brokenJson(r, render(this.validBody(route)));
      const pad: Header[] = shape === 2 ? [['X-Pad', 'p'.repeat(r.between(1000, 3000))]] : Array.from({ length: r.between(10, 38) }, (_, k): Header => [`X-Fuzz-${k}`, 'v'.repeat(r.between(1, 60))]);
      this.keepAlive(
        'huge-headers',
        route.name,
        shape === 2 ? 'a 1-3 KB header, malformed body' : 'many headers, malformed body',
        rawRequest('POST', route.path, bodyHeaders(AUTH.trader, route, r, text, pad), text),
        [400],
      );
    }
  }

  hugeBodies(): void {
    const r = this.r;
    const route = r.pick(BODY_ROUTES);
    const size = route.maxBody + r.between(1, route.maxBody * 2);
    const body = r.chance(0.5) ? render({ ...this.validBody(route), actorId: 'a'.repeat(size) }) : 'x'.repeat(size);
    const shape = r.int(10);
    const auth = shape === 0 ? 'Bearer nope' : shape === 1 ? AUTH[r.pick(route.denied)] : AUTH[route.role];
    this.keepAlive('huge-bodies', route.name, `${Buffer.byteLength(body)} bytes${shape < 2 ? ' (refused caller)' : ''}`, rawRequest('POST', route.path, bodyHeaders(auth, route, r, body), body), [
      shape === 0 ? 401 : shape === 1 ? 403 : 413,
    ]);
  }

  wrongMethod(): void {
    const r = this.r;
    const shape = r.int(10);
    if (shape < 4) {
      const route = r.pick(BODY_ROUTES);
      const method = r.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'CONNECT', 'TRACE']);
      this.keepAlive('wrong-method-or-route', route.name, `${method} ${route.path}`, readRequest(method, route.path, r.chance(0.5) ? AUTH[route.role] : null), [405], { noBody: method === 'HEAD' });
    } else if (shape < 7) {
      const route = r.pick(READ_ROUTES);
      const method = r.pick(route.method === 'GET' ? ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'] : ['GET', 'PUT', 'DELETE', 'PATCH']);
      const target = route.path();
      this.keepAlive('wrong-method-or-route', route.name, `${method} ${target}`, readRequest(method, target, AUTH[r.pick(route.roles)], [['Content-Length', '0']]), [405], {
        noBody: method === 'HEAD',
      });
    } else {
      const path = r.pick([
        '/api/v1/nothing',
        '/api/v2/orders/submit',
        '/API/V1/ORDERS/SUBMIT',
        '/api/v1/orders/submit/',
        '/api/v1//orders/submit',
        '/api/v1/orders/submit/extra',
        '/internal/admin/settlement/facts',
        '/internal',
        '/internal/',
        '/admin/v1/unknown',
        '/admin/v1',
        '/%2e%2e/etc/passwd',
        '/api/v1/../v1/venue/session',
        `/api/v1/${'a'.repeat(r.between(100, 3000))}`,
        '/api/v1/market-data/depth',
        '/api/v1/commands/',
        '/favicon.ico',
        '/api/v1/orders',
        '/healthz/x',
        '/readyzz',
        `/api/v1/market-data/depth/${FUZZ_INSTRUMENT}/extra`,
        '/api/v1/settlement/leaderboards/run-local',
        '/api/v1/settlement/unknown/run-local',
        '/*',
        '/%00',
      ]);
      const method = r.pick(['GET', 'POST', 'PUT', 'DELETE']);
      this.keepAlive(
        'wrong-method-or-route',
        path.slice(0, 40),
        `${method} unknown route`,
        readRequest(method, path, r.chance(0.7) ? AUTH[r.pick(['trader', 'operator', 'viewer'] as const)] : null, [['Content-Length', '0']]),
        [404],
      );
    }
  }

  // -- faults only raw sockets can send, each on a connection of its own --

  truncatedBody(): void {
    const r = this.r;
    const route = r.pick(BODY_ROUTES);
    const text = render(this.validBody(route));
    const sent = text.slice(0, r.int(text.length));
    const declared = Math.min(route.maxBody, Buffer.byteLength(text) + r.int(100));
    const refused = r.int(5) === 0;
    const headers = bodyHeaders(refused ? 'Bearer nope' : AUTH[route.role], route, r, '').map(([n, v]): Header => [n, n === 'Content-Length' ? String(declared) : v]);
    // The venue answers 408 once the body is late by BODY_TIMEOUT_MS; a refused caller is answered at once.
    this.add({
      category: 'truncated-bodies',
      route: route.name,
      what: `${Buffer.byteLength(sent)} of ${declared} declared bytes, then nothing${refused ? ' (bad token)' : ''}`,
      transport: 'fresh',
      parts: [{ data: rawRequest('POST', route.path, headers, sent) }],
      expect: [refused ? 401 : 408],
    });
  }

  slowBody(): void {
    const r = this.r;
    const route = r.pick(BODY_ROUTES);
    const valid = render(this.validBody(route));
    const { text, what } = r.chance(0.7)
      ? brokenJson(r, valid)
      : { text: render({ ...JSON.parse(valid), [r.pick(Object.keys(route.fields).filter((f) => !f.includes('.')))]: r.pick(WRONG_TYPES) }), what: 'a wrong type' };
    const bytes = typeof text === 'string' ? Buffer.from(text) : text;
    const head = rawRequest('POST', route.path, bodyHeaders(AUTH[route.role], route, r, bytes));
    const pieces = r.between(2, 6);
    const parts: RawPart[] = [{ data: head }];
    for (let k = 0; k < pieces; k++) parts.push({ data: bytes.subarray(Math.floor((k * bytes.length) / pieces), Math.floor(((k + 1) * bytes.length) / pieces)), delayMs: r.between(10, 80) });
    this.add({ category: 'slow-bodies', route: route.name, what: `${what} in ${pieces} pieces`, transport: 'fresh', parts, expect: [bytes.length > route.maxBody ? 413 : 400] });
  }

  slowHeaders(): void {
    const r = this.r;
    const route = r.pick(BODY_ROUTES);
    // An empty body now and then: uWS never signalled "Content-Length: 0" after headers in pieces (the venue now reads the header).
    const text = r.chance(0.2) ? '' : brokenJson(r, render(this.validBody(route))).text;
    const request = rawRequest('POST', route.path, bodyHeaders(AUTH[route.role], route, r, text), text);
    const end = request.indexOf('\r\n\r\n') + 4;
    const cuts = [0, ...Array.from({ length: r.between(1, 4) }, () => r.between(1, end - 1)).sort((a, b) => a - b), request.length];
    const parts: RawPart[] = cuts.slice(1).map((cut, k) => ({ data: request.subarray(cuts[k]!, cut), delayMs: k === 0 ? 0 : r.between(10, 80) }));
    this.add({ category: 'slow-headers', route: route.name, what: `the request in ${parts.length} pieces`, transport: 'fresh', parts, expect: [Buffer.byteLength(text) > route.maxBody ? 413 : 400] });
  }

  invalidChunked(): void {
    const r = this.r;
    const route = r.pick(BODY_ROUTES);
    const { text } = brokenJson(r, render(this.validBody(route)));
    const body = typeof text === 'string' ? text : text.toString('latin1');
    const hex = Buffer.byteLength(body).toString(16);
    const headers = bodyHeaders(AUTH[route.role], route, r, '').filter(([n]) => n !== 'Content-Length');
    const shape = r.int(9);
    const post = (chunked: string, extra: Header[] = [['Transfer-Encoding', 'chunked']]) => rawRequest('POST', route.path, [...headers, ...extra], Buffer.from(chunked, 'latin1'));
    if (shape === 0)
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: 'a chunk size that is not hex',
        transport: 'fresh',
        parts: [{ data: post(`${r.pick(['zz', 'xyz', 'Q', 'z1'])}\r\n${body}\r\n0\r\n\r\n`) }],
        expect: [],
        closed: 'at-once',
      });
    else if (shape === 1)
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: 'a negative chunk size',
        transport: 'fresh',
        parts: [{ data: post(`-${hex}\r\n${body}\r\n0\r\n\r\n`) }],
        expect: [],
        closed: 'at-once',
      });
    else if (shape === 2)
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: 'a chunk size past 64 bits',
        transport: 'fresh',
        parts: [{ data: post(`${'f'.repeat(r.between(16, 40))}\r\n${body}\r\n0\r\n\r\n`) }],
        expect: [],
        closed: 'at-once',
      });
    else if (shape === 3)
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: 'a chunk extension',
        transport: 'fresh',
        parts: [{ data: post(`${hex};ext=1\r\n${body}\r\n0\r\n\r\n`) }],
        expect: [],
        closed: 'at-once',
      });
    else if (shape === 4)
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: 'more data than the chunk size',
        transport: 'fresh',
        parts: [{ data: post(`1\r\n{${'z'.repeat(r.between(3, 300))}\r\n0\r\n\r\n`) }],
        expect: [],
        closed: 'at-once',
      });
    else if (shape === 5)
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: 'Transfer-Encoding with Content-Length',
        transport: 'fresh',
        parts: [
          {
            data: post(`${hex}\r\n${body}\r\n0\r\n\r\n`, [
              ['Transfer-Encoding', 'chunked'],
              ['Content-Length', String(r.between(1, 50))],
            ]),
          },
        ],
        expect: [],
        closed: 'at-once',
      });
    else if (shape === 6)
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: 'a chunk size larger than the data, then nothing',
        transport: 'fresh',
        parts: [{ data: post(`${(Buffer.byteLength(body) + 10).toString(16)}\r\n${body}`) }],
        expect: [408],
      });
    else if (shape === 7) {
      // An empty body would make "0\r\n\r\n", which is the last chunk: a complete (empty) body, answered 400 at once.
      const some = body === '' ? '{' : body;
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: 'no last chunk, then nothing',
        transport: 'fresh',
        parts: [{ data: post(`${Buffer.byteLength(some).toString(16)}\r\n${some}\r\n`) }],
        expect: [408],
      });
    } else {
      // Well-framed chunks of a malformed body, past the bound or not: the venue's answer.
      const big = r.chance(0.3);
      const payload = big ? 'x'.repeat(route.maxBody + 1 + r.int(route.maxBody)) : body;
      const chunks: string[] = [];
      for (let at = 0; at < payload.length;) {
        const size = Math.min(payload.length - at, r.between(1, 4096));
        chunks.push(`${size.toString(16)}\r\n${payload.slice(at, at + size)}\r\n`);
        at += size;
      }
      this.add({
        category: 'invalid-chunked',
        route: route.name,
        what: `a malformed body in ${chunks.length} chunks`,
        transport: 'fresh',
        parts: [{ data: post(`${chunks.join('')}0\r\n\r\n`) }],
        expect: [big ? 413 : 400],
      });
    }
  }

  framingRefused(): void {
    const r = this.r;
    const route = r.pick(BODY_ROUTES);
    const shape = r.int(4);
    if (shape === 3) {
      this.add({
        category: 'framing-refused-by-uws',
        route: route.name,
        what: 'no Host header',
        transport: 'fresh',
        parts: [
          {
            data: rawRequest(
              'POST',
              route.path,
              [
                ['Authorization', AUTH[route.role]],
                ['Content-Length', '2'],
              ],
              '{}',
            ),
          },
        ],
        expect: [],
        closed: 'at-once',
      });
    } else if (shape === 0) {
      const length = r.pick(['abc', '-1', '+2', '0x2', '2,2', '1e3', '4294967296', '99999999999999999999', '12a']);
      const headers = bodyHeaders(AUTH[route.role], route, r, '').map(([n, v]): Header => [n, n === 'Content-Length' ? length : v]);
      this.add({
        category: 'framing-refused-by-uws',
        route: route.name,
        what: `Content-Length: ${length}`,
        transport: 'fresh',
        parts: [{ data: rawRequest('POST', route.path, headers, '{}') }],
        expect: [],
        closed: 'at-once',
      });
    } else if (shape === 1) {
      const encoding = r.pick(['gzip', 'deflate', 'compress']);
      const headers = bodyHeaders(AUTH[route.role], route, r, '').filter(([n]) => n !== 'Content-Length');
      this.add({
        category: 'framing-refused-by-uws',
        route: route.name,
        what: `Transfer-Encoding: ${encoding}`,
        transport: 'fresh',
        parts: [{ data: rawRequest('POST', route.path, [...headers, ['Transfer-Encoding', encoding]], '{}') }],
        expect: [],
        closed: 'at-once',
      });
    } else {
      // uWS knows GET, POST, PUT, DELETE, PATCH, OPTIONS, HEAD, CONNECT and TRACE, in upper case; anything else closes the connection.
      const method = r.pick(['post', 'Post', 'get', 'G@T', 'P(ST', 'PROPFIND', 'FOO', 'MKCOL', 'PURGE']);
      this.add({
        category: 'framing-refused-by-uws',
        route: route.name,
        what: `method ${method}`,
        transport: 'fresh',
        parts: [{ data: rawRequest(method, route.path, [host, ['Authorization', AUTH[route.role]], ['Content-Length', '2']], '{}') }],
        expect: [],
        closed: 'at-once',
      });
    }
  }

  unparsable(): void {
    const r = this.r;
    const route = r.pick(AUTH_ROUTES);
    const auth = `Authorization: ${AUTH.trader}\r\n`;
    const variants: Array<[string, string]> = [
      ['a garbage request line', `${r.pick(['GARBAGE', 'HELLO WORLD', '\u0001\u0002', 'GET'])}\r\n\r\n`],
      ['no HTTP version', `GET ${route.path}\r\nHost: x\r\n\r\n`],
      ['HTTP/1.0', `GET ${route.path} HTTP/1.0\r\nHost: x\r\n${auth}\r\n`],
      ['HTTP/2.0 in a request line', `GET ${route.path} HTTP/2.0\r\nHost: x\r\n${auth}\r\n`],
      ['an absolute-form target', `GET http://127.0.0.1${route.path} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`],
      ['a space in the target', `GET ${route.path.replace(/\/(?=[^/]*$)/, '/ ')} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`],
      ['bare LF line ends', `GET ${route.path} HTTP/1.1\nHost: x\n${auth.replace('\r\n', '\n')}\n`],
      ['NUL in a header value', `GET ${route.path} HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n${auth}\r\n`],
      ['a header line without a colon', `GET ${route.path} HTTP/1.1\r\nHost: x\r\nBroken header\r\n${auth}\r\n`],
      ['an obs-fold continuation line', `GET ${route.path} HTTP/1.1\r\nHost: x\r\n folded\r\n${auth}\r\n`],
      ['no header at all (no Host)', `GET ${route.path} HTTP/1.1\r\n\r\n`],
      ['more than 48 header lines', `GET ${route.path} HTTP/1.1\r\nHost: x\r\n${auth}${Array.from({ length: r.between(48, 70) }, (_, k) => `X-H${k}: v\r\n`).join('')}\r\n`],
    ];
    const [what, text] = r.pick(variants);
    this.add({ category: 'unparsable-by-uws', route: route.name, what, transport: 'fresh', parts: [{ data: Buffer.from(text, 'latin1') }], expect: [], closed: 'idle-timeout' });
  }

  headerBlockBeyondLimit(): void {
    const r = this.r;
    const route = r.pick(AUTH_ROUTES);
    const shape = r.int(3);
    const head = `${route.method} ${route.path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.trader}\r\nX-Pad: `;
    if (shape === 0) {
      // Past 4 KB over two reads: uWS's limit for a header block it must buffer.
      const pad = 'p'.repeat(r.between(4200, 20_000));
      this.add({
        category: 'header-block-beyond-limit',
        route: route.name,
        what: `a ${pad.length}-byte header in two pieces`,
        transport: 'fresh',
        parts: [{ data: head + pad.slice(0, 500) }, { data: `${pad.slice(500)}\r\n\r\n`, delayMs: 20 }],
        expect: [],
        closed: 'at-once',
      });
    } else if (shape === 1) {
      const pad = 'p'.repeat(r.between(600_000, 1_200_000));
      this.add({
        category: 'header-block-beyond-limit',
        route: route.name,
        what: `a ${pad.length}-byte header`,
        transport: 'fresh',
        parts: [{ data: `${head}${pad}\r\n\r\n` }],
        expect: [],
        closed: 'at-once',
      });
    } else {
      // 4 KB to 60 KB in one write: accepted whole if it arrives in one read (then the venue answers), else closed at once.
      const pad = 'p'.repeat(r.between(4200, 60_000));
      const body = route.method === 'POST' ? '{"a":' : '';
      const request = `${route.method} ${route.path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nX-Pad: ${pad}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      this.add({
        category: 'header-block-beyond-limit',
        route: route.name,
        what: `a ${pad.length}-byte header in one write`,
        transport: 'fresh',
        parts: [{ data: request }],
        expect: [401],
        orClosed: true,
      });
    }
  }

  duplicatedContentLength(): void {
    const r = this.r;
    const route = r.pick(BODY_ROUTES);
    // No prefix of this body is valid JSON, whichever Content-Length frames it.
    const bytes = Buffer.from(`\u0001${render(this.validBody(route))}`);
    const wrong = String(r.between(0, bytes.length + 20));
    const right = String(bytes.length);
    const order = r.chance(0.5) ? [right, wrong] : [wrong, right];
    const headers = bodyHeaders(AUTH[route.role], route, r, '').filter(([n]) => n !== 'Content-Length');
    const parts = [{ data: rawRequest('POST', route.path, [...headers, ['Content-Length', order[0]!], ['Content-Length', order[1]!]], bytes) }];
    // The first Content-Length frames the body: a malformed (or shorter) body is 400; a longer declaration waits for bytes that never come: 408.
    const first = Number(order[0]);
    this.add({ category: 'duplicated-headers', route: route.name, what: `Content-Length: ${order[0]}, then ${order[1]}`, transport: 'fresh', parts, expect: [first > bytes.length ? 408 : 400] });
  }

  pipelined(): void {
    const r = this.r;
    const count = r.between(2, 6);
    const requests: Buffer[] = [];
    for (let k = 0; k < count; k++) {
      const route = r.pick(BODY_ROUTES);
      const { text } = brokenJson(r, render(this.validBody(route)));
      requests.push(rawRequest('POST', route.path, bodyHeaders(r.chance(0.3) ? 'Bearer nope' : AUTH[route.role], route, r, text), text));
    }
    this.add({
      category: 'pipelined',
      route: 'several',
      what: `${count} malformed requests in one write`,
      transport: 'fresh',
      parts: [{ data: Buffer.concat(requests) }],
      expect: [400, 401, 413],
      answers: count,
    });
  }
}

/** How many cases of each category: about 10,600 in all. */
function generate(seed: number): Case[] {
  const r = new Rng(seed);
  const g = new Generator(r);
  const plan: Array<[number, () => void]> = [
    [1400, () => g.bodyFault('broken-json')],
    [1400, () => g.bodyFault('wrong-types')],
    [700, () => g.bodyFault('huge-numbers')],
    [300, () => g.queryFault('huge-numbers')],
    [500, () => g.bodyFault('unicode-ids')],
    [400, () => g.queryFault('unicode-ids')],
    [300, () => g.unicodeHeaders()],
    [900, () => g.bodyFault('invalid-values')],
    [900, () => g.queryFault('bad-query-or-path')],
    [800, () => g.missingHeaders()],
    [600, () => g.badAuth()],
    [500, () => g.duplicatedHeaders()],
    [300, () => g.hugeHeaders()],
    [300, () => g.hugeBodies()],
    [400, () => g.wrongMethod()],
    [120, () => g.truncatedBody()],
    [120, () => g.slowBody()],
    [60, () => g.slowHeaders()],
    [150, () => g.invalidChunked()],
    [150, () => g.framingRefused()],
    [100, () => g.unparsable()],
    [80, () => g.headerBlockBeyondLimit()],
    [60, () => g.duplicatedContentLength()],
    [60, () => g.pipelined()],
  ];
  for (const [count, make] of plan) for (let k = 0; k < count; k++) make();
  // Interleave the keep-alive cases so that every connection sees every kind.
  const keepAlive = g.cases.filter((c) => c.transport === 'keep-alive');
  for (let k = keepAlive.length - 1; k > 0; k--) {
    const j = r.int(k + 1);
    [keepAlive[k], keepAlive[j]] = [keepAlive[j]!, keepAlive[k]!];
  }
  return [...keepAlive, ...g.cases.filter((c) => c.transport === 'fresh')];
}

// ---- checking the answers ----

/** What is wrong with an answer by the contract, or null. */
function contractProblem(answer: RawAnswer, noBody: boolean): string | null {
  if (answer.status < 400 || answer.status > 499) return `status ${answer.status}`;
  if (noBody) return answer.body === '' ? null : 'a HEAD answer with a body';
  if (answer.headers['content-type']?.[0] !== 'application/json') return `Content-Type ${answer.headers['content-type']?.[0]}`;
  let json: any;
  try {
    json = JSON.parse(answer.body);
  } catch {
    return `a body that is not JSON: ${answer.body.slice(0, 80)}`;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return 'a body that is not an object';
  const extra = Object.keys(json).filter((key) => key !== 'error' && key !== 'code' && key !== 'details');
  if (extra.length > 0) return `unexpected keys ${extra.join(', ')}`;
  if (typeof json.error !== 'string' || json.error === '') return 'no error message';
  if (typeof json.code !== 'string') return 'no code';
  if (CODE_STATUS[json.code] !== answer.status) return `code ${json.code} with status ${answer.status}`;
  if (json.details !== undefined) {
    if (!Array.isArray(json.details)) return 'details is not an array';
    for (const detail of json.details) {
      if (typeof detail !== 'object' || detail === null || typeof detail.field !== 'string' || typeof detail.message !== 'string' || Object.keys(detail).length !== 2) {
        return `a malformed detail ${JSON.stringify(detail)}`;
      }
    }
  }
  return null;
}

interface Tally {
  total: number;
  byCategory: Record<string, number>;
  byStatus: Record<string, number>;
  byCategoryStatus: Record<string, Record<string, number>>;
  routes: Set<string>;
  failures: string[];
  fiveHundreds: number;
}

function record(tally: Tally, c: Case, outcome: string, problem: string | null): void {
  tally.total++;
  tally.byCategory[c.category] = (tally.byCategory[c.category] ?? 0) + 1;
  tally.byStatus[outcome] = (tally.byStatus[outcome] ?? 0) + 1;
  const perCategory = (tally.byCategoryStatus[c.category] ??= {});
  perCategory[outcome] = (perCategory[outcome] ?? 0) + 1;
  tally.routes.add(c.route);
  if (/^5\d\d/.test(outcome)) tally.fiveHundreds++;
  if (problem !== null) tally.failures.push(`#${c.id} [${c.category}] ${c.route}: ${c.what} -> ${problem}`);
}

function judgeFresh(tally: Tally, c: Case, result: RawResult): void {
  const describe = () => `answers ${result.answers.map((a) => `${a.status} ${a.body.slice(0, 100)}`).join(' | ') || 'none'}, closed ${result.closedByServer}, ${result.elapsedMs} ms`;
  if (c.closed !== undefined) {
    if (result.answers.length > 0 || !result.closedByServer)
      return record(tally, c, result.answers[0] ? String(result.answers[0].status) : 'no close', `expected a close without an answer; got ${describe()}`);
    // "At once": the refusal does not wait for any timer (BODY_TIMEOUT_MS is 5 s, the idle timeout at least 8 s).
    if (c.closed === 'at-once' && result.elapsedMs > 3_000) return record(tally, c, 'closed (late)', `expected a close at once; got ${describe()}`);
    if (c.closed === 'idle-timeout' && result.elapsedMs < 7_000) return record(tally, c, 'closed (early)', `expected the close of the idle timeout (8 to 12 s); got ${describe()}`);
    return record(tally, c, c.closed === 'at-once' ? 'closed at once (uWS)' : 'closed after idle timeout (uWS)', null);
  }
  if (result.answers.length === 0) {
    if (c.orClosed === true && result.closedByServer && result.elapsedMs < 3_000) return record(tally, c, 'closed at once (uWS)', null);
    return record(tally, c, result.timedOut ? 'no answer' : 'closed without answer', `expected ${c.expect.join('/')}; got ${describe()}`);
  }
  const wanted = c.answers ?? 1;
  if (result.answers.length < wanted) return record(tally, c, String(result.answers[0]!.status), `expected ${wanted} answers; got ${describe()}`);
  for (const answer of result.answers.slice(0, wanted)) {
    const problem = contractProblem(answer, c.noBody === true) ?? (c.expect.includes(answer.status) ? null : `status ${answer.status}, expected ${c.expect.join('/')}: ${answer.body.slice(0, 160)}`);
    record(tally, c, String(answer.status), problem); // a pipelined case counts once per request
  }
  if (c.expect.includes(408)) {
    // The bound (BODY_TIMEOUT_MS 5 s, swept every 0.5 s), and the connection closed with it.
    if (result.elapsedMs < 4_500 || result.elapsedMs > 7_500) tally.failures.push(`#${c.id} [${c.category}] 408 after ${result.elapsedMs} ms, outside 5 to 7.5 s`);
    if (!result.closedByServer) tally.failures.push(`#${c.id} [${c.category}] the connection stayed open after the 408`);
  }
}

// ---- the test ----

let venue: VenueProcess;
let port: number;

before(async () => {
  venue = await VenueProcess.start({ COMPETITION_PROFILE: 'fuzz', ADMIN_MAX_BODY_BYTES: String(ADMIN_MAX_BODY) });
  port = Number(new URL(venue.baseUrl).port);
  for (let k = 0; ; k++) {
    if ((await venue.get('/readyz')).status === 200) break;
    assert.ok(k < 600, 'the venue never became ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});

after(async () => {
  assert.equal(await venue.stop(), 0, 'the venue stopped cleanly after the fuzz');
});

/** 100 triples on ten instruments (one chain each): A rests a BUY, B sells 4 into it, A cancels the rest. */
async function validLoad(): Promise<{ commands: number; problems: string[] }> {
  const problems: string[] = [];
  let commands = 0;
  const check = (what: string, condition: boolean, answer: { status: number; text: string }) => {
    if (!condition) problems.push(`${what}: ${answer.status} ${answer.text.slice(0, 300)}`);
  };
  const chains = Array.from({ length: 10 }, async (_, chain) => {
    const instrumentId = `a1100000-0000-4000-8000-0000000000${String(chain).padStart(2, '0')}`;
    for (let k = 0; k < 10; k++) {
      const price = `${100 + k}.25`;
      const buy = submitBody({ instrumentId, side: 'BUY', price, quantity: '10' });
      const buyAnswer = await venue.order('/api/v1/orders/submit', buy, { clientId: 'valid-load' });
      commands++;
      check('buy', buyAnswer.status === 200 && buyAnswer.json?.outcome?.accepted?.orderId === buy.orderId && buyAnswer.json.executions.length === 0, buyAnswer);
      if (buyAnswer.status === 200) assertShape('ResultEnvelope', buyAnswer.json);
      const sell = submitBody({ instrumentId, side: 'SELL', price, quantity: '4', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId });
      const sellAnswer = await venue.order('/api/v1/orders/submit', sell, { token: TOKENS.traderB, clientId: 'valid-load' });
      commands++;
      const trade = sellAnswer.json?.trades?.[0];
      check(
        'sell',
        sellAnswer.status === 200 &&
          sellAnswer.json.outcome?.accepted?.orderId === sell.orderId &&
          sellAnswer.json.executions.length === 2 &&
          sellAnswer.json.trades.length === 1 &&
          trade.buyOrderId === buy.orderId &&
          trade.sellOrderId === sell.orderId &&
          trade.quantity.units === '4' &&
          trade.price.nanos === String((100 + k) * 1e9 + 250_000_000),
        sellAnswer,
      );
      const cancel = cancelBody({ orderId: buy.orderId as string, instrumentId });
      const cancelAnswer = await venue.order('/api/v1/orders/cancel', cancel, { clientId: 'valid-load' });
      commands++;
      check('cancel', cancelAnswer.status === 200 && cancelAnswer.json?.outcome?.accepted?.orderId === buy.orderId, cancelAnswer);
    }
    // Every order filled or cancelled: the book is empty once the depth view caught up (bounded).
    for (let attempt = 0; ; attempt++) {
      const depth = await venue.get(`/api/v1/market-data/depth/${instrumentId}`, TOKENS.viewer);
      const empty = depth.status === 404 || (depth.status === 200 && depth.json.bids.length === 0 && depth.json.asks.length === 0);
      if (empty || attempt === 100) {
        check(`depth of ${instrumentId} empty`, empty, depth);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
  await Promise.all(chains);
  return { commands, problems };
}

test(`fuzz: more than 10,000 malformed requests over every route are all refused with the contract's 4xx (seed ${SEED})`, async (t) => {
  t.diagnostic(`fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} node --import tsx --test test/faults/bad-input.test.ts)`);
  const cases = generate(SEED);
  const tally: Tally = { total: 0, byCategory: {}, byStatus: {}, byCategoryStatus: {}, routes: new Set(), failures: [], fiveHundreds: 0 };
  const started = Date.now();

  // Fresh connections: the long waits (idle timeout, body timeout) all at once, the rest 32 at a time.
  const fresh = cases.filter((c) => c.transport === 'fresh');
  const waiting = fresh.filter((c) => c.closed === 'idle-timeout' || c.expect.includes(408));
  const quick = fresh.filter((c) => !waiting.includes(c));
  const exchange = async (c: Case) => {
    const timeoutMs = c.closed === 'idle-timeout' ? 16_000 : c.expect.includes(408) ? 10_000 : 5_000;
    // A 408 is followed by the close: wait for it (an answer count that never comes).
    const result = await rawExchange(port, c.parts, { expectAnswers: c.expect.includes(408) ? 2 : (c.answers ?? 1), graceMs: 0, timeoutMs });
    judgeFresh(tally, c, result);
  };
  const waitingDone = Promise.all(waiting.map(exchange));
  const quickDone = (async () => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < quick.length) await exchange(quick[next++]!);
      }),
    );
  })();

  // Keep-alive connections: one request at a time each.
  const keepAlive = cases.filter((c) => c.transport === 'keep-alive');
  let next = 0;
  const keepAliveDone = Promise.all(
    Array.from({ length: 48 }, async () => {
      let connection = await RawConnection.open(port);
      while (next < keepAlive.length) {
        const c = keepAlive[next++]!;
        if (connection.closed) connection = await RawConnection.open(port);
        let answer: RawAnswer | null;
        try {
          answer = await connection.send(c.parts[0]!.data as Buffer, 10_000);
        } catch (error) {
          record(tally, c, 'no answer', (error as Error).message);
          connection = await RawConnection.open(port);
          continue;
        }
        if (answer === null) {
          record(tally, c, 'closed without answer', 'the venue closed a keep-alive connection without answering');
          continue;
        }
        const problem =
          contractProblem(answer, c.noBody === true) ?? (c.expect.includes(answer.status) ? null : `status ${answer.status}, expected ${c.expect.join('/')}: ${answer.body.slice(0, 200)}`);
        record(tally, c, String(answer.status), problem);
        if (answer.headers.connection?.includes('close')) {
          connection.close();
          connection = await RawConnection.open(port);
        }
      }
      connection.close();
    }),
  );

  const load = validLoad();
  await Promise.all([keepAliveDone, quickDone, waitingDone]);
  const fuzzMs = Date.now() - started;
  const { commands, problems } = await load;

  t.diagnostic(`${tally.total} malformed requests in ${fuzzMs} ms`);
  t.diagnostic(`by category: ${JSON.stringify(tally.byCategory)}`);
  t.diagnostic(`by outcome: ${JSON.stringify(tally.byStatus)}`);
  for (const [category, statuses] of Object.entries(tally.byCategoryStatus)) t.diagnostic(`  ${category}: ${JSON.stringify(statuses)}`);

  const seedNote = `(seed ${SEED}; replay with FUZZ_SEED=${SEED})`;
  if (tally.failures.length > 0) {
    const file = path.join(os.tmpdir(), `bad-input-failures-${SEED}.txt`);
    writeFileSync(file, `${tally.failures.join('\n')}\n`);
    t.diagnostic(`all ${tally.failures.length} failures: ${file}`);
  }
  assert.deepEqual(tally.failures.slice(0, 25), [], `${tally.failures.length} answers broke the contract ${seedNote}`);
  assert.equal(tally.fiveHundreds, 0, `5xx answers ${seedNote}`);
  assert.ok(tally.total >= 10_000, `only ${tally.total} malformed requests`);
  for (const category of CATEGORIES) assert.ok((tally.byCategory[category] ?? 0) > 0, `no ${category} case ran`);
  for (const route of [...BODY_ROUTES.map((r) => r.name), ...READ_ROUTES.map((r) => r.name)]) assert.ok(tally.routes.has(route), `route ${route} was never fuzzed`);

  // The valid load beside it: every answer exact.
  assert.deepEqual(problems, [], 'the valid load was disturbed by the fuzz');
  assert.equal(commands, 300);

  // Alive, and nothing malformed was captured: the command log holds exactly the valid load.
  assert.equal(venue.child.exitCode, null, 'the venue process exited');
  assert.equal((await venue.get('/healthz')).status, 200);
  assert.equal((await venue.get('/readyz')).status, 200);
  await venue.untilProjected();
  const status = await venue.get('/admin/v1/persistence/status', TOKENS.operator);
  assert.equal(status.json.journal.intakeRows, 300, 'commands captured besides the valid load');
  const errors = venue.log.split('\n').filter((line) => /"level":(50|60)/.test(line));
  assert.deepEqual(errors.slice(0, 5), [], 'the venue logged errors during the fuzz');
});

test('uWebSockets.js drops the bytes outside 0x21-0x7e at either end of a header value before the venue sees them (README "API decisions")', async () => {
  // Its parser trims "whitespace" as any byte below 33 compared as a signed char, so
  // bytes 0x80-0xff count too. The venue only ever sees the trimmed value: these are
  // the inputs the fuzz cannot expect a 4xx for, so they are pinned here instead.
  const instrumentId = 'a1200000-0000-4000-8000-000000000001';
  const body = submitBody({ instrumentId, side: 'BUY', price: '1', quantity: '1' });
  const text = JSON.stringify(body);
  const post = (headers: Array<[string, string | Buffer]>) =>
    rawExchange(port, [{ data: rawRequest('POST', '/api/v1/orders/submit', [['Host', 'x'], ['Content-Length', String(text.length)], ...headers], text) }], { timeoutMs: 5_000 });
  const key = `trim-${crypto.randomUUID()}`;
  const first = await post([
    ['Authorization', Buffer.from(`${AUTH.trader}\u2603`)],
    ['X-Client-Id', Buffer.from('\u00e9trim-client\u00e9')],
    ['Idempotency-Key', Buffer.from(`${key}\u200b`)],
    ['X-Processing-Mode', Buffer.from('\uff33\uff39\uff2e\uff23')],
  ]);
  assert.equal(first.answers[0]?.status, 200, first.answers[0]?.body);
  assert.equal(JSON.parse(first.answers[0]!.body).outcome.accepted.orderId, body.orderId);
  // Read back: the stored scope has the trimmed values, and the all-non-ASCII mode header counted as absent (the default, sync-result).
  const status = await venue.get(`/api/v1/commands/${body.commandId as string}`, TOKENS.operator);
  assert.equal(status.json.clientId, 'trim-client');
  assert.equal(status.json.idempotencyKey, key);
  assert.equal(status.json.processingMode, 'sync-result');
  // So the same request with the plain ASCII values is its replay, byte for byte.
  const replay = await post([
    ['Authorization', AUTH.trader],
    ['X-Client-Id', 'trim-client'],
    ['Idempotency-Key', key],
  ]);
  assert.equal(replay.answers[0]?.status, 200);
  assert.equal(replay.answers[0]!.body, first.answers[0]!.body);
  // Inside a value the bytes stay, and the value is refused (the fuzz's unicode cases).
  const inside = await post([
    ['Authorization', AUTH.trader],
    ['X-Client-Id', Buffer.from('trim\u00e9client')],
    ['Idempotency-Key', key],
  ]);
  assert.equal(inside.answers[0]?.status, 400);
  const cancel = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: body.orderId as string, instrumentId }));
  assert.equal(cancel.status, 200);
});

// ---- the second half: hostile values the schema's types admit ----

/** Values on the edge of what storage can hold: every control range, lone surrogates, bidi, astral and more. */
const HOSTILE_TEXT: readonly string[] = [
  'a\u0000b', // NUL: PostgreSQL's text and jsonb refuse it
  '\u0001',
  'x\u0008y',
  'tab\there',
  'line\nfeed',
  'cr\r',
  'esc\u001b[31m',
  '\u001f', // C0
  'del\u007f',
  '\u0080',
  'nel\u0085',
  '\u009f', // DEL and C1
  'lone\ud800',
  'x\udbff',
  '\udc00x',
  'swapped\ude00\ud83d', // lone surrogates
  '\u202eevil\u202c',
  '\u2066isolate\u2069',
  '\u200fmark', // bidi controls
  '😀',
  '𝄞astral𝄞', // astral characters
  '\u200bzero\u200dwidth',
  '\ufeffbom',
  '\uffff\ufdd0',
  'e\u0301', // invisible, noncharacters, combining
];

/** Identifier-like fields of the fuzz's kinds: clientOrderId (text64) and actorId (text128); reasons are free text. */
const IDENTIFIER_KINDS = new Set<Kind>(['text64', 'text128']);

/** NUL or a lone surrogate: what no text field, free or not, may hold. */
const storageCannotHold = (value: string) => value.includes('\u0000') || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(value);

/** 400, or the value is valid: the API contract's "Text that storage must hold". */
function hostileRefused(kind: Kind, value: string): boolean {
  if (storageCannotHold(value)) return true;
  if (typeof kind !== 'string' || !kind.startsWith('text')) return true; // ids, numbers, enums, dates: none of these values is one
  // eslint-disable-next-line no-control-regex -- control characters are the hostile input under test
  if (IDENTIFIER_KINDS.has(kind) && /[\u0000-\u001f\u007f-\u009f]/.test(value)) return true;
  const length = [...value].length;
  return length === 0 || length > Number(kind.slice(4));
}

/** The values a field of this kind gets: the hostile list, and for text its longest value and one past it, in code points and in bytes. */
function hostileValuesFor(kind: Kind): string[] {
  if (typeof kind !== 'string' || !kind.startsWith('text')) return [...HOSTILE_TEXT];
  const max = Number(kind.slice(4));
  return [...HOSTILE_TEXT, 'x'.repeat(max), '😀'.repeat(max), '€'.repeat(max), '😀'.repeat(max + 1), 'x'.repeat(max + 1)];
}

test('hostile values the schema admits, on every string field of every route: refused as the contract says or kept exactly; then orders, a stop and a restart work', async (t) => {
  const dir = VenueProcess.makeDataDir();
  let hostile = await VenueProcess.start({ DATA_DIR: dir, COMPETITION_PROFILE: 'fuzz' });
  const ready = async () => {
    for (let k = 0; (await hostile.get('/readyz')).status !== 200; k++) {
      assert.ok(k < 600, 'the venue never became ready');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  try {
    await ready();
    const r = new Rng(SEED);
    const problems: string[] = [];
    const orders = new Map<string, string>(); // orderId -> clientOrderId, for every submit with a hostile clientOrderId
    const facts = new Map<string, unknown>(); // factId -> payload, for every bundle accepted
    let sent = 0;
    const send = async (route: BodyRoute, body: Record<string, unknown>) => {
      sent++;
      return route.order ? hostile.order(route.path, body, { clientId: 'hostile' }) : hostile.request('POST', route.path, { token: TOKENS.operator, body: JSON.stringify(body) });
    };
    for (const route of BODY_ROUTES) {
      for (const [field, kind] of Object.entries(route.fields)) {
        if (kind === 'array') continue;
        const values = kind === 'object' ? HOSTILE_TEXT : hostileValuesFor(kind);
        for (const value of values) {
          // A payload carries the value as a string and as a key; any other field is the value.
          const placements: unknown[] = kind === 'object' ? [{ note: value, list: [1, value] }, { [value]: 'key' }] : [value];
          for (const placed of placements) {
            const body = route.base(r);
            setPath(body, field, placed);
            const refused = kind === 'object' ? storageCannotHold(value) : hostileRefused(kind, value);
            const answer = await send(route, body);
            const what = `${route.name} ${field}=${JSON.stringify(placed)}`;
            if (answer.status >= 500) problems.push(`${what}: ${answer.status} ${answer.text.slice(0, 200)}`);
            else if (refused) {
              if (answer.status !== 400 || !answer.json.details?.some((detail: { field: string }) => detail.field.startsWith(field)))
                problems.push(`${what}: expected a 400 naming ${field}, got ${answer.status} ${answer.text.slice(0, 200)}`);
            } else if (answer.status === 400) problems.push(`${what}: refused, though storage holds it: ${answer.text.slice(0, 200)}`);
            else if (route.name === 'submit') {
              if (answer.json?.outcome?.accepted === undefined) problems.push(`${what}: not accepted: ${answer.text.slice(0, 200)}`);
              else if (field === 'clientOrderId') orders.set(body.orderId as string, value);
            } else if (route.name === 'admin facts') {
              if (answer.status !== 200) problems.push(`${what}: ${answer.status} ${answer.text.slice(0, 200)}`);
              else facts.set((body.facts as { factId: string }[])[0]!.factId, placed);
            }
          }
        }
      }
      // Deep JSON in the route's body: 400 before anything recursive sees it.
      const deep = `{"${Object.keys(route.fields)[0]!.split('.')[0]}":${'['.repeat(2000)}${']'.repeat(2000)}}`;
      const answer = route.order ? await hostile.order(route.path, deep, { clientId: 'hostile' }) : await hostile.request('POST', route.path, { token: TOKENS.operator, body: deep });
      sent++;
      if (answer.status !== 400 || !/deeper than 32 levels/.test(answer.json?.error ?? '')) problems.push(`${route.name} deep JSON: ${answer.status} ${answer.text.slice(0, 200)}`);
    }
    // Path parameters and query values: 4xx, never 5xx.
    for (const route of READ_ROUTES) {
      const token = route.roles.includes('operator') ? TOKENS.operator : route.roles.includes('trader') ? TOKENS.traderA : TOKENS.viewer;
      for (const value of HOSTILE_TEXT) {
        const targets: string[] = [];
        if (route.paramStatus !== null) targets.push(route.path(percentEncode(value)));
        for (const name of Object.keys(route.query ?? {})) targets.push(`${route.path()}?${name}=${percentEncode(value)}`);
        for (const target of targets) {
          sent++;
          const answer = await hostile.request(route.method, target, { token });
          if (answer.status < 400 || answer.status > 404) problems.push(`${route.name} ${target}: ${answer.status} ${answer.text.slice(0, 200)}`);
        }
      }
    }
    t.diagnostic(`${sent} hostile requests; ${orders.size} orders and ${facts.size} fact bundles with hostile text accepted`);
    assert.deepEqual(problems.slice(0, 20), [], `${problems.length} answers broke the rules`);
    assert.ok(orders.size >= 12 && facts.size >= 20, 'the valid hostile values were accepted');

    const readBack = async (when: string) => {
      const history = await hostile.get(`/api/v1/orders/history?instrumentId=${FUZZ_INSTRUMENT}&limit=1000`, TOKENS.traderA);
      assert.equal(history.status, 200, history.text);
      const stored = new Map((history.json.rows as { orderId: string; clientOrderId: string | null }[]).map((row) => [row.orderId, row.clientOrderId]));
      for (const [orderId, clientOrderId] of orders) assert.equal(stored.get(orderId), clientOrderId, `${when}: the clientOrderId ${JSON.stringify(clientOrderId)} reads back exactly`);
      const trail = await hostile.get(`/api/v1/settlement/facts/${RUN_ID}`, TOKENS.operator);
      const payloads = new Map((trail.json.facts as { factId: string; payload: unknown }[]).map((fact) => [fact.factId, fact.payload]));
      for (const [factId, payload] of facts) assert.deepEqual(payloads.get(factId), payload, `${when}: a payload reads back exactly`);
    };
    const plainOrder = async (when: string) => {
      const body = submitBody({ instrumentId: FUZZ_INSTRUMENT, price: '1' });
      const answer = await hostile.order('/api/v1/orders/submit', body);
      assert.equal(answer.json?.outcome?.accepted?.orderId, body.orderId, `${when}: ${answer.text}`);
      const current = await hostile.get(`/api/v1/orders/current?instrumentId=${FUZZ_INSTRUMENT}&limit=1000`, TOKENS.traderA);
      assert.ok(
        (current.json.rows as { orderId: string }[]).some((row) => row.orderId === body.orderId),
        `${when}: a plain order shows in own orders`,
      );
    };
    await plainOrder('after the hostile values');
    await readBack('before a restart');
    await hostile.untilProjected();
    const status = await hostile.get('/admin/v1/persistence/status', TOKENS.operator);
    assert.equal(status.json.projections.quarantinedRows, 0, 'storage refused nothing the edge let through');
    assert.deepEqual(
      hostile.log
        .split('\n')
        .filter((line) => /"level":(50|60)/.test(line))
        .slice(0, 5),
      [],
      'nothing was logged at error level',
    );
    assert.equal(await hostile.stop(), 0, 'a graceful stop after the hostile values');
    hostile = await VenueProcess.start({ DATA_DIR: dir, COMPETITION_PROFILE: 'fuzz' });
    await ready();
    await readBack('after a restart');
    await plainOrder('after a restart');
  } finally {
    const code = await hostile.stop();
    VenueProcess.removeDataDir(dir);
    assert.equal(code, 0, 'the restarted venue stops cleanly');
  }
});
