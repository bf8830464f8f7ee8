import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Signed-in dashboard sessions. The cookie's secret is never stored: only its SHA-256, hex-encoded. */
export const dashboardSessions = sqliteTable(
  'dashboard_sessions',
  {
    tokenHash: text('token_hash').primaryKey(),
    /** Unix milliseconds, like every time column. */
    createdAt: integer('created_at').notNull(),
    /** Moved forward as the session is used (sliding expiry). */
    expiresAt: integer('expires_at').notNull(),
  },
  (table) => [index('dashboard_sessions_expiry').on(table.expiresAt)],
);

/**
 * The approval password the sessions were opened under, as a fingerprint: its scrypt under a random salt
 * of this database. One row (id 1); a different fingerprint at start ends every session.
 */
export const dashboardPassword = sqliteTable('dashboard_password', {
  id: integer('id').primaryKey(),
  /** 32 random bytes, base64url. */
  salt: text('salt').notNull(),
  /** base64url. */
  fingerprint: text('fingerprint').notNull(),
});
