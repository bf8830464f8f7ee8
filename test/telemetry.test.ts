/** POST /v1/telemetry: storing batches and refusing bad ones. */
import type { Database, Statement } from 'bun:sqlite';
import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { openDatabase } from '../src/db/open.ts';
import { openStorage } from '../src/db/storage.ts';
import { limits } from '../src/limits.ts';
import { sampleFields } from '../src/telemetry/fields.ts';
import { validateBatch } from '../src/telemetry/model.ts';
import { sampleWrite, telemetryWrites } from '../src/telemetry/store.ts';
import { countSamples, INSTALLATION, installationNumbered, OTHER_INSTALLATION, tempDir } from './support.ts';
import {
  NOW_MS,
  UTC,
  service,
  handOff,
  useTelemetryService,
  freshInstallation,
  post,
  rowsOf,
  usableValue,
  postSamples,
} from './telemetry-support.ts';

useTelemetryService();

describe('storing', () => {
  test('a usable sample is stored in typed columns, the installation id lower-cased', async () => {
    const installationId = freshInstallation().toUpperCase().replace('0000-4000', 'ABCD-4000');
    const result = await post({
      installationId,
      samples: [
        {
          utc: UTC,
          soc: 71.5,
          power: -12.3,
          lat: 41.01,
          lon: 28.97,
          is_charging: true,
          is_parked: 0,
          car_model: 'mg:mg4',
        },
      ],
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
        `SELECT typeof(utc) AS utc, typeof(soc) AS soc, typeof(is_charging) AS flag, typeof(car_model) AS text,
           typeof(speed) AS absent
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
    const first = {
      installationId,
      samples: [
        { utc: UTC, soc: 70, speed: 10 },
        { utc: UTC + 1, soc: 71, speed: 11 },
      ],
    };
    expect((await post(first)).body).toMatchObject({ stored: 2 });
    // Sent again with forwarding off and other values: still two rows, values replaced, still pending.
    handOff.forwarded.pop();
    const again = {
      installationId,
      samples: [
        { utc: UTC, soc: 50 },
        { utc: UTC + 1, soc: 51, speed: 99 },
      ],
    };
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
    const stored = rows.map(({ utc, soc, lat, lon, car_model, is_charging, speed }) => ({
      utc,
      soc,
      lat,
      lon,
      car_model,
      is_charging,
      speed,
    }));
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

  test("a batch whose first sample has only soc stores later samples' other fields exactly, text too", async () => {
    const samples = [
      { utc: UTC, soc: 50 },
      { utc: UTC + 1, soc: 51, speed: 88, is_charging: true, car_model: 'mg:mg4' },
      { utc: UTC + 2, power: -12.5, lat: 41.01, lon: 28.97 },
    ];
    const { body, rows } = await postSamples(samples);
    expect(body).toEqual({ stored: 3, droppedCount: 0, dropped: [] });
    expect(
      rows.map(({ utc, soc, speed, power, lat, lon, is_charging, car_model }) => ({
        utc,
        soc,
        speed,
        power,
        lat,
        lon,
        is_charging,
        car_model,
      })),
    ).toEqual([
      { utc: UTC, soc: 50, speed: null, power: null, lat: null, lon: null, is_charging: null, car_model: null },
      { utc: UTC + 1, soc: 51, speed: 88, power: null, lat: null, lon: null, is_charging: 1, car_model: 'mg:mg4' },
      {
        utc: UTC + 2,
        soc: null,
        speed: null,
        power: -12.5,
        lat: 41.01,
        lon: 28.97,
        is_charging: null,
        car_model: null,
      },
    ]);
  });

  test('re-sent copies inside a later statement: new samples added, copies rewritten, none twice', async () => {
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
    expect(rowsOf(installationId).map((row) => [row.utc, row.soc, row.planner_state])).toEqual(
      utcs.map((utc) => [utc, 2, 1]),
    );
  });

  /** A sample with a usable value of every field. */
  const fullSample = (utc: number) =>
    Object.fromEntries([
      ['utc', utc],
      ...Object.entries(sampleFields).map(([name, field]) => [name, usableValue(field)]),
    ]) as Record<string, number | string>;

  test('a batch of 64 samples with every field, the largest statement, is stored value for value', async () => {
    const samples = Array.from({ length: 64 }, (_, i) => fullSample(UTC - 64 + i));
    const { body, rows } = await postSamples(samples);
    expect(body).toMatchObject({ stored: 64, droppedCount: 0 });
    expect(rows.map((row) => Object.fromEntries(Object.keys(samples[0]!).map((name) => [name, row[name]])))).toEqual(
      samples,
    );
  });

  /** Fields that may be left out alone (a coordinate without its partner is dropped). */
  const leftOut = Object.keys(sampleFields).filter((name) => name !== 'lat' && name !== 'lon');
  /** 64 samples from `utc` with every field but `name`. */
  const withoutField = (name: string, utc: number) =>
    Array.from({ length: 64 }, (_, i) => {
      const { [name]: _left, ...rest } = fullSample(utc + i);
      return rest;
    });

  /**
   * A fresh database for the writer's operations, its statements watched: their size as the bound counts
   * it (100 + parameters) and their rows.
   */
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
      store(
        db,
        1,
        Array.from({ length: 5 }, (_, i) => ({ utc: UTC - 40 + i, soc: 50 })),
      );
      store(
        db,
        2,
        Array.from({ length: 20 }, (_, i) => ({ utc: UTC - 40 + i, soc: 50 })),
      );
      expect(rowsPrepared).toEqual([5, 16, 4]);
      expect(db.query('SELECT count(*) AS n FROM samples').get()).toEqual({ n: 25 });
    } finally {
      db.close(true);
    }
  });

  test('the writer keeps its multi-row inserts within their size bound, finalizing the least recent', async () => {
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
        expect(rows.map((row) => [row.utc, row[name], row[witness]])).toEqual(
          samples.map((sample) => [sample.utc, null, 100]),
        );
      }
    }
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
    [
      'plannerSentUtc negative',
      { samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: -1 },
      'plannerSentUtc must be a non-negative integer',
    ],
    [
      'plannerSentUtc not whole',
      { samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: 1.5 },
      'plannerSentUtc must be a non-negative integer',
    ],
    [
      'plannerSentUtc a string',
      { samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: '5' },
      'plannerSentUtc must be a non-negative integer',
    ],
    [
      'plannerSentUtc beyond 64 bits',
      { samples: [{ utc: UTC, soc: 1 }], plannerSentUtc: 2 ** 64 },
      'plannerSentUtc must be at most 2^63 (a 64-bit integer)',
    ],
  ];

  test.each(cases)('%s is 400 naming the field, nothing stored', async (_name, fields, error) => {
    const installationId = freshInstallation();
    const body = { installationId, ...fields };
    expect(await post(body)).toEqual({ status: 400, body: { error } });
    expect(countSamples(service, installationId)).toBe(0);
  });

  test("plannerSentUtc up to the largest 64-bit integer (Kotlin Long.MAX_VALUE, 'all sent') is accepted", async () => {
    const installationId = freshInstallation();
    const text =
      `{"installationId":"${installationId}","plannerSentUtc":9223372036854775807,` +
      `"samples":[{"utc":${UTC},"soc":1}]}`;
    const response = await service.request('POST', '/v1/telemetry', {
      body: text,
      headers: { 'content-type': 'application/json' },
    });
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
