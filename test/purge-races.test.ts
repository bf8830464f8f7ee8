/** A purge while the server is busy with the installation: nothing the server still holds brings a row of it back. */
import { afterEach, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import { startFakePlanner } from './fake-planner.ts';
import { INSTALLATION, overSocket, runCommand, tempDir, testConfig, waitUntil } from './support.ts';

const TOKEN = 'planner-token-of-the-purged-car-01';

let cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** The planner_status rows of the installation. */
function statusRows(databasePath: string, installationId: string): number {
  const db = new Database(databasePath, { readonly: true });
  try {
    return db
      .query<{ n: number }, [string]>('SELECT count(*) AS n FROM planner_status WHERE installation_id = ?')
      .get(installationId)!.n;
  } finally {
    db.close();
  }
}

test('a planner request hung across a purge fails afterwards: its failure writes no planner_status row', async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const fake = startFakePlanner(() => ({ status: 503, until: held }));
  cleanups.push(() => fake.stop());
  const tokens = new Map([[INSTALLATION, TOKEN]]);
  const config = testConfig(tempDir(), {
    planner: { url: fake.url, apiKey: 'planner-api-key-for-race-tests', defaultToken: null, tokens },
  });
  const log = createMemoryLogger();
  const server = await serve(config, log);
  cleanups.push(() => server.stop());
  const sample = { utc: Math.floor(Date.now() / 1000) - 60, soc: 50, lat: 48.1, lon: 11.5 };
  const upload = await overSocket(server).request('POST', '/v1/telemetry', {
    body: { installationId: INSTALLATION, samples: [sample] },
  });
  expect(upload.status).toBe(200);
  await fake.waitFor(1);

  expect((await runCommand(config.databasePath, ['purge', INSTALLATION, '--yes'])).code).toBe(0);
  await waitUntil(() => log.lines.some((line) => line.includes(`purge.applied installation=${INSTALLATION}`)), 2000);
  release(); // the request in flight now fails, after the server forgot the installation
  await waitUntil(() => fake.holding === 0, 2000);
  await server.stop(); // writes the failures still held

  expect(statusRows(config.databasePath, INSTALLATION)).toBe(0);
});
