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
    /**
     * True from the approval until the car has collected its token. Pairing requests live in memory
     * only, so a device still awaiting collection when the server starts never gets it and is revoked
     * then. A row written without it (by an earlier version) counts as collected.
     */
    awaitingCollection: integer('awaiting_collection', { mode: 'boolean' }).notNull().default(false),
  },
  (table) => [index('devices_installation').on(table.installationId)],
);

/**
 * One row counting the changes of `devices` that the token registry holds in memory: triggers (made by
 * migration 0002, by hand) bump it on an insert, a delete and an update of id, installation, token or
 * revocation, whichever connection makes it, but not on a `lastSeenAt` write. A migration that rebuilds
 * `devices` drops those triggers with it and must create them again.
 */
export const devicesVersion = sqliteTable('devices_version', {
  version: integer('version').notNull(),
});
