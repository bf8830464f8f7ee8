/** The car's side of pairing: turning it on and off, bodies of the token-less routes, start, poll, their answers. */
import { afterEach, describe, expect, jest, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { tokenHash } from '../src/devices/token.ts';
import { limits } from '../src/limits.ts';
import type { Committer } from '../src/db/committer.ts';
import { DeviceRegistry } from '../src/devices/service.ts';
import { approvalUrl } from '../src/pairing/approval-url.ts';
import { PairingBook, revokeLeftovers } from '../src/pairing/service.ts';
import { newUserCode } from '../src/pairing/code.ts';
import { rmSync } from 'node:fs';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import {
  answer,
  INSTALLATION,
  installationNumbered,
  OTHER_INSTALLATION,
  overSocket,
  tempDir,
  testConfig,
  waitUntil,
  type TestService,
} from './support.ts';
import {
  CODE,
  decide,
  expectPage,
  pairDevice,
  PASSWORD,
  poll,
  startPairing,
  USER_CODE_ALPHABET,
  deviceRows,
  MINUTE,
  startPairingService,
} from './pairing-support.ts';

// The file's own clock and service: tests move the one and `start` replaces the other.
let clock = Date.UTC(2026, 10, 25, 12, 0, 0);
const now = () => clock;
let service: TestService;
const start = async (overrides = {}, dir?: string) => (service = await startPairingService(now, overrides, dir));
afterEach(() => service?.close());

describe('without APPROVAL_PASSWORD', () => {
  test('every pairing and device path answers 404 not found', async () => {
    await start({ approvalPassword: null });
    const paths: [string, string][] = [
      ['POST', '/v1/pair/start'],
      ['POST', '/v1/pair/poll'],
      ['GET', '/pair'],
      ['POST', '/pair'],
      ['GET', '/v1/devices'],
      ['POST', '/v1/devices/abc/revoke'],
    ];
    for (const [method, path] of paths) {
      const body = method === 'POST' ? { installationId: INSTALLATION } : undefined;
      expect({ path, ...(await answer(await service.request(method, path, { body, token: PASSWORD }))) }).toEqual({
        path,
        status: 404,
        body: { error: 'not found' },
      });
    }
  });
});

test('start-up warns when pairing is on without PUBLIC_URL', async () => {
  const warned = async (publicUrl: string) => {
    const dir = tempDir();
    const log = createMemoryLogger();
    const running = await serve(testConfig(dir, { approvalPassword: PASSWORD, publicUrl }), log);
    await running.stop();
    rmSync(dir, { recursive: true, force: true });
    return log.lines.filter((line) => line.includes('warn pairing.public_url_unset')).length;
  };
  expect(await warned('')).toBe(1);
  expect(await warned('https://ev.example.com')).toBe(0);
});

describe('bodies of the routes without a token', () => {
  /** An endless chunked body in 16 KiB chunks that counts what the server pulled. */
  function endlessBody() {
    const counted = { pulled: 0 };
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        counted.pulled += 16 * 1024;
        controller.enqueue(new Uint8Array(16 * 1024).fill(0x20));
      },
    });
    return { body, counted };
  }

  test.each(['/v1/pair/start', '/v1/pair/poll', '/pair'])(
    'an oversized body on %s is answered 400 after draining at most 1 MiB',
    async (path) => {
      await start();
      const { body, counted } = endlessBody();
      const response = await service.app.handle(new Request(`http://localhost${path}`, { method: 'POST', body }));
      expect(response.status).toBe(400);
      expect(response.headers.get('connection')).toBe('close');
      if (path !== '/pair') expect(await response.json()).toEqual({ error: 'body is too large' });
      // The 4 KiB cap, the 1 MiB drain, the chunk that crossed it and one of read-ahead: not an ingest body's 16 MiB.
      expect(counted.pulled).toBeLessThanOrEqual(4096 + 1024 * 1024 + 2 * 16 * 1024);
    },
  );

  test('a declared length over 4 KiB is not read into memory, only drained, however large it says it is', async () => {
    await start();
    const { body, counted } = endlessBody();
    const headers = { 'content-length': String(5_000_000) };
    const response = await service.app.handle(
      new Request('http://localhost/v1/pair/start', { method: 'POST', body, headers }),
    );
    expect(await answer(response)).toEqual({ status: 400, body: { error: 'body is too large' } });
    expect(counted.pulled).toBeLessThanOrEqual(4096 + 1024 * 1024 + 2 * 16 * 1024);
  });
});

describe('POST /v1/pair/start', () => {
  test("user codes are drawn from every letter of the contract's alphabet and no other", () => {
    // 8,000 letters: a letter of 20 is missed with a chance of about 20 × 0.95^8000, never in practice.
    const letters = new Set(Array.from({ length: 1000 }, newUserCode).join(''));
    expect([...letters].sort().join('')).toBe(USER_CODE_ALPHABET);
  });

  test('a code drawn again while its request is open is redrawn: typing it still reaches the first car', async () => {
    const drawn = ['BBBBBBBB', 'BBBBBBBB', 'CCCCCCCC'];
    const registry = {} satisfies Partial<DeviceRegistry> as unknown as DeviceRegistry; // a start saves nothing
    const book = new PairingBook(registry, createMemoryLogger(), now, () => drawn.shift()!);
    const first = await book.start(INSTALLATION, 'MG4');
    const second = await book.start(OTHER_INSTALLATION, 'ID.3');
    expect([first.userCode, second.userCode]).toEqual(['BBBBBBBB', 'CCCCCCCC']);
    expect(book.find('BBBBBBBB')).toBe(first);
    expect(book.find('CCCCCCCC')).toBe(second);
  });

  test('answers a secret pairing id, a user code, the approval URL, 600 s and 5 s', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION, 'MG4');
    expect(started.pairingId).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(started.userCode).toMatch(CODE);
    expect(started).toEqual({
      pairingId: started.pairingId,
      userCode: started.userCode,
      approvalUrl: `http://localhost/pair?code=${started.userCode}`,
      expiresIn: 600,
      interval: 5,
    });
  });

  test('the approval URL is PUBLIC_URL with its sub-path', async () => {
    await start({ publicUrl: 'https://ev.example.com/ingest' });
    const started = await startPairing(service, INSTALLATION);
    expect(started.approvalUrl).toBe(`https://ev.example.com/ingest/pair?code=${started.userCode}`);
  });

  test('without PUBLIC_URL: Host, and forwarded headers only with TRUST_PROXY', async () => {
    const headers = {
      host: 'car.home.arpa:8080',
      'x-forwarded-proto': 'https, http',
      'x-forwarded-host': 'ev.example.com, proxy',
    };
    const body = { installationId: INSTALLATION };
    await start();
    let started = (await answer(await service.request('POST', '/v1/pair/start', { body, token: null, headers })))
      .body as { approvalUrl: string; userCode: string };
    expect(started.approvalUrl).toBe(`http://car.home.arpa:8080/pair?code=${started.userCode}`);
    await service.close();
    await start({ trustProxy: true });
    started = (await answer(await service.request('POST', '/v1/pair/start', { body, token: null, headers })))
      .body as typeof started;
    expect(started.approvalUrl).toBe(`https://ev.example.com/pair?code=${started.userCode}`);
  });

  test('a Host or forwarded host that is not a plain host name does not shape the URL', () => {
    const url = (headers: Record<string, string>) =>
      approvalUrl(
        { publicUrl: '', trustProxy: true },
        new Request('http://localhost/v1/pair/start', { headers }),
        'ABCD-EFGH',
      );
    expect(url({ 'x-forwarded-host': 'evil.example/"><b>x</b>' })).toBe('http://localhost/pair?code=ABCD-EFGH');
    expect(url({ host: 'a b' })).toBe('http://localhost/pair?code=ABCD-EFGH');
    expect(url({ 'x-forwarded-host': '[::1]:8443', 'x-forwarded-proto': 'https' })).toBe(
      'https://[::1]:8443/pair?code=ABCD-EFGH',
    );
  });

  test('a forwarded scheme counts in any case, and only as http or https', () => {
    const url = (proto: string) =>
      approvalUrl(
        { publicUrl: '', trustProxy: true },
        new Request('http://localhost/v1/pair/start', { headers: { 'x-forwarded-proto': proto } }),
        'ABCD-EFGH',
      );
    expect(url('HTTPS')).toBe('https://localhost/pair?code=ABCD-EFGH');
    expect(url('javascript')).toBe('http://localhost/pair?code=ABCD-EFGH');
    expect(url('ftp, https')).toBe('http://localhost/pair?code=ABCD-EFGH');
  });

  test('validates installationId and name, naming the field', async () => {
    await start();
    const cases: [unknown, string][] = [
      [{}, 'installationId is required'],
      [{ installationId: 'car-1' }, 'installationId must be a UUID'],
      [{ installationId: INSTALLATION, name: '' }, 'name must be a string of 1..64 characters'],
      [{ installationId: INSTALLATION, name: 'x'.repeat(65) }, 'name must be a string of 1..64 characters'],
      [{ installationId: INSTALLATION, name: 7 }, 'name must be a string of 1..64 characters'],
      [
        { installationId: INSTALLATION, name: 'MG4\u202Egnp.exe' },
        'name must not hold control or text-direction characters',
      ],
      [
        { installationId: INSTALLATION, name: 'MG4\u001b[2J' },
        'name must not hold control or text-direction characters',
      ],
      [{ installationId: INSTALLATION, name: 'MG4\u0085' }, 'name must not hold control or text-direction characters'],
      [{ installationId: INSTALLATION, name: 'MG4 \ud83d' }, 'name must not hold a lone surrogate'],
      [{ installationId: INSTALLATION, name: '\udc4d MG4' }, 'name must not hold a lone surrogate'],
      ...['\u061C', '\u200E', '\u200F', '\u202A', '\u2066', '\u2069'].map((mark): [unknown, string] => [
        { installationId: INSTALLATION, name: `MG4${mark}x` },
        'name must not hold control or text-direction characters',
      ]),
      ['[]', 'body must be a JSON object'],
      ['{', 'body is not valid JSON'],
    ];
    for (const [body, error] of cases) {
      expect(await answer(await service.request('POST', '/v1/pair/start', { body, token: null }))).toEqual({
        status: 400,
        body: { error },
      });
    }
    expect(
      (
        await service.request('POST', '/v1/pair/start', {
          body: { installationId: INSTALLATION, name: 'é'.repeat(64) },
          token: null,
        })
      ).status,
    ).toBe(200);
    // Emoji sequences (joined by U+200D) and right-to-left scripts are names like any other.
    for (const name of ['👨‍👩‍👧 family car', 'سيارة العائلة']) {
      expect(
        (await service.request('POST', '/v1/pair/start', { body: { installationId: INSTALLATION, name }, token: null }))
          .status,
      ).toBe(200);
    }
    expect(
      (
        await service.request('POST', '/v1/pair/start', {
          body: { installationId: INSTALLATION, name: null },
          token: null,
        })
      ).status,
    ).toBe(200);
  });

  test('a body over the cap is refused before parsing', async () => {
    await start();
    const body = JSON.stringify({ installationId: INSTALLATION, pad: 'x'.repeat(600_000) });
    expect(await answer(await service.request('POST', '/v1/pair/start', { body, token: null }))).toEqual({
      status: 400,
      body: { error: 'body is too large' },
    });
  });

  test('at most 100 open requests; a new start of an open installation still replaces', async () => {
    await start();
    const ids = Array.from({ length: 100 }, (_, i) => installationNumbered(i));
    // From 10 addresses: one address holds at most 10 requests.
    for (const [i, id] of ids.entries()) await startPairing(service, id, undefined, `10.0.0.${i % 10}`);
    expect(
      await answer(
        await service.request('POST', '/v1/pair/start', { body: { installationId: INSTALLATION }, token: null }),
      ),
    ).toEqual({
      status: 429,
      body: { error: 'too many pairing requests' },
    });
    await startPairing(service, ids[0]!);
    clock += 10 * MINUTE;
    await startPairing(service, INSTALLATION);
    expect(service.pairing!.book.size).toBe(1);
  });
});

describe('POST /v1/pair/poll', () => {
  test('pending until approved, then the token once, then expired', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION.toUpperCase(), 'MG4 <3');
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'pending' } });
    expect(deviceRows(service)).toEqual([]);

    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
    const [row] = deviceRows(service);
    expect(row).toMatchObject({
      installation_id: INSTALLATION,
      name: 'MG4 <3',
      created_at: clock,
      revoked_at: null,
      awaiting_collection: 1,
    });
    clock += 1000;

    const collecting = await service.request('POST', '/v1/pair/poll', {
      body: { pairingId: started.pairingId },
      token: null,
    });
    expect(collecting.headers.get('cache-control')).toBe('no-store'); // it carries the token
    const collected = await answer(collecting);
    const token = (collected.body as { token: string }).token;
    expect(collected).toEqual({
      status: 200,
      body: { status: 'approved', token, deviceId: row!.id, installationId: INSTALLATION },
    });
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const another = await service.request('POST', '/v1/pair/start', {
      body: { installationId: OTHER_INSTALLATION },
      token: null,
    });
    // It holds the pairing id.
    expect([another.status, another.headers.get('cache-control')]).toEqual([200, 'no-store']);
    expect(row!.token_hash).toBe(tokenHash(token));
    expect(deviceRows(service)).toMatchObject([{ awaiting_collection: 0 }]);
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
    // The owner reloading the page after the collection learns that the car may well be paired.
    const reloaded = await service.request('GET', `/pair?code=${started.userCode}`, { token: null });
    expect(await expectPage(reloaded, 404)).toContain('or the car has already collected its token (then it is paired)');
  });

  test('a device approved but not collected is revoked at next start (request lost); a collected stays', async () => {
    const dir = tempDir();
    await start({}, dir);
    const collected = await pairDevice(service, INSTALLATION);
    const uncollected = await startPairing(service, OTHER_INSTALLATION);
    await decide(service, uncollected.userCode, 'approve');
    const [, lost] = deviceRows(service);
    await service.close(); // a crash loses the open requests alike: only the database tells

    clock += MINUTE;
    await start({}, dir);
    expect(deviceRows(service)).toMatchObject([
      { id: collected.deviceId, revoked_at: null },
      { id: lost!.id, revoked_at: clock, awaiting_collection: 1 },
    ]);
    expect(service.devices.size).toBe(1);
    expect(service.log.lines).toContainEqual(
      expect.stringContaining(`info pairing.uncollected_revoked device=${lost!.id} reason=restart`),
    );
    service.devices.reloadIfChanged(); // the watcher's check: the registry already holds the revocation's version
    expect(service.log.lines.filter((line) => line.includes('devices.reloaded'))).toEqual([]);
    const ownHistory = await service.request('GET', `/v1/consumption/history/${INSTALLATION}`, {
      token: collected.token,
    });
    expect(ownHistory.status).toBe(200); // the collected token still works
    expect(await poll(service, uncollected.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
  });

  test('a device never collected is revoked at the next start also when that start has pairing off', async () => {
    const dir = tempDir();
    await start({}, dir);
    await decide(service, (await startPairing(service, INSTALLATION)).userCode, 'approve');
    const [lost] = deviceRows(service);
    await service.close();
    await start({ approvalPassword: null }, dir);
    expect(deviceRows(service)).toMatchObject([{ id: lost!.id, revoked_at: clock }]);
    expect(service.log.lines).toContainEqual(
      expect.stringContaining(`info pairing.uncollected_revoked device=${lost!.id} reason=restart`),
    );
  });

  test('a start-up revocation that cannot be written is logged for each device, and the start goes on', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    const [device] = deviceRows(service);
    const failing = { write: () => Promise.reject(new Error('disk full')) } as unknown as Committer;
    const log = createMemoryLogger();
    const registry = new DeviceRegistry(service.storage.db, failing, log, now);
    registry.load();
    await revokeLeftovers(registry, log); // resolves: the start goes on
    expect(log.lines).toEqual([
      expect.stringContaining(`error pairing.revoke_failed device=${device!.id} reason="disk full"`),
    ]);
    expect(registry.size).toBe(1);
  });

  test('a start-up revocation whose devices cannot be reread is logged as a failed read, not revocation', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    const [device] = deviceRows(service);
    const log = createMemoryLogger();
    const registry = new DeviceRegistry(service.storage.db, service.storage.committer, log, now);
    registry.load();
    const db = new Database(service.config.databasePath);
    db.run('DELETE FROM devices_version'); // the read after the revocation fails; the revocation does not
    db.close();
    await revokeLeftovers(registry, log);
    expect(log.lines).toEqual([
      expect.stringMatching(
        / error devices\.reload_failed reason="paired devices cannot be loaded: devices_version has lost its row/,
      ),
      expect.stringContaining(`info pairing.uncollected_revoked device=${device!.id} reason=restart`),
    ]);
    expect(deviceRows(service)).toMatchObject([{ revoked_at: clock }]);
    expect(registry.size).toBe(0); // its token is refused all the same
  });

  test('denied, and no device is created', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const page = await decide(service, started.userCode, 'deny');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Car denied');
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'denied' } });
    expect(deviceRows(service)).toEqual([]);
  });

  test('unknown ids are expired; a missing or empty id is 400', async () => {
    await start();
    expect(await poll(service, 'x'.repeat(43))).toEqual({ status: 200, body: { status: 'expired' } });
    const refusal = async (body: object) =>
      answer(await service.request('POST', '/v1/pair/poll', { body, token: null }));
    expect(await refusal({})).toEqual({ status: 400, body: { error: 'pairingId is required' } });
    expect(await refusal({ pairingId: '' })).toEqual({
      status: 400,
      body: { error: 'pairingId must be a non-empty string' },
    });
    expect(await refusal({ pairingId: 7 })).toEqual({
      status: 400,
      body: { error: 'pairingId must be a non-empty string' },
    });
  });

  test('a request expires after 10 minutes', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    clock += 10 * MINUTE - 1;
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'pending' } });
    clock += 1;
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
    expect((await service.request('GET', `/pair?code=${started.userCode}`, { token: null })).status).toBe(404);
    expect((await decide(service, started.userCode, 'approve')).status).toBe(404);
  });

  test('an approved token never collected is revoked when the request expires', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    expect(service.devices.size).toBe(1);
    clock += 10 * MINUTE;
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
    expect(deviceRows(service)).toMatchObject([{ revoked_at: clock }]);
    expect(service.devices.size).toBe(0);
  });

  test('a device the owner revoked after approving is not handed out: the car is told denied', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    const [device] = deviceRows(service);
    expect((await service.request('POST', `/v1/devices/${device!.id}/revoke`, { token: PASSWORD })).status).toBe(200);
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'denied' } });
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
    expect(deviceRows(service)).toMatchObject([{ revoked_at: clock, awaiting_collection: 1 }]);
    expect(service.log.lines.filter((line) => /pairing\.(collected|revoked_before_collection)/.test(line))).toEqual([
      expect.stringContaining(
        `info pairing.revoked_before_collection installation=${INSTALLATION} device=${device!.id}`,
      ),
    ]);
  });

  test('the sweep timer revokes an uncollected token even if the car never polls again, at every expiry', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    clock += 10 * MINUTE;
    const firstExpiry = clock;
    service.pairing!.book.watch(10);
    await waitUntil(() => deviceRows(service)[0]?.revoked_at !== null); // committed, not only out of memory
    // A second request expiring after that sweep: the timer sweeps again, not once.
    const later = await startPairing(service, OTHER_INSTALLATION);
    await decide(service, later.userCode, 'approve');
    clock += 10 * MINUTE;
    await waitUntil(() => deviceRows(service)[1]?.revoked_at !== null, 2000);
    service.pairing!.book.stop();
    expect(service.devices.size).toBe(0);
    expect(deviceRows(service)).toMatchObject([{ revoked_at: firstExpiry }, { revoked_at: clock }]);
  });

  test("a listening server's sweep revokes an approved token the car never collects once it expires", async () => {
    // serve() takes no clock: Bun's fake timers stand in (Date.now, performance.now, timers made while they are on).
    jest.useFakeTimers();
    let running: Running | undefined;
    try {
      running = await serve(testConfig(tempDir(), { approvalPassword: PASSWORD }), createMemoryLogger());
      const car = overSocket(running);
      const started = await startPairing(car, INSTALLATION);
      const expiresAt = Date.now() + limits.pairingTtlMs;
      expect((await decide(car, started.userCode, 'approve')).status).toBe(200);
      jest.advanceTimersByTime(limits.pairingTtlMs); // the car never polls
      await running.storage.committer.idle();
      expect(running.storage.db.query('SELECT revoked_at FROM devices').all()).toEqual([{ revoked_at: expiresAt }]);
      expect(running.service.devices.size).toBe(0);
    } finally {
      jest.useRealTimers();
      await running?.stop();
    }
  });

  test('a new start replaces the open request of the installation and revokes its uncollected device', async () => {
    await start();
    const first = await startPairing(service, INSTALLATION);
    await decide(service, first.userCode, 'approve');
    const second = await startPairing(service, INSTALLATION);
    expect(second.userCode).not.toBe(first.userCode);
    expect(await poll(service, first.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
    expect((await service.request('GET', `/pair?code=${first.userCode}`, { token: null })).status).toBe(404);
    expect(await poll(service, second.pairingId)).toEqual({ status: 200, body: { status: 'pending' } });
    expect(deviceRows(service)).toMatchObject([{ revoked_at: clock }]);
    expect(service.devices.size).toBe(0);
  });
});

describe("the car's pairing answers", () => {
  test('every car route answers with no-store, whatever it tells: they hold the pairing id or the token', async () => {
    await start();
    const carRoutes = service.app.routes
      .filter(({ path }) => path.startsWith('/v1/pair/'))
      .map(({ method, path }) => `${method} ${path}`);
    expect(carRoutes.sort()).toEqual(['POST /v1/pair/poll', 'POST /v1/pair/start']); // a new one belongs below too
    /** The answer's status, its cache control and, for a poll, what it tells the car. */
    const answerOf = async (path: string, body: object) => {
      const response = await service.request('POST', path, { body, token: null });
      return [
        response.status,
        response.headers.get('cache-control'),
        ((await response.json()) as { status?: string }).status,
      ];
    };
    const pollOf = (pairingId: string) => answerOf('/v1/pair/poll', { pairingId });
    expect(await answerOf('/v1/pair/start', { installationId: INSTALLATION })).toEqual([200, 'no-store', undefined]);
    const approved = await startPairing(service, INSTALLATION);
    const denied = await startPairing(service, OTHER_INSTALLATION);
    expect(await pollOf(approved.pairingId)).toEqual([200, 'no-store', 'pending']);
    await decide(service, approved.userCode, 'approve');
    await decide(service, denied.userCode, 'deny');
    expect(await pollOf(approved.pairingId)).toEqual([200, 'no-store', 'approved']);
    expect(await pollOf(denied.pairingId)).toEqual([200, 'no-store', 'denied']);
    expect(await pollOf(approved.pairingId)).toEqual([200, 'no-store', 'expired']);
  });
});
