/**
 * The client addresses where the approval password was given right in the last 30 days, which the
 * lockout's backstop spares. Kept in the database so that a restart does not forget them, as they are:
 * a hash would hide nothing (every IPv4 address can be tried in minutes), a key from the password would
 * make the file a way to test password guesses, and the file already holds every location of the car.
 */
import type { Database } from 'bun:sqlite';
import type { Committer } from '../db/committer.ts';
import type { WriteOp } from '../db/group.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';

export class KnownAddresses {
  /** Address → wall-clock ms of its last right password. */
  private readonly lastRight = new Map<string, number>();

  constructor(
    private readonly committer: Committer<typeof knownAddressWrites>,
    private readonly log: Logger,
    /** The wall clock: 30 days outlive restarts, unlike the monotonic clock. */
    private readonly now: () => number,
  ) {}

  /**
   * Reads the addresses still known, and deletes the older ones in the background: an owner who stopped
   * approving must not leave addresses in the database and its backups for ever.
   */
  load(db: Database): void {
    const since = this.now() - limits.knownAddressMs;
    for (const row of knownAddressRows(db, since)) this.lastRight.set(row.address, row.lastRightAt);
    const forgotten = this.committer.write('forgetAddresses', { before: since });
    forgotten.catch((error: Error) => this.log.warn('auth.known_addresses_unforgotten', { reason: error.message }));
  }

  has(address: string): boolean {
    const at = this.lastRight.get(address);
    return at !== undefined && at > this.now() - limits.knownAddressMs;
  }

  /** Records a right password from `address`, saved in the background: a failed save forgets it at the next start. */
  remember(address: string): void {
    const at = this.now();
    if ((this.lastRight.get(address) ?? -Infinity) > at - limits.knownAddressRefreshMs) return;
    this.lastRight.set(address, at);
    const saved = this.committer.write('rememberAddress', { address, at, before: at - limits.knownAddressMs });
    saved.catch((error: Error) => this.log.warn('auth.known_address_unsaved', { address, reason: error.message }));
  }
}

function knownAddressRows(db: Database, since: number) {
  return db
    .query<{ address: string; lastRightAt: number }, [number]>(
      'SELECT address, last_right_at AS lastRightAt FROM known_addresses WHERE last_right_at > ?',
    )
    .all(since);
}

/** Forgets the addresses whose last right password came at or before `before`. */
const forgetAddresses: WriteOp<{ before: number }, void> = (db, { before }) => {
  db.query('DELETE FROM known_addresses WHERE last_right_at <= $before').run({ before });
};

/** Saves an address's right password and forgets the addresses not seen for 30 days. */
const rememberAddress: WriteOp<{ address: string; at: number; before: number }, void> = (db, args) => {
  const { address, at, before } = args;
  db.query(
    `INSERT INTO known_addresses (address, last_right_at) VALUES ($address, $at)
     ON CONFLICT (address) DO UPDATE SET last_right_at = excluded.last_right_at`,
  ).run({ address, at });
  forgetAddresses(db, { before });
};

export const knownAddressWrites = { rememberAddress, forgetAddresses };
