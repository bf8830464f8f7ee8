/** `ev-ingest purge` in its own process beside a listening server: rows gone, the server forgets within a second. */
import { afterEach, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { startFakePlanner, type FakePlanner } from './fake-planner.ts';
import {
  consumptionChunk,
  INSTALLATION,
  OTHER_INSTALLATION,
  overSocket,
  runCommand,
  tempDir,
  testConfig,
  waitUntil,
} from './support.ts';

const KEY = 'planner-api-key-for-purge-tests';
const PURGED_TOKEN = 'planner-token-of-the-purged-car-01';
const KEPT_TOKEN = 'planner-token-of-the-kept-car-0002';
const T0 = Math.floor(Date.now() / 1000) - 3600;

let cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** `ev-ingest purge …` from source, `input` on its standard input. */
const runPurge = (databasePath: string, args: string[], input = '') =>
  runCommand(databasePath, ['purge', ...args], { input });

/** Rows of each table naming the installation (samples by its number), and installation rows a purge left detached. */
function rowsOf(databasePath: string, installationId: string): Record<string, number> {
  const db = new Database(databasePath, { readonly: true });
  try {
    const count = (sql: string) => db.query<{ n: number }, [string]>(sql).get(installationId)!.n;
    // Every table with an installation_id column, found in the schema: a table added later is checked too.
    const tables = db
      .query<{ name: string }, []>(
        `SELECT m.name FROM sqlite_master AS m WHERE m.type = 'table'
         AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) AS c WHERE c.name = 'installation_id') ORDER BY m.name`,
      )
      .all()
      .map((row) => row.name);
    return {
      samples: count(
        'SELECT count(*) AS n FROM samples JOIN installations ON installations.id = installation WHERE uuid = ?',
      ),
      installations: count('SELECT count(*) AS n FROM installations WHERE uuid = ?'),
      ...Object.fromEntries(
        tables.map((table) => [table, count(`SELECT count(*) AS n FROM ${table} WHERE installation_id = ?`)]),
      ),
      detached: db.query<{ n: number }, []>("SELECT count(*) AS n FROM installations WHERE uuid LIKE 'purged:%'").get()!
        .n,
    };
  } finally {
    db.close();
  }
}

interface Stored {
  server: Running;
  fake: FakePlanner;
  client: ReturnType<typeof overSocket>;
  log: ReturnType<typeof createMemoryLogger>;
  databasePath: string;
  carToken: string;
  /** The planner accepts from now on. */
  plannerUp(): void;
}

/** A listening server with two installations' data, samples of both waiting for a planner answering 503 for now. */
async function storedBeside(): Promise<Stored> {
  let plannerUp = false;
  const fake = startFakePlanner(() => (plannerUp ? {} : { status: 503 }));
  cleanups.push(() => fake.stop());
  const dir = tempDir();
  const tokens = new Map([
    [INSTALLATION, PURGED_TOKEN],
    [OTHER_INSTALLATION, KEPT_TOKEN],
  ]);
  const config = testConfig(dir, { planner: { url: fake.url, apiKey: KEY, defaultToken: null, tokens } });
  const log = createMemoryLogger();
  const server = await serve(config, log);
  cleanups.push(() => server.stop());
  const client = overSocket(server);
  for (const installationId of [INSTALLATION, OTHER_INSTALLATION]) {
    const samples = Array.from({ length: 5 }, (_, i) => ({ utc: T0 + i, soc: 50 + i, lat: 48.1, lon: 11.5 }));
    expect((await client.request('POST', '/v1/telemetry', { body: { installationId, samples } })).status).toBe(200);
    expect(
      (await client.request('PUT', '/v1/consumption/daily', { body: consumptionChunk({ installationId }) })).status,
    ).toBe(204);
    const session = { installationId, startedAt: T0 * 1000, endedAt: T0 * 1000 + 60_000, energyKwh: 5 };
    expect((await client.request('PUT', '/v1/charging-sessions/s1', { body: session })).status).toBe(204);
    // Read once, so the history answer is cached.
    expect(
      (
        (await (await client.request('GET', `/v1/consumption/history/${installationId}`)).json()) as {
          records: unknown[];
        }
      ).records.length,
    ).toBe(1);
  }
  const carToken = (await server.service.devices.pair(INSTALLATION, 'car')).token;
  expect((await client.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token: carToken })).status).toBe(
    200,
  );
  await fake.waitFor(2); // the first sample of each installation was tried and refused: both wait out a backoff
  return {
    server,
    fake,
    client,
    log,
    databasePath: config.databasePath,
    carToken,
    plannerUp: () => void (plannerUp = true),
  };
}

test('purge --yes beside a running server: no row left, the other untouched, the server forgets in 1 s', async () => {
  const stored = await storedBeside();
  const { client, fake, databasePath } = stored;
  const keptBefore = rowsOf(databasePath, OTHER_INSTALLATION);

  const purge = await runPurge(databasePath, [INSTALLATION, '--yes']);
  expect(purge).toEqual({
    code: 0,
    stdout:
      `purged ${INSTALLATION}: samples=5 devices=1 consumption_chunks=1 consumption_days=1 consumption_lifetimes=1 ` +
      'charging_sessions=1 planner_status=0\n',
    stderr: '',
  });
  const purgedAt = Date.now();
  expect(rowsOf(databasePath, INSTALLATION)).toEqual({
    samples: 0,
    installations: 0,
    devices: 0,
    consumption_chunks: 0,
    consumption_days: 0,
    consumption_lifetimes: 0,
    charging_sessions: 0,
    planner_status: 0,
    purges: expect.any(Number), // the server deletes it once applied (test/purge-record.test.ts)
    detached: 0,
  });
  expect(rowsOf(databasePath, OTHER_INSTALLATION)).toEqual(keptBefore);

  // Within a second: the cached history answers empty, the car's token is refused.
  await waitUntil(
    () => stored.log.lines.some((line) => line.includes(`purge.applied installation=${INSTALLATION}`)),
    1000,
  );
  expect(Date.now() - purgedAt).toBeLessThan(1000);
  expect(await (await client.request('GET', `/v1/consumption/history/${INSTALLATION}`)).json()).toEqual({
    records: [],
    lifetime: { km: 0, kwh: 0, hours: 0, socDrop: 0 },
  });
  await waitUntil(() => stored.server.service.devices.size === 0, 1000);
  expect(
    (await client.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token: stored.carToken })).status,
  ).toBe(401);
  expect((await client.request('GET', `/v1/telemetry/latest/${INSTALLATION}`)).status).toBe(404);

  // The planner comes back: the kept installation's samples go out, none of the purged one's.
  const before = fake.utcsOf(PURGED_TOKEN).length;
  stored.plannerUp();
  await waitUntil(() => fake.utcsOf(KEPT_TOKEN).includes(T0 + 4), 10_000);
  expect(fake.utcsOf(PURGED_TOKEN).length).toBe(before);
  expect(await (await client.request('GET', `/v1/telemetry/latest/${OTHER_INSTALLATION}`)).json()).toMatchObject({
    utc: T0 + 4,
  });
});

test('without --yes the id must be typed again: anything else deletes nothing', async () => {
  const { databasePath } = await storedBeside();
  const before = rowsOf(databasePath, INSTALLATION);
  const refused = await runPurge(databasePath, [INSTALLATION], 'no\n');
  expect(refused.code).toBe(1);
  expect(refused.stderr).toBe(
    `Type ${INSTALLATION} to delete all of its data, or anything else to stop: ` +
      'ev-ingest: not confirmed; nothing was deleted\n',
  );
  expect(rowsOf(databasePath, INSTALLATION)).toEqual(before);
  expect((await runPurge(databasePath, [INSTALLATION], '')).code).toBe(1);
  const confirmed = await runPurge(databasePath, [INSTALLATION.toUpperCase()], `${INSTALLATION}\n`);
  expect(confirmed.code).toBe(0);
  expect(rowsOf(databasePath, INSTALLATION).samples).toBe(0);
});

test('an id that is not a UUID, or holds nothing, is refused', async () => {
  const { databasePath } = await storedBeside();
  expect(await runPurge(databasePath, ['nope', '--yes'])).toEqual({
    code: 2,
    stdout: '',
    stderr: 'ev-ingest: "nope" is not an installation id (a UUID)\n',
  });
  const unknown = '11111111-2222-4333-8444-555555555555';
  expect(await runPurge(databasePath, [unknown, '--yes'])).toEqual({
    code: 1,
    stdout: '',
    stderr: `ev-ingest: nothing is stored for installation ${unknown}\n`,
  });
  expect((await runPurge(databasePath, ['--yes'])).code).toBe(2);
});
