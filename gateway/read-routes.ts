// The read plane's HTTP routes: market data, own orders and fills, the availability
// inventory and the snapshot loop's status. Each route authenticates, checks the role,
// validates its query (ajv schemas in read-schemas.ts, then ranges), and hands a typed
// request to the order flow's readPlane: depth, stored snapshots and the tape's recent
// pages are answered from shared memory in this thread (market-reads.ts), the rest by
// the read thread from PostgreSQL. Nothing here touches a shard: reads never stall matching.

import type uWS from 'uWebSockets.js';
import { isUuid } from '../core/uuid.ts';
import { BAR_INTERVALS, SNAPSHOT_PROJECTION, SOURCE_PROJECTION, type BarInterval, type PlaneRead, type ReadPlaneAnswer } from '../core/storage-protocol.ts';
import { storageError } from './storage-client.ts';
import { type ErrorDetail, RETRY_HEADERS, type SendAnswer, sendError, sendPlaneAnswer } from './error-catalog.ts';
import type { Permission, Principal } from './principals.ts';
import type { QueryName } from './read-schemas.ts';
import type { RequestValidator } from './validation.ts';

export const DEPTH_LEVELS_DEFAULT = 5;
export const DEPTH_LEVELS_MAX = 50;
export const TAPE_LIMIT_DEFAULT = 100;
export const TAPE_LIMIT_MAX = 500;
export const OWN_LIMIT_DEFAULT = 100;
export const OWN_LIMIT_MAX = 1000;
export const BARS_DEFAULT_COUNT = 60;
export const BARS_MAX_COUNT = 1440;

export interface ReadRouteDependencies {
  validator: RequestValidator;
  admit: (res: uWS.HttpResponse, req: uWS.HttpRequest, permission: Permission) => Principal | null;
  /** Answers 405 to the other methods on `path`. */
  onlyMethod: (path: string, method: 'GET' | 'POST') => void;
  /** A SendAnswer for `res`, which writes a whole answer (corked), also after the handler returned (counted under the route the request reached). */
  sender: (res: uWS.HttpResponse) => SendAnswer;
  read: (read: PlaneRead) => Promise<ReadPlaneAnswer>;
}

/** A query string as a flat object; a repeated parameter is a 400 of its own. */
function parseQuery(raw: string | undefined): { query: Record<string, string>; details: ErrorDetail[] } {
  const query: Record<string, string> = {};
  const details: ErrorDetail[] = [];
  for (const [name, value] of new URLSearchParams(raw ?? '')) {
    if (name in query) details.push({ field: name, message: `${name} is given more than once` });
    query[name] = value;
  }
  return { query, details };
}

function count(value: string | undefined, fallback: number, min: number, max: number, field: string, details: ErrorDetail[]): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (n < min || n > max) details.push({ field, message: `${field} must be between ${min} and ${max}` });
  return n;
}

export function registerReadRoutes(app: uWS.TemplatedApp, deps: ReadRouteDependencies): void {
  const { validator, admit } = deps;

  /**
   * One read route: admit, parse and validate the query, build the request (which may
   * add range problems), ask the read thread. A request is built only when valid.
   */
  const route = (
    method: 'get' | 'post',
    path: string,
    permission: Permission,
    queryName: QueryName | null,
    build: (query: Record<string, string>, param: (index: number) => string, principal: Principal, details: ErrorDetail[]) => PlaneRead | null,
  ) => {
    app[method](path, (res, req) => {
      const principal = admit(res, req, permission);
      if (principal === null) return;
      const send = deps.sender(res);
      const { query, details } = parseQuery(req.getQuery());
      if (queryName !== null) details.push(...validator.validateQuery(queryName, query));
      else if (Object.keys(query).length > 0) details.push({ field: Object.keys(query)[0]!, message: 'this route takes no query parameters' });
      const params: string[] = [];
      for (let index = 0; path.split(':').length - 1 > index; index++) params.push(req.getParameter(index) ?? '');
      const read = details.length === 0 ? build(query, (index) => params[index]!, principal, details) : null;
      if (read === null || details.length > 0) {
        sendError(send, 'VALIDATION_FAILED', undefined, details);
        return;
      }
      const aborted = { value: false };
      res.onAborted(() => (aborted.value = true));
      deps.read(read).then(
        (answer) => {
          if (!aborted.value) sendPlaneAnswer(answer, send);
        },
        (error: Error) => {
          if (!aborted.value) send(503, storageError(error), RETRY_HEADERS);
        },
      );
    });
    deps.onlyMethod(path, method === 'get' ? 'GET' : 'POST');
  };

  const instrument = (value: string, details: ErrorDetail[]): string => {
    if (!isUuid(value)) details.push({ field: 'instrumentId', message: 'instrumentId must be a UUID' });
    return value.toLowerCase();
  };

  route('get', '/api/v1/market-data/snapshots/:instrumentId', 'market-data', 'snapshot', (query, param, _principal, details) => ({
    kind: 'snapshot',
    instrumentId: instrument(param(0), details),
    projectionName: query.projectionName ?? SNAPSHOT_PROJECTION,
  }));

  route('post', '/api/v1/market-data/snapshots', 'market-data', 'refresh', (query, _param, principal) => ({
    kind: 'refresh',
    principalId: principal.principalId,
    projectionName: query.projectionName ?? SNAPSHOT_PROJECTION,
    sourceProjectionName: query.sourceProjectionName ?? SOURCE_PROJECTION,
    instrumentId: query.instrumentId?.toLowerCase() ?? null,
  }));

  route('get', '/api/v1/market-data/depth/:instrumentId', 'market-data', 'depth', (query, param, _principal, details) => ({
    kind: 'depth',
    instrumentId: instrument(param(0), details),
    levels: count(query.levels, DEPTH_LEVELS_DEFAULT, 1, DEPTH_LEVELS_MAX, 'levels', details),
  }));

  route('get', '/api/v1/market-data/trades/:instrumentId', 'market-data', 'tape', (query, param, _principal, details) => ({
    kind: 'tape',
    instrumentId: instrument(param(0), details),
    limit: count(query.limit, TAPE_LIMIT_DEFAULT, 1, TAPE_LIMIT_MAX, 'limit', details),
    before: query.before === undefined ? null : count(query.before, 0, 1, Number.MAX_SAFE_INTEGER, 'before', details),
  }));

  route('get', '/api/v1/market-data/bars/:instrumentId', 'market-data', 'bars', (query, param, _principal, details) => {
    const interval = (query.interval ?? '1m') as BarInterval;
    const seconds = BAR_INTERVALS[interval];
    const nowSeconds = Math.ceil(Date.now() / 1000 / seconds) * seconds;
    const end = query.end === undefined ? nowSeconds : Math.ceil(Date.parse(query.end) / 1000);
    const start = query.start === undefined ? end - BARS_DEFAULT_COUNT * seconds : Math.floor(Date.parse(query.start) / 1000 / seconds) * seconds;
    // The schema's date-time lets through what Date.parse cannot place (a leap second, an offset of "+01").
    if (Number.isNaN(end)) details.push({ field: 'end', message: 'end must be an RFC 3339 date-time the venue can place (no leap second; offsets as ±hh:mm)' });
    if (query.start !== undefined && Number.isNaN(start)) details.push({ field: 'start', message: 'start must be an RFC 3339 date-time the venue can place (no leap second; offsets as ±hh:mm)' });
    if (Number.isNaN(start) || Number.isNaN(end)) return null;
    if (start >= end) details.push({ field: 'start', message: 'start must be before end' });
    else if ((end - start) / seconds > BARS_MAX_COUNT) details.push({ field: 'end', message: `at most ${BARS_MAX_COUNT} ${interval} bars per request` });
    return { kind: 'bars', instrumentId: instrument(param(0), details), interval, start, end };
  });

  const own =
    (view: 'current' | 'history' | 'fills') =>
    (query: Record<string, string>, _param: (index: number) => string, principal: Principal, details: ErrorDetail[]): PlaneRead => {
      const participants = [...principal.participants.keys()].map((id) => id.toLowerCase());
      const instrumentId = query.instrumentId?.toLowerCase() ?? null;
      const limit = count(query.limit, OWN_LIMIT_DEFAULT, 1, OWN_LIMIT_MAX, 'limit', details);
      return view === 'fills' ? { kind: 'fills', participants, instrumentId, limit } : { kind: 'orders', view, participants, instrumentId, limit };
    };
  route('get', '/api/v1/orders/current', 'own-reads', 'own', own('current'));
  route('get', '/api/v1/orders/history', 'own-reads', 'own', own('history'));
  route('get', '/api/v1/orders/fills', 'own-reads', 'own', own('fills'));

  route('get', '/api/v1/data/availability', 'public', null, () => ({ kind: 'availability' }));
  route('get', '/internal/market-data/projector/status', 'market-data', null, () => ({ kind: 'projector-status' }));
}
