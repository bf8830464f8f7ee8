/**
 * The catalogue of log events (src/log-events.ts), walked in both formats: every event the source logs
 * is in it at its level, each renders the same fields as text and as JSON, and no field, in either
 * format, carries a secret or a location.
 */
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, serveConfig } from '../src/config.ts';
import { LOG_EVENTS, type LogEventName } from '../src/log-events.ts';
import { createMemoryLogger, jsonLine, textLine, type LogFields, type LogFormat } from '../src/log.ts';
import { serve } from '../src/server.ts';
import { ACCEPT, startFakePlanner } from './fake-planner.ts';
import { pairDevice, PASSWORD, poll, startPairing, submitForm, WRONG_PASSWORD } from './pairing-support.ts';
import { compiledBinary } from './binary.ts';
import { answer, consumptionChunk, INSTALLATION, overSocket, OWNER_TOKEN, tempDir, testConfig } from './support.ts';

const SRC = join(import.meta.dir, '../src');
const EVENTS = Object.entries(LOG_EVENTS) as [LogEventName, (typeof LOG_EVENTS)[LogEventName]][];

/** Field names that would say a secret, a location or a body; none may be catalogued. */
const FORBIDDEN_FIELD =
  /token|password|secret|key|auth|cookie|^lat|^lon|location|elevation|body|code|pairingId|session/i;

/** Every `log.<level>('event'` call in src/, also split over lines. */
function loggedInSource(): { level: string; event: string; file: string }[] {
  const calls = [];
  for (const file of readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((name) => /\.tsx?$/.test(name))) {
    const text = readFileSync(join(SRC, file), 'utf8');
    for (const match of text.matchAll(/\.(debug|info|warn|error)\(\s*'([a-z_.]+)'/g))
      calls.push({ level: match[1]!, event: match[2]!, file });
  }
  return calls;
}

/** A logfmt line read back: time, level, event, then its fields as the text it wrote. */
function readText(line: string) {
  const [time, level, event, ...rest] = line.match(/"(?:[^"\\]|\\.)*"|\S+/g) ?? [];
  const fields: Record<string, string> = {};
  for (const pair of rest.join(' ').matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
    fields[pair[1]!] = pair[2]!.startsWith('"') ? JSON.parse(pair[2]!) : pair[2]!;
  }
  return { time, level, event, fields };
}

describe('the catalogue', () => {
  test('every event logged in src/ is catalogued at its level, and every catalogued one is logged', () => {
    const calls = loggedInSource();
    for (const { level, event, file } of calls) {
      expect({ event, file, level: LOG_EVENTS[event as LogEventName]?.level as string | undefined }).toEqual({
        event,
        file,
        level,
      });
    }
    expect(new Set(calls.map((call) => call.event))).toEqual(new Set(EVENTS.map(([event]) => event)));
  });

  test('no field name is one that says a secret, a location or a body, nor one of the line’s own keys', () => {
    for (const [event, { fields }] of EVENTS) {
      expect({
        event,
        fields: fields.filter((field) => FORBIDDEN_FIELD.test(field) || ['time', 'level', 'event'].includes(field)),
      }).toEqual({
        event,
        fields: [],
      });
    }
  });

  test('each event renders the same fields as a logfmt line and as a JSON object', () => {
    const values = ['plain', 'with space and "quotes"', 42, 1.5, true, null] as const;
    for (const [event, { level, fields }] of EVENTS) {
      const given: LogFields = Object.fromEntries(fields.map((field, i) => [field, values[i % values.length]]));
      const json = jsonLine('2026-11-28T05:00:00.000Z', level, event, given);
      const text = textLine('2026-11-28T05:00:00.000Z', level, event, given);
      expect(json).toEndWith('}\n');
      expect(JSON.parse(json)).toEqual({ time: '2026-11-28T05:00:00.000Z', level, event, ...given });
      const read = readText(text.trimEnd());
      expect(read).toEqual({
        time: '2026-11-28T05:00:00.000Z',
        level,
        event,
        fields: Object.fromEntries(Object.entries(given).map(([key, value]) => [key, String(value)])),
      });
    }
  });

  test('docs/operations.md lists every event with its level and fields, and no other', () => {
    const docs = readFileSync(join(import.meta.dir, '../docs/operations.md'), 'utf8');
    const table = docs.slice(docs.indexOf('### Events'), docs.indexOf('\n## ', docs.indexOf('### Events')));
    const rows = [...table.matchAll(/^\| `([a-z_.]+)` \| (\w+) \| ([^|]*) \|/gm)].map(([, event, level, fields]) => ({
      event,
      level,
      fields: fields!.trim() === '–' ? [] : [...fields!.matchAll(/`(\w+)`/g)].map((m) => m[1]),
    }));
    expect(rows).toEqual(EVENTS.map(([event, { level, fields }]) => ({ event, level, fields: [...fields] })));
  });

  test('LOG_FORMAT is text by default, json when asked, and refused otherwise naming both', () => {
    expect(serveConfig({ INGEST_TOKEN: OWNER_TOKEN }).logFormat).toBe('text');
    expect(serveConfig({ INGEST_TOKEN: OWNER_TOKEN, LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => serveConfig({ INGEST_TOKEN: OWNER_TOKEN, LOG_FORMAT: 'yaml' })).toThrow(
      new ConfigError('LOG_FORMAT must be one of text, json'),
    );
  });

  test('a number that is not finite is null in JSON, never invalid JSON', () => {
    expect(JSON.parse(jsonLine('t', 'info', 'request', { ms: Number.NaN, status: Infinity }))).toEqual({
      time: 't',
      level: 'info',
      event: 'request',
      ms: null,
      status: null,
    });
  });
});

const PLANNER_TOKEN = 'planner-token-not-for-logs-7d1e';
const PLANNER_API_KEY = 'planner-key-not-for-logs-93ac';
const LAT = 48.137154;
const LON = 11.576124;

/** A working day of the service over a socket, logged in `format`: every line it wrote. */
async function loggedDay(format: LogFormat) {
  const planner = startFakePlanner(() => ({ status: 500, body: 'no' }));
  const log = createMemoryLogger('debug', format);
  const running = await serve(
    testConfig(tempDir(), {
      approvalPassword: PASSWORD,
      planner: { url: planner.url, apiKey: PLANNER_API_KEY, defaultToken: PLANNER_TOKEN, tokens: new Map() },
    }),
    log,
  );
  const secrets: string[] = [OWNER_TOKEN, PASSWORD, WRONG_PASSWORD, PLANNER_TOKEN, PLANNER_API_KEY];
  try {
    const client = overSocket(running);
    const utc = Math.floor(Date.now() / 1000) - 60;
    const samples = [
      { utc, soc: 50, lat: LAT, lon: LON, elevation: 519.25 },
      { utc: utc + 1, soc: 'x', lat: LAT, lon: LON },
    ];
    expect(
      (await client.request('POST', '/v1/telemetry', { body: { installationId: INSTALLATION, samples } })).status,
    ).toBe(200);
    expect((await client.request('PUT', '/v1/consumption/daily', { body: consumptionChunk() })).status).toBe(204);
    expect((await client.request('GET', '/v1/ready', { token: 'a-wrong-token-not-for-logs' })).status).toBe(200);
    const started = await startPairing(client, INSTALLATION, 'Car at home');
    secrets.push(started.pairingId, started.userCode);
    expect(
      (await submitForm(client, { code: started.userCode, password: WRONG_PASSWORD, decision: 'approve' })).status,
    ).toBe(403);
    const paired = await pairDevice(client, INSTALLATION);
    secrets.push(paired.token);
    expect((await poll(client, started.pairingId)).status).toBe(200);
    const revoked = await client.request('POST', `/v1/devices/${paired.deviceId}/revoke`, { token: PASSWORD });
    expect(revoked.status).toBe(200);
    expect((await answer(await client.request('GET', '/v1/nothing', { token: null }))).status).toBe(404);
    await planner.waitFor(2);
  } finally {
    await running.stop();
    await planner.stop();
  }
  return { lines: log.lines, secrets };
}

for (const format of ['text', 'json'] as const) {
  test(`a day logged as ${format}: every line a catalogued event with its fields, no secret, no location`, async () => {
    const { lines, secrets } = await loggedDay(format);
    const events = new Set<string>();
    for (const line of lines) {
      const { level, event, fields } = format === 'json' ? jsonFields(line) : readText(line);
      const catalogued = LOG_EVENTS[event as LogEventName] as { level: string; fields: readonly string[] } | undefined;
      const extra = Object.keys(fields).filter((key) => !catalogued?.fields.includes(key));
      expect({ line, level: catalogued?.level, extra }).toEqual({ line, level, extra: [] });
      events.add(event!);
      for (const secret of secrets) expect(line).not.toContain(secret);
      expect(line).not.toMatch(/48\.137|11\.576|519\.25/); // precise enough that no time or duration holds it
    }
    // The day went through the pipeline, pairing, the planner and the stop.
    for (const event of [
      'started',
      'request',
      'telemetry.dropped',
      'pairing.started',
      'pairing.wrong_password',
      'pairing.approved',
      'pairing.collected',
      'device.revoked',
      'planner.retry',
      'stopped',
    ]) {
      expect(events).toContain(event);
    }
  });
}

function jsonFields(line: string) {
  const { time, level, event, ...fields } = JSON.parse(line) as Record<string, unknown>;
  expect(typeof time).toBe('string');
  return { level: level as string, event: event as string, fields };
}

test('the binary with LOG_FORMAT=json writes only JSON lines of catalogued events, start to stop', async () => {
  const binary = await compiledBinary();
  const cwd = tempDir();
  const env = {
    PATH: process.env.PATH ?? '',
    INGEST_TOKEN: OWNER_TOKEN,
    DATABASE_PATH: `${cwd}/ev.db`,
    HOST: '127.0.0.1',
  };
  const child = Bun.spawn([binary], { cwd, env: { ...env, PORT: '0', LOG_FORMAT: 'json' }, stdout: 'pipe' });
  const reader = child.stdout.getReader();
  let text = '';
  while (!text.includes('"event":"started"')) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`ended before starting: ${text}`);
    text += new TextDecoder().decode(value);
  }
  const address = (JSON.parse(text.split('\n')[0]!) as { address: string }).address;
  expect((await fetch(new URL('/v1/ready', address))).status).toBe(200);
  child.kill('SIGTERM');
  for (let read = await reader.read(); !read.done; read = await reader.read())
    text += new TextDecoder().decode(read.value);
  expect(await child.exited).toBe(0);
  const lines = text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as { level: string; event: LogEventName });
  expect(lines.map(({ event }) => event)).toEqual(['started', 'request', 'stopping', 'stopped']);
  for (const { level, event } of lines) expect(level).toBe(LOG_EVENTS[event].level);
}, 120_000);
