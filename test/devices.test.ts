import { afterEach, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { openDatabase } from '../src/db/open.ts';
import { DEVICES_USAGE } from '../src/cli/devices.ts';
import { DeviceRegistry } from '../src/devices/service.ts';
import { tokenHash } from '../src/devices/token.ts';
import { limits } from '../src/limits.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import {
  answer,
  heldSyncs,
  type HeldSyncs,
  INSTALLATION,
  OTHER_INSTALLATION,
  overSocket,
  runDevicesCommand,
  startTestService,
  tempDir,
  testConfig,
  waitUntil,
  type TestService,
} from './support.ts';
import { decide, pairDevice, PASSWORD, poll, startPairing, WRONG_PASSWORD } from './pairing-support.ts';

let clock = Date.UTC(2026, 10, 25, 12, 0, 0);
const now = () => clock;
const open: TestService[] = [];
async function start(options: { dir?: string; approvalPassword?: string | null } = {}) {
  const service = await startTestService(
    { approvalPassword: PASSWORD, ...options },
    { now, elapsed: now, dir: options.dir },
  );
  open.push(service);
  return service;
}
afterEach(async () => {
  for (const service of open.splice(0)) await service.close();
});

const refused = (service: TestService, token: string) => {
  try {
    service.auth.authenticate(`Bearer ${token}`);
    return false;
  } catch (error) {
    return (error as { status?: number }).status === 401;
  }
};

/** Pairs a car on a service whose syncs are held, finishing the collection's sync (taken in every mode). */
async function pairFinishingSync(service: TestService, syncs: HeldSyncs) {
  const before = syncs.calls.length;
  const pairing = pairDevice(service, INSTALLATION);
  await waitUntil(() => syncs.calls.length > before);
  syncs.calls[before]!.finish();
  return pairing;
}

/** How often the registry has read the devices table again since the service started. */
const reloads = (service: TestService) =>
  service.log.lines.filter((line) => line.includes(' info devices.reloaded ')).length;

describe('GET /v1/devices', () => {
  test('lists devices newest first with ISO times, for the approval password only', async () => {
    const service = await start();
    const first = await pairDevice(service, INSTALLATION, 'first');
    const createdFirst = new Date(clock).toISOString();
    clock += 1000;
    const second = await pairDevice(service, OTHER_INSTALLATION, 'second');
    expect(await answer(await service.request('GET', '/v1/devices', { token: PASSWORD }))).toEqual({
      status: 200,
      body: {
        devices: [
          {
            id: second.deviceId,
            installationId: OTHER_INSTALLATION,
            name: 'second',
            createdAt: new Date(clock).toISOString(),
            lastSeenAt: null,
            revokedAt: null,
          },
          {
            id: first.deviceId,
            installationId: INSTALLATION,
            name: 'first',
            createdAt: createdFirst,
            lastSeenAt: null,
            revokedAt: null,
          },
        ],
      },
    });
    for (const token of [null, WRONG_PASSWORD, first.token]) {
      expect(await answer(await service.request('GET', '/v1/devices', { token }))).toEqual({
        status: 401,
        body: { error: 'unauthorized' },
      });
    }
    // The shared ingest token is not the approval password either.
    expect((await service.request('GET', '/v1/devices')).status).toBe(401);
  });
});

describe('POST /v1/devices/{id}/revoke', () => {
  test('revokes at once, idempotently; an unknown id is 404', async () => {
    const service = await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    const revokedAt = new Date(clock).toISOString();
    const expected = {
      id: deviceId,
      installationId: INSTALLATION,
      name: 'MG4',
      createdAt: revokedAt,
      lastSeenAt: null,
      revokedAt,
    };
    expect(await answer(await service.request('POST', `/v1/devices/${deviceId}/revoke`, { token: PASSWORD }))).toEqual({
      status: 200,
      body: expected,
    });
    expect(refused(service, token)).toBe(true);
    clock += 5000;
    expect(await answer(await service.request('POST', `/v1/devices/${deviceId}/revoke`, { token: PASSWORD }))).toEqual({
      status: 200,
      body: expected,
    });
    for (const unknown of ['nope', '%ZZ']) {
      expect(await answer(await service.request('POST', `/v1/devices/${unknown}/revoke`, { token: PASSWORD }))).toEqual(
        { status: 404, body: { error: 'device not found' } },
      );
    }
    expect(
      await answer(await service.request('POST', `/v1/devices/${deviceId}/revoke`, { token: WRONG_PASSWORD })),
    ).toEqual({ status: 401, body: { error: 'unauthorized' } });
  });

  test('the token is refused as soon as the revocation is asked, while its write still waits to commit', async () => {
    const service = await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    const history = async () =>
      answer(await service.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token }));
    expect((await history()).status).toBe(200);
    const { committer } = service.storage;
    const write = committer.write.bind(committer);
    const writes: string[] = [];
    committer.write = (op, args) => (writes.push(op), write(op, args));
    // Holds the write lock: the revocation cannot commit yet.
    const holder = openDatabase(service.config.databasePath, 'full');
    holder.run('BEGIN IMMEDIATE');
    const release = () => holder.inTransaction && holder.run('COMMIT');
    try {
      let answered = false;
      const revoking = service
        .request('POST', `/v1/devices/${deviceId}/revoke`, { token: PASSWORD })
        .then((response) => ((answered = true), response));
      await waitUntil(() => writes.includes('revokeDevice'));
      expect(await history()).toEqual({ status: 401, body: { error: 'unauthorized' } });
      expect(answered).toBe(false);
      release();
      expect((await revoking).status).toBe(200);
      expect(await history()).toEqual({ status: 401, body: { error: 'unauthorized' } });
    } finally {
      release(); // a failed expectation must not leave the revocation waiting on the lock
      holder.close();
    }
  });

  test('a device id in capitals names the same device', async () => {
    const service = await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    const answered = await answer(
      await service.request('POST', `/v1/devices/${deviceId.toUpperCase()}/revoke`, { token: PASSWORD }),
    );
    expect(answered).toMatchObject({ status: 200, body: { id: deviceId, revokedAt: new Date(clock).toISOString() } });
    expect(refused(service, token)).toBe(true);
  });

  test('with DURABILITY=fast a revocation is on disk before its answer: a power cut must not revive it', async () => {
    const syncs = heldSyncs();
    const service = await startTestService(
      { approvalPassword: PASSWORD, durability: 'fast' },
      { now, elapsed: now, syncFile: syncs.syncFile },
    );
    open.push(service);
    let answered = false;
    try {
      const { deviceId } = await pairFinishingSync(service, syncs);
      const revoking = service
        .request('POST', `/v1/devices/${deviceId}/revoke`, { token: PASSWORD })
        .then((response) => ((answered = true), response));
      await waitUntil(() => syncs.calls.length > 1);
      expect([syncs.calls.length, answered]).toEqual([2, false]);
      syncs.calls[1]!.finish();
      expect((await revoking).status).toBe(200);
    } finally {
      syncs.release(); // a failed expectation must not leave the service's close waiting on a held sync
    }
  });

  test('with DURABILITY=fast a collected token is on disk before the car has it, surviving a power cut', async () => {
    const syncs = heldSyncs();
    const service = await startTestService(
      { approvalPassword: PASSWORD, durability: 'fast' },
      { now, elapsed: now, syncFile: syncs.syncFile },
    );
    open.push(service);
    const started = await startPairing(service, INSTALLATION);
    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
    expect(syncs.calls).toEqual([]); // fast: approving alone is not synced (the token has not left)
    let answered = false;
    const polling = poll(service, started.pairingId).then((polled) => ((answered = true), polled));
    try {
      await waitUntil(() => syncs.calls.length > 0);
      expect([syncs.calls.length, answered]).toEqual([1, false]);
      syncs.calls[0]!.finish();
      expect((await polling).body).toMatchObject({ status: 'approved', installationId: INSTALLATION });
    } finally {
      syncs.release();
    }
  });
});

describe('across restarts', () => {
  test('a paired token keeps working and a revocation stays, also with pairing turned off', async () => {
    const dir = tempDir();
    const service = await start({ dir });
    const kept = await pairDevice(service, INSTALLATION);
    const revoked = await pairDevice(service, OTHER_INSTALLATION);
    await service.request('POST', `/v1/devices/${revoked.deviceId}/revoke`, { token: PASSWORD });
    await service.close();

    const again = await start({ dir, approvalPassword: null });
    expect(again.auth.authenticate(`Bearer ${kept.token}`)).toEqual({
      kind: 'device',
      deviceId: kept.deviceId,
      installationId: INSTALLATION,
    });
    expect(refused(again, revoked.token)).toBe(true);
    expect((await again.request('GET', '/v1/devices', { token: PASSWORD })).status).toBe(404);
  });

  test("a device an earlier run left awaiting collection is refused from a listening server's start", async () => {
    const dir = tempDir();
    const earlier = await start({ dir });
    const lost = await earlier.devices.pair(INSTALLATION, 'MG4'); // approved; the car never collected its token
    await earlier.close();

    // Another connection holds the write lock as the server starts: the start-up's revocation waits for it,
    // and serve() must wait for the revocation, a second here, far longer than a start takes.
    const holder = openDatabase(earlier.config.databasePath, 'full');
    holder.run('BEGIN IMMEDIATE');
    const release = () => holder.inTransaction && holder.run('COMMIT');
    const log = createMemoryLogger();
    const starting = serve(testConfig(dir, { approvalPassword: PASSWORD }), log);
    try {
      expect(await Promise.race([starting.then(() => 'listening'), Bun.sleep(1000).then(() => 'starting')])).toBe(
        'starting',
      );
      release();
      const running = await starting;
      const first = await fetch(new URL(`/v1/consumption/history/${INSTALLATION}`, running.url), {
        headers: { authorization: `Bearer ${lost.token}` },
      });
      const started = log.lines.find((line) => line.includes(' info started '));
      expect([first.status, started?.match(/ devices=\d+ /)?.[0]]).toEqual([401, ' devices=0 ']);
    } finally {
      release();
      holder.close();
      await (await starting.catch(() => null))?.stop(); // listening even when an expectation failed
    }
  });
});

describe('the registry watcher', () => {
  test('reloads when another connection adds, deletes, revokes a device or changes what identifies it', async () => {
    const service = await start();
    const other = openDatabase(service.config.databasePath, 'full'); // a connection of its own, as the command's
    /** One change at a time, each followed by one check, so that each trigger is needed. */
    const change = (sql: string, ...params: (string | number)[]) => {
      other.run(sql, params);
      service.devices.reloadIfChanged();
    };
    const found = (token: string) => service.devices.find(tokenHash(token));
    try {
      change(
        'INSERT INTO devices (id, installation_id, token_hash, created_at) VALUES (?, ?, ?, 1)',
        'added',
        INSTALLATION,
        tokenHash('token-a'),
      );
      expect(found('token-a')).toEqual({ id: 'added', installationId: INSTALLATION });
      change("UPDATE devices SET token_hash = ? WHERE id = 'added'", tokenHash('token-b'));
      expect(found('token-a')).toBeUndefined();
      expect(found('token-b')).toEqual({ id: 'added', installationId: INSTALLATION });
      change("UPDATE devices SET installation_id = ? WHERE id = 'added'", OTHER_INSTALLATION);
      expect(found('token-b')).toEqual({ id: 'added', installationId: OTHER_INSTALLATION });
      change("UPDATE devices SET id = 'renamed' WHERE id = 'added'");
      expect(found('token-b')).toEqual({ id: 'renamed', installationId: OTHER_INSTALLATION });
      change("UPDATE devices SET revoked_at = 2 WHERE id = 'renamed'");
      expect(found('token-b')).toBeUndefined();
      change("UPDATE devices SET revoked_at = NULL WHERE id = 'renamed'"); // only by hand: the service never unrevokes
      expect(found('token-b')).toEqual({ id: 'renamed', installationId: OTHER_INSTALLATION });
      change("DELETE FROM devices WHERE id = 'renamed'");
      expect(service.devices.size).toBe(0);
      expect(reloads(service)).toBe(7);
    } finally {
      other.close();
    }
  });

  test('a telemetry batch and the lastSeen write of its device commit without a reload', async () => {
    const service = await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    service.devices.reloadIfChanged(); // the pairing's own insert moved the version
    const reloadsBefore = reloads(service);
    const dataVersion = () =>
      service.storage.db.query<{ data_version: number }, []>('PRAGMA data_version').get()!.data_version;
    const committedBefore = dataVersion();

    const batch = { installationId: INSTALLATION, samples: [{ utc: Math.floor(clock / 1000) - 60, soc: 50 }] };
    expect((await service.request('POST', '/v1/telemetry', { body: batch, token })).status).toBe(200);
    await service.storage.committer.idle();
    expect(service.storage.db.query('SELECT last_seen_at AS at FROM devices WHERE id = ?').get(deviceId)).toEqual({
      at: clock,
    });
    expect(service.storage.db.query('SELECT count(*) AS n FROM samples').get()).toEqual({ n: 1 });
    expect(dataVersion()).not.toBe(committedBefore); // the writer did commit: a data_version check would reload here

    service.devices.reloadIfChanged();
    expect(reloads(service)).toBe(reloadsBefore);
    expect(service.devices.find(tokenHash(token))).toEqual({ id: deviceId, installationId: INSTALLATION });
  });

  test('its timer runs the check by itself', async () => {
    const service = await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    const other = openDatabase(service.config.databasePath, 'full'); // a connection of its own, as the command's
    other.run('UPDATE devices SET revoked_at = 2 WHERE id = ?', [deviceId]);
    other.close();
    service.devices.watch();
    // No time asserted here: only that the timer, not the test, reloads; the contract's bound of 1 s holds
    // with a check to spare as long as the checks come at least twice a second.
    expect(limits.deviceReloadCheckMs).toBeLessThanOrEqual(500);
    await waitUntil(() => refused(service, token), 10_000);
  });

  test('a reload before a revocation commits reads it unrevoked; the token is refused from the commit on', async () => {
    const syncs = heldSyncs();
    // fast: the revocation's own sync (its flush) comes after the commit, and is held here.
    const service = await startTestService(
      { approvalPassword: PASSWORD, durability: 'fast' },
      { now, elapsed: now, syncFile: syncs.syncFile },
    );
    open.push(service);
    const { token, deviceId } = await pairFinishingSync(service, syncs);
    const other = openDatabase(service.config.databasePath, 'full'); // the command's connection, say
    try {
      other.run('INSERT INTO devices (id, installation_id, token_hash, created_at) VALUES (?, ?, ?, 1)', [
        'added',
        OTHER_INSTALLATION,
        tokenHash('token-a'),
      ]);
      other.run('BEGIN IMMEDIATE'); // holds the write lock: the revocation cannot commit yet
      const revoking = service.devices.revoke(deviceId);
      service.devices.reloadIfChanged(); // the insert moved the version: this reads the row not yet revoked
      expect(service.devices.find(tokenHash(token))).toEqual({ id: deviceId, installationId: INSTALLATION });
      other.run('COMMIT');
      await waitUntil(() => syncs.calls.length > 1); // committed; its sync held
      expect(service.devices.find(tokenHash(token))).toBeUndefined();
      syncs.release();
      await revoking;
      expect(service.devices.find(tokenHash(token))).toBeUndefined();
    } finally {
      syncs.release(); // a failed expectation must not leave the service's close waiting on a held sync
      if (other.inTransaction) other.run('COMMIT');
      other.close();
    }
  });

  test('a counter that lost its row refuses the start, saying how to restore it', async () => {
    const service = await start({ dir: tempDir() });
    const path = service.config.databasePath;
    await service.close();
    const db = new Database(path);
    db.run('DELETE FROM devices_version');
    db.close();
    const refused = await startTestService({ databasePath: path }).catch((error: Error) => error);
    expect((refused as Error).message).toBe(
      'paired devices cannot be loaded: devices_version has lost its row; ' +
        'restore it with INSERT INTO devices_version VALUES (0)',
    );
  });

  test('a database it can no longer read is logged, not thrown from the timer', async () => {
    const service = await start();
    const db = new Database(service.config.databasePath, { readonly: true });
    const log = createMemoryLogger();
    const registry = new DeviceRegistry(db, service.storage.committer, log, now);
    registry.load();
    db.close();
    expect(() => registry.reloadIfChanged()).not.toThrow();
    expect(log.lines).toEqual([expect.stringMatching(/ error devices\.reload_failed reason=/)]);
  });
});

describe('lastSeenAt', () => {
  test('is written on use, at most once a minute per device', async () => {
    const service = await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    const lastSeen = async () => {
      await service.storage.committer.idle();
      return service.storage.db
        .query<{ at: number | null }, [string]>('SELECT last_seen_at AS at FROM devices WHERE id = ?')
        .get(deviceId)!.at;
    };
    const firstUse = clock;
    service.auth.authenticate(`Bearer ${token}`);
    expect(await lastSeen()).toBe(firstUse);
    clock += 59_999;
    service.auth.authenticate(`Bearer ${token}`);
    expect(await lastSeen()).toBe(firstUse);
    clock += 1;
    service.auth.authenticate(`Bearer ${token}`);
    expect(await lastSeen()).toBe(clock);
  });

  test('keeps its once a minute when the wall clock is set back (NTP): measured on a monotonic clock', async () => {
    let wall = clock;
    let monotonic = 0;
    const service = await startTestService(
      { approvalPassword: PASSWORD },
      { now: () => wall, elapsed: () => monotonic },
    );
    open.push(service);
    const { token, deviceId } = await pairDevice(service, INSTALLATION);
    const lastSeen = async () => {
      await service.storage.committer.idle();
      return service.storage.db
        .query<{ at: number | null }, [string]>('SELECT last_seen_at AS at FROM devices WHERE id = ?')
        .get(deviceId)!.at;
    };
    service.auth.authenticate(`Bearer ${token}`);
    expect(await lastSeen()).toBe(wall);
    wall -= 60 * 60_000;
    monotonic += 60_000;
    service.auth.authenticate(`Bearer ${token}`);
    expect(await lastSeen()).toBe(wall);
  });
});

describe('ev-ingest devices', () => {
  /** Server settings that would stop the server: the command reads none of them. */
  const unusable = { DURABILITY: 'sometimes', LOG_LEVEL: 'loud', INGEST_TOKEN_FILE: '/nonexistent/token' };
  const run = (databasePath: string, ...args: string[]) => runDevicesCommand(databasePath, args, unusable);

  test('revoke (an id in any case) is honoured by a running server at its next check; list shows it', async () => {
    const service = await start();
    const { token, deviceId } = await pairDevice(service, INSTALLATION, 'Stolen "car"');
    service.devices.reloadIfChanged(); // the pairing's own insert moved the version
    expect(service.auth.authenticate(`Bearer ${token}`)).toMatchObject({ deviceId });

    const revoked = await run(service.config.databasePath, 'revoke', deviceId.toUpperCase());
    expect(revoked).toMatchObject({ code: 0, stderr: '' });
    expect(revoked.stdout).toStartWith(`revoked ${deviceId} installation=${INSTALLATION} revoked=`);
    // The watcher's timer runs this check every 500 ms (tested above): here it runs once, right after the command.
    service.devices.reloadIfChanged();
    expect(refused(service, token)).toBe(true);

    const again = await run(service.config.databasePath, 'revoke', deviceId);
    expect(again.code).toBe(0);
    expect(again.stdout).toStartWith(`already revoked ${deviceId} `);
    const listed = await run(service.config.databasePath, 'list');
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${deviceId} installation=${INSTALLATION} revoked=\\S+ created=\\S+ lastSeen=\\S+ ` +
            'name="Stolen \\\\"car\\\\""$',
        ),
      ),
      '',
    ]);
  });

  test("revoke is honoured by a listening server's own watcher: the token is refused within 1 s", async () => {
    const config = testConfig(tempDir(), { approvalPassword: PASSWORD });
    const running = await serve(config, createMemoryLogger());
    try {
      const car = overSocket(running);
      const { token, deviceId } = await pairDevice(car, INSTALLATION);
      const history = async () =>
        (await car.request('GET', `/v1/consumption/history/${INSTALLATION}`, { token })).status;
      expect(await history()).toBe(200);
      expect((await run(config.databasePath, 'revoke', deviceId)).code).toBe(0);
      const revoked = performance.now(); // the command has exited, its revocation committed before
      let status = await history();
      while (status === 200 && performance.now() - revoked < 1000) {
        await Bun.sleep(10);
        status = await history();
      }
      expect(status).toBe(401);
    } finally {
      await running.stop();
    }
  });

  test('an unknown id, a missing database and bad usage fail with a message', async () => {
    const service = await start();
    const unknown = await run(service.config.databasePath, 'revoke', 'no-such-device');
    expect(unknown).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ev-ingest: no device with id "no-such-device"; see "ev-ingest devices list"\n',
    });
    const missing = await run(join(tempDir(), 'absent.db'), 'list');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no database at');
    expect((await run(service.config.databasePath, 'revoke')).code).toBe(2);
  });

  test('list shows a device never used as active, last seen never', async () => {
    const service = await start();
    const { deviceId } = await pairDevice(service, INSTALLATION);
    expect(await run(service.config.databasePath, 'list')).toEqual({
      code: 0,
      stdout:
        `${deviceId} installation=${INSTALLATION} active created=${new Date(clock).toISOString()} ` +
        'lastSeen=never name="MG4"\n',
      stderr: '',
    });
  });

  test('list and revoke refuse an argument beyond their own with the usage, exit 2, and revoke nothing', async () => {
    const service = await start();
    const { deviceId } = await pairDevice(service, INSTALLATION);
    const wrongCall = { code: 2, stdout: '', stderr: `ev-ingest: usage:\n${DEVICES_USAGE}\n` };
    expect(await run(service.config.databasePath, 'list', 'all')).toEqual(wrongCall);
    expect(await run(service.config.databasePath, 'revoke', deviceId, 'now')).toEqual(wrongCall);
    expect(service.storage.db.query('SELECT revoked_at AS at FROM devices WHERE id = ?').get(deviceId)).toEqual({
      at: null,
    });
  });
});
