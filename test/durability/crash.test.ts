/** The short form of the crash test (test/crash/crash.ts): the compiled binary SIGKILLed under load 6 times. */
import { expect, test } from 'bun:test';
import { crashRun } from '../crash/crash.ts';

test('after 6 SIGKILLs under mixed load every acknowledged write holds its last value; none half-done', async () => {
  const report = await crashRun(6);
  expect(report.problems).toEqual([]);
  expect(report.answered).toBeGreaterThan(100);
});
