/**
 * Floods and slow clients against the compiled binary on 127.0.0.1 (bounded in count and time):
 * health keeps answering, the server's RSS stays under RSS_BOUND, oversized uploads get their 400 and
 * the server's memory stays flat while it drains them.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFileSync, rmSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { compiledBinary, startBinary, type RunningBinary } from '../binary.ts';
import { limits } from '../../src/limits.ts';
import { OWNER_TOKEN, tempDir } from '../support.ts';
import { parsedReply, upload } from '../upload.ts';

const RSS_BOUND = 400 * 1024 * 1024;
/** RSS growth allowed over four drained 64 MiB uploads (each drains 16 MiB; uncollected, it creeps ~12 MiB each). */
const RSS_GROWTH_BOUND = 24 * 1024 * 1024;
let dir: string;
let server: RunningBinary;
const sockets: Socket[] = [];

beforeAll(async () => {
  dir = tempDir('ev-ingest-floods-');
  server = await startBinary(
    await compiledBinary(),
    { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(dir, 'db.sqlite') },
    dir,
  );
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

function rss(): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.process.pid}/status`, 'utf8'))![1]!;
  return Number(kb) * 1024;
}

async function healthy(): Promise<boolean> {
  const response = await fetch(new URL('/v1/health', server.url));
  return response.status === 200 && (await response.text()) === '{"status":"ok"}';
}

/** A raw TCP client (node:net buffers what the kernel does not take yet) that keeps what it receives. */
async function connect(): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  let text = '';
  const socket = tcpConnect({ host: '127.0.0.1', port: Number(server.url.port) });
  sockets.push(socket);
  socket.on('data', (data) => void (text += data.toString()));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return { socket, received: () => text, closed };
}

test('1000 idle connections and 100 clients trickling headers or bodies: health answers, RSS bounded', async () => {
  const idle = await Promise.all(Array.from({ length: 1000 }, connect));
  const tricklers = await Promise.all(Array.from({ length: 100 }, connect));
  tricklers.forEach(({ socket }, index) =>
    socket.write(
      index % 2 === 0
        ? 'POST /v1/telemetry HTTP/1.1\r\nHost: localhost\r\n'
        : 'PUT /v1/consumption/daily HTTP/1.1\r\nHost: localhost\r\n' +
            `Authorization: Bearer ${OWNER_TOKEN}\r\nContent-Length: 100000\r\n\r\n{`,
    ),
  );
  for (let second = 0; second < 3; second++) {
    tricklers.forEach(({ socket }, index) => socket.write(index % 2 === 0 ? 'X' : ' '));
    expect(await healthy()).toBe(true);
    await Bun.sleep(1000);
  }
  expect(rss()).toBeLessThan(RSS_BOUND);
  expect(idle.length).toBe(1000);
}, 30_000);

test('20 chunked and 20 sized 5 MB uploads at once: each reads its 400, health answers, RSS bounded', async () => {
  const upload5MB = (framing: 'chunked' | 'length') =>
    upload({
      port: Number(server.url.port),
      path: '/v1/telemetry',
      token: OWNER_TOKEN,
      bytes: 5 * 1024 * 1024,
      framing,
    });
  const uploads = await Promise.all([...Array(20).fill('chunked'), ...Array(20).fill('length')].map(upload5MB));
  // The server drains each body (discarding it) before answering, so no client sees a reset.
  for (const { reply, sent, error } of uploads) {
    expect({ error, sent }).toEqual({ error: null, sent: 5 * 1024 * 1024 });
    expect(reply).toStartWith('HTTP/1.1 400 Bad Request');
    expect(reply).toEndWith('\r\n\r\n{"error":"body is too large"}');
  }
  expect(await healthy()).toBe(true);
  expect(rss()).toBeLessThan(RSS_BOUND);
}, 60_000);

test('a 2 MiB upload with a wrong token: the car reads its 401; the connection serves its next request', async () => {
  // The token is checked before the body is read; Bun then discards the unread rest itself, so no reset.
  const { reply, error, timedOut } = await upload({
    port: Number(server.url.port),
    path: '/v1/telemetry',
    token: 'revoked-token-0123456789abcdef',
    bytes: 2 * 1024 * 1024,
    framing: 'length',
    // biome-ignore lint/suspicious/noThenProperty: the request the connection sends after its 401, not a thenable.
    then: 'GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
  });
  expect({ error, timedOut }).toEqual({ error: null, timedOut: false });
  const answers = reply.split(/(?=HTTP\/1\.1 )/).map((part) => parsedReply({ reply: part, timedOut }));
  expect(answers.map(({ status, body }) => [status, body])).toEqual([
    ['HTTP/1.1 401 Unauthorized', '{"error":"unauthorized"}'],
    ['HTTP/1.1 200 OK', '{"status":"ok"}'],
  ]);
});

test('64 MiB uploads are cut off after the drain bound while the server RSS stays flat', async () => {
  const bytes = 64 * 1024 * 1024;
  const upload64MiB = async () => {
    const { sent } = await upload({
      port: Number(server.url.port),
      path: '/v1/telemetry',
      token: OWNER_TOKEN,
      bytes,
      framing: 'chunked',
    });
    expect(sent).toBeGreaterThan(limits.bodyBytes + limits.bodyDrainBytes - 64 * 1024);
    expect(sent).toBeLessThan(bytes);
  };
  await upload64MiB(); // the first drain grows the server's buffers once
  const before = rss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 10);
  for (let i = 0; i < 4; i++) await upload64MiB();
  clearInterval(sampler);
  expect(peak - before).toBeLessThan(RSS_GROWTH_BOUND);
  expect(await healthy()).toBe(true);
}, 60_000);

// Bun's own wait for a connection's first request, whatever idleTimeout says; slow-uploads.test.ts tests idleTimeout.
test("a new connection that sends nothing is closed after 10 s, Bun's fixed wait for a first request", async () => {
  const client = await connect();
  const closedInTime = await Promise.race([client.closed.then(() => true), Bun.sleep(14_000).then(() => false)]);
  expect(closedInTime).toBe(true);
}, 20_000);
