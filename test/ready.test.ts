/** `GET /v1/ready`: 200 while the writer stores and a read works, 503 with a reason while not, 200 again after. */
import { Database } from 'bun:sqlite';
import { expect, test } from 'bun:test';
import { join } from 'node:path';
import { Readiness } from '../src/health/service.ts';
import { createMemoryLogger } from '../src/log.ts';
import {
  answer,
  consumptionChunk,
  heldSyncs,
  startTestService,
  tempDir,
  waitUntil,
  type TestService,
} from './support.ts';

const READY = { status: 200, body: { status: 'ready' } };
const unavailable = (reason: string) => ({ status: 503, body: { status: 'unavailable', reason } });
const STALLED = 'a write has waited over 0.1 s (is the disk stalled?)';
const FAILED = 'the writer has failed; the service must be restarted';

async function ready(service: TestService) {
  const response = await service.request('GET', '/v1/ready', { token: null });
  expect(response.headers.get('cache-control')).toBe('no-store');
  return answer(response);
}

test('ready without a token while the writer stores and a read works', async () => {
  const service = await startTestService();
  try {
    expect(await ready(service)).toEqual(READY);
    expect(service.log.lines.filter((line) => line.includes(' ready.'))).toEqual([]);
  } finally {
    await service.close();
  }
});

test('a write held at its sync (a stalled disk) turns it 503, its release 200 again, each logged once', async () => {
  const syncs = heldSyncs();
  const service = await startTestService({}, { syncFile: syncs.syncFile, readyWaitMs: 100 });
  try {
    const put = service.request('PUT', '/v1/consumption/daily', { body: consumptionChunk() });
    await waitUntil(() => syncs.calls.length === 1);
    await Bun.sleep(150);
    expect(await ready(service)).toEqual(unavailable(STALLED));
    expect(await ready(service)).toEqual(unavailable(STALLED));
    syncs.release();
    expect((await put).status).toBe(204);
    expect(await ready(service)).toEqual(READY);
    const logged = service.log.lines.filter((line) => line.includes(' ready.'));
    expect(logged).toHaveLength(2);
    expect(logged[0]).toEndWith(` warn ready.unavailable reason=${JSON.stringify(STALLED)}`);
    expect(logged[1]).toEndWith(` info ready.recovered was=${JSON.stringify(STALLED)}`);
  } finally {
    syncs.release();
    await service.close();
  }
});

test('a failed sync breaks the writer: 503 for good', async () => {
  const syncs = heldSyncs();
  const service = await startTestService({}, { syncFile: syncs.syncFile, readyWaitMs: 100 });
  try {
    const put = service.request('PUT', '/v1/consumption/daily', { body: consumptionChunk() });
    await waitUntil(() => syncs.calls.length === 1);
    syncs.calls[0]!.finish(new Error('EIO'));
    expect((await put).status).toBe(500);
    expect(await ready(service)).toEqual(unavailable(FAILED));
  } finally {
    syncs.release();
    await service.close().catch(() => {});
  }
});

test('a writer thread that is gone: 503', async () => {
  const service = await startTestService({}, { readyWaitMs: 100 });
  try {
    expect(await ready(service)).toEqual(READY);
    service.storage.committer.killWriter();
    await waitUntil(() => service.storage.committer.failure !== null);
    expect(await ready(service)).toEqual(unavailable(FAILED));
  } finally {
    await service.close().catch(() => {});
  }
});

test('a database that cannot be read: unavailable, the detail only in the log', async () => {
  const service = await startTestService();
  const db = new Database(join(tempDir(), 'other.db'));
  const log = createMemoryLogger();
  try {
    const readiness = new Readiness(db, service.storage.committer, log);
    expect(await readiness.check()).toBeNull();
    db.close();
    expect(await readiness.check()).toBe('the database cannot be read');
    expect(await readiness.check()).toBe('the database cannot be read');
    expect(log.lines.filter((line) => line.includes(' error ready.read_failed error='))).toHaveLength(1);
  } finally {
    await service.close();
  }
});
