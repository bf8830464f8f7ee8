/**
 * Export and retention benchmark, on the compiled binary and a database seeded with BENCH_EXPORT_SAMPLES
 * samples of one installation:
 * 1. GET /v1/telemetry/export in CSV and NDJSON read at full speed: samples a second, and the server's
 *    RSS growth during the export (sampled every 50 ms from /proc) over its RSS just before.
 * 2. 10-sample ingest (wrk, bench/telemetry.lua) alone and while exports run back to back, A/B in rotation.
 * 3. 10-sample ingest on a copy of the seeded database with its samples past TELEMETRY_RETENTION_DAYS
 *    (the server deletes the backlog from its start) and without the setting, A/B in rotation.
 * Run: `bun bench/export.ts` (or `bun run bench`).
 *
 * Environment: BENCH_EXPORT_SAMPLES (default 5000000, a multiple of 500), BENCH_SECONDS (per ingest run, default 8),
 * BENCH_ROUNDS (default 3). Raw figures go to bench/results/export-<time>.json.
 */
import { Database } from 'bun:sqlite';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import {
  AUTHORIZATION,
  benchDir,
  buildBinary,
  knob,
  LUA_AUTHORIZATION,
  median,
  memoryMiB,
  rotate,
  startService,
  wrkOwnRun,
  type LoadResult,
  type Service,
} from './lib.ts';

const SAMPLES = knob('BENCH_EXPORT_SAMPLES', 5_000_000);
const SECONDS = knob('BENCH_SECONDS', 8);
const ROUNDS = knob('BENCH_ROUNDS', 3);
const INSTALLATION = '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01';
/** The seeded samples' first utc: 100 days before now, a second apart (older than a 1-day retention). */
const FIRST_UTC = Math.floor(Date.now() / 1000) - 100 * 86_400;
const SCRIPT = LUA_AUTHORIZATION + (await Bun.file(join(import.meta.dir, 'telemetry.lua')).text());

/** A database of this version's schema holding `count` samples of one installation, as a car would have sent them. */
function seed(path: string, count: number): void {
  const db = openDatabase(path, 'fast');
  migrate(db);
  db.query('INSERT INTO installations (uuid, latest_utc) VALUES (?, ?)').run(INSTALLATION, FIRST_UTC + count - 1);
  const ROWS = 500; // count is a multiple of it
  const columns = 'installation, utc, soc, power, speed, lat, lon, elevation, odometer, planner_state';
  const insert = db.prepare(
    `INSERT INTO samples (${columns}) VALUES ${new Array(ROWS).fill('(1, ?, ?, ?, ?, ?, ?, ?, ?, 0)').join(', ')}`,
  );
  const values: number[] = [];
  db.run('BEGIN');
  for (let i = 0; i < count; i++) {
    const position = [48 + (i % 1000) / 10_000, 11 + (i % 997) / 10_000];
    values.push(FIRST_UTC + i, 20 + (i % 80), (i % 200) - 50.5, i % 130, ...position, i % 300, 12_000 + i / 100);
    if (values.length < ROWS * 8) continue;
    insert.run(...values);
    values.length = 0;
  }
  db.run('COMMIT');
  db.run('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
}

const exportUrl = (service: Service, format: string) =>
  new URL(`/v1/telemetry/export/${INSTALLATION}?format=${format}`, service.url);

interface ExportRun {
  format: string;
  samples: number;
  seconds: number;
  samplesPerSecond: number;
  rssBeforeMiB: number;
  rssGrowthMiB: number;
}

/** One export read at full speed, counting its lines, while the server's RSS is sampled. */
async function exportOnce(service: Service, format: 'csv' | 'ndjson'): Promise<ExportRun> {
  Bun.gc(true);
  const before = (await memoryMiB(service.process.pid)).rss;
  let highest = before;
  const sampling = setInterval(async () => {
    highest = Math.max(highest, (await memoryMiB(service.process.pid)).rss);
  }, 50);
  const started = performance.now();
  const response = await fetch(exportUrl(service, format), { headers: AUTHORIZATION });
  let lines = 0;
  for await (const chunk of response.body!) {
    for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) lines += 1;
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampling);
  highest = Math.max(highest, (await memoryMiB(service.process.pid)).rss);
  const samples = format === 'csv' ? lines - 1 : lines;
  return {
    format,
    samples,
    seconds,
    samplesPerSecond: samples / seconds,
    rssBeforeMiB: before,
    rssGrowthMiB: highest - before,
  };
}

/** A wrk run of 10-sample batches under installation ids of its own. */
function ingest(service: Service): Promise<LoadResult> {
  const options = { connections: 32, seconds: SECONDS, script: SCRIPT, args: ['10'] };
  return wrkOwnRun(new URL('/v1/telemetry', service.url), options);
}

/** Ingest while exports run back to back (each read at full speed), for the length of the wrk run. */
async function ingestDuringExport(service: Service): Promise<LoadResult> {
  let exporting = true;
  const exports = (async () => {
    while (exporting) {
      const response = await fetch(exportUrl(service, 'csv'), { headers: AUTHORIZATION });
      const reader = response.body!.getReader();
      while (exporting && !(await reader.read()).done);
      await reader.cancel();
    }
  })();
  const result = await ingest(service);
  exporting = false;
  await exports;
  return result;
}

/** A server on a fresh copy of the seeded database, with or without the retention that makes its samples expired. */
async function onCopy(seeded: string, env: Record<string, string>): Promise<Service> {
  const dir = benchDir();
  const path = join(dir, 'ev.db');
  copyFileSync(seeded, path);
  return startService(env, path);
}

const fmt = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const rates = (runs: LoadResult[]) => runs.map((run) => run.requestsPerSecond);
const roundRatios = (a: LoadResult[], b: LoadResult[]) =>
  a.map((run, i) => run.requestsPerSecond / b[i]!.requestsPerSecond);

if (import.meta.main) {
  await buildBinary();
  const seedDir = benchDir();
  const seeded = join(seedDir, 'seeded.db');
  const seedStarted = performance.now();
  seed(seeded, SAMPLES);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  console.log(
    `# export: ${fmt(SAMPLES)} samples seeded in ${fmt(seedSeconds, 1)} s; ` +
      `${SECONDS} s per ingest run, ${ROUNDS} rounds`,
  );
  const results: Record<string, unknown> = { samples: SAMPLES, seconds: SECONDS, rounds: ROUNDS };
  try {
    const service = await onCopy(seeded, {});
    try {
      const exports: ExportRun[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        for (const format of ['csv', 'ndjson'] as const) exports.push(await exportOnce(service, format));
      }
      results.exports = exports;
      for (const format of ['csv', 'ndjson']) {
        const runs = exports.filter((run) => run.format === format);
        const rate = fmt(median(runs.map((run) => run.samplesPerSecond)));
        const each = runs.map((run) => fmt(run.samplesPerSecond)).join(', ');
        const growth = runs.map((run) => `${fmt(run.rssGrowthMiB, 1)} MiB over ${fmt(run.rssBeforeMiB, 1)}`).join(', ');
        console.log(`export ${format.padEnd(6)} ${rate.padStart(9)} samples/s (runs ${each}); RSS growth ${growth}`);
      }
      const [alone, during] = await rotate(ROUNDS, [() => ingest(service), () => ingestDuringExport(service)]);
      results.ingestAlone = alone;
      results.ingestDuringExport = during;
      const ratios = roundRatios(during!, alone!);
      console.log(
        `10-sample ingest alone ${fmt(median(rates(alone!)))} batches/s, ` +
          `during exports ${fmt(median(rates(during!)))}: ` +
          `ratio ${fmt(median(ratios), 2)} (rounds ${ratios.map((r) => fmt(r, 2)).join(', ')})`,
      );
    } finally {
      await service.stop();
    }

    const expire = { TELEMETRY_RETENTION_DAYS: '1' };
    const [kept, deleting] = await rotate(ROUNDS, [
      async () => {
        const server = await onCopy(seeded, {});
        try {
          return await ingest(server);
        } finally {
          await server.stop();
        }
      },
      async () => {
        const server = await onCopy(seeded, expire);
        try {
          const result = await ingest(server);
          const left = new Database(server.databasePath, { readonly: true });
          const remaining = left
            .query<{ n: number }, []>('SELECT count(*) AS n FROM samples WHERE installation = 1')
            .get()!.n;
          left.close();
          console.log(
            `  retention deleted ${fmt(SAMPLES - remaining)} of the ${fmt(SAMPLES)} expired samples during the run`,
          );
          return result;
        } finally {
          await server.stop();
        }
      },
    ]);
    results.ingestWithoutRetention = kept;
    results.ingestWhileRetentionDeletes = deleting;
    const ratios = roundRatios(deleting!, kept!);
    console.log(
      `10-sample ingest without retention ${fmt(median(rates(kept!)))} batches/s, while it deletes the backlog ` +
        `${fmt(median(rates(deleting!)))}: ` +
        `ratio ${fmt(median(ratios), 2)} (rounds ${ratios.map((r) => fmt(r, 2)).join(', ')})`,
    );
    mkdirSync(join(import.meta.dir, 'results'), { recursive: true });
    const resultPath = join(
      import.meta.dir,
      'results',
      `export-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    );
    writeFileSync(resultPath, JSON.stringify(results, null, 2));
    console.log(`raw figures: ${resultPath}`);
  } finally {
    rmSync(seedDir, { recursive: true, force: true });
  }
}
