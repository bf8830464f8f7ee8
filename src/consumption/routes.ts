/** `PUT /v1/consumption/daily` and `GET /v1/consumption/history/{installationId}`. */
import { Elysia } from 'elysia';
import type { Authenticator } from '../http/auth.ts';
import { handlerReadsBody, type BodyBounds } from '../http/body.ts';
import { noContent, ownedBody, ownedPath } from '../http/ingest.ts';
import type { Consumption } from './service.ts';
import { parseChunk } from './model.ts';

export interface ConsumptionDeps {
  auth: Authenticator;
  bodyBounds: BodyBounds;
  consumption: Consumption;
}

export function consumptionRoutes({ auth, bodyBounds, consumption }: ConsumptionDeps) {
  return new Elysia()
    .put(
      '/v1/consumption/daily',
      ownedBody(auth, bodyBounds, parseChunk, async (chunk) => {
        await consumption.putChunk(chunk);
        return noContent();
      }),
      handlerReadsBody,
    )
    .get(
      '/v1/consumption/history/*',
      ownedPath(
        auth,
        bodyBounds,
        (installationId) => new Response(consumption.historyJson(installationId), { headers: JSON_HEADERS }),
      ),
      handlerReadsBody,
    );
}

const JSON_HEADERS = { 'content-type': 'application/json' };
