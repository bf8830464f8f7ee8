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
