/**
 * Chunks, day sums and lifetime sums. One write operation stores a chunk and moves the sums in the
 * same transaction: it adds what the new chunk counts for and takes back what the replaced one did.
 */
import type { Database } from 'bun:sqlite';
import type { WriteOp } from '../db/group.ts';
import type { Chunk } from './model.ts';
import {
  fromStored,
  minus,
  plus,
  toStored,
  totalsOf,
  ZERO,
  type DayValues,
  type StoredTotals,
  type Totals,
} from './totals.ts';

/** A chunk's values, named as in `DayValues`. */
const VALUES = 'km, kwh, hours, soc_drop AS socDrop';
/** A row's sums, named as in `StoredTotals`. */
const SUMS = `${VALUES}, unit_bits AS unitBits`;

interface StoredChunk extends DayValues {
  date: string;
  /** 1 for a snapshot. */
  snapshot: number;
}

/**
 * Stores a chunk and moves the sums of the days it touches (its own, and the replaced chunk's) by what
 * each counts for: a delta chunk its values, a snapshot as `snapshotCounted` says.
 */
const putChunk: WriteOp<Chunk, void> = (db, chunk) => {
  const { installationId, recordedAt, date } = chunk;
  const replaced = replacedBy(db, chunk);
  const dates = replaced && replaced.date !== date ? [date, replaced.date] : [date];
  const countedBefore = dates.map((day) => snapshotCounted(db, installationId, day));
  // What a day's snapshots count for can change only by a snapshot written or replaced, a delta leaving
  // a day, or a new delta recorded after a snapshot that counted; not otherwise (the usual delta write).
  const mayMove = chunk.snapshot || (replaced !== null && replaced.date !== date);
  const row = {
    installationId,
    recordedAt,
    date,
    ...chunk.day,
    sohPercent: chunk.sohPercent,
    snapshot: chunk.snapshot ? 1 : 0,
  };
  db.query(
    replaced
      ? `UPDATE consumption_chunks SET date = $date, km = $km, kwh = $kwh, hours = $hours, soc_drop = $socDrop,
           soh_percent = $sohPercent
         WHERE recorded_at = $recordedAt AND installation_id = $installationId AND snapshot = $snapshot
           AND date = $replacedDate`
      : `INSERT INTO consumption_chunks
           (installation_id, recorded_at, date, km, kwh, hours, soc_drop, soh_percent, snapshot)
         VALUES ($installationId, $recordedAt, $date, $km, $kwh, $hours, $socDrop, $sohPercent, $snapshot)`,
  ).run(replaced ? { ...row, replacedDate: replaced.date } : row);
  const added = chunk.snapshot ? ZERO : totalsOf(chunk.day);
  const taken = replaced?.snapshot === 0 ? totalsOf(replaced) : ZERO;
  let lifetimeChange = ZERO;
  dates.forEach((day, index) => {
    const deltas = minus(day === date ? added : ZERO, replaced?.date === day ? taken : ZERO);
    const before = countedBefore[index]!;
    const after = mayMove || !isZero(before) ? snapshotCounted(db, installationId, day) : before;
    const change = after === before ? deltas : plus(deltas, minus(after, before));
    addToDay(db, installationId, day, change, (day === date ? 1 : 0) - (replaced?.date === day ? 1 : 0));
    lifetimeChange = plus(lifetimeChange, change);
  });
  addToLifetime(db, installationId, lifetimeChange);
};

/**
 * The stored chunk that `chunk` replaces: a delta the delta of its installation and recordedAt (from
 * whichever day), a snapshot the snapshot of its installation, recordedAt and date.
 */
function replacedBy(db: Database, { installationId, recordedAt, date, snapshot }: Chunk): StoredChunk | null {
  const sameKey = 'recorded_at = ? AND installation_id = ? AND snapshot = ?';
  const select = `SELECT date, ${VALUES}, snapshot FROM consumption_chunks WHERE ${sameKey}`;
  return snapshot
    ? db
        .query<StoredChunk, [number, string, number, string]>(`${select} AND date = ?`)
        .get(recordedAt, installationId, 1, date)
    : db.query<StoredChunk, [number, string, number]>(select).get(recordedAt, installationId, 0);
}

const isZero = (totals: Totals) =>
  totals.km === 0n && totals.kwh === 0n && totals.hours === 0n && totals.socDrop === 0n;

/**
 * What a day's snapshots add to its sums: the newest snapshot, unless a delta chunk of the day was
 * recorded at or after it, then nothing. Each snapshot holds the day so far, so older ones are inside
 * the newest; and the app's first delta after an update from a snapshot build starts from the day's
 * start (its checkpoint is new), so it holds what the snapshots held. So only the day's newest chunk
 * matters, a delta before a snapshot of the same time.
 */
function snapshotCounted(db: Database, installationId: string, date: string): Totals {
  const newest = db
    .query<DayValues & { snapshot: number }, [string, string]>(
      `SELECT ${VALUES}, snapshot FROM consumption_chunks
       WHERE installation_id = ? AND date = ? ORDER BY recorded_at DESC, snapshot LIMIT 1`,
    )
    .get(installationId, date);
  return newest?.snapshot === 1 ? totalsOf(newest) : ZERO;
}

interface StoredDay extends StoredTotals {
  chunks: number;
}

/** Moves a day's sums and chunk count; a day left without chunks is no longer a day of the history. */
function addToDay(db: Database, installationId: string, date: string, change: Totals, chunkChange: number): void {
  const day = db
    .query<StoredDay, [string, string]>(
      `SELECT chunks, ${SUMS} FROM consumption_days WHERE installation_id = ? AND date = ?`,
    )
    .get(installationId, date);
  const chunks = (day?.chunks ?? 0) + chunkChange;
  if (chunks === 0) {
    db.query('DELETE FROM consumption_days WHERE installation_id = ? AND date = ?').run(installationId, date);
    return;
  }
  const sums = plus(day ? fromStored(day) : ZERO, change);
  // The chunk row is already written, so the newest state of health is read from the chunks as they are now.
  db.query(
    `INSERT INTO consumption_days (installation_id, date, chunks, km, kwh, hours, soc_drop, unit_bits, soh_percent)
     VALUES ($installationId, $date, $chunks, $km, $kwh, $hours, $socDrop, $unitBits,
       (SELECT soh_percent FROM consumption_chunks
        WHERE installation_id = $installationId AND date = $date AND soh_percent IS NOT NULL
        ORDER BY recorded_at DESC LIMIT 1))
     ON CONFLICT (installation_id, date) DO UPDATE SET chunks = excluded.chunks, km = excluded.km,
       kwh = excluded.kwh, hours = excluded.hours, soc_drop = excluded.soc_drop, unit_bits = excluded.unit_bits,
       soh_percent = excluded.soh_percent`,
  ).run({ installationId, date, chunks, ...toStored(sums) });
}

function addToLifetime(db: Database, installationId: string, change: Totals): void {
  const lifetime = readLifetime(db, installationId);
  const sums = plus(lifetime ? fromStored(lifetime) : ZERO, change);
  db.query(
    `INSERT INTO consumption_lifetimes (installation_id, km, kwh, hours, soc_drop, unit_bits)
     VALUES ($installationId, $km, $kwh, $hours, $socDrop, $unitBits)
     ON CONFLICT (installation_id) DO UPDATE SET km = excluded.km, kwh = excluded.kwh,
       hours = excluded.hours, soc_drop = excluded.soc_drop, unit_bits = excluded.unit_bits`,
  ).run({ installationId, ...toStored(sums) });
}

function readLifetime(db: Database, installationId: string): StoredTotals | null {
  return db
    .query<StoredTotals, [string]>(`SELECT ${SUMS} FROM consumption_lifetimes WHERE installation_id = ?`)
    .get(installationId);
}

export const consumptionWrites = { putChunk };

export interface HistoryDay extends StoredTotals {
  date: string;
  sohPercent: number | null;
}

export interface StoredHistory {
  days: HistoryDay[];
  lifetime: StoredTotals | null;
}

/** The newest days and the lifetime sums, read in one snapshot so that they agree with each other. */
export function readHistory(db: Database, installationId: string, days: number): StoredHistory {
  return db.transaction(() => ({
    days: db
      .query<HistoryDay, [string, number]>(
        `SELECT date, ${SUMS}, soh_percent AS sohPercent
         FROM consumption_days WHERE installation_id = ? ORDER BY date DESC LIMIT ?`,
      )
      .all(installationId, days),
    lifetime: readLifetime(db, installationId),
  }))();
}

/** A page of the installation's days after `afterDate`, oldest first. */
export function readDaysAfter(db: Database, installationId: string, afterDate: string, limit: number): HistoryDay[] {
  return db
    .query<HistoryDay, [string, string, number]>(
      `SELECT date, ${SUMS}, soh_percent AS sohPercent
       FROM consumption_days WHERE installation_id = ? AND date > ? ORDER BY date LIMIT ?`,
    )
    .all(installationId, afterDate, limit);
}

/** Every installation with a lifetime row, which its first chunk makes. */
export function installationsWithChunks(db: Database): string[] {
  return db
    .query<{ id: string }, []>('SELECT installation_id AS id FROM consumption_lifetimes')
    .all()
    .map((row) => row.id);
}
