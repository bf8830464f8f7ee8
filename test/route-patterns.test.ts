/** The `route` label of the request metrics: the route pattern that served a path, as the app matched it. */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { routePatterns, UNMATCHED } from '../src/metrics/route-patterns.ts';
import { OWNER_TOKEN, startTestService, type TestService } from './support.ts';

let service: TestService;
let routeOf: (path: string) => string;
beforeAll(async () => {
  service = await startTestService();
  routeOf = routePatterns(service.app.routes);
});
afterAll(() => service.close());

test.each([
  ['/v1/ready/', '/v1/ready'],
  ['/v1/health/', '/v1/health'],
  ['/v1/consumption/history/abc/', '/v1/consumption/history/*'],
])('%s, which the app serves as the route without the slash, is labelled %s', async (path, route) => {
  const response = await service.app.handle(
    new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${OWNER_TOKEN}` } }),
  );
  expect(response.status).not.toBe(404);
  expect(routeOf(path)).toBe(route);
});

test('a path no route serves, with a trailing slash or not, is unmatched', async () => {
  for (const path of ['/v1/nothing', '/v1/nothing/', '/']) {
    expect((await service.app.handle(new Request(`http://localhost${path}`))).status).toBe(404);
    expect(routeOf(path)).toBe(UNMATCHED);
  }
});
