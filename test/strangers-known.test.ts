/** The addresses that gave the right password are deleted from the database 30 days after their last. */
import { afterEach, expect, test } from 'bun:test';
import { tempDir, waitUntil } from './support.ts';
import { PASSWORD } from './pairing-support.ts';
import { clock, closeAndCheckLogs, listDevices, startGuarded } from './strangers-support.ts';

afterEach(closeAndCheckLogs);

const DAY = 24 * 60 * 60_000;

test('a restart deletes the addresses older than 30 days, with no right password needed', async () => {
  const dir = tempDir();
  const first = await startGuarded({}, { dir });
  expect((await listDevices(first, '203.0.113.20', PASSWORD)).status).toBe(200);
  clock.at += 20 * DAY;
  expect((await listDevices(first, '203.0.113.21', PASSWORD)).status).toBe(200);
  await first.close(); // commits what is queued
  clock.at += 11 * DAY;
  const again = await startGuarded({}, { dir });
  const rows = () => again.storage.db.query('SELECT address FROM known_addresses ORDER BY address').all();
  await waitUntil(() => rows().length === 1);
  expect(rows()).toEqual([{ address: '203.0.113.21' }]);
});
