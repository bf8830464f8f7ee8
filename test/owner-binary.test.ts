/** The compiled binary: the owner's reads over its socket, its `status` and `purge` commands beside it serving. */
import { beforeAll, expect, test } from 'bun:test';
import { join } from 'node:path';
import { compiledBinary, ownerRequest, startBinary } from './binary.ts';
import { consumptionChunk, INSTALLATION, OTHER_INSTALLATION, OWNER_TOKEN, tempDir } from './support.ts';

let binary: string;
beforeAll(async () => {
  binary = await compiledBinary();
}, 120_000);

function run(args: string[], env: Record<string, string>) {
  const result = Bun.spawnSync([binary, ...args], {
    cwd: tempDir(),
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 20_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

test('exports stream from the binary; status and purge run beside it, which forgets the purged one', async () => {
  const dir = tempDir();
  const env = { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(dir, 'ev-ingest.db'), TELEMETRY_RETENTION_DAYS: '3650' };
  const server = await startBinary(binary, env, dir);
  try {
    const utc = Math.floor(Date.now() / 1000) - 60;
    for (const installationId of [INSTALLATION, OTHER_INSTALLATION]) {
      const samples = Array.from({ length: 300 }, (_, i) => ({ utc: utc - 300 + i, soc: 50, lat: 48.1, lon: 11.5 }));
      expect((await ownerRequest(server, 'POST', '/v1/telemetry', { installationId, samples })).status).toBe(200);
      expect(
        (await ownerRequest(server, 'PUT', '/v1/consumption/daily', consumptionChunk({ installationId }))).status,
      ).toBe(204);
    }
    const gpx = await ownerRequest(server, 'GET', `/v1/telemetry/export/${INSTALLATION}?format=gpx`);
    expect(gpx.headers.get('content-disposition')).toBe(`attachment; filename="telemetry-${INSTALLATION}.gpx"`);
    expect((await gpx.text()).match(/<trkpt /g)?.length).toBe(300);
    const history = await ownerRequest(server, 'GET', `/v1/consumption/history/${INSTALLATION}`);
    expect(((await history.json()) as { records: unknown[] }).records.length).toBe(1);

    const none = 'waiting=0 sent=0 givenUp=0 lastSentAt=none lastSentUtc=none lastFailure=none';
    expect(run(['status'], env)).toEqual({
      code: 0,
      stdout: `${OTHER_INSTALLATION} ${none}\n${INSTALLATION} ${none}\n`,
      stderr: '',
    });

    const purged = run(['purge', INSTALLATION, '--yes'], env);
    expect([purged.code, purged.stderr]).toEqual([0, '']);
    expect(purged.stdout).toStartWith(`purged ${INSTALLATION}: samples=300 devices=0 consumption_chunks=1`);
    await Bun.sleep(1000);
    expect(await (await ownerRequest(server, 'GET', `/v1/consumption/history/${INSTALLATION}`)).json()).toEqual({
      records: [],
      lifetime: { km: 0, kwh: 0, hours: 0, socDrop: 0 },
    });
    expect((await ownerRequest(server, 'GET', `/v1/telemetry/latest/${INSTALLATION}`)).status).toBe(404);
    expect((await ownerRequest(server, 'GET', `/v1/telemetry/latest/${OTHER_INSTALLATION}`)).status).toBe(200);
    expect(run(['status'], env).stdout).toBe(`${OTHER_INSTALLATION} ${none}\n`);
    expect(server.output()).toContain(`purge.applied installation=${INSTALLATION}`);
  } finally {
    expect(await server.stop()).toBe(0);
  }
});
