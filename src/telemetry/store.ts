/** Samples in the database, written through the committer. */
import type { WriteOp } from '../db/group.ts';
import { sampleFieldNames } from './fields.ts';
import type { SampleRow } from './model.ts';
import { PlannerState } from './schema.ts';

export interface SampleWrite {
  installationId: string;
  plannerSentUtc: number;
  /** Whether the planner takes this installation's samples: new samples after `plannerSentUtc` become pending. */
  forward: boolean;
  rows: SampleRow[];
}

const fieldColumns = sampleFieldNames.map((name) => `"${name}"`);
const insertColumns = ['installation_id', 'utc', ...fieldColumns, 'planner_state'];

// A re-sent sample replaces every value but keeps its planner state, so it is never forwarded twice.
const INSERT_SAMPLE = `INSERT INTO samples (${insertColumns.join(', ')})
  VALUES (${insertColumns.map(() => '?').join(', ')})
  ON CONFLICT (installation_id, utc) DO UPDATE SET ${fieldColumns.map((c) => `${c} = excluded.${c}`).join(', ')}`;

/** Stores a batch's usable samples (all or none, as one write); answers how many. */
const storeSamples: WriteOp<SampleWrite, number> = (db, { installationId, plannerSentUtc, forward, rows }) => {
  const insert = db.query(INSERT_SAMPLE);
  for (const row of rows) {
    const state = forward && (row[0] as number) > plannerSentUtc ? PlannerState.pending : PlannerState.none;
    insert.run(installationId, ...row, state);
  }
  return rows.length;
};

export const telemetryWrites = { storeSamples };
