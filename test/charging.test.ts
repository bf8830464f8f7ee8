import { afterAll, beforeEach, describe, expect, test } from 'bun:test';
import { answer, INSTALLATION, OTHER_INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService;
beforeEach(async () => {
  await service?.close();
  service = await startTestService();
});
afterAll(() => service.close());

const SESSION = '3f2b8c1e-7d4a-4b6e-9c0d-1a2b3c4d5e6f';

/** A session as the car app sends it. */
const appSession = () => ({
  installationId: INSTALLATION,
  sessionId: SESSION,
  startedAt: 1764080000000,
  endedAt: 1764081800000,
  energyKwh: 41.7,
  durationSeconds: 1800,
  meteredSeconds: 1790,
  chargingLossPercent: 6.5,
  gridEnergyKwh: 44.6,
  pricePerKwh: 0.59,
  totalCost: 26.31,
  startSocPercent: 12,
  endSocPercent: 80.5,
  lastPower: 38.2,
  curveIntervalMs: 60000,
  isDemo: false,
  curve: [
    { timestampMs: 1764080000000, powerKw: 0, socPercent: 12 },
    { timestampMs: 1764080060000, powerKw: 121.4, socPercent: 13.5 },
    { timestampMs: 1764080120000, powerKw: 118.9 },
  ],
});

type Session = Record<string, unknown>;

const putSession = (body: unknown, sessionId = SESSION, token?: string | null) =>
  service.request('PUT', `/v1/charging-sessions/${sessionId}`, { body, token });

/** The stored rows, without the time the server received them (test/owner-reads.test.ts covers it). */
const rows = () =>
  service.storage.db
    .query<Record<string, unknown>, []>('SELECT * FROM charging_sessions')
    .all()
    .map(({ received_at, ...row }) => row);

const appRow = {
  installation_id: INSTALLATION,
  session_id: SESSION,
  started_at: 1764080000000,
  ended_at: 1764081800000,
  energy_kwh: 41.7,
  duration_seconds: 1800,
  metered_seconds: 1790,
  charging_loss_percent: 6.5,
  grid_energy_kwh: 44.6,
  price_per_kwh: 0.59,
  total_cost: 26.31,
  start_soc_percent: 12,
  end_soc_percent: 80.5,
  last_power: 38.2,
  curve_interval_ms: 60000,
  is_demo: 0,
  curve: JSON.stringify(appSession().curve),
};

describe('PUT /v1/charging-sessions/{sessionId}', () => {
  test('stores the car app’s session with every field, curve included, and answers 204, empty body', async () => {
    const response = await putSession({ ...appSession(), installationId: INSTALLATION.toUpperCase() });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(rows()).toEqual([appRow]);
  });

  test('a repeated PUT replaces the whole session; unknown fields are ignored and null is absent', async () => {
    expect((await putSession(appSession())).status).toBe(204);
    const again = {
      installationId: INSTALLATION,
      startedAt: 1764080000005,
      endedAt: 1764080000005,
      energyKwh: 0,
      isDemo: true,
    };
    const response = await putSession({ ...again, totalCost: null, curve: null, vehicle: 'MG4', curveV2: [] });
    expect(response.status).toBe(204);
    expect(rows()).toEqual([
      {
        ...Object.fromEntries(Object.keys(appRow).map((column) => [column, null])),
        installation_id: INSTALLATION,
        session_id: SESSION,
        started_at: 1764080000005,
        ended_at: 1764080000005,
        energy_kwh: 0,
        is_demo: 1,
      },
    ]);
  });

  test('sessions of other ids and installations are kept apart', async () => {
    await putSession(appSession());
    await putSession({ ...appSession(), sessionId: undefined }, 'session.2_b-3');
    await putSession({ ...appSession(), installationId: OTHER_INSTALLATION });
    const keys = service.storage.db
      .query('SELECT installation_id AS i, session_id AS s FROM charging_sessions ORDER BY i, s')
      .all();
    expect(keys).toEqual([
      { i: OTHER_INSTALLATION, s: SESSION },
      { i: INSTALLATION, s: SESSION },
      { i: INSTALLATION, s: 'session.2_b-3' },
    ]);
  });

  test('accepts a curve of 1440 points', async () => {
    const curve = Array.from({ length: 1440 }, (_, i) => ({ timestampMs: 1764080000000 + i * 60_000, powerKw: 50 }));
    expect((await putSession({ ...appSession(), curve })).status).toBe(204);
  });

  test('a curve point keeps only its three fields; a null socPercent is absent', async () => {
    const curve = [
      { timestampMs: 1764080000001, powerKw: 1, socPercent: null, note: 'x'.repeat(1000) },
      { timestampMs: 1764080000002, powerKw: 2, socPercent: 50, extra: [1] },
    ];
    expect((await putSession({ ...appSession(), curve })).status).toBe(204);
    expect(service.storage.db.query<{ curve: string }, []>('SELECT curve FROM charging_sessions').get()!.curve).toBe(
      '[{"timestampMs":1764080000001,"powerKw":1},{"timestampMs":1764080000002,"powerKw":2,"socPercent":50}]',
    );
  });

  const pathIdProblem = 'sessionId must be 1..64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit';
  test.each([['-abc'], ['.abc'], ['a%20b'], ['a'.repeat(65)], ['s%C3%A9ance'], [''], ['a/b'], ['a%2Fb'], ['a%zz']])(
    '400 for the path id "%s", and 401 before it without a token',
    async (id) => {
      expect(await answer(await putSession(appSession(), id))).toEqual({ status: 400, body: { error: pathIdProblem } });
      expect(await answer(await putSession(appSession(), id, null))).toEqual({
        status: 401,
        body: { error: 'unauthorized' },
      });
    },
  );

  test('a path id is taken percent-decoded, and a trailing slash is ignored as on every route', async () => {
    expect((await putSession({ ...appSession(), sessionId: 'a-1' }, 'a%2D1')).status).toBe(204);
    expect((await putSession({ ...appSession(), sessionId: 'a-2' }, 'a-2/')).status).toBe(204);
  });

  test('64 characters are a valid path id', async () => {
    expect((await putSession({ ...appSession(), sessionId: null }, `9${'a'.repeat(63)}`)).status).toBe(204);
  });

  /** The app's curve with more points after its three. */
  const curveWith = (...points: unknown[]) => [...appSession().curve, ...points];

  const invalidSessions: [string, Session, string][] = [
    ['installationId missing', { installationId: undefined }, 'installationId is required'],
    ['installationId not a UUID', { installationId: 'car' }, 'installationId must be a UUID'],
    ['body sessionId another one', { sessionId: 'other' }, 'sessionId does not match path'],
    ['body sessionId in other case', { sessionId: SESSION.toUpperCase() }, 'sessionId does not match path'],
    ['startedAt missing', { startedAt: undefined }, 'startedAt is required'],
    [
      'startedAt as text',
      { startedAt: '1764080000000' },
      'startedAt must be Unix milliseconds (a non-negative safe integer)',
    ],
    [
      'endedAt fractional',
      { endedAt: 1764081800000.5 },
      'endedAt must be Unix milliseconds (a non-negative safe integer)',
    ],
    ['energyKwh missing', { energyKwh: undefined }, 'energyKwh is required'],
    ['energyKwh as text', { energyKwh: '41.7' }, 'energyKwh must be a finite number'],
    ['energyKwh too large', { energyKwh: 1000.5 }, 'energyKwh is out of range 0..1000'],
    ['durationSeconds negative', { durationSeconds: -1 }, 'durationSeconds is out of range 0..604800'],
    ['meteredSeconds over a week', { meteredSeconds: 604801 }, 'meteredSeconds is out of range 0..604800'],
    ['chargingLossPercent', { chargingLossPercent: 101 }, 'chargingLossPercent is out of range 0..100'],
    ['gridEnergyKwh', { gridEnergyKwh: 2001 }, 'gridEnergyKwh is out of range 0..2000'],
    ['pricePerKwh', { pricePerKwh: -0.01 }, 'pricePerKwh is out of range 0..1000000'],
    ['totalCost', { totalCost: 1e9 + 1 }, 'totalCost is out of range 0..1000000000'],
    ['startSocPercent', { startSocPercent: '12' }, 'startSocPercent must be a finite number'],
    ['startSocPercent over 100', { startSocPercent: 100.5 }, 'startSocPercent is out of range 0..100'],
    ['startSocPercent negative', { startSocPercent: -0.5 }, 'startSocPercent is out of range 0..100'],
    ['endSocPercent', { endSocPercent: 100.5 }, 'endSocPercent is out of range 0..100'],
    ['lastPower', { lastPower: -1000.5 }, 'lastPower is out of range -1000..1000'],
    ['curveIntervalMs', { curveIntervalMs: 86_400_001 }, 'curveIntervalMs is out of range 0..86400000'],
    ['isDemo as text', { isDemo: 'false' }, 'isDemo must be true or false'],
    ['curve an object', { curve: { 0: {} } }, 'curve must be an array'],
    [
      'curve of 1441 points',
      { curve: Array.from({ length: 1441 }, (_, i) => ({ timestampMs: 1764080000000 + i, powerKw: 1 })) },
      'curve must have at most 1440 entries',
    ],
    ['curve point not an object', { curve: curveWith(5) }, 'curve[3] must be an object'],
    ['curve point null', { curve: curveWith(null) }, 'curve[3] must be an object'],
    ['curve point without timestampMs', { curve: curveWith({ powerKw: 1 }) }, 'curve[3].timestampMs is required'],
    [
      'curve point timestampMs as text',
      { curve: curveWith({ timestampMs: '1', powerKw: 1 }) },
      'curve[3].timestampMs must be Unix milliseconds (a non-negative safe integer)',
    ],
    [
      'curve point power too high',
      { curve: curveWith({ timestampMs: 1764080000001, powerKw: 1000.1 }) },
      'curve[3].powerKw is out of range 0..1000',
    ],
    [
      'curve point power negative',
      { curve: curveWith({ timestampMs: 1764080000001, powerKw: 1 }, { timestampMs: 1764080000001, powerKw: -1 }) },
      'curve[4].powerKw is out of range 0..1000',
    ],
    [
      'curve point soc too high',
      { curve: curveWith({ timestampMs: 1764080000001, powerKw: 1, socPercent: 101 }) },
      'curve[3].socPercent is out of range 0..100',
    ],
  ];
  test.each(invalidSessions)('400 naming the field: %s', async (_, change, error) => {
    expect(await answer(await putSession({ ...appSession(), ...change }))).toEqual({ status: 400, body: { error } });
    expect(rows()).toEqual([]);
  });

  test('401 without a token; a paired car: 400 before 403 for another installation, 204 for its own', async () => {
    expect(await answer(await putSession(appSession(), SESSION, null))).toEqual({
      status: 401,
      body: { error: 'unauthorized' },
    });
    const { token } = await service.devices.pair(INSTALLATION, null);
    const other = { ...appSession(), installationId: OTHER_INSTALLATION };
    expect(await answer(await putSession({ ...other, energyKwh: -1 }, SESSION, token))).toEqual({
      status: 400,
      body: { error: 'energyKwh is out of range 0..1000' },
    });
    expect(await answer(await putSession(other, SESSION, token))).toEqual({
      status: 403,
      body: { error: 'token belongs to another installation; pair this car again after its installation id changed' },
    });
    expect((await putSession(appSession(), SESSION, token)).status).toBe(204);
    expect(rows()).toEqual([appRow]);
  });
});
