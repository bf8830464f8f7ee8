/**
 * Consumption benchmark on a car that has uploaded for 10 years: one chunk every 2 minutes around
 * the clock (720 a day, 2.6 million chunks). Measures the history read-back (p99 at a paced
 * 200 requests/s, answers/s at saturation), chunk PUTs/s at 32 connections, and GET /v1/health of
 * the same binary in the same run as the reference.
 * Run: `bun bench/consumption.ts` (FULL durability, the default). BENCH_SECONDS sets each load's length.
 */
import { Database } from 'bun:sqlite';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { migrate } from '../src/db/migrate.ts';
import { plus, toStored, totalsOf, ZERO, type DayValues, type Totals } from '../src/consumption/totals.ts';
import { startBinary, type RunningBinary } from '../test/binary.ts';

const ROOT = resolve(import.meta.dir, '..');
const BINARY = join(ROOT, 'dist', 'ev-ingest');
const TOKEN = 'bench-owner-token-0123456789abcdef';
const INSTALLATION = '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01';
const YEARS = 10;
const CHUNKS_PER_DAY = 720;
const FIRST_DAY = Date.UTC(2016, 0, 1);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

const dir = mkdtempSync(join(tmpdir(), 'ev-ingest-bench-consumption-'));

async function buildIfMissing(): Promise<void> {
  if (existsSync(BINARY)) return;
  const build = Bun.spawn(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' });
  if ((await build.exited) !== 0) throw new Error('bun run build failed');
}

/** Writes the chunks, their day sums and the lifetime sums as the service would have, in big transactions. */
function seed(path: string): { chunks: number; days: number } {
  const db = new Database(path, { create: true, strict: true });
  db.run('PRAGMA journal_mode = WAL');
  db.run('PRAGMA synchronous = OFF');
  migrate(db);
  const insertChunk = db.query(
    `INSERT INTO consumption_chunks (installation_id, recorded_at, date, km, kwh, hours, soc_drop, soh_percent)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertDay = db.query(
    `INSERT INTO consumption_days (installation_id, date, chunks, km, kwh, hours, soc_drop, soh_percent)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const days = Math.round(YEARS * 365.25);
  let lifetime: Totals = ZERO;
  const seedDay = db.transaction((dayIndex: number) => {
    const start = FIRST_DAY + dayIndex * 86_400_000;
    const date = new Date(start).toISOString().slice(0, 10);
    let sums: Totals = ZERO;
    let soh: number | null = null;
    for (let n = 0; n < CHUNKS_PER_DAY; n += 1) {
      const values: DayValues = { km: 1 + (n % 7) * 0.25, kwh: 0.18 + (n % 5) * 0.01, hours: 1 / 30, socDrop: 0.3 };
      soh = n % 10 === 0 ? 100 - dayIndex / 365 : soh;
      insertChunk.run(INSTALLATION, start + n * 120_000, date, values.km, values.kwh, values.hours, values.socDrop, n % 10 === 0 ? soh : null);
      sums = plus(sums, totalsOf(values));
    }
    const stored = toStored(sums);
    insertDay.run(INSTALLATION, date, CHUNKS_PER_DAY, stored.km, stored.kwh, stored.hours, stored.socDrop, soh);
    lifetime = plus(lifetime, sums);
  });
  for (let day = 0; day < days; day += 1) seedDay(day);
  const stored = toStored(lifetime);
  db.query('INSERT INTO consumption_lifetimes (installation_id, km, kwh, hours, soc_drop) VALUES (?, ?, ?, ?, ?)').run(
    INSTALLATION, stored.km, stored.kwh, stored.hours, stored.socDrop,
  );
  db.run('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
  return { chunks: days * CHUNKS_PER_DAY, days };
}

interface Load {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
}

/** wrk with 2 threads; `script` (Lua) sets method, headers and bodies. */
async function wrk(url: URL, script: string, connections = 32): Promise<Load> {
  const path = join(dir, `load-${Math.random().toString(36).slice(2)}.lua`);
  writeFileSync(path, script);
  const child = Bun.spawn(['wrk', '-t', '2', '-c', String(connections), '-d', `${SECONDS}s`, '--latency', '-s', path, url.href], {
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const output = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`wrk failed: ${await new Response(child.stderr).text()}`);
  const field = (pattern: RegExp) => pattern.exec(output)?.[1];
  return {
    perSecond: Number(field(/Requests\/sec:\s+([\d.]+)/)),
    p50Ms: milliseconds(field(/^\s+50%\s+(\S+)/m)),
    p99Ms: milliseconds(field(/^\s+99%\s+(\S+)/m)),
    failed: Number(field(/Non-2xx or 3xx responses:\s+(\d+)/) ?? 0) + Number(field(/Socket errors: connect (\d+)/) ?? 0),
  };
}

function milliseconds(text: string | undefined): number {
  const match = /^([\d.]+)(us|ms|s)$/.exec(text ?? '');
  return match ? Number(match[1]) * { us: 0.001, ms: 1, s: 1000 }[match[2] as 'us' | 'ms' | 's'] : NaN;
}

const AUTH = `wrk.headers["Authorization"] = "Bearer ${TOKEN}"\n`;

/** PUTs in which every request writes a new key `k` (its path and body made by `make`, Lua). */
const putScript = (make: string) => `${AUTH}wrk.method = "PUT"
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
/** Chunks of today's driving, each at a new recordedAt. */
const chunkPuts = putScript(`return wrk.format(nil, nil, nil, string.format('{"installationId":"${INSTALLATION}",' ..
    '"recordedAt":%d,"date":"2026-01-02","day":{"km":1.5,"kwh":0.25,"hours":0.03,"socDrop":0.4},"sohPercent":97.5}', k))`);
/** The reference write: a minimal charging session, one row and no sums. */
const sessionPuts = putScript(`return wrk.format(nil, "/v1/charging-sessions/s" .. k, nil, string.format(
    '{"installationId":"${INSTALLATION}","startedAt":%d,"endedAt":%d,"energyKwh":30}', k, k))`);

/** Requests at a fixed pace (open loop): latency counts from the scheduled start, so a stall is not hidden. */
async function paced(url: URL, perSecond: number, seconds: number): Promise<{ p50: number; p99: number; max: number; failed: number }> {
  const headers = { authorization: `Bearer ${TOKEN}` };
  const latencies: number[] = [];
  let failed = 0;
  const start = performance.now() + 50;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < perSecond * seconds; i += 1) {
    const due = start + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    pending.push(
      fetch(url, { headers }).then(async (response) => {
        await response.arrayBuffer();
        if (response.status !== 200) failed += 1;
        latencies.push(performance.now() - due);
      }),
    );
  }
  await Promise.all(pending);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: at(1), failed };
}

/** The history's cost when it is not cached: the first read after a chunk write. */
async function uncachedMs(service: RunningBinary, historyUrl: URL): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 30; i += 1) {
    await fetch(new URL('/v1/consumption/daily', service.url), {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ installationId: INSTALLATION, recordedAt: 1767225600000 + i, date: '2026-01-01', day: { km: 1, kwh: 0.2, hours: 0.03, socDrop: 0.3 } }),
    });
    const started = performance.now();
    await (await fetch(historyUrl, { headers: { authorization: `Bearer ${TOKEN}` } })).arrayBuffer();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[15]!;
}

await buildIfMissing();
const databasePath = join(dir, 'ev.db');
let started = performance.now();
const seeded = seed(databasePath);
console.log(`# consumption: seeded ${seeded.chunks} chunks over ${seeded.days} days in ${((performance.now() - started) / 1000).toFixed(1)} s`);

const service = await startBinary(BINARY, { INGEST_TOKEN: TOKEN, DATABASE_PATH: databasePath }, dir);
try {
  const historyUrl = new URL(`/v1/consumption/history/${INSTALLATION}`, service.url);
  const first = await fetch(historyUrl, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = await first.text();
  const records = (JSON.parse(body) as { records: unknown[] }).records.length;
  console.log(`history answer: ${records} records, ${(body.length / 1024).toFixed(1)} KiB`);
  console.log(`history, first read after a chunk write (not cached): median ${(await uncachedMs(service, historyUrl)).toFixed(2)} ms`);

  for (const [name, url] of [['history', historyUrl], ['health (reference)', new URL('/v1/health', service.url)]] as const) {
    const pace = await paced(url, 200, SECONDS);
    console.log(`${name} at a paced 200 requests/s for ${SECONDS} s: p50 ${pace.p50.toFixed(2)} ms, p99 ${pace.p99.toFixed(2)} ms, max ${pace.max.toFixed(2)} ms, failed ${pace.failed}`);
  }

  const health = await wrk(new URL('/v1/health', service.url), '');
  const history = await wrk(historyUrl, AUTH);
  const puts = await wrk(new URL('/v1/consumption/daily', service.url), chunkPuts);
  const sessions = await wrk(new URL('/v1/charging-sessions/x', service.url), sessionPuts);
  const line = (name: string, load: Load) =>
    `${name.padEnd(46)} ${load.perSecond.toFixed(0).padStart(7)}/s   p50 ${load.p50Ms.toFixed(2)} ms   p99 ${load.p99Ms.toFixed(2)} ms   failed ${load.failed}`;
  console.log(line('GET /v1/health (reference), 32 connections', health));
  console.log(line('GET history, 32 connections (target ≥ 1000/s)', history));
  console.log(line('PUT chunk, 32 connections (target ≥ 5000/s)', puts));
  console.log(line('PUT charging session (reference write)', sessions));
  const ratio = (a: Load, b: Load) => `${((a.perSecond / b.perSecond) * 100).toFixed(0)}%`;
  console.log(`  history / health: ${ratio(history, health)}, PUT chunk / PUT session: ${ratio(puts, sessions)}`);
} finally {
  await service.stop();
}
