/**
 * The approval password and its lockout: `limits.lockoutAttempts` wrong passwords in a row lock every
 * password check (the `/pair` form and the device endpoints) for `limits.lockoutMs`, the right one included.
 */
import { timingSafeEqual } from 'node:crypto';
import { tokenDigest } from '../devices/token.ts';
import { limits } from '../limits.ts';

export type PasswordCheck = 'right' | 'wrong' | 'locked';

export class ApprovalLock {
  private readonly digest: Buffer;
  private wrongInARow = 0;
  private lockedUntil = -Infinity;
  /** Lockouts begun since the start (the metrics read it). */
  lockouts = 0;

  constructor(
    password: string,
    /** A monotonic clock in ms (`AppOptions.elapsed`): a lockout must not follow the wall clock's jumps. */
    private readonly elapsed: () => number,
  ) {
    this.digest = tokenDigest(password);
  }

  /** Whole seconds until the lock ends (for `Retry-After`), or 0 when password checks are open. */
  retryAfterSeconds(): number {
    const left = this.lockedUntil - this.elapsed();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** Wrong passwords, here or at the device endpoints, that may still come before the next lockout begins. */
  triesLeft(): number {
    return limits.lockoutAttempts - this.wrongInARow;
  }

  /**
   * Checks a password, counting a wrong one; during a lockout nothing is checked, so requests that
   * were already under way when the lock began cannot go on guessing. Digests are compared so the
   * time taken does not depend on the candidate. None presented (null) is wrong but not counted: it
   * guesses nothing, and any web page can make a browser send such requests (an `<img>` of the URL).
   */
  check(candidate: string | null): PasswordCheck {
    if (this.retryAfterSeconds() > 0) return 'locked';
    if (candidate === null) return 'wrong';
    if (timingSafeEqual(tokenDigest(candidate), this.digest)) {
      this.wrongInARow = 0;
      return 'right';
    }
    this.wrongInARow += 1;
    if (this.wrongInARow >= limits.lockoutAttempts) {
      this.wrongInARow = 0;
      this.lockedUntil = this.elapsed() + limits.lockoutMs;
      this.lockouts += 1;
    }
    return 'wrong';
  }
}
