/** The owner's read services (the /v1 read routes and the dashboard call them): what each answers of stored data. */
import { afterAll, beforeEach, describe, expect, test } from 'bun:test';
import { NOTHING_FORWARDED, putDays } from './owner-support.ts';
import { INSTALLATION, OTHER_INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService;
let clock = 1_764_100_000_000;
beforeEach(async () => {
  await service?.close();
  clock = 1_764_100_000_000;
  service = await startTestService({}, { now: () => clock });
});
afterAll(() => service.close());

const UTC = 1_764_090_000;

async function postSamples(installationId: string, samples: Record<string, unknown>[]) {
  const response = await service.request('POST', '/v1/telemetry', { body: { installationId, samples } });
  expect(response.status).toBe(200);
}

const session = (startedAt: number, installationId = INSTALLATION) => ({
  installationId,
  startedAt,
  endedAt: startedAt + 1_800_000,
  energyKwh: 20.5,
  pricePerKwh: 0.5,
  isDemo: true,
  curve: [{ timestampMs: startedAt, powerKw: 50 }],
});

async function putSession(sessionId: string, startedAt: number, installationId = INSTALLATION) {
  const response = await service.request('PUT', `/v1/charging-sessions/${sessionId}`, {
    body: session(startedAt, installationId),
  });
  expect(response.status).toBe(204);
}

describe('samples', () => {
  test('latest: the newest sample by utc, its stored fields and its batch’s time; null without samples', async () => {
    expect(service.samples.latest(INSTALLATION)).toBeNull();
    await postSamples(INSTALLATION, [
      { utc: UTC + 10, soc: 80.5, is_charging: true, car_model: 'ioniq5' },
      { utc: UTC, soc: 81 },
    ]);
    clock += 60_000;
    await postSamples(INSTALLATION, [{ utc: UTC - 100, soc: 90 }]); // an older sample, sent late
    expect(service.samples.latest(INSTALLATION)).toEqual({
      installationId: INSTALLATION,
      utc: UTC + 10,
      receivedAt: new Date(1_764_100_000_000).toISOString(),
      soc: 80.5,
      is_charging: 1,
      car_model: 'ioniq5',
    });
    expect(service.samples.latest(OTHER_INSTALLATION)).toBeNull();
  });

  test('rows: oldest first across pages, in the range, ends included; samplesSince counts from a utc', async () => {
    const samples = Array.from({ length: 25 }, (_, i) => ({ utc: UTC + i, soc: i }));
    await postSamples(INSTALLATION, samples.toReversed());
    await postSamples(OTHER_INSTALLATION, [{ utc: UTC + 3, soc: 1 }]);
    const pages = [...service.samples.pages(INSTALLATION, { from: UTC + 2, to: UTC + 21 }, 7)];
    expect(pages.map((page) => page.length)).toEqual([7, 7, 6]);
    expect(pages.flat().map((row) => [row[0], row[1]])).toEqual(
      Array.from({ length: 20 }, (_, i) => [UTC + 2 + i, 2 + i]),
    );
    expect([...service.samples.pages(INSTALLATION)].flat().length).toBe(25);
    expect([...service.samples.pages(INSTALLATION, { from: UTC + 30 })].flat()).toEqual([]);
    expect(service.samples.samplesSince(UTC + 20)).toEqual(new Map([[INSTALLATION, 5]]));
    expect(service.samples.samplesSince(0)).toEqual(
      new Map([
        [INSTALLATION, 25],
        [OTHER_INSTALLATION, 1],
      ]),
    );
  });
});

describe('charging sessions', () => {
  test('list: newest startedAt first, in cursor pages, within the range; one: with its curve', async () => {
    for (let i = 0; i < 5; i++) await putSession(`s${i}`, 1_764_000_000_000 + i * 1000);
    await putSession('other', 1_764_000_000_000, OTHER_INSTALLATION);
    const first = service.sessions.list(INSTALLATION, { limit: 2 });
    expect(first.sessions.map((s) => s.sessionId)).toEqual(['s4', 's3']);
    expect(first.next).toBeString();
    const second = service.sessions.list(INSTALLATION, { limit: 2, before: first.next! });
    expect(second.sessions.map((s) => s.sessionId)).toEqual(['s2', 's1']);
    const last = service.sessions.list(INSTALLATION, { limit: 2, before: second.next! });
    expect(last).toEqual({ sessions: [expect.objectContaining({ sessionId: 's0' })], next: null });
    const ranged = service.sessions.list(INSTALLATION, { from: 1_764_000_001_000, to: 1_764_000_003_000 });
    expect(ranged.sessions.map((s) => s.sessionId)).toEqual(['s3', 's2', 's1']);
    expect(first.sessions[0]).toEqual({
      installationId: INSTALLATION,
      sessionId: 's4',
      startedAt: 1_764_000_004_000,
      endedAt: 1_764_000_004_000 + 1_800_000,
      energyKwh: 20.5,
      durationSeconds: null,
      meteredSeconds: null,
      chargingLossPercent: null,
      gridEnergyKwh: null,
      pricePerKwh: 0.5,
      totalCost: null,
      startSocPercent: null,
      endSocPercent: null,
      lastPower: null,
      curveIntervalMs: null,
      isDemo: true,
      receivedAt: new Date(clock).toISOString(),
    });
    expect(service.sessions.one(INSTALLATION, 's4')).toEqual({
      ...first.sessions[0]!,
      curve: [{ timestampMs: 1_764_000_004_000, powerKw: 50 }],
    });
    expect(service.sessions.one(OTHER_INSTALLATION, 's4')).toBeNull();
    expect([...service.sessions.pages(INSTALLATION)].flat().map((s) => s.sessionId)).toEqual([
      's4',
      's3',
      's2',
      's1',
      's0',
    ]);
  });

  test('a cursor not made by the list is a 400 naming before', () => {
    expect(() => service.sessions.list(INSTALLATION, { before: 'bm90LWEtY3Vyc29y' })).toThrow(
      'before is not a cursor of this list',
    );
  });
});

describe('consumption days', () => {
  test('every day oldest first with the running lifetime sums', async () => {
    await putDays(service, [
      ['2026-11-24', 10, 97.5],
      ['2026-11-23', 5],
    ]);
    expect([...service.consumption.days(INSTALLATION)]).toEqual([
      {
        date: '2026-11-23',
        day: { km: 5, kwh: 2, hours: 0.5, socDrop: 1 },
        sohPercent: null,
        lifetime: { km: 5, kwh: 2, hours: 0.5, socDrop: 1 },
      },
      {
        date: '2026-11-24',
        day: { km: 10, kwh: 2, hours: 0.5, socDrop: 1 },
        sohPercent: 97.5,
        lifetime: { km: 15, kwh: 4, hours: 1, socDrop: 2 },
      },
    ]);
    expect([...service.consumption.days(OTHER_INSTALLATION)]).toEqual([]);
  });
});

describe('installations and planner status', () => {
  test('installations: every one with a sample, a chunk or a session, with the newest sample utc', async () => {
    expect(service.ownerData.installations()).toEqual([]);
    await postSamples(INSTALLATION, [{ utc: UTC, soc: 1 }]);
    await putSession('s', 1_764_000_000_000, OTHER_INSTALLATION);
    expect(service.ownerData.installations()).toEqual([
      { installationId: OTHER_INSTALLATION, names: [], lastSampleUtc: null },
      { installationId: INSTALLATION, names: [], lastSampleUtc: UTC },
    ]);
  });

  test('status without forwarding: nothing waits, nothing was sent', async () => {
    await postSamples(INSTALLATION, [{ utc: UTC, soc: 1 }]);
    expect(service.plannerStatus.status(INSTALLATION)).toEqual({ forwarding: false, ...NOTHING_FORWARDED });
  });
});

describe('exports', () => {
  test('telemetry as NDJSON, oldest first, one sample a line', async () => {
    await postSamples(INSTALLATION, [
      { utc: UTC + 1, soc: 50 },
      { utc: UTC, lat: 48.1, lon: 11.5 },
    ]);
    const exported = service.ownerData.exportStream('telemetry', INSTALLATION, 'ndjson');
    expect(exported.filename).toBe(`telemetry-${INSTALLATION}.ndjson`);
    const lines = (await new Response(exported.body).text())
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual([
      { utc: UTC, lat: 48.1, lon: 11.5 },
      { utc: UTC + 1, soc: 50 },
    ]);
  });
});
