/**
 * Floods and slow clients against the compiled binary on 127.0.0.1 (bounded in count and time):
 * health keeps answering, the server's RSS stays under RSS_BOUND, oversized uploads get their 400.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFileSync, rmSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { compiledBinary, startBinary, type RunningBinary } from '../binary.ts';
import { OWNER_TOKEN, tempDir } from '../support.ts';

const RSS_BOUND = 400 * 1024 * 1024;
let dir: string;
let server: RunningBinary;
const sockets: Socket[] = [];

beforeAll(async () => {
  dir = tempDir('ev-ingest-floods-');
  server = await startBinary(await compiledBinary(), { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(dir, 'db.sqlite') }, dir);
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
        : `PUT /v1/consumption/daily HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${OWNER_TOKEN}\r\nContent-Length: 100000\r\n\r\n{`,
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

test('a burst of 20 uploads of 5 MB chunked: health answers, RSS bounded, answers that arrive are the 400', async () => {
  const megabyte = Buffer.alloc(1024 * 1024, 0x20);
  const chunk = Buffer.concat([Buffer.from(`${megabyte.length.toString(16)}\r\n`), megabyte, Buffer.from('\r\n')]);
  const uploads = await Promise.all(
    Array.from({ length: 20 }, async () => {
      const client = await connect();
      client.socket.write(
        `POST /v1/telemetry HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${OWNER_TOKEN}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n`,
      );
      for (let i = 0; i < 5; i++) client.socket.write(chunk);
      client.socket.write('0\r\n\r\n');
      await Promise.race([client.closed, Bun.sleep(10_000)]);
      return client.received();
    }),
  );
  // An answer, when one arrives before the server closes, is the 400; some clients see a reset instead
  // (the server does not yet drain the rest of an oversized upload; see README, Reliability).
  for (const received of uploads) {
    if (received !== '') expect(received).toContain('HTTP/1.1 400 Bad Request');
    if (received !== '') expect(received).toContain('{"error":"body is too large"}');
  }
  expect(uploads.some((received) => received !== '')).toBe(true);
  expect(await healthy()).toBe(true);
  expect(rss()).toBeLessThan(RSS_BOUND);
}, 30_000);

test('an idle connection is closed after the idle timeout (10 s)', async () => {
  const client = await connect();
  const closedInTime = await Promise.race([client.closed.then(() => true), Bun.sleep(14_000).then(() => false)]);
  expect(closedInTime).toBe(true);
}, 20_000);
