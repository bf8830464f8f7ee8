import { Elysia } from 'elysia';
import type { Committer } from '../db/committer.ts';
import { assertMayUse, type Authenticator } from '../http/auth.ts';
import { authenticatedBody, noContent, pathId } from '../http/ingest.ts';
import { handlerReadsBody, type BodyBounds } from '../http/body.ts';
import { parseSession } from './model.ts';

export function chargingRoutes(auth: Authenticator, bodyBounds: BodyBounds, committer: Committer) {
  return new Elysia().put(
    '/v1/charging-sessions/*',
    authenticatedBody(auth, bodyBounds, async ({ caller, body, params }) => {
      const session = parseSession(pathId(params), body);
      assertMayUse(caller, session.installationId);
      await committer.write('putChargingSession', session);
      return noContent();
    }),
    handlerReadsBody,
  );
}
