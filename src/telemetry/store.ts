/** Samples in the database, written through the committer. */
import type { Database } from 'bun:sqlite';
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
const insertColumns = ['installation', 'utc', ...fieldColumns, 'planner_state'];

/** A new sample; a conflict with one stored before is left to REPLACE_SAMPLE. */
const INSERT_SAMPLE = `INSERT INTO samples (${insertColumns.join(', ')})
  VALUES (${insertColumns.map(() => '?').join(', ')})
  ON CONFLICT (installation, utc) DO NOTHING`;

/**
 * A re-sent sample replaces every value but keeps its planner state, so it is never forwarded twice.
 * Parameters: the field values, then the installation and `utc`.
 */
const REPLACE_SAMPLE = `UPDATE samples SET ${fieldColumns.map((c, i) => `${c} = ?${i + 1}`).join(', ')}
  WHERE installation = ?${fieldColumns.length + 1} AND utc = ?${fieldColumns.length + 2}
  RETURNING planner_state AS state`;

/** A sample still waiting that the car now says it gave the planner itself stops waiting. */
const WITHDRAW_SAMPLE = `UPDATE samples SET planner_state = ${PlannerState.none} WHERE installation = ? AND utc = ?`;

/** What a batch's write did to the planner's outbox; `added` holds row positions in the write. */
export interface StoredSamples {
  added: number[];
  rewritten: boolean;
}

/**
 * Stores a batch's usable samples (all or none, as one write). Answers which rows it made pending
 * (only rows it inserted: a copy of a sample stored before keeps that one's state) and whether it
 * rewrote waiting ones, so the forwarder learns what changed without reading the outbox.
 */
const storeSamples: WriteOp<SampleWrite, StoredSamples> = (db, { installationId, plannerSentUtc, forward, rows }) => {
  const insert = db.query(INSERT_SAMPLE);
  const stored: StoredSamples = { added: [], rewritten: false };
  const values: (string | number | null)[] = new Array(insertColumns.length);
  const stateColumn = insertColumns.length - 1;
  const { numbers, texts } = rows;
  const numericWidth = numericColumns.length;
  const textWidth = textColumns.length;
  values[0] = installationKey(db, installationId);
  // Plain loops: this runs once per stored value on the writer thread, the service's busiest code.
  for (let r = 0; r < rows.count; r++) {
    for (let c = 0; c < numericWidth; c++) {
      const value = numbers[r * numericWidth + c]!;
      values[numericColumns[c]! + 1] = value === value ? value : null; // NaN marks an absent value
    }
    for (let c = 0; c < textWidth; c++) values[textColumns[c]! + 1] = texts?.[r * textWidth + c] ?? null;
    const forPlanner = forward && (values[1] as number) > plannerSentUtc;
    values[stateColumn] = forPlanner ? PlannerState.pending : PlannerState.none;
    if (insert.run(...values).changes === 1) {
      if (forPlanner) stored.added.push(r);
      continue;
    }
    if (replaceSample(db, values) !== PlannerState.pending) continue;
    // A waiting sample sent again: what the forwarder holds of it is stale.
    stored.rewritten = true;
    // At or before plannerSentUtc: the car gave it to the planner itself.
    if ((values[1] as number) <= plannerSentUtc) db.query(WITHDRAW_SAMPLE).run(values[0]!, values[1]!);
  }
  return stored;
};

/** The installation's number in `installations`, given one at its first sample. */
function installationKey(db: Database, installationId: string): number {
  const known = db.query<{ id: number }, [string]>('SELECT id FROM installations WHERE uuid = ?').get(installationId);
  return (known ?? db.query<{ id: number }, [string]>('INSERT INTO installations (uuid) VALUES (?) RETURNING id').get(installationId)!).id;
}

/** Replaces a stored sample's values; answers its planner state afterwards. */
function replaceSample(db: Database, values: (string | number | null)[]): number {
  const fields = values.slice(2, 2 + fieldColumns.length);
  const row = db.query<{ state: number }, (string | number | null)[]>(REPLACE_SAMPLE).get(...fields, values[0]!, values[1]!);
  // The insert met a conflict, so the row is there; were it not, the sample must not vanish quietly.
  if (!row) throw new Error(`sample ${values[1]} was neither inserted nor replaced`);
  return row.state;
}

export const telemetryWrites = { storeSamples };
