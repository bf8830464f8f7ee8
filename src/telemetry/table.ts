import { sql } from 'drizzle-orm';
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { sampleColumns } from './fields.ts';

/** Where a stored sample stands with the planner; the samples table is the forwarder's outbox. */
export const PlannerState = {
  /** Not for the planner: forwarding off for the installation, or the car already sent it. */
  none: 0,
  /** Waiting to be handed to the planner. */
  pending: 1,
  sent: 2,
  givenUp: 3,
} as const;

/** An installation row renamed so by a purge: its samples wait to be deleted, and no read finds them by the id. */
export const PURGED_PREFIX = 'purged:';

/**
 * The installations that sent samples, each under a small number: samples are keyed by that number
 * rather than the 36-character id, so rows and key entries are smaller and a commit writes fewer pages.
 */
export const installations = sqliteTable('installations', {
  id: integer('id').primaryKey(),
  /** The installation id, lower-cased. */
  uuid: text('uuid').notNull().unique(),
  /** The newest `utc` stored (never lowered by deletions), and when the batch holding it was received (Unix ms). */
  latestUtc: integer('latest_utc'),
  latestReceivedAt: integer('latest_received_at'),
});

/**
 * Live samples keyed by (installation, utc): a re-sent sample replaces, never duplicates. The key
 * leads with `utc` because cars send what is happening now: new rows of every installation land at
 * the end of the key's b-tree, so a group commit writes a few pages instead of one per car.
 */
export const samples = sqliteTable(
  'samples',
  {
    installation: integer('installation')
      .notNull()
      .references(() => installations.id),
    utc: integer('utc').notNull(),
    ...sampleColumns,
    plannerState: integer('planner_state').notNull().default(PlannerState.none),
  },
  (table) => [
    primaryKey({ columns: [table.utc, table.installation] }),
    // Only the few waiting samples are indexed, for the forwarder's start-up scan and its queue.
    index('samples_planner_pending')
      .on(table.installation, table.utc)
      .where(sql`${table.plannerState} = ${sql.raw(String(PlannerState.pending))}`),
  ],
);
