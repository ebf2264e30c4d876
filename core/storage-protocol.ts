// The messages between the gateway threads and the storage threads (read thread,
// persistence thread), and the names and shapes they share: types, constants and the
// builders of a read's answer. gateway/ imports core/, never persistence/ (ARCHITECTURE.md, folders).

import type { ErrorCode, Failure } from './error-codes.ts';
import { type SerializedError, serializeError } from './log-format.ts';

/** A venue session: the pair every accepted order is stamped with. */
export interface VenueSession {
  runId: string;
  venueSessionId: string;
  startedAt: string;
}

/** A session with the numbers the engine knows it by (runtime.venue_sessions). */
export interface NumberedSession extends VenueSession {
  runNo: number;
  sessionNo: number;
}

/** Tier 2 groups sealed and not yet flushed before tier 1 waits (bounded memory; the persistence thread). */
export const SEALED_GROUPS_MAX = 8;

export const SOURCE_PROJECTION = 'runtime-normalized-venue-outcomes';
export const SNAPSHOT_PROJECTION = 'market-data-top-of-book';
export const DEPTH_PROJECTION = 'market-data-depth';
export const BAR_INTERVALS = { '1m': 60, '5m': 300, '15m': 900, '1h': 3600 } as const;
export type BarInterval = keyof typeof BAR_INTERVALS;

/** The read's 200 body, as JSON text. */
export type Answered = { ok: true; body: string; error: null };
/** A read refused: a code and the venue's words (the gateway gives it its status). */
export type Refused = { ok: false; body: null; error: Failure };
/**
 * A read-plane answer. Both forms have the same keys in the same order: one shape
 * where the gateway answers reads from shared memory.
 */
export type PlaneAnswer = Answered | Refused;
/**
 * A settlement answer's 200 body as UTF-8 bytes: moved, never copied, from the settlement
 * pool through the read thread to the gateway (a string of megabytes is copied at each
 * hop, holding each thread it crosses for 0.1-0.3 s).
 */
export type AnsweredBytes = { ok: true; body: Uint8Array<ArrayBuffer>; error: null };
/** What the read thread answers a plane read with. */
export type ReadPlaneAnswer = PlaneAnswer | AnsweredBytes;

export const answered = (body: string): Answered => ({ ok: true, body, error: null });
export const refusedWith = (error: Failure): Refused => ({ ok: false, body: null, error });
export const refused = (code: ErrorCode, message: string): Refused => refusedWith({ code, message });

/** The refusal of a snapshot that was never produced under its name (from memory or storage alike). */
export const SNAPSHOT_NOT_FOUND = 'market data snapshot not found';

export type OwnOrdersView = 'current' | 'history';

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** A settlement read; `participants` null for operators (everything), else the trader's own. */
export interface SettlementRead {
  view: 'facts' | 'obligations' | 'ledger' | 'exceptions' | 'proof' | 'score' | 'leaderboard';
  scenarioRunId: string;
  participants: string[] | null;
  asOfUs: number | null;
  agedFailAfterSeconds: number;
}

/** An operator's settlement request (`/admin/v1/settlement/...`), validated by the gateway. */
export type SettlementAdmin =
  | {
      action: 'facts';
      scenarioRunId: string;
      facts: { factId: string; factType: string; occurredAtUs: number; causationId: string | null; payload: Record<string, unknown> }[];
    }
  | { action: 'materialize'; scenarioRunId: string; profile: string | null }
  | { action: 'repair-cash'; scenarioRunId: string; obligationId: string; amountNanos: string; currency: string }
  | { action: 'repair-security'; scenarioRunId: string; obligationId: string; quantityUnits: string }
  | { action: 'force-settle'; scenarioRunId: string; obligationId: string; reason: string }
  | { action: 'reverse-ledger-entry'; scenarioRunId: string; ledgerEntryId: string; reason: string }
  | { action: 'profiles'; scope: 'platform' | 'venueSession' | 'scenarioRun'; scopeId: string | null; profile: string };

/** A read-plane request, validated by the gateway. */
export type PlaneRead =
  | { kind: 'snapshot'; instrumentId: string; projectionName: string }
  | { kind: 'refresh'; projectionName: string; sourceProjectionName: string; instrumentId: string | null; principalId: string }
  | { kind: 'depth'; instrumentId: string; levels: number }
  | { kind: 'tape'; instrumentId: string; limit: number; before: number | null }
  | { kind: 'bars'; instrumentId: string; interval: BarInterval; start: number; end: number }
  | { kind: 'orders'; view: OwnOrdersView; participants: string[]; instrumentId: string | null; limit: number }
  | { kind: 'fills'; participants: string[]; instrumentId: string | null; limit: number }
  | { kind: 'availability' }
  | { kind: 'projector-status' }
  | { kind: 'settlement-read'; read: SettlementRead }
  | { kind: 'settlement-admin'; admin: SettlementAdmin };

/** What a gateway needs to render a command status view from storage. */
export interface StoredCommand {
  commandId: string;
  clientId: string;
  idempotencyKey: string;
  route: number;
  processingMode: number;
  shard: number;
  principal: number;
  orderId: string | null;
  instrumentId: string | null;
  payloadHash: string;
  streamSequence: number;
  /** The shard's batch number (the status view's batchId). */
  shardBatch: number;
  resultStatus: number;
  rejectCode: string;
  resultPayloadJson: string | null;
  /** The answer the command was given (202 pointer, or 200 envelope once the outcome exists). */
  responseStatus: number;
  responseBody: string | null;
}

/** An order a clientOrderId resolves to in storage: what the clientOrderId table keeps of it. */
export interface StoredClientOrder {
  orderId: string;
  instrumentId: string;
  accountId: string;
  runId: string;
  venueSessionId: string;
}

export type ReadRequest =
  | { id: number; type: 'command'; commandId: string }
  | { id: number; type: 'replay'; scopeDigest: string }
  /** Does storage hold this idempotency scope, or else this commandId? (for claims the shared tables may have forgotten) */
  | { id: number; type: 'claims'; scopeDigest: string; commandId: string }
  /** Which shard holds this order, if storage knows it (for orderIds the directory may have forgotten). */
  | { id: number; type: 'order-shard'; orderId: string }
  /** The newest stored order of this participant with this clientOrderId (for claims the clientOrderId table may have forgotten). */
  | { id: number; type: 'client-order'; participantId: string; clientOrderId: string }
  | { id: number; type: 'plane'; read: PlaneRead }
  /** The command as it arrived (the audit trail): from its command_log row's intake position. */
  | { id: number; type: 'audit'; commandId: string }
  /** The clientOrderIds of these stored orders (rows the own-reads model renders without one). */
  | { id: number; type: 'client-order-ids'; orderIds: string[] };

/** An own-order or fills read, asked of the persistence thread's in-memory model (persistence/own-reads.ts). */
export interface OwnReadRequest {
  id: number;
  read: Extract<PlaneRead, { kind: 'orders' | 'fills' }>;
}

/**
 * The model's answer: its rows (`rows` null: it cannot tell them exactly, the read
 * thread answers from storage); an own-order row whose clientOrderId is undefined
 * needs it looked up (`lookups`: their orderIds).
 */
export type OwnReadAnswer = { id: number; ok: true; rows: Record<string, unknown>[] | null; lookups: string[] } | ({ id: number; ok: false } & StorageFailure);

/** A command as tier 1 keeps it (the audit trail): its intake record's fields and its JSON text as validated. */
export interface AuditRecord {
  commandId: string;
  /** The route and processing mode as the intake record numbers them, the principal as its index in the principals file. */
  route: number;
  processingMode: number;
  principal: number;
  receivedAtUs: number;
  clientId: string;
  idempotencyKey: string;
  /** Null for a command captured before its text was kept. */
  body: string | null;
}

/**
 * A storage thread's failure: `message` is the venue's own words, fit for a 5xx body;
 * `cause` what went wrong underneath (a driver's or the runtime's error), for the log only.
 */
export interface StorageFailure {
  message: string;
  cause?: SerializedError;
}

/** A failure whose message the venue wrote for clients; any other error's message is a cause. */
export class StatedFailure extends Error {}

/** The failure answer for an error a storage thread met: its own message if stated, else `message` with the error as the cause. */
export function failureOf(error: unknown, message: string): StorageFailure {
  if (error instanceof StatedFailure) return { message: error.message };
  return { message, cause: serializeError(error) };
}

/** command (and match) answer the command requests; answer the read-plane ones. */
export type ReadAnswer =
  | {
      id: number;
      ok: true;
      command: StoredCommand | null;
      match?: 'scope' | 'commandId';
      answer?: ReadPlaneAnswer;
      shard?: number | null;
      clientOrder?: StoredClientOrder | null;
      audit?: AuditRecord | null;
      /** client-order-ids: orderId to clientOrderId (null: it has none). */
      clientOrderIds?: Record<string, string | null>;
    }
  | ({ id: number; ok: false } & StorageFailure);

export type AdminRequest =
  | { id: number; type: 'rebuild-lifecycle' }
  | { id: number; type: 'status' }
  /** POST /admin/v1/venue/sessions: end the open session and open this one (null: the open one's runId, a numbered sessionId). */
  | { id: number; type: 'roll-session'; runId: string | null; venueSessionId: string | null }
  /** A command taken but not yet on the journal (the audit trail of a command no command_log row names yet). */
  | { id: number; type: 'audit-pending'; commandId: string };

/**
 * A session roll as storage recorded it. `rolled` false: the pair asked for is the open
 * session already (a retry of a roll that named it): storage was not changed, and
 * `previous` is the session that ended when it opened (null if none did).
 */
export interface SessionRoll {
  active: NumberedSession;
  previous: (NumberedSession & { endedAt: string }) | null;
  rolled: boolean;
}
export interface RebuildStatus {
  projection: string;
  status: string;
  rowsRebuilt: number;
  startedAt: string;
  finishedAt: string;
}
/** GET /admin/v1/persistence/status: both tiers, their watermarks and lag, throughput and latency. */
export interface PersistenceStatus {
  database: 'starting' | 'up' | 'down';
  shards: { shardId: number; journalCommitted: number; projected: number; projectionLag: number }[];
  journal: {
    commits: number;
    intakeRows: number;
    journalRows: number;
    commands: number;
    events: number;
    bytes: number;
    busyMs: number;
    /** Rows (command log + journal) per second of commit time: the tier's capacity. */
    rowsPerBusySecond: number;
    captureLatencyUs: LatencySummary;
    journalLatencyUs: LatencySummary;
  };
  projections: {
    groups: number;
    rows: number;
    busyMs: number;
    rowsPerBusySecond: number;
    errors: number;
    /** Rows storage refused, kept in runtime.quarantined_rows; groups quarantined whole. */
    quarantinedRows: number;
    quarantinedGroups: number;
    lagUs: LatencySummary;
    lagBuckets: [number, number][];
  };
}
export type AdminAnswer =
  | { id: number; ok: true; type: 'rebuild-lifecycle'; payload: RebuildStatus }
  | { id: number; ok: true; type: 'status'; payload: PersistenceStatus }
  | { id: number; ok: true; type: 'audit-pending'; payload: AuditRecord | null }
  | { id: number; ok: true; type: 'roll-session'; payload: SessionRoll }
  /** `code`: a refusal (the request names a pair the venue ran before); without one, storage failed (a 503). */
  | ({ id: number; ok: false; code?: 'SESSION_CONFLICT' } & StorageFailure);
