/** Assembles the service from its features. No listening here: tests call `app.handle()`. */
import { Elysia } from 'elysia';
import type { Config } from './config.ts';
import type { Storage } from './db/storage.ts';
import { DeviceRegistry } from './devices/registry.ts';
import { Authenticator } from './http/auth.ts';
import { answerError } from './http/on-error.ts';
import type { Logger } from './log.ts';
import { PlannerForwarder, type PlannerTimers } from './planner/forwarder.ts';

export interface AppOptions {
  config: Config;
  storage: Storage;
  log: Logger;
  /** The clock of everything time-dependent, injectable for tests. */
  now?: () => number;
  /** The waits of the planner forwarder, injectable for tests. */
  plannerTimers?: PlannerTimers;
}

export function createApp({ config, storage, log, now = Date.now, plannerTimers }: AppOptions) {
  const devices = new DeviceRegistry(storage.db, storage.committer, log, now);
  devices.load();
  const auth = new Authenticator(config.ingestToken, devices);
  const planner = new PlannerForwarder({ config: config.planner, db: storage.db, committer: storage.committer, log, timers: plannerTimers });
  planner.resume();

  const app = new Elysia()
    .onError(answerError(log))
    .get('/v1/health', () => ({ status: 'ok' }));

  return { app, auth, devices, planner };
}

export type Service = ReturnType<typeof createApp>;
