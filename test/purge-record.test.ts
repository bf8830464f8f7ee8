/** The record of a purge that the server reads: deleted once the server has forgotten the installation. */
import { afterEach, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { INSTALLATION, OTHER_INSTALLATION, overSocket, runCommand, tempDir, testConfig, waitUntil } from './support.ts';

let cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** The rows of the purges table, as [id, installation id]. */
function purgeRows(databasePath: string): [number, string][] {
  const db = new Database(databasePath, { readonly: true });
  try {
    return db
      .query<{ id: number; installationId: string }, []>('SELECT id, installation_id AS installationId FROM purges')
      .all()
      .map((row) => [row.id, row.installationId]);
  } finally {
    db.close();
  }
}

const purge = async (databasePath: string, installationId: string) =>
  expect((await runCommand(databasePath, ['purge', installationId, '--yes'])).code).toBe(0);

async function upload(server: Running, installationId: string) {
  const samples = [{ utc: Math.floor(Date.now() / 1000) - 60, soc: 50 }];
  const response = await overSocket(server).request('POST', '/v1/telemetry', { body: { installationId, samples } });
  expect(response.status).toBe(200);
}

const applied = (log: ReturnType<typeof createMemoryLogger>, installationId: string) =>
  log.lines.filter((line) => line.includes(`purge.applied installation=${installationId}`)).length;

test('beside a running server the purge row goes once applied; purges after it are still applied', async () => {
  const config = testConfig(tempDir());
  const log = createMemoryLogger();
  const server = await serve(config, log);
  cleanups.push(() => server.stop());
  await upload(server, INSTALLATION);
  await purge(config.databasePath, INSTALLATION);
  await waitUntil(() => applied(log, INSTALLATION) === 1, 2000);
  await waitUntil(() => purgeRows(config.databasePath).length === 0, 2000);

  // The table is empty, so the next purge is numbered from 1 again: the server applies it all the same.
  await upload(server, OTHER_INSTALLATION);
  await purge(config.databasePath, OTHER_INSTALLATION);
  await waitUntil(() => applied(log, OTHER_INSTALLATION) === 1, 2000);
  await waitUntil(() => purgeRows(config.databasePath).length === 0, 2000);
  expect(applied(log, INSTALLATION)).toBe(1);
});

test('with no server running the row waits for the next start, which applies and deletes it', async () => {
  const config = testConfig(tempDir());
  const first = await serve(config, createMemoryLogger());
  await upload(first, INSTALLATION);
  await first.stop();
  await purge(config.databasePath, INSTALLATION);
  expect(purgeRows(config.databasePath)).toEqual([[1, INSTALLATION]]);

  const log = createMemoryLogger();
  const server = await serve(config, log);
  cleanups.push(() => server.stop());
  await waitUntil(() => purgeRows(config.databasePath).length === 0, 2000);
  expect(applied(log, INSTALLATION)).toBe(1);
});
