/** Helpers of the dashboard's tests: signing in, the forms, and an installation with a bit of everything. */
import { expect } from 'bun:test';
import { consumptionChunk, INSTALLATION, type TestService } from './support.ts';
import { decide, PASSWORD, poll, startPairing } from './pairing-support.ts';

type Requester = Pick<TestService, 'request'>;

/** 2026-11-25 12:00 UTC: the clock of the seeded data. */
export const NOW = Date.UTC(2026, 10, 25, 12);
export const CAR_NAME = 'MG4 <b>Electric</b>';
export const SESSION_ID = 'session-1';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A POST of a form as a browser sends it, with a cookie and more headers if given. */
export function postForm(
  service: Requester,
  path: string,
  fields: Record<string, string>,
  cookie?: string,
  headers: Record<string, string> = {},
) {
  return service.request('POST', path, {
    body: new URLSearchParams(fields).toString(),
    token: null,
    headers: { ...FORM, ...(cookie === undefined ? {} : { cookie }), ...headers },
  });
}

/** A GET with the session's cookie. */
export function getPage(service: Requester, path: string, cookie?: string, headers: Record<string, string> = {}) {
  return service.request('GET', path, {
    token: null,
    headers: { ...(cookie === undefined ? {} : { cookie }), ...headers },
  });
}

/** The `name=value` of a `Set-Cookie`, as the browser sends it back. */
export const cookieOf = (response: Response) => response.headers.get('set-cookie')!.split(';')[0]!;

/** Signs in with the approval password; answers the cookie to send. */
export async function signIn(service: Requester, password = PASSWORD): Promise<string> {
  const response = await postForm(service, '/dashboard/sign-in', { password });
  expect(response.status).toBe(303);
  return cookieOf(response);
}

/** The form token a page's forms carry. */
export async function formTokenOf(service: Requester, cookie: string): Promise<string> {
  const page = await (await getPage(service, '/dashboard', cookie)).text();
  return /name="form_token" value="([^"]+)"/.exec(page)![1]!;
}

/**
 * An installation with a paired car, samples (two of them today), 40 days of consumption with a state
 * of health, and a charging session with its curve; answers the paired device's id.
 */
export async function seedInstallation(service: Requester): Promise<string> {
  const started = await startPairing(service, INSTALLATION, CAR_NAME);
  expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
  const { body } = await poll(service, started.pairingId);
  const deviceId = (body as { deviceId: string }).deviceId;

  const utc = NOW / 1000;
  const samples = [
    { utc: utc - 86_400, soc: 70 },
    { utc: utc - 3600, soc: 64.5, power: 11.2 },
    { utc: utc - 60, soc: 66, power: 11, speed: 0, lat: 52.52, lon: 13.405, is_charging: 1, car_model: 'mg4' },
  ];
  expect(
    (await service.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples } })).status,
  ).toBe(200);

  for (let day = 0; day < 40; day += 1) {
    const at = NOW - day * 86_400_000;
    const chunk = consumptionChunk({
      recordedAt: at,
      date: new Date(at).toISOString().slice(0, 10),
      day: { km: 20 + (day % 5) * 10, kwh: 3 + (day % 5) * 1.5, hours: 0.5, socDrop: 5 },
      sohPercent: 97 - day * 0.05,
    });
    expect((await service.request('PUT', '/v1/consumption/daily', { body: chunk })).status).toBe(204);
  }

  const startedAt = NOW - 7_200_000;
  const curve = Array.from({ length: 30 }, (_, i) => ({
    timestampMs: startedAt + i * 60_000,
    powerKw: i < 20 ? 120 - i : 60 - i,
    socPercent: 20 + i * 2,
  }));
  const session = {
    installationId: INSTALLATION,
    startedAt,
    endedAt: startedAt + 1_800_000,
    energyKwh: 41.7,
    durationSeconds: 1800,
    startSocPercent: 20,
    endSocPercent: 78,
    totalCost: 26.31,
    pricePerKwh: 0.59,
    gridEnergyKwh: 44.6,
    chargingLossPercent: 6.5,
    curve,
  };
  expect((await service.request('PUT', `/v1/charging-sessions/${SESSION_ID}`, { body: session })).status).toBe(204);
  return deviceId;
}
