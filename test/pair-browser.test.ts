/**
 * The /pair page in a real browser (Debian's Chromium, headless, driven by playwright-core): no
 * script, no content security policy violation, and the approval reaches the car's poll.
 */
import { expect, test } from 'bun:test';
import { existsSync, rmSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, skipWithoutChromium } from './chromium.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import { INSTALLATION, OTHER_INSTALLATION, tempDir, testConfig } from './support.ts';
import { PASSWORD, WRONG_PASSWORD } from './pairing-support.ts';

/** The one browser API used here (the project's types have no DOM). */
interface BrowserWindow {
  getComputedStyle(element: unknown): { backgroundColor: string };
  innerWidth: number;
  document: { documentElement: { scrollWidth: number } };
}

const skipped = skipWithoutChromium('/pair');

test.skipIf(skipped)(
  'a phone browser approves a car on /pair',
  async () => {
    expect(existsSync(CHROMIUM)).toBe(true); // under CI=true a missing browser fails
    const dir = tempDir();
    const profile = tempDir('ev-ingest-chromium-');
    const running = await serve(testConfig(dir, { approvalPassword: PASSWORD }), createMemoryLogger());
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      headless: true,
    });
    try {
      const car = (path: string, body: object) =>
        fetch(new URL(path, running.url), {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        }).then((response) => response.json() as Promise<Record<string, string>>);
      const started = await car('/v1/pair/start', { installationId: INSTALLATION, name: 'MG4 <b>bold</b>' });
      expect(started.approvalUrl).toBe(`${running.url.origin}/pair?code=${started.userCode}`);

      const page = await browser.newPage();
      await page.setViewportSize({ width: 390, height: 844 }); // a phone
      const console: string[] = [];
      page.on('console', (message) => console.push(`${message.type()}: ${message.text()}`));
      page.on('pageerror', (error) => console.push(`pageerror: ${error.message}`));

      const opened = await page.goto(started.approvalUrl!);
      expect(opened?.status()).toBe(200);
      expect(await page.locator('script').count()).toBe(0);
      expect(await page.locator('dd', { hasText: 'MG4 <b>bold</b>' }).count()).toBe(1);
      expect(await page.locator('dd', { hasText: INSTALLATION }).count()).toBe(1);
      // The inline style ran, so its hash in the policy matches.
      const background = await page
        .locator('button[value=approve]')
        .evaluate((button) => (globalThis as unknown as BrowserWindow).getComputedStyle(button).backgroundColor);
      expect(background).toBe('rgb(26, 127, 55)');

      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForURL(/\/pair\?code=/), page.click('button[value=approve]')]);
      expect(await page.locator('h1').textContent()).toBe('Car approved');

      // Typed by hand with a trailing slash, the page's forms still reach the page.
      const longName = 'Z'.repeat(64); // the longest name, without a space to wrap at
      const other = await car('/v1/pair/start', { installationId: OTHER_INSTALLATION, name: longName });
      expect((await page.goto(new URL('/pair/', running.url).href))?.status()).toBe(200);
      // A typo comes back in the field, to be fixed there.
      const typo = `${other.userCode!.slice(0, -1)}${other.userCode!.endsWith('B') ? 'C' : 'B'} `;
      await page.fill('#code', typo);
      await Promise.all([page.waitForURL(/\/pair\/\?code=/), page.click('button[type=submit]')]);
      expect(await page.locator('h1').textContent()).toBe('Pair a car');
      expect(await page.inputValue('#code')).toBe(typo.trim());
      await page.fill('#code', other.userCode!);
      await Promise.all([page.waitForURL(/\/pair\/\?code=/), page.click('button[type=submit]')]);
      expect(await page.locator('dd', { hasText: OTHER_INSTALLATION }).count()).toBe(1);
      expect(await page.locator('#lockout').textContent()).toBe(
        '5 wrong passwords in a row lock the approval password for 60 seconds.',
      );
      await page.fill('#password', WRONG_PASSWORD);
      await Promise.all([page.waitForLoadState(), page.click('button[value=deny]')]);
      expect(await page.locator('[role=alert]').textContent()).toBe(
        'Wrong password. 4 tries left before the approval password locks for 60 seconds.',
      );
      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForLoadState(), page.click('button[value=deny]')]);
      expect(await page.locator('h1').textContent()).toBe('Car denied');
      expect(await page.locator('p', { hasText: longName }).count()).toBe(1);
      // The name wraps: the page never scrolls sideways on the phone's width.
      const widths = await page.evaluate(() => {
        const window = globalThis as unknown as BrowserWindow;
        return { page: window.document.documentElement.scrollWidth, screen: window.innerWidth };
      });
      expect(widths.page).toBeLessThanOrEqual(widths.screen);

      // Locked (five wrong passwords at the device endpoints), the approval answers 429 linking back to the car's page.
      for (let i = 0; i < 5; i += 1)
        await fetch(new URL('/v1/devices', running.url), { headers: { authorization: `Bearer ${WRONG_PASSWORD}` } });
      const third = await car('/v1/pair/start', { installationId: OTHER_INSTALLATION });
      await page.goto(third.approvalUrl!);
      await page.fill('#password', PASSWORD);
      const [lockedAnswer] = await Promise.all([
        page.waitForResponse((response) => response.request().method() === 'POST'),
        page.click('button[value=approve]'),
      ]);
      expect(lockedAnswer.status()).toBe(429);
      // Waits for the answer: the approval page has no link.
      expect(await page.locator('a').textContent()).toBe('Back to this car');
      expect(await page.locator('h1').textContent()).toBe('Locked for now');
      // A GET of the car's page (the address it already shows): the form is not sent again.
      const [carPage] = await Promise.all([
        page.waitForResponse((response) => response.request().method() === 'GET'),
        page.click('a'),
      ]);
      expect([carPage.url(), carPage.status()]).toEqual([third.approvalUrl!, 200]);
      await page.waitForLoadState();
      expect(await page.locator('h1').textContent()).toBe('Approve this car?');
      expect(await page.locator('[role=alert]').textContent()).toMatch(
        /^Too many wrong passwords \(5 in a row\)\. Try again in \d+ seconds?\.$/,
      );

      // Chromium reports each page answered with an error status; anything else (a policy violation) fails.
      const statuses = ['404 (Not Found)', '403 (Forbidden)', '429 (Too Many Requests)'];
      expect(console).toEqual(
        statuses.map((status) => `error: Failed to load resource: the server responded with a status of ${status}`),
      );

      const collected = await car('/v1/pair/poll', { pairingId: started.pairingId! });
      expect(collected).toMatchObject({ status: 'approved', installationId: INSTALLATION });
      expect(running.service.auth.authenticate(`Bearer ${collected.token}`)).toEqual({
        kind: 'device',
        deviceId: collected.deviceId!,
        installationId: INSTALLATION,
      });
    } finally {
      await browser.close();
      await running.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(profile, { recursive: true, force: true });
    }
  },
  60_000,
);
