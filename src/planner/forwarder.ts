/**
 * The planner forwarder: sends stored samples to the planner and marks them sent or given up in the
 * outbox (the samples table), so a re-sent batch or a restart never sends a sample again.
 * Per installation one loop sends oldest first, one request at a time, holding one page of samples in
 * memory; the queue takes a batch's new samples as the write reports them, and reads the outbox only
 * when it cannot be trusted (docs/architecture.md, The planner outbox).
 */
import type { Database } from 'bun:sqlite';
import { monotonicNow } from '../clock.ts';
import type { PlannerConfig } from '../config.ts';
import type { Committer } from '../db/committer.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import { PlannerState } from '../telemetry/table.ts';
import type { OutboxChange, SampleForwarder } from '../telemetry/outbox.ts';
import type { SampleRow } from '../telemetry/model.ts';
import { OutcomeLedger, type OutcomeTimers } from './outcomes.ts';
import { SentLog } from './sent-log.ts';
import { installationsWithPending, pendingSamplesReader, waitingSampleReader, type PlannerFailure } from './store.ts';
import { formBody, postSample, type Delivery, type FailureReason } from './wire.ts';

/** Every wait of the forwarder, injectable so that tests run backoffs and deadlines in milliseconds. */
export interface PlannerTimers extends OutcomeTimers {
  /** Calls `wake` after a backoff of `ms`; answers a function that cancels it. */
  backoff(ms: number, wake: () => void): () => void;
  /** The jitter of a backoff, in [0, 1). */
  random(): number;
}

/** A real timer: calls `callback` after `ms`; answers a function that cancels it. */
export function after(ms: number, callback: () => void): () => void {
  const timer = setTimeout(callback, ms);
  return () => clearTimeout(timer);
}

const realTimers: PlannerTimers = { backoff: after, delay: after, random: Math.random };

/** Forgets the oldest remembered installation once more than `plannerQuietInstallations` are kept. */
function keepNewest(remembered: Set<string> | Map<string, unknown>): void {
  if (remembered.size > limits.plannerQuietInstallations) remembered.delete(remembered.keys().next().value!);
}

/** What the forwarder needs from the service. */
export interface ForwarderOptions {
  config: PlannerConfig;
  db: Database;
  committer: Committer;
  log: Logger;
  timers?: PlannerTimers;
  /** The wall clock (Unix ms) of the status's times. */
  now?: () => number;
  /** A monotonic clock (ms) for the spacing of `planner.sent` lines. */
  elapsed?: () => number;
}

/** One installation's loop: its queue and its backoff. */
interface Installation {
  id: string;
  token: string;
  /** Waiting samples, oldest first, as in the outbox; the head is the one being delivered. */
  queue: SampleRow[];
  /** The queue no longer mirrors the outbox: read it again before the next sample. */
  reread: boolean;
  /** Count of batches that rewrote or withdrew waiting samples; a sample on its way is reread when it moves. */
  rewrites: number;
  /** The last page was full: more samples wait in the database. */
  more: boolean;
  /** Delay before the next attempt, kept across samples and loops so a planner that is down is probed less often. */
  backoffMs: number;
  /** When the attempt waiting out a backoff is due (Unix ms); null while none waits. */
  nextAttemptAt: number | null;
}

/** A sample on its way to the planner. */
interface Outgoing {
  utc: number;
  body: string;
  /** The installation's `rewrites` when `body` was made; null when the sample must be read again regardless. */
  rewritesSeen: number | null;
}

/** Counts the tests read. */
interface ForwarderStats {
  sent: number;
  givenUp: number;
  retried: number;
  /** Pages read from the outbox. */
  outboxReads: number;
}

/** The forwarder of the service: one per app, started by `resume()` and ended by `stop()`. */
export class PlannerForwarder implements SampleForwarder {
  /** Counts since the start: `sent` for the metrics, the others for the tests. */
  readonly stats: ForwarderStats = { sent: 0, givenUp: 0, retried: 0, outboxReads: 0 };
  /** Retries and samples given up since the start, by reason (`http_<status>` or the error's class): the metrics'. */
  readonly failures = { retried: new Map<string, number>(), givenUp: new Map<string, number>() };
  private readonly installations = new Map<string, Installation>();
  /** Installations without a loop whose outbox was last seen empty: their next batch is queued without a read. */
  private readonly quiet = new Set<string>();
  /** Backoffs of loops that ended while the planner failed, so a car's next upload does not hammer it again. */
  private readonly backoffs = new Map<string, number>();
  private readonly loops = new Set<Promise<void>>();
  private readonly slots = new Slots(limits.plannerInFlight);
  /** Set at shutdown: no new attempt starts, backoff waits end. */
  private halted = false;
  /** Wakes each installation waiting out a backoff. */
  private readonly pauses = new Set<() => void>();
  /** Requests at the planner now; shutdown aborts them when its grace is over. */
  private readonly inFlight = new Set<AbortController>();
  /** What became of the answered samples, on its way to the outbox. */
  private readonly outcomes: OutcomeLedger;
  private readonly readPendingPage;
  private readonly readPendingSample;
  private readonly timers: PlannerTimers;
  private readonly now: () => number;
  private readonly sentLog: SentLog;

  constructor(private readonly options: ForwarderOptions) {
    this.now = options.now ?? Date.now;
    this.sentLog = new SentLog(options.log, options.elapsed ?? monotonicNow);
    this.readPendingPage = pendingSamplesReader(options.db);
    this.readPendingSample = waitingSampleReader(options.db);
    this.timers = options.timers ?? realTimers;
    this.outcomes = new OutcomeLedger(options.committer, options.log, this.timers);
  }

  /** Attempts held until answered samples' outcomes are written (`OutcomeLedger.written`); read by the tests. */
  get attemptsHeld(): number {
    return this.outcomes.heldAttempts;
  }

  /** Whether samples of this installation go to the planner: a key and a token for it are configured. */
  forwards(installationId: string): boolean {
    return this.tokenFor(installationId) !== null;
  }

  /** Called after a commit that changed the installation's outbox; never waits. */
  stored(installationId: string, change: OutboxChange): void {
    const token = this.tokenFor(installationId);
    if (token === null || this.halted) return;
    const installation = this.installations.get(installationId) ?? this.startLoop(installationId, token);
    if (this.quiet.delete(installationId)) installation.reread = false; // a new loop on an empty outbox
    this.take(installation, change);
  }

  /** The outbox of the installation may hold samples the forwarder does not know of: read it. */
  recheck(installationId: string): void {
    this.stored(installationId, { added: [], rewritten: true });
  }

  /**
   * The installation was purged by another process: its queue goes, and a sample on its way is read
   * again before it is sent (and found gone), so none of its samples reaches the planner any more.
   */
  forget(installationId: string): void {
    const installation = this.installations.get(installationId);
    if (installation) {
      installation.queue = [];
      installation.reread = true;
      installation.rewrites += 1;
    }
    this.quiet.delete(installationId);
    this.backoffs.delete(installationId);
    this.outcomes.forget(installationId);
  }

  /** Start-up scan: sends what was still waiting when the server last stopped. */
  resume(): void {
    if (this.options.config.apiKey === null) return;
    const waiting = installationsWithPending(this.options.db).filter((id) => this.forwards(id));
    for (const id of waiting) this.recheck(id);
    if (waiting.length > 0) this.options.log.info('planner.resumed', { installations: waiting.length });
  }

  /** When the installation's next attempt is due while it waits out a backoff (Unix ms), else null. */
  nextAttemptAt(installationId: string): number | null {
    return this.installations.get(installationId)?.nextAttemptAt ?? null;
  }

  /** The installation's last failed attempt while it is not written yet (it goes with the next outcomes). */
  unwrittenFailure(installationId: string): PlannerFailure | undefined {
    return this.outcomes.unwrittenFailure(installationId);
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
    this.halted = true;
    for (const wake of this.pauses) wake();
    this.outcomes.halt();
    const cancel = this.timers.delay(graceMs, () => {
      for (const request of this.inFlight) request.abort();
    });
    await this.idle();
    cancel();
    await this.outcomes.lastWrite();
  }

  private tokenFor(installationId: string): string | null {
    const { apiKey, defaultToken, tokens } = this.options.config;
    if (apiKey === null) return null;
    return tokens.get(installationId.toLowerCase()) ?? defaultToken;
  }

  /** Queues a batch's new samples, or marks the outbox for a read when that would break the order or the page. */
  private take(installation: Installation, { added, rewritten }: OutboxChange): void {
    if (rewritten) installation.rewrites += 1;
    if (installation.reread) return;
    const { queue } = installation;
    const last = queue.at(-1);
    const inOrder = added.length === 0 || last === undefined || (added[0]![0] as number) > (last[0] as number);
    const fits = queue.length + added.length <= limits.plannerQueueSamples;
    if (rewritten || installation.more || !inOrder || !fits) installation.reread = true;
    else queue.push(...added);
  }

  /** Starts an installation's loop, with the backoff it left off with. */
  private startLoop(id: string, token: string): Installation {
    const installation: Installation = {
      id,
      token,
      queue: [],
      reread: true,
      rewrites: 0,
      more: false,
      backoffMs: this.backoffs.get(id) ?? 0,
      nextAttemptAt: null,
    };
    this.backoffs.delete(id);
    this.installations.set(id, installation);
    const loop = this.drain(installation)
      .catch((error: Error) => this.options.log.error('planner.failed', { installation: id, reason: error.name }))
      .finally(() => this.loops.delete(loop));
    this.loops.add(loop);
    return installation;
  }

  /** The loop: sends the installation's samples until its outbox is empty, shutdown, or a failure. */
  private async drain(installation: Installation): Promise<void> {
    // The first read happens after the ingest request that woke us has been answered.
    await new Promise((resolve) => setImmediate(resolve));
    let emptied = false;
    try {
      while (!this.halted) {
        if (this.mustRead(installation)) {
          this.readOutbox(installation);
          // The read may have seen commits whose sync still runs: send none of them before it is on disk.
          if (installation.queue.length > 0) await this.options.committer.durable();
          continue;
        }
        const sample = installation.queue[0];
        if (!sample) return void (emptied = true);
        if (!(await this.deliver(installation, sample))) return;
        installation.queue.shift();
      }
    } finally {
      // In the same turn as the last emptiness check: a `stored()` from now on starts a new loop, not a dying one.
      this.installations.delete(installation.id);
      if (emptied) this.rememberQuiet(installation.id);
      if (installation.backoffMs > 0) this.rememberBackoff(installation.id, installation.backoffMs);
    }
  }

  private rememberBackoff(id: string, ms: number): void {
    keepNewest(this.backoffs.set(id, ms));
  }

  private rememberQuiet(id: string): void {
    keepNewest(this.quiet.add(id));
  }

  /** Whether the queue left the outbox (a late or rewritten batch) or its page ran out. */
  private mustRead(installation: Installation): boolean {
    return installation.reread || (installation.queue.length === 0 && installation.more);
  }

  /** Refills the queue with the outbox's next page, oldest first. */
  private readOutbox(installation: Installation): void {
    const page = this.readPendingPage(installation.id, limits.plannerQueueSamples);
    this.stats.outboxReads += 1;
    // A sample answered but not yet recorded is still pending there (one at most: see `OutcomeLedger.written`).
    const answered = this.outcomes.unrecordedOf(installation.id);
    installation.queue = answered ? page.filter((sample) => !answered.has(sample[0] as number)) : page;
    installation.more = page.length === limits.plannerQueueSamples;
    installation.reread = false;
  }

  /** Delivers one sample with retries; false when shutdown left it waiting in the outbox. */
  private async deliver(installation: Installation, sample: SampleRow): Promise<boolean> {
    // The queue mirrors the outbox as of the rewrites counted so far (else it would be read again first).
    const outgoing: Outgoing = {
      utc: sample[0] as number,
      body: this.bodyOf(installation, sample),
      rewritesSeen: installation.rewrites,
    };
    for (let attempt = 1; ; attempt += 1) {
      if (installation.backoffMs > 0) {
        const ms = this.jittered(installation.backoffMs);
        installation.nextAttemptAt = this.now() + ms;
        await this.pause(ms);
        installation.nextAttemptAt = null;
        // The outbox may have changed during the wait: read the sample again once a slot is held.
        outgoing.rewritesSeen = null;
      }
      const delivery = await this.attempt(installation, outgoing);
      switch (delivery.kind) {
        case 'withdrawn':
          return true;
        case 'abandoned':
          return false;
        case 'accepted':
          installation.backoffMs = 0;
          await this.outcomes.record({
            installationId: installation.id,
            utc: sample[0] as number,
            state: PlannerState.sent,
            at: this.now(),
          });
          this.stats.sent += 1;
          this.sentLog.sent(installation.id);
          return true;
        case 'rejected':
          installation.backoffMs = 0;
          this.recordFailure(installation.id, delivery.reason, attempt);
          return this.giveUp(installation, sample, delivery.reason, attempt);
        case 'retry':
          this.recordFailure(installation.id, delivery.reason, attempt);
          installation.backoffMs = Math.min(
            installation.backoffMs * 2 || limits.plannerBackoffFirstMs,
            limits.plannerBackoffMaxMs,
          );
          if (attempt >= limits.plannerAttempts) return this.giveUp(installation, sample, delivery.reason, attempt);
          this.stats.retried += 1;
          countFailure(this.failures.retried, delivery.reason);
          this.options.log.warn('planner.retry', { installation: installation.id, ...delivery.reason, attempt });
      }
    }
  }

  /** One request within the overall limit, of the sample as it stands once a slot is held. */
  private async attempt(installation: Installation, outgoing: Outgoing): Promise<Delivery | { kind: 'withdrawn' }> {
    await this.slots.acquire();
    try {
      // Again after `stillWaiting`'s wait for the disk: an outcome write that failed meanwhile holds this attempt too.
      do {
        await this.outcomes.written();
        if (!(await this.stillWaiting(installation, outgoing))) return { kind: 'withdrawn' };
      } while (this.outcomes.holdsAttempts());
      // Shutdown may have begun while the slot or the disk was awaited.
      if (this.halted) return { kind: 'abandoned' };
      return await this.request(outgoing.body);
    } finally {
      this.slots.release();
    }
  }

  /** Whether the sample still waits in the outbox; rereads it, and makes its body anew, when a batch changed it. */
  private async stillWaiting(installation: Installation, outgoing: Outgoing): Promise<boolean> {
    while (outgoing.rewritesSeen !== installation.rewrites) {
      outgoing.rewritesSeen = installation.rewrites;
      const current = this.readPendingSample(installation.id, outgoing.utc);
      if (current === null) return false;
      // The read may have seen a commit whose sync still runs: send nothing of it before it is on disk.
      await this.options.committer.durable();
      outgoing.body = this.bodyOf(installation, current);
    }
    return true;
  }

  /** The form body of one sample: key, token and the sample as `tlm`. */
  private bodyOf(installation: Installation, sample: SampleRow): string {
    return formBody({ apiKey: this.options.config.apiKey!, token: installation.token }, sample);
  }

  /** One request within the request deadline. */
  private async request(body: string): Promise<Delivery> {
    const request = new AbortController();
    let expired = false;
    const cancel = this.timers.delay(limits.plannerTimeoutMs, () => {
      expired = true;
      request.abort();
    });
    this.inFlight.add(request);
    try {
      const delivery = await postSample(this.options.config.url, body, request.signal);
      if (delivery.kind !== 'retry' || !request.signal.aborted) return delivery;
      return expired ? { kind: 'retry', reason: { error: 'Timeout' } } : { kind: 'abandoned' };
    } finally {
      cancel();
      this.inFlight.delete(request);
    }
  }

  /** Waits out a backoff, or until shutdown; none after it began (an answer may come back during the grace). */
  private pause(ms: number): Promise<void> {
    if (this.halted) return Promise.resolve();
    return new Promise((resolve) => {
      let cancel = () => {};
      const wake = () => {
        cancel();
        this.pauses.delete(wake);
        resolve();
      };
      this.pauses.add(wake);
      cancel = this.timers.backoff(ms, wake);
    });
  }

  /** Logs and records a sample given up; true, as the loop goes on with the next one. */
  private async giveUp(installation: Installation, sample: SampleRow, reason: FailureReason, attempts: number) {
    this.options.log.warn('planner.given_up', { installation: installation.id, ...reason, attempts });
    await this.outcomes.record({
      installationId: installation.id,
      utc: sample[0] as number,
      state: PlannerState.givenUp,
      at: this.now(),
    });
    this.stats.givenUp += 1;
    countFailure(this.failures.givenUp, reason);
    return true;
  }

  /** Keeps the failed attempt as the installation's last failure, written with the next outcomes. */
  private recordFailure(installationId: string, reason: FailureReason, attempt: number): void {
    this.sentLog.failed(installationId);
    this.outcomes.failed({
      installationId,
      at: this.now(),
      status: 'status' in reason ? reason.status : null,
      error: 'error' in reason ? reason.error : null,
      attempt,
    });
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

function countFailure(counts: Map<string, number>, reason: FailureReason): void {
  const label = 'status' in reason ? `http_${reason.status}` : reason.error;
  counts.set(label, (counts.get(label) ?? 0) + 1);
}
