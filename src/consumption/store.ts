/**
 * Chunks, day sums and lifetime sums. One write operation stores a chunk and moves the sums in the
 * same transaction: it adds the new chunk and takes back the one it replaced.
 */
import type { Database } from 'bun:sqlite';
import type { WriteOp } from '../db/group.ts';
import type { Chunk } from './model.ts';
import { fromStored, minus, plus, toStored, totalsOf, ZERO, type DayValues, type StoredTotals, type Totals } from './totals.ts';

/** A chunk's values, named as in `DayValues`. */
const VALUES = 'km, kwh, hours, soc_drop AS socDrop';
/** A row's sums, named as in `StoredTotals`. */
const SUMS = `${VALUES}, unit_bits AS unitBits`;

interface StoredChunk extends DayValues {
  date: string;
}

const putChunk: WriteOp<Chunk, void> = (db, chunk) => {
  const { installationId, recordedAt, date } = chunk;
  const replaced = db
    .query<StoredChunk, [string, number]>(
      `SELECT date, ${VALUES} FROM consumption_chunks WHERE installation_id = ? AND recorded_at = ?`,
    )
    .get(installationId, recordedAt);
  db.query(
    `INSERT INTO consumption_chunks (installation_id, recorded_at, date, km, kwh, hours, soc_drop, soh_percent)
     VALUES ($installationId, $recordedAt, $date, $km, $kwh, $hours, $socDrop, $sohPercent)
     ON CONFLICT (installation_id, recorded_at) DO UPDATE SET date = excluded.date, km = excluded.km,
       kwh = excluded.kwh, hours = excluded.hours, soc_drop = excluded.soc_drop, soh_percent = excluded.soh_percent`,
  ).run({ installationId, recordedAt, date, ...chunk.day, sohPercent: chunk.sohPercent });
  const added = totalsOf(chunk.day);
  const taken = replaced ? totalsOf(replaced) : ZERO;
  if (replaced?.date === date) {
    addToDay(db, installationId, date, minus(added, taken), 0);
  } else {
    if (replaced) addToDay(db, installationId, replaced.date, minus(ZERO, taken), -1);
    addToDay(db, installationId, date, added, 1);
  }
  addToLifetime(db, installationId, minus(added, taken));
};

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
    .query<StoredTotals, [string]>(
      `SELECT ${SUMS} FROM consumption_lifetimes WHERE installation_id = ?`,
    )
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
