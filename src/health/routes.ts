/** `GET /v1/ready`: readiness for load balancers and container health checks, without a token. */
import { Elysia } from 'elysia';
import type { Readiness } from './service.ts';

export function readinessRoutes(readiness: Readiness) {
  return new Elysia({ name: 'readiness' }).get('/v1/ready', async () => {
    const reason = await readiness.check();
    if (reason === null) return Response.json({ status: 'ready' });
    return Response.json({ status: 'unavailable', reason }, { status: 503 });
  });
}
