/** `PUT /v1/consumption/daily` and `GET /v1/consumption/history/{installationId}`. */
import { Elysia } from 'elysia';
import { InstallationPath } from '../http/openapi.ts';
import { installationOfPath, noContent, type Pipeline, type RequestParts } from '../http/pipeline.ts';
import type { Consumption } from './service.ts';
import { parseChunk, type Chunk } from './model.ts';

export interface ConsumptionDeps {
  pipeline: Pipeline;
  consumption: Consumption;
}

export function consumptionRoutes({ pipeline, consumption }: ConsumptionDeps) {
  return new Elysia()
    .use(pipeline)
    .put(
      '/v1/consumption/daily',
      async ({ owned }) => {
        await consumption.putChunk(owned as Chunk);
        return noContent();
      },
      { auth: 'ingest', owned: ({ body }: RequestParts) => parseChunk(body) },
    )
    .get(
      '/v1/consumption/history/*',
      ({ owned }) => new Response(consumption.historyJson(owned.installationId), { headers: JSON_HEADERS }),
      { auth: 'ingest', path: 'installationId', params: InstallationPath, owned: installationOfPath },
    );
}

const JSON_HEADERS = { 'content-type': 'application/json' };
