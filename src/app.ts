/** Assembles the service from its features. No listening here: tests call `app.handle()`. */
import { Elysia } from 'elysia';
import { chargingRoutes } from './charging/routes.ts';
import type { Config } from './config.ts';
import { Consumption } from './consumption/history.ts';
import { consumptionRoutes } from './consumption/routes.ts';
import type { Storage } from './db/storage.ts';
import { DeviceRegistry } from './devices/registry.ts';
import { Authenticator } from './http/auth.ts';
import { answerError } from './http/on-error.ts';
import type { Logger } from './log.ts';

export interface AppOptions {
  config: Config;
  storage: Storage;
  log: Logger;
  /** The clock of everything time-dependent, injectable for tests. */
  now?: () => number;
}

export function createApp({ config, storage, log, now = Date.now }: AppOptions) {
  const devices = new DeviceRegistry(storage.db, storage.committer, log, now);
  devices.load();
  const auth = new Authenticator(config.ingestToken, devices);
  const consumption = new Consumption(storage.db, storage.committer);

  const app = new Elysia()
    .onError(answerError(log))
    .get('/v1/health', () => ({ status: 'ok' }))
    .use(consumptionRoutes(auth, consumption))
    .use(chargingRoutes(auth, storage.committer));

  return { app, auth, devices, consumption };
}

export type Service = ReturnType<typeof createApp>;
