/**
 * `ev_ingest_planner_waiting` counts the samples waiting for the planner as the database holds them; the
 * count walks the backlog, so one count stands for the scrapes within `plannerWaitingReuseMs` of it.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import { startFakePlanner, type FakePlanner } from './fake-planner.ts';
import { INSTALLATION, overSocket, tempDir, testConfig } from './support.ts';

const REUSE_MS = 400;
const gate = Promise.withResolvers<void>();
let planner: FakePlanner;
let running: Running;
beforeAll(async () => {
  planner = startFakePlanner(() => ({ status: 200, body: '{"status":"ok"}', until: gate.promise }));
  const config = testConfig(tempDir(), {
    metricsListen: { host: '127.0.0.1', port: 0 },
    planner: { url: planner.url, apiKey: 'key', defaultToken: 'planner-token', tokens: new Map() },
  });
  running = await serve({ ...config, plannerWaitingReuseMs: REUSE_MS }, createMemoryLogger());
});
afterAll(async () => {
  gate.resolve();
  await running.stop();
  await planner.stop();
});

const utc = Math.floor(Date.now() / 1000) - 600;

async function store(from: number, count: number): Promise<void> {
  const samples = Array.from({ length: count }, (_, i) => ({ utc: utc + from + i, soc: 50 }));
  const body = { installationId: INSTALLATION, samples };
  const response = await overSocket(running).request('POST', '/v1/telemetry', { body });
  expect(response.status).toBe(200);
  await running.storage.committer.idle();
}

async function gauge(): Promise<number> {
  const text = await (await fetch(running.metricsUrl!)).text();
  return Number(/^ev_ingest_planner_waiting (\S+)$/m.exec(text)![1]);
}

const waitingInDatabase = () =>
  running.storage.db
    .query<{ n: number }, []>(`SELECT count(*) AS n FROM samples WHERE planner_state = ${PlannerState.pending}`)
    .get()!.n;

test('the gauge counts the waiting rows; scrapes within the reuse time share a count; a later one counts', async () => {
  await store(0, 2);
  await planner.waitFor(1); // the first is held at the planner: both still wait
  const began = performance.now();
  expect(await gauge()).toBe(2);
  expect(waitingInDatabase()).toBe(2);
  await store(2, 3);
  expect(waitingInDatabase()).toBe(5);
  if (performance.now() - began < REUSE_MS) expect(await gauge()).toBe(2);
  await Bun.sleep(Math.max(0, REUSE_MS - (performance.now() - began)) + 20);
  expect(await gauge()).toBe(5);
});
