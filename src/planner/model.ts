/** The schema of the forwarding status an owner reads (`GET /v1/planner/status/{installationId}`). */
import { Type } from '@sinclair/typebox';

const nullable = <T extends ReturnType<typeof Type.String | typeof Type.Integer>>(schema: T) =>
  Type.Union([schema, Type.Null()]);

export const ForwardingStatusSchema = Type.Object({
  forwarding: Type.Boolean({ description: 'The server holds a planner key and a token for this installation.' }),
  waiting: Type.Integer({ minimum: 0, description: 'Stored samples waiting for the planner.' }),
  sent: Type.Integer({ minimum: 0 }),
  givenUp: Type.Integer({ minimum: 0 }),
  lastSentAt: nullable(Type.String({ description: 'When the planner last accepted a sample, ISO 8601.' })),
  lastSentUtc: nullable(Type.Integer({ description: 'The newest `utc` it accepted, Unix seconds.' })),
  lastFailure: Type.Union([
    Type.Object({
      at: Type.String({ description: 'ISO 8601' }),
      status: nullable(Type.Integer({ description: "The planner's status, when it answered." })),
      error: nullable(Type.String({ description: 'The error’s name when it did not (`Timeout`, …).' })),
      attempt: Type.Integer({ minimum: 1 }),
    }),
    Type.Null(),
  ]),
  nextAttemptAt: nullable(Type.String({ description: 'While a backoff is waited out, when it tries again.' })),
});
