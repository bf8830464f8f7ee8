/**
 * The owner's /v1 reads: tokens, exact answers, order, cursors, ranges, empty cases, bad parameters,
 * and the exports read back by real parsers.
 */
import { afterAll, beforeEach, describe, expect, test } from 'bun:test';
import { gpx as gpxToGeoJson } from '@tmcw/togeojson';
import { DOMParser } from '@xmldom/xmldom';
import { parse as parseCsv } from 'csv-parse/sync';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sampleFieldNames, sampleFields } from '../src/telemetry/fields.ts';
import { NOTHING_FORWARDED, putDays } from './owner-support.ts';
import { answer, INSTALLATION, OTHER_INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService;
const RECEIVED = 1_764_100_000_000;
beforeEach(async () => {
  await service?.close();
  service = await startTestService({}, { now: () => RECEIVED });
});
afterAll(() => service.close());

const UTC = 1_764_090_000;
const STARTED = 1_764_000_000_000;

async function postSamples(samples: Record<string, unknown>[], installationId = INSTALLATION) {
  expect((await service.request('POST', '/v1/telemetry', { body: { installationId, samples } })).status).toBe(200);
}

async function putSession(sessionId: string, startedAt: number, installationId = INSTALLATION) {
  const body = {
    installationId,
    startedAt,
    endedAt: startedAt + 60_000,
    energyKwh: 10,
    curve: [{ timestampMs: startedAt, powerKw: 11.5 }],
  };
  expect((await service.request('PUT', `/v1/charging-sessions/${sessionId}`, { body })).status).toBe(204);
}

const get = (path: string, token?: string | null) => service.request('GET', path, { token });

/** A session as the list answers it: the stored fields, absent ones null. */
const listed = (sessionId: string, startedAt: number, installationId = INSTALLATION) => ({
  installationId,
  sessionId,
  startedAt,
  endedAt: startedAt + 60_000,
  energyKwh: 10,
  durationSeconds: null,
  meteredSeconds: null,
  chargingLossPercent: null,
  gridEnergyKwh: null,
  pricePerKwh: null,
  totalCost: null,
  startSocPercent: null,
  endSocPercent: null,
  lastPower: null,
  curveIntervalMs: null,
  isDemo: null,
  receivedAt: new Date(RECEIVED).toISOString(),
});

/** Every read route, for the token rules. */
const READS = [
  `/v1/charging-sessions?installationId=${INSTALLATION}`,
  `/v1/charging-sessions?installationId=${INSTALLATION}&format=csv`,
  `/v1/charging-sessions/s1?installationId=${INSTALLATION}`,
  `/v1/telemetry/latest/${INSTALLATION}`,
  `/v1/telemetry/export/${INSTALLATION}`,
  `/v1/consumption/export/${INSTALLATION}`,
  `/v1/planner/status/${INSTALLATION}`,
];

describe('tokens', () => {
  test('401 without a valid token (before parameters); a car reads its own installation, 403 another', async () => {
    await putSession('s1', STARTED);
    await postSamples([{ utc: UTC, soc: 1 }]);
    const own = (await service.devices.pair(INSTALLATION, 'car')).token;
    const other = (await service.devices.pair(OTHER_INSTALLATION, 'other car')).token;
    for (const path of READS) {
      expect(await answer(await get(path, null))).toEqual({ status: 401, body: { error: 'unauthorized' } });
      expect((await get(path.replace(INSTALLATION, 'nope'), 'wrong-token')).status).toBe(401);
      expect((await get(path, own)).status).toBe(200);
      expect((await get(path)).status).toBe(200);
      const refused = await answer(await get(path, other));
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({
        error: 'token belongs to another installation; pair this car again after its installation id changed',
      });
    }
  });

  test('answers are never cached; a bad parameter is a 400 naming it, even for another installation', async () => {
    await putSession('s1', STARTED);
    await postSamples([{ utc: UTC, soc: 1 }]);
    const other = (await service.devices.pair(OTHER_INSTALLATION, null)).token;
    for (const path of READS) expect((await get(path)).headers.get('cache-control')).toBe('no-store');
    expect(await answer(await get(`/v1/telemetry/export/${INSTALLATION}?format=kml`, other))).toEqual({
      status: 400,
      body: { error: 'format must be one of csv, ndjson, gpx' },
    });
  });
});

describe('GET /v1/charging-sessions', () => {
  test('newest startedAt first, in pages linked by next (null on the last), without curve', async () => {
    for (let i = 0; i < 5; i++) await putSession(`s${i}`, STARTED + i * 1000);
    await putSession('same-start', STARTED + 2000); // a tie goes by session id, descending: the order stays total
    await putSession('o', STARTED, OTHER_INSTALLATION);
    const pages: unknown[] = [];
    let path = `/v1/charging-sessions?installationId=${INSTALLATION}&limit=2`;
    for (let i = 0; i < 10; i++) {
      const { status, body } = await answer(await get(path));
      expect(status).toBe(200);
      const page = body as { sessions: { sessionId: string }[]; next: string | null };
      pages.push(page.sessions.map((s) => s.sessionId));
      if (page.next === null) break;
      path = `/v1/charging-sessions?installationId=${INSTALLATION}&limit=2&before=${encodeURIComponent(page.next)}`;
    }
    expect(pages).toEqual([
      ['s4', 's3'],
      ['same-start', 's2'],
      ['s1', 's0'],
    ]);
    expect(await answer(await get(`/v1/charging-sessions?installationId=${INSTALLATION}&limit=1`))).toEqual({
      status: 200,
      body: { sessions: [listed('s4', STARTED + 4000)], next: expect.any(String) },
    });
  });

  test('from ≤ startedAt ≤ to; empty when nothing matches; 100 by default', async () => {
    for (let i = 0; i < 4; i++) await putSession(`s${i}`, STARTED + i * 1000);
    const ids = async (query: string) =>
      (
        (await (await get(`/v1/charging-sessions?installationId=${INSTALLATION}${query}`)).json()) as {
          sessions: { sessionId: string }[];
        }
      ).sessions.map((s) => s.sessionId);
    expect(await ids(`&from=${STARTED + 1000}&to=${STARTED + 2000}`)).toEqual(['s2', 's1']);
    expect(await ids(`&from=${STARTED + 3000}`)).toEqual(['s3']);
    expect(await ids(`&to=${STARTED}`)).toEqual(['s0']);
    expect(await answer(await get(`/v1/charging-sessions?installationId=${OTHER_INSTALLATION}`))).toEqual({
      status: 200,
      body: { sessions: [], next: null },
    });
    for (let i = 4; i < 101; i++) await putSession(`t${i}`, STARTED + i * 1000);
    const { sessions, next } = (await (await get(`/v1/charging-sessions?installationId=${INSTALLATION}`)).json()) as {
      sessions: unknown[];
      next: string;
    };
    expect([sessions.length, typeof next]).toEqual([100, 'string']);
  });

  test('bad parameters: a 400 naming each', async () => {
    const cases: [string, string][] = [
      ['', 'installationId is required'],
      ['?installationId=x', 'installationId must be a UUID'],
      [`?installationId=${INSTALLATION}&limit=0`, 'limit must be from 1 to 1000'],
      [`?installationId=${INSTALLATION}&limit=1001`, 'limit must be from 1 to 1000'],
      [`?installationId=${INSTALLATION}&limit=ten`, 'limit must be an integer'],
      [`?installationId=${INSTALLATION}&from=1.5`, 'from must be an integer'],
      [`?installationId=${INSTALLATION}&to=`, 'to must be an integer'],
      [`?installationId=${INSTALLATION}&from=${STARTED}&to=${STARTED - 1}`, 'to must not be before from'],
      [`?installationId=${INSTALLATION}&before=garbage`, 'before is not a cursor of this list'],
      [`?installationId=${INSTALLATION}&format=xml`, 'format must be one of csv, ndjson'],
    ];
    for (const [query, error] of cases)
      expect(await answer(await get(`/v1/charging-sessions${query}`))).toEqual({ status: 400, body: { error } });
  });
});

describe('GET /v1/charging-sessions/{sessionId}', () => {
  test('one session with its curve; 404 if the installation has no such id; 400 naming the parameter', async () => {
    await putSession('s1', STARTED);
    expect(await answer(await get(`/v1/charging-sessions/s1?installationId=${INSTALLATION}`))).toEqual({
      status: 200,
      body: { ...listed('s1', STARTED), curve: [{ timestampMs: STARTED, powerKw: 11.5 }] },
    });
    const missing = { status: 404, body: { error: 'charging session not found' } };
    expect(await answer(await get(`/v1/charging-sessions/s1?installationId=${OTHER_INSTALLATION}`))).toEqual(missing);
    expect(await answer(await get(`/v1/charging-sessions/s2?installationId=${INSTALLATION}`))).toEqual(missing);
    expect(await answer(await get('/v1/charging-sessions/s1'))).toEqual({
      status: 400,
      body: { error: 'installationId is required' },
    });
    expect((await answer(await get(`/v1/charging-sessions/-bad?installationId=${INSTALLATION}`))).body).toEqual({
      error: 'sessionId must be 1..64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    });
  });
});

describe('GET /v1/telemetry/latest/{installationId}', () => {
  test('the newest sample with receivedAt and every stored field; 404 "no samples"; 400 for a bad id', async () => {
    expect(await answer(await get(`/v1/telemetry/latest/${INSTALLATION}`))).toEqual({
      status: 404,
      body: { error: 'no samples' },
    });
    await postSamples([
      { utc: UTC, soc: 50 },
      { utc: UTC + 5, soc: 49.5, lat: 48.1, lon: 11.5, is_parked: false },
    ]);
    expect(await answer(await get(`/v1/telemetry/latest/${INSTALLATION}`))).toEqual({
      status: 200,
      body: {
        installationId: INSTALLATION,
        utc: UTC + 5,
        receivedAt: new Date(RECEIVED).toISOString(),
        soc: 49.5,
        lat: 48.1,
        lon: 11.5,
        is_parked: 0,
      },
    });
    expect(await answer(await get('/v1/telemetry/latest/not-a-uuid'))).toEqual({
      status: 400,
      body: { error: 'installationId must be a UUID' },
    });
  });
});

/** Every stored sample of the installation as the database holds it, oldest first. */
function storedSamples(installationId = INSTALLATION): Record<string, unknown>[] {
  return service.storage.db
    .query<Record<string, unknown>, [string]>(
      `SELECT utc, ${sampleFieldNames.map((n) => `"${n}"`).join(', ')} FROM samples
       WHERE installation = (SELECT id FROM installations WHERE uuid = ?) ORDER BY utc`,
    )
    .all(installationId);
}

/** A CSV record read back: empty is absent, numbers and flags as numbers, text as it is. */
function typedRecord(record: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(record).map(([name, cell]) => {
      if (cell === '') return [name, null];
      const field = sampleFields[name as keyof typeof sampleFields];
      return [name, field?.kind === 'text' ? cell : Number(cell)];
    }),
  );
}

/** Tricky samples: text with a comma, quotes and a line break; tiny, negative and huge numbers; no position. */
const VARIED = [
  { utc: UTC + 2, soc: 55.5, lat: 48.137154, lon: 11.576124, elevation: 519.25, car_model: 'Model "S", long\nrange' },
  { utc: UTC, soc: 1e-7, power: -123.456, is_charging: true, odometer: 9_999_999.5 },
  { utc: UTC + 1, lat: -33.8688, lon: 151.2093, speed: 0, is_dcfc: false },
  { utc: UTC + 3, lat: 0, lon: 0, elevation: -12 },
];

async function exported(path: string): Promise<{ response: Response; text: string }> {
  const response = await get(path);
  return { response, text: await response.text() };
}

describe('GET /v1/telemetry/export/{installationId}', () => {
  test('CSV (the default): a header of utc and every field; csv-parse reads back the stored rows', async () => {
    await postSamples(VARIED);
    await postSamples([{ utc: UTC + 1, soc: 3 }], OTHER_INSTALLATION);
    const { response, text } = await exported(`/v1/telemetry/export/${INSTALLATION}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="telemetry-${INSTALLATION}.csv"`);
    expect(text.split('\r\n')[0]).toBe(['utc', ...sampleFieldNames].join(','));
    const records = parseCsv(text, { columns: true, record_delimiter: '\r\n' }) as Record<string, string>[];
    expect(records.map(typedRecord)).toEqual(storedSamples());
    expect(records.map((r) => Number(r.utc))).toEqual([UTC, UTC + 1, UTC + 2, UTC + 3]);
  });

  test('NDJSON: one sample object a line, oldest first, absent fields left out', async () => {
    await postSamples(VARIED);
    const { response, text } = await exported(`/v1/telemetry/export/${INSTALLATION}?format=ndjson`);
    expect(response.headers.get('content-type')).toBe('application/x-ndjson');
    expect(text.endsWith('\n')).toBe(true);
    const lines = text
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line));
    const withoutAbsent = (row: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null));
    expect(lines).toEqual(storedSamples().map(withoutAbsent));
  });

  test('GPX 1.1: well-formed for xmllint; read back by togeojson to the positions, elevations and times', async () => {
    await postSamples(VARIED);
    const { response, text } = await exported(`/v1/telemetry/export/${INSTALLATION}?format=gpx`);
    expect(response.headers.get('content-type')).toBe('application/gpx+xml');
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="telemetry-${INSTALLATION}.gpx"`);
    expect(xmllint(text)).toEqual({ exitCode: 0, stderr: '' });
    const geo = gpxToGeoJson(
      new DOMParser().parseFromString(text, 'text/xml') as unknown as Parameters<typeof gpxToGeoJson>[0],
    );
    const track = geo.features[0]!;
    expect(geo.features.length).toBe(1);
    expect(track.geometry).toEqual({
      type: 'LineString',
      coordinates: [
        [151.2093, -33.8688],
        [11.576124, 48.137154, 519.25],
        [0, 0, -12],
      ],
    });
    expect((track.properties as { coordinateProperties: { times: string[] } }).coordinateProperties.times).toEqual(
      [UTC + 1, UTC + 2, UTC + 3].map((utc) => new Date(utc * 1000).toISOString().replace('.000Z', 'Z')),
    );
  });

  test('GPX numbers are xsd:decimal (no exponent); longitude 180 is written -180, as the schema takes', async () => {
    await postSamples([{ utc: UTC, lat: 1e-7, lon: 180, elevation: -1e-7 }]);
    const { text } = await exported(`/v1/telemetry/export/${INSTALLATION}?format=gpx`);
    expect(text).toContain('<trkpt lat="0.0000001" lon="-180"><ele>-0.0000001</ele>');
    expect(xmllint(text)).toEqual({ exitCode: 0, stderr: '' });
  });

  test('an empty export is a valid document of each format', async () => {
    const csv = await exported(`/v1/telemetry/export/${INSTALLATION}`);
    expect(csv.text).toBe(`${['utc', ...sampleFieldNames].join(',')}\r\n`);
    expect((await exported(`/v1/telemetry/export/${INSTALLATION}?format=ndjson`)).text).toBe('');
    const gpx = await exported(`/v1/telemetry/export/${INSTALLATION}?format=gpx`);
    expect(xmllint(gpx.text)).toEqual({ exitCode: 0, stderr: '' });
    expect(gpx.text).toContain('<trkseg>\n</trkseg>');
  });

  test('from ≤ utc ≤ to; bad ranges are a 400 naming the parameter', async () => {
    await postSamples(VARIED);
    const utcs = async (query: string) =>
      (await exported(`/v1/telemetry/export/${INSTALLATION}?format=ndjson${query}`)).text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line).utc);
    expect(await utcs(`&from=${UTC + 1}&to=${UTC + 2}`)).toEqual([UTC + 1, UTC + 2]);
    expect(await utcs(`&from=${UTC + 3}`)).toEqual([UTC + 3]);
    expect(await utcs(`&to=${UTC}`)).toEqual([UTC]);
    expect(await utcs(`&from=${UTC + 9}`)).toEqual([]);
    const cases: [string, string][] = [
      ['?from=abc', 'from must be an integer'],
      ['?from=1764090000000', 'from must be from 946684800 to 32503679999'],
      [`?from=${UTC}&to=${UTC - 1}`, 'to must not be before from'],
      ['?format=', 'format must be one of csv, ndjson, gpx'],
    ];
    for (const [query, error] of cases) {
      expect(await answer(await get(`/v1/telemetry/export/${INSTALLATION}${query}`))).toEqual({
        status: 400,
        body: { error },
      });
    }
  });

  test('an export larger than a page streams every sample once, in order', async () => {
    const samples = Array.from({ length: 2500 }, (_, i) => ({ utc: UTC - 3000 + i, soc: i % 100 }));
    for (let i = 0; i < samples.length; i += 500) await postSamples(samples.slice(i, i + 500));
    const { text } = await exported(`/v1/telemetry/export/${INSTALLATION}?format=ndjson`);
    expect(
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line).utc),
    ).toEqual(samples.map((s) => s.utc));
  });
});

describe('GET /v1/consumption/export/{installationId}', () => {
  const putTwoDays = () =>
    putDays(service, [
      ['2026-11-24', 10.25, 97.5],
      ['2026-11-23', 5],
    ]);

  test('CSV: every day oldest first with its sums, state of health and lifetime sums', async () => {
    await putTwoDays();
    const { response, text } = await exported(`/v1/consumption/export/${INSTALLATION}`);
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="consumption-${INSTALLATION}.csv"`);
    expect(parseCsv(text, { columns: true })).toEqual([
      {
        date: '2026-11-23',
        km: '5',
        kwh: '2',
        hours: '0.5',
        socDrop: '1',
        sohPercent: '',
        lifetimeKm: '5',
        lifetimeKwh: '2',
        lifetimeHours: '0.5',
        lifetimeSocDrop: '1',
      },
      {
        date: '2026-11-24',
        km: '10.25',
        kwh: '2',
        hours: '0.5',
        socDrop: '1',
        sohPercent: '97.5',
        lifetimeKm: '15.25',
        lifetimeKwh: '4',
        lifetimeHours: '1',
        lifetimeSocDrop: '2',
      },
    ]);
  });

  test('NDJSON: one day a line; the last lifetime equals the history lifetime; empty without chunks', async () => {
    await putTwoDays();
    const { text } = await exported(`/v1/consumption/export/${INSTALLATION}?format=ndjson`);
    const days = text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(days[0]).toEqual({
      date: '2026-11-23',
      day: { km: 5, kwh: 2, hours: 0.5, socDrop: 1 },
      sohPercent: null,
      lifetime: { km: 5, kwh: 2, hours: 0.5, socDrop: 1 },
    });
    const history = (await (await get(`/v1/consumption/history/${INSTALLATION}`)).json()) as { lifetime: unknown };
    expect(days.at(-1).lifetime).toEqual(history.lifetime);
    expect((await exported(`/v1/consumption/export/${OTHER_INSTALLATION}?format=ndjson`)).text).toBe('');
    expect(await answer(await get(`/v1/consumption/export/${INSTALLATION}?format=gpx`))).toEqual({
      status: 400,
      body: { error: 'format must be one of csv, ndjson' },
    });
  });
});

describe('GET /v1/charging-sessions?format=…', () => {
  test('every session of the range, newest first, one a row, no paging and no curve', async () => {
    for (let i = 0; i < 3; i++) await putSession(`s${i}`, STARTED + i * 1000);
    const csv = await exported(
      `/v1/charging-sessions?installationId=${INSTALLATION}&format=csv&limit=1&to=${STARTED + 1000}`,
    );
    expect(csv.response.headers.get('content-disposition')).toBe(
      `attachment; filename="charging-sessions-${INSTALLATION}.csv"`,
    );
    // The columns in the JSON answer's order.
    expect(csv.text.slice(0, csv.text.indexOf('\r\n'))).toBe(Object.keys(listed('s1', STARTED + 1000)).join(','));
    const records = parseCsv(csv.text, { columns: true }) as Record<string, string>[];
    expect(records.map((r) => r.sessionId)).toEqual(['s1', 's0']);
    expect(records[0]).toEqual(
      Object.fromEntries(
        Object.entries(listed('s1', STARTED + 1000)).map(([k, v]) => [k, v === null ? '' : String(v)]),
      ),
    );
    const ndjson = await exported(`/v1/charging-sessions?installationId=${INSTALLATION}&format=ndjson`);
    expect(
      ndjson.text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([2, 1, 0].map((i) => listed(`s${i}`, STARTED + i * 1000)));
  });
});

describe('GET /v1/planner/status/{installationId}', () => {
  test('the stored facts and forwarding off, for an installation never seen', async () => {
    expect(await answer(await get(`/v1/planner/status/${OTHER_INSTALLATION}`))).toEqual({
      status: 200,
      body: { forwarding: false, ...NOTHING_FORWARDED },
    });
  });
});

/** `xmllint --noout` on a document: exit code and what it complained of. */
function xmllint(document: string): { exitCode: number; stderr: string } {
  const file = join(service.dir, 'export.gpx');
  writeFileSync(file, document);
  const run = Bun.spawnSync(['xmllint', '--noout', file]);
  return { exitCode: run.exitCode, stderr: run.stderr.toString() };
}
