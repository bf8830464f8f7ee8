/** `POST /v1/telemetry`: validate, check ownership, store, answer what was stored and dropped. */
import { Elysia } from 'elysia';
import type { Pipeline, RequestParts } from '../http/pipeline.ts';
import type { Logger } from '../log.ts';
import { validateBatch, type Batch } from './model.ts';
import { logDropped, type Telemetry } from './service.ts';

export interface TelemetryDeps {
  pipeline: Pipeline;
  telemetry: Telemetry;
  log: Logger;
  now: () => number;
}

export function telemetryRoutes({ pipeline, telemetry, log, now }: TelemetryDeps) {
  return new Elysia({ name: 'telemetry' }).use(pipeline).post(
    '/v1/telemetry',
    async ({ owned }) => {
      const batch = owned as Batch;
      await telemetry.store(batch);
      logDropped(log, batch);
      const { rows, droppedCount, dropped } = batch;
      return { stored: rows.length, droppedCount, dropped };
    },
    // Per-value dropping is the field table's (a dropped value is no validation failure): no Elysia schema.
    { auth: 'ingest', owned: ({ body }: RequestParts) => validateBatch(body, now()) },
  );
}
