/** Tokens no one holds at the relay are logged as at the ingest endpoints: `auth.bad_token` by address. */
import { afterEach, expect, test } from 'bun:test';
import { clock, closeAndCheckLogs, linesOf, MINUTE, startGuarded } from './strangers-support.ts';

afterEach(closeAndCheckLogs);

const STRANGER = '198.51.100.7';
const BAD = 'a-relay-token-no-one-holds';
const tlm = JSON.stringify({ utc: Math.floor(clock.at / 1000) - 60, soc: 50 });

test('a bad relay token (query or form body) is logged by address at most once a minute, never shown', async () => {
  const service = await startGuarded();
  const inQuery = () =>
    service.request('GET', `/abrp/1/tlm/send?${new URLSearchParams({ token: BAD, tlm })}`, {
      token: null,
      address: STRANGER,
    });
  const inBody = () =>
    service.request('POST', '/abrp/1/tlm/send', {
      body: new URLSearchParams({ token: BAD, tlm }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      token: null,
      address: STRANGER,
    });
  expect((await inQuery()).status).toBe(401);
  expect((await inBody()).status).toBe(401);
  expect(linesOf(service, 'auth.bad_token')).toEqual([expect.stringContaining(`address=${STRANGER} count=1`)]);
  clock.at += MINUTE;
  expect((await inQuery()).status).toBe(401);
  expect(linesOf(service, 'auth.bad_token')[1]).toContain(`address=${STRANGER} count=2`);
  expect(service.log.lines.join('\n')).not.toContain(BAD);
});
