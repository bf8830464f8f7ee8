/** Shared pieces of the benchmarks: knobs, the compiled binary, the baseline, wrk, a paced client, and reporting. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { startBinary, type RunningBinary } from '../test/binary.ts';

export const ROOT = resolve(import.meta.dir, '..');
export const BINARY = join(ROOT, 'dist', 'ev-ingest');
export const TOKEN = 'bench-owner-token-0123456789abcdef';
/** The owner token's header, for `fetch`. */
export const AUTHORIZATION = { authorization: `Bearer ${TOKEN}` };
/** The owner token's header for a wrk script: put it first in the script and every request carries it. */
export const LUA_AUTHORIZATION = `wrk.headers["Authorization"] = "Bearer ${TOKEN}"\n`;

/** A numeric knob from the environment (BENCH_SECONDS, …), or its default when unset. */
export function knob(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`${name} must be a number ≥ 0, not ${JSON.stringify(text)}`);
  return value;
}

export function benchDir(): string {
  return mkdtempSync(join(tmpdir(), 'ev-ingest-bench-'));
}

/** Builds the binary from the current sources, so the figures are of this checkout (once per `bun run bench`). */
export async function buildBinary(): Promise<void> {
  if (process.env.BENCH_BUILT === '1') return;
  const build = Bun.spawn([process.execPath, 'run', 'build'], { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' });
  if ((await build.exited) !== 0) throw new Error('bun run build failed');
}

export interface Service extends RunningBinary {
  databasePath: string;
}

/**
 * The compiled service, logging as in production (one line a request), on a fresh file database or on
 * `databasePath` (e.g. one seeded beforehand, alone in its folder). `stop()` deletes the database's folder.
 */
export async function startService(
  env: Record<string, string> = {},
  databasePath = join(benchDir(), 'ev.db'),
): Promise<Service> {
  const dir = dirname(databasePath);
  const running = await startBinary(BINARY, { INGEST_TOKEN: TOKEN, DATABASE_PATH: databasePath, ...env }, dir);
  return {
    ...running,
    databasePath,
    async stop(signal) {
      const code = await running.stop(signal);
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}

export interface Baseline {
  url: URL;
  stop(): Promise<void>;
}

/**
 * The bare `Bun.serve` baseline (bench/baseline-server.ts) in its own process, like the service; with
 * `databasePath`, the durable baseline that also stores each batch with a minimal group commit.
 */
export async function startBaseline(databasePath?: string): Promise<Baseline> {
  const args = databasePath ? [databasePath] : [];
  const child = Bun.spawn([process.execPath, join(import.meta.dir, 'baseline-server.ts'), ...args], {
    stdout: 'pipe',
    stderr: 'inherit',
  });
  const reader = child.stdout.getReader();
  let text = '';
  while (!/address=(\S+)/.test(text)) {
    const { done, value } = await reader.read();
    if (done) throw new Error('baseline exited');
    text += new TextDecoder().decode(value);
  }
  return {
    url: new URL(/address=(\S+)/.exec(text)![1]!),
    async stop() {
      child.kill();
      await child.exited;
    },
  };
}

export interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

export interface LoadOptions {
  connections?: number;
  seconds?: number;
  /** A wrk Lua script (its text) setting method, headers and bodies; it must not define `done`. */
  script?: string;
  /** The script's arguments (wrk's after `--`): `init(args)` sees them from `args[1]` on. */
  args?: string[];
}

export interface TelemetryLoad {
  connections: number;
  seconds: number;
  /** Samples per batch. */
  batchSize: number;
}

const TELEMETRY_SCRIPT = LUA_AUTHORIZATION + (await Bun.file(join(import.meta.dir, 'telemetry.lua')).text());
let telemetryRuns = 0;

/**
 * Loads `POST /v1/telemetry` of the service at `url` with wrk and bench/telemetry.lua: batches of new
 * (installation, utc) keys, each run its own, so that every request stores rows. Says when some failed.
 */
export async function telemetryLoad(url: URL, { connections, seconds, batchSize }: TelemetryLoad): Promise<LoadResult> {
  telemetryRuns += 1;
  const result = await wrk(new URL('/v1/telemetry', url), {
    connections,
    seconds,
    script: TELEMETRY_SCRIPT,
    args: [String(batchSize), String(telemetryRuns)],
  });
  if (result.non2xx > 0 || result.errors > 0)
    console.log(`  warning: ${result.non2xx} non-2xx, ${result.errors} socket errors`);
  return result;
}

/** Appended to every wrk script: wrk's own figures as one JSON line, which `parseWrk` reads. */
const REPORT_SCRIPT = `
function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    'RESULT {"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"non2xx":%d,"socketErrors":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    errors.status, errors.connect + errors.read + errors.write + errors.timeout))
end
`;

/** Loads `url` with wrk (2 threads) and reads its figures from the RESULT line of `REPORT_SCRIPT`. */
export async function wrk(
  url: URL,
  { connections = 32, seconds = 5, script = '', args = [] }: LoadOptions = {},
): Promise<LoadResult> {
  const dir = benchDir();
  const path = join(dir, 'load.lua');
  writeFileSync(path, `${script}\n${REPORT_SCRIPT}`);
  try {
    const command = ['wrk', '-t', '2', '-c', String(connections), '-d', `${seconds}s`, '-s', path, url.href];
    if (args.length > 0) command.push('--', ...args);
    const child = Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe' });
    const output = await new Response(child.stdout).text();
    if ((await child.exited) !== 0) throw new Error(`wrk failed: ${await new Response(child.stderr).text()}`);
    return parseWrk(output);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let runs = 0;

/** A wrk run whose script gets a run number after `args`: each run writes under installation ids of its own. */
export function wrkOwnRun(url: URL, options: LoadOptions = {}): Promise<LoadResult> {
  runs += 1;
  return wrk(url, { ...options, args: [...(options.args ?? []), String(runs)] });
}

export function parseWrk(output: string): LoadResult {
  const line = /^RESULT (\{.*\})$/m.exec(output)?.[1];
  if (!line) throw new Error(`wrk printed no RESULT line:\n${output}`);
  const result = JSON.parse(line) as {
    requests: number;
    durationUs: number;
    p50Us: number;
    p99Us: number;
    non2xx: number;
    socketErrors: number;
  };
  return {
    requests: result.requests,
    requestsPerSecond: result.requests / (result.durationUs / 1e6),
    p50Ms: result.p50Us / 1000,
    p99Ms: result.p99Us / 1000,
    non2xx: result.non2xx,
    errors: result.socketErrors,
  };
}

export interface PacedResult {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  failed: number;
}

/**
 * GETs `url` at a fixed pace (open loop) from this process: latency counts from each request's scheduled
 * start, so a stall is not hidden the way a closed-loop client like wrk hides it. Non-200 answers count as failed.
 */
export async function paced(
  url: URL,
  {
    perSecond,
    seconds,
    headers = AUTHORIZATION,
  }: { perSecond: number; seconds: number; headers?: Record<string, string> },
): Promise<PacedResult> {
  const latencies: number[] = [];
  let failed = 0;
  const start = performance.now() + 50;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < perSecond * seconds; i += 1) {
    const due = start + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    // Sent late, the clock runs from `due`; sent up to 1 ms early (not worth a sleep), from now.
    const from = Math.min(due, performance.now());
    pending.push(
      fetch(url, { headers }).then(async (response) => {
        await response.arrayBuffer();
        if (response.status !== 200) failed += 1;
        latencies.push(performance.now() - from);
      }),
    );
  }
  await Promise.all(pending);
  return { p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), maxMs: Math.max(...latencies), failed };
}

/** The value below which a fraction `q` of `values` lies (nearest rank). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/**
 * Runs `a` and `b` alternately `rounds` times (the machine is shared and noisy), `b` first in every
 * other round so neither always runs on a warmer or cooler machine, and keeps every result.
 */
export async function alternate<T>(rounds: number, a: () => Promise<T>, b: () => Promise<T>): Promise<[T[], T[]]> {
  const [first, second] = await rotate(rounds, [a, b]);
  return [first!, second!];
}

/** Like `alternate` for any number of sides: each round starts one side later than the last. */
export async function rotate<T>(rounds: number, sides: (() => Promise<T>)[]): Promise<T[][]> {
  const results = sides.map((): T[] => []);
  for (let round = 0; round < rounds; round++) {
    for (let turn = 0; turn < sides.length; turn++) {
      const side = (round + turn) % sides.length;
      results[side]!.push(await sides[side]!());
    }
  }
  return results;
}

/** The machine's load averages (1, 5, 15 minutes), for the line beside each figure. */
export const loadNow = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

/** Prints the pairs of microsecond figures of `base` and this checkout, round by round, and their medians. */
export function reportMicrosPairs(base: string, baseRuns: number[], ourRuns: number[]): void {
  const pairs = baseRuns.map((value, round) => `${value.toFixed(1)}/${ourRuns[round]!.toFixed(1)}`);
  console.log(`pairs (${base}/this, µs): ${pairs.join(', ')}`);
  const differences = ourRuns.map((ours, round) => ours - baseRuns[round]!);
  console.log(
    `median ${base} ${median(baseRuns).toFixed(1)} µs, this ${median(ourRuns).toFixed(1)} µs, ` +
      `difference of the pairs ${median(differences).toFixed(1)} µs; load average ${loadNow()}`,
  );
}

/** The median run of a set, by rate. */
export function medianRun(results: LoadResult[]): LoadResult {
  const rate = median(results.map((result) => result.requestsPerSecond));
  return results.reduce((best, result) =>
    Math.abs(result.requestsPerSecond - rate) < Math.abs(best.requestsPerSecond - rate) ? result : best,
  );
}

export function formatLoad(name: string, result: LoadResult): string {
  return `${name.padEnd(46)} ${result.requestsPerSecond.toFixed(0).padStart(8)} req/s   p50 ${result.p50Ms
    .toFixed(2)
    .padStart(
      6,
    )} ms   p99 ${result.p99Ms.toFixed(2).padStart(6)} ms${result.non2xx ? `   non-2xx ${result.non2xx}` : ''}${
    result.errors ? `   socket errors ${result.errors}` : ''
  }`;
}

/** Resident memory of a process now and at its peak, from /proc (Linux). */
export async function memoryMiB(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  const mib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { rss: mib('VmRSS'), peak: mib('VmHWM') };
}

/** PUTs in which every request writes a new key `k` (its path and body made by `make`, Lua). */
export const putScript = (make: string) => `${LUA_AUTHORIZATION}wrk.method = "PUT"
wrk.headers["Content-Type"] = "application/json"
local threads = 0
function setup(thread) thread:set("offset", threads * 1000000000) threads = threads + 1 end
local n = 0
request = function()
  n = n + 1
  local k = 1767312000000 + offset + n
  ${make}
end
`;
/** Chunks of today's driving of `installationId`, each at a new recordedAt. */
export const chunkPutScript = (installationId: string) =>
  putScript(`return wrk.format(nil, nil, nil, string.format('{"installationId":"${installationId}",' ..
    '"recordedAt":%d,"date":"2026-01-02",' ..
    '"day":{"km":1.5,"kwh":0.25,"hours":0.03,"socDrop":0.4},"sohPercent":97.5}', k))`);
