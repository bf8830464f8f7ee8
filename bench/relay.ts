/**
 * Relay benchmark: the ABRP relay (`POST /abrp/1/tlm/send`, a form body as the car app's uploader
 * sends it) against `POST /v1/telemetry` with one-sample batches, alternating in one run on one
 * compiled binary. Both sides store one new sample a request for 16 cars, each car with its own
 * device token (so both check a device token), and forwarding is off (no planner token): the figure is
 * the relay's own reading against the batch's. Target: the relay at ≥ 80% of the batch's requests/s.
 * Also the server's CPU time a request on each side, which the machine's other loads disturb less.
 * Run: `bun bench/relay.ts` (or `bun run bench`, which runs every benchmark); FULL durability.
 *
 * Environment: BENCH_SECONDS (per wrk run, default 8), BENCH_ROUNDS (alternating runs of each side,
 * default 3).
 */
import { Database } from 'bun:sqlite';
import {
  alternate,
  BINARY,
  buildBinary,
  formatLoad,
  knob,
  median,
  medianRun,
  startService,
  wrk,
  type LoadResult,
} from './lib.ts';

const SECONDS = knob('BENCH_SECONDS', 8);
const ROUNDS = knob('BENCH_ROUNDS', 3);
const CONNECTIONS = 32;
const CARS = 16;

interface Measured extends LoadResult {
  cpuUsPerRequest: number;
}

/** A process's user and system CPU time so far, from /proc (Linux; clock ticks of 10 ms). */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await Bun.file(`/proc/${pid}/stat`).text()).split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const installation = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** A device token for each car, issued by the binary's own `devices add` beside the running server. */
async function issueTokens(databasePath: string): Promise<string[]> {
  const tokens: string[] = [];
  for (let car = 0; car < CARS; car += 1) {
    const child = Bun.spawn([BINARY, 'devices', 'add', installation(car)], {
      env: { PATH: process.env.PATH, DATABASE_PATH: databasePath },
      stdout: 'pipe',
      stderr: 'ignore',
    });
    const stdout = await new Response(child.stdout).text();
    if ((await child.exited) !== 0) throw new Error('devices add failed');
    tokens.push(stdout.trim().split('\n').at(-1)!);
  }
  return tokens;
}

/**
 * A wrk script: each request one new sample of one of the cars, in turn. Its `utc` follows the run's
 * and the thread's own range, so every request inserts a row. `kind` picks the request's form.
 */
function script(kind: 'relay' | 'batch', tokens: string[]): string {
  const lua = (values: string[]) => `{${values.map((value) => `"${value}"`).join(',')}}`;
  return `
local TOKENS = ${lua(tokens)}
local IDS = ${lua(tokens.map((_, car) => installation(car)))}
local nextThread = 0
function setup(thread) thread:set("threadIndex", nextThread) nextThread = nextThread + 1 end
local run, counter = 0, 0
function init(args) run = tonumber(args[1]) end
local SAMPLE = ',"soc":71.5,"power":12.25,"speed":88,"lat":41.00824,"lon":28.97836,"elevation":40,"is_charging":0}'
-- wrk shares the server's cores: what does not change is formatted (and form-encoded) once, not per request.
local function formEncoded(text)
  return (text:gsub('[^%w%-%._~]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
local UTC_OPEN, REST = formEncoded('{"utc":'), formEncoded(SAMPLE)
function request()
  counter = counter + 1
  local car = counter % ${CARS} + 1
  local utc = 1000000000 + run * 1000000 + threadIndex * 500000 + math.floor(counter / ${CARS})
  ${
    kind === 'relay'
      ? `local body = "api_key=bench&token=" .. TOKENS[car] .. "&tlm=" .. UTC_OPEN .. utc .. REST
  return wrk.format("POST", "/abrp/1/tlm/send", { ["Content-Type"] = "application/x-www-form-urlencoded" }, body)`
      : `local body = '{"installationId":"' .. IDS[car] .. '","samples":[{"utc":' .. utc .. SAMPLE .. ']}'
  local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. TOKENS[car] }
  return wrk.format("POST", "/v1/telemetry", headers, body)`
  }
end
`;
}

if (import.meta.main) {
  await buildBinary();
  const service = await startService();
  try {
    const tokens = await issueTokens(service.databasePath);
    await Bun.sleep(1000); // the server takes new devices in within a second
    let runId = 0;
    const load = async (kind: 'relay' | 'batch'): Promise<Measured> => {
      runId += 1;
      const cpuBefore = await cpuSeconds(service.process.pid);
      const result = await wrk(service.url, {
        connections: CONNECTIONS,
        seconds: SECONDS,
        script: script(kind, tokens),
        args: [String(runId)],
      });
      const cpuUs = ((await cpuSeconds(service.process.pid)) - cpuBefore) * 1e6;
      if (result.non2xx > 0 || result.errors > 0)
        console.log(`  warning: ${kind}: ${result.non2xx} non-2xx, ${result.errors} socket errors`);
      return { ...result, cpuUsPerRequest: cpuUs / result.requests };
    };
    const loadavg = (await Bun.file('/proc/loadavg').text()).trim();
    console.log(`# relay: ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds, load ${loadavg}`);
    const [relay, batch] = await alternate(
      ROUNDS,
      () => load('relay'),
      () => load('batch'),
    );
    const ratios = relay.map((run, round) => run.requestsPerSecond / batch[round]!.requestsPerSecond);
    console.log(formatLoad('POST /abrp/1/tlm/send, form body (median run)', medianRun(relay)));
    console.log(formatLoad('POST /v1/telemetry, 1-sample batch (median run)', medianRun(batch)));
    console.log(
      `relay / batch: ${(median(ratios) * 100).toFixed(0)}% ` +
        `(each round: ${ratios.map((r) => `${(r * 100).toFixed(0)}%`).join(', ')}; target ≥ 80%)`,
    );
    // The server's own CPU time a request: what the other loads of a shared machine disturb least.
    const cpu = (runs: Measured[]) => median(runs.map((run) => run.cpuUsPerRequest));
    console.log(
      `server CPU a request: relay ${cpu(relay).toFixed(0)} µs, batch ${cpu(batch).toFixed(0)} µs; ` +
        `the relay's rate at equal CPU: ${((cpu(batch) / cpu(relay)) * 100).toFixed(0)}% of the batch's`,
    );
    const database = new Database(service.databasePath, { readonly: true });
    const stored = database.query<{ n: number }, []>('SELECT count(*) AS n FROM samples').get()!.n;
    database.close();
    const sent = [...relay, ...batch].reduce((sum, run) => sum + run.requests - run.non2xx, 0);
    console.log(`rows stored: ${stored} (requests answered 2xx: ${sent})`);
  } finally {
    await service.stop();
  }
}
