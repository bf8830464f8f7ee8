/**
 * What became of forwarded samples (sent, given up), written back to the outbox through the committer.
 * Outcomes are gathered for a moment into one write, so forwarding costs a commit per gathering, not
 * per sample. One whose write fails is kept and written again later, and holds every new attempt.
 */
import type { Committer } from '../db/committer.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import type { PlannerFailure, plannerWrites, SettledSample } from './store.ts';

/** The one wait of the ledger: how long outcomes gather before their write (the forwarder's timers). */
export interface OutcomeTimers {
  /** Calls `expire` after `ms` (a request's deadline, the shutdown grace, gathering marks); answers a cancel. */
  delay(ms: number, expire: () => void): () => void;
}

export class OutcomeLedger {
  /** Outcomes waiting to be written together. */
  private settled: SettledSample[] = [];
  /** Each installation's last failed attempt not written yet: it goes with the next write of outcomes. */
  private lastFailures = new Map<string, PlannerFailure>();
  private settling: Promise<void> | null = null;
  /** The write of outcomes under way, if any. */
  private writing: Promise<void> | null = null;
  private cancelSettling: () => void = () => {};
  /**
   * By installation, the `utc` of samples the planner has answered whose outcome could not be written
   * yet: still pending in the database, so kept out of every reread until a retried write records them.
   */
  private readonly unrecorded = new Map<string, Set<number>>();
  /** Attempts held until every answered sample's outcome is written (see `written`). */
  private readonly heldForOutcomes: (() => void)[] = [];
  /** Set at shutdown (see `halt`). */
  private halted = false;
  /** Writes of outcomes failed in a row (see `logFailure`). */
  private failures = 0;

  constructor(
    private readonly committer: Committer<typeof plannerWrites>,
    private readonly log: Logger,
    private readonly timers: OutcomeTimers,
  ) {}

  /** Records an outcome; resolves once its write is over: committed, or failed and kept for a later one. */
  record(outcome: SettledSample): Promise<void> {
    this.settled.push(outcome);
    return this.writeSettledIn(limits.plannerMarkGatherMs);
  }

  /**
   * Keeps a failed attempt for the installation's forwarding status. It rides with the next write of
   * outcomes (the sample's own, once sent or given up, or the one at shutdown), so failing costs no commit.
   */
  failed(failure: PlannerFailure): void {
    this.lastFailures.set(failure.installationId, failure);
  }

  /** Drops what is kept of a purged installation: a later outcome's write must not bring its status back. */
  forget(installationId: string): void {
    this.lastFailures.delete(installationId);
    this.settled = this.settled.filter((outcome) => outcome.installationId !== installationId);
  }

  /** The installation's last failed attempt not written yet, if any. */
  unwrittenFailure(installationId: string): PlannerFailure | undefined {
    return this.lastFailures.get(installationId);
  }

  /** The installation's answered samples whose outcome is not written yet, if any (see `unrecorded`). */
  unrecordedOf(installationId: string): ReadonlySet<number> | undefined {
    return this.unrecorded.get(installationId);
  }

  /**
   * Settles once no answered sample waits for its outcome to be written, or at shutdown. While one
   * cannot be written (a full disk), no request starts: each would be sent again after a restart, and
   * the samples answered meanwhile would pile up in memory.
   */
  written(): Promise<void> {
    if (!this.holdsAttempts()) return Promise.resolve();
    return new Promise((resolve) => this.heldForOutcomes.push(resolve));
  }

  /** Attempts waiting in `written` now. */
  get heldAttempts(): number {
    return this.heldForOutcomes.length;
  }

  /** Whether an answered sample's outcome still waits to be written, and no shutdown releases the attempts it holds. */
  holdsAttempts(): boolean {
    return this.unrecorded.size > 0 && !this.halted;
  }

  /** At shutdown: the held attempts go on (to find the forwarder halted); a failed write waits for `lastWrite`. */
  halt(): void {
    this.halted = true;
    this.releaseHeldAttempts();
  }

  /** At shutdown: one last try for outcomes still unwritten; what fails stays pending, sent after the restart. */
  async lastWrite(): Promise<void> {
    this.cancelSettling();
    this.settling = null;
    await this.writing; // a retry under way: what it fails comes back to `settled`
    if (this.settled.length > 0 || this.lastFailures.size > 0) await this.writeSettled();
  }

  private writeSettledIn(ms: number): Promise<void> {
    this.settling ??= new Promise<void>((resolve) => (this.cancelSettling = this.timers.delay(ms, resolve))).then(() =>
      this.writeSettled(),
    );
    return this.settling;
  }

  /**
   * Writes the gathered outcomes. Should the write fail (a full disk), they are kept out of rereads
   * and written again later, so the planner never gets these samples a second time in this run, and
   * no other sample is sent until they are written.
   */
  private writeSettled(): Promise<void> {
    const samples = this.settled;
    const failures = [...this.lastFailures.values()];
    this.settled = [];
    this.lastFailures = new Map();
    this.settling = null;
    const writing = this.writeOutcomes(samples, failures).finally(() => {
      if (this.writing === writing) this.writing = null;
    });
    this.writing = writing;
    return writing;
  }

  private async writeOutcomes(samples: SettledSample[], failures: PlannerFailure[]): Promise<void> {
    try {
      await this.committer.write('plannerSettled', { samples, failures });
      if (this.failures > 0) this.log.info('planner.mark_recovered', { failures: this.failures });
      this.failures = 0;
      this.recorded(samples);
    } catch (error) {
      this.logFailure(samples.length, error as Error);
      for (const { installationId, utc } of samples) {
        this.unrecorded.set(installationId, (this.unrecorded.get(installationId) ?? new Set()).add(utc));
      }
      this.settled.push(...samples);
      // Kept unless a newer failure of the installation came meanwhile.
      for (const failure of failures)
        if (!this.lastFailures.has(failure.installationId)) this.lastFailures.set(failure.installationId, failure);
      if (!this.halted) void this.writeSettledIn(limits.plannerMarkRetryMs);
    }
  }

  /**
   * A disk that stays full fails the write once a second: its first failure is logged, then one in
   * `plannerMarkFailuresLogged` with the count so far, and the last try at shutdown.
   */
  private logFailure(samples: number, error: Error): void {
    this.failures += 1;
    if ((this.failures - 1) % limits.plannerMarkFailuresLogged !== 0 && !this.halted) return;
    this.log.error('planner.mark_failed', { samples, failures: this.failures, reason: error.message });
  }

  private recorded(samples: SettledSample[]): void {
    for (const { installationId, utc } of samples) {
      const answered = this.unrecorded.get(installationId);
      if (answered?.delete(utc) && answered.size === 0) this.unrecorded.delete(installationId);
    }
    if (!this.holdsAttempts()) this.releaseHeldAttempts();
  }

  private releaseHeldAttempts(): void {
    for (const resume of this.heldForOutcomes.splice(0)) resume();
  }
}
