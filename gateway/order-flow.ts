// The order-command path of one gateway thread, after a request is authenticated,
// validated and authorized: idempotency, routing to a shard, the command slot on
// the ring, and the answer when the shard's result comes back.
//
//   claim the idempotency scope and the commandId (shared tables, all gateways)
//     -> replay the original answer (or wait for it), or 409 for another payload
//   resolve what the route needs (order directory, clientOrderId claims)
//   write one 128-byte slot on the ring to the shard; ring full -> undo, 503
//   async modes answer 202 now; sync-result (and stream-ack) answer on the result
//
// Business rejections decided here (a duplicate clientOrderId, an unknown
// clientOrderId, an orderId already used on another shard) are sent to a shard as a
// REJECT command, so that they too are sequenced, canonical outcomes.

import {
  COMMAND_ACCOUNT_ID_WORD,
  COMMAND_ARGUMENT_WORD,
  COMMAND_CURRENCY_WORD,
  COMMAND_HEADER_WORD,
  COMMAND_ID_WORD,
  COMMAND_INSTRUMENT_ID_WORD,
  COMMAND_ORDER_ID_WORD,
  COMMAND_PARTICIPANT_ID_WORD,
  COMMAND_PRICE_NANOS_FLOAT,
  COMMAND_QUANTITY_UNITS_FLOAT,
  COMMAND_RUN_WORD,
  COMMAND_SESSION_WORD,
  COMMAND_SLOT_BYTES,
  COMMAND_TIMESTAMP_US_FLOAT,
  COMMAND_TOKEN_WORD,
  packCurrency,
  packHeader,
  unpackCurrency,
} from '../core/command-slot.ts';
import {
  EVENT_ACCEPTED,
  EXPIRY_SCAN_SLOTS,
  OPCODE_CANCEL,
  OPCODE_EXPIRE,
  OPCODE_MODIFY,
  OPCODE_QUERY,
  OPCODE_REJECT,
  OPCODE_SUBMIT,
  ORDER_TYPE_LIMIT,
  ORDER_TYPE_LIMIT_HIDDEN,
  rejectCodeOf,
  rejectName,
  SIDE_BUY,
  SIDE_SELL,
  STATE_OPEN,
  STATE_PARTIALLY_FILLED,
  TIME_IN_FORCE_DAY,
  TIME_IN_FORCE_IOC,
} from '../core/codes.ts';
import { Doorbell } from '../core/doorbell.ts';
import { expiryCommandId, expiryProgress } from '../core/session-expiry.ts';
import { INTAKE_RECORD_BYTES, writeIntake } from '../core/intake-record.ts';
import { BODY_SLOT_BYTES, bodySlots, writeBody } from '../core/body-ring.ts';
import { DB_DOWN, PersistenceControl } from '../core/persistence-control.ts';
import { ResultReader } from '../core/result-reader.ts';
import { RESULT_RECORD_BYTES, type ResultEvent, type ResultHeader } from '../core/result-slot.ts';
import { ringMarks, ringReadIndex, RingProducer } from '../core/ring.ts';
import { shardOf } from '../core/shard-map.ts';
import { NOT_FOUND, type SharedKeyTable } from '../core/shared-key-table.ts';
import { formatUuid, isUuid, parseUuidInto, uuidWords } from '../core/uuid.ts';
import { CommandStore, INTERNAL, RESULT, STATUS, type CommandSnapshot } from './command-store.ts';
import { PROCESSING_MODES, type ProcessingMode, type VenueConfig } from '../core/config.ts';
import { renderEnvelope, renderPointer } from '../core/outcome-format.ts';
import { SEALED_GROUPS_MAX, type AdminAnswer, type AdminRequest, type AuditRecord, type OwnReadAnswer, type OwnReadRequest, type PlaneRead, type ReadAnswer, type ReadAnswerBody, type ReadRequest, type StoredClientOrder, type StorageFailure, type StoredCommand } from '../core/storage-protocol.ts';
import { DurabilityGate } from './durability.ts';
import { PortClient, StorageFailed, type WithoutId } from './storage-client.ts';
import { SHARD_HALTED_WORD } from '../core/shard-runner.ts';
import { embeddedStorageProblem } from './storage-state.ts';
import { QueueMarks, QUEUE_SLOTS } from '../core/queue-marks.ts';
import { errorBody, type ErrorCode, ERRORS, serverErrorBody } from './error-catalog.ts';
import { mayActFor, type Principal } from './principals.ts';
import type { SessionRegistry } from './sessions.ts';
import { renderStatusView, ROUTE_CANCEL_BY_CLIENT_ORDER, ROUTE_MODIFY, ROUTE_SUBMIT, type Durable } from './status-view.ts';
import type { CancelByClientOrderBody, SubmitBody, TargetBody } from './validation.ts';
import { clientOrderDigest, payloadDigest, scopeDigest, wordsOf } from './keys.ts';
import { attachForgotten, attachTable, namedKeyFilters, recordRef, refGateway, refIndex, STORAGE_REF, VENUE_CONNECTION_LIMIT_WORD, type VenueMemory } from './venue-memory.ts';
import type { KeyFilter } from '../core/key-filter.ts';
import { DepthView, SnapshotView } from '../core/market-view.ts';
import { TapeView } from '../core/tape-view.ts';
import { depthAnswer, snapshotAnswer, tapeAnswer } from './market-reads.ts';

/** How a request is answered; implemented over a uWebSockets.js response. */
export interface Reply {
  send(status: number, body: string | Uint8Array, headers?: Record<string, string>): void;
  readonly aborted: boolean;
}

export interface OrderRequest {
  route: number;
  principal: Principal;
  clientId: string;
  idempotencyKey: string;
  mode: ProcessingMode;
  body: SubmitBody | TargetBody | CancelByClientOrderBody;
  /** The body's JSON text as it arrived and was validated (the audit trail keeps it), and its bytes of UTF-8. */
  raw: string;
  rawBytes: number;
  priceNanos: number;
  quantityUnits: number;
  reply: Reply;
}

/** Everything needed to write one command slot. `opcode` wins over the opcode packed in `header`. */
interface SlotCommand {
  opcode: number;
  header: number;
  runNo: number;
  sessionNo: number;
  commandId: Int32Array;
  orderId: Int32Array;
  instrumentId: Int32Array;
  participantId: Int32Array;
  accountId: Int32Array;
  currency: number;
  priceNanos: number;
  quantityUnits: number;
  argument: number;
}

/** A command (or query) waiting for its shard's result. */
interface Pending {
  token: number;
  reply: Reply | null;
  recordIndex: number;
  mode: number;
  shard: number;
  instrumentId: string;
  currency: string;
  commandId: string;
  /** What to undo or keep when the result comes: the claims this command made. */
  orderDirectoryKey: Int32Array | null;
  clientOrderKey: Int32Array | null;
  rejectedOrderIdNull: boolean;
  /** Set for a state query: called with the order's state instead of rendering. */
  onQuery: ((state: number) => void) | null;
  /** Set for a command of the venue's own (the session roll's EXPIRE): called with its result instead of rendering. */
  onResult: ((header: ResultHeader, events: ResultEvent[]) => void) | null;
  /** What the command log records of it (null for queries), and its intake position once written. */
  intake: IntakeInfo | null;
  intakeCount: number;
  /** When its answer stops waiting (503, the command goes on); whether the client was told so. */
  deadlineMs: number;
  late: boolean;
}

/** The request-level facts the command log keeps. */
interface IntakeInfo {
  route: number;
  mode: number;
  principal: number;
  scopeDigest: Uint8Array;
  payloadHash: Uint8Array;
  clientId: string;
  idempotencyKey: string;
  clientOrderId: string | null;
  receivedAtUs: number;
  /** The body's JSON text, and its length in bytes of UTF-8. */
  raw: string;
  rawBytes: number;
}

/** Where this gateway reaches storage. */
export interface PersistencePorts {
  read: import('node:worker_threads').MessagePort;
  admin: import('node:worker_threads').MessagePort;
  /** The persistence thread's in-memory own orders and fills. */
  ownReads: import('node:worker_threads').MessagePort;
}

/** A replay that found the original command still in flight. */
interface Waiter {
  reply: Reply;
  ref: number;
  commandId: Int32Array;
  deadlineMs: number;
}

const RETRY_AFTER = { 'Retry-After': '1' };
const JSON_HEADERS = { 'Content-Type': 'application/json' };
const ZERO_UUID = new Int32Array(4);

/** A state query's or a venue's own command's wait for its shard's result: no client command behind it (no reply, no record, no intake). */
function ownPending(shard: number, deadlineMs: number, handlers: Pick<Partial<Pending>, 'onQuery' | 'onResult'>): Pending {
  return {
    token: 0, reply: null, recordIndex: -1, mode: 0, shard, instrumentId: '', currency: '', commandId: '', orderDirectoryKey: null, clientOrderKey: null,
    rejectedOrderIdNull: false, onQuery: handlers.onQuery ?? null, onResult: handlers.onResult ?? null, intake: null, intakeCount: 0, deadlineMs, late: false,
  };
}

function sameWords(a: Int32Array, b: Int32Array): boolean {
  return a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];
}

/** One bounded queue in the status route. */
export interface QueueReport {
  name: string;
  capacity: number;
  now: number;
  highWater: number;
}

/** How long an operator's settlement request may take in the read thread (reads: 5 s). */
const SETTLEMENT_ADMIN_TIMEOUT_MS = 60_000;

/** Operator requests (status, rebuilds) a gateway lets wait for the persistence thread at once. */
const OPERATOR_WAITING_MAX = 64;

export class OrderFlow {
  private readonly gatewayId: number;
  private readonly config: VenueConfig;
  private readonly memory: VenueMemory;
  private readonly sessions: SessionRegistry;
  private readonly idempotency: SharedKeyTable;
  private readonly commandIds: SharedKeyTable;
  private readonly orderDirectory: SharedKeyTable;
  private readonly clientOrders: SharedKeyTable;
  /** Keys the idempotency and commandId tables forgot, or that storage held at start. */
  private readonly forgottenScopes: KeyFilter;
  private readonly forgottenCommandIds: KeyFilter;
  /** OrderIds the order directory forgot, or that storage held at start. */
  private readonly forgottenOrders: KeyFilter;
  /** (participant, clientOrderId) claims the clientOrderId table forgot, or that storage held at start. */
  private readonly forgottenClientOrders: KeyFilter;
  private readonly depthView: DepthView;
  private readonly tapeView: TapeView;
  private readonly snapshotView: SnapshotView;
  private readonly stores: CommandStore[];
  private readonly store: CommandStore;
  private readonly rings: RingProducer[];
  private readonly readers: ResultReader[];
  private readonly shardBells: Doorbell[];
  readonly doorbell: Doorbell;
  private readonly pending = new Map<number, Pending>();
  /** Slots written per shard ring and not yet published (published once per event-loop turn). */
  private readonly unpublished: number[];
  private flushScheduled = false;
  private readonly waiters: Waiter[] = [];
  /**
   * sync-result and stream-ack commands in dispatch order (so in deadline order): their
   * answer is bounded while their shard still holds them too (a shard waits when its
   * journal ring is full, e.g. behind a stuck commit). Entries leave from the head.
   */
  private resultDeadlines: Pending[] = [];
  private resultDeadlineHead = 0;
  private nextToken = 1;
  private readonly intakeRing: RingProducer;
  private unpublishedIntake = 0;
  /** The commands' JSON texts beside their intake records (core/body-ring.ts), and a buffer for a text that wraps. */
  private readonly bodyRing: RingProducer;
  private unpublishedBodySlots = 0;
  private readonly bodyScratch: Uint8Array;
  /** Intake records written since start (what the persistence worker's count is compared with). */
  private intakeWritten = 0;
  private readonly control: PersistenceControl;
  readonly durability: DurabilityGate;
  private readonly reads: PortClient<ReadRequest, ReadAnswer>;
  private readonly admin: PortClient<AdminRequest, AdminAnswer>;
  private readonly ownReads: PortClient<OwnReadRequest, OwnReadAnswer>;
  private readonly marks: QueueMarks;
  private readonly inFlightSlot: number;

  /** The venue control words (gateway/venue-memory.ts): the embedded server's supervisor among them. */
  private readonly venueControl: Int32Array;
  /** Each shard's control words: whether it halted (core/shard-runner.ts). */
  private readonly shardControls: Int32Array[];

  constructor(gatewayId: number, config: VenueConfig, memory: VenueMemory, sessions: SessionRegistry, ports: PersistencePorts) {
    this.gatewayId = gatewayId;
    this.config = config;
    this.memory = memory;
    this.venueControl = new Int32Array(memory.venueControl);
    this.shardControls = memory.shardControls.map((control) => new Int32Array(control));
    this.sessions = sessions;
    this.idempotency = attachTable(memory, 'idempotency');
    this.commandIds = attachTable(memory, 'commandIds');
    this.orderDirectory = attachTable(memory, 'orderDirectory');
    this.clientOrders = attachTable(memory, 'clientOrders');
    this.forgottenScopes = attachForgotten(memory, 'idempotency');
    this.forgottenCommandIds = attachForgotten(memory, 'commandIds');
    this.forgottenOrders = attachForgotten(memory, 'orderDirectory');
    this.forgottenClientOrders = attachForgotten(memory, 'clientOrders');
    this.depthView = new DepthView(memory.depthView);
    this.tapeView = new TapeView(memory.tapeView);
    this.snapshotView = new SnapshotView(memory.snapshotView);
    this.stores = memory.commandStores.map((buffer) => new CommandStore(buffer, memory.storeRecords));
    this.store = this.stores[gatewayId]!;
    this.rings = memory.commandRings[gatewayId]!.map((buffer) => new RingProducer(buffer, COMMAND_SLOT_BYTES));
    this.readers = memory.resultRings.map((perGateway) => new ResultReader(perGateway[gatewayId]!));
    this.shardBells = memory.shardDoorbells.map((buffer) => new Doorbell(buffer));
    this.doorbell = new Doorbell(memory.gatewayDoorbells[gatewayId]!);
    this.unpublished = this.rings.map(() => 0);
    this.intakeRing = new RingProducer(memory.intakeRings[gatewayId]!, INTAKE_RECORD_BYTES);
    this.bodyRing = new RingProducer(memory.bodyRings[gatewayId]!, BODY_SLOT_BYTES);
    this.bodyScratch = new Uint8Array(config.maxBodyBytes);
    this.control = new PersistenceControl(memory.persistenceControl);
    this.durability = new DurabilityGate(this.control, gatewayId, memory.shardCount);
    this.marks = new QueueMarks(memory.queueMarks);
    this.inFlightSlot = QUEUE_SLOTS.gatewayInFlight(gatewayId);
    this.reads = new PortClient<ReadRequest, ReadAnswer>(ports.read, 5_000, config.maxWaitingReads, (depth) => this.marks.note(QUEUE_SLOTS.gatewayReads(gatewayId), depth));
    this.admin = new PortClient<AdminRequest, AdminAnswer>(ports.admin, 600_000, OPERATOR_WAITING_MAX, (depth) => this.marks.note(QUEUE_SLOTS.gatewayOperator(gatewayId), depth));
    this.ownReads = new PortClient<OwnReadRequest, OwnReadAnswer>(ports.ownReads, 5_000, config.maxWaitingReads, (depth) => this.marks.note(QUEUE_SLOTS.gatewayOwnReads(gatewayId), depth));
  }

  /** Closes the ports to the storage threads (shutdown). */
  close(): void {
    this.reads.close();
    this.admin.close();
    this.ownReads.close();
  }

  /** True while the persistence thread cannot reach PostgreSQL (new commands answer 503). */
  get storageDown(): boolean {
    return this.control.databaseState === DB_DOWN || embeddedStorageProblem(this.venueControl) !== null;
  }

  /** The shards that halted after an internal check failed (their commands are refused). */
  haltedShards(): number[] {
    return this.shardControls.flatMap((control, shard) => (Atomics.load(control, SHARD_HALTED_WORD) !== 0 ? [shard] : []));
  }

  get inFlight(): number {
    return this.pending.size + this.waiters.length + this.durability.size;
  }

  /** True when a result ring has something to read, or storage made answers durable since the last poll. */
  resultsWaiting(): boolean {
    return this.readers.some((reader) => reader.ring.available() > 0) || this.durability.advanced();
  }

  // ---- taking a command ----

  handle(request: OrderRequest): void {
    const { body, route, reply } = request;
    if (this.control.databaseState === DB_DOWN) {
      this.fail(reply, 'UNAVAILABLE', 'storage is unavailable: nothing was accepted; retry with the same Idempotency-Key', RETRY_AFTER);
      return;
    }
    const payload = payloadDigest(route, body as unknown as Record<string, unknown>);
    const payloadWords = wordsOf(payload);
    const scopeBytes = scopeDigest(request.principal.principalId, request.clientId, request.idempotencyKey);
    const scope = wordsOf(scopeBytes);
    const commandId = uuidWords(body.commandId);
    const receivedAtUs = Math.round((performance.timeOrigin + performance.now()) * 1000);
    const intake: IntakeInfo = {
      route,
      mode: PROCESSING_MODES.indexOf(request.mode),
      principal: request.principal.index,
      scopeDigest: scopeBytes,
      payloadHash: payload,
      clientId: request.clientId,
      idempotencyKey: request.idempotencyKey,
      clientOrderId: route === ROUTE_SUBMIT ? ((body as SubmitBody).clientOrderId ?? null) : null,
      receivedAtUs,
      raw: request.raw,
      rawBytes: request.rawBytes,
    };
    const index = this.store.create({
      processingMode: PROCESSING_MODES.indexOf(request.mode),
      route,
      principal: request.principal.index,
      commandId: body.commandId,
      orderId: 'orderId' in body ? body.orderId : null,
      instrumentId: 'instrumentId' in body ? body.instrumentId : null,
      payloadHash: payload,
      clientId: request.clientId,
      idempotencyKey: request.idempotencyKey,
      receivedAtUs,
    });
    const ref = recordRef(this.gatewayId, index);
    const existingPayload = new Int32Array(4);
    const existing = this.idempotency.insertIfAbsent(scope, 0, ref, payloadWords, existingPayload);
    if (existing !== NOT_FOUND) {
      this.store.void(index);
      if (!sameWords(existingPayload, payloadWords)) {
        this.fail(reply, 'IDEMPOTENCY_CONFLICT', 'this Idempotency-Key was used with a different payload');
        return;
      }
      if (existing === STORAGE_REF) this.replayFromStorage(reply, scopeBytes, payload);
      else this.replayOrWait(reply, existing, commandId, scopeBytes, payload);
      return;
    }
    const holderRef = this.commandIds.insertIfAbsent(commandId, 0, ref);
    if (holderRef !== NOT_FOUND) {
      this.idempotency.remove(scope, 0, ref);
      this.store.void(index);
      this.sameCommandOrConflict(request, holderRef, commandId, scopeBytes, payload);
      return;
    }
    const undoClaims = () => {
      this.idempotency.remove(scope, 0, ref);
      this.commandIds.remove(commandId, 0, ref);
      this.store.void(index);
    };
    const proceed = () => {
      if (route === ROUTE_SUBMIT) this.submit(request, intake, index, ref, commandId, undoClaims);
      else if (route === ROUTE_CANCEL_BY_CLIENT_ORDER) this.cancelByClientOrder(request, intake, index, commandId, undoClaims);
      else this.target(request, intake, index, commandId, undoClaims);
    };
    if (this.forgottenScopes.mightContain(scope, 0) || this.forgottenCommandIds.mightContain(commandId, 0)) {
      this.checkStoredClaims(reply, scopeBytes, body.commandId, payload, undoClaims, proceed);
    } else proceed();
  }

  /**
   * The commandId is taken. Usually by another command (409); but the tables forget
   * entries independently, so it may be this very command, retried after its scope
   * entry was forgotten while its commandId entry was not: then it is a replay. The
   * record the commandId points to tells, else storage does.
   */
  private sameCommandOrConflict(request: OrderRequest, holderRef: number, commandId: Int32Array, scope: Uint8Array, payload: Uint8Array): void {
    const { reply, principal } = request;
    const holder = holderRef === STORAGE_REF ? null : this.snapshotOf(holderRef, commandId);
    if (holder !== null) {
      if (holder.principal !== principal.index || holder.clientId !== request.clientId || holder.idempotencyKey !== request.idempotencyKey) {
        return this.fail(reply, 'IDEMPOTENCY_CONFLICT', 'this commandId is already used by another command');
      }
      if (holder.payloadHash !== Buffer.from(payload).toString('hex')) return this.fail(reply, 'IDEMPOTENCY_CONFLICT', 'this Idempotency-Key was used with a different payload');
      return this.replayOrWait(reply, holderRef, commandId, scope, payload);
    }
    // Its scope was not in the table: new, or forgotten (then the filter has it).
    if (!this.forgottenScopes.mightContain(wordsOf(scope), 0)) return this.fail(reply, 'IDEMPOTENCY_CONFLICT', 'this commandId is already used by another command');
    this.reads.request({ type: 'claims', scopeDigest: Buffer.from(scope.subarray(0, 16)).toString('hex'), commandId: formatUuid(commandId, 0) }).then(
      (answer) => {
        if (!answer.ok) return this.storageFailed(reply, answer);
        if (answer.command !== null && answer.match === 'scope') return this.answerStoredReplay(reply, answer.command, payload);
        this.fail(reply, 'IDEMPOTENCY_CONFLICT', 'this commandId is already used by another command');
      },
      (error: unknown) => this.storageSilent(reply, error),
    );
  }

  /**
   * The shared tables are bounded: they forget their oldest entries, and a restart
   * reloads only the most recent. A miss in a table is proof that a key is new only
   * when the filter of forgotten keys does not hold it either; otherwise storage (the
   * command log, with its unique constraints) decides, at the cost of a read.
   */
  private checkStoredClaims(reply: Reply, scope: Uint8Array, commandIdText: string, payload: Uint8Array, undoClaims: () => void, proceed: () => void): void {
    const scopeHex = Buffer.from(scope.subarray(0, 16)).toString('hex'); // the command log keeps 16 bytes
    this.reads.request({ type: 'claims', scopeDigest: scopeHex, commandId: commandIdText.toLowerCase() }).then(
      (answer) => {
        if (!answer.ok) {
          undoClaims();
          return this.storageFailed(reply, answer);
        }
        if (answer.command === null) return proceed();
        undoClaims();
        if (answer.match === 'commandId') return this.fail(reply, 'IDEMPOTENCY_CONFLICT', 'this commandId is already used by another command');
        this.answerStoredReplay(reply, answer.command, payload);
      },
      (error: unknown) => {
        undoClaims();
        this.storageSilent(reply, error);
      },
    );
  }

  private submit(request: OrderRequest, intake: IntakeInfo, index: number, ref: number, commandId: Int32Array, undoClaims: () => void): void {
    const body = request.body as SubmitBody;
    const instrument = uuidWords(body.instrumentId);
    const orderId = uuidWords(body.orderId);
    const shard = shardOf(instrument, 0, this.memory.shardCount);
    const [runNo, sessionNo] = this.sessions.activeNumbers();
    const command: SlotCommand = {
      opcode: OPCODE_SUBMIT,
      header: packHeader(
        OPCODE_SUBMIT,
        body.side === 'BUY' ? SIDE_BUY : SIDE_SELL,
        body.orderType === 'LIMIT' ? ORDER_TYPE_LIMIT : ORDER_TYPE_LIMIT_HIDDEN,
        body.timeInForce === 'DAY' ? TIME_IN_FORCE_DAY : TIME_IN_FORCE_IOC,
      ),
      runNo,
      sessionNo,
      commandId,
      orderId,
      instrumentId: instrument,
      participantId: uuidWords(body.participantId),
      accountId: uuidWords(body.accountId),
      currency: packCurrency(body.currency),
      priceNanos: request.priceNanos,
      quantityUnits: request.quantityUnits,
      argument: 0,
    };
    const pending = this.newPending(request, intake, index, shard, body.instrumentId, body.currency, body.commandId);
    const proceed = (clientOrderKey: Int32Array | null) => {
      pending.clientOrderKey = clientOrderKey;
      const duplicate = () => this.dispatch(pending, { ...command, opcode: OPCODE_REJECT, argument: rejectCodeOf('DUPLICATE_ORDER_ID') }, undoClaims);
      // An orderId known anywhere on the venue is a duplicate even when its shard differs.
      if (this.orderDirectory.insertIfAbsent(orderId, 0, shard) !== NOT_FOUND) return duplicate();
      pending.orderDirectoryKey = orderId;
      if (!this.forgottenOrders.mightContain(orderId, 0)) return this.dispatch(pending, command, undoClaims);
      // The directory may have forgotten it: storage says whether it is taken (on any shard).
      this.storedShardOf(orderId, request.reply, () => {
        this.orderDirectory.remove(orderId, 0, shard);
        if (pending.clientOrderKey !== null) this.clientOrders.remove(pending.clientOrderKey, 0, recordRef(this.gatewayId, pending.recordIndex));
        undoClaims();
      }, (stored) => {
        if (stored === null) return this.dispatch(pending, command, undoClaims);
        this.orderDirectory.remove(orderId, 0, shard);
        this.orderDirectory.put(orderId, 0, stored);
        pending.orderDirectoryKey = null;
        duplicate();
      });
    };
    if (body.clientOrderId === undefined) {
      proceed(null);
      return;
    }
    const key = wordsOf(clientOrderDigest(body.participantId, body.clientOrderId));
    const extra = new Int32Array(14);
    extra.set(orderId, 0);
    extra.set(instrument, 4);
    extra.set(command.accountId, 8);
    extra[12] = runNo;
    extra[13] = sessionNo;
    const holderExtra = new Int32Array(14);
    const existing = this.clientOrders.insertIfAbsent(key, 0, ref, extra, holderExtra);
    const duplicate = () =>
      this.dispatch(pending, { ...command, opcode: OPCODE_REJECT, argument: rejectCodeOf('DUPLICATE_CLIENT_ORDER_ID') }, undoClaims);
    // Another order holds the claim (`holder`): a duplicate while that order is open, else the claim is this order's.
    const settle = (holder: number) => {
      const replaceClaim = () => (this.clientOrders.replace(key, 0, holder, ref, extra) ? proceed(key) : duplicate());
      // Is the order holding this clientOrderId still open? Its record says so while it
      // has no result; afterwards only its shard knows.
      const heldOrder = holderExtra.subarray(0, 4);
      const held = this.stores[refGateway(holder)]?.read(refIndex(holder));
      if (held !== undefined && held !== null && held.orderId !== null && sameWords(uuidWords(held.orderId), heldOrder)) {
        if (held.resultStatus === RESULT.NONE) return duplicate();
        if (held.resultStatus === RESULT.REJECTED) return replaceClaim();
      }
      this.shardHolding(heldOrder, holderExtra.subarray(4, 8), request.reply, undoClaims, (shard) =>
        this.query(shard, heldOrder, (state) => (state === STATE_OPEN || state === STATE_PARTIALLY_FILLED ? duplicate() : replaceClaim())),
      );
    };
    if (existing !== NOT_FOUND) return settle(existing);
    if (!this.forgottenClientOrders.mightContain(key, 0)) return proceed(key);
    // The table may have forgotten the order that holds it: storage says which (the newest), if any.
    const undoAll = () => {
      this.clientOrders.remove(key, 0, ref);
      undoClaims();
    };
    this.storedClientOrder(body.participantId, body.clientOrderId, request.reply, undoAll, (stored) => {
      if (stored === null) return proceed(key);
      this.clientOrderExtra(stored, holderExtra);
      this.clientOrders.replace(key, 0, ref, STORAGE_REF, holderExtra); // the claim is the stored order's until settled
      settle(STORAGE_REF);
    });
  }

  private target(request: OrderRequest, intake: IntakeInfo, index: number, commandId: Int32Array, undoClaims: () => void): void {
    const body = request.body as TargetBody;
    const [runNo, sessionNo] = this.sessions.numbersOf(body.runId, body.venueSessionId);
    this.targetOrder(request, intake, index, commandId, undoClaims, {
      orderId: uuidWords(body.orderId),
      instrumentId: uuidWords(body.instrumentId),
      participantId: uuidWords(body.participantId),
      accountId: uuidWords(body.accountId),
      runNo,
      sessionNo,
    });
  }

  /**
   * The cancel or modify of an order named with its whole context, sent to the shard that
   * holds it: the one path of /cancel, /modify and the cancel a clientOrderId resolves to.
   */
  private targetOrder(request: OrderRequest, intake: IntakeInfo, index: number, commandId: Int32Array, undoClaims: () => void, target: OrderContext): void {
    const modify = request.route === ROUTE_MODIFY;
    const opcode = modify ? OPCODE_MODIFY : OPCODE_CANCEL;
    this.shardHolding(target.orderId, target.instrumentId, request.reply, undoClaims, (shard) => this.dispatch(
      this.newPending(request, intake, index, shard, formatWords(target.instrumentId), '', request.body.commandId),
      {
        opcode,
        header: packHeader(opcode, 0, 0, 0),
        runNo: target.runNo,
        sessionNo: target.sessionNo,
        commandId,
        orderId: target.orderId,
        instrumentId: target.instrumentId,
        participantId: target.participantId,
        accountId: target.accountId,
        currency: 0,
        priceNanos: modify ? request.priceNanos : 0,
        quantityUnits: modify ? request.quantityUnits : 0,
        argument: 0,
      },
      undoClaims,
    ));
  }

  /** Resolves (participantId, clientOrderId) and sends a normal cancel for the order found. */
  private cancelByClientOrder(request: OrderRequest, intake: IntakeInfo, index: number, commandId: Int32Array, undoClaims: () => void): void {
    const body = request.body as CancelByClientOrderBody;
    const participant = uuidWords(body.participantId);
    const extra = new Int32Array(14);
    const key = wordsOf(clientOrderDigest(body.participantId, body.clientOrderId));
    const notFound = () => {
      const pending = this.newPending(request, intake, index, shardOf(participant, 0, this.memory.shardCount), '', '', body.commandId);
      pending.rejectedOrderIdNull = true;
      this.dispatch(
        pending,
        {
          opcode: OPCODE_REJECT,
          header: packHeader(OPCODE_REJECT, 0, 0, 0),
          runNo: -1,
          sessionNo: -1,
          commandId,
          orderId: ZERO_UUID,
          instrumentId: ZERO_UUID,
          participantId: participant,
          accountId: ZERO_UUID,
          currency: 0,
          priceNanos: 0,
          quantityUnits: 0,
          argument: rejectCodeOf('ORDER_NOT_FOUND'),
        },
        undoClaims,
      );
    };
    if (this.clientOrders.get(key, 0, extra) !== NOT_FOUND) return this.cancelResolved(request, intake, index, commandId, undoClaims, extra);
    if (!this.forgottenClientOrders.mightContain(key, 0)) return notFound();
    // The table may have forgotten it: storage says which order holds it (the newest), if any.
    this.storedClientOrder(body.participantId, body.clientOrderId, request.reply, undoClaims, (stored) => {
      if (stored === null) return notFound();
      this.clientOrderExtra(stored, extra);
      // Kept for the next lookup; a claim that came meanwhile is newer, and the resolver follows the newest (its extra replaces ours).
      this.clientOrders.insertIfAbsent(key, 0, STORAGE_REF, extra, extra);
      this.cancelResolved(request, intake, index, commandId, undoClaims, extra);
    });
  }

  /** The cancel of the order a clientOrderId resolved to (`extra`: the claim's orderId, instrumentId, accountId, runNo, sessionNo). */
  private cancelResolved(request: OrderRequest, intake: IntakeInfo, index: number, commandId: Int32Array, undoClaims: () => void, extra: Int32Array): void {
    const body = request.body as CancelByClientOrderBody;
    const account = extra.slice(8, 12);
    if (!mayActFor(request.principal, body.participantId, formatWords(account))) {
      undoClaims();
      this.fail(request.reply, 'FORBIDDEN', 'the order of this clientOrderId belongs to an account you may not act for');
      return;
    }
    // The normal cancel of the resolved order, with its whole context (the specification's resolver).
    this.targetOrder(request, intake, index, commandId, undoClaims, {
      orderId: extra.slice(0, 4),
      instrumentId: extra.slice(4, 8),
      participantId: uuidWords(body.participantId),
      accountId: account,
      runNo: extra[12]!,
      sessionNo: extra[13]!,
    });
  }

  /** Asks storage for the newest order of a participant with a clientOrderId (null: none); a 503 (claims undone) if storage does not answer. */
  private storedClientOrder(participantId: string, clientOrderId: string, reply: Reply, undoClaims: () => void, then: (stored: StoredClientOrder | null) => void): void {
    this.askStorage({ type: 'client-order', participantId: participantId.toLowerCase(), clientOrderId }, reply, undoClaims, (answer) => then(answer.clientOrder ?? null));
  }

  /** A stored order as the clientOrderId table keeps it: orderId, instrumentId, accountId (words), runNo, sessionNo. */
  private clientOrderExtra(stored: StoredClientOrder, extra: Int32Array): void {
    extra.set(uuidWords(stored.orderId), 0);
    extra.set(uuidWords(stored.instrumentId), 4);
    extra.set(uuidWords(stored.accountId), 8);
    [extra[12], extra[13]] = this.sessions.numbersOf(stored.runId, stored.venueSessionId);
  }

  /**
   * The shard that holds an order: the directory's answer; else, if the directory may
   * have forgotten it, storage's; else its instrument's shard (where a new order goes).
   */
  private shardHolding(orderId: Int32Array, instrument: Int32Array, reply: Reply, undoClaims: () => void, then: (shard: number) => void): void {
    const known = this.orderDirectory.get(orderId, 0);
    if (known !== NOT_FOUND) return then(known);
    const byInstrument = shardOf(instrument, 0, this.memory.shardCount);
    if (!this.forgottenOrders.mightContain(orderId, 0)) return then(byInstrument);
    this.storedShardOf(orderId, reply, undoClaims, (stored) => then(stored ?? byInstrument));
  }

  /** Asks storage which shard holds an order (null: none); a 503 (claims undone) if storage does not answer. */
  private storedShardOf(orderId: Int32Array, reply: Reply, undoClaims: () => void, then: (shard: number | null) => void): void {
    this.askStorage({ type: 'order-shard', orderId: formatUuid(orderId, 0) }, reply, undoClaims, (answer) => then(answer.shard ?? null));
  }

  /** A question for storage about a key the shared tables may have forgotten; a 503 (claims undone) if storage does not answer. */
  private askStorage(request: WithoutId<ReadRequest>, reply: Reply, undoClaims: () => void, then: (answer: Extract<ReadAnswer, { ok: true }>) => void): void {
    this.reads.request(request).then(
      (answer) => {
        if (!answer.ok) {
          undoClaims();
          return this.storageFailed(reply, answer);
        }
        then(answer);
      },
      (error: unknown) => {
        undoClaims();
        this.storageSilent(reply, error);
      },
    );
  }

  private newPending(request: OrderRequest, intake: IntakeInfo, index: number, shard: number, instrumentId: string, currency: string, commandId: string): Pending {
    return {
      intake,
      intakeCount: 0,
      token: 0,
      reply: request.reply,
      recordIndex: index,
      mode: PROCESSING_MODES.indexOf(request.mode),
      shard,
      instrumentId,
      currency,
      commandId,
      orderDirectoryKey: null,
      clientOrderKey: null,
      rejectedOrderIdNull: false,
      onQuery: null,
      onResult: null,
      deadlineMs: 0,
      late: false,
    };
  }

  /** Writes the slot and registers the pending result; undoes every claim on 503. */
  private dispatch(pending: Pending, command: SlotCommand, undoClaims: () => void): void {
    if (Atomics.load(this.shardControls[pending.shard]!, SHARD_HALTED_WORD) !== 0) {
      undoClaims();
      if (pending.orderDirectoryKey !== null) this.orderDirectory.remove(pending.orderDirectoryKey, 0, pending.shard);
      if (pending.clientOrderKey !== null) this.clientOrders.remove(pending.clientOrderKey, 0, recordRef(this.gatewayId, pending.recordIndex));
      if (pending.reply !== null) this.fail(pending.reply, 'UNAVAILABLE', `shard ${pending.shard} halted after an internal check failed; nothing was accepted; retry once the venue is restarted`, RETRY_AFTER);
      return;
    }
    const ring = this.rings[pending.shard]!;
    const full =
      ring.freeSlots() - this.unpublished[pending.shard]! === 0 ||
      this.intakeRing.freeSlots() - this.unpublishedIntake === 0 ||
      this.bodyRing.freeSlots() - this.unpublishedBodySlots < bodySlots(pending.intake?.rawBytes ?? 0) ||
      this.pending.size + this.durability.size >= this.config.maxInFlight;
    if (full) {
      undoClaims();
      if (pending.orderDirectoryKey !== null) this.orderDirectory.remove(pending.orderDirectoryKey, 0, pending.shard);
      if (pending.clientOrderKey !== null) this.clientOrders.remove(pending.clientOrderKey, 0, recordRef(this.gatewayId, pending.recordIndex));
      if (pending.reply !== null) this.fail(pending.reply, 'OVERLOADED', 'the venue is at capacity; retry with the same Idempotency-Key', RETRY_AFTER);
      return;
    }
    const ringIndex = this.write(ring, pending, command);
    this.marks.note(this.inFlightSlot, this.pending.size + this.durability.size);
    this.capture(pending, command, ring.slotOffset(ringIndex), ring.bytes);
    this.store.setQueued(
      pending.recordIndex,
      pending.shard,
      ringIndex,
      pending.intakeCount,
      command.opcode === OPCODE_REJECT && pending.rejectedOrderIdNull ? null : command.orderId,
      pending.instrumentId === '' ? null : command.instrumentId,
    );
    const mode = PROCESSING_MODES[pending.mode]!;
    pending.deadlineMs = Date.now() + this.config.durableWaitMs;
    if ((mode === 'accepted-async' || mode === 'captured-ack') && pending.reply !== null) {
      // Answered once the command log holds it (a kill -9 after the answer loses nothing); matching follows.
      const reply = pending.reply;
      pending.reply = null;
      this.answerWhenDurable(reply, pending.intakeCount, -1, 0, pending.deadlineMs, false, () => this.recordPointer(pending, mode));
    } else if (pending.reply !== null) this.resultDeadlines.push(pending);
  }

  /** Writes the command's intake record (with the slot just written) for the command log. */
  private capture(pending: Pending, command: SlotCommand, slotOffset: number, slotBytes: Uint8Array): void {
    const info = pending.intake!;
    const ring = this.intakeRing;
    writeIntake(ring, ring.slotOffset(ring.nextIndex + this.unpublishedIntake), {
      processingMode: info.mode,
      route: info.route,
      shard: pending.shard,
      principal: info.principal,
      receivedAtUs: info.receivedAtUs,
      commandId: command.commandId,
      scopeDigest: info.scopeDigest,
      payloadHash: info.payloadHash,
      orderId: command.opcode === OPCODE_REJECT && pending.rejectedOrderIdNull ? null : command.orderId,
      instrumentId: pending.instrumentId === '' ? null : command.instrumentId,
      slot: slotBytes.subarray(slotOffset, slotOffset + COMMAND_SLOT_BYTES),
      clientId: info.clientId,
      idempotencyKey: info.idempotencyKey,
      clientOrderId: info.clientOrderId,
      bodyLength: info.rawBytes,
    });
    writeBody(this.bodyRing, this.bodyRing.nextIndex + this.unpublishedBodySlots, info.raw, info.rawBytes, this.bodyScratch);
    this.unpublishedBodySlots += bodySlots(info.rawBytes);
    this.unpublishedIntake++;
    pending.intakeCount = ++this.intakeWritten;
  }

  private write(ring: RingProducer, pending: Pending, command: SlotCommand): number {
    const token = this.nextToken;
    this.nextToken = this.nextToken >= 0x7fffffff ? 1 : this.nextToken + 1;
    pending.token = token;
    this.pending.set(token, pending);
    const ringIndex = (ring.nextIndex + this.unpublished[pending.shard]!) >>> 0;
    const offset = ring.slotOffset(ringIndex);
    const w = offset >> 2;
    const f = offset >> 3;
    const words = ring.words;
    words[w + COMMAND_HEADER_WORD] = (command.header & ~0xff) | command.opcode;
    words[w + COMMAND_TOKEN_WORD] = token;
    words[w + COMMAND_RUN_WORD] = command.runNo;
    words[w + COMMAND_SESSION_WORD] = command.sessionNo;
    words.set(command.commandId, w + COMMAND_ID_WORD);
    words.set(command.orderId, w + COMMAND_ORDER_ID_WORD);
    words.set(command.instrumentId, w + COMMAND_INSTRUMENT_ID_WORD);
    words.set(command.participantId, w + COMMAND_PARTICIPANT_ID_WORD);
    words.set(command.accountId, w + COMMAND_ACCOUNT_ID_WORD);
    words[w + COMMAND_CURRENCY_WORD] = command.currency;
    words[w + COMMAND_ARGUMENT_WORD] = command.argument;
    ring.floats[f + COMMAND_PRICE_NANOS_FLOAT] = command.priceNanos;
    ring.floats[f + COMMAND_QUANTITY_UNITS_FLOAT] = command.quantityUnits;
    ring.floats[f + COMMAND_TIMESTAMP_US_FLOAT] = 0;
    this.unpublished[pending.shard]!++;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
    return ringIndex;
  }

  /**
   * Publishes the slots written during this event-loop turn and rings each shard once:
   * uWS hands over many requests per turn, and a notify per command cost 9% of a
   * gateway thread's time in a --cpu-prof run under wrk.
   */
  private readonly flush = (): void => {
    this.flushScheduled = false;
    // Intake first: a command's log record is never behind its outcome in the persistence worker.
    // No wake-up for it: every intake record comes with a slot for a shard, and the shard wakes
    // the persistence thread when it publishes that command's journal records (one wake-up
    // per shard batch instead of one more per gateway turn).
    if (this.unpublishedIntake > 0) {
      this.bodyRing.publish(this.unpublishedBodySlots); // before the records that announce them
      this.unpublishedBodySlots = 0;
      this.intakeRing.publish(this.unpublishedIntake);
      this.unpublishedIntake = 0;
    }
    for (let shard = 0; shard < this.rings.length; shard++) {
      const count = this.unpublished[shard]!;
      if (count === 0) continue;
      this.rings[shard]!.publish(count);
      this.unpublished[shard] = 0;
      this.shardBells[shard]!.ring();
    }
  };

  /** Asks a shard for an order's state (not sequenced); `then` runs with the answer. */
  private query(shard: number, orderId: Int32Array, then: (state: number) => void): void {
    const pending = ownPending(shard, 0, { onQuery: then });
    const ring = this.rings[shard]!;
    if (ring.freeSlots() - this.unpublished[shard]! === 0) {
      then(STATE_OPEN); // cannot tell: the safe answer is "still open" (a duplicate reject)
      return;
    }
    this.write(ring, pending, {
      opcode: OPCODE_QUERY, header: packHeader(OPCODE_QUERY, 0, 0, 0), runNo: 0, sessionNo: 0, commandId: ZERO_UUID, orderId,
      instrumentId: ZERO_UUID, participantId: ZERO_UUID, accountId: ZERO_UUID, currency: 0, priceNanos: 0, quantityUnits: 0, argument: 0,
    });
  }

  /**
   * The session roll's expiry (gateway/session-roll.ts): on every shard at once, EXPIRE
   * commands (core/session-expiry.ts) one at a time, each from where the last one's scan
   * ended, until the shard reports no order slot left; resolves with the orders expired
   * once every one of those commands is on the durable journal. Rejects at `deadlineMs`
   * (a shard or storage that does not keep up) or on a shard's refusal; what was sent is
   * sequenced all the same, and a start finishes an expiry left unfinished.
   */
  expireSession(floor: number, deadlineMs: number): Promise<number> {
    return new Promise((resolve, reject) => {
      let expired = 0;
      let shardsLeft = this.rings.length;
      let settled = false;
      const timer = setTimeout(() => fail('the shards or storage did not finish it in time'), Math.max(0, deadlineMs - Date.now()));
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(new Error(`the expiry of the ended session's DAY orders did not complete: ${why}`));
      };
      const send = (shard: number, first: number) => {
        if (settled) return;
        const ring = this.rings[shard]!;
        if (ring.freeSlots() - this.unpublished[shard]! === 0) {
          setTimeout(() => send(shard, first), 1); // the ring is full: the order flow's commands go first
          return;
        }
        const pending = ownPending(shard, deadlineMs, {
          onResult: (_header, events) => {
            const leading = events[0]!;
            if (leading.kind !== EVENT_ACCEPTED) return fail(`shard ${shard} refused it (${rejectName(leading.code)})`);
            const progress = expiryProgress(leading);
            expired += progress.expired;
            if (progress.slotsLeft > 0) return send(shard, first + EXPIRY_SCAN_SLOTS);
            this.durability.wait(0, shard, events[events.length - 1]!.sequence, deadlineMs, () => {
              if (--shardsLeft > 0 || settled) return;
              settled = true;
              clearTimeout(timer);
              resolve(expired);
            }, () => fail('storage did not confirm it in time'));
          },
        });
        this.write(ring, pending, {
          opcode: OPCODE_EXPIRE, header: packHeader(OPCODE_EXPIRE, 0, 0, 0), runNo: 0, sessionNo: floor, commandId: expiryCommandId(floor, shard, first), orderId: ZERO_UUID,
          instrumentId: ZERO_UUID, participantId: ZERO_UUID, accountId: ZERO_UUID, currency: 0, priceNanos: 0, quantityUnits: 0, argument: first,
        });
      };
      for (let shard = 0; shard < this.rings.length; shard++) send(shard, 0);
    });
  }

  /** POST /admin/v1/venue/sessions, its storage part: the persistence thread ends the open session and opens the next. */
  async rollSessionInStorage(runId: string | null, venueSessionId: string | null): Promise<AdminAnswer> {
    return this.admin.request({ type: 'roll-session', runId, venueSessionId });
  }

  // ---- results ----

  /** Reads every result ring once; returns the records read. */
  pollResults(): number {
    let read = 0;
    for (let shard = 0; shard < this.readers.length; shard++) {
      read += this.readers[shard]!.poll((header, events) => this.complete(shard, header, events));
    }
    if (this.resultDeadlineHead < this.resultDeadlines.length) this.expireResults();
    this.durability.check();
    if (this.waiters.length > 0) this.checkWaiters();
    if (read > 0) this.marks.note(this.inFlightSlot, this.pending.size + this.durability.size);
    return read;
  }

  private complete(shard: number, header: ResultHeader, events: ResultEvent[]): void {
    const pending = this.pending.get(header.token);
    if (pending === undefined) throw new Error(`result for unknown token ${header.token} from shard ${shard}`);
    this.pending.delete(header.token);
    if (pending.onQuery !== null) {
      pending.onQuery(header.queryState);
      return;
    }
    if (pending.onResult !== null) {
      pending.onResult(header, events);
      return;
    }
    // The same context the persistence worker derives from the journal: same bytes.
    const currency = header.currency !== 0 ? unpackCurrency(header.currency) : pending.currency;
    const outcome = renderEnvelope({ shard, instrumentId: pending.instrumentId, currency }, header, events);
    if (!outcome.accepted) {
      // A submit that did not enter the book leaves no claim on its orderId or clientOrderId,
      // except when it was rejected precisely because another order holds them.
      if (pending.orderDirectoryKey !== null && outcome.rejectCode !== 'DUPLICATE_ORDER_ID') {
        this.orderDirectory.remove(pending.orderDirectoryKey, 0, pending.shard);
      }
      if (pending.clientOrderKey !== null && outcome.rejectCode !== 'DUPLICATE_CLIENT_ORDER_ID') {
        this.clientOrders.remove(pending.clientOrderKey, 0, recordRef(this.gatewayId, pending.recordIndex));
      }
    }
    this.store.setResult(pending.recordIndex, {
      accepted: outcome.accepted,
      rejectCode: outcome.rejectCodeNumber,
      streamSequence: outcome.streamSequence,
      batch: header.batch,
      completedAtUs: header.timestampUs,
      envelope: outcome.json,
    });
    const reply = pending.reply;
    if (reply === null) return; // captured-ack and accepted-async answer on the intake commit
    // sync-result and stream-ack answer once the outcome is on the durable journal.
    const mode = PROCESSING_MODES[pending.mode]!;
    this.answerWhenDurable(reply, pending.intakeCount, shard, events[events.length - 1]!.sequence, pending.deadlineMs, pending.late, () => {
      if (mode !== 'sync-result') return this.recordPointer(pending, mode);
      this.store.setResponseToResult(pending.recordIndex, 200);
      return { status: 200, body: outcome.json };
    });
  }

  /** The 202 pointer of the async modes, recorded as the command's answer. */
  private recordPointer(pending: Pending, mode: ProcessingMode): { status: number; body: string } {
    const body = renderPointer(pending.commandId, mode);
    this.store.setResponse(pending.recordIndex, 202, body);
    return { status: 202, body };
  }

  /**
   * Sends the answer `record` gives once what it promises is durable. Past the bound
   * the client gets a 503 instead, and the answer is still recorded when durability
   * comes, for the retry with the same key.
   */
  private answerWhenDurable(
    reply: Reply,
    intake: number,
    shard: number,
    sequence: number,
    deadlineMs: number,
    alreadyLate: boolean,
    record: () => { status: number; body: string | Uint8Array },
  ): void {
    let late = alreadyLate;
    this.durability.wait(
      intake,
      shard,
      sequence,
      deadlineMs,
      () => {
        const { status, body } = record();
        if (!late) this.send(reply, status, body);
      },
      () => {
        if (late) return;
        late = true;
        this.fail(reply, 'UNAVAILABLE', STORAGE_LATE, RETRY_AFTER);
      },
    );
  }

  /**
   * sync-result and stream-ack commands whose result has not come back by their
   * deadline: the client gets the 503 now; the result, when it comes, is still
   * recorded (once durable) for the retry with the same key.
   */
  private expireResults(): void {
    const queue = this.resultDeadlines;
    const now = Date.now();
    while (this.resultDeadlineHead < queue.length) {
      const pending = queue[this.resultDeadlineHead]!;
      const waiting = this.pending.get(pending.token) === pending;
      if (waiting && pending.deadlineMs > now) break;
      this.resultDeadlineHead++;
      if (waiting && !pending.late && pending.reply !== null) {
        pending.late = true;
        this.fail(pending.reply, 'UNAVAILABLE', STORAGE_LATE, RETRY_AFTER);
      }
    }
    if (this.resultDeadlineHead === queue.length) {
      queue.length = 0;
      this.resultDeadlineHead = 0;
    } else if (this.resultDeadlineHead > 1024 && this.resultDeadlineHead * 2 > queue.length) {
      this.resultDeadlines = queue.slice(this.resultDeadlineHead);
      this.resultDeadlineHead = 0;
    }
  }

  // ---- replays and status ----

  private replayOrWait(reply: Reply, ref: number, commandId: Int32Array, scope: Uint8Array, payload: Uint8Array): void {
    const snapshot = this.snapshotOf(ref, commandId);
    if (snapshot === null) {
      // The record left this thread's memory (or the original was never taken): ask storage.
      this.replayFromStorage(reply, scope, payload);
      return;
    }
    if (snapshot.response !== null) {
      this.send(reply, snapshot.responseStatus, snapshot.response);
      return;
    }
    // Bounded like the original's own answer: a retry is never held longer than DURABLE_WAIT_MS either.
    this.waiters.push({ reply, ref, commandId, deadlineMs: Date.now() + this.config.durableWaitMs });
  }

  /** A replay answered from the command log (after a restart, or beyond the memory window). */
  private replayFromStorage(reply: Reply, scope: Uint8Array, payload: Uint8Array): void {
    this.reads.request({ type: 'replay', scopeDigest: Buffer.from(scope.subarray(0, 16)).toString('hex') /* the command log keeps 16 bytes */ }).then(
      (answer) => {
        if (!answer.ok) return this.storageFailed(reply, answer);
        const stored = answer.command;
        if (stored === null) return this.fail(reply, 'UNAVAILABLE', 'the original command was not taken; retry with the same Idempotency-Key', RETRY_AFTER);
        this.answerStoredReplay(reply, stored, payload);
      },
      (error: unknown) => this.storageSilent(reply, error),
    );
  }

  private answerStoredReplay(reply: Reply, stored: StoredCommand, payload: Uint8Array): void {
    if (stored.payloadHash !== Buffer.from(payload).toString('hex')) {
      return this.fail(reply, 'IDEMPOTENCY_CONFLICT', 'this Idempotency-Key was used with a different payload');
    }
    if (stored.responseStatus === 0 || stored.responseBody === null) {
      return this.fail(reply, 'UNAVAILABLE', 'the original command is not answered yet; retry with the same Idempotency-Key', RETRY_AFTER);
    }
    this.send(reply, stored.responseStatus, stored.responseBody);
  }

  /** Answers replays whose original has been answered meanwhile; gives up after a bound. */
  checkWaiters(): void {
    const now = Date.now();
    for (let k = this.waiters.length - 1; k >= 0; k--) {
      const waiter = this.waiters[k]!;
      const snapshot = this.snapshotOf(waiter.ref, waiter.commandId);
      if (snapshot !== null && snapshot.response === null && now < waiter.deadlineMs && !waiter.reply.aborted) continue;
      this.waiters.splice(k, 1);
      if (snapshot === null || snapshot.response === null) {
        this.fail(waiter.reply, 'UNAVAILABLE', 'the original command is not answered yet; retry with the same Idempotency-Key', RETRY_AFTER);
      } else {
        this.send(waiter.reply, snapshot.responseStatus, snapshot.response);
      }
    }
  }

  get waiting(): number {
    return this.waiters.length;
  }

  private snapshotOf(ref: number, commandId?: Int32Array): CommandSnapshot | null {
    const store = this.stores[refGateway(ref)];
    return store === undefined ? null : store.read(refIndex(ref), commandId);
  }

  /**
   * GET /api/v1/commands/{commandId}: the status view, or null if unknown (or not the
   * caller's). From this thread's shared memory when a gateway still holds the record,
   * else from storage (the read thread). It claims no more than is durable: a record whose
   * state is not yet in storage is waited for (bounded by DURABLE_WAIT_MS), and a command
   * not durably accepted by then is a 503.
   */
  async statusView(commandIdText: string, principal: Principal, any: boolean): Promise<string | null> {
    const commandId = new Int32Array(4);
    if (!parseUuidInto(commandIdText, commandId, 0)) return null;
    const ref = this.commandIds.get(commandId, 0);
    if (ref !== NOT_FOUND && ref !== STORAGE_REF) {
      const deadlineMs = Date.now() + this.config.durableWaitMs;
      for (let snapshot = this.snapshotOf(ref, commandId); snapshot !== null; snapshot = this.snapshotOf(ref, commandId)) {
        if (!any && snapshot.principal !== principal.index) return null;
        const durable = this.durableOf(ref, snapshot);
        if ((durable.captured && (snapshot.resultStatus === RESULT.NONE || durable.outcome)) || Date.now() >= deadlineMs) {
          if (!durable.captured) throw new StorageFailed({ message: 'the command is not durably accepted yet; retry shortly' });
          return renderStatusView(snapshot, durable);
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
    const answer = await this.reads.request({ type: 'command', commandId: commandIdText.toLowerCase() });
    if (!answer.ok) throw new StorageFailed(answer);
    const stored = answer.command;
    if (stored === null || (!any && stored.principal !== principal.index)) return null;
    return renderStatusView(snapshotOfStored(stored), { captured: true, taken: true, outcome: stored.resultStatus !== 0 });
  }

  /** What storage holds of a command record now: its intake record, its outcome; and whether its shard took it. */
  private durableOf(ref: number, snapshot: CommandSnapshot): Durable {
    let taken = false;
    if (snapshot.shard >= 0) {
      const readIndex = ringReadIndex(this.memory.commandRings[refGateway(ref)]![snapshot.shard]!);
      taken = ((readIndex - snapshot.ringIndex - 1) >>> 0) < 0x80000000;
    }
    return {
      captured: snapshot.intakeCount > 0 && this.control.intakeCommitted(refGateway(ref)) >= snapshot.intakeCount,
      taken,
      outcome: snapshot.resultStatus !== RESULT.NONE && this.control.journalCommitted(snapshot.shard) >= snapshot.streamSequence,
    };
  }

  /**
   * GET /admin/v1/audit/commands/{commandId}: the command as it arrived (API contract,
   * "Audit trail"), or null if storage holds no such command. From the command log's
   * intake position (after the read-your-writes wait), else from the persistence thread's
   * commands taken but not yet sequenced; asked once more in case it moved in between.
   */
  async audit(commandIdText: string): Promise<AuditRecord | null> {
    if (!isUuid(commandIdText)) return null;
    const commandId = commandIdText.toLowerCase();
    const stored = async () => {
      const answer = await this.reads.request({ type: 'audit', commandId });
      if (!answer.ok) throw new StorageFailed(answer);
      return answer.audit ?? null;
    };
    const first = await stored();
    if (first !== null) return first;
    const pending = await this.admin.request({ type: 'audit-pending', commandId });
    if (!pending.ok) throw new StorageFailed(pending);
    if (pending.type === 'audit-pending' && pending.payload !== null) return pending.payload;
    return stored();
  }

  /** A read-plane request: depth and stored snapshots from shared memory, the rest by the read thread from PostgreSQL. */
  async readPlane(read: PlaneRead): Promise<ReadAnswerBody> {
    if (read.kind === 'depth') return depthAnswer(this.depthView, this.control, this.memory.shardCount, read.instrumentId, read.levels);
    if (read.kind === 'snapshot') {
      const local = snapshotAnswer(this.snapshotView, read.instrumentId, read.projectionName);
      if (local !== null) return local;
    }
    if (read.kind === 'tape') {
      const local = await tapeAnswer(this.tapeView, this.control, this.memory.shardCount, read.instrumentId, read.limit, read.before);
      if (local !== null) return local;
    }
    if (read.kind === 'orders' || read.kind === 'fills') {
      const local = await this.ownRead(read);
      if (local !== null) return local;
    }
    // An operator's settlement request (materialize a run, a repair's retry) does work in proportion to the run: a longer bound.
    const answer = await this.reads.request({ type: 'plane', read }, read.kind === 'settlement-admin' ? SETTLEMENT_ADMIN_TIMEOUT_MS : undefined);
    if (!answer.ok) throw new StorageFailed(answer);
    if (answer.answer === undefined) throw new Error('the read thread gave no answer');
    return answer.answer;
  }

  /**
   * Own orders or fills from the persistence thread's model, with the clientOrderIds it
   * lacks looked up by orderId; null when the model cannot tell them exactly.
   */
  private async ownRead(read: Extract<PlaneRead, { kind: 'orders' | 'fills' }>): Promise<ReadAnswerBody | null> {
    const answer = await this.ownReads.request({ read });
    if (!answer.ok) throw new StorageFailed(answer);
    if (answer.rows === null) return null;
    if (answer.lookups.length > 0) {
      const found = await this.reads.request({ type: 'client-order-ids', orderIds: answer.lookups });
      if (!found.ok) throw new StorageFailed(found);
      const ids = found.clientOrderIds ?? {};
      for (const row of answer.rows) {
        if (row.clientOrderId !== undefined) continue;
        const id = ids[row.orderId as string];
        if (id === undefined) return null; // storage lacks the row (quarantined): the read is storage's, as a fallback's is
        row.clientOrderId = id;
      }
    }
    return { status: 200, body: JSON.stringify({ rows: answer.rows, limit: read.limit }) };
  }

  /** GET /admin/v1/persistence/status, from the persistence thread. */
  async persistenceStatus(): Promise<AdminAnswer> {
    return this.admin.request({ type: 'status' });
  }

  /**
   * Every bounded queue of the venue with its capacity, depth now and high-water mark:
   * the rings from their headers, the others from the shared marks (each written by the
   * queue's owner thread). Shown by GET /admin/v1/persistence/status.
   */
  queueReport(): QueueReport[] {
    const { memory, config, marks } = this;
    const rows: QueueReport[] = [];
    const ring = (name: string, buffer: SharedArrayBuffer, slotBytes: number) => rows.push({ name, ...ringMarks(buffer, slotBytes) });
    const slot = (name: string, index: number, capacity: number) => rows.push({ name, capacity, now: marks.now(index), highWater: marks.highWater(index) });
    for (let g = 0; g < memory.gatewayCount; g++) {
      for (let s = 0; s < memory.shardCount; s++) ring(`command ring gateway ${g} → shard ${s}`, memory.commandRings[g]![s]!, COMMAND_SLOT_BYTES);
    }
    for (let s = 0; s < memory.shardCount; s++) {
      for (let g = 0; g < memory.gatewayCount; g++) ring(`result ring shard ${s} → gateway ${g}`, memory.resultRings[s]![g]!, RESULT_RECORD_BYTES);
    }
    for (let g = 0; g < memory.gatewayCount; g++) ring(`intake ring gateway ${g} → persistence`, memory.intakeRings[g]!, INTAKE_RECORD_BYTES);
    for (let s = 0; s < memory.shardCount; s++) ring(`journal ring shard ${s} → persistence`, memory.journalRings[s]!, RESULT_RECORD_BYTES);
    for (let g = 0; g < memory.gatewayCount; g++) {
      slot(`commands in flight, gateway ${g}`, QUEUE_SLOTS.gatewayInFlight(g), config.maxInFlight);
      slot(`requests waiting for the read thread, gateway ${g}`, QUEUE_SLOTS.gatewayReads(g), config.maxWaitingReads);
      slot(`operator requests waiting for the persistence thread, gateway ${g}`, QUEUE_SLOTS.gatewayOperator(g), OPERATOR_WAITING_MAX);
      slot(`own-order reads waiting for the persistence thread, gateway ${g}`, QUEUE_SLOTS.gatewayOwnReads(g), config.maxWaitingReads);
    }
    slot('tier 2 groups sealed and not yet flushed', QUEUE_SLOTS.sealedGroups, SEALED_GROUPS_MAX);
    slot('bytes of commits whose ingest a running rebuild holds', QUEUE_SLOTS.heldBytes, config.rebuildHeldBytesMax);
    slot(
      'open connections (the venue\'s files beyond those open before it listened; at the capacity new connections are refused)',
      QUEUE_SLOTS.connections(memory.gatewayCount),
      Atomics.load(new Int32Array(memory.venueControl), VENUE_CONNECTION_LIMIT_WORD),
    );
    return rows;
  }

  /** The key filters' size, rating and load (core/key-filter.ts). Shown by GET /admin/v1/persistence/status. */
  keyFilterReport(): { name: string; bits: number; ratedKeys: number; keys: number }[] {
    return Object.entries(namedKeyFilters(this.memory)).map(([name, filter]) => ({ name, bits: filter.bits, ratedKeys: filter.ratedKeys, keys: filter.added }));
  }

  /** POST /admin/v1/projections/order-lifecycle/rebuild, run by the persistence thread. */
  async rebuildLifecycle(): Promise<AdminAnswer> {
    return this.admin.request({ type: 'rebuild-lifecycle' });
  }

  // ---- answers ----

  private send(reply: Reply, status: number, body: string | Uint8Array, headers?: Record<string, string>): void {
    if (reply.aborted) return;
    reply.send(status, body, headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...headers });
  }

  private fail(reply: Reply, code: ErrorCode, message: string, headers?: Record<string, string>): void {
    this.send(reply, ERRORS[code].status, errorBody(code, message), headers);
  }

  /** A 503 for a question storage failed: its message, its cause logged under the answer's request id. */
  private storageFailed(reply: Reply, failure: StorageFailure): void {
    this.send(reply, 503, serverErrorBody('UNAVAILABLE', `${failure.message} (retry with the same Idempotency-Key)`, failure.cause), RETRY_AFTER);
  }

  /** A 503 for a question storage did not answer (the port's error: full, timed out). */
  private storageSilent(reply: Reply, error: unknown): void {
    this.send(reply, 503, serverErrorBody('UNAVAILABLE', 'storage did not answer; retry with the same Idempotency-Key', error), RETRY_AFTER);
  }
}

const encoder = new TextEncoder();
const STORAGE_LATE = 'storage did not confirm in time; retry with the same Idempotency-Key (the command keeps its outcome)';

/** A command read back from storage, in the shape the status view renders. */
function snapshotOfStored(stored: StoredCommand): CommandSnapshot {
  const status = stored.resultStatus === 1 ? STATUS.COMPLETED : stored.resultStatus === 2 ? STATUS.REJECTED : STATUS.ACCEPTED;
  return {
    status,
    internalStatus: stored.resultStatus === 0 ? INTERNAL.RECEIVED : INTERNAL.COMPLETED,
    processingMode: stored.processingMode,
    route: stored.route,
    responseStatus: stored.responseStatus,
    shard: stored.shard,
    resultStatus: stored.resultStatus,
    rejectCode: stored.rejectCode === '' ? 0 : rejectCodeOf(stored.rejectCode),
    principal: stored.principal,
    ringIndex: 0,
    deliveredCount: stored.resultStatus === 0 ? 0 : 1,
    commandId: stored.commandId,
    orderId: stored.orderId,
    instrumentId: stored.instrumentId,
    payloadHash: stored.payloadHash,
    clientId: stored.clientId,
    idempotencyKey: stored.idempotencyKey,
    response: stored.responseBody === null ? null : encoder.encode(stored.responseBody),
    result: stored.resultPayloadJson === null ? null : encoder.encode(stored.resultPayloadJson),
    streamSequence: stored.streamSequence,
    batch: stored.shardBatch,
    receivedAtUs: 0,
    completedAtUs: 0,
    intakeCount: 1,
  };
}

/** The order a cancel or modify names, and the context it quotes, as words and session numbers. */
interface OrderContext {
  orderId: Int32Array;
  instrumentId: Int32Array;
  participantId: Int32Array;
  accountId: Int32Array;
  runNo: number;
  sessionNo: number;
}

function formatWords(words: Int32Array): string {
  return formatUuid(words, 0);
}
