/** The forwarding status (the route, `ev-ingest status`) and the `planner.sent` lines, against a fake planner. */
import { afterEach, expect, test } from 'bun:test';
import { join } from 'node:path';
import type { Config } from '../src/config.ts';
import { after, type PlannerTimers } from '../src/planner/forwarder.ts';
import { startFakePlanner, type FakePlanner } from './fake-planner.ts';
import { NOTHING_FORWARDED } from './owner-support.ts';
import {
  answer,
  INSTALLATION,
  OTHER_INSTALLATION,
  runCommand,
  startTestService,
  tempDir,
  type TestService,
} from './support.ts';

const KEY = 'planner-api-key-for-status-tests';
const TOKEN = 'planner-token-for-status-tests-0001';
const T0 = 1_764_080_000;
const NOW = 1_764_100_000_000;

let cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** Backoffs are recorded and skipped at once; other waits run 20 times faster. */
function fastTimers(backoffs: number[] = []): PlannerTimers {
  return {
    backoff: (ms, wake) => (backoffs.push(ms), after(0, wake)),
    delay: (ms, expire) => after(ms / 20, expire),
    random: () => 0.5,
  };
}

function planner(reply?: FakePlanner['reply']): FakePlanner {
  const fake = startFakePlanner(reply);
  cleanups.push(() => fake.stop());
  return fake;
}

const forwarding = (fake: FakePlanner): Partial<Config> => ({
  planner: { url: fake.url, apiKey: KEY, defaultToken: TOKEN, tokens: new Map() },
});

async function service(
  config: Partial<Config>,
  { dir, timers = fastTimers(), elapsed }: { dir?: string; timers?: PlannerTimers; elapsed?: () => number } = {},
) {
  const started = await startTestService(config, { dir, plannerTimers: timers, now: () => NOW, elapsed });
  cleanups.push(() => started.close());
  return started;
}

const post = (target: TestService, samples: Record<string, number>[]) =>
  target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples } });

const status = async (target: TestService, installationId = INSTALLATION) =>
  answer(await target.request('GET', `/v1/planner/status/${installationId}`));

const ISO_NOW = new Date(NOW).toISOString();
const NEVER = NOTHING_FORWARDED;

test('sent: counted with the newest utc and when it was accepted', async () => {
  const fake = planner();
  const target = await service(forwarding(fake));
  expect((await status(target)).body).toEqual({ forwarding: true, ...NEVER });
  await post(target, [
    { utc: T0, soc: 50 },
    { utc: T0 + 1, soc: 49 },
  ]);
  await target.planner.idle();
  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1]);
  expect(await status(target)).toEqual({
    status: 200,
    body: { forwarding: true, ...NEVER, sent: 2, lastSentAt: ISO_NOW, lastSentUtc: T0 + 1 },
  });
});

test('retried, then sent: the failed attempt is the last failure, by status or by error name', async () => {
  const fake = planner((_, index) => (index === 0 ? { status: 503 } : {}));
  const target = await service(forwarding(fake));
  await post(target, [{ utc: T0, soc: 50 }]);
  await target.planner.idle();
  expect(fake.requests.length).toBe(2);
  expect((await status(target)).body).toEqual({
    forwarding: true,
    ...NEVER,
    sent: 1,
    lastSentAt: ISO_NOW,
    lastSentUtc: T0,
    lastFailure: { at: ISO_NOW, status: 503, error: null, attempt: 1 },
  });
  await fake.stop();
  await post(target, [{ utc: T0 + 1, soc: 50 }]); // the planner is gone: refused connections
  await target.planner.idle();
  const { body } = (await status(target)) as { body: { givenUp: number; lastFailure: unknown } };
  expect(body.givenUp).toBe(1);
  expect(body.lastFailure).toEqual({
    at: ISO_NOW,
    status: null,
    error: expect.stringMatching(/^[A-Za-z]+$/),
    attempt: 5,
  });
});

test('given up at once on a 400, after the 5th failure otherwise; the facts match what the planner saw', async () => {
  const fake = planner((request) => (request.tlm.utc === T0 ? { status: 400 } : { status: 500 }));
  const target = await service(forwarding(fake));
  await post(target, [
    { utc: T0, soc: 50 },
    { utc: T0 + 1, soc: 49 },
  ]);
  await target.planner.idle();
  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1, T0 + 1, T0 + 1, T0 + 1, T0 + 1]);
  expect((await status(target)).body).toEqual({
    forwarding: true,
    ...NEVER,
    givenUp: 2,
    lastFailure: { at: ISO_NOW, status: 500, error: null, attempt: 5 },
  });
});

test('waiting across a stop and a restart: stored facts survive, the restart sends what waited', async () => {
  const dir = tempDir();
  const down = planner(() => ({ status: 503 }));
  // The backoff after the first failure never ends by itself: the sample waits until the stop.
  const backoffs: number[] = [];
  const first = await service(forwarding(down), {
    dir,
    timers: { ...fastTimers(), backoff: (ms) => (backoffs.push(ms), () => {}) },
  });
  await post(first, [
    { utc: T0, soc: 50 },
    { utc: T0 + 1, soc: 49 },
  ]);
  await down.waitFor(1);
  while (backoffs.length === 0) await Bun.sleep(5);
  expect((await status(first)).body).toEqual({
    forwarding: true,
    ...NEVER,
    waiting: 2,
    lastFailure: { at: ISO_NOW, status: 503, error: null, attempt: 1 },
    nextAttemptAt: new Date(NOW + 750).toISOString(), // half the first backoff plus half of it jittered at 0.5
  });
  await first.close();

  const up = planner();
  const second = await service(forwarding(up), { dir });
  // The stop wrote the failure; what waited is sent by the restarted server.
  await second.planner.idle();
  expect(up.utcsOf(TOKEN)).toEqual([T0, T0 + 1]);
  expect((await status(second)).body).toEqual({
    forwarding: true,
    ...NEVER,
    sent: 2,
    lastSentAt: ISO_NOW,
    lastSentUtc: T0 + 1,
    lastFailure: { at: ISO_NOW, status: 503, error: null, attempt: 1 },
  });
  await second.close();

  const command = await runCommand(join(dir, 'ev-ingest.db'), ['status']);
  expect(command).toEqual({
    code: 0,
    stdout:
      `${INSTALLATION} waiting=0 sent=2 givenUp=0 lastSentAt=${ISO_NOW} lastSentUtc=${T0 + 1} ` +
      `lastFailure=${ISO_NOW} status=503 attempt=1\n`,
    stderr: '',
  });
});

test('without forwarding: stored samples are not waiting; the command lists each one with samples', async () => {
  const dir = tempDir();
  const target = await service({}, { dir });
  await post(target, [{ utc: T0, soc: 50 }]);
  await target.request('POST', '/v1/telemetry', {
    body: { installationId: OTHER_INSTALLATION, samples: [{ utc: T0, soc: 1 }] },
  });
  expect((await status(target)).body).toEqual({ forwarding: false, ...NEVER });
  await target.close();
  const { stdout } = await runCommand(join(dir, 'ev-ingest.db'), ['status']);
  const none = 'waiting=0 sent=0 givenUp=0 lastSentAt=none lastSentUtc=none lastFailure=none';
  expect(stdout).toBe(`${OTHER_INSTALLATION} ${none}\n${INSTALLATION} ${none}\n`);
});

test('planner.sent: a first success at once, then at most once a minute, counted; at once after failing', async () => {
  let clock = 0;
  let failNext = false;
  const fake = planner(() => (failNext ? ((failNext = false), { status: 503 }) : {}));
  const target = await service(forwarding(fake), { elapsed: () => clock });
  const sentLines = () =>
    target.log.lines.filter((line) => line.includes('planner.sent')).map((line) => line.replace(/^.* info /, ''));
  const send = async (utc: number) => {
    await post(target, [{ utc, soc: 1 }]);
    await target.planner.idle();
  };
  await send(T0);
  await send(T0 + 1);
  clock += 59_999;
  await send(T0 + 2);
  expect(sentLines()).toEqual([`planner.sent installation=${INSTALLATION} count=1`]);
  clock += 1;
  await send(T0 + 3);
  failNext = true;
  await send(T0 + 4);
  expect(sentLines()).toEqual([
    `planner.sent installation=${INSTALLATION} count=1`,
    `planner.sent installation=${INSTALLATION} count=3`,
    `planner.sent installation=${INSTALLATION} count=1`,
  ]);
  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 4]);
});
