/** Consumption sums that never drift, sums an earlier build wrote, and the history cache. */
import { describe, expect, test } from 'bun:test';
import type { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { Consumption } from '../src/consumption/service.ts';
import { parseChunk } from '../src/consumption/model.ts';
import type { Committer } from '../src/db/committer.ts';
import { embeddedMigrations } from '../src/db/migrations.macro.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import { limits } from '../src/limits.ts';
import {
  answer,
  consumptionChunk,
  INSTALLATION,
  installationNumbered,
  startTestService,
  tempDir,
  type ConsumptionChunk,
} from './support.ts';
import {
  service,
  useConsumptionService,
  type Day,
  T0,
  day,
  chunk,
  put,
  history,
  FIELDS,
  exactSums,
} from './consumption-support.ts';

useConsumptionService();

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

  test.each([1, 2, 3])(
    'random writes and re-writes, tiny values among them, leave exactly the sums of the surviving chunks (seed %d)',
    async (seed) => {
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
        expect(record.lifetime).toEqual(
          exactSums(surviving.filter(([, c]) => c.date <= record.date).map(([, c]) => c.day)),
        );
        expect(record.sohPercent).toBe(ofDay.findLast((c) => c.sohPercent !== undefined)?.sohPercent);
      }
      expect(lifetime).toEqual(records[0]!.lifetime);
    },
  );
});

describe('sums an earlier build wrote in its fixed unit of 2^-64', () => {
  /** The earlier version's sum of a field: each value rounded to units of 2^-64, added, as decimal text. */
  const legacySum = (days: Day[], field: (typeof FIELDS)[number]) =>
    String(days.reduce((units, day) => units + BigInt(Math.round(day[field] * 2 ** 64)), 0n));

  /** A folder with a schema 0003 database holding chunks with the day and lifetime sums the earlier version wrote. */
  function legacyDatabase(chunks: ConsumptionChunk[]): string {
    const dir = tempDir();
    const db = openDatabase(join(dir, 'ev-ingest.db'), 'fast');
    migrate(db, embeddedMigrations().slice(0, 4)); // 0000 to 0003: before the sums' unit
    const sums = (days: Day[]) => FIELDS.map((field) => legacySum(days, field));
    for (const c of chunks) {
      db.query('INSERT INTO consumption_chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
        c.installationId,
        c.recordedAt,
        c.date,
        c.day.km,
        c.day.kwh,
        c.day.hours,
        c.day.socDrop,
        c.sohPercent ?? null,
      );
    }
    for (const installationId of new Set(chunks.map((c) => c.installationId))) {
      const own = chunks.filter((c) => c.installationId === installationId);
      for (const date of new Set(own.map((c) => c.date))) {
        const ofDay = own.filter((c) => c.date === date).sort((a, b) => a.recordedAt - b.recordedAt);
        db.query('INSERT INTO consumption_days VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
          installationId,
          date,
          ofDay.length,
          ...sums(ofDay.map((c) => c.day)),
          ofDay.findLast((c) => c.sohPercent !== undefined)?.sohPercent ?? null,
        );
      }
      db.query('INSERT INTO consumption_lifetimes VALUES (?, ?, ?, ?, ?)').run(
        installationId,
        ...sums(own.map((c) => c.day)),
      );
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
        (
          (await answer(await upgraded.request('GET', `/v1/consumption/history/${INSTALLATION}`))).body as {
            records: { date: string; day: Day }[];
          }
        ).records;
      // 0.0001 had been rounded to the 2^-64 unit: the earlier answer is kept, not read in another unit.
      expect((await records()).map((record) => record.day)).toEqual([
        day(2, 0.25, 0.25, 3),
        day(10, 0.00009999999999999999, 0.5, 1),
      ]);
      const later = consumptionChunk({ recordedAt: T0 + 2, date: '2026-11-24', day: day(0.5, 0.125, 0.5, 0.5) });
      expect((await upgraded.request('PUT', '/v1/consumption/daily', { body: later })).status).toBe(204);
      expect((await records()).at(-1)!.day).toEqual(day(10.5, 0.12509999999999999, 1, 1.5));
      // The migration gave the earlier rows their unit; the rewritten day still needs it for its rounded 0.0001.
      const units = upgraded.storage.db
        .query('SELECT date, unit_bits AS bits FROM consumption_days ORDER BY date')
        .all();
      expect(units).toEqual([
        { date: '2026-11-24', bits: 64 },
        { date: '2026-11-25', bits: 64 },
      ]);
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

test('a read during a chunk write may answer the old history; the cache forgets it once that commits', async () => {
  const { committer } = service.storage;
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const slowCommitter = { write: async (op, args) => (await held, committer.write(op, args)) } as Pick<
    Committer,
    'write'
  > as Committer;
  const history = new Consumption(service.storage.db, slowCommitter);
  const lifetimeKm = () => (JSON.parse(history.historyJson(INSTALLATION)) as { lifetime: Day }).lifetime.km;
  expect(lifetimeKm()).toBe(0);
  const writing = history.putChunk(parseChunk(chunk({ day: day(10) })));
  expect(lifetimeKm()).toBe(0); // not committed yet
  release();
  await writing;
  expect(lifetimeKm()).toBe(10);
});

test('a write failing after its commit (a failed WAL sync) still makes the cache forget the answer', async () => {
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
