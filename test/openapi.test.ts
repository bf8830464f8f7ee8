import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Value } from '@sinclair/typebox/value';
import { apiOperations } from '../src/app.ts';
import type { ApiOperation } from '../src/http/openapi.ts';
import { sampleFieldNames, sampleFields } from '../src/telemetry/fields.ts';
import { startTestService, type TestService } from './support.ts';

/** Paths that answer HTML pages, left out of the API document. */
const PAGE_PREFIXES = ['/pair', '/dashboard'];

let withPairing: TestService;
let withoutPairing: TestService;
beforeAll(async () => {
  withPairing = await startTestService({ approvalPassword: 'an approval password for tests' });
  withoutPairing = await startTestService();
});
afterAll(async () => {
  await withPairing.close();
  await withoutPairing.close();
});

type Document = { openapi: string; paths: Record<string, Record<string, Record<string, unknown>>> } & Record<
  string,
  unknown
>;

async function fetchDocument(service: TestService): Promise<Document> {
  const response = await service.request('GET', '/v1/openapi.json', { token: null });
  expect(response.status).toBe(200);
  return (await response.json()) as Document;
}

/** `METHOD path` with every path parameter written `{}`, as Elysia's `:id` and `*` and OpenAPI's `{id}`. */
const routeKey = (method: string, path: string) =>
  `${method.toUpperCase()} ${path.replace(/\{[^}]+\}|:[^/]+|\*/g, '{}')}`;

function servedApiRoutes(service: TestService): string[] {
  const routes = (service.app as unknown as { routes: { method: string; path: string }[] }).routes;
  return routes
    .filter((route) => !PAGE_PREFIXES.some((prefix) => route.path === prefix || route.path.startsWith(`${prefix}/`)))
    .map((route) => routeKey(route.method, route.path))
    .sort();
}

function documentedRoutes(document: Document): string[] {
  return Object.entries(document.paths)
    .flatMap(([path, item]) => Object.keys(item).map((method) => routeKey(method, path)))
    .sort();
}

test('GET /v1/openapi.json answers the document without a token, never cached', async () => {
  const response = await withPairing.request('GET', '/v1/openapi.json', { token: null });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toStartWith('application/json');
  expect(response.headers.get('cache-control')).toBe('no-store');
  const document = (await response.json()) as Document;
  expect(document.openapi).toBe('3.1.0');
  expect(Object.keys(document.components as object)).toEqual(['schemas', 'securitySchemes']);
});

describe.each([
  ['with APPROVAL_PASSWORD', () => withPairing],
  ['without APPROVAL_PASSWORD', () => withoutPairing],
])('%s', (_, service) => {
  test('the document is valid OpenAPI 3.1', async () => {
    const validator = new Validator();
    const result = await validator.validate(await fetchDocument(service()));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  test('every route the app serves is in the document, and every documented route is served', async () => {
    const served = servedApiRoutes(service());
    expect(documentedRoutes(await fetchDocument(service()))).toEqual(served);
    expect(served.length).toBeGreaterThan(10);
  });
});

test('the pairing and device routes are documented only when they exist', async () => {
  const paths = (document: Document) => Object.keys(document.paths).filter((path) => /pair|devices/.test(path));
  expect(paths(await fetchDocument(withPairing))).toEqual([
    '/v1/pair/start',
    '/v1/pair/poll',
    '/v1/devices',
    '/v1/devices/{id}/revoke',
  ]);
  expect(paths(await fetchDocument(withoutPairing))).toEqual([]);
});

/** Every example the document carries, with the schema it must satisfy and where it is. */
function examplesOf(operation: ApiOperation) {
  const where = `${operation.method.toUpperCase()} ${operation.path}`;
  const examples = Object.entries(operation.answers)
    .filter(([, answer]) => answer.example !== undefined)
    .map(([status, answer]) => ({ where: `${where} ${status}`, schema: answer.schema!, example: answer.example }));
  if (operation.body) examples.push({ where: `${where} body`, ...operation.body });
  for (const params of [operation.pathParams, operation.query]) {
    for (const [name, schema] of Object.entries(params?.properties ?? {})) {
      if (schema.examples) examples.push({ where: `${where} ${name}`, schema, example: schema.examples[0] });
    }
  }
  return examples;
}

describe('examples', () => {
  const operations = apiOperations(true);

  test('every example validates against its schema', () => {
    const failures = operations
      .flatMap(examplesOf)
      .flatMap(({ where, schema, example }) =>
        Value.Check(schema, example)
          ? []
          : [`${where}: ${[...Value.Errors(schema, example)].map((e) => `${e.path} ${e.message}`)}`],
      );
    expect(failures).toEqual([]);
  });

  test('every request has an example: its body, each path parameter; every JSON success answer too', () => {
    const missing: string[] = [];
    for (const operation of operations) {
      const where = `${operation.method.toUpperCase()} ${operation.path}`;
      if (['put', 'post'].includes(operation.method) && operation.path.startsWith('/v1/') && !operation.body) {
        if (!operation.path.endsWith('/revoke')) missing.push(`${where} body`);
      }
      for (const [name, schema] of Object.entries(operation.pathParams?.properties ?? {})) {
        if (!schema.examples) missing.push(`${where} ${name}`);
      }
      const success = operation.answers[200];
      if (
        success?.schema &&
        !success.mediaTypes &&
        success.example === undefined &&
        operation.path !== '/v1/openapi.json'
      ) {
        missing.push(`${where} 200`);
      }
    }
    expect(missing).toEqual([]);
  });

  test('a wrong example is caught: the check is not vacuous', () => {
    const telemetry = operations.find((operation) => operation.path === '/v1/telemetry')!;
    const wrong = { installationId: 'not-a-uuid', samples: [{ utc: 1_764_080_005, soc: 140 }] };
    expect(Value.Check(telemetry.body!.schema, wrong)).toBe(false);
    expect(Value.Check(telemetry.body!.schema, telemetry.body!.example)).toBe(true);
  });
});

test('the sample schema is the field table: every field with its range and unit, in order', async () => {
  const document = await fetchDocument(withPairing);
  const post = document.paths['/v1/telemetry']!.post as {
    requestBody: { content: { 'application/json': { schema: { properties: { samples: { items: SampleJson } } } } } };
  };
  type SampleJson = { properties: Record<string, { anyOf?: Record<string, unknown>[]; description?: string }> };
  const sample = post.requestBody.content['application/json'].schema.properties.samples.items;
  expect(Object.keys(sample.properties)).toEqual(['utc', ...sampleFieldNames]);
  for (const name of sampleFieldNames) {
    const field = sampleFields[name];
    const [value] = sample.properties[name]!.anyOf!;
    if (field.kind === 'number') {
      expect(value).toMatchObject({ type: 'number', minimum: field.min, maximum: field.max });
      expect(value!.description as string).toStartWith(`${name}, ${field.unit}`);
    }
    if (field.kind === 'text')
      expect(value).toMatchObject({ type: 'string', minLength: field.minChars, maxLength: field.maxChars });
  }
});

test('the security schemes: the ingest token and the approval password, both bearer', async () => {
  const document = await fetchDocument(withPairing);
  const schemes = (document.components as { securitySchemes: Record<string, { type: string; scheme: string }> })
    .securitySchemes;
  expect(Object.keys(schemes)).toEqual(['ingest', 'approvalPassword']);
  for (const scheme of Object.values(schemes)) expect(scheme).toMatchObject({ type: 'http', scheme: 'bearer' });
  expect(document.paths['/v1/devices']!.get!.security).toEqual([{ approvalPassword: [] }]);
  expect(document.paths['/v1/telemetry']!.post!.security).toEqual([{ ingest: [] }]);
  expect(document.paths['/v1/health']!.get!.security).toEqual([]);
});

test('every documented error answer states its status and the {"error"} body', async () => {
  const document = await fetchDocument(withPairing);
  const telemetry = document.paths['/v1/telemetry']!.post!.responses as Record<string, { content?: object }>;
  expect(Object.keys(telemetry)).toEqual(['200', '400', '401', '403', '500']);
  expect(telemetry['403']).toMatchObject({
    content: {
      'application/json': {
        example: {
          error: 'token belongs to another installation; pair this car again after its installation id changed',
        },
      },
    },
  });
});
