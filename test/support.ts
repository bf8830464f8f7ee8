/** Shared test harness: a fresh service on a real temporary SQLite file, driven by `app.handle()`. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp, type AppOptions, type Service } from '../src/app.ts';
import { DEFAULT_PLANNER_URL, type Config } from '../src/config.ts';
import type { DayValues } from '../src/consumption/totals.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import { openStorage, withStorage, type Storage } from '../src/db/storage.ts';
import { recordPeer } from '../src/http/client-address.ts';
import type { SyncFile } from '../src/db/wal-sync.ts';
import { createMemoryLogger } from '../src/log.ts';
import { closeService, serve, type Running } from '../src/server.ts';
import { VERSION } from '../src/version.ts';

export const OWNER_TOKEN = 'owner-token-for-tests-0123456789';
export const INSTALLATION = '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01';
export const OTHER_INSTALLATION = '0f8a9b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b';

/** The `n`th of a series of installation ids, for tests that need many. */
export const installationNumbered = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** A consumption chunk as the car app sends it to `PUT /v1/consumption/daily` (the contract's fields). */
export interface ConsumptionChunk {
  installationId: string;
  /** Unix milliseconds; the chunk's key within its installation. */
  recordedAt: number;
  /** The car's local day, `YYYY-MM-DD`. */
  date: string;
  day: DayValues;
  sohPercent?: number;
}

/**
 * A valid chunk like the contract's example (its numbers exact binary fractions, so sums compare exactly);
 * a test overrides the fields it is about, with any value (`undefined` leaves a field out of the JSON).
 */
export function consumptionChunk<Overrides extends Record<string, unknown> = {}>(
  overrides = {} as Overrides,
): Omit<ConsumptionChunk, keyof Overrides> & Overrides {
  const chunk: ConsumptionChunk = {
    installationId: INSTALLATION,
    recordedAt: 1_764_080_000_123,
    date: '2026-11-25',
    day: { km: 12.5, kwh: 2, hours: 0.25, socDrop: 3 },
  };
  return { ...chunk, ...overrides };
}

/** Every folder handed out by `tempDir`; test/cleanup.ts removes them once the whole run is over. */
const tempDirs: string[] = [];

export function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function tempDir(prefix = 'ev-ingest-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export function testConfig(dir: string, overrides: Partial<Config> = {}): Config {
  return {
    databasePath: join(dir, 'ev-ingest.db'),
    durability: 'full',
    logLevel: 'debug',
    logFormat: 'text',
    metricsListen: null,
    ingestToken: OWNER_TOKEN,
    approvalPassword: null,
    publicUrl: '',
    trustProxy: false,
    host: '127.0.0.1',
    port: 0,
    planner: { url: DEFAULT_PLANNER_URL, apiKey: null, defaultToken: null, tokens: new Map() },
    telemetryRetentionDays: null,
    ...overrides,
  };
}

export interface TestService extends Service {
  config: Config;
  storage: Storage;
  log: ReturnType<typeof createMemoryLogger>;
  dir: string;
  /** Sends a request to the app; a body object is sent as JSON. */
  request(method: string, path: string, options?: RequestOptions): Promise<Response>;
  close(): Promise<void>;
}

export interface RequestOptions {
  body?: unknown;
  token?: string | null;
  headers?: Record<string, string>;
  /** The client's socket address, as the listener records it (none: a request built in-process). */
  address?: string;
}

export interface TestServiceOptions
  extends Pick<AppOptions, 'now' | 'elapsed' | 'plannerTimers' | 'forwarder' | 'bodyReadMs' | 'readyWaitMs'> {
  dir?: string;
  /** How the WAL is synced with FULL durability (see heldSyncs). */
  syncFile?: SyncFile;
}

export async function startTestService(
  overrides: Partial<Config> = {},
  { dir: givenDir, syncFile, ...appOptions }: TestServiceOptions = {},
): Promise<TestService> {
  const dir = givenDir ?? tempDir();
  const config = testConfig(dir, overrides);
  const storage = await openStorage({ ...config, syncFile });
  const log = createMemoryLogger();
  const service = await withStorage(storage, () => createApp({ config, storage, log, ...appOptions }));
  await service.ready;
  let closed = false;
  return {
    ...service,
    config,
    storage,
    log,
    dir,
    request: (method, path, requestOptions) => service.app.handle(buildRequest(method, path, requestOptions)),
    async close() {
      if (closed) return;
      closed = true;
      await closeService(service, storage);
      if (!givenDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `ev-ingest devices …` from source (see `runCommand`). */
export function runDevicesCommand(databasePath: string, args: string[], env: Record<string, string> = {}) {
  return runCommand(databasePath, ['devices', ...args], { env });
}

/** `ev-ingest ARGS…` from source in its own process and a folder without the checkout's `.env`; `input` on stdin. */
export async function runCommand(
  databasePath: string,
  args: string[],
  { env = {}, input = '' }: { env?: Record<string, string>; input?: string } = {},
) {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, '../src/main.ts'), ...args], {
    cwd: tempDir(),
    env: { PATH: process.env.PATH, DATABASE_PATH: databasePath, ...env },
    stdin: new TextEncoder().encode(input),
    stdout: 'pipe',
    stderr: 'pipe',
  });
  return finished(child);
}

/**
 * A database at `path` of this version's schema as a newer ev-ingest would leave it: migrations dated
 * `later` (created_at, Unix ms) recorded after this version's own, as drizzle records them.
 */
export function migratedByNewerVersion(path: string, later: number[]): void {
  const db = openDatabase(path, 'fast');
  migrate(db);
  const record = db.query('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)');
  for (const createdAt of later) record.run(`newer-${createdAt}`, createdAt);
  db.close();
}

/**
 * The one line that refuses a database a newer ev-ingest migrated; `unknown` counts and dates its migrations,
 * `by` is the version that recorded itself as migrating it (none by `migratedByNewerVersion`).
 */
export const migratedByNewerRefusal = (path: string, unknown: string, by: string | null = null) =>
  `DATABASE_PATH ${path} cannot be used: it was migrated by ` +
  `${by === null ? `a newer ev-ingest than this ${VERSION}` : `ev-ingest ${by}, newer than this ${VERSION}`} ` +
  `(${unknown}); run ${by ?? 'that newer version'} or later, ` +
  'or restore the backup taken before the upgrade (docs/operations.md: Upgrades)';

/** Makes `path` unwritable even to root (tests run as root, whom no mode stops); answers how to undo it. */
export function immutable(path: string): () => void {
  if (Bun.spawnSync(['chattr', '+i', path]).exitCode !== 0) throw new Error(`chattr +i ${path} failed`);
  return () => void Bun.spawnSync(['chattr', '-i', path]);
}

/** Polls until `condition` holds; throws after `timeoutMs` so a test fails on its assertion, not on its timeout. */
export async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await Bun.sleep(5);
  }
}

/**
 * Settles as `promise` does, or rejects after `timeoutMs` saying what never came: a wait that a regression
 * would leave pending for ever fails the test with its own message instead of the test's timeout.
 */
export function within<T>(promise: Promise<T>, what: string, timeoutMs = 5000): Promise<T> {
  let timer: Timer | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/** A WAL sync the test finishes by hand; records the file of each call. */
export function heldSyncs() {
  const calls: { fd: number; finished: boolean; finish(error?: Error): void }[] = [];
  let released = false;
  const syncFile: SyncFile = (fd, done) => {
    const call = { fd, finished: false, finish: (error?: Error) => ((call.finished = true), done(error ?? null)) };
    calls.push(call);
    if (released) call.finish();
  };
  /** Finishes what is still held, and every later sync at once, so that a failed test still stops. */
  const release = () => {
    released = true;
    calls.filter((call) => !call.finished).forEach((call) => call.finish());
  };
  return { calls, syncFile, release };
}

export type HeldSyncs = ReturnType<typeof heldSyncs>;

export function buildRequest(
  method: string,
  path: string,
  options: RequestOptions = {},
  origin = 'http://localhost',
): Request {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? OWNER_TOKEN : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | Uint8Array | undefined;
  if (options.body !== undefined) {
    body =
      typeof options.body === 'string' || options.body instanceof Uint8Array
        ? options.body
        : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  return recordPeer(new Request(`${origin}${path}`, { method, headers, body }), options.address);
}

/** Sends requests to a listening server through its socket, as `TestService.request` sends them to the app. */
export function overSocket(running: Running): Pick<TestService, 'request'> {
  return { request: (method, path, options) => fetch(buildRequest(method, path, options, running.url.origin)) };
}

/** The error `serve` refuses `config` with; a start that succeeds is stopped and answered as an error saying so. */
export function refusedStart(config: Config): Promise<Error> {
  return serve(config, createMemoryLogger()).then(
    async (running) => (await running.stop(), new Error(`started on ${config.databasePath}`)),
    (error: Error) => error,
  );
}

/** How many samples of an installation the service's database holds. */
export function countSamples(service: Pick<TestService, 'storage'>, installationId: string): number {
  return service.storage.db
    .query<{ n: number }, [string]>(
      'SELECT count(*) AS n FROM samples JOIN installations ON installations.id = installation WHERE uuid = ?',
    )
    .get(installationId)!.n;
}

/** The parsed JSON body of a response along with its status, for exact assertions. */
export async function answer(response: Response): Promise<{ status: number; body: unknown }> {
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

/** Waits for a child process to exit; answers its exit code and everything it wrote to stdout and stderr. */
export async function finished(child: {
  exited: Promise<number>;
  stdout: ReadableStream<Uint8Array>;
  stderr: ReadableStream<Uint8Array>;
}): Promise<{ code: number; stdout: string; stderr: string }> {
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return { code, stdout, stderr };
}
