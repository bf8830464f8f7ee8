/** `POST /v1/telemetry`: validate, check ownership, store, answer what was stored and dropped. */
import { Elysia } from 'elysia';
import type { Pipeline, RequestParts } from '../http/pipeline.ts';
import type { Logger } from '../log.ts';
import { isUnknownFieldNote, validateBatch, type Batch } from './model.ts';
import type { Telemetry } from './service.ts';

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

/**
 * One line for a batch with dropped values, each description as `describe` words it. Descriptions never
 * hold a coordinate, so they may be logged; those of unknown fields name a key the client chose (a token
 * sent as a key would land in the log), so they are only counted.
 */
export function logDropped(log: Logger, batch: Batch, describe = (note: string) => note): void {
  if (batch.droppedCount === 0) return;
  log.info('telemetry.dropped', {
    installation: batch.installationId,
    count: batch.droppedCount,
    unknownFields: batch.droppedReasons?.get('unknown_field') ?? 0,
    first: JSON.stringify(batch.dropped.filter((note) => !isUnknownFieldNote(note)).map(describe)),
  });
}
