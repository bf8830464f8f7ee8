/**
 * Consumption benchmark on a car that has uploaded for years: one chunk every 2 minutes around the
 * clock (720 a day; 10 years are 2.6 million chunks). Measures the history read-back (p99 at a paced
 * 200 requests/s, answers/s at saturation), chunk PUTs/s at 32 connections, and, as references in the
 * same run, GET /v1/health and a one-row charging-session PUT of the same binary.
 * Run: `bun bench/consumption.ts` (or `bun run bench`, which runs every benchmark); FULL durability.
 *
 * Environment: BENCH_SECONDS (length of each paced and wrk load, default 10), BENCH_YEARS (years of
 * chunks seeded, default 10; a fraction seeds fewer days, for a quick check).
 */
import { join } from 'node:path';
import {
  AUTHORIZATION,
  benchDir,
  buildBinary,
  formatLoad,
  knob,
  chunkPutScript,
  LUA_AUTHORIZATION,
  putScript,
  paced,
  quantile,
  startService,
  wrk,
  type LoadResult,
  type Service,
} from './lib.ts';
import { closeSeedDatabase, openSeedDatabase, seedChunks } from './seed.ts';

const INSTALLATION = '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01';
const YEARS = knob('BENCH_YEARS', 10);
const CHUNKS_PER_DAY = 720;
const FIRST_DAY = Date.UTC(2016, 0, 1);
const SECONDS = knob('BENCH_SECONDS', 10);
const PACE = 200;

/** The database of a car that has uploaded chunks for YEARS. */
function seed(path: string): { chunks: number; days: number } {
  const db = openSeedDatabase(path);
  const seeded = seedChunks(db, {
    installationId: INSTALLATION,
    years: YEARS,
    chunksPerDay: CHUNKS_PER_DAY,
    firstDay: FIRST_DAY,
  });
  closeSeedDatabase(db, path);
  return seeded;
}

/** Chunks of today's driving, each at a new recordedAt. */
const chunkPuts = chunkPutScript(INSTALLATION);
/**
 * App 2.2.39's snapshots of a day whose chunks are older than the chunk PUTs' (run after them): a write
 * that must tell whether a delta of its day follows the day's newest snapshot.
 */
const snapshotPuts = putScript(`return wrk.format(nil, nil, nil, string.format('{"installationId":"${INSTALLATION}",' ..
    '"recordedAt":%d,"date":"2026-01-01","day":{"km":1.5,"kwh":0.25,"hours":0.03,"socDrop":0.4},' ..
    '"lifetime":{"km":1.5,"kwh":0.25,"hours":0.03,"socDrop":0.4},"sohPercent":97.5}',
    1767225600000 + offset / 1000 + n))`);
/** The reference write: a minimal charging session, one row and no sums. */
const sessionPuts = putScript(`return wrk.format(nil, "/v1/charging-sessions/s" .. k, nil, string.format(
    '{"installationId":"${INSTALLATION}","startedAt":%d,"endedAt":%d,"energyKwh":30}', k, k))`);

/** The history's cost when it is not cached: the first read after a chunk write (median of 30). */
async function uncachedMs(service: Service, historyUrl: URL): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 30; i += 1) {
    await fetch(new URL('/v1/consumption/daily', service.url), {
      method: 'PUT',
      headers: { ...AUTHORIZATION, 'content-type': 'application/json' },
      body: JSON.stringify({
        installationId: INSTALLATION,
        recordedAt: 1767225600000 + i,
        date: '2026-01-01',
        day: { km: 1, kwh: 0.2, hours: 0.03, socDrop: 0.3 },
      }),
    });
    const started = performance.now();
    await (await fetch(historyUrl, { headers: AUTHORIZATION })).arrayBuffer();
    times.push(performance.now() - started);
  }
  return quantile(times, 0.5);
}

if (import.meta.main) {
  await buildBinary();
  const databasePath = join(benchDir(), 'ev.db');
  const started = performance.now();
  const seeded = seed(databasePath);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`# consumption: seeded ${seeded.chunks} chunks over ${seeded.days} days in ${seconds} s`);

  const service = await startService({}, databasePath);
  try {
    const historyUrl = new URL(`/v1/consumption/history/${INSTALLATION}`, service.url);
    const healthUrl = new URL('/v1/health', service.url);
    const body = await (await fetch(historyUrl, { headers: AUTHORIZATION })).text();
    const records = (JSON.parse(body) as { records: unknown[] }).records.length;
    console.log(`history answer: ${records} records, ${(body.length / 1024).toFixed(1)} KiB`);
    const uncached = (await uncachedMs(service, historyUrl)).toFixed(2);
    console.log(`history, first read after a chunk write (not cached): median ${uncached} ms`);

    for (const [name, url] of [
      ['history', historyUrl],
      ['health (reference)', healthUrl],
    ] as const) {
      const pace = await paced(url, { perSecond: PACE, seconds: SECONDS });
      console.log(
        `${name} at a paced ${PACE} requests/s for ${SECONDS} s: p50 ${pace.p50Ms.toFixed(2)} ms, ` +
          `p99 ${pace.p99Ms.toFixed(2)} ms, max ${pace.maxMs.toFixed(2)} ms, failed ${pace.failed}`,
      );
    }

    const health = await wrk(healthUrl, { seconds: SECONDS });
    const history = await wrk(historyUrl, { seconds: SECONDS, script: LUA_AUTHORIZATION });
    const puts = await wrk(new URL('/v1/consumption/daily', service.url), { seconds: SECONDS, script: chunkPuts });
    const snapshots = await wrk(new URL('/v1/consumption/daily', service.url), {
      seconds: SECONDS,
      script: snapshotPuts,
    });
    const sessions = await wrk(new URL('/v1/charging-sessions/x', service.url), {
      seconds: SECONDS,
      script: sessionPuts,
    });
    console.log(formatLoad('GET /v1/health (reference), 32 connections', health));
    console.log(formatLoad('GET history, 32 connections (target ≥ 1000/s)', history));
    console.log(formatLoad('PUT chunk, 32 connections (target ≥ 5000/s)', puts));
    console.log(formatLoad('PUT snapshot of an earlier day (app 2.2.39), 32 connections', snapshots));
    console.log(formatLoad('PUT charging session (reference write)', sessions));
    const ratio = (a: LoadResult, b: LoadResult) =>
      `${((a.requestsPerSecond / b.requestsPerSecond) * 100).toFixed(0)}%`;
    console.log(
      `  history / health: ${ratio(history, health)}, PUT chunk / PUT session: ${ratio(puts, sessions)}, ` +
        `PUT snapshot / PUT session: ${ratio(snapshots, sessions)}`,
    );
  } finally {
    await service.stop();
  }
}
