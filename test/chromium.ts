/** Debian's Chromium for the real-browser tests, driven by playwright-core: where it is and how it starts. */
import { existsSync } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

/** Headless, and kept from reaching hosts this machine cannot reach. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Whether the browser tests of `what` are skipped: only when Chromium is missing outside CI, and then loudly. */
export function skipWithoutChromium(what: string): boolean {
  const skip = !existsSync(CHROMIUM) && process.env.CI !== 'true';
  if (skip)
    console.warn(
      `\n!!! ${CHROMIUM} is missing: SKIPPING the real-browser test of ${what} (apt-get install chromium) !!!\n`,
    );
  return skip;
}
