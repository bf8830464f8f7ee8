/**
 * The outbox: samples waiting for the planner are rows of `samples` with planner_state = pending,
 * read on the main connection through the partial index; their outcome is written by the committer.
 */
import type { Database } from 'bun:sqlite';
import type { WriteOp } from '../db/group.ts';
import { sampleFieldNames } from '../telemetry/fields.ts';
import type { SampleRow } from '../telemetry/model.ts';
import { PlannerState } from '../telemetry/schema.ts';

// The literal state (not a parameter) lets SQLite match the partial index `samples_planner_pending`.
const PENDING = `planner_state = ${PlannerState.pending}`;

/** Samples are keyed by the installation's number: the SQL finding it from the id in parameter `param`. */
const installationNumber = (param: string) => `(SELECT id FROM installations WHERE uuid = ${param})`;

/** Waiting samples of the installation in parameter 1, as rows like the batch's, narrowed by `rest`. */
const waitingRows = (rest: string) =>
  `SELECT utc, ${sampleFieldNames.join(', ')} FROM samples WHERE installation = ${installationNumber('?')} AND ${PENDING} ${rest}`;

/** Reads the oldest waiting samples of one installation, at most `limit`. */
export function pendingSamplesReader(db: Database): (installationId: string, limit: number) => SampleRow[] {
  const query = db.query<SampleRow, [string, number]>(waitingRows('ORDER BY utc LIMIT ?'));
  return (installationId, limit) => query.values(installationId, limit) as SampleRow[];
}

/** Reads one waiting sample as it is now, or null when it no longer waits (the car withdrew it). */
export function waitingSampleReader(db: Database): (installationId: string, utc: number) => SampleRow | null {
  const query = db.query<SampleRow, [string, number]>(waitingRows('AND utc = ?'));
  return (installationId, utc) => (query.values(installationId, utc)[0] as SampleRow | undefined) ?? null;
}

/**
 * Counts the samples waiting for the planner, over the partial index (the metrics' gauge). The count
 * walks the whole backlog, which grows while the planner is down: one count stands for `reuseMs`.
 */
export function waitingSamplesCounter(db: Database, reuseMs: number): () => number {
  const query = db.query<{ n: number }, []>(`SELECT count(*) AS n FROM samples WHERE ${PENDING}`);
  let counted = { at: -Infinity, n: 0 };
  return () => {
    const now = performance.now();
    if (now - counted.at >= reuseMs) counted = { at: now, n: query.get()!.n };
    return counted.n;
  };
}

/** Installations with samples still waiting: the start-up scan. */
export function installationsWithPending(db: Database): string[] {
  return db
    .query<{ id: string }, []>(
      `SELECT uuid AS id FROM installations WHERE id IN (SELECT installation FROM samples WHERE ${PENDING})`,
    )
    .all()
    .map((row) => row.id);
}

export interface SettledSample {
  installationId: string;
  utc: number;
  state: typeof PlannerState.sent | typeof PlannerState.givenUp;
}

/** Writes what became of forwarded samples; a sample no longer pending keeps its state. */
const plannerSettled: WriteOp<SettledSample[], void> = (db, samples) => {
  const update = db.query(
    `UPDATE samples SET planner_state = $state
     WHERE installation = ${installationNumber('$installationId')} AND utc = $utc AND ${PENDING}`,
  );
  for (const sample of samples) update.run({ ...sample });
};

export const plannerWrites = { plannerSettled };
