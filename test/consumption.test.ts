import { afterAll, beforeEach, describe, expect, test } from 'bun:test';
import type { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { Consumption } from '../src/consumption/history.ts';
import { parseChunk } from '../src/consumption/model.ts';
import type { Committer } from '../src/db/committer.ts';
import { embeddedMigrations } from '../src/db/migrations.macro.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import { limits } from '../src/limits.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import {
  answer,
  consumptionChunk,
  INSTALLATION,
  installationNumbered,
  OTHER_INSTALLATION,
  OWNER_TOKEN,
  startTestService,
  tempDir,
  testConfig,
  type ConsumptionChunk,
  type TestService,
} from './support.ts';
import { parsedReply, rawRequest } from './upload.ts';

let service: TestService;
beforeEach(async () => {
  await service?.close();
  service = await startTestService();
});
afterAll(() => service.close());

interface Day {
  km: number;
  kwh: number;
  hours: number;
  socDrop: number;
}

/** A chunk's fields, each of any value (the invalid ones too); unknown fields as well. */
type ChunkBody = Record<string, unknown>;

const T0 = consumptionChunk().recordedAt;
// Fractions of powers of two, so that the expected sums are exact.
const day = (km: number, kwh = km / 4, hours = km / 8, socDrop = km / 2): Day => ({ km, kwh, hours, socDrop });
const chunk = (overrides: ChunkBody = {}): ChunkBody => consumptionChunk({ day: day(10), ...overrides });

/** The calendar date `n` days after 2020-01-01. */
const dateOf = (n: number) => new Date(Date.UTC(2020, 0, 1 + n)).toISOString().slice(0, 10);

const putChunk = (body: unknown, token?: string | null) =>
  service.request('PUT', '/v1/consumption/daily', { body, token });

async function put(body: ChunkBody): Promise<void> {
  expect(await answer(await putChunk(body))).toEqual({ status: 204, body: null });
}

async function history(installationId = INSTALLATION) {
  const { status, body } = await answer(await service.request('GET', `/v1/consumption/history/${installationId}`));
  expect(status).toBe(200);
  return body as { records: { date: string; day: Day; sohPercent?: number; lifetime: Day }[]; lifetime: Day };
}

const FIELDS = ['km', 'kwh', 'hours', 'socDrop'] as const;

/**
 * A double as the exact integer it is in units of 2^-1074 (the smallest subnormal): scaling by 2^537
 * twice, each step exact, the second in BigInt since x·2^1074 passes doubles' range.
 */
function finestUnits(x: number): bigint {
  const scaled = x * 2 ** 537;
  const whole = Math.trunc(scaled);
  return (BigInt(whole) << 537n) + BigInt((scaled - whole) * 2 ** 537);
}

/** The double nearest to units·2^-1074, read by parseFloat from its exact decimal expansion (units·5^1074 / 10^1074). */
function nearestDouble(units: bigint): number {
  const digits = ((units < 0n ? -units : units) * 5n ** 1074n).toString().padStart(1075, '0');
  const magnitude = Number.parseFloat(`${digits.slice(0, -1074)}.${digits.slice(-1074)}`);
  return units < 0n ? -magnitude : magnitude;
}

/** The correctly rounded sum of each field over the chunks' days: what an exact sum reads back as. */
function exactSums(days: Day[]): Day {
  const sum = (field: (typeof FIELDS)[number]) => nearestDouble(days.reduce((units, day) => units + finestUnits(day[field]), 0n));
  return { km: sum('km'), kwh: sum('kwh'), hours: sum('hours'), socDrop: sum('socDrop') };
}

describe('PUT /v1/consumption/daily', () => {
  test('stores the car app’s chunk with every field and answers 204 with an empty body', async () => {
    const response = await putChunk({
      installationId: INSTALLATION.toUpperCase(),
      recordedAt: 1764080000123,
      date: '2026-11-25',
      day: { km: 12.4, kwh: 2.05, hours: 0.31, socDrop: 3.0 },
      sohPercent: 97.5,
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(service.storage.db.query('SELECT * FROM consumption_chunks').all()).toEqual([
      {
        installation_id: INSTALLATION,
        recorded_at: 1764080000123,
        date: '2026-11-25',
        km: 12.4,
        kwh: 2.05,
        hours: 0.31,
        soc_drop: 3,
        soh_percent: 97.5,
        snapshot: 0,
      },
    ]);
  });

  test('copies of one chunk sent at once (sharing group commits), each naming another date, count once', async () => {
    const dates = ['2026-11-23', '2026-11-24', '2026-11-25'];
    const before = service.storage.committer.stats;
    await Promise.all(Array.from({ length: 20 }, (_, n) => put(chunk({ date: dates[n % dates.length]!, day: day(10) }))));
    const after = service.storage.committer.stats;
    expect(after.groups - before.groups).toBeLessThan(after.writes - before.writes); // some copies met in one transaction
    const { records, lifetime } = await history();
    expect(records).toHaveLength(1);
    expect(records[0]!.day).toEqual(day(10));
    expect(lifetime).toEqual(day(10));
    expect(service.storage.db.query('SELECT count(*) AS n FROM consumption_chunks').get()).toEqual({ n: 1 });
    expect(service.storage.db.query('SELECT sum(chunks) AS n, count(*) AS days FROM consumption_days').get()).toEqual({ n: 1, days: 1 });
  });

  test('an older app’s lifetime object is not taken as the lifetime; unknown fields are ignored, null is absent', async () => {
    await put(chunk({ lifetime: { km: 5000, kwh: 800, hours: 90, socDrop: 1000 }, sohPercent: null, extra: 'x' }));
    expect(await history()).toEqual({
      records: [{ date: '2026-11-25', day: day(10), lifetime: day(10) }],
      lifetime: day(10),
    });
  });

  test('a re-sent chunk replaces the one at the same recordedAt instead of counting twice', async () => {
    await put(chunk({ day: day(10) }));
    await put(chunk({ day: day(10) }));
    await put(chunk({ recordedAt: T0 + 120_000, day: day(5) }));
    await put(chunk({ day: day(7) }));
    expect(await history()).toEqual({
      records: [{ date: '2026-11-25', day: day(12), lifetime: day(12) }],
      lifetime: day(12),
    });
    expect(service.storage.db.query('SELECT count(*) AS n FROM consumption_chunks').get()).toEqual({ n: 2 });
  });

  test('a replacing chunk with another date moves to its new day, and an emptied day disappears', async () => {
    await put(chunk({ date: '2026-11-24', day: day(10) }));
    await put(chunk({ recordedAt: T0 + 1, date: '2026-11-25', day: day(3) }));
    await put(chunk({ date: '2026-11-25', day: day(4) }));
    expect(await history()).toEqual({
      records: [{ date: '2026-11-25', day: day(7), lifetime: day(7) }],
      lifetime: day(7),
    });
  });

  test('negative corrections are subtracted', async () => {
    await put(chunk({ day: day(10) }));
    await put(chunk({ recordedAt: T0 + 1, day: day(-4) }));
    expect((await history()).lifetime).toEqual(day(6));
  });

  test('every value a car may send, the smallest subnormal included, reads back exactly as its day’s only chunk', async () => {
    const days: Day[] = [
      { km: 0.0001, kwh: 1e-10, hours: 5e-324, socDrop: -0.0001 },
      { km: 2.2250738585072014e-308, kwh: 2.225073858507201e-308, hours: -5e-324, socDrop: 1 / 3 }, // the least normal, the largest subnormal
      { km: 12.4, kwh: 0.31, hours: 10_000_000, socDrop: -9_999_999.999999998 },
      { km: 0.1, kwh: -1e-300, hours: Number.EPSILON, socDrop: 3 * 2 ** -1074 },
      { km: 1e-5, kwh: 2 ** -13, hours: 3 / 3600, socDrop: -(2 ** -12) - 2 ** -64 },
    ];
    await Promise.all(days.map((values, n) => put(chunk({ recordedAt: T0 + n, date: dateOf(n), day: values }))));
    const { records } = await history();
    expect(records.map((record) => record.day)).toEqual(days.toReversed());
    expect(records.at(-1)!.lifetime).toEqual(days[0]!);
  });

  test('a sum reads back as the double nearest to it: a subnormal tips 1 + 2^-53, a tie, upwards', async () => {
    const chunks = [1, 2 ** -53, 5e-324].map((km, n) => chunk({ recordedAt: T0 + n, day: { km, kwh: 0, hours: 0, socDrop: 0 } }));
    for (const body of chunks) await put(body);
    expect((await history()).lifetime.km).toBe(1 + 2 ** -52); // a double's own sum rounds the tie to even: 1
  });

  test('sums are kept as decimal integers in the coarsest unit 2^-unit_bits that holds them exactly', async () => {
    await put(chunk({ day: { km: 12.5, kwh: 2, hours: 0.25, socDrop: 3 } }));
    await put(chunk({ recordedAt: T0 + 1, date: '2026-11-24', day: { km: 5e-324, kwh: 0, hours: -1, socDrop: 0 } }));
    const sums = 'km, kwh, hours, soc_drop, unit_bits';
    expect(service.storage.db.query(`SELECT date, ${sums} FROM consumption_days ORDER BY date`).all()).toEqual([
      { date: '2026-11-24', km: '1', kwh: '0', hours: String(-(2n ** 1074n)), soc_drop: '0', unit_bits: 1074 },
      { date: '2026-11-25', km: '50', kwh: '8', hours: '1', soc_drop: '12', unit_bits: 2 },
    ]);
    expect(service.storage.db.query('SELECT unit_bits FROM consumption_lifetimes').get()).toEqual({ unit_bits: 1074 });
    await put(chunk({ recordedAt: T0 + 1, date: '2026-11-24', day: day(0) })); // the tiny value replaced: coarse again
    expect(service.storage.db.query(`SELECT ${sums} FROM consumption_lifetimes`).all()).toEqual([
      { km: '50', kwh: '8', hours: '1', soc_drop: '12', unit_bits: 2 },
    ]);
  });

  test('a string "3" is not taken as the number 3', async () => {
    expect(await answer(await putChunk(chunk({ day: { ...day(1), km: '3' } })))).toEqual({
      status: 400,
      body: { error: 'day.km must be a finite number' },
    });
  });

  const invalidChunks: [string, ChunkBody | string, string][] = [
    ['installationId missing', chunk({ installationId: undefined }), 'installationId is required'],
    ['installationId null', chunk({ installationId: null }), 'installationId is required'],
    ['installationId not a UUID', chunk({ installationId: 'car-1' }), 'installationId must be a UUID'],
    ['recordedAt missing', chunk({ recordedAt: undefined }), 'recordedAt is required'],
    ['recordedAt as text', chunk({ recordedAt: String(T0) }), 'recordedAt must be Unix milliseconds (a non-negative safe integer)'],
    ['recordedAt fractional', chunk({ recordedAt: T0 + 0.5 }), 'recordedAt must be Unix milliseconds (a non-negative safe integer)'],
    ['recordedAt negative', chunk({ recordedAt: -1 }), 'recordedAt must be Unix milliseconds (a non-negative safe integer)'],
    ['recordedAt unsafe', chunk({ recordedAt: 2 ** 53 }), 'recordedAt must be Unix milliseconds (a non-negative safe integer)'],
    ['date missing', chunk({ date: undefined }), 'date is required'],
    ['date 30 February', chunk({ date: '2026-02-30' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date 29 February of a common year', chunk({ date: '2100-02-29' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date month 13', chunk({ date: '2026-13-01' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date 31 April', chunk({ date: '2026-04-31' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date 31 November', chunk({ date: '2026-11-31' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date in year 0', chunk({ date: '0000-01-01' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date with a five-digit year', chunk({ date: '12026-11-25' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date without padding', chunk({ date: '2026-1-5' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date with a time', chunk({ date: '2026-11-25T10:00:00Z' }), 'date must be a calendar date YYYY-MM-DD'],
    ['date as a number', chunk({ date: 20261125 }), 'date must be a calendar date YYYY-MM-DD'],
    ['day missing', chunk({ day: undefined }), 'day is required'],
    ['day an array', chunk({ day: [1, 2, 3, 4] }), 'day must be an object'],
    ['day.km missing', chunk({ day: { kwh: 1, hours: 1, socDrop: 1 } }), 'day.km is required'],
    ['day.kwh as text', chunk({ day: { ...day(1), kwh: '1' } }), 'day.kwh must be a finite number'],
    ['day.hours too large', chunk({ day: { ...day(1), hours: 10_000_000.5 } }), 'day.hours is out of range -10000000..10000000'],
    ['day.socDrop too negative', chunk({ day: { ...day(1), socDrop: -10_000_001 } }), 'day.socDrop is out of range -10000000..10000000'],
    [
      'day.km infinite',
      JSON.stringify(chunk({ day: day(1) })).replace('"km":1,', '"km":1e400,'), // JSON cannot write an infinity
      'day.km must be a finite number',
    ],
    ['sohPercent zero', chunk({ sohPercent: 0 }), 'sohPercent must be above 0 and at most 100'],
    ['sohPercent above 100', chunk({ sohPercent: 100.01 }), 'sohPercent must be above 0 and at most 100'],
    ['sohPercent negative', chunk({ sohPercent: -5 }), 'sohPercent must be above 0 and at most 100'],
    ['sohPercent as text', chunk({ sohPercent: '97' }), 'sohPercent must be a finite number'],
  ];
  test.each(invalidChunks)('400 naming the field: %s', async (_, body, error) => {
    expect(await answer(await putChunk(body))).toEqual({ status: 400, body: { error } });
    expect(service.storage.db.query('SELECT count(*) AS n FROM consumption_chunks').get()).toEqual({ n: 0 });
  });

  test('accepts 29 February of a century divisible by 400, and the first and last days of the years 0001 to 9999', async () => {
    const dates = ['0001-01-01', '2000-02-29', '9999-12-31'];
    for (const [n, date] of dates.entries()) await put(chunk({ recordedAt: T0 + n, date }));
    expect((await history()).records.map((record) => record.date)).toEqual(dates.toReversed());
  });

  test('accepts the limits themselves: 29 February of a leap year, ±1e7, sohPercent 100', async () => {
    await put(chunk({ date: '2024-02-29', day: { km: 10_000_000, kwh: -10_000_000, hours: 0, socDrop: 0 }, sohPercent: 100 }));
    expect((await history()).records[0]).toEqual({
      date: '2024-02-29',
      day: { km: 10_000_000, kwh: -10_000_000, hours: 0, socDrop: 0 },
      sohPercent: 100,
      lifetime: { km: 10_000_000, kwh: -10_000_000, hours: 0, socDrop: 0 },
    });
  });

  test('401 without a token, 403 for a paired car of another installation, 204 for its own', async () => {
    expect(await answer(await putChunk(chunk(), null))).toEqual({ status: 401, body: { error: 'unauthorized' } });
    const { token } = await service.devices.pair(OTHER_INSTALLATION, null);
    expect(await answer(await putChunk(chunk(), token))).toEqual({
      status: 403,
      body: { error: 'token belongs to another installation; pair this car again after its installation id changed' },
    });
    expect(await answer(await putChunk(chunk({ recordedAt: 'x' }), token))).toEqual({
      status: 400,
      body: { error: 'recordedAt must be Unix milliseconds (a non-negative safe integer)' },
    });
    expect((await putChunk(chunk({ installationId: OTHER_INSTALLATION.toUpperCase() }), token)).status).toBe(204);
    expect(service.storage.db.query('SELECT installation_id AS id FROM consumption_chunks').all()).toEqual([
      { id: OTHER_INSTALLATION },
    ]);
  });
});

describe('GET /v1/consumption/history/{installationId}', () => {
  test('an installation without chunks has no records and an all-zero lifetime', async () => {
    expect(await history()).toEqual({ records: [], lifetime: { km: 0, kwh: 0, hours: 0, socDrop: 0 } });
  });

  test('records are newest date first, each with the lifetime up to and including its date', async () => {
    await put(chunk({ recordedAt: T0, date: '2026-11-24', day: day(10) }));
    await put(chunk({ recordedAt: T0 + 1, date: '2026-11-26', day: day(30) }));
    await put(chunk({ recordedAt: T0 + 2, date: '2026-11-25', day: day(20) }));
    await put(chunk({ recordedAt: T0 + 3, date: '2026-11-25', day: day(5) }));
    await put(chunk({ installationId: OTHER_INSTALLATION, recordedAt: T0 + 4, date: '2026-11-25', day: day(1000) }));
    expect(await history()).toEqual({
      records: [
        { date: '2026-11-26', day: day(30), lifetime: day(65) },
        { date: '2026-11-25', day: day(25), lifetime: day(35) },
        { date: '2026-11-24', day: day(10), lifetime: day(10) },
      ],
      lifetime: day(65),
    });
  });

  test('returns the newest 400 of 450 days; lifetimes still count all 450', async () => {
    const days = 450;
    await Promise.all(
      Array.from({ length: days }, (_, n) => put(chunk({ recordedAt: T0 + n, date: dateOf(n), day: day(n + 1) }))),
    );
    const { records, lifetime } = await history();
    expect(records.length).toBe(400);
    expect(records.map((record) => record.date)).toEqual(
      Array.from({ length: 400 }, (_, i) => dateOf(days - 1 - i)),
    );
    const sumUpTo = (n: number) => ((n + 1) * (n + 2)) / 2; // km of days 0..n
    expect(lifetime).toEqual(day(sumUpTo(days - 1)));
    expect(records[0]!.lifetime).toEqual(lifetime);
    expect(records[399]).toEqual({ date: dateOf(50), day: day(51), lifetime: day(sumUpTo(50)) });
  });

  test('sohPercent is that of the day’s newest chunk by recordedAt that carried one', async () => {
    await put(chunk({ recordedAt: T0 + 20, sohPercent: 96 }));
    await put(chunk({ recordedAt: T0 + 10, sohPercent: 95 })); // older, sent later: does not win
    await put(chunk({ recordedAt: T0 + 30 })); // newer, without one: does not clear it
    await put(chunk({ recordedAt: T0 + 5, date: '2026-11-24' }));
    const soh = async () => (await history()).records.map(({ date, sohPercent }) => ({ date, sohPercent }));
    expect(await soh()).toEqual([
      { date: '2026-11-25', sohPercent: 96 },
      { date: '2026-11-24', sohPercent: undefined },
    ]);
    await put(chunk({ recordedAt: T0 + 20 })); // the carrier re-sent without one: the next older one counts
    expect((await soh())[0]).toEqual({ date: '2026-11-25', sohPercent: 95 });
    await put(chunk({ recordedAt: T0 + 10, date: '2026-11-24', sohPercent: 95 })); // it moves to the 24th
    expect(await soh()).toEqual([
      { date: '2026-11-25', sohPercent: undefined },
      { date: '2026-11-24', sohPercent: 95 },
    ]);
    expect((await history()).records[0]).not.toHaveProperty('sohPercent');
  });

  test('a write after a read is seen by the next read', async () => {
    await put(chunk({ day: day(1) }));
    expect((await history()).lifetime).toEqual(day(1));
    await put(chunk({ recordedAt: T0 + 1, day: day(2) }));
    expect((await history()).lifetime).toEqual(day(3));
    await Promise.all([put(chunk({ day: day(4) })), put(chunk({ recordedAt: T0 + 2, day: day(8) }))]);
    expect((await history()).lifetime).toEqual(day(14));
  });

  test('the path id is validated before ownership: 400 naming installationId, then 403', async () => {
    const { token } = await service.devices.pair(OTHER_INSTALLATION, null);
    const get = (id: string, authorization: string | null = token) =>
      service.request('GET', `/v1/consumption/history/${id}`, { token: authorization });
    expect((await get(`${OTHER_INSTALLATION}/`)).status).toBe(200); // a trailing slash, as on every route
    for (const id of ['not-a-uuid', '', `${INSTALLATION}/x`]) {
      expect(await answer(await get(id))).toEqual({ status: 400, body: { error: 'installationId must be a UUID' } });
      expect(await answer(await get(id, null))).toEqual({ status: 401, body: { error: 'unauthorized' } });
    }
    expect(await answer(await get(INSTALLATION))).toEqual({
      status: 403,
      body: { error: 'token belongs to another installation; pair this car again after its installation id changed' },
    });
    expect(await answer(await get(INSTALLATION, null))).toEqual({ status: 401, body: { error: 'unauthorized' } });
    expect(await answer(await get(OTHER_INSTALLATION.toUpperCase()))).toEqual({
      status: 200,
      body: { records: [], lifetime: { km: 0, kwh: 0, hours: 0, socDrop: 0 } },
    });
  });
  test('a body sent with the read goes through the ingest pipeline: over 512 KiB 400 after the token, within it ignored', async () => {
    const get = (body: string, token?: null) => service.request('GET', `/v1/consumption/history/${INSTALLATION}`, { body, token });
    expect(await answer(await get('x'.repeat(limits.bodyBytes + 1)))).toEqual({ status: 400, body: { error: 'body is too large' } });
    expect(await answer(await get('x'.repeat(limits.bodyBytes + 1), null))).toEqual({ status: 401, body: { error: 'unauthorized' } });
    expect(await answer(await get('x'.repeat(limits.bodyBytes)))).toEqual({
      status: 200,
      body: { records: [], lifetime: { km: 0, kwh: 0, hours: 0, socDrop: 0 } },
    });
  });
});

test('on a listening server, a history read declaring a body over 512 KiB is refused; one within it is ignored', async () => {
  const running = await serve(testConfig(tempDir()), createMemoryLogger());
  try {
    const read = async (bytes: number) => {
      const head = `GET /v1/consumption/history/${INSTALLATION} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${OWNER_TOKEN}\r\nConnection: close\r\nContent-Length: ${bytes}\r\n\r\n`;
      const { status, body } = parsedReply(await rawRequest(Number(running.url.port), head + 'x'.repeat(bytes)));
      return { status, body: JSON.parse(body) as unknown };
    };
    expect(await read(limits.bodyBytes + 1)).toEqual({ status: 'HTTP/1.1 400 Bad Request', body: { error: 'body is too large' } });
    expect(await read(limits.bodyBytes)).toEqual({ status: 'HTTP/1.1 200 OK', body: { records: [], lifetime: { km: 0, kwh: 0, hours: 0, socDrop: 0 } } });
  } finally {
    await running.stop();
  }
});

describe('sums do not drift', () => {
  /** mulberry32: a small seeded generator, so a failure can be replayed. */
  function random(seed: number) {
    return () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  test.each([1, 2, 3])('random writes and re-writes, tiny values among them, leave exactly the sums of the surviving chunks (seed %d)', async (seed) => {
    const next = random(seed);
    const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
    const large = () => (next() - 0.5) * 2e7;
    const small = () => (next() - 0.5) * 2e-3;
    // Down to the subnormals: 2^-13 .. 2^-1075 in magnitude, some rounding to ±5e-324 or 0.
    const tiny = () => (next() - 0.5) * 2 ** -(12 + Math.floor(next() * 1063));
    const mixed = () => pick([large, () => next() * 50, () => -next() * 3, small, tiny])();
    const dates = ['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23'];
    const stored = new Map<number, { date: string; day: Day; sohPercent?: number }>();
    const write = (recordedAt: number, value: () => number) => {
      const body = {
        date: pick(dates),
        day: { km: value(), kwh: value(), hours: value(), socDrop: value() },
        ...(next() < 0.5 && { sohPercent: 50 + Math.round(next() * 50) }),
      };
      stored.set(recordedAt, body);
      return put(chunk({ recordedAt, ...body }));
    };
    for (let round = 0; round < 8; round += 1) {
      // Distinct recordedAt within a round: concurrent PUTs of one key would leave whichever came last.
      const keys = new Set(Array.from({ length: 40 }, () => T0 + Math.floor(next() * 60)));
      await Promise.all([...keys].map((recordedAt) => write(recordedAt, mixed)));
    }
    // Every chunk finally replaced by a small or tiny one: any drift left by the large values, or any
    // rounding of the inputs, would show in the small sums.
    await Promise.all([...stored.keys()].map((recordedAt) => write(recordedAt, () => pick([small, tiny])())));
    const expectedDates = dates.filter((date) => [...stored.values()].some((c) => c.date === date)).reverse();
    const { records, lifetime } = await history();
    expect(records.map((record) => record.date)).toEqual(expectedDates);
    const surviving = [...stored.entries()].sort(([a], [b]) => a - b);
    for (const record of records) {
      const ofDay = surviving.filter(([, c]) => c.date === record.date).map(([, c]) => c);
      expect(record.day).toEqual(exactSums(ofDay.map((c) => c.day)));
      expect(record.lifetime).toEqual(exactSums(surviving.filter(([, c]) => c.date <= record.date).map(([, c]) => c.day)));
      expect(record.sohPercent).toBe(ofDay.findLast((c) => c.sohPercent !== undefined)?.sohPercent);
    }
    expect(lifetime).toEqual(records[0]!.lifetime);
  });
});

describe('sums an earlier build wrote in its fixed unit of 2^-64', () => {
  /** The earlier version's sum of a field: each value rounded to units of 2^-64, added, as decimal text. */
  const legacySum = (days: Day[], field: (typeof FIELDS)[number]) =>
    String(days.reduce((units, day) => units + BigInt(Math.round(day[field] * 2 ** 64)), 0n));

  /** A folder with a database of schema 0003 holding the chunks with the day and lifetime sums the earlier version wrote. */
  function legacyDatabase(chunks: ConsumptionChunk[]): string {
    const dir = tempDir();
    const db = openDatabase(join(dir, 'ev-ingest.db'), 'fast');
    migrate(db, embeddedMigrations().slice(0, 4)); // 0000 to 0003: before the sums' unit
    const sums = (days: Day[]) => FIELDS.map((field) => legacySum(days, field));
    for (const c of chunks) {
      db.query('INSERT INTO consumption_chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
        c.installationId, c.recordedAt, c.date, c.day.km, c.day.kwh, c.day.hours, c.day.socDrop, c.sohPercent ?? null,
      );
    }
    for (const installationId of new Set(chunks.map((c) => c.installationId))) {
      const own = chunks.filter((c) => c.installationId === installationId);
      for (const date of new Set(own.map((c) => c.date))) {
        const ofDay = own.filter((c) => c.date === date).sort((a, b) => a.recordedAt - b.recordedAt);
        db.query('INSERT INTO consumption_days VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
          installationId, date, ofDay.length, ...sums(ofDay.map((c) => c.day)), ofDay.findLast((c) => c.sohPercent !== undefined)?.sohPercent ?? null,
        );
      }
      db.query('INSERT INTO consumption_lifetimes VALUES (?, ?, ?, ?, ?)').run(installationId, ...sums(own.map((c) => c.day)));
    }
    db.close();
    return dir;
  }

  test('read back after the upgrade as that build answered them, and added to exactly by later chunks', async () => {
    const old = [
      consumptionChunk({ recordedAt: T0, date: '2026-11-24', day: day(10, 0.0001, 0.5, 1), sohPercent: 97 }),
      consumptionChunk({ recordedAt: T0 + 1, date: '2026-11-25', day: day(2, 0.25, 0.25, 3) }),
    ];
    const upgraded = await startTestService({}, { dir: legacyDatabase(old) });
    try {
      const records = async () =>
        ((await answer(await upgraded.request('GET', `/v1/consumption/history/${INSTALLATION}`))).body as { records: { date: string; day: Day }[] }).records;
      // 0.0001 had been rounded to the 2^-64 unit: the earlier answer is kept, not read in another unit.
      expect((await records()).map((record) => record.day)).toEqual([day(2, 0.25, 0.25, 3), day(10, 0.00009999999999999999, 0.5, 1)]);
      const later = consumptionChunk({ recordedAt: T0 + 2, date: '2026-11-24', day: day(0.5, 0.125, 0.5, 0.5) });
      expect((await upgraded.request('PUT', '/v1/consumption/daily', { body: later })).status).toBe(204);
      expect((await records()).at(-1)!.day).toEqual(day(10.5, 0.12509999999999999, 1, 1.5));
      // The migration gave the earlier rows their unit; the rewritten day still needs it for its rounded 0.0001.
      const units = upgraded.storage.db.query('SELECT date, unit_bits AS bits FROM consumption_days ORDER BY date').all();
      expect(units).toEqual([{ date: '2026-11-24', bits: 64 }, { date: '2026-11-25', bits: 64 }]);
    } finally {
      await upgraded.close();
    }
  });
});

test('the history cache keeps the installations read most recently: a read saves an answer from eviction', () => {
  let queries = 0;
  // The service's connection, counting the queries: a history read from the cache runs none.
  const db = new Proxy(service.storage.db, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (property === 'query') queries += 1;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Database;
  const history = new Consumption(db, service.storage.committer);
  const readsDatabase = (n: number) => {
    const before = queries;
    history.historyJson(installationNumbered(n));
    return queries > before;
  };
  for (let n = 0; n < limits.historyCachedInstallations; n += 1) expect(readsDatabase(n)).toBe(true);
  expect(readsDatabase(0)).toBe(false); // cached, and now the most recently read
  expect(readsDatabase(limits.historyCachedInstallations)).toBe(true); // one more: the least recently read goes
  expect(readsDatabase(0)).toBe(false);
  expect(readsDatabase(1)).toBe(true); // evicted, though cached after 0
});

test('a read while a chunk is being written may answer the old history, but the cache forgets it once the write is committed', async () => {
  const { committer } = service.storage;
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const slowCommitter = { write: async (op, args) => (await held, committer.write(op, args)) } as Pick<Committer, 'write'> as Committer;
  const history = new Consumption(service.storage.db, slowCommitter);
  const lifetimeKm = () => (JSON.parse(history.historyJson(INSTALLATION)) as { lifetime: Day }).lifetime.km;
  expect(lifetimeKm()).toBe(0);
  const writing = history.putChunk(parseChunk(chunk({ day: day(10) })));
  expect(lifetimeKm()).toBe(0); // not committed yet
  release();
  await writing;
  expect(lifetimeKm()).toBe(10);
});

test('a write that fails after its commit (a sync of the WAL failing) still makes the cache forget the answer', async () => {
  const { committer } = service.storage;
  const failingAfterCommit = {
    write: async (op, args) => {
      await committer.write(op, args);
      throw new Error('WAL sync failed');
    },
  } as Pick<Committer, 'write'> as Committer;
  const history = new Consumption(service.storage.db, failingAfterCommit);
  const lifetimeKm = () => (JSON.parse(history.historyJson(INSTALLATION)) as { lifetime: Day }).lifetime.km;
  expect(lifetimeKm()).toBe(0);
  await expect(history.putChunk(parseChunk(chunk({ day: day(10) })))).rejects.toThrow('WAL sync failed');
  expect(lifetimeKm()).toBe(10);
});
