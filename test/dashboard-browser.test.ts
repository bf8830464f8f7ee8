/**
 * The dashboard in a real browser (Debian's Chromium, headless, driven by playwright-core) at a phone's
 * 412×915 and a desktop's 1280×800, JavaScript off as the pages need none: sign-in, the refusals, every
 * page with data and empty, revoke, sign-out, no content security policy violation, no sideways scroll.
 * A screenshot of every page goes to the folder printed at the start (DASHBOARD_SCREENSHOTS, else the
 * temp folder). A second, script-enabled context runs axe-core (WCAG 2 A and AA, contrast included) in
 * light and dark, and walks the installation page by keyboard.
 */
import { expect, test } from 'bun:test';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, skipWithoutChromium } from './chromium.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { CAR_NAME, seedInstallation, SESSION_ID } from './dashboard-support.ts';
import { PASSWORD, WRONG_PASSWORD } from './pairing-support.ts';
import { INSTALLATION, OTHER_INSTALLATION, overSocket, tempDir, testConfig } from './support.ts';

/** The browser APIs used in `evaluate` (the project's types have no DOM). */
interface BrowserWindow {
  innerWidth: number;
  document: {
    documentElement: { scrollWidth: number };
    activeElement: { tagName: string; textContent: string; getAttribute(name: string): string | null } | null;
  };
  getComputedStyle(element: unknown): { outlineStyle: string; fontSize: string };
  axe: { run(options: object): Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }> };
}

const skipped = skipWithoutChromium('/dashboard');
const SCREENSHOTS = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'ev-ingest-dashboard-screenshots');
rmSync(SCREENSHOTS, { recursive: true, force: true });
mkdirSync(SCREENSHOTS, { recursive: true });
console.log(`dashboard screenshots: ${SCREENSHOTS}`);

const VIEWPORTS = [
  { name: 'phone', width: 412, height: 915 },
  { name: 'desktop', width: 1280, height: 800 },
] as const;

const installationUrl = (running: Running, id = INSTALLATION) =>
  new URL(`/dashboard/installations/${id}`, running.url).href;

/** A served dashboard and a browser; both stopped and removed after `use`. */
async function withDashboard(use: (running: Running, browser: Browser) => Promise<void>) {
  const dir = tempDir();
  const running = await serve(testConfig(dir, { approvalPassword: PASSWORD }), createMemoryLogger());
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  try {
    await use(running, browser);
  } finally {
    await browser.close();
    await running.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A page that records console messages (a policy violation is one) and saves numbered screenshots. */
async function watchedPage(context: BrowserContext, prefix: string) {
  const page = await context.newPage();
  const console: string[] = [];
  page.on('console', (message) => console.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => console.push(`pageerror: ${error.message}`));
  let shots = 0;
  const shot = async (name: string) => {
    shots += 1;
    await page.screenshot({
      path: join(SCREENSHOTS, `${prefix}-${String(shots).padStart(2, '0')}-${name}.png`),
      fullPage: true,
    });
  };
  return { page, console, shot };
}

async function heading(page: Page): Promise<string | null> {
  return page.locator('h1').textContent();
}

async function fitsWidth(page: Page): Promise<void> {
  const widths = await page.evaluate(() => {
    const window = globalThis as unknown as BrowserWindow;
    return { page: window.document.documentElement.scrollWidth, screen: window.innerWidth };
  });
  expect(widths.page).toBeLessThanOrEqual(widths.screen);
}

/** The smallest text of the charts as drawn on screen, in px: the font size scaled as the SVG is. */
async function smallestChartTextPx(page: Page): Promise<number> {
  return page.evaluate(() => {
    interface Svg {
      viewBox: { baseVal: { width: number } };
      getBoundingClientRect(): { width: number };
      querySelectorAll(selector: string): unknown[];
    }
    const window = globalThis as unknown as BrowserWindow & { document: { querySelectorAll(s: string): Svg[] } };
    const sizes = [...window.document.querySelectorAll('svg.chart')].flatMap((svg) => {
      const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      const texts = [...svg.querySelectorAll('text')];
      return texts.map((text) => Number.parseFloat(window.getComputedStyle(text).fontSize) * scale);
    });
    return Math.min(...sizes);
  });
}

async function signIn(page: Page, password: string) {
  await page.fill('#password', password);
  await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
}

for (const viewport of VIEWPORTS) {
  test.skipIf(skipped)(
    `the owner's dashboard at ${viewport.width}×${viewport.height}, script off`,
    async () => {
      expect(existsSync(CHROMIUM)).toBe(true); // under CI=true a missing browser fails
      await withDashboard(async (running, browser) => {
        const context = await browser.newContext({ viewport, javaScriptEnabled: false });
        const { page, console, shot } = await watchedPage(context, viewport.name);

        // No session: the sign-in page.
        await page.goto(new URL('/dashboard', running.url).href);
        expect(page.url()).toBe(new URL('/dashboard/sign-in', running.url).href);
        expect(await page.locator('label[for=password]').textContent()).toBe('Approval password');
        await shot('sign-in');
        await signIn(page, PASSWORD);
        expect(await heading(page)).toBe('Installations');
        expect(await page.locator('main p').first().textContent()).toBe('No installation has sent anything yet.');
        await shot('installations-empty');

        // With data: a paired car with samples, 40 days of consumption and a charging session;
        // another installation with one sample only.
        const api = overSocket(running);
        await seedInstallation(api);
        const lone = {
          installationId: OTHER_INSTALLATION,
          samples: [{ utc: Math.floor(Date.now() / 1000) - 30, soc: 55 }],
        };
        expect((await api.request('POST', '/v1/telemetry', { body: lone })).status).toBe(200);
        await page.reload();
        expect(await page.locator('h2 a').allTextContents()).toEqual([OTHER_INSTALLATION, CAR_NAME]);
        await fitsWidth(page);
        await shot('installations');

        await Promise.all([page.waitForLoadState(), page.click(`a:text-is("${CAR_NAME}")`)]);
        expect(await heading(page)).toBe(CAR_NAME);
        expect(await page.locator('svg.chart').count()).toBe(3);
        expect(await page.locator('ul.devices li').count()).toBe(1);
        await fitsWidth(page);
        await shot('installation-30-days');
        for (const days of [90, 365]) {
          await Promise.all([page.waitForLoadState(), page.click(`nav.periods a:text-is("${days} days")`)]);
          expect(await page.locator('nav.periods a[aria-current=page]').textContent()).toBe(`${days} days`);
          expect(await smallestChartTextPx(page)).toBeGreaterThanOrEqual(13);
          await fitsWidth(page);
          await shot(`installation-${days}-days`);
        }
        const exported = await context.request.get(
          new URL((await page.locator('a:text-is("Samples (CSV)")').getAttribute('href')) ?? '', running.url).href,
        );
        expect([exported.status(), exported.headers()['content-disposition']]).toEqual([
          200,
          `attachment; filename="telemetry-${INSTALLATION}.csv"`,
        ]);
        expect((await exported.text()).split('\r\n')).toHaveLength(5); // header, three samples, the last line's end

        await Promise.all([page.waitForLoadState(), page.click('nav.tabs a:text-is("Charging sessions")')]);
        expect(await page.locator('ul.sessions li').count()).toBe(1);
        // The start time on one line, and every value of the card inside the screen (nothing clipped).
        const start = (await page.locator('ul.sessions h3 a').boundingBox())!;
        expect(start.height).toBeLessThan(30);
        for (const value of await page.locator('ul.sessions dd').all()) {
          const box = (await value.boundingBox())!;
          expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
        }
        expect(await page.locator('ul.sessions dd').last().textContent()).toBe('26.31');
        await fitsWidth(page);
        await shot('charging-sessions');
        await Promise.all([page.waitForLoadState(), page.click('ul.sessions a')]);
        expect(page.url()).toEndWith(`/charging-sessions/${SESSION_ID}`);
        expect(await page.locator('svg.chart').count()).toBe(2);
        await fitsWidth(page);
        await shot('charging-session');

        // The installation with one sample: every section says what it lacks.
        await page.goto(installationUrl(running, OTHER_INSTALLATION));
        const empties = [
          'No days recorded yet: the car app uploads them as it records the driving.',
          'No consumption recorded yet.',
          'No state of health reported yet.',
          'No paired devices.',
        ];
        for (const empty of empties) {
          expect(await page.locator(`p:text-is("${empty}")`).count()).toBe(1);
        }
        expect(await page.locator('svg.chart').count()).toBe(0);
        await shot('installation-empty');
        await Promise.all([page.waitForLoadState(), page.click('nav.tabs a:text-is("Charging sessions")')]);
        expect(await page.locator('p:text-is("No charging sessions recorded.")').count()).toBe(1);
        await shot('charging-sessions-empty');

        // Dark mode, with the same session's cookie.
        const dark = await browser.newContext({ viewport, javaScriptEnabled: false, colorScheme: 'dark' });
        await dark.addCookies(await context.cookies());
        const darkPage = await watchedPage(dark, `${viewport.name}-dark`);
        for (const url of [installationUrl(running), `${installationUrl(running)}/charging-sessions/${SESSION_ID}`]) {
          await darkPage.page.goto(url);
          await darkPage.shot(url.endsWith(SESSION_ID) ? 'charging-session' : 'installation');
        }
        expect(darkPage.console).toEqual([]);
        await dark.close();

        // Revoke: back on the installation, the device is revoked and its token refused.
        await page.goto(installationUrl(running));
        await Promise.all([page.waitForLoadState(), page.click('button:text-is("Revoke")')]);
        expect(page.url()).toBe(`${installationUrl(running)}#devices`);
        expect(await page.locator('ul.devices dd').last().textContent()).toStartWith('revoked ');
        expect(await page.locator('button:text-is("Revoke")').count()).toBe(0);
        expect(running.service.devices.list()[0]!.revokedAt).not.toBeNull();
        await shot('revoked');

        // Sign out: the sign-in page, and the dashboard is closed again.
        await Promise.all([page.waitForLoadState(), page.click('button:text-is("Sign out")')]);
        expect(await heading(page)).toBe('Sign in');
        await page.goto(new URL('/dashboard', running.url).href);
        expect(await heading(page)).toBe('Sign in');

        // Wrong passwords: the tries left, then the lockout.
        await signIn(page, WRONG_PASSWORD);
        expect(await page.locator('[role=alert]').textContent()).toBe(
          'Wrong password. 4 tries left before the approval password locks for 60 seconds.',
        );
        await shot('wrong-password');
        for (let i = 0; i < 4; i += 1) await signIn(page, WRONG_PASSWORD);
        expect(await page.locator('[role=alert]').textContent()).toMatch(
          /^Too many wrong passwords \(5 in a row\)\. Try again in \d+ seconds?\.$/,
        );
        await signIn(page, PASSWORD);
        expect(await page.locator('[role=alert]').textContent()).toMatch(
          /^Too many wrong passwords \(5 in a row\)\. Try again in \d+ seconds?\.$/,
        );
        await shot('locked');

        // Chromium reports each answer with an error status; anything else (a policy violation) fails.
        const failed = (status: string) =>
          `error: Failed to load resource: the server responded with a status of ${status}`;
        expect(console).toEqual([...Array(5).fill(failed('403 (Forbidden)')), failed('429 (Too Many Requests)')]);
        await context.close();
      });
    },
    120_000,
  );
}

test.skipIf(skipped)(
  'axe-core finds no WCAG 2 A/AA violation in light or dark; the pages work by keyboard',
  async () => {
    const axe = readFileSync(join(import.meta.dir, '../node_modules/axe-core/axe.min.js'), 'utf8');
    await withDashboard(async (running, browser) => {
      await seedInstallation(overSocket(running));
      for (const colorScheme of ['light', 'dark'] as const) {
        // Scripts on and the policy bypassed in this context only, to run axe in the page.
        const context = await browser.newContext({
          viewport: { width: 412, height: 915 },
          colorScheme,
          bypassCSP: true,
        });
        const page = await context.newPage();
        await page.goto(new URL('/dashboard/sign-in', running.url).href);
        const pages = [
          page.url(),
          new URL('/dashboard', running.url).href,
          installationUrl(running),
          `${installationUrl(running)}?days=365`,
          `${installationUrl(running)}/charging-sessions`,
          `${installationUrl(running)}/charging-sessions/${SESSION_ID}`,
        ];
        // Signed in by keyboard alone: Tab to the field, type, Enter.
        await page.keyboard.press('Tab');
        await page.keyboard.press('Tab');
        expect(
          await page.evaluate(() =>
            (globalThis as unknown as BrowserWindow).document.activeElement?.getAttribute('id'),
          ),
        ).toBe('password');
        await page.keyboard.type(PASSWORD);
        await Promise.all([page.waitForURL(/\/dashboard$/), page.keyboard.press('Enter')]);
        for (const url of pages) {
          await page.goto(url);
          await page.addScriptTag({ content: axe });
          const { violations } = await page.evaluate(() =>
            (globalThis as unknown as BrowserWindow).axe.run({
              runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa'] },
            }),
          );
          expect({
            url,
            colorScheme,
            violations: violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
          }).toEqual({ url, colorScheme, violations: [] });
        }
        // The installation page by keyboard: every link and button is reached, each with a visible focus ring.
        await page.goto(installationUrl(running));
        const reached: string[] = [];
        for (let i = 0; i < 40; i += 1) {
          await page.keyboard.press('Tab');
          const focused = await page.evaluate(() => {
            const window = globalThis as unknown as BrowserWindow;
            const element = window.document.activeElement;
            // Past the last one, focus leaves the page for the browser's own controls: the body is active then.
            if (element === null || element.tagName === 'BODY') return null;
            return { text: element.textContent.trim(), outline: window.getComputedStyle(element).outlineStyle };
          });
          if (focused === null || reached.includes(focused.text)) continue;
          reached.push(focused.text);
          expect([focused.text, focused.outline]).toEqual([focused.text, 'solid']);
        }
        for (const text of [
          'Sign out',
          'Charging sessions',
          '90 days',
          '365 days',
          'Revoke',
          'Samples (CSV)',
          'Charging sessions (NDJSON)',
        ]) {
          expect(reached).toContain(text);
        }
        await context.close();
      }
    });
  },
  120_000,
);
