/** The session cookie's `Secure` and name follow the scheme the browser used, per host it reached. */
import { afterEach, expect, test } from 'bun:test';
import type { Config } from '../src/config.ts';
import { getPage, postForm } from './dashboard-support.ts';
import { PASSWORD } from './pairing-support.ts';
import { startTestService, type TestService } from './support.ts';

let service: TestService | undefined;
afterEach(() => service?.close());

async function start(overrides: Partial<Config>) {
  service = await startTestService({ approvalPassword: PASSWORD, ...overrides });
  return service;
}

/** Signs in with these headers; answers the `Set-Cookie` and whether the cookie then opens the dashboard. */
async function signInWith(s: TestService, headers: Record<string, string>) {
  const signedIn = await postForm(s, '/dashboard/sign-in', { password: PASSWORD }, undefined, headers);
  expect(signedIn.status).toBe(303);
  const setCookie = signedIn.headers.get('set-cookie')!;
  const page = await getPage(s, '/dashboard', setCookie.split(';')[0], headers);
  return { setCookie, opens: page.status === 200 };
}

const SECURE_END = '; HttpOnly; SameSite=Strict; Path=/; Secure';
const SECURE = /^__Host-ev_ingest_session=[\w-]{43}; Max-Age=2592000; HttpOnly; SameSite=Strict; Path=\/; Secure$/;

test('an https PUBLIC_URL makes the cookie Secure at its host only; the LAN address over http signs in', async () => {
  const s = await start({ publicUrl: 'https://car.example.org' });
  const atPublicHost = await signInWith(s, { host: 'car.example.org' });
  expect(atPublicHost.setCookie).toEndWith(SECURE_END);
  const overLan = await signInWith(s, { host: '192.168.1.20:8080' });
  expect(overLan.setCookie).toMatch(
    /^ev_ingest_session=[\w-]{43}; Max-Age=2592000; HttpOnly; SameSite=Strict; Path=\/$/,
  );
  expect(overLan.opens).toBe(true);
});

test("behind a trusted proxy another host takes X-Forwarded-Proto; PUBLIC_URL's host its scheme", async () => {
  const s = await start({ publicUrl: 'http://car.example.org', trustProxy: true });
  expect((await signInWith(s, { host: 'nas.lan', 'x-forwarded-proto': 'https' })).setCookie).toEndWith(SECURE_END);
  expect((await signInWith(s, { host: 'nas.lan', 'x-forwarded-proto': 'http' })).setCookie).not.toContain('Secure');
  const atPublicHost = await signInWith(s, { host: 'car.example.org', 'x-forwarded-proto': 'https' });
  expect(atPublicHost.setCookie).not.toContain('Secure');
});

test('Secure, the cookie is named __Host-ev_ingest_session, read and cleared by that name only', async () => {
  const s = await start({ publicUrl: 'https://car.example.org' });
  const headers = { host: 'car.example.org' };
  const { setCookie, opens } = await signInWith(s, headers);
  expect(setCookie).toMatch(SECURE);
  expect(opens).toBe(true);
  const token = setCookie.slice(setCookie.indexOf('=') + 1, setCookie.indexOf(';'));
  const plain = await getPage(s, '/dashboard', `ev_ingest_session=${token}`, headers);
  expect([plain.status, plain.headers.get('location')]).toEqual([303, '/dashboard/sign-in']);
  const dead = await getPage(s, '/dashboard', `__Host-ev_ingest_session=${'A'.repeat(43)}`, headers);
  expect(dead.headers.get('set-cookie')).toBe(`__Host-ev_ingest_session=; Max-Age=0${SECURE_END}`);
});
