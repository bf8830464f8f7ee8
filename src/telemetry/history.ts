/**
 * Reading stored samples back: the newest one, a count, and every sample of a range in pages of
 * bounded size (oldest first), so that an export never holds more than a page in memory.
 */
import type { Database } from 'bun:sqlite';
import { isoOrNull } from '../clock.ts';
import { limits } from '../limits.ts';
import { sampleFieldNames, type SampleFieldName } from './fields.ts';
import type { SampleRow } from './model.ts';
import { PURGED_PREFIX } from './table.ts';

/** A range of `utc` (seconds), both ends included; an absent end is open. */
export interface UtcRange {
  from?: number;
  to?: number;
}

/** The newest sample: its installation, `utc`, when it was received (ISO 8601, null if unknown), its stored fields. */
export type LatestSample = { installationId: string; utc: number; receivedAt: string | null } & Partial<
  Record<SampleFieldName, number | string>
>;

const FIELDS = sampleFieldNames.map((name) => `"${name}"`).join(', ');

export class SampleHistory {
  private readonly installation;
  private readonly newest;
  private readonly counted;
  private readonly page;

  constructor(private readonly db: Database) {
    this.installation = db.query<{ id: number; latestUtc: number | null; latestReceivedAt: number | null }, [string]>(
      'SELECT id, latest_utc AS latestUtc, latest_received_at AS latestReceivedAt FROM installations WHERE uuid = ?',
    );
    // The key leads with `utc`: seeking down from the installation's newest `utc` finds its sample at
    // once, where `ORDER BY utc DESC` alone would walk every newer sample of every other installation.
    this.newest = db.query<SampleRow, [number, number]>(
      `SELECT utc, ${FIELDS} FROM samples WHERE installation = ? AND utc <= ? ORDER BY utc DESC LIMIT 1`,
    );
    this.counted = db.query<{ installationId: string; n: number }, [number]>(
      `SELECT uuid AS installationId, n
       FROM (SELECT installation, count(*) AS n FROM samples WHERE utc >= ? GROUP BY installation)
       JOIN installations ON installations.id = installation`,
    );
    this.page = db.query<SampleRow, [number, number, number, number]>(
      `SELECT utc, ${FIELDS} FROM samples WHERE installation = ? AND utc > ? AND utc <= ? ORDER BY utc LIMIT ?`,
    );
  }

  /** The installation's newest sample (by `utc`) with every stored field, or null when it has none. */
  latest(installationId: string): LatestSample | null {
    const installation = this.installation.get(installationId);
    if (!installation || installation.latestUtc === null) return null;
    const row = this.newest.values(installation.id, installation.latestUtc)[0] as SampleRow | undefined;
    if (!row) return null;
    const utc = row[0] as number;
    // The time is kept for the newest `utc` only; an older sample left newest (after a deletion) has none.
    const receivedAt = installation.latestUtc === utc ? isoOrNull(installation.latestReceivedAt) : null;
    return { installationId, utc, receivedAt, ...storedFields(row) };
  }

  /** Every installation that has stored samples, with the newest `utc` it stored; not those being purged. */
  installations(): { installationId: string; latestUtc: number | null }[] {
    return this.db
      .query<{ installationId: string; latestUtc: number | null }, []>(
        `SELECT uuid AS installationId, latest_utc AS latestUtc FROM installations
         WHERE uuid NOT LIKE '${PURGED_PREFIX}%'`,
      )
      .all();
  }

  /**
   * How many samples each installation holds from `utc` (seconds) on, absent ones having none: one
   * pass over the samples since `utc`, whatever the number of installations.
   */
  samplesSince(utc: number): Map<string, number> {
    return new Map(this.counted.all(utc).map(({ installationId, n }) => [installationId, n]));
  }

  /** The installation's samples in the range, oldest first, as rows (`utc`, then the fields), a page at a time. */
  *pages(
    installationId: string,
    { from, to }: UtcRange = {},
    pageRows: number = limits.exportPageRows,
  ): Generator<SampleRow[]> {
    let after = (from ?? 0) - 1;
    for (;;) {
      // Read a page at a time: a purge ends the export, and samples stored meanwhile are included.
      const installation = this.installation.get(installationId);
      if (installation?.latestUtc == null) return;
      // The key leads with utc: bounded by the newest sample, the last page does not scan later installations' rows.
      const last = Math.min(to ?? Number.MAX_SAFE_INTEGER, installation.latestUtc);
      // One statement a page, so that no read transaction stays open while the client reads.
      const page = this.page.values(installation.id, after, last, pageRows) as SampleRow[];
      if (page.length > 0) yield page;
      if (page.length < pageRows) return;
      after = page.at(-1)![0] as number;
    }
  }
}

/** A row's stored fields by name, absent ones left out. */
export function storedFields(row: SampleRow): Partial<Record<SampleFieldName, number | string>> {
  const fields: Partial<Record<SampleFieldName, number | string>> = {};
  for (let i = 0; i < sampleFieldNames.length; i++) {
    const value = row[i + 1];
    if (value !== null && value !== undefined) fields[sampleFieldNames[i]!] = value;
  }
  return fields;
}
