/**
 * Seeding a benchmark's database directly (not through the service, which would take hours): years of
 * consumption chunks with their day and lifetime sums, and millions of samples, as the service stores them.
 */
import { Database } from 'bun:sqlite';
import { plus, toStored, totalsOf, ZERO, type DayValues, type Totals } from '../src/consumption/totals.ts';
import { migrate } from '../src/db/migrate.ts';
import { syncPath } from '../src/db/private-file.ts';

/** A fresh database of this version's schema, written unsynced for speed. */
export function openSeedDatabase(path: string): Database {
  const db = new Database(path, { create: true, strict: true });
  db.run('PRAGMA journal_mode = WAL');
  db.run('PRAGMA synchronous = OFF');
  migrate(db);
  return db;
}

/**
 * Closes a seeded database and syncs it: left unsynced, the service's first checkpoint would flush the
 * whole file (~1 s in which no write is answered, measured as the first load's p99) instead of what it wrote itself.
 */
export function closeSeedDatabase(db: Database, path: string): void {
  db.run('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
  syncPath(path);
}

export interface ChunkSeed {
  installationId: string;
  years: number;
  chunksPerDay: number;
  /** Unix ms of the first day's midnight (UTC). */
  firstDay: number;
}

/** Writes the chunks, their day sums and the lifetime sums as the service would have, in big transactions. */
export function seedChunks(
  db: Database,
  { installationId, years, chunksPerDay, firstDay }: ChunkSeed,
): { chunks: number; days: number } {
  const insertChunk = db.query(
    `INSERT INTO consumption_chunks (installation_id, recorded_at, date, km, kwh, hours, soc_drop, soh_percent)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertDay = db.query(
    `INSERT INTO consumption_days (installation_id, date, chunks, km, kwh, hours, soc_drop, unit_bits, soh_percent)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const days = Math.max(1, Math.round(years * 365.25));
  const spacing = 86_400_000 / chunksPerDay;
  let lifetime: Totals = ZERO;
  const seedDay = db.transaction((dayIndex: number) => {
    const start = firstDay + dayIndex * 86_400_000;
    const date = new Date(start).toISOString().slice(0, 10);
    let sums: Totals = ZERO;
    let soh: number | null = null;
    for (let n = 0; n < chunksPerDay; n += 1) {
      const values: DayValues = { km: 1 + (n % 7) * 0.25, kwh: 0.18 + (n % 5) * 0.01, hours: 1 / 30, socDrop: 0.3 };
      soh = n % 10 === 0 ? 100 - dayIndex / 365 : soh;
      insertChunk.run(
        installationId,
        start + n * spacing,
        date,
        values.km,
        values.kwh,
        values.hours,
        values.socDrop,
        n % 10 === 0 ? soh : null,
      );
      sums = plus(sums, totalsOf(values));
    }
    const stored = toStored(sums);
    insertDay.run(
      installationId,
      date,
      chunksPerDay,
      stored.km,
      stored.kwh,
      stored.hours,
      stored.socDrop,
      stored.unitBits,
      soh,
    );
    lifetime = plus(lifetime, sums);
  });
  for (let day = 0; day < days; day += 1) seedDay(day);
  const stored = toStored(lifetime);
  db.query(
    'INSERT INTO consumption_lifetimes (installation_id, km, kwh, hours, soc_drop, unit_bits) ' +
      'VALUES (?, ?, ?, ?, ?, ?)',
  ).run(installationId, stored.km, stored.kwh, stored.hours, stored.socDrop, stored.unitBits);
  return { chunks: days * chunksPerDay, days };
}

/**
 * Writes `count` samples of one installation, `spacing` seconds apart up to `lastUtc`, in one statement
 * (SQLite generates the rows, oldest first, as they arrived), and records its newest `utc` as the service does.
 */
export function seedSamples(
  db: Database,
  installationId: string,
  count: number,
  lastUtc: number,
  spacing: number,
): void {
  const id = db
    .query<{ id: number }, [string]>('INSERT INTO installations (uuid) VALUES (?) RETURNING id')
    .get(installationId)!.id;
  db.query(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO samples (installation, utc, soc, power, speed, lat, lon, is_charging)
     SELECT ?, ? + i * ?, 20 + i % 80, (i % 100) - 30.0, i % 130,
            52.5 + (i % 1000) / 10000.0, 13.4 + (i % 997) / 10000.0, 0 FROM n`,
  ).run(count - 1, id, lastUtc - (count - 1) * spacing, spacing);
  db.query('UPDATE installations SET latest_utc = ?, latest_received_at = ? WHERE id = ?').run(
    lastUtc,
    lastUtc * 1000,
    id,
  );
}
