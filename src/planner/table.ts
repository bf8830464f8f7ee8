import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * What the forwarding status shows of each installation, kept with the outcomes so that it outlives a
 * restart: how many stored samples were sent or given up (counting them in `samples` would read the
 * whole table), the last accepted one, and the last failed attempt.
 */
export const plannerStatus = sqliteTable('planner_status', {
  installationId: text('installation_id').primaryKey(),
  sent: integer('sent').notNull().default(0),
  givenUp: integer('given_up').notNull().default(0),
  /** When the planner last accepted a sample (Unix ms), and the newest `utc` it accepted. */
  lastSentAt: integer('last_sent_at'),
  lastSentUtc: integer('last_sent_utc'),
  /** The last failed attempt: when (Unix ms), the planner's status or the error's name, the attempt's number. */
  lastFailureAt: integer('last_failure_at'),
  lastFailureStatus: integer('last_failure_status'),
  lastFailureError: text('last_failure_error'),
  lastFailureAttempt: integer('last_failure_attempt'),
});
