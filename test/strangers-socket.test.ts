/**
 * Strangers on a listening server, where the client address comes from the socket: a request without a
 * Host (HTTP/1.0) counts under its peer's address like any other.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { PASSWORD } from './pairing-support.ts';
import { installationNumbered, tempDir, testConfig } from './support.ts';
import { parsedReply, rawRequest } from './upload.ts';

let running: Running;
const log = createMemoryLogger();
beforeAll(async () => {
  running = await serve(testConfig(tempDir(), { approvalPassword: PASSWORD }), log);
});
afterAll(() => running.stop());

/** `POST /v1/pair/start` as HTTP/1.0 without a Host, as a raw socket sends it. */
async function startWithoutHost(installationId: string) {
  const body = JSON.stringify({ installationId });
  const head = `POST /v1/pair/start HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n`;
  return parsedReply(await rawRequest(Number(running.url.port), `${head}\r\n${body}`)).status;
}

test('HTTP/1.0 starts without a Host meet the per-address cap: 10 × 200, then 429', async () => {
  const statuses: string[] = [];
  for (let i = 0; i < limits.pairingOpenPerAddress + 2; i++)
    statuses.push(await startWithoutHost(installationNumbered(i)));
  expect(statuses).toEqual([
    ...Array<string>(limits.pairingOpenPerAddress).fill('HTTP/1.1 200 OK'),
    'HTTP/1.1 429 Too Many Requests',
    'HTTP/1.1 429 Too Many Requests',
  ]);
  // The same address with a Host shares the same 10 slots.
  const withHost = await fetch(new URL('/v1/pair/start', running.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ installationId: installationNumbered(99) }),
  });
  expect(withHost.status).toBe(429);
});
