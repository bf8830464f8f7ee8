/** `POST /v1/telemetry`: validate, check ownership, store as one write, then hand off to the forwarder. */
import { Elysia } from 'elysia';
import type { Committer } from '../db/committer.ts';
import type { Authenticator } from '../http/auth.ts';
import { assertMayUse } from '../http/auth.ts';
import { authenticatedBody } from '../http/ingest.ts';
import { handlerReadsBody } from '../http/body.ts';
import type { Logger } from '../log.ts';
import type { SampleForwarder } from './forwarder.ts';
import { validateBatch } from './model.ts';
import { packRows } from './store.ts';

export interface TelemetryDeps {
  auth: Authenticator;
  committer: Committer;
  forwarder: SampleForwarder;
  log: Logger;
  now: () => number;
}

export function telemetryRoutes({ auth, committer, forwarder, log, now }: TelemetryDeps) {
  return new Elysia({ name: 'telemetry' }).post(
    '/v1/telemetry',
    authenticatedBody(auth, async ({ caller, body }) => {
      const batch = validateBatch(body, now());
      assertMayUse(caller, batch.installationId);
      const { installationId, plannerSentUtc, rows, droppedCount, dropped } = batch;
      if (rows.length > 0) {
        const forward = forwarder.forwards(installationId);
        const { added, rewritten } = await committer.write('storeSamples', { installationId, plannerSentUtc, forward, rows: packRows(rows) });
        if (added.length > 0 || rewritten) forwarder.stored(installationId, { added: added.map((row) => rows[row]!), rewritten });
      }
      // Descriptions never hold a coordinate, so they may be logged.
      if (droppedCount > 0) {
        log.info('telemetry.dropped', { installation: installationId, count: droppedCount, first: JSON.stringify(dropped) });
      }
      return { stored: rows.length, droppedCount, dropped };
    }),
    handlerReadsBody,
  );
}
