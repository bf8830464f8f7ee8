/** Assembles the service from its features. No listening here: tests call `app.handle()`. */
import { Elysia } from 'elysia';
import { chargingApi } from './charging/model.ts';
import { consumptionApi } from './consumption/model.ts';
import { deviceApi } from './devices/model.ts';
import { healthApi } from './health/model.ts';
import { openApiDocument, type ApiOperation } from './http/openapi.ts';
import { ownerApi } from './owner/model.ts';
import { pairingApi } from './pairing/model.ts';
import { relayApi } from './relay/model.ts';
import { telemetryApi } from './telemetry/model.ts';
import { ChargingHistory } from './charging/history.ts';
import { chargingRoutes } from './charging/routes.ts';
import { ChargingSessions } from './charging/service.ts';
import { monotonicNow } from './clock.ts';
import type { Config } from './config.ts';
import { Consumption } from './consumption/service.ts';
import { sessionToken } from './dashboard/cookie.ts';
import { dashboardLinks, isDashboardPath } from './dashboard/paths.ts';
import { ownerPages } from './dashboard/pages.tsx';
import { DASHBOARD_HEADERS, dashboardRoutes } from './dashboard/routes.tsx';
import { DashboardSessions, endSessionsOfAnotherPassword } from './dashboard/service.ts';
import { consumptionRoutes } from './consumption/routes.ts';
import { exportReader } from './db/open.ts';
import type { Storage } from './db/storage.ts';
import { Retention } from './deletion/retention.ts';
import { PurgeWatcher } from './deletion/service.ts';
import { DeviceRegistry } from './devices/service.ts';
import { deviceRoutes } from './devices/routes.ts';
import { readinessRoutes } from './health/routes.ts';
import { Readiness } from './health/service.ts';
import { Authenticator } from './http/auth.ts';
import { ingestBodyBounds, pairingBodyBounds } from './http/body.ts';
import { addressesOf, namedPeer, type PeerOf } from './http/client-address.ts';
import { answerError, pathOf } from './http/on-error.ts';
import { pipeline } from './http/pipeline.ts';
import { RepeatCounter } from './http/security-log.ts';
import { limits } from './limits.ts';
import type { Logger } from './log.ts';
import { PairingBook, revokeLeftovers } from './pairing/service.ts';
import { KnownAddresses } from './pairing/known-addresses.ts';
import { ApprovalLock } from './pairing/lockout.ts';
import { NO_STORE, pageHeadersOf } from './pairing/page.tsx';
import { pairingRoutes } from './pairing/routes.tsx';
import { Metrics } from './metrics/service.ts';
import { ownerDataRoutes } from './owner/routes.ts';
import { OwnerData } from './owner/service.ts';
import { PlannerForwarder, type PlannerTimers } from './planner/forwarder.ts';
import { PlannerStatus } from './planner/status.ts';
import { waitingSamplesCounter } from './planner/store.ts';
import type { PathHeaders } from './http/on-error.ts';
import type { SampleForwarder } from './telemetry/outbox.ts';
import { relayRoutes } from './relay/routes.ts';
import { Relay } from './relay/service.ts';
import { SampleHistory } from './telemetry/history.ts';
import { telemetryRoutes } from './telemetry/routes.ts';
import { Telemetry } from './telemetry/service.ts';

export interface AppOptions {
  config: Config;
  storage: Storage;
  log: Logger;
  /** The wall clock (ms since 1970): sample times, stored timestamps; injectable for tests. */
  now?: () => number;
  /**
   * The clock of durations (pairing requests' lifetimes, the lockout, the once-a-minute `lastSeenAt`),
   * in ms from any start: monotonic, so that a wall clock set back or forward (NTP catching up on a
   * board without a real-time clock)
   * neither stretches nor ends them. Injectable for tests.
   */
  elapsed?: () => number;
  /** The waits of the planner forwarder, injectable for tests. */
  plannerTimers?: PlannerTimers;
  /** Stands in for the planner forwarder in the telemetry routes, for tests of the hand-off alone. */
  forwarder?: SampleForwarder;
  /** The deadline of reading a request body (`limits.bodyReadMs`); injectable for tests of slow clients. */
  bodyReadMs?: number;
  /** How long a write may wait before `/v1/ready` says 503 (`limits.readyWaitMs`), injectable for tests. */
  readyWaitMs?: number;
  /** How long one count of the samples waiting for the planner stands (`limits.plannerWaitingReuseMs`), for tests. */
  plannerWaitingReuseMs?: number;
  /** The socket's peer of a request (`SocketPeers` of the listener); without a socket, the peers tests name. */
  peerOf?: PeerOf;
}

export function createApp({
  config,
  storage,
  log,
  now = Date.now,
  elapsed = monotonicNow,
  plannerTimers,
  forwarder,
  bodyReadMs = limits.bodyReadMs,
  readyWaitMs = limits.readyWaitMs,
  plannerWaitingReuseMs = limits.plannerWaitingReuseMs,
  peerOf = namedPeer,
}: AppOptions) {
  const metrics = new Metrics();
  // Before the first write, so that the commit histograms count every group the committer does.
  if (config.metricsListen) storage.committer.observe(metrics);
  const devices = new DeviceRegistry(storage.db, storage.committer, log, now, elapsed);
  devices.load();
  /** The start-up's own writes: serve only once they have committed. */
  const starting = [revokeLeftovers(devices, log)];
  const addressOf = addressesOf(config.trustProxy, peerOf);
  const badTokens = { repeats: new RepeatCounter(elapsed, log, 'auth.bad_token'), addressOf, log };
  const crossSiteLog = { repeats: new RepeatCounter(elapsed, log, 'pairing.cross_site'), log, addressOf };
  const auth = new Authenticator(config.ingestToken, devices, badTokens);
  const consumption = new Consumption(storage.db, storage.committer);
  const chargingSessions = new ChargingSessions(storage.committer, now);
  const planner = new PlannerForwarder({
    config: config.planner,
    db: storage.db,
    committer: storage.committer,
    log,
    timers: plannerTimers,
    now,
    elapsed,
  });
  planner.resume();
  const telemetry = new Telemetry(storage.committer, forwarder ?? planner, now);
  // The owner's reads: the /v1 routes and the dashboard's pages call these same services.
  const samples = new SampleHistory(storage.db);
  const sessions = new ChargingHistory(storage.db);
  const plannerStatus = new PlannerStatus(storage.db, planner);
  const ownerData = new OwnerData({
    devices,
    samples,
    consumption,
    sessions,
    samplesReader: () => exportReader(storage.db),
  });
  // What the server holds in memory of an installation that the `purge` command deletes.
  const purgeHolders = [consumption, planner, { forget: () => devices.reloadIfChanged() }];
  const purges = new PurgeWatcher(storage.db, storage.committer, purgeHolders, log);
  const retention = new Retention(storage.db, storage.committer, log, config.telemetryRetentionDays, now);
  const ingestBounds = { ...ingestBodyBounds, deadlineMs: bodyReadMs };

  // Without APPROVAL_PASSWORD the pairing and device paths do not exist (404); paired tokens still work.
  const pairing =
    config.approvalPassword === null
      ? null
      : {
          book: new PairingBook(devices, log, elapsed),
          lock: new ApprovalLock(config.approvalPassword, elapsed, { known: knownAddresses(storage, log, now), log }),
        };
  const apiDocument = openApiDocument(apiOperations(pairing !== null));
  const approval = pairing ? { lock: pairing.lock, auth, addressOf } : undefined;
  const routePipeline = pipeline({ auth, bodyBounds: ingestBounds, approval });

  // A home server is often reached by a short name (`http://nas/`): don't assume an 11-character origin.
  const app = new Elysia({ handler: { standardHostname: false } })
    .onError(answerError(log))
    .onRequest(storeNothingOfTheApi)
    .get('/v1/health', () => ({ status: 'ok' }))
    .get('/v1/openapi.json', () => apiDocument)
    .use(readinessRoutes(new Readiness(storage.db, storage.committer, log, readyWaitMs)))
    .use(telemetryRoutes({ pipeline: routePipeline, telemetry, log, now }))
    .use(consumptionRoutes({ pipeline: routePipeline, consumption }))
    .use(chargingRoutes({ pipeline: routePipeline, sessions: chargingSessions }))
    .use(relayRoutes(new Relay({ auth, bodyBounds: ingestBounds, telemetry, log, now })))
    .use(ownerDataRoutes({ pipeline: routePipeline, ownerData, samples, sessions, plannerStatus }));
  if (pairing) {
    const pairingBounds = { ...pairingBodyBounds, deadlineMs: bodyReadMs };
    const dashboardSessions = new DashboardSessions(storage.db, storage.committer, pairing.lock, now);
    starting.push(endSessionsOfAnotherPassword(storage.db, storage.committer, config.approvalPassword!, log));
    const signedIn = (request: Request) => dashboardSessions.holds(sessionToken(request, config));
    app
      .use(pairingRoutes({ ...pairing, config, bodyBounds: pairingBounds, log, crossSiteLog, signedIn, addressOf }))
      .use(deviceRoutes({ pipeline: routePipeline, devices, log }));
    const reads = { ownerData, samples, consumption, sessions, plannerStatus, devices };
    const links = dashboardLinks(config.publicUrl);
    app.use(
      dashboardRoutes({
        sessions: dashboardSessions,
        config,
        bodyBounds: pairingBounds,
        log,
        crossSiteLog,
        links,
        pages: ownerPages(reads, links, log, now),
        addressOf,
      }),
    );
  }

  const { committer } = storage;
  const plannerWaiting = waitingSamplesCounter(storage.db, plannerWaitingReuseMs);
  metrics.readFrom({ telemetry, consumption, sessions: chargingSessions, committer, planner, plannerWaiting, pairing });

  /** Stops the features' background work: the planner's sends (within its grace), the device and pairing timers. */
  const stop = async () => {
    await retention.stop();
    await planner.stop();
    devices.stop();
    await purges.stop();
    pairing?.book.stop();
  };

  /** Headers the listener's own answers (a refused `Host`, an escaped failure) carry for a path, as the app's do. */
  const listenerHeaders: PathHeaders = (path) => {
    if (isApiPath(path)) return API_HEADERS;
    if (!pairing) return {};
    return isDashboardPath(path) ? DASHBOARD_HEADERS : pageHeadersOf(path);
  };

  return {
    app,
    auth,
    /** The route pipeline, for tests that add routes of their own. */
    pipeline: routePipeline,
    devices,
    pairing,
    planner,
    metrics,
    purges,
    retention,
    ready: Promise.all(starting).then(() => {}),
    stop,
    listenerHeaders,
    /** The owner's reads (owner/service.ts): installations, samples, consumption, sessions, planner status, exports. */
    ownerData,
    samples,
    consumption,
    sessions,
    plannerStatus,
  };
}

export type Service = ReturnType<typeof createApp>;

type HeadersOfAnswer = Record<string, string | number>;

/** Every operation the API document describes: the pairing and device ones only when pairing is on. */
export const apiOperations = (pairingOn: boolean): ApiOperation[] => [
  ...healthApi,
  ...telemetryApi,
  ...consumptionApi,
  ...chargingApi,
  ...ownerApi,
  ...relayApi,
  ...(pairingOn ? [...pairingApi, ...deviceApi] : []),
];

/**
 * No answer of the API (ingest, relay, data, devices, pairing), errors included, may be kept by a cache: they
 * hold a car's data or a secret. Set before routing, so even an unknown path's 404 carries it.
 */
export function storeNothingOfTheApi({ request, set }: { request: Request; set: { headers: HeadersOfAnswer } }): void {
  if (isApiPath(pathOf(request.url))) set.headers['cache-control'] = NO_STORE;
}

const API_HEADERS = { 'Cache-Control': NO_STORE };

/** The API and the planner-compatible relay. Bun resolves dot segments first (`/x/../v1/devices` is `/v1/devices`). */
const isApiPath = (path: string) => path.startsWith('/v1/') || path.startsWith('/abrp/');

/** The addresses where the approval password was given right lately, read from the database. */
function knownAddresses(storage: Storage, log: Logger, now: () => number): KnownAddresses {
  const known = new KnownAddresses(storage.committer, log, now);
  known.load(storage.db);
  return known;
}
