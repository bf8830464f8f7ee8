/** Reading request bodies with a hard cap: never more than the cap plus one chunk sits in memory. */
import { limits } from '../limits.ts';
import { badRequest, HttpError, messages } from './errors.ts';

/** Early answers to an upload still in progress close the connection, so the client stops sending. */
const tooLarge = () => badRequest(messages.bodyTooLarge, { Connection: 'close' });

/** A body still arriving at the deadline (a trickling client) is refused; closing stops the trickle. */
const tooSlow = () => badRequest(messages.bodyUnreadable, { Connection: 'close' });

export async function readBody(
  request: Request,
  cap: number = limits.bodyBytes,
  deadlineMs: number = limits.bodyReadMs,
): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > cap) throw tooLarge();
  if (request.body === null) return new Uint8Array(0);
  let timer: Timer | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(tooSlow()), deadlineMs);
  });
  try {
    // HTTP framing holds a body with a declared length to that length: read it in one piece.
    return await (declared !== null ? readDeclared(request, cap, deadline) : readChunked(request, cap, deadline));
  } finally {
    clearTimeout(timer);
  }
}

async function readChunked(request: Request, cap: number, deadline: Promise<never>): Promise<Uint8Array> {
  const reader = request.body!.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), deadline]);
      if (done) break;
      length += value.byteLength;
      if (length > cap) throw tooLarge();
      chunks.push(value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    if (error instanceof HttpError) throw error;
    throw badRequest(messages.bodyUnreadable);
  }
  return concat(chunks, length);
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

/** The body as a JSON object; anything else is a 400 with the contract's wording. */
export async function readJsonObject(request: Request): Promise<Record<string, unknown>> {
  const bytes = await readBody(request);
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
