/** `ev-ingest healthcheck [URL]` of the compiled binary: 0 on a 200 within 5 s, 1 on anything else, 2 if misused. */
import { beforeAll, expect, test } from 'bun:test';
import { compiledBinary, startBinary } from './binary.ts';
import { consumptionChunk, finished, heldSyncs, OWNER_TOKEN, tempDir, testConfig } from './support.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';

let binary: string;
beforeAll(async () => {
  binary = await compiledBinary();
}, 120_000);

/** Runs `ev-ingest healthcheck` without blocking this process, which may be serving the URL asked. */
async function healthcheck(args: string[], env: Record<string, string> = {}) {
  const child = Bun.spawn([binary, 'healthcheck', ...args], {
    cwd: tempDir(),
    env: { PATH: process.env.PATH ?? '', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  return finished(child);
}

test('the default URL is HOST:PORT, a wildcard HOST asked on loopback: exit 0 on the ready binary', async () => {
  const cwd = tempDir();
  const server = await startBinary(
    binary,
    { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: `${cwd}/ev.db`, HOST: '0.0.0.0' },
    cwd,
  );
  try {
    const port = server.url.port;
    expect(await healthcheck([], { HOST: '0.0.0.0', PORT: port })).toEqual({
      code: 0,
      stdout: `http://127.0.0.1:${port}/v1/ready: 200 {"status":"ready"}\n`,
      stderr: '',
    });
    expect((await healthcheck([`http://localhost:${port}/v1/ready`])).code).toBe(0);
    expect((await healthcheck([`http://127.0.0.1:${port}/v1/health-nope`])).code).toBe(1); // a 404
  } finally {
    await server.stop();
  }
});

test('exit 1 while a write is held at its sync, 0 once it is released', async () => {
  const syncs = heldSyncs();
  const running = await serve(
    { ...testConfig(tempDir()), syncFile: syncs.syncFile, readyWaitMs: 100 },
    createMemoryLogger(),
  );
  const url = new URL('/v1/ready', running.url).href;
  try {
    expect((await healthcheck([url])).code).toBe(0);
    const put = fetch(new URL('/v1/consumption/daily', running.url), {
      method: 'PUT',
      headers: { authorization: `Bearer ${OWNER_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(consumptionChunk()),
    });
    while (syncs.calls.length === 0) await Bun.sleep(5);
    await Bun.sleep(150);
    expect(await healthcheck([url])).toEqual({
      code: 1,
      stdout: '',
      stderr: `${url}: 503 {"status":"unavailable","reason":"a write has waited over 0.1 s (is the disk stalled?)"}\n`,
    });
    syncs.release();
    expect((await put).status).toBe(204);
    expect((await healthcheck([url])).code).toBe(0);
  } finally {
    syncs.release();
    await running.stop();
  }
});

test('a server that accepts but never answers: exit 1 after 5 s; nobody listening: exit 1 at once', async () => {
  const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  try {
    const url = `http://127.0.0.1:${silent.port}/v1/ready`;
    const began = performance.now();
    expect(await healthcheck([url])).toEqual({ code: 1, stdout: '', stderr: `${url}: no answer within 5 s\n` });
    expect(performance.now() - began).toBeGreaterThanOrEqual(4900);
  } finally {
    silent.stop(true);
  }
  const refused = await healthcheck(['http://127.0.0.1:9/v1/ready']);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toStartWith('http://127.0.0.1:9/v1/ready: ');
});

test('a URL that is not http(s) or a second operand: exit 2', async () => {
  expect(await healthcheck(['ftp://x/v1/ready'])).toEqual({
    code: 2,
    stdout: '',
    stderr: 'ev-ingest: healthcheck needs an http:// or https:// URL, not "ftp://x/v1/ready"\n',
  });
  expect((await healthcheck(['http://a/', 'http://b/'])).code).toBe(2);
});
