/**
 * The dashboard's sign-in sessions: the approval password (under the approval lockout) opens a session
 * whose secret lives only in the browser's cookie; the database keeps its SHA-256. Each session has a
 * form token, derived from its secret, that every state-changing form must carry.
 */
import type { Database } from 'bun:sqlite';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Consumption } from '../consumption/history.ts';
import type { Committer } from '../db/committer.ts';
import { tokenHash } from '../devices/token.ts';
import { limits } from '../limits.ts';
import type { ApprovalLock, Presenter } from '../pairing/lock.ts';
import { newSecret } from '../secret.ts';
import { summarize, type ConsumptionSummary } from './consumption-view.ts';
import { findSession, type dashboardWrites } from './store.ts';

/** A session a request presented and the server still holds. */
export interface DashboardSession {
  tokenHash: string;
  /** Its secret, as the cookie carries it. */
  token: string;
  /** The value every form of this session carries. */
  formToken: string;
  /** Its expiry moved forward by this request: the cookie must be sent again. */
  renewed: boolean;
}

export type SignIn =
  | { outcome: 'signed-in'; token: string }
  | { outcome: 'wrong'; triesLeft: number; lockedFor: number }
  | { outcome: 'locked'; lockedFor: number };

/** A cookie's secret, as `newSecret` writes it: 43 base64url characters. */
const SECRET = /^[A-Za-z0-9_-]{43}$/;

export class DashboardSessions {
  constructor(
    private readonly db: Database,
    private readonly committer: Committer<typeof dashboardWrites>,
    private readonly lock: ApprovalLock,
    private readonly now: () => number = Date.now,
  ) {}

  /** Checks the approval password from `who` (a wrong one counts towards the lockout); the right one opens a session. */
  async signIn(password: string | null, who: Presenter): Promise<SignIn> {
    const check = this.lock.check(password, who);
    if (check === 'locked') return { outcome: 'locked', lockedFor: this.lock.retryAfterSeconds(who) };
    if (check === 'wrong') return { outcome: 'wrong', triesLeft: this.lock.triesLeft(who), lockedFor: this.lock.retryAfterSeconds(who) };
    const token = newSecret();
    const createdAt = this.now();
    await this.committer.write('insertDashboardSession', {
      tokenHash: tokenHash(token),
      createdAt,
      expiresAt: createdAt + limits.dashboardSessionMs,
    });
    return { outcome: 'signed-in', token };
  }

  /** Seconds until the approval lockout of `who` ends, 0 when its passwords are checked. */
  lockedFor(who: Presenter): number {
    return this.lock.retryAfterSeconds(who);
  }

  /** The live session of a cookie's secret, its expiry moved forward at most once per `dashboardSessionExtendMs`. */
  async open(token: string | null): Promise<DashboardSession | null> {
    if (token === null || !SECRET.test(token)) return null;
    const hash = tokenHash(token);
    const now = this.now();
    const stored = findSession(this.db, hash, now);
    if (stored === null) return null;
    const renewed = stored.expiresAt - now < limits.dashboardSessionMs - limits.dashboardSessionExtendMs;
    if (renewed) await this.committer.write('extendDashboardSession', { tokenHash: hash, expiresAt: now + limits.dashboardSessionMs });
    return { tokenHash: hash, token, formToken: formTokenOf(token), renewed };
  }

  /** Whether a form's token is this session's, compared in constant time. */
  formTokenMatches(session: DashboardSession, sent: string | null): boolean {
    const expected = Buffer.from(session.formToken);
    const given = Buffer.from(sent ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** Ends a session: its cookie opens nothing from the commit on. */
  async signOut(session: DashboardSession): Promise<void> {
    await this.committer.write('deleteDashboardSession', { tokenHash: session.tokenHash });
  }
}

/** A session's form token: a MAC of its secret, so it needs no storage and the stored hash cannot forge it. */
function formTokenOf(token: string): string {
  return createHmac('sha256', token).update('dashboard form').digest('base64url');
}

/**
 * The consumption summaries of the installation pages, kept per installation while the consumption
 * service's cached history answer stays the same object: that answer is dropped on every chunk write and
 * carries the lifetime sums, so a changed day anywhere changes it. A summary costs a pass over every
 * stored day (~10 ms for 10 years); a page then costs a lookup.
 */
export class ConsumptionSummaries {
  /** By installation, the least recently read first: the order of eviction. */
  private readonly kept = new Map<string, { history: string; summary: ConsumptionSummary }>();

  constructor(private readonly consumption: Pick<Consumption, 'days' | 'historyJson'>) {}

  of(installationId: string): ConsumptionSummary {
    const history = this.consumption.historyJson(installationId);
    const kept = this.kept.get(installationId);
    this.kept.delete(installationId);
    const summary = kept?.history === history ? kept.summary : summarize(this.consumption.days(installationId));
    if (this.kept.size >= limits.historyCachedInstallations) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(installationId, { history, summary });
    return summary;
  }
}
