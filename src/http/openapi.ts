/**
 * The API document: an OpenAPI 3.1 description assembled from the operations each feature declares in
 * its model.ts with TypeBox schemas (JSON Schema 2020-12, which OpenAPI 3.1 takes as it is).
 * Served at `GET /v1/openapi.json`; tests hold it to the routes the app serves and the checks they run.
 */
import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import { limits } from '../limits.ts';
import { VERSION } from '../version.ts';
import { messages } from './errors.ts';
import { explained, TIME_MS_MAX, TIME_MS_MIN, uuid } from './validate.ts';

/** Who may call an operation: a car's token (or INGEST_TOKEN), the approval password, or anyone. */
export type ApiSecurity = 'ingest' | 'approvalPassword' | 'none';

/** One answer of an operation: a JSON schema, or a file of a media type. */
export interface ApiAnswer {
  description: string;
  /** JSON by default; a schema of `Type.String()` with a `mediaType` for files. */
  schema?: TSchema;
  /** More media types answered with the same status (exports in other formats). */
  mediaTypes?: string[];
  example?: unknown;
}

/** One operation (method and path) of the API. */
export interface ApiOperation {
  method: 'get' | 'put' | 'post';
  /** OpenAPI template: `{name}` for a path parameter. */
  path: string;
  summary: string;
  description?: string;
  security: ApiSecurity;
  /** Path parameters, then query parameters; each property's `examples[0]` is the request's example. */
  pathParams?: TObject;
  query?: TObject;
  body?: { schema: TSchema; example: unknown; mediaType?: string };
  answers: Record<number, ApiAnswer>;
}

/** Every error body: `{"error": "..."}`. */
const ErrorAnswer = Type.Object(
  { error: Type.String({ description: 'What went wrong, in words a person reads; a 500 says only that.' }) },
  { description: 'The body of every error answer.' },
);

/** A UUID, any case (stored lower-case). */
export const Uuid = (description: string) =>
  Type.String({
    pattern: '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$',
    description,
    examples: ['5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01'],
  });

/** The path of a route ending in an installation id: checked by the route, and described here. */
export const InstallationPath = explained(Type.Object({ installationId: Uuid('The installation.') }), (params) =>
  uuid(params.installationId, 'installationId'),
);

/** Unix milliseconds the app sends: from 2000-01-01 to before 3000-01-01. */
export const TimeMs = (description: string) =>
  Type.Integer({ minimum: TIME_MS_MIN, maximum: TIME_MS_MAX, description: `${description} (Unix ms)` });

/** An error answer whose message is one of `examples` (the first is the document's example). */
export const errorAnswer = (description: string, ...examples: string[]): ApiAnswer => ({
  description,
  schema: ErrorAnswer,
  example: { error: examples[0] ?? description },
});

/** The failures every route with a body or a token shares, merged under a route's own 400 list. */
export const sharedErrors = {
  badRequest: (fieldMessages: string[], bodyBytes: number = limits.bodyBytes) =>
    errorAnswer(
      `The body or a field is refused. The body: over ${bodyBytes} bytes, unreadable, not JSON, not a JSON object. ` +
        `A field: the message begins with its path: ${fieldMessages.map((message) => `\`${message}\``).join(', ')}.`,
      fieldMessages[0] ?? messages.bodyNotJson,
    ),
  unauthorized: errorAnswer(
    'Missing, malformed, unknown or revoked token (`WWW-Authenticate: Bearer`).',
    messages.unauthorized,
  ),
  otherInstallation: errorAnswer("A paired car's token used for another installation.", messages.otherInstallation),
  internal: errorAnswer('Anything unexpected; the detail goes to the server log only.', messages.internal),
  lockedOut: errorAnswer(
    'Too many wrong approval passwords from this address lately (`Retry-After` says for how long).',
    messages.tooManyWrongPasswords,
  ),
};

/** The 400, 401, 403 and 500 answers of an ingest route, its own 400 messages named. */
export const ingestErrors = (fieldMessages: string[]): Record<number, ApiAnswer> => ({
  400: sharedErrors.badRequest(fieldMessages),
  401: sharedErrors.unauthorized,
  403: sharedErrors.otherInstallation,
  500: sharedErrors.internal,
});

const securitySchemes = {
  ingest: {
    type: 'http',
    scheme: 'bearer',
    description: "INGEST_TOKEN (any installation) or a paired car's own 43-character token (its installation only).",
  },
  approvalPassword: {
    type: 'http',
    scheme: 'bearer',
    description: 'APPROVAL_PASSWORD as a bearer token; five wrong ones in a row lock the address out for 60 s.',
  },
};

/** The document for `operations`, in their order; a path's operations share one path item. */
export function openApiDocument(operations: readonly ApiOperation[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of operations) {
    paths[operation.path] ??= {};
    paths[operation.path]![operation.method] = operationObject(operation);
  }
  return plain({
    openapi: '3.1.0',
    info: {
      title: 'ev-ingest',
      version: VERSION,
      description: 'Telemetry, consumption and charging sessions of electric cars; pairing by QR code.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    paths,
    components: { schemas: { Error: ErrorAnswer }, securitySchemes },
  });
}

function operationObject(operation: ApiOperation): Record<string, unknown> {
  return {
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    operationId: `${operation.method}${operation.path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c = '') => c.toUpperCase())}`,
    security: operation.security === 'none' ? [] : [{ [operation.security]: [] }],
    ...(operation.pathParams || operation.query
      ? { parameters: [...parameters(operation.pathParams, 'path'), ...parameters(operation.query, 'query')] }
      : {}),
    ...(operation.body
      ? {
          requestBody: {
            required: true,
            content: {
              [operation.body.mediaType ?? 'application/json']: {
                schema: operation.body.schema,
                example: operation.body.example,
              },
            },
          },
        }
      : {}),
    responses: Object.fromEntries(
      Object.entries(operation.answers).map(([status, answer]) => [status, answerObject(answer)]),
    ),
  };
}

function parameters(schema: TObject | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    description: property.description,
    schema: property,
    example: property.examples?.[0],
  }));
}

function answerObject(answer: ApiAnswer): Record<string, unknown> {
  if (!answer.schema) return { description: answer.description };
  const media = { schema: answer.schema, ...(answer.example === undefined ? {} : { example: answer.example }) };
  const types = answer.mediaTypes ?? ['application/json'];
  return { description: answer.description, content: Object.fromEntries(types.map((type) => [type, media])) };
}

/** The document as plain JSON: TypeBox's symbol keys dropped. */
const plain = (value: Record<string, unknown>) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
