/**
 * Durability benchmark: what the default durable mode costs. 10-sample telemetry batches and chunk PUTs
 * at 32 connections against the compiled binary in three modes, in rotating rounds of the same run:
 * DURABILITY=full (the default: group commit, fsync before the answer), DURABILITY=fast, and FULL
 * with one transaction per request (the benchmark-only switch EV_INGEST_BENCH_GROUP_WRITES=1).
 * Targets: full ≥ 70% of fast, full ≥ 3× one transaction per request.
 * Run: `bun bench/durability.ts` (or `bun run bench`, which runs every benchmark).
 *
 * Environment: BENCH_SECONDS (per wrk run, default 8), BENCH_ROUNDS (runs of each mode per load,
 * default 3). Raw figures go to bench/results/durability-<time>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildBinary,
  formatLoad,
  knob,
  LUA_AUTHORIZATION,
  medianRun,
  rotate,
  startService,
  wrkOwnRun,
  type LoadResult,
  type Service,
} from './lib.ts';

const CONNECTIONS = 32;
const SECONDS = knob('BENCH_SECONDS', 8);
const ROUNDS = knob('BENCH_ROUNDS', 3);

const MODES = {
  full: {},
  fast: { DURABILITY: 'fast' },
  'one per request': { EV_INGEST_BENCH_GROUP_WRITES: '1' },
} as const;
type Mode = keyof typeof MODES;

const script = async (name: string) => LUA_AUTHORIZATION + (await Bun.file(join(import.meta.dir, name)).text());
/** Each load: its path, its wrk script and the script's arguments before the run id. */
const LOADS = {
  'telemetry, 10-sample batches': { path: '/v1/telemetry', script: await script('telemetry.lua'), args: ['10'] },
  'chunk PUTs': { path: '/v1/consumption/daily', script: await script('chunks.lua'), args: [] },
};
type Load = keyof typeof LOADS;

/** One wrk run; every run writes under installation ids of its own, so every request inserts. */
async function load(service: Service, name: Load, mode: Mode): Promise<LoadResult> {
  const { path, script, args } = LOADS[name];
  const options = { connections: CONNECTIONS, seconds: SECONDS, script, args };
  const result = await wrkOwnRun(new URL(path, service.url), options);
  if (result.non2xx > 0 || result.errors > 0) {
    console.log(`  warning: ${name}, ${mode}: ${result.non2xx} non-2xx, ${result.errors} socket errors`);
  }
  return result;
}

const percent = (value: number) => `${(value * 100).toFixed(0)}%`;

if (import.meta.main) {
  await buildBinary();
  const modes = Object.keys(MODES) as Mode[];
  const services = await Promise.all(modes.map((mode) => startService({ ...MODES[mode] })));
  console.log(
    `# durability: ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds of each mode, rotating`,
  );
  try {
    const results = {} as Record<Load, Record<Mode, LoadResult[]>>;
    const summary = {} as Record<Load, Record<Mode, LoadResult> & { fullOverFast: number; fullOverOne: number }>;
    for (const name of Object.keys(LOADS) as Load[]) {
      const runs = await rotate(
        ROUNDS,
        modes.map((mode, index) => () => load(services[index]!, name, mode)),
      );
      results[name] = Object.fromEntries(modes.map((mode, index) => [mode, runs[index]!])) as Record<
        Mode,
        LoadResult[]
      >;
      const median = Object.fromEntries(modes.map((mode, index) => [mode, medianRun(runs[index]!)])) as Record<
        Mode,
        LoadResult
      >;
      const fullOverFast = median.full.requestsPerSecond / median.fast.requestsPerSecond;
      const fullOverOne = median.full.requestsPerSecond / median['one per request'].requestsPerSecond;
      summary[name] = { ...median, fullOverFast, fullOverOne };

      console.log(`\n${name}`);
      for (const mode of modes) console.log(formatLoad(`  ${mode}`, median[mode]));
      console.log(
        `  full / fast: ${percent(fullOverFast)} (target ≥ 70%)   ` +
          `full / one per request: ${fullOverOne.toFixed(1)}× (target ≥ 3×)`,
      );
    }

    mkdirSync(join(import.meta.dir, 'results'), { recursive: true });
    const resultPath = join(
      import.meta.dir,
      'results',
      `durability-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    );
    const settings = { seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS };
    writeFileSync(resultPath, JSON.stringify({ ...settings, summary, results }, null, 2));
    console.log(`\nraw figures: ${resultPath}`);
  } finally {
    await Promise.all(services.map((service) => service.stop()));
  }
}
