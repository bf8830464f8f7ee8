/**
 * What an owner sees of strangers: security events with the client address (the socket's, or the last
 * forwarded one behind a trusted proxy), no-store on every API answer, and the start-up warnings.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { clientAddress, coarseAddress, recordPeer } from '../src/http/client-address.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import { INSTALLATION, overSocket, tempDir, testConfig } from './support.ts';
import { PASSWORD, WRONG_PASSWORD } from './pairing-support.ts';
import { clock, closeAndCheckLogs, linesOf, MINUTE, startGuarded } from './strangers-support.ts';

afterEach(closeAndCheckLogs);

const BAD_TOKEN = 'not-a-token-anyone-holds-0123456789';

describe('the client address', () => {
  const withPeer = (peer: string | undefined, forwardedFor?: string) =>
    recordPeer(
      new Request('http://localhost/', {
        headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
      }),
      peer,
    );

  test("is the socket's peer; X-Forwarded-For counts only with TRUST_PROXY, and only its last value", () => {
    expect(clientAddress(withPeer('192.0.2.9', '198.51.100.1'), false)).toBe('192.0.2.9');
    expect(clientAddress(withPeer('192.0.2.9', '198.51.100.1, 203.0.113.4'), true)).toBe('203.0.113.4');
    expect(clientAddress(withPeer('192.0.2.9', '203.0.113.4, not-an-address'), true)).toBe('192.0.2.9');
    expect(clientAddress(withPeer('192.0.2.9'), true)).toBe('192.0.2.9');
    expect(clientAddress(withPeer(undefined), false)).toBe('unknown');
  });

  test('IPv6 counts per /64, an IPv4-mapped address as IPv4; the page shows a /24 or a /48', () => {
    expect(clientAddress(withPeer('2001:db8:0:12:aaaa::1'), false)).toBe('2001:db8:0:12::/64');
    expect(clientAddress(withPeer('2001:0db8:0000:0012:ffff:ffff:ffff:ffff'), false)).toBe('2001:db8:0:12::/64');
    expect(clientAddress(withPeer('::1'), false)).toBe('::/64');
    expect(clientAddress(withPeer('::ffff:192.0.2.9'), false)).toBe('192.0.2.9');
    expect(clientAddress(withPeer('fe80::1%eth0'), false)).toBe('fe80::/64');
    expect(coarseAddress('192.0.2.9')).toBe('192.0.2.0/24');
    expect(coarseAddress('2001:db8:0:12::/64')).toBe('2001:db8::/48');
  });

  test("a listening server logs the socket's address", async () => {
    const log = createMemoryLogger();
    const running = await serve(testConfig(tempDir(), { approvalPassword: PASSWORD }), log);
    try {
      const client = overSocket(running);
      expect(
        (await client.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token: BAD_TOKEN })).status,
      ).toBe(401);
      for (let i = 0; i < 5; i += 1) await client.request('GET', '/v1/devices', { token: WRONG_PASSWORD });
    } finally {
      await running.stop();
    }
    expect(linesOf({ log } as never, 'auth.bad_token')).toEqual([
      expect.stringMatching(/ warn auth\.bad_token address=127\.0\.0\.1 count=1$/),
    ]);
    expect(linesOf({ log } as never, 'auth.locked')).toEqual([expect.stringMatching(/ address=127\.0\.0\.1 /)]);
    const text = log.lines.join('\n');
    for (const secret of [BAD_TOKEN, WRONG_PASSWORD, PASSWORD]) expect(text).not.toContain(secret);
  });
});

test('behind a trusted proxy, a listening server logs the last forwarded address', async () => {
  const log = createMemoryLogger();
  const running = await serve(testConfig(tempDir(), { trustProxy: true }), log);
  try {
    const headers = { 'x-forwarded-for': '198.51.100.1, 2001:db8:7:8:9::1' };
    const refused = await overSocket(running).request('GET', `/v1/consumption/history/${INSTALLATION}`, {
      token: BAD_TOKEN,
      headers,
    });
    expect(refused.status).toBe(401);
  } finally {
    await running.stop();
  }
  expect(log.lines.filter((line) => line.includes(' auth.bad_token '))).toEqual([
    expect.stringContaining(' address=2001:db8:7:8::/64 count=1'),
  ]);
});

describe('security events', () => {
  test('auth.bad_token: at most once a minute per address, with the count since its last line', async () => {
    const service = await startGuarded();
    const bad = (address: string) =>
      service.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token: BAD_TOKEN, address });
    for (let i = 0; i < 4; i += 1) expect((await bad('198.51.100.7')).status).toBe(401);
    await bad('198.51.100.8');
    await service.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token: null, address: '198.51.100.9' });
    clock.at += MINUTE;
    await bad('198.51.100.7');
    expect(linesOf(service, 'auth.bad_token').map((line) => line.slice(line.indexOf(' warn ')))).toEqual([
      ' warn auth.bad_token address=198.51.100.7 count=1',
      ' warn auth.bad_token address=198.51.100.8 count=1',
      ' warn auth.bad_token address=198.51.100.7 count=4',
    ]);
  });

  test('auth.bad_token keeps at most 10,000 addresses: a stranger with many cannot grow it without limit', async () => {
    const service = await startGuarded();
    const bad = (address: string) => {
      const request = recordPeer(new Request('http://localhost/'), address);
      expect(() => service.auth.authenticate(`Bearer ${BAD_TOKEN}`, request)).toThrow('unauthorized');
    };
    bad('192.0.2.1');
    bad('192.0.2.1');
    for (let i = 0; i < 10_050; i += 1) bad(`10.0.${i >> 8}.${i & 255}`);
    clock.at += MINUTE;
    bad('192.0.2.1');
    // count=1: the second bad token of 192.0.2.1 was forgotten with the least recent addresses.
    expect(linesOf(service, 'auth.bad_token').at(-1)).toEndWith(' address=192.0.2.1 count=1');
  });
});

describe('no-store', () => {
  test('every answer of the ingest, relay, data and device endpoints carries it, errors included', async () => {
    const service = await startGuarded();
    const answers = [
      await service.request('GET', `/v1/consumption/history/${INSTALLATION}`),
      await service.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token: null }),
      await service.request('GET', '/v1/consumption/history/nope'),
      await service.request('POST', '/v1/telemetry', { body: '{' }),
      await service.request('GET', '/v1/devices', { token: PASSWORD }),
      await service.request('GET', '/v1/devices', { token: WRONG_PASSWORD }),
      await service.request('GET', '/v1/nowhere'),
      await service.request('GET', `/abrp/1/tlm/send?token=${BAD_TOKEN}&tlm={}`, { token: null }),
    ];
    expect(answers.map((response) => [response.status, response.headers.get('cache-control')])).toEqual([
      [200, 'no-store'],
      [401, 'no-store'],
      [400, 'no-store'],
      [400, 'no-store'],
      [200, 'no-store'],
      [401, 'no-store'],
      [404, 'no-store'],
      [401, 'no-store'],
    ]);
  });
});

describe('start-up warnings', () => {
  async function startLog(dir: string, overrides: Parameters<typeof testConfig>[1] = {}) {
    const log = createMemoryLogger();
    const running = await serve(testConfig(dir, { approvalPassword: PASSWORD, ...overrides }), log);
    await running.stop();
    return log.lines;
  }

  test('a data folder or database file (-wal, -shm too) others can read or write is named, with its mode', async () => {
    const dir = join(tempDir(), 'data');
    mkdirSync(dir, { mode: 0o700 });
    expect((await startLog(dir)).filter((line) => line.includes('storage.open_to_others'))).toEqual([]);
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'ev-ingest.db'), 0o664);
    const warned = (await startLog(dir)).filter((line) => line.includes('storage.open_to_others'));
    expect(warned).toEqual([
      expect.stringContaining(` warn storage.open_to_others folder=${dir} mode=755 `),
      expect.stringContaining(` warn storage.open_to_others file=${join(dir, 'ev-ingest.db')} mode=664 `),
      // SQLite gives the WAL and its index the database's mode: they hold the latest writes as readably.
      expect.stringContaining(` warn storage.open_to_others file=${join(dir, 'ev-ingest.db')}-wal mode=664 `),
      expect.stringContaining(` warn storage.open_to_others file=${join(dir, 'ev-ingest.db')}-shm mode=664 `),
    ]);
  });

  test('a secret of fewer than 8 distinct characters is named, never shown', async () => {
    const weakToken = 'a'.repeat(24);
    const weakPassword = 'abcabcabcabc';
    const lines = await startLog(tempDir(), { ingestToken: weakToken, approvalPassword: weakPassword });
    expect(lines.filter((line) => line.includes('config.weak_secret')).map((line) => line.split(' ')[3])).toEqual([
      'variable=INGEST_TOKEN',
      'variable=APPROVAL_PASSWORD',
    ]);
    expect(lines.join('\n')).not.toContain(weakPassword);
    expect(lines.join('\n')).not.toContain(weakToken);
    expect((await startLog(tempDir())).filter((line) => line.includes('config.weak_secret'))).toEqual([]);
  });
});
