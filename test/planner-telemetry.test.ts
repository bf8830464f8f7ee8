import { afterEach, describe, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import { PLANNER_ERROR_BODY } from './fake-planner.ts';
import {
  answer,
  INSTALLATION,
  installationNumbered,
  OTHER_INSTALLATION,
  tempDir,
  type TestService,
} from './support.ts';
import {
  cleanups,
  forwarding,
  heldRequestTimers,
  KEY,
  OVERRIDE,
  planner,
  runCleanups,
  samplesAt,
  service,
  states,
  T0,
  TOKEN,
} from './planner-support.ts';

afterEach(runCleanups);

describe('through POST /v1/telemetry', () => {
  async function post(target: TestService, body: unknown) {
    return answer(await target.request('POST', '/v1/telemetry', { body }));
  }

  async function postAndForward(target: TestService, body: unknown) {
    const answered = await post(target, body);
    await target.planner.idle();
    return answered;
  }

  test('without plannerSentUtc every usable sample is forwarded, oldest first, usable values only', async () => {
    const fake = planner();
    const target = await service(forwarding(fake));
    const answered = await postAndForward(target, {
      installationId: INSTALLATION.toUpperCase(),
      samples: [
        { utc: T0 + 1, soc: 140, speed: 50, is_parked: true, foo: 1 },
        { utc: T0, soc: 70, lat: 41.01, is_charging: false },
      ],
    });
    expect(answered).toEqual({
      status: 200,
      body: {
        stored: 2,
        droppedCount: 3,
        dropped: [
          'samples[0].soc: 140 is out of range 0..100',
          'samples[0].foo: unknown field',
          'samples[1].lat: unusable without lon',
        ],
      },
    });
    expect(fake.requests.map((request) => request.tlmText)).toEqual([
      '{"utc":1764080000,"soc":70,"is_charging":0}',
      '{"utc":1764080001,"speed":50,"is_parked":1}',
    ]);
    expect(fake.requests.map((request) => request.fieldNames.join())).toEqual([
      'api_key,token,tlm',
      'api_key,token,tlm',
    ]);
  });

  test('only samples newer than plannerSentUtc are forwarded', async () => {
    const fake = planner();
    const target = await service(forwarding(fake));
    await postAndForward(target, {
      installationId: INSTALLATION,
      plannerSentUtc: T0 + 1,
      samples: samplesAt(T0, T0 + 1, T0 + 2, T0 + 3),
    });
    expect(fake.utcsOf(TOKEN)).toEqual([T0 + 2, T0 + 3]);
    expect(states(target, INSTALLATION)).toEqual([
      [T0, PlannerState.none],
      [T0 + 1, PlannerState.none],
      [T0 + 2, PlannerState.sent],
      [T0 + 3, PlannerState.sent],
    ]);
  });

  test('a late batch from the offline cache is forwarded, once', async () => {
    const fake = planner();
    const target = await service(forwarding(fake));
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0 + 100, T0 + 101) });
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0 + 10, T0 + 11) });
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0 + 10, T0 + 11) });
    expect(fake.utcsOf(TOKEN)).toEqual([T0 + 100, T0 + 101, T0 + 10, T0 + 11]);
  });

  test('new batches are queued as the write reports them: the outbox is read once, when first seen', async () => {
    const fake = planner();
    const target = await service(forwarding(fake));
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1) });
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0 + 3, T0 + 2) });
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0 + 4) });
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4]);
    expect(target.planner.stats).toMatchObject({ sent: 5, outboxReads: 1 });
    expect(states(target, INSTALLATION).every(([, state]) => state === PlannerState.sent)).toBe(true);
  });

  test('installations seen with an empty outbox are remembered up to the limit; the oldest is read again', async () => {
    const target = await service(forwarding(planner()));
    const count = limits.plannerQuietInstallations + 1;
    for (let n = 0; n < count; n += 1) target.planner.recheck(installationNumbered(n)); // each reads its empty outbox
    await target.planner.idle();
    expect(target.planner.stats.outboxReads).toBe(count);
    const nothingNew = { added: [], rewritten: false };
    target.planner.stored(installationNumbered(count - 1), nothingNew); // remembered empty: no read
    await target.planner.idle();
    expect(target.planner.stats.outboxReads).toBe(count);
    target.planner.stored(installationNumbered(0), nothingNew); // the first one, forgotten past the limit: read again
    await target.planner.idle();
    expect(target.planner.stats.outboxReads).toBe(count + 1);
  });

  test('a late batch arriving while newer samples wait is read back from the outbox, sent oldest first', async () => {
    const fake = planner(() => ({ delayMs: 100 }));
    const target = await service(forwarding(fake));
    await post(target, { installationId: INSTALLATION, samples: samplesAt(T0 + 10, T0 + 11, T0 + 12) });
    await fake.waitFor(1); // T0 + 10 is at the planner, T0 + 11 and T0 + 12 wait
    await post(target, { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1) });
    await target.planner.idle();
    expect(fake.utcsOf(TOKEN)).toEqual([T0 + 10, T0, T0 + 1, T0 + 11, T0 + 12]);
    expect(target.planner.stats).toMatchObject({ sent: 5, outboxReads: 2 });
  });

  test('a waiting sample sent again with new values reaches the planner with the new values', async () => {
    const fake = planner(() => ({ delayMs: 100 }));
    const target = await service(forwarding(fake));
    await post(target, {
      installationId: INSTALLATION,
      samples: [
        { utc: T0, soc: 50 },
        { utc: T0 + 1, soc: 51 },
      ],
    });
    await fake.waitFor(1); // T0 is at the planner; T0 + 1 waits in the queue
    await post(target, { installationId: INSTALLATION, samples: [{ utc: T0 + 1, soc: 61 }] });
    await target.planner.idle();
    expect(fake.requests.map((request) => request.tlmText)).toEqual([
      '{"utc":1764080000,"soc":50}',
      '{"utc":1764080001,"soc":61}',
    ]);
  });

  test('a waiting sample withdrawn by a later plannerSentUtc is not sent', async () => {
    const fake = planner(() => ({ delayMs: 100 }));
    const target = await service(forwarding(fake));
    const samples = samplesAt(T0, T0 + 1, T0 + 2);
    await post(target, { installationId: INSTALLATION, samples });
    await fake.waitFor(1); // T0 is at the planner; T0 + 1 and T0 + 2 wait in the queue
    await post(target, { installationId: INSTALLATION, plannerSentUtc: T0 + 1, samples });
    await target.planner.idle();
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 2]);
    expect(states(target, INSTALLATION)).toEqual([
      [T0, PlannerState.none], // withdrawn while at the planner: the car's word stays
      [T0 + 1, PlannerState.none],
      [T0 + 2, PlannerState.sent],
    ]);
  });

  test("a waiting sample at a later batch's plannerSentUtc is not sent, though that batch lacks it", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const fake = planner((request) => (request.tlm.utc === T0 ? { until: held } : {}));
    const target = await service(forwarding(fake), { timers: heldRequestTimers() });
    cleanups.push(release); // before the service closes: its close waits for the held request
    await post(target, { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1) });
    await fake.waitFor(1); // T0 is held at the planner; T0 + 1 waits in the queue
    await post(target, { installationId: INSTALLATION, plannerSentUtc: T0 + 1, samples: samplesAt(T0 + 2) });
    release();
    await target.planner.idle();
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 2]);
    expect(states(target, INSTALLATION)).toEqual([
      [T0, PlannerState.sent],
      [T0 + 1, PlannerState.none],
      [T0 + 2, PlannerState.sent],
    ]);
  });

  test('nothing is forwarded for an invalid batch or one without a usable sample', async () => {
    const fake = planner();
    const target = await service(forwarding(fake));
    expect((await postAndForward(target, { installationId: 'nope', samples: samplesAt(T0) })).status).toBe(400);
    expect(
      await postAndForward(target, { installationId: INSTALLATION, samples: [{ utc: T0, soc: 500 }, 7] }),
    ).toMatchObject({
      status: 200,
      body: { stored: 0 },
    });
    expect(fake.requests).toHaveLength(0);
  });

  test('the same batch sent twice, and two copies at once, are forwarded once', async () => {
    const fake = planner(() => ({ delayMs: 5 }));
    const target = await service(forwarding(fake));
    const batch = { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1) };
    await postAndForward(target, batch);
    await postAndForward(target, batch);
    const copies = { installationId: OTHER_INSTALLATION, samples: samplesAt(T0, T0 + 1) };
    const answers = await Promise.all([post(target, copies), post(target, copies)]);
    expect(answers.map((answered) => answered.status)).toEqual([200, 200]);
    await target.planner.idle();
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1, T0, T0 + 1]);
    expect(fake.requests.filter((request) => request.tlm.utc === T0)).toHaveLength(2); // one per installation
  });

  test('after a restart on the same database nothing is forwarded again', async () => {
    const dir = tempDir();
    const fake = planner();
    const first = await service(forwarding(fake), { dir });
    await postAndForward(first, { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1) });
    await first.close();
    const second = await service(forwarding(fake), { dir });
    await postAndForward(second, { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1, T0 + 2) });
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1, T0 + 2]);
  });

  test('a planner that holds its request does not hold up POST /v1/telemetry', async () => {
    const fake = planner(() => ({ delayMs: 5000 }));
    const target = await service(forwarding(fake));
    expect((await post(target, { installationId: INSTALLATION, samples: samplesAt(T0) })).status).toBe(200);
    await fake.waitFor(1);
    for (let i = 1; i <= 5; i += 1) {
      expect(await post(target, { installationId: INSTALLATION, samples: samplesAt(T0 + i) })).toEqual({
        status: 200,
        body: { stored: 1, droppedCount: 0, dropped: [] },
      });
    }
    expect(fake.holding).toBe(1);
    expect(fake.requests).toHaveLength(1);
  });

  test('without a key the batch is stored and nothing is forwarded', async () => {
    const fake = planner();
    const target = await service(forwarding(fake, { apiKey: null }));
    expect((await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0) })).status).toBe(200);
    expect(fake.requests).toHaveLength(0);
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.none]]);
  });

  test('the log holds none of the secrets nor the planner answer', async () => {
    const fake = planner((_, index) => (index === 0 ? { status: 503 } : { status: 400 }));
    const target = await service(forwarding(fake, { tokens: new Map([[OTHER_INSTALLATION, OVERRIDE]]) }));
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1) });
    await postAndForward(target, { installationId: OTHER_INSTALLATION, samples: samplesAt(T0) });
    const log = target.log.lines.join('\n');
    expect(log).toContain('planner.given_up');
    for (const secret of [KEY, TOKEN, OVERRIDE, PLANNER_ERROR_BODY, 'planner-answer-body', 'tlm'])
      expect(log).not.toContain(secret);
  });
});
