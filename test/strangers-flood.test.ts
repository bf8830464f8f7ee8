/**
 * Security events from many addresses at once: each address is logged at most once a minute, and all
 * of them together at most 60 lines a minute, the rest summed up in one `security.lines_dropped` line.
 */
import { afterEach, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { INSTALLATION } from './support.ts';
import { clock, closeAndCheckLogs, linesOf, MINUTE, startGuarded } from './strangers-support.ts';

afterEach(closeAndCheckLogs);

const BAD_TOKEN = 'a-token-no-one-holds-0123456789';
const FLOOD = 300;
const kept = limits.securityLinesPerInterval;

test('bad tokens from 300 IPv6 /64s: 60 lines, then one summary with the count and the addresses', async () => {
  const service = await startGuarded();
  const bad = (address: string) =>
    service.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token: BAD_TOKEN, address });
  for (let i = 0; i < FLOOD; i += 1) expect((await bad(`2001:db8:${i.toString(16)}::1`)).status).toBe(401);
  await bad('2001:db8:1::2'); // a second one from a /64 already logged: its own line waits a minute
  expect(linesOf(service, 'auth.bad_token')).toHaveLength(kept);
  expect(linesOf(service, 'security.lines_dropped')).toEqual([]);
  clock.at += MINUTE;
  await bad('2001:db8:1::3');
  expect(linesOf(service, 'security.lines_dropped').map((line) => line.slice(line.indexOf(' warn ')))).toEqual([
    ` warn security.lines_dropped of=auth.bad_token count=${FLOOD - kept} addresses=${FLOOD - kept}`,
  ]);
  expect(linesOf(service, 'auth.bad_token').at(-1)).toEndWith(' address=2001:db8:1::/64 count=2');
});

test('cross-site posts: once a minute per address, 60 lines a minute in all', async () => {
  const service = await startGuarded();
  const post = (address: string) =>
    service.request('POST', '/pair', {
      body: 'code=BBBB-BBBB',
      token: null,
      address,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
    });
  for (let i = 0; i < 2 * kept; i += 1) expect((await post(`198.51.100.${i % (kept + 10)}`)).status).toBe(403);
  expect(linesOf(service, 'pairing.cross_site')).toHaveLength(kept);
  clock.at += MINUTE;
  await post('198.51.100.1');
  expect(linesOf(service, 'security.lines_dropped')).toEqual([
    expect.stringMatching(/ of=pairing\.cross_site count=10 addresses=10$/),
  ]);
  expect(linesOf(service, 'pairing.cross_site').at(-1)).toContain(' address=198.51.100.1 ');
});
