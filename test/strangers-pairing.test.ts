/**
 * The review's pairing reproductions: no address can hog the pairing slots, every 429 says when to come
 * back, the approval page tells the owner what the requester did not choose, names that hide characters
 * are refused, and another site's form posts are refused before anything is counted.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { answer, installationNumbered, INSTALLATION, OTHER_INSTALLATION, type TestService } from './support.ts';
import type { Config } from '../src/config.ts';
import { pairDevice, PASSWORD, type Started, WRONG_PASSWORD } from './pairing-support.ts';
import {
  clock,
  closeAndCheckLogs,
  keepSecretsOf,
  linesOf,
  listDevices,
  MINUTE,
  seenSecrets,
  startGuarded,
  statusOf,
} from './strangers-support.ts';

afterEach(closeAndCheckLogs);

const STRANGER = '198.51.100.7';
const CAR = '203.0.113.20';

function startFrom(service: TestService, address: string, installationId: string, name?: string) {
  return service.request('POST', '/v1/pair/start', { body: { installationId, name }, token: null, address });
}

async function startedFrom(
  service: TestService,
  address: string,
  installationId: string,
  name?: string,
): Promise<Started> {
  const response = await startFrom(service, address, installationId, name);
  expect(response.status).toBe(200);
  return keepSecretsOf((await response.json()) as Started);
}

describe('pairing slots', () => {
  test('one address stops at 10 open requests, Retry-After until its oldest expires; a car elsewhere 200', async () => {
    const service = await startGuarded();
    for (let i = 0; i < limits.pairingOpenPerAddress; i += 1) {
      await startedFrom(service, STRANGER, installationNumbered(i));
      clock.at += 1000;
    }
    const refused = await startFrom(service, STRANGER, installationNumbered(99));
    expect(statusOf(refused)).toEqual([429, String(limits.pairingTtlMs / 1000 - 10)]);
    expect(await answer(refused)).toEqual({ status: 429, body: { error: 'too many pairing requests' } });
    await startedFrom(service, CAR, INSTALLATION);
    // A stranger's new start of an installation it holds reuses that slot.
    await startedFrom(service, STRANGER, installationNumbered(0));
    clock.at += limits.pairingTtlMs - 9000; // its oldest remaining one (the second) has expired
    await startedFrom(service, STRANGER, installationNumbered(99));
  });

  test('a full book answers 429, Retry-After until its first request expires; logged once a minute', async () => {
    const service = await startGuarded();
    for (let i = 0; i < limits.pairingOpenMax; i += 1)
      await startedFrom(service, `198.51.${Math.floor(i / 10)}.1`, installationNumbered(i));
    clock.at += 2 * MINUTE;
    for (let i = 0; i < 3; i += 1) expect(statusOf(await startFrom(service, CAR, INSTALLATION))).toEqual([429, '480']);
    expect(linesOf(service, 'pairing.book_full')).toEqual([
      expect.stringMatching(/ warn pairing\.book_full address=203\.0\.113\.20 open=100 count=1$/),
    ]);
    clock.at += MINUTE;
    expect(statusOf(await startFrom(service, CAR, INSTALLATION))).toEqual([429, '420']);
    expect(linesOf(service, 'pairing.book_full')[1]).toMatch(/ address=203\.0\.113\.20 open=100 count=3$/);
  });
});

describe('the approval page', () => {
  test('shows the request age, its coarse network, the paired devices and the advice to deny', async () => {
    const service = await startGuarded();
    const { token } = await pairDevice(service, INSTALLATION);
    seenSecrets.push(token);
    const started = await startedFrom(service, '203.0.113.77', INSTALLATION, 'MG4');
    const page = async () => (await service.request('GET', `/pair?code=${started.userCode}`, { token: null })).text();
    const facts = (html: string) =>
      [...html.matchAll(/<dt>([^<]*)<\/dt><dd[^>]*>([^<]*)<\/dd>/g)].map(([, term, value]) => [term, value]);
    expect(facts(await page())).toEqual([
      ['Code', started.userCode],
      ['Car name', 'MG4'],
      ['Installation id', INSTALLATION],
      ['Requested', 'just now'],
      ['From network', '203.0.113.0/24'],
      ['Paired devices of this installation', '1'],
      ['Expires', 'in about 10 minutes'],
    ]);
    expect(await page()).toContain('<p class="notice">Deny if you did not just start pairing on your car.</p>');
    clock.at += 3 * MINUTE + 5000;
    expect(facts(await page()).slice(3, 4)).toEqual([['Requested', '3 minutes ago']]);
    const ipv6 = await startedFrom(service, '2001:db8:abcd:12:1::5', OTHER_INSTALLATION);
    const ipv6Page = await (await service.request('GET', `/pair?code=${ipv6.userCode}`, { token: null })).text();
    expect(facts(ipv6Page).slice(4, 6)).toEqual([
      ['From network', '2001:db8:abcd::/48'],
      ['Paired devices of this installation', '0'],
    ]);
  });

  test('names with format, separator or invisible characters, or nothing visible, are refused', async () => {
    const service = await startGuarded();
    const hidden = 'name must not hold format, separator or invisible characters';
    const cases: [string, string][] = [
      ...['\u200B', '\u2060', '\uFEFF', '\u00AD', '\u{E0041}', '\u2028', '\u2029', '\u3164', '\u034F', '\u180E'].map(
        (char): [string, string] => [`MG${char}4`, hidden],
      ),
      [' ', 'name must hold a visible character'],
      ['\u3000\u00A0 ', 'name must hold a visible character'],
    ];
    for (const [name, error] of cases) {
      expect({ name, ...(await answer(await startFrom(service, CAR, INSTALLATION, name))) }).toEqual({
        name,
        status: 400,
        body: { error },
      });
    }
    for (const name of ['MG4 Long Range', '👨‍👩‍👧 family car', '❤️ red', 'Zoë'])
      await startedFrom(service, CAR, INSTALLATION, name);
  });
});

describe('cross-site posts to /pair', () => {
  function post(service: TestService, code: string, password: string, headers: Record<string, string>, address = CAR) {
    return service.request('POST', '/pair', {
      body: new URLSearchParams({ code, password, decision: 'approve' }).toString(),
      token: null,
      address,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    });
  }

  test('are refused with 403 and counted nowhere: the same address still has all its tries', async () => {
    const service = await startGuarded();
    const started = await startedFrom(service, CAR, INSTALLATION);
    const crossSite: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: 'http://localhost.evil.example' },
    ];
    for (let i = 0; i < 2 * limits.backstopAttempts; i += 1) {
      const response = await post(
        service,
        started.userCode,
        WRONG_PASSWORD,
        crossSite[i % crossSite.length]!,
        `198.51.100.${i % 3}`,
      );
      expect(response.status).toBe(403);
      expect(await response.text()).toContain('This form was sent from another site.');
    }
    expect((await post(service, started.userCode, PASSWORD, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // Still pending.
    expect((await service.request('GET', `/pair?code=${started.userCode}`, { token: null })).status).toBe(200);
    expect(service.pairing!.lock.triesLeft({ address: '198.51.100.0' })).toBe(limits.lockoutAttempts);
    expect(linesOf(service, 'pairing.wrong_password')).toEqual([]);
    expect((await listDevices(service, '198.51.100.1', PASSWORD)).status).toBe(200); // no backstop either
  });

  test("the page's own origin, PUBLIC_URL's, a forwarded one with TRUST_PROXY, or no Origin at all pass", async () => {
    const origins: [Partial<Config>, Record<string, string>][] = [
      [{}, {}],
      [{}, { origin: 'http://localhost', 'sec-fetch-site': 'same-origin' }],
      [{ publicUrl: 'https://cars.example.net/ev' }, { origin: 'https://CARS.example.net:443' }],
      [
        { trustProxy: true },
        { origin: 'https://ev.example.org', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'ev.example.org' },
      ],
    ];
    for (const [config, headers] of origins) {
      const service = await startGuarded(config);
      const started = await startedFrom(service, CAR, INSTALLATION);
      expect({ headers, status: (await post(service, started.userCode, PASSWORD, headers)).status }).toEqual({
        headers,
        status: 200,
      });
    }
    const behindProxy = await startGuarded({ trustProxy: false });
    const started = await startedFrom(behindProxy, CAR, INSTALLATION);
    const forwarded = { origin: 'https://ev.example.org', 'x-forwarded-host': 'ev.example.org' };
    // Forwarded headers untrusted.
    expect((await post(behindProxy, started.userCode, PASSWORD, forwarded)).status).toBe(403);
  });
});
