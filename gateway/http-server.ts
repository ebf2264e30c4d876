// The HTTP surface of one gateway thread on uWebSockets.js: routes, authentication,
// body reading with a size bound, validation, authorization, then the order flow.
// Check order (API contract): authentication 401, role 403, size 413, shape 400,
// participant/account 403, then idempotency and the engine.

import { isUtf8 } from 'node:buffer';
import uWS from 'uWebSockets.js';
import { PROCESSING_MODES, type ProcessingMode, type VenueConfig } from '../core/config.ts';
import { errorBody, type ErrorCode, ERRORS, type ErrorDetail, serverErrorBody, STATUS_LINES } from './error-catalog.ts';
import { fail, invalid, type Reply } from './answers.ts';
import type { OrderFlow } from './order-flow.ts';
import type { HttpMetrics } from './http-metrics.ts';
import type { MetricsExposition } from './metrics-exposition.ts';
import { OUTCOME_ACCEPTED } from '../core/venue-metrics.ts';
import { mayActFor, type Permission, type Principal, type Principals } from './principals.ts';
import type { SessionRegistry } from './sessions.ts';
import { ROLL_FAILED, rollSession, type SessionSwitches } from './session-roll.ts';
import { STREAM_PATH, type MarketStream } from './market-stream.ts';
import { registerReadRoutes } from './read-routes.ts';
import { registerSettlementRoutes } from './settlement-routes.ts';
import { storageError } from './storage-client.ts';
import { embeddedStorage, embeddedStorageProblem } from './storage-state.ts';
import { renderAudit } from './audit-view.ts';
import { parseJsonBody } from './text-rules.ts';
import { ROUTE_CANCEL, ROUTE_CANCEL_BY_CLIENT_ORDER, ROUTE_MODIFY, ROUTE_SUBMIT } from './status-view.ts';
import type { CancelByClientOrderBody, OrderRoute, RequestValidator, SubmitBody, TargetBody } from './validation.ts';

const JSON_HEADERS = { 'Content-Type': 'application/json' };
const REBUILD_FAILED = 'the rebuild did not finish; retry later';
const STATUS_FAILED = 'the persistence thread did not answer; retry shortly';
const HEADER_VALUE_MAX = 128;
const NO_SUCH_COMMAND = 'no such command';
const bodyTooLarge = (maxBytes: number) => `the body may not exceed ${maxBytes} bytes`;

export interface HttpDependencies {
  config: VenueConfig;
  flow: OrderFlow;
  principals: Principals;
  validator: RequestValidator;
  sessions: SessionRegistry;
  /** The session roll's relay to the other gateways (gateway/session-roll.ts). */
  switches: SessionSwitches;
  openApiJson: string;
  /** Venue control words: [0] ready, [1] draining. */
  venueControl: Int32Array;
  /** This thread's answer counters (gateway/http-metrics.ts). */
  metrics: HttpMetrics;
  /** What GET /metrics writes, built at the first scrape (gateway/metrics-exposition.ts). */
  exposition: () => MetricsExposition;
  /** The market-data stream's upgrade route (gateway/market-stream.ts); none in apps built without it. */
  stream?: MarketStream;
}

/** This thread's counters: one app per gateway thread, so one per module. */
let metrics: HttpMetrics;

/** A uWebSockets.js response behind the Reply interface: answers once, never after an abort. */
class UwsReply implements Reply {
  aborted = false;
  private done = false;
  /** The route the request reached, fixed at arrival: the answer may come later, in another handler's turn. */
  private readonly route = metrics.active;
  /** An order command's processing mode and arrival (µs since the epoch), once its body is read and valid: it is timed from then. */
  mode = -1;
  arrivedUs = 0;
  outcome = OUTCOME_ACCEPTED;

  /** `commandRoute`: the order route's code (gateway/status-view.ts ROUTE_*), or -1 for any other request. */
  constructor(
    private readonly res: uWS.HttpResponse,
    private readonly commandRoute = -1,
  ) {
    res.onAborted(() => {
      this.aborted = true;
    });
  }

  /** `closeConnection`: close the connection once the answer is written (uWS ignores a Connection header we write). */
  send(status: number, body: string | Uint8Array, headers: Record<string, string> = JSON_HEADERS, closeConnection = false): void {
    if (this.aborted || this.done) return;
    this.done = true;
    metrics.answered(this.route, status);
    if (this.commandRoute >= 0) metrics.command(this.commandRoute, this.mode, status, this.outcome, this.arrivedUs);
    this.res.cork(() => {
      this.res.writeStatus(STATUS_LINES[status] ?? `${status} Status`);
      for (const name in headers) this.res.writeHeader(name, headers[name]!);
      endAnswer(this.res, body, closeConnection);
    });
  }
}

/**
 * Ends an answer with tryEnd rather than end. end() buffers whatever the socket cannot
 * take, without bound: a client that pipelines requests and never reads grew the venue
 * by 5 GB in 6 s (GET /api/v1/openapi.json) and starved /healthz for 21 s. With tryEnd
 * the rest of an answer waits here and goes out on writable, and uWS closes a
 * connection whose next request arrives while an answer is still pending: such a
 * client is cut off once its socket's send buffer is full.
 */
export function endAnswer(res: uWS.HttpResponse, body: string | Uint8Array, closeConnection: boolean): void {
  if (closeConnection) {
    res.end(body, true); // a small error answer; tryEnd cannot close
    return;
  }
  const size = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  const [written, done] = res.tryEnd(body, size);
  if (written || done) return;
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  res.onAborted(() => undefined); // required while an answer is pending; an earlier handler is no longer needed
  res.onWritable((offset) => res.tryEnd(bytes.subarray(offset), size)[0]);
}

/** `route`: the route to count the answer under; by default the handler's running now (an answer written later must name its own). */
function sendNow(res: uWS.HttpResponse, status: number, body: string | Uint8Array, headers: Record<string, string> = JSON_HEADERS, route = metrics.active): void {
  metrics.answered(route, status);
  res.cork(() => {
    res.writeStatus(STATUS_LINES[status] ?? `${status} Status`);
    for (const name in headers) res.writeHeader(name, headers[name]!);
    endAnswer(res, body, false);
  });
}

/** Every 503 tells the client when to come back. */
const RETRY_HEADERS: Record<string, string> = { ...JSON_HEADERS, 'Retry-After': '1' };

/** An error answer written at once: the code's status and body (`message` defaults to the code's own). */
function failNow(res: uWS.HttpResponse, code: ErrorCode, message?: string, details?: ErrorDetail[]): void {
  const status = ERRORS[code].status;
  sendNow(res, status, errorBody(code, message, details), status === 503 ? RETRY_HEADERS : JSON_HEADERS);
}

/** A catch-all answer (404, 405). HEAD gets the status line and headers only (RFC 9110): a body would desynchronize a keep-alive client. */
function refuse(res: uWS.HttpResponse, req: uWS.HttpRequest, code: ErrorCode, message?: string): void {
  if (req.getMethod() === 'head') sendNow(res, ERRORS[code].status, '');
  else failNow(res, code, message);
}

const ORDER_ROUTES: Array<[string, OrderRoute, number]> = [
  ['/api/v1/orders/submit', 'submit', ROUTE_SUBMIT],
  ['/api/v1/orders/cancel', 'cancel', ROUTE_CANCEL],
  ['/api/v1/orders/modify', 'modify', ROUTE_MODIFY],
  ['/api/v1/orders/cancel-by-client-order', 'cancel-by-client-order', ROUTE_CANCEL_BY_CLIENT_ORDER],
];

export function buildApp(deps: HttpDependencies): uWS.TemplatedApp {
  const { config, flow, principals, validator, sessions, venueControl } = deps;
  metrics = deps.metrics;
  const app = uWS.App();
  metrics.countRoutes(app);
  /** A Send for an answer that may be written after the handler returned: counted under the route the request reached. */
  const sender = (res: uWS.HttpResponse) => {
    const route = metrics.active;
    return (status: number, body: string | Uint8Array, headers?: Record<string, string>) => sendNow(res, status, body, headers, route);
  };

  /** Any other method on a served path is 405 (the resource exists; RFC 9110), not the catch-all's 404. */
  const onlyMethod = (path: string, method: 'GET' | 'POST') => app.any(path, (res, req) => refuse(res, req, 'METHOD_NOT_ALLOWED', `${path.replace(/:(\w+)/g, '{$1}')} takes ${method} only`));

  /** Authenticates and checks the role; answers and returns null on failure. */
  const admit = (res: uWS.HttpResponse, req: uWS.HttpRequest, permission: Permission): Principal | null => {
    const principal = principals.authenticate(req.getHeader('authorization'));
    if (principal === null) {
      failNow(res, 'UNAUTHENTICATED');
      return null;
    }
    if (!principal.permissions.has(permission)) {
      failNow(res, 'FORBIDDEN', `the ${[...principal.roles].join('/')} role may not use this route`);
      return null;
    }
    return principal;
  };

  app.get('/healthz', (res) => sendNow(res, 200, '{"status":"ok"}'));
  onlyMethod('/healthz', 'GET');
  app.get('/readyz', (res) => {
    if (Atomics.load(venueControl, 1) === 1) failNow(res, 'UNAVAILABLE', 'the venue is shutting down');
    else if (Atomics.load(venueControl, 0) !== 1) failNow(res, 'UNAVAILABLE', 'the venue is starting');
    else if (flow.storageDown) failNow(res, 'UNAVAILABLE', embeddedStorageProblem(venueControl) ?? 'storage is unavailable; commands are refused until it is back');
    else if (flow.haltedShards().length > 0)
      failNow(res, 'UNAVAILABLE', `shard ${flow.haltedShards().join(', ')} halted after an internal check failed (see the log): its commands are refused until the venue is restarted`);
    else sendNow(res, 200, '{"status":"ready"}');
  });
  onlyMethod('/readyz', 'GET');

  for (const [path, route, routeCode] of ORDER_ROUTES) {
    app.post(path, (res, req) => {
      if (Atomics.load(venueControl, 1) === 1 || Atomics.load(venueControl, 0) !== 1) {
        failNow(res, 'UNAVAILABLE', Atomics.load(venueControl, 1) === 1 ? 'the venue is shutting down' : 'the venue is starting (recovering its order books)');
        return;
      }
      const principal = admit(res, req, 'orders');
      if (principal === null) return;
      const clientId = req.getHeader('x-client-id');
      const idempotencyKey = req.getHeader('idempotency-key');
      const modeHeader = req.getHeader('x-processing-mode');
      const lengthHeader = req.getHeader('content-length');
      const declaredLength = Number(lengthHeader || '0');
      if (declaredLength > config.maxBodyBytes) {
        failNow(res, 'PAYLOAD_TOO_LARGE', bodyTooLarge(config.maxBodyBytes));
        return;
      }
      const reply = new UwsReply(res, routeCode);
      readBody(res, config.maxBodyBytes, lengthHeader, reply, (raw, rawBytes) => {
        const headerProblems = checkOrderHeaders(clientId, idempotencyKey, modeHeader);
        const parsed = parseJsonBody(raw);
        if (!parsed.ok) {
          fail(reply, 'VALIDATION_FAILED', parsed.message);
          return;
        }
        const result = validator.validate<SubmitBody | TargetBody | CancelByClientOrderBody>(route, parsed.value);
        const details = [...headerProblems, ...(result.ok ? [] : result.details)];
        if (!result.ok || details.length > 0) {
          invalid(reply, details);
          return;
        }
        const forbidden = authorizationProblem(principal, result.body);
        if (forbidden !== null) {
          fail(reply, 'FORBIDDEN', forbidden);
          return;
        }
        const mode = (modeHeader === '' ? config.processingMode : modeHeader) as ProcessingMode;
        // One clock read serves the intake record and the duration.
        const receivedAtUs = Math.round((performance.timeOrigin + performance.now()) * 1000);
        reply.mode = PROCESSING_MODES.indexOf(mode);
        reply.arrivedUs = receivedAtUs;
        flow.handle({
          route: routeCode,
          principal,
          clientId,
          idempotencyKey,
          mode,
          body: result.body,
          raw,
          rawBytes,
          priceNanos: result.priceNanos,
          quantityUnits: result.quantityUnits,
          receivedAtUs,
          reply,
        });
      });
    });
    onlyMethod(path, 'POST');
  }

  app.get('/api/v1/commands/:commandId', (res, req) => {
    const principal = admit(res, req, 'command-status-own');
    if (principal === null) return;
    const reply = new UwsReply(res);
    flow.statusView(req.getParameter(0), principal, principal.permissions.has('command-status-any')).then(
      (view) => (view === null ? fail(reply, 'NOT_FOUND', NO_SUCH_COMMAND) : reply.send(200, view)),
      (error: Error) => reply.send(503, storageError(error), { ...JSON_HEADERS, 'Retry-After': '1' }),
    );
  });
  onlyMethod('/api/v1/commands/:commandId', 'GET');

  app.get('/admin/v1/audit/commands/:commandId', (res, req) => {
    if (admit(res, req, 'admin') === null) return;
    const reply = new UwsReply(res);
    flow.audit(req.getParameter(0) ?? '').then(
      (record) => (record === null ? fail(reply, 'NOT_FOUND', NO_SUCH_COMMAND) : reply.send(200, renderAudit(record, principals))),
      (error: Error) => reply.send(503, storageError(error), RETRY_HEADERS),
    );
  });
  onlyMethod('/admin/v1/audit/commands/:commandId', 'GET');

  app.post('/admin/v1/projections/order-lifecycle/rebuild', (res, req) => {
    if (admit(res, req, 'admin') === null) return;
    const reply = new UwsReply(res);
    res.onData(() => undefined); // no body fields; whatever is sent is ignored
    flow.rebuildLifecycle().then(
      (answer) => (answer.ok ? reply.send(200, JSON.stringify(answer.payload)) : reply.send(503, serverErrorBody('UNAVAILABLE', answer.message, answer.cause), RETRY_HEADERS)),
      (error: Error) => reply.send(503, serverErrorBody('UNAVAILABLE', REBUILD_FAILED, error), RETRY_HEADERS),
    );
  });
  onlyMethod('/admin/v1/projections/order-lifecycle/rebuild', 'POST');

  app.get('/admin/v1/persistence/status', (res, req) => {
    if (admit(res, req, 'admin') === null) return;
    const reply = new UwsReply(res);
    flow.persistenceStatus().then(
      (answer) =>
        answer.ok
          ? reply.send(200, JSON.stringify({ ...(answer.payload as object), embeddedPostgres: embeddedStorage(venueControl), queues: flow.queueReport(), keyFilters: flow.keyFilterReport() }))
          : reply.send(503, serverErrorBody('UNAVAILABLE', answer.message, answer.cause), RETRY_HEADERS),
      (error: Error) => reply.send(503, serverErrorBody('UNAVAILABLE', STATUS_FAILED, error), RETRY_HEADERS),
    );
  });
  onlyMethod('/admin/v1/persistence/status', 'GET');

  app.post('/admin/v1/venue/sessions', (res, req) => {
    if (Atomics.load(venueControl, 1) === 1 || Atomics.load(venueControl, 0) !== 1) {
      failNow(res, 'UNAVAILABLE', Atomics.load(venueControl, 1) === 1 ? 'the venue is shutting down' : 'the venue is starting (recovering its order books)');
      return;
    }
    if (admit(res, req, 'admin') === null) return;
    const lengthHeader = req.getHeader('content-length');
    if (Number(lengthHeader || '0') > config.maxBodyBytes) {
      failNow(res, 'PAYLOAD_TOO_LARGE', bodyTooLarge(config.maxBodyBytes));
      return;
    }
    const reply = new UwsReply(res);
    readBody(res, config.maxBodyBytes, lengthHeader, reply, (raw) => {
      let body: { runId?: string; venueSessionId?: string } = {};
      if (raw.trim() !== '') {
        const parsed = parseJsonBody(raw);
        if (!parsed.ok) {
          fail(reply, 'VALIDATION_FAILED', parsed.message);
          return;
        }
        body = parsed.value as typeof body;
      }
      const details = validator.validateSessionRoll(body);
      if (details.length > 0) {
        invalid(reply, details);
        return;
      }
      if (flow.storageDown) {
        fail(reply, 'UNAVAILABLE', 'storage is unavailable: the session was not rolled');
        return;
      }
      rollSession(flow, deps.switches, { runId: body.runId ?? null, venueSessionId: body.venueSessionId ?? null }).then(
        (answer) => reply.send(answer.status, answer.body, answer.status === 503 ? RETRY_HEADERS : JSON_HEADERS),
        (error: Error) => reply.send(503, serverErrorBody('UNAVAILABLE', ROLL_FAILED, error), RETRY_HEADERS),
      );
    });
  });
  onlyMethod('/admin/v1/venue/sessions', 'POST');

  app.get('/api/v1/venue/session', (res, req) => {
    if (admit(res, req, 'public') === null) return;
    sendNow(res, 200, JSON.stringify(sessions.active));
  });
  onlyMethod('/api/v1/venue/session', 'GET');

  app.get('/api/v1/openapi.json', (res, req) => {
    if (admit(res, req, 'public') === null) return;
    sendNow(res, 200, deps.openApiJson);
  });
  onlyMethod('/api/v1/openapi.json', 'GET');

  app.get('/metrics', (res, req) => {
    if (admit(res, req, 'metrics') === null) return;
    const reply = new UwsReply(res);
    const exposition = deps.exposition();
    exposition.metrics().then(
      (text) => reply.send(200, text, { 'Content-Type': exposition.contentType }),
      (error: Error) => reply.send(503, serverErrorBody('UNAVAILABLE', 'the metrics could not be gathered; retry shortly', error), RETRY_HEADERS),
    );
  });
  onlyMethod('/metrics', 'GET');

  // Any authenticated role; 401 before the upgrade (API contract), 503 while the venue starts or stops.
  deps.stream?.register(app, (res, req) => {
    if (Atomics.load(venueControl, 1) === 1 || Atomics.load(venueControl, 0) !== 1) {
      failNow(res, 'UNAVAILABLE', Atomics.load(venueControl, 1) === 1 ? 'the venue is shutting down' : 'the venue is starting (recovering its order books)');
      return null;
    }
    const principal = principals.authenticate(req.getHeader('authorization'));
    if (principal === null) failNow(res, 'UNAUTHENTICATED');
    return principal;
  });
  if (deps.stream !== undefined) {
    // A GET without the upgrade headers falls through the WebSocket route to here.
    app.get(STREAM_PATH, (res, req) => {
      if (admit(res, req, 'public') === null) return;
      failNow(res, 'VALIDATION_FAILED', 'this route takes a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)');
    });
    onlyMethod(STREAM_PATH, 'GET');
  }

  registerReadRoutes(app, { validator, admit, onlyMethod, sender, read: (read) => flow.readPlane(read) });
  registerSettlementRoutes(app, {
    validator,
    admit,
    onlyMethod,
    send: sendNow,
    sender,
    read: (read) => flow.readPlane(read),
    adminMaxBodyBytes: config.adminMaxBodyBytes,
    competition: config.competitionProfile !== '',
    readJson: (res, max, lengthHeader, done) => {
      const reply = new UwsReply(res);
      readBody(res, max, lengthHeader, reply, (raw) => done(raw, (status, body, headers) => reply.send(status, body, headers ?? JSON_HEADERS)));
    },
  });

  // /internal/admin/... handlers are never reachable from the public listener.
  app.any('/internal/*', (res, req) => refuse(res, req, 'NOT_FOUND'));
  app.any('/*', (res, req) => refuse(res, req, 'NOT_FOUND'));
  return app;
}

/**
 * How long a request body may take to arrive once its headers are in. Past it: 408 and
 * the connection is closed. Without it uWebSockets.js would close a stalled body's
 * connection silently, 8 to 12 s after its headers (its HTTP idle timeout of 10 s,
 * checked every 4 s); this bound is shorter, so the client always gets the answer.
 */
export const BODY_TIMEOUT_MS = 5_000;
const BODY_SWEEP_MS = 500;

/** Bodies being read, with the sweep tick they started at: one timer per thread, not one per request. */
const bodyReads = new Map<() => void, number>();
let bodySweep: NodeJS.Timeout | null = null;
let bodyTick = 0;

function sweepBodies(): void {
  bodyTick++;
  for (const [expire, startedTick] of bodyReads) {
    if ((bodyTick - startedTick) * BODY_SWEEP_MS > BODY_TIMEOUT_MS) {
      bodyReads.delete(expire);
      expire();
    }
  }
  if (bodyReads.size === 0 && bodySweep !== null) {
    clearInterval(bodySweep);
    bodySweep = null;
  }
}

/**
 * Collects the body up to `max` bytes and hands it over as UTF-8 text; answers 400 if it
 * is not UTF-8, 413 beyond `max`, 408 if it is not in after BODY_TIMEOUT_MS (+ one sweep).
 */
function readBody(res: uWS.HttpResponse, max: number, lengthHeader: string, reply: UwsReply, done: (body: string, bytes: number) => void): void {
  // uWS never calls onData for "Content-Length: 0" when the headers came in more than one
  // read (found by the fuzz: such a request waited for the body timeout): nothing to wait for.
  if (/^0+$/.test(lengthHeader)) {
    done('', 0);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const expire = () => {
    if (finished) return;
    finished = true;
    reply.send(ERRORS.REQUEST_TIMEOUT.status, errorBody('REQUEST_TIMEOUT', `the body did not arrive within ${BODY_TIMEOUT_MS} ms`), JSON_HEADERS, true); // uWS writes Connection: close
  };
  bodyReads.set(expire, bodyTick);
  if (bodySweep === null) {
    bodySweep = setInterval(sweepBodies, BODY_SWEEP_MS);
    bodySweep.unref();
  }
  res.onData((chunk, isLast) => {
    if (finished) return;
    size += chunk.byteLength;
    if (size > max) {
      finished = true;
      bodyReads.delete(expire);
      fail(reply, 'PAYLOAD_TOO_LARGE', bodyTooLarge(max), { Connection: 'close' });
      return;
    }
    if (!isLast) {
      chunks.push(Buffer.from(chunk.slice(0))); // uWS reuses the chunk's memory after this call
      return;
    }
    finished = true;
    bodyReads.delete(expire);
    // The last chunk (for an order, the only one) is decoded in place, not copied first:
    // copying it into its own ArrayBuffer cost 0.45 µs of a request's 0.53 µs here.
    const last = Buffer.from(chunk);
    const whole = chunks.length === 0 ? last : Buffer.concat([...chunks, last]);
    // JSON text is UTF-8 (RFC 8259); decoding other bytes would store U+FFFD in their place.
    if (!isUtf8(whole)) {
      fail(reply, 'VALIDATION_FAILED', 'the body is not valid UTF-8');
      return;
    }
    done(whole.toString('utf8'), whole.byteLength);
  });
}

function checkOrderHeaders(clientId: string, idempotencyKey: string, mode: string): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const printable = /^[\x21-\x7e]+$/;
  if (clientId === '') details.push({ field: 'X-Client-Id', message: 'the X-Client-Id header is required' });
  else if (clientId.length > HEADER_VALUE_MAX || !printable.test(clientId)) {
    details.push({ field: 'X-Client-Id', message: `X-Client-Id must be 1 to ${HEADER_VALUE_MAX} visible ASCII characters` });
  }
  if (idempotencyKey === '') details.push({ field: 'Idempotency-Key', message: 'the Idempotency-Key header is required' });
  else if (idempotencyKey.length > HEADER_VALUE_MAX || !printable.test(idempotencyKey)) {
    details.push({ field: 'Idempotency-Key', message: `Idempotency-Key must be 1 to ${HEADER_VALUE_MAX} visible ASCII characters` });
  }
  if (mode !== '' && !(PROCESSING_MODES as readonly string[]).includes(mode)) {
    details.push({ field: 'X-Processing-Mode', message: `X-Processing-Mode must be one of ${PROCESSING_MODES.join(', ')}` });
  }
  return details;
}

/** The participant and account of the body must be the principal's. */
function authorizationProblem(principal: Principal, body: SubmitBody | TargetBody | CancelByClientOrderBody): string | null {
  if ('accountId' in body) {
    return mayActFor(principal, body.participantId, body.accountId) ? null : 'you may not act for this participant and account';
  }
  return mayActFor(principal, body.participantId) ? null : 'you may not act for this participant';
}
