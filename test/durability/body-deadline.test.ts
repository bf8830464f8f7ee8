import { expect, test } from 'bun:test';
import { ingestBody, readBody } from '../../src/http/body.ts';
import { HttpError } from '../../src/http/errors.ts';
import { limits } from '../../src/limits.ts';

/** A request whose body sends `firstBytes` at once, then one byte every `everyMs`, forever (until cancelled). */
function tricklingRequest(
  everyMs: number,
  headers: Record<string, string> = {},
  firstBytes = 0,
): { request: Request; cancelled: Promise<void> } {
  let timer: Timer;
  let onCancel!: () => void;
  const cancelled = new Promise<void>((resolve) => (onCancel = resolve));
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (firstBytes > 0) controller.enqueue(new Uint8Array(firstBytes));
      timer = setInterval(() => controller.enqueue(new Uint8Array([0x20])), everyMs);
    },
    cancel() {
      clearInterval(timer);
      onCancel();
    },
  });
  return { request: new Request('http://localhost/v1/telemetry', { method: 'POST', body, headers }), cancelled };
}

test('a body that trickles past the read deadline is refused with 400 and Connection: close, and its stream cancelled', async () => {
  const { request, cancelled } = tricklingRequest(20);
  const error = await readBody(request, { ...ingestBody, deadlineMs: 300 }).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(HttpError);
  expect(error).toMatchObject({ status: 400, message: 'body could not be read', headers: { Connection: 'close' } });
  await cancelled;
});

test('a body of declared length that trickles is cut off by the same deadline', async () => {
  const { request } = tricklingRequest(20, { 'content-length': '1000' });
  const error = await readBody(request, { ...ingestBody, deadlineMs: 300 }).catch((caught: unknown) => caught);
  expect(error).toMatchObject({ status: 400, message: 'body could not be read', headers: { Connection: 'close' } });
});

test('an oversized body still arriving at the deadline while it is drained is answered too large', async () => {
  const { request, cancelled } = tricklingRequest(20, {}, 2048);
  const error = await readBody(request, { cap: 1024, drain: limits.bodyDrainBytes, deadlineMs: 300 }).catch((caught: unknown) => caught);
  expect(error).toMatchObject({ status: 400, message: 'body is too large', headers: { Connection: 'close' } });
  await cancelled;
});

test('a body that arrives within the deadline is read whole', async () => {
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await Bun.sleep(5);
      controller.enqueue(new TextEncoder().encode('{}'));
      controller.close();
    },
  });
  const bytes = await readBody(new Request('http://localhost/x', { method: 'POST', body }), { ...ingestBody, deadlineMs: 1000 });
  expect(new TextDecoder().decode(bytes)).toBe('{}');
});
