/**
 * Prometheus metrics on METRICS_LISTEN: each named metric moves by exactly what the test drove, no label
 * holds an installation id, a token or a location, and `promtool check metrics` accepts a scrape.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import pkg from '../package.json' with { type: 'json' };
import { ConfigError, serveConfig } from '../src/config.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { compiledBinary, startBinary } from './binary.ts';
import { startFakePlanner, type FakePlanner } from './fake-planner.ts';
import { decide, PASSWORD, startPairing, WRONG_PASSWORD } from './pairing-support.ts';
import {
  consumptionChunk,
  finished,
  INSTALLATION,
  overSocket,
  OWNER_TOKEN,
  tempDir,
  testConfig,
  waitUntil,
} from './support.ts';

const PLANNER_TOKEN = 'planner-token-not-for-labels-51f0';
const LAT = 48.137154;
const LON = 11.576124;

/** A scrape, as `name{labels}` → value. */
type Scrape = Map<string, number>;

async function scrape(url: URL): Promise<{ text: string; series: Scrape }> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  const text = await response.text();
  const series: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return { text, series };
}

let planner: FakePlanner;
let running: Running;
const gate = Promise.withResolvers<void>();
const utc = Math.floor(Date.now() / 1000) - 600;

beforeAll(async () => {
  // The oldest sample: held, then 500 once, then taken; the next one refused for good (400).
  planner = startFakePlanner((request, index) => {
    if (request.tlm.utc !== utc) return { status: 400, body: 'no' };
    return index === 0 ? { status: 500, body: 'busy', until: gate.promise } : { status: 200, body: '{"status":"ok"}' };
  });
  const config = testConfig(tempDir(), {
    approvalPassword: PASSWORD,
    metricsListen: { host: '127.0.0.1', port: 0 },
    planner: { url: planner.url, apiKey: 'planner-key-not-for-labels', defaultToken: PLANNER_TOKEN, tokens: new Map() },
  });
  running = await serve({ ...config, plannerWaitingReuseMs: 0 }, createMemoryLogger());
});

afterAll(async () => {
  gate.resolve();
  await running.stop();
  await planner.stop();
});

describe('a day of traffic', () => {
  let before: Scrape;
  let after: { text: string; series: Scrape };
  let waitingWhileHeld: number;

  beforeAll(async () => {
    before = (await scrape(running.metricsUrl!)).series;
    const client = overSocket(running);
    const samples = [
      { utc, soc: 50, lat: LAT, lon: LON },
      { utc: utc + 1, soc: 51, unknownField: 1 },
      { utc: utc + 2, soc: 500 },
    ];
    expect(
      (await client.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples } })).status,
    ).toBe(200);
    await planner.waitFor(1);
    waitingWhileHeld = (await scrape(running.metricsUrl!)).series.get('ev_ingest_planner_waiting')!;
    gate.resolve();
    for (const recordedAt of [1_764_080_000_123, 1_764_080_000_124]) {
      expect(
        (await client.request('PUT', '/v1/consumption/daily', { body: consumptionChunk({ recordedAt }) })).status,
      ).toBe(204);
    }
    const session = {
      installationId: INSTALLATION,
      startedAt: 1_764_080_000_000,
      endedAt: 1_764_081_800_000,
      energyKwh: 40,
    };
    expect((await client.request('PUT', '/v1/charging-sessions/session-1', { body: session })).status).toBe(204);
    expect((await client.request('GET', `/v1/consumption/history/${INSTALLATION}`)).status).toBe(200);
    expect((await client.request('GET', '/v1/nothing', { token: null })).status).toBe(404);
    const started = await startPairing(client, INSTALLATION, 'MG4');
    expect((await decide(client, started.userCode, 'approve')).status).toBe(200);
    for (let i = 0; i < 5; i++)
      expect((await client.request('GET', '/v1/devices', { token: WRONG_PASSWORD })).status).toBe(401);
    await waitUntil(() => running.service.planner.stats.sent + running.service.planner.stats.givenUp === 2, 10_000);
    await running.storage.committer.idle();
    after = await scrape(running.metricsUrl!);
  }, 20_000);

  const moved = (name: string) => (after.series.get(name) ?? 0) - (before.get(name) ?? 0);

  test('the stored and dropped counts move by what was sent', () => {
    expect(moved('ev_ingest_samples_stored_total')).toBe(2);
    expect(moved('ev_ingest_values_dropped_total{reason="unknown_field"}')).toBe(1);
    expect(moved('ev_ingest_values_dropped_total{reason="out_of_range"}')).toBe(1);
    expect(moved('ev_ingest_values_dropped_total{reason="no_usable_values"}')).toBe(1);
    expect(moved('ev_ingest_chunks_stored_total')).toBe(2);
    expect(moved('ev_ingest_sessions_stored_total')).toBe(1);
  });

  test('the planner: waiting while held, one retry, one sent, one given up', () => {
    expect(waitingWhileHeld).toBe(2);
    expect(after.series.get('ev_ingest_planner_waiting')).toBe(0);
    expect(moved('ev_ingest_planner_sent_total')).toBe(1);
    expect(moved('ev_ingest_planner_retries_total{reason="http_500"}')).toBe(1);
    expect(moved('ev_ingest_planner_given_up_total{reason="http_400"}')).toBe(1);
  });

  test('pairing and the lockout', () => {
    expect(moved('ev_ingest_pairing_started_total')).toBe(1);
    expect(moved('ev_ingest_pairing_approved_total')).toBe(1);
    expect(moved('ev_ingest_lockouts_total{scope="address"}')).toBe(1);
    expect(moved('ev_ingest_lockouts_total{scope="backstop"}')).toBe(0);
  });

  test('requests by route pattern, method and status, with their durations', () => {
    expect(moved('ev_ingest_http_requests_total{route="/v1/telemetry",method="POST",status="200"}')).toBe(1);
    expect(moved('ev_ingest_http_requests_total{route="/v1/consumption/daily",method="PUT",status="204"}')).toBe(2);
    expect(moved('ev_ingest_http_requests_total{route="/v1/charging-sessions/*",method="PUT",status="204"}')).toBe(1);
    expect(moved('ev_ingest_http_requests_total{route="/v1/consumption/history/*",method="GET",status="200"}')).toBe(1);
    expect(moved('ev_ingest_http_requests_total{route="unmatched",method="GET",status="404"}')).toBe(1);
    expect(moved('ev_ingest_http_requests_total{route="/v1/devices",method="GET",status="401"}')).toBe(5);
    expect(moved('ev_ingest_http_request_duration_seconds_count{route="/v1/consumption/daily"}')).toBe(2);
    expect(
      after.series.get('ev_ingest_http_request_duration_seconds_bucket{route="/v1/consumption/daily",le="+Inf"}'),
    ).toBe(2);
  });

  // Their exact movement against the writes driven: metrics-commits.test.ts.
  test('commit groups and WAL syncs as the committer counted them', () => {
    const { groups, writes, syncs } = running.storage.committer.stats;
    expect(after.series.get('ev_ingest_commit_groups_total')).toBe(groups);
    expect(after.series.get('ev_ingest_commit_group_writes_count')).toBe(groups);
    expect(after.series.get('ev_ingest_commit_group_writes_sum')).toBe(writes);
    expect(after.series.get('ev_ingest_wal_sync_duration_seconds_count')).toBe(syncs);
  });

  test('build and process figures', () => {
    expect(after.series.get(`ev_ingest_build_info{version="${pkg.version}"}`)).toBe(1);
    const rss = after.series.get('process_resident_memory_bytes')!;
    expect(rss).toBeGreaterThan(10 * 1024 * 1024);
    expect(rss).toBeLessThan(4 * process.memoryUsage.rss());
    expect(
      Math.abs(after.series.get('process_start_time_seconds')! - (Date.now() / 1000 - process.uptime())),
    ).toBeLessThan(5);
    expect(after.series.get('process_cpu_seconds_total')).toBeGreaterThan(0);
  });

  test('no label holds an installation id, a token, a password or a location; label names are the few known', () => {
    for (const secret of [
      INSTALLATION,
      OWNER_TOKEN,
      PASSWORD,
      WRONG_PASSWORD,
      PLANNER_TOKEN,
      String(LAT),
      String(LON),
    ]) {
      expect(after.text).not.toContain(secret);
    }
    const names = new Set(
      [...after.series.keys()].flatMap((key) => [...key.matchAll(/[{,](\w+)="/g)].map((m) => m[1])),
    );
    expect([...names].sort()).toEqual(['le', 'method', 'reason', 'route', 'scope', 'status', 'version']);
  });

  test('docs/operations.md lists every metric with its type, and no other', async () => {
    const docs = await Bun.file(`${import.meta.dir}/../docs/operations.md`).text();
    const listed = [...docs.matchAll(/^\| `((?:ev_ingest|process)_\w+)` \| (\w+) \|/gm)].map(
      ([, name, type]) => `${name} ${type}`,
    );
    const scraped = [...after.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => `${name} ${type}`);
    expect(listed).toEqual(scraped);
  });

  test('promtool check metrics accepts the scrape (skipped only outside CI when promtool is missing)', async () => {
    if (!Bun.which('promtool')) {
      if (process.env.CI === 'true') throw new Error('promtool is missing: install the prometheus package');
      console.warn('skipped: promtool is not installed (apt-get install prometheus)');
      return;
    }
    const check = Bun.spawn(['promtool', 'check', 'metrics'], {
      stdin: new Blob([after.text]),
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const { code, stdout: out, stderr: err } = await finished(check);
    expect({ code, out, err }).toEqual({ code: 0, out: '', err: '' });
  });
});

test('the metrics listener answers only GET /metrics', async () => {
  expect((await fetch(new URL('/other', running.metricsUrl!))).status).toBe(404);
  expect((await fetch(running.metricsUrl!, { method: 'POST' })).status).toBe(405);
  expect((await fetch(new URL('/metrics', running.url))).status).toBe(404); // not on the service's own port
});

test('METRICS_LISTEN is off by default and must be HOST:PORT', () => {
  expect(serveConfig({ INGEST_TOKEN: OWNER_TOKEN }).metricsListen).toBeNull();
  expect(serveConfig({ INGEST_TOKEN: OWNER_TOKEN, METRICS_LISTEN: '127.0.0.1:9464' }).metricsListen).toEqual({
    host: '127.0.0.1',
    port: 9464,
  });
  expect(serveConfig({ INGEST_TOKEN: OWNER_TOKEN, METRICS_LISTEN: '[::1]:9464' }).metricsListen).toEqual({
    host: '::1',
    port: 9464,
  });
  for (const wrong of ['9464', 'localhost', '::1:9464', 'host:99999', 'a b:1']) {
    expect(() => serveConfig({ INGEST_TOKEN: OWNER_TOKEN, METRICS_LISTEN: wrong })).toThrow(
      new ConfigError('METRICS_LISTEN must be HOST:PORT, such as 127.0.0.1:9464 or [::1]:9464'),
    );
  }
});

test('the compiled binary serves metrics at METRICS_LISTEN and names the address in its start line', async () => {
  const binary = await compiledBinary();
  const cwd = tempDir();
  const server = await startBinary(
    binary,
    { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: `${cwd}/ev.db`, METRICS_LISTEN: '127.0.0.1:0' },
    cwd,
  );
  try {
    const url = / metrics=(\S+)/.exec(server.output())![1]!;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect((await fetch(new URL('/v1/health', server.url))).status).toBe(200);
    const { series } = await scrape(new URL(url));
    expect(series.get('ev_ingest_http_requests_total{route="/v1/health",method="GET",status="200"}')).toBe(1);
  } finally {
    await server.stop();
  }
}, 120_000);
