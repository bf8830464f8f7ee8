/**
 * Property-based bad input (fast-check, seeded and bounded): thousands of generated bodies, headers,
 * path ids and query strings at every endpoint through app.handle. Never a 5xx; every JSON 400 names
 * a field (its message begins with a JSON path) or is one of the fixed body messages.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import fc from 'fast-check';
import { messages } from '../../src/http/errors.ts';
import { buildRequest, INSTALLATION, OWNER_TOKEN, startTestService, type TestService } from '../support.ts';

const SEED = 20261125;
const RUNS = 250;
const PASSWORD = 'approval-password-for-tests';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ approvalPassword: PASSWORD });
});
afterAll(() => service.close());

const FIXED = new Set<string>(Object.values(messages));
/** `installationId must …`, `samples[3].soc …`, `day.km …`: a JSON path, a space, the problem. */
const NAMES_A_FIELD = /^([A-Za-z_][A-Za-z0-9_]*)(\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])* \S/;
/** The top-level fields of the contract's request bodies and paths: the path must start with one. */
const FIELDS = new Set([
  'installationId',
  'samples',
  'plannerSentUtc',
  'recordedAt',
  'date',
  'day',
  'sohPercent',
  'sessionId',
  'startedAt',
  'endedAt',
  'energyKwh',
  'durationSeconds',
  'meteredSeconds',
  'chargingLossPercent',
  'gridEnergyKwh',
  'pricePerKwh',
  'totalCost',
  'startSocPercent',
  'endSocPercent',
  'lastPower',
  'curveIntervalMs',
  'isDemo',
  'curve',
  'name',
  'pairingId',
]);
const namesAField = (error: string) => FIELDS.has(NAMES_A_FIELD.exec(error)?.[1] ?? '');

type Route = { method: string; path: (id: string) => string; token: 'owner' | 'password' | 'none'; json: boolean };
const ROUTES: Route[] = [
  { method: 'POST', path: () => '/v1/telemetry', token: 'owner', json: true },
  { method: 'PUT', path: () => '/v1/consumption/daily', token: 'owner', json: true },
  { method: 'PUT', path: (id) => `/v1/charging-sessions/${id}`, token: 'owner', json: true },
  { method: 'GET', path: (id) => `/v1/consumption/history/${id}`, token: 'owner', json: true },
  { method: 'POST', path: () => '/v1/pair/start', token: 'none', json: true },
  { method: 'POST', path: () => '/v1/pair/poll', token: 'none', json: true },
  { method: 'GET', path: () => '/v1/devices', token: 'password', json: true },
  { method: 'POST', path: (id) => `/v1/devices/${id}/revoke`, token: 'password', json: true },
  { method: 'GET', path: () => '/pair', token: 'none', json: false },
  { method: 'POST', path: () => '/pair', token: 'none', json: false },
  { method: 'GET', path: () => '/v1/health', token: 'none', json: true },
];

const hostileKey = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'installationId',
    'samples',
    'utc',
    'day',
    'recordedAt',
    'curve',
    '',
  ),
  fc.string({ maxLength: 12 }),
);
const hostileLeaf = fc.oneof(
  fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, -0, 0, 1e-320, '\u0000', '\ud800', INSTALLATION, 'NaN', true, null),
  fc.double(),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => Number(n)),
  fc.integer(),
  fc.string({ maxLength: 40, unit: 'binary' }),
);
const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, hostileLeaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 6 }),
  object: fc.dictionary(hostileKey, tie('value'), { maxKeys: 8 }),
})).value;

/** Valid-looking bodies with one part broken, so that validation reaches deep fields. */
const nearlyValid = fc.record({
  installationId: fc.oneof(fc.constant(INSTALLATION), hostileLeaf),
  samples: fc.oneof(fc.array(fc.dictionary(hostileKey, hostileLeaf, { maxKeys: 6 }), { maxLength: 5 }), hostileLeaf),
  recordedAt: fc.oneof(fc.constant(1_764_000_000_000), hostileLeaf),
  date: fc.oneof(fc.constant('2026-11-25'), hostileLeaf),
  day: fc.oneof(
    fc.record({ km: hostileLeaf, kwh: hostileLeaf, hours: hostileLeaf, socDrop: hostileLeaf }),
    hostileLeaf,
  ),
  startedAt: hostileLeaf,
  endedAt: hostileLeaf,
  energyKwh: hostileLeaf,
  curve: fc.oneof(fc.array(fc.dictionary(hostileKey, hostileLeaf), { maxLength: 4 }), hostileLeaf),
  pairingId: hostileLeaf,
  name: hostileLeaf,
});

/** A nesting deeper than any parser's patience. */
const deepNesting = fc.integer({ min: 100, max: 100_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth));

const rawBody = fc.oneof(
  hostileJson.map((value) => JSON.stringify(value) ?? 'null'),
  nearlyValid.map((value) => JSON.stringify(value)),
  deepNesting,
  fc.uint8Array({ maxLength: 200 }), // invalid UTF-8, NUL bytes
  fc.string({ maxLength: 200, unit: 'binary' }),
  fc.constantFrom(
    '{"__proto__":{"installationId":"x"}}',
    `{"installationId":"${INSTALLATION}","samples":[{"utc":1e400}]}`,
    '',
  ),
);

const pathId = fc.oneof(
  fc.constantFrom(INSTALLATION, 'x'.repeat(10_000), '%00', '%ff%fe', '..', '%2e%2e%2f', '__proto__', 'session-1'),
  fc.string({ maxLength: 80 }).map(encodeURIComponent),
  fc.stringMatching(/^[A-Za-z0-9._-]{1,70}$/),
);

const query = fc.oneof(
  fc.constant(''),
  fc.string({ maxLength: 60 }).map((text) => `?${encodeURIComponent(text)}`),
  fc.constant(`?code=%00&code=${'x'.repeat(5000)}`),
);

const headers = fc.record(
  {
    'content-type': fc.constantFrom(
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      '',
    ),
    'x-forwarded-host': fc.string({ maxLength: 30 }).filter((value) => /^[\x21-\x7e]*$/.test(value)),
  },
  { requiredKeys: [] },
);

const authorization = (route: Route) =>
  fc.oneof(
    fc.constant(
      route.token === 'owner' ? `Bearer ${OWNER_TOKEN}` : route.token === 'password' ? `Bearer ${PASSWORD}` : undefined,
    ),
    fc.constantFrom(undefined, 'Bearer ', 'Basic abc', `Bearer ${'x'.repeat(43)}`, `bearer ${OWNER_TOKEN}`),
  );

async function check(
  route: Route,
  id: string,
  search: string,
  body: string | Uint8Array,
  auth: string | undefined,
  extra: Record<string, string>,
) {
  const method = route.method;
  const request = buildRequest(method, route.path(id) + search, {
    token: null,
    headers: { ...extra, ...(auth === undefined ? {} : { authorization: auth }) },
    body: method === 'GET' ? undefined : body,
  });
  const response = await service.app.handle(request);
  const text = await response.text();
  expect(response.status).toBeLessThan(500);
  if (route.json && response.status === 400) {
    const error = (JSON.parse(text) as { error: string }).error;
    if (!FIXED.has(error) && !namesAField(error)) throw new Error(`400 without a field: ${JSON.stringify(error)}`);
  }
}

test.each(ROUTES.map((route) => [`${route.method} ${route.path(':id')}`, route] as const))(
  '%s: generated bodies, headers, ids and queries never give a 5xx, and every 400 names a field',
  async (_, route) => {
    await fc.assert(
      fc.asyncProperty(pathId, query, rawBody, authorization(route), headers, (id, search, body, auth, extra) =>
        check(route, id, search, body, auth, extra),
      ),
      { seed: SEED, numRuns: RUNS },
    );
  },
);

test('memory stays flat over a further 2 × 1500 hostile requests', async () => {
  const route = ROUTES[0]!;
  const sample = fc.sample(fc.tuple(rawBody, headers), { seed: SEED, numRuns: 1500 });
  const run = async () => {
    for (const [body, extra] of sample) await check(route, '', '', body, `Bearer ${OWNER_TOKEN}`, extra);
    Bun.gc(true);
    return process.memoryUsage().heapUsed;
  };
  const warm = await run();
  const after = await run();
  expect(after - warm).toBeLessThan(16 * 1024 * 1024);
}, 60_000);
