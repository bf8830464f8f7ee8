/** `PUT /v1/charging-sessions/{sessionId}`. */
import { Elysia } from 'elysia';
import type { Authenticator } from '../http/auth.ts';
import { handlerReadsBody, type BodyBounds } from '../http/body.ts';
import { noContent, ownedBody, pathId } from '../http/ingest.ts';
import { parseSession } from './model.ts';
import type { ChargingSessions } from './service.ts';

export interface ChargingDeps {
  auth: Authenticator;
  bodyBounds: BodyBounds;
  sessions: ChargingSessions;
}

export function chargingRoutes({ auth, bodyBounds, sessions }: ChargingDeps) {
  return new Elysia().put(
    '/v1/charging-sessions/*',
    ownedBody(
      auth,
      bodyBounds,
      (body, params) => parseSession(pathId(params), body),
      async (session) => {
        await sessions.put(session);
        return noContent();
      },
    ),
    handlerReadsBody,
  );
}
