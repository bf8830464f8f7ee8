/** What the dashboard answers at its edges: a second sign-in, other methods, downloads, the backstop's text. */
import { afterEach, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { DASHBOARD_HEADERS } from '../src/dashboard/routes.tsx';
import { getPage, postForm, seedInstallation, signIn } from './dashboard-support.ts';
import { PASSWORD, WRONG_PASSWORD } from './pairing-support.ts';
import { INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService | undefined;
afterEach(() => service?.close());

async function start(overrides = {}) {
  service = await startTestService({ approvalPassword: PASSWORD, ...overrides });
  return service;
}

const storedSessions = (s: TestService) => s.storage.db.query('SELECT count(*) AS n FROM dashboard_sessions').get();

test('signing in again with a live cookie replaces its session', async () => {
  const s = await start();
  const first = await signIn(s);
  const second = await postForm(s, '/dashboard/sign-in', { password: PASSWORD }, first);
  expect(second.status).toBe(303);
  expect(storedSessions(s)).toEqual({ n: 1 });
  expect((await getPage(s, '/dashboard', first)).status).toBe(303);
  expect((await getPage(s, '/dashboard', second.headers.get('set-cookie')!.split(';')[0])).status).toBe(200);
});

test('other methods on /dashboard itself answer the 404 page with the page headers', async () => {
  const s = await start();
  for (const method of ['PUT', 'DELETE', 'POST', 'PATCH']) {
    const response = await s.request(method, '/dashboard', { token: null });
    const answer = [method, response.status, response.headers.get('content-type')];
    expect(answer).toEqual([method, 404, 'text/html; charset=utf-8']);
    for (const [name, value] of Object.entries(DASHBOARD_HEADERS)) expect(response.headers.get(name)).toBe(value);
  }
});

test('exports, from /v1 and from the dashboard, are neither sniffed nor run as pages', async () => {
  const s = await start();
  await seedInstallation(s);
  const cookie = await signIn(s);
  const downloads = [
    await s.request('GET', `/v1/telemetry/export/${INSTALLATION}?format=csv`),
    await getPage(s, `/dashboard/installations/${INSTALLATION}/export/telemetry.csv`, cookie),
  ];
  for (const download of downloads) {
    expect(download.status).toBe(200);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-security-policy')).toBe('sandbox');
  }
});

test("the backstop's lockout says it came from many addresses, not from this one's wrong passwords", async () => {
  const s = await start({ trustProxy: true });
  const from = (address: string) => ({ 'x-forwarded-for': address });
  for (let n = 0; n < limits.backstopAttempts; n += 1)
    await postForm(s, '/dashboard/sign-in', { password: WRONG_PASSWORD }, undefined, from(`10.1.${n}.1`));
  const page = await (await getPage(s, '/dashboard/sign-in', undefined, from('10.9.9.9'))).text();
  expect(page).toContain('Too many wrong passwords from many addresses. Try again in 60 seconds.');
  expect(page).not.toContain('in a row)');
  const refused = await postForm(s, '/dashboard/sign-in', { password: PASSWORD }, undefined, from('10.9.9.9'));
  expect(refused.status).toBe(429);
  expect(await refused.text()).toContain('Too many wrong passwords from many addresses.');
});
