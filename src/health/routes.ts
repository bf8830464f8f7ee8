/** `GET /v1/ready`: readiness for load balancers and container health checks, without a token. */
import { Elysia } from 'elysia';
import type { Readiness } from './service.ts';

const NO_STORE = { 'Cache-Control': 'no-store' };

export function readinessRoutes(readiness: Readiness) {
  return new Elysia({ name: 'readiness' }).get('/v1/ready', async () => {
    const reason = await readiness.check();
    if (reason === null) return Response.json({ status: 'ready' }, { headers: NO_STORE });
    return Response.json({ status: 'unavailable', reason }, { status: 503, headers: NO_STORE });
  });
}
