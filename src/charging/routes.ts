/** `PUT /v1/charging-sessions/{sessionId}`. */
import { Elysia } from 'elysia';
import { noContent, type Pipeline, type RequestParts } from '../http/pipeline.ts';
import { parseSessionBody, SessionPath, type ChargingSession } from './model.ts';
import type { ChargingSessions } from './service.ts';

export interface ChargingDeps {
  pipeline: Pipeline;
  sessions: ChargingSessions;
}

export function chargingRoutes({ pipeline, sessions }: ChargingDeps) {
  return new Elysia().use(pipeline).put(
    '/v1/charging-sessions/*',
    async ({ owned }) => {
      await sessions.put(owned as ChargingSession);
      return noContent();
    },
    {
      auth: 'ingest',
      path: 'sessionId',
      params: SessionPath,
      owned: ({ body, params }: RequestParts) => parseSessionBody(body, params.sessionId!),
    },
  );
}
