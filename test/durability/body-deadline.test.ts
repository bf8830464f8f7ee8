import { expect, test } from 'bun:test';
import { ingestBodyBounds, readBody } from '../../src/http/body.ts';
import { HttpError } from '../../src/http/errors.ts';
import { limits } from '../../src/limits.ts';
import { OWNER_TOKEN, startTestService } from '../support.ts';

/** A request (to `target`) whose body sends `firstBytes` at once, then a byte every `everyMs` until cancelled. */
function tricklingRequest(
  everyMs: number,
  headers: Record<string, string> = {},
  firstBytes = 0,
  target = { method: 'POST', path: '/v1/telemetry' },
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
  return {
    request: new Request(`http://localhost${target.path}`, { method: target.method, body, headers }),
    cancelled,
  };
}

test('a body trickling past the read deadline gets 400 and Connection: close, and its stream cancelled', async () => {
  const { request, cancelled } = tricklingRequest(20);
  const error = await readBody(request, { ...ingestBodyBounds, deadlineMs: 300 }).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(HttpError);
  expect(error).toMatchObject({ status: 400, message: 'body could not be read', headers: { Connection: 'close' } });
  await cancelled;
});

test('a body of declared length that trickles is cut off by the same deadline', async () => {
  const { request } = tricklingRequest(20, { 'content-length': '1000' });
  const error = await readBody(request, { ...ingestBodyBounds, deadlineMs: 300 }).catch((caught: unknown) => caught);
  expect(error).toMatchObject({ status: 400, message: 'body could not be read', headers: { Connection: 'close' } });
});

test('an oversized body still arriving at the deadline while it is drained is answered too large', async () => {
  const { request, cancelled } = tricklingRequest(20, {}, 2048);
  const error = await readBody(request, { cap: 1024, drain: limits.bodyDrainBytes, deadlineMs: 300 }).catch(
    (caught: unknown) => caught,
  );
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
  const bytes = await readBody(new Request('http://localhost/x', { method: 'POST', body }), {
    ...ingestBodyBounds,
    deadlineMs: 1000,
  });
  expect(new TextDecoder().decode(bytes)).toBe('{}');
});

test("every route that reads a body holds it to the service's deadline: 400 with Connection: close", async () => {
  const service = await startTestService({ approvalPassword: 'approval-password-for-tests' }, { bodyReadMs: 300 });
  const owner = { authorization: `Bearer ${OWNER_TOKEN}`, 'content-type': 'application/json' };
  const targets = [
    ['POST', '/v1/telemetry', owner],
    ['PUT', '/v1/consumption/daily', owner],
    ['PUT', '/v1/charging-sessions/s-1', owner],
    ['POST', '/v1/pair/start', { 'content-type': 'application/json' }],
    ['POST', '/v1/pair/poll', { 'content-type': 'application/json' }],
    ['POST', '/pair', { 'content-type': 'application/x-www-form-urlencoded' }],
  ] as const;
  try {
    for (const [method, path, headers] of targets) {
      const { request, cancelled } = tricklingRequest(20, headers, 0, { method, path });
      const response = await service.app.handle(request);
      expect([path, response.status, response.headers.get('connection')]).toEqual([path, 400, 'close']);
      expect(await response.text()).toContain('body could not be read');
      await cancelled;
    }
  } finally {
    await service.close();
  }
});
