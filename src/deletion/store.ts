/**
 * Deleting an installation's rows, written through the committer in steps small enough that a running
 * server's writes go on between them. The first step detaches its samples from its id (the installation
 * row is renamed `purged:<number>`), so nothing reads or forwards them any more while later steps
 * delete them a batch at a time.
 */
import type { Database } from 'bun:sqlite';
import type { WriteOp } from '../db/group.ts';
import { PlannerState, PURGED_PREFIX } from '../telemetry/table.ts';

/** The tables keyed by `installation_id` (every feature's but the samples, which are keyed by number). */
const INSTALLATION_TABLES = [
  'devices',
  'consumption_chunks',
  'consumption_days',
  'consumption_lifetimes',
  'charging_sessions',
  'planner_status',
] as const;

export type InstallationTable = (typeof INSTALLATION_TABLES)[number];

export interface PurgedRows {
  /** Rows deleted from each table keyed by the installation id. */
  deleted: Record<InstallationTable, number>;
  /** The number its samples are kept under, now detached from the id; null when it had no samples. */
  samplesOf: number | null;
}

/**
 * Deletes every row keyed by the installation id, detaches its samples, and records the purge for
 * running servers (devices deleted also move `devices_version`, so their tokens go at once).
 */
const purgeInstallation: WriteOp<{ installationId: string; at: number }, PurgedRows> = (db, { installationId, at }) => {
  const deleted = Object.fromEntries(
    INSTALLATION_TABLES.map((table) => [
      table,
      db.query(`DELETE FROM ${table} WHERE installation_id = ?`).run(installationId).changes,
    ]),
  ) as Record<InstallationTable, number>;
  const detached = db
    .query<{ id: number }, [string, string]>('UPDATE installations SET uuid = ? || id WHERE uuid = ? RETURNING id')
    .get(PURGED_PREFIX, installationId);
  db.query('INSERT INTO purges (installation_id, at) VALUES (?, ?)').run(installationId, at);
  return { deleted, samplesOf: detached?.id ?? null };
};

/** A batch of a detached installation's samples: those after `after` (a `utc`), `limit` at most. */
export interface SampleBatch {
  installation: number;
  after: number;
  limit: number;
}

/**
 * Deletes a batch of a detached installation's samples, oldest first, by a `utc` range of the samples'
 * key; when none are left, the installation row too. Answers how many went and the batch's last `utc`.
 */
const deletePurgedSamples: WriteOp<SampleBatch, { deleted: number; last: number | null }> = (
  db,
  { installation, after, limit },
) => {
  const last = lastOfBatch(db, installation, after, limit);
  if (last === null) {
    db.query('DELETE FROM installations WHERE id = ?').run(installation);
    return { deleted: 0, last: null };
  }
  const deleted = db
    .query('DELETE FROM samples WHERE installation = ? AND utc > ? AND utc <= ?')
    .run(installation, after, last).changes;
  return { deleted, last };
};

/** The `utc` of the `limit`th sample of the installation after `after` (its last when fewer are left); null if none. */
function lastOfBatch(db: Database, installation: number, after: number, limit: number): number | null {
  const row = db
    .query<{ utc: number | null }, [number, number, number]>(
      'SELECT max(utc) AS utc FROM (SELECT utc FROM samples WHERE installation = ? AND utc > ? ORDER BY utc LIMIT ?)',
    )
    .get(installation, after, limit);
  return row?.utc ?? null;
}

/** A batch of the retention: samples with `utc` from `from` to before `before`, `limit` at most. */
export interface ExpiredBatch {
  from: number;
  before: number;
  limit: number;
}

/**
 * Deletes a batch of samples older than the retention, oldest first, but never one still waiting for
 * the planner; the sent and given-up ones are taken off their installation's status counts. Answers
 * how many went and the `utc` the next batch starts from (null when none are left).
 */
const deleteExpiredSamples: WriteOp<ExpiredBatch, { deleted: number; next: number | null }> = (
  db,
  { from, before, limit },
) => {
  const rows = db
    .query<{ id: number; installation: number; state: number; utc: number }, [number, number, number]>(
      `SELECT rowid AS id, installation, planner_state AS state, utc FROM samples
       WHERE utc >= ? AND utc < ? AND planner_state != ${PlannerState.pending} ORDER BY utc LIMIT ?`,
    )
    .all(from, before, limit);
  if (rows.length === 0) return { deleted: 0, next: null };
  uncount(db, rows);
  const ids = rows.map((row) => row.id);
  db.query(`DELETE FROM samples WHERE rowid IN (${ids.map(() => '?').join(',')})`).run(...ids);
  // From the batch's last utc again: other installations' samples of that second may be left.
  return { deleted: rows.length, next: rows.length < limit ? null : rows.at(-1)!.utc };
};

/** Takes deleted sent and given-up samples off their installations' status counts. */
function uncount(db: Database, rows: { installation: number; state: number }[]): void {
  const counts = new Map<number, { sent: number; givenUp: number }>();
  for (const { installation, state } of rows) {
    if (state !== PlannerState.sent && state !== PlannerState.givenUp) continue;
    const count = counts.get(installation) ?? { sent: 0, givenUp: 0 };
    if (state === PlannerState.sent) count.sent += 1;
    else count.givenUp += 1;
    counts.set(installation, count);
  }
  const update = db.query(
    `UPDATE planner_status SET sent = max(sent - $sent, 0), given_up = max(given_up - $givenUp, 0)
     WHERE installation_id = (SELECT uuid FROM installations WHERE id = $installation)`,
  );
  for (const [installation, count] of counts) update.run({ installation, ...count });
}

/** Gives up to `pages` free pages back to the file system (incremental auto-vacuum); answers the free pages left. */
const vacuumFreePages: WriteOp<{ pages: number }, number> = (db, { pages }) => {
  db.run(`PRAGMA incremental_vacuum(${Math.floor(pages)})`);
  return db.query<{ freelist_count: number }, []>('PRAGMA freelist_count').get()!.freelist_count;
};

/** Deletes the purges a running server has applied: it keeps no installation id past that. */
const deleteAppliedPurges: WriteOp<{ upTo: number }, void> = (db, { upTo }) => {
  db.query('DELETE FROM purges WHERE id <= ?').run(upTo);
};

export const deletionWrites = {
  purgeInstallation,
  deletePurgedSamples,
  deleteExpiredSamples,
  vacuumFreePages,
  deleteAppliedPurges,
};

/** Installations whose purge left samples to delete (a purge stopped half way): the next purge finishes them. */
export function detachedInstallations(db: Database): number[] {
  return db
    .query<{ id: number }, [string]>("SELECT id FROM installations WHERE uuid LIKE ? || '%'")
    .all(PURGED_PREFIX)
    .map((row) => row.id);
}

/** Purges recorded after `afterId`, oldest first: what a running server must forget. */
export function purgesAfter(db: Database, afterId: number): { id: number; installationId: string }[] {
  return db
    .query<{ id: number; installationId: string }, [number]>(
      'SELECT id, installation_id AS installationId FROM purges WHERE id > ? ORDER BY id',
    )
    .all(afterId);
}
