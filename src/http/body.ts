/**
 * Reading request bodies with a hard cap: never more than the cap sits in memory. The rest of an
 * oversized body is read and thrown away up to a bound (the drain) before answering, because a client
 * still sending when the server closes sees a reset instead of the 400.
 */
import { limits } from '../limits.ts';
import { badRequest, HttpError, messages } from './errors.ts';

/** Early answers to an upload still in progress close the connection, so the client stops sending. */
const tooLarge = () => badRequest(messages.bodyTooLarge, { Connection: 'close' });

/** A body still arriving at the deadline (a trickling client) is refused; closing stops the trickle. */
const tooSlow = () => badRequest(messages.bodyUnreadable, { Connection: 'close' });

/** How much of a body is kept, how much more of an oversized one is read and thrown away, and for how long. */
export interface BodyBounds {
  cap: number;
  drain: number;
  /** The deadline of the whole read; a body still arriving then is refused (400, closed). */
  deadlineMs: number;
  /**
   * Set on the routes without a token: the drain of an oversized body, whatever length it declares,
   * ends after this long or `drain` bytes, then the 400; unset, a body declared over the drain is refused unread.
   */
  drainMs?: number;
}

/** Ingest endpoints: the 512 KiB cap, and a drain so that a car still uploading reads the 400. */
export const ingestBodyBounds: BodyBounds = { cap: limits.bodyBytes, drain: limits.bodyDrainBytes, deadlineMs: limits.bodyReadMs };

/**
 * Routes without a token: small bodies, and a drain bounded in bytes and time, so that a client still
 * sending reads its 400 while no stranger can make the server read more than a mebibyte.
 */
export const pairingBodyBounds: BodyBounds = {
  cap: limits.pairingBodyBytes,
  drain: limits.pairingDrainBytes,
  deadlineMs: limits.bodyReadMs,
  drainMs: limits.pairingDrainMs,
};

/**
 * Route options of every route whose body Elysia must not parse: the handler reads it itself (capped,
 * after its token or password check), or never reads it.
 */
export const handlerReadsBody = { parse: 'none' } as const;

/** What one read took from a streamed body and the most of it held at once (tests watch the drain). */
export interface BodyMeter {
  read: number;
  buffered: number;
}

export async function readBody(
  request: Request,
  bounds: BodyBounds,
  meter: BodyMeter = { read: 0, buffered: 0 },
): Promise<Uint8Array> {
  const { cap, drain, deadlineMs } = bounds;
  const declared = Number(request.headers.get('content-length') ?? NaN);
  // A length that is no whole number is treated as none: the stream and the cap decide.
  const declaredBytes = Number.isSafeInteger(declared) && declared >= 0 ? declared : null;
  // Past the cap and the drain a body is not worth draining; one Bun hides (a GET's, which it drops
  // unread) can only be held to the cap by the length it declares.
  const most = request.body === null ? cap : cap + drain;
  const drainsAnyLength = bounds.drainMs !== undefined && request.body !== null;
  if (declaredBytes !== null && declaredBytes > most && !drainsAnyLength) throw tooLarge();
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

/**
 * Reads a chunked body (or drains one declared over the cap): chunks are kept up to the cap, and past
 * it dropped as they arrive until the body ends, the drain bound or the deadline; then 400 too large.
 */
async function readStream(
  request: Request,
  { cap, drain, drainMs }: BodyBounds,
  deadline: Promise<never>,
  meter: BodyMeter,
  oversized: boolean,
): Promise<Uint8Array> {
  const reader = request.body!.getReader();
  let chunks: Uint8Array[] = [];
  let drainTimer: Timer | undefined;
  let drainEnd = deadline;
  /** From the moment a body is known to be too large, its drain has `drainMs` (where bounded in time). */
  const drainFromNow = () => {
    if (drainMs === undefined || drainTimer !== undefined) return;
    drainEnd = new Promise<never>((_, reject) => (drainTimer = setTimeout(() => reject(tooLarge()), drainMs)));
  };
  if (oversized) drainFromNow();
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), deadline, drainEnd]);
      if (done) break;
      meter.read += value.byteLength;
      if (meter.read > cap + drain) throw tooLarge();
      if (oversized || meter.read > cap) {
        oversized = true;
        drainFromNow();
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
  } finally {
    clearTimeout(drainTimer);
  }
  if (oversized) throw tooLarge();
  return concat(chunks, meter.read);
}

/**
 * Drained chunks are garbage at once, but the engine collects them late: left alone, drains grow the
 * heap by about what they read. A full collection (~10 ms) every `bodyDrainCollectBytes` drained,
 * counted process-wide because the heap is, keeps memory flat at a cost only oversized uploads pay.
 */
let drainedSinceCollection = 0;
function collectDrained(bytes: number): void {
  drainedSinceCollection += bytes;
  if (drainedSinceCollection < limits.bodyDrainCollectBytes) return;
  drainedSinceCollection = 0;
  Bun.gc(true);
}

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

/** The body as a JSON object; anything else is a 400 with the documented wording. */
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
