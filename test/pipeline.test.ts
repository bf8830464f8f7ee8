/** The request pipeline every ingest endpoint shares: token, capped body, JSON object, errors. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { ingestBodyBounds, readBody } from '../src/http/body.ts';
import { InstallationPath } from '../src/http/openapi.ts';
import { installationOfPath, noContent, type RequestParts } from '../src/http/pipeline.ts';
import { limits } from '../src/limits.ts';
import { ConfigError } from '../src/config.ts';
import { createMemoryLogger } from '../src/log.ts';
import { exitWhenStopped, listen, serve, type ProcessControl, type Running } from '../src/server.ts';
import {
  answer,
  heldSyncs,
  INSTALLATION,
  OTHER_INSTALLATION,
  OWNER_TOKEN,
  overSocket,
  refusedStart,
  startTestService,
  tempDir,
  testConfig,
  waitUntil,
  type TestService,
} from './support.ts';
import { PASSWORD } from './pairing-support.ts';
import { parsedReply, rawRequest, replyHeaders, upload } from './upload.ts';
import { PAGE_HEADERS, pageHeadersOf } from '../src/pairing/page.tsx';

let deviceToken: string;
const echo = ({ body }: RequestParts) => ({ installationId: INSTALLATION, keys: Object.keys(body).length });
let service: TestService;

beforeAll(async () => {
  service = await startTestService();
  service.app
    .use(service.pipeline)
    .post('/test/echo', ({ owned }) => ({ keys: (owned as ReturnType<typeof echo>).keys }), {
      auth: 'ingest',
      owned: echo,
    })
    .get('/test/owned/*', () => noContent(), {
      auth: 'ingest',
      path: 'installationId',
      params: InstallationPath,
      owned: installationOfPath,
    })
    .post('/test/boom', () => {
      throw new Error('disk on fire at /secret/path');
    });
  ({ token: deviceToken } = await service.devices.pair(INSTALLATION, null));
});
afterAll(() => service.close());

const unauthorized = { status: 401, body: { error: 'unauthorized' } };

describe('bearer token', () => {
  test.each([
    ['no header', {}],
    ['another scheme', { authorization: `Basic ${btoa('owner:pw')}` }],
    ['an empty token (headers lose trailing spaces: it arrives as the bare scheme)', { authorization: 'Bearer ' }],
    ['a wrong token', { authorization: 'Bearer not-the-token-but-long-enough' }],
    ['the scheme without a space', { authorization: 'Bearer' }],
    // The seed names the scheme exactly: `Bearer ` and the token.
    ['the scheme in another case', { authorization: `bearer ${OWNER_TOKEN}` }],
    ['two spaces before the token', { authorization: `Bearer  ${OWNER_TOKEN}` }],
    ['the token in another case', { authorization: `Bearer ${OWNER_TOKEN.toUpperCase()}` }],
  ])('%s is 401', async (_, headers) => {
    expect(await answer(await service.request('POST', '/test/echo', { token: null, headers, body: '{}' }))).toEqual(
      unauthorized,
    );
  });

  test('a 401 names its scheme (WWW-Authenticate: Bearer), at the ingest and the device endpoints', async () => {
    const refused = await service.request('POST', '/test/echo', { token: null, body: '{}' });
    expect([refused.status, refused.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
    const paired = await startTestService({ approvalPassword: PASSWORD });
    try {
      const devices = await paired.request('GET', '/v1/devices', { token: null });
      expect([devices.status, devices.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
    } finally {
      await paired.close();
    }
  });

  test('the exact scheme and token pass', async () => {
    expect(await answer(await service.request('POST', '/test/echo', { body: '{}' }))).toEqual({
      status: 200,
      body: { keys: 0 },
    });
  });

  test('401 comes before the body is read: invalid or oversized bodies without a token', async () => {
    for (const body of ['{not json', 'x'.repeat(limits.bodyBytes + 1)]) {
      expect(await answer(await service.request('POST', '/test/echo', { body, token: null }))).toEqual(unauthorized);
    }
    // A streamed megabyte: nothing past what a stream may pull by itself when it is created.
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 64 * 1024;
        if (pulled > 1024 * 1024) return controller.close();
        controller.enqueue(new Uint8Array(64 * 1024));
      },
    });
    const response = await service.app.handle(new Request('http://localhost/test/echo', { method: 'POST', body }));
    expect(await answer(response)).toEqual(unauthorized);
    expect(pulled).toBeLessThanOrEqual(64 * 1024);
  });

  test('the owner token and a paired token pass; the paired one only for its installation', async () => {
    expect((await service.request('GET', `/test/owned/${OTHER_INSTALLATION}`)).status).toBe(204);
    const own = await service.request('GET', `/test/owned/${INSTALLATION.toUpperCase()}`, { token: deviceToken });
    expect(own.status).toBe(204);
    const other = await service.request('GET', `/test/owned/${OTHER_INSTALLATION}`, { token: deviceToken });
    expect(await answer(other)).toEqual({
      status: 403,
      body: { error: 'token belongs to another installation; pair this car again after its installation id changed' },
    });
  });

  test('a path id is validated before ownership: 400 naming installationId for any token, then 403', async () => {
    const bad = { status: 400, body: { error: 'installationId must be a UUID' } };
    expect(await answer(await service.request('GET', '/test/owned/not-a-uuid', { token: deviceToken }))).toEqual(bad);
    expect(await answer(await service.request('GET', '/test/owned/', { token: deviceToken }))).toEqual(bad);
    expect(await answer(await service.request('GET', '/test/owned/not-a-uuid', { token: null }))).toEqual(unauthorized);
  });
});

describe('body', () => {
  /** A JSON object of exactly `size` bytes. */
  const objectOfSize = (size: number) => `{"pad":"${'x'.repeat(size - '{"pad":""}'.length)}"}`;

  test('exactly 524288 bytes are accepted, 524289 refused', async () => {
    // The contract's numbers, not limits.bodyBytes: a change of the limit must fail here.
    const accepted = await service.request('POST', '/test/echo', { body: objectOfSize(524_288) });
    expect(await answer(accepted)).toEqual({ status: 200, body: { keys: 1 } });
    const refused = await service.request('POST', '/test/echo', { body: objectOfSize(524_289) });
    expect(await answer(refused)).toEqual({ status: 400, body: { error: 'body is too large' } });
  });

  /** A body stream of `size` bytes in 64 KiB chunks (endless without a size), counting what was pulled. */
  function sizedStream(size = Infinity) {
    const chunk = 64 * 1024;
    const counted = { pulled: 0, chunk };
    const stream = new ReadableStream({
      pull(controller) {
        if (counted.pulled >= size) return controller.close();
        counted.pulled += chunk;
        controller.enqueue(new Uint8Array(chunk));
      },
    });
    return { stream, counted };
  }
  const tooLarge = { status: 400, message: 'body is too large', headers: { Connection: 'close' } };

  test('a Content-Length over the cap plus the drain bound is refused without reading the body', async () => {
    const { stream, counted } = sizedStream();
    const headers = { 'content-length': String(limits.bodyBytes + limits.bodyDrainBytes + 1) };
    const request = new Request('http://localhost/x', { method: 'POST', headers, body: stream });
    await expect(readBody(request, ingestBodyBounds)).rejects.toMatchObject(tooLarge);
    expect(counted.pulled).toBeLessThanOrEqual(64 * 1024); // a stream may pre-pull its first chunk on creation
  });

  test('a 5 MB body with Content-Length is drained to its end before the 400, none of it buffered', async () => {
    const size = 5 * 1024 * 1024;
    const { stream, counted } = sizedStream(size);
    const request = new Request('http://localhost/x', {
      method: 'POST',
      headers: { 'content-length': String(size) },
      body: stream,
    });
    const meter = { read: 0, buffered: 0 };
    await expect(readBody(request, ingestBodyBounds, meter)).rejects.toMatchObject(tooLarge);
    expect(meter).toEqual({ read: size, buffered: 0 });
    expect(counted.pulled).toBe(size);
  });

  test('a 5 MB chunked body is refused after buffering no more than the cap, the rest read and discarded', async () => {
    const size = 5 * 1024 * 1024;
    const { stream } = sizedStream(size);
    const meter = { read: 0, buffered: 0 };
    const request = new Request('http://localhost/x', { method: 'POST', body: stream });
    await expect(readBody(request, ingestBodyBounds, meter)).rejects.toMatchObject(tooLarge);
    expect(meter.buffered).toBeLessThanOrEqual(limits.bodyBytes);
    expect(meter.read).toBe(size);
  });

  test('an endless chunked body is cut off once the drain bound is read', async () => {
    const { stream, counted } = sizedStream();
    const meter = { read: 0, buffered: 0 };
    const request = new Request('http://localhost/x', { method: 'POST', body: stream });
    await expect(readBody(request, ingestBodyBounds, meter)).rejects.toMatchObject(tooLarge);
    expect(meter.buffered).toBeLessThanOrEqual(limits.bodyBytes);
    expect(meter.read).toBeLessThanOrEqual(limits.bodyBytes + limits.bodyDrainBytes + counted.chunk);
    // One read-ahead chunk past the body and the drain.
    expect(counted.pulled).toBeLessThanOrEqual(limits.bodyBytes + limits.bodyDrainBytes + 2 * counted.chunk);
  });

  test.each([
    ['invalid JSON', '{"a":', 'body is not valid JSON'],
    ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), 'body is not valid JSON'],
    ['an empty body', '', 'body is not valid JSON'],
    ['an array', '[1,2]', 'body must be a JSON object'],
    ['a string', '"text"', 'body must be a JSON object'],
    ['null', 'null', 'body must be a JSON object'],
  ])('%s is 400', async (_, body, error) => {
    expect(await answer(await service.request('POST', '/test/echo', { body }))).toEqual({
      status: 400,
      body: { error },
    });
  });

  // Compressed bodies are not decoded; the contract fixes the wording of the refusal of any unreadable body.
  test.each(['gzip', 'deflate, gzip', 'br'])(
    "a compressed body (Content-Encoding: %s) is the contract's 400 for invalid JSON",
    async (coding) => {
      const body = Bun.gzipSync(JSON.stringify({ a: 1 }));
      expect(
        await answer(await service.request('POST', '/test/echo', { body, headers: { 'Content-Encoding': coding } })),
      ).toEqual({
        status: 400,
        body: { error: 'body is not valid JSON' },
      });
    },
  );

  // A client's mistaken header must not break uploads that the service has always read.
  test.each(['identity', ' Identity ', '', 'utf-8', 'gzip'])(
    'valid JSON under Content-Encoding %p is read',
    async (coding) => {
      expect(
        await answer(
          await service.request('POST', '/test/echo', { body: { a: 1 }, headers: { 'Content-Encoding': coding } }),
        ),
      ).toEqual({
        status: 200,
        body: { keys: 1 },
      });
    },
  );

  // One upload of each framing here; a burst of them is in test/durability/floods.test.ts.
  test.each(['chunked', 'length'] as const)(
    'a 5 MB upload (%s) reads the 400 on a real socket',
    async (framing) => {
      const server = listen(service.app.fetch, { host: '127.0.0.1', port: 0 }, service.log);
      try {
        const options = { port: server.port!, path: '/test/echo', token: OWNER_TOKEN, bytes: 5 * 1024 * 1024, framing };
        const { reply, sent, error } = await upload(options);
        expect({ error, sent }).toEqual({ error: null, sent: options.bytes });
        expect(reply).toStartWith('HTTP/1.1 400');
        expect(reply).toEndWith('\r\n\r\n{"error":"body is too large"}');
      } finally {
        await server.stop(true);
      }
    },
    30_000,
  );
});

test("the listener never runs in Bun's development mode (a stack on its error page), whatever NODE_ENV", async () => {
  const server = listen(service.app.fetch, { host: '127.0.0.1', port: 0 }, service.log);
  try {
    expect(server.development).toBe(false);
  } finally {
    await server.stop(true);
  }
});

test('an unexpected failure is 500 "internal server error", its detail only in the log', async () => {
  const response = await service.request('POST', '/test/boom');
  expect(await answer(response)).toEqual({ status: 500, body: { error: 'internal server error' } });
  expect(service.log.lines.some((line) => line.includes('disk on fire at /secret/path'))).toBe(true);
});

test("a failure escaping the app, thrown or rejected, is still the contract's 500, logged with its path", async () => {
  const log = createMemoryLogger();
  const handlers = {
    thrown: () => {
      throw new Error('disk on fire');
    },
    rejected: () => Promise.reject(new Error('disk on fire')),
  };
  for (const [kind, handle] of Object.entries(handlers)) {
    const server = listen(handle, { host: '127.0.0.1', port: 0 }, log);
    try {
      const response = await fetch(new URL(`/${kind}?code=WDJB-MJHT`, server.url));
      // As text: Bun's own answer to a failure escaping the handler is a page, not JSON.
      expect([kind, response.status, await response.text()]).toEqual([kind, 500, '{"error":"internal server error"}']);
    } finally {
      await server.stop(true);
    }
  }
  // Each after its time stamp: the failure's detail, then the request's line.
  expect(log.lines.map((line) => line.slice(line.indexOf(' ') + 1).replace(/ ms=[\d.]+$/, ''))).toEqual(
    Object.keys(handlers).flatMap((kind) => [
      `error request.failed method=GET path=/${kind} error="Error: disk on fire"`,
      `info request method=GET path=/${kind} status=500`,
    ]),
  );
});

test("a failure escaping the app on `/pair` still carries the page's strict headers", async () => {
  const server = listen(
    () => Promise.reject(new Error('disk on fire')),
    { host: '127.0.0.1', port: 0 },
    createMemoryLogger(),
    limits,
    pageHeadersOf,
  );
  try {
    const response = await fetch(new URL('/pair?code=WDJB-MJHT', server.url));
    expect(response.status).toBe(500);
    expect(Object.fromEntries(Object.keys(PAGE_HEADERS).map((name) => [name, response.headers.get(name)]))).toEqual(
      PAGE_HEADERS,
    );
  } finally {
    await server.stop(true);
  }
});

test('a port in use, or a host that is none, refuses the start with one message naming both settings', async () => {
  const taken = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
  try {
    for (const [host, port] of [
      ['127.0.0.1', taken.port!],
      ['not_a_host', 0],
    ] as const) {
      const refused = await refusedStart(testConfig(tempDir(), { host, port }));
      expect(refused).toBeInstanceOf(ConfigError);
      expect(refused.message).toStartWith(`cannot listen on HOST ${host} PORT ${port}: `);
      expect(refused.message).not.toContain('\n');
    }
  } finally {
    taken.stop(true);
  }
});

/**
 * A stand-in for the process in `exitWhenStopped`: `signal` delivers one as the kernel would (to the
 * listener, removed first if it was added `once`; with none, the default action ends the process).
 */
function processStandIn() {
  const listeners = new Map<string, { listener: () => void; once: boolean }>();
  const exits: number[] = [];
  const killedBy: string[] = [];
  const add = (once: boolean) => (name: string, listener: () => void) => (
    listeners.set(name, { listener, once }), host
  );
  const host = {
    on: add(false),
    once: add(true),
    exit: (code?: number) => void exits.push(code ?? 0),
  } as unknown as ProcessControl;
  const signal = (name: string) => {
    const added = listeners.get(name);
    if (!added) return void killedBy.push(name);
    if (added.once) listeners.delete(name);
    added.listener();
  };
  return { host, signal, exits, killedBy };
}

test("a writer that dies settles the server's fatal promise, logs writer.failed; the server exits 1", async () => {
  const log = createMemoryLogger();
  const running = await serve(testConfig(tempDir()), log);
  const { host, exits } = processStandIn();
  exitWhenStopped(running, log, host);
  try {
    running.storage.committer.killWriter(); // ends without an error, as when it is killed
    expect((await running.fatal).message).toBe('writer exited');
    expect(log.lines.filter((line) => line.includes('error writer.failed'))).toEqual([
      expect.stringContaining('reason="writer exited"'),
    ]);
    await waitUntil(() => exits.length > 0);
    expect(exits).toEqual([1]);
    expect(log.lines.at(-1)).toContain(' info stopped ');
  } finally {
    await running.stop();
  }
});

/**
 * A listening server watched by `exitWhenStopped` through a process stand-in, with one telemetry batch
 * in flight whose WAL sync is held: the test finishes it, or `close` releases it.
 */
async function serverWithWriteInFlight() {
  const log = createMemoryLogger();
  const syncs = heldSyncs();
  const running = await serve({ ...testConfig(tempDir()), syncFile: syncs.syncFile }, log);
  const standIn = processStandIn();
  exitWhenStopped(running, log, standIn.host);
  const close = async () => {
    syncs.release();
    await running.stop();
  };
  const posted = overSocket(running).request('POST', '/v1/telemetry', { body: oneSampleBatch() });
  await waitUntil(() => syncs.calls.length > 0).catch(async (error) => {
    await close();
    throw error;
  });
  return { log, syncs, posted, close, ...standIn };
}

test('a sync of the WAL failing during a stop that SIGTERM began exits 1, not 0', async () => {
  const { log, syncs, posted, close, signal, exits } = await serverWithWriteInFlight();
  try {
    signal('SIGTERM');
    syncs.calls[0]!.finish(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    expect((await posted).status).toBe(500);
    await waitUntil(() => exits.length > 0);
    expect(exits[0]).toBe(1);
    expect(log.lines.filter((line) => line.includes('error writer.failed'))).toHaveLength(1);
  } finally {
    await close();
  }
});

test('SIGTERM and SIGINT stop the server and exit 0', async () => {
  for (const signal of ['SIGTERM', 'SIGINT']) {
    const log = createMemoryLogger();
    const running = await serve(testConfig(tempDir()), log);
    try {
      const { host, signal: deliver, exits } = processStandIn();
      exitWhenStopped(running, log, host);
      deliver(signal);
      await waitUntil(() => exits.length > 0);
      expect(exits).toEqual([0]);
      expect(log.lines.at(-1)).toContain(' info stopped ');
    } finally {
      await running.stop();
    }
  }
});

test.each([
  ['SIGTERM', 'SIGTERM'],
  ['SIGTERM', 'SIGINT'],
])(
  'a second signal during the stop (%s, then %s) joins it: the request in flight is answered, exit 0 once',
  async (first, second) => {
    const { log, syncs, posted, close, signal, exits, killedBy } = await serverWithWriteInFlight();
    try {
      signal(first);
      signal(second); // the process group signalled too, say
      expect(killedBy).toEqual([]);
      syncs.calls[0]!.finish();
      expect((await posted).status).toBe(200);
      await waitUntil(() => exits.length > 0); // a second exit would come in the same turn, from the same stop
      expect(exits).toEqual([0]);
      expect(log.lines.filter((line) => line.includes(' info stopping'))).toHaveLength(1);
    } finally {
      await close();
    }
  },
);

test('a third signal ends a stop that hangs at once, exit 1, saying so', async () => {
  // Its sync held: the stop waits.
  const { log, syncs, posted, close, signal, exits, killedBy } = await serverWithWriteInFlight();
  try {
    signal('SIGINT');
    signal('SIGINT');
    expect(exits).toEqual([]);
    signal('SIGINT');
    expect([exits, killedBy]).toEqual([[1], []]);
    expect(log.lines.filter((line) => line.includes(' warn stop.forced '))).toEqual([
      expect.stringContaining('signals=3'),
    ]);
    syncs.release();
    await posted;
  } finally {
    await close();
  }
});

/** A telemetry batch of one sample a minute old. */
function oneSampleBatch() {
  return { installationId: INSTALLATION, samples: [{ utc: Math.floor(Date.now() / 1000) - 60, soc: 50 }] };
}

describe('a Host header no URL can hold, on a listening server with pairing on', () => {
  let running: Running;
  const log = createMemoryLogger();
  beforeAll(async () => {
    running = await serve(testConfig(tempDir(), { approvalPassword: PASSWORD }), log);
  });
  afterAll(() => running.stop());

  /** Sends a raw HTTP/1.1 request with a small JSON body and splits what came back. */
  async function sendWithHost(method: string, path: string, host: string) {
    const headLines = [
      `${method} ${path} HTTP/1.1`,
      `Host: ${host}`,
      'Content-Type: application/json',
      'Content-Length: 2',
      '',
    ];
    const head = headLines.join('\r\n');
    // The deadline ends a connection kept open: a missing `Connection: close` fails as a diff, not a timeout.
    return parsedReply(await rawRequest(Number(running.url.port), `${head}\r\n{}`, 3_000));
  }
  const refused = {
    status: 'HTTP/1.1 400 Bad Request',
    closes: true,
    body: '{"error":"Host header is invalid"}',
    closedByServer: true,
  };

  test.each([
    ['GET', '/pair'],
    ['POST', '/v1/pair/start'],
    ['GET', '/v1/health'],
  ])('%s %s with `Host: a b` is 400 before the app, logged with its own path', async (method, path) => {
    expect(await sendWithHost(method, path, 'a b')).toEqual(refused);
    const logged = log.lines.filter((line) => line.includes(`request method=${method} path=${path} `));
    expect(logged).toEqual([expect.stringContaining(' status=400 ')]);
    expect(
      log.lines.filter((line) => / (warn|error) /.test(line) && !line.includes('pairing.public_url_unset')),
    ).toEqual([]);
  });

  test("a refused `/pair` request has the page's strict headers, like every `/pair` answer; no others", async () => {
    const headersOf = async (path: string) => {
      const { reply } = await rawRequest(Number(running.url.port), `GET ${path} HTTP/1.1\r\nHost: a b\r\n\r\n`, 3_000);
      return replyHeaders(reply);
    };
    const pageHeaders = Object.fromEntries(
      Object.entries(PAGE_HEADERS).map(([name, value]) => [name.toLowerCase(), value]),
    );
    for (const path of ['/pair', '/pair/', '/pair?code=BBBB-BBBB', '/./pair', '/x/../pair', '/pair/.']) {
      expect(await headersOf(path)).toMatchObject(pageHeaders);
    }
    for (const path of ['/pairing', '/pair/x']) {
      expect(Object.keys(await headersOf(path)).filter((name) => name in pageHeaders)).toEqual([]);
    }
    // An API path's refusal carries the API's no-store alone.
    expect(Object.keys(await headersOf('/v1/health')).filter((name) => name in pageHeaders)).toEqual(['cache-control']);
  });

  // Bun hands these on with a url no URL parser takes: relative (empty Host) or `http://<host>/…`.
  test.each(['', 'a:b:c', '[::1', 'host:99999'])('`Host: %s` is 400 too', async (host) => {
    expect(await sendWithHost('GET', '/pair', host)).toEqual(refused);
  });

  // RFC 9112 §3.2; Bun would route by the first and show the app both, joined by a comma.
  test.each([
    ['different', 'a\r\nHost: b'],
    ['alike', 'localhost\r\nHost: localhost'],
  ])('two Host lines, %s, are 400 too', async (_, hosts) => {
    expect(await sendWithHost('GET', '/v1/health', hosts)).toEqual(refused);
  });

  test('an HTTP/1.0 request without a Host (a health check) is answered by the app, as at its address', async () => {
    const { reply } = await rawRequest(Number(running.url.port), 'GET /v1/health HTTP/1.0\r\n\r\n');
    expect(reply).toStartWith('HTTP/1.1 200 OK\r\n');
    expect(reply).toEndWith('\r\n\r\n{"status":"ok"}');
    const page = await rawRequest(Number(running.url.port), 'GET /pair?code=BBBB-BBBB HTTP/1.0\r\n\r\n');
    expect(page.reply).toStartWith('HTTP/1.1 404 Not Found\r\n');
    expect(page.reply).toContain('This code is not open');
  });

  test('a request is logged by its path alone: no origin, no query (it may hold a pairing code)', async () => {
    const before = log.lines.length;
    const { reply } = await rawRequest(
      Number(running.url.port),
      'GET /pair?code=WDJB-MJHT HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    expect(reply).toStartWith('HTTP/1.1 404 Not Found\r\n');
    const lines = log.lines.slice(before);
    expect(lines.map((line) => line.slice(line.indexOf(' ') + 1).replace(/ ms=[\d.]+$/, ''))).toEqual([
      'info request method=GET path=/pair status=404',
    ]);
    expect(Number(lines[0]!.split(' ms=')[1])).toBeGreaterThan(0); // how long it took, to a hundredth of a millisecond
  });

  test('a request with a valid Host on the same server is answered by the app', async () => {
    const { reply } = await rawRequest(
      Number(running.url.port),
      'GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    expect(reply).toStartWith('HTTP/1.1 200 OK\r\n');
    expect(reply).toEndWith('\r\n\r\n{"status":"ok"}');
  });
});
