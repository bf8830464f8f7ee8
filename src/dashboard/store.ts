/** Dashboard sessions in the database: read on the main connection, written through the committer. */
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

/** A new session; the expired ones go with it, so the table holds only live sessions and a few dead ones. */
const insertDashboardSession: WriteOp<StoredSession, void> = (db, session) => {
  db.query('DELETE FROM dashboard_sessions WHERE expires_at <= $now').run({ now: session.createdAt });
  db.query('INSERT INTO dashboard_sessions (token_hash, created_at, expires_at) VALUES ($tokenHash, $createdAt, $expiresAt)')
    .run({ ...session });
};

const extendDashboardSession: WriteOp<{ tokenHash: string; expiresAt: number }, void> = (db, { tokenHash, expiresAt }) => {
  db.query('UPDATE dashboard_sessions SET expires_at = $expiresAt WHERE token_hash = $tokenHash').run({ tokenHash, expiresAt });
};

const deleteDashboardSession: WriteOp<{ tokenHash: string }, void> = (db, { tokenHash }) => {
  db.query('DELETE FROM dashboard_sessions WHERE token_hash = $tokenHash').run({ tokenHash });
};

export const dashboardWrites = { insertDashboardSession, extendDashboardSession, deleteDashboardSession };
