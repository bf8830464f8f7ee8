/**
 * The dashboard in a real browser (Debian's Chromium, script off) behind a proxy that serves it under `/ev`
 * and strips the prefix, as Caddy's `handle_path /ev/*` does: signing in, the pages, revoke and sign-out
 * stay under the prefix, and the proxy answers 404 to anything the browser asks for outside it.
 */
import { expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { CHROMIUM, CHROMIUM_ARGS, skipWithoutChromium } from './chromium.ts';
import { CAR_NAME, seedInstallation } from './dashboard-support.ts';
import { PASSWORD } from './pairing-support.ts';
import { INSTALLATION, overSocket, tempDir, testConfig } from './support.ts';

const skipped = skipWithoutChromium('the dashboard under a sub-path');
const PREFIX = '/ev';

/** A proxy on a free port forwarding `/ev/…` to `target()` without the prefix; a 404 for any other path. */
function prefixStrippingProxy(target: () => URL) {
  return Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url);
      if (!url.pathname.startsWith(`${PREFIX}/`)) return new Response('outside the prefix', { status: 404 });
      const headers = new Headers(request.headers);
      headers.delete('host');
      const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer();
      const forwarded = new URL(`${url.pathname.slice(PREFIX.length)}${url.search}`, target());
      return fetch(forwarded, { method: request.method, headers, body, redirect: 'manual', decompress: false });
    },
  });
}

test.skipIf(skipped)(
  'under /ev: sign-in, the pages, revoke and sign-out never leave the prefix',
  async () => {
    let running: Running | undefined;
    const proxy = prefixStrippingProxy(() => running!.url);
    const publicUrl = `http://127.0.0.1:${proxy.port}${PREFIX}`;
    const dir = tempDir();
    running = await serve(testConfig(dir, { approvalPassword: PASSWORD, publicUrl }), createMemoryLogger());
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    try {
      const context = await browser.newContext({ javaScriptEnabled: false });
      const page = await context.newPage();
      const asked: { url: string; status: number }[] = [];
      page.on('response', (response) => asked.push({ url: response.url(), status: response.status() }));
      const click = (selector: string) => Promise.all([page.waitForLoadState(), page.click(selector)]);

      await page.goto(`${publicUrl}/dashboard`);
      expect(page.url()).toBe(`${publicUrl}/dashboard/sign-in`);
      await seedInstallation(overSocket(running));
      await page.fill('#password', PASSWORD);
      await click('button[type=submit]');
      expect(page.url()).toBe(`${publicUrl}/dashboard`);
      expect(await page.locator('h1').textContent()).toBe('Installations');

      await click(`a:text-is("${CAR_NAME}")`);
      expect(page.url()).toBe(`${publicUrl}/dashboard/installations/${INSTALLATION}`);
      await click('nav.periods a:text-is("90 days")');
      expect(await page.locator('nav.periods a[aria-current=page]').textContent()).toBe('90 days');
      await click('nav.tabs a:text-is("Charging sessions")');
      await click('ul.sessions a');
      expect(await page.locator('svg.chart').count()).toBe(2);
      await click('a:text-is("All charging sessions")');
      await click('nav.tabs a:text-is("Overview")');
      const exported = await context.request.get(
        new URL((await page.locator('a:text-is("Samples (CSV)")').getAttribute('href')) ?? '', publicUrl).href,
      );
      expect(exported.status()).toBe(200);

      await click('button:text-is("Revoke")');
      expect(page.url()).toBe(`${publicUrl}/dashboard/installations/${INSTALLATION}#devices`);
      expect(await page.locator('button:text-is("Revoke")').count()).toBe(0);
      await click('button:text-is("Sign out")');
      expect(page.url()).toBe(`${publicUrl}/dashboard/sign-in`);

      // Every page, redirect and stylesheet the browser fetched went through the prefix, and none failed.
      expect(asked.filter(({ url, status }) => !url.startsWith(`${publicUrl}/dashboard`) || status >= 400)).toEqual([]);
      expect(asked.filter(({ url }) => url.endsWith('.css')).length).toBeGreaterThan(0);
    } finally {
      await browser.close();
      await running.stop();
      await proxy.stop(true);
      rmSync(dir, { recursive: true, force: true });
    }
  },
  120_000,
);
