/** PUT /v1/consumption/daily and GET /v1/consumption/history: rules, answers and errors. */
import { describe, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import { answer, INSTALLATION, OTHER_INSTALLATION, OWNER_TOKEN, tempDir, testConfig } from './support.ts';
import { parsedReply, rawRequest } from './upload.ts';
import {
  service,
  useConsumptionService,
  type Day,
  type ChunkBody,
  T0,
  day,
  chunk,
  dateOf,
  putChunk,
  put,
  history,
} from './consumption-support.ts';

useConsumptionService();

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
    await Promise.all(
      Array.from({ length: 20 }, (_, n) => put(chunk({ date: dates[n % dates.length]!, day: day(10) }))),
    );
    const after = service.storage.committer.stats;
    // Some copies met in one transaction.
    expect(after.groups - before.groups).toBeLessThan(after.writes - before.writes);
    const { records, lifetime } = await history();
    expect(records).toHaveLength(1);
    expect(records[0]!.day).toEqual(day(10));
    expect(lifetime).toEqual(day(10));
    expect(service.storage.db.query('SELECT count(*) AS n FROM consumption_chunks').get()).toEqual({ n: 1 });
    expect(service.storage.db.query('SELECT sum(chunks) AS n, count(*) AS days FROM consumption_days').get()).toEqual({
      n: 1,
      days: 1,
    });
  });

  test('an older app’s lifetime object is not the lifetime; unknown fields are ignored, null is absent', async () => {
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

  test('every value a car may send, the least subnormal included, reads back exactly as its only chunk', async () => {
    const days: Day[] = [
      { km: 0.0001, kwh: 1e-10, hours: 5e-324, socDrop: -0.0001 },
      // The least normal, the largest subnormal.
      { km: 2.2250738585072014e-308, kwh: 2.225073858507201e-308, hours: -5e-324, socDrop: 1 / 3 },
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
    const chunks = [1, 2 ** -53, 5e-324].map((km, n) =>
      chunk({ recordedAt: T0 + n, day: { km, kwh: 0, hours: 0, socDrop: 0 } }),
    );
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
    [
      'recordedAt as text',
      chunk({ recordedAt: String(T0) }),
      'recordedAt must be Unix milliseconds (a non-negative safe integer)',
    ],
    [
      'recordedAt fractional',
      chunk({ recordedAt: T0 + 0.5 }),
      'recordedAt must be Unix milliseconds (a non-negative safe integer)',
    ],
    [
      'recordedAt negative',
      chunk({ recordedAt: -1 }),
      'recordedAt must be Unix milliseconds (a non-negative safe integer)',
    ],
    [
      'recordedAt unsafe',
      chunk({ recordedAt: 2 ** 53 }),
      'recordedAt must be Unix milliseconds (a non-negative safe integer)',
    ],
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
    [
      'day.hours too large',
      chunk({ day: { ...day(1), hours: 10_000_000.5 } }),
      'day.hours is out of range -10000000..10000000',
    ],
    [
      'day.socDrop too negative',
      chunk({ day: { ...day(1), socDrop: -10_000_001 } }),
      'day.socDrop is out of range -10000000..10000000',
    ],
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

  test('accepts 29 February of a century divisible by 400, and the first and last days of 0001 to 9999', async () => {
    const dates = ['0001-01-01', '2000-02-29', '9999-12-31'];
    for (const [n, date] of dates.entries()) await put(chunk({ recordedAt: T0 + n, date }));
    expect((await history()).records.map((record) => record.date)).toEqual(dates.toReversed());
  });

  test('accepts the limits themselves: 29 February of a leap year, ±1e7, sohPercent 100', async () => {
    await put(
      chunk({ date: '2024-02-29', day: { km: 10_000_000, kwh: -10_000_000, hours: 0, socDrop: 0 }, sohPercent: 100 }),
    );
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
    expect(records.map((record) => record.date)).toEqual(Array.from({ length: 400 }, (_, i) => dateOf(days - 1 - i)));
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
  test("a read's body goes through the ingest pipeline: over 512 KiB 400 after the token, else ignored", async () => {
    const get = (body: string, token?: null) =>
      service.request('GET', `/v1/consumption/history/${INSTALLATION}`, { body, token });
    expect(await answer(await get('x'.repeat(limits.bodyBytes + 1)))).toEqual({
      status: 400,
      body: { error: 'body is too large' },
    });
    expect(await answer(await get('x'.repeat(limits.bodyBytes + 1), null))).toEqual({
      status: 401,
      body: { error: 'unauthorized' },
    });
    expect(await answer(await get('x'.repeat(limits.bodyBytes)))).toEqual({
      status: 200,
      body: { records: [], lifetime: { km: 0, kwh: 0, hours: 0, socDrop: 0 } },
    });
  });
});

test('a listening server refuses a history read declaring a body over 512 KiB, ignores a smaller one', async () => {
  const running = await serve(testConfig(tempDir()), createMemoryLogger());
  try {
    const read = async (bytes: number) => {
      const head =
        `GET /v1/consumption/history/${INSTALLATION} HTTP/1.1\r\nHost: localhost\r\n` +
        `Authorization: Bearer ${OWNER_TOKEN}\r\nConnection: close\r\nContent-Length: ${bytes}\r\n\r\n`;
      const { status, body } = parsedReply(await rawRequest(Number(running.url.port), head + 'x'.repeat(bytes)));
      return { status, body: JSON.parse(body) as unknown };
    };
    expect(await read(limits.bodyBytes + 1)).toEqual({
      status: 'HTTP/1.1 400 Bad Request',
      body: { error: 'body is too large' },
    });
    expect(await read(limits.bodyBytes)).toEqual({
      status: 'HTTP/1.1 200 OK',
      body: { records: [], lifetime: { km: 0, kwh: 0, hours: 0, socDrop: 0 } },
    });
  } finally {
    await running.stop();
  }
});
