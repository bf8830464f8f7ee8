/**
 * Server CPU per 10-sample telemetry upload: the user+sys time of the service's process over a wrk run,
 * divided by the requests it answered, for the binary of a base commit and of this checkout. Steadier than
 * throughput on a shared machine: each round loads both at once (16 connections each), so the machine's
 * other load falls on both alike, and the pairs are compared round by round.
 * Run: `BENCH_BASE=main bun bench/cpu-per-request.ts`.
 *
 * Environment: BENCH_BASE (the commit measured against, default main; it must differ from this checkout's),
 * BENCH_SECONDS (per wrk run, default 5), BENCH_ROUNDS (default 8).
 */
import { readFileSync } from 'node:fs';
import { knob, loadNow, reportMicrosPairs, telemetryLoad } from './lib.ts';
import { startBaseAndThis } from './strangers.ts';

const BASE = process.env.BENCH_BASE || 'main';
const LOAD = { connections: 16, seconds: knob('BENCH_SECONDS', 5), batchSize: 10 };
const ROUNDS = knob('BENCH_ROUNDS', 8);
/** Clock ticks a second of /proc/<pid>/stat's times (`getconf CLK_TCK`, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** User plus system CPU seconds the process has used so far (/proc/<pid>/stat, fields 14 and 15). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Microseconds of the server's CPU per request of one wrk run. */
async function cpuPerRequest(server: { url: URL; process: { pid: number } }): Promise<number> {
  const before = cpuSeconds(server.process.pid);
  const { requests } = await telemetryLoad(server.url, LOAD);
  return ((cpuSeconds(server.process.pid) - before) / requests) * 1e6;
}

if (import.meta.main) {
  const { before, after, stop } = await startBaseAndThis(BASE);
  try {
    await Promise.all([cpuPerRequest(before), cpuPerRequest(after)]); // warm-up
    console.log(`# server CPU per ${LOAD.batchSize}-sample upload, ${BASE} vs this, load average ${loadNow()}`);
    const baseRuns: number[] = [];
    const ourRuns: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const [base, ours] = await Promise.all([cpuPerRequest(before), cpuPerRequest(after)]);
      baseRuns.push(base);
      ourRuns.push(ours);
    }
    reportMicrosPairs(BASE, baseRuns, ourRuns);
  } finally {
    await stop();
  }
}
