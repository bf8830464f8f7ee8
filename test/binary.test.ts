/** End to end: the compiled binary, copied alone into a fresh folder, on a temporary database. */
import { Database } from 'bun:sqlite';
import { beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pkg from '../package.json' with { type: 'json' };
import { compiledBinary, startBinary } from './binary.ts';
import { OWNER_TOKEN, tempDir } from './support.ts';

let binary: string;
beforeAll(async () => {
  binary = await compiledBinary();
}, 120_000);

function run(args: string[], env: Record<string, string> = {}) {
  const result = Bun.spawnSync([binary, ...args], { cwd: tempDir(), env: { PATH: process.env.PATH ?? '', ...env } });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

describe('command line', () => {
  test('--version and --help answer and exit 0', () => {
    expect(run(['--version'])).toEqual({ code: 0, stdout: `ev-ingest ${pkg.version}\n`, stderr: '' });
    const help = run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('INGEST_TOKEN (required, at least 24 characters)');
  });

  test('an unknown command exits 2 with the usage', () => {
    const result = run(['frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toStartWith('ev-ingest: unknown command "frobnicate"');
  });

  test('bad configuration exits 1 at once with one line naming the variable', () => {
    expect(run([], { INGEST_TOKEN: 'too-short' })).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ev-ingest: INGEST_TOKEN must be set to at least 24 characters (it has 9)\n',
    });
    expect(run([], { INGEST_TOKEN: OWNER_TOKEN, PORT: 'eighty' }).stderr).toBe(
      'ev-ingest: PORT must be a whole number from 0 to 65535 (0 picks a free port)\n',
    );
  });
});

describe('serving', () => {
  test('alone in a fresh folder it creates and migrates its database, serves, and stops cleanly on SIGTERM', async () => {
    const cwd = dirname(binary);
    const server = await startBinary(binary, { INGEST_TOKEN: OWNER_TOKEN }, cwd);
    const health = await fetch(new URL('/v1/health', server.url));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const denied = await fetch(new URL('/v1/nothing', server.url), { method: 'POST' });
    expect(denied.status).toBe(404);
    expect(await server.stop('SIGTERM')).toBe(0);

    const path = join(cwd, 'data', 'ev-ingest.db');
    expect(existsSync(path)).toBe(true);
    // A clean stop closes both connections, which checkpoints the WAL away.
    expect(existsSync(`${path}-wal`)).toBe(false);
    const db = new Database(path, { readonly: true });
    expect(db.query("SELECT name FROM sqlite_master WHERE name = 'devices'").get()).toEqual({ name: 'devices' });
    db.close();
  });

  test('the log holds one line per request, without the query string or the token', async () => {
    const cwd = tempDir();
    const server = await startBinary(binary, { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: join(cwd, 'x.db') }, cwd);
    await fetch(new URL('/v1/health?code=WDJB-MJHT', server.url), { headers: { authorization: `Bearer ${OWNER_TOKEN}` } });
    expect(await server.stop('SIGINT')).toBe(0);
    const output = server.output();
    expect(output).toMatch(/ info request method=GET path=\/v1\/health status=200 ms=[\d.]+\n/);
    expect(output).toMatch(/ info started version=\S+ address=\S+ database=\S+x\.db durability=full /);
    expect(output).not.toContain('WDJB');
    expect(output).not.toContain(OWNER_TOKEN);
  });

  test('a database file that is not SQLite is refused at start-up', async () => {
    const cwd = tempDir();
    await Bun.write(join(cwd, 'data', 'ev-ingest.db'), 'not a database');
    const result = Bun.spawnSync([binary], { cwd, env: { PATH: '', INGEST_TOKEN: OWNER_TOKEN } });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.toString()).toBe(
      'ev-ingest: DATABASE_PATH ./data/ev-ingest.db is not an SQLite database; refusing to open it\n',
    );
  });
});
