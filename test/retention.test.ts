/**
 * TELEMETRY_RETENTION_DAYS: old samples go (never one waiting for the planner), status counts follow,
 * space is reused or given back.
 */
import { afterEach, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { ConfigError, serveConfig } from '../src/config.ts';
import type { SampleForwarder } from '../src/telemetry/outbox.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import {
  countSamples,
  INSTALLATION,
  OTHER_INSTALLATION,
  OWNER_TOKEN,
  startTestService,
  tempDir,
  type TestService,
} from './support.ts';

const NOW = 1_764_100_000_000;
const NOW_UTC = NOW / 1000;
const DAY = 86_400;
/** Forwarding on for every installation, no request ever made: each stored sample waits until a test settles it. */
const holdingForwarder: SampleForwarder = { forwards: () => true, stored: () => {} };

const services: TestService[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.close();
});

async function service(options: { forward?: boolean; dir?: string } = {}) {
  const started = await startTestService(
    { telemetryRetentionDays: 30 },
    { now: () => NOW, dir: options.dir, ...(options.forward && { forwarder: holdingForwarder }) },
  );
  services.push(started);
  return started;
}

async function post(target: TestService, utcs: number[], installationId = INSTALLATION) {
  for (let i = 0; i < utcs.length; i += 1000) {
    const samples = utcs
      .slice(i, i + 1000)
      .map((utc) => ({ utc, soc: 50, power: 12.5, lat: 48.1, lon: 11.5, car_model: 'a car model name' }));
    expect((await target.request('POST', '/v1/telemetry', { body: { installationId, samples } })).status).toBe(200);
  }
}

const settle = (target: TestService, utcs: number[], state: typeof PlannerState.sent | typeof PlannerState.givenUp) =>
  target.storage.committer.write('plannerSettled', {
    samples: utcs.map((utc) => ({ installationId: INSTALLATION, utc, state, at: NOW })),
    failures: [],
  });

const storedUtcs = (target: TestService) =>
  target.storage.db
    .query<{ utc: number }, []>('SELECT utc FROM samples ORDER BY utc')
    .all()
    .map((row) => row.utc);

const pragma = (target: TestService, name: string) =>
  target.storage.db.query<Record<string, number>, []>(`PRAGMA ${name}`).get()![name]!;

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

test('samples past the retention go, those waiting for the planner stay; the status counts follow', async () => {
  const target = await service({ forward: true });
  const old = range(NOW_UTC - 40 * DAY, 10);
  const recent = range(NOW_UTC - 100, 5);
  await post(target, [...old, ...recent]);
  await post(target, [NOW_UTC - 31 * DAY], OTHER_INSTALLATION);
  await settle(target, [...old.slice(0, 4), recent[0]!], PlannerState.sent);
  await settle(target, old.slice(4, 6), PlannerState.givenUp);
  const before = await (await target.request('GET', `/v1/planner/status/${INSTALLATION}`)).json();
  expect(before).toMatchObject({ waiting: 8, sent: 5, givenUp: 2 });

  await target.retention.run();

  // The other installation's old sample waits for the planner too.
  expect(storedUtcs(target)).toEqual([...old.slice(6), NOW_UTC - 31 * DAY, ...recent]);
  expect(countSamples(target, OTHER_INSTALLATION)).toBe(1);
  expect(await (await target.request('GET', `/v1/planner/status/${INSTALLATION}`)).json()).toMatchObject({
    waiting: 8,
    sent: 1,
    givenUp: 0,
  });
  expect(target.log.lines.filter((line) => line.includes('retention.deleted'))).toEqual([
    expect.stringContaining(`retention.deleted samples=6 before=${NOW_UTC - 30 * DAY}`),
  ]);
});

test('more samples than a batch: every expired one goes, batch after batch, and nothing newer', async () => {
  const target = await service();
  const old = range(NOW_UTC - 60 * DAY, 4500);
  await post(target, [...old, NOW_UTC - 30 * DAY, NOW_UTC - 10]); // exactly 30 days old is kept
  await target.retention.run();
  expect(storedUtcs(target)).toEqual([NOW_UTC - 30 * DAY, NOW_UTC - 10]);
});

test("a new database has incremental auto-vacuum: the deleted samples' pages go back to the file system", async () => {
  const target = await service();
  expect(pragma(target, 'auto_vacuum')).toBe(2);
  await post(target, range(NOW_UTC - 40 * DAY, 20_000));
  const full = pragma(target, 'page_count');
  await target.retention.run();
  expect(countSamples(target, INSTALLATION)).toBe(0);
  expect(pragma(target, 'freelist_count')).toBe(0);
  expect(pragma(target, 'page_count')).toBeLessThan(full / 4);
  expect(target.log.lines.find((line) => line.includes('retention.deleted'))).toMatch(/pagesFreed=[1-9]\d+/);
});

test('a database made before (no auto-vacuum): new samples reuse freed pages, the file does not grow', async () => {
  const dir = tempDir();
  const older = new Database(join(dir, 'ev-ingest.db'));
  older.run('CREATE TABLE made_by_an_older_version (x)'); // a first page, so no auto-vacuum is set on it later
  older.run('DROP TABLE made_by_an_older_version');
  older.close();
  const target = await service({ dir });
  expect(pragma(target, 'auto_vacuum')).toBe(0);
  await post(target, range(NOW_UTC - 40 * DAY, 20_000));
  const full = pragma(target, 'page_count');
  await target.retention.run();
  expect(pragma(target, 'freelist_count')).toBeGreaterThan(full / 2);
  await post(target, range(NOW_UTC - 20 * DAY, 20_000));
  expect(pragma(target, 'page_count')).toBeLessThanOrEqual(full + 8);
});

test('TELEMETRY_RETENTION_DAYS: unset keeps samples for ever; otherwise 1 to 36500 whole days', () => {
  const env = { INGEST_TOKEN: OWNER_TOKEN };
  expect(serveConfig(env).telemetryRetentionDays).toBeNull();
  expect(serveConfig({ ...env, TELEMETRY_RETENTION_DAYS: '365' }).telemetryRetentionDays).toBe(365);
  for (const value of ['0', '-1', '1.5', 'forever', '36501']) {
    expect(() => serveConfig({ ...env, TELEMETRY_RETENTION_DAYS: value })).toThrow(
      new ConfigError(
        'TELEMETRY_RETENTION_DAYS must be a whole number of days from 1 to 36500; unset it to keep samples for ever',
      ),
    );
  }
});
