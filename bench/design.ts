/**
 * The cost of checking bodies by compiled schemas (and of the rest of this branch's design work):
 * chunk PUTs and POST /v1/telemetry in 10- and 100-sample batches against the binary of a base commit
 * and of this checkout, alternating in one run. Run: `bun bench/design.ts` (or `bun run bench`).
 *
 * Then, steadier on a shared machine, the checks alone in-process: a chunk and a session body parsed
 * by the compiled schema against the field-by-field parser of before, alternating.
 *
 * Each pair is printed with the machine's load average (1 min) after its runs: another session may share it.
 *
 * Environment: BENCH_BASE (the commit measured against, default main; it must differ from this
 * checkout's), BENCH_SECONDS (per wrk run, default 6), BENCH_ROUNDS (runs of each side, default 5).
 */
import { loadavg } from 'node:os';
import { alternate, chunkPutScript, knob, median, telemetryLoad, wrk, type LoadResult } from './lib.ts';
import { explainSession, parseSession } from '../src/charging/model.ts';
import { explainChunk, parseChunk } from '../src/consumption/model.ts';
import { startBaseAndThis } from './strangers.ts';

const BASE = process.env.BENCH_BASE || 'main';
const SECONDS = knob('BENCH_SECONDS', 6);
const ROUNDS = knob('BENCH_ROUNDS', 5);
const CONNECTIONS = 32;
const INSTALLATION = '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01';

const loads: [string, (url: URL) => Promise<LoadResult>][] = [
  [
    'chunk PUT',
    async (url) => {
      const script = chunkPutScript(INSTALLATION);
      const result = await wrk(new URL('/v1/consumption/daily', url), {
        connections: CONNECTIONS,
        seconds: SECONDS,
        script,
      });
      if (result.non2xx > 0 || result.errors > 0)
        console.log(`  warning: ${result.non2xx} non-2xx, ${result.errors} errors`);
      return result;
    },
  ],
  ['telemetry, 10 samples', (url) => telemetryLoad(url, { connections: CONNECTIONS, seconds: SECONDS, batchSize: 10 })],
  [
    'telemetry, 100 samples',
    (url) => telemetryLoad(url, { connections: CONNECTIONS, seconds: SECONDS, batchSize: 100 }),
  ],
];

const PARSES = 200_000;
const chunk = {
  installationId: INSTALLATION,
  recordedAt: 1_767_312_000_001,
  date: '2026-01-02',
  day: { km: 1.5, kwh: 0.25, hours: 0.03, socDrop: 0.4 },
  sohPercent: 97.5,
};
const session = {
  installationId: INSTALLATION,
  startedAt: 1_764_080_000_000,
  endedAt: 1_764_081_800_000,
  energyKwh: 41.7,
  durationSeconds: 1800,
  curve: Array.from({ length: 60 }, (_, i) => ({
    timestampMs: 1_764_080_000_000 + i * 30_000,
    powerKw: 50,
    socPercent: 20 + i,
  })),
};

/** Microseconds per parse of `parse`. */
function microsPerParse(parse: () => unknown): number {
  const started = performance.now();
  for (let i = 0; i < PARSES; i += 1) parse();
  return ((performance.now() - started) / PARSES) * 1000;
}

async function checksInProcess(): Promise<void> {
  const pairs: [string, () => unknown, () => unknown][] = [
    ['chunk', () => explainChunk(chunk), () => parseChunk(chunk)],
    ['session (60-point curve)', () => explainSession(session, 's-1'), () => parseSession('s-1', session)],
  ];
  for (const [name, before, compiled] of pairs) {
    microsPerParse(before); // warm-up
    microsPerParse(compiled);
    const [beforeRuns, compiledRuns] = await alternate(
      ROUNDS,
      async () => microsPerParse(before),
      async () => microsPerParse(compiled),
    );
    console.log(
      `in-process ${name}: field by field ${median(beforeRuns).toFixed(3)} µs, ` +
        `compiled ${median(compiledRuns).toFixed(3)} µs a body`,
    );
  }
}

const rates = (runs: LoadResult[]) => runs.map((run) => Math.round(run.requestsPerSecond)).join(', ');

if (import.meta.main) {
  const { before, after, stop } = await startBaseAndThis(BASE);
  console.log(`# design: ${BASE} vs this checkout, ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds`);
  try {
    for (const [name, load] of loads) {
      const loadAverages: number[] = [];
      const [baseRuns, ourRuns] = await alternate(
        ROUNDS,
        () => load(before.url),
        async () => {
          const run = await load(after.url);
          loadAverages.push(loadavg()[0]!);
          return run;
        },
      );
      const ratios = ourRuns.map((run, round) => run.requestsPerSecond / baseRuns[round]!.requestsPerSecond);
      const pairs = ratios.map((ratio, i) => `${(ratio * 100).toFixed(1)} @ load ${loadAverages[i]!.toFixed(2)}`);
      console.log(
        `${name}: ${BASE} ${rates(baseRuns)} /s; this ${rates(ourRuns)} /s; ` +
          `this vs ${BASE} median ${(median(ratios) * 100).toFixed(1)} % (pairs: ${pairs.join(', ')})`,
      );
    }
    await checksInProcess();
  } finally {
    await stop();
  }
}
