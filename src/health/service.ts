/** Readiness: whether the service can store and read right now, as `/v1/ready` answers it. */
import type { Database, Statement } from 'bun:sqlite';
import type { Committer } from '../db/committer.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';

/** Why the service is not ready, in words safe for anyone to read (the detail is in the log), or null when it is. */
export type Unreadiness = string | null;

const UNREADABLE = 'the database cannot be read';

export class Readiness {
  private readonly read: Statement;
  private last: Unreadiness = null;
  /** The last ping of the writer: checks within `reuseMs` of its start share its answer, in flight or not. */
  private ping: { at: number; answer: Promise<Unreadiness> } | null = null;
  private readonly reuseMs: number;

  constructor(
    db: Database,
    private readonly committer: Committer,
    private readonly log: Logger,
    /** How long a write may wait, and the writer may take to answer, before the service is not ready. */
    private readonly waitMs: number = limits.readyWaitMs,
  ) {
    this.read = db.query('SELECT count(*) FROM sqlite_master');
    this.reuseMs = Math.min(limits.readyPingReuseMs, waitMs);
  }

  /** Checks the writer, then a read; a change either way is logged once. */
  async check(): Promise<Unreadiness> {
    const reason = (await this.writerProblem()) ?? this.readProblem();
    if (reason !== this.last) {
      if (reason === null) this.log.info('ready.recovered', { was: this.last });
      else this.log.warn('ready.unavailable', { reason });
      this.last = reason;
    }
    return reason;
  }

  private async writerProblem(): Promise<Unreadiness> {
    if (this.committer.failure) return 'the writer has failed; the service must be restarted';
    if (this.committer.oldestWaitMs() >= this.waitMs)
      return `a write has waited over ${this.waitMs / 1000} s (is the disk stalled?)`;
    return this.writerAnswer();
  }

  /** A round trip to the writer thread, shared: a load balancer probing many times a second costs one a second. */
  private writerAnswer(): Promise<Unreadiness> {
    const now = performance.now();
    if (this.ping === null || now - this.ping.at >= this.reuseMs) this.ping = { at: now, answer: this.pingWriter() };
    return this.ping.answer;
  }

  private async pingWriter(): Promise<Unreadiness> {
    let timer: Timer | undefined;
    const silent = new Promise<'silent'>((resolve) => (timer = setTimeout(() => resolve('silent'), this.waitMs)));
    try {
      const answered = await Promise.race([this.committer.ping().then(() => 'answered' as const), silent]);
      return answered === 'silent' ? `the writer has not answered within ${this.waitMs / 1000} s` : null;
    } catch {
      return 'the writer has failed; the service must be restarted';
    } finally {
      clearTimeout(timer);
    }
  }

  private readProblem(): Unreadiness {
    try {
      this.read.get();
      return null;
    } catch (error) {
      // Once per failure, as `ready.unavailable`: a probe every few seconds must not flood the log.
      if (this.last !== UNREADABLE) this.log.error('ready.read_failed', { error: (error as Error).message });
      return UNREADABLE;
    }
  }
}
