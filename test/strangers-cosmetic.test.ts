/**
 * The smaller findings of the review: addresses written as RFC 5952 says, an empty password field that
 * guesses nothing.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { clientAddress, coarseAddress, recordPeer } from '../src/http/client-address.ts';
import { limits } from '../src/limits.ts';
import { INSTALLATION } from './support.ts';
import type { Started } from './pairing-support.ts';
import { closeAndCheckLogs, keepSecretsOf, startGuarded } from './strangers-support.ts';

afterEach(closeAndCheckLogs);

const addressOf = (peer: string) => clientAddress(recordPeer(new Request('http://localhost/'), peer), false);

describe('addresses as RFC 5952 writes them', () => {
  test.each([
    ['::1', '::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    ['2001:db8:1::3', '2001:db8:1::/64'],
    ['2001:0DB8:0000:0012:ffff::1', '2001:db8:0:12::/64'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4::/64'],
  ])('%s counts as %s', (peer, network) => {
    expect(addressOf(peer)).toBe(network);
  });

  test.each([
    ['::ffff:192.0.2.9', '192.0.2.9'],
    ['::ffff:a03:303', '10.3.3.3'],
    ['::FFFF:C000:0209', '192.0.2.9'],
  ])('an IPv4-mapped address %s counts as %s', (peer, ipv4) => {
    expect(addressOf(peer)).toBe(ipv4);
  });

  test.each([
    ['2001:db8:0:12::/64', '2001:db8::/48'],
    ['2001:db8:1:2::/64', '2001:db8:1::/48'],
    ['::/64', '::/48'],
  ])('the page shows %s as %s', (network, shown) => {
    expect(coarseAddress(network)).toBe(shown);
  });
});

test('an empty password field is answered as a missing one: it counts no try', async () => {
  const service = await startGuarded();
  const response = await service.request('POST', '/v1/pair/start', {
    body: { installationId: INSTALLATION },
    token: null,
  });
  const { userCode } = keepSecretsOf((await response.json()) as Started);
  for (let i = 0; i < limits.lockoutAttempts + 1; i += 1) {
    const page = await service.request('POST', '/pair', {
      body: `code=${userCode}&password=&decision=approve`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      token: null,
      address: '198.51.100.7',
    });
    expect(page.status).toBe(403);
  }
  expect(service.pairing!.lock.triesLeft({ address: '198.51.100.7' })).toBe(limits.lockoutAttempts);
});
