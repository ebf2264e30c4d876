// The order flow of one gateway thread: its parts created once at start and wired, and
// the one surface the routes, the result loop and the session roll call.

import { DB_DOWN, PersistenceControl } from '../core/persistence-control.ts';
import { Doorbell } from '../core/doorbell.ts';
import { QueueMarks, QUEUE_SLOTS } from '../core/queue-marks.ts';
import { SHARD_HALTED_WORD } from '../core/shard-runner.ts';
import type { AdminAnswer, AdminRequest, AuditRecord, OwnReadAnswer, OwnReadRequest, PlaneRead, ReadAnswer, ReadPlaneAnswer, ReadRequest } from '../core/storage-protocol.ts';
import { CommandDispatch } from './command-dispatch.ts';
import { CommandIntake } from './command-intake.ts';
import { CommandReads } from './command-reads.ts';
import { CommandStore } from './command-store.ts';
import type { VenueConfig } from '../core/config.ts';
import { ResultDeadlines } from './durable-answers.ts';
import { DurabilityGate } from './durability.ts';
import { attachClaimTables, type AdminClient, type OrderRequest, type OwnReadClient, type Pending, type ReadClient } from './flow-records.ts';
import { keyFilterReport, OPERATOR_WAITING_MAX, queueReport, type QueueReport } from './operator-reports.ts';
import { OrderRouting } from './order-routing.ts';
import { PlaneReads } from './plane-reads.ts';
import type { Principal } from './principals.ts';
import { Replays } from './replays.ts';
import { ResultDelivery } from './result-delivery.ts';
import { expireSession } from './session-expiry-commands.ts';
import type { SessionRegistry } from './sessions.ts';
import { PortClient } from './storage-client.ts';
import { embeddedStorageProblem } from './storage-state.ts';
import type { VenueMemory } from './venue-memory.ts';

/** Where this gateway reaches storage. */
export interface PersistencePorts {
  read: import('node:worker_threads').MessagePort;
  admin: import('node:worker_threads').MessagePort;
  /** The persistence thread's in-memory own orders and fills. */
  ownReads: import('node:worker_threads').MessagePort;
}

/**
 * The parts, one job each:
 *
 *   command-intake.ts     idempotency and commandId claims, replays (replays.ts)
 *   order-routing.ts      order directory and clientOrderId claims, the shard
 *   command-dispatch.ts   the slot, intake record and body on the rings
 *   result-delivery.ts    results rendered, recorded, answered once durable (durable-answers.ts)
 *   command-reads.ts, plane-reads.ts, operator-reports.ts, session-expiry-commands.ts
 */
export class OrderFlow {
  private readonly config: VenueConfig;
  private readonly memory: VenueMemory;
  /** The commands and queries waiting for their shard's result, by token: filled by the dispatch, emptied by the delivery. */
  private readonly pending = new Map<number, Pending>();
  readonly doorbell: Doorbell;
  private readonly control: PersistenceControl;
  readonly durability: DurabilityGate;
  private readonly reads: ReadClient;
  private readonly admin: AdminClient;
  private readonly ownReads: OwnReadClient;
  private readonly marks: QueueMarks;
  private readonly inFlightSlot: number;
  /** The venue control words (gateway/venue-memory.ts): the embedded server's supervisor among them. */
  private readonly venueControl: Int32Array;
  /** Each shard's control words: whether it halted (core/shard-runner.ts). */
  private readonly shardControls: Int32Array[];

  private readonly deadlines: ResultDeadlines;
  private readonly commands: CommandDispatch;
  private readonly replays: Replays;
  private readonly intake: CommandIntake;
  private readonly results: ResultDelivery;
  private readonly commandReads: CommandReads;
  private readonly planeReads: PlaneReads;

  constructor(gatewayId: number, config: VenueConfig, memory: VenueMemory, sessions: SessionRegistry, ports: PersistencePorts) {
    this.config = config;
    this.memory = memory;
    this.venueControl = new Int32Array(memory.venueControl);
    this.shardControls = memory.shardControls.map((control) => new Int32Array(control));
    const tables = attachClaimTables(memory);
    const stores = memory.commandStores.map((buffer) => new CommandStore(buffer, memory.storeRecords));
    const store = stores[gatewayId]!;
    this.doorbell = new Doorbell(memory.gatewayDoorbells[gatewayId]!);
    this.control = new PersistenceControl(memory.persistenceControl);
    this.durability = new DurabilityGate(this.control, gatewayId, memory.shardCount);
    this.marks = new QueueMarks(memory.queueMarks);
    this.inFlightSlot = QUEUE_SLOTS.gatewayInFlight(gatewayId);
    this.reads = new PortClient<ReadRequest, ReadAnswer>(ports.read, 5_000, config.maxWaitingReads, (depth) => this.marks.note(QUEUE_SLOTS.gatewayReads(gatewayId), depth));
    this.admin = new PortClient<AdminRequest, AdminAnswer>(ports.admin, 600_000, OPERATOR_WAITING_MAX, (depth) => this.marks.note(QUEUE_SLOTS.gatewayOperator(gatewayId), depth));
    this.ownReads = new PortClient<OwnReadRequest, OwnReadAnswer>(ports.ownReads, 5_000, config.maxWaitingReads, (depth) => this.marks.note(QUEUE_SLOTS.gatewayOwnReads(gatewayId), depth));

    this.deadlines = new ResultDeadlines(this.pending);
    this.commands = new CommandDispatch(gatewayId, config, memory, store, tables, this.shardControls, this.pending, this.durability, this.deadlines, this.marks, this.inFlightSlot);
    this.replays = new Replays(stores, this.reads, config);
    const routing = new OrderRouting(gatewayId, memory.shardCount, sessions, tables, stores, this.reads, this.commands);
    this.intake = new CommandIntake(gatewayId, this.control, stores, tables, this.reads, this.replays, routing);
    this.results = new ResultDelivery(gatewayId, memory, store, tables, this.pending, this.durability);
    this.commandReads = new CommandReads(config, memory, this.control, tables.commandIds, stores, this.reads, this.admin);
    this.planeReads = new PlaneReads(memory, this.control, this.reads, this.ownReads);
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
    return this.pending.size + this.replays.waiting + this.durability.size;
  }

  /** Replays waiting for their original's answer (the result loop looks at them every 2 ms). */
  get waiting(): number {
    return this.replays.waiting;
  }

  /** True when a result ring has something to read, or storage made answers durable since the last poll. */
  resultsWaiting(): boolean {
    return this.results.resultsWaiting();
  }

  /** An order command, authenticated, validated and authorized: answered on its reply. */
  handle(request: OrderRequest): void {
    this.intake.handle(request);
  }

  /** Reads every result ring once, then the deadlines, durability and waiting replays; returns the records read. */
  pollResults(): number {
    const read = this.results.poll();
    if (this.deadlines.waiting) this.deadlines.expire();
    this.durability.check();
    if (this.replays.waiting > 0) this.replays.checkWaiters();
    if (read > 0) this.marks.note(this.inFlightSlot, this.pending.size + this.durability.size);
    return read;
  }

  /** GET /api/v1/commands/{commandId} (command-reads.ts). */
  statusView(commandIdText: string, principal: Principal, any: boolean): Promise<string | null> {
    return this.commandReads.statusView(commandIdText, principal, any);
  }

  /** GET /admin/v1/audit/commands/{commandId} (command-reads.ts). */
  audit(commandIdText: string): Promise<AuditRecord | null> {
    return this.commandReads.audit(commandIdText);
  }

  /** A read-plane request (plane-reads.ts). */
  readPlane(read: PlaneRead): Promise<ReadPlaneAnswer> {
    return this.planeReads.readPlane(read);
  }

  /** GET /admin/v1/persistence/status, from the persistence thread. */
  async persistenceStatus(): Promise<AdminAnswer> {
    return this.admin.request({ type: 'status' });
  }

  queueReport(): QueueReport[] {
    return queueReport(this.memory, this.config, this.marks);
  }

  keyFilterReport(): { name: string; bits: number; ratedKeys: number; keys: number }[] {
    return keyFilterReport(this.memory);
  }

  /** POST /admin/v1/projections/order-lifecycle/rebuild, run by the persistence thread. */
  async rebuildLifecycle(): Promise<AdminAnswer> {
    return this.admin.request({ type: 'rebuild-lifecycle' });
  }

  /** The session roll's expiry of the ended session's DAY orders on every shard (session-expiry-commands.ts). */
  expireSession(floor: number, deadlineMs: number): Promise<number> {
    return expireSession(this.commands, this.durability, floor, deadlineMs);
  }

  /** POST /admin/v1/venue/sessions, its storage part: the persistence thread ends the open session and opens the next. */
  async rollSessionInStorage(runId: string | null, venueSessionId: string | null): Promise<AdminAnswer> {
    return this.admin.request({ type: 'roll-session', runId, venueSessionId });
  }
}
