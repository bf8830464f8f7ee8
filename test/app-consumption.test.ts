/**
 * The car app's consumption chunks as its builds send them, and the history read back as the app reads
 * it. Builds 2.2.35-2.2.39 send the day's totals so far with a `lifetime` object (2.2.37-2.2.39 every
 * 30 minutes, each with a new recordedAt); the current build sends the delta since its last chunk, and
 * its first delta of a day starts from the day's start.
 */
import { afterAll, beforeEach, describe, expect, test } from 'bun:test';
import { orgJson } from './app-json.ts';
import { INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService;
beforeEach(async () => {
  await service?.close();
  service = await startTestService();
});
afterAll(() => service.close());

/** 2026-11-25 08:00 UTC, and the times of the app's syncs after it. */
const EIGHT = 1_764_057_600_000;
const minutes = (n: number) => EIGHT + n * 60_000;

interface Totals {
  km: number;
  kwh: number;
  hours: number;
  soc: number;
}

const totals = (km: number, kwh: number, hours: number, soc: number): Totals => ({ km, kwh, hours, soc });

/** ConsumptionCloudClient.totals: the tracker's `soc` goes out as `socDrop`. */
const wireTotals = (t: Totals) => ({ km: t.km, kwh: t.kwh, hours: t.hours, socDrop: t.soc });

/** A 2.2.37-2.2.39 body: the day so far and the lifetime as it stood, the state of health a float. */
const snapshotBody = (recordedAt: number, date: string, day: Totals, lifetime: Totals) =>
  orgJson({
    installationId: INSTALLATION,
    recordedAt,
    date,
    day: wireTotals(day),
    lifetime: wireTotals(lifetime),
    sohPercent: 97.5,
  });

/** The current build's body: the delta since its last chunk, no lifetime. */
const deltaBody = (recordedAt: number, date: string, delta: Totals) =>
  orgJson({ installationId: INSTALLATION, recordedAt, date, day: wireTotals(delta), sohPercent: 97.5 });

async function send(text: string): Promise<void> {
  const response = await service.request('PUT', '/v1/consumption/daily', { body: text });
  expect(response.status).toBe(204);
}

/** ConsumptionCloudClient.fetchHistory: each record's day and health, top-level lifetime (optDouble: 0 if absent). */
async function historyAsTheAppReadsIt() {
  const response = await service.request('GET', `/v1/consumption/history/${INSTALLATION}`);
  expect(response.status).toBe(200);
  const json = JSON.parse(await response.text()) as Record<string, any>;
  const parseTotals = (o: Record<string, unknown>): Totals =>
    totals(Number(o.km ?? 0), Number(o.kwh ?? 0), Number(o.hours ?? 0), Number(o.socDrop ?? 0));
  const lifetime = json.lifetime == null ? null : parseTotals(json.lifetime);
  const records = (json.records as Record<string, any>[]).map((r) => ({
    date: r.date as string,
    day: parseTotals(r.day),
    soh: r.sohPercent == null ? null : Math.fround(r.sohPercent),
  }));
  return {
    records,
    lifetime,
    perRecordLifetimes: (json.records as Record<string, any>[]).map((r) => parseTotals(r.lifetime)),
  };
}

const LIFETIME_ON_THE_CAR = totals(5010.4, 801.25, 97.5, 1190);

describe('2.2.37-2.2.39: snapshots of the day so far, with a lifetime', () => {
  test('the body is written as org.json writes it', () => {
    expect(snapshotBody(minutes(0), '2026-11-25', totals(10, 1.55, 0.25, 2.5), LIFETIME_ON_THE_CAR)).toBe(
      `{"installationId":"${INSTALLATION}","recordedAt":1764057600000,"date":"2026-11-25",` +
        '"day":{"km":10,"kwh":1.55,"hours":0.25,"socDrop":2.5},' +
        '"lifetime":{"km":5010.4,"kwh":801.25,"hours":97.5,"socDrop":1190},"sohPercent":97.5}',
    );
  });

  test('snapshots of 10, 25.5 and 40.2 km every 30 minutes give a day of 40.2 km, the newest', async () => {
    await send(snapshotBody(minutes(0), '2026-11-25', totals(10, 1.55, 0.25, 2.5), LIFETIME_ON_THE_CAR));
    await send(snapshotBody(minutes(30), '2026-11-25', totals(25.5, 4.0, 0.5, 6), LIFETIME_ON_THE_CAR));
    await send(snapshotBody(minutes(60), '2026-11-25', totals(40.2, 6.9, 0.9, 9.5), LIFETIME_ON_THE_CAR));
    const { records, lifetime } = await historyAsTheAppReadsIt();
    expect(records).toEqual([{ date: '2026-11-25', day: totals(40.2, 6.9, 0.9, 9.5), soh: 97.5 }]);
    // The service's own sum, never the body's lifetime.
    expect(lifetime).toEqual(totals(40.2, 6.9, 0.9, 9.5));
  });

  test('a snapshot sent again (same recordedAt) replaces itself; an older one late counts for nothing', async () => {
    const newest = snapshotBody(minutes(60), '2026-11-25', totals(40.2, 6.9, 0.9, 9.5), LIFETIME_ON_THE_CAR);
    await send(snapshotBody(minutes(0), '2026-11-25', totals(10, 1.55, 0.25, 2.5), LIFETIME_ON_THE_CAR));
    await send(newest);
    await send(newest);
    await send(snapshotBody(minutes(30), '2026-11-25', totals(25.5, 4.0, 0.5, 6), LIFETIME_ON_THE_CAR));
    expect((await historyAsTheAppReadsIt()).records.map((r) => r.day)).toEqual([totals(40.2, 6.9, 0.9, 9.5)]);
    const chunks = service.storage.db
      .query('SELECT count(*) AS n, sum(snapshot) AS snapshots FROM consumption_chunks')
      .get();
    expect(chunks).toEqual({ n: 3, snapshots: 3 });
  });

  test('a backlog day closed by its snapshot and today’s: both lifetimes are the service’s sums', async () => {
    // One sync: the day before (its close) first, then today so far, both stamped with the sync's time.
    await send(
      snapshotBody(minutes(0), '2026-11-24', totals(33.25, 5.5, 0.75, 8), totals(4970.2, 794.35, 96.6, 1180.5)),
    );
    await send(snapshotBody(minutes(0), '2026-11-25', totals(40.2, 6.9, 0.9, 9.5), LIFETIME_ON_THE_CAR));
    const { records, lifetime, perRecordLifetimes } = await historyAsTheAppReadsIt();
    expect(records.map((r) => r.date)).toEqual(['2026-11-25', '2026-11-24']);
    const both = totals(33.25 + 40.2, 5.5 + 6.9, 0.75 + 0.9, 8 + 9.5);
    expect(lifetime).toEqual(both);
    expect(perRecordLifetimes).toEqual([both, totals(33.25, 5.5, 0.75, 8)]);
  });
});

describe('2.2.35-2.2.36: each closed day once, every day of a sync stamped with the sync’s time', () => {
  /** A 2.2.35-2.2.36 body: built field by field as in 2.2.39 (same keys, same order), for closed days only. */
  const closedDayBody = (recordedAt: number, date: string, day: Totals) =>
    orgJson({
      installationId: INSTALLATION,
      recordedAt,
      date,
      day: wireTotals(day),
      lifetime: wireTotals(LIFETIME_ON_THE_CAR),
      sohPercent: 97.5,
    });

  test('back online after three days: the three closed days in one sync, then yesterday after midnight', async () => {
    // syncDailyConsumption: up to 10 stored days after the last one answered, before today, at one nowMs.
    for (const [date, km] of [
      ['2026-11-22', 42],
      ['2026-11-23', 18.5],
      ['2026-11-24', 7.25],
    ] as const) {
      await send(closedDayBody(minutes(0), date, totals(km, 0, 0, 0)));
    }
    await send(closedDayBody(minutes(24 * 60 + 5), '2026-11-25', totals(1.5, 0, 0, 0)));
    const { records, lifetime } = await historyAsTheAppReadsIt();
    expect(records.map((r) => [r.date, r.day.km, r.soh])).toEqual([
      ['2026-11-25', 1.5, 97.5],
      ['2026-11-24', 7.25, 97.5],
      ['2026-11-23', 18.5, 97.5],
      ['2026-11-22', 42, 97.5],
    ]);
    expect(lifetime!.km).toBe(69.25);
  });
});

describe('2.2.39: syncDailyConsumption stamps every day of one sync with the same recordedAt', () => {
  /** One sync as the app runs it: each stored day after the last one answered 204, then today, all at `nowMs`. */
  async function sync(nowMs: number, days: [string, Totals][]): Promise<void> {
    for (const [date, day] of days) await send(snapshotBody(nowMs, date, day, LIFETIME_ON_THE_CAR));
  }

  test('three days at one recordedAt are three days', async () => {
    await sync(1_764_080_000_000, [
      ['2025-11-23', totals(10, 1.5, 0.25, 2.5)],
      ['2025-11-24', totals(20, 3, 0.5, 5)],
      ['2025-11-25', totals(30, 4.5, 0.75, 7.5)],
    ]);
    const { records, lifetime } = await historyAsTheAppReadsIt();
    expect(records.map((r) => [r.date, r.day.km])).toEqual([
      ['2025-11-25', 30],
      ['2025-11-24', 20],
      ['2025-11-23', 10],
    ]);
    expect(lifetime).toEqual(totals(60, 9, 1.5, 15));
  });

  test('the first sync after midnight keeps yesterday’s close and starts today', async () => {
    const yesterdayAt = (hour: number) => EIGHT - 86_400_000 + hour * 3_600_000;
    await sync(yesterdayAt(15), [['2026-11-24', totals(20, 3, 0.5, 5)]]);
    await sync(yesterdayAt(15.5), [['2026-11-24', totals(33.25, 5.5, 0.75, 8)]]);
    // 00:00 UTC: yesterday is a stored day after the last one answered (the 23rd), so its close goes first,
    // with the 6.75 km driven since the last sync.
    await sync(yesterdayAt(16), [
      ['2026-11-24', totals(40, 6.5, 1, 10)],
      ['2026-11-25', totals(0, 0, 0, 0)],
    ]);
    await sync(minutes(0), [['2026-11-25', totals(10, 1.5, 0.25, 2.5)]]);
    const { records, lifetime } = await historyAsTheAppReadsIt();
    expect(records.map((r) => [r.date, r.day])).toEqual([
      ['2026-11-25', totals(10, 1.5, 0.25, 2.5)],
      ['2026-11-24', totals(40, 6.5, 1, 10)],
    ]);
    expect(lifetime).toEqual(totals(50, 8, 1.25, 12.5));
  });

  test('after two days offline, backlog and today at one recordedAt: each day keeps its newest snapshot', async () => {
    const dayBefore = (days: number) => EIGHT - days * 86_400_000;
    await sync(dayBefore(3) + 12 * 3_600_000, [['2026-11-22', totals(12, 2, 0.25, 3)]]);
    // Offline on the 23rd and 24th: every sync failed, so the last day answered is still the 21st.
    await sync(minutes(0), [
      ['2026-11-22', totals(42, 7, 1, 11)],
      ['2026-11-23', totals(18.5, 3, 0.5, 4)],
      ['2026-11-24', totals(7.25, 1.25, 0.25, 2)],
      ['2026-11-25', totals(1.5, 0.25, 0.125, 0.5)],
    ]);
    const { records, lifetime } = await historyAsTheAppReadsIt();
    expect(records.map((r) => [r.date, r.day.km])).toEqual([
      ['2026-11-25', 1.5],
      ['2026-11-24', 7.25],
      ['2026-11-23', 18.5],
      ['2026-11-22', 42],
    ]);
    expect(lifetime).toEqual(totals(69.25, 11.5, 1.875, 17.5));
  });

  test('a delta recorded at the same time as a snapshot of its day is after it: the day is the delta', async () => {
    await send(snapshotBody(minutes(30), '2026-11-25', totals(25.5, 4, 0.5, 6), LIFETIME_ON_THE_CAR));
    await send(deltaBody(minutes(30), '2026-11-25', totals(28.5, 4.5, 0.5625, 6.5)));
    expect((await historyAsTheAppReadsIt()).records[0]!.day).toEqual(totals(28.5, 4.5, 0.5625, 6.5));
    // Both kept: a snapshot sent again later still counts for nothing.
    await send(snapshotBody(minutes(30), '2026-11-25', totals(25.5, 4, 0.5, 6), LIFETIME_ON_THE_CAR));
    expect((await historyAsTheAppReadsIt()).lifetime).toEqual(totals(28.5, 4.5, 0.5625, 6.5));
    expect(service.storage.db.query('SELECT count(*) AS n FROM consumption_chunks').get()).toEqual({ n: 2 });
  });
});

describe('the current build: deltas, and the update from a snapshot build in the middle of a day', () => {
  test('delta chunks add up; org.json’s 4.0E-4 and -0 are read as the numbers they are', async () => {
    const first = deltaBody(minutes(0), '2026-11-25', totals(12.4, 2.05, 0.0004, -0));
    expect(first).toContain('"day":{"km":12.4,"kwh":2.05,"hours":4.0E-4,"socDrop":-0}');
    await send(first);
    await send(deltaBody(minutes(2), '2026-11-25', totals(0.75, 0.125, 0.0125, 0.5)));
    const { records, lifetime } = await historyAsTheAppReadsIt();
    const sum = totals(12.4 + 0.75, 2.05 + 0.125, 0.0004 + 0.0125, 0.5);
    expect(records).toEqual([{ date: '2026-11-25', day: sum, soh: 97.5 }]);
    expect(lifetime).toEqual(sum);
    expect(
      service.storage.db.query('SELECT hours, soc_drop FROM consumption_chunks ORDER BY recorded_at LIMIT 1').get(),
    ).toEqual({
      hours: 0.0004,
      soc_drop: 0,
    });
  });

  test('snapshots until the update, then deltas from the day’s start: the day is the deltas', async () => {
    const day = async () => (await historyAsTheAppReadsIt()).records[0]!.day;
    await send(snapshotBody(minutes(0), '2026-11-25', totals(10, 1.5, 0.25, 2.5), LIFETIME_ON_THE_CAR));
    await send(snapshotBody(minutes(30), '2026-11-25', totals(25.5, 4, 0.5, 6), LIFETIME_ON_THE_CAR));
    expect(await day()).toEqual(totals(25.5, 4, 0.5, 6));
    // Updated at 08:45: the new build's checkpoint for today is zero, so its first chunk is the day so far.
    await send(deltaBody(minutes(47), '2026-11-25', totals(28.5, 4.5, 0.5625, 6.5)));
    expect(await day()).toEqual(totals(28.5, 4.5, 0.5625, 6.5));
    await send(deltaBody(minutes(49), '2026-11-25', totals(4.5, 0.75, 0.0625, 1)));
    expect(await day()).toEqual(totals(33, 5.25, 0.625, 7.5));
    expect((await historyAsTheAppReadsIt()).lifetime).toEqual(totals(33, 5.25, 0.625, 7.5));
  });

  test('the update’s first delta sent again after its day moved on keeps the day the deltas', async () => {
    const first = deltaBody(minutes(47), '2026-11-25', totals(28.5, 4.5, 0.5625, 6.5));
    await send(snapshotBody(minutes(30), '2026-11-25', totals(25.5, 4, 0.5, 6), LIFETIME_ON_THE_CAR));
    await send(first);
    await send(deltaBody(minutes(49), '2026-11-25', totals(4.5, 0.75, 0.0625, 1)));
    await send(first); // the app's cache drain resends a chunk whose answer it never read
    expect((await historyAsTheAppReadsIt()).records[0]!.day).toEqual(totals(33, 5.25, 0.625, 7.5));
  });
});

test('any mix of deltas and snapshots, sent again and moved between days, sums as the rule says', async () => {
  // Multiples of 1/64 below 2^20: every sum is exact in doubles, so the model may add as it likes.
  let seed = 7;
  const random = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
  const dates = ['2026-11-24', '2026-11-25'];
  // A delta's key is its recordedAt (a re-sent one may move to another day), a snapshot's its recordedAt and date.
  const model = new Map<string, { recordedAt: number; date: string; km: number; snapshot: boolean }>();
  for (let step = 0; step < 150; step++) {
    const recordedAt = minutes(random(20));
    const chunk = { recordedAt, date: dates[random(2)]!, km: random(64 * 500) / 64, snapshot: random(3) === 0 };
    model.set(chunk.snapshot ? `${recordedAt} ${chunk.date}` : `${recordedAt}`, chunk);
    const values = totals(chunk.km, 0, 0, 0);
    await send(
      chunk.snapshot ? snapshotBody(recordedAt, chunk.date, values, values) : deltaBody(recordedAt, chunk.date, values),
    );
  }
  const expected = dates
    .map((date) => {
      // The newest chunk, a delta before a snapshot of the same time: a snapshot there counts.
      const chunks = [...model.values()]
        .filter((chunk) => chunk.date === date)
        .sort((a, b) => a.recordedAt - b.recordedAt || Number(b.snapshot) - Number(a.snapshot));
      const deltas = chunks.filter((chunk) => !chunk.snapshot);
      const newest = chunks.at(-1);
      const counted = newest?.snapshot ? newest.km : 0;
      return { date, km: deltas.reduce((sum, chunk) => sum + chunk.km, 0) + counted, days: chunks.length };
    })
    .filter((day) => day.days > 0)
    .reverse();
  const { records, lifetime } = await historyAsTheAppReadsIt();
  expect(records.map((r) => ({ date: r.date, km: r.day.km }))).toEqual(expected.map(({ date, km }) => ({ date, km })));
  expect(lifetime!.km).toBe(expected.reduce((sum, day) => sum + day.km, 0));
});
