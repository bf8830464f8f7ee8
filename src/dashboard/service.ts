/**
 * The dashboard's sign-in sessions: the approval password (under the approval lockout) opens a session
 * whose secret lives only in the browser's cookie; the database keeps its SHA-256. Each session has a
 * form token, derived from its secret, that every state-changing form must carry.
 */
import type { Database } from 'bun:sqlite';
import { createHmac, scrypt, timingSafeEqual } from 'node:crypto';
import type { Consumption } from '../consumption/service.ts';
import type { Committer } from '../db/committer.ts';
import { tokenHash } from '../devices/token.ts';
import { RecentMap } from '../http/recent-map.ts';
import { limits } from '../limits.ts';
import type { ApprovalLock, Lockout, Presenter } from '../pairing/lockout.ts';
import { newSecret } from '../secret.ts';
import { summarize, type ConsumptionSummary } from './consumption-view.ts';
import type { Logger } from '../log.ts';
import { findSession, keptPassword, type dashboardWrites } from './store.ts';

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
  | { outcome: 'wrong'; triesLeft: number; lockout: Lockout }
  | { outcome: 'locked'; lockout: Lockout };

/** A cookie's secret, as `newSecret` writes it: 43 base64url characters. */
const SECRET = /^[A-Za-z0-9_-]{43}$/;

export class DashboardSessions {
  constructor(
    private readonly db: Database,
    private readonly committer: Committer<typeof dashboardWrites>,
    private readonly lock: ApprovalLock,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Checks the approval password from `who` (a wrong one counts towards the lockout); the right one opens
   * a session, ending the one of the cookie the browser sent (`held`), so a sign-in leaves no orphan behind.
   */
  async signIn(password: string | null, who: Presenter, held: string | null): Promise<SignIn> {
    const check = this.lock.check(password, who);
    if (check === 'locked') return { outcome: 'locked', lockout: this.lock.lockout(who) };
    if (check === 'wrong') {
      return { outcome: 'wrong', triesLeft: this.lock.triesLeft(who), lockout: this.lock.lockout(who) };
    }
    const token = newSecret();
    const createdAt = this.now();
    await this.committer.write('insertDashboardSession', {
      tokenHash: tokenHash(token),
      replaces: held === null ? null : tokenHash(held),
      createdAt,
      expiresAt: createdAt + limits.dashboardSessionMs,
    });
    return { outcome: 'signed-in', token };
  }

  /** The approval lockout of `who`: its seconds are 0 when its passwords are checked. */
  lockout(who: Presenter): Lockout {
    return this.lock.lockout(who);
  }

  /** Whether a cookie's secret opens a live session; its expiry stays (a glance, not a use of the dashboard). */
  holds(token: string | null): boolean {
    return token !== null && SECRET.test(token) && findSession(this.db, tokenHash(token), this.now()) !== null;
  }

  /** The live session of a cookie's secret, its expiry moved forward at most once per `dashboardSessionExtendMs`. */
  async open(token: string | null): Promise<DashboardSession | null> {
    if (token === null || !SECRET.test(token)) return null;
    const hash = tokenHash(token);
    const now = this.now();
    const stored = findSession(this.db, hash, now);
    if (stored === null) return null;
    const renewed = stored.expiresAt - now < limits.dashboardSessionMs - limits.dashboardSessionExtendMs;
    if (renewed)
      await this.committer.write('extendDashboardSession', {
        tokenHash: hash,
        expiresAt: now + limits.dashboardSessionMs,
      });
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

/**
 * Ends every session when the approval password is not the one they were opened under: changing it
 * signs out every browser. The database keeps only a salted scrypt of the password.
 */
export async function endSessionsOfAnotherPassword(
  db: Database,
  committer: Committer<typeof dashboardWrites>,
  password: string,
  log: Logger,
) {
  const kept = keptPassword(db);
  const same = (a: string, b: string) => timingSafeEqual(Buffer.from(a), Buffer.from(b));
  if (kept !== null && same(await fingerprintOf(password, kept.salt), kept.fingerprint)) return;
  const salt = newSecret();
  const fingerprint = await fingerprintOf(password, salt);
  const ended = await committer.write('keepPasswordEndingSessions', { salt, fingerprint });
  if (kept !== null) log.info('dashboard.password_changed', { ended });
}

/** A slow hash (about 35 ms here), so a copy of the database is no fast test of password guesses. */
async function fingerprintOf(password: string, salt: string): Promise<string> {
  const derived = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password, salt, 32, { N: 2 ** 14, r: 8, p: 1 }, (error, key) => (error ? reject(error) : resolve(key))),
  );
  return derived.toString('base64url');
}

/** A session's form token: a MAC of its secret, so it needs no storage and the stored hash cannot forge it. */
function formTokenOf(token: string): string {
  return createHmac('sha256', token).update('dashboard form').digest('base64url');
}

/**
 * The consumption summaries of the installation pages, kept per installation until its consumption
 * changes. A summary costs a pass over every stored day (~10 ms for 10 years); a page then costs a lookup.
 */
export class ConsumptionSummaries {
  /** By installation; the least recently read is forgotten first. */
  private readonly kept = new RecentMap<string, { version: number; summary: ConsumptionSummary }>(
    limits.historyCachedInstallations,
  );

  constructor(private readonly consumption: Pick<Consumption, 'days' | 'version'>) {}

  of(installationId: string): ConsumptionSummary {
    const version = this.consumption.version(installationId);
    const kept = this.kept.get(installationId);
    const summary = kept?.version === version ? kept.summary : summarize(this.consumption.days(installationId));
    this.kept.set(installationId, { version, summary });
    return summary;
  }
}
