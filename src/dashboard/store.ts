/**
 * Dashboard sessions and the password they were opened under in the database: read on the main
 * connection, written through the committer.
 */
import type { Database } from 'bun:sqlite';
import type { WriteOp } from '../db/group.ts';

export interface StoredSession {
  tokenHash: string;
  createdAt: number;
  expiresAt: number;
}

/** The session of a token hash, unless it has expired by `now`. */
export function findSession(db: Database, tokenHash: string, now: number): StoredSession | null {
  return db
    .query<StoredSession, [string, number]>(
      `SELECT token_hash AS tokenHash, created_at AS createdAt, expires_at AS expiresAt
       FROM dashboard_sessions WHERE token_hash = ? AND expires_at > ?`,
    )
    .get(tokenHash, now);
}

/**
 * A new session, replacing the one the browser held (if any); the expired ones go with it, so the table
 * holds only live sessions and a few dead ones.
 */
const insertDashboardSession: WriteOp<StoredSession & { replaces: string | null }, void> = (db, args) => {
  const { replaces, ...session } = args;
  db.query('DELETE FROM dashboard_sessions WHERE expires_at <= $now OR token_hash = $replaces').run({
    now: session.createdAt,
    replaces,
  });
  db.query(
    'INSERT INTO dashboard_sessions (token_hash, created_at, expires_at) VALUES ($tokenHash, $createdAt, $expiresAt)',
  ).run({ ...session });
};

const extendDashboardSession: WriteOp<{ tokenHash: string; expiresAt: number }, void> = (
  db,
  { tokenHash, expiresAt },
) => {
  db.query('UPDATE dashboard_sessions SET expires_at = $expiresAt WHERE token_hash = $tokenHash').run({
    tokenHash,
    expiresAt,
  });
};

const deleteDashboardSession: WriteOp<{ tokenHash: string }, void> = (db, { tokenHash }) => {
  db.query('DELETE FROM dashboard_sessions WHERE token_hash = $tokenHash').run({ tokenHash });
};

/** The salt and fingerprint of the approval password the sessions were opened under, if one was kept. */
export function keptPassword(db: Database): { salt: string; fingerprint: string } | null {
  return db
    .query<{ salt: string; fingerprint: string }, []>('SELECT salt, fingerprint FROM dashboard_password WHERE id = 1')
    .get();
}

/** Keeps a new password's fingerprint and ends every session opened under the former one; answers how many. */
const keepPasswordEndingSessions: WriteOp<{ salt: string; fingerprint: string }, number> = (db, kept) => {
  db.query('INSERT OR REPLACE INTO dashboard_password (id, salt, fingerprint) VALUES (1, $salt, $fingerprint)').run({
    ...kept,
  });
  return db.query('DELETE FROM dashboard_sessions').run().changes;
};

export const dashboardWrites = {
  insertDashboardSession,
  extendDashboardSession,
  deleteDashboardSession,
  keepPasswordEndingSessions,
};
