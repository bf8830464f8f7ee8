/**
 * The planner's telemetry API as its clients speak it (OVMS, EVNotify, the car app's direct uploader,
 * scripts): `token` and `tlm` in the query, a form body or a JSON body, and a sample read leniently,
 * as the planner reads it, before the telemetry rules of `POST /v1/telemetry` apply to it.
 */
import { Type } from '@sinclair/typebox';
import { badRequest, messages } from '../http/errors.ts';
import { sharedErrors, type ApiAnswer, type ApiOperation } from '../http/openapi.ts';
import { sampleFields, type SampleFieldName } from '../telemetry/fields.ts';

/** What a relay request carries; `api_key` is the client's planner key, accepted and not used. */
export interface RelayParams {
  token: string | null;
  /** The raw `tlm`: an object (JSON body) or its JSON text (query, form, or a JSON body's string). */
  tlm: unknown;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The request's parameters: the query's token if it has one, else the body's (JSON when its media type
 * says so, a form otherwise); the body's `tlm`, else the query's.
 */
export function relayParams(query: URLSearchParams, contentType: string | null, body: Uint8Array): RelayParams {
  const fromBody = bodyParams(contentType, body);
  return {
    token: queryToken(query) ?? stringOrNull(fromBody.token),
    tlm: fromBody.tlm ?? query.get('tlm'),
  };
}

export const queryToken = (query: URLSearchParams) => stringOrNull(query.get('token'));

function bodyParams(contentType: string | null, body: Uint8Array): Record<string, unknown> {
  if (body.byteLength === 0) return {};
  const json = isJson(contentType);
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw badRequest(json ? messages.bodyNotJson : messages.bodyNotUtf8);
  }
  if (!json) return Object.fromEntries(new URLSearchParams(text));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest(messages.bodyNotJson);
  }
  if (!isObject(value)) throw badRequest(messages.bodyNotObject);
  return value;
}

const isJson = (contentType: string | null) =>
  (contentType ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';

const stringOrNull = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `tlm` object, from its JSON text where it came as text; a 400 in the planner's words otherwise. */
export function tlmObject(tlm: unknown): Record<string, unknown> {
  if (tlm === undefined || tlm === null || tlm === '') throw badRequest('tlm is required');
  let value = tlm;
  if (typeof tlm === 'string') {
    try {
      value = JSON.parse(tlm);
    } catch {
      throw badRequest('tlm is not valid JSON');
    }
  }
  if (!isObject(value)) throw badRequest('tlm must be a JSON object');
  return value;
}

/** A decimal number as text (`"52.5"`, `"-0.25"`, `"1e3"`), not hex, `Infinity` or an empty string. */
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

/**
 * The sample as the planner reads it: numbers sent as text are numbers, a fractional `utc` is floored,
 * `alt` is `elevation` (unless both are sent), flags may be `"true"`/`"false"`. Anything else is left
 * as sent, for the telemetry rules to keep or drop.
 */
export function lenientSample(tlm: Record<string, unknown>): Record<string, unknown> {
  // No prototype: a `__proto__` key stays a field (dropped as unknown), not the object's prototype.
  const sample: Record<string, unknown> = Object.create(null);
  for (const key in tlm) {
    const name = key === 'alt' && !('elevation' in tlm) ? 'elevation' : key;
    sample[name] = lenientValue(name, tlm[key]);
  }
  return sample;
}

function lenientValue(name: string, value: unknown): unknown {
  if (name === 'utc') {
    const seconds = asNumber(value);
    return typeof seconds === 'number' && Number.isFinite(seconds) ? Math.floor(seconds) : seconds;
  }
  const field = sampleFields[name as SampleFieldName];
  if (field === undefined || field.kind === 'text') return value;
  if (field.kind === 'flag' && (value === 'true' || value === 'false')) return value === 'true';
  return asNumber(value);
}

const asNumber = (value: unknown) => (typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value);

const RelayError = (description: string, example: string): ApiAnswer => ({
  description,
  schema: Type.Object({ status: Type.Literal('error'), error: Type.String() }),
  example: { status: 'error', error: example },
});

const relayParamsSchema = Type.Object({
  token: Type.Optional(
    Type.String({ description: 'A device token of this service; names the installation.', examples: ['DEVICE_TOKEN'] }),
  ),
  tlm: Type.Optional(
    Type.String({
      description: 'One sample: the planner’s JSON object, as text.',
      examples: ['{"utc":1764080040,"soc":80}'],
    }),
  ),
  api_key: Type.Optional(Type.String({ description: "The client's planner key: accepted and not used." })),
});

const relayAnswers: Record<number, ApiAnswer> = {
  200: {
    description: 'Stored (also when a value was dropped).',
    schema: Type.Object({ status: Type.Literal('ok') }),
    example: { status: 'ok' },
  },
  400: RelayError(
    'No usable sample, `tlm` missing or malformed, the body too large or unreadable.',
    'tlm: utc is missing',
  ),
  401: RelayError('No token, an unknown or revoked one, or INGEST_TOKEN.', messages.unauthorized),
  500: sharedErrors.internal,
};

const relay = (method: 'get' | 'post'): ApiOperation => ({
  method,
  path: '/abrp/1/tlm/send',
  summary: 'The planner’s (ABRP) telemetry endpoint, for its clients',
  description:
    'One sample, read as the planner reads it, then stored and forwarded as by `POST /v1/telemetry`. ' +
    'A POST body may also be JSON with the same fields (`tlm` an object or its text).',
  security: 'none',
  query: relayParamsSchema,
  ...(method === 'post'
    ? {
        body: {
          mediaType: 'application/x-www-form-urlencoded',
          schema: relayParamsSchema,
          example: { token: 'DEVICE_TOKEN', tlm: '{"utc":1764080040,"soc":80}' },
        },
      }
    : {}),
  answers: relayAnswers,
});

export const relayApi: ApiOperation[] = [relay('get'), relay('post')];
