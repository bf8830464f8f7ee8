/**
 * The app alone: process CPU per 10-sample `POST /v1/telemetry` through `app.handle` (no HTTP, no listener),
 * 32 callers at once on a FULL-durability database, for the sources of a base commit and of this checkout,
 * each run in a process of its own, alternating. The steadiest figure on a shared machine: no wrk shares the
 * cores, so a difference of 2 µs shows in every round. Run: `BENCH_BASE=main bun bench/app-cpu.ts`.
 *
 * Environment: BENCH_BASE (the commit measured against, default main; it must differ from this checkout's),
 * BENCH_ROUNDS (runs of each side, default 6), BENCH_REQUESTS (per caller and run, default 500).
 */
import { rmSync } from 'node:fs';
import { alternate, knob, loadNow, reportMicrosPairs, ROOT } from './lib.ts';
import { baseCommit, checkOut } from './strangers.ts';

const BASE = process.env.BENCH_BASE || 'main';
const ROUNDS = knob('BENCH_ROUNDS', 6);
const REQUESTS = knob('BENCH_REQUESTS', 500);
const CALLERS = 32;
const WARM_UP = 100;

/** One side's run, in this process: µs of CPU a request through the app of the sources at `tree`. */
async function measure(tree: string): Promise<number> {
  const { startTestService } = await import(`${tree}/test/support.ts`);
  const service = await startTestService({ approvalPassword: 'bench-approval-password', durability: 'full' });
  let utc = 1_000_000_000;
  const upload = async (caller: number) => {
    const base = (utc += 10);
    const samples = Array.from({ length: 10 }, (_, i) => ({ utc: base + i, soc: 20 + i, power: 12.5, speed: 50 }));
    const installationId = `00000000-0000-4000-8000-${String(caller).padStart(12, '0')}`;
    const body = JSON.stringify({ installationId, plannerSentUtc: 0, samples });
    // The length declared, as a car's upload declares it: the body is then read in one piece.
    const headers = {
      authorization: `Bearer ${service.config.ingestToken}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    };
    const response = await service.app.handle(
      new Request('http://localhost/v1/telemetry', { method: 'POST', headers, body }),
    );
    if (response.status !== 200) throw new Error(`upload answered ${response.status}: ${await response.text()}`);
  };
  const run = (requests: number) =>
    Promise.all(
      Array.from({ length: CALLERS }, async (_, caller) => {
        for (let i = 0; i < requests; i += 1) await upload(caller);
      }),
    );
  await run(WARM_UP);
  const before = process.cpuUsage();
  await run(REQUESTS);
  const used = process.cpuUsage(before);
  await service.close();
  return (used.user + used.system) / (CALLERS * REQUESTS);
}

/** One side's run in a fresh process, so that neither side's JIT or heap carries into the other's. */
async function measureApart(tree: string): Promise<number> {
  const child = Bun.spawn([process.execPath, import.meta.path, tree], { stdout: 'pipe', stderr: 'inherit' });
  const text = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`the run of ${tree} failed`);
  return Number(text);
}

if (import.meta.main && process.argv[2] !== undefined) {
  console.log(await measure(process.argv[2]));
} else if (import.meta.main) {
  const baseTree = await checkOut(await baseCommit(BASE));
  try {
    console.log(`# app CPU per 10-sample upload, ${BASE} vs this, ${CALLERS} callers, load average ${loadNow()}`);
    const [baseRuns, ourRuns] = await alternate(
      ROUNDS,
      () => measureApart(baseTree),
      () => measureApart(ROOT),
    );
    reportMicrosPairs(BASE, baseRuns, ourRuns);
  } finally {
    rmSync(baseTree, { recursive: true, force: true });
  }
}
