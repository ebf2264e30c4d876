// The settlement plane's HTTP routes: the operator gateway (`POST /admin/v1/settlement/...`,
// operator role only, JSON bodies validated with ajv) and the reads
// (`GET /api/v1/settlement/{view}/{scenarioRunId}`: operators see everything, traders
// the rows of their own participants, viewers nothing). The work happens in the settlement
// pool the read thread owns (persistence/settlement-pool.ts, persistence/settlement-store.ts).

import type uWS from 'uWebSockets.js';
import type { PlaneRead, ReadPlaneAnswer, SettlementAdmin, SettlementRead } from '../core/storage-protocol.ts';
import { AGED_FAIL_AFTER_SECONDS_DEFAULT } from '../core/settlement/views.ts';
import { storageError } from './storage-client.ts';
import { type ErrorDetail, RETRY_HEADERS, type SendAnswer, sendError, sendPlaneAnswer } from './error-catalog.ts';
import type { Permission, Principal } from './principals.ts';
import type { SettlementBodyName } from './settlement-schemas.ts';
import { badFreeTextIn, parseJsonBody } from './text-rules.ts';
import type { RequestValidator } from './validation.ts';

const RUN_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export interface SettlementRouteDependencies {
  validator: RequestValidator;
  admit: (res: uWS.HttpResponse, req: uWS.HttpRequest, permission: Permission) => Principal | null;
  /** Answers 405 to the other methods on `path`. */
  onlyMethod: (path: string, method: 'GET' | 'POST') => void;
  send: (res: uWS.HttpResponse, status: number, body: string | Uint8Array, headers?: Record<string, string>) => void;
  /** A SendAnswer for `res` that may answer after the handler returned (counted under the route the request reached). */
  sender: (res: uWS.HttpResponse) => SendAnswer;
  /** Reads a whole body up to the bound (413 beyond it), then calls back (unless the client went away). */
  readJson: (res: uWS.HttpResponse, maxBytes: number, lengthHeader: string, done: (raw: string, answer: SendAnswer) => void) => void;
  read: (read: PlaneRead) => Promise<ReadPlaneAnswer>;
  adminMaxBodyBytes: number;
  /** COMPETITION_PROFILE set: the public leaderboard is served. */
  competition: boolean;
}

/** RFC 3339 to microseconds since the epoch; digits past the microsecond are dropped (facts compare at µs). */
export function rfc3339Micros(text: string): number | null {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})$/.exec(text);
  if (match === null) return null;
  const seconds = Date.parse(`${match[1]}${match[3] === 'z' ? 'Z' : match[3]}`);
  if (Number.isNaN(seconds)) return null;
  return seconds * 1000 + Number((match[2] ?? '').padEnd(6, '0').slice(0, 6));
}

const ADMIN_ROUTES: [string, SettlementBodyName][] = [
  ['/admin/v1/settlement/facts', 'facts'],
  ['/admin/v1/settlement/obligations/materialize', 'materialize'],
  ['/admin/v1/settlement/repairs/cash', 'repair-cash'],
  ['/admin/v1/settlement/repairs/security', 'repair-security'],
  ['/admin/v1/settlement/force-settle', 'force-settle'],
  ['/admin/v1/settlement/reverse-ledger-entry', 'reverse-ledger-entry'],
  ['/admin/v1/settlement/profiles', 'profiles'],
];

export const SETTLEMENT_VIEWS = ['facts', 'obligations', 'ledger', 'exceptions', 'proof', 'score'] as const;

/** The fields of the settlement bodies (SETTLEMENT_BODY_SCHEMAS); each route's schema says which its body has. */
interface SettlementBody {
  scenarioRunId: string;
  facts: { factId: string; factType: string; occurredAt: string; causationId?: string; payload: Record<string, unknown> }[];
  profile?: string;
  obligationId: string;
  amountNanos: string;
  currency: string;
  quantityUnits: string;
  reason: string;
  ledgerEntryId: string;
  scope: 'platform' | 'venueSession' | 'scenarioRun';
  scopeId?: string;
}

/** The validated body as the read thread's request; null (with details) when it cannot be one. */
function adminRequest(name: SettlementBodyName, body: SettlementBody, details: ErrorDetail[]): SettlementAdmin | null {
  switch (name) {
    case 'facts': {
      const facts = body.facts.map((fact, index) => {
        const occurredAtUs = rfc3339Micros(fact.occurredAt);
        if (occurredAtUs === null) details.push({ field: `facts.${index}.occurredAt`, message: 'occurredAt must be an RFC 3339 date-time' });
        const badText = badFreeTextIn(fact.payload, `facts.${index}.payload`);
        if (badText !== null) details.push({ field: badText, message: `${badText} must not contain U+0000 or a lone surrogate` });
        return { factId: String(fact.factId).toLowerCase(), factType: fact.factType, occurredAtUs: occurredAtUs ?? 0, causationId: fact.causationId?.toLowerCase() ?? null, payload: fact.payload };
      });
      return { action: 'facts', scenarioRunId: body.scenarioRunId, facts };
    }
    case 'materialize':
      return { action: 'materialize', scenarioRunId: body.scenarioRunId, profile: body.profile ?? null };
    case 'repair-cash':
      return { action: 'repair-cash', scenarioRunId: body.scenarioRunId, obligationId: body.obligationId.toLowerCase(), amountNanos: body.amountNanos, currency: body.currency };
    case 'repair-security':
      return { action: 'repair-security', scenarioRunId: body.scenarioRunId, obligationId: body.obligationId.toLowerCase(), quantityUnits: body.quantityUnits };
    case 'force-settle':
      return { action: 'force-settle', scenarioRunId: body.scenarioRunId, obligationId: body.obligationId.toLowerCase(), reason: body.reason };
    case 'reverse-ledger-entry':
      return { action: 'reverse-ledger-entry', scenarioRunId: body.scenarioRunId, ledgerEntryId: body.ledgerEntryId.toLowerCase(), reason: body.reason };
    case 'profiles':
      if ((body.scope === 'platform') !== (body.scopeId === undefined)) {
        details.push({ field: 'scopeId', message: body.scope === 'platform' ? 'the platform scope takes no scopeId' : `the ${body.scope} scope needs a scopeId` });
        return null;
      }
      return { action: 'profiles', scope: body.scope, scopeId: body.scopeId ?? null, profile: body.profile! }; // required by its schema
  }
}

export function registerSettlementRoutes(app: uWS.TemplatedApp, deps: SettlementRouteDependencies): void {
  const { validator, admit } = deps;
  const forward = (read: PlaneRead, answer: SendAnswer) =>
    deps.read(read).then(
      (result) => sendPlaneAnswer(result, answer),
      (error: Error) => answer(503, storageError(error), RETRY_HEADERS),
    );

  for (const [path, name] of ADMIN_ROUTES) {
    app.post(path, (res, req) => {
      if (admit(res, req, 'admin') === null) return;
      deps.readJson(res, deps.adminMaxBodyBytes, req.getHeader('content-length'), (raw, answer) => {
        const parsed = parseJsonBody(raw);
        if (!parsed.ok) {
          sendError(answer, 'VALIDATION_FAILED', parsed.message);
          return;
        }
        const body = parsed.value;
        const details = validator.validateSettlementBody(name, body);
        const request = details.length === 0 ? adminRequest(name, body as SettlementBody, details) : null; // validated: the schema's shape
        if (request === null || details.length > 0) {
          sendError(answer, 'VALIDATION_FAILED', undefined, details);
          return;
        }
        void forward({ kind: 'settlement-admin', admin: request }, answer);
      });
    });
    deps.onlyMethod(path, 'POST');
  }

  const views: SettlementRead['view'][] = [...SETTLEMENT_VIEWS, ...(deps.competition ? (['leaderboard'] as const) : [])];
  for (const view of views) {
    const path = `/api/v1/settlement/${view}/:scenarioRunId`;
    app.get(path, (res, req) => {
      // The leaderboard is public; the other reads are for operators, or traders for their own rows.
      const principal = admit(res, req, 'public');
      if (principal === null) return;
      const send = deps.sender(res);
      if (view !== 'leaderboard' && !principal.permissions.has('settlement') && !principal.permissions.has('own-reads')) {
        sendError(send, 'FORBIDDEN', `the ${[...principal.roles].join('/')} role may not read settlement evidence`);
        return;
      }
      const scenarioRunId = req.getParameter(0) ?? '';
      const query: Record<string, string> = {};
      const details: ErrorDetail[] = [];
      for (const [key, value] of new URLSearchParams(req.getQuery() ?? '')) {
        if (key in query) details.push({ field: key, message: `${key} is given more than once` });
        query[key] = value;
      }
      if (!RUN_ID.test(scenarioRunId)) details.push({ field: 'scenarioRunId', message: 'scenarioRunId must match [A-Za-z0-9._:-]{1,64}' });
      if (view === 'score' || view === 'leaderboard') details.push(...validator.validateQuery('score', query));
      else if (Object.keys(query).length > 0) details.push({ field: Object.keys(query)[0]!, message: 'this route takes no query parameters' });
      // The schema's date-time lets through what rfc3339Micros cannot place (a leap second, an offset of "+01"): refused, not read as "now".
      if (details.length === 0 && query.asOf !== undefined && rfc3339Micros(query.asOf) === null)
        details.push({ field: 'asOf', message: 'asOf must be an RFC 3339 date-time (YYYY-MM-DDThh:mm:ss[.fraction] with Z or ±hh:mm)' });
      if (details.length > 0) {
        sendError(send, 'VALIDATION_FAILED', undefined, details);
        return;
      }
      const asOfUs = query.asOf === undefined ? null : rfc3339Micros(query.asOf);
      const aged = query.agedFailAfterSeconds === undefined ? AGED_FAIL_AFTER_SECONDS_DEFAULT : Number(query.agedFailAfterSeconds);
      const participants = view === 'leaderboard' || principal.permissions.has('settlement') ? null : [...principal.participants.keys()].map((id) => id.toLowerCase());
      let aborted = false;
      res.onAborted(() => (aborted = true));
      void forward({ kind: 'settlement-read', read: { view, scenarioRunId, participants, asOfUs, agedFailAfterSeconds: aged } }, (status, body, headers) => {
        if (!aborted) send(status, body, headers);
      });
    });
    deps.onlyMethod(path, 'GET');
  }
}
