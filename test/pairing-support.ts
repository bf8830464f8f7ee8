/** Helpers of the pairing and device tests: the car's calls and the owner's form. */
import { expect } from 'bun:test';
import { answer, type TestService } from './support.ts';

export const PASSWORD = 'approval-password-for-tests';
export const WRONG_PASSWORD = 'not-the-approval-password';

export interface Started {
  pairingId: string;
  userCode: string;
  approvalUrl: string;
  expiresIn: number;
  interval: number;
}

/** What the car's and the owner's calls need: the app in-process, or a listening server (`overSocket`). */
type Requester = Pick<TestService, 'request'>;

export async function startPairing(service: Requester, installationId: string, name?: string): Promise<Started> {
  const { status, body } = await answer(
    await service.request('POST', '/v1/pair/start', { body: { installationId, name }, token: null }),
  );
  expect(status).toBe(200);
  return body as Started;
}

export async function poll(service: Requester, pairingId: string) {
  return answer(await service.request('POST', '/v1/pair/poll', { body: { pairingId }, token: null }));
}

export function submitForm(service: Requester, fields: Record<string, string>): Promise<Response> {
  return service.request('POST', '/pair', {
    body: new URLSearchParams(fields).toString(),
    token: null,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
}

export function decide(service: Requester, userCode: string, decision: string, password = PASSWORD) {
  return submitForm(service, { code: userCode, password, decision });
}

/** The whole flow: start, approve on the page, collect the token. */
export async function pairDevice(service: Requester, installationId: string, name = 'MG4') {
  const started = await startPairing(service, installationId, name);
  expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
  const { body } = await poll(service, started.pairingId);
  expect(body).toMatchObject({ status: 'approved' });
  return body as { status: 'approved'; token: string; deviceId: string; installationId: string };
}
