/** Serving: the HTTP listener, the request log line, and a clean shutdown. */
import type { Server } from 'bun';
import { statSync } from 'node:fs';
import { createApp, type Service } from './app.ts';
import { ConfigError, type Config } from './config.ts';
import { databaseFile } from './db/open.ts';
import { openStorage, withStorage, type Storage, type StorageOptions } from './db/storage.ts';
import { errorResponse, messages } from './http/errors.ts';
import { internalError, pathOf, type PathHeaders } from './http/on-error.ts';
import { limits, type ClientTimeouts } from './limits.ts';
import type { Logger } from './log.ts';
import { VERSION } from './version.ts';

export interface Running {
  url: URL;
  /** The app's feature state and its database, for end-to-end tests of a listening server. */
  service: Service;
  storage: Storage;
  stop(): Promise<void>;
  /** Settles should the writer fail: the service can no longer store anything and must be restarted. */
  fatal: Promise<Error>;
}

/**
 * Starts the service; `timeouts` (the waits for slow and silent clients) go to the routes and the
 * listener alike. `syncFile` is the storage's fault seam, for tests of a listening server.
 */
export async function serve(
  config: Config & Pick<StorageOptions, 'syncFile'>,
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
  const service = await withStorage(storage, () => createApp({ config, storage, log, bodyReadMs: timeouts.bodyReadMs }));
  await service.ready;
  service.devices.watch();
  service.purges.watch();
  service.retention.start();
  service.pairing?.book.watch();

  let server: Listener;
  try {
    server = listen(service.app.fetch, config, log, timeouts, service.listenerHeaders);
  } catch (error) {
    await closeService(service, storage);
    throw new ConfigError(`cannot listen on HOST ${config.host} PORT ${config.port}: ${(error as Error).message}`);
  }

  logStarted(server, service, config, storage, log);
  return { url: server.url, service, storage, stop: stopOnce(server, service, storage, log), fatal };
}

type Listener = ReturnType<typeof listen>;

/** The start line, and the warnings an owner should see once at start-up. */
function logStarted(server: Listener, service: Service, config: Config, storage: Storage, log: Logger): void {
  log.info('started', {
    version: VERSION,
    address: server.url.href,
    database: config.databasePath,
    durability: config.durability,
    devices: service.devices.size,
    pairing: service.pairing !== null,
    planner: service.planner.coverage,
  });
  if (config.maxGroupWrites !== undefined) {
    log.warn('bench.group_writes', { maxGroupWrites: config.maxGroupWrites, hint: 'a benchmark switch: unset EV_INGEST_BENCH_GROUP_WRITES' });
  }
  warnIfLinked(storage, log);
  if (service.pairing && config.publicUrl === '') {
    log.warn('pairing.public_url_unset', {
      hint: 'approval URLs are derived from each request; set PUBLIC_URL to the address phones reach',
    });
  }
}

/** The graceful stop, run once however often it is asked for: requests in flight get the grace period. */
function stopOnce(server: Listener, service: Service, storage: Storage, log: Logger): () => Promise<void> {
  let stopping: Promise<void> | null = null;
  return () =>
    (stopping ??= (async () => {
      log.info('stopping');
      let timer: Timer | undefined;
      const grace = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), limits.shutdownGraceMs)));
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
 * Ends the process once the server has stopped: exit 0 after SIGTERM or SIGINT; 1 when its writer
 * died (it can no longer store anything: a supervisor's `Restart=on-failure` starts it again) or the
 * stop failed. A second signal joins the stop under way; a third ends the process at once (exit 1), for
 * a stop that hangs (a stalled disk).
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

/**
 * SQLite names the -wal and -shm after the path it opens, and the one-server lock is named so too: a
 * second name for the file (a hard link, as `cp -al` or an rsnapshot of the folder makes) escapes both,
 * and a program opening it by that name while the server runs can corrupt the database.
 */
function warnIfLinked(storage: Storage, log: Logger): void {
  const file = databaseFile(storage.db);
  const links = statSync(file).nlink;
  if (links <= 1) return;
  log.warn('database.hard_linked', {
    file,
    links,
    hint: 'another name of this file gets its own -wal and escapes the lock; open it by no other name, and back it up with `ev-ingest backup`',
  });
}

/** Stops the features' background work, then commits what is queued and closes the database. */
export async function closeService(service: Service, storage: Storage): Promise<void> {
  await service.stop();
  await storage.close();
}

type Handler = (request: Request) => Response | Promise<Response>;

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
    // Closes a kept-alive connection whose next request head has not come within this, trickled or not (README).
    idleTimeout: timeouts.idleTimeoutSeconds,
    fetch(request, server) {
      const started = performance.now();
      const restoreIdleTimeout = extendIdleTimeoutForBody(server, request, timeouts);
      const logged = (response: Response) => {
        restoreIdleTimeout();
        log.info('request', {
          method: request.method,
          path: pathOf(request.url),
          status: response.status,
          ms: Math.round((performance.now() - started) * 100) / 100,
        });
        return response;
      };
      const answeredHere = (response: Response) => {
        for (const [name, value] of Object.entries(headersFor(pathOf(request.url)))) response.headers.set(name, value);
        return logged(response);
      };
      // The app answers its own failures; one escaping it still gets the contract's 500, logged, and the idle timer back.
      const failed = (error: unknown) => answeredHere(internalError(log, request, error));
      const hostRefused = () => answeredHere(errorResponse(400, messages.hostInvalid, { Connection: 'close' }));
      try {
        // RFC 9112 §3.2: more than one Host line is a 400; Bun joins them with a comma, which no host holds.
        if (request.headers.get('host')?.includes(',')) return hostRefused();
        if (!URL.canParse(request.url)) {
          // RFC 9112 §3.2: a Host that no URL can hold (`a b`, empty, `a:b:c`) is a 400, before the app parses the url.
          if (request.headers.has('host')) return hostRefused();
          // HTTP/1.0 needs no Host (a load balancer's health check): the listening address stands in.
          request = new Request(new URL(request.url, server.url).href, request);
        }
        const response = handle(request);
        return response instanceof Promise ? response.then(logged, failed) : logged(response);
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
