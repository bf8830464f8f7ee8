/** Serving: the HTTP listener, the request log line, and a clean shutdown. */
import { createApp } from './app.ts';
import type { Config } from './config.ts';
import { openStorage } from './db/storage.ts';
import { pathOf } from './http/on-error.ts';
import { limits } from './limits.ts';
import type { Logger } from './log.ts';
import { VERSION } from './version.ts';

export interface Running {
  url: URL;
  stop(): Promise<void>;
}

export async function serve(config: Config, log: Logger): Promise<Running> {
  const storage = await openStorage(config);
  const service = createApp({ config, storage, log });
  service.devices.watch();

  const handle = service.app.fetch;
  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    // The pipeline reads bodies itself with the 512 KiB cap; Bun's own limit would answer an empty 413
    // before the token check.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Closes connections silent this long; it resets on every byte, so a trickling body is cut off by
    // the body reader's deadline instead, and trickling headers only by a reverse proxy (README).
    idleTimeout: limits.idleTimeoutSeconds,
    async fetch(request) {
      const started = performance.now();
      const response = await handle(request);
      log.info('request', {
        method: request.method,
        path: pathOf(request.url),
        status: response.status,
        ms: Math.round((performance.now() - started) * 100) / 100,
      });
      return response;
    },
  });

  log.info('started', {
    version: VERSION,
    address: server.url.href,
    database: config.databasePath,
    durability: config.durability,
    devices: service.devices.size,
  });

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      log.info('stopping');
      const drained = server.stop(false);
      const grace = Bun.sleep(limits.shutdownGraceMs).then(() => 'timeout' as const);
      if ((await Promise.race([drained, grace])) === 'timeout') await server.stop(true);
      service.devices.stop();
      await storage.close();
      log.info('stopped');
      log.flush();
    })());

  return { url: server.url, stop };
}
