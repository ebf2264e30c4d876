// The venue session's and the operator's schemas: the session and its roll, the projection
// rebuild's answer and the persistence status with its queues and key filters.

import { count, sessionString, timestamp } from './schema-shared.ts';

export const venueSessionSchema = {
  $id: 'VenueSession',
  type: 'object',
  additionalProperties: false,
  properties: { runId: sessionString, venueSessionId: sessionString, startedAt: timestamp },
  required: ['runId', 'venueSessionId', 'startedAt'],
} as const;

/** POST /admin/v1/venue/sessions: the session to open (both optional: the open session's runId, `session-<n>`). */
export const sessionRollSchema = {
  $id: 'VenueSessionRoll',
  type: 'object',
  additionalProperties: false,
  properties: { runId: sessionString, venueSessionId: sessionString },
} as const;

const endedSession = {
  type: 'object',
  additionalProperties: false,
  properties: { runId: sessionString, venueSessionId: sessionString, startedAt: timestamp, endedAt: timestamp },
  required: ['runId', 'venueSessionId', 'startedAt', 'endedAt'],
} as const;

/** The roll's answer: the session now open, the one that ended (null if none did), the DAY orders this call expired. */
export const sessionRollAnswerSchema = {
  $id: 'VenueSessionRolled',
  type: 'object',
  additionalProperties: false,
  properties: {
    runId: sessionString,
    venueSessionId: sessionString,
    startedAt: timestamp,
    previous: { anyOf: [{ type: 'null' }, endedSession] },
    expiredOrders: { type: 'integer', minimum: 0 },
  },
  required: ['runId', 'venueSessionId', 'startedAt', 'previous', 'expiredOrders'],
} as const;

export const rebuildStatusSchema = {
  $id: 'RebuildStatus',
  type: 'object',
  additionalProperties: false,
  properties: {
    projection: { type: 'string', const: 'runtime.order_lifecycle_state' },
    status: { type: 'string', enum: ['COMPLETED'] },
    rowsRebuilt: { type: 'integer', minimum: 0 },
    startedAt: timestamp,
    finishedAt: timestamp,
  },
  required: ['projection', 'status', 'rowsRebuilt', 'startedAt', 'finishedAt'],
} as const;

const latency = {
  type: 'object',
  additionalProperties: false,
  description: 'microseconds; percentiles are the upper bound of a bucket at most 0.1% wide, capped at max',
  properties: { count, p50: count, p90: count, p99: count, max: count },
  required: ['count', 'p50', 'p90', 'p99', 'max'],
} as const;

export const persistenceStatusSchema = {
  $id: 'PersistenceStatus',
  type: 'object',
  additionalProperties: false,
  properties: {
    database: { type: 'string', enum: ['starting', 'up', 'down'] },
    embeddedPostgres: {
      description:
        "the embedded PostgreSQL's supervisor; null with DATABASE_URL. restarting: it exited on its own and is being started again (try attempt of maxTries); failed: it gave up, orders are 503 until the venue is restarted",
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          properties: { state: { enum: ['up', 'restarting', 'failed'] }, attempt: count, maxTries: count, restarts: count },
          required: ['state', 'attempt', 'maxTries', 'restarts'],
        },
      ],
    },
    shards: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { shardId: count, journalCommitted: count, projected: count, projectionLag: { type: 'integer', description: 'journal sequences not yet materialized' } },
        required: ['shardId', 'journalCommitted', 'projected', 'projectionLag'],
      },
    },
    journal: {
      type: 'object',
      additionalProperties: false,
      properties: {
        commits: count,
        intakeRows: count,
        journalRows: count,
        commands: count,
        events: count,
        bytes: count,
        busyMs: count,
        rowsPerBusySecond: count,
        captureLatencyUs: latency,
        journalLatencyUs: latency,
      },
      required: ['commits', 'intakeRows', 'journalRows', 'commands', 'events', 'bytes', 'busyMs', 'rowsPerBusySecond', 'captureLatencyUs', 'journalLatencyUs'],
    },
    projections: {
      type: 'object',
      additionalProperties: false,
      properties: {
        groups: count,
        rows: count,
        busyMs: count,
        rowsPerBusySecond: count,
        errors: count,
        quarantinedRows: {
          ...count,
          description: 'projection rows storage refused, kept in runtime.quarantined_rows with their journal position (a group quarantined whole counts each of its COPYs)',
        },
        quarantinedGroups: { ...count, description: 'projection groups whose data storage refused in a way no single row explains, quarantined whole' },
        lagUs: { ...latency, description: 'projection lag per journal batch: its journal commit to its projection commit (microseconds)' },
        lagBuckets: {
          type: 'array',
          maxItems: 576,
          description:
            'the histogram behind lagUs since the start: its non-empty buckets, smallest first, as [upper bound in microseconds, count]; two readings subtracted give the percentiles of the time in between',
          items: { type: 'array', minItems: 2, maxItems: 2, items: count },
        },
      },
      required: ['groups', 'rows', 'busyMs', 'rowsPerBusySecond', 'errors', 'quarantinedRows', 'quarantinedGroups', 'lagUs', 'lagBuckets'],
    },
    queues: {
      type: 'array',
      description:
        'every bounded queue of the venue (rings between threads, commands in flight, requests waiting for the storage threads, tier 2 groups): its capacity, its depth now and the deepest it has been since the start',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { name: { type: 'string' }, capacity: count, now: count, highWater: count },
        required: ['name', 'capacity', 'now', 'highWater'],
      },
    },
    keyFilters: {
      type: 'array',
      description:
        'the filters of keys the shared tables forgot (idempotency scopes, commandIds, orderIds, clientOrderIds per participant): their size (sized at start for the stored keys), the keys they are rated for at about 1% false positives and the keys they hold; past the rating more new commands are checked in storage',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { name: { type: 'string', enum: ['idempotency', 'commandIds', 'orderIds', 'clientOrderIds'] }, bits: count, ratedKeys: count, keys: count },
        required: ['name', 'bits', 'ratedKeys', 'keys'],
      },
    },
  },
  required: ['database', 'embeddedPostgres', 'shards', 'journal', 'projections', 'queues', 'keyFilters'],
} as const;
