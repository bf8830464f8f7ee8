/**
 * The hidden cost of the defences against strangers (no-store on every API answer; the client address,
 * asked of the socket only by the handlers that count by address): POST /v1/telemetry in 10-sample batches against the binary of a base commit and of
 * this checkout, alternating in one run, pairing on in both.
 * Run: `bun bench/strangers.ts` (or `bun run bench`).
 *
 * Then, steadier on a shared machine, the added work alone in-process: a request passed through an app
 * with the service's own no-store hook, against a bare app, alternating.
 *
 * Environment: BENCH_BASE (the commit measured against, default e9b0e40, the last before these defences;
 * it must differ from this checkout's), BENCH_SECONDS (per wrk run, default 8), BENCH_ROUNDS (runs of each
 * side, default 5). Raw figures go to bench/results/strangers-<time>.json.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Elysia } from 'elysia';
import { storeNothingOfTheApi } from '../src/app.ts';
import { startBinary } from '../test/binary.ts';
import {
  alternate,
  benchDir,
  BINARY,
  buildBinary,
  knob,
  median,
  medianRun,
  ROOT,
  telemetryLoad,
  TOKEN,
  type LoadResult,
} from './lib.ts';

const BASE = process.env.BENCH_BASE || 'e9b0e40';
const SECONDS = knob('BENCH_SECONDS', 8);
const ROUNDS = knob('BENCH_ROUNDS', 5);
const BATCH_SIZE = 10;
const CONNECTIONS = 32;
const LOAD = { connections: CONNECTIONS, seconds: SECONDS, batchSize: BATCH_SIZE };

/** The commit a revision names, refused when it names none or this checkout's own. */
export async function baseCommit(revision: string): Promise<string> {
  const commitOf = async (name: string) => {
    const child = Bun.spawn(['git', 'rev-parse', '--verify', '--quiet', `${name}^{commit}`], {
      cwd: ROOT,
      stdout: 'pipe',
    });
    const text = (await new Response(child.stdout).text()).trim();
    if ((await child.exited) !== 0) throw new Error(`BENCH_BASE ${JSON.stringify(name)} names no commit`);
    return text;
  };
  const commit = await commitOf(revision);
  if (commit === (await commitOf('HEAD')))
    throw new Error(`BENCH_BASE ${revision} is this checkout: nothing to compare`);
  return commit;
}

/** The sources of `revision` in a folder of their own from `git archive`, this checkout's node_modules lent. */
export async function checkOut(revision: string): Promise<string> {
  const dir = benchDir();
  const archive = Bun.spawn(['sh', '-c', `git archive ${revision} | tar -x -C ${dir}`], {
    cwd: ROOT,
    stderr: 'inherit',
  });
  if ((await archive.exited) !== 0) throw new Error(`git archive ${revision} failed`);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** The binary of `revision`, built in a folder of its own (`checkOut`). */
async function buildRevision(revision: string): Promise<{ binary: string; dir: string }> {
  const dir = await checkOut(revision);
  const build = Bun.spawn(['bun', 'run', 'build'], { cwd: dir, stdout: 'ignore', stderr: 'inherit' });
  if ((await build.exited) !== 0) throw new Error(`bun run build of ${revision} failed`);
  return { binary: join(dir, 'dist', 'ev-ingest'), dir };
}

async function startSide(binary: string) {
  const dir = benchDir();
  const env = { INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: 'bench-approval-password', DATABASE_PATH: join(dir, 'ev.db') };
  return { running: await startBinary(binary, env, dir), dir };
}

/** The binaries of `revision` and of this checkout, each started on a database of its own; `stop` removes all. */
export async function startBaseAndThis(revision: string) {
  const commit = await baseCommit(revision);
  await buildBinary();
  const base = await buildRevision(commit);
  const before = await startSide(base.binary);
  const after = await startSide(BINARY);
  const stop = async () => {
    await before.running.stop();
    await after.running.stop();
    for (const dir of [before.dir, after.dir, base.dir]) rmSync(dir, { recursive: true, force: true });
  };
  return { commit, before: before.running, after: after.running, stop };
}

const load = (url: URL) => telemetryLoad(url, LOAD);

const IN_PROCESS_REQUESTS = 200_000;

/** Microseconds per request through `app.handle`. */
async function perRequestMicros(app: Pick<Elysia, 'handle'>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < IN_PROCESS_REQUESTS; i += 1) {
    await app.handle(new Request('http://localhost/v1/telemetry', { method: 'POST' }));
  }
  return ((performance.now() - started) / IN_PROCESS_REQUESTS) * 1000;
}

/** The added work per request: the service's no-store hook against none. */
async function addedWork(): Promise<void> {
  const answer = () => new Response(null, { status: 204 });
  const bare = new Elysia().post('/v1/telemetry', answer);
  const hooked = new Elysia().onRequest(storeNothingOfTheApi).post('/v1/telemetry', answer);
  await perRequestMicros(bare); // warm-up
  await perRequestMicros(hooked);
  const [bareRuns, hookedRuns] = await alternate(
    ROUNDS,
    () => perRequestMicros(bare),
    () => perRequestMicros(hooked),
  );
  const added = median(hookedRuns.map((micros, round) => micros - bareRuns[round]!));
  console.log(
    `in-process: bare ${median(bareRuns).toFixed(2)} µs a request, ` +
      `with the hook ${median(hookedRuns).toFixed(2)} µs: ${added.toFixed(2)} µs added`,
  );
}

if (import.meta.main) {
  const { commit, before, after, stop } = await startBaseAndThis(BASE);
  console.log(
    `# strangers: ${BATCH_SIZE}-sample telemetry, ${BASE} vs this checkout, ` +
      `${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds`,
  );
  try {
    const [baseRuns, ourRuns] = await alternate(
      ROUNDS,
      () => load(before.url),
      () => load(after.url),
    );
    const ratios = ourRuns.map((run, round) => run.requestsPerSecond / baseRuns[round]!.requestsPerSecond);
    const line = (name: string, runs: LoadResult[]) => {
      const { p50Ms, p99Ms } = medianRun(runs);
      const rates = runs.map((run) => Math.round(run.requestsPerSecond)).join(', ');
      console.log(
        `${name.padEnd(10)} median ${Math.round(median(runs.map((run) => run.requestsPerSecond)))} batches/s ` +
          `(${rates}); p50 ${p50Ms} ms, p99 ${p99Ms} ms`,
      );
    };
    line(BASE, baseRuns);
    line('this', ourRuns);
    const ratio = median(ratios);
    console.log(
      `this vs ${BASE}: ${(ratio * 100).toFixed(1)} % ` +
        `(each round: ${ratios.map((value) => (value * 100).toFixed(1)).join(', ')})`,
    );
    mkdirSync(join(import.meta.dir, 'results'), { recursive: true });
    const resultPath = join(
      import.meta.dir,
      'results',
      `strangers-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    );
    writeFileSync(
      resultPath,
      JSON.stringify(
        { base: BASE, commit, seconds: SECONDS, rounds: ROUNDS, ratio, ratios, baseRuns, ourRuns },
        null,
        2,
      ),
    );
    console.log(`raw figures: ${resultPath}`);
    await addedWork();
  } finally {
    await stop();
  }
}
