/** The owner's dashboard through `app.handle`: sign-in, the session cookie, form tokens, and what each page shows. */
import { afterAll, afterEach, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { limits } from '../src/limits.ts';
import { overHttps } from '../src/dashboard/cookie.ts';
import { STYLE_PATH } from '../src/dashboard/style.ts';
import {
  CAR_NAME,
  cookieOf,
  formTokenOf,
  getPage,
  NOW,
  postForm,
  SESSION_ID,
  seedInstallation,
  signIn,
} from './dashboard-support.ts';
import { PASSWORD, WRONG_PASSWORD } from './pairing-support.ts';
import { consumptionChunk, INSTALLATION, OTHER_INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService | undefined;
let clock = NOW;
let elapsed = 0;
afterEach(async () => {
  await service?.close();
  service = undefined;
});
afterAll(() => service?.close());

async function dashboard(overrides: Parameters<typeof startTestService>[0] = {}) {
  clock = NOW;
  elapsed = 0;
  service = await startTestService(
    { approvalPassword: PASSWORD, ...overrides },
    { now: () => clock, elapsed: () => elapsed },
  );
  return service;
}

/** A dashboard with a seeded installation, signed in. */
async function seededAndSignedIn() {
  const s = await dashboard();
  await seedInstallation(s);
  return { s, cookie: await signIn(s) };
}

const storedSessions = (s: TestService) =>
  s.storage.db
    .query<{ tokenHash: string; expiresAt: number }, []>(
      'SELECT token_hash AS tokenHash, expires_at AS expiresAt FROM dashboard_sessions',
    )
    .all();

const PAGES = [
  '/dashboard',
  `/dashboard/installations/${INSTALLATION}`,
  `/dashboard/installations/${INSTALLATION}/charging-sessions`,
  `/dashboard/installations/${INSTALLATION}/charging-sessions/${SESSION_ID}`,
  `/dashboard/installations/${INSTALLATION}/export/telemetry.csv`,
];

describe('without a session', () => {
  test('no APPROVAL_PASSWORD, no dashboard: 404 JSON as for any unknown path', async () => {
    const s = await dashboard({ approvalPassword: null });
    const response = await getPage(s, '/dashboard');
    expect([response.status, await response.json()]).toEqual([404, { error: 'not found' }]);
  });

  test('every page sends the browser to the sign-in page (303), a forged cookie is also removed', async () => {
    const s = await dashboard();
    await seedInstallation(s);
    for (const path of PAGES) {
      const bare = await getPage(s, path);
      expect([path, bare.status, bare.headers.get('location'), bare.headers.get('set-cookie')]).toEqual([
        path,
        303,
        '/dashboard/sign-in',
        null,
      ]);
      const forged = await getPage(s, path, `ev_ingest_session=${'A'.repeat(43)}`);
      expect([forged.status, forged.headers.get('location')]).toEqual([303, '/dashboard/sign-in']);
      expect(forged.headers.get('set-cookie')).toBe('ev_ingest_session=; Max-Age=0; HttpOnly; SameSite=Strict; Path=/');
    }
    // The revoke form too: nothing is revoked.
    const revoke = await postForm(s, `/dashboard/installations/${INSTALLATION}/devices/${crypto.randomUUID()}/revoke`, {
      form_token: 'x',
    });
    expect([revoke.status, revoke.headers.get('location')]).toEqual([303, '/dashboard/sign-in']);
  });

  test('the sign-in page and the stylesheet need no session; pages carry the strict headers', async () => {
    const s = await dashboard();
    const page = await getPage(s, '/dashboard/sign-in');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; style-src 'self'; img-src 'self' data:; " +
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).toStartWith('<!doctype html>');
    expect(html).toContain(`<link rel="stylesheet" href="${STYLE_PATH}"/>`);
    expect(html).not.toContain('<script');
    const css = await getPage(s, STYLE_PATH);
    expect([css.status, css.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
    expect(await css.text()).toContain('prefers-color-scheme:dark');
    expect((await getPage(s, '/dashboard/no-such-page')).status).toBe(404);
  });
});

describe('sign-in', () => {
  test('the right password: a 303 to the dashboard, a cookie of 32 random bytes, only its SHA-256 stored', async () => {
    const s = await dashboard();
    const response = await postForm(s, '/dashboard/sign-in', { password: PASSWORD });
    expect([response.status, response.headers.get('location')]).toEqual([303, '/dashboard']);
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(
      /^ev_ingest_session=[A-Za-z0-9_-]{43}; Max-Age=2592000; HttpOnly; SameSite=Strict; Path=\/$/,
    );
    const token = cookie.slice('ev_ingest_session='.length, cookie.indexOf(';'));
    expect(Buffer.from(token, 'base64url').length).toBe(32);
    expect(storedSessions(s)).toEqual([
      { tokenHash: createHash('sha256').update(token).digest('hex'), expiresAt: NOW + limits.dashboardSessionMs },
    ]);
    expect(s.log.lines.join('\n')).not.toContain(token);
    expect((await getPage(s, '/dashboard', cookieOf(response))).status).toBe(200);
    // Signed in, the sign-in page leads on.
    const again = await getPage(s, '/dashboard/sign-in', cookieOf(response));
    expect([again.status, again.headers.get('location')]).toEqual([303, '/dashboard']);
  });

  test('wrong passwords say the tries left; the fifth locks even the right one (shared with /pair)', async () => {
    const s = await dashboard();
    const wrong = await postForm(s, '/dashboard/sign-in', { password: WRONG_PASSWORD });
    expect(wrong.status).toBe(403);
    expect(await wrong.text()).toContain(
      'Wrong password. 4 tries left before the approval password locks for 60 seconds.',
    );
    // Three wrong ones at the device endpoint count too.
    for (let i = 0; i < 3; i += 1)
      expect((await s.request('GET', '/v1/devices', { token: WRONG_PASSWORD })).status).toBe(401);
    const fifth = await postForm(s, '/dashboard/sign-in', { password: WRONG_PASSWORD });
    expect([fifth.status, fifth.headers.get('retry-after')]).toEqual([403, '60']);
    expect(await fifth.text()).toContain('Too many wrong passwords (5 in a row). Try again in 60 seconds.');
    elapsed += 15_000;
    const locked = await postForm(s, '/dashboard/sign-in', { password: PASSWORD });
    expect([locked.status, locked.headers.get('retry-after'), locked.headers.get('set-cookie')]).toEqual([
      429,
      '45',
      null,
    ]);
    expect(await locked.text()).toContain('Try again in 45 seconds.');
    const form = await getPage(s, '/dashboard/sign-in');
    expect([form.status, await form.text()]).toEqual([
      200,
      expect.stringContaining('role="alert">Too many wrong passwords (5 in a row). Try again in 45 seconds.</p>'),
    ]);
    expect(storedSessions(s)).toEqual([]);
    elapsed += 45_000;
    expect((await postForm(s, '/dashboard/sign-in', { password: PASSWORD })).status).toBe(303);
    expect(s.log.lines.filter((line) => line.includes('dashboard.wrong_password'))).toHaveLength(2);
  });

  test('no password, another site, or a body that is not a form: refused', async () => {
    const s = await dashboard();
    expect((await postForm(s, '/dashboard/sign-in', {})).status).toBe(403);
    const crossSite = await postForm(s, '/dashboard/sign-in', { password: PASSWORD }, undefined, {
      'sec-fetch-site': 'cross-site',
    });
    expect(crossSite.status).toBe(403);
    const foreign = await postForm(s, '/dashboard/sign-in', { password: PASSWORD }, undefined, {
      origin: 'https://evil.example',
    });
    expect(foreign.status).toBe(403);
    const json = await s.request('POST', '/dashboard/sign-in', { body: { password: PASSWORD }, token: null });
    expect(json.status).toBe(400);
    expect(storedSessions(s)).toEqual([]);
    const sameOrigin = await postForm(s, '/dashboard/sign-in', { password: PASSWORD }, undefined, {
      origin: 'http://localhost',
    });
    expect(sameOrigin.status).toBe(303);
  });
});

describe('the cookie', () => {
  const setCookie = async (s: TestService, headers: Record<string, string>) => {
    const request = new Request('http://localhost/dashboard/sign-in', {
      method: 'POST',
      body: `password=${PASSWORD}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    });
    return (await s.app.handle(request)).headers.get('set-cookie')!;
  };

  test('Secure over https: directly, by an https PUBLIC_URL at its host, or a trusted X-Forwarded-Proto', async () => {
    let s = await dashboard();
    expect(await setCookie(s, {})).not.toContain('Secure');
    expect(await setCookie(s, { 'x-forwarded-proto': 'https' })).not.toContain('Secure');
    // The service itself listens on plain http; should a request still arrive as https, its cookie is Secure.
    expect(overHttps(new Request('https://localhost/dashboard/sign-in'), s.config)).toBe(true);
    await s.close();
    s = await dashboard({ publicUrl: 'https://car.example.org' });
    expect(await setCookie(s, { host: 'car.example.org' })).toEndWith('; HttpOnly; SameSite=Strict; Path=/; Secure');
    await s.close();
    s = await dashboard({ trustProxy: true });
    expect(await setCookie(s, { 'x-forwarded-proto': 'https' })).toEndWith(
      '; HttpOnly; SameSite=Strict; Path=/; Secure',
    );
    expect(await setCookie(s, { 'x-forwarded-proto': 'http' })).not.toContain('Secure');
  });

  test('sliding: used after an hour it is renewed for 30 days; unused for 30 days it opens nothing', async () => {
    const s = await dashboard();
    const cookie = await signIn(s);
    clock += 30 * 60_000;
    expect((await getPage(s, '/dashboard', cookie)).headers.get('set-cookie')).toBeNull();
    clock += 40 * 60_000;
    const renewed = await getPage(s, '/dashboard', cookie);
    expect(renewed.status).toBe(200);
    expect(renewed.headers.get('set-cookie')).toBe(`${cookie}; Max-Age=2592000; HttpOnly; SameSite=Strict; Path=/`);
    expect(storedSessions(s)[0]!.expiresAt).toBe(clock + limits.dashboardSessionMs);
    clock += limits.dashboardSessionMs - 1;
    expect((await getPage(s, '/dashboard', cookie)).status).toBe(200);
    clock += limits.dashboardSessionMs;
    expect((await getPage(s, '/dashboard', cookie)).headers.get('location')).toBe('/dashboard/sign-in');
  });
});

describe('forms', () => {
  test('revoke: refused without form token, forged, another session’s, cross-site; done with its own', async () => {
    const s = await dashboard();
    const deviceId = await seedInstallation(s);
    const cookie = await signIn(s);
    const other = await signIn(s);
    const token = await formTokenOf(s, cookie);
    const path = `/dashboard/installations/${INSTALLATION}/devices/${deviceId}/revoke`;
    const refusals = [
      await postForm(s, path, {}, cookie),
      await postForm(
        s,
        path,
        { form_token: `${token.slice(0, -1)}A` === token ? `${token.slice(0, -1)}B` : `${token.slice(0, -1)}A` },
        cookie,
      ),
      await postForm(s, path, { form_token: await formTokenOf(s, other) }, cookie),
      await postForm(s, path, { form_token: token }, cookie, { 'sec-fetch-site': 'cross-site' }),
      await postForm(s, path, { form_token: token }, cookie, { origin: 'http://evil.example' }),
    ];
    for (const refused of refusals) {
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain('Form not accepted');
    }
    expect(s.devices.list()[0]!.revokedAt).toBeNull();
    const done = await postForm(s, path, { form_token: token }, cookie);
    expect([done.status, done.headers.get('location')]).toEqual([
      303,
      `/dashboard/installations/${INSTALLATION}#devices`,
    ]);
    expect(s.devices.list()[0]!.revokedAt).toBe(NOW);
    expect(s.log.lines.some((line) => line.includes('device.revoked') && line.includes('by=dashboard'))).toBe(true);
    // Another installation's page cannot revoke this installation's device.
    const elsewhere = await postForm(
      s,
      `/dashboard/installations/${OTHER_INSTALLATION}/devices/${deviceId}/revoke`,
      { form_token: token },
      cookie,
    );
    expect(elsewhere.status).toBe(404);
  });

  test('sign-out needs the form token, deletes the session and cookie; that cookie then opens nothing', async () => {
    const s = await dashboard();
    const cookie = await signIn(s);
    const token = await formTokenOf(s, cookie);
    expect((await postForm(s, '/dashboard/sign-out', { form_token: 'forged' }, cookie)).status).toBe(403);
    expect(storedSessions(s)).toHaveLength(1);
    const out = await postForm(s, '/dashboard/sign-out', { form_token: token }, cookie);
    expect([out.status, out.headers.get('location'), out.headers.get('set-cookie')]).toEqual([
      303,
      '/dashboard/sign-in',
      'ev_ingest_session=; Max-Age=0; HttpOnly; SameSite=Strict; Path=/',
    ]);
    expect(storedSessions(s)).toEqual([]);
    for (const path of PAGES)
      expect((await getPage(s, path, cookie)).headers.get('location')).toBe('/dashboard/sign-in');
    expect((await postForm(s, '/dashboard/sign-out', { form_token: token }, cookie)).headers.get('location')).toBe(
      '/dashboard/sign-in',
    );
  });
});

describe('pages', () => {
  test('empty: no installation yet', async () => {
    const s = await dashboard();
    const html = await (await getPage(s, '/dashboard', await signIn(s))).text();
    expect(html).toContain('No installation has sent anything yet.');
  });

  test('the installations: names escaped, last sample, samples today, forwarding', async () => {
    const s = await dashboard();
    await seedInstallation(s);
    const html = await (await getPage(s, '/dashboard', await signIn(s))).text();
    expect(html).toContain('MG4 &lt;b&gt;Electric&lt;/b&gt;');
    expect(html).not.toContain(CAR_NAME);
    expect(html).toContain('1 min ago (2026-11-25 11:59 UTC)');
    expect(html).toContain('2 since 00:00 UTC');
    expect(html).toContain('<span class="status-muted">Off</span>');
  });

  test('one installation: charts with tables, lifetime, state of health, latest sample, devices, exports', async () => {
    const { s, cookie } = await seededAndSignedIn();
    const html = await (await getPage(s, `/dashboard/installations/${INSTALLATION}`, cookie)).text();
    expect(html.match(/<svg /g)).toHaveLength(3);
    expect(html).toContain('<title id="km-title">Distance per day, last 30 days</title>');
    expect((html.match(/<rect /g) ?? []).length).toBe(60);
    // 40 days of 20, 30, 40, 50, 60 km: the last 30 are six rounds of that.
    expect(html).toContain('Last 30 days: 1,200 km, 180 kWh, 15 kWh/100 km.');
    expect(html).toContain('<dt>Distance</dt><dd>1,600 km</dd>');
    expect(html).toContain('<th scope="row">2026-11</th><td class="n">97 %</td>');
    expect(html).toContain('<dt>Latitude</dt><dd>52.52 degrees</dd>');
    expect(html).toContain('<dt>Charging</dt><dd>yes</dd>');
    expect(html).toContain('<dt>State of charge</dt><dd>66 %</dd>');
    expect(html).not.toContain('<dt>is_charging</dt>');
    expect(html).toContain(`/dashboard/installations/${INSTALLATION}/export/telemetry.gpx`);
    expect(html).toContain('<h3>MG4 &lt;b&gt;Electric&lt;/b&gt;</h3>');
    expect(html).toContain('<dt>Status</dt><dd>active</dd>');
    const year = await (await getPage(s, `/dashboard/installations/${INSTALLATION}?days=365`, cookie)).text();
    // A bar a month, as the table's rows: only October and November hold records.
    expect((year.match(/<rect /g) ?? []).length).toBe(4);
    expect(year).toContain('<title id="km-title">Distance per month, last 365 days</title>');
    expect(year).toContain('<caption>Per month, newest first</caption>');
    expect(year).toContain('<th scope="row">2025-11 (from 11-26)</th><td colspan="3" class="muted">no record</td>');
    expect(year).toContain('13 bars from 2025-11 to 2026-11; highest 1,000 km; 11 without a record.');
    expect((await getPage(s, `/dashboard/installations/${OTHER_INSTALLATION}`, cookie)).status).toBe(404);
    expect((await getPage(s, '/dashboard/installations/not-a-uuid', cookie)).status).toBe(404);
  });

  test('a chunk written after a page shows on the next one (the summary is not kept past a chunk write)', async () => {
    const { s, cookie } = await seededAndSignedIn();
    const page = () =>
      getPage(s, `/dashboard/installations/${INSTALLATION}`, cookie).then((response) => response.text());
    expect(await page()).toContain('<dt>Distance</dt><dd>1,600 km</dd>');
    const old = consumptionChunk({
      recordedAt: NOW - 400 * 86_400_000,
      date: '2025-10-21',
      day: { km: 100, kwh: 15, hours: 1, socDrop: 10 },
      sohPercent: 99,
    });
    expect((await s.request('PUT', '/v1/consumption/daily', { body: old })).status).toBe(204);
    const html = await page();
    expect(html).toContain('<dt>Distance</dt><dd>1,700 km</dd>');
    expect(html).toContain('<th scope="row">2025-10</th><td class="n">99 %</td>');
  });

  test('charging sessions: the cards, one session with power and charge curves, an unknown one 404', async () => {
    const { s, cookie } = await seededAndSignedIn();
    const list = await (await getPage(s, `/dashboard/installations/${INSTALLATION}/charging-sessions`, cookie)).text();
    expect(list).toContain(
      `href="/dashboard/installations/${INSTALLATION}/charging-sessions/${SESSION_ID}">2026-11-25 10:00 UTC</a>`,
    );
    expect(list).toContain('<div><dt>Charge</dt><dd>20 % → 78 %</dd></div><div><dt>Cost</dt><dd>26.31</dd></div>');
    const one = await (
      await getPage(s, `/dashboard/installations/${INSTALLATION}/charging-sessions/${SESSION_ID}`, cookie)
    ).text();
    expect(one).toContain('<title id="power-title">Charging power over time (UTC)</title>');
    expect(one).toContain('<title id="soc-title">State of charge over time (UTC)</title>');
    expect(one.match(/<circle /g)).toHaveLength(60);
    expect((await getPage(s, `/dashboard/installations/${INSTALLATION}/charging-sessions/nope`, cookie)).status).toBe(
      404,
    );
  });

  test('exports stream the owner service’s bytes as attachments; an unknown kind or format is 404', async () => {
    const { s, cookie } = await seededAndSignedIn();
    for (const [kind, format] of [
      ['telemetry', 'csv'],
      ['telemetry', 'gpx'],
      ['consumption', 'ndjson'],
      ['sessions', 'csv'],
    ] as const) {
      const response = await getPage(s, `/dashboard/installations/${INSTALLATION}/export/${kind}.${format}`, cookie);
      const expected = s.ownerData.exportStream(kind, INSTALLATION, format as never);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe(expected.contentType);
      expect(response.headers.get('content-disposition')).toBe(`attachment; filename="${expected.filename}"`);
      expect(await response.text()).toBe(await new Response(expected.body).text());
    }
    expect((await getPage(s, `/dashboard/installations/${INSTALLATION}/export/consumption.gpx`, cookie)).status).toBe(
      404,
    );
    expect((await getPage(s, `/dashboard/installations/${INSTALLATION}/export/toString.csv`, cookie)).status).toBe(404);
  });
});
