/**
 * The service's metrics. The features count what they do in plain fields, read only when scraped;
 * only the request and commit histograms are told of each event. No label ever holds an installation
 * id, a token or a location: routes are patterns, reasons and scopes are short fixed words.
 */
import type { CommitObserver, CommitterStats } from '../db/committer.ts';
import { VERSION } from '../version.ts';
import { Counter, Histogram, Reading, type Metric } from './registry.ts';

const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SYNC_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const GROUP_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

/** Methods a client may send; any other is counted as `other`, so that a label cannot grow without end. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);

type Counts = ReadonlyMap<string, number>;

/** Where the scrape reads what the features counted. */
export interface MetricsSources {
  telemetry: { samplesStored: number; valuesDropped: Counts };
  consumption: { chunksStored: number };
  sessions: { stored: number };
  committer: { stats: CommitterStats };
  planner: { stats: { sent: number }; failures: { retried: Counts; givenUp: Counts } };
  plannerWaiting: () => number;
  /** Null without APPROVAL_PASSWORD: no pairing, no lockout. */
  pairing: {
    book: { counts: { started: number; approved: number } };
    lock: { lockouts: { address: number; backstop: number } };
  } | null;
}

export class Metrics implements CommitObserver {
  private readonly httpRequests = new Counter('ev_ingest_http_requests_total', 'HTTP requests answered.', [
    'route',
    'method',
    'status',
  ]);
  private readonly httpDuration = new Histogram(
    'ev_ingest_http_request_duration_seconds',
    'Time from a request to its answer.',
    SECONDS_BUCKETS,
    ['route'],
  );
  private readonly commitGroupWrites = new Histogram(
    'ev_ingest_commit_group_writes',
    'Writes per committed group.',
    GROUP_BUCKETS,
  );
  private readonly walSyncDuration = new Histogram(
    'ev_ingest_wal_sync_duration_seconds',
    'Time of one sync of the WAL.',
    SYNC_BUCKETS,
  );
  private metrics: Metric[] = [];

  /** Reads the features' counts from `sources` at each scrape from now on. */
  readFrom(sources: MetricsSources): void {
    const { telemetry, consumption, sessions, committer, planner, pairing } = sources;
    const counter = (name: string, help: string, read: () => number | Counts, label?: string) =>
      new Reading(name, help, 'counter', read, label);
    this.metrics = [
      this.httpRequests,
      this.httpDuration,
      counter('ev_ingest_samples_stored_total', 'Telemetry samples stored.', () => telemetry.samplesStored),
      counter(
        'ev_ingest_values_dropped_total',
        'Telemetry values (or whole samples) dropped.',
        () => telemetry.valuesDropped,
        'reason',
      ),
      counter('ev_ingest_chunks_stored_total', 'Consumption chunks stored.', () => consumption.chunksStored),
      counter('ev_ingest_sessions_stored_total', 'Charging sessions stored.', () => sessions.stored),
      counter('ev_ingest_commit_groups_total', 'Group transactions committed.', () => committer.stats.groups),
      this.commitGroupWrites,
      this.walSyncDuration,
      new Reading('ev_ingest_planner_waiting', 'Samples waiting for the planner.', 'gauge', sources.plannerWaiting),
      counter('ev_ingest_planner_sent_total', 'Samples the planner accepted.', () => planner.stats.sent),
      counter(
        'ev_ingest_planner_retries_total',
        'Planner attempts to be retried.',
        () => planner.failures.retried,
        'reason',
      ),
      counter(
        'ev_ingest_planner_given_up_total',
        'Samples the planner never took.',
        () => planner.failures.givenUp,
        'reason',
      ),
      counter('ev_ingest_pairing_started_total', 'Pairing requests started.', () => pairing?.book.counts.started ?? 0),
      counter(
        'ev_ingest_pairing_approved_total',
        'Pairing requests approved.',
        () => pairing?.book.counts.approved ?? 0,
      ),
      counter(
        'ev_ingest_lockouts_total',
        'Approval lockouts begun.',
        () => new Map(Object.entries(pairing?.lock.lockouts ?? { address: 0, backstop: 0 })),
        'scope',
      ),
      new Reading('ev_ingest_build_info', 'The running version.', 'gauge', () => new Map([[VERSION, 1]]), 'version'),
      new Reading('process_resident_memory_bytes', 'Resident memory of the process.', 'gauge', () =>
        process.memoryUsage.rss(),
      ),
      new Reading(
        'process_start_time_seconds',
        'When the process started, in seconds since 1970.',
        'gauge',
        () => performance.timeOrigin / 1000,
      ),
      counter('process_cpu_seconds_total', 'CPU time of the process, user and system.', cpuSeconds),
    ];
  }

  /** One answered request; `route` is the route's pattern, never the path. */
  requestServed(route: string, method: string, status: number, seconds: number): void {
    this.httpRequests.inc([route, METHODS.has(method) ? method : 'other', String(status)]);
    this.httpDuration.observe(seconds, [route]);
  }

  groupCommitted(writes: number): void {
    this.commitGroupWrites.observe(writes);
  }

  walSynced(ms: number): void {
    this.walSyncDuration.observe(ms / 1000);
  }

  /** The text a scrape answers. */
  exposition(): string {
    return this.metrics.map((metric) => metric.render()).join('');
  }
}

function cpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}
