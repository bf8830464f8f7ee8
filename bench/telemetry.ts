/**
 * Telemetry benchmark: POST /v1/telemetry of the compiled binary in batches of 1, 10 and 100 samples
 * (bench/telemetry.lua makes every request store new rows), in rotation with two baselines in the same
 * run: the bare `Bun.serve` that only parses the JSON, and the durable baseline that also stores the
 * samples with a minimal group commit (the least durable work the request needs on this machine);
 * then the service's RSS once it has stored many samples.
 * Run: `bun bench/telemetry.ts` (or `bun run bench`, which runs every benchmark).
 *
 * Environment: BENCH_SECONDS (per wrk run, default 8), BENCH_ROUNDS (rotating runs of each side per
 * batch size, default 3: an odd count has a median run), BENCH_RSS_SAMPLES (samples stored before
 * reading RSS, default 5000000), BENCH_RSS_MAX_SECONDS (time allowed for filling up to that, default
 * 240), DURABILITY (of the service and the durable baseline, default full). Raw figures go to
 * bench/results/telemetry-<time>.json.
 */
import { Database } from 'bun:sqlite';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  benchDir,
  buildBinary,
  knob,
  LUA_AUTHORIZATION,
  memoryMiB,
  median,
  medianRun,
  rotate,
  startBaseline,
  startService,
  wrk,
  type LoadResult,
} from './lib.ts';

const CONNECTIONS = 32;
const BATCH_SIZES = [1, 10, 100];
const FILL_BATCH_SIZE = 100;
const SECONDS = knob('BENCH_SECONDS', 8);
const ROUNDS = knob('BENCH_ROUNDS', 3);
const RSS_SAMPLES = knob('BENCH_RSS_SAMPLES', 5_000_000);
const RSS_MAX_SECONDS = knob('BENCH_RSS_MAX_SECONDS', 240);
const DURABILITY = process.env.DURABILITY ?? 'full';
const SCRIPT = LUA_AUTHORIZATION + (await Bun.file(join(import.meta.dir, 'telemetry.lua')).text());

/** The service, the bare baseline and the durable baseline, measured in rotation. */
const SIDES = ['service', 'baseline', 'durable'] as const;
type Side = (typeof SIDES)[number];

let runId = 0;

/** One wrk run of `batchSize`-sample batches; every run writes under installation ids of its own. */
async function load(target: string, url: URL, batchSize: number, seconds = SECONDS): Promise<LoadResult> {
  runId += 1;
  const result = await wrk(new URL('/v1/telemetry', url), {
    connections: CONNECTIONS,
    seconds,
    script: SCRIPT,
    args: [String(batchSize), String(runId)],
  });
  if (result.non2xx > 0 || result.errors > 0) {
    console.log(`  warning: ${target} ${batchSize}: ${result.non2xx} non-2xx, ${result.errors} socket errors`);
  }
  return result;
}

/**
 * A side's figures over the rounds: the median rate, the latencies of its median run, and the service
 * against it as the median of each round's own ratio (both measured minutes apart at most, while the
 * machine's speed drifts between rounds).
 */
interface SideSummary {
  rate: number;
  p50Ms: number;
  p99Ms: number;
  ratio: number;
  roundRatios: number[];
}

function sideSummary(runs: LoadResult[], service: LoadResult[]): SideSummary {
  const { p50Ms, p99Ms } = medianRun(runs);
  const roundRatios = runs.map((run, round) => service[round]!.requestsPerSecond / run.requestsPerSecond);
  return {
    rate: median(runs.map((run) => run.requestsPerSecond)),
    p50Ms,
    p99Ms,
    ratio: median(roundRatios),
    roundRatios,
  };
}

const fmt = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

if (import.meta.main) {
  await buildBinary();
  const service = await startService({ DURABILITY });
  const baseline = await startBaseline();
  const durableDir = benchDir();
  const durable = await startBaseline(join(durableDir, 'baseline.db'));
  const database = new Database(service.databasePath, { readonly: true });
  const stored = () => database.query<{ n: number }, []>('SELECT count(*) AS n FROM samples').get()!.n;
  console.log(
    `# telemetry: durability ${DURABILITY}, ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds`,
  );
  try {
    const results: Record<number, Record<Side, LoadResult[]>> = {};
    for (const batchSize of BATCH_SIZES) {
      const [ours, bare, durableBare] = await rotate(ROUNDS, [
        () => load('service', service.url, batchSize),
        () => load('baseline', baseline.url, batchSize),
        () => load('durable baseline', durable.url, batchSize),
      ]);
      results[batchSize] = { service: ours!, baseline: bare!, durable: durableBare! };
    }

    const summary: Record<number, Record<Side, SideSummary>> = {};
    console.log('\nbatch  target      batches/s    samples/s   p50 ms   p99 ms   service vs this (each round)');
    for (const batchSize of BATCH_SIZES) {
      const runs = results[batchSize]!;
      summary[batchSize] = Object.fromEntries(
        SIDES.map((side) => [side, sideSummary(runs[side], runs.service)]),
      ) as Record<Side, SideSummary>;
      for (const side of SIDES) {
        const { rate, p50Ms, p99Ms, ratio, roundRatios } = summary[batchSize]![side];
        const versus =
          side === 'service' ? '' : `${fmt(ratio, 2)} (${roundRatios.map((value) => fmt(value, 2)).join(', ')})`;
        console.log(
          `${String(batchSize).padStart(5)}  ${side.padEnd(9)} ${fmt(rate).padStart(11)} ` +
            `${fmt(rate * batchSize).padStart(12)} ${fmt(p50Ms, 2).padStart(8)} ` +
            `${fmt(p99Ms, 2).padStart(8)}   ${versus}`,
        );
      }
    }

    const sent = BATCH_SIZES.reduce(
      (sum, batchSize) =>
        sum + results[batchSize]!.service.reduce((runs, run) => runs + (run.requests - run.non2xx) * batchSize, 0),
      0,
    );
    console.log(`\nrows stored by the runs: ${fmt(stored())} (samples sent with a 2xx answer: ${fmt(sent)})`);

    // Fill up to the RSS target with 100-sample batches, within the time allowed.
    const fillStarted = performance.now();
    const fillSeconds = () => (performance.now() - fillStarted) / 1000;
    let count = stored();
    while (count < RSS_SAMPLES && fillSeconds() < RSS_MAX_SECONDS) {
      await load('service', service.url, FILL_BATCH_SIZE, Math.ceil(Math.min(15, RSS_MAX_SECONDS - fillSeconds())));
      count = stored();
    }
    const memory = await memoryMiB(service.process.pid);
    console.log(
      `server RSS after ${fmt(count)} stored samples: ${fmt(memory.rss, 1)} MiB (peak ${fmt(memory.peak, 1)} MiB); ` +
        `database ${fmt(statSync(service.databasePath).size / 2 ** 20)} MiB` +
        (count < RSS_SAMPLES ? ` (fewer than ${fmt(RSS_SAMPLES)}: the fill stopped after ${RSS_MAX_SECONDS} s)` : ''),
    );

    mkdirSync(join(import.meta.dir, 'results'), { recursive: true });
    const resultPath = join(
      import.meta.dir,
      'results',
      `telemetry-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    );
    const rss = { samples: count, ...memory };
    const settings = { durability: DURABILITY, seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS };
    writeFileSync(resultPath, JSON.stringify({ ...settings, summary, results, rss }, null, 2));
    console.log(`raw figures: ${resultPath}`);
  } finally {
    database.close();
    await service.stop();
    await baseline.stop();
    await durable.stop();
    rmSync(durableDir, { recursive: true, force: true });
  }
}
