/**
 * The cost of checking bodies by compiled schemas (and of the rest of this branch's design work):
 * chunk PUTs and POST /v1/telemetry in 10- and 100-sample batches against the binary of a base commit
 * and of this checkout, alternating in one run. Run: `bun bench/design.ts` (or `bun run bench`).
 *
 * Environment: BENCH_BASE (the commit measured against, default main; it must differ from this
 * checkout's), BENCH_SECONDS (per wrk run, default 6), BENCH_ROUNDS (runs of each side, default 5).
 */
import { rmSync } from 'node:fs';
import { alternate, BINARY, buildBinary, chunkPutScript, knob, median, telemetryLoad, wrk, type LoadResult } from './lib.ts';
import { baseCommit, buildRevision, startSide } from './strangers.ts';

const BASE = process.env.BENCH_BASE || 'main';
const SECONDS = knob('BENCH_SECONDS', 6);
const ROUNDS = knob('BENCH_ROUNDS', 5);
const CONNECTIONS = 32;
const INSTALLATION = '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01';

const loads: [string, (url: URL) => Promise<LoadResult>][] = [
  [
    'chunk PUT',
    (url) => wrk(new URL('/v1/consumption/daily', url), { connections: CONNECTIONS, seconds: SECONDS, script: chunkPutScript(INSTALLATION) }),
  ],
  ['telemetry, 10 samples', (url) => telemetryLoad(url, { connections: CONNECTIONS, seconds: SECONDS, batchSize: 10 })],
  ['telemetry, 100 samples', (url) => telemetryLoad(url, { connections: CONNECTIONS, seconds: SECONDS, batchSize: 100 })],
];

const rates = (runs: LoadResult[]) => runs.map((run) => Math.round(run.requestsPerSecond)).join(', ');

if (import.meta.main) {
  const commit = await baseCommit(BASE);
  await buildBinary();
  const base = await buildRevision(commit);
  const before = await startSide(base.binary);
  const after = await startSide(BINARY);
  console.log(`# design: ${BASE} vs this checkout, ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds`);
  try {
    for (const [name, load] of loads) {
      const [baseRuns, ourRuns] = await alternate(
        ROUNDS,
        () => load(before.running.url),
        () => load(after.running.url),
      );
      const ratios = ourRuns.map((run, round) => run.requestsPerSecond / baseRuns[round]!.requestsPerSecond);
      console.log(
        `${name}: ${BASE} ${rates(baseRuns)} /s; this ${rates(ourRuns)} /s; ` +
          `this vs ${BASE} median ${(median(ratios) * 100).toFixed(1)} % ` +
          `(pairs: ${ratios.map((ratio) => (ratio * 100).toFixed(1)).join(', ')})`,
      );
    }
  } finally {
    await before.running.stop();
    await after.running.stop();
    for (const dir of [before.dir, after.dir, base.dir]) rmSync(dir, { recursive: true, force: true });
  }
}
