/**
 * The durable baseline's writer: parses each body and stores its samples, one transaction and one
 * sync (WAL, synchronous=FULL; NORMAL when the benchmark runs with DURABILITY=fast) per group of bodies,
 * a plain INSERT OR REPLACE of the values of bench/telemetry.lua's samples keyed like the service's
 * samples, (utc, a small number per installation), the numbers kept in memory only; no savepoints, no
 * validation.
 */
import { Database } from 'bun:sqlite';

declare const self: Worker;

const COLUMNS = [
  'soc',
  'power',
  'speed',
  'lat',
  'lon',
  'elevation',
  'is_charging',
  'ext_temp',
  'batt_temp',
  'odometer',
];
let db: Database;
let insert: ReturnType<Database['query']>;
const installations = new Map<string, number>();
const numberOf = (installationId: string) =>
  installations.get(installationId) ?? installations.set(installationId, installations.size + 1).size;

interface Batch {
  installationId: string;
  samples: Record<string, number | boolean>[];
}

self.onmessage = (event: MessageEvent<{ path?: string; bodies?: string[] }>) => {
  const { path, bodies } = event.data;
  if (path) return open(path);
  db.run('BEGIN IMMEDIATE');
  const stored = bodies!.map((body) => {
    const { installationId, samples } = JSON.parse(body) as Batch;
    const installation = numberOf(installationId);
    for (const sample of samples) {
      insert.run(installation, sample.utc!, ...COLUMNS.map((column) => Number(sample[column] ?? NaN)));
    }
    return samples.length;
  });
  db.run('COMMIT');
  self.postMessage(stored);
};

function open(path: string): void {
  db = new Database(path, { create: true });
  db.run('PRAGMA journal_mode = WAL');
  // As the service under test: DURABILITY=fast (inherited from the benchmark) commits without a sync.
  db.run(`PRAGMA synchronous = ${process.env.DURABILITY === 'fast' ? 'NORMAL' : 'FULL'}`);
  db.run(
    `CREATE TABLE IF NOT EXISTS samples (installation INTEGER NOT NULL, utc INTEGER NOT NULL,
      ${COLUMNS.map((column) => `${column} REAL`).join(', ')}, PRIMARY KEY (utc, installation))`,
  );
  insert = db.query(`INSERT OR REPLACE INTO samples VALUES (${['?', '?', ...COLUMNS.map(() => '?')].join(', ')})`);
}
