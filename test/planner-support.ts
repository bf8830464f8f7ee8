/** Helpers of the planner forwarder tests: fake planners, services with fast timers, outbox fixtures. */
import { Database } from 'bun:sqlite';
import { spyOn } from 'bun:test';
import type { Config, PlannerConfig } from '../src/config.ts';
import type { SyncFile } from '../src/db/wal-sync.ts';
import { after, type PlannerTimers } from '../src/planner/forwarder.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import { startFakePlanner, type FakePlanner } from './fake-planner.ts';
import { startTestService, type TestService } from './support.ts';

export const KEY = 'planner-api-key-secret-0001';
export const TOKEN = 'planner-user-token-secret-0002';
export const OVERRIDE = 'planner-override-token-secret-0003';
export const T0 = 1_764_080_000;

export const cleanups: (() => Promise<unknown> | unknown)[] = [];

/** Stops what a test started (fake planners, services, spies), newest first: planner test files run it after each. */
export async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** Backoffs are recorded and skipped; other delays (10 s request, 5 s grace) run 20 times faster. */
export function fastTimers(backoffs: number[] = []): PlannerTimers {
  return {
    backoff: (ms, wake) => (backoffs.push(ms), after(0, wake)),
    delay: (ms, expire) => after(ms / 20, expire),
    random: () => 0.5,
  };
}

/** As fastTimers, but a request keeps its real 10 s deadline: one held at the planner by hand must not time out. */
export function heldRequestTimers(): PlannerTimers {
  return { ...fastTimers(), delay: after };
}

export function planner(reply?: FakePlanner['reply']): FakePlanner {
  const fake = startFakePlanner(reply);
  cleanups.push(() => fake.stop());
  return fake;
}

/** The forwarder's requests, counted as it sends them, before any reaches the planner. */
export function spyOnRequests() {
  const sent = spyOn(globalThis, 'fetch');
  cleanups.push(() => sent.mockRestore());
  return sent;
}

export function forwarding(fake: FakePlanner, overrides: Partial<PlannerConfig> = {}): Partial<Config> {
  return { planner: { url: fake.url, apiKey: KEY, defaultToken: TOKEN, tokens: new Map(), ...overrides } };
}

export async function service(
  config: Partial<Config>,
  options: { dir?: string; timers?: PlannerTimers; syncFile?: SyncFile } = {},
): Promise<TestService> {
  const started = await startTestService(config, {
    dir: options.dir,
    syncFile: options.syncFile,
    plannerTimers: options.timers ?? fastTimers(),
  });
  cleanups.push(() => started.close());
  return started;
}

export type Sample = Record<string, number | string>;

/** Runs `change` in one transaction on a connection of its own, as another process's would be. */
export function changeDatabase(target: TestService, change: (db: Database) => void): void {
  const db = new Database(target.config.databasePath);
  try {
    db.run('PRAGMA busy_timeout = 5000');
    db.transaction(change)(db);
  } finally {
    db.close();
  }
}

/** Test fixture: stores samples of each installation as waiting for the planner, as the telemetry write does. */
export function seedPending(target: TestService, installations: string | string[], samples: Sample[]): void {
  changeDatabase(target, (db) => {
    for (const installationId of [installations].flat()) {
      db.query('INSERT INTO installations (uuid) VALUES (?) ON CONFLICT (uuid) DO NOTHING').run(installationId);
      const { id } = db
        .query<{ id: number }, [string]>('SELECT id FROM installations WHERE uuid = ?')
        .get(installationId)!;
      for (const sample of samples) {
        const columns = ['installation', 'planner_state', ...Object.keys(sample)];
        db.query(`INSERT INTO samples (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`).run(
          id,
          PlannerState.pending,
          ...Object.values(sample),
        );
      }
    }
  });
}

/** Test fixture: withdraws every waiting sample, as a batch whose plannerSentUtc covers them does. */
export function withdrawPending(target: TestService): void {
  changeDatabase(target, (db) =>
    db.run(`UPDATE samples SET planner_state = ${PlannerState.none} WHERE planner_state = ${PlannerState.pending}`),
  );
}

/** Makes the next `count` writes of `op` fail as a full disk would; answers a function that ends the failures. */
export function failWrites(target: TestService, op: string, count: number): () => void {
  const { committer } = target.storage;
  const write = committer.write.bind(committer);
  let failures = count;
  committer.write = ((name, args) =>
    name === op && failures-- > 0
      ? Promise.reject(new Error('database or disk is full'))
      : write(name, args)) as typeof committer.write;
  return () => (failures = 0);
}

export function samplesAt(...utcs: number[]): Sample[] {
  return utcs.map((utc) => ({ utc, soc: 50 }));
}

export function states(target: TestService, installationId: string): [number, number][] {
  return target.storage.db
    .query<{ utc: number; state: number }, [string]>(
      `SELECT utc, planner_state AS state FROM samples
       WHERE installation = (SELECT id FROM installations WHERE uuid = ?) ORDER BY utc`,
    )
    .all(installationId)
    .map((row) => [row.utc, row.state]);
}

/** The forwarder's log lines (retries, given-up samples) without time stamps; planner.sent is tested elsewhere. */
export function plannerLog(target: TestService): string[] {
  const lines = target.log.lines.filter((line) => line.includes(' planner.') && !line.includes(' planner.sent '));
  return lines.map((line) => line.slice(line.indexOf(' ') + 1));
}

/** Seeds waiting samples and wakes the installation's loop, without waiting for it. */
export function forwardInBackground(target: TestService, installationId: string, samples: Sample[]): void {
  seedPending(target, installationId, samples);
  target.planner.recheck(installationId);
}

export async function forward(target: TestService, installationId: string, samples: Sample[]): Promise<void> {
  forwardInBackground(target, installationId, samples);
  await target.planner.idle();
}
