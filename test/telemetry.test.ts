import type { Database, Statement } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { openDatabase } from '../src/db/open.ts';
import { openStorage } from '../src/db/storage.ts';
import type { OutboxChange, SampleForwarder } from '../src/telemetry/forwarder.ts';
import { limits } from '../src/limits.ts';
import { sampleFields, type SampleField } from '../src/telemetry/fields.ts';
import { validateBatch } from '../src/telemetry/model.ts';
import { sampleWrite, telemetryWrites } from '../src/telemetry/store.ts';
import { answer, consumptionChunk, countSamples, INSTALLATION, installationNumbered, OTHER_INSTALLATION, startTestService, tempDir, type TestService } from './support.ts';

/** The fixed server clock: 2025-11-25T14:13:20Z. */
const NOW_S = 1_764_080_000;
const NOW_MS = NOW_S * 1000;
const UTC = NOW_S - 60;

/** Records the hand-off; forwards the installations it is given. */
function recordingForwarder(forwarded: string[] = []) {
  const stored: string[] = [];
  const changes: OutboxChange[] = [];
  const forwarder: SampleForwarder = {
    forwards: (installationId) => forwarded.includes(installationId),
    stored: (installationId, change) => void (stored.push(installationId), changes.push(change)),
  };
  return { forwarder, stored, changes, forwarded };
}

let service: TestService;
let handOff: ReturnType<typeof recordingForwarder>;

beforeAll(async () => {
  handOff = recordingForwarder();
  service = await startTestService({}, { now: () => NOW_MS, forwarder: handOff.forwarder });
});
afterAll(() => service.close());

/** Each test uses its own installation, so tests never see each other's rows. */
let counter = 0;
function freshInstallation(): string {
  counter += 1;
  return installationNumbered(counter);
}

async function post(body: unknown, token?: string | null) {
  return answer(await service.request('POST', '/v1/telemetry', { body, token }));
}

function rowsOf(installationId: string) {
  return service.storage.db
    .query<Record<string, unknown>, [string]>(
      'SELECT uuid AS installation_id, samples.* FROM samples JOIN installations ON installations.id = installation WHERE uuid = ? ORDER BY utc',
    )
    .all(installationId);
}

/** A usable value of a field: the top of its range, 1 for a flag, a name for text. */
function usableValue(field: SampleField): number | string {
  if (field.kind === 'number') return field.max;
  return field.kind === 'flag' ? 1 : 'model x';
}

/** Posts one batch of the given samples for a fresh installation. */
async function postSamples(samples: unknown[]) {
  const installationId = freshInstallation();
  const result = await post({ installationId, samples });
  return { ...result, installationId, rows: rowsOf(installationId) };
}

describe('storing', () => {
  test('a usable sample is stored in typed columns, the installation id lower-cased', async () => {
    const installationId = freshInstallation().toUpperCase().replace('0000-4000', 'ABCD-4000');
    const result = await post({
      installationId,
      samples: [{ utc: UTC, soc: 71.5, power: -12.3, lat: 41.01, lon: 28.97, is_charging: true, is_parked: 0, car_model: 'mg:mg4' }],
    });
    expect(result).toEqual({ status: 200, body: { stored: 1, droppedCount: 0, dropped: [] } });
    const [row] = rowsOf(installationId.toLowerCase());
    expect(row).toMatchObject({
      installation_id: installationId.toLowerCase(),
      utc: UTC,
      soc: 71.5,
      power: -12.3,
      lat: 41.01,
      lon: 28.97,
      is_charging: 1,
      is_parked: 0,
      car_model: 'mg:mg4',
      speed: null,
      planner_state: 0,
    });
    const types = service.storage.db
      .query(
        `SELECT typeof(utc) AS utc, typeof(soc) AS soc, typeof(is_charging) AS flag, typeof(car_model) AS text, typeof(speed) AS absent
         FROM samples WHERE installation = (SELECT id FROM installations WHERE uuid = ?)`,
      )
      .get(installationId.toLowerCase());
    expect(types).toEqual({ utc: 'integer', soc: 'real', flag: 'integer', text: 'text', absent: 'null' });
  });

  test('null is an absent value, not a dropped one', async () => {
    const result = await postSamples([{ utc: UTC, soc: null, speed: 50 }]);
    expect(result.body).toEqual({ stored: 1, droppedCount: 0, dropped: [] });
    expect(result.rows[0]).toMatchObject({ soc: null, speed: 50 });
  });

  test('an empty batch is 200 with stored 0 and writes nothing', async () => {
    const result = await postSamples([]);
    expect(result).toMatchObject({ status: 200, body: { stored: 0, droppedCount: 0, dropped: [] }, rows: [] });
  });

  test('a re-sent batch is stored once, its values replaced completely, its planner state kept', async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    const first = { installationId, samples: [{ utc: UTC, soc: 70, speed: 10 }, { utc: UTC + 1, soc: 71, speed: 11 }] };
    expect((await post(first)).body).toMatchObject({ stored: 2 });
    // Sent again with forwarding off and other values: still two rows, values replaced, still pending.
    handOff.forwarded.pop();
    const again = { installationId, samples: [{ utc: UTC, soc: 50 }, { utc: UTC + 1, soc: 51, speed: 99 }] };
    expect((await post(again)).body).toMatchObject({ stored: 2 });
    expect(rowsOf(installationId).map((row) => [row.utc, row.soc, row.speed, row.planner_state])).toEqual([
      [UTC, 50, null, 1],
      [UTC + 1, 51, 99, 1],
    ]);
  });

  test('a batch of 100 samples, each with its own fields, is stored value for value (several statements)', async () => {
    const samples = Array.from({ length: 100 }, (_, i) => ({
      utc: UTC - 100 + i,
      soc: i,
      ...(i % 2 === 0 ? { lat: 41 + i / 1000, lon: 28 - i / 1000 } : {}),
      ...(i % 3 === 0 ? { car_model: `model ${i}` } : {}),
      ...(i % 5 === 0 ? { is_charging: true } : {}),
    }));
    const { body, rows } = await postSamples(samples);
    expect(body).toMatchObject({ stored: 100, droppedCount: 0 });
    const stored = rows.map(({ utc, soc, lat, lon, car_model, is_charging, speed }) => ({ utc, soc, lat, lon, car_model, is_charging, speed }));
    expect(stored).toEqual(
      samples.map((sample) => ({
        utc: sample.utc,
        soc: sample.soc,
        lat: sample.lat ?? null,
        lon: sample.lon ?? null,
        car_model: sample.car_model ?? null,
        is_charging: sample.is_charging ? 1 : null,
        speed: null,
      })),
    );
  });

  test("a batch whose first sample has only soc stores the later samples' other fields, text included, value for value", async () => {
    const samples = [
      { utc: UTC, soc: 50 },
      { utc: UTC + 1, soc: 51, speed: 88, is_charging: true, car_model: 'mg:mg4' },
      { utc: UTC + 2, power: -12.5, lat: 41.01, lon: 28.97 },
    ];
    const { body, rows } = await postSamples(samples);
    expect(body).toEqual({ stored: 3, droppedCount: 0, dropped: [] });
    expect(rows.map(({ utc, soc, speed, power, lat, lon, is_charging, car_model }) => ({ utc, soc, speed, power, lat, lon, is_charging, car_model }))).toEqual([
      { utc: UTC, soc: 50, speed: null, power: null, lat: null, lon: null, is_charging: null, car_model: null },
      { utc: UTC + 1, soc: 51, speed: 88, power: null, lat: null, lon: null, is_charging: 1, car_model: 'mg:mg4' },
      { utc: UTC + 2, soc: null, speed: null, power: -12.5, lat: 41.01, lon: 28.97, is_charging: null, car_model: null },
    ]);
  });

  test('a re-sent batch whose copies lie inside a later statement: new samples added, copies rewritten, none doubled', async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    const batch = (utcs: number[], soc: number) => ({ installationId, samples: utcs.map((utc) => ({ utc, soc })) });
    const utcs = Array.from({ length: 100 }, (_, i) => UTC - 100 + i);
    // Rows 70-75 are stored and waiting: rows 0-63 go in one statement; the next, rows 64-95, meets
    // them after inserting six rows, which SQLite undoes; those 32 rows then go one by one.
    expect((await post(batch(utcs.slice(70, 76), 1))).body).toMatchObject({ stored: 6 });
    handOff.changes.length = 0;
    expect((await post(batch(utcs, 2))).body).toMatchObject({ stored: 100 });
    expect(handOff.changes.map(({ added, rewritten }) => ({ utcs: added.map((row) => row[0]), rewritten }))).toEqual([
      { utcs: [...utcs.slice(0, 70), ...utcs.slice(76)], rewritten: true },
    ]);
    expect(rowsOf(installationId).map((row) => [row.utc, row.soc, row.planner_state])).toEqual(utcs.map((utc) => [utc, 2, 1]));
  });

  /** A sample with a usable value of every field. */
  const fullSample = (utc: number) =>
    Object.fromEntries([['utc', utc], ...Object.entries(sampleFields).map(([name, field]) => [name, usableValue(field)])]) as Record<string, number | string>;

  test('a batch of 64 samples with every field, the largest statement, is stored value for value', async () => {
    const samples = Array.from({ length: 64 }, (_, i) => fullSample(UTC - 64 + i));
    const { body, rows } = await postSamples(samples);
    expect(body).toMatchObject({ stored: 64, droppedCount: 0 });
    expect(rows.map((row) => Object.fromEntries(Object.keys(samples[0]!).map((name) => [name, row[name]])))).toEqual(samples);
  });

  /** Fields that may be left out alone (a coordinate without its partner is dropped). */
  const leftOut = Object.keys(sampleFields).filter((name) => name !== 'lat' && name !== 'lon');
  /** 64 samples from `utc` with every field but `name`. */
  const withoutField = (name: string, utc: number) =>
    Array.from({ length: 64 }, (_, i) => {
      const { [name]: _left, ...rest } = fullSample(utc + i);
      return rest;
    });

  /** A fresh database for the writer's operations, its statements watched: their size as the bound counts it (100 + parameters) and their rows. */
  async function watchedDatabase() {
    const path = join(tempDir(), 'ev.db');
    await (await openStorage({ databasePath: path, durability: 'fast' })).close();
    const db = openDatabase(path, 'fast');
    const watched = { db, live: new Map<Statement, number>(), rowsPrepared: [] as number[], finalized: 0, largest: 0 };
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      const statement = prepare(sql);
      watched.live.set(statement, 100 + sql.split('?').length - 1);
      watched.rowsPrepared.push(sql.split('), (').length);
      watched.largest = Math.max(watched.largest, liveSize(watched.live));
      const finalize = statement.finalize.bind(statement);
      statement.finalize = () => {
        watched.live.delete(statement);
        watched.finalized += 1;
        finalize();
      };
      return statement;
    }) as typeof db.prepare;
    return watched;
  }
  const liveSize = (live: Map<Statement, number>) => [...live.values()].reduce((sum, size) => sum + size, 0);

  const store = (db: Database, installation: number, samples: unknown[]) => {
    const { rows } = validateBatch({ installationId: INSTALLATION, samples }, NOW_MS);
    telemetryWrites.storeSamples(db, sampleWrite(installationNumbered(installation), 0, false, rows));
  };

  test('up to 16 samples go in by one statement of their count, more by powers of two', async () => {
    const { db, rowsPrepared } = await watchedDatabase();
    try {
      store(db, 1, Array.from({ length: 5 }, (_, i) => ({ utc: UTC - 40 + i, soc: 50 })));
      store(db, 2, Array.from({ length: 20 }, (_, i) => ({ utc: UTC - 40 + i, soc: 50 })));
      expect(rowsPrepared).toEqual([5, 16, 4]);
      expect(db.query('SELECT count(*) AS n FROM samples').get()).toEqual({ n: 25 });
    } finally {
      db.close(true);
    }
  });

  test('the writer keeps its multi-row inserts within their size bound, finalizing the least recently used', async () => {
    const watched = await watchedDatabase();
    const { db, live } = watched;
    try {
      // One column set is stored again between every new one: it stays in use, so it is never the one finalized.
      const [hot, ...others] = leftOut;
      store(db, 100, withoutField(hot!, UTC - 64));
      const hotStatement = [...live.keys()][0];
      for (const name of others) {
        store(db, 101 + others.indexOf(name), withoutField(hot!, UTC - 64));
        store(db, others.indexOf(name), withoutField(name, UTC - 64));
      }
      expect(watched.finalized).toBeGreaterThan(0);
      expect(live.has(hotStatement!)).toBe(true);
      // The statement just prepared may pass the bound until the oldest make room.
      expect(watched.largest - 100 - 64 * 33).toBeLessThanOrEqual(limits.sampleInsertSize);
      expect(liveSize(live)).toBeLessThanOrEqual(limits.sampleInsertSize);
      expect(db.query('SELECT count(*) AS n FROM samples').get()).toEqual({ n: (2 * others.length + 1) * 64 });
    } finally {
      db.close(true);
    }
  });

  test('batches of more column sets than the writer keeps statements for are all stored, twice over', async () => {
    // Each leaves out one field: 26 sets of 64 rows are more statements than the writer keeps prepared.
    for (const round of [0, 1]) {
      for (const name of leftOut) {
        const samples = withoutField(name, UTC - 64 * (round + 1));
        const { body, rows } = await postSamples(samples);
        expect(body).toMatchObject({ stored: 64, droppedCount: 0 });
        const witness = name === 'soc' ? 'soh' : 'soc'; // both at most 100
        expect(rows.map((row) => [row.utc, row[name], row[witness]])).toEqual(samples.map((sample) => [sample.utc, null, 100]));
      }
    }
  });
});

describe('dropping values', () => {
  const cases: [string, unknown[], string[], number][] = [
    ['a number of the wrong type', [{ utc: UTC, soc: '71', speed: 5 }], ['samples[0].soc: "71" is not a number'], 1],
    ['a value out of range', [{}, {}, {}, {}, { utc: UTC + 4, soc: 140, speed: 5 }].map(fill), ['samples[4].soc: 140 is out of range 0..100'], 5],
    ['an unknown field', [{}, {}, { utc: UTC + 2, foo: 1, speed: 5 }].map(fill), ['samples[2].foo: unknown field'], 3],
    ['a flag other than 0, 1, true or false', [{ utc: UTC, is_charging: 2, speed: 5 }], ['samples[0].is_charging: 2 is not 0, 1, true or false'], 1],
    ['text of the wrong type', [{ utc: UTC, car_model: 5, speed: 5 }], ['samples[0].car_model: 5 is not a string'], 1],
    ['text of the wrong length', [{ utc: UTC, car_model: '', speed: 5 }], ['samples[0].car_model: "" is not 1..100 characters long'], 1],
    ['a lone lat', [{}, {}, {}, { utc: UTC + 3, lat: 41.01, speed: 5 }].map(fill), ['samples[3].lat: unusable without lon'], 4],
    ['a lone lon', [{ utc: UTC, lon: 28.97, speed: 5 }], ['samples[0].lon: unusable without lat'], 1],
    [
      'a lat whose lon is unusable, never quoting either',
      [{ utc: UTC, lat: 41.01, lon: 228.97, speed: 5 }],
      ['samples[0].lat: unusable without lon', 'samples[0].lon: value is out of range -180..180'],
      1,
    ],
    ['a lat of the wrong type, not quoted', [{ utc: UTC, lat: '41.01', lon: 28.97, speed: 5 }], ['samples[0].lat: value is not a number', 'samples[0].lon: unusable without lat'], 1],
    [
      'a location inside another value, its coordinates not quoted',
      [{ utc: UTC, soc: { lat: 41.0123, lon: 28.97, at: 1 }, speed: 5 }],
      ['samples[0].soc: {"lat":…,"lon":…,"at":1} is not a number'],
      1,
    ],
    ['text of 100 characters in 200 UTF-16 units, kept', [{ utc: UTC, car_model: '🚗'.repeat(100), speed: 5 }], [], 1],
    [
      'text of 101 characters, quoted 40 characters long',
      [{ utc: UTC, car_model: '🚗'.repeat(101), speed: 5 }],
      [`samples[0].car_model: "${'🚗'.repeat(40)}"… is not 1..100 characters long`],
      1,
    ],
    ['a string of 41 characters in 82 UTF-16 units, cut', [{ utc: UTC, soc: '🚗'.repeat(41), speed: 5 }], [`samples[0].soc: "${'🚗'.repeat(40)}"… is not a number`], 1],
    [
      'a string of exactly 40 characters, quoted whole; of 41, cut',
      [{ utc: UTC, soc: 'v'.repeat(40), power: 'w'.repeat(41), speed: 5 }],
      [`samples[0].soc: "${'v'.repeat(40)}" is not a number`, `samples[0].power: "${'w'.repeat(40)}"… is not a number`],
      1,
    ],
    [
      'a value whose JSON is exactly 40 characters, quoted whole; of 41, cut',
      [{ utc: UTC, soc: { a: 'x'.repeat(32) }, power: { a: 'y'.repeat(33) }, speed: 5 }],
      [`samples[0].soc: {"a":"${'x'.repeat(32)}"} is not a number`, `samples[0].power: {"a":"${'y'.repeat(33)}"… is not a number`],
      1,
    ],
    [
      'an unknown key of exactly 40 characters, shown as .key; of 41, quoted and cut',
      [{ utc: UTC, ['k'.repeat(40)]: 1, ['m'.repeat(41)]: 1, speed: 5 }],
      [`samples[0].${'k'.repeat(40)}: unknown field`, `samples[0]["${'m'.repeat(40)}"…]: unknown field`],
      1,
    ],
    ['text with a lone surrogate, which would be stored changed', [{ utc: UTC, car_model: '\ud800x', speed: 5 }], ['samples[0].car_model: "\\ud800x" is not well-formed text'], 1],
    ['a sample that is not an object', [{}, {}, {}, {}, {}, {}, {}, 42].map(fill), ['samples[7]: not an object'], 7],
    ['a null or array sample', [null, [UTC]], ['samples[0]: not an object', 'samples[1]: not an object'], 0],
    ['a sample without utc', [{ soc: 50 }], ['samples[0]: utc is missing'], 0],
    ['a utc of null, as absent', [{ utc: null, soc: 50 }], ['samples[0]: utc is missing'], 0],
    ['a utc of the wrong type', [{ utc: String(UTC), soc: 50 }], [`samples[0]: utc "${UTC}" is not an integer`], 0],
    ['a utc that is not whole', [{ utc: UTC + 0.5, soc: 50 }], [`samples[0]: utc ${UTC + 0.5} is not an integer`], 0],
    ['a utc before 2000', [{ utc: 946_684_799, soc: 50 }], ['samples[0]: utc 946684799 is before 2000-01-01'], 0],
    ['a utc in milliseconds', [{ utc: 1_764_080_005_000, soc: 50 }], ['samples[0]: utc 1764080005000 is in the future (milliseconds instead of seconds?)'], 0],
    [
      'a utc in milliseconds of the latest second usable, hinted; one millisecond later, not',
      [{ utc: (NOW_S + 300) * 1000 + 999, soc: 50 }, { utc: (NOW_S + 301) * 1000, soc: 50 }],
      [
        `samples[0]: utc ${(NOW_S + 300) * 1000 + 999} is in the future (milliseconds instead of seconds?)`,
        `samples[1]: utc ${(NOW_S + 301) * 1000} is in the future`,
      ],
      0,
    ],
    [
      'a utc in milliseconds of 2000-01-01T00:00:00Z, hinted; one millisecond earlier, not',
      [{ utc: 946_684_800_000, soc: 50 }, { utc: 946_684_799_999, soc: 50 }],
      ['samples[0]: utc 946684800000 is in the future (milliseconds instead of seconds?)', 'samples[1]: utc 946684799999 is in the future'],
      0,
    ],
    ['a utc far in the future, not milliseconds', [{ utc: 99_999_999_999, soc: 50 }], ['samples[0]: utc 99999999999 is in the future'], 0],
    ['a sample with nothing usable', [{}, {}, {}, {}, {}, { utc: UTC + 5 }].map(fill), ['samples[5]: no usable values'], 5],
    ['a sample whose only values are unusable', [{ utc: UTC, soc: -1, bar: 2 }], ['samples[0].soc: -1 is out of range 0..100', 'samples[0].bar: unknown field', 'samples[0]: no usable values'], 0],
    [
      'long keys and values, quoted at most 40 characters',
      [{ utc: UTC, ['k'.repeat(50)]: 1, 'a b': 1, car_model: 'c'.repeat(101), soc: { a: 'x'.repeat(60) }, speed: 5 }],
      [
        `samples[0]["${'k'.repeat(40)}"…]: unknown field`,
        'samples[0]["a b"]: unknown field',
        `samples[0].car_model: "${'c'.repeat(40)}"… is not 1..100 characters long`,
        `samples[0].soc: {"a":"${'x'.repeat(34)}… is not a number`,
      ],
      1,
    ],
  ];

  test.each(cases)('%s', async (_name, samples, dropped, stored) => {
    const result = await postSamples(samples);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ stored, droppedCount: dropped.length, dropped });
    expect(result.rows.length).toBe(stored);
  });

  test('a number past the range of a double (1e400) is quoted as the Infinity it parses to, never as null', async () => {
    const samples = [`{"utc":${UTC},"soc":1e400,"power":[-1e400],"speed":5}`, '{"utc":1e400,"soc":1}'];
    expect(await post(`{"installationId":"${freshInstallation()}","samples":[${samples.join(',')}]}`)).toEqual({
      status: 200,
      body: {
        stored: 1,
        droppedCount: 3,
        dropped: ['samples[0].soc: Infinity is out of range 0..100', 'samples[0].power: [-Infinity] is not a number', 'samples[1]: utc Infinity is not an integer'],
      },
    });
  });

  test('a value nested 60,000 deep is dropped and quoted by its first 40 characters', async () => {
    // Such values parse, but JSON.stringify takes over a second on them and then throws: quoting must not need it.
    const deep = (open: string, inner: string, close: string) => `${open.repeat(60_000)}${inner}${close.repeat(60_000)}`;
    const arrays = freshInstallation();
    const samples = [`{"utc":${UTC},"soc":${deep('[', '', ']')},"speed":5}`, `{"utc":${deep('[', '', ']')}}`];
    expect(await post(`{"installationId":"${arrays}","samples":[${samples.join(',')}]}`)).toEqual({
      status: 200,
      body: {
        stored: 1,
        droppedCount: 2,
        dropped: [`samples[0].soc: ${'['.repeat(40)}… is not a number`, `samples[1]: utc ${'['.repeat(40)}… is not an integer`],
      },
    });
    const objects = freshInstallation();
    const sample = `{"utc":${UTC},"power":${deep('{"":', '1', '}')},"speed":6}`;
    expect(await post(`{"installationId":"${objects}","samples":[${sample}]}`)).toEqual({
      status: 200,
      body: { stored: 1, droppedCount: 1, dropped: [`samples[0].power: ${'{"":'.repeat(10)}… is not a number`] },
    });
    expect(rowsOf(arrays).map((row) => [row.utc, row.speed])).toEqual([[UTC, 5]]);
    expect(rowsOf(objects).map((row) => [row.utc, row.speed])).toEqual([[UTC, 6]]);
  });

  test('text of 1 character (the shortest the contract allows) is stored, not dropped', async () => {
    const result = await postSamples([{ utc: UTC, car_model: 'X' }]);
    expect(result.body).toEqual({ stored: 1, droppedCount: 0, dropped: [] });
    expect(result.rows.map((row) => [row.utc, row.car_model])).toEqual([[UTC, 'X']]);
  });

  test('a dropped value leaves the rest of its sample stored', async () => {
    const result = await postSamples([{ utc: UTC, soc: 140, speed: 5, lat: 41.01 }]);
    expect(result.rows).toEqual([expect.objectContaining({ utc: UTC, soc: null, speed: 5, lat: null })]);
  });

  test('a later sample with the same utc wins; the earlier one is one more drop', async () => {
    const result = await postSamples([
      { utc: UTC, soc: 1 },
      { utc: UTC + 1, soc: 2, foo: 1 },
      { utc: UTC + 2, soc: 3 },
      { utc: UTC + 1, soc: 4 },
    ]);
    expect(result.body).toEqual({
      stored: 3,
      droppedCount: 2,
      dropped: ['samples[1].foo: unknown field', 'samples[1]: a later sample has the same utc'],
    });
    expect(result.rows.map((row) => [row.utc, row.soc])).toEqual([
      [UTC, 1],
      [UTC + 1, 4],
      [UTC + 2, 3],
    ]);
  });

  test('a later sample with the same utc but nothing usable does not replace the earlier one', async () => {
    const result = await postSamples([{ utc: UTC, soc: 1 }, { utc: UTC, soc: 500 }]);
    expect(result.body).toEqual({
      stored: 1,
      droppedCount: 2,
      dropped: ['samples[1].soc: 500 is out of range 0..100', 'samples[1]: no usable values'],
    });
    expect(result.rows.map((row) => row.soc)).toEqual([1]);
  });

  test('25 drops are counted and the first 20 listed, in order', async () => {
    const samples = Array.from({ length: 25 }, (_, index) => ({ utc: UTC + index, soc: 200 + index, speed: 1 }));
    const result = await postSamples(samples);
    expect(result.body).toEqual({
      stored: 25,
      droppedCount: 25,
      dropped: Array.from({ length: 20 }, (_, index) => `samples[${index}].soc: ${200 + index} is out of range 0..100`),
    });
  });

  test('utc is usable up to 300 s ahead of the server clock, not one second more', async () => {
    const result = await postSamples([
      { utc: NOW_S + 300, soc: 1 },
      { utc: NOW_S + 301, soc: 2 },
    ]);
    expect(result.body).toEqual({ stored: 1, droppedCount: 1, dropped: [`samples[1]: utc ${NOW_S + 301} is in the future`] });
    expect(result.rows.map((row) => row.utc)).toEqual([NOW_S + 300]);
  });

  test('utc is usable from 2000-01-01T00:00:00Z', async () => {
    const result = await postSamples([{ utc: 946_684_800, soc: 1 }]);
    expect(result.body).toEqual({ stored: 1, droppedCount: 0, dropped: [] });
  });

  test('one log line with the installation, the count and the first 20 descriptions, no location', async () => {
    const samples = [{ utc: UTC, lat: 41.0123, soc: 140 }, ...Array.from({ length: 24 }, () => 'x')];
    const { installationId } = await postSamples(samples);
    const lines = service.log.lines.filter((line) => line.includes('telemetry.dropped') && line.includes(installationId));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('count=27');
    expect(lines[0]).toContain('samples[0].lat: unusable without lon');
    expect(lines[0]).toContain('samples[17]: not an object');
    expect(lines[0]).not.toContain('samples[18]');
    expect(lines[0]).not.toContain('41.0123');
  });

  test('an unknown field is counted in the log, never named: its key may be a secret', async () => {
    const key = 'sk-live-0123456789abcdef';
    const { body, installationId } = await postSamples([{ utc: UTC, soc: 1, [key]: 1, [`${key}-2`]: 2, speed: 'fast' }]);
    expect(body).toMatchObject({ stored: 1, droppedCount: 3 });
    const lines = service.log.lines.filter((line) => line.includes('telemetry.dropped') && line.includes(installationId));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('count=3');
    expect(lines[0]).toContain('unknownFields=2');
    expect(lines[0]).toContain('samples[0].speed');
    expect(service.log.lines.join('\n')).not.toContain(key);
  });

  test('nothing is logged when nothing was dropped', async () => {
    const { installationId } = await postSamples([{ utc: UTC, soc: 1 }]);
    expect(service.log.lines.filter((line) => line.includes(installationId))).toEqual([]);
  });
});

describe('refusing a batch', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['installationId missing', { installationId: undefined, samples: [] }, 'installationId is required'],
    ['installationId null', { installationId: null, samples: [] }, 'installationId is required'],
    ['installationId not a UUID', { installationId: 'car-1', samples: [] }, 'installationId must be a UUID'],
    ['installationId a number', { installationId: 5, samples: [] }, 'installationId must be a UUID'],
    ['samples missing', {}, 'samples is required'],
    ['samples null', { samples: null }, 'samples is required'],
    ['samples an object', { samples: { 0: { utc: UTC, soc: 1 } } }, 'samples must be an array'],
    ['plannerSentUtc negative', { samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: -1 }, 'plannerSentUtc must be a non-negative integer'],
    ['plannerSentUtc not whole', { samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: 1.5 }, 'plannerSentUtc must be a non-negative integer'],
    ['plannerSentUtc a string', { samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: '5' }, 'plannerSentUtc must be a non-negative integer'],
    ['plannerSentUtc beyond 64 bits', { samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: 2 ** 64 }, 'plannerSentUtc must be at most 2^63 (a 64-bit integer)'],
  ];

  test.each(cases)('%s is 400 naming the field, nothing stored', async (_name, fields, error) => {
    const installationId = freshInstallation();
    const body = { installationId, ...fields };
    expect(await post(body)).toEqual({ status: 400, body: { error } });
    expect(countSamples(service, installationId)).toBe(0);
  });

  test("plannerSentUtc up to a 64-bit integer's largest (a Kotlin Long.MAX_VALUE, 'all sent') is accepted", async () => {
    const installationId = freshInstallation();
    const text = `{"installationId":"${installationId}","plannerSentUtc":9223372036854775807,"samples":[{"utc":${UTC},"soc":1}]}`;
    const response = await service.request('POST', '/v1/telemetry', { body: text, headers: { 'content-type': 'application/json' } });
    expect([response.status, countSamples(service, installationId)]).toEqual([200, 1]);
  });

  test('plannerSentUtc null is absent', async () => {
    const installationId = freshInstallation();
    expect((await post({ installationId, samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: null })).status).toBe(200);
  });

  test('a body that is not JSON, or not an object, is 400', async () => {
    expect(await post('{"installationId":')).toEqual({ status: 400, body: { error: 'body is not valid JSON' } });
    expect(await post([{ installationId: INSTALLATION, samples: [] }])).toEqual({
      status: 400,
      body: { error: 'body must be a JSON object' },
    });
  });

  test('no token is 401, nothing stored', async () => {
    const installationId = freshInstallation();
    expect(await post({ installationId, samples: [{ utc: UTC, soc: 1 }] }, null)).toEqual({
      status: 401,
      body: { error: 'unauthorized' },
    });
    expect(countSamples(service, installationId)).toBe(0);
  });

  test("a paired car's token for another installation is 403, nothing stored; its own is accepted", async () => {
    const { token } = await service.devices.pair(INSTALLATION, null);
    const samples = [{ utc: UTC, soc: 1 }];
    expect(await post({ installationId: OTHER_INSTALLATION, samples }, token)).toEqual({
      status: 403,
      body: { error: 'token belongs to another installation; pair this car again after its installation id changed' },
    });
    expect(countSamples(service, OTHER_INSTALLATION)).toBe(0);
    const own = await post({ installationId: INSTALLATION.toUpperCase(), samples }, token);
    expect(own).toEqual({ status: 200, body: { stored: 1, droppedCount: 0, dropped: [] } });
    expect(countSamples(service, INSTALLATION)).toBe(1);
  });
});

describe('hand-off to the planner forwarder', () => {
  test('only installations with stored samples for the planner are handed off, after the commit', async () => {
    handOff.stored.length = 0;
    const usable = freshInstallation();
    const unusable = freshInstallation();
    const empty = freshInstallation();
    const alreadySent = freshInstallation();
    const notForwarded = freshInstallation();
    handOff.forwarded.push(usable, unusable, empty, alreadySent);
    await post({ installationId: unusable, samples: [{ utc: UTC, soc: 500 }, 7] });
    await post({ installationId: empty, samples: [] });
    await post({ installationId: alreadySent, plannerSentUtc: UTC, samples: [{ utc: UTC, soc: 5 }] });
    await post({ installationId: notForwarded, samples: [{ utc: UTC, soc: 5 }] });
    await post({ installationId: usable.toUpperCase(), samples: [{ utc: UTC, soc: 5 }, { soc: 1 }] });
    expect(handOff.stored).toEqual([usable]);
  });

  test('a waiting sample sent again after the car gave it to the planner itself stops waiting', async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    const samples = [{ utc: UTC, soc: 70 }, { utc: UTC + 1, soc: 71 }, { utc: UTC + 2, soc: 72 }];
    await post({ installationId, samples });
    await post({ installationId, plannerSentUtc: UTC + 1, samples });
    expect(rowsOf(installationId).map((row) => [row.utc, row.planner_state])).toEqual([
      [UTC, 0],
      [UTC + 1, 0],
      [UTC + 2, 1],
    ]);
  });

  test("a waiting sample at exactly a later batch's plannerSentUtc stops waiting, though the batch does not repeat it", async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    await post({ installationId, samples: [{ utc: UTC, soc: 70 }, { utc: UTC + 1, soc: 71 }] });
    handOff.changes.length = 0;
    await post({ installationId, plannerSentUtc: UTC + 1, samples: [{ utc: UTC + 2, soc: 72 }] });
    expect(rowsOf(installationId).map((row) => [row.utc, row.planner_state])).toEqual([
      [UTC, 1], // older: the car has not said the planner has it
      [UTC + 1, 0],
      [UTC + 2, 1],
    ]);
    expect(handOff.changes.map(({ added, rewritten }) => ({ utcs: added.map((row) => row[0]), rewritten }))).toEqual([
      { utcs: [UTC + 2], rewritten: true },
    ]);
  });

  test('the hand-off carries the samples the batch made pending, oldest first, or says it rewrote waiting ones', async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    const handedOff = async (body: Record<string, unknown>) => {
      handOff.changes.length = 0;
      expect((await post({ installationId, ...body })).status).toBe(200);
      return handOff.changes.map(({ added, rewritten }) => ({ utcs: added.map((row) => row[0]), rewritten }));
    };
    const samples = [{ utc: UTC + 2, soc: 72 }, { utc: UTC, soc: 70 }, { utc: UTC + 1, soc: 71 }];
    expect(await handedOff({ samples })).toEqual([{ utcs: [UTC, UTC + 1, UTC + 2], rewritten: false }]);
    expect(handOff.changes[0]!.added[0]!.slice(0, 2)).toEqual([UTC, 70]); // utc, then the field table's columns
    // Still waiting (nothing sends them here): sent again, perhaps with new values, they are rewritten.
    expect(await handedOff({ samples: [...samples, { utc: UTC + 3, soc: 73 }] })).toEqual([{ utcs: [UTC + 3], rewritten: true }]);
    expect(await handedOff({ plannerSentUtc: UTC + 3, samples })).toEqual([{ utcs: [], rewritten: true }]);
    // No longer waiting: a copy changes nothing, and nothing is handed off, whatever its plannerSentUtc.
    expect(await handedOff({ samples })).toEqual([]);
    expect(await handedOff({ plannerSentUtc: UTC + 3, samples })).toEqual([]);
  });

  test('of two copies committed in one group, the first makes the samples pending and the second nothing', async () => {
    // fast: under FULL a burst may go as two groups that take turns (test/durability/committer.test.ts).
    const fast = await startTestService({ durability: 'fast' }, { now: () => NOW_MS });
    try {
      const installationId = freshInstallation();
      const rows = validateBatch({ installationId, samples: [{ utc: UTC, soc: 1 }, { utc: UTC + 1, soc: 2 }] }, NOW_MS).rows;
      const write = () => fast.storage.committer.write('storeSamples', sampleWrite(installationId, 0, true, rows));
      const outcomes = await Promise.all([write(), write()]); // handed in during one tick: one group
      expect(fast.storage.committer.stats).toEqual({ groups: 1, writes: 2, syncs: 0 });
      expect(outcomes).toEqual([
        { added: [0, 1], rewritten: false },
        { added: [], rewritten: true }, // the copy finds them waiting
      ]);
      const states = fast.storage.db.query<{ planner_state: number }, []>('SELECT planner_state FROM samples ORDER BY utc').all();
      expect(states.map((row) => row.planner_state)).toEqual([1, 1]);
    } finally {
      await fast.close();
    }
  });

  test("a batch's first sample is handed off even when the write before it, in another table, left the same rowid", async () => {
    // A fresh database: the consumption write leaves last_insert_rowid at 1, the first sample's rowid is 1 too.
    const recorder = recordingForwarder([INSTALLATION]);
    const fresh = await startTestService({}, { now: () => NOW_MS, forwarder: recorder.forwarder });
    try {
      expect((await fresh.request('PUT', '/v1/consumption/daily', { body: consumptionChunk() })).status).toBe(204);
      const batch = { installationId: INSTALLATION, samples: [{ utc: UTC, soc: 50 }] };
      expect((await fresh.request('POST', '/v1/telemetry', { body: batch })).status).toBe(200);
      expect(recorder.changes.map(({ added }) => added.map((row) => row[0]))).toEqual([[UTC]]);
    } finally {
      await fresh.close();
    }
  });

  test('not handed off when validation, ownership or the write fails', async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    handOff.stored.length = 0;
    const samples = [{ utc: UTC, soc: 5 }];
    expect((await post({ installationId: 'nope', samples })).status).toBe(400);
    const { token } = await service.devices.pair(OTHER_INSTALLATION, null);
    expect((await post({ installationId, samples }, token)).status).toBe(403);

    const { committer } = service.storage;
    const write = committer.write;
    committer.write = (() => Promise.reject(new Error('disk I/O error'))) as typeof committer.write;
    try {
      expect(await post({ installationId, samples })).toEqual({ status: 500, body: { error: 'internal server error' } });
    } finally {
      committer.write = write;
    }
    expect(handOff.stored).toEqual([]);
    expect(countSamples(service, installationId)).toBe(0);
  });

  const stateCases: [string, boolean, number | undefined, number[]][] = [
    ['forwarding off: nothing pending', false, UTC + 1, [0, 0, 0]],
    ['forwarding on, plannerSentUtc absent: all pending', true, undefined, [1, 1, 1]],
    ['forwarding on, plannerSentUtc 0: all pending', true, 0, [1, 1, 1]],
    ['forwarding on: only samples after plannerSentUtc pending', true, UTC + 1, [0, 0, 1]],
  ];

  test.each(stateCases)('%s', async (_name, forward, plannerSentUtc, states) => {
    const installationId = freshInstallation();
    if (forward) handOff.forwarded.push(installationId);
    const samples = [0, 1, 2].map((offset) => ({ utc: UTC + offset, soc: 50 }));
    expect((await post({ installationId, plannerSentUtc, samples })).status).toBe(200);
    expect(rowsOf(installationId).map((row) => row.planner_state)).toEqual(states);
  });
});

describe('the validator alone, with a fixed clock', () => {
  test('the future limit follows the clock it is given', () => {
    const body = { installationId: INSTALLATION, samples: [{ utc: NOW_S + 300, soc: 1 }] };
    expect(validateBatch(body, NOW_MS).rows).toHaveLength(1);
    expect(validateBatch(body, NOW_MS - 1000).dropped).toEqual([`samples[0]: utc ${NOW_S + 300} is in the future`]);
  });

  test('rows hold utc then the fields in table order, flags as 0/1', () => {
    const { rows } = validateBatch({ installationId: INSTALLATION, samples: [{ is_charging: false, utc: UTC, soc: 3 }] }, NOW_MS);
    expect(rows[0]!.slice(0, 2)).toEqual([UTC, 3]);
    expect(rows[0]![9]).toBe(0); // is_charging: after soc, soh, power, speed, lat, lon, elevation, heading
  });
});

/** Gives an empty placeholder a usable sample of its own, so only the case's sample drops something. */
function fill(sample: unknown, index: number): unknown {
  if (typeof sample !== 'object' || sample === null) return sample;
  return Object.keys(sample).length === 0 ? { utc: UTC + index, speed: 1 } : sample;
}

describe('the usable range of every number field (the contract table, written out here on purpose)', () => {
  const ranges: [string, number, number][] = [
    ['soc', 0, 100], ['soh', 0, 100], ['power', -1000, 1000], ['speed', 0, 500], ['elevation', -500, 9000],
    ['heading', 0, 360], ['capacity', 0, 1000], ['soe', 0, 1000], ['kwh_charged', 0, 1000],
    ['ext_temp', -60, 100], ['batt_temp', -60, 100], ['cabin_temp', -60, 100], ['hvac_power', 0, 100],
    ['hvac_setpoint', 0, 50], ['voltage', 0, 2000], ['current', -3000, 3000], ['odometer', 0, 10_000_000],
    ['est_battery_range', 0, 5000], ['tire_pressure_fl', 0, 1000], ['tire_pressure_fr', 0, 1000],
    ['tire_pressure_rl', 0, 1000], ['tire_pressure_rr', 0, 1000],
  ];
  test.each(ranges)('%s: %d and %d are stored, one past either end is dropped', async (field, min, max) => {
    const other = field === 'speed' ? 'soc' : 'speed'; // keeps each sample usable without the field
    const result = await postSamples([
      { utc: UTC, [other]: 1, [field]: min },
      { utc: UTC + 1, [other]: 1, [field]: max },
      { utc: UTC + 2, [other]: 1, [field]: min - 1 },
      { utc: UTC + 3, [other]: 1, [field]: max + 1 },
    ]);
    expect(result.body).toEqual({
      stored: 4,
      droppedCount: 2,
      dropped: [
        `samples[2].${field}: ${min - 1} is out of range ${min}..${max}`,
        `samples[3].${field}: ${max + 1} is out of range ${min}..${max}`,
      ],
    });
    expect(result.rows.map((row) => row[field])).toEqual([min, max, null, null]);
  });

  test.each(['is_charging', 'is_dcfc', 'is_parked'])('%s takes 0, 1, true and false, stored as 0/1', async (flag) => {
    const result = await postSamples([true, false, 1, 0].map((value, i) => ({ utc: UTC + i, speed: 1, [flag]: value })));
    expect(result.body).toEqual({ stored: 4, droppedCount: 0, dropped: [] });
    expect(result.rows.map((row) => row[flag])).toEqual([1, 0, 1, 0]);
  });
});
