/** The metrics listener (METRICS_LISTEN): `GET /metrics` in Prometheus's text format, on its own address. */
import type { Metrics } from './service.ts';

const EXPOSITION = { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' };

export function listenMetrics(metrics: Metrics, { host, port }: { host: string; port: number }) {
  return Bun.serve({
    hostname: host,
    port,
    reusePort: false,
    development: false,
    fetch(request) {
      if (new URL(request.url).pathname !== '/metrics') return new Response('not found\n', { status: 404 });
      if (request.method !== 'GET' && request.method !== 'HEAD')
        return new Response(null, { status: 405, headers: { Allow: 'GET, HEAD' } });
      return new Response(metrics.exposition(), { headers: EXPOSITION });
    },
  });
}
