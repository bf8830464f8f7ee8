/**
 * Deleting an installation's rows, written through the committer in steps small enough that a running
 * server's writes go on between them. The first step detaches its samples from its id (the installation
 * row is renamed `purged:<number>`), so nothing reads or forwards them any more while later steps
 * delete them a batch at a time.
 */
import type { Database } from 'bun:sqlite';
import type { WriteOp } from '../db/group.ts';
import { PURGED_PREFIX } from '../telemetry/schema.ts';

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
    INSTALLATION_TABLES.map((table) => [table, db.query(`DELETE FROM ${table} WHERE installation_id = ?`).run(installationId).changes]),
  ) as Record<InstallationTable, number>;
  const detached = db
    .query<{ id: number }, [string, string]>("UPDATE installations SET uuid = ? || id WHERE uuid = ? RETURNING id")
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
const deletePurgedSamples: WriteOp<SampleBatch, { deleted: number; last: number | null }> = (db, { installation, after, limit }) => {
  const last = lastOfBatch(db, installation, after, limit);
  if (last === null) {
    db.query('DELETE FROM installations WHERE id = ?').run(installation);
    return { deleted: 0, last: null };
  }
  const deleted = db.query('DELETE FROM samples WHERE installation = ? AND utc > ? AND utc <= ?').run(installation, after, last).changes;
  return { deleted, last };
};

/** The `utc` of the `limit`th sample of the installation after `after` (its last, when fewer are left); null when none. */
function lastOfBatch(db: Database, installation: number, after: number, limit: number): number | null {
  const row = db
    .query<{ utc: number | null }, [number, number, number]>(
      'SELECT max(utc) AS utc FROM (SELECT utc FROM samples WHERE installation = ? AND utc > ? ORDER BY utc LIMIT ?)',
    )
    .get(installation, after, limit);
  return row?.utc ?? null;
}

export const deletionWrites = { purgeInstallation, deletePurgedSamples };

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

/** The newest purge's number (0 when none): a server starting forgets nothing it never held. */
export function lastPurge(db: Database): number {
  return db.query<{ id: number | null }, []>('SELECT max(id) AS id FROM purges').get()?.id ?? 0;
}
