import { afterAll, beforeAll, expect, test } from 'bun:test';
import { answer, startTestService, type TestService } from './support.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.close());

test('GET /v1/health answers ok without a token', async () => {
  expect(await answer(await service.request('GET', '/v1/health', { token: null }))).toEqual({
    status: 200,
    body: { status: 'ok' },
  });
});

test('an unknown path is 404 {"error":"not found"}', async () => {
  expect(await answer(await service.request('GET', '/v1/nothing-here'))).toEqual({
    status: 404,
    body: { error: 'not found' },
  });
});

test('a short host name (http://nas/) reaches the same routes', async () => {
  for (const origin of ['http://nas', 'http://x', 'http://192.168.1.2:8080']) {
    const response = await service.app.handle(new Request(`${origin}/v1/health?probe=1`));
    expect(await answer(response)).toEqual({ status: 200, body: { status: 'ok' } });
  }
});
