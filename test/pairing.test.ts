import { afterEach, describe, expect, jest, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { createHash } from 'node:crypto';
import { tokenHash } from '../src/devices/token.ts';
import { bearerToken } from '../src/http/auth.ts';
import { pairingBodyBounds } from '../src/http/body.ts';
import { limits } from '../src/limits.ts';
import type { Committer } from '../src/db/committer.ts';
import { DeviceRegistry, type PairedDevice } from '../src/devices/registry.ts';
import { approvalUrl } from '../src/pairing/approval-url.ts';
import { PairingBook, revokeLeftovers } from '../src/pairing/book.ts';
import { displayUserCode, newUserCode } from '../src/pairing/code.ts';
import { ApprovalLock } from '../src/pairing/lock.ts';
import { lockedText } from '../src/pairing/page.tsx';
import { pairingRoutes } from '../src/pairing/routes.tsx';
import { rmSync } from 'node:fs';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { answer, INSTALLATION, installationNumbered, OTHER_INSTALLATION, overSocket, startTestService, tempDir, testConfig, waitUntil, within, type TestService } from './support.ts';
import { decide, pairDevice, PASSWORD, poll, startPairing, submitForm, WRONG_PASSWORD } from './pairing-support.ts';

const MINUTE = 60_000;
let clock = Date.UTC(2026, 10, 25, 12, 0, 0);
const now = () => clock;

let service: TestService;
async function start(overrides = {}, dir?: string) {
  service = await startTestService({ approvalPassword: PASSWORD, ...overrides }, { now, elapsed: now, dir });
  return service;
}
afterEach(() => service?.close());

const deviceRows = () => service.storage.db.query('SELECT * FROM devices ORDER BY created_at').all() as Record<string, unknown>[];
const form = { 'content-type': 'application/x-www-form-urlencoded' };
/** The contract's letters of a user code, written here so that a change to the code's alphabet fails. */
const CONTRACT_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const CODE = new RegExp(`^[${CONTRACT_ALPHABET}]{4}-[${CONTRACT_ALPHABET}]{4}$`);

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
    const response = await service.app.handle(new Request('http://localhost/v1/pair/start', { method: 'POST', body, headers }));
    expect(await answer(response)).toEqual({ status: 400, body: { error: 'body is too large' } });
    expect(counted.pulled).toBeLessThanOrEqual(4096 + 1024 * 1024 + 2 * 16 * 1024);
  });
});

describe('POST /v1/pair/start', () => {
  test("user codes are drawn from every letter of the contract's alphabet and no other", () => {
    // 8,000 letters: a letter of 20 is missed with a chance of about 20 × 0.95^8000, never in practice.
    const letters = new Set(Array.from({ length: 1000 }, newUserCode).join(''));
    expect([...letters].sort().join('')).toBe(CONTRACT_ALPHABET);
  });

  test('a code drawn again while its request is open is drawn anew: the owner typing it still reaches the first car', async () => {
    const drawn = ['BBBBBBBB', 'BBBBBBBB', 'CCCCCCCC'];
    const registry = {} satisfies Partial<DeviceRegistry> as unknown as DeviceRegistry; // starting a request saves nothing
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
    const headers = { host: 'car.home.arpa:8080', 'x-forwarded-proto': 'https, http', 'x-forwarded-host': 'ev.example.com, proxy' };
    const body = { installationId: INSTALLATION };
    await start();
    let started = (await answer(await service.request('POST', '/v1/pair/start', { body, token: null, headers }))).body as { approvalUrl: string; userCode: string };
    expect(started.approvalUrl).toBe(`http://car.home.arpa:8080/pair?code=${started.userCode}`);
    await service.close();
    await start({ trustProxy: true });
    started = (await answer(await service.request('POST', '/v1/pair/start', { body, token: null, headers }))).body as typeof started;
    expect(started.approvalUrl).toBe(`https://ev.example.com/pair?code=${started.userCode}`);
  });

  test('a Host or forwarded host that is not a plain host name does not shape the URL', () => {
    const url = (headers: Record<string, string>) =>
      approvalUrl({ publicUrl: '', trustProxy: true }, new Request('http://localhost/v1/pair/start', { headers }), 'ABCD-EFGH');
    expect(url({ 'x-forwarded-host': 'evil.example/"><b>x</b>' })).toBe('http://localhost/pair?code=ABCD-EFGH');
    expect(url({ host: 'a b' })).toBe('http://localhost/pair?code=ABCD-EFGH');
    expect(url({ 'x-forwarded-host': '[::1]:8443', 'x-forwarded-proto': 'https' })).toBe('https://[::1]:8443/pair?code=ABCD-EFGH');
  });

  test('a forwarded scheme counts in any case, and only as http or https', () => {
    const url = (proto: string) =>
      approvalUrl({ publicUrl: '', trustProxy: true }, new Request('http://localhost/v1/pair/start', { headers: { 'x-forwarded-proto': proto } }), 'ABCD-EFGH');
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
      [{ installationId: INSTALLATION, name: 'MG4\u202Egnp.exe' }, 'name must not hold control or text-direction characters'],
      [{ installationId: INSTALLATION, name: 'MG4\u001b[2J' }, 'name must not hold control or text-direction characters'],
      [{ installationId: INSTALLATION, name: 'MG4\u0085' }, 'name must not hold control or text-direction characters'],
      [{ installationId: INSTALLATION, name: 'MG4 \ud83d' }, 'name must not hold a lone surrogate'],
      [{ installationId: INSTALLATION, name: '\udc4d MG4' }, 'name must not hold a lone surrogate'],
      ...['\u061C', '\u200E', '\u200F', '\u202A', '\u2066', '\u2069'].map(
        (mark): [unknown, string] => [{ installationId: INSTALLATION, name: `MG4${mark}x` }, 'name must not hold control or text-direction characters'],
      ),
      ['[]', 'body must be a JSON object'],
      ['{', 'body is not valid JSON'],
    ];
    for (const [body, error] of cases) {
      expect(await answer(await service.request('POST', '/v1/pair/start', { body, token: null }))).toEqual({ status: 400, body: { error } });
    }
    expect((await service.request('POST', '/v1/pair/start', { body: { installationId: INSTALLATION, name: 'é'.repeat(64) }, token: null })).status).toBe(200);
    // Emoji sequences (joined by U+200D) and right-to-left scripts are names like any other.
    for (const name of ['👨‍👩‍👧 family car', 'سيارة العائلة']) {
      expect((await service.request('POST', '/v1/pair/start', { body: { installationId: INSTALLATION, name }, token: null })).status).toBe(200);
    }
    expect((await service.request('POST', '/v1/pair/start', { body: { installationId: INSTALLATION, name: null }, token: null })).status).toBe(200);
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
    for (const id of ids) await startPairing(service, id);
    expect(await answer(await service.request('POST', '/v1/pair/start', { body: { installationId: INSTALLATION }, token: null }))).toEqual({
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
    expect(deviceRows()).toEqual([]);

    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
    const [row] = deviceRows();
    expect(row).toMatchObject({ installation_id: INSTALLATION, name: 'MG4 <3', created_at: clock, revoked_at: null, awaiting_collection: 1 });
    clock += 1000;

    const collecting = await service.request('POST', '/v1/pair/poll', { body: { pairingId: started.pairingId }, token: null });
    expect(collecting.headers.get('cache-control')).toBe('no-store'); // it carries the token
    const collected = await answer(collecting);
    const token = (collected.body as { token: string }).token;
    expect(collected).toEqual({
      status: 200,
      body: { status: 'approved', token, deviceId: row!.id, installationId: INSTALLATION },
    });
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const another = await service.request('POST', '/v1/pair/start', { body: { installationId: OTHER_INSTALLATION }, token: null });
    expect([another.status, another.headers.get('cache-control')]).toEqual([200, 'no-store']); // it carries the pairing id
    expect(row!.token_hash).toBe(tokenHash(token));
    expect(deviceRows()).toMatchObject([{ awaiting_collection: 0 }]);
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
    // The owner reloading the page after the collection learns that the car may well be paired.
    const reloaded = await service.request('GET', `/pair?code=${started.userCode}`, { token: null });
    expect(await expectPage(reloaded, 404)).toContain('or the car has already collected its token (then it is paired)');
  });

  test('a device approved but never collected is revoked at the next start, its request being lost; a collected one stays', async () => {
    const dir = tempDir();
    await start({}, dir);
    const collected = await pairDevice(service, INSTALLATION);
    const uncollected = await startPairing(service, OTHER_INSTALLATION);
    await decide(service, uncollected.userCode, 'approve');
    const [, lost] = deviceRows();
    await service.close(); // a crash loses the open requests alike: only the database tells

    clock += MINUTE;
    await start({}, dir);
    expect(deviceRows()).toMatchObject([
      { id: collected.deviceId, revoked_at: null },
      { id: lost!.id, revoked_at: clock, awaiting_collection: 1 },
    ]);
    expect(service.devices.size).toBe(1);
    expect(service.log.lines).toContainEqual(expect.stringContaining(`info pairing.uncollected_revoked device=${lost!.id} reason=restart`));
    service.devices.reloadIfChanged(); // the watcher's check: the registry already holds the revocation's version
    expect(service.log.lines.filter((line) => line.includes('devices.reloaded'))).toEqual([]);
    const ownHistory = await service.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token: collected.token });
    expect(ownHistory.status).toBe(200); // the collected token still works
    expect(await poll(service, uncollected.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
  });

  test('a device never collected is revoked at the next start also when that start has pairing off', async () => {
    const dir = tempDir();
    await start({}, dir);
    await decide(service, (await startPairing(service, INSTALLATION)).userCode, 'approve');
    const [lost] = deviceRows();
    await service.close();
    await start({ approvalPassword: null }, dir);
    expect(deviceRows()).toMatchObject([{ id: lost!.id, revoked_at: clock }]);
    expect(service.log.lines).toContainEqual(expect.stringContaining(`info pairing.uncollected_revoked device=${lost!.id} reason=restart`));
  });

  test('a start-up revocation that cannot be written is logged for each device, and the start goes on', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    const [device] = deviceRows();
    const failing = { write: () => Promise.reject(new Error('disk full')) } as unknown as Committer;
    const log = createMemoryLogger();
    const registry = new DeviceRegistry(service.storage.db, failing, log, now);
    registry.load();
    await revokeLeftovers(registry, log); // resolves: the start goes on
    expect(log.lines).toEqual([expect.stringContaining(`error pairing.revoke_failed device=${device!.id} reason="disk full"`)]);
    expect(registry.size).toBe(1);
  });

  test('a start-up revocation whose devices cannot be read again after it is logged as a failed read, not a failed revocation', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    const [device] = deviceRows();
    const log = createMemoryLogger();
    const registry = new DeviceRegistry(service.storage.db, service.storage.committer, log, now);
    registry.load();
    const db = new Database(service.config.databasePath);
    db.run('DELETE FROM devices_version'); // the read after the revocation fails; the revocation does not
    db.close();
    await revokeLeftovers(registry, log);
    expect(log.lines).toEqual([
      expect.stringMatching(/ error devices\.reload_failed reason="paired devices cannot be loaded: devices_version has lost its row/),
      expect.stringContaining(`info pairing.uncollected_revoked device=${device!.id} reason=restart`),
    ]);
    expect(deviceRows()).toMatchObject([{ revoked_at: clock }]);
    expect(registry.size).toBe(0); // its token is refused all the same
  });

  test('denied, and no device is created', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const page = await decide(service, started.userCode, 'deny');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Car denied');
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'denied' } });
    expect(deviceRows()).toEqual([]);
  });

  test('unknown ids are expired; a missing or empty id is 400', async () => {
    await start();
    expect(await poll(service, 'x'.repeat(43))).toEqual({ status: 200, body: { status: 'expired' } });
    const refusal = async (body: object) => answer(await service.request('POST', '/v1/pair/poll', { body, token: null }));
    expect(await refusal({})).toEqual({ status: 400, body: { error: 'pairingId is required' } });
    expect(await refusal({ pairingId: '' })).toEqual({ status: 400, body: { error: 'pairingId must be a non-empty string' } });
    expect(await refusal({ pairingId: 7 })).toEqual({ status: 400, body: { error: 'pairingId must be a non-empty string' } });
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
    expect(deviceRows()).toMatchObject([{ revoked_at: clock }]);
    expect(service.devices.size).toBe(0);
  });

  test('a device the owner revoked after approving is not handed out: the car is told denied', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    const [device] = deviceRows();
    expect((await service.request('POST', `/v1/devices/${device!.id}/revoke`, { token: PASSWORD })).status).toBe(200);
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'denied' } });
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
    expect(deviceRows()).toMatchObject([{ revoked_at: clock, awaiting_collection: 1 }]);
    expect(service.log.lines.filter((line) => /pairing\.(collected|revoked_before_collection)/.test(line))).toEqual([
      expect.stringContaining(`info pairing.revoked_before_collection installation=${INSTALLATION} device=${device!.id}`),
    ]);
  });

  test('the sweep timer revokes an uncollected token even when the car never polls again, at every expiry', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    await decide(service, started.userCode, 'approve');
    clock += 10 * MINUTE;
    const firstExpiry = clock;
    service.pairing!.book.watch(10);
    await waitUntil(() => deviceRows()[0]?.revoked_at !== null); // committed, not only out of memory
    // A second request expiring after that sweep: the timer sweeps again, not once.
    const later = await startPairing(service, OTHER_INSTALLATION);
    await decide(service, later.userCode, 'approve');
    clock += 10 * MINUTE;
    await waitUntil(() => deviceRows()[1]?.revoked_at !== null, 2000);
    service.pairing!.book.stop();
    expect(service.devices.size).toBe(0);
    expect(deviceRows()).toMatchObject([{ revoked_at: firstExpiry }, { revoked_at: clock }]);
  });

  test("a listening server's own sweep revokes an approved token the car never collects once its request expires", async () => {
    // serve() takes no clock: Bun's fake timers stand in for both (Date.now, performance.now, and the timers made while they are on).
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
    expect(deviceRows()).toMatchObject([{ revoked_at: clock }]);
    expect(service.devices.size).toBe(0);
  });
});

describe("the car's pairing answers", () => {
  test('every car route answers with no-store, whatever it tells: they hold the pairing id or the token', async () => {
    await start();
    const carRoutes = service.app.routes.filter(({ path }) => path.startsWith('/v1/pair/')).map(({ method, path }) => `${method} ${path}`);
    expect(carRoutes.sort()).toEqual(['POST /v1/pair/poll', 'POST /v1/pair/start']); // a new one belongs below too
    /** The answer's status, its cache control and, for a poll, what it tells the car. */
    const answerOf = async (path: string, body: object) => {
      const response = await service.request('POST', path, { body, token: null });
      return [response.status, response.headers.get('cache-control'), ((await response.json()) as { status?: string }).status];
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

const styleHash = (html: string) =>
  createHash('sha256').update(/<style>([\s\S]*?)<\/style>/.exec(html)![1]!).digest('base64');

/** Checks an answer is a script-free page with the strict headers; answers its HTML. */
async function expectPage(response: Response, status: number) {
  expect(response.status).toBe(status);
  const html = await response.text();
  expect(html.startsWith('<!doctype html>')).toBe(true);
  expect(html).not.toMatch(/<script|\son\w+=/i);
  expect(html).toContain('<meta name="robots" content="noindex"'); // a page holding a code is kept out of search engines
  expect(Object.fromEntries(
    ['content-type', 'content-security-policy', 'x-frame-options', 'x-content-type-options', 'referrer-policy', 'cache-control']
      .map((name) => [name, response.headers.get(name)]),
  )).toEqual({
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src 'sha256-${styleHash(html)}'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  });
  return html;
}

describe('the /pair page', () => {
  test('every answer is a page with the strict headers', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION, 'MG4');
    const get = (path: string) => service.request('GET', path, { token: null });

    expect(await expectPage(await get('/pair'), 200)).toContain('name="code"');
    const approval = await expectPage(await get(`/pair?code=${started.userCode}`), 200);
    expect(approval).toContain(INSTALLATION);
    expect(approval).toContain('<meta name="viewport"');
    expect(await expectPage(await get('/pair?code=BBBB-BBBB'), 404)).toContain('This code is not open: it has expired, or the car has already collected its token');
    expect(await expectPage(await get('/pair?code=<b>'), 404)).toContain('That is not a pairing code. Type the 8 letters the car shows');
    await expectPage(await submitForm(service, { code: started.userCode, password: PASSWORD, decision: 'maybe' }), 400);
    await expectPage(await service.request('POST', '/pair', { body: 'x'.repeat(5000), token: null, headers: form }), 400);
    await expectPage(await service.request('POST', '/pair', { body: new Uint8Array([0xff, 0xfe]), token: null, headers: form }), 404);
    // The right code and password sent as another kind of form are refused as such, and decide nothing.
    const fields = { code: started.userCode, password: PASSWORD, decision: 'approve' };
    const multipart = new FormData();
    for (const [name, value] of Object.entries(fields)) multipart.append(name, value);
    const asJson = { 'content-type': 'application/json' };
    for (const refused of [
      await service.app.handle(new Request('http://localhost/pair', { method: 'POST', body: multipart })),
      await service.request('POST', '/pair', { body: JSON.stringify(fields), token: null, headers: asJson }),
    ]) {
      expect(await expectPage(refused, 400)).toContain(
        'The form could not be read (form must be sent as application/x-www-form-urlencoded). Go back and try again.',
      );
    }
    // The type is checked before the body is read: a JSON body over the cap is refused as the wrong kind, unread.
    const largeJson = await service.request('POST', '/pair', { body: 'x'.repeat(5000), token: null, headers: asJson });
    expect(await expectPage(largeJson, 400)).toContain('form must be sent as application/x-www-form-urlencoded');
    expect((await poll(service, started.pairingId)).body).toMatchObject({ status: 'pending' });
    await expectPage(await decide(service, 'BBBB-BBBB', 'approve'), 404);
    await expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    expect(service.log.lines).toContainEqual(expect.stringContaining(`warn pairing.wrong_password installation=${INSTALLATION}`));
    const put = await service.request('PUT', '/pair', { token: null });
    await expectPage(put, 405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(await expectPage(await decide(service, started.userCode, 'approve'), 200)).toContain('Car approved');
    expect(await expectPage(await get(`/pair?code=${started.userCode}`), 200)).toContain('already been approved');
    for (let i = 0; i < 5; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    const locked = await decide(service, started.userCode, 'approve');
    await expectPage(locked, 429);
    expect(locked.headers.get('retry-after')).toBe('60');
  });

  test('a failure is a page saying only that something went wrong; the log has its detail', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    service.pairing!.book.find = () => {
      throw new Error('boom');
    };
    const failed = await expectPage(await service.request('GET', `/pair?code=${started.userCode}`, { token: null }), 500);
    expect(failed).toContain('Something went wrong');
    expect(failed).not.toContain('boom');
    expect(service.log.lines).toContainEqual(expect.stringContaining('error pairing.page_failed error="Error: boom"'));
  });

  test('the code is accepted in any case, with or without the dash', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const loose = started.userCode.replace('-', '').toLowerCase();
    expect((await service.request('GET', `/pair?code=${loose}`, { token: null })).status).toBe(200);
    expect((await decide(service, loose, 'approve')).status).toBe(200);
    expect(await poll(service, started.pairingId)).toMatchObject({ body: { status: 'approved' } });
  });

  test('a code of other than 8 letters is told to be no code, not one that expired', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const notACode = 'That is not a pairing code. Type the 8 letters the car shows, such as BCDF-GHJK.';
    for (const typed of [`${started.userCode}B`, started.userCode.slice(0, -1)]) {
      expect(await expectPage(await service.request('GET', `/pair?code=${typed}`, { token: null }), 404)).toContain(notACode);
      expect(await expectPage(await decide(service, typed, 'approve'), 404)).toContain(notACode);
    }
    expect((await poll(service, started.pairingId)).body).toEqual({ status: 'pending' });
  });

  test('a form is read as one whatever the case and parameters of its type, or without a type', async () => {
    await start();
    const fields = (userCode: string) => new URLSearchParams({ code: userCode, password: PASSWORD, decision: 'approve' }).toString();
    const typed = await startPairing(service, INSTALLATION);
    const headers = { 'content-type': 'Application/X-WWW-Form-Urlencoded ; charset=UTF-8' };
    expect(await expectPage(await service.request('POST', '/pair', { body: fields(typed.userCode), token: null, headers }), 200)).toContain('Car approved');
    const untyped = await startPairing(service, OTHER_INSTALLATION);
    const body = new TextEncoder().encode(fields(untyped.userCode)); // bytes: fetch gives them no type
    expect(await expectPage(await service.app.handle(new Request('http://localhost/pair', { method: 'POST', body })), 200)).toContain('Car approved');
    for (const { pairingId } of [typed, untyped]) expect(await poll(service, pairingId)).toMatchObject({ body: { status: 'approved' } });
  });

  test('the car name is shown as text, never as markup', async () => {
    await start();
    const name = '<script>alert(1)</script>"&';
    const started = await startPairing(service, INSTALLATION, name);
    const html = await (await service.request('GET', `/pair?code=${started.userCode}`, { token: null })).text();
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;');
    expect(html).not.toContain('<script');
    expect(await (await decide(service, started.userCode, 'approve')).text()).not.toContain('<script');
  });

  test('a code is refused from the exact millisecond its request expires, as the poll refuses it, before any poll or sweep', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const look = () => service.request('GET', `/pair?code=${started.userCode}`, { token: null });
    clock += 10 * MINUTE - 1;
    expect(await expectPage(await look(), 200)).toContain('<h1>Approve this car?</h1>');
    clock += 1;
    expect(await expectPage(await look(), 404)).toContain('This code is not open: it has expired');
    expect(await expectPage(await decide(service, started.userCode, 'approve'), 404)).toContain('This code is not open: it has expired');
    expect(deviceRows()).toEqual([]);
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
  });

  test("the car's page tells the minutes left, rounded up, one of them singular", async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const expires = async () => {
      const html = await expectPage(await service.request('GET', `/pair?code=${started.userCode}`, { token: null }), 200);
      return /<dt>Expires<\/dt>\s*<dd>([^<]*)<\/dd>/.exec(html)?.[1];
    };
    expect(await expires()).toBe('in about 10 minutes');
    clock += MINUTE / 2;
    expect(await expires()).toBe('in about 10 minutes');
    clock += 8 * MINUTE;
    expect(await expires()).toBe('in about 2 minutes');
    clock += MINUTE / 2 + 1;
    expect(await expires()).toBe('in about 1 minute');
  });

  test('a code that is not open comes back in the field as typed: trimmed, cut to the field, escaped', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    /** The code field's value attribute as sent, or null when it has none. */
    const fieldValue = (html: string) => {
      const field = /<input id="code"[^>]*>/.exec(html)![0];
      return /\svalue="([^"]*)"/.exec(field)?.[1] ?? null;
    };
    const typedBack = async (typed: string) => fieldValue(await expectPage(await service.request('GET', `/pair?code=${encodeURIComponent(typed)}`, { token: null }), 404));
    expect(fieldValue(await expectPage(await service.request('GET', '/pair', { token: null }), 200))).toBeNull();
    expect(await typedBack('  bcdf-ghjx ')).toBe('bcdf-ghjx'); // a code no request has
    expect(await typedBack('BCDF-GHJK-LMNP')).toBe('BCDF-GHJK-LM'); // no code: cut to the field's 12
    expect(await typedBack('"><b>x</b>&amp;')).toBe('&quot;&gt;&lt;b&gt;x&lt;/b&gt;&amp;a');
    expect(await typedBack('BCDF-GHJK-X\u{1F697}')).toBe('BCDF-GHJK-X'); // the car emoji's second half would pass 12
    // Sent with the form: an unknown code, and a code that expired.
    const posted = await expectPage(await decide(service, 'bcdf ghjx', 'approve'), 404);
    expect(fieldValue(posted)).toBe('bcdf ghjx');
    clock += 10 * MINUTE;
    expect(fieldValue(await expectPage(await decide(service, started.userCode, 'approve'), 404))).toBe(started.userCode);
  });
});

/** The page's notice, or null when it has none. */
const noticeOf = (html: string) => /<p class="notice" role="alert">([^<]*)<\/p>/.exec(html)?.[1] ?? null;

describe('approval lockout', () => {
  test('five wrong passwords lock every password check for 60 s, the right one included', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 4; i += 1) expect((await decide(service, started.userCode, 'approve', WRONG_PASSWORD)).status).toBe(403);
    // The fifth says so, with a link back to the car's page (a GET: going back would send the form again).
    const fifth = await expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    expect(fifth).toContain('<h1>Wrong password</h1>');
    expect(fifth).toContain(`<a href="?code=${started.userCode}">Back to this car</a>`);
    const locked = await decide(service, started.userCode, 'approve');
    expect(locked.headers.get('retry-after')).toBe('60');
    // Its one link leads on to the code form, relative to the page's address: not the form sent again.
    const lockedPage = await expectPage(locked, 429);
    expect(lockedPage).toContain('<h1>Locked for now</h1>');
    expect(lockedPage.match(/<a\s[^>]*>[^<]*<\/a>/g)).toEqual(['<a href="?">Enter a code</a>']);
    expect(await expectPage(await service.request('GET', '/pair?', { token: null }), 200)).toContain('<form method="get">');
    // Sent from the car's page, whose address names the code, it leads back there, without reading the form.
    const fromCarPage = await service.request('POST', `/pair?code=${started.userCode.toLowerCase()}`, {
      body: 'code=BBBB-BBBB&password=x&decision=approve',
      token: null,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect((await expectPage(fromCarPage, 429)).match(/<a\s[^>]*>[^<]*<\/a>/g)).toEqual([`<a href="?code=${started.userCode}">Back to this car</a>`]);
    // The car's page says it is locked before anyone types the password.
    const carPage = await expectPage(await service.request('GET', `/pair?code=${started.userCode}`, { token: null }), 200);
    expect(carPage).toContain('<p class="notice" role="alert">Too many wrong passwords (5 in a row). Try again in 60 seconds.</p>');
    // The lock comes first: an unknown code is not even looked at.
    expect((await decide(service, 'BBBB-BBBB', 'approve')).status).toBe(429);
    const devices = await service.request('GET', '/v1/devices', { token: PASSWORD });
    expect(devices.headers.get('retry-after')).toBe('60');
    expect(await answer(devices)).toEqual({ status: 429, body: { error: 'too many wrong passwords, retry later' } });

    clock += 30_000;
    expect((await decide(service, started.userCode, 'approve')).headers.get('retry-after')).toBe('30');
    clock += 30_000;
    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
  });

  test('the page warns of the lockout before any password, and a wrong one tells the tries left, counted server-wide', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const warning = '<p id="lockout" class="hint">5 wrong passwords in a row lock the approval password for 60 seconds.</p>';
    const wrong = async () => expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    const approval = await expectPage(await service.request('GET', `/pair?code=${started.userCode}`, { token: null }), 200);
    expect([approval.includes(warning), noticeOf(approval)]).toEqual([true, null]);
    expect(approval).toContain('aria-describedby="lockout"');

    const first = await wrong();
    expect([first.includes(warning), noticeOf(first)]).toEqual([true, 'Wrong password. 4 tries left before the approval password locks for 60 seconds.']);
    for (let i = 0; i < 2; i += 1) expect((await service.request('GET', '/v1/devices', { token: WRONG_PASSWORD })).status).toBe(401);
    expect(noticeOf(await wrong())).toBe('Wrong password. 1 try left before the approval password locks for 60 seconds.'); // the fourth, two of them elsewhere
    // A right password anywhere starts the count again.
    expect((await service.request('GET', '/v1/devices', { token: PASSWORD })).status).toBe(200);
    expect(noticeOf(await wrong())).toBe('Wrong password. 4 tries left before the approval password locks for 60 seconds.');
    expect(noticeOf(await wrong())).toBe('Wrong password. 3 tries left before the approval password locks for 60 seconds.');
  });

  test('forms already arriving when the lock begins are refused too: guessing in parallel gains nothing', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const answers = await Promise.all([
      ...Array.from({ length: 30 }, () => decide(service, started.userCode, 'approve', WRONG_PASSWORD)),
      decide(service, started.userCode, 'approve'),
    ]);
    const statuses = answers.map((response) => response.status);
    expect(statuses.filter((status) => status === 403)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(26);
    expect(deviceRows()).toEqual([]);
    expect((await poll(service, started.pairingId)).body).toEqual({ status: 'pending' });
  });

  test('a form still arriving when the lock begins is refused as locked, before its code is looked at', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    let finish = () => {};
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('code=BBBB-BBBB&password=x'));
        finish = () => controller.close();
      },
    });
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    const arriving = service.app.handle(new Request('http://localhost/pair', { method: 'POST', body, headers, duplex: 'half' } as RequestInit));
    for (let i = 0; i < 5; i += 1) expect((await decide(service, started.userCode, 'approve', WRONG_PASSWORD)).status).toBe(403);
    finish();
    expect((await arriving).status).toBe(429); // not 404 for the unknown code
  });

  test('Deny needs the right password too', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    expect((await decide(service, started.userCode, 'deny', WRONG_PASSWORD)).status).toBe(403);
    expect((await poll(service, started.pairingId)).body).toEqual({ status: 'pending' });
  });

  test("the lockout's wait is told in seconds, one of them singular", () => {
    expect(lockedText(60)).toBe('Too many wrong passwords (5 in a row). Try again in 60 seconds.');
    expect(lockedText(1)).toBe('Too many wrong passwords (5 in a row). Try again in 1 second.');
  });

  test('the device endpoints count towards the lockout; a request without a password (any web page can make one) does not', async () => {
    await start();
    const devices = (token: string | null, headers?: Record<string, string>) => service.request('GET', '/v1/devices', { token, headers });
    for (let i = 0; i < 4; i += 1) {
      expect(await answer(await devices(WRONG_PASSWORD))).toEqual({ status: 401, body: { error: 'unauthorized' } });
    }
    for (let i = 0; i < 10; i += 1) expect((await devices(null)).status).toBe(401);
    expect((await devices(null, { authorization: 'Basic b3duZXI6cGFzc3dvcmQ=' })).status).toBe(401); // credentials a URL gives a browser
    // The scheme without a token: a header's trailing space is trimmed on the way in (it arrives as `Bearer`),
    // so only a direct caller can hand bearerToken an empty token; that presents no password either.
    expect((await devices(null, { authorization: 'Bearer ' })).status).toBe(401);
    expect(bearerToken('Bearer ')).toBeNull();
    expect((await devices(WRONG_PASSWORD)).status).toBe(401); // the fifth wrong password
    expect((await devices(PASSWORD)).status).toBe(429);
    expect((await devices(null)).status).toBe(429);
  });

  test('a right password resets the count; unknown codes and forms without a password are not counted', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 4; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    expect((await service.request('GET', '/v1/devices', { token: PASSWORD })).status).toBe(200);
    for (let i = 0; i < 4; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    for (let i = 0; i < 10; i += 1) expect((await decide(service, 'BBBB-BBBB', 'approve', WRONG_PASSWORD)).status).toBe(404);
    // A form any web page could post: it guesses nothing.
    for (let i = 0; i < 3; i += 1) expect((await submitForm(service, { code: started.userCode, decision: 'approve' })).status).toBe(403);
    expect((await decide(service, started.userCode, 'deny')).status).toBe(200);
  });

  test('a lockout starts the count again: once it ends, one wrong password leaves 4 tries, and the right one passes', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 5; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    expect((await decide(service, started.userCode, 'approve')).status).toBe(429);
    clock += 60_000;
    const wrong = await expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    expect(noticeOf(wrong)).toBe('Wrong password. 4 tries left before the approval password locks for 60 seconds.');
    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
  });

  test('forms without a password use up no tries: a wrong password after five of them leaves 4', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 5; i += 1) expect((await submitForm(service, { code: started.userCode, decision: 'approve' })).status).toBe(403);
    const wrong = await expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    expect(noticeOf(wrong)).toBe('Wrong password. 4 tries left before the approval password locks for 60 seconds.');
  });

  test("the lockout's Retry-After rounds up to whole seconds: half a second before its end it says 1, and it ends at 60 s, not before", async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 5; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    const lockedAt = clock;
    const right = async () => {
      const response = await decide(service, started.userCode, 'approve');
      return [response.status, response.headers.get('retry-after')];
    };
    clock = lockedAt + 59_500;
    expect(await right()).toEqual([429, '1']);
    clock = lockedAt + 59_999;
    expect(await right()).toEqual([429, '1']);
    clock = lockedAt + 60_000;
    expect(await right()).toEqual([200, null]);
  });
});

describe('a paired token', () => {
  test('authenticates for its own installation only, and never sits in the database or the log', async () => {
    await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    expect(service.auth.authenticate(`Bearer ${token}`)).toEqual({ kind: 'device', deviceId, installationId: INSTALLATION });
    const caller = service.auth.authenticate(`Bearer ${token}`);
    const { assertMayUse } = await import('../src/http/auth.ts');
    expect(() => assertMayUse(caller, INSTALLATION.toUpperCase())).not.toThrow();
    expect(() => assertMayUse(caller, OTHER_INSTALLATION)).toThrow(
      'token belongs to another installation; pair this car again after its installation id changed',
    );
    await service.storage.committer.idle();
    const dump = JSON.stringify(service.storage.db.query('SELECT * FROM devices').all());
    expect(dump).not.toContain(token);
    const files = ['ev-ingest.db', 'ev-ingest.db-wal'].map((file) => Bun.file(`${service.dir}/${file}`));
    for (const file of files) if (await file.exists()) expect(Buffer.from(await file.arrayBuffer()).includes(token)).toBe(false);
    const lines = service.log.lines.join('\n');
    expect(lines).not.toContain(token);
    expect(lines).not.toContain(PASSWORD);
    expect(lines).toContain('pairing.approved');
  });
});

describe('a revocation still being saved', () => {
  /** A book whose revocations never finish saving, holding one approved request not collected yet. */
  async function bookWithStuckRevocations() {
    const revoking: string[] = [];
    const registry = {
      pair: async (installationId: string) => ({ id: 'device-a', installationId, token: 't'.repeat(43) }),
      revoke: (id: string) => new Promise<null>(() => void revoking.push(id)), // never settles
      markCollected: async () => true,
    } satisfies Partial<DeviceRegistry> as unknown as DeviceRegistry;
    const book = new PairingBook(registry, createMemoryLogger(), now);
    const approved = await book.start(INSTALLATION, 'MG4');
    expect(await book.decide(approved, 'approve')).toBe('approved');
    return { book, approved, revoking };
  }

  test("a car's poll does not wait for another car's expired request to be revoked", async () => {
    const { book, approved, revoking } = await bookWithStuckRevocations();
    clock += 5 * MINUTE;
    const other = await book.start(OTHER_INSTALLATION, 'ID.3');
    clock += 5 * MINUTE; // the first request has expired uncollected; the other has not
    const answer = await Promise.race([book.poll(other.pairingId), Bun.sleep(200).then(() => 'waited')]);
    expect(answer).toEqual({ status: 'pending' });
    expect(revoking).toEqual([]);
    // Its own poll closes it, revoking its device.
    void book.poll(approved.pairingId);
    expect(revoking).toEqual(['device-a']);
  });

  test("a start does not wait for another car's expired request to be revoked, and the cap counts only live requests", async () => {
    const { book, revoking } = await bookWithStuckRevocations();
    clock += 11 * MINUTE;
    const started = await Promise.race([book.start(OTHER_INSTALLATION, 'ID.3'), Bun.sleep(200).then(() => 'waited' as const)]);
    expect(started).toMatchObject({ installationId: OTHER_INSTALLATION, name: 'ID.3' });
    expect(revoking).toEqual(['device-a']); // under way, apart from the start
    expect(book.size).toBe(1);
  });
});

describe('a collection still being saved', () => {
  /** A book with one approved request whose registry saves a collection only when the test says. */
  async function bookCollecting() {
    const saves: { resolve: () => void; reject: (error: Error) => void }[] = [];
    const revoked: string[] = [];
    const registry = {
      pair: async (installationId: string) => ({ id: 'device-c', installationId, token: 't'.repeat(43) }),
      revoke: async (id: string) => (revoked.push(id), null),
      markCollected: () => new Promise<boolean>((resolve, reject) => void saves.push({ resolve: () => resolve(true), reject })),
    } satisfies Partial<DeviceRegistry> as unknown as DeviceRegistry;
    const log = createMemoryLogger();
    const book = new PairingBook(registry, log, now);
    const request = await book.start(INSTALLATION, 'MG4');
    expect(await book.decide(request, 'approve')).toBe('approved');
    return { book, request, saves, revoked, log };
  }
  const approved = { status: 'approved' as const, token: 't'.repeat(43), deviceId: 'device-c', installationId: INSTALLATION };

  test('the token leaves only once the collection is saved; a poll meanwhile is told pending', async () => {
    const { book, request, saves } = await bookCollecting();
    const collecting = book.poll(request.pairingId);
    const meanwhile = book.poll(request.pairingId); // must not start a second save, which would never settle
    expect(saves).toHaveLength(1);
    expect(await meanwhile).toEqual({ status: 'pending' });
    saves[0]!.resolve();
    expect(await collecting).toEqual(approved);
    expect(await book.poll(request.pairingId)).toEqual({ status: 'expired' });
  });

  test('a save that fails keeps the token: the poll fails and the next one collects it', async () => {
    const { book, request, saves, revoked } = await bookCollecting();
    const failing = book.poll(request.pairingId);
    saves[0]!.reject(new Error('disk full'));
    await expect(failing).rejects.toThrow('disk full');
    const again = book.poll(request.pairingId);
    saves[1]!.resolve();
    expect(await again).toEqual(approved);
    expect(revoked).toEqual([]);
  });

  /** How a request is closed while its collection is being saved. */
  const closings: [string, (book: PairingBook) => Promise<unknown>][] = [
    ['replaced', (book) => book.start(INSTALLATION, 'MG4 again')],
    ['expired', (book) => ((clock += 10 * MINUTE), book.sweep())],
  ];

  test.each(closings)('a request %s during the save is not revoked: the car gets its token; had the save failed, the device goes', async (reason, close) => {
    for (const outcome of ['saved', 'failed'] as const) {
      const { book, request, saves, revoked, log } = await bookCollecting();
      const collecting = book.poll(request.pairingId);
      await close(book);
      expect(revoked).toEqual([]);
      if (outcome === 'saved') {
        saves[0]!.resolve();
        expect(await collecting).toEqual(approved);
        expect(revoked).toEqual([]);
      } else {
        saves[0]!.reject(new Error('disk full'));
        await expect(collecting).rejects.toThrow('disk full');
        expect(revoked).toEqual(['device-c']);
        expect(log.lines).toContainEqual(expect.stringContaining(`info pairing.uncollected_revoked device=device-c reason=${reason}`));
      }
    }
  });
});

describe('an approval still being saved', () => {
  /** A registry whose pair() waits for the test: the approval's commit is under way until `commit()`. */
  function slowRegistry() {
    let commit = () => {};
    const revoked: string[] = [];
    const registry = {
      pair: (installationId: string, name: string | null) =>
        new Promise<PairedDevice>((resolve) => (commit = () => resolve({ id: 'device-1', installationId, token: 't'.repeat(43) }))),
      revoke: async (id: string) => (revoked.push(id), null),
    } satisfies Partial<DeviceRegistry>;
    return { registry: registry as unknown as DeviceRegistry, commit: () => commit(), revoked };
  }

  test('a second decision meanwhile is told it is being approved; a request replaced meanwhile takes its device along', async () => {
    const { registry, commit, revoked } = slowRegistry();
    const book = new PairingBook(registry, createMemoryLogger(), now);
    const request = await book.start(INSTALLATION, 'MG4');
    const deciding = book.decide(request, 'approve');
    expect(await within(book.decide(request, 'approve'), 'the second decision')).toBe('approving');
    const again = await book.start(INSTALLATION, 'MG4 again'); // the car started over: the first request is gone
    commit();
    expect(await deciding).toBe('expired');
    expect(revoked).toEqual(['device-1']);
    expect(await book.poll(request.pairingId)).toEqual({ status: 'expired' });
    // Forgetting the first request left the installation's open request alone: a third start still replaces it.
    await book.start(INSTALLATION, 'MG4 third');
    expect([await book.poll(again.pairingId), book.size]).toEqual([{ status: 'expired' }, 1]);
  });

  test('an approval saved only after the request expired is expired: its device is revoked, the car never gets it', async () => {
    const { registry, commit, revoked } = slowRegistry();
    const book = new PairingBook(registry, createMemoryLogger(), now);
    const request = await book.start(INSTALLATION, 'MG4');
    const deciding = book.decide(request, 'approve');
    clock += 10 * MINUTE; // the commit outlasts the request; no sweep has run yet
    commit();
    expect(await deciding).toBe('expired');
    expect(revoked).toEqual(['device-1']);
    expect(book.size).toBe(0);
    expect(await book.poll(request.pairingId)).toEqual({ status: 'expired' });
  });

  test('a request that expired while its approval was saved leaves its code to a later request that drew it again', async () => {
    const { registry, commit, revoked } = slowRegistry();
    const drawn = ['BBBBBBBB', 'BBBBBBBB', 'CCCCCCCC']; // the second request draws the first one's code (C if it were still taken)
    const book = new PairingBook(registry, createMemoryLogger(), now, () => drawn.shift()!);
    const routes = pairingRoutes({ book, lock: new ApprovalLock(PASSWORD, now), config: testConfig(tempDir()), bodyBounds: pairingBodyBounds, log: createMemoryLogger() });
    const first = await book.start(INSTALLATION, 'MG4');
    const deciding = book.decide(first, 'approve');
    clock += 10 * MINUTE;
    const second = await book.start(OTHER_INSTALLATION, 'ID.3'); // its sweep forgets the expired first request
    expect(second.userCode).toBe(first.userCode);
    commit();
    expect(await deciding).toBe('expired'); // forgets the first request again, but the code is no longer its own
    expect(revoked).toEqual(['device-1']);
    expect(book.find('BBBBBBBB')).toBe(second);
    const page = await routes.handle(new Request('http://localhost/pair?code=BBBB-BBBB'));
    expect(await expectPage(page, 200)).toContain(OTHER_INSTALLATION);
  });

  test('a /pair approval whose request expires while it is saved answers 404 with the code back in its field as typed', async () => {
    const { registry, commit, revoked } = slowRegistry();
    const book = new PairingBook(registry, createMemoryLogger(), now);
    const config = testConfig(tempDir(), { approvalPassword: PASSWORD });
    const routes = pairingRoutes({ book, lock: new ApprovalLock(PASSWORD, now), config, bodyBounds: pairingBodyBounds, log: createMemoryLogger() });
    const request = await book.start(INSTALLATION, 'MG4');
    const typed = displayUserCode(request.userCode).toLowerCase().replace('-', ' ');
    const form = new URLSearchParams({ code: ` ${typed} `, password: PASSWORD, decision: 'approve' });
    const posting = routes.handle(new Request('http://localhost/pair', { method: 'POST', body: form }));
    await Bun.sleep(0); // the approval is being saved
    clock += 10 * MINUTE;
    commit();
    const page = await expectPage(await posting, 404);
    expect(/<input id="code"[^>]*\svalue="([^"]*)"/.exec(page)?.[1]).toBe(typed);
    expect(revoked).toEqual(['device-1']);
  });

  test('an approval whose save fails leaves the request pending: the page offers Approve and Deny again, and a second approval pairs the car', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const { pair } = service.devices;
    service.devices.pair = async () => {
      service.devices.pair = pair; // once
      throw new Error('disk full');
    };
    expect(await expectPage(await decide(service, started.userCode, 'approve'), 500)).toContain('Something went wrong');
    expect(service.log.lines).toContainEqual(expect.stringContaining('error pairing.page_failed error="Error: disk full"'));
    expect(deviceRows()).toEqual([]);
    const again = await expectPage(await service.request('GET', `/pair?code=${started.userCode}`, { token: null }), 200);
    expect(again).toContain('<h1>Approve this car?</h1>');
    expect(again).toContain('<button type="submit" name="decision" value="approve">Approve</button>');
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'pending' } });
    expect(await expectPage(await decide(service, started.userCode, 'approve'), 200)).toContain('<h1>Car approved</h1>');
    expect((await poll(service, started.pairingId)).body).toMatchObject({ status: 'approved', installationId: INSTALLATION });
  });

  test('the /pair page shows "Being approved" to a look and to a second decision meanwhile, then the outcome', async () => {
    const { registry, commit } = slowRegistry();
    const book = new PairingBook(registry, createMemoryLogger(), now);
    const config = testConfig(tempDir(), { approvalPassword: PASSWORD });
    const routes = pairingRoutes({ book, lock: new ApprovalLock(PASSWORD, now), config, bodyBounds: pairingBodyBounds, log: createMemoryLogger() });
    const request = await book.start(INSTALLATION, 'MG4');
    const code = displayUserCode(request.userCode);
    const look = () => routes.handle(new Request(`http://localhost/pair?code=${code}`));
    const form = new URLSearchParams({ code, password: PASSWORD, decision: 'approve' });
    const post = () => routes.handle(new Request('http://localhost/pair', { method: 'POST', body: form }));
    const deciding = book.decide(request, 'approve');
    expect(await expectPage(await look(), 200)).toContain('<h1>Being approved</h1>');
    const posted = await expectPage(await within(post(), 'the second decision on the page'), 200);
    expect(posted).toContain('<h1>Being approved</h1>');
    expect(posted).toContain(`<a href="?code=${code}">Show the outcome</a>`); // a GET, not the form sent again
    commit();
    expect(await deciding).toBe('approved');
    expect(await expectPage(await look(), 200)).toContain('<h1>Car approved</h1>');
  });
});

describe('a wall clock that jumps (NTP catching up on a board without a real-time clock)', () => {
  let wall = Date.UTC(2026, 10, 25, 12, 0, 0);
  let monotonic = 0;
  const startWithClocks = async () =>
    (service = await startTestService({ approvalPassword: PASSWORD }, { now: () => wall, elapsed: () => monotonic }));

  test('neither ends a pairing request early nor keeps it open late: its 10 minutes are measured on a monotonic clock', async () => {
    await startWithClocks();
    const started = await startPairing(service, INSTALLATION);
    wall += 24 * 60 * MINUTE;
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'pending' } });
    wall -= 48 * 60 * MINUTE;
    monotonic += 10 * MINUTE;
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
  });

  test('nor stretches a lockout set back with it', async () => {
    await startWithClocks();
    const started = await startPairing(service, INSTALLATION);
    for (let wrong = 1; wrong <= limits.lockoutAttempts; wrong += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    expect((await decide(service, started.userCode, 'approve')).status).toBe(429);
    wall -= 60 * MINUTE;
    monotonic += limits.lockoutMs;
    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
  });
});
