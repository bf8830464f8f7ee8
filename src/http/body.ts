/**
 * The capped body reader: never more than the cap in memory. The rest of an oversized body is drained
 * (read and dropped) up to a bound before the 400, since a client still sending would otherwise see a reset.
 */
import { limits } from '../limits.ts';
import { badRequest, HttpError, messages } from './errors.ts';

/** The 400 for an oversized body; it closes the connection so the client stops sending. */
const tooLarge = () => badRequest(messages.bodyTooLarge, { Connection: 'close' });

/** The 400 for a body still arriving at the deadline; closing stops the trickle. */
const tooSlow = () => badRequest(messages.bodyUnreadable, { Connection: 'close' });

/** A route's body limits: bytes kept, bytes more drained when oversized, and the read's deadline. */
export interface BodyBounds {
  cap: number;
  drain: number;
  /** Milliseconds the whole read may take. */
  deadlineMs: number;
}

/** The ingest endpoints' limits: 512 KiB, and a drain so that a car still uploading reads its 400. */
export const ingestBodyBounds: BodyBounds = { cap: limits.bodyBytes, drain: limits.bodyDrainBytes, deadlineMs: limits.bodyReadMs };

/** The limits of routes without a token: 4 KiB and no drain, so no stranger makes the server read megabytes. */
export const pairingBodyBounds: BodyBounds = { cap: limits.pairingBodyBytes, drain: 0, deadlineMs: limits.bodyReadMs };

/** The route option that stops Elysia parsing a body: the handler reads it, capped, after its token check. */
export const handlerReadsBody = { parse: 'none' } as const;

/** The bytes one read took from a streamed body and the most it held at once (tests watch the drain). */
export interface BodyMeter {
  read: number;
  buffered: number;
}

/** The body's bytes within `bounds`; a 400 when it is too large, too slow or broken off. */
export async function readBody(
  request: Request,
  bounds: BodyBounds,
  meter: BodyMeter = { read: 0, buffered: 0 },
): Promise<Uint8Array> {
  const { cap, drain, deadlineMs } = bounds;
  const declared = Number(request.headers.get('content-length') ?? NaN);
  // A length that is no whole number is treated as none: the stream and the cap decide.
  const declaredBytes = Number.isSafeInteger(declared) && declared >= 0 ? declared : null;
  // Bun drops a GET's body unread: only its declared length can be held to the cap.
  const most = request.body === null ? cap : cap + drain;
  if (declaredBytes !== null && declaredBytes > most) throw tooLarge();
  if (request.body === null) return new Uint8Array(0);
  let timer: Timer | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(tooSlow()), deadlineMs);
  });
  try {
    // HTTP framing holds a body with a declared length to that length: one within the cap is read in one piece.
    if (declaredBytes !== null && declaredBytes <= cap) return await readDeclared(request, cap, deadline);
    return await readStream(request, bounds, deadline, meter, declaredBytes !== null);
  } finally {
    clearTimeout(timer);
  }
}

/** A streamed body: chunks kept up to the cap, then dropped until its end, the drain bound or the deadline. */
async function readStream(
  request: Request,
  { cap, drain }: BodyBounds,
  deadline: Promise<never>,
  meter: BodyMeter,
  oversized: boolean,
): Promise<Uint8Array> {
  const reader = request.body!.getReader();
  let chunks: Uint8Array[] = [];
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), deadline]);
      if (done) break;
      meter.read += value.byteLength;
      if (meter.read > cap + drain) throw tooLarge();
      if (oversized || meter.read > cap) {
        oversized = true;
        chunks = [];
        collectDrained(value.byteLength);
        continue;
      }
      chunks.push(value);
      meter.buffered = meter.read;
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    if (oversized) throw tooLarge(); // the deadline or a failed read during the drain: still too large
    if (error instanceof HttpError) throw error;
    throw badRequest(messages.bodyUnreadable);
  }
  if (oversized) throw tooLarge();
  return concat(chunks, meter.read);
}

// Process-wide, as the heap it guards is: the engine collects drained chunks late, so drains would grow it.
let drainedSinceCollection = 0;
/** Counts drained bytes and runs a full collection (~10 ms) every `bodyDrainCollectBytes`, keeping memory flat. */
function collectDrained(bytes: number): void {
  drainedSinceCollection += bytes;
  if (drainedSinceCollection < limits.bodyDrainCollectBytes) return;
  drainedSinceCollection = 0;
  Bun.gc(true);
}

/** A body whose declared length is within the cap, read in one piece. */
async function readDeclared(request: Request, cap: number, deadline: Promise<never>): Promise<Uint8Array> {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await Promise.race([request.arrayBuffer(), deadline]));
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw badRequest(messages.bodyUnreadable);
  }
  if (bytes.byteLength > cap) throw tooLarge(); // a Request built in-process may not keep its word
  return bytes;
}

function concat(chunks: Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as a JSON object; anything else is a 400 (`body is not valid JSON`, `body must be a JSON object`). */
export async function readJsonObject(request: Request, bounds: BodyBounds): Promise<Record<string, unknown>> {
  const bytes = await readBody(request, bounds);
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    throw badRequest(messages.bodyNotJson);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest(messages.bodyNotObject);
  }
  return value as Record<string, unknown>;
}
