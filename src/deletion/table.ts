import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Every purge of an installation, numbered in order: a running server reads the rows after the last
 * one it has seen and forgets what it holds of those installations (the purge runs in another process).
 */
export const purges = sqliteTable('purges', {
  id: integer('id').primaryKey(),
  installationId: text('installation_id').notNull(),
  /** Unix ms. */
  at: integer('at').notNull(),
});
