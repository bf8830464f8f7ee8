/**
 * The review's lockout reproductions: one address's guesses lock only that address, many addresses'
 * trip the backstop only at its threshold and never lock out an address that knows the password, and a
 * car's token sent to the device endpoints is not a password guess.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { answer, INSTALLATION, tempDir } from './support.ts';
import { pairDevice, PASSWORD, WRONG_PASSWORD } from './pairing-support.ts';
import {
  clock,
  closeAndCheckLogs,
  linesOf,
  listDevices,
  MINUTE,
  seenSecrets,
  startGuarded,
  statusOf,
} from './strangers-support.ts';

afterEach(closeAndCheckLogs);

const STRANGER = '198.51.100.7';
const DAY = 24 * 60 * 60_000;
const OWNER = '203.0.113.20';

/** `n` distinct stranger addresses of a /24. */
const strangers = (n: number, subnet = 100) => Array.from({ length: n }, (_, i) => `198.51.${subnet}.${i + 1}`);

describe('lockout per address', () => {
  test("a stranger's five wrong passwords a minute for 150 s never lock out the owner at another address", async () => {
    const service = await startGuarded();
    let ownerRefused = 0;
    for (let second = 0; second < 150; second += 1) {
      clock.at += 1000;
      if (second % 12 === 0) await listDevices(service, STRANGER, WRONG_PASSWORD); // 5 a minute
      if ((await listDevices(service, OWNER, PASSWORD)).status !== 200) ownerRefused += 1;
    }
    expect(ownerRefused).toBe(0);
    expect(linesOf(service, 'auth.locked').length).toBeGreaterThan(0);
  });

  test('the fifth wrong password is answered 401, then that address alone gets 429, Retry-After 60 s', async () => {
    const service = await startGuarded();
    for (let i = 0; i < limits.lockoutAttempts; i += 1)
      expect(statusOf(await listDevices(service, STRANGER, WRONG_PASSWORD))).toEqual([401, null]);
    expect(statusOf(await listDevices(service, STRANGER, PASSWORD))).toEqual([429, '60']);
    expect(await answer(await listDevices(service, STRANGER, null))).toEqual({
      status: 429,
      body: { error: 'too many wrong passwords, retry later' },
    });
    expect(statusOf(await listDevices(service, OWNER, PASSWORD))).toEqual([200, null]);
    clock.at += 59_500;
    expect(statusOf(await listDevices(service, STRANGER, PASSWORD))).toEqual([429, '1']);
    clock.at += 500;
    expect(statusOf(await listDevices(service, STRANGER, PASSWORD))).toEqual([200, null]);
    expect(linesOf(service, 'auth.locked')).toEqual([
      expect.stringMatching(/ warn auth\.locked address=198\.51\.100\.7 seconds=60$/),
    ]);
  });

  test('an IPv6 stranger is locked per /64: another address of that /64 is locked too, another /64 not', async () => {
    const service = await startGuarded();
    for (let i = 0; i < limits.lockoutAttempts; i += 1)
      await listDevices(service, `2001:db8:1:2::${i + 1}`, WRONG_PASSWORD);
    expect((await listDevices(service, '2001:db8:1:2:ffff::9', PASSWORD)).status).toBe(429);
    expect((await listDevices(service, '2001:db8:1:3::1', PASSWORD)).status).toBe(200);
    expect(linesOf(service, 'auth.locked')[0]).toContain(' address=2001:db8:1:2::/64 ');
  });
});

describe('the backstop', () => {
  /** Wrong passwords from twenty addresses in turn, none of them five in a row. */
  async function wrongFromTwenty(
    service: Awaited<ReturnType<typeof startGuarded>>,
    count: number,
    offset = 0,
    subnet = 100,
  ) {
    const addresses = strangers(20, subnet);
    for (let i = offset; i < offset + count; i += 1)
      expect((await listDevices(service, addresses[i % 20]!, WRONG_PASSWORD)).status).toBe(401);
  }

  test('twenty addresses trip it only at 50 wrong within 60 s; then a known one gets in, a new one 429', async () => {
    const service = await startGuarded();
    expect((await listDevices(service, OWNER, PASSWORD)).status).toBe(200); // the owner is known from here on
    await wrongFromTwenty(service, limits.backstopAttempts - 1);
    expect((await listDevices(service, '192.0.2.1', PASSWORD)).status).toBe(200); // 49: still open to all
    expect(linesOf(service, 'auth.backstop_locked')).toEqual([]);
    await wrongFromTwenty(service, 1, limits.backstopAttempts - 1); // a right password did not reset the count
    expect(linesOf(service, 'auth.backstop_locked')).toEqual([
      expect.stringMatching(/ warn auth\.backstop_locked address=198\.51\.100\.10 wrong=50 seconds=60$/),
    ]);
    expect(statusOf(await listDevices(service, '192.0.2.2', PASSWORD))).toEqual([429, '60']);
    expect(statusOf(await listDevices(service, strangers(1)[0]!, PASSWORD))).toEqual([429, '60']);
    expect(statusOf(await listDevices(service, OWNER, PASSWORD))).toEqual([200, null]);
    clock.at += MINUTE;
    expect((await listDevices(service, '192.0.2.2', PASSWORD)).status).toBe(200);
  });

  test('50 wrong spread over more than 60 s do not trip it', async () => {
    const service = await startGuarded();
    await wrongFromTwenty(service, 25);
    clock.at += MINUTE;
    await wrongFromTwenty(service, 25, 25);
    expect((await listDevices(service, '192.0.2.2', PASSWORD)).status).toBe(200);
  });

  test('a signed-in dashboard request is spared, its address being new; its own address lock still holds', async () => {
    const service = await startGuarded();
    await wrongFromTwenty(service, limits.backstopAttempts);
    const lock = service.pairing!.lock;
    expect(lock.check(PASSWORD, { address: '192.0.2.3' })).toBe('locked');
    expect(lock.check(PASSWORD, { address: '192.0.2.3', session: true })).toBe('right');
    for (let i = 0; i < limits.lockoutAttempts; i += 1)
      lock.check(WRONG_PASSWORD, { address: '192.0.2.4', session: true });
    expect(lock.check(PASSWORD, { address: '192.0.2.4', session: true })).toBe('locked');
  });

  test('an address that gave the right password is known after a restart, 30 days from its last', async () => {
    const OTHER_OWNER = '203.0.113.21';
    const dir = tempDir();
    const first = await startGuarded({}, { dir });
    expect((await listDevices(first, OWNER, PASSWORD)).status).toBe(200);
    expect((await listDevices(first, OTHER_OWNER, PASSWORD)).status).toBe(200);
    await first.close(); // commits what is queued
    const again = await startGuarded({}, { dir });
    clock.at += 30 * DAY - MINUTE;
    await wrongFromTwenty(again, limits.backstopAttempts);
    expect((await listDevices(again, OWNER, PASSWORD)).status).toBe(200); // known, and renewed for 30 days
    expect((await listDevices(again, '192.0.2.5', PASSWORD)).status).toBe(429);
    clock.at += 2 * MINUTE;
    await wrongFromTwenty(again, limits.backstopAttempts, 0, 101);
    expect((await listDevices(again, OWNER, PASSWORD)).status).toBe(200);
    expect((await listDevices(again, OTHER_OWNER, PASSWORD)).status).toBe(429); // its 30 days are over
    expect(again.storage.db.query('SELECT address FROM known_addresses ORDER BY address').all()).toEqual([
      { address: OWNER },
      { address: OTHER_OWNER },
    ]);
  });
});

describe('only passwords count', () => {
  test('the ingest token and a paired car token at /v1/devices are 401s that never lock', async () => {
    const service = await startGuarded();
    const { token } = await pairDevice(service, INSTALLATION);
    seenSecrets.push(token);
    for (let i = 0; i < 3 * limits.lockoutAttempts; i += 1) {
      expect(statusOf(await listDevices(service, STRANGER, i % 2 === 0 ? token : service.config.ingestToken))).toEqual([
        401,
        null,
      ]);
    }
    expect((await listDevices(service, STRANGER, PASSWORD)).status).toBe(200);
    expect(linesOf(service, 'auth.locked')).toEqual([]);
  });
});
