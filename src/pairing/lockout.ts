/**
 * The approval password and its lockout, per client address with a backstop for all (the table in
 * docs/security.md): `limits.lockoutAttempts` wrong passwords in a row from one address lock that
 * address's password checks (the `/pair` form, the device endpoints, the dashboard's sign-in) for
 * `limits.lockoutMs`; `limits.backstopAttempts` wrong ones from all addresses within `limits.lockoutMs`
 * lock every address as long, but for the addresses where the right password was given lately and for
 * requests of a signed-in dashboard, so that no number of strangers can keep the owner out.
 */
import { timingSafeEqual } from 'node:crypto';
import { tokenDigest } from '../devices/token.ts';
import { RecentMap } from '../http/recent-map.ts';
import { limits } from '../limits.ts';
import { createLogger, type Logger } from '../log.ts';
import type { KnownAddresses } from './known-addresses.ts';

export type PasswordCheck = 'right' | 'wrong' | 'locked';

/** Who presents a password: its client address (`clientAddress`), and whether it has a valid dashboard session. */
export interface Presenter {
  address: string;
  /** A signed-in dashboard's request: the backstop spares it (the lock of its own address does not). */
  session?: boolean;
}

/** Where the lock keeps the addresses that gave the right password, and logs the lockouts it begins. */
export interface LockRecords {
  known: Pick<KnownAddresses, 'has' | 'remember'>;
  log: Logger;
}

/** Knows no address and logs nothing: for tests of the pages alone. */
const UNRECORDED: LockRecords = {
  known: { has: () => false, remember: () => {} },
  log: createLogger('error', () => {}),
};

/** A lockout as a page tells it: seconds left (0: none), and whether it is the backstop's, of all addresses. */
export interface Lockout {
  seconds: number;
  everyone: boolean;
}

interface AddressLock {
  wrongInARow: number;
  /** On the monotonic clock. */
  lockedUntil: number;
}

export class ApprovalLock {
  private readonly digest: Buffer;
  private readonly byAddress = new RecentMap<string, AddressLock>(limits.addressesTracked);
  /** When the latest wrong passwords from all addresses came, oldest first, at most `limits.backstopAttempts`. */
  private recentWrong: number[] = [];
  private backstopUntil = -Infinity;
  private readonly known: LockRecords['known'];
  private readonly log: Logger;
  /** Lockouts begun since the start, of one address and of all (the backstop): the metrics read them. */
  readonly lockouts = { address: 0, backstop: 0 };

  constructor(
    password: string,
    /** A monotonic clock in ms (`AppOptions.elapsed`): a lockout must not follow the wall clock's jumps. */
    private readonly elapsed: () => number,
    { known, log }: LockRecords = UNRECORDED,
  ) {
    this.known = known;
    this.log = log;
    this.digest = tokenDigest(password);
  }

  /** Whole seconds until password checks open for `who` (for `Retry-After`), or 0 when they are open. */
  retryAfterSeconds(who: Presenter): number {
    return this.lockout(who).seconds;
  }

  /** The lockout that holds `who` longest, if any. */
  lockout(who: Presenter): Lockout {
    const own = this.byAddress.get(who.address)?.lockedUntil ?? -Infinity;
    const all = this.spared(who) ? -Infinity : this.backstopUntil;
    const left = Math.max(own, all) - this.elapsed();
    return { seconds: left > 0 ? Math.ceil(left / 1000) : 0, everyone: all > own };
  }

  /** Wrong passwords `who`'s address may still give before its lockout begins. */
  triesLeft(who: Presenter): number {
    return limits.lockoutAttempts - (this.byAddress.get(who.address)?.wrongInARow ?? 0);
  }

  /**
   * Checks a password, counting a wrong one; during a lockout nothing is checked, so requests that
   * were already under way when the lock began cannot go on guessing. Digests are compared so the
   * time taken does not depend on the candidate. None presented (null, or an empty field) is wrong but
   * not counted: it guesses nothing, and any web page can make a browser send such requests (an `<img>`).
   */
  check(candidate: string | null, who: Presenter): PasswordCheck {
    if (this.retryAfterSeconds(who) > 0) return 'locked';
    if (candidate === null || candidate === '') return 'wrong';
    if (timingSafeEqual(tokenDigest(candidate), this.digest)) {
      // The backstop's count stays: the owner's success must not give strangers fresh tries.
      this.byAddress.delete(who.address);
      this.known.remember(who.address);
      return 'right';
    }
    this.countWrong(who.address);
    return 'wrong';
  }

  /** The backstop spares a signed-in dashboard and an address that gave the right password lately. */
  private spared(who: Presenter): boolean {
    return who.session === true || this.known.has(who.address);
  }

  private countWrong(address: string): void {
    const at = this.elapsed();
    const lock = this.byAddress.get(address) ?? { wrongInARow: 0, lockedUntil: -Infinity };
    lock.wrongInARow += 1;
    if (lock.wrongInARow >= limits.lockoutAttempts) {
      lock.wrongInARow = 0;
      lock.lockedUntil = at + limits.lockoutMs;
      this.lockouts.address += 1;
      this.log.warn('auth.locked', { address, seconds: limits.lockoutMs / 1000 });
    }
    this.byAddress.set(address, lock);
    this.countTowardsBackstop(address, at);
  }

  private countTowardsBackstop(address: string, at: number): void {
    this.recentWrong.push(at);
    if (this.recentWrong.length > limits.backstopAttempts) this.recentWrong.shift();
    if (this.recentWrong.length < limits.backstopAttempts || at - this.recentWrong[0]! >= limits.lockoutMs) return;
    this.recentWrong = [];
    this.backstopUntil = at + limits.lockoutMs;
    this.lockouts.backstop += 1;
    const seconds = limits.lockoutMs / 1000;
    this.log.warn('auth.backstop_locked', { address, wrong: limits.backstopAttempts, seconds });
  }
}
