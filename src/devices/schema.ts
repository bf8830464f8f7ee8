import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Paired cars. The token itself is never stored: only its SHA-256, hex-encoded. */
export const devices = sqliteTable(
  'devices',
  {
    id: text('id').primaryKey(),
    installationId: text('installation_id').notNull(),
    name: text('name'),
    tokenHash: text('token_hash').notNull().unique(),
    /** Unix milliseconds, like every time column. */
    createdAt: integer('created_at').notNull(),
    lastSeenAt: integer('last_seen_at'),
    revokedAt: integer('revoked_at'),
  },
  (table) => [index('devices_installation').on(table.installationId)],
);
