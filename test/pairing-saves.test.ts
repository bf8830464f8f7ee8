/** Pairing against the database: a paired token, writes still being saved, and a wall clock that jumps. */
import { afterEach, describe, expect, test } from 'bun:test';
import { pairingBodyBounds } from '../src/http/body.ts';
import { limits } from '../src/limits.ts';
import type { DeviceRegistry, PairedDevice } from '../src/devices/service.ts';
import { PairingBook } from '../src/pairing/service.ts';
import { displayUserCode } from '../src/pairing/code.ts';
import { ApprovalLock } from '../src/pairing/lockout.ts';
import { pairingRoutes } from '../src/pairing/routes.tsx';
import { addressesOf } from '../src/http/client-address.ts';
import { RepeatCounter } from '../src/http/security-log.ts';
import { createMemoryLogger } from '../src/log.ts';
import {
  INSTALLATION,
  OTHER_INSTALLATION,
  startTestService,
  tempDir,
  testConfig,
  within,
  type TestService,
} from './support.ts';
import {
  decide,
  expectPage,
  pairDevice,
  PASSWORD,
  poll,
  startPairing,
  WRONG_PASSWORD,
  deviceRows,
  MINUTE,
  startPairingService,
} from './pairing-support.ts';

/** The routes' loggers, by the real clock: no test here is refused as cross-site. */
function routeLogs() {
  const log = createMemoryLogger();
  const addressOf = addressesOf(false);
  const crossSiteLog = {
    repeats: new RepeatCounter(performance.now.bind(performance), log, 'pairing.cross_site'),
    log,
    addressOf,
  };
  return { log, crossSiteLog, addressOf, signedIn: () => false };
}

// The file's own clock and service: tests move the one and `start` replaces the other.
let clock = Date.UTC(2026, 10, 25, 12, 0, 0);
const now = () => clock;
let service: TestService;
const start = async (overrides = {}, dir?: string) => (service = await startPairingService(now, overrides, dir));
afterEach(() => service?.close());

describe('a paired token', () => {
  test('authenticates for its own installation only, and never sits in the database or the log', async () => {
    await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    expect(service.auth.authenticate(`Bearer ${token}`)).toEqual({
      kind: 'device',
      deviceId,
      installationId: INSTALLATION,
    });
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
    for (const file of files)
      if (await file.exists()) expect(Buffer.from(await file.arrayBuffer()).includes(token)).toBe(false);
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

  test("a start does not wait for another car's expired request to be revoked; the cap counts live ones", async () => {
    const { book, revoking } = await bookWithStuckRevocations();
    clock += 11 * MINUTE;
    const started = await Promise.race([
      book.start(OTHER_INSTALLATION, 'ID.3'),
      Bun.sleep(200).then(() => 'waited' as const),
    ]);
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
      markCollected: () =>
        new Promise<boolean>((resolve, reject) => void saves.push({ resolve: () => resolve(true), reject })),
    } satisfies Partial<DeviceRegistry> as unknown as DeviceRegistry;
    const log = createMemoryLogger();
    const book = new PairingBook(registry, log, now);
    const request = await book.start(INSTALLATION, 'MG4');
    expect(await book.decide(request, 'approve')).toBe('approved');
    return { book, request, saves, revoked, log };
  }
  const approved = {
    status: 'approved' as const,
    token: 't'.repeat(43),
    deviceId: 'device-c',
    installationId: INSTALLATION,
  };

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

  test.each(closings)(
    'a request %s during the save is not revoked: the car gets its token; had the save failed, the device goes',
    async (reason, close) => {
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
          expect(log.lines).toContainEqual(
            expect.stringContaining(`info pairing.uncollected_revoked device=device-c reason=${reason}`),
          );
        }
      }
    },
  );
});

describe('an approval still being saved', () => {
  /** A registry whose pair() waits for the test: the approval's commit is under way until `commit()`. */
  function slowRegistry() {
    let commit = () => {};
    const revoked: string[] = [];
    const registry = {
      pair: (installationId: string, _name: string | null) =>
        new Promise<PairedDevice>(
          (resolve) => (commit = () => resolve({ id: 'device-1', installationId, token: 't'.repeat(43) })),
        ),
      revoke: async (id: string) => (revoked.push(id), null),
      activeCount: () => 0,
    } satisfies Partial<DeviceRegistry>;
    return { registry: registry as unknown as DeviceRegistry, commit: () => commit(), revoked };
  }

  /** A pairing book on a registry that saves only when told, and the /pair routes over it. */
  function slowPairing(drawCode?: () => string) {
    const { registry, commit, revoked } = slowRegistry();
    const book = new PairingBook(registry, createMemoryLogger(), now, drawCode);
    const routes = pairingRoutes({
      book,
      lock: new ApprovalLock(PASSWORD, now),
      config: testConfig(tempDir(), { approvalPassword: PASSWORD }),
      bodyBounds: pairingBodyBounds,
      ...routeLogs(),
    });
    return { book, routes, commit, revoked };
  }

  test('a second decision meanwhile is told "being approved"; a request replaced then takes its device', async () => {
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

  test('an approval saved after the request expired is expired: its device revoked, the car never has it', async () => {
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

  test('a request that expired while its approval was saved leaves its code to a later one that drew it', async () => {
    const drawn = ['BBBBBBBB', 'BBBBBBBB', 'CCCCCCCC']; // the second draws the first one's code (C were it still taken)
    const { book, routes, commit, revoked } = slowPairing(() => drawn.shift()!);
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

  test('a /pair approval whose request expires while saved answers 404, the code in its field as typed', async () => {
    const { book, routes, commit, revoked } = slowPairing();
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

  test('a failed approval save leaves the request pending: Approve and Deny again, a second one pairs', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const { pair } = service.devices;
    service.devices.pair = async () => {
      service.devices.pair = pair; // once
      throw new Error('disk full');
    };
    expect(await expectPage(await decide(service, started.userCode, 'approve'), 500)).toContain('Something went wrong');
    expect(service.log.lines).toContainEqual(
      expect.stringContaining('error pairing.page_failed error="Error: disk full"'),
    );
    expect(deviceRows(service)).toEqual([]);
    const again = await expectPage(
      await service.request('GET', `/pair?code=${started.userCode}`, { token: null }),
      200,
    );
    expect(again).toContain('<h1>Approve this car?</h1>');
    expect(again).toContain('<button type="submit" name="decision" value="approve">Approve</button>');
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'pending' } });
    expect(await expectPage(await decide(service, started.userCode, 'approve'), 200)).toContain(
      '<h1>Car approved</h1>',
    );
    expect((await poll(service, started.pairingId)).body).toMatchObject({
      status: 'approved',
      installationId: INSTALLATION,
    });
  });

  test('/pair shows "Being approved" to a look and a second decision meanwhile, then the outcome', async () => {
    const { book, routes, commit } = slowPairing();
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

  test('a pairing request ends neither early nor late: its 10 minutes are measured on a monotonic clock', async () => {
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
    for (let wrong = 1; wrong <= limits.lockoutAttempts; wrong += 1)
      await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    expect((await decide(service, started.userCode, 'approve')).status).toBe(429);
    wall -= 60 * MINUTE;
    monotonic += limits.lockoutMs;
    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
  });
});
