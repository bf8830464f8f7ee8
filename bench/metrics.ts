/**
 * Metrics benchmark: 10-sample telemetry batches against two compiled services in the same run, one
 * with METRICS_LISTEN set (scraped after each run, as Prometheus would every 15 s) and one without,
 * alternating A/B. The figure is the median over rounds of each round's own ratio (on ÷ off).
 * Run: `bun bench/metrics.ts` (or `bun run bench`).
 *
 * Environment: BENCH_SECONDS (per wrk run, default 8), BENCH_ROUNDS (runs of each side, default 5).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { routePatterns } from '../src/metrics/route-patterns.ts';
import { Metrics } from '../src/metrics/service.ts';
import { alternate, buildBinary, knob, median, medianRun, startService, telemetryLoad } from './lib.ts';

const CONNECTIONS = 32;
const BATCH_SIZE = 10;
const SECONDS = knob('BENCH_SECONDS', 8);
const ROUNDS = knob('BENCH_ROUNDS', 5);
const LOAD = { connections: CONNECTIONS, seconds: SECONDS, batchSize: BATCH_SIZE };
const load = (url: URL) => telemetryLoad(url, LOAD);

/** What metrics add to one request (its route's pattern, the counts) in ns, measured apart from the machine's noise. */
function perRequestNs(): number {
  const metrics = new Metrics();
  const routeOf = routePatterns([
    { path: '/v1/telemetry' },
    { path: '/v1/consumption/history/*' },
    { path: '/v1/devices/:id/revoke' },
  ]);
  const calls = 1_000_000;
  const paths = ['/v1/telemetry', '/v1/consumption/history/5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01'];
  const began = performance.now();
  for (let i = 0; i < calls; i++) metrics.requestServed(routeOf(paths[i & 1]!), 'POST', 200, 0.002);
  return ((performance.now() - began) * 1e6) / calls;
}

const fmt = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

if (import.meta.main) {
  await buildBinary();
  const on = await startService({ METRICS_LISTEN: '127.0.0.1:0' });
  const off = await startService();
  const metricsUrl = new URL(/ metrics=(\S+)/.exec(on.output())![1]!);
  console.log(
    `# metrics on vs off: ${BATCH_SIZE}-sample telemetry, ${CONNECTIONS} connections, ` +
      `${SECONDS} s per run, ${ROUNDS} rounds`,
  );
  try {
    const [withMetrics, without] = await alternate(
      ROUNDS,
      async () => {
        const result = await load(on.url);
        const scrape = await (await fetch(metricsUrl)).text();
        if (!/^ev_ingest_samples_stored_total [1-9]/m.test(scrape)) throw new Error('the metrics counted no sample');
        return result;
      },
      () => load(off.url),
    );
    const ratios = withMetrics.map((run, round) => run.requestsPerSecond / without[round]!.requestsPerSecond);
    const p99Ratios = withMetrics.map((run, round) => run.p99Ms / without[round]!.p99Ms);
    console.log('\ntarget        batches/s    p50 ms   p99 ms');
    for (const [name, runs] of [
      ['metrics on', withMetrics],
      ['metrics off', without],
    ] as const) {
      const { p50Ms, p99Ms } = medianRun(runs);
      const rate = median(runs.map((run) => run.requestsPerSecond));
      console.log(
        `${name.padEnd(12)} ${fmt(rate).padStart(10)} ${fmt(p50Ms, 2).padStart(9)} ${fmt(p99Ms, 2).padStart(8)}`,
      );
    }
    console.log(
      `\non ÷ off, throughput: ${fmt(median(ratios), 3)} ` +
        `(rounds: ${ratios.map((r) => fmt(r, 3)).join(', ')}); target ≥ 0.97`,
    );
    console.log(`metrics' own work per request, measured alone: ${fmt(perRequestNs())} ns`);
    console.log(
      `on ÷ off, p99 latency: ${fmt(median(p99Ratios), 3)} (rounds: ${p99Ratios.map((r) => fmt(r, 3)).join(', ')})`,
    );
    const resultsDir = join(import.meta.dir, 'results');
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(
      join(resultsDir, `metrics-${Date.now()}.json`),
      JSON.stringify({ withMetrics, without, ratios, p99Ratios }, null, 2),
    );
  } finally {
    await on.stop();
    await off.stop();
  }
}
