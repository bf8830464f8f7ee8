/**
 * The cost of checking bodies by compiled schemas (and of the rest of this branch's design work):
 * chunk PUTs and POST /v1/telemetry in 10- and 100-sample batches against the binary of a base commit
 * and of this checkout, alternating in one run. Run: `bun bench/design.ts` (or `bun run bench`).
 *
 * Then, steadier on a shared machine, in-process: the pipeline alone (token, capped read, checks, ownership; no
 * store) as the base commit's handler wrappers and as this checkout's macros, through `app.handle`; and the checks
 * alone: a chunk and a session body parsed by the compiled schema against the field-by-field parser of before.
 *
 * Each pair is printed with the machine's load average (1 min) after its runs: another session may share it.
 *
 * Environment: BENCH_BASE (the commit measured against, default main; it must differ from this
 * checkout's), BENCH_SECONDS (per wrk run, default 6), BENCH_ROUNDS (runs of each side, default 5).
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Elysia } from 'elysia';
import { alternate, chunkPutScript, knob, median, telemetryLoad, wrk, type LoadResult } from './lib.ts';
import { explainSession, parseSessionBody, parseSessionId } from '../src/charging/model.ts';
import { explainChunk, parseChunk } from '../src/consumption/model.ts';
import type { DeviceRegistry } from '../src/devices/service.ts';
import { Authenticator } from '../src/http/auth.ts';
import { ingestBodyBounds } from '../src/http/body.ts';
import { answerError } from '../src/http/on-error.ts';
import { noContent, pipeline, type RequestParts } from '../src/http/pipeline.ts';
import { createMemoryLogger } from '../src/log.ts';
import { validateBatch } from '../src/telemetry/model.ts';
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
    [
      'session (60-point curve)',
      () => explainSession(session, 's-1'),
      () => parseSessionBody(session, parseSessionId('s-1')),
    ],
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

const PIPELINE_REQUESTS = 20_000;
const TOKEN = 'bench-ingest-token-0123456789abcdef';

/** A telemetry batch of `size` samples, each with a few fields. */
const batchOf = (size: number) =>
  JSON.stringify({
    installationId: INSTALLATION,
    samples: Array.from({ length: size }, (_, i) => ({ utc: 1_764_090_000 + i, soc: 50.5, power: -3.2, speed: 88 })),
  });

/** The routes of the pipeline comparison: what each declares, with a handler that stores nothing. */
const pipelineRoutes = [
  { name: 'chunk PUT', method: 'PUT', path: '/v1/consumption/daily', body: JSON.stringify(chunk) },
  { name: 'telemetry, 10 samples', method: 'POST', path: '/v1/telemetry', body: batchOf(10) },
  { name: 'telemetry, 100 samples', method: 'POST', path: '/v1/telemetry', body: batchOf(100) },
] as const;

const readChunk = ({ body }: RequestParts) => parseChunk(body);
const readBatch = ({ body }: RequestParts) => validateBatch(body, Date.now());

/** This checkout's pipeline: the macros. */
function macroApp(auth: Authenticator) {
  return new Elysia()
    .onError(answerError(createMemoryLogger()))
    .use(pipeline({ auth, bodyBounds: ingestBodyBounds }))
    .put('/v1/consumption/daily', () => noContent(), { auth: 'ingest', owned: readChunk })
    .post('/v1/telemetry', () => noContent(), { auth: 'ingest', owned: readBatch });
}

/** The base commit's pipeline: its handler wrappers (`ownedBody` of src/http/ingest.ts), from its own tree. */
async function wrapperApp(auth: Authenticator, baseDir: string) {
  const { ownedBody } = await import(join(baseDir, 'src/http/ingest.ts'));
  const parseNone = { parse: 'none' } as const;
  return new Elysia()
    .onError(answerError(createMemoryLogger()))
    .put('/v1/consumption/daily', ownedBody(auth, ingestBodyBounds, parseChunk, noContent), parseNone)
    .post(
      '/v1/telemetry',
      ownedBody(auth, ingestBodyBounds, (body: never) => validateBatch(body, Date.now()), noContent),
      parseNone,
    );
}

/** Microseconds per request of `route` through `app.handle`; a failed request ends the run. */
async function microsPerRequest(app: Pick<Elysia, 'handle'>, route: (typeof pipelineRoutes)[number]) {
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const started = performance.now();
  for (let i = 0; i < PIPELINE_REQUESTS; i += 1) {
    const response = await app.handle(
      new Request(`http://localhost${route.path}`, { method: route.method, headers, body: route.body }),
    );
    if (response.status !== 204) throw new Error(`${route.name}: ${response.status} ${await response.text()}`);
  }
  return ((performance.now() - started) / PIPELINE_REQUESTS) * 1000;
}

/** The pipeline of the base commit against this checkout's, in one process, alternating. */
async function pipelineInProcess(commit: string): Promise<void> {
  const baseDir = mkdtempSync(join(tmpdir(), 'ev-bench-pipeline-'));
  try {
    const archive = Bun.spawn(['sh', '-c', `git archive ${commit} src | tar -x -C ${baseDir}`], { stderr: 'inherit' });
    if ((await archive.exited) !== 0) throw new Error(`git archive ${commit} failed`);
    symlinkSync(join(import.meta.dir, '..', 'node_modules'), join(baseDir, 'node_modules'));
    const noDevices = { find: () => undefined, seen: () => {} } as unknown as DeviceRegistry;
    const auth = new Authenticator(TOKEN, noDevices);
    const [wrappers, macros] = [await wrapperApp(auth, baseDir), macroApp(auth)];
    for (const route of pipelineRoutes) {
      await microsPerRequest(wrappers, route); // warm-up
      await microsPerRequest(macros, route);
      const loadAverages: number[] = [];
      const [baseRuns, ourRuns] = await alternate(
        ROUNDS,
        () => microsPerRequest(wrappers, route),
        async () => {
          const micros = await microsPerRequest(macros, route);
          loadAverages.push(loadavg()[0]!);
          return micros;
        },
      );
      const ratios = ourRuns.map((micros, round) => micros / baseRuns[round]!);
      const pairs = ratios.map((ratio, i) => `${(ratio * 100).toFixed(1)} @ load ${loadAverages[i]!.toFixed(2)}`);
      console.log(
        `in-process pipeline, ${route.name}: wrappers ${median(baseRuns).toFixed(2)} µs, ` +
          `macros ${median(ourRuns).toFixed(2)} µs a request; time of this vs ${BASE} median ` +
          `${(median(ratios) * 100).toFixed(1)} % (pairs: ${pairs.join(', ')})`,
      );
    }
  } finally {
    rmSync(baseDir, { recursive: true, force: true });
  }
}

const rates = (runs: LoadResult[]) => runs.map((run) => Math.round(run.requestsPerSecond)).join(', ');

if (import.meta.main) {
  if (process.env.BENCH_PIPELINE_ONLY) {
    await pipelineInProcess(BASE);
    process.exit(0);
  }
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
    await pipelineInProcess(BASE);
    await checksInProcess();
  } finally {
    await stop();
  }
}
