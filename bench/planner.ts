/**
 * Planner forwarding under load (`bun bench/planner.ts [seconds] [rounds]`): the compiled binary on
 * a temporary database, PLANNER_URL at a fast local fake planner. A fleet of 100 forwarded
 * installations each sends one 10-sample batch a second while wrk (32 connections, 10-sample
 * batches, a new installation per request, none forwarded) drives the maximum ingest rate.
 * Rounds alternate forwarding off and on; it reports wrk's rate of each and checks that every
 * sample of the fleet reached the planner exactly once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compiledBinary, startBinary, type RunningBinary } from '../test/binary.ts';
import { startFakePlanner, type FakePlanner } from '../test/fake-planner.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const ROUNDS = Number(process.argv[3] ?? 3);
const FLEET = 100;
const BATCH = 10;
const CONNECTIONS = 32;
const INGEST_TOKEN = 'bench-ingest-token-0123456789abcdef';
const fleet = Array.from({ length: FLEET }, (_, i) => `bbbbbbbb-0000-4000-8000-${String(i).padStart(12, '0')}`);
const tokenOf = (index: number) => `planner-token-${index}`;

/** One request body of wrk: a fresh installation each time, ten samples of the last ten seconds. */
const WRK_SCRIPT = `
local counter = 0
local id = 0
function setup(thread) id = id + 1; thread:set("tid", id) end
function init() math.randomseed(tid) end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer ${INGEST_TOKEN}"
function request()
  counter = counter + 1
  local now = os.time()
  local samples = {}
  for i = 0, ${BATCH - 1} do
    samples[#samples + 1] = string.format(
      '{"utc":%d,"soc":%.1f,"power":%.2f,"speed":%d,"lat":41.01,"lon":28.97,"ext_temp":12.5,"is_charging":false}',
      now - i, 50 + i, 10.5 + i, 80 + i)
  end
  local body = string.format('{"installationId":"%08x-0000-4000-8000-%012d","samples":[%s]}', tid, counter, table.concat(samples, ","))
  return wrk.format(nil, "/v1/telemetry", nil, body)
end
`;

interface Round {
  forwarding: boolean;
  rate: number;
  fleetErrors: number;
  /** Forwarding on: samples that reached the planner, duplicates, missing, and seconds to drain. */
  delivered?: { received: number; duplicates: number; missing: number; drainSeconds: number };
}

async function round(binary: string, planner: FakePlanner, forwarding: boolean, script: string): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'ev-ingest-bench-planner-'));
  const env: Record<string, string> = {
    INGEST_TOKEN,
    DATABASE_PATH: join(dir, 'ev-ingest.db'),
    PLANNER_URL: planner.url,
  };
  if (forwarding) {
    env.PLANNER_API_KEY = 'bench-planner-key';
    env.PLANNER_TOKENS = fleet.map((id, i) => `${id}=${tokenOf(i)}`).join(',');
  }
  const server = await startBinary(binary, env, dir);
  planner.requests.length = 0;
  try {
    const firstUtc = Math.floor(Date.now() / 1000) - SECONDS * BATCH - 60;
    const [rate, fleetErrors] = await Promise.all([wrk(server, script), driveFleet(server, firstUtc)]);
    const result: Round = { forwarding, rate, fleetErrors };
    if (forwarding) result.delivered = await delivery(planner, firstUtc);
    return result;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** wrk's requests per second; any non-2xx answer fails the benchmark. */
async function wrk(server: RunningBinary, script: string): Promise<number> {
  const child = Bun.spawn(
    ['wrk', '-t2', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '-s', script, new URL('/v1/telemetry', server.url).href],
    { stdout: 'pipe', stderr: 'pipe' },
  );
  const output = await new Response(child.stdout).text();
  await child.exited;
  if (/Non-2xx/.test(output)) throw new Error(`wrk saw error answers:\n${output}`);
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(output)?.[1];
  if (!rate) throw new Error(`wrk failed:\n${output}${await new Response(child.stderr).text()}`);
  return Number(rate);
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
          headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
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
async function delivery(planner: FakePlanner, firstUtc: number): Promise<NonNullable<Round['delivered']>> {
  const expected = FLEET * SECONDS * BATCH;
  const started = performance.now();
  await planner.waitFor(expected, 120_000).catch(() => {});
  const drainSeconds = (performance.now() - started) / 1000;
  await Bun.sleep(1000); // a duplicate would arrive late
  let duplicates = 0;
  let missing = 0;
  for (let index = 0; index < FLEET; index += 1) {
    const utcs = planner.utcsOf(tokenOf(index));
    duplicates += utcs.length - new Set(utcs).size;
    for (let utc = firstUtc; utc < firstUtc + SECONDS * BATCH; utc += 1) if (!utcs.includes(utc)) missing += 1;
  }
  return { received: planner.requests.length, duplicates, missing, drainSeconds };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<number> {
  const binary = await compiledBinary();
  const planner = startFakePlanner();
  const scriptDir = mkdtempSync(join(tmpdir(), 'ev-ingest-bench-wrk-'));
  const script = join(scriptDir, 'telemetry.lua');
  writeFileSync(script, WRK_SCRIPT);
  const rounds: Round[] = [];
  try {
    for (let i = 0; i < ROUNDS; i += 1) {
      for (const forwarding of [false, true]) {
        const result = await round(binary, planner, forwarding, script);
        rounds.push(result);
        console.log(JSON.stringify(result));
      }
    }
  } finally {
    await planner.stop();
    rmSync(scriptDir, { recursive: true, force: true });
  }
  const off = median(rounds.filter((r) => !r.forwarding).map((r) => r.rate));
  const on = median(rounds.filter((r) => r.forwarding).map((r) => r.rate));
  const exact = rounds.every(
    (r) => r.fleetErrors === 0 && (!r.delivered || (r.delivered.duplicates === 0 && r.delivered.missing === 0)),
  );
  console.log(
    `planner forwarding: wrk ${CONNECTIONS} connections, ${SECONDS} s x ${ROUNDS} rounds each; ` +
      `fleet ${FLEET} installations x ${BATCH} samples/s forwarded`,
  );
  console.log(`  max ingest, forwarding off: ${off.toFixed(0)} req/s (median)`);
  console.log(`  max ingest, forwarding on:  ${on.toFixed(0)} req/s (median), ratio on/off ${(on / off).toFixed(3)}`);
  console.log(`  every fleet sample at the planner exactly once: ${exact ? 'yes' : 'NO'}`);
  return exact ? 0 : 1;
}

process.exit(await main());
