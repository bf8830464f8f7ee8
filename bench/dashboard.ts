/**
 * Dashboard benchmark: one installation's page on a car with 10 years of consumption chunks and 17
 * million samples. Measures the page's latency at a paced 50 requests/s (open loop, from this process),
 * then 10-sample telemetry ingest at full load (wrk, 32 connections, other installations) alone and while
 * the page is requested 10 times a second, alternating A/B, and reports the ingest rate's ratio. A second,
 * idle installation whose last sample is older than half of the busy car's is read too: its page and the
 * installations page (samples today of both) at 5 requests/s.
 * Run: `bun bench/dashboard.ts` (or `bun run bench`); FULL durability.
 *
 * Environment: BENCH_SECONDS (each load, default 10), BENCH_ROUNDS (A/B rounds, default 3), BENCH_YEARS
 * (years of chunks, default 10), BENCH_SAMPLES (samples seeded, default 17,000,000).
 */
import { join } from 'node:path';
import {
  alternate,
  benchDir,
  buildBinary,
  knob,
  LUA_AUTHORIZATION,
  median,
  paced,
  quantile,
  startService,
  wrk,
  type LoadResult,
} from './lib.ts';
import { closeSeedDatabase, openSeedDatabase, seedChunks, seedSamples } from './seed.ts';

const INSTALLATION = '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01';
const IDLE_INSTALLATION = '0f8a9b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b';
const IDLE_SAMPLES = 1000;
const PASSWORD = 'bench-approval-password';
const YEARS = knob('BENCH_YEARS', 10);
const SAMPLES = knob('BENCH_SAMPLES', 17_000_000);
const SECONDS = knob('BENCH_SECONDS', 10);
const ROUNDS = knob('BENCH_ROUNDS', 3);
const CHUNKS_PER_DAY = 48;
const DAY_MS = 86_400_000;
const SCRIPT = LUA_AUTHORIZATION + (await Bun.file(join(import.meta.dir, 'telemetry.lua')).text());

/**
 * The times the server's request log gives the installation page: from the request's arrival to its
 * answer, without the client's and the kernel's queues, which a loaded machine stretches.
 */
function serverMs(log: string, path = /\/dashboard\/installations\/\S+/): number[] {
  const line = new RegExp(`path=\\S*${path.source} status=200 ms=([\\d.]+)`, 'g');
  return [...log.matchAll(line)].map((match) => Number(match[1]));
}

/** CPU time (user and system) a process has used, in ms, from /proc (Linux; clock ticks of 10 ms). */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await Bun.file(`/proc/${pid}/stat`).text()).split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

await buildBinary();
const databasePath = join(benchDir(), 'ev.db');
const seedStarted = performance.now();
const db = openSeedDatabase(databasePath);
const lastUtc = Math.floor(Date.now() / 1000) - 60;
// The years end today, so the page's 30, 90 and 365 days are full.
const firstDay = Math.floor(Date.now() / DAY_MS) * DAY_MS - Math.round(YEARS * 365.25 - 1) * DAY_MS;
const { chunks, days } = seedChunks(db, {
  installationId: INSTALLATION,
  years: YEARS,
  chunksPerDay: CHUNKS_PER_DAY,
  firstDay,
});
const spacing = Math.max(1, Math.floor((YEARS * 365.25 * 86_400) / SAMPLES));
seedSamples(db, INSTALLATION, SAMPLES, lastUtc, spacing);
seedSamples(db, IDLE_INSTALLATION, IDLE_SAMPLES, lastUtc - Math.floor(SAMPLES / 2) * spacing, 60);
closeSeedDatabase(db, databasePath);
const seedSeconds = (performance.now() - seedStarted) / 1000;
console.log(
  `# dashboard: seeded ${chunks} chunks (${days} days) and ${SAMPLES} samples in ${seedSeconds.toFixed(0)} s`,
);

const service = await startService({ APPROVAL_PASSWORD: PASSWORD }, databasePath);
try {
  const signIn = await fetch(new URL('/dashboard/sign-in', service.url), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `password=${PASSWORD}`,
  });
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
  const headers = { cookie };
  const page = new URL(`/dashboard/installations/${INSTALLATION}`, service.url);
  const first = await fetch(page, { headers });
  const html = await first.text();
  if (first.status !== 200 || !html.includes('<svg')) throw new Error(`the page answered ${first.status}`);
  console.log(`page: ${(html.length / 1024).toFixed(0)} KiB of HTML`);

  for (const period of [30, 365]) {
    const url = new URL(`${page.href}?days=${period}`);
    await paced(url, { perSecond: 10, seconds: 2, headers }); // warm-up
    const logged = service.output().length;
    const cpuBefore = await cpuMs(service.process.pid);
    const result = await paced(url, { perSecond: 50, seconds: SECONDS, headers });
    const cpuPerPage = ((await cpuMs(service.process.pid)) - cpuBefore) / (50 * SECONDS);
    const inServer = serverMs(service.output().slice(logged));
    console.log(
      `installation page (${period} days) at 50/s: p50 ${result.p50Ms.toFixed(2)} ms  ` +
        `p99 ${result.p99Ms.toFixed(2)} ms  max ${result.maxMs.toFixed(2)} ms  failed ${result.failed}; ` +
        `in the server p50 ${quantile(inServer, 0.5).toFixed(2)} ms  ` +
        `p99 ${quantile(inServer, 0.99).toFixed(2)} ms; server CPU ${cpuPerPage.toFixed(2)} ms a page`,
    );
  }

  for (const [label, url, path] of [
    [
      'idle installation page',
      new URL(`/dashboard/installations/${IDLE_INSTALLATION}`, service.url),
      new RegExp(IDLE_INSTALLATION),
    ],
    ['installations page', new URL('/dashboard', service.url), /\/dashboard/],
  ] as const) {
    const logged = service.output().length;
    const result = await paced(url, { perSecond: 5, seconds: SECONDS, headers });
    const inServer = serverMs(service.output().slice(logged), path);
    console.log(
      `${label} at 5/s: p50 ${result.p50Ms.toFixed(2)} ms  p99 ${result.p99Ms.toFixed(2)} ms  ` +
        `failed ${result.failed}; in the server p50 ${quantile(inServer, 0.5).toFixed(2)} ms  ` +
        `p99 ${quantile(inServer, 0.99).toFixed(2)} ms`,
    );
  }

  let runId = 0;
  const ingest = (): Promise<LoadResult> => {
    runId += 1;
    return wrk(new URL('/v1/telemetry', service.url), {
      connections: 32,
      seconds: SECONDS,
      script: SCRIPT,
      args: ['10', String(runId)],
    });
  };
  const ingestWithPage = async (): Promise<LoadResult> => {
    const [result, pages] = await Promise.all([ingest(), paced(page, { perSecond: 10, seconds: SECONDS, headers })]);
    console.log(
      `  page at 10/s during ingest: p50 ${pages.p50Ms.toFixed(2)} ms  ` +
        `p99 ${pages.p99Ms.toFixed(2)} ms  failed ${pages.failed}`,
    );
    return result;
  };
  const [alone, withPage] = await alternate(ROUNDS, ingest, ingestWithPage);
  const rates = (runs: LoadResult[]) => runs.map((run) => run.requestsPerSecond.toFixed(0)).join(', ');
  const ratios = alone.map((run, i) => withPage[i]!.requestsPerSecond / run.requestsPerSecond);
  console.log(`10-sample ingest alone:         ${rates(alone)} batches/s`);
  console.log(`10-sample ingest with the page: ${rates(withPage)} batches/s`);
  const percent = (ratio: number) => (ratio * 100).toFixed(1);
  console.log(
    `ingest kept while the page is read 10×/s: ${percent(median(ratios))}% ` +
      `(rounds ${ratios.map(percent).join(', ')}%)`,
  );
} finally {
  await service.stop();
}
