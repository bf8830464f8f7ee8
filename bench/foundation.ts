/**
 * Foundation benchmark: GET /v1/health of the compiled binary against a bare `Bun.serve`, the binary's
 * start-up to its first answered health check, and the committer alone.
 * Run: `bun bench/foundation.ts` (or `bun run bench`, which runs every benchmark).
 *
 * Environment: BENCH_SECONDS (per wrk run, default 5; the committer's runs, default 3), BENCH_ROUNDS
 * (alternating health runs of each side, default 5), BENCH_COMMITTER_ROUNDS (see bench/committer.ts).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { benchCommitter } from './committer.ts';
import {
  alternate,
  BINARY,
  benchDir,
  buildBinary,
  formatLoad,
  knob,
  median,
  medianRun,
  startBaseline,
  startService,
  TOKEN,
  wrk,
} from './lib.ts';

const ROUNDS = knob('BENCH_ROUNDS', 5);
const SECONDS = knob('BENCH_SECONDS', 5);

async function health() {
  const service = await startService();
  const baseline = await startBaseline();
  const [ours, bare] = await alternate(
    ROUNDS,
    () => wrk(new URL('/v1/health', service.url), { seconds: SECONDS }),
    () => wrk(new URL('/v1/health', baseline.url), { seconds: SECONDS }),
  );
  await service.stop();
  await baseline.stop();
  console.log(formatLoad('GET /v1/health, ev-ingest (32 connections)', medianRun(ours)));
  console.log(formatLoad('GET /v1/health, bare Bun.serve', medianRun(bare)));
  // Each round's two runs follow each other, so their ratio is the least touched by the machine's drift.
  const ratios = ours.map((run, round) => run.requestsPerSecond / bare[round]!.requestsPerSecond);
  const percent = (ratio: number) => `${(ratio * 100).toFixed(0)}%`;
  console.log(
    `  ratio ev-ingest / bare: ${percent(median(ratios))} ` +
      `(median of the rounds' ratios: ${ratios.map(percent).join(', ')}; target ≥ 70%)`,
  );
}

/** Milliseconds from spawning the binary to its first answered health check, on a new database. */
async function startUpOnce(): Promise<number> {
  const dir = benchDir();
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const started = performance.now();
  const child = Bun.spawn([BINARY], {
    cwd: dir,
    env: { INGEST_TOKEN: TOKEN, DATABASE_PATH: join(dir, 'ev.db'), HOST: '127.0.0.1', PORT: String(port) },
    stdout: 'ignore',
    stderr: 'ignore',
  });
  const url = `http://127.0.0.1:${port}/v1/health`;
  for (;;) {
    try {
      if ((await fetch(url)).ok) break;
    } catch {
      await Bun.sleep(1);
    }
  }
  const elapsed = performance.now() - started;
  child.kill();
  await child.exited;
  rmSync(dir, { recursive: true, force: true });
  return elapsed;
}

async function startUp() {
  const times: number[] = [];
  for (let run = 0; run < 10; run++) times.push(await startUpOnce());
  console.log(
    `start-up to first answered health check: median ${median(times).toFixed(0)} ms, ` +
      `min ${Math.min(...times).toFixed(0)} ms, max ${Math.max(...times).toFixed(0)} ms over 10 runs (target < 150 ms)`,
  );
}

if (import.meta.main) {
  await buildBinary();
  console.log('# foundation');
  await health();
  await startUp();
  await benchCommitter();
}
