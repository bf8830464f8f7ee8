import { sql } from 'drizzle-orm';
import { index, integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Chunks as the car sent them: a delta keyed by (installation, recordedAt), a snapshot by (installation,
 * recordedAt, date), since one sync stamps every day it sends with the same time; a re-sent chunk
 * replaces. The key leads with the time so that the chunks of all cars append at one end of the b-tree
 * (see samples).
 */
export const consumptionChunks = sqliteTable(
  'consumption_chunks',
  {
    installationId: text('installation_id').notNull(),
    recordedAt: integer('recorded_at').notNull(),
    date: text('date').notNull(),
    km: real('km').notNull(),
    kwh: real('kwh').notNull(),
    hours: real('hours').notNull(),
    socDrop: real('soc_drop').notNull(),
    sohPercent: real('soh_percent'),
    /** 1: the day's totals so far (older builds' chunks, sent with a `lifetime`), 0: a delta. */
    snapshot: integer('snapshot').notNull().default(0),
  },
  (table) => [
    primaryKey({ columns: [table.recordedAt, table.installationId, table.snapshot, table.date] }),
    // Finds a day's newest chunk, which says whether its snapshots count, in one step.
    index('consumption_chunks_day').on(table.installationId, table.date, table.recordedAt),
    // Finds a day's newest chunk that carried a state of health without reading the day's chunks.
    index('consumption_chunks_soh')
      .on(table.installationId, table.date, table.recordedAt)
      .where(sql`${table.sohPercent} IS NOT NULL`),
  ],
);

/**
 * A day's sums, kept in step with its chunks by every chunk write, so reads never add chunks up.
 * Sums are exact integers in units of 2^-unit_bits as decimal text (see totals.ts).
 */
export const consumptionDays = sqliteTable(
  'consumption_days',
  {
    installationId: text('installation_id').notNull(),
    date: text('date').notNull(),
    chunks: integer('chunks').notNull(),
    ...sumsColumns(),
    /** Of the day's newest chunk (by recordedAt) that carried one. */
    sohPercent: real('soh_percent'),
  },
  (table) => [primaryKey({ columns: [table.installationId, table.date] })],
);

/** The sum of all of an installation's days, so a history's lifetime never adds up old days. */
export const consumptionLifetimes = sqliteTable('consumption_lifetimes', {
  installationId: text('installation_id').primaryKey(),
  ...sumsColumns(),
});

/**
 * The four sums, exact decimal text, and their unit, 2^-unit_bits: 64 in rows written before it was
 * recorded, the unit they were written in. Fresh builders for each table.
 */
function sumsColumns() {
  return {
    km: text('km').notNull(),
    kwh: text('kwh').notNull(),
    hours: text('hours').notNull(),
    socDrop: text('soc_drop').notNull(),
    unitBits: integer('unit_bits').notNull().default(64),
  };
}
