/**
 * Chunks, day sums and lifetime sums. One write operation stores a chunk and moves the sums in the
 * same transaction: it adds the new chunk and takes back the one it replaced. Chunks are never deleted:
 * sums an earlier build wrote without their unit are rebuilt from them at start-up.
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
  const lifetime = readLifetime(db, installationId);
  writeLifetime(db, installationId, plus(lifetime ? fromStored(lifetime) : ZERO, minus(added, taken)));
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
  writeDay(db, installationId, date, chunks, plus(day ? fromStored(day) : ZERO, change));
}

function writeDay(db: Database, installationId: string, date: string, chunks: number, sums: Totals): void {
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

function writeLifetime(db: Database, installationId: string, sums: Totals): void {
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

/**
 * The installations whose sums an earlier build of 2.1.0 wrote without their unit, in a fixed 2^-64 that
 * rounded values below 2^-12: a lifetime without one (that build wrote it with each of its days), or a
 * day without one under a lifetime with one (that build run again on a database this one had migrated).
 */
const UNITLESS_INSTALLATIONS = `SELECT installation_id AS id FROM consumption_lifetimes WHERE unit_bits IS NULL
  UNION SELECT installation_id FROM consumption_days WHERE unit_bits IS NULL`;

/** Whether some sums lack their unit: a look through the sums' rows, so most starts write nothing. */
export function hasSumsWithoutUnit(db: Database): boolean {
  return db.query(`${UNITLESS_INSTALLATIONS} LIMIT 1`).get() !== null;
}

export interface SumsRebuilt {
  installations: number;
  /** Day and lifetime rows written. */
  rows: number;
}

/**
 * Adds up again, from their chunks (kept as the car sent them), every day and lifetime sum of the
 * installations whose sums lack their unit, in one pass over the chunks table in its own order: no
 * index leads with the installation, so reading each one's chunks would read the table each time, and
 * sorting them all would hold every chunk in memory (temp_store = MEMORY), where this holds a sum a day.
 */
const rebuildSumsWithoutUnit: WriteOp<void, SumsRebuilt> = (db) => {
  const installations = new Map(
    db.query<{ id: string }, []>(UNITLESS_INSTALLATIONS).all().map(({ id }) => [id, new Map<string, { chunks: number; sums: Totals }>()]),
  );
  const chunks = db.query<StoredChunk & { installationId: string }, []>(
    `SELECT installation_id AS installationId, date, ${VALUES} FROM consumption_chunks
     WHERE installation_id IN (${UNITLESS_INSTALLATIONS})`,
  );
  for (const chunk of chunks.iterate()) {
    const days = installations.get(chunk.installationId)!;
    const day = days.get(chunk.date);
    if (day) {
      day.chunks += 1;
      day.sums = plus(day.sums, totalsOf(chunk));
    } else {
      days.set(chunk.date, { chunks: 1, sums: totalsOf(chunk) });
    }
  }
  // Before the lifetimes are written: until then those without a unit name the installations rebuilt.
  db.query(`DELETE FROM consumption_days WHERE installation_id IN (${UNITLESS_INSTALLATIONS})`).run();
  let rows = 0;
  for (const [installationId, days] of installations) {
    let lifetime = ZERO;
    for (const [date, { chunks, sums }] of days) {
      writeDay(db, installationId, date, chunks, sums);
      lifetime = plus(lifetime, sums);
    }
    writeLifetime(db, installationId, lifetime);
    rows += days.size + 1;
  }
  return { installations: installations.size, rows };
};

export const consumptionWrites = { putChunk, rebuildSumsWithoutUnit };

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
