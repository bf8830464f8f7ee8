/**
 * Reading request bodies with a hard cap: never more than the cap sits in memory. The rest of an
 * oversized body is read and thrown away up to a bound (the drain), because a client still sending when
 * the server closes sees a reset instead of the 400: before answering on the ingest routes, while
 * answering on the routes without a token (see `holdOpenWhileDraining`).
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
export const ingestBodyBounds: BodyBounds = {
  cap: limits.bodyBytes,
  drain: limits.bodyDrainBytes,
  deadlineMs: limits.bodyReadMs,
};

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
 * Reads a chunked body (or one declared over the cap): chunks are kept up to the cap; past it the rest
 * is drained, and the answer is 400 too large. A drain bounded in time runs on while that 400 goes out.
 */
async function readStream(
  request: Request,
  bounds: BodyBounds,
  deadline: Promise<never>,
  meter: BodyMeter,
  oversized: boolean,
): Promise<Uint8Array> {
  const reader = request.body!.getReader();
  const chunks: Uint8Array[] = [];
  try {
    while (!oversized) {
      const { done, value } = await Promise.race([reader.read(), deadline]);
      if (done) return concat(chunks, meter.read);
      meter.read += value.byteLength;
      if (meter.read > bounds.cap) oversized = true;
      else {
        chunks.push(value);
        meter.buffered = meter.read;
      }
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    if (error instanceof HttpError) throw error;
    throw badRequest(messages.bodyUnreadable);
  }
  if (bounds.drainMs === undefined) await drainRest(reader, bounds, meter, deadline);
  else drains.set(request, drainRest(reader, bounds, meter, timeout(Math.min(bounds.drainMs, bounds.deadlineMs))));
  throw tooLarge();
}

/** The reader of a request body, as much of it as a drain uses. */
interface BodyReader {
  read(): Promise<{ done: false; value: Uint8Array } | { done: true; value?: undefined }>;
  cancel(): Promise<void>;
}

/** Reads and drops what is left of an oversized body until it ends, the drain bound, or `end`. */
async function drainRest(
  reader: BodyReader,
  { cap, drain }: BodyBounds,
  meter: BodyMeter,
  end: Promise<typeof timedOut>,
): Promise<void> {
  try {
    while (meter.read <= cap + drain) {
      const next = await Promise.race([reader.read(), end]);
      if (next === timedOut || next.done) break;
      meter.read += next.value.byteLength;
      collectDrained(next.value.byteLength);
    }
  } catch {
    // A reset or the deadline: the drain is over either way.
  } finally {
    reader.cancel().catch(() => {});
  }
}

const timedOut = Symbol('timed out');

/** Settles `timedOut` after `ms`, without holding the process open. */
function timeout(ms: number): Promise<typeof timedOut> {
  return new Promise((resolve) => setTimeout(() => resolve(timedOut), ms).unref());
}

/** Drains still running after their request's 400 was decided: the listener holds those answers open until they end. */
const drains = new WeakMap<Request, Promise<void>>();

/**
 * The answer to a request whose oversized body is still draining, as a stream that ends only when the
 * drain ends. Bun keeps reading the request body while the answer's stream is open, so a client still
 * sending reads the whole 400 before the connection closes; an answer sent whole would close at once
 * and race the unread bytes' reset (RFC 9293 §3.6.1). Bun 1.4.4 frames an open stream as chunked,
 * whatever Content-Length says, so the answer is complete at its last chunk, when the drain ends.
 */
export function holdOpenWhileDraining(request: Request, response: Response): Response | Promise<Response> {
  const drained = drains.get(request);
  if (drained === undefined) return response;
  return response.bytes().then((bytes) => {
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(bytes);
        await drained;
        controller.close();
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  });
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
