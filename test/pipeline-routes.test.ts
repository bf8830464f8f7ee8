/**
 * Every route of the pipeline, in a table: the order 401 → 400 body → 400 field → 403 holds on each,
 * a path the params schema refuses is a 400 worded as before, and the approval password's routes never
 * read a body.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Value } from '@sinclair/typebox/value';
import { SessionPath } from '../src/charging/model.ts';
import { InstallationPath } from '../src/http/openapi.ts';
import { limits } from '../src/limits.ts';
import { PASSWORD } from './pairing-support.ts';
import {
  answer,
  buildRequest,
  consumptionChunk,
  INSTALLATION,
  OTHER_INSTALLATION,
  startTestService,
  type TestService,
} from './support.ts';

let service: TestService;
let otherCar: string;
beforeAll(async () => {
  service = await startTestService({ approvalPassword: PASSWORD });
  ({ token: otherCar } = await service.devices.pair(OTHER_INSTALLATION, null));
});
afterAll(() => service.close());

const session = {
  installationId: INSTALLATION,
  startedAt: 1_764_080_000_000,
  endedAt: 1_764_081_800_000,
  energyKwh: 41.7,
};
const SESSION_RULE = '1..64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit';

interface PipelineRoute {
  method: 'GET' | 'POST' | 'PUT';
  /** A request every check passes, for INSTALLATION. */
  path: string;
  body?: Record<string, unknown>;
  /** The same route with one field refused (in the body, the path or the query), and its 400. */
  refused: { path?: string; body?: Record<string, unknown>; error: string };
}

const WRITE_REFUSAL = 'token belongs to another installation; pair this car again after its installation id changed';
const READ_REFUSAL = 'token belongs to another installation; pair this car again after its installation id changed';

const routes: PipelineRoute[] = [
  {
    method: 'POST',
    path: '/v1/telemetry',
    body: { installationId: INSTALLATION, samples: [] },
    refused: { body: { installationId: INSTALLATION, samples: {} }, error: 'samples must be an array' },
  },
  {
    method: 'PUT',
    path: '/v1/consumption/daily',
    body: consumptionChunk(),
    refused: { body: consumptionChunk({ day: [1] }), error: 'day must be an object' },
  },
  {
    method: 'PUT',
    path: '/v1/charging-sessions/s-1',
    body: session,
    refused: { path: '/v1/charging-sessions/-s', error: `sessionId must be ${SESSION_RULE}` },
  },
  {
    method: 'GET',
    path: `/v1/consumption/history/${INSTALLATION}`,
    refused: { path: '/v1/consumption/history/car-1', error: 'installationId must be a UUID' },
  },
  {
    method: 'GET',
    path: `/v1/charging-sessions?installationId=${INSTALLATION}`,
    refused: {
      path: `/v1/charging-sessions?installationId=${INSTALLATION}&limit=0`,
      error: 'limit must be from 1 to 1000',
    },
  },
  {
    method: 'GET',
    path: `/v1/charging-sessions/s-1?installationId=${INSTALLATION}`,
    refused: { path: '/v1/charging-sessions/s-1', error: 'installationId is required' },
  },
  {
    method: 'GET',
    path: `/v1/telemetry/latest/${INSTALLATION}`,
    refused: { path: '/v1/telemetry/latest/', error: 'installationId must be a UUID' },
  },
  {
    method: 'GET',
    path: `/v1/telemetry/export/${INSTALLATION}`,
    refused: {
      path: `/v1/telemetry/export/${INSTALLATION}?format=kml`,
      error: 'format must be one of csv, ndjson, gpx',
    },
  },
  {
    method: 'GET',
    path: `/v1/consumption/export/${INSTALLATION}`,
    refused: {
      path: `/v1/consumption/export/${INSTALLATION}?from=x&format=gpx`,
      error: 'format must be one of csv, ndjson',
    },
  },
  {
    method: 'GET',
    path: `/v1/planner/status/${INSTALLATION}`,
    refused: { path: `/v1/planner/status/${INSTALLATION}x`, error: 'installationId must be a UUID' },
  },
];

/** The route's request with its refused field, `token` (null: none) and, when given, a body or headers. */
function refusedRequest(route: PipelineRoute, token: string | null, body?: string, headers?: Record<string, string>) {
  const path = route.refused.path ?? route.path;
  const sent = body ?? route.refused.body ?? route.body;
  return service.app.handle(buildRequest(route.method, path, { token, body: sent, headers }));
}

/** A body no check passes: unreadable JSON for a write; a GET's declared length over the cap (Bun drops its body). */
const badBody = (route: PipelineRoute) =>
  route.method === 'GET'
    ? { body: undefined, headers: { 'content-length': String(limits.bodyBytes + 1) }, error: 'body is too large' }
    : { body: '{"installationId":', headers: undefined, error: 'body is not valid JSON' };

describe.each(routes)('$method $path', (route) => {
  test('401 before anything else: no token, a bad body and a refused field', async () => {
    const { body, headers } = badBody(route);
    expect(await answer(await refusedRequest(route, null, body, headers))).toEqual({
      status: 401,
      body: { error: 'unauthorized' },
    });
  });

  test('then 400 for the body, before a refused field and before ownership', async () => {
    const { body, headers, error } = badBody(route);
    const refused = await refusedRequest(route, otherCar, body, headers);
    expect(await answer(refused)).toEqual({ status: 400, body: { error } });
  });

  test('then 400 for a refused field, before ownership', async () => {
    expect(await answer(await refusedRequest(route, otherCar))).toEqual({
      status: 400,
      body: { error: route.refused.error },
    });
  });

  test("then 403 for another installation's car; the owner's token passes", async () => {
    const request = (token?: string) => buildRequest(route.method, route.path, { token, body: route.body });
    const refused = await answer(await service.app.handle(request(otherCar)));
    expect(refused).toEqual({
      status: 403,
      body: { error: route.method === 'GET' ? READ_REFUSAL : WRITE_REFUSAL },
    });
    // A session not stored yet is a 404 of the handler: past the pipeline.
    expect([200, 204, 404]).toContain((await service.app.handle(request())).status);
  });
});

describe('a path the params schema refuses is the 400 of before', () => {
  test.each([
    ['/v1/telemetry/latest/car-1', 'car-1'],
    ['/v1/telemetry/latest/', ''],
    ['/v1/telemetry/latest/%ZZ', '%ZZ'],
    [`/v1/telemetry/latest/${INSTALLATION}/x`, `${INSTALLATION}/x`],
    [`/v1/planner/status/${INSTALLATION.slice(1)}`, INSTALLATION.slice(1)],
  ])('%s', async (path, installationId) => {
    expect(Value.Check(InstallationPath, { installationId })).toBe(false);
    expect(await answer(await service.request('GET', path))).toEqual({
      status: 400,
      body: { error: 'installationId must be a UUID' },
    });
  });

  test.each([
    ['/v1/charging-sessions/-s', '-s'],
    ['/v1/charging-sessions/a%2Fb', 'a/b'],
    [`/v1/charging-sessions/${'s'.repeat(65)}`, 's'.repeat(65)],
  ])('%s', async (path, sessionId) => {
    expect(Value.Check(SessionPath, { sessionId })).toBe(false);
    const error = `sessionId must be ${SESSION_RULE}`;
    const put = await service.request('PUT', path, { body: session });
    expect(await answer(put)).toEqual({ status: 400, body: { error } });
    const read = await service.request('GET', `${path}?installationId=${INSTALLATION}`);
    expect(await answer(read)).toEqual({ status: 400, body: { error } });
  });

  test('an id with escapes or a trailing slash is read as decoded, in any case', async () => {
    const utc = Math.floor(Date.now() / 1000) - 60;
    const stored = await service.request('POST', '/v1/telemetry', {
      body: { installationId: INSTALLATION, samples: [{ utc, soc: 50 }] },
    });
    expect(stored.status).toBe(200);
    const escaped = `/v1/telemetry/latest/%35${INSTALLATION.slice(1).toUpperCase()}/`;
    expect(await answer(await service.request('GET', escaped))).toMatchObject({
      status: 200,
      body: { installationId: INSTALLATION, utc, soc: 50 },
    });
  });
});

describe('rules the schemas cannot hold stay in the route', () => {
  test('a chunk whose lifetime is no object is stored as a delta: a schema would refuse it', async () => {
    const chunk = consumptionChunk({ recordedAt: 1_764_080_000_999, lifetime: [] });
    expect(await answer(await service.request('PUT', '/v1/consumption/daily', { body: chunk }))).toEqual({
      status: 204,
      body: null,
    });
  });
});

describe('auth: approval', () => {
  const owner = { token: PASSWORD };

  test('a revoke never reads its body: any body, the right password, an unknown device is 404', async () => {
    const body = 'x'.repeat(limits.bodyBytes * 4);
    const revoked = await service.request('POST', '/v1/devices/nope/revoke', { ...owner, body });
    expect(await answer(revoked)).toEqual({ status: 404, body: { error: 'device not found' } });
  });

  test('a wrong password is 401 before the id is looked at', async () => {
    const revoked = await service.request('POST', '/v1/devices/nope/revoke', { token: 'wrong password' });
    expect(await answer(revoked)).toEqual({ status: 401, body: { error: 'unauthorized' } });
  });
});
