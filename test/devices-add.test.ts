/** `ev-ingest devices add INSTALLATION_ID [--name NAME]`: a device token for a client without a pairing screen. */
import { afterEach, describe, expect, test } from 'bun:test';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEVICES_USAGE } from '../src/cli/devices.ts';
import { tokenHash } from '../src/devices/token.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import {
  INSTALLATION,
  overSocket,
  runDevicesCommand,
  startTestService,
  tempDir,
  testConfig,
  type TestService,
} from './support.ts';

const services: TestService[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.close();
});

async function start(dir = tempDir()): Promise<TestService> {
  const service = await startTestService({}, { dir });
  services.push(service);
  return service;
}

const add = (databasePath: string, ...args: string[]) => runDevicesCommand(databasePath, ['add', ...args]);

const relay = (service: Pick<TestService, 'request'>, token: string) => {
  const tlm = JSON.stringify({ utc: Math.floor(Date.now() / 1000), soc: 50 });
  return service.request('GET', `/abrp/1/tlm/send?${new URLSearchParams({ token, tlm })}`, { token: null });
};

describe('ev-ingest devices add', () => {
  test('prints the token once on its own last line and stores only its hash; the device is listed active', async () => {
    const dir = tempDir();
    const service = await start(dir);
    const databasePath = service.config.databasePath;
    const added = await add(databasePath, INSTALLATION.toUpperCase(), '--name', 'OVMS module');
    expect(added.code).toBe(0);
    const [described, token, end] = added.stdout.split('\n');
    expect(end).toBe('');
    expect(described).toMatch(
      new RegExp(`^added \\S+ installation=${INSTALLATION} active created=\\S+ lastSeen=never name="OVMS module"$`),
    );
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(added.stderr).toContain('shown once');
    const row = service.storage.db
      .query('SELECT token_hash AS hash, awaiting_collection AS awaiting FROM devices')
      .get();
    expect(row).toEqual({ hash: tokenHash(token!), awaiting: 0 });
    await service.close();
    for (const file of ['ev-ingest.db', 'ev-ingest.db-wal'].map((name) => join(dir, name)).filter(existsSync)) {
      expect(readFileSync(file).includes(Buffer.from(token!))).toBe(false);
    }

    const listed = await runDevicesCommand(databasePath, ['list']);
    expect(listed.stdout).toBe(`${described!.slice('added '.length)}\n`);
  });

  test('a restarted server keeps the token (nothing awaits collection), and a name is optional', async () => {
    const dir = tempDir();
    const first = await start(dir);
    const { stdout } = await add(first.config.databasePath, INSTALLATION);
    expect(stdout).toContain(' name=""\n');
    await first.close();
    const again = await start(dir);
    expect((await relay(again, stdout.split('\n')[1]!)).status).toBe(200);
  });

  test('a listening server accepts the new token within 1 s', async () => {
    const config = testConfig(tempDir());
    const running = await serve(config, createMemoryLogger());
    try {
      const client = overSocket(running);
      const { code, stdout } = await add(config.databasePath, INSTALLATION, `--name=Home Assistant`);
      expect(code).toBe(0);
      const issued = performance.now(); // the command has exited, its insert committed before
      const token = stdout.split('\n')[1]!;
      let status = (await relay(client, token)).status;
      while (status === 401 && performance.now() - issued < 1000) {
        await Bun.sleep(10);
        status = (await relay(client, token)).status;
      }
      expect(status).toBe(200);
    } finally {
      await running.stop();
    }
  });

  test.each([
    ['no installation id', [], 2, `ev-ingest: usage:\n${DEVICES_USAGE}\n`],
    ['an installation id that is no UUID', ['car-1'], 2, 'ev-ingest: INSTALLATION_ID must be a UUID\n'],
    ['--name without a value', [INSTALLATION, '--name'], 2, `ev-ingest: usage:\n${DEVICES_USAGE}\n`],
    [
      'a name with a control character',
      [INSTALLATION, '--name', 'a\u0007b'],
      2,
      'ev-ingest: --name must not hold control or text-direction characters\n',
    ],
    ['another option', [INSTALLATION, '--yes'], 2, 'ev-ingest: unknown option "--yes"; no command has options\n'],
    ['two installation ids', [INSTALLATION, INSTALLATION], 2, `ev-ingest: usage:\n${DEVICES_USAGE}\n`],
  ])('refuses %s and adds nothing', async (_, args, code, stderr) => {
    const service = await start();
    const result = await add(service.config.databasePath, ...args);
    expect(result).toMatchObject({ code, stdout: '' });
    expect(result.stderr).toStartWith(stderr);
    expect(service.storage.db.query('SELECT count(*) AS n FROM devices').get()).toEqual({ n: 0 });
  });

  test('--name belongs to add only', async () => {
    const service = await start();
    const result = await runDevicesCommand(service.config.databasePath, ['list', '--name', 'x']);
    expect(result).toEqual({ code: 2, stdout: '', stderr: `ev-ingest: usage:\n${DEVICES_USAGE}\n` });
  });
});
