/**
 * On a listening server the client address is asked of the socket only when a handler needs it: after a
 * password form's body has arrived, after a pairing start's body was read, in the token check of an upload.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { SIGN_IN_PATH } from '../src/dashboard/paths.ts';
import { limits } from '../src/limits.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { PASSWORD, startPairing, WRONG_PASSWORD } from './pairing-support.ts';
import { INSTALLATION, overSocket, tempDir, testConfig } from './support.ts';
import { exchange, parsedReply } from './upload.ts';

const SOCKET_ADDRESS = '127.0.0.1';
const BAD_TOKEN = 'not-a-token-anyone-holds-0123456789';

let running: Running;
const log = createMemoryLogger();
beforeAll(async () => {
  running = await serve(testConfig(tempDir(), { approvalPassword: PASSWORD }), log);
});
afterAll(() => running.stop());

const linesOf = (event: string) => log.lines.filter((line) => line.includes(` ${event} `));

/** A wrong sign-in whose form arrives a while after its head: the handler waits for it, then asks the address. */
async function signInWithLateBody(): Promise<string> {
  const body = new URLSearchParams({ password: WRONG_PASSWORD }).toString();
  const head =
    `POST ${SIGN_IN_PATH} HTTP/1.1\r\nHost: ${running.url.host}\r\nConnection: close\r\n` +
    `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n`;
  const sent = await exchange(
    Number(running.url.port),
    async (write) => {
      await write(head);
      await Bun.sleep(50);
      await write(body);
    },
    5_000,
  );
  return parsedReply(sent).status;
}

test("wrong sign-ins whose form came late lock out the socket's address, not the unknown one", async () => {
  const statuses: string[] = [];
  for (let i = 0; i < limits.lockoutAttempts; i += 1) statuses.push(await signInWithLateBody());
  expect(statuses).toEqual(Array<string>(limits.lockoutAttempts).fill('HTTP/1.1 403 Forbidden'));
  const lock = running.service.pairing!.lock;
  expect(lock.retryAfterSeconds({ address: SOCKET_ADDRESS })).toBe(limits.lockoutMs / 1000);
  expect(lock.retryAfterSeconds({ address: 'unknown' })).toBe(0);
  expect(linesOf('dashboard.wrong_password')).toEqual(
    Array<string>(limits.lockoutAttempts)
      .fill(`warn dashboard.wrong_password address=${SOCKET_ADDRESS}`)
      .map((line) => expect.stringContaining(line)),
  );
  expect(await signInWithLateBody()).toBe('HTTP/1.1 429 Too Many Requests');
});

test("a pairing start holds a slot of the socket's address, asked after its body was read", async () => {
  const client = overSocket(running);
  const started = await startPairing(client, INSTALLATION, 'MG4');
  const page = await client.request('GET', `/pair?code=${started.userCode}`, { token: null });
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('127.0.0.0/24');
});

test("a telemetry upload with a token no one holds is logged under the socket's address", async () => {
  const client = overSocket(running);
  const body = { installationId: INSTALLATION, samples: [{ utc: 1_700_000_000, soc: 50 }] };
  expect((await client.request('POST', '/v1/telemetry', { token: BAD_TOKEN, body })).status).toBe(401);
  const stored = await client.request('POST', '/v1/telemetry', { body });
  expect(await stored.json()).toEqual({ stored: 1, droppedCount: 0, dropped: [] });
  expect(linesOf('auth.bad_token')).toEqual([
    expect.stringMatching(new RegExp(` warn auth\\.bad_token address=${SOCKET_ADDRESS} count=1$`)),
  ]);
  expect(log.lines.join('\n')).not.toContain(BAD_TOKEN);
});
