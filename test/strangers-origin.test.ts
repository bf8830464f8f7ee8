/**
 * Which browser requests count as another site's: `Sec-Fetch-Site` decides when sent, else the `Origin`'s
 * host is compared with the request's; the car's endpoints refuse a page of another site too.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { answer, buildRequest, INSTALLATION, type TestService } from './support.ts';
import type { Config } from '../src/config.ts';
import { PASSWORD, type Started } from './pairing-support.ts';
import { closeAndCheckLogs, keepSecretsOf, linesOf, startGuarded } from './strangers-support.ts';

afterEach(closeAndCheckLogs);

const OWNER = '203.0.113.20';
/** The host the owner's browser and the car reach the service by, behind a proxy that ends TLS. */
const SITE = 'http://ev.example.com';

async function started(service: TestService): Promise<Started> {
  const request = buildRequest(
    'POST',
    '/v1/pair/start',
    { body: { installationId: INSTALLATION }, token: null, address: OWNER },
    SITE,
  );
  return keepSecretsOf((await service.app.handle(request).then((response) => response.json())) as Started);
}

/** The owner's approval, posted as a browser posts it to `SITE`. */
async function approve(service: TestService, headers: Record<string, string>): Promise<number> {
  const { userCode } = await started(service);
  const body = new URLSearchParams({ code: userCode, password: PASSWORD, decision: 'approve' }).toString();
  const type = { 'content-type': 'application/x-www-form-urlencoded' };
  const request = buildRequest(
    'POST',
    '/pair',
    { body, token: null, address: OWNER, headers: { ...type, ...headers } },
    SITE,
  );
  return (await service.app.handle(request)).status;
}

describe('POST /pair', () => {
  test.each<[string, Record<string, string>, Partial<Config>]>([
    ['an https page behind a TLS proxy, TRUST_PROXY=0, no PUBLIC_URL', { origin: 'https://ev.example.com' }, {}],
    [
      'the same with Sec-Fetch-Site: same-origin',
      { origin: 'https://ev.example.com', 'sec-fetch-site': 'same-origin' },
      {},
    ],
    ['Sec-Fetch-Site: none (typed or bookmarked)', { 'sec-fetch-site': 'none', origin: 'https://other.example' }, {}],
    ["PUBLIC_URL's host", { origin: 'https://cars.example.net' }, { publicUrl: 'https://cars.example.net/ev' }],
  ])('%s passes', async (_, headers, config) => {
    expect(await approve(await startGuarded(config), headers)).toBe(200);
  });

  test.each<[string, Record<string, string>]>([
    [
      'Sec-Fetch-Site: same-site, whatever the Origin',
      { 'sec-fetch-site': 'same-site', origin: 'https://ev.example.com' },
    ],
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['an Origin of another host', { origin: 'https://ev.example.com.evil.example' }],
    ['an Origin of another port', { origin: 'http://ev.example.com:8443' }],
    ['an empty Origin', { origin: '' }],
  ])('%s is refused and logged with both hosts and the address', async (_, headers) => {
    const service = await startGuarded();
    expect(await approve(service, headers)).toBe(403);
    const line = linesOf(service, 'pairing.cross_site');
    expect(line).toHaveLength(1);
    expect(line[0]).toContain(`address=${OWNER}`);
    expect(line[0]).toContain('expected=ev.example.com');
    if (headers.origin) expect(line[0]).toContain(`origin=${new URL(headers.origin).host}`);
    if (headers['sec-fetch-site']) expect(line[0]).toContain(`site=${headers['sec-fetch-site']}`);
  });
});

describe('the car endpoints', () => {
  test.each(['/v1/pair/start', '/v1/pair/poll'])(
    '%s refuses Sec-Fetch-Site: cross-site before reading the body',
    async (path) => {
      const service = await startGuarded();
      const response = await service.request('POST', path, {
        body: { installationId: INSTALLATION, pairingId: 'x' },
        token: null,
        address: OWNER,
        headers: { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      });
      expect(await answer(response)).toEqual({
        status: 403,
        body: { error: 'a web page of another site may not start or poll pairing' },
      });
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(service.pairing!.book.size).toBe(0);
      expect(linesOf(service, 'pairing.cross_site')).toEqual([expect.stringContaining(`address=${OWNER}`)]);
    },
  );

  test('a car (no Sec-Fetch-Site) and a same-origin page start as before', async () => {
    const service = await startGuarded();
    for (const headers of [{}, { 'sec-fetch-site': 'same-origin' }] as Record<string, string>[]) {
      const response = await service.request('POST', '/v1/pair/start', {
        body: { installationId: INSTALLATION },
        token: null,
        address: OWNER,
        headers,
      });
      expect(response.status).toBe(200);
      keepSecretsOf((await response.json()) as Started);
    }
  });
});
