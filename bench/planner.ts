/**
 * Planner forwarding under load (`bun bench/planner.ts`): the compiled binary on
 * a temporary database, PLANNER_URL at a fast local fake planner. A fleet of 100 forwarded
 * installations each sends one 10-sample batch a second while wrk (32 connections, 10-sample
 * batches, new (installation, utc) keys each time over 16 installations a thread, none forwarded)
 * drives the maximum ingest rate.
 * Rounds alternate forwarding off and on; it reports wrk's rate of each and checks that every
 * sample of the fleet reached the planner exactly once.
 *
 * Environment: BENCH_SECONDS (per round, default 10), BENCH_ROUNDS (rounds of each, default 3).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningBinary } from '../test/binary.ts';
import { AUTHORIZATION, buildBinary, knob, LUA_AUTHORIZATION, median, startService, wrk as runWrk } from './lib.ts';

const SECONDS = knob('BENCH_SECONDS', 10);
const ROUNDS = knob('BENCH_ROUNDS', 3);
const FLEET = 100;
const BATCH = 10;
const CONNECTIONS = 32;
const fleet = Array.from({ length: FLEET }, (_, i) => `bbbbbbbb-0000-4000-8000-${String(i).padStart(12, '0')}`);
const tokenOf = (index: number) => `planner-token-${index}`;

const WRK_SCRIPT = LUA_AUTHORIZATION + readFileSync(join(import.meta.dir, 'telemetry.lua'), 'utf8');

/**
 * The fake planner: as lean as can be, since the real one runs elsewhere and its CPU here is not the
 * forwarder's. It counts each (token, utc) it accepts.
 */
interface CountingPlanner {
  url: string;
  received: number;
  counts: Map<string, number>;
  reset(): void;
  stop(): Promise<void>;
}

function startCountingPlanner(): CountingPlanner {
  const ok = '{"status":"ok"}';
  const planner: CountingPlanner = {
    url: '',
    received: 0,
    counts: new Map(),
    reset() {
      planner.received = 0;
      planner.counts.clear();
    },
    stop: () => server.stop(true),
  };
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const form = new URLSearchParams(await request.text());
      const key = `${form.get('token')}:${/"utc":(\d+)/.exec(form.get('tlm') ?? '')?.[1]}`;
      planner.received += 1;
      planner.counts.set(key, (planner.counts.get(key) ?? 0) + 1);
      return new Response(ok);
    },
  });
  planner.url = new URL('/1/tlm/send', server.url).href;
  return planner;
}

interface Round {
  forwarding: boolean;
  rate: number;
  fleetErrors: number;
  /** The server's CPU time (all threads) over the load, in seconds. */
  serverCpu: number;
  /** Forwarding on: samples that reached the planner, duplicates, missing, and seconds to drain. */
  delivered?: { received: number; duplicates: number; missing: number; drainSeconds: number };
}

async function round(planner: CountingPlanner, forwarding: boolean, run: number): Promise<Round> {
  const env: Record<string, string> = { PLANNER_URL: planner.url };
  if (forwarding) {
    env.PLANNER_API_KEY = 'bench-planner-key';
    env.PLANNER_TOKENS = fleet.map((id, i) => `${id}=${tokenOf(i)}`).join(',');
  }
  const server = await startService(env);
  planner.reset();
  try {
    const firstUtc = Math.floor(Date.now() / 1000) - SECONDS * BATCH - 60;
    const cpuBefore = cpuSeconds(server.process.pid);
    const [rate, fleetErrors] = await Promise.all([wrk(server, run), driveFleet(server, firstUtc)]);
    const result: Round = { forwarding, rate, fleetErrors, serverCpu: cpuSeconds(server.process.pid) - cpuBefore };
    if (forwarding) result.delivered = await delivery(planner, firstUtc);
    return result;
  } finally {
    await server.stop();
  }
}

/** wrk's requests per second (bench/telemetry.lua: new (installation, utc) keys each time, none forwarded). */
async function wrk(server: RunningBinary, run: number): Promise<number> {
  const result = await runWrk(new URL('/v1/telemetry', server.url), {
    connections: CONNECTIONS,
    seconds: SECONDS,
    script: WRK_SCRIPT,
    args: [String(BATCH), String(run)],
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`wrk saw errors: ${JSON.stringify(result)}`);
  return result.requestsPerSecond;
}

/** Each fleet installation sends one batch a second, spread over the second; answers the failures. */
async function driveFleet(server: RunningBinary, firstUtc: number): Promise<number> {
  const url = new URL('/v1/telemetry', server.url).href;
  const started = performance.now();
  const sends: Promise<boolean>[] = [];
  for (let second = 0; second < SECONDS; second += 1) {
    for (const [index, installationId] of fleet.entries()) {
      const due = started + second * 1000 + (index * 1000) / FLEET;
      await Bun.sleep(Math.max(0, due - performance.now()));
      const samples = Array.from({ length: BATCH }, (_, j) => ({
        utc: firstUtc + second * BATCH + j,
        soc: 60 + j / 10,
        power: 20.5,
        speed: 90,
        is_charging: 0,
      }));
      sends.push(
        fetch(url, {
          method: 'POST',
          headers: { ...AUTHORIZATION, 'content-type': 'application/json' },
          body: JSON.stringify({ installationId, samples }),
        }).then(
          async (response) => (await response.text(), response.status === 200),
          () => false,
        ),
      );
    }
  }
  return (await Promise.all(sends)).filter((ok) => !ok).length;
}

/** Waits for the planner to hold every fleet sample, then counts duplicates and missing ones. */
async function delivery(planner: CountingPlanner, firstUtc: number): Promise<NonNullable<Round['delivered']>> {
  const expected = FLEET * SECONDS * BATCH;
  const started = performance.now();
  while (planner.received < expected && performance.now() - started < 120_000) await Bun.sleep(5);
  const drainSeconds = (performance.now() - started) / 1000;
  await Bun.sleep(1000); // a duplicate would arrive late
  let duplicates = 0;
  let missing = 0;
  for (let index = 0; index < FLEET; index += 1) {
    for (let utc = firstUtc; utc < firstUtc + SECONDS * BATCH; utc += 1) {
      const count = planner.counts.get(`${tokenOf(index)}:${utc}`) ?? 0;
      if (count === 0) missing += 1;
      else duplicates += count - 1;
    }
  }
  return { received: planner.received, duplicates, missing, drainSeconds };
}

/** User and system time of a process, all its threads, from /proc (clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main(): Promise<number> {
  await buildBinary();
  const planner = startCountingPlanner();
  const rounds: Round[] = [];
  try {
    for (let i = 0; i < ROUNDS; i += 1) {
      // Alternate which goes first, so that neither always runs on a warmer or busier machine.
      for (const forwarding of i % 2 === 0 ? [false, true] : [true, false]) {
        const result = await round(planner, forwarding, rounds.length + 1);
        rounds.push(result);
        console.log(JSON.stringify(result));
      }
    }
  } finally {
    await planner.stop();
  }
  const off = median(rounds.filter((r) => !r.forwarding).map((r) => r.rate));
  const on = median(rounds.filter((r) => r.forwarding).map((r) => r.rate));
  // Each on-round against the off-round of its pair: the machine is shared, its load drifts.
  const pairs = rounds.flatMap((r, i) =>
    i % 2 === 0 ? [] : [r.forwarding ? r.rate / rounds[i - 1]!.rate : rounds[i - 1]!.rate / r.rate],
  );
  // The server's CPU for forwarding: an on-round's CPU less what its requests cost in the off-rounds.
  const requestsOf = (r: Round) => r.rate * SECONDS + FLEET * SECONDS;
  const ingestCpu = median(rounds.filter((r) => !r.forwarding).map((r) => r.serverCpu / requestsOf(r)));
  const forwardCpu = median(
    rounds
      .filter((r) => r.forwarding)
      .map((r) => (r.serverCpu - ingestCpu * requestsOf(r)) / (FLEET * BATCH * SECONDS)),
  );
  const exact = rounds.every(
    (r) => r.fleetErrors === 0 && (!r.delivered || (r.delivered.duplicates === 0 && r.delivered.missing === 0)),
  );
  console.log(
    `planner forwarding: wrk ${CONNECTIONS} connections, ${SECONDS} s x ${ROUNDS} rounds each; ` +
      `fleet ${FLEET} installations x ${BATCH} samples/s forwarded`,
  );
  console.log(`  max ingest, forwarding off: ${off.toFixed(0)} req/s (median)`);
  console.log(
    `  max ingest, forwarding on:  ${on.toFixed(0)} req/s (median), ratio of medians ${(on / off).toFixed(3)}`,
  );
  console.log(
    `  on/off per pair: ${pairs.map((ratio) => ratio.toFixed(2)).join(' ')}; median ${median(pairs).toFixed(3)}`,
  );
  console.log(
    `  server CPU: ${(ingestCpu * 1e6).toFixed(0)} µs per ingest request; ` +
      `forwarding ${(forwardCpu * 1e6).toFixed(0)} µs per sample ` +
      `(${(forwardCpu * FLEET * BATCH * 100).toFixed(0)}% of one core at ${FLEET * BATCH} samples/s)`,
  );
  console.log(`  every fleet sample at the planner exactly once: ${exact ? 'yes' : 'NO'}`);
  return exact ? 0 : 1;
}

process.exit(await main());
