/** A signed-in dashboard's cookie spares /pair from the backstop, whatever address it comes from. */
import { afterEach, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { formTokenOf, postForm, signIn } from './dashboard-support.ts';
import { PASSWORD, startPairing, WRONG_PASSWORD } from './pairing-support.ts';
import { closeAndCheckLogs, startGuarded } from './strangers-support.ts';
import { INSTALLATION } from './support.ts';

afterEach(closeAndCheckLogs);

const from = (address: string) => ({ 'x-forwarded-for': address });

test('behind a proxy: 50 wrong passwords lock strangers out, not /pair with a live dashboard cookie', async () => {
  const service = await startGuarded({ trustProxy: true });
  const signedIn = await postForm(service, '/dashboard/sign-in', { password: PASSWORD }, undefined, from('10.0.0.1'));
  expect(signedIn.status).toBe(303);
  const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
  for (let n = 0; n < limits.backstopAttempts; n += 1) {
    const wrong = { password: WRONG_PASSWORD };
    expect((await postForm(service, '/dashboard/sign-in', wrong, undefined, from(`10.1.${n}.1`))).status).toBe(403);
  }
  const { userCode } = await startPairing(service, INSTALLATION, 'MG4');
  const approval = { code: userCode, password: PASSWORD, decision: 'approve' };
  expect((await postForm(service, '/pair', approval, undefined, from('10.9.9.7'))).status).toBe(429);
  const withCookie = await postForm(service, '/pair', approval, cookie, from('10.9.9.8'));
  expect(withCookie.status).toBe(200);
  expect(await withCookie.text()).toContain('<h1>Car approved</h1>');
});

test('a dead or forged cookie is no signed-in dashboard', async () => {
  const service = await startGuarded({ trustProxy: true });
  const cookie = await signIn(service);
  const formToken = await formTokenOf(service, cookie);
  const signedOut = await postForm(service, '/dashboard/sign-out', { form_token: formToken }, cookie);
  expect(signedOut.status).toBe(303);
  for (let n = 0; n < limits.backstopAttempts; n += 1)
    await postForm(service, '/dashboard/sign-in', { password: WRONG_PASSWORD }, undefined, from(`10.1.${n}.1`));
  const { userCode } = await startPairing(service, INSTALLATION, 'MG4');
  const approval = { code: userCode, password: PASSWORD, decision: 'approve' };
  for (const sent of [cookie, `ev_ingest_session=${'A'.repeat(43)}`])
    expect((await postForm(service, '/pair', approval, sent, from('10.9.9.8'))).status).toBe(429);
});
