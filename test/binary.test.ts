/** End to end: the compiled binary, copied alone into a fresh folder, on a temporary database. */
import { Database } from 'bun:sqlite';
import { beforeAll, describe, expect, test } from 'bun:test';
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pkg from '../package.json' with { type: 'json' };
import { compiledBinary, launchBinary, ownerRequest, startBinary } from './binary.ts';
import {
  consumptionChunk,
  INSTALLATION,
  migratedByNewerRefusal,
  migratedByNewerVersion,
  OWNER_TOKEN,
  tempDir,
} from './support.ts';

let binary: string;
beforeAll(async () => {
  binary = await compiledBinary();
}, 120_000);

/** Runs the binary to its end; one that should have refused but serves is killed after 10 s, failing its test fast. */
function run(args: string[], env: Record<string, string> = {}, cwd = tempDir()) {
  const result = Bun.spawnSync([binary, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 10_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

describe('command line', () => {
  test('--version and --help answer and exit 0, as do -v, -h and help', () => {
    for (const version of ['--version', '-v'])
      expect(run([version])).toEqual({ code: 0, stdout: `ev-ingest ${pkg.version}\n`, stderr: '' });
    const help = run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('INGEST_TOKEN (required, at least 24 printable ASCII characters)');
    for (const alias of ['-h', 'help']) expect(run([alias])).toEqual(help);
  });

  test('an unknown command exits 2 with the usage', () => {
    const result = run(['frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toStartWith('ev-ingest: unknown command "frobnicate"');
  });

  test('after a command, -h and --help print its usage (exit 0); another "-…" argument is refused', () => {
    const cwd = tempDir();
    const source = join(tempDir(), 'live.db');
    new Database(source).run('CREATE TABLE t (x)');
    // Enough to serve on, so that a `serve` taking its argument for nothing would start.
    const env = { DATABASE_PATH: source, INGEST_TOKEN: OWNER_TOKEN, HOST: '127.0.0.1', PORT: '0' };
    /** The exit code and output of a run, each output cut to its first `length` characters. */
    const opening = (args: string[], length: number) => {
      const { code, stdout, stderr } = run(args, env, cwd);
      return { code, stdout: stdout.slice(0, length), stderr: stderr.slice(0, length) };
    };
    for (const [args, usage] of [
      [['backup', '--help'], 'ev-ingest backup FILE'],
      [['backup', '-h'], 'ev-ingest backup FILE'],
      [['devices', '--help'], 'ev-ingest devices list'],
      [['devices', 'revoke', '-h'], 'ev-ingest devices list'],
      [['serve', '--help'], 'ev-ingest [serve]'],
    ] as const) {
      const expected = `Usage:\n  ${usage} `;
      expect(opening([...args], expected.length)).toEqual({ code: 0, stdout: expected, stderr: '' });
    }
    for (const args of [
      ['backup', '-x.db'],
      ['backup', '-'],
      ['devices', 'revoke', '--all'],
      ['serve', '--port'],
    ]) {
      const option = args.at(-1)!;
      // Only the backup takes a file; a device id never begins with "-".
      const fileHint = args[0] === 'backup' ? ` (for a file whose name begins with "-", write ./${option})` : '';
      const expected = `ev-ingest: unknown option "${option}"; no command has options${fileHint}\nev-ingest: usage:\n`;
      expect(opening(args, expected.length)).toEqual({ code: 2, stdout: '', stderr: expected });
    }
    const expected = 'ev-ingest: serve takes no arguments, not "now"\nev-ingest: usage:\n  ev-ingest [serve] ';
    expect(opening(['serve', 'now'], expected.length)).toEqual({ code: 2, stdout: '', stderr: expected });
    expect(readdirSync(cwd)).toEqual([]);
    expect(run(['backup', './-x.db'], env, cwd).code).toBe(0); // as the refusal says
    expect(readdirSync(cwd)).toEqual(['-x.db']);
  });

  test('bad configuration exits 1 at once with one line naming the variable', () => {
    expect(run([], { INGEST_TOKEN: 'too-short' })).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ev-ingest: INGEST_TOKEN must be set to at least 24 characters (it has 9)\n',
    });
    expect(run([], { INGEST_TOKEN: `${OWNER_TOKEN} ` }).stderr).toBe(
      'ev-ingest: INGEST_TOKEN must not begin or end with whitespace\n',
    );
    expect(run([], { INGEST_TOKEN: OWNER_TOKEN, PORT: 'eighty' }).stderr).toBe(
      'ev-ingest: PORT must be a whole number from 0 to 65535 (0 picks a free port)\n',
    );
  });

  test('backup copies the database on its Worker, an entry point of the build of its own', () => {
    const dir = tempDir();
    const source = join(dir, 'live.db');
    new Database(source).run('CREATE TABLE t (x)');
    const file = join(dir, 'copy.db');
    const result = run(['backup', file], { DATABASE_PATH: source });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const copy = new Database(file, { readonly: true });
    expect(copy.query('SELECT name FROM sqlite_master').all()).toEqual([{ name: 't' }]);
    copy.close();
  });
});

describe('serving', () => {
  test('in a fresh folder it creates and migrates its database, serves, and stops cleanly on SIGTERM', async () => {
    const cwd = dirname(binary);
    const server = await startBinary(binary, { INGEST_TOKEN: OWNER_TOKEN }, cwd);
    const health = await fetch(new URL('/v1/health', server.url));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const denied = await fetch(new URL('/v1/nothing', server.url), { method: 'POST' });
    expect(denied.status).toBe(404);
    // More than 16 samples, stored through the writer's prepared multi-row inserts: a stop still leaves no WAL.
    const utc = Math.floor(Date.now() / 1000) - 100;
    const samples = Array.from({ length: 20 }, (_, i) => ({ utc: utc + i, soc: 50 }));
    const stored = await ownerRequest(server, 'POST', '/v1/telemetry', { installationId: INSTALLATION, samples });
    expect(await stored.json()).toEqual({ stored: 20, droppedCount: 0, dropped: [] });
    expect(await server.stop('SIGTERM')).toBe(0);

    const path = join(cwd, 'data', 'ev-ingest.db');
    expect(existsSync(path)).toBe(true);
    // A clean stop closes both connections, which checkpoints the WAL away.
    expect(existsSync(`${path}-wal`)).toBe(false);
    const db = new Database(path, { readonly: true });
    expect(db.query("SELECT name FROM sqlite_master WHERE name = 'devices'").get()).toEqual({ name: 'devices' });
    expect(db.query('SELECT count(*) AS n FROM samples').get()).toEqual({ n: 20 });
    db.close();
  });

  test('the log holds one line per request, without the query string or the token', async () => {
    const cwd = tempDir();
    const server = await startBinary(binary, { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(cwd, 'x.db') }, cwd);
    await fetch(new URL('/v1/health?code=WDJB-MJHT', server.url), {
      headers: { authorization: `Bearer ${OWNER_TOKEN}` },
    });
    expect(await server.stop('SIGINT')).toBe(0);
    const output = server.output();
    expect(output).toMatch(/ info request method=GET path=\/v1\/health status=200 ms=[\d.]+\n/);
    expect(output).toMatch(/ info started version=\S+ address=\S+ database=\S+x\.db durability=full /);
    expect(output).not.toContain('WDJB');
    expect(output).not.toContain(OWNER_TOKEN);
  });

  test("under umask 022 what it creates is its owner's alone; an existing database keeps its mode", async () => {
    const cwd = tempDir();
    const path = join(cwd, 'new', 'data', 'ev.db');
    const env = { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: path };
    /** Starts the binary under the umask 022 (Bun.spawn runs before startBinary's first await). */
    const startUnderUmask022 = () => {
      const previous = process.umask(0o022);
      const starting = startBinary(binary, env, cwd);
      process.umask(previous);
      return starting;
    };
    const modes = () => {
      const paths = [join(cwd, 'new'), dirname(path), path, `${path}-wal`, `${path}-shm`, `${path}.lock`];
      return paths.map((file) => `${file.slice(cwd.length)} ${(statSync(file).mode & 0o777).toString(8)}`);
    };
    // Each server is stopped before its modes are checked: a failed check must not leave it running.
    const first = await startUnderUmask022();
    const created = modes();
    expect(await first.stop()).toBe(0);
    expect(created).toEqual([
      '/new 700',
      '/new/data 700',
      '/new/data/ev.db 600',
      '/new/data/ev.db-wal 600',
      '/new/data/ev.db-shm 600',
      '/new/data/ev.db.lock 600',
    ]);
    // The owner lets a group read the database: a restart leaves that as it is, and the new -wal and -shm follow it.
    chmodSync(path, 0o640);
    const second = await startUnderUmask022();
    const kept = modes();
    expect(await second.stop()).toBe(0);
    expect(kept).toEqual([
      '/new 700',
      '/new/data 700',
      '/new/data/ev.db 640',
      '/new/data/ev.db-wal 640',
      '/new/data/ev.db-shm 640',
      '/new/data/ev.db.lock 600',
    ]);
  });

  test('a database file that is not SQLite is refused at start-up', async () => {
    const cwd = tempDir();
    await Bun.write(join(cwd, 'data', 'ev-ingest.db'), 'not a database');
    const result = Bun.spawnSync([binary], { cwd, env: { PATH: '', INGEST_TOKEN: OWNER_TOKEN }, timeout: 10_000 });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.toString()).toBe(
      'ev-ingest: DATABASE_PATH ./data/ev-ingest.db is not an SQLite database; refusing to open it\n',
    );
  });

  test('a database a newer ev-ingest migrated refuses the start (exit 1, one line); backup copies it', async () => {
    const cwd = tempDir();
    const path = join(cwd, 'ev.db');
    migratedByNewerVersion(path, [Date.UTC(2030, 0, 2)]);
    const unknown = '1 migration this version does not know, the newest dated 2030-01-02T00:00:00.000Z';
    expect(await launchBinary(binary, { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: path }, cwd)).toEqual({
      exited: {
        code: 1,
        stdout: '',
        stderr: `ev-ingest: ${migratedByNewerRefusal(path, unknown)}\n`,
      },
    });
    const file = join(cwd, 'before-downgrade.db');
    expect(run(['backup', file], { DATABASE_PATH: path })).toMatchObject({ code: 0, stderr: '' });
    const copy = new Database(file, { readonly: true });
    expect(copy.query('SELECT hash FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1').get()).toEqual({
      hash: `newer-${Date.UTC(2030, 0, 2)}`,
    });
    copy.close();
  });
});

describe('shutdown', () => {
  test('SIGTERM lets a request in flight finish and commit, then exits 0', async () => {
    const cwd = tempDir();
    const path = join(cwd, 'ev.db');
    const server = await startBinary(binary, { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: path }, cwd);
    const body = JSON.stringify({
      installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
      samples: [{ utc: Math.floor(Date.now() / 1000), soc: 50 }],
    });
    let sendRest!: () => void;
    const rest = new Promise<void>((resolve) => (sendRest = resolve));
    // The body arrives in two parts; the signal comes between them.
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode(body.slice(0, 20)));
        await rest;
        controller.enqueue(new TextEncoder().encode(body.slice(20)));
        controller.close();
      },
    });
    const answer = fetch(new URL('/v1/telemetry', server.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${OWNER_TOKEN}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await Bun.sleep(500); // the request's head reaches the server before the signal
    const exited = server.stop('SIGTERM');
    await Bun.sleep(200);
    sendRest();
    const response = await answer;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ stored: 1, droppedCount: 0, dropped: [] });
    expect(await exited).toBe(0);
    const db = new Database(path, { readonly: true });
    expect(db.query('SELECT soc FROM samples').all()).toEqual([{ soc: 50 }]);
    db.close();
  });
});

describe('one server per database', () => {
  test('a second server on the database exits 1; the first, devices and a database beside it serve on', async () => {
    const cwd = tempDir();
    const env = { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(cwd, 'ev.db') };
    const first = await startBinary(binary, env, cwd);
    const put = (chunk: object) => ownerRequest(first, 'PUT', '/v1/consumption/daily', chunk);
    expect((await put(consumptionChunk())).status).toBe(204);
    expect(await launchBinary(binary, env, cwd)).toEqual({
      exited: {
        code: 1,
        stdout: '',
        stderr:
          `ev-ingest: DATABASE_PATH ${env.DATABASE_PATH} is used by another ev-ingest server ` +
          '(or a command migrating it); refusing to start a second one\n',
      },
    });
    expect((await put(consumptionChunk({ recordedAt: 1_764_080_000_124 }))).status).toBe(204);
    expect(run(['devices', 'list'], { DATABASE_PATH: env.DATABASE_PATH })).toEqual({ code: 0, stdout: '', stderr: '' });
    const other = await startBinary(binary, { ...env, DATABASE_PATH: join(cwd, 'other.db') }, cwd);
    expect((await fetch(new URL('/v1/health', other.url))).status).toBe(200);
    expect(await other.stop()).toBe(0);
    // Killed, so nothing is checkpointed at a stop: both writes are in the WAL the refused start left alone.
    expect(await first.stop('SIGKILL')).not.toBe(0);
    const db = new Database(env.DATABASE_PATH, { readonly: true });
    expect(db.query('SELECT count(*) AS n FROM consumption_chunks').get()).toEqual({ n: 2 });
    db.close();
  });

  test('a second server on another database but the same port exits 1 (one line), not sharing the port', async () => {
    const cwd = tempDir();
    const first = await startBinary(binary, { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(cwd, 'a.db') }, cwd);
    const port = first.url.port;
    const second = await launchBinary(
      binary,
      { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(cwd, 'b.db'), PORT: port },
      cwd,
    );
    expect(second).toEqual({
      exited: {
        code: 1,
        stdout: expect.any(String),
        stderr: expect.stringMatching(
          new RegExp(`^ev-ingest: cannot listen on HOST 127\\.0\\.0\\.1 PORT ${port}: [^\\n]+\\n$`),
        ),
      },
    });
    expect((await fetch(new URL('/v1/health', first.url))).status).toBe(200);
    expect(await first.stop()).toBe(0);
  });

  test('the lock goes with the server: after a stop or a SIGKILL the next one starts', async () => {
    const cwd = tempDir();
    const env = { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(cwd, 'ev.db') };
    expect(await (await startBinary(binary, env, cwd)).stop('SIGTERM')).toBe(0);
    expect(await (await startBinary(binary, env, cwd)).stop('SIGKILL')).not.toBe(0);
    const last = await startBinary(binary, env, cwd);
    expect((await fetch(new URL('/v1/health', last.url))).status).toBe(200);
    expect(await last.stop()).toBe(0);
  });
});

test('a restart on the same database keeps what was answered', async () => {
  const cwd = tempDir();
  const env = { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(cwd, 'ev.db') };
  const chunk = consumptionChunk();

  const first = await startBinary(binary, env, cwd);
  expect((await ownerRequest(first, 'PUT', '/v1/consumption/daily', chunk)).status).toBe(204);
  expect(await first.stop('SIGKILL')).not.toBe(0); // no clean shutdown: the answered write must still be there

  const second = await startBinary(binary, env, cwd);
  const history = await ownerRequest(second, 'GET', `/v1/consumption/history/${chunk.installationId}`);
  expect(await history.json()).toEqual({
    records: [{ date: chunk.date, day: chunk.day, lifetime: chunk.day }],
    lifetime: chunk.day,
  });
  expect(await second.stop()).toBe(0);
});
