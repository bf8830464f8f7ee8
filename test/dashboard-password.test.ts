/** Changing the approval password ends every dashboard session at the next start. */
import { expect, test } from 'bun:test';
import { createHash, createHmac, scryptSync } from 'node:crypto';
import { getPage, signIn } from './dashboard-support.ts';
import { PASSWORD } from './pairing-support.ts';
import { startTestService, tempDir } from './support.ts';

const NEW_PASSWORD = 'another-approval-password';

test('a restart with the same password keeps the sessions; with another, ends them all', async () => {
  const dir = tempDir();
  const first = await startTestService({ approvalPassword: PASSWORD }, { dir });
  const cookie = await signIn(first);
  await first.close();

  const same = await startTestService({ approvalPassword: PASSWORD }, { dir });
  expect((await getPage(same, '/dashboard', cookie)).status).toBe(200);
  const kept = same.storage.db
    .query<{ salt: string; fingerprint: string }, []>('SELECT salt, fingerprint FROM dashboard_password')
    .all();
  expect(kept).toHaveLength(1);
  // A slow hash: a copy of the database must not test guesses at HMAC speed.
  const { salt, fingerprint } = kept[0]!;
  expect(fingerprint).toBe(scryptSync(PASSWORD, salt, 32, { N: 2 ** 14, r: 8, p: 1 }).toString('base64url'));
  expect(fingerprint).not.toBe(createHmac('sha256', salt).update(PASSWORD).digest('base64url'));
  const stored = JSON.stringify(kept);
  const sha256 = createHash('sha256').update(PASSWORD);
  for (const plain of [PASSWORD, sha256.copy().digest('hex'), sha256.digest('base64url')]) {
    expect(stored).not.toContain(plain);
  }
  await signIn(same); // a second session
  await same.close();

  const changed = await startTestService({ approvalPassword: NEW_PASSWORD }, { dir });
  const refused = await getPage(changed, '/dashboard', cookie);
  expect([refused.status, refused.headers.get('location')]).toEqual([303, '/dashboard/sign-in']);
  expect(changed.storage.db.query('SELECT count(*) AS n FROM dashboard_sessions').get()).toEqual({ n: 0 });
  expect(changed.log.lines.filter((line) => line.includes('dashboard.password_changed'))).toEqual([
    expect.stringMatching(/ info dashboard\.password_changed ended=2$/),
  ]);
  const newCookie = await signIn(changed, NEW_PASSWORD);
  await changed.close();

  const again = await startTestService({ approvalPassword: NEW_PASSWORD }, { dir });
  expect((await getPage(again, '/dashboard', newCookie)).status).toBe(200);
  await again.close();
});
