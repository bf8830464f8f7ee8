import { afterEach, describe, expect, spyOn, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { after, type PlannerTimers } from '../src/planner/forwarder.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import { startFakePlanner, type FakePlanner, type PlannerReply } from './fake-planner.ts';
import { heldSyncs, INSTALLATION, installationNumbered, waitUntil, type TestService } from './support.ts';
import {
  cleanups,
  changeDatabase,
  fastTimers,
  forward,
  forwarding,
  heldRequestTimers,
  planner,
  plannerLog,
  runCleanups,
  samplesAt,
  seedPending,
  service,
  spyOnRequests,
  states,
  T0,
  TOKEN,
  withdrawPending,
} from './planner-support.ts';

afterEach(runCleanups);

test('429 and 5xx are tried 5 times, then given up; the backoff doubles to 60 s and carries to the next', async () => {
  const fake = planner((_, index) => ({ status: index % 2 ? 429 : 503 }));
  const backoffs: number[] = [];
  const target = await service(forwarding(fake), { timers: fastTimers(backoffs) });
  await forward(target, INSTALLATION, samplesAt(T0, T0 + 1));

  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0, T0, T0, T0, T0 + 1, T0 + 1, T0 + 1, T0 + 1, T0 + 1]);
  expect(backoffs.map((ms) => ms / 0.75)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
  expect(states(target, INSTALLATION)).toEqual([
    [T0, PlannerState.givenUp],
    [T0 + 1, PlannerState.givenUp],
  ]);
  expect(target.planner.stats.givenUp).toBe(2);
});

test("the backoff carries over to a car's next upload after its loop ended, until an answer comes", async () => {
  const fake = planner((_, index) => (index < 10 ? { status: 503 } : {})); // down for ten requests
  const backoffs: number[] = [];
  const target = await service(forwarding(fake), { timers: fastTimers(backoffs) });
  for (const utc of [T0, T0 + 60, T0 + 120, T0 + 180]) {
    await target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples: samplesAt(utc) } });
    await target.planner.idle(); // this sample's attempts are over before the car uploads the next
  }
  // Five attempts each for the first two; the third goes after the longest wait and is taken; the fourth at once.
  expect(backoffs.map((ms) => ms / 0.75)).toEqual([
    1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000,
  ]);
  expect(states(target, INSTALLATION)).toEqual([
    [T0, PlannerState.givenUp],
    [T0 + 60, PlannerState.givenUp],
    [T0 + 120, PlannerState.sent],
    [T0 + 180, PlannerState.sent],
  ]);
});

test('backoffs are kept up to the installation limit: the oldest forgotten sends at once, newest waits', async () => {
  const fake = planner(() => ({ status: 503 }));
  const backoffs: number[] = [];
  const held: (() => void)[] = [];
  let hold = true;
  const timers: PlannerTimers = {
    ...fastTimers(),
    backoff: (ms, wake) => (backoffs.push(ms), hold ? (held.push(wake), () => {}) : after(0, wake)),
  };
  const target = await service(forwarding(fake), { timers });
  /** Each installation's sample is answered 503, then withdrawn in the backoff: its loop ends, backoff remembered. */
  const endInBackoff = async (ids: string[]) => {
    seedPending(target, ids, samplesAt(T0));
    for (const id of ids) target.planner.recheck(id);
    await waitUntil(() => held.length === ids.length, 30_000);
    withdrawPending(target);
    for (const wake of held.splice(0)) wake();
    await target.planner.idle();
  };
  const ids = Array.from({ length: limits.plannerQuietInstallations + 1 }, (_, n) => installationNumbered(n));
  const [oldest, second, newest] = [ids[0]!, ids[1]!, ids.at(-1)!];
  await endInBackoff([oldest]);
  await endInBackoff([second]); // the oldest kept once the limit is reached
  await endInBackoff(ids.slice(2, -1));
  await endInBackoff([newest]);
  expect(fake.requests).toHaveLength(ids.length);

  fake.reply = () => ({});
  hold = false;
  /** The backoffs waited out before the installation's next sample was taken. */
  const backoffsBefore = async (id: string) => {
    const from = backoffs.length;
    await forward(target, id, samplesAt(T0 + 1));
    return backoffs.slice(from);
  };
  // 750: the first backoff, 1 s, jittered with random() = 0.5.
  expect([await backoffsBefore(oldest), await backoffsBefore(second), await backoffsBefore(newest)]).toEqual([
    [],
    [750],
    [750],
  ]);
  expect(fake.utcsOf(TOKEN).slice(-3)).toEqual([T0 + 1, T0 + 1, T0 + 1]);
}, 60_000);

describe('a sample sent again while it waits out a backoff', () => {
  /** The planner fails the first request; the backoff after it lasts until the test releases it, later ones none. */
  async function waitingInBackoff() {
    const fake = planner((_, index) => (index === 0 ? { status: 503 } : {}));
    let release: (() => void) | null = null;
    const timers: PlannerTimers = {
      ...fastTimers(),
      backoff: (_ms, wake) => (release === null ? ((release = wake), () => {}) : after(0, wake)),
    };
    const target = await service(forwarding(fake), { timers });
    const post = (body: object) =>
      target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, ...body } });
    await post({ samples: [{ utc: T0, soc: 50 }] });
    await waitUntil(() => release !== null); // the 503 arrived and its backoff began, not only the request
    return { fake, target, post, release: () => release!() };
  }

  test('with new values is sent with them, once', async () => {
    const { fake, target, post, release } = await waitingInBackoff();
    await post({ samples: [{ utc: T0, soc: 77 }] });
    release();
    await target.planner.idle();
    expect(fake.requests.map((request) => request.tlm)).toEqual([
      { utc: T0, soc: 50 }, // answered 503
      { utc: T0, soc: 77 },
    ]);
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
  });

  test('with new values is sent with them only once their commit is on disk', async () => {
    const fake = planner((_, index) => (index === 0 ? { status: 503 } : {}));
    const backoffs: (() => void)[] = [];
    const timers: PlannerTimers = { ...fastTimers(), backoff: (_ms, wake) => (backoffs.push(wake), () => {}) };
    const syncs = heldSyncs();
    const target = await service(forwarding(fake), { timers, syncFile: syncs.syncFile });
    cleanups.push(syncs.release); // before the service closes: its close waits for held syncs
    const post = (soc: number) =>
      target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples: [{ utc: T0, soc }] } });
    const first = post(50);
    await waitUntil(() => syncs.calls.length === 1);
    syncs.calls[0]!.finish();
    expect((await first).status).toBe(200);
    await waitUntil(() => backoffs.length === 1); // answered 503: the sample waits out its backoff
    const rewriting = post(77);
    await waitUntil(() => syncs.calls.length === 2); // committed, so read after the backoff, but its sync is held
    const durable = spyOn(target.storage.committer, 'durable');
    const sent = spyOnRequests();
    backoffs[0]!();
    // The sample read again, the forwarder waits for that commit's sync; nothing has gone out meanwhile.
    await waitUntil(() => durable.mock.calls.length === 1);
    expect(sent).not.toHaveBeenCalled();
    syncs.release();
    expect((await rewriting).status).toBe(200);
    await target.planner.idle();
    expect(fake.requests.map((request) => request.tlm)).toEqual([
      { utc: T0, soc: 50 }, // answered 503
      { utc: T0, soc: 77 },
    ]);
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
  });

  test('rewritten while its re-read waits for the disk, it is read again and sent with the newest values', async () => {
    const { fake, target, release } = await waitingInBackoff();
    // The re-read after the backoff waits for the disk; meanwhile a second batch rewrites the sample.
    let finishWait = () => {};
    let waits = 0;
    const durable = target.storage.committer.durable.bind(target.storage.committer);
    target.storage.committer.durable = () => {
      waits += 1;
      return waits === 1 ? new Promise<void>((resolve) => (finishWait = resolve)) : durable();
    };
    release();
    await waitUntil(() => waits === 1);
    changeDatabase(target, (db) => db.run(`UPDATE samples SET soc = 88 WHERE utc = ${T0}`));
    target.planner.stored(INSTALLATION, { added: [], rewritten: true }); // as the batch's commit reports it
    finishWait();
    await target.planner.idle();
    expect(fake.requests.map((request) => request.tlm)).toEqual([
      { utc: T0, soc: 50 }, // answered 503
      { utc: T0, soc: 88 },
    ]);
    expect(waits).toBe(2); // read again, and waited for the disk again
  });

  test('rewritten during every backoff, it is still given up after its 5 attempts', async () => {
    const fake = planner(() => ({ status: 503 }));
    let soc = 50;
    let target: TestService;
    const rewrite = () =>
      target.request('POST', '/v1/telemetry', {
        body: { installationId: INSTALLATION, samples: [{ utc: T0, soc: ++soc }] },
      });
    const timers: PlannerTimers = { ...fastTimers(), backoff: (_ms, wake) => (void rewrite().then(wake), () => {}) };
    target = await service(forwarding(fake), { timers });
    await target.request('POST', '/v1/telemetry', {
      body: { installationId: INSTALLATION, samples: [{ utc: T0, soc }] },
    });
    await target.planner.idle();
    expect(fake.requests.map((request) => request.tlm.soc)).toEqual([50, 51, 52, 53, 54]);
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.givenUp]]);
  });

  test('withdrawn by plannerSentUtc (the car gave it to the planner) is not sent again; the next one is', async () => {
    const { fake, target, post, release } = await waitingInBackoff();
    await post({
      plannerSentUtc: T0,
      samples: [
        { utc: T0, soc: 50 },
        { utc: T0 + 1, soc: 51 },
      ],
    });
    release();
    await target.planner.idle();
    expect(fake.requests.map((request) => request.tlm.utc)).toEqual([T0, T0 + 1]); // T0's one attempt answered 503
    expect(states(target, INSTALLATION)).toEqual([
      [T0, PlannerState.none],
      [T0 + 1, PlannerState.sent],
    ]);
  });
});

describe('a sample sent again while it waits for a request slot', () => {
  /** Other installations' requests hold every planner slot until released; INSTALLATION's sample (soc 50) waits. */
  async function waitingForSlot() {
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const others = Array.from({ length: limits.plannerInFlight }, (_, n) => installationNumbered(n));
    const fake = planner((request) => (request.token === TOKEN ? {} : { until: held }));
    const tokens = new Map(others.map((id, n) => [id, `other-token-${n}`]));
    const target = await service(forwarding(fake, { tokens }), { timers: heldRequestTimers() });
    cleanups.push(release); // before the service closes: its close waits for the held requests
    seedPending(target, others, samplesAt(T0));
    for (const id of others) target.planner.recheck(id);
    await waitUntil(() => fake.holding === limits.plannerInFlight);
    const post = (body: object) =>
      target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, ...body } });
    await post({ samples: [{ utc: T0, soc: 50 }] });
    await waitUntil(() => target.planner.stats.outboxReads === others.length + 1);
    // The loop waits for what its read saw to be on disk, then for a slot: this waits after it.
    await target.storage.committer.durable();
    return { fake, target, post, release };
  }

  test('withdrawn by plannerSentUtc is never sent', async () => {
    const { fake, target, post, release } = await waitingForSlot();
    await post({ plannerSentUtc: T0, samples: [{ utc: T0, soc: 50 }] });
    release();
    await target.planner.idle();
    expect(fake.utcsOf(TOKEN)).toEqual([]);
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.none]]);
  });

  test('with new values is sent with them, once', async () => {
    const { fake, target, post, release } = await waitingForSlot();
    await post({ samples: [{ utc: T0, soc: 61 }] });
    expect(fake.utcsOf(TOKEN)).toEqual([]);
    release();
    await target.planner.idle();
    expect(fake.requests.filter((request) => request.token === TOKEN).map((request) => request.tlm)).toEqual([
      { utc: T0, soc: 61 },
    ]);
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
  });

  test('with new values after a late batch that already has the queue read again is sent with them', async () => {
    const { fake, target, post, release } = await waitingForSlot();
    await post({ samples: [{ utc: T0 - 10, soc: 40 }] }); // older than what waits: the queue is to be read again
    await post({ samples: [{ utc: T0, soc: 61 }] });
    release();
    await target.planner.idle();
    expect(fake.requests.filter((request) => request.token === TOKEN).map((request) => request.tlm)).toEqual([
      { utc: T0, soc: 61 }, // already on its way when the late batch came
      { utc: T0 - 10, soc: 40 },
    ]);
  });
});

test('network errors and timeouts are retried and logged by code (ECONNREFUSED) or class (a timeout)', async () => {
  const gone = startFakePlanner();
  const deadUrl = gone.url;
  await gone.stop();
  const target = await service(forwarding({ url: deadUrl } as FakePlanner));
  await forward(target, INSTALLATION, samplesAt(T0));
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.givenUp]]);
  // By the error's code, not its class (a TypeError): what says the planner is down.
  expect(plannerLog(target)).toContainEqual(
    `warn planner.given_up installation=${INSTALLATION} error=ECONNREFUSED attempts=5`,
  );

  // The first request outlives its 10 s deadline (500 ms here); the second is answered at once.
  const slow = planner((_, index): PlannerReply => (index === 0 ? { delayMs: 2000 } : {}));
  const other = await service(forwarding(slow));
  await forward(other, INSTALLATION, samplesAt(T0));
  expect(slow.requests).toHaveLength(2);
  expect(states(other, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
  expect(other.log.lines.some((line) => line.endsWith('error=Timeout attempt=1'))).toBe(true);
});
