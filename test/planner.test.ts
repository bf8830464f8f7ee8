import { Database } from 'bun:sqlite';
import { afterEach, describe, expect, spyOn, test } from 'bun:test';
import type { Config, PlannerConfig } from '../src/config.ts';
import type { SyncFile } from '../src/db/wal-sync.ts';
import { limits } from '../src/limits.ts';
import { after, type PlannerTimers } from '../src/planner/forwarder.ts';
import { PlannerState } from '../src/telemetry/schema.ts';
import { EndlessBody, PLANNER_ERROR_BODY, startFakePlanner, type FakePlanner, type PlannerReply } from './fake-planner.ts';
import { compiledBinary, ownerRequest, startBinary } from './binary.ts';
import {
  answer,
  heldSyncs,
  INSTALLATION,
  installationNumbered,
  OTHER_INSTALLATION,
  OWNER_TOKEN,
  startTestService,
  tempDir,
  waitUntil,
  type TestService,
} from './support.ts';

const KEY = 'planner-api-key-secret-0001';
const TOKEN = 'planner-user-token-secret-0002';
const OVERRIDE = 'planner-override-token-secret-0003';
const T0 = 1_764_080_000;

let cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** Backoffs are recorded and skipped; other delays (10 s request, 5 s grace) run 20 times faster. */
function fastTimers(backoffs: number[] = []): PlannerTimers {
  return {
    backoff: (ms, wake) => (backoffs.push(ms), after(0, wake)),
    delay: (ms, expire) => after(ms / 20, expire),
    random: () => 0.5,
  };
}

/** As fastTimers, but a request keeps its real 10 s deadline: one held at the planner by hand must not time out meanwhile. */
function heldRequestTimers(): PlannerTimers {
  return { ...fastTimers(), delay: after };
}

function planner(reply?: FakePlanner['reply']): FakePlanner {
  const fake = startFakePlanner(reply);
  cleanups.push(() => fake.stop());
  return fake;
}

/** The forwarder's requests, counted as it sends them, before any reaches the planner. */
function spyOnRequests() {
  const sent = spyOn(globalThis, 'fetch');
  cleanups.push(() => sent.mockRestore());
  return sent;
}

function forwarding(fake: FakePlanner, overrides: Partial<PlannerConfig> = {}): Partial<Config> {
  return { planner: { url: fake.url, apiKey: KEY, defaultToken: TOKEN, tokens: new Map(), ...overrides } };
}

async function service(
  config: Partial<Config>,
  options: { dir?: string; timers?: PlannerTimers; syncFile?: SyncFile } = {},
): Promise<TestService> {
  const started = await startTestService(config, { dir: options.dir, syncFile: options.syncFile, plannerTimers: options.timers ?? fastTimers() });
  cleanups.push(() => started.close());
  return started;
}

type Sample = Record<string, number | string>;

/** Runs `change` in one transaction on a connection of its own, as another process's would be. */
function changeDatabase(target: TestService, change: (db: Database) => void): void {
  const db = new Database(target.config.databasePath);
  try {
    db.run('PRAGMA busy_timeout = 5000');
    db.transaction(change)(db);
  } finally {
    db.close();
  }
}

/** Test fixture: stores samples of each installation as waiting for the planner, as the telemetry write does. */
function seedPending(target: TestService, installations: string | string[], samples: Sample[]): void {
  changeDatabase(target, (db) => {
    for (const installationId of [installations].flat()) {
      db.query('INSERT INTO installations (uuid) VALUES (?) ON CONFLICT (uuid) DO NOTHING').run(installationId);
      const { id } = db.query<{ id: number }, [string]>('SELECT id FROM installations WHERE uuid = ?').get(installationId)!;
      for (const sample of samples) {
        const columns = ['installation', 'planner_state', ...Object.keys(sample)];
        db.query(`INSERT INTO samples (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`).run(
          id,
          PlannerState.pending,
          ...Object.values(sample),
        );
      }
    }
  });
}

/** Test fixture: withdraws every waiting sample, as a batch whose plannerSentUtc covers them does. */
function withdrawPending(target: TestService): void {
  changeDatabase(target, (db) => db.run(`UPDATE samples SET planner_state = ${PlannerState.none} WHERE planner_state = ${PlannerState.pending}`));
}

/** Makes the next `count` writes of `op` fail as a full disk would; answers a function that ends the failures. */
function failWrites(target: TestService, op: string, count: number): () => void {
  const { committer } = target.storage;
  const write = committer.write.bind(committer);
  let failures = count;
  committer.write = ((name, args) =>
    name === op && failures-- > 0 ? Promise.reject(new Error('database or disk is full')) : write(name, args)) as typeof committer.write;
  return () => (failures = 0);
}

function samplesAt(...utcs: number[]): Sample[] {
  return utcs.map((utc) => ({ utc, soc: 50 }));
}

function states(target: TestService, installationId: string): [number, number][] {
  return target.storage.db
    .query<{ utc: number; state: number }, [string]>(
      `SELECT utc, planner_state AS state FROM samples
       WHERE installation = (SELECT id FROM installations WHERE uuid = ?) ORDER BY utc`,
    )
    .all(installationId)
    .map((row) => [row.utc, row.state]);
}

/** The forwarder's log lines (retries, given-up samples), without their time stamps; planner-status.test.ts covers planner.sent. */
function plannerLog(target: TestService): string[] {
  const lines = target.log.lines.filter((line) => line.includes(' planner.') && !line.includes(' planner.sent '));
  return lines.map((line) => line.slice(line.indexOf(' ') + 1));
}

/** Seeds waiting samples and wakes the installation's loop, without waiting for it. */
function forwardInBackground(target: TestService, installationId: string, samples: Sample[]): void {
  seedPending(target, installationId, samples);
  target.planner.recheck(installationId);
}

async function forward(target: TestService, installationId: string, samples: Sample[]): Promise<void> {
  forwardInBackground(target, installationId, samples);
  await target.planner.idle();
}

test('a sample is sent as the contract says: form fields, usable values only, flags 0/1, utc in seconds', async () => {
  const fake = planner();
  const target = await service(forwarding(fake));
  await forward(target, INSTALLATION, [
    { utc: T0, soc: 71.5, power: -12.25, speed: 88, lat: 41.01, lon: 28.97, is_charging: 1, is_parked: 0, car_model: 'mg:4:64' },
  ]);

  expect(fake.requests).toHaveLength(1);
  const [request] = fake.requests;
  expect(request!.contentType).toBe('application/x-www-form-urlencoded');
  expect(request!.fieldNames).toEqual(['api_key', 'token', 'tlm']);
  expect(request!.apiKey).toBe(KEY);
  expect(request!.token).toBe(TOKEN);
  expect(request!.tlmText).toBe(
    '{"utc":1764080000,"soc":71.5,"power":-12.25,"speed":88,"lat":41.01,"lon":28.97,"is_charging":1,"is_parked":0,"car_model":"mg:4:64"}',
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
  expect(fake.maxInFlight).toBe(8); // the contract's number, not limits.plannerInFlight: a change of the limit must fail here
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

test('a per-installation token overrides PLANNER_TOKEN; without a token nothing of an installation is sent', async () => {
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
  expect(target.log.lines.some((line) => line.endsWith(`planner.given_up installation=${INSTALLATION} status=400 attempts=1`))).toBe(true);
});

test('a 400 after a retry ends the backoff: the planner answered, so the next sample is sent without a wait', async () => {
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
  expect(target.log.lines.some((line) => line.endsWith(`planner.given_up installation=${INSTALLATION} status=400 attempts=2`))).toBe(true);
});

test('a redirect is not followed, so the key and token go nowhere else: the sample is given up', async () => {
  const elsewhere = planner();
  const fake = planner(() => ({ status: 307, headers: { location: elsewhere.url } }));
  const target = await service(forwarding(fake));
  await forward(target, INSTALLATION, samplesAt(T0));
  expect([fake.requests.length, elsewhere.requests.length]).toEqual([1, 0]);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.givenUp]]);
  expect(target.log.lines.some((line) => line.endsWith(`planner.given_up installation=${INSTALLATION} status=307 attempts=1`))).toBe(true);
});

test('success is a 200 with {"status":"ok"}: a 200 without it, or a 201 with it, gives the sample up', async () => {
  const fake = planner((request) => (request.tlm.utc === T0 ? { status: 200, body: '{"status":"error"}' } : { status: 201, body: '{"status":"ok"}' }));
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
  expect(plannerLog(target)).toEqual([`warn planner.given_up installation=${INSTALLATION} error=AnswerTooLarge attempts=1`]);
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
    expect(plannerLog(target)).toEqual([`warn planner.given_up installation=${INSTALLATION} error=AnswerTooLarge attempts=1`]);
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

test('429 and 5xx are tried 5 times, then given up; the backoff doubles to 60 s and carries to the next sample', async () => {
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
  expect(backoffs.map((ms) => ms / 0.75)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000]);
  expect(states(target, INSTALLATION)).toEqual([
    [T0, PlannerState.givenUp],
    [T0 + 60, PlannerState.givenUp],
    [T0 + 120, PlannerState.sent],
    [T0 + 180, PlannerState.sent],
  ]);
});

test('backoffs are remembered for up to the limit of installations: the oldest forgotten sends its next sample at once, the newest waits', async () => {
  const fake = planner(() => ({ status: 503 }));
  const backoffs: number[] = [];
  const held: (() => void)[] = [];
  let hold = true;
  const timers: PlannerTimers = {
    ...fastTimers(),
    backoff: (ms, wake) => (backoffs.push(ms), hold ? (held.push(wake), () => {}) : after(0, wake)),
  };
  const target = await service(forwarding(fake), { timers });
  /** Each installation's sample is answered 503, then withdrawn during the backoff: its loop ends with the backoff remembered. */
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
  expect([await backoffsBefore(oldest), await backoffsBefore(second), await backoffsBefore(newest)]).toEqual([[], [750], [750]]);
  expect(fake.utcsOf(TOKEN).slice(-3)).toEqual([T0 + 1, T0 + 1, T0 + 1]);
}, 60_000);

describe('a sample sent again while it waits out a backoff', () => {
  /** The planner fails the first request; the backoff after it lasts until the test releases it, later ones not at all. */
  async function waitingInBackoff() {
    const fake = planner((_, index) => (index === 0 ? { status: 503 } : {}));
    let release: (() => void) | null = null;
    const timers: PlannerTimers = {
      ...fastTimers(),
      backoff: (_ms, wake) => (release === null ? ((release = wake), () => {}) : after(0, wake)),
    };
    const target = await service(forwarding(fake), { timers });
    const post = (body: object) => target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, ...body } });
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
    const post = (soc: number) => target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples: [{ utc: T0, soc }] } });
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

  test('rewritten again while its re-read waits for the disk, it is read once more and sent with the newest values', async () => {
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
    const rewrite = () => target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples: [{ utc: T0, soc: ++soc }] } });
    const timers: PlannerTimers = { ...fastTimers(), backoff: (_ms, wake) => (void rewrite().then(wake), () => {}) };
    target = await service(forwarding(fake), { timers });
    await target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples: [{ utc: T0, soc }] } });
    await target.planner.idle();
    expect(fake.requests.map((request) => request.tlm.soc)).toEqual([50, 51, 52, 53, 54]);
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.givenUp]]);
  });

  test('withdrawn by plannerSentUtc (the car gave it to the planner itself) is not sent again; the next one is', async () => {
    const { fake, target, post, release } = await waitingInBackoff();
    await post({ plannerSentUtc: T0, samples: [{ utc: T0, soc: 50 }, { utc: T0 + 1, soc: 51 }] });
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
  /** Other installations' requests hold every slot at the planner until released; INSTALLATION's sample (soc 50) waits for one. */
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
    const post = (body: object) => target.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, ...body } });
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
    expect(fake.requests.filter((request) => request.token === TOKEN).map((request) => request.tlm)).toEqual([{ utc: T0, soc: 61 }]);
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
  expect(plannerLog(target)).toContainEqual(`warn planner.given_up installation=${INSTALLATION} error=ECONNREFUSED attempts=5`);

  // The first request outlives its 10 s deadline (500 ms here); the second is answered at once.
  const slow = planner((_, index): PlannerReply => (index === 0 ? { delayMs: 2000 } : {}));
  const other = await service(forwarding(slow));
  await forward(other, INSTALLATION, samplesAt(T0));
  expect(slow.requests).toHaveLength(2);
  expect(states(other, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);
  expect(other.log.lines.some((line) => line.endsWith('error=Timeout attempt=1'))).toBe(true);
});

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
  const target = await service(forwarding(fake), { timers: { ...fastTimers(), backoff: () => () => {}, delay: after } });
  seedPending(target, INSTALLATION, samplesAt(T0));
  target.planner.recheck(INSTALLATION);
  await fake.waitFor(1);
  const stopping = target.planner.stop(); // the 503 comes back during the grace
  expect(await Promise.race([stopping.then(() => 'stopped'), Bun.sleep(3000).then(() => 'still backing off')])).toBe('stopped');
  expect(fake.requests).toHaveLength(1);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.pending]]); // sent after the restart
});

test('an outcome whose write fails is written again later; its sample is not sent again, and no other sample is sent, meanwhile', async () => {
  const fake = planner();
  // The retry of the failed write comes when the test says so.
  let retry = () => {};
  const timers = { ...fastTimers(), delay: (ms: number, expire: () => void) => (ms === limits.plannerMarkRetryMs ? ((retry = expire), () => {}) : after(ms / 20, expire)) };
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

test('a disk that stays full is logged at its first failed write and then once a minute (every 60th retry), and its end once', async () => {
  const fake = planner();
  let retry = () => {};
  let retries = 0;
  const timers = {
    ...fastTimers(),
    delay: (ms: number, expire: () => void) => (ms === limits.plannerMarkRetryMs ? ((retries += 1), (retry = expire), () => {}) : after(ms / 20, expire)),
  };
  const target = await service(forwarding(fake), { timers });
  const diskFull = failWrites(target, 'plannerSettled', Infinity);
  await forward(target, INSTALLATION, samplesAt(T0));
  for (let n = 1; n <= 120; n += 1) {
    await waitUntil(() => retries === n); // the last write failed and its retry is due
    retry();
  }
  await waitUntil(() => retries === 121);
  expect(target.log.lines.filter((line) => line.includes('planner.mark_')).map((line) => line.replace(/^\S+ /, ''))).toEqual([
    'error planner.mark_failed samples=1 failures=1 reason="database or disk is full"',
    'error planner.mark_failed samples=1 failures=61 reason="database or disk is full"',
    'error planner.mark_failed samples=1 failures=121 reason="database or disk is full"',
  ]);
  diskFull();
  retry();
  await waitUntil(() => target.log.lines.some((line) => line.includes('planner.mark_recovered')));
  expect(target.log.lines.filter((line) => line.includes('planner.mark_')).slice(3)).toEqual([expect.stringMatching(/ info planner\.mark_recovered failures=121$/)]);
  expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent]]);

  // The next outage is counted from one again.
  failWrites(target, 'plannerSettled', 1);
  await forward(target, INSTALLATION, samplesAt(T0 + 1));
  expect(target.log.lines.filter((line) => line.includes('planner.mark_')).at(-1)).toEndWith(' error planner.mark_failed samples=1 failures=1 reason="database or disk is full"');
});

test('attempts already waiting for a request slot when an outcome cannot be written do not send either', async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  // The first request is answered at once, the others held: its outcome's write fails while they wait.
  const fake = planner((_, index) => (index === 0 ? {} : { until: held }));
  let retry = () => {};
  // The requests keep their real deadline; the failed write's retry comes when the test says so.
  const delay = (ms: number, expire: () => void) => (ms === limits.plannerMarkRetryMs ? ((retry = expire), () => {}) : after(ms === limits.plannerTimeoutMs ? ms : ms / 20, expire));
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

test('an attempt whose re-read waits for the disk while another outcome\'s write fails does not send until it is written', async () => {
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
  target.storage.committer.durable = () => (++waits === 1 ? new Promise<void>((resolve) => (finishWait = resolve)) : durable());
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

test('while outcomes cannot be written (a full disk), a restart sends again only the sample answered meanwhile', async () => {
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
  const timers = { ...fastTimers(), delay: (ms: number, expire: () => void) => after(ms === limits.plannerMarkRetryMs ? 3_600_000 : ms / 20, expire) };
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
  for (const secret of [KEY, TOKEN, OVERRIDE, PLANNER_ERROR_BODY, 'planner-answer-body', 'api_key', 'tlm', String(T0)]) {
    expect(log).not.toContain(secret);
  }
});

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
        dropped: ['samples[0].soc: 140 is out of range 0..100', 'samples[0].foo: unknown field', 'samples[1].lat: unusable without lon'],
      },
    });
    expect(fake.requests.map((request) => request.tlmText)).toEqual([
      '{"utc":1764080000,"soc":70,"is_charging":0}',
      '{"utc":1764080001,"speed":50,"is_parked":1}',
    ]);
    expect(fake.requests.map((request) => request.fieldNames.join())).toEqual(['api_key,token,tlm', 'api_key,token,tlm']);
  });

  test('only samples newer than plannerSentUtc are forwarded', async () => {
    const fake = planner();
    const target = await service(forwarding(fake));
    await postAndForward(target, { installationId: INSTALLATION, plannerSentUtc: T0 + 1, samples: samplesAt(T0, T0 + 1, T0 + 2, T0 + 3) });
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

  test('new batches are queued as the write reports them: the outbox is read once, when the installation is first seen', async () => {
    const fake = planner();
    const target = await service(forwarding(fake));
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1) });
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0 + 3, T0 + 2) });
    await postAndForward(target, { installationId: INSTALLATION, samples: samplesAt(T0 + 4) });
    expect(fake.utcsOf(TOKEN)).toEqual([T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4]);
    expect(target.planner.stats).toMatchObject({ sent: 5, outboxReads: 1 });
    expect(states(target, INSTALLATION).every(([, state]) => state === PlannerState.sent)).toBe(true);
  });

  test('installations seen with an empty outbox are remembered up to the limit; the oldest forgotten is read again', async () => {
    const target = await service(forwarding(planner()));
    const count = limits.plannerQuietInstallations + 1;
    for (let n = 0; n < count; n += 1) target.planner.recheck(installationNumbered(n)); // each reads its (empty) outbox once
    await target.planner.idle();
    expect(target.planner.stats.outboxReads).toBe(count);
    const nothingNew = { added: [], rewritten: false };
    target.planner.stored(installationNumbered(count - 1), nothingNew); // remembered empty: no read
    await target.planner.idle();
    expect(target.planner.stats.outboxReads).toBe(count);
    target.planner.stored(installationNumbered(0), nothingNew); // the first remembered, forgotten past the limit: read again
    await target.planner.idle();
    expect(target.planner.stats.outboxReads).toBe(count + 1);
  });

  test('a late batch that arrives while newer samples wait is read back from the outbox and sent oldest first', async () => {
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
    await post(target, { installationId: INSTALLATION, samples: [{ utc: T0, soc: 50 }, { utc: T0 + 1, soc: 51 }] });
    await fake.waitFor(1); // T0 is at the planner; T0 + 1 waits in the queue
    await post(target, { installationId: INSTALLATION, samples: [{ utc: T0 + 1, soc: 61 }] });
    await target.planner.idle();
    expect(fake.requests.map((request) => request.tlmText)).toEqual(['{"utc":1764080000,"soc":50}', '{"utc":1764080001,"soc":61}']);
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

  test("a waiting sample at a later batch's plannerSentUtc is not sent, though that batch does not repeat it", async () => {
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
    expect(states(target, INSTALLATION)).toEqual([[T0, PlannerState.sent], [T0 + 1, PlannerState.none], [T0 + 2, PlannerState.sent]]);
  });

  test('nothing is forwarded for an invalid batch or one without a usable sample', async () => {
    const fake = planner();
    const target = await service(forwarding(fake));
    expect((await postAndForward(target, { installationId: 'nope', samples: samplesAt(T0) })).status).toBe(400);
    expect(await postAndForward(target, { installationId: INSTALLATION, samples: [{ utc: T0, soc: 500 }, 7] })).toMatchObject({
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
    for (const secret of [KEY, TOKEN, OVERRIDE, PLANNER_ERROR_BODY, 'planner-answer-body', 'tlm']) expect(log).not.toContain(secret);
  });
});

describe('the compiled binary', () => {
  test('forwards, says so at start-up without the secrets, and sends what waited after a restart', async () => {
    const binary = await compiledBinary();
    const fake = planner(() => ({ status: 503 }));
    const cwd = tempDir();
    const env = { INGEST_TOKEN: OWNER_TOKEN, PLANNER_URL: fake.url, PLANNER_API_KEY: KEY, PLANNER_TOKEN: TOKEN };
    const first = await startBinary(binary, env, cwd);
    const sent = await ownerRequest(first, 'POST', '/v1/telemetry', { installationId: INSTALLATION, samples: samplesAt(T0, T0 + 1) });
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
