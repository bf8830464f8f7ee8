/** Routes declared wrongly still answer as the API does: a schema no check explains, `owned` without a token. */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Type } from '@sinclair/typebox';
import { answer, OWNER_TOKEN, startTestService, type TestService } from './support.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
  service.app
    .use(service.pipeline)
    .get('/test/count', ({ query }) => ({ n: query.n }), {
      auth: 'ingest',
      query: Type.Object({ n: Type.String({ pattern: '^[0-9]+$' }) }),
    })
    .get('/test/unguarded', () => ({ reached: true }), { owned: () => ({ installationId: 'any' }) });
});
afterAll(() => service.close());

test('a query schema without a field-by-field check refuses with a 400 naming the field, not a 500', async () => {
  expect(await answer(await service.request('GET', '/test/count?n=x'))).toEqual({
    status: 400,
    body: { error: 'n is invalid' },
  });
  expect(await answer(await service.request('GET', '/test/count?n=3'))).toEqual({ status: 200, body: { n: '3' } });
  expect(await answer(await service.request('GET', '/test/count?n=3', { token: null }))).toEqual({
    status: 401,
    body: { error: 'unauthorized' },
  });
});

test('owned without auth: the route never runs, the log names the mistake, the client gets a plain 500', async () => {
  const response = await service.request('GET', '/test/unguarded', { token: OWNER_TOKEN });
  expect(await answer(response)).toEqual({ status: 500, body: { error: 'internal server error' } });
  expect(service.log.lines.join('\n')).toContain("GET /test/unguarded declares owned without auth: 'ingest'");
});
