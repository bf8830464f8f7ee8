/** Shared pieces of the benchmarks: the compiled binary, the baseline, wrk, and reporting. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startBinary, type RunningBinary } from '../test/binary.ts';

export const ROOT = resolve(import.meta.dir, '..');
export const BINARY = join(ROOT, 'dist', 'ev-ingest');
export const TOKEN = 'bench-owner-token-0123456789abcdef';

export function benchDir(): string {
  return mkdtempSync(join(tmpdir(), 'ev-ingest-bench-'));
}

/** Builds the binary from the current sources, so the figures are of this checkout (once per `bun run bench`). */
export async function buildBinary(): Promise<void> {
  if (process.env.BENCH_BUILT === '1') return;
  const build = Bun.spawn(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' });
  if ((await build.exited) !== 0) throw new Error('bun run build failed');
}

/** The compiled service on a fresh file database, logging as in production (one line a request). */
export function startService(env: Record<string, string> = {}): Promise<RunningBinary> {
  const dir = benchDir();
  return startBinary(
    BINARY,
    { INGEST_TOKEN: TOKEN, DATABASE_PATH: join(dir, 'ev.db'), ...env },
    dir,
  );
}

export interface Baseline {
  url: URL;
  stop(): Promise<void>;
}

/** The bare `Bun.serve` baseline in its own process, like the service. */
export async function startBaseline(): Promise<Baseline> {
  const child = Bun.spawn(['bun', join(import.meta.dir, 'baseline-server.ts')], { stdout: 'pipe', stderr: 'inherit' });
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
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

export interface LoadOptions {
  connections?: number;
  seconds?: number;
  /** A wrk Lua script (its text); `wrk.method`, headers and bodies are set there. */
  script?: string;
}

/** Loads `url` with wrk (2 threads) and reads its latency distribution. */
export async function wrk(url: URL, { connections = 32, seconds = 5, script }: LoadOptions = {}): Promise<LoadResult> {
  const args = ['wrk', '-t', '2', '-c', String(connections), '-d', `${seconds}s`, '--latency'];
  if (script) {
    const path = join(benchDir(), 'load.lua');
    writeFileSync(path, script);
    args.push('-s', path);
  }
  args.push(url.href);
  const child = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' });
  const output = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`wrk failed: ${await new Response(child.stderr).text()}`);
  return parseWrk(output);
}

export function parseWrk(output: string): LoadResult {
  const number = (pattern: RegExp) => Number(pattern.exec(output)?.[1] ?? NaN);
  return {
    requestsPerSecond: number(/Requests\/sec:\s+([\d.]+)/),
    p50Ms: latencyMs(/^\s+50%\s+([\d.]+\w+)/m.exec(output)?.[1]),
    p99Ms: latencyMs(/^\s+99%\s+([\d.]+\w+)/m.exec(output)?.[1]),
    non2xx: number(/Non-2xx or 3xx responses:\s+(\d+)/) || 0,
    errors: (/Socket errors: (.*)/.exec(output)?.[1] ?? '')
      .split(',')
      .reduce((sum, part) => sum + Number(/\d+/.exec(part)?.[0] ?? 0), 0),
  };
}

function latencyMs(text: string | undefined): number {
  const match = /^([\d.]+)(us|ms|s)$/.exec(text ?? '');
  if (!match) return NaN;
  const scale = { us: 0.001, ms: 1, s: 1000 }[match[2] as 'us' | 'ms' | 's'];
  return Number(match[1]) * scale;
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** Runs `a` and `b` alternately `rounds` times (the machine is shared and noisy) and keeps every result. */
export async function alternate<T>(rounds: number, a: () => Promise<T>, b: () => Promise<T>): Promise<[T[], T[]]> {
  const first: T[] = [];
  const second: T[] = [];
  for (let round = 0; round < rounds; round++) {
    first.push(await a());
    second.push(await b());
  }
  return [first, second];
}

/** The median run of a set, by rate. */
export function medianRun(results: LoadResult[]): LoadResult {
  const rate = median(results.map((result) => result.requestsPerSecond));
  return results.reduce((best, result) =>
    Math.abs(result.requestsPerSecond - rate) < Math.abs(best.requestsPerSecond - rate) ? result : best,
  );
}

export function formatLoad(name: string, result: LoadResult): string {
  return `${name.padEnd(44)} ${result.requestsPerSecond.toFixed(0).padStart(8)} req/s   p50 ${result.p50Ms
    .toFixed(2)
    .padStart(6)} ms   p99 ${result.p99Ms.toFixed(2).padStart(6)} ms${result.non2xx ? `   non-2xx ${result.non2xx}` : ''}${
    result.errors ? `   socket errors ${result.errors}` : ''
  }`;
}

/** Resident memory of a process, from /proc (Linux). */
export async function rssMiB(pid: number): Promise<number> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}
