/**
 * The routes anyone may call (`/v1/pair/start`, `/v1/pair/poll`) on a real socket: a body over the 4 KiB
 * cap is answered with the readable 400 after at most 1 MiB or 2 s of draining, then the connection is
 * closed, cutting off whatever is still coming; memory stays bounded.
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

/** Sends a 5 MB JSON body to `path` in `chunk`-byte pieces every `everyMs`, reading the answer meanwhile. */
function upload(path: string, chunk: number, everyMs: number): Promise<Upload> {
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
      `POST ${path} HTTP/1.1\r\nHost: ev.test\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${BODY_BYTES}\r\n\r\n`,
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

const TOO_LARGE = /^HTTP\/1\.1 400 [^\r]*\r\n(?:[^\r]+\r\n)*\r\n\{"error":"body is too large"\}$/;

function expectTooLarge(answer: string): void {
  expect(answer).toMatch(TOO_LARGE);
  expect(answer.toLowerCase()).toContain('\r\nconnection: close\r\n');
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

test('a body trickling in is cut off after 2 s of draining, with the 400', async () => {
  // 16 KiB every 100 ms: 320 KiB in 2 s, far under 1 MiB.
  const { answer, sent, ms } = await upload('/v1/pair/start', 16 * 1024, 100);
  expectTooLarge(answer);
  expect(ms).toBeGreaterThan(1900);
  expect(ms).toBeLessThan(4000);
  expect(sent).toBeLessThan(MIB);
});

// At full speed the client's reading of the 400 is not asserted: closing with a body still arriving makes the
// kernel answer it with a reset, which now and then beats the 400 to the client (TCP, RFC 9293 §3.6.1).
test('memory stays bounded: twenty 5 MB bodies at full speed, four at a time, each cut off at once', async () => {
  const peak = () =>
    Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.process.pid}/status`, 'utf8'))![1]) * 1024;
  await upload('/v1/pair/start', 64 * 1024, 0); // warm
  const before = peak();
  for (let round = 0; round < 5; round++) {
    const uploads = await Promise.all(Array.from({ length: 4 }, () => upload('/v1/pair/poll', 64 * 1024, 0)));
    for (const { ms } of uploads) expect(ms).toBeLessThan(1500);
  }
  expect(peak() - before).toBeLessThan(32 * MIB);
}, 30_000);
