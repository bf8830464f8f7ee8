/**
 * Slow clients on a real socket, against the listener and the app with their waits shortened (idle
 * timeout 2 s, body deadline 8 s; in service 10 s and 30 s). During a body Bun restarts its idle timer
 * only per 16 KiB × the idle timeout received, and checks its timers every 4 s: an upload taking 5 s is
 * cut off within 4 s, unanswered, unless the listener extends the timer while the body arrives.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import type { ClientTimeouts } from '../../src/limits.ts';
import { createMemoryLogger } from '../../src/log.ts';
import { listen, serve, type Running } from '../../src/server.ts';
import { countSamples, installationNumbered, OWNER_TOKEN, tempDir, testConfig } from '../support.ts';
import { exchange, parsedReply, replyHeaders, trickle } from '../upload.ts';
import { PAGE_HEADERS, pageHeadersOf } from '../../src/pairing/page.tsx';

const timeouts: ClientTimeouts = { idleTimeoutSeconds: 2, bodyReadMs: 8_000 };
/** Past the body deadline plus Bun's 4 s timer tick: a wait only a connection the server forgot would reach. */
const CLIENT_DEADLINE_MS = 12_000;
const framings = ['length', 'chunked'] as const;

let running: Running;
let port: number;

beforeAll(async () => {
  // The server as `serve` assembles it: one set of waits for the routes' body reader and the listener.
  running = await serve(testConfig(tempDir()), createMemoryLogger(), timeouts);
  port = Number(running.url.port);
});
afterAll(async () => {
  await running.stop();
});

/** Sends `body` to `POST /v1/telemetry` at 400 B/s (100 bytes every 250 ms), as a car on a poor link might. */
function trickleTelemetry(framing: (typeof framings)[number], body: Buffer, deadlineMs = CLIENT_DEADLINE_MS) {
  const sending = { port, path: '/v1/telemetry', token: OWNER_TOKEN, framing, body, pieceBytes: 100, everyMs: 250 };
  return trickle(sending, deadlineMs);
}

/** A telemetry batch of one sample, padded with spaces to `bytes`. */
function batchOf(installationId: string, bytes: number): Buffer {
  const batch = JSON.stringify({ installationId, samples: [{ utc: Math.floor(Date.now() / 1000), soc: 71.5 }] });
  return Buffer.from(batch.padEnd(bytes, ' '));
}

test.concurrent.each(framings)(
  'a batch (%s) taking 5 s, past the idle timeout but within the deadline, is stored; then idle, it is closed',
  async (framing) => {
    const installationId = installationNumbered(framings.indexOf(framing) + 1);
    // Set back with the answer at ~5 s, the timer closes by ~9 s; left at the body's 16 s it would close at 12-16 s.
    const answered = await trickleTelemetry(framing, batchOf(installationId, 2_000), 10_500);
    expect(parsedReply(answered)).toEqual({
      status: 'HTTP/1.1 200 OK',
      closes: false,
      body: '{"stored":1,"droppedCount":0,"dropped":[]}',
      closedByServer: true, // after the answer the connection waits for a next request as long as any other
    });
    expect(countSamples(running, installationId)).toBe(1);
  },
  20_000,
);

test("a failure escaping the app at `/pair` is answered with the page's strict headers; elsewhere not", async () => {
  const failing = listen(
    failingHandlers.throws,
    { host: '127.0.0.1', port: 0 },
    createMemoryLogger(),
    timeouts,
    pageHeadersOf,
  );
  try {
    const headersOf = async (path: string) => {
      const answered = await exchange(
        failing.port!,
        (write) => write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
        9_000,
      );
      expect(parsedReply(answered).status).toBe('HTTP/1.1 500 Internal Server Error');
      return replyHeaders(answered.reply);
    };
    const page = await headersOf('/pair?code=BBBB-BBBB');
    for (const [name, value] of Object.entries(PAGE_HEADERS)) expect(page[name.toLowerCase()]).toBe(value);
    expect((await headersOf('/v1/health'))['content-security-policy']).toBeUndefined();
  } finally {
    await failing.stop(true);
  }
}, 20_000);

test.concurrent.each(framings)(
  'a body (%s) still arriving at the deadline is answered 400 "body could not be read" and the connection closed',
  async (framing) => {
    const body = Buffer.alloc(100_000, 0x20); // 250 s at this pace
    const refused = await trickleTelemetry(framing, body);
    expect(parsedReply(refused)).toEqual({
      status: 'HTTP/1.1 400 Bad Request',
      closes: true,
      body: '{"error":"body could not be read"}',
      closedByServer: true,
    });
    // Cut at the 8 s deadline (~3,200 bytes at this pace), not by the client's own 12 s (~4,800).
    expect(refused.sent).toBeGreaterThan(2_000);
    expect(refused.sent).toBeLessThan(4_000);
  },
  20_000,
);

// A new connection's first request head has a fixed 10 s in Bun, whatever idleTimeout says (floods.test.ts).
test.concurrent('after an answer, a silent connection or a trickled next head is closed at idle timeout', async () => {
  const health = 'GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n';
  const silent = (write: (data: string) => Promise<boolean>) => write(health);
  const trickledHead = async (write: (data: string) => Promise<boolean>) => {
    if (!(await write(`${health}GET /v1/health HTTP/1.1\r\nHost: localhost\r\n`))) return;
    while (await write('X-Slow: 1\r\n')) await Bun.sleep(250);
  };
  // 2 s and Bun's 4 s tick close them by ~6 s; the service's 10 s would not before this 8 s deadline.
  const closed = await Promise.all([exchange(port, silent, 8_000), exchange(port, trickledHead, 8_000)]);
  const answeredOnce = { status: 'HTTP/1.1 200 OK', closes: false, body: '{"status":"ok"}', closedByServer: true };
  expect(closed.map(parsedReply)).toEqual([answeredOnce, answeredOnce]);
}, 20_000);

const failingHandlers = {
  rejects: async () => Promise.reject(new Error('handler failed')),
  throws: () => {
    throw new Error('handler failed');
  },
};

test.concurrent.each(Object.keys(failingHandlers) as (keyof typeof failingHandlers)[])(
  'a request whose handler fails (%s) is answered 500 and resets the idle timer: not held to the body deadline',
  async (failure) => {
    const log = createMemoryLogger();
    const failing = listen(failingHandlers[failure], { host: '127.0.0.1', port: 0 }, log, timeouts);
    try {
      const post = 'POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}';
      // Within the idle timeout and Bun's 4 s tick, well before the deadline plus its margin (16 s).
      const answered = await exchange(failing.port!, (write) => write(post), 9_000);
      expect(parsedReply(answered)).toEqual({
        status: 'HTTP/1.1 500 Internal Server Error',
        closes: false,
        body: '{"error":"internal server error"}',
        closedByServer: true,
      });
      expect(log.lines).toEqual([
        expect.stringMatching(/ error request\.failed method=POST path=\/x error="Error: handler failed"$/),
        expect.stringMatching(/ info request method=POST path=\/x status=500 ms=/),
      ]);
    } finally {
      await failing.stop(true);
    }
  },
  20_000,
);
