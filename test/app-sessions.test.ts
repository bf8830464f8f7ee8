/**
 * The car app's charging-session bodies as its builds send them (ChargeSessionTracker.toJson, then the
 * uploader's copy with `installationId` appended), and the plausibility of every millisecond field.
 */
import { afterAll, beforeEach, describe, expect, test } from 'bun:test';
import { orgJson } from './app-json.ts';
import { answer, consumptionChunk, INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService;
beforeEach(async () => {
  await service?.close();
  service = await startTestService();
});
afterAll(() => service.close());

const SESSION = '9d6c1f4e-2b7a-4c38-8e15-0f3a6b9c2d71';
const STARTED = 1_764_080_000_000;

/** A point of the curve as the app keeps it: a float power (positive), its wall-clock time, the SoC when read. */
const point = (i: number, intervalMs = 60_000) => ({
  timestampMs: STARTED + i * intervalMs,
  powerKw: Math.round(1200 - i) / 10,
  socPercent: i % 7 === 0 ? undefined : Math.min(100, 12 + i / 10),
});

/** Builds 2.2.38 on: a DC session; `energyKwh` and the cost are doubles, the SoC and `lastPower` floats. */
function appSession(startedAt: number, endedAt: number, curve: ReturnType<typeof point>[]) {
  return {
    sessionId: SESSION,
    startedAt,
    endedAt,
    durationSeconds: 2712,
    energyKwh: 41.72861111111111,
    chargingLossPercent: 10.0,
    gridEnergyKwh: 45.90147222222222,
    pricePerKwh: 0.59,
    totalCost: 27.081868611111108,
    curve,
    meteredSeconds: 2711.5,
    curveIntervalMs: 60_000,
    startSocPercent: 12.5,
    endSocPercent: 80.0,
    lastPower: -38.2,
    installationId: INSTALLATION,
  };
}

const put = (text: string) => service.request('PUT', `/v1/charging-sessions/${SESSION}`, { body: text });
const stored = () =>
  service.storage.db
    .query<{ started_at: number; ended_at: number; curve: string; last_power: number }, []>(
      'SELECT started_at, ended_at, curve, last_power FROM charging_sessions',
    )
    .all();

describe('the car app’s charging sessions', () => {
  test('a session whose clock stepped back mid-charge (endedAt before startedAt) is stored as sent', async () => {
    // 45 minutes of charging, during which the head unit took NTP time 49 minutes behind its own.
    const endedAt = STARTED - 240_000;
    const body = orgJson(appSession(STARTED, endedAt, [point(0), point(1)]));
    expect(body).toContain('"chargingLossPercent":10,');
    expect(body).toContain('"endSocPercent":80,');
    const response = await put(body);
    expect(response.status).toBe(204);
    expect(stored()).toEqual([
      { started_at: STARTED, ended_at: endedAt, curve: JSON.stringify([point(0), point(1)]), last_power: -38.2 },
    ]);
  });

  test('a 720-point curve (12 hours at one point a minute) is stored whole', async () => {
    const curve = Array.from({ length: 720 }, (_, i) => point(i));
    const response = await put(orgJson(appSession(STARTED, STARTED + 720 * 60_000, curve)));
    expect(response.status).toBe(204);
    const kept = JSON.parse(stored()[0]!.curve) as { timestampMs: number }[];
    expect(kept.length).toBe(720);
    expect(kept[719]!.timestampMs).toBe(STARTED + 719 * 60_000);
  });

  test('the 2.2.2x body (lastSampleMs, no loss fields) is accepted; the unknown field is ignored', async () => {
    const older = orgJson({
      sessionId: SESSION,
      startedAt: STARTED,
      endedAt: STARTED + 1_800_000,
      durationSeconds: 1800,
      energyKwh: 0.0004,
      pricePerKwh: 0.0,
      totalCost: 0.0,
      curve: [],
      lastSampleMs: STARTED + 1_790_000,
      startSocPercent: 50.0,
      endSocPercent: 50.5,
      lastPower: -0,
      installationId: INSTALLATION,
    });
    expect(older).toContain('"energyKwh":4.0E-4');
    expect(older).toContain('"lastPower":-0');
    expect((await put(older)).status).toBe(204);
    expect(service.storage.db.query('SELECT energy_kwh AS e, last_power AS p FROM charging_sessions').get()).toEqual({
      e: 0.0004,
      p: 0,
    });
  });
});

describe('millisecond fields must be between 2000 and 2999', () => {
  const seconds = 1_764_080_000;
  const micro = 1_764_080_000_000_000;
  const hintS = ' (seconds instead of milliseconds?)';
  const hintUs = ' (microseconds instead of milliseconds?)';
  const problem = (path: string, value: number, hint = '') =>
    `${path} ${value} is not between 2000 and 2999 in Unix milliseconds${hint}`;
  const session = (change: Record<string, unknown>) => ({
    ...appSession(STARTED, STARTED + 60_000, [point(0)]),
    ...change,
  });
  const curveAt = (timestampMs: number) => [point(0), { timestampMs, powerKw: 50 }];

  test.each([
    ['startedAt in seconds', session({ startedAt: seconds }), problem('startedAt', seconds, hintS)],
    ['startedAt in microseconds', session({ startedAt: micro }), problem('startedAt', micro, hintUs)],
    ['endedAt in seconds', session({ endedAt: seconds }), problem('endedAt', seconds, hintS)],
    ['endedAt 0 (a session the app never finished)', session({ endedAt: 0 }), problem('endedAt', 0)],
    ['a curve point in seconds', session({ curve: curveAt(seconds) }), problem('curve[1].timestampMs', seconds, hintS)],
    [
      'a curve point in microseconds',
      session({ curve: curveAt(micro) }),
      problem('curve[1].timestampMs', micro, hintUs),
    ],
    ['the last millisecond of 1999', session({ startedAt: 946_684_799_999 }), problem('startedAt', 946_684_799_999)],
    ['the first millisecond of 3000', session({ endedAt: 32_503_680_000_000 }), problem('endedAt', 32_503_680_000_000)],
  ])('a session: 400 for %s, nothing stored', async (_, body, error) => {
    expect(await answer(await put(orgJson(body)))).toEqual({ status: 400, body: { error } });
    expect(stored()).toEqual([]);
  });

  test('a session from the first millisecond of 2000 to the last of 2999 is stored', async () => {
    const response = await put(orgJson(session({ startedAt: 946_684_800_000, endedAt: 32_503_679_999_999 })));
    expect(response.status).toBe(204);
  });

  test.each([
    ['in seconds', seconds, hintS],
    ['in microseconds', micro, hintUs],
    ['near zero', 5, ''],
  ])('a chunk: 400 for a recordedAt %s, nothing stored', async (_, recordedAt, hint) => {
    const response = await service.request('PUT', '/v1/consumption/daily', { body: consumptionChunk({ recordedAt }) });
    expect(await answer(response)).toEqual({ status: 400, body: { error: problem('recordedAt', recordedAt, hint) } });
    expect(service.storage.db.query('SELECT count(*) AS n FROM consumption_chunks').get()).toEqual({ n: 0 });
  });
});
