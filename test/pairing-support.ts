/** Helpers of the pairing and device tests: the car's calls and the owner's form. */
import { expect } from 'bun:test';
import { createHash } from 'node:crypto';
import { answer, startTestService, type TestService } from './support.ts';

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

export async function startPairing(
  service: Requester,
  installationId: string,
  name?: string,
  address?: string,
): Promise<Started> {
  const { status, body } = await answer(
    await service.request('POST', '/v1/pair/start', { body: { installationId, name }, token: null, address }),
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

/** The content type of the owner's approval form. */
export const form = { 'content-type': 'application/x-www-form-urlencoded' };
/** The letters of a user code, written out here so that a change to the code's alphabet fails. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const CODE = new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`);

export const styleHash = (html: string) =>
  createHash('sha256')
    .update(/<style>([\s\S]*?)<\/style>/.exec(html)![1]!)
    .digest('base64');

/** Checks an answer is a script-free page with the strict headers; answers its HTML. */
export async function expectPage(response: Response, status: number) {
  expect(response.status).toBe(status);
  const html = await response.text();
  expect(html.startsWith('<!doctype html>')).toBe(true);
  expect(html).not.toMatch(/<script|\son\w+=/i);
  expect(html).toContain('<meta name="robots" content="noindex"'); // a page holding a code stays out of search engines
  expect(
    Object.fromEntries(
      [
        'content-type',
        'content-security-policy',
        'x-frame-options',
        'x-content-type-options',
        'referrer-policy',
        'cache-control',
      ].map((name) => [name, response.headers.get(name)]),
    ),
  ).toEqual({
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy':
      `default-src 'none'; style-src 'sha256-${styleHash(html)}'; img-src 'self' data:; ` +
      "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });
  return html;
}

export const MINUTE = 60_000;

/** A pairing test's service: pairing on, on the test file's hand-set clock (`now`) for both of its clocks. */
export function startPairingService(now: () => number, overrides = {}, dir?: string): Promise<TestService> {
  return startTestService({ approvalPassword: PASSWORD, ...overrides }, { now, elapsed: now, dir });
}

/** Every device row, oldest first. */
export const deviceRows = (service: TestService) =>
  service.storage.db.query('SELECT * FROM devices ORDER BY created_at').all() as Record<string, unknown>[];
