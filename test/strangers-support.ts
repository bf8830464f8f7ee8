/** Helpers of the tests of strangers: requests from a given client address, and the log's secrets. */
import { expect } from 'bun:test';
import { startTestService, type TestService, type TestServiceOptions } from './support.ts';
import { PASSWORD, WRONG_PASSWORD, type Started } from './pairing-support.ts';
import type { Config } from '../src/config.ts';

export const MINUTE = 60_000;

/** A test's clocks: the wall clock and the monotonic one, moved together. */
export const clock = { at: Date.UTC(2026, 10, 28, 5, 0, 0) };
export const clocks = { now: () => clock.at, elapsed: () => clock.at };

const open: TestService[] = [];

/**
 * A service with pairing on and the test clocks. After each test, what it logged is checked for every
 * secret it saw: no password, token, pairing id or user code ever reaches the log.
 */
export async function startGuarded(overrides: Partial<Config> = {}, options: TestServiceOptions = {}) {
  const service = await startTestService({ approvalPassword: PASSWORD, ...overrides }, { ...clocks, ...options });
  open.push(service);
  return service;
}

/** Secrets a test handed out (device tokens, pairing ids, user codes), checked against the log after it. */
export const seenSecrets: string[] = [];

export function keepSecretsOf(started: Started): Started {
  seenSecrets.push(started.pairingId, started.userCode, started.userCode.replace('-', ''));
  return started;
}

/**
 * Closes the test's services and checks their logs for every secret the test saw. Each test file registers it
 * (`afterEach(closeAndCheckLogs)`): Bun loads this module once a run, so a hook registered here would run after
 * the tests of the first file that imports it only.
 */
export async function closeAndCheckLogs(): Promise<void> {
  const services = open.splice(0);
  for (const service of services) await service.close();
  const secrets = [
    PASSWORD,
    WRONG_PASSWORD,
    ...services.map((service) => service.config.ingestToken),
    ...seenSecrets.splice(0),
  ];
  for (const service of services) {
    const log = service.log.lines.join('\n');
    for (const secret of secrets) expect(log).not.toContain(secret);
  }
}

/** `GET /v1/devices` from an address with a bearer value (a password or a token). */
export function listDevices(service: TestService, address: string, bearer: string | null) {
  return service.request('GET', '/v1/devices', { token: bearer, address });
}

/** Status and `Retry-After` of an answer, for assertions in one line. */
export const statusOf = (response: Response) => [response.status, response.headers.get('retry-after')] as const;

/** The log lines of one event. */
export const linesOf = (service: TestService, event: string) =>
  service.log.lines.filter((line) => line.includes(` ${event} `) || line.endsWith(` ${event}`));
