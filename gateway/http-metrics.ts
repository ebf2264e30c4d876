// What one gateway thread counts of its answers, into its own region of the shared
// metrics block (core/venue-metrics.ts): every answer by route and status, and each
// order command by outcome with its arrival-to-answer time. Route indices are fixed
// when the routes are registered; recording is two or three array stores.

import type uWS from 'uWebSockets.js';
import { GatewayCounters, OUTCOME_CONFLICT, OUTCOME_INVALID, OUTCOME_UNAVAILABLE, ROUTES_MAX, STATUS_SLOTS } from '../core/venue-metrics.ts';
import { STATUS_LINES } from './error-catalog.ts';

/** The route label of a request no registered pattern matched but the catch-all. */
export const UNMATCHED_ROUTE = 'unmatched';

/** Every status the venue answers with, by slot; the last slot counts any other. */
export const STATUS_LABELS: readonly string[] = [
  ...Object.keys(STATUS_LINES)
    .map(Number)
    .sort((a, b) => a - b)
    .map(String),
  'other',
];
if (STATUS_LABELS.length > STATUS_SLOTS) throw new Error(`${STATUS_LABELS.length} statuses exceed the metrics' ${STATUS_SLOTS} slots`);
const OTHER_STATUS = STATUS_LABELS.length - 1;
const STATUS_SLOT = new Uint8Array(600).fill(OTHER_STATUS);
STATUS_LABELS.forEach((label, slot) => {
  if (slot !== OTHER_STATUS) STATUS_SLOT[Number(label)] = slot;
});

function statusSlot(status: number): number {
  return status >= 0 && status < 600 ? STATUS_SLOT[status]! : OTHER_STATUS;
}

/** An order command's outcome by its answer's status, unless the answer was marked (rejected, replayed). */
function outcomeOf(status: number, marked: number): number {
  if (status === 200 || status === 202) return marked;
  if (status === 409) return OUTCOME_CONFLICT;
  if (status >= 500) return OUTCOME_UNAVAILABLE;
  return OUTCOME_INVALID;
}

export class HttpMetrics {
  private readonly counters: GatewayCounters;
  /** Route labels by index, in registration order (the same in every gateway thread). */
  readonly routes: string[] = [];
  /** The route of the handler running now: answers written within it count under it. */
  active = 0;

  constructor(buffer: SharedArrayBuffer, gateway: number) {
    this.counters = new GatewayCounters(buffer, gateway);
    this.routeOf(UNMATCHED_ROUTE);
  }

  /** The index of a route pattern ("/api/v1/commands/:commandId" is labelled "/api/v1/commands/{commandId}"). */
  routeOf(pattern: string): number {
    const label = pattern === '/*' || pattern === '/internal/*' ? UNMATCHED_ROUTE : pattern.replace(/:(\w+)/g, '{$1}');
    const known = this.routes.indexOf(label);
    if (known >= 0) return known;
    if (this.routes.length === ROUTES_MAX) throw new Error(`more than ${ROUTES_MAX} routes to count: raise ROUTES_MAX (core/venue-metrics.ts)`);
    this.routes.push(label);
    return this.routes.length - 1;
  }

  answered(route: number, status: number): void {
    this.counters.answer(route, statusSlot(status));
  }

  /**
   * An order command's answer: its outcome, and unless it was refused before it was
   * taken (`mode` -1), its time from arrival (`arrivedUs`, µs since the epoch).
   */
  command(commandRoute: number, mode: number, status: number, marked: number, arrivedUs: number): void {
    const outcome = outcomeOf(status, marked);
    this.counters.command(commandRoute, outcome);
    if (mode >= 0) this.counters.duration(commandRoute, mode, ((performance.timeOrigin + performance.now()) * 1000 - arrivedUs) / 1e6);
  }

  /**
   * Makes every handler registered on `app` from now on set `active` to its route before
   * it runs. uWS matches the most specific pattern, so a request counts under the one it reached.
   */
  countRoutes(app: uWS.TemplatedApp): void {
    for (const method of ['get', 'post', 'any'] as const) {
      const register = app[method].bind(app);
      app[method] = (pattern: string, handler: (res: uWS.HttpResponse, req: uWS.HttpRequest) => void | Promise<void>) => {
        const route = this.routeOf(pattern);
        return register(pattern, (res, req) => {
          this.active = route;
          return handler(res, req);
        });
      };
    }
  }
}
