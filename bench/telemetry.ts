/**
 * Load test of POST /v1/telemetry against the compiled binary on a temporary file database, next to
 * a bare Bun.serve baseline in the same run (alternating, repeated), then the server's RSS after it
 * has stored many samples. Run: `bun bench/telemetry.ts`.
 *
 * Environment: BENCH_SECONDS (per wrk run, default 8), BENCH_REPEATS (default 2),
 * BENCH_RSS_SAMPLES (samples to store before reading RSS, default 5000000),
 * BENCH_RSS_MAX_SECONDS (time allowed for that, default 240), DURABILITY (default full).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from 'bun:sqlite';

const root = join(import.meta.dir, '..');
const binary = join(root, 'dist/ev-ingest');
const luaScript = join(import.meta.dir, 'telemetry.lua');
const TOKEN = 'bench-token-0123456789abcdefghij';
const CONNECTIONS = 32;
const BATCH_SIZES = [1, 10, 100];
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const repeats = Number(process.env.BENCH_REPEATS ?? 2);
const rssSamples = Number(process.env.BENCH_RSS_SAMPLES ?? 5_000_000);
const rssMaxSeconds = Number(process.env.BENCH_RSS_MAX_SECONDS ?? 240);
const durability = process.env.DURABILITY ?? 'full';

interface WrkResult {
  requests: number;
  durationUs: number;
  p50Us: number;
  p99Us: number;
  non2xx: number;
  socketErrors: number;
}

interface Server {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Builds the binary when it is missing or older than a source file. */
async function ensureBinary(): Promise<void> {
  if (existsSync(binary) && newestSource(join(root, 'src')) < statSync(binary).mtimeMs) return;
  console.log('building dist/ev-ingest …');
  const build = Bun.spawn(['bun', 'run', 'build'], { cwd: root, stdout: 'ignore', stderr: 'inherit' });
  if ((await build.exited) !== 0) throw new Error('bun run build failed');
}

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Starts a process whose stdout goes to a file, and waits for its `address=` line. */
async function start(command: string[], env: Record<string, string>, logPath: string): Promise<Server> {
  const child = Bun.spawn(command, { env: { ...process.env, ...env }, stdout: Bun.file(logPath), stderr: 'inherit' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const address = /address=(\S+)/.exec(existsSync(logPath) ? readFileSync(logPath, 'utf8') : '')?.[1];
    if (address) {
      return {
        url: address.replace(/\/$/, ''),
        pid: child.pid,
        stop: async () => {
          child.kill('SIGTERM');
          await child.exited;
        },
      };
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${command[0]} did not start; see ${logPath}`);
    await Bun.sleep(50);
  }
}

let runId = 0;

async function wrk(url: string, batchSize: number, durationS: number): Promise<WrkResult> {
  runId += 1;
  const child = Bun.spawn(
    ['wrk', '-t2', `-c${CONNECTIONS}`, `-d${durationS}s`, '-s', luaScript, `${url}/v1/telemetry`, '--', String(batchSize), String(runId), TOKEN],
    { stdout: 'pipe', stderr: 'inherit' },
  );
  const output = await new Response(child.stdout).text();
  await child.exited;
  const line = /RESULT (.*)/.exec(output)?.[1];
  if (!line) throw new Error(`wrk gave no result:\n${output}`);
  return JSON.parse(line) as WrkResult;
}

function rssMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fmt = (value: number, digits = 0) => value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  await ensureBinary();
  const dir = mkdtempSync(join(tmpdir(), 'ev-ingest-bench-'));
  const databasePath = join(dir, 'bench.db');
  const service = await start(
    [binary],
    { INGEST_TOKEN: TOKEN, DATABASE_PATH: databasePath, HOST: '127.0.0.1', PORT: '0', DURABILITY: durability, LOG_LEVEL: 'info' },
    join(dir, 'service.log'),
  );
  const baseline = await start(['bun', join(import.meta.dir, 'baseline-server.ts')], {}, join(dir, 'baseline.log'));
  console.log(`service ${service.url} (durability ${durability}), baseline ${baseline.url}; ${CONNECTIONS} connections, ${seconds} s per run, ${repeats} repeats`);

  const results: Record<string, { service: WrkResult[]; baseline: WrkResult[] }> = {};
  let serviceRequests = 0;
  try {
    for (const batchSize of BATCH_SIZES) {
      const runs = (results[batchSize] = { service: [] as WrkResult[], baseline: [] as WrkResult[] });
      for (let repeat = 0; repeat < repeats; repeat++) {
        // Alternate which goes first, so neither always runs on a warmer or cooler machine.
        const order = repeat % 2 === 0 ? (['service', 'baseline'] as const) : (['baseline', 'service'] as const);
        for (const target of order) {
          const result = await wrk(target === 'service' ? service.url : baseline.url, batchSize, seconds);
          if (result.non2xx > 0 || result.socketErrors > 0) {
            console.log(`  warning: ${target} ${batchSize}: ${result.non2xx} non-2xx, ${result.socketErrors} socket errors`);
          }
          if (target === 'service') serviceRequests += result.requests * batchSize;
          runs[target].push(result);
        }
      }
    }

    console.log('\nbatch  target     batches/s    samples/s   p50 ms   p99 ms   vs baseline');
    const summary: Record<string, unknown> = {};
    for (const batchSize of BATCH_SIZES) {
      const rows: Record<string, { rate: number; p50: number; p99: number }> = {};
      for (const target of ['service', 'baseline'] as const) {
        const runs = results[batchSize]![target];
        rows[target] = {
          rate: median(runs.map((r) => r.requests / (r.durationUs / 1e6))),
          p50: median(runs.map((r) => r.p50Us / 1000)),
          p99: median(runs.map((r) => r.p99Us / 1000)),
        };
      }
      for (const target of ['service', 'baseline'] as const) {
        const { rate, p50, p99 } = rows[target]!;
        const ratio = target === 'service' ? `${fmt(rate / rows.baseline!.rate, 2)}` : '';
        console.log(
          `${String(batchSize).padStart(5)}  ${target.padEnd(9)} ${fmt(rate).padStart(10)} ${fmt(rate * batchSize).padStart(12)} ${fmt(p50, 2).padStart(8)} ${fmt(p99, 2).padStart(8)}   ${ratio}`,
        );
      }
      summary[batchSize] = rows;
    }

    const stored = () => new Database(databasePath, { readonly: true }).query<{ n: number }, []>('SELECT count(*) AS n FROM samples').get()!.n;
    const afterRuns = stored();
    console.log(`\nrows stored by the runs: ${fmt(afterRuns)} (samples sent with a 200: ${fmt(serviceRequests)})`);

    // Fill up to the RSS target with 100-sample batches, within the time allowed.
    const fillStarted = Date.now();
    let count = afterRuns;
    while (count < rssSamples && (Date.now() - fillStarted) / 1000 < rssMaxSeconds) {
      await wrk(service.url, 100, 15);
      count = stored();
    }
    const memory = rssMb(service.pid);
    console.log(
      `server RSS after ${fmt(count)} stored samples: ${fmt(memory.rss, 1)} MB (peak ${fmt(memory.peak, 1)} MB); ` +
        `database ${fmt(statSync(databasePath).size / 2 ** 20, 0)} MB` +
        (count < rssSamples ? ` (fewer than ${fmt(rssSamples)}: the fill stopped after ${rssMaxSeconds} s)` : ''),
    );

    mkdirSync(join(import.meta.dir, 'results'), { recursive: true });
    const resultPath = join(import.meta.dir, 'results', `telemetry-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(resultPath, JSON.stringify({ durability, seconds, repeats, connections: CONNECTIONS, summary, results, rss: { samples: count, ...memory } }, null, 2));
    console.log(`raw figures: ${resultPath}`);
  } finally {
    await service.stop();
    await baseline.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
