import { afterEach, describe, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import { EndlessBody, PLANNER_ERROR_BODY } from './fake-planner.ts';
import { INSTALLATION, installationNumbered, OTHER_INSTALLATION, waitUntil } from './support.ts';
import {
  cleanups,
  fastTimers,
  forward,
  forwarding,
  heldRequestTimers,
  KEY,
  OVERRIDE,
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
} from './planner-support.ts';

afterEach(runCleanups);

test('a sample is sent as the contract says: form fields, usable values only, flags 0/1, utc in seconds', async () => {
  const fake = planner();
  const target = await service(forwarding(fake));
  await forward(target, INSTALLATION, [
    {
      utc: T0,
      soc: 71.5,
      power: -12.25,
      speed: 88,
      lat: 41.01,
      lon: 28.97,
      is_charging: 1,
      is_parked: 0,
      car_model: 'mg:4:64',
    },
  ]);

  expect(fake.requests).toHaveLength(1);
  const [request] = fake.requests;
  expect(request!.contentType).toBe('application/x-www-form-urlencoded');
  expect(request!.fieldNames).toEqual(['api_key', 'token', 'tlm']);
  expect(request!.apiKey).toBe(KEY);
  expect(request!.token).toBe(TOKEN);
  expect(request!.tlmText).toBe(
    '{"utc":1764080000,"soc":71.5,"power":-12.25,"speed":88,"lat":41.01,"lon":28.97,' +
      '"is_charging":1,"is_parked":0,"car_model":"mg:4:64"}',
  );
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
});

test('at most 8 requests are at the planner at once over all installations', async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  // Every request is held until the test has counted those at the planner; once released, all are answered at once.
  const fake = planner(() => ({ until: held }));
  const target = await service(forwarding(fake), { timers: heldRequestTimers() });
  cleanups.push(release); // before the service closes: its close waits for the held requests
  const sent = spyOnRequests();
  const installations = Array.from({ length: 12 }, (_, i) => installationNumbered(i));
  for (const id of installations) seedPending(target, id, samplesAt(T0 + 3, T0 + 1, T0 + 2));
  for (const id of installations) target.planner.recheck(id);
  // Every loop has read its outbox and, once that is on disk, sent its first request or waits for a slot.
  await waitUntil(() => target.planner.stats.outboxReads === installations.length);
  await target.storage.committer.durable();
  // The first wave has gone out (a ninth would go with it) and reached the planner.
  await waitUntil(() => sent.mock.calls.length >= 8 && fake.requests.length === sent.mock.calls.length);
  expect([fake.holding, fake.requests.length]).toEqual([8, 8]); // the contract's limit, reached and not passed
  release();
  await target.planner.idle();

  expect(fake.requests).toHaveLength(36);
  expect(fake.maxInFlight).toBe(8); // the protocol's number, not limits.plannerInFlight: a changed limit must fail
  for (const id of installations) expect(states(target, id).map(([, state]) => state)).toEqual([2, 2, 2]);
});

test('samples read from the outbox go to the planner only once everything committed is on disk', async () => {
  const fake = planner();
  const target = await service(forwarding(fake));
  let markDurable = () => {};
  const durable = new Promise<void>((resolve) => (markDurable = resolve));
  // The WAL's sync is held: the read below may see commits not on disk yet.
  let waits = 0;
  target.storage.committer.durable = () => (waits++, durable);
  const sent = spyOnRequests();
  try {
    seedPending(target, INSTALLATION, samplesAt(T0 + 1, T0 + 2));
    target.planner.recheck(INSTALLATION);
    await waitUntil(() => target.planner.stats.outboxReads === 1 && waits === 1); // read, then waiting for the disk
    expect(sent).not.toHaveBeenCalled();
  } finally {
    markDurable();
  }
  await target.planner.idle();
  expect(fake.requests).toHaveLength(2);
});

test('one installation never has two requests at the planner at once, and its order is kept', async () => {
  const fake = planner(() => ({ delayMs: 100 }));
  const tokens = new Map([
    [INSTALLATION, 'token-a'],
    [OTHER_INSTALLATION, 'token-b'],
  ]);
  const target = await service(forwarding(fake, { defaultToken: null, tokens }));
  seedPending(target, INSTALLATION, samplesAt(T0 + 5, T0 + 1, T0 + 3, T0 + 2, T0 + 4));
  seedPending(target, OTHER_INSTALLATION, samplesAt(T0 + 9, T0 + 8));
  target.planner.recheck(INSTALLATION);
  target.planner.recheck(OTHER_INSTALLATION);
  await target.planner.idle();

  expect(fake.maxInFlightPerToken).toBe(1);
  expect(fake.maxInFlight).toBe(2);
  expect(fake.utcsOf('token-a')).toEqual([T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 5]);
  expect(fake.utcsOf('token-b')).toEqual([T0 + 8, T0 + 9]);
});

test('a per-installation token overrides PLANNER_TOKEN; without any token nothing of it is sent', async () => {
  const fake = planner();
  const target = await service(forwarding(fake, { tokens: new Map([[INSTALLATION, OVERRIDE]]) }));
  await forward(target, INSTALLATION, samplesAt(T0));
  await forward(target, OTHER_INSTALLATION, samplesAt(T0));
  expect(fake.requests.map((request) => request.token)).toEqual([OVERRIDE, TOKEN]);

  const onlyOne = await service(forwarding(fake, { defaultToken: null, tokens: new Map([[INSTALLATION, OVERRIDE]]) }));
  expect(onlyOne.planner.forwards(INSTALLATION)).toBe(true);
  expect(onlyOne.planner.forwards(OTHER_INSTALLATION)).toBe(false);
  expect(onlyOne.planner.coverage).toBe('1 installation');
});

test('without PLANNER_API_KEY nothing is forwarded', async () => {
  const fake = planner();
  const target = await service(forwarding(fake, { apiKey: null }));
  expect(target.planner.forwards(INSTALLATION)).toBe(false);
  expect(target.planner.coverage).toBe('off');
  await forward(target, INSTALLATION, samplesAt(T0));
  expect(fake.requests).toHaveLength(0);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.pending]]);
});

test('two 500s then success: delivered once, after backoffs of 1 s then 2 s with jitter', async () => {
  const fake = planner((_, index) => (index < 2 ? { status: 500 } : {}));
  const backoffs: number[] = [];
  const target = await service(forwarding(fake), { timers: fastTimers(backoffs) });
  await forward(target, INSTALLATION, samplesAt(T0));

  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0, T0]);
  expect(backoffs).toEqual([750, 1500]); // random() = 0.5: halfway between half and all of 1 s, 2 s
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
  expect(target.planner.stats).toEqual({ sent: 1, givenUp: 0, retried: 2, outboxReads: 1 });
  expect(target.log.lines.filter((line) => line.includes('planner.retry'))).toHaveLength(2);
  expect(target.log.lines.find((line) => line.includes('planner.retry'))).toMatch(
    new RegExp(`warn planner.retry installation=${INSTALLATION} status=500 attempt=1$`),
  );
});

test('a 400 gives the sample up and the next sample is still sent', async () => {
  const fake = planner((request) => (request.tlm.utc === T0 ? { status: 400 } : {}));
  const target = await service(forwarding(fake));
  await forward(target, INSTALLATION, samplesAt(T0, T0 + 1));

  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1]);
  expect(states(target, INSTALLATION)).toEqual([
    [T0, PlannerState.givenUp],
    [T0 + 1, PlannerState.sent],
  ]);
  expect(
    target.log.lines.some((line) =>
      line.endsWith(`planner.given_up installation=${INSTALLATION} status=400 attempts=1`),
    ),
  ).toBe(true);
});

test('a 400 after a retry ends the backoff: the planner answered, so the next sample is sent at once', async () => {
  const fake = planner((_, index) => [{ status: 500 }, { status: 400 }][index] ?? {});
  const backoffs: number[] = [];
  const target = await service(forwarding(fake), { timers: fastTimers(backoffs) });
  await forward(target, INSTALLATION, samplesAt(T0, T0 + 1));

  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0, T0 + 1]);
  expect(backoffs).toEqual([750]); // before T0's second attempt only, none before T0 + 1
  expect(states(target, INSTALLATION)).toEqual([
    [T0, PlannerState.givenUp],
    [T0 + 1, PlannerState.sent],
  ]);
  expect(
    target.log.lines.some((line) =>
      line.endsWith(`planner.given_up installation=${INSTALLATION} status=400 attempts=2`),
    ),
  ).toBe(true);
});

test('a redirect is not followed, so the key and token go nowhere else: the sample is given up', async () => {
  const elsewhere = planner();
  const fake = planner(() => ({ status: 307, headers: { location: elsewhere.url } }));
  const target = await service(forwarding(fake));
  await forward(target, INSTALLATION, samplesAt(T0));
  expect([fake.requests.length, elsewhere.requests.length]).toEqual([1, 0]);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.givenUp]]);
  expect(
    target.log.lines.some((line) =>
      line.endsWith(`planner.given_up installation=${INSTALLATION} status=307 attempts=1`),
    ),
  ).toBe(true);
});

test('success is a 200 with {"status":"ok"}: a 200 without it, or a 201 with it, gives the sample up', async () => {
  const fake = planner((request) =>
    request.tlm.utc === T0 ? { status: 200, body: '{"status":"error"}' } : { status: 201, body: '{"status":"ok"}' },
  );
  const target = await service(forwarding(fake));
  await forward(target, INSTALLATION, samplesAt(T0, T0 + 1));
  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1]);
  expect(states(target, INSTALLATION)).toEqual([
    [T0, PlannerState.givenUp],
    [T0 + 1, PlannerState.givenUp],
  ]);
  expect(plannerLog(target)).toEqual([
    `warn planner.given_up installation=${INSTALLATION} error=UnexpectedAnswer attempts=1`,
    `warn planner.given_up installation=${INSTALLATION} status=201 attempts=1`,
  ]);
});

test('an answer of up to 4 KiB is read whole; a 200 one byte longer is not ok and gives the sample up', async () => {
  const okPaddedTo = (bytes: number) => '{"status":"ok"}'.padEnd(bytes, ' ');
  const longest = limits.plannerAnswerBytes;
  const fake = planner((request) => ({ body: okPaddedTo(request.tlm.utc === T0 ? longest : longest + 1) }));
  const target = await service(forwarding(fake));
  await forward(target, INSTALLATION, samplesAt(T0, T0 + 1));
  expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1]);
  expect(states(target, INSTALLATION)).toEqual([
    [T0, PlannerState.sent],
    [T0 + 1, PlannerState.givenUp],
  ]);
  expect(plannerLog(target)).toEqual([
    `warn planner.given_up installation=${INSTALLATION} error=AnswerTooLarge attempts=1`,
  ]);
});

describe('an endless answer', () => {
  /** Far past what a bounded read takes, yet read whole in a moment by a client without the bound. */
  const CAP = 64 * 1024 * 1024;
  /** What the loopback connection's buffers take in ahead of a client that stops reading: a few MiB. */
  const BUFFERED_MAX = 16 * 1024 * 1024;

  /**
   * A planner answering the first request with `status` and an endless body starting with `head`, the
   * rest `{"status":"ok"}`; `atNext` is that body as the next request found it.
   */
  function endlessFirst(status: number, head: string) {
    const endless = { body: new EndlessBody(head, CAP), atNext: { state: 'no next request', written: 0 } };
    const fake = planner((_, index) => {
      if (index === 0) return { status, body: endless.body.stream };
      if (index === 1) endless.atNext = { state: endless.body.state, written: endless.body.written };
      return {};
    });
    return { fake, endless };
  }

  /** Read no further than the bound and let go before the next request: only the connection's buffers were filled. */
  function expectCutOff(endless: ReturnType<typeof endlessFirst>['endless']): void {
    expect(endless.atNext.state).toBe('cancelled');
    expect(endless.atNext.written).toBeLessThan(BUFFERED_MAX);
  }

  test('a 200 is cut off past 4 KiB, though it would read as ok, and gives the sample up at once', async () => {
    const { fake, endless } = endlessFirst(200, '{"status":"ok"}');
    const target = await service(forwarding(fake));
    await forward(target, INSTALLATION, samplesAt(T0, T0 + 1));
    expectCutOff(endless);
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1]);
    expect(states(target, INSTALLATION)).toEqual([
      [T0, PlannerState.givenUp],
      [T0 + 1, PlannerState.sent],
    ]);
    expect(plannerLog(target)).toEqual([
      `warn planner.given_up installation=${INSTALLATION} error=AnswerTooLarge attempts=1`,
    ]);
  });

  test('a 503 is cut off past 4 KiB and retried as any 503; the answer is not logged', async () => {
    const { fake, endless } = endlessFirst(503, PLANNER_ERROR_BODY);
    const target = await service(forwarding(fake));
    await forward(target, INSTALLATION, samplesAt(T0));
    expectCutOff(endless);
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0]);
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
    expect(target.planner.stats).toEqual({ sent: 1, givenUp: 0, retried: 1, outboxReads: 1 });
    expect(plannerLog(target)).toEqual([`warn planner.retry installation=${INSTALLATION} status=503 attempt=1`]);
    expect(target.log.lines.join('\n')).not.toContain('planner-answer-body');
  });
});
