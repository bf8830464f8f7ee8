/**
 * Chunk, session and pairing bodies are checked by their compiled TypeBox schemas; a body the schema
 * refuses is explained field by field, so every 400 reads as it did before the schemas checked them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import fc from 'fast-check';
import { ChargingSessionSchema, explainSession, parseSessionBody, parseSessionId } from '../src/charging/model.ts';
import { ChunkSchema, explainChunk, parseChunk } from '../src/consumption/model.ts';
import { explainPoll, explainStart, parsePoll, parseStart, PollSchema, StartSchema } from '../src/pairing/model.ts';
import { answer, consumptionChunk, INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ approvalPassword: 'an approval password for tests' });
});
afterAll(() => service.close());

const SESSION_PATH = '/v1/charging-sessions/3f2b8c1e-7d4a-4b6e-9c0d-1a2b3c4d5e6f';
const session = (overrides: Record<string, unknown> = {}) => ({
  installationId: INSTALLATION,
  startedAt: 1_764_080_000_000,
  endedAt: 1_764_081_800_000,
  energyKwh: 41.7,
  ...overrides,
});
const point = { timestampMs: 1_764_080_000_000, powerKw: 11 };

interface Refusal {
  body: Record<string, unknown>;
  error: string;
}

/** Per route: bodies the schema refuses, each with the 400 message the route answered before. */
const routes: { method: string; path: string; schema: TSchema; token: boolean; refusals: Refusal[] }[] = [
  {
    method: 'PUT',
    path: '/v1/consumption/daily',
    schema: ChunkSchema,
    token: true,
    refusals: [
      { body: consumptionChunk({ installationId: undefined }), error: 'installationId is required' },
      { body: consumptionChunk({ installationId: 'car-1' }), error: 'installationId must be a UUID' },
      {
        body: consumptionChunk({ recordedAt: '1764080000123' }),
        error: 'recordedAt must be Unix milliseconds (a non-negative safe integer)',
      },
      {
        body: consumptionChunk({ recordedAt: 1_764_080_000 }),
        error:
          'recordedAt 1764080000 is not between 2000 and 2999 in Unix milliseconds (seconds instead of milliseconds?)',
      },
      { body: consumptionChunk({ date: '25.11.2026' }), error: 'date must be a calendar date YYYY-MM-DD' },
      { body: consumptionChunk({ day: undefined }), error: 'day is required' },
      { body: consumptionChunk({ day: [1, 2, 3, 4] }), error: 'day must be an object' },
      {
        body: consumptionChunk({ day: { km: 1, kwh: '2', hours: 0, socDrop: 0 } }),
        error: 'day.kwh must be a finite number',
      },
      {
        body: consumptionChunk({ day: { km: 1, kwh: 1e8, hours: 0, socDrop: 0 } }),
        error: 'day.kwh is out of range -10000000..10000000',
      },
      { body: consumptionChunk({ sohPercent: 0 }), error: 'sohPercent must be above 0 and at most 100' },
    ],
  },
  {
    method: 'PUT',
    path: SESSION_PATH,
    schema: ChargingSessionSchema,
    token: true,
    refusals: [
      { body: session({ installationId: 7 }), error: 'installationId must be a UUID' },
      { body: session({ sessionId: 5 }), error: 'sessionId does not match path' },
      { body: session({ startedAt: null }), error: 'startedAt is required' },
      {
        body: session({ endedAt: 1_764_081_800 }),
        error:
          'endedAt 1764081800 is not between 2000 and 2999 in Unix milliseconds (seconds instead of milliseconds?)',
      },
      { body: session({ energyKwh: 2000 }), error: 'energyKwh is out of range 0..1000' },
      { body: session({ chargingLossPercent: 101 }), error: 'chargingLossPercent is out of range 0..100' },
      { body: session({ isDemo: 'yes' }), error: 'isDemo must be true or false' },
      { body: session({ curve: {} }), error: 'curve must be an array' },
      { body: session({ curve: Array(1441).fill(point) }), error: 'curve must have at most 1440 entries' },
      { body: session({ curve: [point, null] }), error: 'curve[1] must be an object' },
      { body: session({ curve: [{ ...point, powerKw: -1 }] }), error: 'curve[0].powerKw is out of range 0..1000' },
      {
        body: session({ curve: [{ ...point, socPercent: 120 }] }),
        error: 'curve[0].socPercent is out of range 0..100',
      },
    ],
  },
  {
    method: 'POST',
    path: '/v1/pair/start',
    schema: StartSchema,
    token: false,
    refusals: [
      { body: {}, error: 'installationId is required' },
      { body: { installationId: 'car-1' }, error: 'installationId must be a UUID' },
      { body: { installationId: INSTALLATION, name: '' }, error: 'name must be a string of 1..64 characters' },
      { body: { installationId: INSTALLATION, name: 5 }, error: 'name must be a string of 1..64 characters' },
      {
        body: { installationId: INSTALLATION, name: 'x'.repeat(65) },
        error: 'name must be a string of 1..64 characters',
      },
    ],
  },
  {
    method: 'POST',
    path: '/v1/pair/poll',
    schema: PollSchema,
    token: false,
    refusals: [
      { body: {}, error: 'pairingId is required' },
      { body: { pairingId: '' }, error: 'pairingId must be a non-empty string' },
      { body: { pairingId: 42 }, error: 'pairingId must be a non-empty string' },
    ],
  },
];

describe.each(routes)('$method $path', ({ method, path, schema, token, refusals }) => {
  test.each(refusals)('a body the schema refuses answers 400 $error', async ({ body, error }) => {
    expect(Value.Check(schema, JSON.parse(JSON.stringify(body)))).toBe(false);
    const response = await service.request(method, path, { body, ...(token ? {} : { token: null }) });
    expect(await answer(response)).toEqual({ status: 400, body: { error } });
  });
});

test('rules a schema cannot hold keep their 400: a nonexistent day, a sessionId unlike the path', async () => {
  const february30 = consumptionChunk({ date: '2026-02-30' });
  expect(Value.Check(ChunkSchema, february30)).toBe(true);
  expect(await answer(await service.request('PUT', '/v1/consumption/daily', { body: february30 }))).toEqual({
    status: 400,
    body: { error: 'date must be a calendar date YYYY-MM-DD' },
  });
  const otherId = session({ sessionId: 'another-session' });
  expect(Value.Check(ChargingSessionSchema, otherId)).toBe(true);
  expect(await answer(await service.request('PUT', SESSION_PATH, { body: otherId }))).toEqual({
    status: 400,
    body: { error: 'sessionId does not match path' },
  });
});

/** What a parser made of a body: its value, or the 400's message. */
function outcome(parse: () => unknown): unknown {
  try {
    return { value: parse() };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** A value for a field: mostly plausible, sometimes of another type or out of range, sometimes absent. */
const anyValue = (...plausible: fc.Arbitrary<unknown>[]) =>
  fc.oneof(
    { weight: 30, arbitrary: fc.oneof(...plausible) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, null, '', '3', [], {}, true, -1, 1e300, 0.5) },
  );
/** An optional field's value: often absent or null, which mean the same. */
const optionalValue = (...plausible: fc.Arbitrary<unknown>[]) =>
  fc.oneof(
    { weight: 3, arbitrary: anyValue(...plausible) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, null) },
  );
const uuid = fc.oneof(fc.uuid(), fc.constant(INSTALLATION.toUpperCase()));
/** Mostly a value in range, sometimes one just outside. */
const within = (inRange: fc.Arbitrary<number>, outside: fc.Arbitrary<number>) =>
  fc.oneof({ weight: 15, arbitrary: inRange }, { weight: 1, arbitrary: outside });
const ms = within(
  fc.integer({ min: 946_684_800_000, max: 32_503_679_999_999 }),
  fc.constantFrom(0, 946_684_799_999, 32_503_680_000_000, 1_764_080_000),
);
const number = (min: number, max: number) =>
  within(fc.double({ min, max, noNaN: true }), fc.constantFrom(min - 0.001, max + 0.001, min - 1e6));

/** The object without its absent fields, as JSON would carry it. */
const json = (record: Record<string, unknown>) => JSON.parse(JSON.stringify(record)) as Record<string, unknown>;

describe('the compiled check gives what the field-by-field parser gives, for any body', () => {
  const runs = { numRuns: 3000, seed: 23 };
  /** Counts the bodies `schema` accepts, so that a test can tell it checked the compiled path often enough. */
  const accepted = (schema: TSchema) => {
    const counter = { count: 0, of: (body: unknown) => void (Value.Check(schema, body) && (counter.count += 1)) };
    return counter;
  };

  test('chunks', () => {
    const day = fc.record({
      km: number(-1e7, 1e7),
      kwh: number(-1e7, 1e7),
      hours: anyValue(number(0, 24)),
      socDrop: number(0, 100),
    });
    const chunk = fc.record({
      installationId: anyValue(uuid),
      recordedAt: anyValue(ms),
      date: anyValue(fc.constantFrom('2026-11-25', '2024-02-29', '2026-02-29', '0000-01-01', '2026-1-5')),
      day: anyValue(day),
      sohPercent: optionalValue(number(0, 100)),
      lifetime: optionalValue(day),
      extra: anyValue(fc.string()),
    });
    const chunks = accepted(ChunkSchema);
    fc.assert(
      fc.property(chunk, (body) => {
        const sent = json(body);
        chunks.of(sent);
        expect(outcome(() => parseChunk(sent))).toEqual(outcome(() => explainChunk(sent)));
      }),
      runs,
    );
    expect(chunks.count).toBeGreaterThan(runs.numRuns / 5);
  });

  test('charging sessions', () => {
    const curvePoint = fc.record({
      timestampMs: anyValue(ms),
      powerKw: anyValue(number(0, 1000)),
      socPercent: optionalValue(number(0, 100)),
      x: fc.integer(),
    });
    const body = fc.record({
      installationId: anyValue(uuid),
      sessionId: optionalValue(fc.constantFrom('s-1', 's-2')),
      startedAt: anyValue(ms),
      endedAt: anyValue(ms),
      energyKwh: anyValue(number(0, 1000)),
      meteredSeconds: optionalValue(number(0, 604_800)),
      lastPower: optionalValue(number(-1000, 1000)),
      totalCost: optionalValue(number(0, 1e9)),
      isDemo: optionalValue(fc.boolean()),
      curve: optionalValue(fc.array(anyValue(curvePoint), { maxLength: 4 })),
    });
    const sessions = accepted(ChargingSessionSchema);
    fc.assert(
      fc.property(body, fc.constantFrom('s-1', 's-2'), (record, sessionId) => {
        const sent = json(record);
        sessions.of(sent);
        expect(outcome(() => parseSessionBody(sent, parseSessionId(sessionId)))).toEqual(
          outcome(() => explainSession(sent, sessionId)),
        );
      }),
      runs,
    );
    expect(sessions.count).toBeGreaterThan(runs.numRuns / 5);
  });

  test('pairing starts and polls', () => {
    const name = fc.oneof(
      fc.string({ maxLength: 70 }),
      fc.constantFrom('MG4', '👩🏽‍💻 car', 'a\u200Eb', 'x'.repeat(64)),
    );
    const start = fc.record({ installationId: anyValue(uuid), name: optionalValue(name) });
    const poll = fc.record({ pairingId: anyValue(fc.string({ maxLength: 5 })) });
    const starts = accepted(StartSchema);
    fc.assert(
      fc.property(start, poll, (startBody, pollBody) => {
        const [sentStart, sentPoll] = [json(startBody), json(pollBody)];
        starts.of(sentStart);
        expect(outcome(() => parseStart(sentStart))).toEqual(outcome(() => explainStart(sentStart)));
        expect(outcome(() => parsePoll(sentPoll))).toEqual(outcome(() => explainPoll(sentPoll)));
      }),
      runs,
    );
    expect(starts.count).toBeGreaterThan(runs.numRuns / 5);
  });
});
