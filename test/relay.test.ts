/**
 * `GET`/`POST /abrp/1/tlm/send`: the planner's telemetry API as OVMS, EVNotify, the car app's direct
 * uploader and scripts speak it, stored and forwarded with the server's planner credentials.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { startFakePlanner, type FakePlanner } from './fake-planner.ts';
import { INSTALLATION, OTHER_INSTALLATION, OWNER_TOKEN, startTestService, type TestService } from './support.ts';

const NOW_MS = 1_764_080_100_000;
const UTC = 1_764_080_040;
const KEY = 'server-planner-key';
const PLANNER_TOKEN = 'server-planner-token-of-the-car';
const CLIENT_KEY = 'the-clients-own-planner-key';

let fake: FakePlanner;
let service: TestService;
let deviceToken: string;
let deviceId: string;

beforeAll(() => {
  fake = startFakePlanner();
});
afterAll(() => fake.stop());

async function start(): Promise<void> {
  fake.requests.length = 0;
  service = await startTestService(
    { planner: { url: fake.url, apiKey: KEY, defaultToken: null, tokens: new Map([[INSTALLATION, PLANNER_TOKEN]]) } },
    { now: () => NOW_MS },
  );
  ({ token: deviceToken, id: deviceId } = await service.devices.pair(INSTALLATION, 'OVMS'));
}
afterEach(() => service?.close());

const PATH = '/abrp/1/tlm/send';
const query = (params: Record<string, string>) => `${PATH}?${new URLSearchParams(params)}`;

/** java.net.URLEncoder, as the car app encodes its form: spaces as `+`, and `!'()~` escaped too. */
const javaUrlEncode = (text: string) =>
  encodeURIComponent(text)
    .replace(/%20/g, '+')
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

async function planner(response: Response) {
  return { status: response.status, body: JSON.parse(await response.text()) as unknown };
}

const OK = { status: 200, body: { status: 'ok' } };

/** The stored sample's non-null columns. */
function storedSample(): Record<string, unknown> | null {
  const row = service.storage.db.query<Record<string, unknown>, []>('SELECT * FROM samples').get();
  if (!row) return null;
  return Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null));
}

/**
 * Waits until the planner has answered the one sample and a further read of the outbox has run (so a
 * second send would have happened), then says what the planner received.
 */
async function forwarded() {
  await service.planner.idle();
  expect(storedSample()?.planner_state).toBe(2);
  const reads = service.planner.stats.outboxReads;
  service.planner.recheck(INSTALLATION);
  await service.planner.idle();
  expect(service.planner.stats.outboxReads).toBe(reads + 1);
  return fake.requests;
}

describe('the clients as they send', () => {
  test('OVMS: GET with the query, lat/lon/power as strings, alt as elevation; forwarded once as server', async () => {
    await start();
    const tlm = JSON.stringify({
      utc: UTC,
      soc: 80,
      soh: 98,
      speed: 52,
      car_model: 'mg:4:22:64:other',
      lat: '52.52001',
      lon: '13.40495',
      alt: 34,
      ext_temp: 12,
      is_charging: 0,
      batt_temp: 18,
      voltage: 398.2,
      current: -12.5,
      power: '4.98',
      is_dcfc: 0,
      odometer: 12345.6,
    });
    const response = await service.request('GET', query({ api_key: CLIENT_KEY, token: deviceToken, tlm }), {
      token: null,
    });
    expect(await planner(response)).toEqual(OK);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const stored = {
      utc: UTC,
      soc: 80,
      soh: 98,
      speed: 52,
      lat: 52.52001,
      lon: 13.40495,
      elevation: 34,
      is_charging: 0,
      is_dcfc: 0,
    };
    expect(storedSample()).toMatchObject({
      ...stored,
      ext_temp: 12,
      power: 4.98,
      voltage: 398.2,
      current: -12.5,
      car_model: 'mg:4:22:64:other',
    });
    const requests = await forwarded();
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ apiKey: KEY, token: PLANNER_TOKEN });
    expect(requests[0]!.tlm).toMatchObject({ ...stored, power: 4.98, odometer: 12345.6 });
    expect(JSON.stringify(requests)).not.toContain(deviceToken);
    expect(JSON.stringify(requests)).not.toContain(CLIENT_KEY);
  });

  test('EVNotify: a fractional utc is floored', async () => {
    await start();
    const tlm = JSON.stringify({ utc: UTC + 0.731, soc: 64.5, speed: 0, is_charging: 1, power: -7.2 });
    expect(await planner(await service.request('GET', query({ token: deviceToken, tlm }), { token: null }))).toEqual(
      OK,
    );
    expect(storedSample()).toMatchObject({ utc: UTC, soc: 64.5, is_charging: 1, power: -7.2 });
    expect((await forwarded())[0]!.tlm).toEqual({ utc: UTC, soc: 64.5, power: -7.2, speed: 0, is_charging: 1 });
  });

  test('the car app’s uploader: a form POST of api_key, token and tlm as org.json and URLEncoder write', async () => {
    await start();
    const tlm =
      `{"utc":${UTC},"soc":80,"speed":52,"est_battery_range":310,"power":-1.25,"is_charging":0,"is_dcfc":0,` +
      '"is_parked":0,"cabin_temp":21,"capacity":61.7,"odometer":12346,"soe":49.36,"kwh_charged":0,' +
      '"tire_pressure_fl":250,"tire_pressure_fr":251,"tire_pressure_rl":248,"tire_pressure_rr":249,' +
      '"lat":41.0082376,"lon":28.9783589,"elevation":40,"heading":181}';
    const body = `api_key=${javaUrlEncode(CLIENT_KEY)}&token=${javaUrlEncode(deviceToken)}&tlm=${javaUrlEncode(tlm)}`;
    const response = await service.request('POST', PATH, {
      body,
      token: null,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(await planner(response)).toEqual(OK);
    expect(storedSample()).toMatchObject({
      utc: UTC,
      est_battery_range: 310,
      tire_pressure_rr: 249,
      lat: 41.0082376,
      heading: 181,
    });
    const requests = await forwarded();
    expect(requests).toHaveLength(1);
    expect(requests[0]!.tlm).toEqual(JSON.parse(tlm));
  });

  test('a JSON body {token, tlm}, tlm an object or its JSON text; an APIKEY header is ignored', async () => {
    await start();
    const headers = { authorization: `APIKEY ${CLIENT_KEY}` };
    const asObject = { token: deviceToken, tlm: { utc: UTC, soc: 50 } };
    expect(await planner(await service.request('POST', PATH, { body: asObject, token: null, headers }))).toEqual(OK);
    const asText = { token: deviceToken, tlm: JSON.stringify({ utc: UTC + 1, soc: 51 }) };
    expect(await planner(await service.request('POST', PATH, { body: asText, token: null, headers }))).toEqual(OK);
    const rows = service.storage.db.query('SELECT utc, soc FROM samples ORDER BY utc').all();
    expect(rows).toEqual([
      { utc: UTC, soc: 50 },
      { utc: UTC + 1, soc: 51 },
    ]);
  });
});

describe('read leniently, as the planner reads it', () => {
  beforeEach(start);

  const send = async (tlm: Record<string, unknown>) =>
    planner(await service.request('GET', query({ token: deviceToken, tlm: JSON.stringify(tlm) }), { token: null }));

  test.each([
    ['numbers as text', { soc: '80.5', speed: ' 52 ', power: '-1e1' }, { soc: 80.5, speed: 52, power: -10 }],
    ['a utc as text with a fraction', { utc: `${UTC}.9`, soc: 1 }, { utc: UTC, soc: 1 }],
    ['alt as elevation', { alt: '-12.5' }, { elevation: -12.5 }],
    ['elevation over alt when both are sent', { elevation: 40, alt: 12 }, { elevation: 40 }],
    [
      'flags as booleans, their text, or 0/1 as text',
      { is_charging: true, is_dcfc: 'false', is_parked: '1' },
      { is_charging: 1, is_dcfc: 0, is_parked: 1 },
    ],
    ['unusable values dropped, the rest kept', { soc: 'eighty', speed: '0x10', heading: 90, foo: 1 }, { heading: 90 }],
    ['a car model kept as text', { car_model: '123' }, { car_model: '123' }],
  ])('%s', async (_, fields, stored) => {
    expect(await send({ utc: UTC, ...fields })).toEqual(OK);
    expect(storedSample()).toMatchObject({ utc: UTC, ...stored });
    for (const key of ['alt', 'foo']) expect(storedSample()).not.toHaveProperty(key);
  });

  test('the log names the sample tlm, and counts unknown fields without naming them', async () => {
    const key = `token=${deviceToken}`;
    expect(await send({ utc: UTC, soc: 80, speed: 'fast', [key]: 1, [deviceToken]: 2 })).toEqual(OK);
    const lines = service.log.lines.filter((line) => line.includes('telemetry.dropped'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('count=3');
    expect(lines[0]).toContain('unknownFields=2');
    expect(lines[0]).toContain('tlm.speed');
    expect(lines[0]).not.toContain('samples[0]');
    expect(service.log.lines.join('\n')).not.toContain(deviceToken);
  });

  test('a __proto__ key is a field (dropped as unknown), not the sample’s prototype', async () => {
    expect(await send({ utc: UTC, ...JSON.parse('{"__proto__":{"soc":50},"heading":1}') })).toEqual(OK);
    expect(storedSample()).toMatchObject({ utc: UTC, heading: 1 });
    expect(storedSample()).not.toHaveProperty('soc');
  });

  test('a tlm of only utc (the car app’s fallback) is a 200 that stores and forwards nothing', async () => {
    for (const tlm of [{ utc: UTC }, { utc: `${UTC}.5`, soc: null }]) expect(await send(tlm)).toEqual(OK);
    expect(storedSample()).toBeNull();
    expect(service.log.lines.filter((line) => line.includes('telemetry.dropped'))).toEqual([]);
    expect(await send({ utc: UTC * 1000 })).toMatchObject({ status: 400 });
  });

  test.each([
    ['no usable value', { utc: UTC, soc: 'x' }, 'tlm.soc: "x" is not a number; tlm: no usable values'],
    ['no utc', { soc: 80 }, 'tlm: utc is missing'],
    [
      'a utc in milliseconds',
      { utc: UTC * 1000, soc: 80 },
      `tlm: utc ${UTC * 1000} is in the future (milliseconds instead of seconds?)`,
    ],
  ])('400 in the planner’s shape for %s, nothing stored', async (_, tlm, error) => {
    expect(await send(tlm)).toEqual({ status: 400, body: { status: 'error', error } });
    expect(storedSample()).toBeNull();
  });

  test.each([
    ['no tlm', {}, 'tlm is required'],
    ['a tlm that is not JSON', { tlm: '{"utc":' }, 'tlm is not valid JSON'],
    ['a tlm that is an array', { tlm: '[1]' }, 'tlm must be a JSON object'],
  ])('400 in the planner’s shape for %s', async (_, params, error) => {
    const response = await service.request('GET', query({ token: deviceToken, ...params }), { token: null });
    expect(await planner(response)).toEqual({ status: 400, body: { status: 'error', error } });
  });

  test('a JSON body that is not JSON is a 400 in the planner’s shape', async () => {
    const response = await service.request('POST', PATH, {
      body: '{"token":',
      token: null,
      headers: { 'content-type': 'application/json' },
    });
    expect(await planner(response)).toEqual({
      status: 400,
      body: { status: 'error', error: 'body is not valid JSON' },
    });
  });

  test('a body that is not UTF-8 is a 400 in the planner’s shape, in the words of its type', async () => {
    const body = new Uint8Array([...new TextEncoder().encode(`token=${deviceToken}&tlm=`), 0xff, 0xfe]);
    for (const [type, error] of [
      ['application/x-www-form-urlencoded', 'body is not valid UTF-8'],
      ['application/json', 'body is not valid JSON'],
    ]) {
      const response = await service.request('POST', PATH, { body, token: null, headers: { 'content-type': type! } });
      expect(await planner(response)).toEqual({ status: 400, body: { status: 'error', error } });
    }
    expect(storedSample()).toBeNull();
  });

  test('a body over the cap is a 400 in the planner’s shape, whether the token came first or not', async () => {
    const big = `token=${deviceToken}&tlm=${'x'.repeat(600_000)}`;
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const path of [PATH, query({ token: deviceToken })]) {
      const response = await service.request('POST', path, { body: big, token: null, headers });
      expect(await planner(response)).toEqual({ status: 400, body: { status: 'error', error: 'body is too large' } });
    }
    expect(storedSample()).toBeNull();
  });
});

test('without a PLANNER_TOKENS entry for the installation, PLANNER_TOKEN forwards', async () => {
  fake.requests.length = 0;
  service = await startTestService(
    { planner: { url: fake.url, apiKey: KEY, defaultToken: 'the-server-default-planner-token', tokens: new Map() } },
    { now: () => NOW_MS },
  );
  ({ token: deviceToken } = await service.devices.pair(INSTALLATION, 'EVNotify'));
  const tlm = JSON.stringify({ utc: UTC, soc: 80 });
  expect(await planner(await service.request('GET', query({ token: deviceToken, tlm }), { token: null }))).toEqual(OK);
  const requests = await forwarded();
  expect(requests).toHaveLength(1);
  expect(requests[0]).toMatchObject({
    apiKey: KEY,
    token: 'the-server-default-planner-token',
    tlm: { utc: UTC, soc: 80 },
  });
});

describe('only a device token of this service', () => {
  const unauthorized = { status: 401, body: { status: 'error', error: 'unauthorized' } };
  const tlm = JSON.stringify({ utc: UTC, soc: 80 });

  test.each([
    ['no token', {}],
    ['an unknown token', { token: 'not-a-device-token' }],
    ['the owner’s INGEST_TOKEN, which names no installation', { token: OWNER_TOKEN }],
  ])('401 in the planner’s shape for %s, nothing stored or sent', async (_, params) => {
    await start();
    const response = await service.request('GET', query({ ...params, tlm }), { token: null });
    expect(await planner(response)).toEqual(unauthorized);
    expect(response.headers.get('www-authenticate')).toBeNull();
    const asBearer = await service.request('POST', PATH, {
      body: { tlm },
      headers: { 'content-type': 'application/json' },
    });
    expect(await planner(asBearer)).toEqual(unauthorized);
    const inJson = await service.request('POST', PATH, { body: { ...params, tlm }, token: null });
    expect(await planner(inJson)).toEqual(unauthorized);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const inForm = await service.request('POST', PATH, {
      body: `${new URLSearchParams({ ...params, tlm })}`,
      token: null,
      headers: form,
    });
    expect(await planner(inForm)).toEqual(unauthorized);
    expect(storedSample()).toBeNull();
    expect(fake.requests).toEqual([]);
  });

  test('the query’s token wins over the body’s, in a form body and a JSON body', async () => {
    await start();
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const json = { 'content-type': 'application/json' };
    const inForm = (token: string) => `token=${encodeURIComponent(token)}&tlm=${encodeURIComponent(tlm)}`;
    const send = async (queryToken: string, body: string, headers: Record<string, string>) =>
      planner(await service.request('POST', query({ token: queryToken }), { body, token: null, headers }));
    expect(await send(deviceToken, inForm('not-a-device-token'), form)).toEqual(OK);
    expect(await send(deviceToken, JSON.stringify({ token: 'not-a-device-token', tlm }), json)).toEqual(OK);
    expect(await send('not-a-device-token', inForm(deviceToken), form)).toEqual(unauthorized);
    expect(await send('not-a-device-token', JSON.stringify({ token: deviceToken, tlm }), json)).toEqual(unauthorized);
    expect(service.storage.db.query('SELECT count(*) AS n FROM samples').get()).toEqual({ n: 1 });
  });

  test('a revoked token is refused; another car’s token stores for its own installation only', async () => {
    await start();
    await service.devices.revoke(deviceId);
    expect(await planner(await service.request('GET', query({ token: deviceToken, tlm }), { token: null }))).toEqual(
      unauthorized,
    );
    const other = await service.devices.pair(OTHER_INSTALLATION, 'EVNotify');
    expect(await planner(await service.request('GET', query({ token: other.token, tlm }), { token: null }))).toEqual(
      OK,
    );
    const owners = service.storage.db
      .query('SELECT uuid FROM installations JOIN samples ON samples.installation = installations.id')
      .all();
    expect(owners).toEqual([{ uuid: OTHER_INSTALLATION }]);
  });
});
