/** Samples in the database, written through the committer. */
import type { WriteOp } from '../db/group.ts';
import { sampleFieldNames, sampleFields } from './fields.ts';
import type { SampleRow } from './model.ts';
import { PlannerState } from './schema.ts';

/**
 * Rows as they travel to the writer: every numeric column (utc, numbers, flags) in one Float64Array
 * with NaN for absent, which clones as one copy instead of value by value; text columns apart.
 */
export interface PackedRows {
  count: number;
  numbers: Float64Array;
  /** Row by row, the text columns; null when the batch has no text value at all. */
  texts: (string | null)[] | null;
}

export interface SampleWrite {
  installationId: string;
  plannerSentUtc: number;
  /** Whether the planner takes this installation's samples: new samples after `plannerSentUtc` become pending. */
  forward: boolean;
  rows: PackedRows;
}

/** Row positions (0 = utc) of the numeric and of the text columns. */
const numericColumns = [0, ...sampleFieldNames.flatMap((name, i) => (sampleFields[name].kind === 'text' ? [] : [i + 1]))];
const textColumns = sampleFieldNames.flatMap((name, i) => (sampleFields[name].kind === 'text' ? [i + 1] : []));

export function packRows(rows: SampleRow[]): PackedRows {
  const numericWidth = numericColumns.length;
  const textWidth = textColumns.length;
  const numbers = new Float64Array(rows.length * numericWidth);
  let texts: (string | null)[] | null = null;
  // Plain loops: this runs for every value of every batch on the request thread.
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    for (let c = 0; c < numericWidth; c++) numbers[r * numericWidth + c] = (row[numericColumns[c]!] as number | null) ?? NaN;
    for (let c = 0; c < textWidth; c++) {
      const value = row[textColumns[c]!];
      if (value === null) continue;
      texts ??= new Array(rows.length * textWidth).fill(null);
      texts[r * textWidth + c] = value as string;
    }
  }
  return { count: rows.length, numbers, texts };
}

const fieldColumns = sampleFieldNames.map((name) => `"${name}"`);
const insertColumns = ['installation_id', 'utc', ...fieldColumns, 'planner_state'];

/**
 * A re-sent sample replaces every value but keeps its planner state, so it is never forwarded twice;
 * only a sample still waiting that the car now says it gave the planner itself (its `utc` is not
 * after the batch's `plannerSentUtc`, the last parameter) stops waiting.
 */
const INSERT_SAMPLE = `INSERT INTO samples (${insertColumns.join(', ')})
  VALUES (${insertColumns.map(() => '?').join(', ')})
  ON CONFLICT (installation_id, utc) DO UPDATE SET ${fieldColumns.map((c) => `${c} = excluded.${c}`).join(', ')},
    planner_state = CASE WHEN planner_state = ${PlannerState.pending} AND excluded.utc <= ?${insertColumns.length + 1}
      THEN ${PlannerState.none} ELSE planner_state END`;

/** What a batch's write did to the planner's outbox; `added` holds row positions in the write. */
export interface StoredSamples {
  added: number[];
  withdrawn: boolean;
}

/**
 * Stores a batch's usable samples (all or none, as one write). Answers which rows it made pending
 * (only rows it inserted: a copy of a sample stored before keeps that one's state) and whether it may
 * have withdrawn waiting ones, so the forwarder learns what changed without reading the outbox.
 */
const storeSamples: WriteOp<SampleWrite, StoredSamples> = (db, { installationId, plannerSentUtc, forward, rows }) => {
  const insert = db.query(INSERT_SAMPLE);
  // An upsert that updates leaves last_insert_rowid as it was; one that inserts moves it.
  let lastRowid = db.query<{ id: number }, []>('SELECT last_insert_rowid() AS id').get()!.id;
  const stored: StoredSamples = { added: [], withdrawn: false };
  const values: (string | number | null)[] = new Array(insertColumns.length);
  const stateColumn = insertColumns.length - 1;
  const { numbers, texts } = rows;
  const numericWidth = numericColumns.length;
  const textWidth = textColumns.length;
  values[0] = installationId;
  // Plain loops: this runs once per stored value on the writer thread, the service's busiest code.
  for (let r = 0; r < rows.count; r++) {
    for (let c = 0; c < numericWidth; c++) {
      const value = numbers[r * numericWidth + c]!;
      values[numericColumns[c]! + 1] = value === value ? value : null; // NaN marks an absent value
    }
    for (let c = 0; c < textWidth; c++) values[textColumns[c]! + 1] = texts?.[r * textWidth + c] ?? null;
    const forPlanner = forward && (values[1] as number) > plannerSentUtc;
    values[stateColumn] = forPlanner ? PlannerState.pending : PlannerState.none;
    const { lastInsertRowid } = insert.run(...values, plannerSentUtc);
    const inserted = lastInsertRowid !== lastRowid;
    lastRowid = lastInsertRowid as number;
    if (inserted && forPlanner) stored.added.push(r);
    else if (!inserted && forward && !forPlanner) stored.withdrawn = true;
  }
  return stored;
};

export const telemetryWrites = { storeSamples };
