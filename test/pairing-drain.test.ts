/**
 * The routes anyone may call (`/v1/pair/start`, `/v1/pair/poll`, the approval form, the relay) on a real socket: a body
 * over the 4 KiB cap is answered with the readable 400 at once; the answer ends and the connection closes
 * after at most 1 MiB or 2 s of draining, cutting off whatever is still coming; memory stays bounded.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { compiledBinary, startBinary, type RunningBinary } from './binary.ts';
import { PASSWORD } from './pairing-support.ts';
import { OWNER_TOKEN, tempDir } from './support.ts';

const MIB = 1024 * 1024;
const BODY_BYTES = 5_000_000;

let server: RunningBinary;
beforeAll(async () => {
  const cwd = tempDir();
  server = await startBinary(
    await compiledBinary(),
    { INGEST_TOKEN: OWNER_TOKEN, APPROVAL_PASSWORD: PASSWORD, DATABASE_PATH: `${cwd}/ev.db` },
    cwd,
  );
}, 120_000);
afterAll(() => server.stop());

interface Upload {
  /** Everything the server answered. */
  answer: string;
  /** Body bytes the socket took before the server closed the connection. */
  sent: number;
  /** Milliseconds from the first body byte to the connection's end. */
  ms: number;
}

/**
 * Sends a 5 MB body (JSON unless `type` says otherwise) to `path` in `chunk`-byte pieces every `everyMs`,
 * reading the answer meanwhile.
 */
function upload(path: string, chunk: number, everyMs: number, type = 'application/json'): Promise<Upload> {
  return new Promise((resolve) => {
    const socket = connect(Number(server.url.port), '127.0.0.1');
    let answer = '';
    let sent = 0;
    let closed = false;
    const began = performance.now();
    const piece = Buffer.alloc(chunk, 0x20);
    socket.on('data', (data) => (answer += data.toString('latin1')));
    socket.on('error', () => {}); // EPIPE or a reset once the server closes: the answer read so far counts
    socket.on('close', () => {
      closed = true;
      resolve({ answer, sent, ms: performance.now() - began });
    });
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: ev.test\r\nContent-Type: ${type}\r\n` + `Content-Length: ${BODY_BYTES}\r\n\r\n`,
    );
    const next = () => {
      if (closed || sent >= BODY_BYTES) return;
      const bytes = Math.min(chunk, BODY_BYTES - sent);
      sent += bytes;
      const flushed = socket.write(bytes === chunk ? piece : piece.subarray(0, bytes));
      if (everyMs > 0) setTimeout(next, everyMs);
      else if (flushed) setImmediate(next);
      else socket.once('drain', next);
    };
    next();
  });
}

/** An answer as the client read it: a chunked body is decoded, and is whole only with its last chunk. */
function parseAnswer(raw: string): { head: string; body: string; whole: boolean } {
  const end = raw.indexOf('\r\n\r\n');
  const head = end < 0 ? raw : raw.slice(0, end + 2);
  let rest = end < 0 ? '' : raw.slice(end + 4);
  if (!/\r\ntransfer-encoding: chunked\r\n/i.test(head)) return { head, body: rest, whole: end >= 0 };
  let body = '';
  for (;;) {
    const line = rest.indexOf('\r\n');
    const size = line < 0 ? NaN : Number.parseInt(rest.slice(0, line), 16);
    if (!(size >= 0) || rest.length < line + 2 + size + 2) return { head, body, whole: false };
    if (size === 0) return { head, body, whole: rest.slice(line) === '\r\n\r\n' };
    body += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}

/** Whether the client read the 400 `body is too large` with `Connection: close`; `whole`: its framing's end too. */
function readsTooLarge(answer: string, whole: boolean): boolean {
  const parsed = parseAnswer(answer);
  return (
    (parsed.whole || !whole) &&
    /^HTTP\/1\.1 400 /.test(parsed.head) &&
    /\r\nconnection: close\r\n/i.test(parsed.head) &&
    parsed.body === '{"error":"body is too large"}'
  );
}

function expectTooLarge(answer: string): void {
  expect({ answer, tooLarge: readsTooLarge(answer, true) }).toEqual({ answer, tooLarge: true });
}

test.each(['/v1/pair/start', '/v1/pair/poll'])(
  '%s: a 5 MB body gets the 400, and what still comes after 1 MiB is cut off',
  async (path) => {
    // 256 KiB every 50 ms (5 MB/s): 1 MiB within a quarter second, far within 2 s.
    const { answer, sent, ms } = await upload(path, 256 * 1024, 50);
    expectTooLarge(answer);
    expect(sent).toBeLessThan(3 * MIB);
    expect(ms).toBeLessThan(1500);
  },
);

test("the relay, whose token is in the body: a 5 MB form gets its 400 in the planner's shape, then is cut off", async () => {
  const { answer, sent, ms } = await upload('/abrp/1/tlm/send', 256 * 1024, 50, 'application/x-www-form-urlencoded');
  const { head, body } = parseAnswer(answer);
  expect({ status: head.slice(0, 13), body }).toEqual({
    status: 'HTTP/1.1 400 ',
    body: '{"status":"error","error":"body is too large"}',
  });
  expect(head.toLowerCase()).toContain('\r\nconnection: close\r\n');
  // Drained, not refused unread: a client at full speed would otherwise meet a reset before the 400.
  expect(sent).toBeGreaterThan(MIB);
  expect(sent).toBeLessThan(3 * MIB);
  expect(ms).toBeLessThan(1500);
});

test('the approval form: a 5 MB form gets the 400 page, whole, and the connection is closed', async () => {
  const { answer, sent } = await upload('/pair', 256 * 1024, 50, 'application/x-www-form-urlencoded');
  const { head, body, whole } = parseAnswer(answer);
  expect({ status: head.slice(0, 13), whole }).toEqual({ status: 'HTTP/1.1 400 ', whole: true });
  expect(head.toLowerCase()).toContain('\r\nconnection: close\r\n');
  expect(body).toStartWith('<!doctype html>');
  expect(sent).toBeLessThan(3 * MIB);
});

test('a body trickling in is cut off after 2 s of draining, with the 400', async () => {
  // 16 KiB every 100 ms: 320 KiB in 2 s, far under 1 MiB.
  const { answer, sent, ms } = await upload('/v1/pair/start', 16 * 1024, 100);
  expectTooLarge(answer);
  expect(ms).toBeGreaterThan(1900);
  expect(ms).toBeLessThan(4000);
  expect(sent).toBeLessThan(MIB);
});

// At full speed the close meets body bytes still arriving and the kernel answers them with a reset
// (RFC 9293 §3.6.1); the 400 went out at the cap, before it, but its last chunk may not (Bun frames
// it chunked, oven-sh/bun#10507): what is asserted is that the client read the status and the message.
test('at full speed, 95 of 100 clients sending a 5 MB body read the 400 and its message', async () => {
  const failed: string[] = [];
  for (let i = 0; i < 100; i++) {
    const { answer } = await upload(i % 2 === 0 ? '/v1/pair/start' : '/v1/pair/poll', 64 * 1024, 0);
    if (!readsTooLarge(answer, false)) failed.push(JSON.stringify(answer.slice(0, 200)));
  }
  // Under the whole suite's load up to 5 in 100 lose the answer to the reset; one at a time, 1 in 200.
  expect(failed.length, failed.join('\n')).toBeLessThanOrEqual(5);
}, 60_000);

test('memory stays bounded: twenty 5 MB bodies at full speed, four at a time, each cut off at once', async () => {
  const peak = () =>
    Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.process.pid}/status`, 'utf8'))![1]) * 1024;
  await upload('/v1/pair/start', 64 * 1024, 0); // warm
  const before = peak();
  let answered = 0;
  for (let round = 0; round < 5; round++) {
    const uploads = await Promise.all(Array.from({ length: 4 }, () => upload('/v1/pair/poll', 64 * 1024, 0)));
    for (const { ms } of uploads) expect(ms).toBeLessThan(1500);
    answered += uploads.filter(({ answer }) => readsTooLarge(answer, false)).length;
  }
  expect(peak() - before).toBeLessThan(32 * MIB);
  expect(answered).toBeGreaterThanOrEqual(19);
}, 30_000);
