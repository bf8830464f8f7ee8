import { Elysia } from 'elysia';
import type { Authenticator } from '../http/auth.ts';
import { assertMayUse } from '../http/auth.ts';
import { authenticated, authenticatedBody, noContent, pathId } from '../http/ingest.ts';
import { handlerReadsBody, type BodyBounds } from '../http/body.ts';
import { uuid } from '../http/validate.ts';
import type { Consumption } from './history.ts';
import { parseChunk } from './model.ts';

export function consumptionRoutes(auth: Authenticator, bodyBounds: BodyBounds, consumption: Consumption) {
  return new Elysia()
    .put(
      '/v1/consumption/daily',
      authenticatedBody(auth, bodyBounds, async ({ caller, body }) => {
        const chunk = parseChunk(body);
        assertMayUse(caller, chunk.installationId);
        await consumption.putChunk(chunk);
        return noContent();
      }),
      handlerReadsBody,
    )
    .get(
      '/v1/consumption/history/*',
      authenticated(auth, bodyBounds, ({ caller, params }) => {
        const installationId = uuid(pathId(params), 'installationId');
        assertMayUse(caller, installationId);
        return new Response(consumption.historyJson(installationId), { headers: JSON_HEADERS });
      }),
      handlerReadsBody,
    );
}

const JSON_HEADERS = { 'content-type': 'application/json' };
