/**
 * The telemetry batch model: batch-level checks (a 400 naming the field) and the per-value dropping,
 * with its counting and wording (docs/api.md, Dropped values). Pure: the same body and clock give the same batch.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { limits } from '../limits.ts';
import { ingestErrors, Uuid, type ApiOperation } from '../http/openapi.ts';
import { array, invalid, uuid } from '../http/validate.ts';
import {
  sampleFieldNames,
  sampleFields,
  UTC_MAX_AHEAD_S,
  UTC_MIN,
  type SampleField,
  type SampleFieldName,
} from './fields.ts';

/** A usable sample as stored: `utc`, then every field of the table in its order (null when absent). */
export type SampleRow = (number | string | null)[];

export interface Batch {
  /** Lower-case. */
  installationId: string;
  /** 0 when absent. */
  plannerSentUtc: number;
  /** The usable samples, oldest first (a batch may list them in any order). */
  rows: SampleRow[];
  droppedCount: number;
  /** The first `limits.droppedListed` descriptions of dropped values, in examination order. */
  dropped: string[];
  /** Every drop counted by its kind (a metric's label), or null when nothing was dropped. */
  droppedReasons: Map<DropReason, number> | null;
}

/**
 * A 64-bit integer: a Kotlin `Long.MAX_VALUE` ("all sent") parses to 2^63. Past 2^53 the value is
 * no longer exact, which no comparison with a `utc` (at most now + 300 s) can notice.
 */
const PLANNER_SENT_UTC_MAX = 2 ** 63;

/** Fields whose values are locations: never quoted, not even inside another field's value. */
const LOCATION_KEYS = new Set<string>(sampleFieldNames.filter((name) => isLocation(sampleFields[name])));

function isLocation(field: SampleField): boolean {
  return field.kind === 'number' && field.pairedWith !== undefined;
}

/** Each field by name, with its row position (0 is `utc`). */
const fieldsByName = new Map<string, { column: number; field: SampleField }>(
  sampleFieldNames.map((name, index) => [name, { column: index + 1, field: sampleFields[name] }]),
);

/** Checks a batch at server time `nowMs`: a 400 for the batch itself, dropped values otherwise. */
export function validateBatch(body: Record<string, unknown>, nowMs: number): Batch {
  const installationId = uuid(body.installationId, 'installationId');
  const samples = array(body.samples, 'samples', Number.POSITIVE_INFINITY); // the body cap bounds it
  const plannerSentUtc = body.plannerSentUtc ?? 0;
  if (!Number.isInteger(plannerSentUtc) || (plannerSentUtc as number) < 0)
    invalid('plannerSentUtc', 'must be a non-negative integer');
  if ((plannerSentUtc as number) > PLANNER_SENT_UTC_MAX)
    invalid('plannerSentUtc', 'must be at most 2^63 (a 64-bit integer)');

  const latestUtc = Math.floor(nowMs / 1000) + UTC_MAX_AHEAD_S;
  const notes: (string[] | undefined)[] = new Array(samples.length);
  const rows: SampleRow[] = [];
  const laterUtcs = new Set<number>();
  // Backwards, so that a sample knows whether a later usable one has its utc (the later one wins).
  for (let index = samples.length - 1; index >= 0; index--) {
    const sampleNotes: string[] = [];
    const row = examineSample(samples[index], `samples[${index}]`, latestUtc, sampleNotes);
    if (row !== null) {
      const utc = row[0] as number;
      if (laterUtcs.has(utc)) sampleNotes.push(`samples[${index}]: a later sample has the same utc`);
      else {
        laterUtcs.add(utc);
        rows.push(row);
      }
    }
    if (sampleNotes.length > 0) notes[index] = sampleNotes;
  }
  rows.sort((a, b) => (a[0] as number) - (b[0] as number)); // utc is unique among them by now

  let droppedCount = 0;
  const dropped: string[] = [];
  let droppedReasons: Map<DropReason, number> | null = null;
  for (const sampleNotes of notes) {
    if (sampleNotes === undefined) continue;
    droppedCount += sampleNotes.length;
    dropped.push(...sampleNotes.slice(0, limits.droppedListed - dropped.length));
    droppedReasons ??= new Map();
    for (const note of sampleNotes) {
      const reason = dropReason(note);
      droppedReasons.set(reason, (droppedReasons.get(reason) ?? 0) + 1);
    }
  }
  return { installationId, plannerSentUtc: plannerSentUtc as number, rows, droppedCount, dropped, droppedReasons };
}

export type DropReason =
  | 'not_an_object'
  | 'utc'
  | 'unknown_field'
  | 'out_of_range'
  | 'unpaired'
  | 'no_usable_values'
  | 'duplicate_utc'
  | 'invalid_value';

/**
 * The kind of a drop, read from its note (worded in this file): a sample's own notes begin `samples[i]: `,
 * and a quoted value never ends a note, so the ends below are ours.
 */
function dropReason(note: string): DropReason {
  if (/^samples\[\d+\]: utc /.test(note)) return 'utc';
  if (note.endsWith(': not an object')) return 'not_an_object';
  if (isUnknownFieldNote(note)) return 'unknown_field';
  if (note.endsWith(NO_USABLE_VALUES)) return 'no_usable_values';
  if (note.endsWith(': a later sample has the same utc')) return 'duplicate_utc';
  if (/ is out of range \S+$/.test(note)) return 'out_of_range';
  if (/: unusable without \w+$/.test(note)) return 'unpaired';
  return 'invalid_value';
}

/** How a note about an unknown field ends: the note names the key, which may hold anything the client sent. */
const UNKNOWN_FIELD = ': unknown field';

export const isUnknownFieldNote = (note: string) => note.endsWith(UNKNOWN_FIELD);

/** How the note of a sample with a usable `utc` and nothing else usable ends. */
const NO_USABLE_VALUES = ': no usable values';

/** A sample holding a usable `utc` and no other value, none refused either (null values aside). */
export const onlyUtc = ({ droppedCount, dropped }: Batch) =>
  droppedCount === 1 && dropped[0]!.endsWith(NO_USABLE_VALUES);

/** The sample's row, or null when the sample is dropped whole; each drop adds one note. */
function examineSample(sample: unknown, path: string, latestUtc: number, notes: string[]): SampleRow | null {
  if (typeof sample !== 'object' || sample === null || Array.isArray(sample)) {
    notes.push(`${path}: not an object`);
    return null;
  }
  const values = sample as Record<string, unknown>;
  const utcProblem = problemOfUtc(values.utc, latestUtc);
  if (utcProblem !== null) {
    notes.push(`${path}: ${utcProblem}`);
    return null;
  }
  const row: SampleRow = new Array(fieldsByName.size + 1).fill(null);
  row[0] = values.utc as number;
  let usable = 0;
  for (const key in values) {
    const value = values[key];
    if (key === 'utc' || value === null) continue;
    const known = fieldsByName.get(key);
    if (known === undefined) {
      notes.push(`${path}${keyPath(key)}${UNKNOWN_FIELD}`);
      continue;
    }
    const { column, field } = known;
    const stored = storedValue(field, value);
    if (stored instanceof Unusable) notes.push(`${path}.${key}: ${stored.reason}`);
    else if (field.kind === 'number' && field.pairedWith && !isUsable(field.pairedWith, values[field.pairedWith])) {
      notes.push(`${path}.${key}: unusable without ${field.pairedWith}`);
    } else {
      row[column] = stored;
      usable++;
    }
  }
  if (usable === 0) {
    notes.push(`${path}${NO_USABLE_VALUES}`);
    return null;
  }
  return row;
}

/** Why `utc` makes its sample unusable, or null when it is usable. */
function problemOfUtc(utc: unknown, latestUtc: number): string | null {
  if (utc === undefined || utc === null) return 'utc is missing';
  if (!Number.isInteger(utc)) return `utc ${quote(utc)} is not an integer`;
  const seconds = utc as number;
  if (seconds < UTC_MIN) return `utc ${seconds} is before 2000-01-01`;
  if (seconds <= latestUtc) return null;
  const asSeconds = Math.floor(seconds / 1000);
  const looksLikeMilliseconds = asSeconds >= UTC_MIN && asSeconds <= latestUtc;
  return `utc ${seconds} is in the future${looksLikeMilliseconds ? ' (milliseconds instead of seconds?)' : ''}`;
}

/** Why a value cannot be stored; the reason quotes the value unless it is a coordinate. */
class Unusable {
  constructor(readonly reason: string) {}
}

function storedValue(field: SampleField, value: unknown): number | string | Unusable {
  switch (field.kind) {
    case 'number': {
      const shown = () => (isLocation(field) ? 'value' : quote(value));
      if (typeof value !== 'number') return new Unusable(`${shown()} is not a number`);
      if (value < field.min || value > field.max) {
        return new Unusable(`${shown()} is out of range ${field.min}..${field.max}`);
      }
      return value;
    }
    case 'flag':
      if (value === 0 || value === 1) return value;
      if (typeof value === 'boolean') return value ? 1 : 0;
      return new Unusable(`${quote(value)} is not 0, 1, true or false`);
    case 'text': {
      if (typeof value !== 'string') return new Unusable(`${quote(value)} is not a string`);
      // A lone surrogate (`"\ud800"`) would be stored as U+FFFD: not what the car sent.
      if (!value.isWellFormed()) return new Unusable(`${quote(value)} is not well-formed text`);
      const chars = value.length <= field.maxChars ? value.length : [...value].length;
      if (chars < field.minChars || chars > field.maxChars) {
        return new Unusable(`${quote(value)} is not ${field.minChars}..${field.maxChars} characters long`);
      }
      return value;
    }
  }
}

function isUsable(name: string, value: unknown): boolean {
  const known = fieldsByName.get(name);
  return (
    known !== undefined &&
    value !== undefined &&
    value !== null &&
    !(storedValue(known.field, value) instanceof Unusable)
  );
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `.name` for a plain key, `["…"]` (quoted, shortened) for any other. */
function keyPath(key: string): string {
  return IDENTIFIER.test(key) && key.length <= limits.droppedQuoteChars ? `.${key}` : `[${quote(key)}]`;
}

/** A key or value JSON-encoded, at most `limits.droppedQuoteChars` characters of it, `…` when cut. */
function quote(value: unknown): string {
  const max = limits.droppedQuoteChars;
  if (typeof value === 'string') {
    // Code points of at most twice the quoted length: a long string is never split whole.
    const chars = [...value.slice(0, 2 * max)];
    return chars.length <= max && value.length <= 2 * max
      ? JSON.stringify(value)
      : `${JSON.stringify(chars.slice(0, max).join(''))}…`;
  }
  const json = jsonStart(value, max);
  return json.length <= max ? json : `${json.slice(0, max)}…`;
}

/**
 * The JSON of a value up to just past `max` characters: a large or deeply nested value is never written
 * whole (`JSON.stringify` of a 60,000-deep array, which the body cap allows, takes over a second and throws).
 */
function jsonStart(value: unknown, max: number): string {
  let json = '';
  const write = (part: unknown): void => {
    if (Array.isArray(part)) {
      json += '[';
      for (let i = 0; i < part.length && json.length <= max; i++) {
        if (i > 0) json += ',';
        write(part[i]);
      }
      json += ']';
    } else if (typeof part === 'object' && part !== null) {
      json += '{';
      let first = true;
      for (const key in part) {
        if (json.length > max) break;
        if (!first) json += ',';
        first = false;
        json += `${JSON.stringify(key)}:`;
        if (LOCATION_KEYS.has(key)) json += '…';
        else write((part as Record<string, unknown>)[key]);
      }
      json += '}';
    } else if (typeof part === 'number' && !Number.isFinite(part)) {
      json += String(part); // a literal past the double range (`1e400`) parses to ±Infinity, which JSON writes as null
    } else json += JSON.stringify(part);
  };
  write(value);
  return json;
}

/** A sample field's schema from its row of the field table; `null` stands for absent. */
function fieldSchema(name: SampleFieldName, field: SampleField): TSchema {
  switch (field.kind) {
    case 'number': {
      const pair = field.pairedWith ? `; only usable together with \`${field.pairedWith}\`` : '';
      const value = Type.Number({
        minimum: field.min,
        maximum: field.max,
        description: `${name}, ${field.unit}${pair}`,
      });
      return Type.Union([value, Type.Null()]);
    }
    case 'flag':
      return Type.Union([Type.Literal(0), Type.Literal(1), Type.Boolean(), Type.Null()], {
        description: `${name}: 0, 1, true or false (stored as 0/1)`,
      });
    case 'text':
      return Type.Union([Type.String({ minLength: field.minChars, maxLength: field.maxChars }), Type.Null()], {
        description: `${name}: ${field.minChars}..${field.maxChars} characters`,
      });
  }
}

/** One live sample, generated from the field table (fields.ts); a value outside it is dropped, not refused. */
export const SampleSchema = Type.Object(
  {
    utc: Type.Integer({ minimum: UTC_MIN, description: `Unix seconds, from 2000-01-01 to ${UTC_MAX_AHEAD_S} s ahead` }),
    ...Object.fromEntries(sampleFieldNames.map((name) => [name, Type.Optional(fieldSchema(name, sampleFields[name]))])),
  },
  { description: 'A live sample. Unknown fields and unusable values are dropped and counted, never a 400.' },
);

export const TelemetryBatchSchema = Type.Object({
  installationId: Uuid('The installation (a UUID, any case).'),
  plannerSentUtc: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: PLANNER_SENT_UTC_MAX }), Type.Null()], {
      description: '`utc` of the newest sample the car already gave the planner (Unix seconds); 0 or null: none.',
    }),
  ),
  samples: Type.Array(SampleSchema, { description: 'Any order; the body cap (512 KiB) bounds the count.' }),
});

export const TelemetryAnswerSchema = Type.Object({
  stored: Type.Integer({ minimum: 0, description: 'Usable samples stored.' }),
  droppedCount: Type.Integer({ minimum: 0, description: 'Values and samples dropped.' }),
  dropped: Type.Array(Type.String(), {
    maxItems: limits.droppedListed,
    description: 'The first descriptions of drops.',
  }),
});

export const telemetryApi: ApiOperation[] = [
  {
    method: 'post',
    path: '/v1/telemetry',
    summary: 'Store a batch of live samples',
    description: 'Stores the usable samples in one write and hands the new ones to the planner forwarder.',
    security: 'ingest',
    body: {
      schema: TelemetryBatchSchema,
      example: {
        installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
        plannerSentUtc: 1_764_080_000,
        samples: [{ utc: 1_764_080_005, soc: 71.5, power: 12.3, speed: 88, lat: 41.01, lon: 28.97 }],
      },
    },
    answers: {
      200: {
        description: 'The batch is committed.',
        schema: TelemetryAnswerSchema,
        example: { stored: 1, droppedCount: 1, dropped: ['samples[0].foo: unknown field'] },
      },
      ...ingestErrors([
        'installationId is required',
        'installationId must be a UUID',
        'samples is required',
        'samples must be an array',
        'plannerSentUtc must be a non-negative integer',
        'plannerSentUtc must be at most 2^63 (a 64-bit integer)',
      ]),
    },
  },
];

const unitOf = (field: SampleField) => (field.kind === 'number' ? `, ${field.unit}` : '');

/** The newest stored sample: fields it did not carry are left out; flags read 0 or 1, as stored. */
export const LatestSampleSchema = Type.Object({
  installationId: Type.String({ description: 'Lower-case.' }),
  utc: Type.Integer({ description: 'Unix seconds' }),
  receivedAt: Type.Union([Type.String(), Type.Null()], {
    description: 'When the batch holding the sample arrived, ISO 8601; null when unknown.',
  }),
  ...Object.fromEntries(
    sampleFieldNames.map((name) => {
      const field = sampleFields[name];
      const value = field.kind === 'text' ? Type.String() : Type.Number({ description: `${name}${unitOf(field)}` });
      return [name, Type.Optional(value)];
    }),
  ),
});
