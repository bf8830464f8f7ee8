/** Serving: the HTTP listener, the request log line, and a clean shutdown. */
import type { Server } from 'bun';
import { statSync } from 'node:fs';
import { createApp, type AppOptions, type Service } from './app.ts';
import { ConfigError, type Config } from './config.ts';
import { warnAboutExposure } from './exposure.ts';
import { databaseFile } from './db/open.ts';
import { openStorage, withStorage, type Storage, type StorageOptions } from './db/storage.ts';
import { holdOpenWhileDraining } from './http/body.ts';
import { recordPeer, SocketPeers } from './http/client-address.ts';
import { errorResponse, messages } from './http/errors.ts';
import { internalError, pathOf, type PathHeaders } from './http/on-error.ts';
import { limits, type ClientTimeouts } from './limits.ts';
import type { Logger } from './log.ts';
import { listenMetrics } from './metrics/listener.ts';
import { routePatterns } from './metrics/route-patterns.ts';
import { VERSION } from './version.ts';

export interface Running {
  url: URL;
  /** Where `/metrics` is served, when METRICS_LISTEN is set. */
  metricsUrl: URL | null;
  /** The app's feature state and its database, for end-to-end tests of a listening server. */
  service: Service;
  storage: Storage;
  stop(): Promise<void>;
  /** Settles should the writer fail: the service can no longer store anything and must be restarted. */
  fatal: Promise<Error>;
}

/**
 * Starts the service; `timeouts` (the waits for slow and silent clients) go to the routes and the
 * listener alike. `syncFile` is the storage's fault seam, `readyWaitMs` the readiness's wait and
 * `plannerWaitingReuseMs` how long the waiting gauge's count stands, for tests of a listening server.
 */
export async function serve(
  config: Config & Pick<StorageOptions, 'syncFile'> & Pick<AppOptions, 'readyWaitMs' | 'plannerWaitingReuseMs'>,
  log: Logger,
  timeouts: ClientTimeouts = limits,
): Promise<Running> {
  const storage = await openStorage(config, { serverLock: true });
  const fatal = new Promise<Error>((resolve) => {
    storage.committer.onBroken = (error) => {
      log.error('writer.failed', { reason: error.message });
      resolve(error);
    };
  });
  const { bodyReadMs } = timeouts;
  const { readyWaitMs, plannerWaitingReuseMs } = config;
  const peers = new SocketPeers();
  const service = await withStorage(storage, () =>
    createApp({ config, storage, log, bodyReadMs, readyWaitMs, plannerWaitingReuseMs, peerOf: peers.of }),
  );
  await service.ready;
  service.devices.watch();
  service.purges.watch();
  service.retention.start();
  service.pairing?.book.watch();

  let server: Listener;
  let metricsServer: MetricsListener | null = null;
  try {
    const observe = requestObserver(service, config);
    server = listen(service.app.fetch, config, log, timeouts, service.listenerHeaders, observe);
    peers.listening(server);
  } catch (error) {
    await closeService(service, storage);
    throw new ConfigError(`cannot listen on HOST ${config.host} PORT ${config.port}: ${(error as Error).message}`);
  }
  if (config.metricsListen) {
    try {
      metricsServer = listenMetrics(service.metrics, config.metricsListen);
    } catch (error) {
      await server.stop(true);
      await closeService(service, storage);
      const { host, port } = config.metricsListen;
      throw new ConfigError(`cannot listen on METRICS_LISTEN ${host}:${port}: ${(error as Error).message}`);
    }
  }

  logStarted(server, metricsServer, service, config, storage, log);
  const stop = stopOnce([server, metricsServer], service, storage, log);
  const metricsUrl = metricsServer && new URL('/metrics', metricsServer.url);
  return { url: server.url, metricsUrl, service, storage, stop, fatal };
}

type MetricsListener = ReturnType<typeof listenMetrics>;

/** Counts each answer by route pattern, method and status when metrics are served; else nothing is done per request. */
function requestObserver(service: Service, config: Config): RequestObserver | undefined {
  if (!config.metricsListen) return undefined;
  const routeOf = routePatterns(service.app.routes);
  return (method, path, status, ms) => service.metrics.requestServed(routeOf(path), method, status, ms / 1000);
}

type Listener = ReturnType<typeof listen>;

/** The start line, and the warnings an owner should see once at start-up. */
function logStarted(
  server: Listener,
  metrics: MetricsListener | null,
  service: Service,
  config: Config,
  storage: Storage,
  log: Logger,
): void {
  log.info('started', {
    version: VERSION,
    address: server.url.href,
    metrics: metrics ? new URL('/metrics', metrics.url).href : undefined,
    database: config.databasePath,
    durability: config.durability,
    devices: service.devices.size,
    pairing: service.pairing !== null,
    planner: service.planner.coverage,
  });
  if (config.maxGroupWrites !== undefined) {
    log.warn('bench.group_writes', {
      maxGroupWrites: config.maxGroupWrites,
      hint: 'a benchmark switch: unset EV_INGEST_BENCH_GROUP_WRITES',
    });
  }
  warnIfLinked(storage, log);
  warnAboutExposure(config, log);
  if (service.pairing && config.publicUrl === '') {
    log.warn('pairing.public_url_unset', {
      hint: 'approval URLs are derived from each request; set PUBLIC_URL to the address phones reach',
    });
  }
}

/** The graceful stop, run once however often it is asked for: requests in flight get the grace period. */
function stopOnce(
  [server, metricsServer]: [Listener, MetricsListener | null],
  service: Service,
  storage: Storage,
  log: Logger,
): () => Promise<void> {
  let stopping: Promise<void> | null = null;
  return () =>
    (stopping ??= (async () => {
      log.info('stopping');
      await metricsServer?.stop(true);
      let timer: Timer | undefined;
      const grace = new Promise<'timeout'>(
        (resolve) => (timer = setTimeout(() => resolve('timeout'), limits.shutdownGraceMs)),
      );
      if ((await Promise.race([server.stop(false), grace])) === 'timeout') await server.stop(true);
      clearTimeout(timer);
      await closeService(service, storage);
      log.info('stopped', { ...storage.committer.stats });
      log.flush();
    })());
}

/** What `exitWhenStopped` needs of the process; a seam for tests. */
export type ProcessControl = Pick<NodeJS.Process, 'on' | 'exit'>;

/**
 * Ends the process once the server has stopped: 0 after SIGTERM or SIGINT, 1 when its writer died (for
 * `Restart=on-failure`) or the stop failed. A third signal ends a hanging stop at once (exit 1).
 */
export function exitWhenStopped(running: Running, log: Logger, host: ProcessControl = process): void {
  // Read when the stop ends: a writer failing during a stop a signal began still exits 1.
  let writerFailed = false;
  let exiting: Promise<void> | null = null;
  const exitAfterStop = () =>
    (exiting ??= running.stop().then(
      () => host.exit(writerFailed ? 1 : 0),
      (error: Error) => {
        log.error('stop.failed', { reason: error.message });
        host.exit(1);
      },
    ));
  // Kept, not once: a second Ctrl-C, or a supervisor signalling the whole process group, must not end
  // the process by the signal's default action and cut the requests the first signal lets finish.
  let signals = 0;
  const onSignal = () => {
    if (++signals < limits.signalsToForceExit) return void exitAfterStop();
    log.warn('stop.forced', { signals });
    log.flush();
    host.exit(1);
  };
  host.on('SIGTERM', onSignal);
  host.on('SIGINT', onSignal);
  running.fatal.then(() => {
    writerFailed = true;
    return exitAfterStop();
  });
}

/** Warns of a hard-linked database file: opened by its other name, it escapes the -wal and the server lock. */
function warnIfLinked(storage: Storage, log: Logger): void {
  const file = databaseFile(storage.db);
  const links = statSync(file).nlink;
  if (links <= 1) return;
  log.warn('database.hard_linked', {
    file,
    links,
    hint:
      'another name of this file gets its own -wal and escapes the lock; ' +
      'open it by no other name, and back it up with `ev-ingest backup`',
  });
}

/** Stops the features' background work, then commits what is queued and closes the database. */
export async function closeService(service: Service, storage: Storage): Promise<void> {
  await service.stop();
  await storage.close();
}

type Handler = (request: Request) => Response | Promise<Response>;

/** Told of every answer of the listener: the request's method and path, the status, and the time taken. */
export type RequestObserver = (method: string, path: string, status: number, ms: number) => void;

const noHeaders: PathHeaders = () => ({});

/**
 * The HTTP listener: Bun's own body limit lifted (the pipeline owns it), invalid Hosts refused, slow
 * uploads given until the body deadline, and one log line a request.
 */
export function listen(
  handle: Handler,
  { host, port }: Pick<Config, 'host' | 'port'>,
  log: Logger,
  timeouts: ClientTimeouts = limits,
  headersFor: PathHeaders = noHeaders,
  observe?: RequestObserver,
) {
  return Bun.serve({
    hostname: host,
    port,
    // With development off Bun sets SO_REUSEPORT unless told not to: a second ev-ingest (another database)
    // would share the port and silently take half of every car's requests, instead of refusing to start.
    reusePort: false,
    // Never Bun's development error page (a stack trace) for a failure escaping the handler, whatever NODE_ENV says.
    development: false,
    // The pipeline reads bodies itself with the 512 KiB cap; Bun's own limit would answer an empty 413
    // before the token check.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Closes a kept-alive connection whose next request head has not come within this, trickled or not.
    idleTimeout: timeouts.idleTimeoutSeconds,
    fetch(request, server) {
      const started = performance.now();
      const restoreIdleTimeout = extendIdleTimeoutForBody(server, request, timeouts);
      const logged = (response: Response) => {
        restoreIdleTimeout();
        const path = pathOf(request.url);
        const ms = performance.now() - started;
        log.info('request', { method: request.method, path, status: response.status, ms: Math.round(ms * 100) / 100 });
        observe?.(request.method, path, response.status, ms);
        return response;
      };
      const answeredHere = (response: Response) => {
        for (const [name, value] of Object.entries(headersFor(pathOf(request.url)))) response.headers.set(name, value);
        return logged(response);
      };
      // A failure escaping the app still gets the 500 JSON answer, a log line, and the idle timer back.
      const failed = (error: unknown) => answeredHere(internalError(log, request, error));
      const hostRefused = () => answeredHere(errorResponse(400, messages.hostInvalid, { Connection: 'close' }));
      try {
        // RFC 9112 §3.2: more than one Host line is a 400; Bun joins them with a comma, which no host holds.
        if (request.headers.get('host')?.includes(',')) return hostRefused();
        if (!URL.canParse(request.url)) {
          // RFC 9112 §3.2: a Host no URL can hold (`a b`, empty, `a:b:c`) is a 400, before the app parses the url.
          if (request.headers.has('host')) return hostRefused();
          // HTTP/1.0 needs no Host (a load balancer's health check): the listening address stands in. The
          // rebuilt request has no socket, so its peer is named now, asked of the request Bun made.
          const peer = server.requestIP(request)?.address;
          request = recordPeer(new Request(new URL(request.url, server.url).href, request), peer);
        }
        const response = handle(request);
        const answered = (response: Response) => {
          const held = holdOpenWhileDraining(request, response);
          return held instanceof Promise ? held.then(logged, failed) : logged(held);
        };
        return response instanceof Promise ? response.then(answered, failed) : answered(response);
      } catch (error) {
        return failed(error);
      }
    },
  });
}

const nothingToRestore = () => {};

/**
 * During a body Bun restarts its idle timer only once 16 KiB × idleTimeout more have arrived (uWS's 16 KiB/s
 * throughput rule), so a car uploading slower would be cut off without an answer. While a body may still
 * arrive, the timer waits past the body reader's deadline, whose 400 comes first; the answer sets it back
 * for the next request, since Bun would keep it for the connection (oven-sh/bun#33611).
 */
function extendIdleTimeoutForBody(server: Server<undefined>, request: Request, timeouts: ClientTimeouts): () => void {
  if (request.body === null) return nothingToRestore;
  server.timeout(request, Math.ceil(timeouts.bodyReadMs / 1000) + limits.uploadIdleMarginSeconds);
  return () => server.timeout(request, timeouts.idleTimeoutSeconds);
}
