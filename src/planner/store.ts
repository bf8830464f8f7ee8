/**
 * The outbox: samples waiting for the planner are rows of `samples` with planner_state = pending,
 * read on the main connection through the partial index; their outcome is written by the committer.
 */
import type { Database } from 'bun:sqlite';
import type { WriteOp } from '../db/group.ts';
import { sampleFieldNames } from '../telemetry/fields.ts';
import type { SampleRow } from '../telemetry/model.ts';
import { PlannerState, PURGED_PREFIX } from '../telemetry/table.ts';

// The literal state (not a parameter) lets SQLite match the partial index `samples_planner_pending`.
const PENDING = `planner_state = ${PlannerState.pending}`;

/** Samples are keyed by the installation's number: the SQL finding it from the id in parameter `param`. */
const installationNumber = (param: string) => `(SELECT id FROM installations WHERE uuid = ${param})`;

/** Waiting samples of the installation in parameter 1, as rows like the batch's, narrowed by `rest`. */
const waitingRows = (rest: string) =>
  `SELECT utc, ${sampleFieldNames.join(', ')} FROM samples
   WHERE installation = ${installationNumber('?')} AND ${PENDING} ${rest}`;

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
  /** When the planner answered (Unix ms). */
  at: number;
}

/** An installation's share of a write of outcomes, added to its forwarding status. */
interface StatusChange {
  sent: number;
  givenUp: number;
  lastSentAt: number | null;
  lastSentUtc: number | null;
}

const ADD_TO_STATUS = `INSERT INTO planner_status (installation_id, sent, given_up, last_sent_at, last_sent_utc)
  VALUES ($installationId, $sent, $givenUp, $lastSentAt, $lastSentUtc)
  ON CONFLICT (installation_id) DO UPDATE SET sent = sent + excluded.sent, given_up = given_up + excluded.given_up,
    last_sent_at = coalesce(excluded.last_sent_at, last_sent_at),
    last_sent_utc = max(
      coalesce(last_sent_utc, excluded.last_sent_utc), coalesce(excluded.last_sent_utc, last_sent_utc))`;

/** A failed attempt to hand a sample to the planner: the planner's status, or the name of the error. */
export interface PlannerFailure {
  installationId: string;
  at: number;
  status: number | null;
  error: string | null;
  attempt: number;
}

// Only while the installation exists: a request in flight across a purge must not bring its status back.
const RECORD_FAILURE = `INSERT INTO planner_status
    (installation_id, last_failure_at, last_failure_status, last_failure_error, last_failure_attempt)
  SELECT $installationId, $at, $status, $error, $attempt
  WHERE EXISTS (SELECT 1 FROM installations WHERE uuid = $installationId)
  ON CONFLICT (installation_id) DO UPDATE SET last_failure_at = excluded.last_failure_at,
    last_failure_status = excluded.last_failure_status, last_failure_error = excluded.last_failure_error,
    last_failure_attempt = excluded.last_failure_attempt`;

/**
 * Writes what became of forwarded samples, counted in each installation's status with the last failed
 * attempts; a sample no longer pending keeps its state.
 */
const plannerSettled: WriteOp<{ samples: SettledSample[]; failures: PlannerFailure[] }, void> = (
  db,
  { samples, failures },
) => {
  const update = db.query(
    `UPDATE samples SET planner_state = $state
     WHERE installation = ${installationNumber('$installationId')} AND utc = $utc AND ${PENDING}`,
  );
  const changes = new Map<string, StatusChange>();
  for (const { installationId, utc, state, at } of samples) {
    if (update.run({ installationId, utc, state }).changes === 0) continue;
    let change = changes.get(installationId);
    if (!change) changes.set(installationId, (change = { sent: 0, givenUp: 0, lastSentAt: null, lastSentUtc: null }));
    if (state === PlannerState.givenUp) change.givenUp += 1;
    else {
      change.sent += 1;
      change.lastSentAt = Math.max(change.lastSentAt ?? at, at);
      change.lastSentUtc = Math.max(change.lastSentUtc ?? utc, utc);
    }
  }
  const add = db.query(ADD_TO_STATUS);
  for (const [installationId, change] of changes) add.run({ installationId, ...change });
  const recordFailure = db.query(RECORD_FAILURE);
  for (const failure of failures) recordFailure.run({ ...failure });
};

export const plannerWrites = { plannerSettled };

/** An installation's stored forwarding facts, as `planner_status` keeps them. */
export interface StoredPlannerStatus {
  sent: number;
  givenUp: number;
  lastSentAt: number | null;
  lastSentUtc: number | null;
  lastFailureAt: number | null;
  lastFailureStatus: number | null;
  lastFailureError: string | null;
  lastFailureAttempt: number | null;
}

const STATUS_COLUMNS = `sent, given_up AS givenUp, last_sent_at AS lastSentAt, last_sent_utc AS lastSentUtc,
  last_failure_at AS lastFailureAt, last_failure_status AS lastFailureStatus, last_failure_error AS lastFailureError,
  last_failure_attempt AS lastFailureAttempt`;

/** Reads an installation's stored forwarding facts (null when it has none) and how many of its samples wait. */
export function plannerStatusReader(db: Database) {
  const facts = db.query<StoredPlannerStatus, [string]>(
    `SELECT ${STATUS_COLUMNS} FROM planner_status WHERE installation_id = ?`,
  );
  const waiting = db.query<{ n: number }, [string]>(
    `SELECT count(*) AS n FROM samples WHERE installation = ${installationNumber('?')} AND ${PENDING}`,
  );
  return (installationId: string) => ({ facts: facts.get(installationId), waiting: waiting.get(installationId)!.n });
}

/** Every installation with stored samples, by id, with its forwarding facts and waiting count (`ev-ingest status`). */
export function everyPlannerStatus(
  db: Database,
): { installationId: string; facts: StoredPlannerStatus | null; waiting: number }[] {
  const rows = db
    .query<StoredPlannerStatus & { installationId: string; waiting: number; known: number | null }, []>(
      `SELECT uuid AS installationId, ${STATUS_COLUMNS}, planner_status.installation_id IS NOT NULL AS known,
         (SELECT count(*) FROM samples WHERE installation = installations.id AND ${PENDING}) AS waiting
       FROM installations LEFT JOIN planner_status ON planner_status.installation_id = installations.uuid
       WHERE uuid NOT LIKE '${PURGED_PREFIX}%' ORDER BY uuid`,
    )
    .all();
  return rows.map(({ installationId, waiting, known, ...facts }) => ({
    installationId,
    waiting,
    facts: known ? facts : null,
  }));
}
