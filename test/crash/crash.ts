/**
 * Crash test of the compiled binary: sustained mixed load (telemetry batches, consumption chunks and
 * charging sessions re-sent under the same keys, pairing), SIGKILL at a random moment, restart on the
 * same file, many times. Afterwards every write answered 2xx is there with its last acknowledged
 * value, nothing answered non-2xx or left unanswered is half-written, and integrity_check is ok.
 *
 *   bun test/crash/crash.ts [ROUNDS]      (default 30; `bun test` runs a short form, test/durability/crash.test.ts)
 */
import { Database } from 'bun:sqlite';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { compiledBinary, startBinary, type RunningBinary } from '../binary.ts';
import { consumptionChunk, INSTALLATION, tempDir } from '../support.ts';

const TOKEN = 'crash-test-owner-token-0123456789';
const PASSWORD = 'crash-test-approval-password';
const CLIENTS = 6;
const KEYS_PER_CLIENT = 8;

type Fate = 'acked' | 'refused' | 'unanswered';
/** What was sent under one key, in order: the value and how the server answered it. */
type History = { value: number; fate: Fate }[];

export interface CrashReport {
  rounds: number;
  answered: number;
  unanswered: number;
  problems: string[];
}

interface Ledger {
  batches: { firstUtc: number; fate: Fate }[];
  chunks: Map<number, History>;
  sessions: Map<string, History>;
  tokens: { token: string; installationId: string }[];
  answered: number;
  unanswered: number;
}

const BATCH = 10;

async function send(
  url: URL,
  method: string,
  path: string,
  body: unknown,
  token: string | null = TOKEN,
): Promise<Response | null> {
  try {
    return await fetch(new URL(path, url), {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        'content-type': typeof body === 'string' ? 'application/x-www-form-urlencoded' : 'application/json',
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  } catch {
    return null; // the server died before answering
  }
}

function fateOf(response: Response | null, ledger: Ledger): Fate {
  if (response === null) {
    ledger.unanswered += 1;
    return 'unanswered';
  }
  ledger.answered += 1;
  return response.ok ? 'acked' : 'refused';
}

/** One client: its own keys, so that the writes under a key are sequential and their order known. */
async function client(url: URL, id: number, ledger: Ledger, counter: { next: number }, alive: () => boolean) {
  for (let step = 0; alive(); step++) {
    const value = counter.next++;
    const key = id * KEYS_PER_CLIENT + (step % KEYS_PER_CLIENT);
    switch (step % 3) {
      case 0: {
        const firstUtc = 1_700_000_000 + value * BATCH;
        const samples = Array.from({ length: BATCH }, (_, i) => ({ utc: firstUtc + i, soc: (value % 100) + i / 100 }));
        const response = await send(url, 'POST', '/v1/telemetry', { installationId: INSTALLATION, samples });
        ledger.batches.push({ firstUtc, fate: fateOf(response, ledger) });
        break;
      }
      case 1: {
        const recordedAt = 1_764_000_000_000 + key;
        const chunk = consumptionChunk({ recordedAt, day: { km: value, kwh: 1, hours: 1, socDrop: 1 } });
        const response = await send(url, 'PUT', '/v1/consumption/daily', chunk);
        history(ledger.chunks, recordedAt).push({ value, fate: fateOf(response, ledger) });
        break;
      }
      case 2: {
        const sessionId = `session-${key}`;
        const session = {
          installationId: INSTALLATION,
          startedAt: 1_764_000_000_001,
          endedAt: 1_764_000_000_002,
          energyKwh: value % 1000,
          totalCost: value,
        };
        const response = await send(url, 'PUT', `/v1/charging-sessions/${sessionId}`, session);
        history(ledger.sessions, sessionId).push({ value, fate: fateOf(response, ledger) });
        break;
      }
    }
    if (id === 0 && step % 10 === 9) await pair(url, value, ledger);
  }
}

function history<K>(map: Map<K, History>, key: K): History {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
}

/** Start, approve and collect one pairing; a collected token must keep working after every crash. */
async function pair(url: URL, value: number, ledger: Ledger): Promise<void> {
  const installationId = `00000000-0000-4000-8000-${String(value).padStart(12, '0')}`;
  const start = await send(url, 'POST', '/v1/pair/start', { installationId }, null);
  if (!start?.ok) return;
  const { pairingId, userCode } = (await start.json()) as { pairingId: string; userCode: string };
  const form = new URLSearchParams({ code: userCode, password: PASSWORD, decision: 'approve' }).toString();
  if (!(await send(url, 'POST', '/pair', form, null))?.ok) return;
  const poll = await send(url, 'POST', '/v1/pair/poll', { pairingId }, null);
  if (!poll?.ok) return;
  const answer = (await poll.json()) as { status: string; token?: string };
  if (answer.status === 'approved') ledger.tokens.push({ token: answer.token!, installationId });
}

/** The values a key may hold now: its last acknowledged one, or any sent after it and not answered. */
function allowed(list: History): { values: Set<number>; mayBeAbsent: boolean } {
  const lastAcked = list.findLastIndex((entry) => entry.fate === 'acked');
  const values = new Set(
    list
      .slice(lastAcked + 1)
      .filter((entry) => entry.fate === 'unanswered')
      .map((entry) => entry.value),
  );
  if (lastAcked >= 0) values.add(list[lastAcked]!.value);
  return { values, mayBeAbsent: lastAcked < 0 };
}

function verify(path: string, ledger: Ledger): string[] {
  const problems: string[] = [];
  const db = new Database(path, { readonly: true });
  try {
    const integrity = db.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()!.integrity_check;
    if (integrity !== 'ok') problems.push(`integrity_check: ${integrity}`);
    const countSamples = db.query<{ n: number }, [number, number]>(
      'SELECT count(*) AS n FROM samples WHERE utc >= ? AND utc < ?',
    );
    for (const { firstUtc, fate } of ledger.batches) {
      const n = countSamples.get(firstUtc, firstUtc + BATCH)!.n;
      const ok = fate === 'acked' ? n === BATCH : fate === 'refused' ? n === 0 : n === 0 || n === BATCH;
      if (!ok) problems.push(`telemetry batch at utc ${firstUtc} (${fate}) has ${n} of ${BATCH} samples`);
    }
    const chunkKm = db.query<{ km: number }, [number]>('SELECT km FROM consumption_chunks WHERE recorded_at = ?');
    for (const [recordedAt, list] of ledger.chunks) {
      check(problems, `chunk ${recordedAt}`, list, chunkKm.get(recordedAt)?.km);
    }
    const sessionCost = db.query<{ cost: number }, [string]>(
      'SELECT total_cost AS cost FROM charging_sessions WHERE session_id = ?',
    );
    for (const [sessionId, list] of ledger.sessions) {
      check(problems, `session ${sessionId}`, list, sessionCost.get(sessionId)?.cost);
    }
  } finally {
    db.close();
  }
  return problems;
}

function check(problems: string[], what: string, list: History, stored: number | undefined): void {
  const { values, mayBeAbsent } = allowed(list);
  if (stored === undefined ? !mayBeAbsent : !values.has(stored)) {
    problems.push(`${what} holds ${stored ?? 'nothing'}, expected one of ${[...values].join(', ') || 'nothing'}`);
  }
}

async function start(binary: string, path: string, dir: string): Promise<RunningBinary> {
  return startBinary(
    binary,
    { INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: PASSWORD, DATABASE_PATH: path, LOG_LEVEL: 'info' },
    dir,
  );
}

/** Runs `rounds` kill-and-restart rounds on one database file and checks it. */
export async function crashRun(rounds: number, random: () => number = Math.random): Promise<CrashReport> {
  const binary = await compiledBinary();
  const dir = tempDir('ev-ingest-crash-');
  const path = join(dir, 'ev-ingest.db');
  const ledger: Ledger = {
    batches: [],
    chunks: new Map(),
    sessions: new Map(),
    tokens: [],
    answered: 0,
    unanswered: 0,
  };
  const counter = { next: 0 };
  try {
    for (let round = 0; round < rounds; round++) {
      const server = await start(binary, path, dir);
      let alive = true;
      const clients = Array.from({ length: CLIENTS }, (_, id) => client(server.url, id, ledger, counter, () => alive));
      await Bun.sleep(50 + random() * 400);
      server.process.kill('SIGKILL');
      await server.process.exited;
      alive = false;
      await Promise.all(clients);
    }
    const problems = verify(path, ledger);
    const server = await start(binary, path, dir);
    try {
      for (const { token, installationId } of ledger.tokens) {
        const response = await send(server.url, 'GET', `/v1/consumption/history/${installationId}`, undefined, token);
        if (response?.status !== 200) problems.push(`paired token of ${installationId} answered ${response?.status}`);
      }
    } finally {
      await server.stop();
    }
    return { rounds, answered: ledger.answered, unanswered: ledger.unanswered, problems };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const rounds = Number(process.argv[2] ?? 30);
  const report = await crashRun(rounds);
  console.log(`${report.rounds} SIGKILLs, ${report.answered} writes answered, ${report.unanswered} cut off by a kill`);
  for (const problem of report.problems) console.log(`PROBLEM ${problem}`);
  process.exit(report.problems.length === 0 ? 0 : 1);
}
