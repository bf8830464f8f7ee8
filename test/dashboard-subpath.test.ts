/**
 * The dashboard behind a proxy that serves it under a prefix and strips it (PUBLIC_URL with a path): the
 * routes stay at /dashboard, every link, form action and redirect the browser gets carries the prefix.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { dashboardLinks } from '../src/dashboard/paths.ts';
import { STYLE_PATH } from '../src/dashboard/style.ts';
import { formTokenOf, getPage, postForm, SESSION_ID, seedInstallation, signIn } from './dashboard-support.ts';
import { PASSWORD } from './pairing-support.ts';
import { INSTALLATION, startTestService, type TestService } from './support.ts';

const PUBLIC_URL = 'https://ev.example.org/ev';
const INSTALLATION_PAGE = `/dashboard/installations/${INSTALLATION}`;

let service: TestService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

async function prefixed(publicUrl = PUBLIC_URL) {
  service = await startTestService({ approvalPassword: PASSWORD, publicUrl });
  return service;
}

/** Every `href` and `action` of a page, in order, but the empty icon (`data:,`) of every page's head. */
const addressesOf = (page: string) =>
  [...page.matchAll(/(?:href|action)="([^"]*)"/g)].map((match) => match[1]!).filter((href) => href !== 'data:,');

/** A page's text, checked to carry no address outside the prefix. */
async function pageText(s: TestService, path: string, cookie?: string, status = 200): Promise<string> {
  const response = await getPage(s, path, cookie);
  expect([path, response.status]).toEqual([path, status]);
  const page = await response.text();
  expect(page).not.toContain('href="/dashboard');
  expect(page).not.toContain('action="/dashboard');
  for (const address of addressesOf(page)) expect(address).toStartWith('/ev/dashboard');
  return page;
}

describe('the links under the path of PUBLIC_URL', () => {
  test('none without a path, at the root, or with PUBLIC_URL unset', () => {
    for (const publicUrl of ['', 'https://ev.example.org', 'http://10.0.0.2:8080']) {
      const links = dashboardLinks(publicUrl);
      expect([links.home, links.signIn, links.signOut, links.style]).toEqual([
        '/dashboard',
        '/dashboard/sign-in',
        '/dashboard/sign-out',
        STYLE_PATH,
      ]);
    }
  });

  test('the path as a browser asks for it: nested, percent-encoded', () => {
    expect(dashboardLinks('https://example.org/apps/ev').home).toBe('/apps/ev/dashboard');
    expect(dashboardLinks('https://example.org/my ev').installation(INSTALLATION)).toBe(
      `/my%20ev/dashboard/installations/${INSTALLATION}`,
    );
    expect(dashboardLinks(PUBLIC_URL).session(INSTALLATION, 'a/b')).toBe(
      `/ev/dashboard/installations/${INSTALLATION}/charging-sessions/a%2Fb`,
    );
  });
});

describe('PUBLIC_URL=https://ev.example.org/ev, the proxy stripping /ev', () => {
  test('the sign-in sends the browser to /ev/dashboard; a page without a session to /ev/dashboard/sign-in', async () => {
    const s = await prefixed();
    const page = await pageText(s, '/dashboard/sign-in');
    expect(addressesOf(page)).toEqual([`/ev${STYLE_PATH}`, '/ev/dashboard', '/ev/dashboard/sign-in']);

    const signedIn = await postForm(s, '/dashboard/sign-in', { password: PASSWORD });
    expect([signedIn.status, signedIn.headers.get('location')]).toEqual([303, '/ev/dashboard']);
    // The cookie stays for the whole host: the browser sends it to /ev/… as to anything else there.
    expect(signedIn.headers.get('set-cookie')).toEndWith('; Path=/');

    for (const path of ['/dashboard', INSTALLATION_PAGE, `${INSTALLATION_PAGE}/export/telemetry.csv`]) {
      const bare = await getPage(s, path);
      expect([path, bare.status, bare.headers.get('location')]).toEqual([path, 303, '/ev/dashboard/sign-in']);
    }
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
    const again = await getPage(s, '/dashboard/sign-in', cookie);
    expect([again.status, again.headers.get('location')]).toEqual([303, '/ev/dashboard']);
  });

  test('every page links, posts and loads its stylesheet under /ev; the stylesheet is served at /dashboard', async () => {
    const s = await prefixed();
    const deviceId = await seedInstallation(s);
    const cookie = await signIn(s);

    const installations = await pageText(s, '/dashboard', cookie);
    expect(installations).toContain(`<link rel="stylesheet" href="/ev${STYLE_PATH}"/>`);
    expect(installations).toContain('<form method="post" action="/ev/dashboard/sign-out">');
    expect(addressesOf(installations)).toContain(`/ev${INSTALLATION_PAGE}`);
    expect((await getPage(s, STYLE_PATH)).status).toBe(200);

    const installation = addressesOf(await pageText(s, INSTALLATION_PAGE, cookie));
    expect(installation).toEqual(
      expect.arrayContaining([
        `/ev${INSTALLATION_PAGE}`,
        `/ev${INSTALLATION_PAGE}/charging-sessions`,
        `/ev${INSTALLATION_PAGE}?days=90`,
        `/ev${INSTALLATION_PAGE}/devices/${deviceId}/revoke`,
        `/ev${INSTALLATION_PAGE}/export/telemetry.csv`,
        `/ev${INSTALLATION_PAGE}/export/telemetry.gpx`,
        `/ev${INSTALLATION_PAGE}/export/sessions.ndjson`,
        '/ev/dashboard/sign-out',
      ]),
    );
    expect(installation.filter((address) => address.includes('/export/'))).toHaveLength(7);

    const sessions = addressesOf(await pageText(s, `${INSTALLATION_PAGE}/charging-sessions`, cookie));
    expect(sessions).toContain(`/ev${INSTALLATION_PAGE}/charging-sessions/${SESSION_ID}`);
    const session = addressesOf(await pageText(s, `${INSTALLATION_PAGE}/charging-sessions/${SESSION_ID}`, cookie));
    expect(session).toContain(`/ev${INSTALLATION_PAGE}/charging-sessions`);
    await pageText(s, '/dashboard/nothing-here', cookie, 404);
    await pageText(s, `/dashboard/installations/${crypto.randomUUID()}`, cookie, 404);
  });

  test('revoke and sign-out answer with prefixed redirects; a refused form links back under /ev', async () => {
    const s = await prefixed();
    const deviceId = await seedInstallation(s);
    const cookie = await signIn(s);
    const formToken = await formTokenOf(s, cookie);

    const refused = await postForm(s, `${INSTALLATION_PAGE}/devices/${deviceId}/revoke`, { form_token: 'x' }, cookie);
    expect(refused.status).toBe(403);
    expect(addressesOf(await refused.text())).toEqual([`/ev${STYLE_PATH}`, '/ev/dashboard', '/ev/dashboard']);

    const revoked = await postForm(
      s,
      `${INSTALLATION_PAGE}/devices/${deviceId}/revoke`,
      { form_token: formToken },
      cookie,
    );
    expect([revoked.status, revoked.headers.get('location')]).toEqual([303, `/ev${INSTALLATION_PAGE}#devices`]);

    const signedOut = await postForm(s, '/dashboard/sign-out', { form_token: formToken }, cookie);
    expect([signedOut.status, signedOut.headers.get('location')]).toEqual([303, '/ev/dashboard/sign-in']);
  });

  test('a trailing slash in PUBLIC_URL gives the same links', async () => {
    const s = await prefixed('https://ev.example.org/ev/');
    const signedIn = await postForm(s, '/dashboard/sign-in', { password: PASSWORD });
    expect(signedIn.headers.get('location')).toBe('/ev/dashboard');
  });
});
