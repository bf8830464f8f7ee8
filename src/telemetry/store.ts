/** Samples in the database, written through the committer. */
import type { Database, Statement } from 'bun:sqlite';
import { limits } from '../limits.ts';
import type { GroupEnd, WriteOp } from '../db/group.ts';
import { sqliteCode } from '../db/open.ts';
import { sampleFieldNames, sampleFields } from './fields.ts';
import type { SampleRow } from './model.ts';
import { PlannerState } from './table.ts';

/** A batch's write as it crosses to the writer: one plain `ArrayBuffer`, which `postMessage` clones fastest. */
export interface SampleWrite {
  installationId: string;
  /** Float64 values: `plannerSentUtc`, forwarding (1 or 0), then row by row every numeric column, NaN for absent. */
  packed: ArrayBuffer;
  /** Row by row, the text columns; null when the batch has no text value at all. */
  texts: (string | null)[] | null;
  /** When the server received the batch (Unix ms). */
  receivedAt: number;
}

/** A write read back on the writer: `numbers` and `texts` laid out as in `SampleWrite`. */
interface SampleBatch {
  plannerSentUtc: number;
  forward: boolean;
  count: number;
  numbers: Float64Array;
  texts: (string | null)[] | null;
}

/** Row positions (0 = utc) of the numeric and of the text columns. */
const numericColumns = [
  0,
  ...sampleFieldNames.flatMap((name, i) => (sampleFields[name].kind === 'text' ? [] : [i + 1])),
];
const textColumns = sampleFieldNames.flatMap((name, i) => (sampleFields[name].kind === 'text' ? [i + 1] : []));

/** Values ahead of the rows in `packed`: plannerSentUtc, forward. */
const HEADER = 2;

/** The write of a batch's usable rows (as the validator gives them), made on the request thread. */
export function sampleWrite(
  installationId: string,
  plannerSentUtc: number,
  forward: boolean,
  rows: SampleRow[],
  receivedAt: number = Date.now(),
): SampleWrite {
  const numericWidth = numericColumns.length;
  const textWidth = textColumns.length;
  const packed = new Float64Array(new ArrayBuffer((HEADER + rows.length * numericWidth) * 8));
  packed[0] = plannerSentUtc;
  packed[1] = forward ? 1 : 0;
  let texts: (string | null)[] | null = null;
  // Plain loops: this runs for every value of every batch on the request thread.
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    const offset = HEADER + r * numericWidth;
    for (let c = 0; c < numericWidth; c++) packed[offset + c] = (row[numericColumns[c]!] as number | null) ?? NaN;
    for (let c = 0; c < textWidth; c++) {
      const value = row[textColumns[c]!];
      if (value === null) continue;
      texts ??= new Array(rows.length * textWidth).fill(null);
      texts[r * textWidth + c] = value as string;
    }
  }
  return { installationId, packed: packed.buffer, texts, receivedAt };
}

function unpack({ packed, texts }: SampleWrite): SampleBatch {
  const values = new Float64Array(packed);
  const numbers = values.subarray(HEADER);
  return {
    plannerSentUtc: values[0]!,
    forward: values[1] === 1,
    count: numbers.length / numericColumns.length,
    numbers,
    texts,
  };
}

const fieldColumns = sampleFieldNames.map((name) => `"${name}"`);
/** Every field column's row position (1 = the first field after utc). */
const allFields = fieldColumns.map((_, i) => i + 1);

/** A new sample; a conflict with one stored before is left to REPLACE_SAMPLE. */
const INSERT_SAMPLE = `${insertSql(allFields, 1)} ON CONFLICT (installation, utc) DO NOTHING`;

/**
 * A re-sent sample replaces every value but keeps its planner state, so it is never forwarded twice.
 * Parameters: the field values, then the installation and `utc`.
 */
const REPLACE_SAMPLE = `UPDATE samples SET ${fieldColumns.map((c, i) => `${c} = ?${i + 1}`).join(', ')}
  WHERE installation = ?${fieldColumns.length + 1} AND utc = ?${fieldColumns.length + 2}
  RETURNING planner_state AS state`;

/** A sample still waiting that the car now says it gave the planner itself stops waiting. */
const WITHDRAW_SAMPLE = `UPDATE samples SET planner_state = ${PlannerState.none}
  WHERE installation = ? AND utc = ? AND planner_state = ${PlannerState.pending}`;

/** What a batch's write did to the planner's outbox; `added` holds row positions in the write. */
export interface StoredSamples {
  added: number[];
  rewritten: boolean;
}

/**
 * The write of a batch's usable samples, all or none; answers what it changed in the outbox, so the
 * forwarder need not read it back. Only inserted rows become pending: a re-sent sample keeps its state.
 */
const storeSamples: WriteOp<SampleWrite, StoredSamples> = (db, write, end) => {
  const stored: StoredSamples = { added: [], rewritten: false };
  const installation = installationKey(db, write.installationId);
  const batch = unpack(write);
  insertSamples(db, installation, batch, stored);
  noteLatest(db, end, installation, batch, write.receivedAt);
  if (withdrawSentByCar(db, installation, batch)) stored.rewritten = true;
  return stored;
};

/** The newest `utc` of an installation's batches in a group, and when the last batch holding it came. */
interface Latest {
  installation: number;
  utc: number;
  receivedAt: number;
}

/**
 * A batch holding the installation's newest sample so far records its `utc` and when it came: once
 * per installation at the end of the group, the last batch of the newest `utc` winning, as in turn.
 */
function noteLatest(db: Database, end: GroupEnd | undefined, installation: number, batch: SampleBatch, at: number) {
  let utc = -Infinity;
  for (let r = 0; r < batch.count; r++) utc = Math.max(utc, utcOf(batch, r));
  const latest = { installation, utc, receivedAt: at };
  if (!end) return writeLatest(db, latest);
  const key = `latest:${installation}`;
  if ((end.peek<Latest>(key)?.utc ?? -Infinity) > utc) return;
  end.defer(key, latest, writeLatest);
}

function writeLatest(db: Database, { installation, utc, receivedAt }: Latest): void {
  db.query(
    `UPDATE installations SET latest_utc = ?1, latest_received_at = ?2
     WHERE id = ?3 AND (latest_utc IS NULL OR latest_utc <= ?1)`,
  ).run(utc, receivedAt, installation);
}

/** Withdraws the waiting sample at `plannerSentUtc`, which the car says the planner has; answers whether one was. */
function withdrawSentByCar(db: Database, installation: number, { forward, plannerSentUtc }: SampleBatch): boolean {
  if (!forward || plannerSentUtc === 0) return false;
  return db.query(WITHDRAW_SAMPLE).run(installation, plannerSentUtc).changes > 0;
}

/** Whether a new sample waits for the planner: forwarding is on and the car has not sent it itself. */
const waitsForPlanner = ({ forward, plannerSentUtc }: SampleBatch, utc: number) => forward && utc > plannerSentUtc;

/**
 * Inserts the batch's rows, many per statement, binding only the columns in use (a bound parameter costs
 * about what SQLite's own work does). A statement that meets a stored sample is undone; its rows go one by one.
 */
function insertSamples(db: Database, installation: number, batch: SampleBatch, stored: StoredSamples): void {
  const columns = columnsWithValues(batch);
  const columnsKey = columns.join(',');
  const sources = columns.map((position) => everyField[position - 1]!);
  const statements = insertStatements(db);
  for (let from = 0, count = 0; from < batch.count; from += count) {
    count = insertSize(batch.count - from);
    try {
      statements.get(columns, columnsKey, count).run(rowValues(installation, batch, sources, from, count));
    } catch (error) {
      if (!isKeyConflict(error)) throw error;
      storeOneByOne(db, installation, batch, from, from + count, stored);
      continue;
    }
    for (let r = from; r < from + count; r++) if (waitsForPlanner(batch, utcOf(batch, r))) stored.added.push(r);
  }
}

const utcOf = ({ numbers }: SampleBatch, row: number) => numbers[row * numericColumns.length]!;

/** Rows in the next statement: all that are left when few, else a power of two, so few statements serve all sizes. */
function insertSize(left: number): number {
  if (left <= limits.samplesPerExactInsert) return left;
  return Math.min(limits.samplesPerInsert, 2 ** Math.floor(Math.log2(left)));
}

/** The field columns (row positions, in order) holding a value in some row. */
function columnsWithValues(batch: SampleBatch): number[] {
  return allFields.filter((position) => hasValue(batch, everyField[position - 1]!));
}

function hasValue({ count, numbers, texts }: SampleBatch, { text, index }: Source): boolean {
  for (let r = 0; r < count; r++) {
    if (text) {
      if (texts !== null && texts[r * textColumns.length + index] !== null) return true;
    } else {
      const value = numbers[r * numericColumns.length + index]!;
      if (value === value) return true; // NaN marks an absent value
    }
  }
  return false;
}

/** Where a field column's value lies in a packed row: its index among the numeric or the text columns. */
interface Source {
  text: boolean;
  index: number;
}

/** The source of the field column at row `position`. */
function sourceOf(position: number): Source {
  const numeric = numericColumns.indexOf(position);
  return numeric >= 0 ? { text: false, index: numeric } : { text: true, index: textColumns.indexOf(position) };
}

/** The sources of every field column, in order: the one-by-one path binds them all. */
const everyField: Source[] = allFields.map(sourceOf);

/** The parameters of `count` rows from `from`: per row installation, utc, the `sources`' values, planner state. */
function rowValues(
  installation: number,
  batch: SampleBatch,
  sources: Source[],
  from: number,
  count: number,
): (number | string | null)[] {
  const { numbers, texts } = batch;
  const values: (number | string | null)[] = [];
  // Plain loops: this runs once per stored value on the writer thread, the service's busiest code.
  for (let r = from; r < from + count; r++) {
    const utc = utcOf(batch, r);
    values.push(installation, utc);
    for (const { text, index } of sources) {
      if (text)
        values.push(texts?.[r * textColumns.length + index] ?? null); // no texts: the batch has none
      else {
        const value = numbers[r * numericColumns.length + index]!;
        values.push(value === value ? value : null); // NaN marks an absent value
      }
    }
    values.push(waitsForPlanner(batch, utc) ? PlannerState.pending : PlannerState.none);
  }
  return values;
}

/** A stored sample with the same key: the statement was undone, nothing else. */
function isKeyConflict(error: unknown): boolean {
  const code = sqliteCode(error);
  return code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/**
 * The connection's prepared multi-row inserts, by columns and row count. The cars choose the columns, so
 * the least recently used are finalized past `limits.sampleInsertSize` (~150 bytes a parameter, measured).
 */
class InsertStatements {
  private readonly statements = new Map<string, { statement: Statement; size: number }>();
  private size = 0;

  constructor(private readonly db: Database) {}

  /** `columnsKey`: the columns joined by commas, made once per write. */
  get(columns: number[], columnsKey: string, count: number): Statement {
    const key = `${count}:${columnsKey}`;
    let kept = this.statements.get(key);
    if (kept)
      this.statements.delete(key); // re-inserted below: the Map's order is the use order
    else {
      kept = { statement: this.db.prepare(insertSql(columns, count)), size: 100 + count * (columns.length + 3) };
      this.size += kept.size;
      this.evictBeyond(limits.sampleInsertSize);
    }
    this.statements.set(key, kept);
    return kept.statement;
  }

  private evictBeyond(size: number): void {
    for (const [key, kept] of this.statements) {
      if (this.size <= size) return;
      this.statements.delete(key);
      this.size -= kept.size;
      kept.statement.finalize();
    }
  }
}

const statementsOf = new WeakMap<Database, InsertStatements>();

function insertStatements(db: Database): InsertStatements {
  let statements = statementsOf.get(db);
  if (!statements) statementsOf.set(db, (statements = new InsertStatements(db)));
  return statements;
}

/** A plain INSERT: a row whose key is stored fails the statement (SQLITE_CONSTRAINT), undoing its rows. */
function insertSql(columns: number[], count: number): string {
  const names = ['installation', 'utc', ...columns.map((position) => fieldColumns[position - 1]!), 'planner_state'];
  const row = `(${names.map(() => '?').join(', ')})`;
  return `INSERT INTO samples (${names.join(', ')}) VALUES ${new Array(count).fill(row).join(', ')}`;
}

/** Rows `from` to `to` (excluded), one statement each: a stored sample is replaced, keeping its planner state. */
function storeOneByOne(
  db: Database,
  installation: number,
  batch: SampleBatch,
  from: number,
  to: number,
  stored: StoredSamples,
): void {
  const insert = db.query(INSERT_SAMPLE);
  for (let r = from; r < to; r++) {
    const values = rowValues(installation, batch, everyField, r, 1); // INSERT_SAMPLE's parameters
    if (insert.run(...values).changes === 1) {
      if (waitsForPlanner(batch, utcOf(batch, r))) stored.added.push(r);
      continue;
    }
    if (replaceSample(db, values) !== PlannerState.pending) continue;
    // A waiting sample sent again: what the forwarder holds of it is stale.
    stored.rewritten = true;
    // At or before plannerSentUtc: the car gave it to the planner itself.
    if (utcOf(batch, r) <= batch.plannerSentUtc) db.query(WITHDRAW_SAMPLE).run(installation, utcOf(batch, r));
  }
}

/** The installation's number in `installations`, given one at its first sample. */
function installationKey(db: Database, installationId: string): number {
  const known = db.query<{ id: number }, [string]>('SELECT id FROM installations WHERE uuid = ?').get(installationId);
  return (
    known ??
    db.query<{ id: number }, [string]>('INSERT INTO installations (uuid) VALUES (?) RETURNING id').get(installationId)!
  ).id;
}

/** Replaces a stored sample's values; answers its planner state afterwards. */
function replaceSample(db: Database, values: (string | number | null)[]): number {
  const fields = values.slice(2, 2 + fieldColumns.length);
  const row = db
    .query<{ state: number }, (string | number | null)[]>(REPLACE_SAMPLE)
    .get(...fields, values[0]!, values[1]!);
  // The insert met a conflict, so the row is there; were it not, the sample must not vanish quietly.
  if (!row) throw new Error(`sample ${values[1]} was neither inserted nor replaced`);
  return row.state;
}

export const telemetryWrites = { storeSamples };
