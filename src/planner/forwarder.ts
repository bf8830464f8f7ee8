/**
 * Hands stored samples to the planner. The samples table is the outbox: telemetry stores a sample
 * as pending in the same transaction as the sample, and this forwarder marks it sent or given up
 * through the committer, so a re-sent batch or a restart never sends a sample twice.
 *
 * Per installation one loop sends its waiting samples oldest first, one request at a time; at most
 * `plannerInFlight` requests run at once overall. A loop holds at most `plannerQueueSamples` samples
 * in memory and reads the next page from the database as it drains, so a planner that is down for
 * hours costs bounded memory and loses nothing: samples are given up only after their last attempt
 * or on an answer that retrying cannot change.
 */
import type { Database } from 'bun:sqlite';
import type { PlannerConfig } from '../config.ts';
import type { Committer } from '../db/committer.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import { installationsWithPending, pendingSamplesQuery, type PendingSample } from './store.ts';
import { formBody, postSample, type Delivery, type FailureReason } from './wire.ts';

/** Every wait of the forwarder, injectable so that tests run backoffs and deadlines in milliseconds. */
export interface PlannerTimers {
  /** Waits out a backoff delay; resolves early when `signal` aborts. */
  backoff(ms: number, signal: AbortSignal): Promise<void>;
  /** Resolves after `ms` (a request's deadline, the shutdown grace), or early when `signal` aborts. */
  deadline(ms: number, signal: AbortSignal): Promise<void>;
  /** The jitter of a backoff, in [0, 1). */
  random(): number;
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}

export const realTimers: PlannerTimers = { backoff: sleep, deadline: sleep, random: Math.random };

export interface ForwarderOptions {
  config: PlannerConfig;
  db: Database;
  committer: Committer;
  log: Logger;
  timers?: PlannerTimers;
  fetch?: typeof fetch;
}

interface Installation {
  id: string;
  token: string;
  /** Waiting samples read from the outbox, oldest first; the head is the one being delivered. */
  queue: PendingSample[];
  /** New samples were committed since the queue was read. */
  reread: boolean;
  /** The last page was full: more samples wait in the database. */
  more: boolean;
  /** Delay before the next attempt; kept across samples so a planner that is down is probed less and less. */
  backoffMs: number;
}

export interface ForwarderStats {
  sent: number;
  givenUp: number;
  retried: number;
}

export class PlannerForwarder {
  readonly stats: ForwarderStats = { sent: 0, givenUp: 0, retried: 0 };
  private readonly installations = new Map<string, Installation>();
  private readonly loops = new Set<Promise<void>>();
  private readonly slots = new Slots(limits.plannerInFlight);
  /** Aborted at shutdown: no new attempt starts, backoff waits end. */
  private readonly halt = new AbortController();
  /** Aborted when shutdown stops waiting for requests in flight. */
  private readonly abandon = new AbortController();
  private readonly pending;
  private readonly timers: PlannerTimers;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: ForwarderOptions) {
    this.pending = pendingSamplesQuery(options.db);
    this.timers = options.timers ?? realTimers;
    this.fetch = options.fetch ?? fetch;
  }

  /** Whether samples of this installation go to the planner: a key and a token for it are configured. */
  forwards(installationId: string): boolean {
    return this.tokenFor(installationId) !== null;
  }

  /** Called after a commit that stored pending samples of the installation; never waits. */
  stored(installationId: string): void {
    const token = this.tokenFor(installationId);
    if (token === null || this.halt.signal.aborted) return;
    const known = this.installations.get(installationId);
    if (known) known.reread = true;
    else this.startLoop(installationId, token);
  }

  /** Start-up scan: sends what was still waiting when the server last stopped. */
  resume(): void {
    if (this.options.config.apiKey === null) return;
    const waiting = installationsWithPending(this.options.db).filter((id) => this.forwards(id));
    for (const id of waiting) this.stored(id);
    if (waiting.length > 0) this.options.log.info('planner.resumed', { installations: waiting.length });
  }

  /** For the start-up line: `off`, `all installations` or `N installations`; never a key or a token. */
  get coverage(): string {
    const { apiKey, defaultToken, tokens } = this.options.config;
    if (apiKey === null || (defaultToken === null && tokens.size === 0)) return 'off';
    if (defaultToken !== null) return 'all installations';
    return tokens.size === 1 ? '1 installation' : `${tokens.size} installations`;
  }

  /** Resolves once no installation has a loop running. */
  async idle(): Promise<void> {
    while (this.loops.size > 0) await Promise.all(this.loops);
  }

  /** Starts no new attempt, waits up to `graceMs` for requests in flight, then abandons them. */
  async stop(graceMs: number = limits.plannerShutdownGraceMs): Promise<void> {
    this.halt.abort();
    const drained = new AbortController();
    const late = this.timers.deadline(graceMs, drained.signal).then(() => {
      if (!drained.signal.aborted) this.abandon.abort();
    });
    await this.idle();
    drained.abort();
    await late;
  }

  private tokenFor(installationId: string): string | null {
    const { apiKey, defaultToken, tokens } = this.options.config;
    if (apiKey === null) return null;
    return tokens.get(installationId.toLowerCase()) ?? defaultToken;
  }

  private startLoop(id: string, token: string): void {
    const installation: Installation = { id, token, queue: [], reread: true, more: false, backoffMs: 0 };
    this.installations.set(id, installation);
    const loop = this.drain(installation)
      .catch((error: Error) => this.options.log.error('planner.failed', { installation: id, reason: error.name }))
      .finally(() => {
        this.installations.delete(id);
        this.loops.delete(loop);
      });
    this.loops.add(loop);
  }

  private async drain(installation: Installation): Promise<void> {
    // The first read happens after the ingest request that woke us has been answered.
    await new Promise((resolve) => setImmediate(resolve));
    for (let sample = this.next(installation); sample && !this.halt.signal.aborted; sample = this.next(installation)) {
      if (!(await this.deliver(installation, sample))) return;
      installation.queue.shift();
    }
  }

  /** The oldest waiting sample, reading the outbox again when it changed or the page ran out. */
  private next(installation: Installation): PendingSample | undefined {
    if (installation.reread || (installation.queue.length === 0 && installation.more)) {
      installation.queue = this.pending.all(installation.id, limits.plannerQueueSamples);
      installation.more = installation.queue.length === limits.plannerQueueSamples;
      installation.reread = false;
    }
    return installation.queue[0];
  }

  /** Delivers one sample with retries; false when shutdown left it waiting in the outbox. */
  private async deliver(installation: Installation, sample: PendingSample): Promise<boolean> {
    const body = formBody({ apiKey: this.options.config.apiKey!, token: installation.token }, sample);
    for (let attempt = 1; ; attempt += 1) {
      if (installation.backoffMs > 0) await this.timers.backoff(this.jittered(installation.backoffMs), this.halt.signal);
      const delivery = await this.attempt(body);
      switch (delivery.kind) {
        case 'abandoned':
          return false;
        case 'accepted':
          installation.backoffMs = 0;
          await this.settle('plannerSent', installation, sample);
          this.stats.sent += 1;
          return true;
        case 'rejected':
          installation.backoffMs = 0;
          return this.giveUp(installation, sample, delivery.reason, attempt);
        case 'retry':
          installation.backoffMs = Math.min(
            installation.backoffMs * 2 || limits.plannerBackoffFirstMs,
            limits.plannerBackoffMaxMs,
          );
          if (attempt >= limits.plannerAttempts) return this.giveUp(installation, sample, delivery.reason, attempt);
          this.stats.retried += 1;
          this.options.log.warn('planner.retry', { installation: installation.id, ...delivery.reason, attempt });
      }
    }
  }

  /** One request within the overall limit and the request deadline. */
  private async attempt(body: string): Promise<Delivery> {
    await this.slots.acquire();
    const finished = new AbortController();
    try {
      if (this.halt.signal.aborted) return { kind: 'abandoned' };
      const deadline = new AbortController();
      void this.timers.deadline(limits.plannerTimeoutMs, finished.signal).then(() => {
        if (!finished.signal.aborted) deadline.abort();
      });
      return await postSample({
        url: this.options.config.url,
        body,
        deadline: deadline.signal,
        abandon: this.abandon.signal,
        fetch: this.fetch,
      });
    } finally {
      finished.abort();
      this.slots.release();
    }
  }

  private async giveUp(installation: Installation, sample: PendingSample, reason: FailureReason, attempts: number) {
    this.options.log.warn('planner.given_up', { installation: installation.id, ...reason, attempts });
    await this.settle('plannerGivenUp', installation, sample);
    this.stats.givenUp += 1;
    return true;
  }

  private async settle(op: 'plannerSent' | 'plannerGivenUp', installation: Installation, sample: PendingSample) {
    try {
      await this.options.committer.write(op, { installationId: installation.id, utc: sample.utc });
    } catch (error) {
      // The sample stays pending and is sent again after a restart; nothing else can be done.
      this.options.log.error('planner.mark_failed', { installation: installation.id, reason: (error as Error).message });
    }
  }

  /** Equal jitter: between half and all of the delay, so installations retrying together spread out. */
  private jittered(ms: number): number {
    return Math.round(ms / 2 + (this.timers.random() * ms) / 2);
  }
}

/** A counting semaphore: at most `size` holders at once, waiters served in order. */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}
