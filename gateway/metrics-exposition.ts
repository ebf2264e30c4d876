// GET /metrics: the Prometheus text exposition, written by prom-client. The venue's own
// figures are read at scrape time from shared memory that each thread writes for itself
// (core/venue-metrics.ts, the queue marks, the persistence control block), so counting
// costs the order path no lock and no message. prom-client's Counter and Histogram keep
// their own values and cannot be loaded from those, so each venue metric is a small
// object prom-client's Registry asks for its values (get()).

import { collectDefaultMetrics, Registry, type Metric } from 'prom-client';
import { PersistenceControl } from '../core/persistence-control.ts';
import type { QueueMarks } from '../core/queue-marks.ts';
import { COMMAND_ROUTES, HISTOGRAM_BOUNDS_SECONDS, MetricsReader, MODES, OUTCOMES, type HistogramReading } from '../core/venue-metrics.ts';
import { StreamReader } from '../core/market-stream.ts';
import type { VenueConfig } from '../core/config.ts';
import { STATUS_LABELS } from './http-metrics.ts';
import { queueRows } from './operator-reports.ts';
import type { VenueMemory } from './venue-memory.ts';

type Labels = Record<string, string>;
interface Sample {
  metricName?: string;
  labels: Labels;
  value: number;
}

const BOUND_LABELS = [...HISTOGRAM_BOUNDS_SECONDS.map(String), '+Inf'];

/** A histogram's samples as Prometheus wants them: cumulative _bucket per `le`, _sum, _count. */
function histogramSamples(name: string, labels: Labels, reading: HistogramReading, into: Sample[]): void {
  reading.cumulative.forEach((value, bucket) => into.push({ metricName: `${name}_bucket`, labels: { ...labels, le: BOUND_LABELS[bucket]! }, value }));
  into.push({ metricName: `${name}_sum`, labels, value: reading.sum });
  into.push({ metricName: `${name}_count`, labels, value: reading.count });
}

/** A metric whose values are read when the registry is scraped. */
function sharedMetric(name: string, help: string, type: 'counter' | 'gauge' | 'histogram', values: () => Sample[]): Metric {
  return { name, help, type, get: () => ({ name, help, type, values: values(), aggregator: 'sum' }) } as unknown as Metric;
}

export class MetricsExposition {
  private readonly registry = new Registry();

  /** `routes`: this gateway's route labels by index (the same in every gateway: one app, registered alike). */
  constructor(memory: VenueMemory, config: VenueConfig, marks: QueueMarks, routes: readonly string[]) {
    const reader = new MetricsReader(memory.metrics);
    const control = new PersistenceControl(memory.persistenceControl);
    const register = (metric: Metric) => this.registry.registerMetric(metric);

    register(
      sharedMetric('venue_http_requests_total', 'HTTP requests answered, by route pattern and status.', 'counter', () => {
        const samples: Sample[] = [];
        routes.forEach((route, index) =>
          STATUS_LABELS.forEach((status, slot) => {
            const value = reader.answers(index, slot);
            if (value > 0) samples.push({ labels: { route, status }, value });
          }),
        );
        return samples;
      }),
    );
    register(
      sharedMetric('venue_commands_total', 'Order commands answered, by route and outcome (accepted, rejected by the engine, replayed, invalid, conflict, unavailable).', 'counter', () =>
        COMMAND_ROUTES.flatMap((route, index) => OUTCOMES.map((outcome, slot) => ({ labels: { route, outcome }, value: reader.commands(index, slot) }))),
      ),
    );
    register(
      sharedMetric(
        'venue_command_duration_seconds',
        'Order commands from arrival (the body read and valid, when the intake record is stamped) to answer, by route and processing mode; the 400s are not timed.',
        'histogram',
        () => {
          const samples: Sample[] = [];
          COMMAND_ROUTES.forEach((route, index) => MODES.forEach((mode, slot) => histogramSamples('venue_command_duration_seconds', { route, mode }, reader.duration(index, slot), samples)));
          return samples;
        },
      ),
    );
    register(
      sharedMetric('venue_journal_commit_duration_seconds', 'Journal (tier 1) commits, from sending the transaction to its answer.', 'histogram', () => {
        const samples: Sample[] = [];
        histogramSamples('venue_journal_commit_duration_seconds', {}, reader.journalCommits(), samples);
        return samples;
      }),
    );
    register(
      sharedMetric('venue_projection_lag_commands', 'Per shard: positions of the shard stream durable in the journal and not yet in the projection tables (one per event of a command).', 'gauge', () =>
        Array.from({ length: memory.shardCount }, (_, shard) => ({ labels: { shard: String(shard) }, value: Math.max(0, control.journalCommitted(shard) - control.projected(shard)) })),
      ),
    );
    register(
      sharedMetric('venue_queue_high_water', 'The deepest each bounded queue has been since the start (its capacity in venue_queue_capacity).', 'gauge', () =>
        queueRows(memory, config, marks).map((row) => ({ labels: { queue: row.key }, value: row.highWater })),
      ),
    );
    register(
      sharedMetric('venue_queue_capacity', 'The bound of each bounded queue.', 'gauge', () => queueRows(memory, config, marks).map((row) => ({ labels: { queue: row.key }, value: row.capacity }))),
    );
    // Each gateway keeps its stream's count in the stream ring's header (core/market-stream.ts).
    const stream = new StreamReader(memory.marketStream);
    register(sharedMetric('venue_market_data_subscribers', 'Market-data stream sockets with at least one subscription, all gateways.', 'gauge', () => [{ labels: {}, value: stream.subscribers() }]));
    // Process-wide CPU and memory; the event loop lag and heap are this gateway thread's.
    collectDefaultMetrics({ register: this.registry });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
