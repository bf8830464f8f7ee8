/**
 * The relay end to end in the compiled binary: a token from its own `devices add` beside the running
 * server, an OVMS-style GET over a socket, the sample forwarded once to a planner with the server's credentials.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { compiledBinary, startBinary } from './binary.ts';
import { startFakePlanner, type FakePlanner } from './fake-planner.ts';
import { INSTALLATION, OWNER_TOKEN, tempDir, waitUntil } from './support.ts';

let binary: string;
let fake: FakePlanner;
beforeAll(async () => {
  binary = await compiledBinary();
  fake = startFakePlanner();
});
afterAll(() => fake.stop());

test('a token from devices add, an OVMS GET, one forward with the server’s planner credentials', async () => {
  const cwd = tempDir();
  const env = { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(cwd, 'ev.db') };
  const server = await startBinary(
    binary,
    { ...env, PLANNER_URL: fake.url, PLANNER_API_KEY: 'server-key', PLANNER_TOKEN: 'server-token' },
    cwd,
  );
  try {
    const add = Bun.spawn([binary, 'devices', 'add', INSTALLATION, '--name', 'OVMS'], {
      cwd,
      env,
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [code, stdout] = await Promise.all([add.exited, new Response(add.stdout).text()]);
    expect(code).toBe(0);
    const token = stdout.trim().split('\n').at(-1)!;

    const utc = Math.floor(Date.now() / 1000) - 5;
    const tlm = JSON.stringify({
      utc,
      soc: 80,
      lat: '52.520',
      lon: '13.405',
      alt: '34.0',
      power: '4.9',
      is_charging: 0,
    });
    const url = new URL(`/abrp/1/tlm/send?api_key=ovms-key&token=${token}&tlm=${encodeURIComponent(tlm)}`, server.url);
    const deadline = performance.now() + 1000;
    let response = await fetch(url);
    while (response.status === 401 && performance.now() < deadline) {
      await Bun.sleep(20);
      response = await fetch(url);
    }
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });

    // Once the outcome is written the sample is no longer waiting: a second send could only come from a bug.
    const database = new Database(env.DATABASE_PATH, { readonly: true });
    try {
      await waitUntil(
        () => database.query<{ state: number }, []>('SELECT planner_state AS state FROM samples').get()?.state === 2,
      );
    } finally {
      database.close();
    }
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({ apiKey: 'server-key', token: 'server-token' });
    expect(fake.requests[0]!.tlm).toEqual({
      utc,
      soc: 80,
      power: 4.9,
      lat: 52.52,
      lon: 13.405,
      elevation: 34,
      is_charging: 0,
    });
    expect(server.output()).not.toContain(token);
  } finally {
    await server.stop();
  }
});
