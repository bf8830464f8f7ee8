import { afterEach, describe, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { after, type PlannerTimers } from '../src/planner/forwarder.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import { PLANNER_ERROR_BODY } from './fake-planner.ts';
import { compiledBinary, ownerRequest, startBinary } from './binary.ts';
import { INSTALLATION, installationNumbered, OTHER_INSTALLATION, OWNER_TOKEN, tempDir, waitUntil } from './support.ts';
import {
  cleanups,
  failWrites,
  fastTimers,
  forward,
  forwardInBackground,
  forwarding,
  KEY,
  OVERRIDE,
  planner,
  runCleanups,
  samplesAt,
  seedPending,
  service,
  spyOnRequests,
  states,
  T0,
  TOKEN,
} from './planner-support.ts';

afterEach(runCleanups);

test('more samples than fit in memory are read page by page; none is given up', async () => {
  const fake = planner();
  // Each sample's mark is a commit; without an fsync per commit 1050 of them take a second, not five.
  const target = await service({ ...forwarding(fake), durability: 'fast' });
  const utcs = Array.from({ length: limits.plannerQueueSamples + 50 }, (_, i) => T0 + i);
  await forward(target, INSTALLATION, samplesAt(...utcs));
  expect(fake.utcsOf(TOKEN)).toEqual(utcs);
  expect(target.planner.stats).toEqual({ sent: utcs.length, givenUp: 0, retried: 0, outboxReads: 2 });
});

test('sent samples are not sent again after a restart; samples waiting at a stop are sent after it', async () => {
  const dir = tempDir();
  const fake = planner();
  const first = await service(forwarding(fake), { dir });
  await forward(first, INSTALLATION, samplesAt(T0, T0 + 1));
  await first.close();

  // The planner is down while more samples arrive; the server stops with them waiting.
  fake.reply = () => ({ status: 503 });
  const second = await service(forwarding(fake), { dir, timers: { ...fastTimers(), backoff: after } });
  expect(second.log.lines.some((line) => line.includes('planner.resumed'))).toBe(false);
  seedPending(second, INSTALLATION, samplesAt(T0 + 2, T0 + 3));
  second.planner.recheck(INSTALLATION);
  await fake.waitFor(3);
  await second.close();
  expect(fake.requests).toHaveLength(3);

  fake.reply = () => ({});
  const third = await service(forwarding(fake), { dir });
  await third.planner.idle();
  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1, T0 + 2, T0 + 2, T0 + 3]);
  expect(states(third, INSTALLATION).map(([, state]) => state)).toEqual([2, 2, 2, 2]);
  expect(third.log.lines.some((line) => line.endsWith('planner.resumed installations=1'))).toBe(true);
});

test('a retryable answer arriving after the stop began ends the loop at once instead of backing off', async () => {
  const fake = planner(() => ({ status: 503, delayMs: 300 }));
  // Backoffs never end on their own (only the stop may cut one short); the 5 s grace runs in real time.
  const target = await service(forwarding(fake), {
    timers: { ...fastTimers(), backoff: () => () => {}, delay: after },
  });
  seedPending(target, INSTALLATION, samplesAt(T0));
  target.planner.recheck(INSTALLATION);
  await fake.waitFor(1);
  const stopping = target.planner.stop(); // the 503 comes back during the grace
  expect(await Promise.race([stopping.then(() => 'stopped'), Bun.sleep(3000).then(() => 'still backing off')])).toBe(
    'stopped',
  );
  expect(fake.requests).toHaveLength(1);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.pending]]); // sent after the restart
});

test('an outcome whose write fails is written again later; meanwhile no sample, its own or other, goes', async () => {
  const fake = planner();
  // The retry of the failed write comes when the test says so.
  let retry = () => {};
  const timers = {
    ...fastTimers(),
    delay: (ms: number, expire: () => void) =>
      ms === limits.plannerMarkRetryMs ? ((retry = expire), () => {}) : after(ms / 20, expire),
  };
  const target = await service(forwarding(fake), { timers });
  failWrites(target, 'plannerSettled', 1);

  await forward(target, INSTALLATION, samplesAt(T0));
  expect(target.log.lines.some((line) => line.includes('planner.mark_failed samples=1'))).toBe(true);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.pending]]);

  // A new batch makes a loop read the outbox again while T0 is still pending there; another installation's waits too.
  seedPending(target, INSTALLATION, samplesAt(T0 + 1));
  seedPending(target, OTHER_INSTALLATION, samplesAt(T0));
  target.planner.recheck(INSTALLATION);
  target.planner.recheck(OTHER_INSTALLATION);
  // Both installations' next attempts wait for the failed outcome's write.
  await waitUntil(() => target.planner.stats.outboxReads === 3 && target.planner.attemptsHeld === 2);
  expect(fake.requests).toHaveLength(1);
  retry();
  await target.planner.idle();
  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1, T0]);
  expect(states(target, INSTALLATION)).toEqual([
    [T0, PlannerState.sent],
    [T0 + 1, PlannerState.sent],
  ]);
  expect(states(target, OTHER_INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
});

test('a full disk is logged at its first failed write, then once a minute (60th retry), its end once', async () => {
  const fake = planner();
  let retry = () => {};
  let retries = 0;
  const timers = {
    ...fastTimers(),
    delay: (ms: number, expire: () => void) =>
      ms === limits.plannerMarkRetryMs ? ((retries += 1), (retry = expire), () => {}) : after(ms / 20, expire),
  };
  const target = await service(forwarding(fake), { timers });
  const diskFull = failWrites(target, 'plannerSettled', Infinity);
  await forward(target, INSTALLATION, samplesAt(T0));
  for (let n = 1; n <= 120; n += 1) {
    await waitUntil(() => retries === n); // the last write failed and its retry is due
    retry();
  }
  await waitUntil(() => retries === 121);
  expect(
    target.log.lines.filter((line) => line.includes('planner.mark_')).map((line) => line.replace(/^\S+ /, '')),
  ).toEqual([
    'error planner.mark_failed samples=1 failures=1 reason="database or disk is full"',
    'error planner.mark_failed samples=1 failures=61 reason="database or disk is full"',
    'error planner.mark_failed samples=1 failures=121 reason="database or disk is full"',
  ]);
  diskFull();
  retry();
  await waitUntil(() => target.log.lines.some((line) => line.includes('planner.mark_recovered')));
  expect(target.log.lines.filter((line) => line.includes('planner.mark_')).slice(3)).toEqual([
    expect.stringMatching(/ info planner\.mark_recovered failures=121$/),
  ]);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);

  // The next outage is counted from one again.
  failWrites(target, 'plannerSettled', 1);
  await forward(target, INSTALLATION, samplesAt(T0 + 1));
  expect(target.log.lines.filter((line) => line.includes('planner.mark_')).at(-1)).toEndWith(
    ' error planner.mark_failed samples=1 failures=1 reason="database or disk is full"',
  );
});

test('attempts already waiting for a request slot when an outcome cannot be written do not send either', async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  // The first request is answered at once, the others held: its outcome's write fails while they wait.
  const fake = planner((_, index) => (index === 0 ? {} : { until: held }));
  let retry = () => {};
  // The requests keep their real deadline; the failed write's retry comes when the test says so.
  const delay = (ms: number, expire: () => void) =>
    ms === limits.plannerMarkRetryMs
      ? ((retry = expire), () => {})
      : after(ms === limits.plannerTimeoutMs ? ms : ms / 20, expire);
  const target = await service(forwarding(fake), { timers: { ...fastTimers(), delay } });
  cleanups.push(release); // before the service closes: its close waits for the held requests
  const diskFull = failWrites(target, 'plannerSettled', Infinity);
  const installations = Array.from({ length: limits.plannerInFlight + 4 }, (_, n) => installationNumbered(n));
  seedPending(target, installations, samplesAt(T0));
  for (const id of installations) target.planner.recheck(id);
  await waitUntil(() => target.log.lines.some((line) => line.includes('planner.mark_failed')));
  // The first answer's slot went to a ninth request before its write failed; three wait for a slot.
  await fake.waitFor(limits.plannerInFlight + 1);
  const sent = spyOnRequests();
  release();
  // The three get their slots and wait there for the write.
  await waitUntil(() => target.planner.attemptsHeld === 3);
  expect(sent).not.toHaveBeenCalled();
  diskFull();
  retry();
  await target.planner.idle();
  expect(fake.requests).toHaveLength(installations.length);
  for (const id of installations) expect(states(target, id)).toEqual([[T0, PlannerState.sent]]);
});

test("an attempt whose re-read waits for the disk while another outcome's write fails sends once written", async () => {
  const OTHER_UTC = T0 + 100;
  // INSTALLATION's first request is answered 503; its backoff ends when the test says so.
  const fake = planner((_, index) => (index === 0 ? { status: 503 } : {}));
  let wake: (() => void) | null = null;
  let retry = () => {};
  const timers: PlannerTimers = {
    ...fastTimers(),
    backoff: (_ms, woken) => (wake === null ? ((wake = woken), () => {}) : after(0, woken)),
    delay: (ms, expire) => (ms === limits.plannerMarkRetryMs ? ((retry = expire), () => {}) : after(ms / 20, expire)),
  };
  const target = await service(forwarding(fake), { timers });
  forwardInBackground(target, INSTALLATION, samplesAt(T0));
  await waitUntil(() => wake !== null);
  // Its re-read after the backoff waits for the disk; meanwhile another installation's outcome cannot be written.
  let finishWait = () => {};
  let waits = 0;
  const durable = target.storage.committer.durable.bind(target.storage.committer);
  target.storage.committer.durable = () =>
    ++waits === 1 ? new Promise<void>((resolve) => (finishWait = resolve)) : durable();
  wake!();
  await waitUntil(() => waits === 1);
  const diskFull = failWrites(target, 'plannerSettled', Infinity);
  forwardInBackground(target, OTHER_INSTALLATION, samplesAt(OTHER_UTC));
  await waitUntil(() => target.log.lines.some((line) => line.includes('planner.mark_failed')));
  const sent = spyOnRequests();
  finishWait();
  // Re-read and on disk, the attempt now waits for the other outcome's write.
  await waitUntil(() => target.planner.attemptsHeld === 1);
  expect(sent).not.toHaveBeenCalled();
  expect(fake.requests.map((request) => request.tlm.utc)).toEqual([T0, OTHER_UTC]);
  diskFull();
  retry();
  await target.planner.idle();
  expect(fake.requests.map((request) => request.tlm.utc)).toEqual([T0, OTHER_UTC, T0]);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
});

test('while outcomes cannot be written (full disk), a restart resends only the sample answered meanwhile', async () => {
  const dir = tempDir();
  const fake = planner();
  const target = await service(forwarding(fake), { dir });
  const utcs = Array.from({ length: 50 }, (_, i) => T0 + i);
  seedPending(target, INSTALLATION, samplesAt(...utcs));
  failWrites(target, 'plannerSettled', Infinity);
  target.planner.recheck(INSTALLATION);
  await fake.waitFor(1);
  await waitUntil(() => target.planner.attemptsHeld === 1); // the next sample's attempt, held
  expect(fake.utcsOf(TOKEN)).toEqual([T0]);
  const failuresLogged = () => target.log.lines.filter((line) => line.includes('planner.mark_failed')).length;
  const loggedBeforeStop = failuresLogged();
  await target.close(); // its last write of T0's outcome fails too, and is logged whatever the count
  expect(failuresLogged()).toBe(loggedBeforeStop + 1);

  const restarted = await service(forwarding(fake), { dir });
  await restarted.planner.idle();
  expect(fake.utcsOf(TOKEN)).toEqual([T0, ...utcs]);
  expect(states(restarted, INSTALLATION).every(([, state]) => state === PlannerState.sent)).toBe(true);
});

test('an outcome still unwritten at shutdown gets one last write', async () => {
  const fake = planner();
  // The retry would come only after an hour: the stop must write it.
  const timers = {
    ...fastTimers(),
    delay: (ms: number, expire: () => void) => after(ms === limits.plannerMarkRetryMs ? 3_600_000 : ms / 20, expire),
  };
  const target = await service(forwarding(fake), { timers });
  failWrites(target, 'plannerSettled', 1);
  await forward(target, INSTALLATION, samplesAt(T0));
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.pending]]);
  await target.planner.stop();
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
});

test('shutdown waits a bounded time for a hanging planner, then leaves the sample waiting', async () => {
  const fake = planner(() => ({ delayMs: 60_000 }));
  const target = await service(forwarding(fake));
  seedPending(target, INSTALLATION, samplesAt(T0));
  target.planner.recheck(INSTALLATION);
  await fake.waitFor(1);
  await target.planner.stop(50);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.pending]]);
});

test('the log holds no key, token, request body or planner answer', async () => {
  const fake = planner((_, index) => (index % 3 === 2 ? {} : { status: index % 3 ? 400 : 500 }));
  const target = await service(forwarding(fake, { tokens: new Map([[INSTALLATION, OVERRIDE]]) }));
  await forward(target, INSTALLATION, samplesAt(T0, T0 + 1, T0 + 2));
  await forward(target, OTHER_INSTALLATION, samplesAt(T0, T0 + 1, T0 + 2));
  const log = target.log.lines.join('\n');
  expect(log).toContain('planner.given_up');
  expect(log).toContain('planner.retry');
  for (const secret of [
    KEY,
    TOKEN,
    OVERRIDE,
    PLANNER_ERROR_BODY,
    'planner-answer-body',
    'api_key',
    'tlm',
    String(T0),
  ]) {
    expect(log).not.toContain(secret);
  }
});

describe('the compiled binary', () => {
  test('forwards, says so at start-up without the secrets, and sends what waited after a restart', async () => {
    const binary = await compiledBinary();
    const fake = planner(() => ({ status: 503 }));
    const cwd = tempDir();
    const env = { INGEST_TOKEN: OWNER_TOKEN, PLANNER_URL: fake.url, PLANNER_API_KEY: KEY, PLANNER_TOKEN: TOKEN };
    const first = await startBinary(binary, env, cwd);
    const sent = await ownerRequest(first, 'POST', '/v1/telemetry', {
      installationId: INSTALLATION,
      samples: samplesAt(T0, T0 + 1),
    });
    expect(sent.status).toBe(200);
    await fake.waitFor(1);
    expect(await first.stop()).toBe(0);
    expect(first.output()).toMatch(/ info started .* planner="all installations"\n/);

    fake.reply = () => ({});
    const second = await startBinary(binary, env, cwd);
    await fake.waitFor(3);
    expect(await second.stop()).toBe(0);
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0, T0 + 1]);
    for (const output of [first.output(), second.output()]) {
      for (const secret of [KEY, TOKEN, PLANNER_ERROR_BODY]) expect(output).not.toContain(secret);
    }
  }, 120_000);
});
